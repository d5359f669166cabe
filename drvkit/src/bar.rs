//! Register access. Drivers are generic over [`RegisterSpace`] so the same code drives a VFIO-mapped BAR
//! ([`MmioBar`]) or a behavioural model's registers.
//!
//! MMIO goes through the `volatile` crate's `VolatilePtr`: its read/write compile to the same single `mov` as
//! `ptr::read_volatile` (checked in the release asm of `read32`/`write32`), and they need no `unsafe` per access.

use std::ptr::NonNull;

use volatile::VolatilePtr;

/// 32-bit register access by byte offset. Offsets are checked against the space's size.
pub trait RegisterSpace: Send + Sync + 'static {
    /// Reads the 32-bit register at `offset`.
    fn read32(&self, offset: usize) -> u32;
    /// Writes the 32-bit register at `offset`.
    fn write32(&self, offset: usize, value: u32);
    /// Size of the space in bytes.
    fn len(&self) -> usize;
    /// True for an empty space.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Reads the 16-bit register at `offset` (2-byte aligned). The default reads the enclosing 32-bit word:
    /// spaces whose reads have side effects (virtio's ISR, say) must override it with a real 16-bit access.
    fn read16(&self, offset: usize) -> u16 {
        (self.read32(offset & !3) >> ((offset & 2) * 8)) as u16
    }
    /// Writes the 16-bit register at `offset`. The default is a read-modify-write of the enclosing 32-bit word;
    /// spaces where that has side effects must override it.
    fn write16(&self, offset: usize, value: u16) {
        let shift = (offset & 2) * 8;
        self.modify32(offset & !3, 0xffff << shift, (value as u32) << shift);
    }
    /// Reads the 8-bit register at `offset` (default: from the enclosing 32-bit word, see [`Self::read16`]).
    fn read8(&self, offset: usize) -> u8 {
        (self.read32(offset & !3) >> ((offset & 3) * 8)) as u8
    }
    /// Writes the 8-bit register at `offset` (default: read-modify-write of the enclosing word).
    fn write8(&self, offset: usize, value: u8) {
        let shift = (offset & 3) * 8;
        self.modify32(offset & !3, 0xff << shift, (value as u32) << shift);
    }
    /// Writes the 64-bit register at `offset` (8-byte aligned) as one store where the space can (hinic3's
    /// doorbells are single 64-bit stores). The default writes the low word, then the high word.
    fn write64(&self, offset: usize, value: u64) {
        self.write32(offset, value as u32);
        self.write32(offset + 4, (value >> 32) as u32);
    }
    /// Read-modify-write: sets `set` bits and clears `clear` bits.
    fn modify32(&self, offset: usize, clear: u32, set: u32) {
        let v = self.read32(offset);
        self.write32(offset, (v & !clear) | set);
    }
}

/// A memory-mapped BAR: every access volatile, inside bounds.
#[derive(Debug)]
pub struct MmioBar {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: MMIO registers are accessed with single volatile loads/stores; the device serialises them.
unsafe impl Send for MmioBar {}
// SAFETY: as above.
unsafe impl Sync for MmioBar {}

impl MmioBar {
    /// Wraps a mapped BAR.
    ///
    /// # Safety
    /// `base..base+len` must be a live mapping of device registers (e.g. a VFIO region mmap) that stays mapped for
    /// the life of the `MmioBar`, and `base` must be 4-byte aligned.
    pub unsafe fn new(base: NonNull<u8>, len: usize) -> Self {
        MmioBar { base, len }
    }

    /// The register of type `T` at `offset`, as a volatile pointer (every access one load or store of `T`).
    #[inline(always)]
    fn reg<T: Copy>(&self, offset: usize) -> VolatilePtr<'_, T> {
        let size = std::mem::size_of::<T>();
        if !(offset.is_multiple_of(size) && offset + size <= self.len) {
            outside(offset, size, self.len);
        }
        // SAFETY: offset is checked inside the mapping and aligned for T; the mapping is live for as long as the
        // borrow of self (constructor contract) and is only accessed with volatile loads and stores.
        unsafe { VolatilePtr::new(self.base.add(offset).cast()) }
    }
}

/// The bounds failure, out of line: formatting its message inline would make every register access set up a stack
/// frame for the panic arguments before the bounds check.
#[cold]
#[inline(never)]
#[track_caller]
fn outside(offset: usize, size: usize, len: usize) -> ! {
    panic!("register offset {offset:#x} ({size} bytes) outside BAR of {len:#x}")
}

impl RegisterSpace for MmioBar {
    #[inline(always)]
    fn read32(&self, offset: usize) -> u32 {
        self.reg::<u32>(offset).read()
    }

    #[inline(always)]
    fn write32(&self, offset: usize, value: u32) {
        self.reg::<u32>(offset).write(value)
    }

    fn read16(&self, offset: usize) -> u16 {
        self.reg::<u16>(offset).read()
    }

    #[inline(always)]
    fn write64(&self, offset: usize, value: u64) {
        self.reg::<u64>(offset).write(value)
    }

    fn write16(&self, offset: usize, value: u16) {
        self.reg::<u16>(offset).write(value)
    }

    fn read8(&self, offset: usize) -> u8 {
        self.reg::<u8>(offset).read()
    }

    fn write8(&self, offset: usize, value: u8) {
        self.reg::<u8>(offset).write(value)
    }

    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(words: &mut [u32]) -> MmioBar {
        let len = std::mem::size_of_val(words);
        // SAFETY: the words outlive the bar in each test and are u32-aligned.
        unsafe { MmioBar::new(NonNull::new(words.as_mut_ptr()).unwrap().cast(), len) }
    }

    #[test]
    fn accesses_of_each_width_hit_the_right_bytes() {
        let mut words = [0u32; 4];
        let b = bar(&mut words);
        b.write32(4, 0x1122_3344);
        assert_eq!(b.read32(4), 0x1122_3344);
        b.write16(10, 0xbeef);
        b.write8(15, 0x7f);
        assert_eq!(b.read16(6), 0x1122);
        assert_eq!(b.read8(4), 0x44);
        b.modify32(4, 0xff00, 0x0a00);
        assert_eq!(b.read32(4), 0x1122_0a44);
        assert_eq!(words, [0, 0x1122_0a44, 0xbeef_0000, 0x7f00_0000], "little-endian layout");
    }

    #[test]
    #[should_panic(expected = "register offset 0x10 (4 bytes) outside BAR of 0x10")]
    fn an_access_past_the_end_panics_with_the_offset() {
        let mut words = [0u32; 4];
        bar(&mut words).read32(16);
    }

    #[test]
    #[should_panic(expected = "register offset 0x2 (4 bytes)")]
    fn a_misaligned_access_panics() {
        let mut words = [0u32; 4];
        bar(&mut words).write32(2, 1);
    }
}
