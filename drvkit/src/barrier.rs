//! Memory ordering between the CPU and a device.
//!
//! A driver writes a descriptor, then rings a doorbell (MMIO write of the tail). The device must see the
//! descriptor before the doorbell: [`dma_wmb`] between them. After seeing a completion bit (DD) it must read the
//! rest of the descriptor only after the bit: [`dma_rmb`] between them.
//!
//! On x86-64 stores are not reordered with other stores, nor loads with other loads, and MMIO (uncached) writes
//! are ordered after earlier writes to write-back memory; only the compiler must be stopped. On aarch64 (Kunpeng
//! hosts for SP670) a `dmb` is needed: outer-shareable, since the device is an observer outside the inner domain.

use std::sync::atomic::{compiler_fence, fence, Ordering};

/// Orders earlier writes to DMA memory before later writes (to DMA memory or a doorbell).
#[inline(always)]
pub fn dma_wmb() {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a barrier instruction, no memory operands.
    unsafe {
        std::arch::asm!("dmb oshst", options(nostack, preserves_flags))
    };
    compiler_fence(Ordering::Release);
}

/// Orders an earlier read of DMA memory (a done bit) before later reads (the rest of the descriptor).
#[inline(always)]
pub fn dma_rmb() {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a barrier instruction, no memory operands.
    unsafe {
        std::arch::asm!("dmb oshld", options(nostack, preserves_flags))
    };
    compiler_fence(Ordering::Acquire);
}

/// A full barrier between all earlier and later memory accesses, device ones included.
///
/// On aarch64 `fence(SeqCst)` is only `dmb ish` (inner shareable: other CPUs, not the device), so a `dsb sy`
/// is issued, as Linux's `mb()` and DPDK's `rte_mb()` do there.
#[inline(always)]
pub fn mb() {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a barrier instruction, no memory operands.
    unsafe {
        std::arch::asm!("dsb sy", options(nostack, preserves_flags))
    };
    fence(Ordering::SeqCst);
}
