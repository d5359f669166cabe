//! The descriptor-ring kit that poll-mode drivers share: ring index arithmetic, the RX ring engine ([`rx`]:
//! [`RxEngine`], the burst with its fast run and general path, chains and counters, over [`RxBuffers`], the mbuf
//! shadow ring with its bulk refill) and the TX ring core ([`TxCore`]: the mbuf shadow ring, the four-at-a-time
//! placement of plain packets in runs, RS groups and their bulk cleanup, on the burst path the queue's
//! configuration chose, [`TxPath`]) and the TX hang watchdog ([`watchdog`]: a
//! queue whose completion point stands still with work outstanding, checked on the slow path). A driver keeps what is its own
//! (descriptor layout and encode, the write-back decode, status bits, registers and doorbells, offload and context
//! descriptors) and plugs it in through [`RxFormat`], [`RxDescriptor`] and [`TxDescriptor`], traits of
//! `#[inline(always)]` functions that the engine and the cores are monomorphised over: no dynamic call per packet.
//!
//! A crate of its own above the port API, apart from the rest of the driver kit (`drvkit`, below it): the cores
//! count into the port API's queue counters ([`pktio::stats`]), and the queues drivers build on them implement
//! its [`pktio::RxQueue`]/[`pktio::TxQueue`].
//!
//! Written for descriptor rings with one buffer per slot and a tail doorbell; it knows nothing of any register or
//! bit layout. RX completions may be the descriptors themselves (Intel) or one entry per slot elsewhere (hinic3's
//! CQE array); the TX core wants a done bit written back to the descriptor that asked for a report (Intel).
//! Not supported: rings of other shapes (virtio's used ring; hinic3's TX, completed through a consumer index the
//! device writes and WQEs that span several slots: those drivers walk their own), several buffers per descriptor
//! (header split), and sharing a ring between threads.

pub mod rx;
mod tx;
pub mod watchdog;

pub use rx::{RxBuffers, RxDescriptor, RxEngine, RxFormat};
pub use tx::{TxCore, TxDescriptor, TxPath, RS_CHECK, RS_HOLES};
pub use watchdog::{TxHang, TxHangState, TxRestart, TxWatchdog, DEFAULT_TX_HANG_TIMEOUT};

/// Whether the CPU has AVX: the RX fast runs then take their AVX builds (three-operand forms of the same SSE2
/// steps; [`rx::IsaLevel`]). Decided per ring at creation; false off x86-64.
pub fn cpu_has_avx() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx");
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// Whether the CPU has AVX2: the RX fast runs then take their AVX2 builds (groups of eight, two entries per
/// register; [`rx::IsaLevel::Avx2`]). Decided per ring at creation; false off x86-64.
pub fn cpu_has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// The burst paths every ring on the shared engine and core runs on this CPU with the full TX path: RX takes runs
/// of common frames through the format's SIMD groups ([`rx::IsaLevel::rx_name`]), TX places plain packets in
/// groups of four and offloads or chains one by one, both in the same routine. A port whose TX queues run
/// another path names it with [`burst_mode_for`].
pub fn burst_mode() -> pktio::BurstMode {
    burst_mode_for(TxPath::Full)
}

/// The burst paths of a port whose TX queues run `tx` ([`TxPath::for_offloads`] of its configuration).
pub fn burst_mode_for(tx: TxPath) -> pktio::BurstMode {
    pktio::BurstMode { rx: rx::IsaLevel::detect().rx_name(), tx: tx.name() }
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
