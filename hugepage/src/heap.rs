//! What an [`Allocator`](crate::Allocator) has handed out and not yet had back: the figures of DPDK's malloc heap
//! statistics (`rte_malloc_get_socket_stats`, telemetry's `/eal/heap_info`), kept by every allocator and the
//! allocators cloned from it, and read at any time from any thread.
//!
//! A region is whole pages; what it was asked for is usually less. The pages are the heap, the asked-for bytes
//! are allocated, and the tail of each region past them is free (but usable only by that region's owner).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The live counters, shared by an allocator, its clones and the regions they mapped.
#[derive(Debug, Default)]
pub struct HeapStats {
    mapped: AtomicU64,
    requested: AtomicU64,
    regions: AtomicU64,
    allocations: AtomicU64,
    frees: AtomicU64,
    // The free tails of the live regions (few: one per pool and ring), for the greatest one.
    tails: Mutex<Vec<u64>>,
}

/// A snapshot of [`HeapStats`], in DPDK's terms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeapUsage {
    /// Bytes of the pages mapped and not yet unmapped (DPDK's `heap_totalsz_bytes`).
    pub heap_size: u64,
    /// Bytes of those pages not asked for: the tails past each region's request (`heap_freesz_bytes`).
    pub free_size: u64,
    /// Bytes asked for by the live regions (`heap_allocsz_bytes`).
    pub alloc_size: u64,
    /// The largest free tail (`greatest_free_size`).
    pub greatest_free_size: u64,
    /// Live regions (`alloc_count`: allocated elements).
    pub alloc_count: u64,
    /// Live regions with a free tail (`free_count`: free elements).
    pub free_count: u64,
    /// Regions mapped since the allocator was made.
    pub allocations: u64,
    /// Regions unmapped since the allocator was made.
    pub frees: u64,
}

impl HeapStats {
    pub(crate) fn add(&self, mapped: usize, requested: usize) {
        let (mapped, requested) = (mapped as u64, requested as u64);
        self.mapped.fetch_add(mapped, Ordering::Relaxed);
        self.requested.fetch_add(requested, Ordering::Relaxed);
        self.regions.fetch_add(1, Ordering::Relaxed);
        self.allocations.fetch_add(1, Ordering::Relaxed);
        self.tails.lock().unwrap_or_else(|e| e.into_inner()).push(mapped - requested);
    }

    pub(crate) fn remove(&self, mapped: usize, requested: usize) {
        let (mapped, requested) = (mapped as u64, requested as u64);
        self.mapped.fetch_sub(mapped, Ordering::Relaxed);
        self.requested.fetch_sub(requested, Ordering::Relaxed);
        self.regions.fetch_sub(1, Ordering::Relaxed);
        self.frees.fetch_add(1, Ordering::Relaxed);
        let mut tails = self.tails.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = tails.iter().position(|&t| t == mapped - requested) {
            tails.swap_remove(i);
        }
    }

    /// The figures now.
    pub fn usage(&self) -> HeapUsage {
        let tails = self.tails.lock().unwrap_or_else(|e| e.into_inner());
        let heap_size = self.mapped.load(Ordering::Relaxed);
        let alloc_size = self.requested.load(Ordering::Relaxed);
        HeapUsage {
            heap_size,
            free_size: heap_size - alloc_size,
            alloc_size,
            greatest_free_size: tails.iter().copied().max().unwrap_or(0),
            alloc_count: self.regions.load(Ordering::Relaxed),
            free_count: tails.iter().filter(|&&t| t > 0).count() as u64,
            allocations: self.allocations.load(Ordering::Relaxed),
            frees: self.frees.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Allocator;

    #[test]
    fn regions_are_counted_until_they_are_unmapped() {
        let a = Allocator::no_huge();
        let clone = a.clone();
        assert_eq!(a.heap().usage().heap_size, 0);
        let r1 = a.allocate(100).unwrap();
        let r2 = clone.allocate(3 * 4096).unwrap();
        let u = a.heap().usage();
        assert_eq!(u.heap_size, 4 * 4096, "{u:?}");
        assert_eq!(u.alloc_size, 100 + 3 * 4096);
        assert_eq!(u.free_size, 4096 - 100);
        assert_eq!(u.greatest_free_size, 4096 - 100);
        assert_eq!((u.alloc_count, u.free_count, u.allocations, u.frees), (2, 1, 2, 0));
        drop(r1);
        let u = clone.heap().usage();
        assert_eq!((u.heap_size, u.alloc_size, u.free_size, u.greatest_free_size), (3 * 4096, 3 * 4096, 0, 0));
        assert_eq!((u.alloc_count, u.free_count, u.allocations, u.frees), (1, 0, 2, 1));
        drop(r2);
        assert_eq!(a.heap().usage().heap_size, 0);
        // Another allocator keeps its own figures.
        let _other = Allocator::no_huge().allocate(1).unwrap();
        assert_eq!(a.heap().usage().alloc_count, 0);
    }
}
