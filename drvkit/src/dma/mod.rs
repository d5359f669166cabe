//! The DMA seam: what makes memory reachable by a device at its IOVAs.
//!
//! On hardware this is the IOMMU (a VFIO container's MAP_DMA, IOVA = VA) or nothing at all (no-IOMMU mode, IOVA =
//! PA). Against a behavioural model it is the model's own IOVA map, which turns any access outside the mapped
//! regions into a test failure. Drivers take a [`DmaMapper`] and map every region they hand to the device: their
//! descriptor rings and the mempools they post buffers from.
//!
//! # Why the mapping owns the memory
//!
//! A mapping outlives the call that makes it: the IOMMU (or the model's thread, or a device given physical
//! addresses) keeps writing through it until it is removed. If safe code could map a [`DmaMemory`], free it and
//! leave the mapping in place, the device would write into memory that now belongs to someone else: undefined
//! behaviour reachable from safe code. So mapping takes shared ownership: [`DmaMapper::map`] takes an
//! `Arc<DmaMemory>` and returns a [`DmaMapping`] guard that holds it. The mapping is undone when the guard drops,
//! and only then is the guard's reference to the memory released. Memory can therefore never be freed while a
//! device may still reach it through a mapping made here.
//!
//! Drivers keep the guards in their queue or port state and drop them after the hardware queue is disabled (a
//! mapping removed while the queue still runs is not unsound, only a DMA fault). A mempool dropped while still
//! mapped keeps its memory alive until the last guard goes.
//!
//! Mapping the same region twice is allowed: implementations count the guards of a region and undo the mapping
//! when the last one drops.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use hugepage::DmaMemory;

use crate::vfio::VfioError;

mod area;
pub use area::{DmaArea, AREA_ALIGN};

/// Why memory could not be made reachable by a device. The port API carries it as `pktio::Error::Dma`.
#[derive(Debug, thiserror::Error)]
pub enum DmaError {
    /// The VFIO container refused the mapping (outside the IOMMU's ranges, the MSI window, the locked-memory
    /// limit): the message says which and what to do.
    #[error(transparent)]
    Vfio(#[from] VfioError),
    /// A [`DmaArea`] could not be had for port `port`: no memory, or memory that is not IOVA-contiguous or aligned.
    #[error("port {port}: {reason}")]
    Area {
        /// The port the area was for.
        port: String,
        /// What failed, and what to do (e.g. use larger hugepages).
        reason: String,
    },
}

/// Result of the DMA seam.
pub type Result<T, E = DmaError> = std::result::Result<T, E>;

/// Makes DMA memory reachable by one device (or one IOMMU domain).
pub trait DmaMapper: Send + Sync {
    /// Maps `memory` so the device can read and write it at `memory.iova_at(..)`, until the returned guard drops.
    /// The guard holds a reference to `memory`, so the memory outlives the mapping. Mapping a region that is
    /// mapped already returns another guard on the same mapping (counted: the last guard undoes it).
    fn map(&self, memory: &Arc<DmaMemory>) -> Result<DmaMapping>;
}

/// A live DMA mapping of one [`DmaMemory`] region: the device may reach the memory while this exists. Dropping it
/// first undoes the mapping (through the implementation's guard), then releases its reference to the memory.
#[must_use = "the mapping is undone when the guard drops"]
pub struct DmaMapping {
    // Field order is drop order: the mapping goes before the memory reference.
    unmap: Option<Box<dyn Any + Send + Sync>>,
    memory: Arc<DmaMemory>,
}

impl DmaMapping {
    /// A mapping of `memory` that `unmap` undoes when it drops (an implementation's guard: anything whose `Drop`
    /// removes the mapping). Only [`DmaMapper`] implementations make these.
    pub fn new(memory: Arc<DmaMemory>, unmap: impl Any + Send + Sync) -> DmaMapping {
        DmaMapping { unmap: Some(Box::new(unmap)), memory }
    }

    /// A mapping with nothing to undo (the device sees memory untranslated); it only keeps `memory` alive.
    pub fn identity(memory: Arc<DmaMemory>) -> DmaMapping {
        DmaMapping { unmap: None, memory }
    }

    /// The mapped memory.
    pub fn memory(&self) -> &Arc<DmaMemory> {
        &self.memory
    }
}

impl fmt::Debug for DmaMapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DmaMapping({:p}+{:#x}", self.memory.as_ptr(), self.memory.len())?;
        if self.unmap.is_none() {
            f.write_str(", identity")?;
        }
        f.write_str(")")
    }
}

/// For devices that reach all memory without translation (no-IOMMU mode, IOVA = PA) and tests: mapping does
/// nothing but keep the memory alive ([`DmaMapping::identity`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct IdentityMapper;

impl DmaMapper for IdentityMapper {
    fn map(&self, memory: &Arc<DmaMemory>) -> Result<DmaMapping> {
        Ok(DmaMapping::identity(memory.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugepage::Allocator;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Count(Arc<AtomicUsize>);

    impl Drop for Count {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn guard_keeps_memory_until_unmapped() {
        let memory = Arc::new(Allocator::no_huge().allocate(4096).unwrap());
        let identity = IdentityMapper.map(&memory).unwrap();
        assert!(Arc::ptr_eq(identity.memory(), &memory));
        assert_eq!(Arc::strong_count(&memory), 2);
        let undone = Arc::new(AtomicUsize::new(0));
        let mapping = DmaMapping::new(memory.clone(), Count(undone.clone()));
        drop(memory);
        drop(identity);
        assert_eq!(undone.load(Ordering::SeqCst), 0);
        let weak = Arc::downgrade(mapping.memory());
        assert!(format!("{mapping:?}").starts_with("DmaMapping("));
        drop(mapping);
        assert_eq!(undone.load(Ordering::SeqCst), 1);
        assert!(weak.upgrade().is_none(), "the last guard freed the memory");
    }

    #[test]
    fn an_aligned_area_starts_on_its_boundary_and_reads_back_what_was_written() {
        let mapper: Arc<dyn DmaMapper> = Arc::new(IdentityMapper);
        for _ in 0..4 {
            let a = DmaArea::new_aligned(&Allocator::no_huge(), &mapper, 8192, 256 << 10, "p", "a ring").unwrap();
            assert_eq!(a.iova(0) % (256 << 10), 0, "{a:?}");
            assert_eq!(a.iova(8191), a.iova(0) + 8191);
            a.write(8184, &7u64.to_le_bytes());
            let mut b = [0u8; 8];
            a.read(8184, &mut b);
            assert_eq!(u64::from_le_bytes(b), 7);
            // SAFETY: byte 8184 of the live 8192-byte area.
            assert_eq!(unsafe { a.as_ptr().add(8184).read_volatile() }, 7);
        }
        assert!(DmaArea::new_aligned(&Allocator::no_huge(), &mapper, 64, 3 << 12, "p", "a ring").is_err());
    }
}
