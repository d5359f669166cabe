//! The descriptor-ring kit that poll-mode drivers share: ring index arithmetic, the RX buffer core
//! ([`RxBuffers`]: the mbuf shadow ring, which slots own their buffer, the bulk refill from the pool) and the TX
//! ring core ([`TxCore`]: the mbuf shadow ring, the four-at-a-time placement of plain packets in runs, RS groups
//! and their bulk cleanup). A driver keeps what is its own (descriptor layout, status bits, registers, the RX
//! write-back decoding and fast run, offload and context descriptors) and plugs it in through [`RxDescriptor`]
//! and [`TxDescriptor`], traits of `#[inline(always)]` functions that the cores are monomorphised over: no
//! dynamic call per packet.
//!
//! A crate of its own above the port API, apart from the rest of the driver kit (`drvkit`, below it): the cores
//! count into the port API's queue counters ([`pktio::stats`]), and the queues drivers build on them implement
//! its [`pktio::RxQueue`]/[`pktio::TxQueue`].
//!
//! Written for descriptor rings in the Intel style (a tail doorbell, a done bit written back to the descriptor
//! that asked for a report, one buffer per descriptor); it knows nothing of any register or bit layout.
//! Not supported: rings of other shapes (virtio's used ring, hinic3's RX completions in a queue of their own: those
//! drivers walk their own), several buffers per descriptor (header split), and sharing a ring between threads.

mod rx;
mod tx;

pub use rx::{RxBuffers, RxDescriptor};
pub use tx::{TxCore, TxDescriptor, RS_CHECK, RS_HOLES};

/// Whether the CPU has AVX: the drivers' RX fast runs then take their AVX builds (three-operand forms of the
/// same SSE2 steps). Decided per ring at creation; false off x86-64.
pub fn cpu_has_avx() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx");
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// Ring index arithmetic. Ring sizes need not be powers of two (a multiple of 8 or of 32, as the hardware wants).
pub mod idx {
    /// `i + k` modulo `n` (`i < n`, `k <= n`).
    #[inline(always)]
    pub const fn add(i: usize, k: usize, n: usize) -> usize {
        let j = i + k;
        if j >= n {
            j - n
        } else {
            j
        }
    }

    /// `i - 1` modulo `n`.
    #[inline(always)]
    pub const fn prev(i: usize, n: usize) -> usize {
        if i == 0 {
            n - 1
        } else {
            i - 1
        }
    }

    /// Slots from `from` up to (not including) `to`, going forward around a ring of `n`.
    #[inline(always)]
    pub const fn dist(from: usize, to: usize, n: usize) -> usize {
        if to >= from {
            to - from
        } else {
            to + n - from
        }
    }
}

#[cfg(test)]
mod tests {
    use super::idx;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn index_arithmetic_wraps(n in 8usize..8192, a in 0usize..8192, k in 0usize..8192) {
            let i = a % n;
            let k = k % (n + 1);
            let j = idx::add(i, k, n);
            prop_assert!(j < n);
            prop_assert_eq!(j, (i + k) % n);
            prop_assert_eq!(idx::dist(i, j, n), k % n);
            prop_assert_eq!(idx::prev(idx::add(i, 1, n), n), i);
        }

        #[test]
        fn stepping_one_at_a_time_visits_every_slot_once(n in (1usize..64).prop_map(|x| x * 8), start in 0usize..512) {
            let mut seen = vec![false; n];
            let mut i = start % n;
            for _ in 0..n {
                prop_assert!(!seen[i]);
                seen[i] = true;
                i = idx::add(i, 1, n);
            }
            prop_assert_eq!(i, start % n);
        }
    }
}
