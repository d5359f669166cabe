//! The port handle: construction, wires (a peer, capture, a TAP), fault injection, inspection, the stepping
//! loop shared by [`Sp670Port::step`] and the model thread.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use super::bars::{Sp670CfgBar, Sp670DbBar, Sp670MgmtBar};
use super::cmdq::MAX_CMDQS;
use super::regs::*;
use super::rx::Drop as RxDrop;
use super::{Core, Sp670Config, Sp670Counters, Sp670RxError, DEVICE_HINIC3_PF, VENDOR_HUAWEI};
use crate::dma::IovaMap;
use crate::fault::{Fault, FaultLog};
use crate::pci::PciIdentity;
use crate::wire::{Sent, Wire};

/// Frames waiting at the MAC (bounded like a packet buffer).
const INBOUND_MAX: usize = 4096;
/// A doorbell value waiting for the model: bit 31 set until it is taken.
pub(super) const DB_PENDING: u32 = 1 << 31;

/// State shared by the BARs, the port handles and the model thread.
pub(crate) struct Shared {
    pub(super) config: Sp670Config,
    pub(super) core: Mutex<Core>,
    pub(super) faults: Arc<FaultLog>,
    pub(super) dma: Arc<IovaMap>,
    /// Doorbells, written without the model lock: the PI with [`DB_PENDING`].
    pub(super) sq_db: Box<[AtomicU32]>,
    pub(super) rq_db: Box<[AtomicU32]>,
    pub(super) cmdq_db: [AtomicU32; MAX_CMDQS],
    /// FUNC_ATTR4 bit 0: doorbells are ignored while set (docs/hw/hinic3.md §3.1, the flush of §14.5).
    pub(super) db_disabled: AtomicBool,
    /// The low dword of a doorbell written as two 32-bit stores, per 8-byte slot.
    pub(super) db_low: Mutex<Vec<Option<u32>>>,
    pub(super) inbound: Mutex<VecDeque<(Vec<u8>, Option<Sp670RxError>)>>,
    /// Where TX frames go.
    wire: Wire<Shared>,
    pub(super) parked: AtomicBool,
    pub(super) thread: Mutex<Option<Thread>>,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn kick(&self) {
        if self.parked.load(Ordering::Acquire) {
            if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                t.unpark();
            }
        }
    }

    pub(super) fn fault(&self, what: String) {
        self.faults.record(Fault::Protocol { what });
    }

    /// Processes everything pending now; returns the work done (0: idle).
    /// Frames the kernel sent into a TAP wire (at most 64 a step).
    fn pump_tap(&self) -> usize {
        self.wire.pump(64, |data| {
            self.arrive(data, None);
        })
    }

    fn step(&self) -> usize {
        let mut out = Vec::new();
        let mut work = self.pump_tap();
        {
            let mut core = self.lock();
            core.link_events();
            if core.mbox.pending {
                core.run_mailbox();
                work += 1;
            }
            if std::mem::take(&mut core.drop_doorbells) {
                for db in self.cmdq_db.iter().chain(self.sq_db.iter()).chain(self.rq_db.iter()) {
                    db.fetch_and(!DB_PENDING, Ordering::AcqRel);
                }
            }
            if std::mem::take(&mut core.drop_queue_doorbells) {
                for db in self.sq_db.iter().chain(self.rq_db.iter()) {
                    db.fetch_and(!DB_PENDING, Ordering::AcqRel);
                }
            }
            for q in 0..MAX_CMDQS {
                let v = self.cmdq_db[q].load(Ordering::Acquire);
                if v & DB_PENDING != 0 && !core.inject.cmdq_stalled {
                    self.cmdq_db[q].fetch_and(!DB_PENDING, Ordering::AcqRel);
                    work += core.run_cmdq(q, v & 0xFFFF);
                }
            }
            for q in 0..self.sq_db.len() {
                let v = self.sq_db[q].load(Ordering::Acquire);
                if v & DB_PENDING != 0 && !core.inject.tx_hang[q] && core.start_sq(q) {
                    self.sq_db[q].fetch_and(!DB_PENDING, Ordering::AcqRel);
                    work += core.run_sq(q, v & 0xFFFF, &mut out);
                }
            }
            for q in 0..self.rq_db.len() {
                let v = self.rq_db[q].load(Ordering::Acquire);
                if v & DB_PENDING != 0 && core.start_rq(q) {
                    self.rq_db[q].fetch_and(!DB_PENDING, Ordering::AcqRel);
                    let rq = core.rqs[q].as_mut().expect("started");
                    // The RQ doorbell counts 8-byte units: entry << 1 for the 16-byte WQE (docs/hw/hinic3.md §10.1).
                    rq.pi = ((v & 0xFFFF) >> 1) % rq.depth;
                }
            }
            let frames: Vec<_> = self.inbound.lock().unwrap_or_else(|e| e.into_inner()).drain(..).collect();
            let mut back = VecDeque::new();
            for (f, err) in frames {
                match core.receive(&f, err) {
                    Ok(_) => {
                        core.counters.rx_delivered += 1;
                        work += 1;
                    }
                    Err(RxDrop::Filtered) => core.counters.rx_filtered += 1,
                    // No buffer: the frame waits at the MAC (bounded), as in a packet buffer, until buffers come.
                    Err(RxDrop::NoBuffer) if back.len() < INBOUND_MAX && core.stats_unwind_nobuf(&f) => {
                        back.push_back((f, err))
                    }
                    Err(RxDrop::NoBuffer | RxDrop::Discard) => core.counters.rx_no_buffer += 1,
                }
            }
            if !back.is_empty() {
                let mut inb = self.inbound.lock().unwrap_or_else(|e| e.into_inner());
                back.extend(inb.drain(..));
                *inb = back;
            }
            core.counters.tx_sent += out.len() as u64;
        }
        work += out.len();
        if !out.is_empty() {
            for frame in out {
                match self.wire.send(frame) {
                    Sent::Done => {}
                    Sent::Peer(peer, data) => {
                        peer.arrive(data, None);
                    }
                    Sent::Failed(e) => self.fault(format!("pcap wire: {e}")),
                }
            }
        }
        work
    }

    fn arrive(&self, frame: Vec<u8>, error: Option<Sp670RxError>) -> bool {
        let mut inb = self.inbound.lock().unwrap_or_else(|e| e.into_inner());
        if inb.len() >= INBOUND_MAX {
            drop(inb);
            self.lock().counters.rx_no_buffer += 1;
            return false;
        }
        inb.push_back((frame, error));
        drop(inb);
        self.kick();
        true
    }
}

impl Core {
    /// A frame that found no buffer stays at the MAC to be retried: undo the discard the attempt counted.
    fn stats_unwind_nobuf(&mut self, frame: &[u8]) -> bool {
        self.stats.unwind_discard(frame);
        true
    }
}

// ---- the port -----------------------------------------------------------------------------------------------------------

/// Builds model PFs.
#[derive(Debug)]
pub struct Sp670;

impl Sp670 {
    /// One PF: the port handle, from which the three BARs come.
    #[allow(clippy::new_ret_no_self)] // a device's handle, like `X710::new`
    pub fn new(config: Sp670Config) -> Sp670Port {
        let faults = Arc::new(FaultLog::new(config.panic_on_fault));
        let dma = Arc::new(IovaMap::new(faults.clone()));
        let n = usize::from(config.max_queues);
        assert!((1..=256).contains(&n), "max_queues 1 to 256");
        assert!((2..=4).contains(&config.num_aeqs) && config.num_aeqs.is_power_of_two(), "num_aeqs 2 or 4");
        let shared = Arc::new(Shared {
            core: Mutex::new(Core::new(config.clone(), dma.clone(), faults.clone())),
            config,
            faults,
            dma,
            sq_db: (0..n).map(|_| AtomicU32::new(0)).collect(),
            rq_db: (0..n).map(|_| AtomicU32::new(0)).collect(),
            cmdq_db: Default::default(),
            db_disabled: AtomicBool::new(false),
            db_low: Mutex::new(vec![None; DB_BAR_LEN / 8]),
            inbound: Mutex::new(VecDeque::new()),
            wire: Wire::default(),
            parked: AtomicBool::new(false),
            thread: Mutex::new(None),
        });
        Sp670Port { shared }
    }

    /// Two PFs on two cards wired back to back: the same configuration but for the MAC's last byte.
    pub fn pair(config: Sp670Config) -> (Sp670Port, Sp670Port) {
        let mut b = config.clone();
        b.mac[5] = config.mac[5].wrapping_add(1);
        let (a, b) = (Sp670::new(config), Sp670::new(b));
        a.wire_to(&b);
        (a, b)
    }
}

/// A handle on one model PF (cheap to clone).
#[derive(Clone)]
pub struct Sp670Port {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Sp670Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sp670Port(func {})", self.shared.config.func_id)
    }
}

/// The model thread of [`Sp670Port::start_thread`]: stops when dropped.
#[derive(Debug)]
pub struct Sp670Thread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Drop for Sp670Thread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

impl Sp670Port {
    /// The cfg BAR (BAR1).
    pub fn cfg_bar(&self) -> Sp670CfgBar {
        Sp670CfgBar { shared: self.shared.clone() }
    }
    /// The mgmt BAR (BAR3).
    pub fn mgmt_bar(&self) -> Sp670MgmtBar {
        Sp670MgmtBar { shared: self.shared.clone() }
    }
    /// The doorbell BAR (BAR4).
    pub fn db_bar(&self) -> Sp670DbBar {
        Sp670DbBar { shared: self.shared.clone() }
    }
    /// The three BARs as one type: (cfg, mgmt, doorbells).
    pub fn bars(&self) -> (super::Sp670Bar, super::Sp670Bar, super::Sp670Bar) {
        use super::Sp670Bar::*;
        (Cfg(self.cfg_bar()), Mgmt(self.mgmt_bar()), Db(self.db_bar()))
    }
    /// The IOVA map: give it to the driver as its DMA mapper.
    pub fn dma_mapper(&self) -> Arc<IovaMap> {
        self.shared.dma.clone()
    }
    /// PCI identity: 19e5:0222, BAR1 cfg, BAR3 mgmt, BAR4 doorbells (docs/hw/hinic3.md §1, §2).
    pub fn pci_identity(&self) -> PciIdentity {
        PciIdentity {
            vendor: VENDOR_HUAWEI,
            device: DEVICE_HINIC3_PF,
            class: 0x02_0000,
            bars: [0, CFG_BAR_LEN, 0, MGMT_BAR_LEN, DB_BAR_LEN, 0],
            msix_vectors: self.shared.config.num_irqs as u16,
        }
    }
    /// The configuration.
    pub fn config(&self) -> &Sp670Config {
        &self.shared.config
    }
    /// Wires this port's TX to `other`'s RX and back.
    pub fn wire_to(&self, other: &Sp670Port) {
        Wire::connect((&self.shared.wire, &self.shared), (&other.shared.wire, &other.shared));
    }
    /// Wires the port to a new TAP interface (the kernel is the link partner); returns its name.
    pub fn wire_to_tap(&self, name: &str) -> std::io::Result<String> {
        let ifname = self.shared.wire.to_tap(name)?;
        self.shared.kick();
        Ok(ifname)
    }
    /// TX back to capture ([`Sp670Port::take_tx`]).
    pub fn unwire(&self) {
        self.shared.wire.unwire();
    }
    /// A frame (no FCS) arrives from the wire; false when the MAC's buffer is full.
    pub fn inject(&self, frame: &[u8]) -> bool {
        self.shared.arrive(frame.to_vec(), None)
    }
    /// A frame arrives damaged.
    pub fn inject_error(&self, frame: &[u8], error: Sp670RxError) -> bool {
        self.shared.arrive(frame.to_vec(), Some(error))
    }
    /// Frames transmitted while unwired.
    pub fn take_tx(&self) -> Vec<Vec<u8>> {
        self.shared.wire.take_captured()
    }
    /// Frames waiting at the MAC for RX buffers.
    pub fn rx_pending(&self) -> usize {
        self.shared.inbound.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
    /// Processes everything pending now; returns the work done (0: idle).
    pub fn step(&self) -> usize {
        self.shared.step()
    }
    /// Runs the model in its own thread until the guard drops.
    pub fn start_thread(&self) -> Sp670Thread {
        let stop = Arc::new(AtomicBool::new(false));
        let (shared, stop2) = (self.shared.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name(format!("nicsim-sp670-{}", shared.config.func_id))
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
        Sp670Thread { stop, handle: Some(handle) }
    }
    /// Faults recorded so far.
    pub fn faults(&self) -> Vec<Fault> {
        self.shared.faults.faults()
    }
    /// Removes and returns the faults so far.
    pub fn take_faults(&self) -> Vec<Fault> {
        self.shared.faults.take()
    }
    /// Panics listing the faults, if any.
    #[track_caller]
    pub fn assert_no_faults(&self) {
        self.shared.faults.assert_none()
    }
    /// Panic at the first fault.
    pub fn set_panic_on_fault(&self, on: bool) {
        self.shared.faults.set_panic_on_fault(on)
    }
    /// Exact model-side counts.
    pub fn counters(&self) -> Sp670Counters {
        self.shared.lock().counters
    }
    /// A vport counter (L2NIC 9 order, [`super::vport_stat`]).
    pub fn vport_stat(&self, i: usize) -> u64 {
        self.shared.lock().stats.vport[i]
    }
    /// Answers (`module`, `cmd`) with `status` from now on (`None`: normally again).
    pub fn inject_mgmt_error(&self, module: u8, cmd: u16, status: Option<u8>) {
        let mut c = self.shared.lock();
        match status {
            Some(s) => c.inject.mgmt_errors.insert((module, cmd), s),
            None => c.inject.mgmt_errors.remove(&(module, cmd)),
        };
    }
    /// Completes cmdq command `cmd` with error code `code` from now on (`None`: normally again).
    pub fn inject_cmdq_error(&self, cmd: u8, code: Option<u32>) {
        let mut c = self.shared.lock();
        match code {
            Some(e) => c.inject.cmdq_errors.insert(cmd, e),
            None => c.inject.cmdq_errors.remove(&cmd),
        };
    }
    /// While stalled, mailbox requests are taken (the write-back says done) but never answered on the AEQ.
    pub fn stall_mailbox(&self, stalled: bool) {
        self.shared.lock().inject.mbox_stalled = stalled;
    }
    /// While stalled, cmdq WQEs are never executed (their busy bit never sets), until released or a FUNC_RESET.
    pub fn stall_cmdq(&self, stalled: bool) {
        self.shared.lock().inject.cmdq_stalled = stalled;
        self.shared.kick();
    }
    /// Takes the link down for `down_for`, then up: a HILINK 7 event on AEQ 0 each way (when the PF is ACTIVE).
    pub fn link_flap(&self, down_for: Duration) {
        self.shared.lock().down_until = Some(Instant::now() + down_for);
        self.shared.kick();
    }
    /// Plugs or pulls the cable.
    pub fn set_cable(&self, connected: bool) {
        self.shared.lock().cable = connected;
        self.shared.kick();
    }
    /// Link state as GET_LINK_STATUS reports it.
    pub fn link_up(&self) -> bool {
        self.shared.lock().link_up()
    }
    /// A hung SQ (`None`: all) stops fetching WQEs and writing its CI until released or until a FUNC_RESET.
    pub fn tx_hang(&self, queue: Option<usize>, hung: bool) {
        let mut c = self.shared.lock();
        match queue {
            Some(q) => c.inject.tx_hang[q] = hung,
            None => c.inject.tx_hang.iter_mut().for_each(|h| *h = hung),
        }
        drop(c);
        self.shared.kick();
    }
    /// Every management command answered: (module, cmd, status).
    pub fn mgmt_log(&self) -> Vec<(u8, u16, u8)> {
        self.shared.lock().mgmt_log.clone()
    }
    /// Every cmdq command completed: (cmd, error code).
    pub fn cmdq_log(&self) -> Vec<(u8, u32)> {
        self.shared.lock().cmdq_log.clone()
    }
    /// The RSS indirection table (0xFFFF: invalid entry).
    pub fn rss_indirection(&self) -> [u16; 256] {
        self.shared.lock().mgmt.rss.indir
    }
    /// RSS key, hash types and whether RSS is on.
    pub fn rss_config(&self) -> ([u8; 40], u32, bool) {
        let c = self.shared.lock();
        (c.mgmt.rss.key, c.mgmt.rss.hash_types, c.mgmt.rss.enabled)
    }
    /// SQ context `q` as last written through the cmdq.
    pub fn sq_context(&self, q: usize) -> Option<super::ctx::SqCtx> {
        self.shared.lock().sq_ctx[q]
    }
    /// RQ context `q` as last written through the cmdq.
    pub fn rq_context(&self, q: usize) -> Option<super::ctx::RqCtx> {
        self.shared.lock().rq_ctx[q]
    }
    /// PF status (FUNC_ATTR6 15:0).
    pub fn pf_status(&self) -> u32 {
        self.shared.lock().pf_status
    }
    /// Events posted and not acknowledged: (module, cmd, MSG_ID).
    pub fn unacked_events(&self) -> Vec<(u8, u16, u8)> {
        self.shared.lock().events.iter().map(|e| (e.module, e.cmd, e.msg_id)).collect()
    }
}

/// Steps every port until none has work (frames in flight between wired ports included).
pub fn run_until_idle_sp670(ports: &[&Sp670Port]) -> usize {
    let mut total = 0;
    for _ in 0..100_000 {
        let w: usize = ports.iter().map(|p| p.step()).sum();
        total += w;
        if w == 0 {
            return total;
        }
    }
    total
}
