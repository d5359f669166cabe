//! DMA areas a driver shares with its device outside the packet buffers (admin/mailbox queues and their buffers,
//! event queues, descriptor rings, backing pages): allocated, zeroed, IOVA-contiguous, 4 KiB-aligned, mapped for
//! the device, and copied in and out with volatile accesses. The drivers' control planes have no `unsafe` of their
//! own for this memory.

use std::sync::Arc;

use super::{DmaError, DmaMapper, DmaMapping, Result};
use hugepage::Allocator;

/// Alignment every area has: a 4 KiB page frame, which most rings, queue pages and buffers the drivers place here
/// need (i40e's admin queue and HMC pages, hinic3's AEQ pages); a larger one through [`DmaArea::new_aligned`]
/// (hinic3's work queues, 256 KiB).
pub const AREA_ALIGN: u64 = 4096;

/// One contiguous, mapped DMA area. The mapping guard owns the memory: it is unmapped before it is freed.
pub struct DmaArea {
    map: DmaMapping,
    /// Where the area starts in the mapping (non-zero when an alignment asked for more).
    start: usize,
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
        Self::new_aligned(allocator, mapper, bytes, AREA_ALIGN, port, what)
    }

    /// `new` with an IOVA alignment `align` (a power of two, at least 4 KiB), as devices that want rings on a
    /// larger boundary ask (DPDK's `rte_memzone_reserve_aligned`). Memory that is not aligned by itself is taken
    /// again `align` bytes larger and the area starts at its first aligned byte.
    pub fn new_aligned(
        allocator: &Allocator,
        mapper: &Arc<dyn DmaMapper>,
        bytes: usize,
        align: u64,
        port: &str,
        what: &str,
    ) -> Result<Self> {
        let bad = |reason: String| DmaError::Area { port: port.to_string(), reason };
        let align = align.max(AREA_ALIGN);
        if !align.is_power_of_two() {
            return Err(bad(format!("{what}: alignment {align:#x} is not a power of two")));
        }
        let take = |len: usize| {
            allocator.allocate(len).map_err(|e| bad(format!("cannot allocate {len} bytes for {what}: {e}")))
        };
        let mut mem = take(bytes)?;
        if mem.iova_at(0).is_some_and(|a| !a.is_multiple_of(align)) {
            mem = take(bytes + align as usize)?;
        }
        let Some(iova) = mem.iova_at(0) else {
            return Err(bad(format!("{what} ({bytes} bytes) has no IOVA")));
        };
        let start = ((align - iova % align) % align) as usize;
        if !iova.is_multiple_of(AREA_ALIGN) {
            return Err(bad(format!("{what} is not 4 KiB-aligned in IOVA space")));
        }
        if mem.contiguous_from(start) < bytes {
            return Err(bad(format!("{what} ({bytes} bytes) is not IOVA-contiguous; use larger hugepages")));
        }
        let area = DmaArea { map: mapper.map(&Arc::new(mem))?, start, len: bytes };
        area.fill(0, bytes, 0);
        Ok(area)
    }

    /// The device address of byte `offset`.
    pub fn iova(&self, offset: usize) -> u64 {
        self.map.memory().iova_at(self.start).unwrap_or(0) + offset as u64
    }

    /// The CPU address of the area (for the hot path's rings and for tests playing the device).
    pub fn as_ptr(&self) -> *mut u8 {
        // start + len lies inside the mapping (new_aligned checked the contiguous length from start).
        self.map.memory().as_ptr().wrapping_add(self.start)
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
