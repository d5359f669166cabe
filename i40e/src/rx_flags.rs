//! What a completed RX write-back says about its frame (docs/hw/i40e.md §10.2): offload flags (checksums, RSS)
//! and packet type from qword 1, and the memo the fast path keeps of the last combination.

use mempool::{ol_flags, ptype as pt};

use crate::desc::{ptype, rx};

/// mempool packet type of each 8-bit hardware packet type (the non-tunnelled IPv4 and IPv6 blocks and L2).
pub(crate) const PTYPE_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let p = i as u8;
        let (l3, first) = if p >= ptype::IPV4_FIRST && p <= ptype::IPV4_LAST {
            (pt::L3_IPV4, ptype::IPV4_FIRST)
        } else if p >= ptype::IPV6_FIRST && p <= ptype::IPV6_LAST {
            (pt::L3_IPV6, ptype::IPV6_FIRST)
        } else {
            (0, 0)
        };
        t[i] = if l3 != 0 {
            let l4 = match p - first {
                ptype::OFF_UDP => pt::L4_UDP,
                ptype::OFF_TCP => pt::L4_TCP,
                ptype::OFF_ICMP => pt::L4_ICMP,
                _ => 0,
            };
            pt::L2_ETHER | l3 | l4
        } else if p != 0 && p != 255 {
            pt::L2_ETHER
        } else {
            0
        };
        i += 1;
    }
    t
};

/// qword-1 bits the flags depend on: L3L4P, FLTSTAT, the checksum error bits and the packet type.
pub(crate) const KEY: u64 =
    rx::L3L4P | rx::FLTSTAT.mask() | rx::ERR_IPE | rx::ERR_L4E | rx::ERR_EIPE | rx::PTYPE.mask();

/// Offload flags and packet type of a write-back's qword 1.
pub(crate) fn rx_flags(qw1: u64) -> (u64, u32) {
    let p = rx::PTYPE.get(qw1) as u8;
    let ptype = PTYPE_TABLE[p as usize];
    let mut flags = 0;
    if rx::FLTSTAT.get(qw1) == rx::FLTSTAT_RSS {
        flags |= ol_flags::RX_RSS_HASH;
    }
    if qw1 & rx::L3L4P != 0 {
        if ptype & pt::L3_MASK == pt::L3_IPV4 {
            flags |= if qw1 & (rx::ERR_IPE | rx::ERR_EIPE) != 0 {
                ol_flags::RX_IP_CKSUM_BAD
            } else {
                ol_flags::RX_IP_CKSUM_GOOD
            };
        }
        let l4 = ptype & pt::L4_MASK;
        let sctp = p == ptype::IPV4_FIRST + ptype::OFF_SCTP || p == ptype::IPV6_FIRST + ptype::OFF_SCTP;
        if l4 == pt::L4_TCP || l4 == pt::L4_UDP || sctp {
            flags |= if qw1 & rx::ERR_L4E != 0 { ol_flags::RX_L4_CKSUM_BAD } else { ol_flags::RX_L4_CKSUM_GOOD };
        }
    }
    (flags, ptype)
}

/// The last combination of flag bits seen, and its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RxMemo {
    /// `qw1 & KEY`.
    pub key: u64,
    /// Its offload flags.
    pub flags: u64,
    /// Its packet type.
    pub ptype: u32,
}

impl RxMemo {
    /// The memo of `qw1`.
    pub fn of(qw1: u64) -> RxMemo {
        let (flags, ptype) = rx_flags(qw1);
        RxMemo { key: qw1 & KEY, flags, ptype }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desc::RxDesc;

    #[test]
    fn checksums_rss_and_packet_types_decode() {
        let d = RxDesc::writeback(60, 24, Some(1), true, 0); // IPv4 UDP
        let (f, p) = rx_flags(d.qw1);
        assert_eq!(p, pt::L2_ETHER | pt::L3_IPV4 | pt::L4_UDP);
        assert_eq!(f, ol_flags::RX_RSS_HASH | ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_GOOD);
        let d = RxDesc::writeback(60, 26, None, true, rx::ERR_L4E | rx::ERR_IPE); // IPv4 TCP, both bad
        let (f, p) = rx_flags(d.qw1);
        assert_eq!(p, pt::L2_ETHER | pt::L3_IPV4 | pt::L4_TCP);
        assert_eq!(f, ol_flags::RX_IP_CKSUM_BAD | ol_flags::RX_L4_CKSUM_BAD);
        let d = RxDesc::writeback(60, 92, None, true, 0); // IPv6 TCP: no IP checksum
        let (f, p) = rx_flags(d.qw1);
        assert_eq!(p, pt::L2_ETHER | pt::L3_IPV6 | pt::L4_TCP);
        assert_eq!(f, ol_flags::RX_L4_CKSUM_GOOD);
        let mut d = RxDesc::writeback(60, 24, None, true, 0);
        d.qw1 &= !rx::L3L4P;
        assert_eq!(rx_flags(d.qw1).0, 0, "not checked: no checksum flags");
        assert_eq!(PTYPE_TABLE[1], pt::L2_ETHER);
        assert_eq!(PTYPE_TABLE[88 + 6], pt::L2_ETHER | pt::L3_IPV6 | pt::L4_ICMP);
        assert_eq!(PTYPE_TABLE[40], pt::L2_ETHER, "a tunnel type: L2 only");
    }
}
