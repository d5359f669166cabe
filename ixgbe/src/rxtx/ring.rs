//! What RX and TX rings share: index arithmetic, ring and threshold settings, descriptor memory, queue disable.

use std::sync::Arc;
use std::time::Duration;

use drvkit::bar::RegisterSpace;
use drvkit::dma::{DmaMapper, DmaMapping};
use hugepage::Allocator;
use pktio::{Error, Result};

use crate::regs::{Reg, Regs};

/// Ring index arithmetic (shared with every driver: [`ringkit::idx`]).
pub use ringkit::idx;

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
