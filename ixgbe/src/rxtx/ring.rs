//! What RX and TX rings share: index arithmetic, ring and threshold settings, descriptor memory, queue disable.

use std::sync::Arc;
use std::time::Duration;

use hugepage::Allocator;
use pktio::bar::RegisterSpace;
use pktio::dma::{DmaMapper, DmaMapping};
use pktio::{Error, Result};

use crate::regs::{Reg, Regs};

/// Ring index arithmetic. Ring sizes need not be powers of two (DPDK allows any multiple of 8).
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

/// Ring and threshold settings of one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingConfig {
    /// Descriptors.
    pub size: u16,
    /// RX: refill when this many descriptors are held. TX: clean when fewer than this many are free.
    pub free_thresh: u16,
    /// TX: one RS per this many descriptors.
    pub rs_thresh: u16,
    /// RX: drop frames when out of descriptors instead of back-pressuring the packet buffer.
    pub drop_en: bool,
    /// How long to wait for a queue to enable or disable.
    pub enable_timeout: Duration,
}

impl RingConfig {
    /// DPDK's defaults (thresholds 32), scaled down for small rings.
    pub fn new(size: u16) -> RingConfig {
        let thresh = 32.min(size / 4).max(1);
        RingConfig {
            size,
            free_thresh: thresh,
            rs_thresh: thresh,
            drop_en: true,
            enable_timeout: Duration::from_millis(10),
        }
    }
}

/// Ring memory: allocated, zeroed, made reachable by the device. The mapping guard owns the memory, so it is
/// unmapped before it is freed; the ring drops it only after its `Drop` disabled the queue.
pub(super) struct RingMemory {
    map: DmaMapping,
}

impl RingMemory {
    pub(super) fn new(
        allocator: &Allocator,
        mapper: &Arc<dyn DmaMapper>,
        bytes: usize,
        what: &str,
    ) -> Result<RingMemory> {
        let mem = allocator.allocate(bytes).map_err(|e| Error::InvalidConfig {
            port: what.to_string(),
            reason: format!("cannot allocate {bytes} bytes of descriptor ring memory: {e}"),
        })?;
        if mem.iova_at(0).is_none() || mem.contiguous_from(0) < bytes {
            return Err(Error::InvalidConfig {
                port: what.to_string(),
                reason: format!("descriptor ring of {bytes} bytes is not IOVA-contiguous; use larger hugepages"),
            });
        }
        Ok(RingMemory { map: mapper.map(&Arc::new(mem))? })
    }

    pub(super) fn as_ptr(&self) -> *mut u8 {
        self.map.memory().as_ptr()
    }

    pub(super) fn iova(&self) -> u64 {
        self.map.memory().iova_at(0).unwrap_or(0)
    }
}

pub(super) fn split_iova(iova: u64) -> (u32, u32) {
    (iova as u32, (iova >> 32) as u32)
}

/// Disables a queue through its control register and waits (bounded) for the enable bit to drop.
pub(super) fn disable_queue<R: RegisterSpace>(
    regs: &Regs<R>,
    ctl: Reg,
    enable: u32,
    extra: u32,
    timeout: Duration,
) -> bool {
    let v = regs.read(ctl);
    regs.write(ctl, (v & !enable) | extra);
    regs.poll(ctl, enable, 0, timeout).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
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
