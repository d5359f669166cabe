//! DMA memory for packet buffers and descriptor rings.
//!
//! A NIC reads and writes host memory by *IOVA*: the address the IOMMU translates (VFIO, where the IOVA we choose
//! is the virtual address) or, without an IOMMU, the physical address. This crate hands out [`DmaMemory`] regions
//! backed by 2 MiB or 1 GiB hugepages (from a hugetlbfs mount or `MAP_HUGETLB`), or by ordinary pages for software
//! ports only (`--no-huge`), and translates any byte of them to its IOVA. Every mapping (hugetlbfs file,
//! `MAP_HUGETLB` with its page-size bits, plain anonymous) is a `memmap2::MmapRaw`, unmapped when the region drops.
//!
//! Hugepages matter twice: they are physically contiguous (one IOVA range per page, so a buffer never straddles
//! two unrelated physical pages) and they are never swapped or moved, so an address given to a NIC stays valid.
//!
//! ```no_run
//! use hugepage::{Allocator, DmaConfig, IovaMode};
//! // --iova-mode pa: physical addresses from /proc/self/pagemap (root, no IOMMU).
//! let allocator = Allocator::new(DmaConfig { iova_mode: IovaMode::Pa, ..Default::default() })?;
//! let ring = allocator.allocate(64 << 10)?; // one 2 MiB hugepage
//! let iova = ring.iova_at(0).expect("inside the region");
//! # Ok::<(), hugepage::Error>(())
//! ```
//!
//! When hugepages are missing, [`Error::NotEnoughHugepages`] names the exact command that reserves them. The
//! `hugepages` tool (its logic is [`cli`]; the binary is in the tools crate) shows, reserves, clears and mounts them per NUMA node, like `dpdk-hugepages.py`:
//! `hugepages --setup 1G` then `hugepages --show`. Tests that need real hugepages use [`testing::reserve`].
//!
//! Not supported yet: placing memory on a chosen NUMA node (pages come from wherever the kernel finds them), page
//! sizes other than 2 MiB and 1 GiB (64K/32M on aarch64), memory shared between processes (DPDK's secondary
//! processes), and the VFIO DMA mapping itself (done by the driver layer with the IOVAs handed out here).

#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub mod cli;
mod error;
mod heap;
mod memory;
pub mod sysfs;
pub mod testing;

pub use error::{Error, Result};
pub use heap::{HeapStats, HeapUsage};
pub use memory::{virt_to_phys, Allocator, Backing, DmaConfig, DmaMemory, IovaMode, PageSize};
