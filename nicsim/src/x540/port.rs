//! The X540/82599 model's handles: the register space the driver gets ([`SimBar`]), the test's handle on a port
//! ([`X540Port`]: wiring, injection, faults, counters), the constructors ([`X540`]) and the model thread.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use drvkit::bar::RegisterSpace;
use swports::pcap_file::{self, PcapError};

use crate::dma::IovaMap;
use crate::fault::FaultLog;
use crate::pci::PciIdentity;
use crate::wire::Wire;

use super::regs::*;
use super::*;

/// The model's register space: what the driver gets instead of a VFIO-mapped BAR0. Cheap to clone.
///
/// Writes to the tail registers RDT(i)/TDT(i) are stored without taking the model's lock (they are the doorbells of
/// the hot path); every other access goes through the model under its lock, with the register's side effects
/// (clear-on-read counters, self-clearing reset, semaphores, MDIO).
#[derive(Clone)]
pub struct SimBar {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SimBar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimBar").field("lan_id", &self.shared.config.lan_id).finish()
    }
}

impl SimBar {
    fn check(&self, offset: usize, what: &str) -> bool {
        if !offset.is_multiple_of(4) || offset + 4 > self.shared.config.bar0_len {
            self.shared.faults.record(Fault::Register {
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
        if let Some((rx, q)) = Shared::tail_doorbell(offset) {
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
        if let Some((rx, q)) = Shared::tail_doorbell(offset) {
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

/// A handle on one model port: the test's (and the wire's) side of the device. Cheap to clone.
#[derive(Clone)]
pub struct X540Port {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for X540Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("X540Port").field("lan_id", &self.shared.config.lan_id).finish()
    }
}

/// Constructors of model X540 ports.
#[derive(Debug)]
pub struct X540;

impl X540 {
    /// One model port: its register space for the driver and a handle for the test. Its TX frames are captured
    /// (see [`X540Port::take_tx`]) until it is wired elsewhere.
    #[allow(clippy::new_ret_no_self)] // a device and its handle, as the crate docs show
    pub fn new(config: X540Config) -> (SimBar, X540Port) {
        let faults = Arc::new(FaultLog::new(config.panic_on_fault));
        let core = Core::new(&config);
        let pb = core.reg(rxpbsize(0)) as usize;
        let shared = Arc::new(Shared {
            core: Mutex::new(core),
            rdt: (0..NUM_QUEUES).map(|_| AtomicU32::new(0)).collect(),
            tdt: (0..NUM_QUEUES).map(|_| AtomicU32::new(0)).collect(),
            inbound: Mutex::new(Inbound::default()),
            pb_capacity: AtomicUsize::new(pb),
            missed_at_arrival: AtomicU64::new(0),
            dma: Arc::new(IovaMap::new(faults.clone())),
            faults,
            wire: Wire::default(),
            phy_active: AtomicBool::new(!config.phy_powered_down),
            counters: Mutex::new(ModelCounters::default()),
            resets: Mutex::new(Vec::new()),
            parked: AtomicBool::new(false),
            thread: Mutex::new(None),
            irq: Mutex::new(None),
            config,
        });
        shared.lock().update_time(&shared);
        (SimBar { shared: shared.clone() }, X540Port { shared })
    }

    /// Two ports of one dual-port X540-AT2 (LAN_ID 0 and 1, MACs differing in the last byte), wired back to back.
    pub fn pair(config: X540Config) -> ((SimBar, X540Port), (SimBar, X540Port)) {
        let mut c1 = config.clone();
        c1.lan_id = 1;
        c1.mac[5] = c1.mac[5].wrapping_add(1);
        let a = X540::new(X540Config { lan_id: 0, ..config });
        let b = X540::new(c1);
        a.1.wire_to(&b.1);
        (a, b)
    }
}

impl X540Port {
    /// Another register-space handle on this port.
    pub fn bar(&self) -> SimBar {
        SimBar { shared: self.shared.clone() }
    }

    /// The port's IOVA map: hand it to the driver as its [`drvkit::dma::DmaMapper`]. The model reaches host memory
    /// only through it.
    pub fn dma_mapper(&self) -> Arc<IovaMap> {
        self.shared.dma.clone()
    }

    /// The PCI identity the model presents (vendor 0x8086, device 0x1528 or, for the 82599, 0x10FB; BAR sizes).
    pub fn pci_identity(&self) -> PciIdentity {
        match self.shared.config.chip {
            Chip::X540 => PciIdentity::x540(self.shared.config.bar0_len),
            Chip::X82599 => PciIdentity::x82599(self.shared.config.bar0_len),
        }
    }

    /// Sends the port's interrupt messages to `sink` (called with the vector: MSI-X vector n, or 0 for MSI/INTx)
    /// instead of nowhere; `None` disconnects it. The model signals from its own thread or the register caller's.
    pub fn set_irq_sink(&self, sink: Option<IrqSink>) {
        *self.shared.irq.lock().unwrap_or_else(|e| e.into_inner()) = sink;
    }

    /// Interrupt messages signalled so far on each vector (0..63), whether or not a sink was connected.
    pub fn irq_counts(&self) -> [u64; 64] {
        self.shared.lock().intr.sent
    }

    /// The configuration the port was built with.
    pub fn config(&self) -> &X540Config {
        &self.shared.config
    }

    /// Connects this port's TX to `other`'s RX and `other`'s TX to this port's RX (a cable). The link state of each
    /// side then also depends on the other's PHY.
    pub fn wire_to(&self, other: &X540Port) {
        Wire::connect((&self.shared.wire, &self.shared), (&other.shared.wire, &other.shared));
    }

    /// Sends this port's TX frames to a pcap file (created or truncated) instead.
    pub fn wire_to_pcap(&self, path: impl AsRef<Path>) -> Result<(), PcapError> {
        self.shared.wire.to_pcap(path)
    }

    /// Wires this port to TAP interface `name` (created, or attached to if it exists and is persistent; a `%d`
    /// lets the kernel number it) and brings the interface up: frames the port transmits are written to the TAP,
    /// frames the kernel sends out of the TAP arrive at the port's RX like [`X540Port::inject`] (read when the
    /// model steps: by [`X540Port::step`] or the model thread). The kernel's end is always there, so the link
    /// depends only on this port. Returns the interface's name; the interface goes away when the port is unwired
    /// or dropped. Needs CAP_NET_ADMIN; the TAP is made in the calling thread's network namespace.
    pub fn wire_to_tap(&self, name: &str) -> std::io::Result<String> {
        let ifname = self.shared.wire.to_tap(name)?;
        self.shared.kick();
        Ok(ifname)
    }

    /// Flushes a pcap sink (call before reading the file while the port lives).
    pub fn flush_pcap(&self) -> Result<(), PcapError> {
        self.shared.wire.flush_pcap()
    }

    /// Captures TX frames again (for [`X540Port::take_tx`]), undoing a wire.
    pub fn unwire(&self) {
        self.shared.wire.unwire();
    }

    /// A frame arrives on the port's wire (Ethernet bytes without FCS). Returns false if the RX packet buffer was
    /// full (counted in MPC). It is filtered and written to an RX ring by the next [`X540Port::step`] or the thread.
    pub fn inject(&self, frame: &[u8]) -> bool {
        self.shared.receive(WireFrame { data: frame.to_vec(), error: None })
    }

    /// A damaged frame arrives: counted in CRCERRS or RLEC and written back with RXE (see
    /// [`X540Config::deliver_bad_frames`]).
    pub fn inject_error(&self, frame: &[u8], error: RxError) -> bool {
        self.shared.receive(WireFrame { data: frame.to_vec(), error: Some(error) })
    }

    /// Injects every record of a pcap file; returns how many were accepted into the packet buffer.
    pub fn inject_pcap(&self, path: impl AsRef<Path>) -> Result<usize, PcapError> {
        let records = pcap_file::read_all(path)?;
        Ok(records.into_iter().filter(|r| self.inject(&r.data)).count())
    }

    /// Frames transmitted while unwired (Ethernet bytes without FCS), oldest first; empties the capture.
    pub fn take_tx(&self) -> Vec<Vec<u8>> {
        self.shared.wire.take_captured()
    }

    /// Frames waiting in the RX packet buffer (not yet written to a ring).
    pub fn rx_pending(&self) -> usize {
        // One lock at a time: the model thread takes the core lock and then the packet buffer's (as X710Port's).
        let blocked = usize::from(self.shared.lock().rx_blocked.is_some());
        self.shared.inbound.lock().unwrap_or_else(|e| e.into_inner()).frames.len() + blocked
    }

    /// Processes everything pending once: TX rings up to their tails (frames go to the wire), then RX frames from
    /// the packet buffer into RX rings while descriptors last. Returns the work done (0 = idle). For wired ports use
    /// [`run_until_idle`] so that frames crossing the wire get received too.
    pub fn step(&self) -> usize {
        self.shared.step()
    }

    /// Runs the model in its own thread, like hardware, until the returned guard is dropped. Do not call
    /// [`X540Port::step`] meanwhile (it would work, but the point of the thread is asynchrony).
    pub fn start_thread(&self) -> ModelThread {
        let stop = Arc::new(AtomicBool::new(false));
        let shared = self.shared.clone();
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name(format!("nicsim-x540-{}", shared.config.lan_id))
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
                        shared.parked.store(true, Ordering::Release);
                        std::thread::park_timeout(Duration::from_micros(200));
                        shared.parked.store(false, Ordering::Release);
                    }
                }
                *shared.thread.lock().unwrap_or_else(|e| e.into_inner()) = None;
            })
            .expect("spawn model thread");
        ModelThread { stop, handle: Some(handle), shared: self.shared.clone() }
    }

    /// Faults recorded so far (DMA outside the IOVA map, register misuse, protocol violations).
    pub fn faults(&self) -> Vec<Fault> {
        self.shared.faults.faults()
    }

    /// Removes and returns the faults recorded so far (for tests that provoke one on purpose).
    pub fn take_faults(&self) -> Vec<Fault> {
        self.shared.faults.take()
    }

    /// Panics listing the faults, if any.
    #[track_caller]
    pub fn assert_no_faults(&self) {
        self.shared.faults.assert_none()
    }

    /// Turns panic-on-fault on or off at run time.
    pub fn set_panic_on_fault(&self, on: bool) {
        self.shared.faults.set_panic_on_fault(on)
    }

    /// Model-side counters (never cleared).
    pub fn counters(&self) -> ModelCounters {
        *self.shared.counters()
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

    /// True if LINKS would report link up now.
    pub fn link_is_up(&self) -> bool {
        let shared = &self.shared;
        let mut core = shared.lock();
        core.update_time(shared);
        core.link_up(shared, Instant::now())
    }

    /// Fault: the link goes down now (on both ends of a wire) and comes back after `down_for`.
    pub fn link_flap(&self, down_for: Duration) {
        let until = Instant::now() + down_for;
        let peer = self.shared.peer();
        for s in std::iter::once(&self.shared).chain(peer.as_ref()) {
            let mut core = s.lock();
            core.link.down_until = Some(until);
            core.update_time(s);
        }
    }

    /// Plugs or unplugs the cable (both ends of a wire see it).
    pub fn set_cable(&self, connected: bool) {
        let peer = self.shared.peer();
        for s in std::iter::once(&self.shared).chain(peer.as_ref()) {
            let mut core = s.lock();
            core.link.cable = connected;
            if connected && core.link.ready_at.is_some() {
                core.renegotiate(&s.config);
            }
            core.update_time(s);
        }
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

/// Processes the given ports stepwise until none has work left (frames crossing wires included). Returns the total
/// work done. For deterministic tests of wired ports.
pub fn run_until_idle(ports: &[&X540Port]) -> usize {
    let mut total = 0;
    loop {
        let work: usize = ports.iter().map(|p| p.step()).sum();
        if work == 0 {
            return total;
        }
        total += work;
    }
}

/// The model thread of one port; stops (and joins) on drop, re-raising a panic of the thread (e.g. from
/// panic-on-fault) unless the current thread is already panicking.
#[derive(Debug)]
pub struct ModelThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl ModelThread {
    /// Stops the thread and returns whether it ended normally.
    pub fn stop(mut self) -> std::thread::Result<()> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> std::thread::Result<()> {
        self.stop.store(true, Ordering::Release);
        self.shared.parked.store(true, Ordering::Release);
        self.shared.kick();
        match self.handle.take() {
            Some(h) => {
                if let Some(t) = Some(h.thread().clone()) {
                    t.unpark();
                }
                h.join()
            }
            None => Ok(()),
        }
    }
}

impl Drop for ModelThread {
    fn drop(&mut self) {
        if let Err(panic) = self.stop_inner() {
            if !std::thread::panicking() {
                std::panic::resume_unwind(panic);
            }
        }
    }
}
