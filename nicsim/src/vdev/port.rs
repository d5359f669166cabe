//! One simulated port: a real driver and the model (with its thread) behind it. Every `net_sim_*` vdev hands out
//! these, so the [`EthDev`] forwarding is written once for every model family.

use crate::{Model, ModelPort, ModelThread};
use mempool::Mempool;
use pktio::{
    DevInfo, EthDev, LinkStatus, MacAddr, PortConfig, PortState, PortStats, Result, RssConfig, RxQueue, TxQueue, XStat,
};

/// A driver `D` on a port of model `S`. Field order is drop order: the driver quiesces its rings (and closes the
/// device) while the model still runs, then the model's thread stops, then the model goes.
pub struct SimPort<D, S> {
    dev: D,
    _thread: ModelThread,
    model: ModelPort<S>,
}

impl<D: std::fmt::Debug, S> std::fmt::Debug for SimPort<D, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimPort").field("dev", &self.dev).finish()
    }
}

impl<D, S> SimPort<D, S> {
    /// A port from its driver, the model's running thread and the model.
    pub fn new(dev: D, thread: ModelThread, model: ModelPort<S>) -> Self {
        SimPort { dev, _thread: thread, model }
    }

    /// The model behind the port (fault injection, counters).
    pub fn model(&self) -> &ModelPort<S> {
        &self.model
    }

    /// The driver.
    pub fn driver(&mut self) -> &mut D {
        &mut self.dev
    }
}

impl<D: EthDev, S: Model> EthDev for SimPort<D, S> {
    fn state(&self) -> &PortState {
        self.dev.state()
    }
    fn state_mut(&mut self) -> &mut PortState {
        self.dev.state_mut()
    }
    fn info(&self) -> DevInfo {
        self.dev.info()
    }
    fn configure(&mut self, config: &PortConfig) -> Result<()> {
        self.dev.configure(config)
    }
    fn config(&self) -> &PortConfig {
        self.dev.config()
    }
    fn start(&mut self, pool: &Mempool) -> Result<()> {
        self.dev.start(pool)
    }
    fn stop(&mut self) -> Result<()> {
        self.dev.stop()
    }
    fn is_started(&self) -> bool {
        self.dev.is_started()
    }
    fn rx_queue(&mut self, queue: u16) -> Result<Box<dyn RxQueue>> {
        self.dev.rx_queue(queue)
    }
    fn tx_queue(&mut self, queue: u16) -> Result<Box<dyn TxQueue>> {
        self.dev.tx_queue(queue)
    }
    fn set_port_id(&mut self, port_id: u16) {
        self.dev.set_port_id(port_id)
    }
    fn link(&self) -> LinkStatus {
        self.dev.link()
    }
    fn link_event_fd(&self) -> Result<std::os::fd::RawFd> {
        self.dev.link_event_fd()
    }
    fn set_link_up(&mut self, up: bool) -> Result<()> {
        self.dev.set_link_up(up)
    }
    fn mac_addr(&self) -> MacAddr {
        self.dev.mac_addr()
    }
    fn set_mac_addr(&mut self, mac: MacAddr) -> Result<()> {
        self.dev.set_mac_addr(mac)
    }
    fn set_promiscuous(&mut self, on: bool) -> Result<()> {
        self.dev.set_promiscuous(on)
    }
    fn promiscuous(&self) -> bool {
        self.dev.promiscuous()
    }
    fn set_allmulticast(&mut self, on: bool) -> Result<()> {
        self.dev.set_allmulticast(on)
    }
    fn allmulticast(&self) -> bool {
        self.dev.allmulticast()
    }
    fn mtu(&self) -> u16 {
        self.dev.mtu()
    }
    fn set_mtu(&mut self, mtu: u16) -> Result<()> {
        self.dev.set_mtu(mtu)
    }
    fn stats(&self) -> PortStats {
        self.dev.stats()
    }
    fn reset_stats(&mut self) {
        self.dev.reset_stats()
    }
    fn xstats(&self) -> Vec<XStat> {
        self.dev.xstats()
    }
    fn rss_hash_update(&mut self, rss: &RssConfig) -> Result<()> {
        self.dev.rss_hash_update(rss)
    }
    fn reta_update(&mut self, reta: &[u16]) -> Result<()> {
        self.dev.reta_update(reta)
    }
    fn burst_mode(&self) -> pktio::BurstMode {
        self.dev.burst_mode()
    }
    fn rx_burst_mode(&self, queue: u16) -> Result<pktio::QueueBurstMode> {
        self.dev.rx_burst_mode(queue)
    }
    fn tx_burst_mode(&self, queue: u16) -> Result<pktio::QueueBurstMode> {
        self.dev.tx_burst_mode(queue)
    }
    fn rx_queue_info(&self, queue: u16) -> Result<pktio::RxQueueInfo> {
        self.dev.rx_queue_info(queue)
    }
    fn tx_queue_info(&self, queue: u16) -> Result<pktio::TxQueueInfo> {
        self.dev.tx_queue_info(queue)
    }
    fn vlan_filter(&mut self, vlan_id: u16, on: bool) -> Result<()> {
        self.dev.vlan_filter(vlan_id, on)
    }
    fn vlan_filter_enabled(&self) -> bool {
        self.dev.vlan_filter_enabled()
    }
    fn set_vlan_filter_enabled(&mut self, on: bool) -> Result<()> {
        self.dev.set_vlan_filter_enabled(on)
    }
    fn mac_addr_add(&mut self, mac: MacAddr, pool: u32) -> Result<()> {
        self.dev.mac_addr_add(mac, pool)
    }
    fn mac_addr_remove(&mut self, mac: MacAddr) -> Result<()> {
        self.dev.mac_addr_remove(mac)
    }
    fn mac_addrs(&self) -> Vec<MacAddr> {
        self.dev.mac_addrs()
    }
    fn rx_queue_stop(&mut self, queue: u16) -> Result<()> {
        self.dev.rx_queue_stop(queue)
    }
    fn rx_queue_start(&mut self, queue: u16) -> Result<()> {
        self.dev.rx_queue_start(queue)
    }
    fn tx_queue_stop(&mut self, queue: u16) -> Result<()> {
        self.dev.tx_queue_stop(queue)
    }
    fn tx_queue_start(&mut self, queue: u16) -> Result<()> {
        self.dev.tx_queue_start(queue)
    }
    fn queue_stats_mapping(&mut self, rx: bool, queue: u16, set: u8) -> Result<()> {
        self.dev.queue_stats_mapping(rx, queue, set)
    }
}
