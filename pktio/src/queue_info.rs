//! What one queue is set up with and which burst code it runs: DPDK's `rte_eth_rx_queue_info_get`/`tx` and
//! `rte_eth_rx_burst_mode_get`/`tx`, asked of one queue of one port ([`crate::EthDev::rx_queue_info`],
//! [`crate::EthDev::rx_burst_mode`] and their TX twins).
//!
//! The defaults read what [`PortState`] holds: the configuration in force (descriptor counts, offloads), the pool
//! recorded at start ([`PortState::start_with_pool`]) and the started flag. What the port's configuration has no
//! field for (thresholds, drop enable, deferred start) reads as DPDK's zeroed defaults; a driver that programs such
//! values overrides the getters with what it programmed.

use mempool::Mempool;

use crate::port_state::PortState;
use crate::{offload, Error, Result};

/// Which burst code one queue runs (DPDK's `rte_eth_burst_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueBurstMode {
    /// Short name of the path ("Vector SSE2", "Scalar").
    pub name: &'static str,
    /// The port's queues may run different paths, so this name holds for this queue only (DPDK's
    /// `RTE_ETH_BURST_FLAG_PER_QUEUE`). False: every queue of the port runs it.
    pub per_queue: bool,
}

/// The figures of the packet pool a port's RX queues fill from, copied when the port started (the pool itself is
/// not kept alive by them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolInfo {
    /// The pool's name (`mb_pool_0`).
    pub name: String,
    /// Number of buffers.
    pub size: u32,
    /// Per-lcore cache size in force.
    pub cache_size: u32,
    /// Data room of each buffer.
    pub data_room: u16,
}

impl PoolInfo {
    /// The figures of `pool`.
    pub fn of(pool: &Mempool) -> PoolInfo {
        PoolInfo {
            name: pool.name().to_string(),
            size: pool.size(),
            cache_size: pool.cache_size() as u32,
            data_room: pool.data_room(),
        }
    }
}

/// A queue's prefetch, host and write-back thresholds (DPDK's `rte_eth_thresh`; 0: the device's default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueThresh {
    /// Prefetch threshold.
    pub prefetch: u8,
    /// Host threshold.
    pub host: u8,
    /// Write-back threshold.
    pub writeback: u8,
}

/// Whether a queue moves packets (DPDK's `RTE_ETH_QUEUE_STATE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueState {
    /// Set up, not running (the port is stopped, or the queue alone is).
    Stopped,
    /// Running.
    Started,
}

impl QueueState {
    /// DPDK's name for the state ("stopped", "started").
    pub fn name(self) -> &'static str {
        match self {
            QueueState::Stopped => "stopped",
            QueueState::Started => "started",
        }
    }
}

/// What one RX queue is set up with (DPDK's `rte_eth_rxq_info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RxQueueInfo {
    /// The pool its buffers come from; `None` until the port has started with one.
    pub pool: Option<PoolInfo>,
    /// Descriptors in the ring.
    pub nb_desc: u16,
    /// Prefetch, host and write-back thresholds.
    pub thresh: QueueThresh,
    /// Descriptors freed before they are given back to the device in one go (0: the driver's default).
    pub free_thresh: u16,
    /// Frames are dropped when no descriptor is free (instead of the port stalling).
    pub drop_en: bool,
    /// The queue does not start with the port (always false here: queues start with their port).
    pub deferred_start: bool,
    /// Frames larger than a buffer arrive as chains.
    pub scattered: bool,
    /// RX offloads in force on the queue ([`offload`]).
    pub offloads: u64,
    /// Bytes of each buffer the device writes into (0: not reported).
    pub buf_size: u16,
    /// Running or not.
    pub state: QueueState,
}

/// What one TX queue is set up with (DPDK's `rte_eth_txq_info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxQueueInfo {
    /// Descriptors in the ring.
    pub nb_desc: u16,
    /// Prefetch, host and write-back thresholds.
    pub thresh: QueueThresh,
    /// Descriptors between two report-status requests (0: the driver's default).
    pub rs_thresh: u16,
    /// Descriptors used before sent buffers are freed (0: the driver's default).
    pub free_thresh: u16,
    /// The queue does not start with the port (always false here).
    pub deferred_start: bool,
    /// TX offloads in force on the queue ([`offload`]).
    pub offloads: u64,
    /// Running or not.
    pub state: QueueState,
}

impl PortState {
    /// Checks that RX (`rx`) or TX queue `queue` exists in the configuration in force: [`Error::InvalidQueue`]
    /// otherwise (DPDK's `-EINVAL`).
    pub fn check_queue(&self, rx: bool, queue: u16) -> Result<()> {
        let (kind, count) = if rx { ("rx", self.config.rx_queues) } else { ("tx", self.config.tx_queues) };
        if queue >= count {
            return Err(Error::InvalidQueue { port: self.name().to_string(), kind, queue, count });
        }
        Ok(())
    }

    /// Starts the port as [`PortState::start`] and records `pool` as the one its RX queues fill from (what
    /// [`PortState::rx_queue_info`] reports).
    pub fn start_with_pool(&mut self, pool: &Mempool) -> Result<()> {
        self.start()?;
        self.rx_pool = Some(PoolInfo::of(pool));
        Ok(())
    }

    fn queue_state(&self) -> QueueState {
        if self.started {
            QueueState::Started
        } else {
            QueueState::Stopped
        }
    }

    /// RX queue `queue` as the configuration in force describes it: its descriptor count and offloads, the pool
    /// recorded at start, started with the port; thresholds 0 (the driver's defaults).
    pub fn rx_queue_info(&self, queue: u16) -> Result<RxQueueInfo> {
        self.check_queue(true, queue)?;
        let c = &self.config;
        Ok(RxQueueInfo {
            pool: self.rx_pool.clone(),
            nb_desc: c.rx_desc,
            thresh: QueueThresh::default(),
            free_thresh: 0,
            drop_en: false,
            deferred_start: false,
            scattered: c.rx_offloads & offload::RX_SCATTER != 0,
            offloads: c.rx_offloads,
            buf_size: 0,
            state: self.queue_state(),
        })
    }

    /// TX queue `queue` as the configuration in force describes it, as [`PortState::rx_queue_info`].
    pub fn tx_queue_info(&self, queue: u16) -> Result<TxQueueInfo> {
        self.check_queue(false, queue)?;
        let c = &self.config;
        Ok(TxQueueInfo {
            nb_desc: c.tx_desc,
            thresh: QueueThresh::default(),
            rs_thresh: 0,
            free_thresh: 0,
            deferred_start: false,
            offloads: c.tx_offloads,
            state: self.queue_state(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DevInfo, MacAddr, PoolConfig, PortConfig};

    fn state() -> PortState {
        let info = DevInfo::software("net_test", "test0", 4);
        let mut s = PortState::new(info, MacAddr::local_from(1), PortConfig::default());
        let config = PortConfig {
            rx_queues: 2,
            tx_queues: 3,
            rx_desc: 512,
            tx_desc: 256,
            rx_offloads: offload::RX_SCATTER,
            tx_offloads: offload::TX_MULTI_SEGS,
            ..Default::default()
        };
        s.configure(&config).unwrap();
        s
    }

    #[test]
    fn queue_info_reads_the_configuration_and_the_pool_recorded_at_start() {
        let mut s = state();
        let rx = s.rx_queue_info(1).unwrap();
        assert_eq!((rx.nb_desc, rx.offloads, rx.scattered), (512, offload::RX_SCATTER, true));
        assert_eq!((rx.pool, rx.state), (None, QueueState::Stopped), "no pool before the first start");
        let tx = s.tx_queue_info(2).unwrap();
        assert_eq!((tx.nb_desc, tx.offloads, tx.state), (256, offload::TX_MULTI_SEGS, QueueState::Stopped));
        let config = PoolConfig { size: 300, cache_size: 8, ..Default::default() };
        let pool = Mempool::new("qinfo_pool", &config, &hugepage::Allocator::no_huge()).unwrap();
        s.start_with_pool(&pool).unwrap();
        let rx = s.rx_queue_info(0).unwrap();
        let want = PoolInfo { name: "qinfo_pool".into(), size: 300, cache_size: 8, data_room: pool.data_room() };
        assert_eq!(rx.pool, Some(want.clone()));
        assert_eq!(rx.state, QueueState::Started);
        assert_eq!(s.tx_queue_info(0).unwrap().state, QueueState::Started);
        s.stop().unwrap();
        let rx = s.rx_queue_info(0).unwrap();
        assert_eq!((rx.pool, rx.state), (Some(want), QueueState::Stopped), "a stopped port's queues stay set up");
    }

    #[test]
    fn a_queue_past_the_configured_count_is_invalid() {
        let s = state();
        let e = s.rx_queue_info(2).unwrap_err();
        assert!(matches!(e, Error::InvalidQueue { kind: "rx", queue: 2, count: 2, .. }), "{e}");
        let e = s.tx_queue_info(3).unwrap_err();
        assert!(matches!(e, Error::InvalidQueue { kind: "tx", queue: 3, count: 3, .. }), "{e}");
        assert!(s.check_queue(false, 2).is_ok() && s.check_queue(true, 1).is_ok());
    }
}
