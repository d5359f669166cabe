//! Registers as data, for drivers: a [`Reg`] (an offset in a BAR), a [`Field`] (`hi:lo` bits) and [`bit`], and
//! [`Regs`], typed read/write/read-modify-write and polling with a deadline over any [`RegisterSpace`] (a VFIO BAR
//! or a model's). Each driver declares its own registers with these; none writes naked masks in its logic.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bar::RegisterSpace;

/// A 32-bit register at a byte offset of BAR0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reg(pub usize);

/// A bit field `hi:lo` of a register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Lowest bit.
    pub lo: u32,
    /// Width in bits.
    pub width: u32,
}

impl Field {
    /// The field `hi:lo`.
    pub const fn new(hi: u32, lo: u32) -> Field {
        Field { lo, width: hi - lo + 1 }
    }

    /// The field's mask in place.
    pub const fn mask(self) -> u32 {
        (((1u64 << self.width) - 1) as u32) << self.lo
    }

    /// The field's value in `reg`.
    pub const fn get(self, reg: u32) -> u32 {
        (reg & self.mask()) >> self.lo
    }

    /// `value` placed in the field (truncated to its width).
    pub const fn val(self, value: u32) -> u32 {
        (value << self.lo) & self.mask()
    }

    /// `reg` with the field replaced by `value`.
    pub const fn set(self, reg: u32, value: u32) -> u32 {
        (reg & !self.mask()) | self.val(value)
    }
}

/// Bit `n` as a mask.
pub const fn bit(n: u32) -> u32 {
    1 << n
}

/// A register that did not reach the wanted state in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollTimeout {
    /// The register.
    pub reg: Reg,
    /// Its last value.
    pub last: u32,
}

/// Typed access to a register space, shared by a device and its queues. `BIG_ENDIAN`: the device's registers
/// are big-endian on the bus (hinic3's CSRs); every value read or written here is then in CPU order, swapped in
/// this one place (a constant, so a little-endian space pays nothing).
#[derive(Debug)]
pub struct Regs<R, const BIG_ENDIAN: bool = false> {
    space: Arc<R>,
}

impl<R, const BIG_ENDIAN: bool> Clone for Regs<R, BIG_ENDIAN> {
    fn clone(&self) -> Self {
        Regs { space: self.space.clone() }
    }
}

impl<R: RegisterSpace, const BIG_ENDIAN: bool> Regs<R, BIG_ENDIAN> {
    /// CPU order to bus order and back (the same conversion both ways).
    #[inline(always)]
    fn bus(v: u32) -> u32 {
        if BIG_ENDIAN {
            u32::from_be(v)
        } else {
            v
        }
    }

    /// Wraps a register space.
    pub fn new(space: Arc<R>) -> Self {
        Regs { space }
    }

    /// The underlying space.
    pub fn space(&self) -> &R {
        &self.space
    }

    /// The shared handle of the underlying space.
    pub fn arc(&self) -> &Arc<R> {
        &self.space
    }

    /// Reads a register.
    #[inline(always)]
    pub fn read(&self, reg: Reg) -> u32 {
        Self::bus(self.space.read32(reg.0))
    }

    /// Writes a register.
    #[inline(always)]
    pub fn write(&self, reg: Reg, value: u32) {
        self.space.write32(reg.0, Self::bus(value))
    }

    /// Sets `bits` (read-modify-write).
    pub fn set_bits(&self, reg: Reg, bits: u32) {
        self.space.modify32(reg.0, 0, Self::bus(bits))
    }

    /// Clears `bits` (read-modify-write).
    pub fn clear_bits(&self, reg: Reg, bits: u32) {
        self.space.modify32(reg.0, Self::bus(bits), 0)
    }

    /// Replaces field `f` (read-modify-write).
    pub fn write_field(&self, reg: Reg, f: Field, value: u32) {
        let v = self.read(reg);
        self.write(reg, f.set(v, value));
    }

    /// Polls until `done(value)`, sleeping `step` between reads, for at most `timeout`. Returns the last value.
    pub fn poll_with(
        &self,
        reg: Reg,
        timeout: Duration,
        step: Duration,
        mut done: impl FnMut(u32) -> bool,
    ) -> Result<u32, PollTimeout> {
        let start = Instant::now();
        loop {
            let v = self.read(reg);
            if done(v) {
                return Ok(v);
            }
            if start.elapsed() >= timeout {
                return Err(PollTimeout { reg, last: v });
            }
            if !step.is_zero() {
                std::thread::sleep(step);
            }
        }
    }

    /// Polls until `reg & mask == want` for at most `timeout` (steps of a hundredth of it, 1 µs to 1 ms).
    pub fn poll(&self, reg: Reg, mask: u32, want: u32, timeout: Duration) -> Result<u32, PollTimeout> {
        let step = (timeout / 100).clamp(Duration::from_micros(1), Duration::from_millis(1));
        self.poll_with(reg, timeout, step, |v| v & mask == want)
    }
}
