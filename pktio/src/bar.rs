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
    fn reg<T>(&self, offset: usize) -> *mut T {
        let size = std::mem::size_of::<T>();
        assert!(
            offset.is_multiple_of(size) && offset + size <= self.len,
            "register offset {offset:#x} ({size} bytes) outside BAR of {:#x}",
            self.len
        );
        // SAFETY: offset checked inside the mapping and aligned for T.
        unsafe { self.base.as_ptr().add(offset).cast() }
    }
}

impl RegisterSpace for MmioBar {
    #[inline(always)]
    fn read32(&self, offset: usize) -> u32 {
        // SAFETY: in-bounds, aligned register of a live mapping (constructor contract).
        unsafe { self.reg::<u32>(offset).read_volatile() }
    }

    #[inline(always)]
    fn write32(&self, offset: usize, value: u32) {
        // SAFETY: as above.
        unsafe { self.reg::<u32>(offset).write_volatile(value) }
    }

    fn read16(&self, offset: usize) -> u16 {
        // SAFETY: in-bounds, aligned register of a live mapping.
        unsafe { self.reg::<u16>(offset).read_volatile() }
    }

    fn write16(&self, offset: usize, value: u16) {
        // SAFETY: as above.
        unsafe { self.reg::<u16>(offset).write_volatile(value) }
    }

    fn read8(&self, offset: usize) -> u8 {
        // SAFETY: as above.
        unsafe { self.reg::<u8>(offset).read_volatile() }
    }

    fn write8(&self, offset: usize, value: u8) {
        // SAFETY: as above.
        unsafe { self.reg::<u8>(offset).write_volatile(value) }
    }

    fn len(&self) -> usize {
        self.len
    }
}
