//! The model's handles: the cfg BAR (big-endian CSRs), the mgmt BAR (PPF/MPF election), the doorbell BAR, the
//! port handle with wires, fault injection and the model thread (docs/hw/hinic3.md §2, §3).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use crossbeam_queue::SegQueue;
use pktio::bar::RegisterSpace;

use super::aeq::Aeq;
use super::cmdq::MAX_CMDQS;
use super::regs::*;
use super::rx::Drop as RxDrop;
use super::{Core, Sp670Config, Sp670Counters, Sp670RxError, DEVICE_HINIC3_PF, VENDOR_HUAWEI};
use crate::dma::IovaMap;
use crate::fault::{Fault, FaultLog};
use crate::pci::PciIdentity;
use crate::tap::TapWire;

/// Frames waiting at the MAC (bounded like a packet buffer).
const INBOUND_MAX: usize = 4096;
/// A doorbell value waiting for the model: bit 31 set until it is taken.
const DB_PENDING: u32 = 1 << 31;

enum Sink {
    Capture,
    Peer(Weak<Shared>),
    Tap(Arc<TapWire>),
}

/// State shared by the BARs, the port handles and the model thread.
pub(crate) struct Shared {
    config: Sp670Config,
    core: Mutex<Core>,
    faults: Arc<FaultLog>,
    dma: Arc<IovaMap>,
    /// Doorbells, written without the model lock: the PI with [`DB_PENDING`].
    sq_db: Box<[AtomicU32]>,
    rq_db: Box<[AtomicU32]>,
    cmdq_db: [AtomicU32; MAX_CMDQS],
    /// FUNC_ATTR4 bit 0: doorbells are ignored while set (docs/hw/hinic3.md §3.1, the flush of §14.5).
    db_disabled: AtomicBool,
    /// The low dword of a doorbell written as two 32-bit stores, per 8-byte slot.
    db_low: Mutex<Vec<Option<u32>>>,
    inbound: Mutex<VecDeque<(Vec<u8>, Option<Sp670RxError>)>>,
    sink: Mutex<Sink>,
    captured: SegQueue<Vec<u8>>,
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

    fn fault(&self, what: String) {
        self.faults.record(Fault::Protocol { what });
    }

    /// Processes everything pending now; returns the work done (0: idle).
    /// Frames the kernel sent into a TAP wire (at most 64 a step).
    fn pump_tap(&self) -> usize {
        let tap = match &*self.sink.lock().unwrap_or_else(|e| e.into_inner()) {
            Sink::Tap(tap) => tap.clone(),
            _ => return 0,
        };
        let mut n = 0;
        while n < 64 {
            let Some(data) = tap.recv() else { break };
            self.arrive(data, None);
            n += 1;
        }
        n
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
            let sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
            match &*sink {
                Sink::Capture => out.into_iter().for_each(|f| self.captured.push(f)),
                Sink::Tap(tap) => out.iter().for_each(|f| tap.send(f)),
                Sink::Peer(p) => {
                    if let Some(p) = p.upgrade() {
                        out.into_iter().for_each(|f| {
                            p.arrive(f, None);
                        });
                    }
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

// ---- cfg BAR ---------------------------------------------------------------------------------------------------------

/// The cfg BAR (BAR1 of the PF): the function CSRs, every one big-endian on the bus (docs/hw/hinic3.md §0.1, §3).
#[derive(Clone)]
pub struct Sp670CfgBar {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Sp670CfgBar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sp670CfgBar")
    }
}

impl Sp670CfgBar {
    fn read_logical(&self, off: usize) -> u32 {
        let c = self.shared.lock();
        let cfg = &c.config;
        let aeq = &c.aeqs[c.aeq_indir];
        match off {
            FUNC_ATTR0 => ATTR0_FUNC_IDX.val(cfg.func_id.into()) | ATTR0_P2P_IDX.val(cfg.port_id.into()),
            FUNC_ATTR1 => {
                let ready = if c.fw_ready() { ATTR1_MGMT_INIT_DONE | ATTR1_PF_INIT } else { 0 };
                ATTR1_PPF_IDX.val(cfg.func_id.into()) | ATTR1_AEQS_LOG2.val(cfg.num_aeqs.trailing_zeros()) | ready
            }
            FUNC_ATTR2 => ATTR2_CEQS.val(cfg.num_ceqs) | ATTR2_DMA_ATTR_LOG2.val(0) | ATTR2_IRQS.val(cfg.num_irqs),
            FUNC_ATTR3 => 0,
            FUNC_ATTR4 => c.attr4,
            FUNC_ATTR5 => c.attr5,
            FUNC_ATTR6 => ATTR6_PF_STATUS.val(c.pf_status) | ATTR6_MAX_QUEUES.val(cfg.max_queues.into()),
            o if (MBOX_DATA..MBOX_DATA + 64).contains(&o) => c.mbox.window[(o - MBOX_DATA) / 4],
            MBOX_CONTROL => c.mbox.control,
            MBOX_INT_OFFSET => c.mbox.int_offset,
            MBOX_RESULT_H => c.mbox.result_hi,
            MBOX_RESULT_L => c.mbox.result_lo,
            AEQ_CTRL_0 => aeq.ctrl0,
            AEQ_CTRL_1 => aeq.ctrl1,
            AEQ_CONS_IDX => aeq.ci,
            AEQ_PROD_IDX => aeq.pi,
            AEQ_INDIR_IDX => c.aeq_indir as u32,
            o if (AEQ_PAGE_HI..AEQ_PAGE_HI + 32).contains(&o) => {
                let p = aeq.pages[(o - AEQ_PAGE_HI) / 8];
                if o % 8 == 0 {
                    (p >> 32) as u32
                } else {
                    p as u32
                }
            }
            _ => 0,
        }
    }

    fn write_logical(&self, off: usize, v: u32) {
        let mut c = self.shared.lock();
        let q = c.aeq_indir;
        match off {
            FUNC_ATTR4 | FUNC_ATTR5 => {
                if v & !ATTR45_DISABLED != 0 {
                    c.fault(format!("FUNC_ATTR{} = {v:#010x}: only bit 0 is defined", 4 + (off - FUNC_ATTR4) / 4));
                } else if off == FUNC_ATTR4 {
                    c.attr4 = v;
                    self.shared.db_disabled.store(v & ATTR45_DISABLED != 0, Ordering::Release);
                } else {
                    c.attr5 = v;
                }
            }
            FUNC_ATTR6 => {
                let st = ATTR6_PF_STATUS.get(v);
                let most = u32::from(c.config.max_queues);
                if ATTR6_MAX_QUEUES.get(v) != most || v & Field::new(21, 16).mask() != 0 {
                    c.fault(format!("FUNC_ATTR6 = {v:#010x}: most queues (31:23, read-only) must be written back as {most}, bits 21:16 zero (a missing byte swap? docs/hw/hinic3.md §0.1)"));
                } else if ![PF_STATUS_INIT, PF_STATUS_ACTIVE, PF_STATUS_FLR_START, PF_STATUS_FLR_DONE].contains(&st) {
                    c.fault(format!("FUNC_ATTR6 = {v:#010x}: PF status {st:#x} is none of 0x00/0x11/0x12/0x13 (a missing byte swap? docs/hw/hinic3.md §0.1)"));
                } else {
                    c.pf_status = st;
                    if st != PF_STATUS_ACTIVE {
                        c.reported_link = false;
                    }
                }
            }
            AEQ_CI_SIMPLE_INDIR => {
                let idx = AEQ_CI_IDX.get(v) as usize;
                if idx >= c.config.num_aeqs || AEQ_CI_CI.get(v) >= c.aeqs[idx].len().max(1) {
                    c.fault(format!(
                        "AEQ_CI_SIMPLE_INDIR = {v:#010x}: AEQ {idx} / CI {} out of range",
                        AEQ_CI_CI.get(v)
                    ));
                } else {
                    c.aeqs[idx].ci = AEQ_CI_CI.get(v);
                }
            }
            FUNC_MSI_CLR_WR => {
                let idx = MSI_CLR_IDX.get(v) as usize;
                if idx >= c.msix_masked.len() || v & Field::new(21, 5).mask() != 0 {
                    c.fault(format!(
                        "FUNC_MSI_CLR_WR = {v:#010x}: vector {idx} of {} or reserved bits",
                        c.msix_masked.len()
                    ));
                } else if v & bit(1) != 0 {
                    c.msix_masked[idx] = true;
                } else if v & bit(2) != 0 {
                    c.msix_masked[idx] = false;
                }
            }
            o if (MBOX_DATA..MBOX_DATA + 64).contains(&o) => c.mbox.window[(o - MBOX_DATA) / 4] = v,
            MBOX_CONTROL => {
                c.mbox.control = v;
                if v & MBOX_CTRL_TX_STATUS != 0 {
                    c.mbox.pending = true;
                    drop(c);
                    self.shared.kick();
                }
            }
            MBOX_INT_OFFSET => c.mbox.int_offset = v,
            MBOX_RESULT_H => c.mbox.result_hi = v,
            MBOX_RESULT_L => c.mbox.result_lo = v,
            AEQ_INDIR_IDX => {
                if v as usize >= c.config.num_aeqs {
                    c.fault(format!("AEQ_INDIR_IDX = {v:#x}: the function has {} AEQs", c.config.num_aeqs));
                } else {
                    c.aeq_indir = v as usize;
                }
            }
            AEQ_CTRL_0 => {
                if v & AEQ_CTRL0_RESERVED != 0 {
                    c.fault(format!(
                        "AEQ_CTRL_0 = {v:#010x}: reserved bits {:#x} set (a missing byte swap?)",
                        v & AEQ_CTRL0_RESERVED
                    ));
                } else {
                    c.aeqs[q].ctrl0 = v;
                }
            }
            AEQ_CTRL_1 => match Aeq::check_ctrl1(v) {
                Ok(()) => c.aeqs[q].ctrl1 = v,
                Err(e) => c.fault(e),
            },
            AEQ_PROD_IDX => {
                if v != 0 {
                    c.fault(format!("AEQ_PROD_IDX = {v:#x}: only 0 is written, at init (docs/hw/hinic3.md §5.3)"));
                }
                c.aeqs[q].pi = 0;
                c.aeqs[q].pass_odd = false;
                c.aeqs[q].ci = 0;
            }
            o if (AEQ_PAGE_HI..AEQ_PAGE_HI + 32).contains(&o) => {
                let p = &mut c.aeqs[q].pages[(o - AEQ_PAGE_HI) / 8];
                *p = if o % 8 == 0 {
                    (*p & 0xFFFF_FFFF) | u64::from(v) << 32
                } else {
                    (*p & !0xFFFF_FFFF) | u64::from(v)
                };
            }
            FUNC_ATTR0..=FUNC_ATTR3 | AEQ_CONS_IDX => c.fault(format!("write of {v:#010x} to read-only CSR {off:#x}")),
            _ => {
                drop(c);
                self.shared.faults.record(Fault::Register {
                    offset: off,
                    what: format!("write of {v:#010x} to a CSR the model does not define"),
                });
            }
        }
    }
}

impl RegisterSpace for Sp670CfgBar {
    fn read32(&self, offset: usize) -> u32 {
        if !offset.is_multiple_of(4) || offset + 4 > CFG_BAR_LEN {
            self.shared
                .faults
                .record(Fault::Register { offset, what: "unaligned or out-of-range cfg BAR read".into() });
            return u32::MAX;
        }
        // Big-endian on the bus: a little-endian CPU's plain load sees the bytes swapped.
        self.read_logical(offset).swap_bytes()
    }
    fn write32(&self, offset: usize, value: u32) {
        if !offset.is_multiple_of(4) || offset + 4 > CFG_BAR_LEN {
            self.shared
                .faults
                .record(Fault::Register { offset, what: "unaligned or out-of-range cfg BAR write".into() });
            return;
        }
        self.write_logical(offset, value.swap_bytes());
    }
    fn len(&self) -> usize {
        CFG_BAR_LEN
    }
}

// ---- mgmt BAR ----------------------------------------------------------------------------------------------------------

/// The mgmt BAR (BAR3): the PPF and MPF election registers, big-endian (docs/hw/hinic3.md §3.1).
#[derive(Clone)]
pub struct Sp670MgmtBar {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Sp670MgmtBar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sp670MgmtBar")
    }
}

impl RegisterSpace for Sp670MgmtBar {
    fn read32(&self, offset: usize) -> u32 {
        let c = self.shared.lock();
        let v = match offset {
            PPF_ELECTION => c.ppf,
            MPF_ELECTION => c.mpf,
            _ => 0,
        };
        v.swap_bytes()
    }
    fn write32(&self, offset: usize, value: u32) {
        let v = value.swap_bytes();
        let mut c = self.shared.lock();
        let own = u32::from(c.config.func_id);
        match offset {
            // The model's PF is alone on its chip: its index always wins the election.
            PPF_ELECTION | MPF_ELECTION => {
                let field = if offset == PPF_ELECTION { Field::new(5, 0) } else { Field::new(4, 0) };
                if field.get(v) != own & field.mask() || v & !field.mask() != 0 {
                    c.fault(format!(
                        "mgmt BAR {offset:#x} = {v:#010x}: an election writes only this function's index {own}"
                    ));
                } else if offset == PPF_ELECTION {
                    c.ppf = v;
                } else {
                    c.mpf = v;
                }
            }
            _ => {
                self.shared.faults.record(Fault::Register { offset, what: format!("mgmt BAR write of {value:#010x}") })
            }
        }
    }
    fn len(&self) -> usize {
        MGMT_BAR_LEN
    }
}

// ---- doorbell BAR ------------------------------------------------------------------------------------------------------

/// The doorbell BAR (BAR4): 4 KiB pages; a doorbell is one 64-bit little-endian store at `page + (PI & 0xFF) × 8`
/// (docs/hw/hinic3.md §8.4, §10.1). Use [`Sp670DbBar::write64`]; through `RegisterSpace` the low dword is latched
/// and the write of the high dword (offset + 4) rings.
#[derive(Clone)]
pub struct Sp670DbBar {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Sp670DbBar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sp670DbBar")
    }
}

impl Sp670DbBar {
    /// One doorbell: the 64-bit store at `offset` (8-byte aligned).
    pub fn write64(&self, offset: usize, value: u64) {
        let s = &self.shared;
        if !offset.is_multiple_of(8) || offset + 8 > DB_BAR_LEN {
            s.faults.record(Fault::Register { offset, what: "unaligned or out-of-range doorbell".into() });
            return;
        }
        if s.db_disabled.load(Ordering::Acquire) {
            return; // doorbells off (FUNC_ATTR4): the write is lost, as on the device
        }
        let (low, high) = (value as u32, (value >> 32) as u32);
        let pi = DB_PI_HI.get(high) << 8 | ((offset % DB_PAGE) / 8) as u32;
        if high & !DB_PI_HI.mask() != 0 {
            return s.fault(format!("doorbell {value:#018x}: high dword bits above 7:0 set"));
        }
        match DB_SRC_TYPE.get(low) {
            0 => {
                let q = DB_COS.get(low) as usize;
                if low & DB_CFLAG == 0 || q >= MAX_CMDQS || low & !(DB_CFLAG | DB_COS.mask()) != 0 {
                    return s.fault(format!(
                        "cmdq doorbell {value:#018x}: queue type bit 23 must be 1 and the cmdq type below {MAX_CMDQS}"
                    ));
                }
                s.cmdq_db[q].store(pi | DB_PENDING, Ordering::Release);
            }
            1 => {
                let q = DB_QID.get(low) as usize;
                if q >= s.sq_db.len() || low & !(DB_QID.mask() | DB_CFLAG | DB_COS.mask() | DB_SRC_TYPE.mask()) != 0 {
                    return s.fault(format!(
                        "data-path doorbell {value:#018x}: queue {q} of {} or reserved bits",
                        s.sq_db.len()
                    ));
                }
                let db = if low & DB_CFLAG != 0 { &s.rq_db[q] } else { &s.sq_db[q] };
                db.store(pi | DB_PENDING, Ordering::Release);
            }
            t => return s.fault(format!("doorbell {value:#018x}: source type {t} (0 cmdq, 1 data path)")),
        }
        s.kick();
    }
}

impl RegisterSpace for Sp670DbBar {
    fn read32(&self, _offset: usize) -> u32 {
        0
    }
    fn write32(&self, offset: usize, value: u32) {
        let slot = offset / 8;
        let mut low = self.shared.db_low.lock().unwrap_or_else(|e| e.into_inner());
        if slot >= low.len() {
            drop(low);
            return self.shared.faults.record(Fault::Register { offset, what: "doorbell outside the BAR".into() });
        }
        if offset.is_multiple_of(8) {
            low[slot] = Some(value);
        } else if let Some(l) = low[slot].take() {
            drop(low);
            self.write64(offset - 4, u64::from(value) << 32 | u64::from(l));
        } else {
            drop(low);
            self.shared.fault(format!("doorbell high dword at {offset:#x} without its low dword first"));
        }
    }
    fn len(&self) -> usize {
        DB_BAR_LEN
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
            sink: Mutex::new(Sink::Capture),
            captured: SegQueue::new(),
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
        *self.shared.sink.lock().unwrap_or_else(|e| e.into_inner()) = Sink::Peer(Arc::downgrade(&other.shared));
        *other.shared.sink.lock().unwrap_or_else(|e| e.into_inner()) = Sink::Peer(Arc::downgrade(&self.shared));
    }
    /// Wires the port to a new TAP interface (the kernel is the link partner); returns its name.
    pub fn wire_to_tap(&self, name: &str) -> std::io::Result<String> {
        let tap = TapWire::open(name)?;
        let ifname = tap.name().to_string();
        *self.shared.sink.lock().unwrap_or_else(|e| e.into_inner()) = Sink::Tap(Arc::new(tap));
        self.shared.kick();
        Ok(ifname)
    }
    /// TX back to capture ([`Sp670Port::take_tx`]).
    pub fn unwire(&self) {
        *self.shared.sink.lock().unwrap_or_else(|e| e.into_inner()) = Sink::Capture;
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
        std::iter::from_fn(|| self.shared.captured.pop()).collect()
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
    /// While stalled, cmdq WQEs are never executed (their busy bit never sets).
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
    /// A hung SQ (`None`: all) stops fetching WQEs and writing its CI until released.
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
