//! The model's side of the DMA seam: an IOVA map (what an IOMMU would hold) and the only code in the crate that
//! touches host memory.
//!
//! A driver maps its rings and mempool memory through [`IovaMap`] (as a [`drvkit::dma::DmaMapper`]); the model then
//! reads and writes host memory only by IOVA through [`IovaMap::read`] / [`IovaMap::write`] and friends. An access
//! that is not wholly inside mapped regions is not performed: it is recorded as a [`Fault::Dma`] and the caller sees
//! an error.
//!
//! A mapping lasts as long as the [`drvkit::dma::DmaMapping`] guard [`IovaMap`] hands out (counted per region: the
//! last guard removes it), and the map itself holds a reference to every mapped [`DmaMemory`]. Every access runs
//! with the map's read lock held, so memory the model reaches can neither be unmapped nor freed during the access:
//! the model, like a device, would otherwise write into whatever is there afterwards.

use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};

use drvkit::dma::{DmaMapper, DmaMapping};
use hugepage::DmaMemory;
use memmap2::MmapRaw;

use crate::fault::{Fault, FaultLog};

/// One contiguous IOVA range and the host address behind it.
#[derive(Debug, Clone, Copy)]
struct Region {
    iova: u64,
    len: u64,
    host: usize,
    /// Base address of the DmaMemory it came from (its entry's key).
    owner: usize,
}

/// Memory behind an entry: the driver's own [`DmaMemory`], or a shared mapping of someone else's memory (a VM's
/// guest RAM, mapped from the memfd a vfio-user client hands over).
#[derive(Debug)]
enum Backing {
    Dma(Arc<DmaMemory>),
    Shared(Arc<MmapRaw>),
}

impl Backing {
    fn base(&self) -> usize {
        match self {
            Backing::Dma(m) => m.as_ptr() as usize,
            Backing::Shared(m) => m.as_mut_ptr() as usize,
        }
    }
}

/// A mapped memory: held by the map while any guard on it lives.
#[derive(Debug)]
struct Entry {
    memory: Backing,
    guards: usize,
}

/// The map's state: the ranges (looked up on every access) and the memory they point into.
#[derive(Debug, Default)]
struct Table {
    regions: Vec<Region>,
    entries: Vec<Entry>,
}

/// The IOVA map's half of a [`DmaMapping`]: one counted guard on the entry at `owner`.
struct Unmap {
    table: Arc<RwLock<Table>>,
    owner: usize,
}

impl Drop for Unmap {
    fn drop(&mut self) {
        let mut table = self.table.write().unwrap_or_else(|e| e.into_inner());
        let Some(i) = table.entries.iter().position(|e| e.memory.base() == self.owner) else { return };
        table.entries[i].guards -= 1;
        if table.entries[i].guards == 0 {
            let entry = table.entries.swap_remove(i);
            let owner = self.owner;
            table.regions.retain(|r| r.owner != owner);
            drop(table);
            // The map's reference to the memory goes only after its regions are gone.
            drop(entry);
        }
    }
}

/// A DMA access outside the map (already recorded in the fault log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaError;

/// The IOVA → host map of one model device.
#[derive(Debug)]
pub struct IovaMap {
    table: Arc<RwLock<Table>>,
    faults: Arc<FaultLog>,
}

impl IovaMap {
    /// An empty map reporting faults to `faults`.
    pub fn new(faults: Arc<FaultLog>) -> Self {
        IovaMap { table: Arc::default(), faults }
    }

    fn table(&self) -> RwLockReadGuard<'_, Table> {
        self.table.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of mapped contiguous ranges.
    pub fn region_count(&self) -> usize {
        self.table().regions.len()
    }

    /// True if `[iova, iova+len)` is wholly mapped.
    pub fn is_mapped(&self, iova: u64, len: usize) -> bool {
        self.translate(iova, len, |_| ()).is_some()
    }

    /// Calls `f` with the host address of each mapped piece of `[iova, iova+len)` in order, or returns `None`
    /// (calling `f` for nothing) when part of the range is unmapped. `f` runs with the read lock held: the pieces
    /// stay mapped, and their memory (held by the table's entries) allocated, until it returns.
    fn translate(&self, iova: u64, len: usize, mut f: impl FnMut(Piece)) -> Option<()> {
        let table = self.table();
        let regions = &table.regions;
        let mut pieces: [Piece; 4] = [Piece::default(); 4];
        let mut n = 0;
        let mut at = iova;
        let end = iova.checked_add(len as u64)?;
        while at < end {
            let r = regions.iter().find(|r| at >= r.iova && at - r.iova < r.len)?;
            let take = (r.len - (at - r.iova)).min(end - at);
            if n == pieces.len() {
                return None; // more than 4 pieces: never the case for our accesses; treat as a fault
            }
            pieces[n] =
                Piece { host: r.host + (at - r.iova) as usize, len: take as usize, offset: (at - iova) as usize };
            n += 1;
            at += take;
        }
        pieces[..n].iter().for_each(|p| f(*p));
        Some(())
    }

    fn fault(&self, iova: u64, len: usize, write: bool, what: &dyn Fn() -> String) -> DmaError {
        self.faults.record(Fault::Dma { iova, len, write, what: what() });
        DmaError
    }

    /// Device read of `buf.len()` bytes at `iova` (a data buffer or descriptor fetch).
    pub fn read(&self, iova: u64, buf: &mut [u8], what: &dyn Fn() -> String) -> Result<(), DmaError> {
        let ok = self.translate(iova, buf.len(), |p| {
            // SAFETY: `p.host..p.host+p.len` lies inside a mapped region, whose DmaMemory the table holds (an Arc in
            // its entry) and cannot drop while `translate` holds the read lock. The bytes may be written
            // concurrently by the driver, exactly as with a real device's DMA read; we copy them as plain bytes.
            unsafe { std::ptr::copy_nonoverlapping(p.host as *const u8, buf.as_mut_ptr().add(p.offset), p.len) }
        });
        ok.ok_or_else(|| self.fault(iova, buf.len(), false, what))
    }

    /// Device write of `data` at `iova`.
    pub fn write(&self, iova: u64, data: &[u8], what: &dyn Fn() -> String) -> Result<(), DmaError> {
        let ok = self.translate(iova, data.len(), |p| {
            // SAFETY: as in `read`: inside a mapped region whose memory is held alive under the lock. The driver
            // must not hold references to memory it handed to the device (the mempool/ring ownership rules), so
            // this is the device's write.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr().add(p.offset), p.host as *mut u8, p.len) }
        });
        ok.ok_or_else(|| self.fault(iova, data.len(), true, what))
    }

    /// Reads a 16-byte descriptor as two little-endian u64 (each a single aligned load when aligned).
    pub fn read_desc(&self, iova: u64, what: &dyn Fn() -> String) -> Result<[u64; 2], DmaError> {
        let mut raw = [0u8; 16];
        self.read(iova, &mut raw, what)?;
        Ok([
            u64::from_le_bytes(raw[0..8].try_into().expect("8 bytes")),
            u64::from_le_bytes(raw[8..16].try_into().expect("8 bytes")),
        ])
    }

    /// Writes a 16-byte descriptor write-back: dwords 0, 1 and 3 first, then a release fence, then dword
    /// `status_dword` (the one holding DD) with a single release store, so a driver that sees DD and then issues an
    /// acquire fence sees the rest.
    pub fn write_back(
        &self,
        iova: u64,
        dwords: [u32; 4],
        status_dword: usize,
        what: &dyn Fn() -> String,
    ) -> Result<(), DmaError> {
        let mut done = false;
        let ok = self.translate(iova, 16, |p| {
            if p.len != 16 || !p.host.is_multiple_of(4) {
                return;
            }
            for (i, d) in dwords.iter().enumerate() {
                if i != status_dword {
                    // SAFETY: `p.host` is a 4-aligned 16-byte piece of one mapped region, held alive and mapped
                    // while `translate` runs this closure (see `read`).
                    unsafe { ((p.host + 4 * i) as *mut u32).write_volatile(d.to_le()) };
                }
            }
            fence(Ordering::Release);
            // SAFETY: as above; the dword is 4-aligned and inside the mapping, and the driver reads it with atomic
            // or volatile loads (the DD poll), so an atomic store is the right pairing.
            let status = unsafe { AtomicU32::from_ptr((p.host + 4 * status_dword) as *mut u32) };
            status.store(dwords[status_dword].to_le(), Ordering::Release);
            done = true;
        });
        if ok.is_none() || !done {
            return Err(self.fault(iova, 16, true, what));
        }
        Ok(())
    }

    /// Writes one little-endian u32 with release ordering (TX head write-back, TX DD).
    pub fn write_u32(&self, iova: u64, value: u32, what: &dyn Fn() -> String) -> Result<(), DmaError> {
        let mut done = false;
        let ok = self.translate(iova, 4, |p| {
            if p.len != 4 || !p.host.is_multiple_of(4) {
                return;
            }
            fence(Ordering::Release);
            // SAFETY: a 4-aligned dword inside one mapped region, held alive and mapped while `translate` runs
            // this closure; see `write_back`.
            let cell = unsafe { AtomicU32::from_ptr(p.host as *mut u32) };
            cell.store(value.to_le(), Ordering::Release);
            done = true;
        });
        if ok.is_none() || !done {
            return Err(self.fault(iova, 4, true, what));
        }
        Ok(())
    }

    /// Adds `memory` to the map (or counts one more guard on it) and returns the guard's key.
    fn insert(&self, memory: &Arc<DmaMemory>) -> usize {
        let owner = memory.as_ptr() as usize;
        let mut table = self.table.write().unwrap_or_else(|e| e.into_inner());
        // Entries hold their memory, so a live entry at this address is this very region.
        if let Some(e) = table.entries.iter_mut().find(|e| e.memory.base() == owner) {
            e.guards += 1;
            return owner;
        }
        let mut offset = 0;
        while offset < memory.len() {
            let n = memory.contiguous_from(offset).max(1);
            let iova = memory.iova_at(offset).expect("offset inside the region");
            table.regions.push(Region { iova, len: n as u64, host: owner + offset, owner });
            offset += n;
        }
        table.entries.push(Entry { memory: Backing::Dma(memory.clone()), guards: 1 });
        owner
    }

    /// Maps `[iova, iova + memory.len())` to a shared mapping of memory the device does not own (a VM's guest RAM
    /// from the memfd a vfio-user client passes with its DMA map), until the returned guard drops. The map holds
    /// the mapping alive meanwhile.
    pub fn map_shared(&self, iova: u64, memory: Arc<MmapRaw>) -> SharedMapping {
        let owner = memory.as_mut_ptr() as usize;
        let mut table = self.table.write().unwrap_or_else(|e| e.into_inner());
        table.regions.push(Region { iova, len: memory.len() as u64, host: owner, owner });
        table.entries.push(Entry { memory: Backing::Shared(memory), guards: 1 });
        SharedMapping { _unmap: Unmap { table: self.table.clone(), owner } }
    }
}

/// A guard on a [`IovaMap::map_shared`] range: dropping it removes the range (the device then faults on it).
pub struct SharedMapping {
    _unmap: Unmap,
}

impl std::fmt::Debug for SharedMapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedMapping").field("owner", &self._unmap.owner).finish()
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Piece {
    host: usize,
    len: usize,
    offset: usize,
}

/// Maps into the model's IOVA map until the guard drops; the model faults on DMA anywhere else.
impl DmaMapper for IovaMap {
    fn map(&self, memory: &Arc<DmaMemory>) -> drvkit::dma::Result<DmaMapping> {
        let owner = self.insert(memory);
        Ok(DmaMapping::new(memory.clone(), Unmap { table: self.table.clone(), owner }))
    }
}
