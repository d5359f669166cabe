//! A fake register space for unit tests and the benchmark: registers are plain memory, with just enough device
//! behaviour for bring-up to succeed (reset bits self-clear, EEC.ARD and RDRXCTL.DMAIDONE read 1, MDIO cycles
//! complete with no PHY behind them, RAL/RAH(0) hold a MAC). It does no DMA: a test or benchmark plays the device
//! by completing descriptors itself ([`FakeRegs::ring`]).

use std::sync::atomic::{AtomicU32, Ordering};

use drvkit::bar::RegisterSpace;

use crate::regs::{self, ctrl, eec, msca, rah, rdrxctl, Reg};

/// Register-space size (everything the driver touches is below 0x20000).
const SPACE: usize = 0x20000;

/// Memory-backed registers.
#[derive(Debug)]
pub struct FakeRegs {
    words: Box<[AtomicU32]>,
    /// Bits ORed into reads of a register (status bits a device would set), for other families than ixgbe.
    read_bits: Vec<(Reg, u32)>,
}

impl Default for FakeRegs {
    fn default() -> Self {
        Self::new([0x02, 0x00, 0x00, 0x00, 0x00, 0x01])
    }
}

impl FakeRegs {
    /// A device whose permanent MAC is `mac`.
    pub fn new(mac: [u8; 6]) -> FakeRegs {
        let f = FakeRegs { words: (0..SPACE / 4).map(|_| AtomicU32::new(0)).collect(), read_bits: Vec::new() };
        f.write32(regs::ral(0).0, u32::from_le_bytes([mac[0], mac[1], mac[2], mac[3]]));
        f.write32(regs::rah(0).0, u16::from_le_bytes([mac[4], mac[5]]) as u32 | rah::AV);
        f
    }

    /// Reads of `reg` also return `bits` set.
    pub fn with_read_bits(mut self, reg: Reg, bits: u32) -> Self {
        self.read_bits.push((reg, bits));
        self
    }

    /// The value last written to `reg` (no side effects).
    pub fn peek(&self, reg: Reg) -> u32 {
        self.words[reg.0 / 4].load(Ordering::Relaxed)
    }

    /// Base address of the ring programmed at (`lo`, `hi`) base registers, as a pointer (IOVA = VA).
    pub fn ring<T>(&self, lo: Reg, hi: Reg) -> *mut T {
        (self.peek(lo) as u64 | (self.peek(hi) as u64) << 32) as usize as *mut T
    }
}

impl RegisterSpace for FakeRegs {
    fn read32(&self, offset: usize) -> u32 {
        let Some(w) = self.words.get(offset / 4) else { return u32::MAX };
        let mut v = w.load(Ordering::Relaxed);
        for &(r, bits) in &self.read_bits {
            if r.0 == offset {
                v |= bits;
            }
        }
        match Reg(offset) {
            regs::CTRL => {
                w.store(v & !ctrl::RST_MASK, Ordering::Relaxed);
                v & !ctrl::RST_MASK
            }
            regs::EEC => v | eec::ARD,
            regs::RDRXCTL => v | rdrxctl::DMAIDONE,
            regs::MSCA => v & !msca::MDI_COMMAND,
            _ => v,
        }
    }

    fn write32(&self, offset: usize, value: u32) {
        if let Some(w) = self.words.get(offset / 4) {
            w.store(value, Ordering::Relaxed);
        }
    }

    fn len(&self) -> usize {
        SPACE
    }
}
