//! Descriptor formats (docs/hw/i40e.md §10): the 32-byte RX descriptor (read format and write-back), the 16-byte
//! TX data descriptor and the TX context descriptor, with every field named.

/// A bit field `hi:lo` of a 64-bit descriptor word (the driver kit's).
pub use drvkit::reg::Field64;

/// A 32-byte RX descriptor: read format (qw0 packet buffer, qw1 header buffer, qw2-3 zero) or write-back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, align(32))]
pub struct RxDesc {
    /// Read: the data buffer's IOVA. Write-back: L2TAG1 in 31:16, RSS hash in 63:32.
    pub qw0: u64,
    /// Read: the header buffer's IOVA (0). Write-back: status, errors, packet type, length (docs/hw/i40e.md §10.2).
    pub qw1: u64,
    /// Write-back: extended status and second VLAN.
    pub qw2: u64,
    /// Write-back: flexible bytes.
    pub qw3: u64,
}

const _: () = assert!(size_of::<RxDesc>() == 32);

/// RX write-back fields (docs/hw/i40e.md §10.2).
pub mod rx {
    use super::Field64;
    /// qw1: descriptor done.
    pub const DD: u64 = 1 << 0;
    /// qw1: end of frame.
    pub const EOF: u64 = 1 << 1;
    /// qw1: L2TAG1 valid.
    pub const L2TAG1P: u64 = 1 << 2;
    /// qw1: the L3/L4 checksums were checked.
    pub const L3L4P: u64 = 1 << 3;
    /// qw1: filter status; [`FLTSTAT_RSS`] means qw0's high half is the RSS hash.
    pub const FLTSTAT: Field64 = Field64::new(13, 12);
    /// FLTSTAT value: RSS hash.
    pub const FLTSTAT_RSS: u64 = 3;
    /// qw1: MAC error.
    pub const ERR_RXE: u64 = 1 << 19;
    /// qw1: header buffer overflow.
    pub const ERR_HBO: u64 = 1 << 21;
    /// qw1: IP checksum error.
    pub const ERR_IPE: u64 = 1 << 22;
    /// qw1: L4 checksum error.
    pub const ERR_L4E: u64 = 1 << 23;
    /// qw1: outer IP checksum error.
    pub const ERR_EIPE: u64 = 1 << 24;
    /// qw1: frame larger than rxmax.
    pub const ERR_OVERSIZE: u64 = 1 << 25;
    /// qw1: the error bits.
    pub const ERRORS: Field64 = Field64::new(26, 19);
    /// qw1: packet type.
    pub const PTYPE: Field64 = Field64::new(37, 30);
    /// qw1: bytes in the data buffer.
    pub const LENGTH_PBUF: Field64 = Field64::new(51, 38);
    /// qw1: bytes in the header buffer (header split only).
    pub const LENGTH_HBUF: Field64 = Field64::new(62, 52);
    /// qw1: split header (header split only).
    pub const SPH: u64 = 1 << 63;
    /// qw0: the RSS hash.
    pub const RSS_HASH: Field64 = Field64::new(63, 32);
    /// qw0: the stripped VLAN.
    pub const L2TAG1: Field64 = Field64::new(31, 16);
    /// Errors that mean the frame is bad (not only a checksum): the frame is dropped.
    pub const FRAME_ERRORS: u64 = ERR_RXE | ERR_HBO | ERR_OVERSIZE | (1 << 20) | (1 << 26);
}

/// Packet types (docs/hw/i40e.md §10.2), the ones the driver decodes.
pub mod ptype {
    /// L2 payload.
    pub const L2: u8 = 1;
    /// IPv4 fragment, other, UDP, (25 reserved), TCP, SCTP, ICMP: 22..=28.
    pub const IPV4_FIRST: u8 = 22;
    /// Last IPv4 non-tunnel type.
    pub const IPV4_LAST: u8 = 28;
    /// IPv6 fragment .. ICMPv6: 88..=94.
    pub const IPV6_FIRST: u8 = 88;
    /// Last IPv6 non-tunnel type.
    pub const IPV6_LAST: u8 = 94;
    /// Offsets within a block: UDP.
    pub const OFF_UDP: u8 = 2;
    /// TCP.
    pub const OFF_TCP: u8 = 4;
    /// SCTP.
    pub const OFF_SCTP: u8 = 5;
    /// ICMP.
    pub const OFF_ICMP: u8 = 6;
}

impl RxDesc {
    /// The read format for a buffer at `iova` (no header split).
    pub const fn read(iova: u64) -> RxDesc {
        RxDesc { qw0: iova, qw1: 0, qw2: 0, qw3: 0 }
    }

    /// A write-back (for tests and the benchmark playing the device).
    pub const fn writeback(len: u16, ptype: u8, rss: Option<u32>, eof: bool, errors: u64) -> RxDesc {
        let mut qw1 = rx::DD | rx::L3L4P | rx::LENGTH_PBUF.val(len as u64) | rx::PTYPE.val(ptype as u64) | errors;
        if eof {
            qw1 |= rx::EOF;
        }
        let mut qw0 = 0;
        if let Some(h) = rss {
            qw1 |= rx::FLTSTAT.val(rx::FLTSTAT_RSS);
            qw0 = rx::RSS_HASH.val(h as u64);
        }
        RxDesc { qw0, qw1, qw2: 0, qw3: 0 }
    }
}

/// A 16-byte TX descriptor: data or context.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, align(16))]
pub struct TxDesc {
    /// Data: the buffer's IOVA. Context: tunnelling parameters and L2TAG2.
    pub qw0: u64,
    /// `cmd_type_offset_bsz` (docs/hw/i40e.md §10.3) or the context's command word (§10.4).
    pub qw1: u64,
}

const _: () = assert!(size_of::<TxDesc>() == 16);

/// TX descriptor fields (docs/hw/i40e.md §10.3, §10.4).
pub mod tx {
    use super::Field64;
    /// Descriptor type.
    pub const DTYPE: Field64 = Field64::new(3, 0);
    /// Data descriptor.
    pub const DTYPE_DATA: u64 = 0x0;
    /// Context descriptor.
    pub const DTYPE_CONTEXT: u64 = 0x1;
    /// Written back by the hardware on an RS descriptor it finished.
    pub const DTYPE_DONE: u64 = 0xF;
    /// Command, shifted.
    pub const CMD_SHIFT: u32 = 4;
    /// End of packet.
    pub const CMD_EOP: u64 = 0x001 << CMD_SHIFT;
    /// Report status.
    pub const CMD_RS: u64 = 0x002 << CMD_SHIFT;
    /// Insert the CRC (always set).
    pub const CMD_ICRC: u64 = 0x004 << CMD_SHIFT;
    /// Insert the VLAN of L2TAG1.
    pub const CMD_IL2TAG1: u64 = 0x008 << CMD_SHIFT;
    /// IPv6.
    pub const CMD_IIPT_IPV6: u64 = 0x020 << CMD_SHIFT;
    /// IPv4 without checksum.
    pub const CMD_IIPT_IPV4: u64 = 0x040 << CMD_SHIFT;
    /// IPv4 with checksum.
    pub const CMD_IIPT_IPV4_CSUM: u64 = 0x060 << CMD_SHIFT;
    /// L4 TCP.
    pub const CMD_L4T_TCP: u64 = 0x100 << CMD_SHIFT;
    /// L4 SCTP.
    pub const CMD_L4T_SCTP: u64 = 0x200 << CMD_SHIFT;
    /// L4 UDP.
    pub const CMD_L4T_UDP: u64 = 0x300 << CMD_SHIFT;
    /// MAC header length in 2-byte units.
    pub const MACLEN: Field64 = Field64::new(22, 16);
    /// IP header length in 4-byte units.
    pub const IPLEN: Field64 = Field64::new(29, 23);
    /// L4 header length in 4-byte units.
    pub const L4LEN: Field64 = Field64::new(33, 30);
    /// Buffer size.
    pub const BUF_SZ: Field64 = Field64::new(47, 34);
    /// VLAN to insert.
    pub const L2TAG1: Field64 = Field64::new(63, 48);
    /// Largest buffer per descriptor (docs/hw/i40e.md §15).
    pub const MAX_BUF: u16 = 16383;
    /// Smallest packet (docs/hw/i40e.md §11, MDD).
    pub const MIN_PKT_LEN: u16 = 17;
    /// Most data descriptors per non-TSO packet (docs/hw/i40e.md §11, MDD).
    pub const MAX_DATA_PER_PKT: usize = 8;
    /// Context command: TSO.
    pub const CTX_CMD_TSO: u64 = 0x01 << CMD_SHIFT;
    /// Context: TSO payload bytes.
    pub const CTX_TSO_LEN: Field64 = Field64::new(47, 30);
    /// Context: MSS.
    pub const CTX_MSS: Field64 = Field64::new(63, 50);
    /// The qw1 of a plain one-buffer packet, without its length: data, ICRC | EOP.
    pub const PLAIN: u64 = DTYPE_DATA | CMD_ICRC | CMD_EOP;
}

impl TxDesc {
    /// A data descriptor for `len` bytes at `iova` with extra command and offset bits `cmd_offset`.
    pub const fn data(iova: u64, len: u16, cmd_offset: u64) -> TxDesc {
        TxDesc { qw0: iova, qw1: tx::DTYPE_DATA | tx::CMD_ICRC | cmd_offset | tx::BUF_SZ.val(len as u64) }
    }

    /// True once the hardware wrote this RS descriptor back.
    pub const fn done(qw1: u64) -> bool {
        tx::DTYPE.get(qw1) == tx::DTYPE_DONE
    }

    /// A TSO context descriptor.
    pub const fn tso_context(tso_len: u32, mss: u16) -> TxDesc {
        TxDesc {
            qw0: 0,
            qw1: tx::DTYPE_CONTEXT
                | tx::CTX_CMD_TSO
                | tx::CTX_TSO_LEN.val(tso_len as u64)
                | tx::CTX_MSS.val(mss as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rx_writeback_fields_sit_at_their_bits() {
        let d = RxDesc::writeback(1514, 26, Some(0xCAFE_F00D), true, 0);
        assert_eq!(d.qw1 & 0b11, 0b11, "DD and EOF");
        assert_eq!((d.qw1 >> 38) & 0x3FFF, 1514);
        assert_eq!((d.qw1 >> 30) & 0xFF, 26);
        assert_eq!((d.qw1 >> 12) & 3, 3);
        assert_eq!(d.qw0 >> 32, 0xCAFE_F00D);
        assert_eq!(rx::ERRORS.get(rx::ERR_L4E), 1 << 4, "L4E is bit 4 of the error field");
        assert_eq!(rx::ERRORS.get(rx::ERR_IPE), 1 << 3);
    }

    #[test]
    fn tx_data_descriptor_layout() {
        let d = TxDesc::data(0x1000, 60, tx::CMD_EOP | tx::CMD_RS);
        // (ICRC | EOP | RS) << 4 and the length at bit 34.
        assert_eq!(d.qw1, (0x7 << 4) | (60u64 << 34));
        assert_eq!(tx::PLAIN | tx::BUF_SZ.val(60), (0x5 << 4) | (60u64 << 34));
        assert!(TxDesc::done(0xF));
        assert!(!TxDesc::done(d.qw1));
        let o = tx::MACLEN.val(7) | tx::IPLEN.val(5) | tx::L4LEN.val(5);
        assert_eq!(o >> 16, 7 | 5 << 7 | 5 << 14);
        let c = TxDesc::tso_context(8000, 1448);
        assert_eq!(c.qw1 & 0xF, 1);
        assert_eq!((c.qw1 >> 30) & 0x3FFFF, 8000);
        assert_eq!(c.qw1 >> 50, 1448);
    }
}
