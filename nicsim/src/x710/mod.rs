//! The behavioural X710 / XL710 / XXV710 model: one PF (one port) per [`X710Port`], written from the project's
//! notes, docs/hw/i40e.md, independently of any i40e driver.
//!
//! Layout: `regs` (the model's register map), `adminq` (both admin rings, every opcode a bring-up uses, checked
//! field by field), `hmc` (segment descriptors and queue-context unpacking), `rx` / `tx` (rings, RSS, filters),
//! `stats` (48/32-bit counters), this module (ports, register semantics, reset, link, queue enable handshakes,
//! wires, the model thread).
//!
//! The firmware works asynchronously, like the real one: an admin command written to the ATQ completes only when
//! the model runs ([`X710Port::step`] or the thread of [`X710Port::start_thread`]); a driver must poll ATQH.

mod adminq;
pub mod hmc;
pub mod regs;
mod rx;
mod stats;
mod tx;

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use crossbeam_queue::SegQueue;
use pktio::bar::RegisterSpace;
use pktio::pcap_file::{self, PcapError, PcapWriter};

use crate::dma::IovaMap;
use crate::fault::{Fault, FaultLog};
use crate::pci::{PciIdentity, VENDOR_INTEL};
use crate::tap::TapWire;
use adminq::AdminQ;
pub use adminq::{flag, opcode, AqRc};
use hmc::{RxCtx, SdTable, TxCtx};
use regs::*;
use stats::Stats;

/// Which member of the 700 series a model port is (docs/hw/i40e.md §1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum X710Part {
    /// X710 10GbE SFP+ (X710-DA2/DA4), device 0x1572.
    #[default]
    X710Sfp,
    /// XL710 40GbE QSFP+ (XL710-Q2), device 0x1583.
    Xl710QsfpA,
    /// XL710 40GbE QSFP+, device 0x1584.
    Xl710QsfpB,
    /// XXV710 25GbE SFP28, device 0x158B.
    Xxv710Sfp28,
}

impl X710Part {
    /// PCI device ID (§1).
    pub fn device_id(self) -> u16 {
        match self {
            X710Part::X710Sfp => 0x1572,
            X710Part::Xl710QsfpA => 0x1583,
            X710Part::Xl710QsfpB => 0x1584,
            X710Part::Xxv710Sfp28 => 0x158B,
        }
    }

    /// Link speed in Mb/s.
    pub fn mbps(self) -> u32 {
        match self {
            X710Part::X710Sfp => 10_000,
            X710Part::Xl710QsfpA | X710Part::Xl710QsfpB => 40_000,
            X710Part::Xxv710Sfp28 => 25_000,
        }
    }

    /// The link speed bit of §7.5.
    pub(crate) fn speed_bit(self) -> u8 {
        match self {
            X710Part::X710Sfp => 0x08,
            X710Part::Xl710QsfpA | X710Part::Xl710QsfpB => 0x10,
            X710Part::Xxv710Sfp28 => 0x40,
        }
    }

    /// The PHY type value of §7.1 reported by Get Link Status: 10GBASE-SR, 40GBASE-SR4, 25GBASE-SR.
    pub(crate) fn phy_type(self) -> u8 {
        match self {
            X710Part::X710Sfp => 0x14,
            X710Part::Xl710QsfpA | X710Part::Xl710QsfpB => 0x19,
            X710Part::Xxv710Sfp28 => 0x21,
        }
    }

    /// PRTMAC_LINKSTA speed code (§7.4): 10G 2, 40G and 25G 3.
    pub(crate) fn linksta_speed(self) -> u32 {
        match self {
            X710Part::X710Sfp => 2,
            _ => 3,
        }
    }
}

/// How to build one model PF.
#[derive(Debug, Clone)]
pub struct X710Config {
    /// The part (device ID and link speed).
    pub part: X710Part,
    /// The port this PF drives (PFGEN_PORTNUM, 0..3); also the GLPRT_* statistics index.
    pub port: u8,
    /// The PF number (PF_FUNC_RID; the HMC function ID).
    pub pf_id: u8,
    /// Permanent MAC address (MAC Address Read, the default MAC filter).
    pub mac: [u8; 6],
    /// Queue pairs of this PF (capabilities 0x41/0x42, PFLAN_QALLOC, GLHMC_LANQMAX).
    pub num_queues: u16,
    /// The first absolute queue of this PF (capabilities' phys_id, PFLAN_QALLOC.FIRSTQ).
    pub first_queue: u16,
    /// MSI-X vectors (capability 0x43).
    pub msix_vectors: u16,
    /// RSS table size (capability 0x40): 128 or 512.
    pub rss_table_size: u16,
    /// Report the flow-director capability (0x45): a DPDK-like driver then keeps PF queue 0 for it.
    pub flow_director: bool,
    /// Firmware version (Get Version fw_major, fw_minor).
    pub fw_version: (u16, u16),
    /// Admin-queue API version (api_major, api_minor).
    pub api_version: (u16, u16),
    /// Firmware build number and ROM version (Get Version).
    pub fw_build: u32,
    /// ROM version (Get Version rom_ver).
    pub rom_ver: u32,
    /// How long PFGEN_CTRL.PFSWR reads 1 after a PF reset request.
    pub reset_delay: Duration,
    /// Time from creation until GLNVM_ULD reports the configuration loaded.
    pub fw_ready_delay: Duration,
    /// Time from QENA_REQ changing until QENA_STAT follows.
    pub queue_enable_delay: Duration,
    /// Link enabled administratively at power-up (as the NVM leaves it); Set PHY Config changes it.
    pub link_enabled: bool,
    /// Panic at the first fault instead of only recording it.
    pub panic_on_fault: bool,
    /// BAR0 size (§1: 8 MiB on an XL710-Q2).
    pub bar0_len: usize,
}

impl Default for X710Config {
    fn default() -> Self {
        X710Config {
            part: X710Part::X710Sfp,
            port: 0,
            pf_id: 0,
            mac: [0x02, 0x00, 0x00, 0x71, 0x00, 0x00],
            num_queues: 64,
            first_queue: 0,
            msix_vectors: 129,
            rss_table_size: 512,
            flow_director: false,
            fw_version: (9, 20),
            api_version: (1, 15),
            fw_build: 0x0001_7710,
            rom_ver: 0x0001_0000,
            reset_delay: Duration::ZERO,
            fw_ready_delay: Duration::ZERO,
            queue_enable_delay: Duration::ZERO,
            link_enabled: true,
            panic_on_fault: false,
            bar0_len: BAR0_LEN,
        }
    }
}

impl X710Config {
    /// A config for `part` with the other defaults.
    pub fn part(part: X710Part) -> Self {
        X710Config { part, ..Default::default() }
    }
}

/// A receive error to inject with a frame ([`X710Port::inject_error`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum X710RxError {
    /// Bad FCS: counted in GLPRT_CRCERRS; written back with error RXE (§10.2).
    Crc,
    /// Written back with error OVERSIZE, as a frame beyond the queue's rxmax is (§10.2).
    Oversize,
}

/// A frame on a wire: Ethernet bytes without FCS, and whether it arrived damaged.
#[derive(Debug, Clone)]
pub(crate) struct WireFrame {
    pub data: Vec<u8>,
    pub error: Option<X710RxError>,
}

/// Where a port's transmitted frames go.
enum Sink {
    Capture,
    Peer(Weak<Shared>),
    Pcap(PcapWriter<BufWriter<File>>),
    Tap(Arc<TapWire>),
}

/// Model-side counters that never clear and never wrap: exact counts for tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct X710Counters {
    /// Frames written to RX descriptors.
    pub rx_delivered: u64,
    /// Frames dropped: packet buffer full.
    pub rx_missed: u64,
    /// Frames dropped by the VSI's MAC/VLAN filters and promiscuous modes.
    pub rx_filtered: u64,
    /// Frames dropped because the target queue was not enabled, the VSI had no queues, or the port was in reset.
    pub rx_disabled: u64,
    /// Frames taken from TX rings and put on the wire.
    pub tx_sent: u64,
    /// Frames completed while the link was down (GLPRT_TDOLD).
    pub tx_dropped_link_down: u64,
    /// Admin commands completed (any return code).
    pub aq_commands: u64,
    /// Events posted on the ARQ.
    pub arq_events: u64,
}

/// Frames waiting in the RX packet buffer.
#[derive(Default)]
struct Inbound {
    frames: VecDeque<WireFrame>,
    bytes: usize,
}

/// RX packet buffer capacity of the model (bytes).
const PACKET_BUFFER: usize = 512 << 10;

/// State shared by the [`X710Bar`], the [`X710Port`] handles and the model thread.
pub(crate) struct Shared {
    config: X710Config,
    core: Mutex<Core>,
    /// QTX_TAIL / QRX_TAIL doorbells, written without the model lock.
    tx_tail: Box<[AtomicU32]>,
    rx_tail: Box<[AtomicU32]>,
    inbound: Mutex<Inbound>,
    faults: Arc<FaultLog>,
    dma: Arc<IovaMap>,
    sink: Mutex<Sink>,
    captured: SegQueue<Vec<u8>>,
    /// Our side of the link is administratively up with the cable in: what a wired peer sees of us.
    link_active: AtomicBool,
    /// Frames dropped at arrival, not yet added to GLPRT_RDPC.
    missed: AtomicU64,
    counters: Mutex<X710Counters>,
    parked: AtomicBool,
    thread: Mutex<Option<Thread>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn kick(&self) {
        if self.parked.load(Ordering::Acquire) {
            if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                t.unpark();
            }
        }
    }

    fn counters(&self) -> MutexGuard<'_, X710Counters> {
        self.counters.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn fault(&self, what: String) {
        self.faults.record(Fault::Protocol { what });
    }

    /// A frame arrives from the wire: into the packet buffer, or dropped if it is full.
    fn receive(&self, frame: WireFrame) -> bool {
        let mut inbound = self.inbound.lock().unwrap_or_else(|e| e.into_inner());
        if inbound.bytes + frame.data.len() > PACKET_BUFFER {
            drop(inbound);
            self.counters().rx_missed += 1;
            // Not counted into GLPRT_RDPC here: a peer calls this holding its own lock, so ours waits for step.
            self.missed.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        inbound.bytes += frame.data.len();
        inbound.frames.push_back(frame);
        drop(inbound);
        self.kick();
        true
    }

    fn peer(&self) -> Option<Arc<Shared>> {
        match &*self.sink.lock().unwrap_or_else(|e| e.into_inner()) {
            Sink::Peer(w) => w.upgrade(),
            _ => None,
        }
    }

    /// Sends a frame out of the MAC (or back into our RX with MAC/PHY loopback).
    fn transmit(&self, frame: WireFrame, loopback: bool) {
        if loopback {
            self.receive(frame);
            return;
        }
        let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *sink {
            Sink::Capture => self.captured.push(frame.data),
            Sink::Peer(w) => {
                if let Some(peer) = w.upgrade() {
                    drop(sink);
                    peer.receive(frame);
                }
            }
            Sink::Pcap(writer) => {
                if let Err(e) = writer.write_packet(pcap_file::now_ns(), &frame.data) {
                    self.fault(format!("pcap wire: {e}"));
                }
            }
            Sink::Tap(tap) => tap.send(&frame.data),
        }
    }

    fn pump_wire(&self) -> usize {
        let tap = match &*self.sink.lock().unwrap_or_else(|e| e.into_inner()) {
            Sink::Tap(tap) => tap.clone(),
            _ => return 0,
        };
        let mut n = 0;
        while n < 64 {
            let Some(data) = tap.recv() else { break };
            self.receive(WireFrame { data, error: None });
            n += 1;
        }
        n
    }

    /// Runs the device and firmware once: link, admin queue, TX rings, RX frames. Returns the work done.
    fn step(&self) -> usize {
        let arrived = self.pump_wire();
        let mut core = self.lock();
        let now = Instant::now();
        let missed = self.missed.swap(0, Ordering::Relaxed);
        if missed > 0 {
            core.stats.add(stat::GLPRT_RDPC + 8 * usize::from(self.config.port), missed);
        }
        core.update_link(self, now);
        if core.in_reset(now) {
            let mut inbound = self.inbound.lock().unwrap_or_else(|e| e.into_inner());
            let n = inbound.frames.len();
            *inbound = Inbound::default();
            drop(inbound);
            self.counters().rx_disabled += n as u64;
            return n + arrived;
        }
        let mut work = arrived + core.process_atq(self);
        work += core.process_tx(self, now);
        work += core.process_rx(self);
        work
    }
}

/// Per-queue enable state: the request bit and when the status follows it (§9.4).
#[derive(Debug, Clone, Copy)]
struct Enable {
    req: bool,
    /// The status the queue is moving to, and from when it reads so.
    target: bool,
    at: Instant,
}

impl Enable {
    fn new() -> Self {
        Enable { req: false, target: false, at: Instant::now() }
    }

    fn stat(&self, now: Instant) -> bool {
        if now >= self.at {
            self.target
        } else {
            !self.target
        }
    }

    fn bits(&self, now: Instant) -> u32 {
        QENA_REQ.val(self.req.into()) | QENA_STAT.val(self.stat(now).into())
    }
}

/// A TX queue.
#[derive(Debug, Clone)]
struct TxQ {
    ena: Enable,
    ctx: Option<TxCtx>,
    head: u32,
    /// A frame being gathered: bytes, data descriptors so far, the first descriptor's command bits and offsets.
    pending: Option<tx::Pending>,
    hung: bool,
    /// GLLAN_TXPRE_QDIS: CLEAR_QDIS announced since the last SET_QDIS (§9.4 step 1).
    qdis_cleared: bool,
}

/// An RX queue.
#[derive(Debug, Clone)]
struct RxQ {
    ena: Enable,
    ctx: Option<RxCtx>,
    head: u32,
}

/// A MAC (and VLAN) filter of the VSI (§6.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MacFilter {
    pub mac: [u8; 6],
    /// `None`: IGNORE_VLAN.
    pub vlan: Option<u16>,
}

/// The PF's main VSI as the firmware keeps it (§6.5, §6.6).
#[derive(Debug, Clone)]
pub(crate) struct Vsi {
    /// The 128-byte properties (software part, bytes 0..95, as last updated).
    pub props: [u8; 128],
    /// First PF queue and number of queues of TC0 (0: no queues mapped yet).
    pub queue_base: u16,
    pub queue_count: u16,
    pub filters: Vec<MacFilter>,
    pub promisc: u16,
    /// Strip VLAN tags into the descriptor (port_vlan_flags EMOD).
    pub strip_vlan: bool,
    /// port_vlan_flags MODE: 1 tagged only, 2 untagged only, 3 all.
    pub vlan_mode: u8,
}

/// Link state (§7).
#[derive(Debug, Clone)]
struct Link {
    enabled: bool,
    cable: bool,
    down_until: Option<Instant>,
    last_up: bool,
    /// Link status events on the ARQ (Get Link Status with LSE enable, §5.5).
    lse: bool,
    /// Set PHY Interrupt Mask (§7.6).
    event_mask: u16,
    max_frame: u16,
    crc_en: bool,
    /// Loopback mode (Set Loopback, §7.6).
    loopback: u16,
}

/// Registers and device state behind the port's lock.
pub(crate) struct Core {
    regs: HashMap<usize, u32>,
    stats: Stats,
    reset_until: Instant,
    fw_ready_at: Instant,
    aq: AdminQ,
    sd: SdTable,
    txq: Vec<TxQ>,
    rxq: Vec<RxQ>,
    vsi: Vsi,
    link: Link,
    /// A frame at the head of the packet buffer waiting for RX descriptors.
    rx_blocked: Option<rx::Classified>,
    hang_all: bool,
    reset_delay: Duration,
}

/// SEIDs and numbers the model's firmware hands out (§6.5, §6.6).
pub(crate) const MAC_SEID_BASE: u16 = 2;
pub(crate) const VSI_SEID_BASE: u16 = 512;
/// Queue-set handle base (a 10-bit rdylist value, §8.5).
pub(crate) const QS_HANDLE_BASE: u16 = 0x40;

impl Vsi {
    fn new(config: &X710Config) -> Vsi {
        let mut props = [0u8; 128];
        // Bytes 12: port_vlan_flags MODE_ALL | EMOD nothing, as firmware leaves an unconfigured VSI.
        props[12] = 0x1B;
        Vsi {
            props,
            queue_base: 0,
            queue_count: 0,
            filters: vec![MacFilter { mac: config.mac, vlan: None }],
            promisc: 0,
            strip_vlan: false,
            vlan_mode: 3,
        }
    }
}

impl Core {
    fn new(config: &X710Config) -> Core {
        let now = Instant::now();
        let n = usize::from(config.num_queues);
        let mut core = Core {
            regs: HashMap::new(),
            stats: Stats::default(),
            reset_until: now,
            fw_ready_at: now + config.fw_ready_delay,
            aq: AdminQ::default(),
            sd: SdTable::default(),
            txq: vec![
                TxQ { ena: Enable::new(), ctx: None, head: 0, pending: None, hung: false, qdis_cleared: false };
                n
            ],
            rxq: vec![RxQ { ena: Enable::new(), ctx: None, head: 0 }; n],
            vsi: Vsi::new(config),
            link: Link {
                enabled: config.link_enabled,
                cable: true,
                down_until: None,
                last_up: false,
                lse: false,
                event_mask: 0,
                max_frame: 9728,
                crc_en: true,
                loopback: 0,
            },
            rx_blocked: None,
            hang_all: false,
            reset_delay: config.reset_delay,
        };
        core.power_on_registers(config);
        core
    }

    fn power_on_registers(&mut self, c: &X710Config) {
        let first = u32::from(c.first_queue);
        let last = first + u32::from(c.num_queues) - 1;
        let fixed = [
            (PFGEN_PORTNUM, PFGEN_PORTNUM_PORT_NUM.val(c.port.into())),
            (PF_FUNC_RID, PF_FUNC_RID_FUNCTION.val(c.pf_id.into())),
            (PFLAN_QALLOC, PFLAN_QALLOC_FIRSTQ.val(first) | PFLAN_QALLOC_LASTQ.val(last) | PFLAN_QALLOC_VALID.val(1)),
            (GLPCI_CNF2, GLPCI_CNF2_MSI_X_PF_N.val(c.msix_vectors.into())),
            (GLHMC_LANTXOBJSZ, 7),
            (GLHMC_LANRXOBJSZ, 5),
            (GLHMC_LANQMAX, GLHMC_CNT.val(c.num_queues.into())),
            (glhmc_sdpart(c.pf_id.into()), GLHMC_SDPART_PMSDBASE.val(0) | GLHMC_SDPART_PMSDSIZE.val(64)),
            (GLQF_CTL, GLQF_CTL_HTOEP.val(1)),
            (PRTMAC_MACC, PRTMAC_MACC_25G.val((c.part == X710Part::Xxv710Sfp28).into())),
        ];
        for (off, v) in fixed {
            self.regs.insert(off, v);
        }
    }

    fn reg(&self, offset: usize) -> u32 {
        self.regs.get(&offset).copied().unwrap_or(0)
    }

    fn set_reg(&mut self, offset: usize, value: u32) {
        self.regs.insert(offset, value);
    }

    fn in_reset(&self, now: Instant) -> bool {
        now < self.reset_until
    }

    /// PF reset (§4.1, §4.2): what the PFR domain holds goes; the firmware also resets the PF's VSI and filters.
    /// CORER registers (QTX_CTL, QRX_TAIL, GLHMC_LAN*, RSS, statistics) and the EMPR admin-queue registers stay.
    fn pf_reset(&mut self, shared: &Shared) {
        let now = Instant::now();
        self.reset_until = now + self.reset_delay;
        for q in self.txq.iter_mut() {
            *q = TxQ { ena: Enable::new(), ctx: None, head: 0, pending: None, hung: false, qdis_cleared: false };
        }
        for q in self.rxq.iter_mut() {
            *q = RxQ { ena: Enable::new(), ctx: None, head: 0 };
        }
        for t in shared.tx_tail.iter() {
            t.store(0, Ordering::Relaxed);
        }
        self.sd = SdTable::default();
        for off in [PFHMC_SDCMD, PFHMC_SDDATALOW, PFHMC_SDDATAHIGH, PFHMC_PDINV, PFINT_DYN_CTL0, PFINT_LNKLST0] {
            self.regs.remove(&off);
        }
        self.regs.retain(|&off, _| {
            !(qtx_ena(0)..qtx_ena(MAX_QUEUES)).contains(&off)
                && !(qrx_ena(0)..qrx_ena(MAX_QUEUES)).contains(&off)
                && !(pfint_lnklstn(0)..pfint_lnklstn(512)).contains(&off)
                && !(pfint_dyn_ctln(0)..pfint_dyn_ctln(512)).contains(&off)
        });
        self.vsi = Vsi::new(&shared.config);
        self.link.lse = false;
        self.link.event_mask = 0;
        self.link.loopback = 0;
        self.rx_blocked = None;
        self.aq.reset_firmware_state();
        let mut inbound = shared.inbound.lock().unwrap_or_else(|e| e.into_inner());
        let lost = inbound.frames.len();
        *inbound = Inbound::default();
        drop(inbound);
        shared.counters().rx_disabled += lost as u64;
    }

    fn link_up(&self, shared: &Shared, now: Instant) -> bool {
        let own = self.link.cable && self.link.enabled && self.link.down_until.is_none_or(|t| now >= t);
        own && shared.peer().is_none_or(|p| p.link_active.load(Ordering::Relaxed))
    }

    /// Re-evaluates the link and posts a link status event on the ARQ when it changed (§5.5).
    fn update_link(&mut self, shared: &Shared, now: Instant) {
        shared.link_active.store(self.link.cable && self.link.enabled, Ordering::Relaxed);
        let up = self.link_up(shared, now);
        if up == self.link.last_up {
            return;
        }
        self.link.last_up = up;
        let icr = self.reg(PFINT_ICR0) | PFINT_ICR0_LINK_STAT_CHANGE.mask();
        self.set_reg(PFINT_ICR0, icr);
        // Mask bit 0x0002 suppresses link up/down events (§7.6).
        if self.link.lse && self.link.event_mask & adminq::PHY_EVENT_LINK_UPDOWN == 0 {
            let params = self.link_status_params(shared, up);
            self.post_event(shared, opcode::GET_LINK_STATUS, params, &[]);
        }
    }

    fn read(&mut self, shared: &Shared, offset: usize) -> u32 {
        let now = Instant::now();
        if let Some(v) = self.stats.read(offset) {
            return v;
        }
        match offset {
            PFGEN_CTRL => PFGEN_CTRL_PFSWR.val(self.in_reset(now).into()),
            GLNVM_ULD => {
                let done = u32::from(now >= self.fw_ready_at);
                GLNVM_ULD_CONF_CORE_DONE.val(done) | GLNVM_ULD_CONF_GLOBAL_DONE.val(done)
            }
            GLGEN_RSTAT | GL_FWSTS => 0,
            PRTMAC_LINKSTA => {
                self.update_link(shared, now);
                if self.link_up(shared, now) {
                    PRTMAC_LINKSTA_UP_BITS | PRTMAC_LINKSTA_SPEED.val(shared.config.part.linksta_speed())
                } else {
                    0
                }
            }
            PFINT_ICR0 => self.regs.remove(&PFINT_ICR0).unwrap_or(0),
            PF_ATQH | PF_ATQT | PF_ATQLEN | PF_ARQH | PF_ARQT | PF_ARQLEN | PF_ATQBAL | PF_ATQBAH | PF_ARQBAL
            | PF_ARQBAH => self.aq.read(offset),
            _ => {
                if let Some((q, kind)) = queue_reg(offset) {
                    if let Some(v) = self.read_queue(shared, q, kind, now) {
                        return v;
                    }
                }
                self.reg(offset)
            }
        }
    }

    fn read_queue(&self, shared: &Shared, q: usize, kind: QReg, now: Instant) -> Option<u32> {
        if q >= self.txq.len() {
            return None;
        }
        Some(match kind {
            QReg::TxEna => self.txq[q].ena.bits(now),
            QReg::RxEna => self.rxq[q].ena.bits(now),
            QReg::TxHead => {
                if self.txq[q].ctx.is_some() {
                    QTX_HEAD_HEAD.val(self.txq[q].head)
                } else {
                    self.reg(qtx_head(q))
                }
            }
            QReg::TxTail => shared.tx_tail[q].load(Ordering::Acquire),
            QReg::RxTail => shared.rx_tail[q].load(Ordering::Acquire),
            QReg::TxCtl => return None,
        })
    }

    fn write(&mut self, shared: &Shared, offset: usize, value: u32) {
        let now = Instant::now();
        if self.in_reset(now) {
            return; // the device ignores writes while the PF resets
        }
        if Stats::owns(offset) {
            return; // read-only counters
        }
        match offset {
            PFGEN_CTRL => {
                if PFGEN_CTRL_PFSWR.is_set(value) {
                    self.pf_reset(shared);
                }
            }
            GLGEN_RTRIG => {
                if value != 0 {
                    shared.fault(format!("GLGEN_RTRIG = {value:#x}: global resets are not modelled (§4.1)"))
                }
            }
            GLNVM_ULD | GLGEN_RSTAT | GL_FWSTS | PRTMAC_LINKSTA | PFGEN_PORTNUM | PF_FUNC_RID | PFLAN_QALLOC
            | GLHMC_LANQMAX | GLHMC_LANTXOBJSZ | GLHMC_LANRXOBJSZ => {
                shared.fault(format!("write of {value:#x} to read-only register {offset:#x}"))
            }
            PF_ATQH | PF_ATQT | PF_ATQLEN | PF_ARQH | PF_ARQT | PF_ARQLEN | PF_ATQBAL | PF_ATQBAH | PF_ARQBAL
            | PF_ARQBAH => self.aq.write(shared, offset, value),
            PFHMC_SDCMD => self.write_sdcmd(shared, value),
            PFINT_ICR0 => {}
            _ if (gllan_txpre_qdis(0)..gllan_txpre_qdis(12)).contains(&offset) => {
                self.write_txpre_qdis(shared, (offset - gllan_txpre_qdis(0)) / 4, value)
            }
            _ => {
                if let Some((q, kind)) = queue_reg(offset) {
                    if q >= self.txq.len() {
                        shared.fault(format!(
                            "queue register {offset:#x} of PF queue {q}, beyond this PF's {} queues (§9.1)",
                            self.txq.len()
                        ));
                        return;
                    }
                    self.write_queue(shared, q, kind, offset, value, now);
                    return;
                }
                self.set_reg(offset, value);
            }
        }
    }

    /// PFHMC_SDCMD with PMSDWR: latch SDDATALOW/HIGH into SD `PMSDIDX` (§8.2, §8.3 step 4).
    fn write_sdcmd(&mut self, shared: &Shared, value: u32) {
        self.set_reg(PFHMC_SDCMD, value);
        if !PFHMC_SDCMD_PMSDWR.is_set(value) {
            return;
        }
        let idx = PFHMC_SDCMD_PMSDIDX.get(value) as usize;
        let part = self.reg(glhmc_sdpart(shared.config.pf_id.into()));
        let size = GLHMC_SDPART_PMSDSIZE.get(part) as usize;
        if idx >= size {
            shared.fault(format!("PFHMC_SDCMD: SD index {idx} outside this function's partition of {size} SDs"));
            return;
        }
        let sd = hmc::Sd::decode(self.reg(PFHMC_SDDATALOW), self.reg(PFHMC_SDDATAHIGH));
        if sd.valid && (sd.bp_count == 0 || sd.bp_count > 512) {
            shared.fault(format!("PFHMC_SDDATALOW: BPCOUNT {} for SD {idx} (1..=512, §8.3)", sd.bp_count));
            return;
        }
        self.sd.sds[idx] = sd;
    }

    /// GLLAN_TXPRE_QDIS(b): announce a TX queue disable (SET_QDIS) or its end (CLEAR_QDIS), §9.4 step 1.
    fn write_txpre_qdis(&mut self, shared: &Shared, block: usize, value: u32) {
        let set = TXPRE_QDIS_SET_QDIS.is_set(value);
        let clear = TXPRE_QDIS_CLEAR_QDIS.is_set(value);
        let stored = value & !(TXPRE_QDIS_SET_QDIS.mask() | TXPRE_QDIS_CLEAR_QDIS.mask());
        self.set_reg(gllan_txpre_qdis(block), stored);
        if !set && !clear {
            return;
        }
        if set && clear {
            shared.fault(format!("GLLAN_TXPRE_QDIS({block}) = {value:#x}: SET_QDIS and CLEAR_QDIS together"));
            return;
        }
        let abs = block * 128 + TXPRE_QDIS_QINDX.get(value) as usize;
        let first = usize::from(shared.config.first_queue);
        let Some(q) = abs.checked_sub(first).filter(|&q| q < self.txq.len()) else {
            shared.fault(format!(
                "GLLAN_TXPRE_QDIS({block}) names absolute queue {abs}, not one of this PF's (first {first}, {} queues; \
                 block = absolute / 128, QINDX = absolute mod 128, §9.1)",
                self.txq.len()
            ));
            return;
        };
        self.txq[q].qdis_cleared = clear;
    }

    fn write_queue(&mut self, shared: &Shared, q: usize, kind: QReg, offset: usize, value: u32, now: Instant) {
        let delay = shared.config.queue_enable_delay;
        match kind {
            QReg::TxTail => {
                let qlen = self.txq[q].ctx.map_or(u32::MAX, |c| c.qlen);
                if value >= qlen {
                    shared.fault(format!("QTX_TAIL({q}) = {value} past the ring of {qlen}"));
                    return;
                }
                shared.tx_tail[q].store(value, Ordering::Release);
            }
            QReg::RxTail => {
                let qlen = self.rxq[q].ctx.map_or(u32::MAX, |c| c.qlen);
                if value >= qlen {
                    shared.fault(format!("QRX_TAIL({q}) = {value} past the ring of {qlen}"));
                    return;
                }
                shared.rx_tail[q].store(value, Ordering::Release);
            }
            QReg::TxHead => {
                if self.txq[q].ena.req || self.txq[q].ena.stat(now) {
                    shared.fault(format!("QTX_HEAD({q}) written while the queue is enabled (§9.1)"));
                    return;
                }
                self.set_reg(offset, value);
            }
            QReg::TxCtl => self.set_reg(offset, value),
            QReg::TxEna => {
                let req = QENA_REQ.is_set(value);
                let busy = self.txq[q].ena.stat(now) != self.txq[q].ena.target;
                if busy {
                    shared.fault(format!("QTX_ENA({q}) written while a change is under way (wait REQ == STAT, §9.4)"));
                }
                if req == self.txq[q].ena.req {
                    return;
                }
                self.txq[q].ena.req = req;
                if req {
                    match self.enable_tx(shared, q) {
                        Ok(()) => self.txq[q].ena = Enable { req, target: true, at: now + delay },
                        Err(why) => shared.fault(format!("QTX_ENA({q}).QENA_REQ: {why}; the queue stays disabled")),
                    }
                } else {
                    if self.txq[q].qdis_cleared {
                        shared.fault(format!(
                            "QTX_ENA({q}) cleared without SET_QDIS announced in GLLAN_TXPRE_QDIS first (§9.4)"
                        ));
                    }
                    self.txq[q].ena = Enable { req, target: false, at: now + delay };
                    self.txq[q].ctx = None;
                    self.txq[q].pending = None;
                }
            }
            QReg::RxEna => {
                let req = QENA_REQ.is_set(value);
                if self.rxq[q].ena.stat(now) != self.rxq[q].ena.target {
                    shared.fault(format!("QRX_ENA({q}) written while a change is under way (wait REQ == STAT, §9.4)"));
                }
                if req == self.rxq[q].ena.req {
                    return;
                }
                self.rxq[q].ena.req = req;
                if req {
                    match self.enable_rx(shared, q) {
                        Ok(()) => self.rxq[q].ena = Enable { req, target: true, at: now + delay },
                        Err(why) => shared.fault(format!("QRX_ENA({q}).QENA_REQ: {why}; the queue stays disabled")),
                    }
                } else {
                    self.rxq[q].ena = Enable { req, target: false, at: now + delay };
                    self.rxq[q].ctx = None;
                    if self.rx_blocked.as_ref().is_some_and(|b| b.queue == Some(q)) {
                        self.rx_blocked = None;
                    }
                }
            }
        }
    }

    /// Reads and checks PF queue `q`'s context through the HMC (§8.3 step 7).
    fn read_context(&mut self, shared: &Shared, q: usize, tx: bool) -> Result<Vec<u8>, String> {
        let f = usize::from(shared.config.pf_id);
        let (base, cnt, len, obj) = if tx {
            (glhmc_lantxbase(f), glhmc_lantxcnt(f), hmc::TX_CTX_LEN, "TX")
        } else {
            (glhmc_lanrxbase(f), glhmc_lanrxcnt(f), hmc::RX_CTX_LEN, "RX")
        };
        let count = GLHMC_CNT.get(self.reg(cnt)) as usize;
        if q >= count {
            return Err(format!("GLHMC_LAN{obj}CNT({f}) = {count} has no context for queue {q} (§8.3 step 6)"));
        }
        let fpm = u64::from(GLHMC_BASE.get(self.reg(base))) * hmc::FPM_BASE_UNIT + (q * len) as u64;
        let iova = match self.sd.translate(&shared.dma, fpm, len) {
            Ok(iova) => iova,
            Err(why) => {
                self.hmc_error(fpm, tx);
                return Err(why);
            }
        };
        let mut obj_bytes = vec![0u8; len];
        shared
            .dma
            .read(iova, &mut obj_bytes, &|| format!("{obj} queue context {q}"))
            .map_err(|_| format!("{obj} context of queue {q} at IOVA {iova:#x} is outside the IOVA map"))?;
        Ok(obj_bytes)
    }

    fn hmc_error(&mut self, fpm: u64, tx: bool) {
        // Object types as the model numbers them: 0 TX context, 1 RX context.
        let info = PFHMC_ERRORINFO_ERROR_DETECTED.val(1) | PFHMC_ERRORINFO_HMC_OBJECT_TYPE.val((!tx).into());
        self.set_reg(PFHMC_ERRORINFO, info);
        self.set_reg(PFHMC_ERRORDATA, (fpm & 0x3FFF_FFFF) as u32);
        let icr = self.reg(PFINT_ICR0) | PFINT_ICR0_HMC_ERR.mask();
        self.set_reg(PFINT_ICR0, icr);
    }

    fn enable_tx(&mut self, shared: &Shared, q: usize) -> Result<(), String> {
        if !self.txq[q].qdis_cleared {
            return Err(
                "no CLEAR_QDIS for it in GLLAN_TXPRE_QDIS since reset or the last SET_QDIS (§9.4 step 1)".into()
            );
        }
        let ctl = self.reg(qtx_ctl(q));
        if QTX_CTL_PFVF_Q.get(ctl) != QTX_CTL_PFVF_Q_PF || QTX_CTL_PF_INDX.get(ctl) != u32::from(shared.config.pf_id) {
            return Err(format!(
                "QTX_CTL({q}) = {ctl:#x}, want PFVF_Q = 2 (PF queue) and PF_INDX = {} (§9.2 step 3)",
                shared.config.pf_id
            ));
        }
        let head = QTX_HEAD_HEAD.get(self.reg(qtx_head(q)));
        let obj = self.read_context(shared, q, true)?;
        let what = format!("TX context of queue {q}");
        let u = hmc::unpack(&obj, hmc::TX_CTX_FIELDS, &what)?;
        let ctx = hmc::tx_ctx(&u, &what, &self.aq.qs_handles(&shared.config))?;
        if head >= ctx.qlen {
            return Err(format!("QTX_HEAD({q}) = {head} past the ring of {}", ctx.qlen));
        }
        let tail = shared.tx_tail[q].load(Ordering::Acquire);
        if tail != head {
            shared.fault(format!("TX queue {q} enabled with tail {tail} != head {head}: stale descriptors would go"));
        }
        self.txq[q].ctx = Some(ctx);
        self.txq[q].head = head;
        self.txq[q].pending = None;
        self.txq[q].hung = self.hang_all || self.txq[q].hung;
        Ok(())
    }

    fn enable_rx(&mut self, shared: &Shared, q: usize) -> Result<(), String> {
        let obj = self.read_context(shared, q, false)?;
        let what = format!("RX context of queue {q}");
        let u = hmc::unpack(&obj, hmc::RX_CTX_FIELDS, &what)?;
        let ctx = hmc::rx_ctx(&u, &what)?;
        let head = u.get("head") as u32;
        if head >= ctx.qlen {
            return Err(format!("{what}: head {head} past the ring"));
        }
        let tail = shared.rx_tail[q].load(Ordering::Acquire);
        if tail >= ctx.qlen {
            return Err(format!("QRX_TAIL({q}) = {tail} past the ring of {}", ctx.qlen));
        }
        self.rxq[q].ctx = Some(ctx);
        self.rxq[q].head = head;
        Ok(())
    }
}

/// Which per-queue register an offset is (§9.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QReg {
    TxEna,
    TxCtl,
    TxTail,
    TxHead,
    RxEna,
    RxTail,
}

fn queue_reg(offset: usize) -> Option<(usize, QReg)> {
    let table = [
        (qtx_ena(0), QReg::TxEna),
        (qtx_ctl(0), QReg::TxCtl),
        (qtx_tail(0), QReg::TxTail),
        (qtx_head(0), QReg::TxHead),
        (qrx_ena(0), QReg::RxEna),
        (qrx_tail(0), QReg::RxTail),
    ];
    table.iter().find_map(|&(base, kind)| {
        let rel = offset.checked_sub(base)?;
        (rel < 4 * MAX_QUEUES && rel.is_multiple_of(4)).then_some((rel / 4, kind))
    })
}

/// The model's BAR0: a [`RegisterSpace`] for the driver.
#[derive(Clone)]
pub struct X710Bar {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for X710Bar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("X710Bar").field("pf_id", &self.shared.config.pf_id).finish()
    }
}

impl X710Bar {
    fn check(&self, offset: usize, what: &str) -> bool {
        let len = self.shared.config.bar0_len;
        if !offset.is_multiple_of(4) || offset + 4 > len {
            self.shared.faults.record(Fault::Register {
                offset,
                what: format!("{what} outside the {len:#x}-byte BAR0 or unaligned"),
            });
            return false;
        }
        true
    }
}

impl RegisterSpace for X710Bar {
    fn read32(&self, offset: usize) -> u32 {
        if !self.check(offset, "read") {
            return 0xFFFF_FFFF;
        }
        let shared = &self.shared;
        shared.lock().read(shared, offset)
    }

    fn write32(&self, offset: usize, value: u32) {
        if !self.check(offset, "write") {
            return;
        }
        let shared = &self.shared;
        shared.lock().write(shared, offset, value);
        shared.kick();
    }

    fn len(&self) -> usize {
        self.shared.config.bar0_len
    }
}

/// A handle on one model PF: wires, frame injection, fault injection, stepping and inspection.
#[derive(Clone)]
pub struct X710Port {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for X710Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("X710Port").field("pf_id", &self.shared.config.pf_id).finish()
    }
}

/// Constructors of the X710 model.
#[derive(Debug)]
pub struct X710;

impl X710 {
    /// A model PF: its BAR0 for the driver and the port handle for the test.
    #[allow(clippy::new_ret_no_self)] // a device and its handle, like `X540::new`
    pub fn new(config: X710Config) -> (X710Bar, X710Port) {
        assert!(
            config.num_queues > 0 && usize::from(config.first_queue) + usize::from(config.num_queues) <= MAX_QUEUES
        );
        assert!(matches!(config.rss_table_size, 128 | 512), "RSS table size is 128 or 512 (§15)");
        let faults = Arc::new(FaultLog::new(config.panic_on_fault));
        let n = usize::from(config.num_queues);
        let shared = Arc::new(Shared {
            core: Mutex::new(Core::new(&config)),
            tx_tail: (0..n).map(|_| AtomicU32::new(0)).collect(),
            rx_tail: (0..n).map(|_| AtomicU32::new(0)).collect(),
            inbound: Mutex::new(Inbound::default()),
            dma: Arc::new(IovaMap::new(faults.clone())),
            faults,
            sink: Mutex::new(Sink::Capture),
            captured: SegQueue::new(),
            link_active: AtomicBool::new(config.link_enabled),
            missed: AtomicU64::new(0),
            counters: Mutex::new(X710Counters::default()),
            parked: AtomicBool::new(false),
            thread: Mutex::new(None),
            config,
        });
        (X710Bar { shared: shared.clone() }, X710Port { shared })
    }

    /// Two PFs of one adapter wired back to back: ports 0 and 1, PFs 0 and 1, MACs one apart, disjoint queues.
    pub fn pair(config: X710Config) -> ((X710Bar, X710Port), (X710Bar, X710Port)) {
        let mut c1 = config.clone();
        c1.port = 1;
        c1.pf_id = 1;
        c1.mac[5] = c1.mac[5].wrapping_add(1);
        c1.first_queue = config.first_queue + config.num_queues;
        let a = X710::new(X710Config { port: 0, pf_id: 0, ..config });
        let b = X710::new(c1);
        a.1.wire_to(&b.1);
        (a, b)
    }
}

impl X710Port {
    /// Another handle on the BAR.
    pub fn bar(&self) -> X710Bar {
        X710Bar { shared: self.shared.clone() }
    }

    /// The IOVA map: give it to the driver as its `DmaMapper`; the model's DMA goes only through it.
    pub fn dma_mapper(&self) -> Arc<IovaMap> {
        self.shared.dma.clone()
    }

    /// What the PF presents on the PCI bus (§1): 8086:device, BAR0 and BAR3.
    pub fn pci_identity(&self) -> PciIdentity {
        let c = &self.shared.config;
        PciIdentity {
            vendor: VENDOR_INTEL,
            device: c.part.device_id(),
            class: 0x02_0000,
            bars: [c.bar0_len, 0, 0, BAR3_LEN, 0, 0],
            msix_vectors: c.msix_vectors,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &X710Config {
        &self.shared.config
    }

    /// Wires this port to another back to back (frames both ways; each sees the other's link).
    pub fn wire_to(&self, other: &X710Port) {
        *self.shared.sink.lock().unwrap_or_else(|e| e.into_inner()) = Sink::Peer(Arc::downgrade(&other.shared));
        *other.shared.sink.lock().unwrap_or_else(|e| e.into_inner()) = Sink::Peer(Arc::downgrade(&self.shared));
    }

    /// Sends transmitted frames to a pcap file instead.
    pub fn wire_to_pcap(&self, path: impl AsRef<Path>) -> Result<(), PcapError> {
        let writer = PcapWriter::create(path)?;
        *self.shared.sink.lock().unwrap_or_else(|e| e.into_inner()) = Sink::Pcap(writer);
        Ok(())
    }

    /// Wires the port to a new TAP interface (the kernel is the link partner); returns its name.
    pub fn wire_to_tap(&self, name: &str) -> std::io::Result<String> {
        let tap = TapWire::open(name)?;
        let ifname = tap.name().to_string();
        *self.shared.sink.lock().unwrap_or_else(|e| e.into_inner()) = Sink::Tap(Arc::new(tap));
        self.shared.kick();
        Ok(ifname)
    }

    /// Flushes a pcap wire.
    pub fn flush_pcap(&self) -> Result<(), PcapError> {
        if let Sink::Pcap(w) = &mut *self.shared.sink.lock().unwrap_or_else(|e| e.into_inner()) {
            w.flush()?;
        }
        Ok(())
    }

    /// Back to capturing transmitted frames for [`X710Port::take_tx`].
    pub fn unwire(&self) {
        *self.shared.sink.lock().unwrap_or_else(|e| e.into_inner()) = Sink::Capture;
    }

    /// A frame (no FCS) arrives on the wire. False if the packet buffer was full.
    pub fn inject(&self, frame: &[u8]) -> bool {
        self.shared.receive(WireFrame { data: frame.to_vec(), error: None })
    }

    /// A damaged frame arrives: it is delivered with the error bit in its write-back.
    pub fn inject_error(&self, frame: &[u8], error: X710RxError) -> bool {
        self.shared.receive(WireFrame { data: frame.to_vec(), error: Some(error) })
    }

    /// Injects every record of a pcap file; returns how many were accepted.
    pub fn inject_pcap(&self, path: impl AsRef<Path>) -> Result<usize, PcapError> {
        let records = pcap_file::read_all(path)?;
        Ok(records.into_iter().filter(|r| self.inject(&r.data)).count())
    }

    /// Frames transmitted while unwired (without FCS), oldest first.
    pub fn take_tx(&self) -> Vec<Vec<u8>> {
        let q = &self.shared.captured;
        (0..q.len()).map_while(|_| q.pop()).collect()
    }

    /// Frames waiting in the packet buffer.
    pub fn rx_pending(&self) -> usize {
        self.shared.inbound.lock().unwrap_or_else(|e| e.into_inner()).frames.len()
            + usize::from(self.shared.lock().rx_blocked.is_some())
    }

    /// Processes everything pending now (admin queue, TX rings, RX frames); returns the work done (0: idle).
    pub fn step(&self) -> usize {
        self.shared.step()
    }

    /// Runs the model in its own thread until the guard drops.
    pub fn start_thread(&self) -> X710Thread {
        let stop = Arc::new(AtomicBool::new(false));
        let shared = self.shared.clone();
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name(format!("nicsim-x710-{}", shared.config.pf_id))
            .spawn(move || {
                *shared.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::thread::current());
                let mut idle = 0u32;
                while !stop2.load(Ordering::Acquire) {
                    if shared.step() > 0 {
                        idle = 0;
                        continue;
                    }
                    idle += 1;
                    if idle < 64 {
                        std::thread::yield_now();
                    } else {
                        // Doorbells are plain atomics: the park is bounded so a tail written without a kick is
                        // still seen promptly.
                        shared.parked.store(true, Ordering::Release);
                        std::thread::park_timeout(Duration::from_micros(200));
                        shared.parked.store(false, Ordering::Release);
                    }
                }
                *shared.thread.lock().unwrap_or_else(|e| e.into_inner()) = None;
            })
            .expect("spawn model thread");
        X710Thread { stop, handle: Some(handle) }
    }

    /// Faults recorded so far.
    pub fn faults(&self) -> Vec<Fault> {
        self.shared.faults.faults()
    }

    /// Removes and returns the faults recorded so far.
    pub fn take_faults(&self) -> Vec<Fault> {
        self.shared.faults.take()
    }

    /// Panics with the list if any fault was recorded.
    #[track_caller]
    pub fn assert_no_faults(&self) {
        self.shared.faults.assert_none()
    }

    /// Turns panic-on-fault on or off.
    pub fn set_panic_on_fault(&self, on: bool) {
        self.shared.faults.set_panic_on_fault(on)
    }

    /// The model's exact counters.
    pub fn counters(&self) -> X710Counters {
        *self.shared.counters()
    }

    /// The current value of a statistics counter by its L register offset (e.g. `stat::GLPRT_UPRC + 8 * port`).
    pub fn stat(&self, l_offset: usize) -> u64 {
        self.shared.lock().stats.get(l_offset)
    }

    /// Fault injection: presets a statistics counter (by its L offset), e.g. just below 2^48 to see it wrap.
    /// Panics if `l_offset` is not a counter.
    pub fn set_stat(&self, l_offset: usize, value: u64) {
        assert!(self.shared.lock().stats.set(l_offset, value), "{l_offset:#x} is not a statistics counter");
    }

    /// Fault injection: the next admin command (of `opcode`, or any with `None`) completes with return code `rc`
    /// (and ERR) without being executed.
    pub fn inject_aq_error(&self, opcode: Option<u16>, rc: AqRc) {
        self.shared.lock().aq.inject_error(opcode, rc);
    }

    /// Fault injection: while stalled, the firmware takes no admin command (ATQH stands still): a command that
    /// never completes. With `critical`, ATQLEN.ATQCRIT reads 1 meanwhile (§5.4 step 7).
    pub fn stall_admin_queue(&self, stalled: bool, critical: bool) {
        self.shared.lock().aq.stall(stalled, critical);
        self.shared.kick();
    }

    /// Fault injection: the link goes down now and comes back after `down_for` (events on the ARQ if enabled).
    pub fn link_flap(&self, down_for: Duration) {
        let mut core = self.shared.lock();
        core.link.down_until = Some(Instant::now() + down_for);
        core.update_link(&self.shared, Instant::now());
        drop(core);
        self.shared.kick();
    }

    /// Fault injection: cable (or module) in or out.
    pub fn set_cable(&self, connected: bool) {
        let mut core = self.shared.lock();
        core.link.cable = connected;
        core.update_link(&self.shared, Instant::now());
        drop(core);
        self.shared.kick();
    }

    /// Whether the link is up now (as PRTMAC_LINKSTA would say).
    pub fn link_up(&self) -> bool {
        let core = self.shared.lock();
        core.link_up(&self.shared, Instant::now())
    }

    /// Fault injection: TX queue `queue` (PF-relative; `None`: every queue, also those enabled later) stops
    /// fetching descriptors, or resumes.
    pub fn tx_hang(&self, queue: Option<usize>, hung: bool) {
        let mut core = self.shared.lock();
        match queue {
            Some(q) => core.txq[q].hung = hung,
            None => {
                core.hang_all = hung;
                core.txq.iter_mut().for_each(|q| q.hung = hung);
            }
        }
        drop(core);
        self.shared.kick();
    }

    /// Sets how long a PF reset lasts (PFGEN_CTRL.PFSWR reads 1 meanwhile).
    pub fn set_reset_delay(&self, delay: Duration) {
        self.shared.lock().reset_delay = delay;
    }

    /// The driver version the driver reported (command 0x0002): (major, minor, build, sub-build, name).
    pub fn driver_version(&self) -> Option<([u8; 4], String)> {
        self.shared.lock().aq.driver_version.clone()
    }

    /// The VSI's MAC filters: (MAC, VLAN or `None` for IGNORE_VLAN).
    pub fn mac_filters(&self) -> Vec<([u8; 6], Option<u16>)> {
        self.shared.lock().vsi.filters.iter().map(|f| (f.mac, f.vlan)).collect()
    }

    /// The VSI's promiscuous flags (§6.8 bits).
    pub fn promiscuous_flags(&self) -> u16 {
        self.shared.lock().vsi.promisc
    }

    /// The VSI's TC0 queue range: (first PF queue, count).
    pub fn vsi_queues(&self) -> (u16, u16) {
        let core = self.shared.lock();
        (core.vsi.queue_base, core.vsi.queue_count)
    }

    /// The MAC's largest frame and CRC insertion, as Set MAC Config left them.
    pub fn mac_config(&self) -> (u16, bool) {
        let core = self.shared.lock();
        (core.link.max_frame, core.link.crc_en)
    }

    /// Opcodes of the admin commands completed so far, in order.
    pub fn aq_log(&self) -> Vec<(u16, AqRc)> {
        self.shared.lock().aq.log.clone()
    }
}

/// Steps every port until none has work left; returns the total work.
pub fn run_until_idle_x710(ports: &[&X710Port]) -> usize {
    let mut total = 0;
    loop {
        let work: usize = ports.iter().map(|p| p.step()).sum();
        if work == 0 {
            return total;
        }
        total += work;
    }
}

/// The model thread of one port; stops (and joins) on drop, re-raising a panic of the thread unless the current
/// thread is already panicking.
#[derive(Debug)]
pub struct X710Thread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl X710Thread {
    /// Stops the thread and returns whether it ended normally.
    pub fn stop(mut self) -> std::thread::Result<()> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> std::thread::Result<()> {
        self.stop.store(true, Ordering::Release);
        match self.handle.take() {
            Some(h) => {
                h.thread().unpark();
                h.join()
            }
            None => Ok(()),
        }
    }
}

impl Drop for X710Thread {
    fn drop(&mut self) {
        if let Err(panic) = self.stop_inner() {
            if !std::thread::panicking() {
                std::panic::resume_unwind(panic);
            }
        }
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("pf_id", &self.config.pf_id).finish()
    }
}
