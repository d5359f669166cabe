//! What RX and TX rings share: index arithmetic, ring and threshold settings, queue disable.

use std::time::Duration;

use drvkit::bar::RegisterSpace;

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
    /// TX: how long the ring may stay full without a completion before the watchdog calls the queue hung and
    /// restarts it ([`ringkit::TxWatchdog`]).
    pub tx_hang: Duration,
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
            tx_hang: ringkit::DEFAULT_TX_HANG_TIMEOUT,
        }
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
