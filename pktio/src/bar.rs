//! Register access. Drivers are generic over [`RegisterSpace`] so the same code drives a VFIO-mapped BAR
//! ([`MmioBar`]) or a behavioural model's registers.

use std::ptr::NonNull;

/// 32-bit register access by byte offset. Offsets are checked against the space's size.
pub trait RegisterSpace: Send + Sync {
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

    #[inline(always)]
    fn reg(&self, offset: usize) -> *mut u32 {
        assert!(
            offset.is_multiple_of(4) && offset + 4 <= self.len,
            "register offset {offset:#x} outside BAR of {:#x}",
            self.len
        );
        // SAFETY: offset checked inside the mapping.
        unsafe { self.base.as_ptr().add(offset).cast() }
    }
}

impl RegisterSpace for MmioBar {
    #[inline(always)]
    fn read32(&self, offset: usize) -> u32 {
        // SAFETY: in-bounds, aligned register of a live mapping (constructor contract).
        unsafe { self.reg(offset).read_volatile() }
    }

    #[inline(always)]
    fn write32(&self, offset: usize, value: u32) {
        // SAFETY: as above.
        unsafe { self.reg(offset).write_volatile(value) }
    }

    fn len(&self) -> usize {
        self.len
    }
}
