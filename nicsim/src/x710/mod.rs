//! The behavioural X710 / XL710 / XXV710 model: one PF (one port) per [`X710Port`], written from the project's
//! notes, docs/hw/i40e.md, independently of any i40e driver.
//!
//! Layout: `regs` (the model's register map), `adminq` (both admin rings, the generic descriptor checks, ARQ
//! events), `aqdecode` (typed per-opcode decode), `aqcmd` (what each command does), `hmc` (segment descriptors and
//! queue-context unpacking), `core` (register semantics, PF reset, link, queue enable handshakes), `intr` (MSI-X
//! messages), `nvm` (the shadow RAM), `rx` / `tx`
//! (rings, RSS, filters), `stats` (48/32-bit counters), `port` (the BAR and port handles), this module (config,
//! shared state, wires, the model thread).
//!
//! The firmware works asynchronously, like the real one: an admin command written to the ATQ completes only when
//! the model runs ([`X710Port::step`] or the thread of [`X710Port::start_thread`]); a driver must poll ATQH.

mod adminq;
mod aqcmd;
mod aqdecode;
mod core;
pub mod hmc;
mod intr;
mod nvm;
mod port;
pub mod regs;
mod rx;
mod stats;
mod tx;

pub use port::{X710Bar, X710Port, X710Thread, X710};

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::fault::Fault;
use crate::model::Plumbing;
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
    /// PCI device ID (docs/hw/i40e.md §1).
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

    /// The link speed bit of docs/hw/i40e.md §7.5.
    pub(crate) fn speed_bit(self) -> u8 {
        match self {
            X710Part::X710Sfp => 0x08,
            X710Part::Xl710QsfpA | X710Part::Xl710QsfpB => 0x10,
            X710Part::Xxv710Sfp28 => 0x40,
        }
    }

    /// The PHY type value of docs/hw/i40e.md §7.1 reported by Get Link Status: 10GBASE-SR, 40GBASE-SR4, 25GBASE-SR.
    pub(crate) fn phy_type(self) -> u8 {
        match self {
            X710Part::X710Sfp => 0x14,
            X710Part::Xl710QsfpA | X710Part::Xl710QsfpB => 0x19,
            X710Part::Xxv710Sfp28 => 0x21,
        }
    }

    /// Ports of the board (docs/hw/i40e.md §18.2): the model is a two-port card of each part.
    pub(crate) fn ports(self) -> usize {
        2
    }

    /// PRTMAC_LINKSTA speed code (docs/hw/i40e.md §7.4): 10G 2, 40G and 25G 3.
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
    /// The flow-director filters guaranteed to this PF and those it may take best effort from the shared space
    /// (capability 0x45's number and logical_id, docs/hw/i40e.md §6.2). DPDK sizes its filter pool by their sum.
    pub fd_filters: (u32, u32),
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
    /// BAR0 size (docs/hw/i40e.md §1: 8 MiB on an XL710-Q2).
    pub bar0_len: usize,
    /// Set MAC Config takes only while the link is up (docs/hw/i40e.md §7.3: some parts): sent with the link down
    /// it completes OK and changes nothing, so a driver must send it again once the link is up.
    pub mac_config_needs_link: bool,
    /// Flow control the NVM leaves on (Get PHY Abilities' PAUSE_TX 0x01 and PAUSE_RX 0x02, docs/hw/i40e.md §7.1)
    /// until a Set PHY Config changes it.
    pub nvm_pause: u8,
}

/// Flow-director filters (guaranteed, best effort): the device's 8K filter space, 512 of it guaranteed to the PF
/// (docs/hw/i40e.md §6.2: a real NVM's split is **Unverified**).
pub const FD_FILTERS: (u32, u32) = (512, 7680);

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
            fd_filters: FD_FILTERS,
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
            mac_config_needs_link: false,
            nvm_pause: 0,
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
    /// Bad FCS: counted in GLPRT_CRCERRS; written back with error RXE (docs/hw/i40e.md §10.2).
    Crc,
    /// Written back with error OVERSIZE, as a frame beyond the queue's rxmax is (docs/hw/i40e.md §10.2).
    Oversize,
}

/// A frame on this model's wires.
pub(crate) type WireFrame = crate::wire::WireFrame<X710RxError>;

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
    /// RX control registers (docs/hw/i40e.md §6.11) written by MMIO rather than through command 0x0207: from API
    /// 1.5 on a driver uses the command and falls back to MMIO only when it fails.
    pub rx_ctl_mmio_writes: u64,
}

/// The RX packet buffer.
type Inbound = crate::wire::Inbound<X710RxError>;

/// RX packet buffer capacity of the model (bytes).
const PACKET_BUFFER: usize = 512 << 10;

/// State shared by the [`X710Bar`], the [`X710Port`] handles and the model thread (opaque: reached through those
/// handles).
pub struct X710State {
    config: X710Config,
    core: Mutex<Core>,
    /// QTX_TAIL / QRX_TAIL doorbells, written without the model lock.
    tx_tail: Box<[AtomicU32]>,
    rx_tail: Box<[AtomicU32]>,
    /// Ring lengths of the enabled queues (0: no context), so a tail write is checked without the lock.
    tx_qlen: Box<[AtomicU32]>,
    rx_qlen: Box<[AtomicU32]>,
    inbound: Mutex<Inbound>,
    /// Where TX frames go, the thread's parking, the interrupt sink (docs/hw/i40e.md §14.1).
    pub(super) io: Plumbing<X710State>,
    /// Our side of the link is administratively up with the cable in: what a wired peer sees of us.
    link_active: AtomicBool,
    /// Frames dropped at arrival, not yet added to GLPRT_RDPC.
    missed: AtomicU64,
    counters: Mutex<X710Counters>,
}

impl X710State {
    fn lock(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn kick(&self) {
        self.io.kick();
    }

    fn counters(&self) -> MutexGuard<'_, X710Counters> {
        self.counters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A QTX_TAIL / QRX_TAIL write (docs/hw/i40e.md §9.1, §11): stored without the model lock; a tail past an enabled queue's
    /// ring is refused and recorded.
    fn ring_doorbell(&self, tx: bool, q: usize, value: u32) {
        let (tail, qlen, name) = if tx {
            (&self.tx_tail[q], &self.tx_qlen[q], "QTX_TAIL")
        } else {
            (&self.rx_tail[q], &self.rx_qlen[q], "QRX_TAIL")
        };
        let len = qlen.load(Ordering::Acquire);
        if QTAIL.get(value) != value || (len != 0 && value >= len) {
            self.fault(format!("{name}({q}) = {value} past the ring of {len}"));
            return;
        }
        tail.store(value, Ordering::Release);
        self.kick();
    }

    fn fault(&self, what: impl std::fmt::Display) {
        self.io.faults.record(Fault::Protocol { what: what.to_string() });
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

    fn peer(&self) -> Option<Arc<X710State>> {
        self.io.peer()
    }

    /// Sends a frame out of the MAC (or back into our RX with MAC/PHY loopback).
    fn transmit(&self, frame: WireFrame, loopback: bool) {
        if loopback {
            self.receive(frame);
            return;
        }
        self.io.transmit(frame.data, frame.error);
    }

    /// Runs the device and firmware once: link, admin queue, TX rings, RX frames. Returns the work done.
    fn step(&self) -> usize {
        let arrived = self.io.pump(self);
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
        core.intr_tick(self);
        work
    }
}

/// Per-queue enable state: the request bit and when the status follows it (docs/hw/i40e.md §9.4).
#[derive(Debug, Clone, Copy)]
struct Enable {
    req: bool,
    /// The status the queue is moving to, and from when it reads so.
    target: bool,
    at: Instant,
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
    /// GLLAN_TXPRE_QDIS: CLEAR_QDIS announced since the last SET_QDIS (docs/hw/i40e.md §9.4 step 1).
    qdis_cleared: bool,
}

/// An RX queue.
#[derive(Debug, Clone)]
struct RxQ {
    ena: Enable,
    ctx: Option<RxCtx>,
    head: u32,
}

/// A MAC (and VLAN) filter of the VSI (docs/hw/i40e.md §6.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MacFilter {
    pub mac: [u8; 6],
    /// `None`: IGNORE_VLAN.
    pub vlan: Option<u16>,
}

/// The PF's main VSI as the firmware keeps it (docs/hw/i40e.md §6.5, §6.6).
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

/// Link state (docs/hw/i40e.md §7).
#[derive(Debug, Clone)]
struct Link {
    enabled: bool,
    cable: bool,
    down_until: Option<Instant>,
    last_up: bool,
    /// Link status events on the ARQ (Get Link Status with LSE enable, docs/hw/i40e.md §5.5).
    lse: bool,
    /// Set PHY Interrupt Mask (docs/hw/i40e.md §7.6).
    event_mask: u16,
    max_frame: u16,
    crc_en: bool,
    /// Loopback mode (Set Loopback, docs/hw/i40e.md §7.6): a port setting of the firmware, kept across a PF reset.
    loopback: u16,
    /// PAUSE_TX | PAUSE_RX of the current PHY configuration (docs/hw/i40e.md §7.1, §7.2).
    pause: u8,
    /// The PHY types, speeds and extended types of the last Set PHY Config: what Get PHY Abilities reports as the
    /// current configuration (docs/hw/i40e.md §7.1, §7.2; `None`: the NVM's, as at power-up).
    phy_config: Option<(u32, u8, u8)>,
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
    /// Suspend Port TX is in force: no queue transmits until Resume Port TX (docs/hw/i40e.md §6.14).
    tx_suspended: bool,
    reset_delay: Duration,
    /// The NVM shadow RAM behind GLNVM_SRCTL (docs/hw/i40e.md §18.1).
    sr: nvm::ShadowRam,
    intr: intr::Intr,
}

/// SEIDs and numbers the model's firmware hands out (docs/hw/i40e.md §6.5, §6.6).
/// PAUSE_TX (0x01) and PAUSE_RX (0x02) of the PHY abilities byte (docs/hw/i40e.md §7.1).
pub(crate) const PHY_PAUSE_MASK: u8 = 0x03;
pub(crate) const MAC_SEID_BASE: u16 = 2;
pub(crate) const VSI_SEID_BASE: u16 = 512;
/// Queue-set handle base (a 10-bit rdylist value, docs/hw/i40e.md §8.5).
pub(crate) const QS_HANDLE_BASE: u16 = 0x40;

impl std::fmt::Debug for X710State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("X710State").field("pf_id", &self.config.pf_id).finish()
    }
}
