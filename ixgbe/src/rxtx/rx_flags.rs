//! What a completed RX descriptor says about its frame: offload flags (checksums, RSS) and packet type, from the
//! write-back's packet-info and status/error dwords, and the memo the fast run keeps of the last combination.

use mempool::{ol_flags, ptype};

use super::Family;
use crate::desc::rx;

/// Packet type from write-back dword 0 bits 9:4 ([`rx::PTYPE_L3_L4`]: IPv4, IPv4-ext, IPv6, IPv6-ext, TCP, UDP).
const PTYPE_TABLE: [u32; 64] = {
    let mut t = [0u32; 64];
    let mut i = 0;
    while i < 64 {
        // The packet-info bits this index stands for.
        let bits = rx::PTYPE_L3_L4.val(i as u32);
        let mut v = ptype::L2_ETHER;
        if bits & (rx::PTYPE_IPV4 | rx::PTYPE_IPV4_EX) != 0 {
            v |= ptype::L3_IPV4;
        } else if bits & (rx::PTYPE_IPV6 | rx::PTYPE_IPV6_EX) != 0 {
            v |= ptype::L3_IPV6;
        }
        if v & ptype::L3_MASK != 0 {
            if bits & rx::PTYPE_TCP != 0 {
                v |= ptype::L4_TCP;
            } else if bits & rx::PTYPE_UDP != 0 {
                v |= ptype::L4_UDP;
            }
        }
        t[i] = v;
        i += 1;
    }
    t
};

/// Index bits of [`CSUM_TABLE`]: [`rx::STAT_CSUM_DONE`] (L4CS, IPCS) in bits 1:0, the family's checksum error
/// pair ([`Family::RX_CSUM_ERR`]: L4E, IPE) in bits 3:2.
const CSUM_ERR_AT: u32 = rx::STAT_CSUM_DONE.width;

/// Checksum flags from (L4CS, IPCS, L4E, IPE) in bits 0..3 of the index.
const CSUM_TABLE: [u64; 16] = {
    let mut t = [0u64; 16];
    let mut i = 0;
    while i < 16 {
        let (l4cs, ipcs, l4e, ipe) = (i & 1 != 0, i & 2 != 0, i & 4 != 0, i & 8 != 0);
        let mut f = 0;
        if ipcs {
            f |= if ipe { ol_flags::RX_IP_CKSUM_BAD } else { ol_flags::RX_IP_CKSUM_GOOD };
        }
        if l4cs {
            f |= if l4e { ol_flags::RX_L4_CKSUM_BAD } else { ol_flags::RX_L4_CKSUM_GOOD };
        }
        t[i] = f;
        i += 1;
    }
    t
};

/// Write-back dword 0 bits that [`rx_flags`] reads: RSS type 3:0, packet type 9:4.
pub(super) const RX_INFO_KEY: u32 = rx::RSS_TYPE.mask() | rx::PTYPE_L3_L4.mask();

/// Status/error bits that [`rx_flags`] reads: L4CS, IPCS, UDPV (for the 82599's UDP zero-checksum errata), and
/// the two checksum error bits.
#[inline(always)]
pub(super) const fn rx_csum_bits<F: Family>() -> u32 {
    rx::STAT_CSUM_DONE.mask() | rx::STAT_UDPV | F::RX_CSUM_ERR.mask()
}

/// An L4 checksum error on a UDP frame whose checksum field is 0 (UDPV clear): what the 82599's UDP zero-checksum
/// errata reports (docs/hw/ixgbe.md §7.2, §15: TCPE/L4E on a UDP frame with checksum 0, "no checksum").
#[inline(always)]
pub(super) fn udp_zero_csum_error<F: Family>(pkt_info: u32, status_error: u32) -> bool {
    status_error & (F::RX_ERR_L4E | rx::STAT_UDPV) == F::RX_ERR_L4E && pkt_info & rx::PTYPE_UDP != 0
}

/// Offload flags and packet type of a completed descriptor. `udp_csum_zero_err`: the queue's device has the
/// 82599's UDP zero-checksum errata ([`udp_zero_csum_error`]), so such an error is not reported as
/// `RX_L4_CKSUM_BAD` but as unknown (neither flag), as DPDK does (`rx_udp_csum_zero_err`). DPDK masks every UDP
/// L4 error on the 82599; testing UDPV keeps a wrong non-zero checksum reported bad.
#[inline(always)]
pub(super) fn rx_flags<F: Family>(pkt_info: u32, status_error: u32, udp_csum_zero_err: bool) -> (u64, u32) {
    const {
        assert!(F::RX_CSUM_ERR.mask() == F::RX_ERR_L4E | F::RX_ERR_IPE && F::RX_ERR_L4E < F::RX_ERR_IPE);
    }
    let done = rx::STAT_CSUM_DONE.get(status_error);
    let errs = F::RX_CSUM_ERR.get(status_error);
    let mut csum = CSUM_TABLE[(done | errs << CSUM_ERR_AT) as usize];
    if udp_csum_zero_err && udp_zero_csum_error::<F>(pkt_info, status_error) {
        csum &= !ol_flags::RX_L4_CKSUM_BAD;
    }
    // RSS type != 0 -> RX_RSS_HASH, without a branch.
    let rss = (((pkt_info & rx::RSS_TYPE.mask()) + rx::RSS_TYPE.mask()) >> rx::RSS_TYPE.width) as u64;
    let pt = PTYPE_TABLE[rx::PTYPE_L3_L4.get(pkt_info) as usize];
    (csum | (rss * ol_flags::RX_RSS_HASH), pt)
}

/// The last fast-path frame's flag key with its offload flags and packet type: those depend only on a few status
/// bits and the packet-info bits, and a burst mostly repeats one combination. Starts as key 0 (no packet-info
/// bits, no checksum bits) with its flags, so it is always a valid entry. Never a key of
/// [`udp_zero_csum_error`]: the fast run leaves those frames to the slow path, whose flags depend on the queue.
#[derive(Debug, Clone, Copy)]
pub(super) struct RxMemo {
    /// [`RxMemo::key`] of the frame these flags are for.
    pub(super) key: u64,
    /// Its `ol_flags`.
    pub(super) flags: u64,
    /// Its packet type.
    pub(super) ptype: u32,
}

impl RxMemo {
    pub(super) fn new<F: Family>() -> RxMemo {
        let (flags, ptype) = rx_flags::<F>(0, 0, false);
        RxMemo { key: 0, flags, ptype }
    }

    /// What the flags of a frame depend on: its packet info's [`RX_INFO_KEY`] bits (low dword) and its status
    /// dword's [`rx_csum_bits`] (high dword).
    #[inline(always)]
    pub(super) fn key<F: Family>(pkt_info: u32, status_error: u32) -> u64 {
        (pkt_info & RX_INFO_KEY) as u64 | ((status_error & rx_csum_bits::<F>()) as u64) << 32
    }

    /// The packet-info bits of the key (the rest of [`RX_INFO_KEY`] is 0).
    #[cfg(any(target_arch = "x86_64", test))]
    #[inline(always)]
    pub(super) fn key_info(&self) -> u32 {
        self.key as u32
    }

    /// The status bits of the key (the rest of [`rx_csum_bits`] is 0).
    #[cfg(any(target_arch = "x86_64", test))]
    #[inline(always)]
    pub(super) fn key_status(&self) -> u32 {
        (self.key >> 32) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_type_and_checksum_tables() {
        assert_eq!(PTYPE_TABLE[0], ptype::L2_ETHER);
        assert_eq!(PTYPE_TABLE[0b01_0001], ptype::L2_ETHER | ptype::L3_IPV4 | ptype::L4_TCP);
        assert_eq!(PTYPE_TABLE[0b10_0100], ptype::L2_ETHER | ptype::L3_IPV6 | ptype::L4_UDP);
        assert_eq!(PTYPE_TABLE[0b01_0000], ptype::L2_ETHER); // TCP without IP: not trusted
        assert_eq!(CSUM_TABLE[0b0011], ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_GOOD);
        assert_eq!(CSUM_TABLE[0b1011], ol_flags::RX_IP_CKSUM_BAD | ol_flags::RX_L4_CKSUM_GOOD);
        assert_eq!(CSUM_TABLE[0b0111], ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_BAD);
        assert_eq!(CSUM_TABLE[0b1100], 0); // errors without the "computed" bits mean nothing
    }

    /// The named fields pick the right bits of a write-back, in both families (their error bits differ).
    fn decodes_a_write_back<F: Family>() {
        let info = 5 | rx::PTYPE_IPV4 | rx::PTYPE_UDP; // RSS type 5
        let st = rx::STAT_DD | rx::STAT_EOP | rx::STAT_IPCS | rx::STAT_L4CS | rx::STAT_UDPV | F::RX_ERR_IPE;
        let (flags, pt) = rx_flags::<F>(info, st, false);
        assert_eq!(pt, ptype::L2_ETHER | ptype::L3_IPV4 | ptype::L4_UDP);
        assert_eq!(flags, ol_flags::RX_IP_CKSUM_BAD | ol_flags::RX_L4_CKSUM_GOOD | ol_flags::RX_RSS_HASH);
        let st = rx::STAT_DD | rx::STAT_EOP | rx::STAT_L4CS | F::RX_ERR_L4E;
        let (flags, pt) = rx_flags::<F>(rx::PTYPE_IPV6 | rx::PTYPE_TCP, st, false);
        assert_eq!(pt, ptype::L2_ETHER | ptype::L3_IPV6 | ptype::L4_TCP);
        assert_eq!(flags, ol_flags::RX_L4_CKSUM_BAD);
        // The 82599's UDP zero-checksum errata: an L4 error on UDP without UDPV is unknown, not bad.
        let st = rx::STAT_DD | rx::STAT_EOP | rx::STAT_L4CS | F::RX_ERR_L4E;
        assert_eq!(rx_flags::<F>(rx::PTYPE_IPV4 | rx::PTYPE_UDP, st, true).0, 0);
        // The memo key keeps exactly what the flags depend on.
        let key = RxMemo::key::<F>(u32::MAX, u32::MAX);
        let memo = RxMemo { key, flags: 0, ptype: 0 };
        assert_eq!((memo.key_info(), memo.key_status()), (RX_INFO_KEY, rx_csum_bits::<F>()));
    }

    #[test]
    fn decodes_a_write_back_ixgbe() {
        decodes_a_write_back::<crate::IxgbeFamily>();
    }

    #[test]
    fn decodes_a_write_back_igb() {
        decodes_a_write_back::<crate::igb::IgbFamily>();
    }
}
