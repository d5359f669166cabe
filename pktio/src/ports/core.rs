//! State every software port shares: configuration checks, queue hand-out, counters and their reset base.

use std::sync::Arc;

use crate::dev::{DevInfo, LinkStatus, MacAddr, PortConfig};
use crate::stats::{PortStats, RxQueueStats, TxQueueStats};
use crate::{Error, Result};

/// Bookkeeping common to software ports; each port embeds one and forwards the plain [`crate::EthDev`] calls.
#[derive(Debug)]
pub struct SoftPortCore {
    /// Static description (name, limits).
    pub info: DevInfo,
    /// Configuration in force.
    pub config: PortConfig,
    /// Started flag.
    pub started: bool,
    /// MAC address.
    pub mac: MacAddr,
    /// Promiscuous flag.
    pub promiscuous: bool,
    /// All-multicast flag.
    pub allmulticast: bool,
    /// Port number stamped into received packets.
    pub port_id: u16,
    rx_stats: Vec<Arc<RxQueueStats>>,
    tx_stats: Vec<Arc<TxQueueStats>>,
    rx_taken: Vec<bool>,
    tx_taken: Vec<bool>,
    base: PortStats,
}

impl SoftPortCore {
    /// A stopped port with the default configuration (clamped to the port's queue limits).
    pub fn new(info: DevInfo, mac: MacAddr) -> Self {
        let mut core = SoftPortCore {
            info,
            config: PortConfig::default(),
            started: false,
            mac,
            promiscuous: true,
            allmulticast: false,
            port_id: 0,
            rx_stats: Vec::new(),
            tx_stats: Vec::new(),
            rx_taken: Vec::new(),
            tx_taken: Vec::new(),
            base: PortStats::default(),
        };
        core.resize_queues();
        core
    }

    fn resize_queues(&mut self) {
        let (rx, tx) = (self.config.rx_queues as usize, self.config.tx_queues as usize);
        self.rx_stats.resize_with(rx, Default::default);
        self.tx_stats.resize_with(tx, Default::default);
        self.rx_stats.truncate(rx);
        self.tx_stats.truncate(tx);
        self.rx_taken = vec![false; rx];
        self.tx_taken = vec![false; tx];
        self.base = PortStats::default();
        self.base = self.raw_stats();
    }

    fn invalid(&self, reason: String) -> Error {
        Error::InvalidConfig { port: self.info.device_name.clone(), reason }
    }

    /// Checks `config` against the limits and takes it. The port must be stopped.
    pub fn configure(&mut self, config: &PortConfig) -> Result<()> {
        if self.started {
            return Err(Error::Started { port: self.info.device_name.clone() });
        }
        let i = &self.info;
        if config.rx_queues == 0 || config.rx_queues > i.max_rx_queues {
            return Err(self.invalid(format!("{} RX queues asked, 1..={} allowed", config.rx_queues, i.max_rx_queues)));
        }
        if config.tx_queues == 0 || config.tx_queues > i.max_tx_queues {
            return Err(self.invalid(format!("{} TX queues asked, 1..={} allowed", config.tx_queues, i.max_tx_queues)));
        }
        for (what, n, lim) in [("RX", config.rx_desc, i.rx_desc_lim), ("TX", config.tx_desc, i.tx_desc_lim)] {
            if n < lim.min || n > lim.max || n % lim.align != 0 {
                return Err(self.invalid(format!(
                    "{n} {what} descriptors asked, {}..={} in multiples of {} allowed",
                    lim.min, lim.max, lim.align
                )));
            }
        }
        self.check_mtu(config.mtu)?;
        self.config = config.clone();
        self.resize_queues();
        Ok(())
    }

    /// Checks an MTU against the limits.
    pub fn check_mtu(&self, mtu: u16) -> Result<()> {
        if mtu < self.info.min_mtu || mtu > self.info.max_mtu {
            return Err(self.invalid(format!("MTU {mtu} outside {}..={}", self.info.min_mtu, self.info.max_mtu)));
        }
        Ok(())
    }

    /// Marks the port started; queues can be handed out again.
    pub fn start(&mut self) -> Result<()> {
        if self.started {
            return Err(Error::Started { port: self.info.device_name.clone() });
        }
        self.rx_taken.iter_mut().for_each(|t| *t = false);
        self.tx_taken.iter_mut().for_each(|t| *t = false);
        self.started = true;
        Ok(())
    }

    /// Checks that every queue handle is gone, then marks the port stopped.
    pub fn stop(&mut self) -> Result<()> {
        if self.queues_in_use() {
            return Err(Error::QueuesInUse { port: self.info.device_name.clone() });
        }
        self.started = false;
        Ok(())
    }

    /// True while a handed-out queue handle is alive.
    pub fn queues_in_use(&self) -> bool {
        self.rx_stats.iter().any(|s| Arc::strong_count(s) > 1) || self.tx_stats.iter().any(|s| Arc::strong_count(s) > 1)
    }

    /// Claims RX queue `queue`, returning its counters for the queue object to keep.
    pub fn take_rx(&mut self, queue: u16) -> Result<Arc<RxQueueStats>> {
        let port = self.info.device_name.clone();
        if !self.started {
            return Err(Error::NotStarted { port });
        }
        let count = self.config.rx_queues;
        let taken = self.rx_taken.get_mut(queue as usize).ok_or(Error::InvalidQueue {
            port: port.clone(),
            kind: "rx",
            queue,
            count,
        })?;
        if *taken || Arc::strong_count(&self.rx_stats[queue as usize]) > 1 {
            return Err(Error::QueueTaken { port, kind: "rx", queue });
        }
        *taken = true;
        Ok(self.rx_stats[queue as usize].clone())
    }

    /// Claims TX queue `queue`, returning its counters for the queue object to keep.
    pub fn take_tx(&mut self, queue: u16) -> Result<Arc<TxQueueStats>> {
        let port = self.info.device_name.clone();
        if !self.started {
            return Err(Error::NotStarted { port });
        }
        let count = self.config.tx_queues;
        let taken = self.tx_taken.get_mut(queue as usize).ok_or(Error::InvalidQueue {
            port: port.clone(),
            kind: "tx",
            queue,
            count,
        })?;
        if *taken || Arc::strong_count(&self.tx_stats[queue as usize]) > 1 {
            return Err(Error::QueueTaken { port, kind: "tx", queue });
        }
        *taken = true;
        Ok(self.tx_stats[queue as usize].clone())
    }

    /// Counters of RX queue `queue`, for a port that updates them outside a queue object.
    pub fn rx_stats(&self, queue: u16) -> Option<&Arc<RxQueueStats>> {
        self.rx_stats.get(queue as usize)
    }

    /// Counters of TX queue `queue`.
    pub fn tx_stats(&self, queue: u16) -> Option<&Arc<TxQueueStats>> {
        self.tx_stats.get(queue as usize)
    }

    fn raw_stats(&self) -> PortStats {
        PortStats::from_queues(self.rx_stats.iter().map(|s| &**s), self.tx_stats.iter().map(|s| &**s))
    }

    /// Counters since the last reset.
    pub fn stats(&self) -> PortStats {
        self.raw_stats().since(&self.base)
    }

    /// Starts counting from zero again.
    pub fn reset_stats(&mut self) {
        self.base = self.raw_stats();
    }

    /// The link of a port with no carrier of its own: up at 10G while started (as DPDK's null, ring and pcap
    /// PMDs report it).
    pub fn virtual_link(&self) -> LinkStatus {
        if self.started {
            LinkStatus::up(10_000)
        } else {
            LinkStatus::default()
        }
    }
}

/// Implements [`crate::EthDev::rx_queue`] and [`crate::EthDev::tx_queue`] by boxing the port's
/// `rx_queue_typed`/`tx_queue_typed`.
#[macro_export]
#[doc(hidden)]
macro_rules! soft_port_queues {
    () => {
        fn rx_queue(&mut self, queue: u16) -> $crate::Result<Box<dyn $crate::RxQueue>> {
            Ok(Box::new(self.rx_queue_typed(queue)?))
        }
        fn tx_queue(&mut self, queue: u16) -> $crate::Result<Box<dyn $crate::TxQueue>> {
            Ok(Box::new(self.tx_queue_typed(queue)?))
        }
    };
}

/// Implements the [`crate::EthDev`] methods every software port answers from its [`SoftPortCore`] (field `$core`):
/// identity and configuration state. Ports with a kernel interface behind them (af_packet, tap) use this one and
/// apply MAC, promiscuous and MTU changes to the interface themselves.
#[macro_export]
#[doc(hidden)]
macro_rules! soft_port_state {
    ($core:ident) => {
        fn info(&self) -> $crate::DevInfo {
            self.$core.info.clone()
        }
        fn config(&self) -> &$crate::PortConfig {
            &self.$core.config
        }
        fn is_started(&self) -> bool {
            self.$core.started
        }
        fn set_port_id(&mut self, port_id: u16) {
            self.$core.port_id = port_id;
        }
    };
}

/// [`soft_port_state!`] plus MAC, promiscuous, all-multicast, MTU and counters kept in the [`SoftPortCore`] alone,
/// for ports with nothing behind them to tell (null, ring, pcap).
#[macro_export]
#[doc(hidden)]
macro_rules! soft_port_common {
    ($core:ident) => {
        $crate::soft_port_state!($core);
        fn mac_addr(&self) -> $crate::MacAddr {
            self.$core.mac
        }
        fn set_mac_addr(&mut self, mac: $crate::MacAddr) -> $crate::Result<()> {
            self.$core.mac = mac;
            Ok(())
        }
        fn set_promiscuous(&mut self, on: bool) -> $crate::Result<()> {
            self.$core.promiscuous = on;
            Ok(())
        }
        fn promiscuous(&self) -> bool {
            self.$core.promiscuous
        }
        fn set_allmulticast(&mut self, on: bool) -> $crate::Result<()> {
            self.$core.allmulticast = on;
            Ok(())
        }
        fn allmulticast(&self) -> bool {
            self.$core.allmulticast
        }
        fn set_mtu(&mut self, mtu: u16) -> $crate::Result<()> {
            self.$core.check_mtu(mtu)?;
            self.$core.config.mtu = mtu;
            Ok(())
        }
        fn stats(&self) -> $crate::PortStats {
            self.$core.stats()
        }
        fn reset_stats(&mut self) {
            self.$core.reset_stats()
        }
    };
}
