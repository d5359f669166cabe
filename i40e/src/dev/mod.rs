//! The 700-series control plane: bring-up in docs/hw/i40e.md §3's order (firmware state, leftovers cleared, PF
//! reset, admin queue, identity and capabilities, HMC, MAC address, switch and main VSI, link events), start and
//! stop of the rings, link, receive modes and MAC filters through the firmware, MTU, RSS, statistics, and the
//! [`EthDev`] implementation. Close (drop) undoes it in reverse and leaves the device as the kernel driver expects
//! to find it.

use pktio::driver::open_pci;
use pktio::TypedQueues;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use drvkit::bar::RegisterSpace;
use drvkit::dma::DmaMapper;
use hugepage::Allocator;
use mempool::Mempool;
use pktio::{
    offload, DevInfo, Error, EthDev, LinkStatus, MacAddr, PortConfig, PortState, PortStats, Result, RssConfig, RxQueue,
    TxQueue, XStat,
};

use crate::adminq::cmds::{self, Opcode};
use crate::adminq::{AdminQueue, AqDesc, Buffer};
use crate::error::{self, Error as DevError};
use crate::hmc::{HmcMode, LanHmc};
use crate::queue::QueueTiming;
use crate::regs::*;
use crate::rxtx::RingConfig;
use crate::rxtx::{RxRing, RxSetup, TxRing, TxSetup, MAX_FRAME};
use crate::stats::{self, HwStats};

mod bringup;
mod control;
mod intr;
#[cfg(test)]
mod tests;
mod vlan;

/// PCI IDs this driver takes (docs/hw/i40e.md §1): every one of the XL710 MAC type, with its fastest speed.
pub const PCI_IDS: &[(u16, u16, u32)] = &[
    (0x8086, 0x1572, 10_000),
    (0x8086, 0x1574, 10_000),
    (0x8086, 0x1580, 40_000),
    (0x8086, 0x1581, 10_000),
    (0x8086, 0x1583, 40_000),
    (0x8086, 0x1584, 40_000),
    (0x8086, 0x1585, 10_000),
    (0x8086, 0x1586, 10_000),
    (0x8086, 0x1587, 20_000),
    (0x8086, 0x1588, 20_000),
    (0x8086, 0x1589, 10_000),
    (0x8086, 0x158A, 25_000),
    (0x8086, 0x158B, 25_000),
    (0x8086, 0x15FF, 10_000),
    (0x8086, 0x101F, 5_000),
    (0x8086, 0x0DD2, 1_000),
    (0x8086, 0x104E, 10_000),
    (0x8086, 0x104F, 10_000),
    (0x8086, 0x0CF8, 10_000),
    (0x8086, 0x0D58, 25_000),
];

/// The fastest speed of a PCI ID this driver takes.
pub fn max_speed_of(vendor: u16, device: u16) -> Option<u32> {
    PCI_IDS.iter().find(|(v, d, _)| *v == vendor && *d == device).map(|(_, _, s)| *s)
}

/// The newest admin-queue API this driver was written for (docs/hw/i40e.md §6.1: API major 1; the headers target 1.15).
pub const API_KNOWN: (u16, u16) = (1, 15);
/// Get PHY Abilities is sent up to this many times while the firmware answers EAGAIN (docs/hw/i40e.md §5.6,
/// DPDK's I40E_MAX_PHY_TIMEOUT in `i40e_aq_get_phy_capabilities`).
pub const PHY_ABILITIES_ATTEMPTS: u32 = 500;
/// An RX-control command (0x0206/0x0207) is sent up to this many times while the firmware answers EAGAIN, before
/// the MMIO fallback (docs/hw/i40e.md §6.11, DPDK's `i40e_read_rx_ctl` / `i40e_write_rx_ctl`: 5 retries).
pub const RX_CTL_ATTEMPTS: u32 = 1 + 5;
/// Largest frame (docs/hw/i40e.md §15).
pub const MAX_FRAME_SIZE: u32 = MAX_FRAME;
/// Header, CRC and two VLAN tags added to the MTU (docs/hw/i40e.md §7.3).
pub const FRAME_OVERHEAD: u32 = 14 + 4 + 2 * 4;
/// The default RSS key (docs/hw/i40e.md §12.2).
pub const DEFAULT_RSS_KEY: [u8; RSS_KEY_LEN] = [
    0x44, 0x39, 0x79, 0x6b, 0xb5, 0x4c, 0x50, 0x23, 0xb6, 0x75, 0xea, 0x5b, 0x12, 0x4f, 0x9f, 0x30, 0xb8, 0xa2, 0xc0,
    0x3d, 0xdf, 0xdc, 0x4d, 0x02, 0xa0, 0x8c, 0x9b, 0x33, 0x4a, 0xf6, 0x4a, 0x4c, 0x05, 0xc6, 0xfa, 0x34, 0x39, 0x58,
    0xd8, 0x55, 0x7d, 0x99, 0x58, 0x3a, 0xe1, 0x38, 0xc9, 0x2e, 0x81, 0x15, 0x03, 0x66,
];

/// Waits and timeouts of the bring-up. The defaults are the hardware's (DPDK's); a model may use shorter ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timing {
    /// Poll step while a global reset finishes (docs/hw/i40e.md §4.1 step 1: 100 ms; the count comes from GRSTDEL).
    pub global_reset_step: Duration,
    /// NVM configuration loaded (docs/hw/i40e.md §4.1 step 2: 1000 x 10 ms).
    pub nvm_ready: Duration,
    /// PFGEN_CTRL.PFSWR clears (docs/hw/i40e.md §4.1 step 3: 1000 x 1 ms).
    pub pf_reset: Duration,
    /// One admin-queue command (docs/hw/i40e.md §5.4: 250 ms).
    pub aq_command: Duration,
    /// Admin-queue poll step (50 µs).
    pub aq_step: Duration,
    /// Get Version attempts and the pause between them (docs/hw/i40e.md §5.3 step 5: 10, 100 ms).
    pub version_attempts: u32,
    /// Pause between Get Version attempts.
    pub version_retry: Duration,
    /// Queue enable/disable.
    pub queue: QueueTiming,
    /// Pause after the TX pre-disable of every queue when clearing leftovers (docs/hw/i40e.md §4.3 step 6: 400 µs).
    pub clear_pre_disable: Duration,
    /// A full TX ring with no completion for this long is a hung queue, restarted ([`ringkit::TxWatchdog`]).
    pub tx_hang: Duration,
    /// Pause before a command the firmware answered EAGAIN is sent again (docs/hw/i40e.md §5.6: 1 ms).
    pub aq_eagain_retry: Duration,
}

impl Timing {
    /// The hardware's.
    pub fn hardware() -> Timing {
        Timing {
            global_reset_step: Duration::from_millis(100),
            nvm_ready: Duration::from_secs(10),
            pf_reset: Duration::from_secs(1),
            aq_command: Duration::from_millis(250),
            aq_step: Duration::from_micros(50),
            version_attempts: 10,
            version_retry: Duration::from_millis(100),
            queue: QueueTiming::HARDWARE,
            clear_pre_disable: Duration::from_micros(400),
            tx_hang: ringkit::DEFAULT_TX_HANG_TIMEOUT,
            aq_eagain_retry: Duration::from_millis(1),
        }
    }

    /// Short poll steps for a model or a fake device that answers at once; the budgets stay the hardware's, so a
    /// busy model thread is waited for, while a prompt one costs no sleeps.
    pub fn fast() -> Timing {
        Timing {
            global_reset_step: Duration::from_millis(1),
            aq_step: Duration::from_micros(5),
            version_retry: Duration::from_millis(10),
            queue: QueueTiming { step: Duration::from_micros(10), pre_cfg: Duration::ZERO, ..QueueTiming::HARDWARE },
            clear_pre_disable: Duration::ZERO,
            ..Timing::hardware()
        }
    }
}

/// How to open a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Device name (PCI address or vdev name).
    pub name: String,
    /// Waits and timeouts.
    pub timing: Timing,
    /// How the LAN HMC is backed.
    pub hmc_mode: HmcMode,
    /// The fastest link speed of the part (from the device ID; [`max_speed_of`]).
    pub max_speed: u32,
}

impl Options {
    /// Hardware defaults for a device called `name` (10G).
    pub fn new(name: impl Into<String>) -> Options {
        Options { name: name.into(), timing: Timing::hardware(), hmc_mode: HmcMode::Auto, max_speed: 10_000 }
    }
}

/// What the firmware reported about the function (docs/hw/i40e.md §6.1, §6.2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    /// Firmware (major, minor).
    pub fw: (u16, u16),
    /// Admin-queue API (major, minor).
    pub api: (u16, u16),
    /// Physical port (PFGEN_PORTNUM).
    pub port: u8,
    /// PF number, the HMC function (PF_FUNC_RID).
    pub pf_id: u8,
    /// Queue pairs of the function (capabilities 0x41/0x42).
    pub queues: u16,
    /// Its first absolute queue.
    pub first_queue: u32,
    /// RSS table size (capability 0x40).
    pub rss_table: u16,
    /// MSI-X vectors.
    pub msix: u32,
    /// The flow director is present (its queue is PF queue 0, docs/hw/i40e.md §6.6).
    pub flow_director: bool,
    /// The permanent MAC (MAC Address Read).
    pub mac: MacAddr,
}

/// The PF's main VSI (docs/hw/i40e.md §6.5, §6.6).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MainVsi {
    /// Its SEID.
    pub seid: u16,
    /// The uplink (MAC) SEID.
    pub uplink: u16,
    /// Its VSI number.
    pub number: u16,
    /// Index of its GLV_* counters.
    pub stat_idx: u16,
    /// Queue-set handle of TC 0 (the TX contexts' rdylist).
    pub qs_handle: u16,
    /// Its first PF queue.
    pub base_queue: u16,
    /// Queues mapped to it (a power of two).
    pub queues: u16,
}

/// RX queue of an i40e port.
pub type I40eRxQueue<R> = RxRing<R>;
/// TX queue of an i40e port.
pub type I40eTxQueue<R> = TxRing<R>;

/// A 700-series port (one PF).
pub struct I40e<R: RegisterSpace> {
    regs: Regs<R>,
    mapper: Arc<dyn DmaMapper>,
    allocator: Allocator,
    options: Options,
    state: PortState,
    aq: Mutex<AdminQueue>,
    hmc: Option<LanHmc>,
    id: Identity,
    vsi: MainVsi,
    rss_key: [u8; RSS_KEY_LEN],
    lut: Vec<u8>,
    rx: Vec<Option<I40eRxQueue<R>>>,
    tx: Vec<Option<I40eTxQueue<R>>>,
    /// The burst TX queue 0 was set up with at the last start (what `burst_mode` reports while started).
    tx_path: Option<ringkit::TxPath>,
    /// What each TX queue's hang watchdog found since the port started.
    tx_hang: Vec<Arc<ringkit::TxHangState>>,
    /// The control plane's watchdog of each TX queue (over the same states), looked at from the stats, xstats,
    /// link and `check_tx_hangs` reads.
    tx_watch: Vec<ringkit::TxWatchdog>,
    link: Mutex<LinkStatus>,
    /// Set MAC Config is to be sent again at the next link-up event: some parts take it only with the link up
    /// (docs/hw/i40e.md §7.3).
    mac_config_on_link_up: std::sync::atomic::AtomicBool,
    hw: Mutex<HwStats>,
    xbase: Vec<u64>,
    /// The port filters by VLAN: its MACs have MAC + VLAN filters, no MAC-only ones (dev/vlan.rs).
    vlan_filtering: bool,
    /// VLAN IDs added with `vlan_filter` (0 is implied while filtering).
    vlans: Vec<u16>,
    /// Where the interrupt vectors go (dev/intr.rs); none: the port only polls.
    irq: Option<Arc<dyn drvkit::irq::IrqSource>>,
    /// The vectors enabled while started (vector i at i).
    vectors: drvkit::irq::IrqVectors,
    /// What must outlive the register space (e.g. the VFIO device behind a mapped BAR).
    keep_alive: Vec<Box<dyn std::any::Any + Send>>,
}

impl<R: RegisterSpace> std::fmt::Debug for I40e<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("I40e").field("name", &self.options.name).field("id", &self.id).field("vsi", &self.vsi).finish()
    }
}

impl<R: RegisterSpace> I40e<R> {
    /// Opens the PF behind `regs`: brings it up to the point where it can be configured and started (docs/hw/i40e.md §3 steps 1
    /// to 17). DMA memory (admin queue, HMC, rings) comes from `allocator` and is made reachable through `mapper`.
    pub fn new(regs: Arc<R>, mapper: Arc<dyn DmaMapper>, allocator: Allocator, options: Options) -> Result<Self> {
        let name = options.name.clone();
        let t = options.timing.clone();
        let aq = AdminQueue::new(&allocator, &mapper, &name, t.aq_command, t.aq_step)?;
        let regs = Regs::new(regs);
        let info = DevInfo::software("net_i40e", &name, 1);
        let mut dev = I40e {
            regs,
            mapper,
            allocator,
            options,
            state: PortState::new(info, MacAddr::ZERO, PortConfig::default()),
            aq: Mutex::new(aq),
            hmc: None,
            id: Identity::default(),
            vsi: MainVsi::default(),
            rss_key: DEFAULT_RSS_KEY,
            lut: Vec::new(),
            rx: Vec::new(),
            tx: Vec::new(),
            tx_path: None,
            tx_hang: Vec::new(),
            tx_watch: Vec::new(),
            link: Mutex::new(LinkStatus::default()),
            mac_config_on_link_up: Default::default(),
            hw: Mutex::new(HwStats::default()),
            xbase: vec![0; stats::COUNTERS.len()],
            vlan_filtering: false,
            vlans: Vec::new(),
            irq: None,
            vectors: Vec::new(),
            keep_alive: Vec::new(),
        };
        dev.bring_up()?;
        Ok(dev)
    }

    /// Keeps `value` alive as long as the port.
    pub fn keep_alive(&mut self, value: Box<dyn std::any::Any + Send>) {
        self.keep_alive.push(value);
    }

    /// The register space.
    pub fn regs(&self) -> &Regs<R> {
        &self.regs
    }

    /// What the firmware reported.
    pub fn identity(&self) -> &Identity {
        &self.id
    }

    /// The main VSI.
    pub fn main_vsi(&self) -> &MainVsi {
        &self.vsi
    }

    /// The LAN HMC (after bring-up).
    pub fn hmc(&self) -> Option<&LanHmc> {
        self.hmc.as_ref()
    }

    pub(super) fn name(&self) -> &str {
        &self.options.name
    }

    pub(super) fn dev_err(&self, e: DevError) -> Error {
        e.at(&self.options.name)
    }

    pub(super) fn timeout(&self, what: &str, register: &'static str, t: PollTimeout, budget: Duration) -> Error {
        self.dev_err(error::timeout(what, register, t.last, budget))
    }

    /// The control plane's look for hung TX queues (as Linux's netdev watchdog timer), from the reads an
    /// application makes periodically: a queue whose head (QTX_HEAD) stood still short of its tail (QTX_TAIL) for
    /// the timeout is counted and logged, even if its ring never fills; the queue's owner restarts it on its next
    /// full-ring burst. Register reads only: the TX path is not involved.
    fn watch_tx_hangs(&self) {
        if !self.state.started {
            return;
        }
        let size = self.state.config.tx_desc as usize;
        for (k, w) in self.tx_watch.iter().enumerate() {
            let q = self.vsi.base_queue + k as u16;
            let head = crate::regs::qtx_head::HEAD.get(self.regs.read(crate::regs::qtx_head(q)));
            let _ = w.look(head as usize, self.regs.read(crate::regs::qtx_tail(q)) as usize, size);
        }
    }

    /// The TX hang watchdog's verdict since the port started: `Err` ([`crate::Error::TxHang`]) once any queue was
    /// found hung (and restarted), naming the last hang.
    pub fn check_tx_hangs(&self) -> Result<()> {
        self.watch_tx_hangs();
        match ringkit::watchdog::worst(&self.tx_hang) {
            None => Ok(()),
            Some((hang, s)) => {
                Err(self.dev_err(DevError::TxHang { hang, restarts: s.restarts.get(), dropped: s.dropped.get() }))
            }
        }
    }

    /// Sends one admin-queue command (see [`AdminQueue::send`]).
    pub(super) fn aq(&self, op: Opcode, params: [u8; 16], buf: Option<Buffer<'_>>, accept: &[u8]) -> Result<AqDesc> {
        let mut aq = self.aq.lock().unwrap_or_else(|e| e.into_inner());
        aq.send(&self.regs, op, params, buf, accept).map_err(|e| self.dev_err(e))
    }

    /// Sends one admin-queue command up to `attempts` times while the firmware answers EAGAIN, pausing
    /// [`Timing::aq_eagain_retry`] between (docs/hw/i40e.md §5.6). The last answer is the result.
    pub(super) fn aq_retry(
        &self,
        op: Opcode,
        params: [u8; 16],
        mut buf: Option<Buffer<'_>>,
        accept: &[u8],
        attempts: u32,
    ) -> std::result::Result<AqDesc, DevError> {
        let mut left = attempts.max(1);
        loop {
            let again = buf.as_mut().map(|b| Buffer { data: &mut *b.data, rd: b.rd });
            let answer = {
                let mut aq = self.aq.lock().unwrap_or_else(|e| e.into_inner());
                aq.send(&self.regs, op, params, again, accept)
            };
            left -= 1;
            match answer {
                Err(DevError::AdminQueue { status, .. }) if status == cmds::status::EAGAIN && left > 0 => {
                    std::thread::sleep(self.options.timing.aq_eagain_retry);
                }
                other => return other,
            }
        }
    }
}

impl<R: RegisterSpace> I40e<R> {
    // ---- start / stop ----

    fn ring_config(&self, size: u16) -> RingConfig {
        let thresh = 32.min(size / 4);
        RingConfig {
            size,
            free_thresh: thresh,
            rs_thresh: thresh,
            timing: self.options.timing.queue,
            tx_hang: self.options.timing.tx_hang,
        }
    }

    fn hw_start(&mut self, pool: &Mempool) -> Result<()> {
        let name = self.options.name.clone();
        let Some(hmc) = self.hmc.as_ref() else { return Err(self.state.invalid("the port was closed")) };
        let base = self.vsi.base_queue;
        let max_frame = (self.state.config.mtu as u32 + FRAME_OVERHEAD).min(MAX_FRAME_SIZE);
        let (rx_cfg, tx_cfg) =
            (self.ring_config(self.state.config.rx_desc), self.ring_config(self.state.config.tx_desc));
        self.rx.clear();
        self.tx.clear();
        let mut tx = Vec::new();
        self.tx_hang = (0..self.state.config.tx_queues).map(|_| Default::default()).collect();
        let timeout = self.options.timing.tx_hang;
        self.tx_watch = (self.tx_hang.iter().enumerate())
            .map(|(k, s)| ringkit::TxWatchdog::new(&name, base + k as u16, timeout, s.clone()))
            .collect();
        for k in 0..self.state.config.tx_queues {
            let q = base + k;
            tx.push(Some(TxRing::new(
                TxSetup {
                    regs: &self.regs,
                    allocator: &self.allocator,
                    mapper: &self.mapper,
                    hmc,
                    pool,
                    queue: q,
                    abs_queue: self.id.first_queue + q as u32,
                    pf_id: self.id.pf_id,
                    qs_handle: self.vsi.qs_handle,
                    stats: self.state.tx_stats(k).expect("a configured queue").clone(),
                    hang: self.tx_hang[k as usize].clone(),
                    port: &name,
                    path: ringkit::TxPath::for_offloads(self.state.config.tx_offloads),
                },
                tx_cfg,
            )?));
        }
        self.tx_path = tx.first().and_then(Option::as_ref).map(TxRing::path);
        let mut rx = Vec::new();
        for k in 0..self.state.config.rx_queues {
            rx.push(Some(RxRing::new(
                RxSetup {
                    regs: &self.regs,
                    allocator: &self.allocator,
                    mapper: &self.mapper,
                    hmc,
                    pool,
                    queue: base + k,
                    port_id: self.state.port_id,
                    max_frame,
                    stats: self.state.rx_stats(k).expect("a configured queue").clone(),
                    port: &name,
                },
                rx_cfg,
            )?));
        }
        self.intr_start(&mut rx)?;
        self.apply_rss();
        let budget = self.options.timing.queue.switch;
        for (k, ring) in rx.iter_mut().flatten().enumerate() {
            ring.enable().map_err(|t| self.timeout(&format!("RX queue {k} enable"), "QRX_ENA", t, budget))?;
        }
        for (k, ring) in tx.iter_mut().flatten().enumerate() {
            ring.enable().map_err(|t| self.timeout(&format!("TX queue {k} enable"), "QTX_ENA", t, budget))?;
        }
        self.rx = rx;
        self.tx = tx;
        self.apply_rx_modes()?;
        self.set_loopback_none()?;
        self.set_phy(true)?;
        self.set_mac_config()?;
        self.mac_config_on_link_up.store(true, std::sync::atomic::Ordering::Relaxed);
        self.poll_events();
        Ok(())
    }

    fn raw_stats(&self) -> PortStats {
        let hw = self.hw_totals();
        let mut s = self.state.queue_counters();
        s.ierrors = stats::IERRORS.iter().map(|&i| hw[i]).sum();
        s.imissed += stats::IMISSED.iter().map(|&i| hw[i]).sum::<u64>();
        s.oerrors += hw[stats::OERRORS];
        s
    }

    /// Where this PF's counters are.
    pub(super) fn stat_index(&self) -> stats::StatIndex {
        stats::StatIndex { port: self.id.port, vsi: self.vsi.stat_idx, pf: self.id.pf_id }
    }

    fn hw_totals(&self) -> Vec<u64> {
        let mut hw = self.hw.lock().unwrap_or_else(|e| e.into_inner());
        hw.update(&self.regs, self.stat_index()).to_vec()
    }

    /// Undoes the bring-up in reverse (docs/hw/i40e.md §3 shutdown): queues off, HMC cleared, Queue Shutdown, admin queue off, PF
    /// reset. Called on drop.
    fn close(&mut self) {
        self.tx.clear();
        self.rx.clear();
        self.intr_stop();
        if let Some(hmc) = self.hmc.take() {
            hmc.clear(&self.regs);
        }
        let mut p = [0u8; 16];
        cmds::QueueShutdownCmd { driver_unloading: 1 }.encode_into(&mut p);
        let _ = self.aq(Opcode::QueueShutdown, p, None, &[]);
        self.aq.get_mut().unwrap_or_else(|e| e.into_inner()).shutdown(&self.regs);
        let _ = self.pf_reset();
    }
}

/// The port's link from a Get Link Status answer or event.
fn link_of(l: &cmds::LinkStatus) -> LinkStatus {
    if l.link_info & cmds::link::LINK_UP == 0 {
        return LinkStatus::default();
    }
    LinkStatus {
        up: true,
        speed_mbps: cmds::link::speed_mbps(l.link_speed),
        full_duplex: true,
        autoneg: l.an_info & cmds::link::AN_COMPLETED != 0,
    }
}

impl<R: RegisterSpace + 'static> TypedQueues for I40e<R> {
    type Rx = I40eRxQueue<R>;
    type Tx = I40eTxQueue<R>;

    /// Typed RX queue `queue` (static dispatch; once per start).
    fn rx_queue_typed(&mut self, queue: u16) -> Result<Self::Rx> {
        self.state.take_rx(queue, &mut self.rx)
    }

    /// Typed TX queue `queue` (static dispatch; once per start).
    fn tx_queue_typed(&mut self, queue: u16) -> Result<Self::Tx> {
        self.state.take_tx(queue, &mut self.tx)
    }
}

impl<R: RegisterSpace + 'static> EthDev for I40e<R> {
    /// TX: the path queue 0 runs when started, else the one the configuration's TX offloads choose.
    fn burst_mode(&self) -> pktio::BurstMode {
        let chosen = self.tx_path.filter(|_| self.state.started);
        ringkit::burst_mode_for(chosen.unwrap_or(ringkit::TxPath::for_offloads(self.state.config.tx_offloads)))
    }

    fn state(&self) -> &PortState {
        &self.state
    }

    fn state_mut(&mut self) -> &mut PortState {
        &mut self.state
    }

    fn configure(&mut self, config: &PortConfig) -> Result<()> {
        let mut key = self.rss_key;
        if let Some(rss) = &config.rss {
            if let Some(k) = &rss.key {
                if k.len() != RSS_KEY_LEN {
                    return Err(self
                        .state
                        .invalid(format!("RSS key of {} bytes; the 700 series takes {RSS_KEY_LEN}", k.len())));
                }
                key.copy_from_slice(k);
            }
        }
        self.state.configure(config)?;
        self.rss_key = key;
        self.fill_lut(config.rx_queues);
        self.state.reset_stats_to(self.raw_stats());
        self.xbase = self.hw_totals();
        Ok(())
    }

    fn start(&mut self, pool: &Mempool) -> Result<()> {
        if self.state.started {
            return Err(Error::Started { port: self.name().to_string() });
        }
        match self.hw_start(pool) {
            Ok(()) => self.state.start_with_pool(pool),
            Err(e) => {
                // Rings made so far disable themselves and give their buffers back as they drop.
                self.tx.clear();
                self.rx.clear();
                self.intr_stop();
                Err(e)
            }
        }
    }

    fn stop(&mut self) -> Result<()> {
        if !self.state.started {
            return Ok(());
        }
        self.state.stop()?;
        // TX first, then RX (docs/hw/i40e.md §9.4); each ring disables its queue as it drops.
        self.tx.clear();
        self.rx.clear();
        self.intr_stop();
        self.mac_config_on_link_up.store(false, std::sync::atomic::Ordering::Relaxed);
        // DPDK takes the link down administratively at stop; start brings it up again.
        self.set_phy(false)
    }

    fn rx_queue(&mut self, queue: u16) -> Result<Box<dyn RxQueue>> {
        Ok(Box::new(self.rx_queue_typed(queue)?))
    }

    fn tx_queue(&mut self, queue: u16) -> Result<Box<dyn TxQueue>> {
        Ok(Box::new(self.tx_queue_typed(queue)?))
    }

    fn link(&self) -> LinkStatus {
        self.watch_tx_hangs();
        self.lsc_ack();
        *self.link.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn link_event_fd(&self) -> Result<std::os::fd::RawFd> {
        self.lsc_fd()
    }

    fn set_link_up(&mut self, up: bool) -> Result<()> {
        self.set_phy(up)
    }

    fn set_mac_addr(&mut self, mac: MacAddr) -> Result<()> {
        if mac == MacAddr::ZERO || mac.is_multicast() {
            return Err(self.state.invalid(format!("{mac} is not a unicast address")));
        }
        let old = self.state.mac;
        if mac != old {
            self.mac_filters(mac, true)?;
            if old != self.id.mac {
                self.mac_filters(old, false)?;
            }
        }
        self.state.mac = mac;
        Ok(())
    }

    fn set_promiscuous(&mut self, on: bool) -> Result<()> {
        let was = std::mem::replace(&mut self.state.promiscuous, on);
        // A mode the firmware refused is not reported as on.
        self.apply_rx_modes().inspect_err(|_| self.state.promiscuous = was)
    }

    fn set_allmulticast(&mut self, on: bool) -> Result<()> {
        let was = std::mem::replace(&mut self.state.allmulticast, on);
        self.apply_rx_modes().inspect_err(|_| self.state.allmulticast = was)
    }

    fn set_mtu(&mut self, mtu: u16) -> Result<()> {
        if self.state.started {
            return Err(self.state.invalid(
                "the MTU of a started 700-series port cannot change: its RX queue contexts hold the largest frame; \
                 stop the port, set the MTU, start it again",
            ));
        }
        self.state.set_mtu(mtu)
    }

    fn stats(&self) -> PortStats {
        self.watch_tx_hangs();
        self.state.since_reset(self.raw_stats())
    }

    fn reset_stats(&mut self) {
        self.state.reset_stats_to(self.raw_stats());
        self.xbase = self.hw_totals();
    }

    fn xstats(&self) -> Vec<XStat> {
        let mut out = self.stats().generic_xstats();
        let hw = self.hw_totals();
        let mut since: Vec<u64> =
            hw.iter().enumerate().map(|(i, v)| v.wrapping_sub(self.xbase.get(i).copied().unwrap_or(0))).collect();
        stats::exclude_crc(&mut since);
        for (d, v) in stats::COUNTERS.iter().zip(since) {
            out.push(XStat::new(d.name, v));
        }
        out.extend(ringkit::watchdog::xstats(&self.tx_hang));
        out
    }

    fn rss_hash_update(&mut self, rss: &RssConfig) -> Result<()> {
        if let Some(k) = &rss.key {
            if k.len() != RSS_KEY_LEN {
                return Err(self
                    .state
                    .invalid(format!("RSS key of {} bytes; the 700 series takes {RSS_KEY_LEN}", k.len())));
            }
            self.rss_key.copy_from_slice(k);
        }
        let cur = self.state.config.rss.get_or_insert_with(RssConfig::default);
        cur.functions = rss.functions;
        if rss.key.is_some() {
            cur.key = rss.key.clone();
        }
        if self.state.started {
            self.apply_rss();
        }
        Ok(())
    }

    fn reta_update(&mut self, table: &[u16]) -> Result<()> {
        let size = self.lut.len();
        if table.is_empty() || !size.is_multiple_of(table.len()) {
            return Err(self.state.invalid(format!(
                "redirection table of {} entries; give {size} (or a divisor of it, repeated)",
                table.len()
            )));
        }
        let limit = self.state.config.rx_queues.min(HLUT_MAX_QUEUE + 1);
        if let Some(bad) = table.iter().find(|&&q| q >= limit) {
            return Err(self
                .state
                .invalid(format!("redirection table entry {bad}: must name one of the first {limit} RX queues")));
        }
        for (e, slot) in self.lut.iter_mut().enumerate() {
            *slot = table[e % table.len()] as u8;
        }
        if self.state.started {
            self.apply_lut();
        }
        Ok(())
    }

    fn vlan_filter(&mut self, vlan_id: u16, on: bool) -> Result<()> {
        self.set_vlan_filter(vlan_id, on)
    }

    fn vlan_filter_enabled(&self) -> bool {
        self.vlan_filtering
    }

    fn set_vlan_filter_enabled(&mut self, on: bool) -> Result<()> {
        self.set_vlan_filtering(on)
    }

    fn mac_addr_add(&mut self, mac: MacAddr, pool: u32) -> Result<()> {
        self.add_mac_addr(mac, pool)
    }

    fn mac_addr_remove(&mut self, mac: MacAddr) -> Result<()> {
        self.remove_mac_addr(mac)
    }
}

impl<R: RegisterSpace> Drop for I40e<R> {
    fn drop(&mut self) {
        self.close();
    }
}

/// Opens the 700-series PF at `addr` through VFIO ([`open_pci`]: its ID checked, bus mastering on; IOMMU or
/// no-IOMMU, as the container was set up), maps BAR0 and brings the port up.
pub fn open_vfio(
    vfio: &drvkit::vfio::Vfio,
    addr: drvkit::pci::PciAddress,
    allocator: Allocator,
) -> Result<I40e<drvkit::vfio::VfioBar>> {
    let pci = open_pci(vfio, addr, &crate::I40E_DRIVER)?;
    let max_speed = max_speed_of(pci.id.vendor, pci.id.device).expect("an ID of the driver's table has a speed");
    let bar = pci.device.map_bar(0)?;
    let options = Options { max_speed, ..Options::new(addr.to_string()) };
    let mut port = I40e::new(Arc::new(bar), pci.mapper, allocator, options)?;
    // MSI-X through VFIO (docs/hw/i40e.md §14.2).
    let device = Arc::new(pci.device);
    port.set_irq_source(device.clone());
    port.keep_alive(Box::new(device));
    Ok(port)
}
