//! The queue registers (docs/hw/ixgbe.md §6): per-queue offsets in their two banks, and the queue control bits.

use super::{bit, Field, Reg};

/// Queues per register bank before the second bank (RX registers of queues >= 64 live at 0x0D000).
const RX_BANK: u16 = 64;

const fn rxq(base_lo: usize, base_hi: usize, q: u16) -> Reg {
    if q < RX_BANK {
        Reg(base_lo + 0x40 * q as usize)
    } else {
        Reg(base_hi + 0x40 * (q - RX_BANK) as usize)
    }
}

/// RX descriptor base low (docs/hw/ixgbe.md §6.1).
pub const fn rdbal(q: u16) -> Reg {
    rxq(0x01000, 0x0D000, q)
}
/// RX descriptor base high.
pub const fn rdbah(q: u16) -> Reg {
    rxq(0x01004, 0x0D004, q)
}
/// RX ring length in bytes.
pub const fn rdlen(q: u16) -> Reg {
    rxq(0x01008, 0x0D008, q)
}
/// RX head.
pub const fn rdh(q: u16) -> Reg {
    rxq(0x01010, 0x0D010, q)
}
/// RX tail.
pub const fn rdt(q: u16) -> Reg {
    rxq(0x01018, 0x0D018, q)
}
/// RX descriptor control.
pub const fn rxdctl(q: u16) -> Reg {
    rxq(0x01028, 0x0D028, q)
}
/// Split receive control (three-way split, docs/hw/ixgbe.md §6.1).
pub const fn srrctl(q: u16) -> Reg {
    if q <= 15 {
        Reg(0x02100 + 4 * q as usize)
    } else {
        rxq(0x01014, 0x0D014, q)
    }
}
/// RX DCA control (three-way split, docs/hw/ixgbe.md §6.1).
pub const fn dca_rxctrl(q: u16) -> Reg {
    if q <= 15 {
        Reg(0x02200 + 4 * q as usize)
    } else {
        rxq(0x0100C, 0x0D00C, q)
    }
}
/// DCA_RXCTRL bits to clear (docs/hw/ixgbe.md §4: bit 12 per ixy, 13 and 15 per DPDK gen2).
pub mod dca_rxctrl {
    use super::bit;
    /// ixy: comes out of reset as 1, must be 0.
    pub const BIT12: u32 = bit(12);
    /// Data write relaxed ordering.
    pub const DATA_WRO_EN: u32 = bit(13);
    /// Header write relaxed ordering.
    pub const HEAD_WRO_EN: u32 = bit(15);
}

/// SRRCTL fields (docs/hw/ixgbe.md §6.2).
pub mod srrctl {
    use super::{bit, Field};
    /// Buffer size in KiB.
    pub const BSIZEPACKET: Field = Field::new(6, 0);
    /// BSIZEPACKET unit.
    pub const BSIZEPACKET_SHIFT: u32 = 10;
    /// Descriptor type.
    pub const DESCTYPE: Field = Field::new(27, 25);
    /// DESCTYPE: advanced, one buffer.
    pub const DESCTYPE_ADV_ONEBUF: u32 = 0b001;
    /// Drop when the queue has no descriptors.
    pub const DROP_EN: u32 = bit(28);
}

/// RXDCTL bits (docs/hw/ixgbe.md §6.2).
pub mod rxdctl {
    use super::bit;
    /// Queue enable.
    pub const ENABLE: u32 = bit(25);
    /// Software flush.
    pub const SWFLSH: u32 = bit(26);
    /// VLAN strip.
    pub const VME: u32 = bit(30);
}

/// TX descriptor base low (docs/hw/ixgbe.md §6.1).
pub const fn tdbal(q: u16) -> Reg {
    Reg(0x06000 + 0x40 * q as usize)
}
/// TX descriptor base high.
pub const fn tdbah(q: u16) -> Reg {
    Reg(0x06004 + 0x40 * q as usize)
}
/// TX ring length in bytes.
pub const fn tdlen(q: u16) -> Reg {
    Reg(0x06008 + 0x40 * q as usize)
}
/// TX DCA control (82599/X540).
pub const fn dca_txctrl(q: u16) -> Reg {
    Reg(0x0600C + 0x40 * q as usize)
}
/// DCA_TXCTRL bits.
pub mod dca_txctrl {
    use super::bit;
    /// Descriptor write-back relaxed ordering: cleared, reordered DD write-backs break cleanup (docs/hw/ixgbe.md §6.3).
    pub const DESC_WRO_EN: u32 = bit(11);
}
/// TX head.
pub const fn tdh(q: u16) -> Reg {
    Reg(0x06010 + 0x40 * q as usize)
}
/// TX tail.
pub const fn tdt(q: u16) -> Reg {
    Reg(0x06018 + 0x40 * q as usize)
}
/// TX descriptor control.
pub const fn txdctl(q: u16) -> Reg {
    Reg(0x06028 + 0x40 * q as usize)
}
/// Head write-back address low.
pub const fn tdwbal(q: u16) -> Reg {
    Reg(0x06038 + 0x40 * q as usize)
}
/// Head write-back address high.
pub const fn tdwbah(q: u16) -> Reg {
    Reg(0x0603C + 0x40 * q as usize)
}
/// TXDCTL fields (docs/hw/ixgbe.md §6.3).
pub mod txdctl {
    use super::{bit, Field};
    /// Prefetch threshold.
    pub const PTHRESH: Field = Field::new(6, 0);
    /// Host threshold.
    pub const HTHRESH: Field = Field::new(14, 8);
    /// Write-back threshold (0 with RS batching).
    pub const WTHRESH: Field = Field::new(22, 16);
    /// Queue enable.
    pub const ENABLE: u32 = bit(25);
    /// Software flush.
    pub const SWFLSH: u32 = bit(26);
    /// DPDK's PTHRESH default.
    pub const DEFAULT_PTHRESH: u32 = 32;
}
