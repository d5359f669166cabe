//! The one shape of every model: the [`Model`] trait a NIC model implements for its per-port state, and what every
//! model gets from it, written once: the port handle [`ModelPort`] (wires to a twin, a pcap file or a TAP; frame
//! injection and capture; stepping and the model thread; faults; counters; PCI identity and every BAR), the
//! [`ModelThread`] guard, [`run_until_idle`], and the [`Plumbing`] a model's state embeds (its wire, the thread's
//! parking, the interrupt sink).
//!
//! A model implements only what is its NIC's: how to build a port and a wired twin from its configuration, its PCI
//! identity and BARs, what a function-level reset does, how a frame arrives and what one step of the device does,
//! its link and its counters. The consumers (simports' `net_sim_*` vdevs, the vfio-user server, the drivers' tests)
//! are written over `ModelPort<S: Model>`, so a new model is served by all of them once it implements the trait and
//! its driver's `src/sim.rs` (a [`crate::vdev::SimDriver`]) is on simports' model list.

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

use drvkit::bar::RegisterSpace;
use swports::pcap_file::{self, PcapError};

use crate::dma::IovaMap;
use crate::fault::{Fault, FaultLog};
use crate::pci::PciIdentity;
use crate::wire::{Sent, Wire};

/// Where a model's interrupt messages go: called with the vector number (0 for MSI/INTx).
pub type IrqSink = Arc<dyn Fn(u16) + Send + Sync>;

/// A register space a BAR of a model hands out (to a driver, or to a vfio-user client).
pub type SharedBar = Arc<dyn RegisterSpace>;

/// Frames counted the same way by every model: what a test or a stats file compares across NICs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameCounts {
    /// Frames written to RX buffers.
    pub rx_delivered: u64,
    /// Frames that arrived and were not delivered (filtered, no buffer, queue off, bad).
    pub rx_dropped: u64,
    /// Frames taken from TX rings and put on the wire.
    pub tx_sent: u64,
    /// Frames taken from TX rings and dropped (link down, TX off).
    pub tx_dropped: u64,
}

/// What a NIC model implements, for the state one port (PCI function) of it shares between its BAR handles, its
/// [`ModelPort`] handles and its thread. Everything else a model port does is written once, in [`ModelPort`].
pub trait Model: Send + Sync + Sized + 'static {
    /// How to build one port.
    type Config: Clone + Send + 'static;
    /// A receive error a test injects with a frame.
    type RxError: Copy + Send + fmt::Debug + 'static;
    /// The model's own exact counters.
    type Counters: Copy + fmt::Debug + PartialEq + 'static;
    /// The family's short name: model thread names (`nicsim-<family>-<unit>`), debug output.
    const FAMILY: &'static str;

    /// One port, powered up, unwired (its TX frames captured).
    fn build(config: Self::Config) -> Arc<Self>;
    /// The configurations of two ports of one card (or two cards) to be wired back to back: distinct MACs, port
    /// numbers and queue ranges as the NIC has them.
    fn twin_configs(config: Self::Config) -> (Self::Config, Self::Config);
    /// The configuration the port was built with.
    fn config(&self) -> &Self::Config;
    /// The port's number on its card (LAN ID, PF number, function ID): thread names and debug output.
    fn unit(&self) -> u16;
    /// The shared plumbing the state embeds (with the port's fault log and IOVA map).
    fn plumbing(&self) -> &Plumbing<Self>;

    /// What the function presents on the PCI bus (IDs, BAR sizes, MSI-X vectors).
    fn identity(&self) -> PciIdentity;
    /// BAR `index`'s register space (`None`: not a register BAR of this model; the MSI-X BAR is plain memory
    /// that whoever emulates the config space keeps).
    fn bar(self: &Arc<Self>, index: usize) -> Option<SharedBar>;
    /// Whether the memory BARs are prefetchable.
    fn prefetchable(&self) -> bool;
    /// The BAR holding the MSI-X table and PBA.
    fn msix_bar(&self) -> usize;
    /// A function-level reset (what the device does when software or the host resets it).
    fn function_reset(self: &Arc<Self>);

    /// A frame arrives from the wire (Ethernet bytes without FCS), damaged if `error`: false if the port's
    /// packet buffer was full.
    fn arrive(&self, frame: Vec<u8>, error: Option<Self::RxError>) -> bool;
    /// Processes everything pending now; returns the work done (0: idle). A model takes in a TAP wire's frames
    /// first (the plumbing's `pump`).
    fn run_once(self: &Arc<Self>) -> usize;
    /// Frames waiting at the MAC for RX descriptors.
    fn frames_waiting(&self) -> usize;

    /// Whether the link is up now.
    fn link_is_up(&self) -> bool;
    /// Fault: the link goes down now and comes back after `down_for`.
    fn flap_link(self: &Arc<Self>, down_for: Duration);
    /// Plugs or pulls the cable.
    fn plug_cable(self: &Arc<Self>, connected: bool);

    /// The model's exact counters.
    fn exact_counters(&self) -> Self::Counters;
    /// The counts every model keeps alike.
    fn frame_counts(&self) -> FrameCounts;
    /// The model's counters by name (for a stats file: `name=value` lines).
    fn named_counters(&self) -> Vec<(&'static str, u64)>;
}

/// The plumbing every model port's state embeds: the port's fault log and IOVA map, where its TX frames go, the
/// model thread's parking, the interrupt sink. Nothing here is NIC behaviour.
pub struct Plumbing<S> {
    /// Faults the port recorded.
    pub(crate) faults: Arc<FaultLog>,
    /// The port's IOVA map: the model reaches host memory only through it.
    pub(crate) dma: Arc<IovaMap>,
    pub(crate) wire: Wire<S>,
    parked: AtomicBool,
    thread: Mutex<Option<Thread>>,
    irq: Mutex<Option<IrqSink>>,
}

impl<S> fmt::Debug for Plumbing<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plumbing").field("parked", &self.parked.load(Ordering::Relaxed)).finish()
    }
}

impl<S> Plumbing<S> {
    /// The plumbing of a new port: an empty fault log (panicking at the first fault if `panic_on_fault`), an empty
    /// IOVA map, TX frames captured.
    pub(crate) fn new(panic_on_fault: bool) -> Self {
        let faults = Arc::new(FaultLog::new(panic_on_fault));
        Plumbing {
            dma: Arc::new(IovaMap::new(faults.clone())),
            faults,
            wire: Wire::default(),
            parked: AtomicBool::new(false),
            thread: Mutex::new(None),
            irq: Mutex::new(None),
        }
    }

    /// Wakes the model thread if it parked (a doorbell, a frame, a register write: work may be waiting).
    pub(crate) fn kick(&self) {
        if self.parked.load(Ordering::Acquire) {
            if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                t.unpark();
            }
        }
    }

    /// The interrupt sink, if one is connected.
    pub(crate) fn irq_sink(&self) -> Option<IrqSink> {
        self.irq.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Signals interrupt vector `vector` through the sink, if one is connected.
    pub(crate) fn signal(&self, vector: u16) {
        if let Some(sink) = self.irq_sink() {
            sink(vector);
        }
    }

    /// The port wired to this one, if any and still there.
    pub(crate) fn peer(&self) -> Option<Arc<S>> {
        self.wire.peer()
    }
}

impl<S: Model> Plumbing<S> {
    /// Puts a transmitted frame on the wire: kept, written to pcap or the TAP, or delivered to the twin (with the
    /// error it carries, so a damaged frame stays damaged).
    pub(crate) fn transmit(&self, data: Vec<u8>, error: Option<S::RxError>) {
        match self.wire.send(data) {
            Sent::Done => {}
            Sent::Peer(peer, data) => {
                peer.arrive(data, error);
            }
            Sent::Failed(e) => self.faults.record(Fault::Protocol { what: format!("pcap wire: {e}") }),
        }
    }

    /// Frames the kernel sent into a TAP wire, at most a burst of 64, handed to `state`'s [`Model::arrive`];
    /// returns how many.
    pub(crate) fn pump(&self, state: &S) -> usize {
        self.wire.pump(64, |data| {
            state.arrive(data, None);
        })
    }
}

/// A handle on one model port: the test's (and the wire's) side of the device. Cheap to clone.
pub struct ModelPort<S> {
    pub(crate) shared: Arc<S>,
}

impl<S> Clone for ModelPort<S> {
    fn clone(&self) -> Self {
        ModelPort { shared: self.shared.clone() }
    }
}

impl<S: Model> fmt::Debug for ModelPort<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ModelPort({} {})", S::FAMILY, self.shared.unit())
    }
}

impl<S: Model> ModelPort<S> {
    /// One port, unwired: its TX frames are captured (see [`ModelPort::take_tx`]) until it is wired elsewhere.
    pub fn create(config: S::Config) -> Self {
        ModelPort { shared: S::build(config) }
    }

    /// Two ports wired back to back (see [`Model::twin_configs`]).
    pub fn create_pair(config: S::Config) -> (Self, Self) {
        let (a, b) = S::twin_configs(config);
        let (a, b) = (Self::create(a), Self::create(b));
        a.wire_to(&b);
        (a, b)
    }

    /// The configuration the port was built with.
    pub fn config(&self) -> &S::Config {
        self.shared.config()
    }

    /// The PCI identity the model presents.
    pub fn pci_identity(&self) -> PciIdentity {
        self.shared.identity()
    }

    /// BAR `index`'s register space, as a driver or a vfio-user client reaches it.
    pub fn pci_bar(&self, index: usize) -> Option<SharedBar> {
        self.shared.bar(index)
    }

    /// Every register BAR: (index, register space), lowest first.
    pub fn pci_bars(&self) -> Vec<(usize, SharedBar)> {
        (0..6).filter_map(|i| self.pci_bar(i).map(|b| (i, b))).collect()
    }

    /// Whether the memory BARs are prefetchable.
    pub fn prefetchable(&self) -> bool {
        self.shared.prefetchable()
    }

    /// The BAR holding the MSI-X table and PBA.
    pub fn msix_bar(&self) -> usize {
        self.shared.msix_bar()
    }

    /// A function-level reset.
    pub fn function_reset(&self) {
        self.shared.function_reset();
        self.shared.plumbing().kick();
    }

    /// The port's IOVA map: hand it to the driver as its [`drvkit::dma::DmaMapper`]. The model reaches host memory
    /// only through it.
    pub fn dma_mapper(&self) -> Arc<IovaMap> {
        self.shared.plumbing().dma.clone()
    }

    /// Sends the port's interrupt messages to `sink` (called with the vector: MSI-X vector n, or 0 for MSI/INTx)
    /// instead of nowhere; `None` disconnects it. The model signals from its own thread or the register caller's.
    pub fn set_irq_sink(&self, sink: Option<IrqSink>) {
        *self.shared.plumbing().irq.lock().unwrap_or_else(|e| e.into_inner()) = sink;
    }

    /// Connects this port's TX to `other`'s RX and `other`'s TX to this port's RX (a cable). The link state of each
    /// side then also depends on the other's.
    pub fn wire_to(&self, other: &ModelPort<S>) {
        Wire::connect((&self.shared.plumbing().wire, &self.shared), (&other.shared.plumbing().wire, &other.shared));
    }

    /// Sends this port's TX frames to a pcap file (created or truncated) instead.
    pub fn wire_to_pcap(&self, path: impl AsRef<Path>) -> Result<(), PcapError> {
        self.shared.plumbing().wire.to_pcap(path)
    }

    /// Wires this port to TAP interface `name` (created, or attached to if it exists and is persistent; a `%d`
    /// lets the kernel number it) and brings the interface up: frames the port transmits are written to the TAP,
    /// frames the kernel sends out of the TAP arrive at the port's RX like [`ModelPort::inject`] (read when the
    /// model steps). The kernel's end is always there, so the link depends only on this port. Returns the
    /// interface's name; the interface goes away when the port is unwired or dropped. Needs CAP_NET_ADMIN; the TAP
    /// is made in the calling thread's network namespace.
    pub fn wire_to_tap(&self, name: &str) -> std::io::Result<String> {
        let ifname = self.shared.plumbing().wire.to_tap(name)?;
        self.shared.plumbing().kick();
        Ok(ifname)
    }

    /// Flushes a pcap sink (call before reading the file while the port lives).
    pub fn flush_pcap(&self) -> Result<(), PcapError> {
        self.shared.plumbing().wire.flush_pcap()
    }

    /// Captures TX frames again (for [`ModelPort::take_tx`]), undoing a wire.
    pub fn unwire(&self) {
        self.shared.plumbing().wire.unwire();
    }

    /// A frame arrives on the port's wire (Ethernet bytes without FCS). Returns false if the packet buffer was
    /// full. It is filtered and written to an RX ring by the next step of the model.
    pub fn inject(&self, frame: &[u8]) -> bool {
        self.shared.arrive(frame.to_vec(), None)
    }

    /// A damaged frame arrives.
    pub fn inject_error(&self, frame: &[u8], error: S::RxError) -> bool {
        self.shared.arrive(frame.to_vec(), Some(error))
    }

    /// Injects every record of a pcap file; returns how many were accepted into the packet buffer.
    pub fn inject_pcap(&self, path: impl AsRef<Path>) -> Result<usize, PcapError> {
        let records = pcap_file::read_all(path)?;
        Ok(records.into_iter().filter(|r| self.inject(&r.data)).count())
    }

    /// Frames transmitted while unwired (Ethernet bytes without FCS), oldest first; empties the capture.
    pub fn take_tx(&self) -> Vec<Vec<u8>> {
        self.shared.plumbing().wire.take_captured()
    }

    /// Frames waiting in the packet buffer (not yet written to a ring).
    pub fn rx_pending(&self) -> usize {
        self.shared.frames_waiting()
    }

    /// Processes everything pending once; returns the work done (0 = idle). For wired ports use
    /// [`run_until_idle`] so that frames crossing the wire get received too.
    pub fn step(&self) -> usize {
        self.shared.run_once()
    }

    /// Runs the model in its own thread, like hardware, until the returned guard is dropped. Do not call
    /// [`ModelPort::step`] meanwhile (it would work, but the point of the thread is asynchrony).
    pub fn start_thread(&self) -> ModelThread {
        let stop = Arc::new(AtomicBool::new(false));
        let shared = self.shared.clone();
        let stop2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name(format!("nicsim-{}-{}", S::FAMILY, shared.unit()))
            .spawn(move || {
                let io = shared.plumbing();
                *io.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::thread::current());
                let mut idle = 0u32;
                while !stop2.load(Ordering::Acquire) {
                    if shared.run_once() > 0 {
                        idle = 0;
                        continue;
                    }
                    idle += 1;
                    if idle < 64 {
                        std::thread::yield_now();
                    } else {
                        // Doorbells are plain atomics: the park is bounded so that a tail written without a kick
                        // is still seen promptly.
                        io.parked.store(true, Ordering::Release);
                        std::thread::park_timeout(Duration::from_micros(200));
                        io.parked.store(false, Ordering::Release);
                    }
                }
                *io.thread.lock().unwrap_or_else(|e| e.into_inner()) = None;
            })
            .expect("spawn model thread");
        ModelThread { stop, handle: Some(handle) }
    }

    /// Faults recorded so far (DMA outside the IOVA map, register misuse, protocol violations).
    pub fn faults(&self) -> Vec<Fault> {
        self.shared.plumbing().faults.faults()
    }

    /// Removes and returns the faults recorded so far (for tests that provoke one on purpose).
    pub fn take_faults(&self) -> Vec<Fault> {
        self.shared.plumbing().faults.take()
    }

    /// Panics listing the faults, if any.
    #[track_caller]
    pub fn assert_no_faults(&self) {
        self.shared.plumbing().faults.assert_none()
    }

    /// Turns panic-on-fault on or off at run time.
    pub fn set_panic_on_fault(&self, on: bool) {
        self.shared.plumbing().faults.set_panic_on_fault(on)
    }

    /// The model's exact counters (never cleared).
    pub fn counters(&self) -> S::Counters {
        self.shared.exact_counters()
    }

    /// The frame counts every model keeps alike.
    pub fn frame_counts(&self) -> FrameCounts {
        self.shared.frame_counts()
    }

    /// The model's counters by name.
    pub fn named_counters(&self) -> Vec<(&'static str, u64)> {
        self.shared.named_counters()
    }

    /// Whether the link is up now.
    pub fn link_up(&self) -> bool {
        self.shared.link_is_up()
    }

    /// Fault: the link goes down now (on both ends of a wire where the NIC's link needs both) and comes back after
    /// `down_for`.
    pub fn link_flap(&self, down_for: Duration) {
        self.shared.flap_link(down_for);
        self.shared.plumbing().kick();
    }

    /// Plugs or unplugs the cable.
    pub fn set_cable(&self, connected: bool) {
        self.shared.plug_cable(connected);
        self.shared.plumbing().kick();
    }
}

/// Processes the given ports stepwise until none has work left (frames crossing wires included), at most 100,000
/// rounds (a port that never goes idle, e.g. with a stalled firmware, does not hang the caller). Returns the total
/// work done. For deterministic tests of wired ports.
pub fn run_until_idle<S: Model>(ports: &[&ModelPort<S>]) -> usize {
    let mut total = 0;
    for _ in 0..100_000 {
        let work: usize = ports.iter().map(|p| p.step()).sum();
        if work == 0 {
            break;
        }
        total += work;
    }
    total
}

/// The model thread of one port; stops (and joins) on drop, re-raising a panic of the thread (e.g. from
/// panic-on-fault) unless the current thread is already panicking.
#[derive(Debug)]
pub struct ModelThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl ModelThread {
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

impl Drop for ModelThread {
    fn drop(&mut self) {
        if let Err(panic) = self.stop_inner() {
            if !std::thread::panicking() {
                std::panic::resume_unwind(panic);
            }
        }
    }
}
