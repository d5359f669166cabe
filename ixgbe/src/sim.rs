//! `net_sim_x540`: the real driver on behavioural X540 models ([`nicsim`]), so users can run it without hardware:
//! `testpmd-rs --vdev net_sim_x540,ports=2 -- -i` forwards between two simulated ports wired back to back.
//!
//! Devargs: `ports=N` (even, default 2: N/2 dual-port X540s, each pair wired back to back),
//! `speed=100|1000|10000` (link partner speed, default 10000). Each model port runs in its own thread, like
//! hardware, for as long as the port lives.

use std::sync::Arc;
use std::time::Duration;

use hugepage::Allocator;
use mempool::Mempool;
use nicsim::{LinkSpeed, ModelThread, SimBar, X540Config, X540Port, X540};
use pktio::devargs::Devargs;
use pktio::{DevInfo, EthDev, LinkStatus, MacAddr, PortConfig, PortStats, Result, RssConfig, RxQueue, TxQueue, XStat};

use crate::dev::{Ixgbe, MacType, Options, Timing};

/// The driver name users type.
pub const VDEV_DRIVER: &str = "net_sim_x540";
/// Most ports one `--vdev` may create.
pub const MAX_PORTS: u16 = 8;

/// Timing for a model: no settle waits (the model has none unless a test injects them).
pub fn model_timing() -> Timing {
    Timing {
        reset_done: Duration::from_millis(500),
        reset_settle: Duration::ZERO,
        gio_disable: Duration::from_millis(10),
        eeprom: Duration::from_millis(500),
        dma_init: Duration::from_millis(500),
        queue_enable: Duration::from_millis(100),
        mdio: Duration::from_millis(10),
        semaphore: Duration::from_millis(10),
    }
}

/// One simulated port: the driver, and the model (with its thread) behind it.
pub struct SimPort {
    dev: Ixgbe<SimBar>,
    // Dropped after `dev` (field order): the model keeps running until the driver has quiesced the rings.
    _thread: ModelThread,
    model: X540Port,
}

impl std::fmt::Debug for SimPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimPort").field("dev", &self.dev).finish()
    }
}

impl SimPort {
    /// The model behind the port (fault injection, counters).
    pub fn model(&self) -> &X540Port {
        &self.model
    }

    /// The driver.
    pub fn driver(&mut self) -> &mut Ixgbe<SimBar> {
        &mut self.dev
    }
}

fn open_one(name: String, bar: SimBar, model: X540Port, allocator: &Allocator) -> Result<SimPort> {
    let options = Options { name, mac_type: MacType::X540, timing: model_timing() };
    let dev = Ixgbe::new(Arc::new(bar), model.dma_mapper(), allocator.clone(), options)?;
    let thread = model.start_thread();
    Ok(SimPort { dev, _thread: thread, model })
}

/// Opens the ports of a `net_sim_x540` vdev.
pub fn open_vdev(args: &Devargs, allocator: &Allocator) -> Result<Vec<Box<dyn EthDev>>> {
    args.check_keys(&["ports", "speed"])?;
    let ports: u16 = args.parse_or("ports", 2)?;
    if ports == 0 || !ports.is_multiple_of(2) || ports > MAX_PORTS {
        return Err(
            args.error(format!("ports={ports}: give an even number up to {MAX_PORTS} (ports are wired in pairs)"))
        );
    }
    let partner_speed = match args.parse_or("speed", 10_000u32)? {
        100 => LinkSpeed::M100,
        1_000 => LinkSpeed::G1,
        10_000 => LinkSpeed::G10,
        s => return Err(args.error(format!("speed={s}: use 100, 1000 or 10000"))),
    };
    let mut out: Vec<Box<dyn EthDev>> = Vec::new();
    for pair in 0..ports / 2 {
        // Distinct MACs per pair: the model's pair differs in the last byte, the pair index goes in byte 4.
        let config =
            X540Config { mac: [0x02, 0x00, 0x00, 0x54, pair as u8, 0x00], partner_speed, ..Default::default() };
        let ((bar0, m0), (bar1, m1)) = X540::pair(config);
        for (k, (bar, model)) in [(bar0, m0), (bar1, m1)].into_iter().enumerate() {
            let name = format!("{}_p{}", args.name, pair * 2 + k as u16);
            out.push(Box::new(open_one(name, bar, model, allocator)?));
        }
    }
    Ok(out)
}

impl EthDev for SimPort {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use mempool::{PacketBatch, PoolConfig};

    #[test]
    fn vdev_makes_wired_pairs_that_forward() {
        let args = Devargs::parse("net_sim_x540,ports=2").unwrap();
        let mut ports = open_vdev(&args, &Allocator::no_huge()).unwrap();
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[0].info().device_name, "net_sim_x540_p0");
        assert_ne!(ports[0].mac_addr(), ports[1].mac_addr());
        let pool = Mempool::new("sim-vdev-test", &PoolConfig::with_size(4096), &Allocator::no_huge()).unwrap();
        for p in ports.iter_mut() {
            p.configure(&PortConfig { rx_desc: 256, tx_desc: 256, ..Default::default() }).unwrap();
            p.set_promiscuous(true).unwrap();
            p.start(&pool).unwrap();
        }
        let t = std::time::Instant::now();
        while !(ports[0].link().up && ports[1].link().up) {
            assert!(t.elapsed() < Duration::from_secs(5), "links stay down");
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut tx0 = ports[0].tx_queue(0).unwrap();
        let mut rx1 = ports[1].rx_queue(0).unwrap();
        let mut b = PacketBatch::new();
        assert!(b.alloc_from(&pool, 32));
        for m in b.iter_mut() {
            m.data_room_mut()[..64].fill(0xab);
            m.set_len(64);
        }
        assert_eq!(tx0.tx_burst(&mut b), 32);
        let mut got = 0;
        while got < 32 {
            assert!(t.elapsed() < Duration::from_secs(10), "received {got}");
            got += rx1.rx_burst(&mut b);
            b.clear();
        }
        drop((tx0, rx1));
        for p in ports.iter_mut() {
            p.stop().unwrap();
        }
        drop(ports);
        assert!(pool.is_full());
        assert!(open_vdev(&Devargs::parse("net_sim_x540,ports=3").unwrap(), &Allocator::no_huge()).is_err());
        assert!(open_vdev(&Devargs::parse("net_sim_x540,bogus=1").unwrap(), &Allocator::no_huge()).is_err());
    }
}
