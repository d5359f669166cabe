//! Interrupt registers (docs/hw/ixgbe.md §12, §12.1): causes, masks, auto-clear and auto-mask, the queue-to-vector
//! map and throttling. Offsets from DPDK's `ixgbe_type.h` (docs/hw/ixgbe.md §2).

use super::{bit, Field, Reg};

/// Interrupt cause, read-to-clear; writing 1s clears those causes (docs/hw/ixgbe.md §12.1).
pub const EICR: Reg = Reg(0x00800);
/// Interrupt cause set: writing 1s sets causes as if the events had happened; reads the causes without clearing.
pub const EICS: Reg = Reg(0x00808);
/// Auto-clear: a vector (0..15) whose bit is set has its cause cleared when its message is sent.
pub const EIAC: Reg = Reg(0x00810);
/// Interrupt mask set (writing 1s unmasks; reads the mask).
pub const EIMS: Reg = Reg(0x00880);
/// Interrupt mask clear (docs/hw/ixgbe.md §2, §3.1).
pub const EIMC: Reg = Reg(0x00888);
/// Every interrupt cause (docs/hw/ixgbe.md §3.1: "simply EIMC = 0xFFFF_FFFF").
pub const EIMC_ALL: u32 = u32::MAX;
/// General-purpose interrupt enable (docs/hw/ixgbe.md §4, GPIE).
pub const GPIE: Reg = Reg(0x00898);
/// IVAR_MISC: the vectors of the TCP timer (byte 0) and the other causes (byte 1).
pub const IVAR_MISC: Reg = Reg(0x00A00);

/// Cause bits of EICR, EICS, EIMS and EIMC (docs/hw/ixgbe.md §12).
pub mod eicr {
    use super::{bit, Field};
    /// Bits 15:0, the queue causes (one per vector 0..15 in MSI-X mode).
    pub const RTX_QUEUE: Field = Field::new(15, 0);
    /// Link status change.
    pub const LSC: u32 = bit(20);
}

/// GPIE bits (docs/hw/ixgbe.md §4, §12).
pub mod gpie {
    use super::bit;
    /// MSI-X mode: each vector signalled on its own, IVAR entries name vectors.
    pub const MSIX_MODE: u32 = bit(4);
    /// OCD, set with MSI-X as DPDK's `ixgbe_configure_msix` does (docs/hw/ixgbe.md §12).
    pub const OCD: u32 = bit(5);
    /// Auto-mask: EIAM/EIAM_EX mask a vector when its message is sent.
    pub const EIAME: u32 = bit(30);
    /// PBA support (MSI-X pending-bit array).
    pub const PBA_SUPPORT: u32 = bit(31);
}

/// The 16 bits of EICR (and friends) that are per vector in MSI-X mode: vectors 0..15.
pub const EICR_QUEUE_VECTORS: u16 = 16;

/// Extended cause set for vectors 32i..32i+31 (`i` = 0, 1).
pub const fn eics_ex(i: usize) -> Reg {
    Reg(0x00A90 + 4 * i)
}
/// Extended mask set for vectors 32i..32i+31.
pub const fn eims_ex(i: usize) -> Reg {
    Reg(0x00AA0 + 4 * i)
}
/// Extended mask clear for vectors 32i..32i+31.
pub const fn eimc_ex(i: usize) -> Reg {
    Reg(0x00AB0 + 4 * i)
}
/// Extended auto-mask for vectors 32i..32i+31 (with GPIE.EIAME).
pub const fn eiam_ex(i: usize) -> Reg {
    Reg(0x00AD0 + 4 * i)
}

/// Interrupt throttle of vector `n` (0..63): EITR(0..23) at 0x00820, the rest at 0x12300.
pub const fn eitr(n: usize) -> Reg {
    if n <= 23 {
        Reg(0x00820 + 4 * n)
    } else {
        Reg(0x12300 + 4 * (n - 24))
    }
}
/// EITR fields (docs/hw/ixgbe.md §12).
pub mod eitr {
    use super::{bit, Field};
    /// The interval, in 2.048 µs units at 1G and 10G.
    pub const INTERVAL: Field = Field::new(11, 3);
    /// The interval's unit, in nanoseconds.
    pub const UNIT_NS: u32 = 2048;
    /// Write without disturbing the running counter.
    pub const CNT_WDIS: u32 = bit(31);
    /// DPDK's default interval, in microseconds.
    pub const DEFAULT_US: u32 = 500;
}

/// Queue-to-vector map: IVAR(q >> 1) holds RX and TX queues q of each parity (docs/hw/ixgbe.md §12).
pub const fn ivar(i: usize) -> Reg {
    Reg(0x00900 + 4 * i)
}
/// IVAR entries.
pub mod ivar {
    /// An entry's valid bit (bit 7 of its byte); the low bits name the vector.
    pub const VALID: u32 = 0x80;
    /// The vector bits of an entry (0..63).
    pub const VECTOR: u32 = 0x3F;
    /// Where queue `q`'s entry sits in IVAR(q >> 1): byte `2 * (q & 1) + dir` (dir 0: RX, 1: TX).
    pub const fn shift(q: u16, tx: bool) -> u32 {
        16 * (q as u32 & 1) + if tx { 8 } else { 0 }
    }
    /// IVAR_MISC: the other causes' entry is byte 1.
    pub const MISC_OTHER_SHIFT: u32 = 8;
}
