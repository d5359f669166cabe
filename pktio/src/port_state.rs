//! The state every port keeps the same way, software port or hardware driver: identity, the configuration in
//! force, started flag, MAC and receive modes, the queue hand-out (once per start) and the counter reset base.
//! [`crate::EthDev`] answers its getters from it, so a port's own file holds only what is specific to it.

use std::sync::Arc;

use crate::dev::{DevInfo, IntrConf, LinkStatus, PortConfig};
use crate::stats::{PortStats, RxQueueStats, TxQueueStats};
use crate::MacAddr;
use crate::{Error, Result};

/// The queues of one direction: each queue's counters (shared with the queue object the port hands out) and
/// whether it was claimed since the last start.
#[derive(Debug)]
struct Claims<S> {
    stats: Vec<Arc<S>>,
    claimed: Vec<bool>,
}

impl<S: Default> Claims<S> {
    fn new() -> Self {
        Claims { stats: Vec::new(), claimed: Vec::new() }
    }

    /// `n` queues; existing counters are kept (the reset base hides them), new ones start at zero.
    fn resize(&mut self, n: u16) {
        let n = n as usize;
        self.stats.resize_with(n, Default::default);
        self.claimed = vec![false; n];
    }

    fn release_all(&mut self) {
        self.claimed.iter_mut().for_each(|c| *c = false);
    }

    /// A claimed queue whose handle is still alive: the handle holds a second reference to the counters.
    fn in_use(&self) -> bool {
        self.claimed.iter().zip(&self.stats).any(|(c, s)| *c && Arc::strong_count(s) > 1)
    }

    /// Queue `i` of a started port goes back, for a per-queue stop: its handle must be gone; it can be claimed again.
    fn release(&mut self, port: &str, kind: &'static str, started: bool, i: u16) -> Result<()> {
        if !started {
            return Err(Error::NotStarted { port: port.to_string() });
        }
        let count = self.stats.len() as u16;
        let (Some(claimed), Some(s)) = (self.claimed.get_mut(i as usize), self.stats.get(i as usize)) else {
            return Err(Error::InvalidQueue { port: port.to_string(), kind, queue: i, count });
        };
        if *claimed && Arc::strong_count(s) > 1 {
            return Err(Error::QueuesInUse { port: port.to_string() });
        }
        *claimed = false;
        Ok(())
    }
}

/// Configuration and bookkeeping common to every port. Drivers embed one and return it from
/// [`crate::EthDev::state`]; what the hardware must also be told (a MAC filter, an MTU register) the driver does in
/// its own override of the setter, then records it here.
#[derive(Debug)]
pub struct PortState {
    /// Static description (name, limits, capabilities).
    pub info: DevInfo,
    /// Configuration in force.
    pub config: PortConfig,
    /// Between `start` and `stop`.
    pub started: bool,
    /// MAC address.
    pub mac: MacAddr,
    /// Promiscuous mode.
    pub promiscuous: bool,
    /// All-multicast mode.
    pub allmulticast: bool,
    /// Port number stamped into received packets.
    pub port_id: u16,
    /// Secondary unicast addresses by filter slot: entry `i` is the device's address slot `i + 1` (slot 0 holds
    /// [`PortState::mac`]); [`MacAddr::ZERO`] marks a free slot, as in DPDK's `mac_addrs` array.
    pub extra_macs: Vec<MacAddr>,
    /// The receive VLAN filter is on.
    pub vlan_filter: bool,
    /// The interrupts the port can deliver (none unless the driver says so): [`PortState::configure`] refuses
    /// the others.
    pub intr_capa: IntrConf,
    /// The pool the RX queues fill from, recorded by [`PortState::start_with_pool`] and kept after a stop (the
    /// queues stay set up, as in DPDK); `None` for a port whose driver starts with [`PortState::start`].
    pub rx_pool: Option<crate::queue_info::PoolInfo>,
    rx: Claims<RxQueueStats>,
    tx: Claims<TxQueueStats>,
    base: PortStats,
}

impl PortState {
    /// A stopped port with `config` (not checked: the driver's own default) and promiscuous mode off.
    pub fn new(info: DevInfo, mac: MacAddr, config: PortConfig) -> Self {
        let mut s = PortState {
            info,
            config,
            started: false,
            mac,
            promiscuous: false,
            allmulticast: false,
            port_id: 0,
            extra_macs: Vec::new(),
            vlan_filter: false,
            intr_capa: IntrConf::default(),
            rx_pool: None,
            rx: Claims::new(),
            tx: Claims::new(),
            base: PortStats::default(),
        };
        s.resize_queues();
        s
    }

    /// The port's name, for errors.
    pub fn name(&self) -> &str {
        &self.info.device_name
    }

    /// An [`Error::InvalidConfig`] for this port.
    pub fn invalid(&self, reason: impl Into<String>) -> Error {
        Error::InvalidConfig { port: self.info.device_name.clone(), reason: reason.into() }
    }

    /// An [`Error::NotSupported`] naming this port and its driver.
    pub fn unsupported(&self, what: &'static str) -> Error {
        Error::NotSupported { port: self.info.device_name.clone(), driver: self.info.driver_name, what }
    }

    fn resize_queues(&mut self) {
        self.rx.resize(self.config.rx_queues);
        self.tx.resize(self.config.tx_queues);
        self.base = self.queue_counters();
    }

    /// Checks `config` against [`DevInfo::check`] and [`PortState::intr_capa`] and takes it: queue counters
    /// follow the new queue counts and the statistics start from zero. The port must be stopped.
    pub fn configure(&mut self, config: &PortConfig) -> Result<()> {
        if self.started {
            return Err(Error::Started { port: self.info.device_name.clone() });
        }
        self.info.check(config)?;
        if config.intr_conf.rxq && !self.intr_capa.rxq {
            return Err(self.unsupported("RX queue interrupts (intr_conf.rxq)"));
        }
        if config.intr_conf.lsc && !self.intr_capa.lsc {
            return Err(self.unsupported("link-state-change interrupts (intr_conf.lsc)"));
        }
        self.config = config.clone();
        self.resize_queues();
        Ok(())
    }

    /// Records `mac` as a secondary address under `rte_eth_dev_mac_addr_add`'s rules and returns the device slot
    /// (1..max_mac_addrs) the driver must program, or `None` when the address is already there (nothing to do).
    pub fn add_mac(&mut self, mac: MacAddr, pool: u32) -> Result<Option<usize>> {
        if mac == MacAddr::ZERO {
            return Err(self.invalid("cannot add the all-zero MAC address"));
        }
        if pool != 0 {
            return Err(self.invalid(format!("MAC pool {pool}: VMDq pools are not supported, use pool 0")));
        }
        if mac == self.mac || self.extra_macs.contains(&mac) {
            return Ok(None);
        }
        let max = self.info.max_mac_addrs;
        let slot = match self.extra_macs.iter().position(|m| *m == MacAddr::ZERO) {
            Some(i) => i,
            None if (self.extra_macs.len() as u32 + 1) < max => {
                self.extra_macs.push(MacAddr::ZERO);
                self.extra_macs.len() - 1
            }
            None => return Err(Error::TableFull { port: self.info.device_name.clone(), what: "MAC address", max }),
        };
        self.extra_macs[slot] = mac;
        Ok(Some(slot + 1))
    }

    /// Forgets secondary address `mac`; returns the device slot to clear, or `None` when it was not there.
    pub fn remove_mac(&mut self, mac: MacAddr) -> Result<Option<usize>> {
        if mac == self.mac {
            return Err(Error::DefaultMacAddr { port: self.info.device_name.clone(), mac });
        }
        if mac == MacAddr::ZERO {
            return Ok(None);
        }
        let Some(i) = self.extra_macs.iter().position(|m| *m == mac) else { return Ok(None) };
        self.extra_macs[i] = MacAddr::ZERO;
        Ok(Some(i + 1))
    }

    /// Checks `mtu` against the limits and takes it.
    pub fn set_mtu(&mut self, mtu: u16) -> Result<()> {
        self.info.check_mtu(mtu)?;
        self.config.mtu = mtu;
        Ok(())
    }

    /// Marks the port started; every queue can be claimed once again.
    pub fn start(&mut self) -> Result<()> {
        if self.started {
            return Err(Error::Started { port: self.info.device_name.clone() });
        }
        self.rx.release_all();
        self.tx.release_all();
        self.started = true;
        Ok(())
    }

    /// Checks that no claimed queue handle is alive, then marks the port stopped.
    pub fn stop(&mut self) -> Result<()> {
        if self.queues_in_use() {
            return Err(Error::QueuesInUse { port: self.info.device_name.clone() });
        }
        self.started = false;
        Ok(())
    }

    /// True while a handed-out queue handle (which holds its queue's counters) is alive.
    pub fn queues_in_use(&self) -> bool {
        self.rx.in_use() || self.tx.in_use()
    }

    /// Claims RX queue `queue`: the port must be started, the queue must exist and not have been claimed since
    /// the start. `take` gets the queue's counters and returns the driver's queue object (`None`: it is gone, e.g.
    /// a handle from before is still alive), which is then handed out.
    pub fn claim_rx<T>(&mut self, queue: u16, take: impl FnOnce(Arc<RxQueueStats>) -> Option<T>) -> Result<T> {
        let (started, port) = (self.started, &self.info.device_name);
        claim(&mut self.rx, port, "rx", started, queue, take)
    }

    /// Claims TX queue `queue`, as [`PortState::claim_rx`].
    pub fn claim_tx<T>(&mut self, queue: u16, take: impl FnOnce(Arc<TxQueueStats>) -> Option<T>) -> Result<T> {
        let (started, port) = (self.started, &self.info.device_name);
        claim(&mut self.tx, port, "tx", started, queue, take)
    }

    /// For a per-queue stop (DPDK's `rte_eth_dev_rx_queue_stop`): RX queue `queue` of the started port must have no
    /// live handle; it can be claimed again after the driver starts it again.
    pub fn release_rx(&mut self, queue: u16) -> Result<()> {
        let (started, port) = (self.started, self.info.device_name.clone());
        self.rx.release(&port, "rx", started, queue)
    }

    /// For a per-queue stop of TX queue `queue`, as [`PortState::release_rx`].
    pub fn release_tx(&mut self, queue: u16) -> Result<()> {
        let (started, port) = (self.started, self.info.device_name.clone());
        self.tx.release(&port, "tx", started, queue)
    }

    /// Claims RX queue `queue` out of the rings a driver built at start (`rings[queue]`, taken), as
    /// [`PortState::claim_rx`].
    pub fn take_rx<T>(&mut self, queue: u16, rings: &mut [Option<T>]) -> Result<T> {
        self.claim_rx(queue, |_| rings.get_mut(queue as usize)?.take())
    }

    /// Claims TX queue `queue` out of the rings a driver built at start, as [`PortState::take_rx`].
    pub fn take_tx<T>(&mut self, queue: u16, rings: &mut [Option<T>]) -> Result<T> {
        self.claim_tx(queue, |_| rings.get_mut(queue as usize)?.take())
    }

    /// Counters of RX queue `queue`, for the queue object a driver builds at start.
    pub fn rx_stats(&self, queue: u16) -> Option<&Arc<RxQueueStats>> {
        self.rx.stats.get(queue as usize)
    }

    /// Counters of TX queue `queue`.
    pub fn tx_stats(&self, queue: u16) -> Option<&Arc<TxQueueStats>> {
        self.tx.stats.get(queue as usize)
    }

    /// The queues' counters summed, since the port was configured (no reset applied).
    pub fn queue_counters(&self) -> PortStats {
        PortStats::from_queues(self.rx.stats.iter().map(|s| &**s), self.tx.stats.iter().map(|s| &**s))
    }

    /// `raw` since the last reset; `raw` is what [`PortState::queue_counters`] gives, plus whatever the device
    /// counts itself, taken the same way at the reset ([`PortState::reset_stats_to`]).
    pub fn since_reset(&self, raw: PortStats) -> PortStats {
        raw.since(&self.base)
    }

    /// Makes `raw` the new zero.
    pub fn reset_stats_to(&mut self, raw: PortStats) {
        self.base = raw;
    }

    /// Counters since the last reset, for a port that counts only in its queues.
    pub fn stats(&self) -> PortStats {
        self.since_reset(self.queue_counters())
    }

    /// Starts counting from zero again (queue counters only).
    pub fn reset_stats(&mut self) {
        self.base = self.queue_counters();
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

fn claim<S, T>(
    q: &mut Claims<S>,
    port: &str,
    kind: &'static str,
    started: bool,
    queue: u16,
    take: impl FnOnce(Arc<S>) -> Option<T>,
) -> Result<T> {
    if !started {
        return Err(Error::NotStarted { port: port.to_string() });
    }
    let count = q.stats.len() as u16;
    let i = queue as usize;
    let Some(claimed) = q.claimed.get_mut(i) else {
        return Err(Error::InvalidQueue { port: port.to_string(), kind, queue, count });
    };
    if *claimed {
        return Err(Error::QueueTaken { port: port.to_string(), kind, queue });
    }
    let out = take(q.stats[i].clone()).ok_or_else(|| Error::QueueTaken { port: port.to_string(), kind, queue })?;
    *claimed = true;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(queues: u16) -> PortState {
        let info = DevInfo::software("net_test", "test0", queues);
        PortState::new(info, MacAddr::local_from(1), PortConfig::default())
    }

    #[test]
    fn secondary_macs_follow_dpdks_rules() {
        let mut s = state(1);
        s.info.max_mac_addrs = 3;
        let (a, b, c) = (MacAddr::local_from(2), MacAddr::local_from(3), MacAddr::local_from(4));
        assert_eq!(s.add_mac(a, 0).unwrap(), Some(1));
        assert_eq!(s.add_mac(a, 0).unwrap(), None, "adding twice does nothing");
        assert_eq!(s.add_mac(s.mac, 0).unwrap(), None, "the default address is there already");
        assert_eq!(s.add_mac(b, 0).unwrap(), Some(2));
        assert!(matches!(s.add_mac(c, 0), Err(Error::TableFull { max: 3, .. })));
        assert!(matches!(s.add_mac(MacAddr::ZERO, 0), Err(Error::InvalidConfig { .. })));
        assert!(matches!(s.add_mac(c, 1), Err(Error::InvalidConfig { .. })));
        assert!(matches!(s.remove_mac(s.mac), Err(Error::DefaultMacAddr { .. })));
        assert_eq!(s.remove_mac(a).unwrap(), Some(1));
        assert_eq!(s.remove_mac(a).unwrap(), None, "removing an absent address is no error");
        assert_eq!(s.add_mac(c, 0).unwrap(), Some(1), "a freed slot is reused");
        assert_eq!(s.extra_macs, [c, b]);
    }

    #[test]
    fn a_queue_is_claimed_once_per_start_and_only_when_started() {
        let mut s = state(2);
        s.configure(&PortConfig { rx_queues: 2, tx_queues: 2, ..Default::default() }).unwrap();
        assert!(matches!(s.claim_rx(0, Some), Err(Error::NotStarted { .. })));
        s.start().unwrap();
        let h = s.claim_rx(0, Some).unwrap();
        assert!(matches!(s.claim_rx(0, Some), Err(Error::QueueTaken { kind: "rx", queue: 0, .. })));
        assert!(matches!(s.claim_tx(2, Some), Err(Error::InvalidQueue { kind: "tx", queue: 2, count: 2, .. })));
        // The driver's object is gone: taken, and not marked claimed (its own handle is what holds it).
        assert!(matches!(s.claim_rx(1, |_| None::<()>), Err(Error::QueueTaken { queue: 1, .. })));
        assert!(s.claim_rx(1, Some).is_ok());
        assert!(matches!(s.stop(), Err(Error::QueuesInUse { .. })));
        drop(h);
        s.stop().unwrap();
        s.start().unwrap();
        assert!(s.claim_rx(0, Some).is_ok(), "a new start hands the queue out again");
    }

    #[test]
    fn a_released_queue_can_be_claimed_again_once_its_handle_is_gone() {
        let mut s = state(2);
        s.configure(&PortConfig { rx_queues: 2, tx_queues: 2, ..Default::default() }).unwrap();
        assert!(matches!(s.release_rx(0), Err(Error::NotStarted { .. })));
        s.start().unwrap();
        let h = s.claim_rx(0, Some).unwrap();
        assert!(matches!(s.release_rx(0), Err(Error::QueuesInUse { .. })), "the handle is alive");
        assert!(matches!(s.release_tx(2), Err(Error::InvalidQueue { kind: "tx", queue: 2, .. })));
        drop(h);
        s.release_rx(0).unwrap();
        assert!(s.claim_rx(0, Some).is_ok(), "claimed again after the release");
        s.release_tx(1).unwrap();
        assert!(s.claim_tx(1, Some).is_ok(), "a queue never claimed releases too");
    }

    #[test]
    fn interrupts_are_refused_unless_the_driver_has_them() {
        let mut s = state(1);
        let rxq = PortConfig { intr_conf: IntrConf { rxq: true, lsc: false }, ..Default::default() };
        let lsc = PortConfig { intr_conf: IntrConf { rxq: false, lsc: true }, ..Default::default() };
        let err = s.configure(&rxq).unwrap_err().to_string();
        assert!(err.contains("intr_conf.rxq") && err.contains("net_test"), "{err}");
        assert!(s.configure(&lsc).unwrap_err().to_string().contains("intr_conf.lsc"));
        s.intr_capa = IntrConf { rxq: true, lsc: false };
        s.configure(&rxq).unwrap();
        assert!(s.configure(&lsc).is_err());
        s.intr_capa.lsc = true;
        s.configure(&lsc).unwrap();
        assert_eq!(s.config.intr_conf, lsc.intr_conf);
    }

    #[test]
    fn counters_reset_against_a_base() {
        let mut s = state(1);
        s.start().unwrap();
        let rx = s.claim_rx(0, Some).unwrap();
        rx.packets.add(5);
        assert_eq!(s.stats().ipackets, 5);
        s.reset_stats();
        rx.packets.add(2);
        assert_eq!(s.stats().ipackets, 2);
        assert_eq!(s.queue_counters().ipackets, 7);
    }

    #[test]
    fn configure_is_checked_and_needs_a_stopped_port() {
        let mut s = state(4);
        let err = s.configure(&PortConfig { rx_queues: 5, ..Default::default() }).unwrap_err();
        assert!(err.to_string().contains("5 RX queues asked, 1..=4 allowed"), "{err}");
        s.start().unwrap();
        assert!(matches!(s.configure(&PortConfig::default()), Err(Error::Started { .. })));
        assert!(s.set_mtu(10_000).is_err());
        s.set_mtu(9000).unwrap();
        assert_eq!(s.config.mtu, 9000);
    }
}
