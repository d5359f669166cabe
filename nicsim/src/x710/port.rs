//! The handles a test or a driver holds: the BAR ([`X710Bar`], a `drvkit::bar::RegisterSpace`), the model's side
//! of the [`Model`] trait (what [`X710Port`], the handle every model has, does on this NIC), and the X710's own
//! inspection and faults.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drvkit::bar::RegisterSpace;

use crate::fault::Fault;
use crate::model::{FrameCounts, Model, ModelPort, Plumbing, SharedBar};
use crate::pci::{PciIdentity, VENDOR_INTEL};

use super::regs::*;
use super::{AqRc, Core, Inbound, WireFrame, X710Config, X710Counters, X710RxError, X710State};

/// The model's BAR0: a [`RegisterSpace`] for the driver.
#[derive(Clone)]
pub struct X710Bar {
    shared: Arc<X710State>,
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
            self.shared.io.faults.record(Fault::Register {
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
        if let Some((tx, q)) = doorbell(offset, shared.tx_tail.len()) {
            let tail = if tx { &shared.tx_tail[q] } else { &shared.rx_tail[q] };
            return tail.load(Ordering::Acquire);
        }
        shared.lock().read(shared, offset)
    }

    fn write32(&self, offset: usize, value: u32) {
        if !self.check(offset, "write") {
            return;
        }
        let shared = &self.shared;
        // Tails are the doorbells of the hot path: no model lock (the model thread polls them).
        if let Some((tx, q)) = doorbell(offset, shared.tx_tail.len()) {
            shared.ring_doorbell(tx, q, value);
            return;
        }
        shared.lock().write(shared, offset, value);
        shared.kick();
    }

    fn len(&self) -> usize {
        self.shared.config.bar0_len
    }
}

/// QTX_TAIL(q) or QRX_TAIL(q) of one of this PF's `n` queues: (TX, q).
fn doorbell(offset: usize, n: usize) -> Option<(bool, usize)> {
    [(qtx_tail(0), true), (qrx_tail(0), false)].into_iter().find_map(|(base, tx)| {
        let rel = offset.checked_sub(base)?;
        (rel < 4 * n && rel.is_multiple_of(4)).then_some((tx, rel / 4))
    })
}

/// A handle on one model PF: wires, frame injection, fault injection, stepping and inspection. The handle every
/// model has ([`ModelPort`]) with the X710's own inspection and faults below.
pub type X710Port = ModelPort<X710State>;

/// The model thread of one PF (the one every model has).
pub type X710Thread = crate::model::ModelThread;

/// Constructors of the X710 model.
#[derive(Debug)]
pub struct X710;

impl X710 {
    /// A model PF: its BAR0 for the driver and the port handle for the test.
    #[allow(clippy::new_ret_no_self)] // a device and its handle, like `X540::new`
    pub fn new(config: X710Config) -> (X710Bar, X710Port) {
        let port = X710Port::create(config);
        (port.bar(), port)
    }

    /// Two PFs of one adapter wired back to back: ports 0 and 1, PFs 0 and 1, MACs one apart, disjoint queues.
    pub fn pair(config: X710Config) -> ((X710Bar, X710Port), (X710Bar, X710Port)) {
        let (a, b) = X710Port::create_pair(config);
        ((a.bar(), a), (b.bar(), b))
    }
}

impl Model for X710State {
    type Config = X710Config;
    type RxError = X710RxError;
    type Counters = X710Counters;
    const FAMILY: &'static str = "x710";

    fn build(config: X710Config) -> Arc<Self> {
        assert!(
            config.num_queues > 0 && usize::from(config.first_queue) + usize::from(config.num_queues) <= MAX_QUEUES
        );
        assert!(matches!(config.rss_table_size, 128 | 512), "RSS table size is 128 or 512 (docs/hw/i40e.md §15)");
        let n = usize::from(config.num_queues);
        Arc::new(X710State {
            core: Mutex::new(Core::new(&config)),
            tx_tail: (0..n).map(|_| AtomicU32::new(0)).collect(),
            rx_tail: (0..n).map(|_| AtomicU32::new(0)).collect(),
            tx_qlen: (0..n).map(|_| AtomicU32::new(0)).collect(),
            rx_qlen: (0..n).map(|_| AtomicU32::new(0)).collect(),
            inbound: Mutex::new(Inbound::default()),
            io: Plumbing::new(config.panic_on_fault),
            link_active: AtomicBool::new(config.link_enabled),
            missed: AtomicU64::new(0),
            counters: Mutex::new(X710Counters::default()),
            config,
        })
    }

    fn twin_configs(config: X710Config) -> (X710Config, X710Config) {
        let mut c1 = config.clone();
        c1.port = 1;
        c1.pf_id = 1;
        c1.mac[5] = c1.mac[5].wrapping_add(1);
        c1.first_queue = config.first_queue + config.num_queues;
        (X710Config { port: 0, pf_id: 0, ..config }, c1)
    }

    fn config(&self) -> &X710Config {
        &self.config
    }
    fn unit(&self) -> u16 {
        self.config.pf_id.into()
    }
    fn plumbing(&self) -> &Plumbing<Self> {
        &self.io
    }

    /// What the PF presents on the PCI bus (docs/hw/i40e.md §1): 8086:device, BAR0 and BAR3.
    fn identity(&self) -> PciIdentity {
        let c = &self.config;
        PciIdentity {
            vendor: VENDOR_INTEL,
            device: c.part.device_id(),
            class: 0x02_0000,
            bars: [c.bar0_len, 0, 0, BAR3_LEN, 0, 0],
            msix_vectors: c.msix_vectors,
        }
    }
    /// BAR0, the registers; BAR3 holds the MSI-X table.
    fn bar(self: &Arc<Self>, index: usize) -> Option<SharedBar> {
        (index == 0).then(|| Arc::new(X710Bar { shared: self.clone() }) as SharedBar)
    }
    fn prefetchable(&self) -> bool {
        true
    }
    fn msix_bar(&self) -> usize {
        3 // docs/hw/i40e.md §1: BAR3
    }
    /// PFGEN_CTRL.PFSWR, the PF software reset (docs/hw/i40e.md §4).
    fn function_reset(self: &Arc<Self>) {
        X710Bar { shared: self.clone() }.write32(PFGEN_CTRL, PFGEN_CTRL_PFSWR.mask());
    }

    fn arrive(&self, data: Vec<u8>, error: Option<X710RxError>) -> bool {
        self.receive(WireFrame { data, error })
    }
    fn run_once(self: &Arc<Self>) -> usize {
        self.step()
    }
    fn frames_waiting(&self) -> usize {
        // One lock at a time: the model thread takes the core lock and then the packet buffer's.
        let blocked = usize::from(self.lock().rx_blocked.is_some());
        self.inbound.lock().unwrap_or_else(|e| e.into_inner()).frames.len() + blocked
    }

    /// As PRTMAC_LINKSTA would say.
    fn link_is_up(&self) -> bool {
        self.lock().link_up(self, Instant::now())
    }
    /// Link events on the ARQ if enabled.
    fn flap_link(self: &Arc<Self>, down_for: Duration) {
        let mut core = self.lock();
        core.link.down_until = Some(Instant::now() + down_for);
        core.update_link(self, Instant::now());
    }
    /// Cable (or module) in or out.
    fn plug_cable(self: &Arc<Self>, connected: bool) {
        let mut core = self.lock();
        core.link.cable = connected;
        core.update_link(self, Instant::now());
    }

    fn exact_counters(&self) -> X710Counters {
        *self.counters()
    }
    fn frame_counts(&self) -> FrameCounts {
        let c = *self.counters();
        FrameCounts {
            rx_delivered: c.rx_delivered,
            rx_dropped: c.rx_missed + c.rx_filtered + c.rx_disabled,
            tx_sent: c.tx_sent,
            tx_dropped: c.tx_dropped_link_down,
        }
    }
    fn named_counters(&self) -> Vec<(&'static str, u64)> {
        let c = *self.counters();
        vec![
            ("rx_delivered", c.rx_delivered),
            ("tx_sent", c.tx_sent),
            ("rx_missed", c.rx_missed),
            ("rx_filtered", c.rx_filtered),
            ("rx_disabled", c.rx_disabled),
            ("tx_dropped_link_down", c.tx_dropped_link_down),
            ("aq_commands", c.aq_commands),
            ("arq_events", c.arq_events),
        ]
    }
}

/// What only the X710 model has.
impl ModelPort<X710State> {
    /// Another handle on the BAR.
    pub fn bar(&self) -> X710Bar {
        X710Bar { shared: self.shared.clone() }
    }

    /// Messages signalled so far on each MSI-X vector, whether or not a sink was connected.
    pub fn irq_counts(&self) -> Vec<u64> {
        self.shared.lock().intr.sent.clone()
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
    /// (and ERR) without being executed. Armed until it fires, across PF resets (so it can hit a driver's bring-up).
    pub fn inject_aq_error(&self, opcode: Option<u16>, rc: AqRc) {
        self.inject_aq_errors(opcode, rc, 1);
    }

    /// Fault injection: the next `times` admin commands of `opcode` (or any, with `None`) complete with `rc`
    /// without being executed, e.g. a firmware answering EAGAIN while it is busy with the PHY.
    pub fn inject_aq_errors(&self, opcode: Option<u16>, rc: AqRc, times: u32) {
        self.shared.lock().aq.inject_error(opcode, rc, times);
    }

    /// Fault injection: while stalled, the firmware takes no admin command (ATQH stands still): a command that
    /// never completes. With `critical`, ATQLEN.ATQCRIT reads 1 meanwhile (docs/hw/i40e.md §5.4 step 7).
    pub fn stall_admin_queue(&self, stalled: bool, critical: bool) {
        self.shared.lock().aq.stall(stalled, critical);
        self.shared.kick();
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

    /// The VSI's promiscuous flags (docs/hw/i40e.md §6.8 bits).
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

    /// The port's loopback mode (Set Loopback, docs/hw/i40e.md §7.6; 0: none).
    pub fn loopback(&self) -> u16 {
        self.shared.lock().link.loopback
    }

    /// Fault injection: the port left in loopback `mode` by an earlier user (another driver, a tool): a firmware
    /// setting of the port, which a PF reset keeps.
    pub fn set_loopback(&self, mode: u16) {
        self.shared.lock().link.loopback = mode;
    }

    /// PAUSE_TX (0x01) | PAUSE_RX (0x02) of the current PHY configuration: the flow control in force.
    pub fn flow_control(&self) -> u8 {
        self.shared.lock().link.pause
    }

    /// Opcodes of the admin commands completed so far, in order.
    pub fn aq_log(&self) -> Vec<(u16, AqRc)> {
        self.shared.lock().aq.log.clone()
    }
}
