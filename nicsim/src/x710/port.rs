//! The handles a test or a driver holds: the BAR ([`X710Bar`], a `drvkit::bar::RegisterSpace`) and the port
//! ([`X710Port`]: wires, frame and fault injection, stepping, inspection).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drvkit::bar::RegisterSpace;
use swports::pcap_file::{self, PcapError};

use crate::dma::IovaMap;
use crate::fault::{Fault, FaultLog};
use crate::pci::{PciIdentity, VENDOR_INTEL};
use crate::wire::Wire;

use super::regs::*;
use super::{AqRc, Core, Inbound, Shared, WireFrame, X710Config, X710Counters, X710RxError, X710Thread};

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
        assert!(matches!(config.rss_table_size, 128 | 512), "RSS table size is 128 or 512 (docs/hw/i40e.md §15)");
        let faults = Arc::new(FaultLog::new(config.panic_on_fault));
        let n = usize::from(config.num_queues);
        let shared = Arc::new(Shared {
            core: Mutex::new(Core::new(&config)),
            tx_tail: (0..n).map(|_| AtomicU32::new(0)).collect(),
            rx_tail: (0..n).map(|_| AtomicU32::new(0)).collect(),
            tx_qlen: (0..n).map(|_| AtomicU32::new(0)).collect(),
            rx_qlen: (0..n).map(|_| AtomicU32::new(0)).collect(),
            inbound: Mutex::new(Inbound::default()),
            dma: Arc::new(IovaMap::new(faults.clone())),
            faults,
            wire: Wire::default(),
            link_active: AtomicBool::new(config.link_enabled),
            missed: AtomicU64::new(0),
            counters: Mutex::new(X710Counters::default()),
            parked: AtomicBool::new(false),
            thread: Mutex::new(None),
            irq: Mutex::new(None),
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

    /// What the PF presents on the PCI bus (docs/hw/i40e.md §1): 8086:device, BAR0 and BAR3.
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

    /// Sends the port's MSI-X messages to `sink` (called with the vector number) instead of nowhere; `None`
    /// disconnects it. The model signals from its own thread or the register caller's.
    pub fn set_irq_sink(&self, sink: Option<crate::x540::IrqSink>) {
        *self.shared.irq.lock().unwrap_or_else(|e| e.into_inner()) = sink;
    }

    /// Messages signalled so far on each MSI-X vector, whether or not a sink was connected.
    pub fn irq_counts(&self) -> Vec<u64> {
        self.shared.lock().intr.sent.clone()
    }

    /// The configuration.
    pub fn config(&self) -> &X710Config {
        &self.shared.config
    }

    /// Wires this port to another back to back (frames both ways; each sees the other's link).
    pub fn wire_to(&self, other: &X710Port) {
        Wire::connect((&self.shared.wire, &self.shared), (&other.shared.wire, &other.shared));
    }

    /// Sends transmitted frames to a pcap file instead.
    pub fn wire_to_pcap(&self, path: impl AsRef<Path>) -> Result<(), PcapError> {
        self.shared.wire.to_pcap(path)
    }

    /// Wires the port to a new TAP interface (the kernel is the link partner); returns its name.
    pub fn wire_to_tap(&self, name: &str) -> std::io::Result<String> {
        let ifname = self.shared.wire.to_tap(name)?;
        self.shared.kick();
        Ok(ifname)
    }

    /// Flushes a pcap wire.
    pub fn flush_pcap(&self) -> Result<(), PcapError> {
        self.shared.wire.flush_pcap()
    }

    /// Back to capturing transmitted frames for [`X710Port::take_tx`].
    pub fn unwire(&self) {
        self.shared.wire.unwire();
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
        self.shared.wire.take_captured()
    }

    /// Frames waiting in the packet buffer.
    pub fn rx_pending(&self) -> usize {
        // One lock at a time: the model thread takes the core lock and then the packet buffer's.
        let blocked = usize::from(self.shared.lock().rx_blocked.is_some());
        self.shared.inbound.lock().unwrap_or_else(|e| e.into_inner()).frames.len() + blocked
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
    /// (and ERR) without being executed. Armed until it fires, across PF resets (so it can hit a driver's bring-up).
    pub fn inject_aq_error(&self, opcode: Option<u16>, rc: AqRc) {
        self.shared.lock().aq.inject_error(opcode, rc);
    }

    /// Fault injection: while stalled, the firmware takes no admin command (ATQH stands still): a command that
    /// never completes. With `critical`, ATQLEN.ATQCRIT reads 1 meanwhile (docs/hw/i40e.md §5.4 step 7).
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
