//! What RX and TX rings share: the ring settings and the sizes the hardware takes (index arithmetic is
//! [`ringkit::idx`]).

use crate::queue::QueueTiming;

/// Ring index arithmetic (shared with every driver: [`ringkit::idx`]).
pub use ringkit::idx;

/// Ring sizes the hardware takes (docs/hw/i40e.md §15): 64 to 8160 descriptors, a multiple of 32.
pub const RING_MIN: u16 = 64;
/// Largest ring.
pub const RING_MAX: u16 = 8160;
/// Ring length granularity.
pub const RING_ALIGN: u16 = 32;

/// Ring and threshold settings of one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingConfig {
    /// Descriptors.
    pub size: u16,
    /// RX: refill when this many descriptors are held. TX: clean when fewer than this many are free.
    pub free_thresh: u16,
    /// TX: one RS per this many descriptors.
    pub rs_thresh: u16,
    /// Queue enable/disable waits.
    pub timing: QueueTiming,
    /// TX: how long the ring may stay full without a completion before the watchdog calls the queue hung and
    /// restarts it ([`ringkit::TxWatchdog`]).
    pub tx_hang: std::time::Duration,
}

impl RingConfig {
    /// DPDK's defaults (thresholds 32, docs/hw/i40e.md §11).
    pub fn new(size: u16) -> RingConfig {
        RingConfig {
            size,
            free_thresh: 32,
            rs_thresh: 32,
            timing: QueueTiming::HARDWARE,
            tx_hang: ringkit::DEFAULT_TX_HANG_TIMEOUT,
        }
    }

    /// `Err(reason)` when `size` is not a ring the hardware takes.
    pub fn check_size(size: u16) -> Result<(), String> {
        if !(RING_MIN..=RING_MAX).contains(&size) || !size.is_multiple_of(RING_ALIGN) {
            return Err(format!(
                "a ring of {size} descriptors: the 700 series takes {RING_MIN} to {RING_MAX}, a multiple of {RING_ALIGN}"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_sizes_follow_the_limits() {
        assert!(RingConfig::check_size(64).is_ok());
        assert!(RingConfig::check_size(8160).is_ok());
        assert!(RingConfig::check_size(32).is_err());
        assert!(RingConfig::check_size(100).is_err());
        assert!(RingConfig::check_size(8192).is_err());
    }
}
