//! The model's side of the DMA seam: an IOVA map (what an IOMMU would hold) and the only code in the crate that
//! touches host memory.
//!
//! A driver maps its rings and mempool memory through [`IovaMap`] (as a [`pktio::dma::DmaMapper`]); the model then
//! reads and writes host memory only by IOVA through [`IovaMap::read`] / [`IovaMap::write`] and friends. An access
//! that is not wholly inside mapped regions is not performed: it is recorded as a [`Fault::Dma`] and the caller sees
//! an error.
//!
//! Like an IOMMU mapping, a mapping made here must be removed ([`pktio::dma::DmaMapper::unmap`]) before the memory
//! is freed; the model, like a device, would otherwise write to whatever is there afterwards.

use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::sync::{Arc, RwLock};

use hugepage::DmaMemory;
use pktio::dma::DmaMapper;

use crate::fault::{Fault, FaultLog};

/// One contiguous IOVA range and the host address behind it.
#[derive(Debug, Clone, Copy)]
struct Region {
    iova: u64,
    len: u64,
    host: usize,
    /// Base address of the DmaMemory it came from (the key for unmap).
    owner: usize,
}

/// A DMA access outside the map (already recorded in the fault log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaError;

/// The IOVA → host map of one model device.
#[derive(Debug)]
pub struct IovaMap {
    regions: RwLock<Vec<Region>>,
    faults: Arc<FaultLog>,
}

impl IovaMap {
    /// An empty map reporting faults to `faults`.
    pub fn new(faults: Arc<FaultLog>) -> Self {
        IovaMap { regions: RwLock::new(Vec::new()), faults }
    }

    /// Number of mapped contiguous ranges.
    pub fn region_count(&self) -> usize {
        self.regions.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// True if `[iova, iova+len)` is wholly mapped.
    pub fn is_mapped(&self, iova: u64, len: usize) -> bool {
        self.translate(iova, len, |_| ()).is_some()
    }

    /// Calls `f` with the host address of each mapped piece of `[iova, iova+len)` in order, or returns `None`
    /// (calling `f` for nothing) when part of the range is unmapped.
    fn translate(&self, iova: u64, len: usize, mut f: impl FnMut(Piece)) -> Option<()> {
        let regions = self.regions.read().unwrap_or_else(|e| e.into_inner());
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
            // SAFETY: `p.host..p.host+p.len` lies inside a region registered by `map` from a live DmaMemory (the
            // map contract: memory stays alive until unmapped). The bytes may be written concurrently by the
            // driver, exactly as with a real device's DMA read; we copy them as plain bytes.
            unsafe { std::ptr::copy_nonoverlapping(p.host as *const u8, buf.as_mut_ptr().add(p.offset), p.len) }
        });
        ok.ok_or_else(|| self.fault(iova, buf.len(), false, what))
    }

    /// Device write of `data` at `iova`.
    pub fn write(&self, iova: u64, data: &[u8], what: &dyn Fn() -> String) -> Result<(), DmaError> {
        let ok = self.translate(iova, data.len(), |p| {
            // SAFETY: as in `read`: inside a live mapped region. The driver must not hold references to memory
            // it handed to the device (the mempool/ring ownership rules), so this is the device's write.
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
        let mut host = None;
        let ok = self.translate(iova, 16, |p| {
            if p.len == 16 {
                host = Some(p.host)
            }
        });
        let Some(host) = host.filter(|h| ok.is_some() && h % 4 == 0) else {
            return Err(self.fault(iova, 16, true, what));
        };
        for (i, d) in dwords.iter().enumerate() {
            if i != status_dword {
                // SAFETY: `host` is a 4-aligned 16-byte piece of one mapped region (checked above).
                unsafe { ((host + 4 * i) as *mut u32).write_volatile(d.to_le()) };
            }
        }
        fence(Ordering::Release);
        // SAFETY: as above; the dword is 4-aligned and inside the mapping, and the driver reads it with atomic or
        // volatile loads (the DD poll), so an atomic store is the right pairing.
        let status = unsafe { AtomicU32::from_ptr((host + 4 * status_dword) as *mut u32) };
        status.store(dwords[status_dword].to_le(), Ordering::Release);
        Ok(())
    }

    /// Writes one little-endian u32 with release ordering (TX head write-back, TX DD).
    pub fn write_u32(&self, iova: u64, value: u32, what: &dyn Fn() -> String) -> Result<(), DmaError> {
        let mut host = None;
        let ok = self.translate(iova, 4, |p| {
            if p.len == 4 {
                host = Some(p.host)
            }
        });
        let Some(host) = host.filter(|h| ok.is_some() && h % 4 == 0) else {
            return Err(self.fault(iova, 4, true, what));
        };
        fence(Ordering::Release);
        // SAFETY: 4-aligned dword inside one mapped region (checked above); see `write_back`.
        let cell = unsafe { AtomicU32::from_ptr(host as *mut u32) };
        cell.store(value.to_le(), Ordering::Release);
        Ok(())
    }

    fn insert(&self, memory: &DmaMemory) {
        let owner = memory.as_ptr() as usize;
        let mut regions = self.regions.write().unwrap_or_else(|e| e.into_inner());
        if regions.iter().any(|r| r.owner == owner) {
            return;
        }
        let mut offset = 0;
        while offset < memory.len() {
            let n = memory.contiguous_from(offset).max(1);
            let iova = memory.iova_at(offset).expect("offset inside the region");
            regions.push(Region { iova, len: n as u64, host: owner + offset, owner });
            offset += n;
        }
    }

    fn remove(&self, memory: &DmaMemory) {
        let owner = memory.as_ptr() as usize;
        self.regions.write().unwrap_or_else(|e| e.into_inner()).retain(|r| r.owner != owner);
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Piece {
    host: usize,
    len: usize,
    offset: usize,
}

impl DmaMapper for IovaMap {
    fn map(&self, memory: &DmaMemory) -> pktio::Result<()> {
        self.insert(memory);
        Ok(())
    }

    fn unmap(&self, memory: &DmaMemory) -> pktio::Result<()> {
        self.remove(memory);
        Ok(())
    }
}
