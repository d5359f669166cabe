//! The data-path descriptors (docs/hw/hinic3.md §10), little-endian (§0.1; unverified for very old firmware, §17 item
//! 1: little-endian chosen, as both reference drivers assume the hardware conversion current firmware enables): the
//! SQ's 16-byte WQEBBs (control, task, buffer descriptor), the normal 16-byte RQ WQE and the 32-byte RX CQE, with every
//! field named.

use drvkit::reg::{bit, Field};

/// One 16-byte SQ WQEBB as four little-endian dwords (docs/hw/hinic3.md §10.2).
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SqWqebb(pub [u32; 4]);

/// Size of an SQ WQEBB.
pub const SQ_WQEBB: usize = 16;

/// IOVA alignment of every work queue (SQ, RQ, CQE array, cmdq ring): DPDK's `hinic3_rx_queue_setup` and
/// `hinic3_tx_queue_setup` reserve their rings with `hinic3_dma_zone_reserve(.., RTE_PGSIZE_256K, ..)`;
/// docs/hw/hinic3.md §9.3 asks it of every ring.
pub const WQ_ALIGN: u64 = 256 << 10;

/// Control section, dword 0 (`ctrl_len`).
pub mod ctrl {
    use super::{bit, Field};
    /// BD0 length.
    pub const BD0_LEN: Field = Field::new(17, 0);
    /// Number of buffer descriptors including BD0 (extended WQEs).
    pub const BUFDESC_NUM: Field = Field::new(26, 19);
    /// Task section present, 16 bytes.
    pub const TASKSECT_LEN: u32 = bit(27);
    /// Data format (0 = SGL).
    pub const DATA_FORMAT: u32 = bit(28);
    /// Direct WQE.
    pub const DIRECT: u32 = bit(29);
    /// Extended WQE (0 compact).
    pub const EXTENDED: u32 = bit(30);
    /// Owner bit position.
    pub const OWNER_SHIFT: u32 = 31;
    /// BD0 of a compact WQE is at most this long (docs/hw/hinic3.md §10.2).
    pub const COMPACT_MAX_LEN: u32 = 16383;
}

/// Control section, dword 1 (`queue_info`, extended WQEs only).
pub mod queue_info {
    use super::{bit, Field};
    /// Payload offset in 2-byte units.
    pub const PLDOFF: Field = Field::new(9, 2);
    /// TSO.
    pub const TSO: u32 = bit(11);
    /// MSS.
    pub const MSS: Field = Field::new(26, 13);
    /// "UC", always 1.
    pub const UC: u32 = bit(28);
    /// Smallest MSS the hardware takes.
    pub const MSS_MIN: u32 = 80;
    /// MSS of an extended WQE without TSO: never 0 (DPDK `hinic3_prepare_sq_ctrl`'s TX_MSS_DEFAULT,
    /// docs/hw/hinic3.md §10.2).
    pub const MSS_DEFAULT: u32 = 0x3E00;
}

/// Task section dword 0 (`pkt_info0`).
pub mod task {
    use super::{bit, Field};
    /// Inner L4 checksum.
    pub const INNER_L4_CSUM: u32 = bit(24);
    /// Inner L3 (IPv4 header) checksum.
    pub const INNER_L3_CSUM: u32 = bit(25);
    /// Task dword 3: the VLAN TCI to insert.
    pub const VLAN_TAG: Field = Field::new(15, 0);
    /// Task dword 3: TPID select (0 = 802.1Q).
    pub const VLAN_TYPE: Field = Field::new(18, 16);
    /// Task dword 3: insert valid.
    pub const VLAN_VALID: u32 = bit(19);
}

impl SqWqebb {
    /// A control WQEBB: `ctrl_len`, `queue_info` and BD0's IOVA (high, then low).
    #[inline(always)]
    pub const fn control(ctrl_len: u32, queue_info: u32, iova: u64) -> SqWqebb {
        SqWqebb([ctrl_len, queue_info, (iova >> 32) as u32, iova as u32])
    }

    /// The compact WQE of one unoffloaded segment (docs/hw/hinic3.md §10.2 "compact"): length, owner; queue_info 0.
    /// Unverified (docs/hw/hinic3.md §17 item 4) whether the hardware checks the owner here; it is set, as Linux and
    /// the older DPDK set it.
    #[inline(always)]
    pub const fn compact(len: u32, owner: u32, iova: u64) -> SqWqebb {
        SqWqebb::control(ctrl::BD0_LEN.val(len) | (owner << ctrl::OWNER_SHIFT), 0, iova)
    }

    /// A buffer descriptor of SGE 1 to n − 1: length, a zero reserved word, IOVA high, low.
    #[inline(always)]
    pub const fn bd(len: u32, iova: u64) -> SqWqebb {
        SqWqebb([ctrl::BD0_LEN.val(len), 0, (iova >> 32) as u32, iova as u32])
    }

    /// A task section: `pkt_info0`, ip_identify 0, pkt_info2 0, `vlan_offload`.
    #[inline(always)]
    pub const fn task(pkt_info0: u32, vlan_offload: u32) -> SqWqebb {
        SqWqebb([pkt_info0, 0, 0, vlan_offload])
    }

    /// The WQEBB as two little-endian qwords, as the ring stores them.
    #[inline(always)]
    pub const fn qwords(self) -> [u64; 2] {
        let [a, b, c, d] = self.0;
        [(a as u64) | ((b as u64) << 32), (c as u64) | ((d as u64) << 32)]
    }
}

/// A normal RQ WQE, 16 bytes: buffer IOVA high, low; CQE IOVA high, low (docs/hw/hinic3.md §10.3).
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RqWqe {
    /// Buffer IOVA, high then low dword, as one little-endian qword.
    pub buf: u64,
    /// CQE IOVA, high then low dword.
    pub cqe: u64,
}

/// RQ WQE type of the context for the normal 16-byte WQE (docs/hw/hinic3.md §9.2).
pub const RQ_WQE_TYPE_NORMAL: u32 = 2;
/// Index shift of the normal WQE: RQ indexes count 8-byte units (docs/hw/hinic3.md §9.2, §10.1).
pub const RQ_WQE_SHIFT: u32 = 1;

/// An IOVA as the "high dword, then low dword" pair stored as one little-endian qword.
#[inline(always)]
pub const fn hi_lo(iova: u64) -> u64 {
    iova.rotate_left(32)
}

/// The RX CQE, 32 bytes of little-endian dwords (docs/hw/hinic3.md §10.5).
#[repr(C, align(32))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RxCqe(pub [u32; 8]);

/// Size of a CQE slot (Linux's stride, docs/hw/hinic3.md §10.3).
pub const CQE_SIZE: usize = 32;

/// RX CQE fields.
pub mod cqe {
    use super::{bit, Field};
    /// Dword 0: checksum-error flags.
    pub const CSUM_ERR: Field = Field::new(15, 0);
    /// Checksum flag: IP header.
    pub const CSUM_ERR_IP: u32 = bit(0);
    /// Checksum flags of the L4 protocols (TCP, UDP, IGMP, ICMPv4, ICMPv6, SCTP).
    pub const CSUM_ERR_L4: u32 = 0x7E;
    /// Checksum flag: the hardware did not check (ignore the others).
    pub const CSUM_BYPASSED: u32 = bit(7);
    /// Checksum flag: other IPSU error.
    pub const CSUM_ERR_OTHER: u32 = bit(8);
    /// Dword 0: LRO merged packet count.
    pub const NUM_LRO: Field = Field::new(23, 16);
    /// Dword 0: a buffer returned by an RQ flush.
    pub const FLUSH: u32 = bit(28);
    /// Dword 0: RX done.
    pub const DONE: u32 = bit(31);
    /// Dword 1: stripped VLAN tag.
    pub const VLAN: Field = Field::new(15, 0);
    /// Dword 1: packet length.
    pub const LEN: Field = Field::new(31, 16);
    /// Dword 2: packet type (3 TCP, 4 UDP, 7 SCTP).
    pub const PKT_TYPE: Field = Field::new(4, 0);
    /// Dword 2: IP type (0 IPv4, 1 IPv6, 2 invalid).
    pub const IP_TYPE: Field = Field::new(6, 5);
    /// Dword 2: tunnel format.
    pub const TUNNEL: Field = Field::new(11, 8);
    /// Dword 2: VLAN stripped.
    pub const VLAN_STRIPPED: u32 = bit(21);
    /// Dword 2: RSS type (non-zero: dword 3 is a valid hash).
    pub const RSS_TYPE: Field = Field::new(31, 24);
    /// Packet type TCP.
    pub const PKT_TCP: u32 = 3;
    /// Packet type UDP.
    pub const PKT_UDP: u32 = 4;
    /// Packet type SCTP.
    pub const PKT_SCTP: u32 = 7;
}

impl RxCqe {
    /// A completed CQE as the device writes it (for tests and the benchmark playing the device).
    pub const fn done(len: u16, csum_err: u32, offload_type: u32, rss_hash: u32) -> RxCqe {
        RxCqe([cqe::DONE | cqe::CSUM_ERR.val(csum_err), cqe::LEN.val(len as u32), offload_type, rss_hash, 0, 0, 0, 0])
    }
}

/// The per-packet mbuf fields of a CQE's dword 0 checksum bits and dword 2 offload word: (ol_flags, packet_type).
pub fn rx_flags(status: u32, offload_type: u32) -> (u64, u32) {
    use mempool::{ol_flags as f, ptype};
    let mut flags = 0;
    let mut pt = ptype::L2_ETHER;
    let ip = cqe::IP_TYPE.get(offload_type);
    match ip {
        0 => pt |= ptype::L3_IPV4,
        1 => pt |= ptype::L3_IPV6,
        _ => {}
    }
    match cqe::PKT_TYPE.get(offload_type) {
        cqe::PKT_TCP => pt |= ptype::L4_TCP,
        cqe::PKT_UDP => pt |= ptype::L4_UDP,
        _ => {}
    }
    let err = cqe::CSUM_ERR.get(status);
    if err & cqe::CSUM_BYPASSED == 0 && ip < 2 {
        if ip == 0 {
            flags |= if err & cqe::CSUM_ERR_IP != 0 { f::RX_IP_CKSUM_BAD } else { f::RX_IP_CKSUM_GOOD };
        }
        if pt & ptype::L4_MASK != 0 {
            flags |= if err & (cqe::CSUM_ERR_L4 | cqe::CSUM_ERR_OTHER) != 0 {
                f::RX_L4_CKSUM_BAD
            } else {
                f::RX_L4_CKSUM_GOOD
            };
        }
    }
    if cqe::RSS_TYPE.get(offload_type) != 0 {
        flags |= f::RX_RSS_HASH;
    }
    if offload_type & cqe::VLAN_STRIPPED != 0 {
        flags |= f::RX_VLAN_STRIPPED;
    }
    (flags, pt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mempool::{ol_flags as f, ptype};

    #[test]
    fn a_compact_wqe_carries_length_owner_and_address_high_then_low() {
        let w = SqWqebb::compact(60, 1, 0x1234_5678_9abc_def0);
        assert_eq!(w.0, [60 | 1 << 31, 0, 0x1234_5678, 0x9abc_def0]);
        assert_eq!(w.qwords(), [60 | 1 << 31, 0x9abc_def0_1234_5678]);
        assert_eq!(SqWqebb::bd(3000, 0x10).0, [3000, 0, 0, 0x10]);
    }

    #[test]
    fn rq_wqe_address_words_are_high_then_low() {
        let q = hi_lo(0x0000_0001_2345_6780);
        assert_eq!(q as u32, 1, "dword 0 (lowest address) is the high half");
        assert_eq!((q >> 32) as u32, 0x2345_6780);
    }

    #[test]
    fn cqe_fields_decode_to_mbuf_flags() {
        let ipv4_udp = cqe::PKT_TYPE.val(cqe::PKT_UDP) | cqe::RSS_TYPE.val(1);
        let (fl, pt) = rx_flags(cqe::DONE, ipv4_udp);
        assert_eq!(pt, ptype::L2_ETHER | ptype::L3_IPV4 | ptype::L4_UDP);
        assert_eq!(fl, f::RX_IP_CKSUM_GOOD | f::RX_L4_CKSUM_GOOD | f::RX_RSS_HASH);
        let (fl, _) = rx_flags(cqe::DONE | cqe::CSUM_ERR_IP | 1 << 2, ipv4_udp);
        assert_eq!(fl, f::RX_IP_CKSUM_BAD | f::RX_L4_CKSUM_BAD | f::RX_RSS_HASH);
        let (fl, _) = rx_flags(cqe::DONE | cqe::CSUM_BYPASSED | cqe::CSUM_ERR_IP, ipv4_udp);
        assert_eq!(fl, f::RX_RSS_HASH, "bit 7: the hardware did not check");
        let (fl, pt) = rx_flags(0, cqe::IP_TYPE.val(1) | cqe::PKT_TYPE.val(cqe::PKT_TCP) | cqe::VLAN_STRIPPED);
        assert_eq!(pt, ptype::L2_ETHER | ptype::L3_IPV6 | ptype::L4_TCP);
        assert_eq!(fl, f::RX_L4_CKSUM_GOOD | f::RX_VLAN_STRIPPED);
        let c = RxCqe::done(1514, 0, 0, 7);
        assert_eq!(cqe::LEN.get(c.0[1]), 1514);
        assert_ne!(c.0[0] & cqe::DONE, 0);
    }
}
