//! The X540/82599 model's handles: the register space the driver gets ([`SimBar`]), the model's side of the
//! [`Model`] trait (what [`X540Port`], the handle every model has, does on this NIC), the constructors ([`X540`])
//! and the X540's own inspection and faults.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drvkit::bar::RegisterSpace;

use crate::model::{FrameCounts, Model, ModelPort, Plumbing, SharedBar};
use crate::pci::PciIdentity;

use super::regs::*;
use super::*;

/// The model's register space: what the driver gets instead of a VFIO-mapped BAR0. Cheap to clone.
///
/// Writes to the tail registers RDT(i)/TDT(i) are stored without taking the model's lock (they are the doorbells of
/// the hot path); every other access goes through the model under its lock, with the register's side effects
/// (clear-on-read counters, self-clearing reset, semaphores, MDIO).
#[derive(Clone)]
pub struct SimBar {
    shared: Arc<X540State>,
}

impl std::fmt::Debug for SimBar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimBar").field("lan_id", &self.shared.config.lan_id).finish()
    }
}

impl SimBar {
    fn check(&self, offset: usize, what: &str) -> bool {
        if !offset.is_multiple_of(4) || offset + 4 > self.shared.config.bar0_len {
            self.shared.io.faults.record(Fault::Register {
                offset,
                what: format!("{what} outside the {:#x}-byte BAR0 or unaligned", self.shared.config.bar0_len),
            });
            return false;
        }
        true
    }
}

impl RegisterSpace for SimBar {
    fn read32(&self, offset: usize) -> u32 {
        if !self.check(offset, "read") {
            return 0xFFFF_FFFF;
        }
        if offset >= REG_SPACE {
            return 0; // flash window
        }
        if let Some((rx, q)) = X540State::tail_doorbell(offset) {
            let t = if rx { &self.shared.rdt[q] } else { &self.shared.tdt[q] };
            return t.load(Ordering::Acquire);
        }
        let shared = &self.shared;
        shared.lock().read(shared, offset)
    }

    fn write32(&self, offset: usize, value: u32) {
        if !self.check(offset, "write") || offset >= REG_SPACE {
            return;
        }
        if let Some((rx, q)) = X540State::tail_doorbell(offset) {
            let t = if rx { &self.shared.rdt[q] } else { &self.shared.tdt[q] };
            t.store(value, Ordering::Release);
            self.shared.kick();
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

/// A handle on one X540 or 82599 model port: the test's (and the wire's) side of the device. Cheap to clone. The
/// handle every model has ([`ModelPort`]) with the X540's own inspection and faults below.
pub type X540Port = ModelPort<X540State>;

/// Constructors of model X540 ports.
#[derive(Debug)]
pub struct X540;

impl X540 {
    /// One model port: its register space for the driver and a handle for the test. Its TX frames are captured
    /// (see [`ModelPort::take_tx`]) until it is wired elsewhere.
    #[allow(clippy::new_ret_no_self)] // a device and its handle, as the crate docs show
    pub fn new(config: X540Config) -> (SimBar, X540Port) {
        let port = X540Port::create(config);
        (port.bar(), port)
    }

    /// Two ports of one dual-port X540-AT2 (LAN_ID 0 and 1, MACs differing in the last byte), wired back to back.
    pub fn pair(config: X540Config) -> ((SimBar, X540Port), (SimBar, X540Port)) {
        let (a, b) = X540Port::create_pair(config);
        ((a.bar(), a), (b.bar(), b))
    }
}

impl Model for X540State {
    type Config = X540Config;
    type RxError = RxError;
    type Counters = ModelCounters;
    const FAMILY: &'static str = "x540";

    fn build(config: X540Config) -> Arc<Self> {
        let core = Core::new(&config);
        let pb = core.reg(rxpbsize(0)) as usize;
        let shared = Arc::new(X540State {
            core: Mutex::new(core),
            rdt: (0..NUM_QUEUES).map(|_| AtomicU32::new(0)).collect(),
            tdt: (0..NUM_QUEUES).map(|_| AtomicU32::new(0)).collect(),
            inbound: Mutex::new(Inbound::default()),
            pb_capacity: AtomicUsize::new(pb),
            missed_at_arrival: AtomicU64::new(0),
            io: Plumbing::new(config.panic_on_fault),
            phy_active: AtomicBool::new(!config.phy_powered_down),
            counters: Mutex::new(ModelCounters::default()),
            resets: Mutex::new(Vec::new()),
            config,
        });
        shared.lock().update_time(&shared);
        shared
    }

    fn twin_configs(config: X540Config) -> (X540Config, X540Config) {
        let mut c1 = config.clone();
        c1.lan_id = 1;
        c1.mac[5] = c1.mac[5].wrapping_add(1);
        (X540Config { lan_id: 0, ..config }, c1)
    }

    fn config(&self) -> &X540Config {
        &self.config
    }
    fn unit(&self) -> u16 {
        self.config.lan_id.into()
    }
    fn plumbing(&self) -> &Plumbing<Self> {
        &self.io
    }

    /// Vendor 0x8086, device 0x1528 or, for the 82599, 0x10FB; BAR sizes (docs/hw/ixgbe.md §1).
    fn identity(&self) -> PciIdentity {
        match self.config.chip {
            Chip::X540 => PciIdentity::x540(self.config.bar0_len),
            Chip::X82599 => PciIdentity::x82599(self.config.bar0_len),
        }
    }
    /// BAR0 (registers and the flash window); the 82599's I/O BAR2 (indirect access) is not modelled.
    fn bar(self: &Arc<Self>, index: usize) -> Option<SharedBar> {
        (index == 0).then(|| Arc::new(SimBar { shared: self.clone() }) as SharedBar)
    }
    fn prefetchable(&self) -> bool {
        // docs/hw/ixgbe.md §1: the X540's BARs are prefetchable, the 82599's are not listed so.
        self.config.chip == Chip::X540
    }
    fn msix_bar(&self) -> usize {
        4 // docs/hw/ixgbe.md §1
    }
    fn function_reset(self: &Arc<Self>) {
        SimBar { shared: self.clone() }.write32(CTRL, CTRL_RST);
    }

    fn arrive(&self, data: Vec<u8>, error: Option<RxError>) -> bool {
        self.receive(WireFrame { data, error })
    }
    fn run_once(self: &Arc<Self>) -> usize {
        self.step()
    }
    fn frames_waiting(&self) -> usize {
        // One lock at a time: the model thread takes the core lock and then the packet buffer's (as the X710's).
        let blocked = usize::from(self.lock().rx_blocked.is_some());
        self.inbound.lock().unwrap_or_else(|e| e.into_inner()).frames.len() + blocked
    }

    /// True if LINKS would report link up now.
    fn link_is_up(&self) -> bool {
        let mut core = self.lock();
        core.update_time(self);
        core.link_up(self, Instant::now())
    }
    /// On both ends of a wire.
    fn flap_link(self: &Arc<Self>, down_for: Duration) {
        let until = Instant::now() + down_for;
        let peer = self.peer();
        for s in std::iter::once(self).chain(peer.as_ref()) {
            let mut core = s.lock();
            core.link.down_until = Some(until);
            core.update_time(s);
        }
    }
    /// Both ends of a wire see it.
    fn plug_cable(self: &Arc<Self>, connected: bool) {
        let peer = self.peer();
        for s in std::iter::once(self).chain(peer.as_ref()) {
            let mut core = s.lock();
            core.link.cable = connected;
            if connected && core.link.ready_at.is_some() {
                core.renegotiate(&s.config);
            }
            core.update_time(s);
        }
    }

    fn exact_counters(&self) -> ModelCounters {
        *self.counters()
    }
    fn frame_counts(&self) -> FrameCounts {
        let c = *self.counters();
        FrameCounts {
            rx_delivered: c.rx_delivered,
            rx_dropped: c.rx_missed + c.rx_filtered + c.rx_disabled + c.rx_errors,
            tx_sent: c.tx_sent,
            tx_dropped: c.tx_dropped_link_down,
        }
    }
    fn named_counters(&self) -> Vec<(&'static str, u64)> {
        let c = *self.counters();
        let irqs: u64 = self.lock().intr.sent.iter().sum();
        vec![
            ("rx_delivered", c.rx_delivered),
            ("tx_sent", c.tx_sent),
            ("rx_missed", c.rx_missed),
            ("rx_filtered", c.rx_filtered),
            ("rx_disabled", c.rx_disabled),
            ("rx_errors", c.rx_errors),
            ("tx_dropped_link_down", c.tx_dropped_link_down),
            ("irq_messages", irqs),
        ]
    }
}

/// What only the X540 and 82599 models have.
impl ModelPort<X540State> {
    /// Another register-space handle on this port.
    pub fn bar(&self) -> SimBar {
        SimBar { shared: self.shared.clone() }
    }

    /// Interrupt messages signalled so far on each vector (0..63), whether or not a sink was connected.
    pub fn irq_counts(&self) -> [u64; 64] {
        self.shared.lock().intr.sent
    }

    /// True if LINKS would report link up now (the same as [`ModelPort::link_up`]).
    pub fn link_is_up(&self) -> bool {
        self.link_up()
    }

    /// Every reset the driver has requested so far, oldest first, with the shutdown steps that preceded it.
    pub fn resets(&self) -> Vec<ResetRecord> {
        self.shared.resets.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The MAC sends a PAUSE frame (XOFF, or XON to resume), as flow control would: counted in LXOFFTXC/LXONTXC,
    /// GPTC, MPTC, PTC64, TPT and, as 64 bytes, GOTC. The frame itself goes nowhere (a partner's MAC consumes it).
    pub fn send_pause(&self, xoff: bool) {
        self.shared.lock().send_pause(xoff);
    }

    /// Fault: TX queue `queue` (every TX queue if `None`) hangs: its head stops advancing and nothing is sent until
    /// the next reset (CTRL.RST) or [`X540Port::clear_tx_hang`].
    pub fn tx_hang(&self, queue: Option<u16>) {
        let mut core = self.shared.lock();
        match queue {
            Some(q) => core.txq[usize::from(q)].hung = true,
            None => {
                core.hang_all = true;
                core.txq.iter_mut().for_each(|q| q.hung = true);
            }
        }
    }

    /// Ends a TX hang without a reset.
    pub fn clear_tx_hang(&self) {
        let mut core = self.shared.lock();
        core.hang_all = false;
        core.txq.iter_mut().for_each(|q| q.hung = false);
        drop(core);
        self.shared.kick();
    }

    /// Fault: from now on a reset takes `delay` (CTRL.RST reads 1 that long), the one in progress included (it
    /// then ends `delay` after it began). `Duration::ZERO` restores an instantaneous reset.
    pub fn set_reset_delay(&self, delay: Duration) {
        self.shared.lock().set_reset_delay(delay);
    }
}
