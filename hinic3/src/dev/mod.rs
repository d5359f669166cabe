//! The port: bring-up (docs/hw/hinic3.md §3.2 and §14.1), start and stop (§14.3, §14.4), close (§14.5), and
//! [`Hinic3`] as a [`pktio::EthDev`] on [`pktio::PortState`].
//!
//! The port is generic over its register spaces: the cfg BAR (BAR1), the mgmt BAR (BAR3, PF election) and the doorbell
//! BAR (BAR4) of a VFIO device, or a model's. DMA memory comes from a [`hugepage::Allocator`] and is made reachable
//! through a [`drvkit::dma::DmaMapper`].

mod bringup;
mod intr;
mod queue;
mod queue_ctl;
mod start;
#[cfg(test)]
mod tests;

use pktio::driver::open_pci;
use pktio::TypedQueues;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use drvkit::bar::RegisterSpace;
use drvkit::dma::DmaMapper;
use hugepage::Allocator;
use mempool::Mempool;
use pktio::stats::Counter;
use pktio::{
    offload, DescLimits, DevInfo, EthDev, LinkStatus, MacAddr, PortConfig, PortState, PortStats, Result, RssConfig,
    RssHashFunctions, RxQueue, TxQueue, XStat,
};

use crate::cmdq::Cmdq;
use crate::mbox::{Mbox, MboxTiming};
use crate::mgmt::{self, module, DevCap};
use crate::regs::BeRegs;
use crate::rxtx::RxRing;
use crate::rxtx::TxRing;
use crate::stats::{PortStats as PortCounters, VportStats};
pub use queue::QueueHandle;
use queue::{lock, Slot};

/// The register spaces of one function.
#[derive(Debug)]
pub struct Bars<R> {
    /// The cfg BAR (function CSRs).
    pub cfg: Arc<R>,
    /// The mgmt BAR (PF only; `None` skips the PPF/MPF election).
    pub mgmt: Option<Arc<R>>,
    /// The doorbell BAR.
    pub db: Arc<R>,
}

/// Time limits (docs/hw/hinic3.md §15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Firmware ready (FUNC_ATTR1 bit 30).
    pub fw_ready: Duration,
    /// Doorbell and outbound enabled (FUNC_ATTR4/5).
    pub db_outbound: Duration,
    /// The mailbox.
    pub mbox: MboxTiming,
    /// One command-queue command.
    pub cmdq: Duration,
    /// SQ drain at stop.
    pub drain: Duration,
    /// Wait after the vport is disabled.
    pub vport_settle: Duration,
    /// A full SQ whose consumer index has not moved for this long is hung ([`ringkit::TxWatchdog`]).
    pub tx_hang: Duration,
}

impl Timing {
    /// The hardware's values.
    pub const HARDWARE: Timing = Timing {
        fw_ready: Duration::from_secs(10),
        db_outbound: Duration::from_secs(60),
        mbox: MboxTiming::HARDWARE,
        cmdq: Duration::from_secs(5),
        drain: Duration::from_secs(3),
        vport_settle: Duration::from_millis(100),
        tx_hang: ringkit::DEFAULT_TX_HANG_TIMEOUT,
    };

    /// Short limits for tests against fakes and models (which answer at once).
    pub fn fast() -> Timing {
        let s = Duration::from_secs(2);
        Timing {
            fw_ready: s,
            db_outbound: s,
            mbox: MboxTiming { writeback: s, answer: s },
            cmdq: s,
            drain: Duration::from_millis(200),
            vport_settle: Duration::ZERO,
            tx_hang: ringkit::DEFAULT_TX_HANG_TIMEOUT,
        }
    }
}

/// Port options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Device name (PCI address or vdev name), for errors and [`DevInfo`].
    pub name: String,
    /// Time limits.
    pub timing: Timing,
    /// The WQ page size set with COMM 22, as 4 KiB << this (0 to 8; docs/hw/hinic3.md §7.3, §9.3). 8 (1 MiB, DPDK's
    /// choice) fits every ring in one page; a smaller page (Linux's product driver goes down to 4 KiB) makes rings
    /// larger than a page span several, listed in a page table (1-level CLA), so that no ring needs more
    /// IOVA-contiguous memory than one page.
    pub wq_page_log2: u8,
}

impl Options {
    /// Hardware timing, 1 MiB WQ pages.
    pub fn new(name: &str) -> Options {
        Options { name: name.to_string(), timing: Timing::HARDWARE, wq_page_log2: crate::wq::MAX_WQ_PAGE_LOG2 }
    }
}

/// What bring-up learnt about the function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Global function index (every command's func_id).
    pub func_id: u16,
    /// PCIe interface index.
    pub pci_intf: u32,
    /// AEQs the function has.
    pub num_aeqs: u32,
    /// Won the PPF election.
    pub ppf: bool,
    /// COMM features.
    pub comm_features: u64,
    /// NIC features offered.
    pub nic_features: u64,
    /// Capabilities.
    pub cap: DevCap,
    /// The factory MAC.
    pub mac: MacAddr,
    /// The management firmware's version (COMM 60 at probe, what DPDK's `hinic3_fw_version_get` reports); `None`
    /// when the firmware refused the question.
    pub fw_version: Option<String>,
    /// The board (COMM 61 at probe); `None` when the firmware refused the question.
    pub board: Option<crate::mgmt::BoardInfo>,
}

/// The management channel: mailbox and command queue, used one command at a time.
pub(crate) struct Ctrl<R: RegisterSpace> {
    pub(crate) mbox: Mbox<R>,
    pub(crate) cmdq: Option<Cmdq<R>>,
    /// The ASYNC command queue: its context is set (as DPDK sets both), nothing is sent through it.
    pub(crate) async_cmdq: Option<Cmdq<R>>,
    /// AEQs 2 and up: programmed as DPDK programs every AEQ the function has (`hinic3_aeqs_init`), never read
    /// (nothing here sends to them), stopped at close.
    pub(crate) spare_aeqs: Vec<crate::aeq::Aeq<R>>,
}

/// Typed RX queue: the ring, given back to the port when dropped.
pub type Hinic3RxQueue<R> = QueueHandle<RxRing<R>>;
/// Typed TX queue: the ring, given back to the port when dropped.
pub type Hinic3TxQueue<R> = QueueHandle<TxRing<R>>;

/// The default RSS key (docs/hw/hinic3.md §11).
pub const DEFAULT_RSS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b,
    0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac,
    0x01, 0xfa,
];

/// A hinic3 PF port.
pub struct Hinic3<R: RegisterSpace> {
    state: PortState,
    options: Options,
    regs: BeRegs<R>,
    db: Arc<R>,
    mapper: Arc<dyn DmaMapper>,
    allocator: Allocator,
    ctrl: Mutex<Option<Ctrl<R>>>,
    id: Identity,
    link: Mutex<LinkStatus>,
    /// The rings, here while no handle holds them; a dropped handle puts its ring back.
    rx: Vec<Slot<RxRing<R>>>,
    tx: Vec<Slot<TxRing<R>>>,
    /// The burst TX queue 0 was set up with at the last start (what `burst_mode` reports while started).
    tx_path: Option<ringkit::TxPath>,
    rss_key: [u8; 40],
    reta: Vec<u16>,
    rss_on: bool,
    /// RQs whose contexts the device holds (set at start, zero after stop): the ones a stop flushes.
    rqs_live: u16,
    /// RX buffers that came back from the RQ flushes of the last stop (and of per-queue stops since).
    rx_flushed: usize,
    /// Queues stopped one by one since the start (docs/hw/hinic3.md §14.6).
    rx_stopped: Vec<bool>,
    tx_stopped: Vec<bool>,
    /// Per RX queue: checksum-error completions (xstat `rx_qN_csum_errors`), and their values at the last reset.
    rx_csum: Vec<Arc<Counter>>,
    rx_csum_base: Vec<u64>,
    /// The hardware counters at the last reset.
    vport_base: VportStats,
    /// What each SQ's hang watchdog found since the port started.
    tx_hang: Vec<Arc<ringkit::TxHangState>>,
    /// The control plane's watchdog of each SQ (over the same states) and what it reads of the SQ, looked at from
    /// the stats, xstats, link and `check_tx_hangs` reads.
    tx_watch: Vec<(ringkit::TxWatchdog, Arc<crate::rxtx::SqProgress>)>,
    /// MAG 151's counters at the last reset (free-running in the device).
    port_base: PortCounters,
    closed: bool,
    /// What must outlive the port (the VFIO device that maps its BARs).
    keep_alive: Option<Box<dyn std::any::Any + Send>>,
    /// Where the interrupt vectors go (dev/intr.rs); none: the port only polls.
    irq: Option<Arc<dyn drvkit::irq::IrqSource>>,
    /// The vectors enabled while started (vector i at i).
    vectors: drvkit::irq::IrqVectors,
    /// Vector 0 as the link-event descriptor, while started with `intr_conf.lsc` (dev/intr.rs).
    lsc: Option<crate::rxtx::RqIntr<R>>,
}

impl<R: RegisterSpace> Hinic3<R> {
    /// Brings the function up (docs/hw/hinic3.md §14.1) and returns a stopped port.
    pub fn new(bars: Bars<R>, mapper: Arc<dyn DmaMapper>, allocator: Allocator, options: Options) -> Result<Self> {
        bringup::open(bars, mapper, allocator, options)
    }

    /// What bring-up learnt.
    pub fn identity(&self) -> &Identity {
        &self.id
    }

    /// Takes and handles what AEQ 0 holds (link events; docs/hw/hinic3.md §6.5), acknowledging where asked.
    pub fn poll_events(&self) {
        let events = {
            let mut c = self.ctrl.lock().unwrap_or_else(|e| e.into_inner());
            let Some(c) = c.as_mut() else { return };
            c.mbox.poll_events_once();
            c.mbox.take_events()
        };
        for e in events {
            if e.module == module::HILINK && e.cmd == mgmt::mag::GET_LINK_STATUS && e.body.len() >= 10 {
                let up = e.body[9] != 0;
                let mut l = self.link.lock().unwrap_or_else(|e| e.into_inner());
                *l = if up {
                    LinkStatus::up(l.speed_mbps.max(self.query_speed().unwrap_or(0)))
                } else {
                    LinkStatus::default()
                };
            }
        }
    }

    /// RX buffers the last stop took back after flushing the RQs (docs/hw/hinic3.md §10.6, §14.6).
    pub fn rx_buffers_flushed(&self) -> usize {
        self.rx_flushed
    }

    /// What the mailbox has sent, by mode (inline when the firmware offers COMM feature bit 3).
    pub fn mailbox_stats(&self) -> crate::mbox::MboxStats {
        let c = self.ctrl.lock().unwrap_or_else(|e| e.into_inner());
        c.as_ref().map(|c| c.mbox.stats()).unwrap_or_default()
    }

    /// The control plane's look for hung SQs (as Linux's netdev watchdog timer), from the reads an application
    /// makes periodically: an SQ whose hardware consumer index stood still short of the producer index of its last
    /// doorbell for the timeout is counted and logged, even if its ring never fills. Memory reads only: the TX
    /// path just publishes its producer index per burst.
    fn watch_tx_hangs(&self) {
        if !self.state.started {
            return;
        }
        let depth = self.state.config.tx_desc as usize;
        for (w, sq) in &self.tx_watch {
            let _ = w.look(sq.hw_ci(depth - 1), sq.pi(), depth);
        }
    }

    /// The TX hang watchdog's verdict since the port started: `Err` ([`crate::Error::TxHang`]) once any SQ was found
    /// hung. An SQ is only re-created with its context (docs/hw/hinic3.md §14.3, §14.4), so the recovery is a port
    /// stop and start, which no longer waits for the hung SQ to drain.
    pub fn check_tx_hangs(&self) -> Result<()> {
        self.watch_tx_hangs();
        match ringkit::watchdog::worst(&self.tx_hang) {
            None => Ok(()),
            Some((hang, _)) => Err(crate::Error::TxHang { hang }.at(&self.options.name)),
        }
    }

    /// Sends a management command and returns its answer.
    pub(crate) fn call(&self, module: u8, cmd: u16, req: &[u8], ok: &[u8]) -> Result<Vec<u8>> {
        let mut c = self.ctrl.lock().unwrap_or_else(|e| e.into_inner());
        let c = c.as_mut().ok_or_else(|| self.state.invalid("the port was closed"))?;
        c.mbox.call(module, cmd, req, ok).map_err(|e| e.at(&self.options.name))
    }

    /// Sends an L2NIC command-queue command.
    pub(crate) fn cmdq(&self, cmd: u8, data: &[u32]) -> Result<()> {
        let mut c = self.ctrl.lock().unwrap_or_else(|e| e.into_inner());
        let c = c.as_mut().ok_or_else(|| self.state.invalid("the port was closed"))?;
        let q = c.cmdq.as_mut().ok_or_else(|| self.state.invalid("no command queue"))?;
        q.send(module::L2NIC, cmd, data).map_err(|e| e.at(&self.options.name))
    }

    fn func(&self) -> u16 {
        self.id.func_id
    }

    fn query_speed(&self) -> Result<u32> {
        let a =
            self.call(module::HILINK, mgmt::mag::GET_PORT_INFO, &mgmt::get_port_info(self.id.cap.port_id).0, &[])?;
        Ok(a.get(16).map(|&c| mgmt::speed_mbps(c)).unwrap_or(0))
    }

    /// MAG 7, and MAG 153 for the speed when up.
    fn query_link(&self) -> Result<LinkStatus> {
        let a =
            self.call(module::HILINK, mgmt::mag::GET_LINK_STATUS, &mgmt::get_link_status(self.id.cap.port_id).0, &[])?;
        let up = a.get(9).copied().unwrap_or(0) != 0;
        Ok(if up { LinkStatus::up(self.query_speed()?) } else { LinkStatus::default() })
    }

    fn rx_mode(&self) -> u32 {
        use mgmt::rx_mode::*;
        let mut m = UCAST | MCAST | BCAST;
        if self.state.allmulticast {
            m |= ALLMULTI;
        }
        if self.state.promiscuous {
            m |= PROMISC;
        }
        m
    }

    fn apply_rx_mode(&self) -> Result<()> {
        if !self.state.started {
            return Ok(());
        }
        self.call(module::L2NIC, mgmt::l2nic::SET_RX_MODE, &mgmt::set_rx_mode(self.func(), self.rx_mode()).0, &[])
            .map(drop)
    }

    /// MAG 151's physical-port counters (docs/hw/hinic3.md §13); zeros when the firmware does not answer.
    fn port_stats(&self) -> PortCounters {
        self.call(module::HILINK, mgmt::mag::GET_PORT_STAT, &mgmt::get_port_stat(self.id.cap.port_id).0, &[])
            .ok()
            .and_then(|a| mgmt::port_stats(&a))
            .map(PortCounters)
            .unwrap_or_default()
    }

    fn vport_stats(&self) -> VportStats {
        self.call(module::L2NIC, mgmt::l2nic::GET_VPORT_STAT, &mgmt::func_only(self.func()).0, &[])
            .ok()
            .and_then(|a| mgmt::vport_stats(&a))
            .map(VportStats)
            .unwrap_or_default()
    }

    fn info_for(name: &str, cap: &DevCap) -> DevInfo {
        DevInfo {
            driver_name: "net_hinic3",
            device_name: name.to_string(),
            max_rx_queues: cap.max_rqs.min(256),
            max_tx_queues: cap.max_sqs.min(256),
            rx_desc_lim: DescLimits { min: 128, max: 16384, align: 1 },
            tx_desc_lim: DescLimits { min: 128, max: 16384, align: 1 },
            min_mtu: 256,
            max_mtu: 9600,
            max_rx_pktlen: 9600 + 14 + 4 + 8,
            rx_offload_capa: offload::RX_CKSUM | offload::RX_SCATTER | offload::RX_RSS_HASH,
            tx_offload_capa: offload::TX_CKSUM | offload::TX_TCP_TSO | offload::TX_MULTI_SEGS,
            flow_type_rss_offloads: RssHashFunctions::ALL,
            reta_size: 256,
            hash_key_size: 40,
            // Only the port's own address is programmed (SET_MAC); extra unicast addresses are not supported yet.
            max_mac_addrs: 1,
            speed_capa: vec![10_000, 25_000, 40_000, 100_000],
            numa_node: None,
        }
    }
}

impl<R: RegisterSpace + 'static> TypedQueues for Hinic3<R> {
    type Rx = Hinic3RxQueue<R>;
    type Tx = Hinic3TxQueue<R>;

    /// Typed RX queue `queue` (static dispatch; once per start).
    fn rx_queue_typed(&mut self, queue: u16) -> Result<Self::Rx> {
        if self.rx_stopped.get(queue as usize) == Some(&true) {
            return Err(self.state.invalid(format!("RX queue {queue} is stopped: rx_queue_start it first")));
        }
        let slot = self.rx.get(queue as usize).cloned();
        self.state.claim_rx(queue, |_| {
            let slot = slot?;
            let ring = lock(&slot).take()?;
            Some(QueueHandle::new(ring, slot))
        })
    }

    /// Typed TX queue `queue` (static dispatch; once per start).
    fn tx_queue_typed(&mut self, queue: u16) -> Result<Self::Tx> {
        if self.tx_stopped.get(queue as usize) == Some(&true) {
            return Err(self.state.invalid(format!("TX queue {queue} is stopped: tx_queue_start it first")));
        }
        let slot = self.tx.get(queue as usize).cloned();
        self.state.claim_tx(queue, |_| {
            let slot = slot?;
            let ring = lock(&slot).take()?;
            Some(QueueHandle::new(ring, slot))
        })
    }
}

impl<R: RegisterSpace + 'static> EthDev for Hinic3<R> {
    fn state(&self) -> &PortState {
        &self.state
    }

    /// TX: the path queue 0 runs when started, else the one the configuration's TX offloads choose.
    fn burst_mode(&self) -> pktio::BurstMode {
        let chosen = self.tx_path.filter(|_| self.state.started);
        ringkit::burst_mode_for(chosen.unwrap_or(ringkit::TxPath::for_offloads(self.state.config.tx_offloads)))
    }

    fn state_mut(&mut self) -> &mut PortState {
        &mut self.state
    }

    fn configure(&mut self, config: &PortConfig) -> Result<()> {
        for (what, n) in [("RX", config.rx_desc), ("TX", config.tx_desc)] {
            if !n.is_power_of_two() {
                return Err(self.state.invalid(format!("{n} {what} descriptors: hinic3 rings are powers of two")));
            }
        }
        self.state.configure(config)?;
        self.reta = (0..256).map(|i| i % config.rx_queues).collect();
        if let Some(key) = config.rss.as_ref().and_then(|r| r.key.as_ref()) {
            if key.len() != 40 {
                return Err(self.state.invalid(format!("RSS key of {} bytes: hinic3 takes 40", key.len())));
            }
            self.rss_key.copy_from_slice(key);
        }
        Ok(())
    }

    fn start(&mut self, pool: &Mempool) -> Result<()> {
        start::start(self, pool)
    }

    fn stop(&mut self) -> Result<()> {
        start::stop(self)
    }

    fn rx_queue(&mut self, queue: u16) -> Result<Box<dyn RxQueue>> {
        Ok(Box::new(self.rx_queue_typed(queue)?))
    }

    fn tx_queue(&mut self, queue: u16) -> Result<Box<dyn TxQueue>> {
        Ok(Box::new(self.tx_queue_typed(queue)?))
    }

    fn link(&self) -> LinkStatus {
        self.watch_tx_hangs();
        self.poll_events();
        self.ack_link_event();
        *self.link.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn link_event_fd(&self) -> Result<std::os::fd::RawFd> {
        self.lsc_raw_fd()
    }

    fn set_mac_addr(&mut self, mac: MacAddr) -> Result<()> {
        if mac == MacAddr::ZERO || mac.is_multicast() {
            return Err(self.state.invalid(format!("{mac} is not a unicast address")));
        }
        let old = self.state.mac;
        if mac != old {
            self.call(module::L2NIC, mgmt::l2nic::SET_MAC, &mgmt::mac(self.func(), 0, mac.octets()).0, &[0x06])?;
            self.call(module::L2NIC, mgmt::l2nic::DEL_MAC, &mgmt::mac(self.func(), 0, old.octets()).0, &[])?;
        }
        self.state.mac = mac;
        Ok(())
    }

    fn set_promiscuous(&mut self, on: bool) -> Result<()> {
        let was = std::mem::replace(&mut self.state.promiscuous, on);
        self.apply_rx_mode().inspect_err(|_| self.state.promiscuous = was)
    }

    fn set_allmulticast(&mut self, on: bool) -> Result<()> {
        let was = std::mem::replace(&mut self.state.allmulticast, on);
        self.apply_rx_mode().inspect_err(|_| self.state.allmulticast = was)
    }

    fn set_mtu(&mut self, mtu: u16) -> Result<()> {
        self.state.info.check_mtu(mtu)?;
        if self.state.started {
            // SET_FUNC_TBL with the MTU bit alone (docs/hw/hinic3.md §7.3).
            self.call(module::L2NIC, mgmt::l2nic::SET_FUNC_TBL, &mgmt::set_func_tbl(self.func(), 0x4, 0, mtu).0, &[])?;
        }
        self.state.set_mtu(mtu)
    }

    fn stats(&self) -> PortStats {
        self.watch_tx_hangs();
        let mut s = self.state.stats();
        let v = self.vport_stats().since(&self.vport_base);
        s.imissed = v.rx_discard();
        // Frames refused for their size never reach the vport: the port's counter (docs/hw/hinic3.md §19).
        s.ierrors += v.rx_err() + self.port_stats().since(&self.port_base).rx_oversize();
        s.oerrors += v.tx_discard() + v.tx_err();
        s
    }

    fn reset_stats(&mut self) {
        self.state.reset_stats();
        self.vport_base = self.vport_stats();
        self.port_base = self.port_stats();
        self.rx_csum_base = self.rx_csum.iter().map(|c| c.get()).collect();
    }

    fn xstats(&self) -> Vec<XStat> {
        let mut x = self.vport_stats().since(&self.vport_base).xstats();
        x.extend(self.port_stats().since(&self.port_base).xstats());
        x.extend(ringkit::watchdog::xstats(&self.tx_hang));
        for (q, (c, base)) in self.rx_csum.iter().zip(&self.rx_csum_base).enumerate() {
            x.push(XStat::new(format!("rx_q{q}_csum_errors"), c.get().wrapping_sub(*base)));
        }
        x
    }

    fn rss_hash_update(&mut self, rss: &RssConfig) -> Result<()> {
        let mut config = self.state.config.clone();
        config.rss = Some(rss.clone());
        if let Some(key) = &rss.key {
            if key.len() != 40 {
                return Err(self.state.invalid(format!("RSS key of {} bytes: hinic3 takes 40", key.len())));
            }
            self.rss_key.copy_from_slice(key);
        }
        self.state.config = config;
        if self.state.started && self.rss_on {
            start::program_rss(self)?;
        }
        Ok(())
    }

    fn rx_queue_stop(&mut self, queue: u16) -> Result<()> {
        queue_ctl::rx_stop(self, queue)
    }

    fn rx_queue_start(&mut self, queue: u16) -> Result<()> {
        queue_ctl::rx_start(self, queue)
    }

    fn tx_queue_stop(&mut self, queue: u16) -> Result<()> {
        queue_ctl::tx_stop(self, queue)
    }

    fn tx_queue_start(&mut self, queue: u16) -> Result<()> {
        queue_ctl::tx_start(self, queue)
    }

    fn reta_update(&mut self, reta: &[u16]) -> Result<()> {
        if reta.len() != 256 || reta.iter().any(|&q| q >= self.state.config.rx_queues) {
            return Err(self.state.invalid("the RSS table has 256 entries, each an RX queue of the port"));
        }
        self.reta = reta.to_vec();
        if self.state.started && self.rss_on {
            start::program_reta(self)?;
        }
        Ok(())
    }
}

impl<R: RegisterSpace> Drop for Hinic3<R> {
    fn drop(&mut self) {
        let _ = start::stop(self);
        bringup::close(self);
    }
}

/// BARs of a hinic3 PF (docs/hw/hinic3.md §2): cfg, mgmt, doorbells.
const BAR_CFG: u32 = 1;
const BAR_MGMT: u32 = 3;
const BAR_DB: u32 = 4;

/// Opens the PF at `addr` through the application's VFIO container ([`open_pci`]: its ID checked, bus mastering on),
/// maps BARs 1, 3 and 4, then [`Hinic3::new`].
pub fn open_vfio(
    vfio: &drvkit::vfio::Vfio,
    addr: drvkit::pci::PciAddress,
    allocator: Allocator,
) -> Result<Hinic3<drvkit::vfio::VfioBar>> {
    let pci = open_pci(vfio, addr, &crate::HINIC3_DRIVER)?;
    let bars = Bars {
        cfg: Arc::new(pci.device.map_bar(BAR_CFG)?),
        mgmt: Some(Arc::new(pci.device.map_bar(BAR_MGMT)?)),
        db: Arc::new(pci.device.map_bar(BAR_DB)?),
    };
    let mut port = Hinic3::new(bars, pci.mapper, allocator, Options::new(&addr.to_string()))?;
    // MSI-X through VFIO (docs/hw/hinic3.md §5.5).
    let device = Arc::new(pci.device);
    port.set_irq_source(device.clone());
    port.keep_alive = Some(Box::new(device));
    Ok(port)
}
