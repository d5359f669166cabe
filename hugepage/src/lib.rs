//! DMA memory for packet buffers and descriptor rings.
//!
//! A NIC reads and writes host memory by *IOVA*: the address the IOMMU translates (VFIO, where the IOVA we choose
//! is the virtual address) or, without an IOMMU, the physical address. This crate hands out [`DmaMemory`] regions
//! backed by 2 MiB or 1 GiB hugepages (from a hugetlbfs mount or `MAP_HUGETLB`), or by ordinary pages for software
//! ports only (`--no-huge`), and translates any byte of them to its IOVA.
//!
//! Hugepages matter twice: they are physically contiguous (one IOVA range per page, so a buffer never straddles
//! two unrelated physical pages) and they are never swapped or moved, so an address given to a NIC stays valid.

#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub mod cli;
mod error;
mod memory;
pub mod sysfs;
pub mod testing;

pub use error::{Error, Result};
pub use memory::{virt_to_phys, Allocator, Backing, DmaConfig, DmaMemory, IovaMode, PageSize};
