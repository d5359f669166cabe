//! The DMA seam: what makes memory reachable by a device at its IOVAs.
//!
//! On hardware this is the IOMMU (a VFIO container's MAP_DMA, IOVA = VA) or nothing at all (no-IOMMU mode, IOVA =
//! PA). Against a behavioural model it is the model's own IOVA map, which turns any access outside the mapped
//! regions into a test failure. Drivers take a `DmaMapper` and map every region they hand to the device: their
//! descriptor rings and the mempools they post buffers from.

use hugepage::DmaMemory;

use crate::Result;

/// Makes DMA memory reachable by one device (or one IOMMU domain).
pub trait DmaMapper: Send + Sync {
    /// Maps `memory` so the device can read and write it at `memory.iova_at(..)`. Mapping the same region twice
    /// is allowed and does nothing the second time.
    fn map(&self, memory: &DmaMemory) -> Result<()>;

    /// Removes the mapping of `memory` (the device must no longer use it).
    fn unmap(&self, memory: &DmaMemory) -> Result<()>;
}

/// For devices that reach all memory without translation (no-IOMMU mode, IOVA = PA): mapping is a no-op.
#[derive(Debug, Clone, Copy, Default)]
pub struct IdentityMapper;

impl DmaMapper for IdentityMapper {
    fn map(&self, _memory: &DmaMemory) -> Result<()> {
        Ok(())
    }

    fn unmap(&self, _memory: &DmaMemory) -> Result<()> {
        Ok(())
    }
}
