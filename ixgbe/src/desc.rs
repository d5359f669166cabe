//! Intel advanced RX/TX descriptors (16 bytes, little-endian), docs/hw/ixgbe.md §7. The layouts are shared by the
//! 82599/X540 and the 82576 (igb); where the two differ (the RX error bits) the [`crate::rxtx::Family`] says so.
//!
//! Rings live in DMA memory the device writes, so the hot path reads single fields through raw pointers
//! ([`RxDesc::status_ptr`]) rather than references; these types give the layout and the encode/decode.

use std::mem::{offset_of, size_of};

use crate::regs::{bit, Field};

/// An RX descriptor slot: read format (software -> NIC) and write-back format (NIC -> software) share it.
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RxDesc {
    /// Read: packet buffer IOVA. Write-back: dword 0 (RSS type, packet type) and dword 1 (RSS hash).
    pub qw0: u64,
    /// Read: header buffer IOVA (0: bit 0 overlaps DD). Write-back: dword 2 (status/error), dword 3 (length, VLAN).
    pub qw1: u64,
}
const _: () = assert!(size_of::<RxDesc>() == 16);

/// The write-back view of an [`RxDesc`] (docs/hw/ixgbe.md §7.2).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RxWriteback {
    /// Dword 0: RSS type 3:0, packet type 16:4, RSCCNT, HDR_LEN, SPH.
    pub pkt_info: u32,
    /// Dword 1: RSS hash (RXCSUM.PCSD = 1).
    pub rss_hash: u32,
    /// Dword 2: extended status 19:0, extended error 31:20.
    pub status_error: u32,
    /// Dword 3 low: packet length in bytes.
    pub length: u16,
    /// Dword 3 high: VLAN tag.
    pub vlan: u16,
}
const _: () = assert!(size_of::<RxWriteback>() == 16);
const _: () = assert!(offset_of!(RxWriteback, status_error) == 8);
const _: () = assert!(offset_of!(RxWriteback, length) == 12);

/// RX write-back bits (docs/hw/ixgbe.md §7.2).
pub mod rx {
    use super::{bit, Field};
    /// Dword 0: RSS type.
    pub const RSS_TYPE: Field = Field::new(3, 0);
    /// Dword 0: packet type bits (value already shifted by 4 as docs/hw/ixgbe.md lists them: 0x10 IPv4...).
    pub const PTYPE: Field = Field::new(16, 4);
    /// Packet type: IPv4.
    pub const PTYPE_IPV4: u32 = bit(4);
    /// Packet type: IPv4 with options.
    pub const PTYPE_IPV4_EX: u32 = bit(5);
    /// Packet type: IPv6.
    pub const PTYPE_IPV6: u32 = bit(6);
    /// Packet type: IPv6 with extension headers.
    pub const PTYPE_IPV6_EX: u32 = bit(7);
    /// Packet type: TCP.
    pub const PTYPE_TCP: u32 = bit(8);
    /// Packet type: UDP.
    pub const PTYPE_UDP: u32 = bit(9);
    /// Packet type: ETQF match (bits 6:4 are then a filter index, not L3 flags).
    pub const PTYPE_ETQF: u32 = bit(15);
    /// Dword 0: the packet type bits the driver decodes (IPv4, IPv4-ext, IPv6, IPv6-ext, TCP, UDP), a 6-bit index.
    pub const PTYPE_L3_L4: Field = Field::new(9, 4);
    const _: () =
        assert!(PTYPE_L3_L4.mask() == PTYPE_IPV4 | PTYPE_IPV4_EX | PTYPE_IPV6 | PTYPE_IPV6_EX | PTYPE_TCP | PTYPE_UDP);
    /// Dword 2: descriptor done.
    pub const STAT_DD: u32 = bit(0);
    /// Dword 2: end of packet.
    pub const STAT_EOP: u32 = bit(1);
    /// Dword 2: VLAN packet.
    pub const STAT_VP: u32 = bit(3);
    /// Dword 2: UDP checksum computed.
    pub const STAT_UDPCS: u32 = bit(4);
    /// Dword 2: L4 checksum computed.
    pub const STAT_L4CS: u32 = bit(5);
    /// Dword 2: IPv4 header checksum computed.
    pub const STAT_IPCS: u32 = bit(6);
    /// Dword 2: the UDP checksum field is non-zero (UDPV).
    pub const STAT_UDPV: u32 = bit(10);
    /// Dword 2: the two "checksum computed" bits as one 2-bit value: L4CS in its bit 0, IPCS in its bit 1.
    pub const STAT_CSUM_DONE: Field = Field::new(6, 5);
    const _: () = assert!(STAT_CSUM_DONE.mask() == STAT_L4CS | STAT_IPCS);
    /// Dword 3: packet length in bytes.
    pub const LENGTH: Field = Field::new(15, 0);
    /// Dword 3: VLAN tag.
    pub const VLAN: Field = Field::new(31, 16);
}

/// TX bits (docs/hw/ixgbe.md §7.3, §7.4).
pub mod tx {
    use super::{bit, Field};
    /// cmd_type_len: buffer length.
    pub const DTALEN: Field = Field::new(15, 0);
    /// cmd_type_len: descriptor type.
    pub const DTYP: Field = Field::new(23, 20);
    /// DTYP: advanced data.
    pub const DTYP_DATA: u32 = 0x3;
    /// DTYP: advanced context.
    pub const DTYP_CTXT: u32 = 0x2;
    /// DCMD: end of packet.
    pub const DCMD_EOP: u32 = bit(24);
    /// DCMD: insert FCS.
    pub const DCMD_IFCS: u32 = bit(25);
    /// DCMD: report status.
    pub const DCMD_RS: u32 = bit(27);
    /// DCMD: advanced descriptor.
    pub const DCMD_DEXT: u32 = bit(29);
    /// DCMD: insert VLAN.
    pub const DCMD_VLE: u32 = bit(30);
    /// DCMD: TCP segmentation.
    pub const DCMD_TSE: u32 = bit(31);
    /// olinfo_status: DD (write-back).
    pub const STA_DD: u32 = bit(0);
    /// olinfo_status: context slot.
    pub const IDX: Field = Field::new(6, 4);
    /// olinfo_status: check context.
    pub const CC: u32 = bit(7);
    /// olinfo_status: insert IPv4 header checksum.
    pub const POPTS_IXSM: u32 = bit(8);
    /// olinfo_status: insert L4 checksum.
    pub const POPTS_TXSM: u32 = bit(9);
    /// olinfo_status: payload length (whole packet without TSO).
    pub const PAYLEN: Field = Field::new(31, 14);
    /// Context vlan_macip_lens: IP header length.
    pub const IPLEN: Field = Field::new(8, 0);
    /// Context vlan_macip_lens: L2 header length.
    pub const MACLEN: Field = Field::new(15, 9);
    /// Context vlan_macip_lens: VLAN tag.
    pub const VLAN: Field = Field::new(31, 16);
    /// Context type_tucmd_mlhl: IPv4 (0 = IPv6).
    pub const TUCMD_IPV4: u32 = bit(10);
    /// Context type_tucmd_mlhl: L4 type.
    pub const TUCMD_L4T: Field = Field::new(12, 11);
    /// L4T: UDP.
    pub const L4T_UDP: u32 = 0;
    /// L4T: TCP.
    pub const L4T_TCP: u32 = 1;
    /// L4T: SCTP.
    pub const L4T_SCTP: u32 = 2;
    /// L4T: none.
    pub const L4T_RSV: u32 = 3;
    /// Context mss_l4len_idx: L4 header length.
    pub const L4LEN: Field = Field::new(15, 8);
    /// Context mss_l4len_idx: MSS.
    pub const MSS: Field = Field::new(31, 16);
    /// The fixed bits of every data descriptor: DTYP data | IFCS | DEXT (DPDK `DCMD_DTYP_FLAGS` without EOP).
    pub const DATA_FLAGS: u32 = (DTYP_DATA << 20) | DCMD_IFCS | DCMD_DEXT;
    /// The fixed bits of a context descriptor.
    pub const CTXT_FLAGS: u32 = (DTYP_CTXT << 20) | DCMD_DEXT;
}

impl RxDesc {
    /// The read format: a packet buffer, no header buffer.
    #[inline(always)]
    pub const fn read(pkt_addr: u64) -> RxDesc {
        RxDesc { qw0: pkt_addr, qw1: 0 }
    }

    /// A write-back (what the NIC writes; used by tests and fakes).
    pub const fn writeback(wb: RxWriteback) -> RxDesc {
        RxDesc {
            qw0: wb.pkt_info as u64 | (wb.rss_hash as u64) << 32,
            qw1: wb.status_error as u64 | (wb.length as u64) << 32 | (wb.vlan as u64) << 48,
        }
    }

    /// Write-back packet info (dword 0) of a first quadword `qw0` read whole.
    #[inline(always)]
    pub const fn pkt_info_of(qw0: u64) -> u32 {
        qw0 as u32
    }

    /// Write-back RSS hash (dword 1) of a first quadword `qw0` read whole.
    #[inline(always)]
    pub const fn rss_hash_of(qw0: u64) -> u32 {
        (qw0 >> 32) as u32
    }

    /// Decodes the write-back view.
    pub const fn as_writeback(&self) -> RxWriteback {
        RxWriteback {
            pkt_info: RxDesc::pkt_info_of(self.qw0),
            rss_hash: RxDesc::rss_hash_of(self.qw0),
            status_error: self.qw1 as u32,
            length: (self.qw1 >> 32) as u16,
            vlan: (self.qw1 >> 48) as u16,
        }
    }

    /// Pointer to the status/error dword of the descriptor at `d`.
    #[inline(always)]
    pub fn status_ptr(d: *const RxDesc) -> *const u32 {
        d.cast::<u8>().wrapping_add(offset_of!(RxWriteback, status_error)).cast()
    }
}

/// An advanced TX data descriptor (docs/hw/ixgbe.md §7.3). The write-back puts DD in bit 0 of `olinfo_status`.
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TxDesc {
    /// Buffer IOVA (data) / vlan_macip_lens + seqnum_seed (context).
    pub addr: u64,
    /// cmd_type_len (data) / type_tucmd_mlhl (context).
    pub cmd_type_len: u32,
    /// olinfo_status (data; DD after write-back) / mss_l4len_idx (context).
    pub olinfo_status: u32,
}
const _: () = assert!(size_of::<TxDesc>() == 16);

/// An advanced TX context descriptor (docs/hw/ixgbe.md §7.4); occupies a [`TxDesc`] slot.
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TxContextDesc {
    /// IPLEN 8:0, MACLEN 15:9, VLAN 31:16.
    pub vlan_macip_lens: u32,
    /// IPsec SA index / tunnel fields (0 here).
    pub seqnum_seed: u32,
    /// TUCMD, DTYP = 2, DEXT.
    pub type_tucmd_mlhl: u32,
    /// IDX 6:4, L4LEN 15:8, MSS 31:16.
    pub mss_l4len_idx: u32,
}
const _: () = assert!(size_of::<TxContextDesc>() == 16);

/// What a data descriptor says, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxData {
    /// Buffer IOVA.
    pub addr: u64,
    /// Bytes in this buffer.
    pub len: u16,
    /// Last descriptor of the packet.
    pub eop: bool,
    /// Report status requested.
    pub rs: bool,
    /// Whole packet length.
    pub paylen: u32,
    /// Insert IPv4 header checksum.
    pub ixsm: bool,
    /// Insert L4 checksum.
    pub txsm: bool,
    /// Context slot.
    pub idx: u8,
}

impl TxDesc {
    /// Encodes a data descriptor.
    #[inline(always)]
    pub const fn data(d: TxData) -> TxDesc {
        let mut cmd = tx::DATA_FLAGS | tx::DTALEN.val(d.len as u32);
        if d.eop {
            cmd |= tx::DCMD_EOP;
        }
        if d.rs {
            cmd |= tx::DCMD_RS;
        }
        let mut ol = tx::PAYLEN.val(d.paylen) | tx::IDX.val(d.idx as u32);
        if d.ixsm {
            ol |= tx::POPTS_IXSM;
        }
        if d.txsm {
            ol |= tx::POPTS_TXSM;
        }
        TxDesc { addr: d.addr, cmd_type_len: cmd, olinfo_status: ol }
    }

    /// Decodes a data descriptor (`None` if it is not an advanced data descriptor).
    pub const fn as_data(&self) -> Option<TxData> {
        if tx::DTYP.get(self.cmd_type_len) != tx::DTYP_DATA || self.cmd_type_len & tx::DCMD_DEXT == 0 {
            return None;
        }
        Some(TxData {
            addr: self.addr,
            len: tx::DTALEN.get(self.cmd_type_len) as u16,
            eop: self.cmd_type_len & tx::DCMD_EOP != 0,
            rs: self.cmd_type_len & tx::DCMD_RS != 0,
            paylen: tx::PAYLEN.get(self.olinfo_status),
            ixsm: self.olinfo_status & tx::POPTS_IXSM != 0,
            txsm: self.olinfo_status & tx::POPTS_TXSM != 0,
            idx: tx::IDX.get(self.olinfo_status) as u8,
        })
    }

    /// A context descriptor in a TX slot.
    pub const fn context(c: TxContextDesc) -> TxDesc {
        TxDesc {
            addr: c.vlan_macip_lens as u64 | (c.seqnum_seed as u64) << 32,
            cmd_type_len: c.type_tucmd_mlhl,
            olinfo_status: c.mss_l4len_idx,
        }
    }

    /// Decodes a context descriptor (`None` if it is not one).
    pub const fn as_context(&self) -> Option<TxContextDesc> {
        if tx::DTYP.get(self.cmd_type_len) != tx::DTYP_CTXT || self.cmd_type_len & tx::DCMD_DEXT == 0 {
            return None;
        }
        Some(TxContextDesc {
            vlan_macip_lens: self.addr as u32,
            seqnum_seed: (self.addr >> 32) as u32,
            type_tucmd_mlhl: self.cmd_type_len,
            mss_l4len_idx: self.olinfo_status,
        })
    }

    /// Pointer to the olinfo_status (write-back status) dword of the descriptor at `d`.
    #[inline(always)]
    pub fn status_ptr(d: *const TxDesc) -> *const u32 {
        d.cast::<u8>().wrapping_add(offset_of!(TxDesc, olinfo_status)).cast()
    }
}

/// The offload part of a context descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TxContext {
    /// L2 header length.
    pub mac_len: u8,
    /// L3 header length.
    pub ip_len: u16,
    /// IPv4 (else IPv6).
    pub ipv4: bool,
    /// L4 type ([`tx::L4T_TCP`], ...).
    pub l4t: u32,
    /// Context slot.
    pub idx: u8,
}

impl TxContextDesc {
    /// Encodes a checksum-offload context.
    pub const fn checksum(c: TxContext) -> TxContextDesc {
        let mut tucmd = tx::CTXT_FLAGS | tx::TUCMD_L4T.val(c.l4t);
        if c.ipv4 {
            tucmd |= tx::TUCMD_IPV4;
        }
        TxContextDesc {
            vlan_macip_lens: tx::IPLEN.val(c.ip_len as u32) | tx::MACLEN.val(c.mac_len as u32),
            seqnum_seed: 0,
            type_tucmd_mlhl: tucmd,
            mss_l4len_idx: tx::IDX.val(c.idx as u32),
        }
    }

    /// Decodes a checksum-offload context.
    pub const fn as_checksum(&self) -> TxContext {
        TxContext {
            mac_len: tx::MACLEN.get(self.vlan_macip_lens) as u8,
            ip_len: tx::IPLEN.get(self.vlan_macip_lens) as u16,
            ipv4: self.type_tucmd_mlhl & tx::TUCMD_IPV4 != 0,
            l4t: tx::TUCMD_L4T.get(self.type_tucmd_mlhl),
            idx: tx::IDX.get(self.mss_l4len_idx) as u8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn simple_packet_matches_the_fact_sheet() {
        // docs/hw/ixgbe.md §7.3: 0x2B30_0000 | len with RS, 0x2330_0000 | len without (both with EOP).
        let d = TxDesc::data(TxData {
            addr: 0x1000,
            len: 60,
            eop: true,
            rs: true,
            paylen: 60,
            ixsm: false,
            txsm: false,
            idx: 0,
        });
        assert_eq!(d.cmd_type_len, 0x2B30_0000 | 60);
        assert_eq!(d.olinfo_status, 60 << 14);
        let d = TxDesc::data(TxData { rs: false, ..d.as_data().unwrap() });
        assert_eq!(d.cmd_type_len, 0x2330_0000 | 60);
        assert!(d.as_context().is_none());
    }

    #[test]
    fn rx_read_format_clears_dd() {
        let d = RxDesc::read(0x0dea_dbee_f000);
        assert_eq!(d.as_writeback().status_error & rx::STAT_DD, 0);
        let p = &d as *const RxDesc;
        // SAFETY: p points at a live RxDesc; the status dword is inside it.
        assert_eq!(unsafe { *RxDesc::status_ptr(p) }, 0);
    }

    proptest! {
        #[test]
        fn rx_writeback_round_trips(info: u32, hash: u32, st: u32, len: u16, vlan: u16) {
            let wb = RxWriteback { pkt_info: info, rss_hash: hash, status_error: st, length: len, vlan };
            let d = RxDesc::writeback(wb);
            prop_assert_eq!(d.as_writeback(), wb);
            // The in-memory layout agrees with the field offsets.
            let p = &d as *const RxDesc;
            // SAFETY: p is a live descriptor.
            prop_assert_eq!(unsafe { *RxDesc::status_ptr(p) }, st);
        }

        #[test]
        fn tx_data_round_trips(addr: u64, len: u16, eop: bool, rs: bool, paylen in 0u32..(1 << 18),
                               ixsm: bool, txsm: bool, idx in 0u8..8) {
            let t = TxData { addr, len, eop, rs, paylen, ixsm, txsm, idx };
            let d = TxDesc::data(t);
            prop_assert_eq!(d.as_data(), Some(t));
            prop_assert!(d.as_context().is_none());
            prop_assert_eq!(d.olinfo_status & tx::STA_DD, 0);
        }

        #[test]
        fn tx_context_round_trips(mac_len in 0u8..128, ip_len in 0u16..512, ipv4: bool, l4t in 0u32..4, idx in 0u8..8) {
            let c = TxContext { mac_len, ip_len, ipv4, l4t, idx };
            let cd = TxContextDesc::checksum(c);
            prop_assert_eq!(cd.as_checksum(), c);
            let slot = TxDesc::context(cd);
            prop_assert_eq!(slot.as_context(), Some(cd));
            prop_assert!(slot.as_data().is_none());
        }
    }
}
