//! The SP670's side of the [`Model`] trait (what [`Sp670Port`], the handle every model has, does on this NIC):
//! construction, the stepping loop of [`ModelPort::step`] and the model thread, the SP670's own BARs, fault
//! injection and inspection.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::bars::{Sp670CfgBar, Sp670DbBar, Sp670MgmtBar};
use super::cmdq::MAX_CMDQS;
use super::regs::*;
use super::rx::Drop as RxDrop;
use super::{Core, Sp670Config, Sp670Counters, Sp670RxError, DEVICE_HINIC3_PF, VENDOR_HUAWEI};
use crate::fault::Fault;
use crate::model::{FrameCounts, Model, ModelPort, Plumbing, SharedBar};
use crate::pci::PciIdentity;

/// Frames waiting at the MAC (bounded like a packet buffer).
const INBOUND_MAX: usize = 4096;
/// A doorbell value waiting for the model: bit 31 set until it is taken.
pub(super) const DB_PENDING: u32 = 1 << 31;

/// State shared by the BARs, the port handles and the model thread (opaque: reached through those handles).
pub struct Sp670State {
    pub(super) config: Sp670Config,
    pub(super) core: Mutex<Core>,
    /// Doorbells, written without the model lock: the PI with [`DB_PENDING`].
    pub(super) sq_db: Box<[AtomicU32]>,
    pub(super) rq_db: Box<[AtomicU32]>,
    pub(super) cmdq_db: [AtomicU32; MAX_CMDQS],
    /// FUNC_ATTR4 bit 0: doorbells are ignored while set (docs/hw/hinic3.md §3.1, the flush of §14.5).
    pub(super) db_disabled: AtomicBool,
    /// The low dword of a doorbell written as two 32-bit stores, per 8-byte slot.
    pub(super) db_low: Mutex<Vec<Option<u32>>>,
    pub(super) inbound: Mutex<VecDeque<(Vec<u8>, Option<Sp670RxError>)>>,
    /// Where TX frames go, the thread's parking, the interrupt sink (`intr`'s vectors).
    pub(super) io: Plumbing<Sp670State>,
}

/// Clears a doorbell's pending bit and returns what it held at that instant: a doorbell the driver rang after the
/// caller saw it pending is taken too, not wiped by the clear (its producer index would be lost until the next one).
fn take_doorbell(db: &AtomicU32) -> u32 {
    db.fetch_and(!DB_PENDING, Ordering::AcqRel)
}

impl Sp670State {
    pub(super) fn lock(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn kick(&self) {
        self.io.kick();
    }

    pub(super) fn fault(&self, what: impl std::fmt::Display) {
        self.io.faults.record(Fault::Protocol { what: what.to_string() });
    }

    /// Processes everything pending now; returns the work done (0: idle).
    fn step(&self) -> usize {
        let mut out = Vec::new();
        let irqs;
        let mut work = self.io.pump(self);
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
                if self.cmdq_db[q].load(Ordering::Acquire) & DB_PENDING != 0 && !core.inject.cmdq_stalled {
                    let v = take_doorbell(&self.cmdq_db[q]);
                    work += core.run_cmdq(q, v & 0xFFFF);
                }
            }
            for q in 0..self.sq_db.len() {
                let pending = self.sq_db[q].load(Ordering::Acquire) & DB_PENDING != 0;
                if pending && !core.inject.tx_hang[q] && core.start_sq(q) {
                    let v = take_doorbell(&self.sq_db[q]);
                    work += core.run_sq(q, v & 0xFFFF, &mut out);
                }
            }
            for q in 0..self.rq_db.len() {
                if self.rq_db[q].load(Ordering::Acquire) & DB_PENDING != 0 && core.start_rq(q) {
                    let v = take_doorbell(&self.rq_db[q]);
                    let rq = core.rqs[q].as_mut().expect("started");
                    // The RQ doorbell counts 8-byte units: entry << 1 for the 16-byte WQE (docs/hw/hinic3.md §10.1).
                    rq.pi = ((v & 0xFFFF) >> 1) % rq.depth;
                }
            }
            let frames: Vec<_> = self.inbound.lock().unwrap_or_else(|e| e.into_inner()).drain(..).collect();
            let mut back = VecDeque::new();
            for (f, err) in frames {
                match core.receive(&f, err) {
                    Ok(q) => {
                        core.rq_event(q);
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
            core.msix.tick(Instant::now());
            irqs = std::mem::take(&mut core.msix.outbox);
        }
        irqs.into_iter().for_each(|v| self.io.signal(v));
        work += out.len();
        if !out.is_empty() {
            for frame in out {
                self.io.transmit(frame, None);
            }
        }
        work
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
        Sp670Port::create(config)
    }

    /// Two PFs on two cards wired back to back: the same configuration but for the MAC's last byte.
    pub fn pair(config: Sp670Config) -> (Sp670Port, Sp670Port) {
        Sp670Port::create_pair(config)
    }
}

/// A handle on one model PF (cheap to clone): the handle every model has ([`ModelPort`]) with the SP670's own
/// BARs, inspection and faults below.
pub type Sp670Port = ModelPort<Sp670State>;

/// The model thread of [`ModelPort::start_thread`] (the one every model has): stops when dropped.
pub type Sp670Thread = crate::model::ModelThread;

impl Model for Sp670State {
    type Config = Sp670Config;
    type RxError = Sp670RxError;
    type Counters = Sp670Counters;
    const FAMILY: &'static str = "sp670";

    fn build(config: Sp670Config) -> Arc<Self> {
        let io = Plumbing::new(config.panic_on_fault);
        let n = usize::from(config.max_queues);
        assert!((1..=256).contains(&n), "max_queues 1 to 256");
        assert!((2..=4).contains(&config.num_aeqs) && config.num_aeqs.is_power_of_two(), "num_aeqs 2 or 4");
        Arc::new(Sp670State {
            core: Mutex::new(Core::new(config.clone(), io.dma.clone(), io.faults.clone())),
            config,
            sq_db: (0..n).map(|_| AtomicU32::new(0)).collect(),
            rq_db: (0..n).map(|_| AtomicU32::new(0)).collect(),
            cmdq_db: Default::default(),
            db_disabled: AtomicBool::new(false),
            db_low: Mutex::new(vec![None; DB_BAR_LEN / 8]),
            inbound: Mutex::new(VecDeque::new()),
            io,
        })
    }

    fn twin_configs(config: Sp670Config) -> (Sp670Config, Sp670Config) {
        let mut b = config.clone();
        b.mac[5] = config.mac[5].wrapping_add(1);
        (config, b)
    }

    fn config(&self) -> &Sp670Config {
        &self.config
    }
    fn unit(&self) -> u16 {
        self.config.func_id
    }
    fn plumbing(&self) -> &Plumbing<Self> {
        &self.io
    }

    /// 19e5:0222, BAR1 cfg, BAR2 the interrupt region (the MSI-X table and PBA), BAR3 mgmt, BAR4 doorbells
    /// (docs/hw/hinic3.md §1, §2).
    fn identity(&self) -> PciIdentity {
        PciIdentity {
            vendor: VENDOR_HUAWEI,
            device: DEVICE_HINIC3_PF,
            class: 0x02_0000,
            bars: [0, CFG_BAR_LEN, INTR_BAR_LEN, MGMT_BAR_LEN, DB_BAR_LEN, 0],
            msix_vectors: self.config.num_irqs as u16,
        }
    }
    /// BAR1 (cfg), BAR3 (mgmt), BAR4 (doorbells).
    fn bar(self: &Arc<Self>, index: usize) -> Option<SharedBar> {
        let shared = self.clone();
        match index {
            1 => Some(Arc::new(Sp670CfgBar { shared })),
            3 => Some(Arc::new(Sp670MgmtBar { shared })),
            4 => Some(Arc::new(Sp670DbBar { shared })),
            _ => None,
        }
    }
    fn prefetchable(&self) -> bool {
        true
    }
    /// BAR2, the interrupt region: the MSI-X table and PBA (docs/hw/hinic3.md §2, unverified there), served by the
    /// PCI layer; the function's own masks are the cfg BAR's FUNC_MSI_CLR_WR (`intr`).
    fn msix_bar(&self) -> usize {
        2
    }
    /// The function as at power-up (the management CPU initialising again for `fw_ready_delay`), doorbells not
    /// yet taken forgotten; the exact counters and the command logs stay (they are the test's, not the device's).
    fn function_reset(self: &Arc<Self>) {
        let mut core = self.lock();
        let fresh = Core::new(self.config.clone(), self.io.dma.clone(), self.io.faults.clone());
        let (counters, mgmt_log, cmdq_log) =
            (core.counters, std::mem::take(&mut core.mgmt_log), std::mem::take(&mut core.cmdq_log));
        *core = Core { counters, mgmt_log, cmdq_log, drop_doorbells: true, ..fresh };
        self.db_disabled.store(false, Ordering::Release);
        self.db_low.lock().unwrap_or_else(|e| e.into_inner()).iter_mut().for_each(|d| *d = None);
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
    fn run_once(self: &Arc<Self>) -> usize {
        self.step()
    }
    fn frames_waiting(&self) -> usize {
        self.inbound.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// As GET_LINK_STATUS reports it.
    fn link_is_up(&self) -> bool {
        self.lock().link_up()
    }
    /// A HILINK 7 event on AEQ 0 each way (when the PF is ACTIVE).
    fn flap_link(self: &Arc<Self>, down_for: Duration) {
        self.lock().down_until = Some(Instant::now() + down_for);
    }
    fn plug_cable(self: &Arc<Self>, connected: bool) {
        self.lock().cable = connected;
    }

    fn exact_counters(&self) -> Sp670Counters {
        self.lock().counters
    }
    fn frame_counts(&self) -> FrameCounts {
        let c = self.lock().counters;
        FrameCounts {
            rx_delivered: c.rx_delivered,
            rx_dropped: c.rx_no_buffer + c.rx_filtered,
            tx_sent: c.tx_sent,
            tx_dropped: c.tx_dropped,
        }
    }
    fn named_counters(&self) -> Vec<(&'static str, u64)> {
        let c = self.lock().counters;
        vec![
            ("rx_delivered", c.rx_delivered),
            ("tx_sent", c.tx_sent),
            ("rx_no_buffer", c.rx_no_buffer),
            ("rx_filtered", c.rx_filtered),
            ("tx_dropped", c.tx_dropped),
            ("mgmt_commands", c.mgmt_commands),
            ("cmdq_commands", c.cmdq_commands),
            ("aeq_elements", c.aeq_elements),
        ]
    }
}

/// What only the SP670 model has.
impl ModelPort<Sp670State> {
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
    /// A vport counter (L2NIC 9 order, [`super::vport_stat`]).
    pub fn vport_stat(&self, i: usize) -> u64 {
        self.shared.lock().stats.vport[i]
    }
    /// WQ pages SQ `q` spans once started (1: 0-level CLA; docs/hw/hinic3.md §9.3), `None` while not started.
    pub fn sq_pages(&self, q: usize) -> Option<usize> {
        self.shared.lock().sqs.get(q).and_then(|s| s.as_ref().map(|s| s.pages.count()))
    }
    /// WQ pages RQ `q` spans once started, as for [`Self::sq_pages`].
    pub fn rq_pages(&self, q: usize) -> Option<usize> {
        self.shared.lock().rqs.get(q).and_then(|r| r.as_ref().map(|r| r.pages.count()))
    }
    /// Physical-port counter `i` in MAG 151's order (docs/hw/hinic3.md §13): 0 to 41 TX, 42 to 85 RX.
    pub fn port_stat(&self, i: usize) -> u64 {
        let c = self.shared.lock();
        c.stats.port_tx.iter().chain(c.stats.port_rx.iter()).nth(i).copied().unwrap_or(0)
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
    /// Messages signalled so far on each MSI-X vector, whether or not a sink was connected.
    pub fn irq_counts(&self) -> Vec<u64> {
        self.shared.lock().msix.vectors.iter().map(|v| v.sent).collect()
    }
    /// Length in elements of AEQ `q` (0 while it is off, docs/hw/hinic3.md §5.2).
    pub fn aeq_len(&self, q: usize) -> u32 {
        self.shared.lock().aeqs.get(q).map_or(0, |a| a.len())
    }
    /// PF status (FUNC_ATTR6 15:0).
    pub fn pf_status(&self) -> u32 {
        self.shared.lock().pf_status
    }
    /// Events posted and not acknowledged: (module, cmd, MSG_ID).
    pub fn unacked_events(&self) -> Vec<(u8, u16, u8)> {
        self.shared.lock().events.unacked()
    }
}
