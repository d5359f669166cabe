//! DMA areas a driver shares with its device outside the packet buffers (admin/mailbox queues and their buffers,
//! event queues, descriptor rings, backing pages): allocated, zeroed, IOVA-contiguous, 4 KiB-aligned, mapped for
//! the device, and copied in and out with volatile accesses. The drivers' control planes have no `unsafe` of their
//! own for this memory.

use std::sync::Arc;

use super::{DmaError, DmaMapper, DmaMapping, Result};
use hugepage::Allocator;

/// Alignment every area has: a 4 KiB page frame, which every ring, queue page and buffer the drivers place here
/// needs at most (i40e's admin queue and HMC pages, hinic3's AEQ pages and work queues).
pub const AREA_ALIGN: u64 = 4096;

/// One contiguous, mapped DMA area. The mapping guard owns the memory: it is unmapped before it is freed.
pub struct DmaArea {
    map: DmaMapping,
    len: usize,
}

impl std::fmt::Debug for DmaArea {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DmaArea(iova {:#x}, {} bytes)", self.iova(0), self.len)
    }
}

impl DmaArea {
    /// `bytes` of zeroed memory, IOVA-contiguous and 4 KiB-aligned, mapped through `mapper`.
    pub fn new(
        allocator: &Allocator,
        mapper: &Arc<dyn DmaMapper>,
        bytes: usize,
        port: &str,
        what: &str,
    ) -> Result<Self> {
        let bad = |reason: String| DmaError::Area { port: port.to_string(), reason };
        let mem =
            allocator.allocate(bytes).map_err(|e| bad(format!("cannot allocate {bytes} bytes for {what}: {e}")))?;
        let iova = mem.iova_at(0);
        if iova.is_none() || mem.contiguous_from(0) < bytes {
            return Err(bad(format!("{what} ({bytes} bytes) is not IOVA-contiguous; use larger hugepages")));
        }
        if iova.unwrap_or(0) % AREA_ALIGN != 0 {
            return Err(bad(format!("{what} is not 4 KiB-aligned in IOVA space")));
        }
        let area = DmaArea { map: mapper.map(&Arc::new(mem))?, len: bytes };
        area.fill(0, bytes, 0);
        Ok(area)
    }

    /// The device address of byte `offset`.
    pub fn iova(&self, offset: usize) -> u64 {
        self.map.memory().iova_at(0).unwrap_or(0) + offset as u64
    }

    /// The CPU address of the area (for the hot path's rings and for tests playing the device).
    pub fn as_ptr(&self) -> *mut u8 {
        self.map.memory().as_ptr()
    }

    fn check(&self, offset: usize, len: usize) {
        assert!(
            offset.checked_add(len).is_some_and(|e| e <= self.len),
            "DMA access {offset}+{len} outside {}",
            self.len
        );
    }

    /// Copies `bytes` into the area at `offset` (volatile: the device may read it at any time).
    pub fn write(&self, offset: usize, bytes: &[u8]) {
        self.check(offset, bytes.len());
        let base = self.as_ptr();
        for (i, &b) in bytes.iter().enumerate() {
            // SAFETY: offset + i < len (checked): inside the live mapping this guard owns.
            unsafe { base.add(offset + i).write_volatile(b) };
        }
    }

    /// Copies `out.len()` bytes out of the area at `offset` (volatile: the device may have written them).
    pub fn read(&self, offset: usize, out: &mut [u8]) {
        self.check(offset, out.len());
        let base = self.as_ptr();
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: offset + i < len (checked): inside the live mapping this guard owns.
            *b = unsafe { base.add(offset + i).read_volatile() };
        }
    }

    /// Sets `len` bytes at `offset` to `value`.
    pub fn fill(&self, offset: usize, len: usize, value: u8) {
        self.check(offset, len);
        let base = self.as_ptr();
        for i in 0..len {
            // SAFETY: offset + i < len (checked): inside the live mapping this guard owns.
            unsafe { base.add(offset + i).write_volatile(value) };
        }
    }

    /// Writes `v` little-endian at `offset`.
    pub fn write_u64(&self, offset: usize, v: u64) {
        self.write(offset, &v.to_le_bytes());
    }
}
