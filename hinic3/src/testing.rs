//! Fakes for tests and the benchmark, not device models: [`FakeDb`], a doorbell BAR that remembers the last doorbell
//! rung on each page and decodes the producer index from it (docs/hw/hinic3.md §10.1); [`FakeFw`], a scripted firmware
//! behind fake cfg, mgmt and doorbell BARs for the bring-up tests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use drvkit::bar::RegisterSpace;

use crate::doorbell::PI_HI;
use crate::regs::{attr1, attr2, DB_PAGE};

/// Pages the fake doorbell BAR has.
pub const FAKE_DB_PAGES: usize = 4;

/// A doorbell BAR that records the last 64-bit store per page.
#[derive(Debug, Default)]
pub struct FakeDb {
    /// Per page: the last value, and the offset inside the page + 1 (0: never rung).
    last: [(AtomicU64, AtomicU64); FAKE_DB_PAGES],
}

impl FakeDb {
    /// The last doorbell of `page`: (information dword, producer index), if any.
    pub fn last(&self, page: usize) -> Option<(u32, u32)> {
        let off = self.last[page].1.load(Ordering::Acquire);
        if off == 0 {
            return None;
        }
        let v = self.last[page].0.load(Ordering::Acquire);
        let pi = (PI_HI.get((v >> 32) as u32) << 8) | ((off - 1) / 8) as u32;
        Some((v as u32, pi))
    }
}

impl RegisterSpace for FakeDb {
    fn read32(&self, _offset: usize) -> u32 {
        0
    }

    fn write32(&self, offset: usize, value: u32) {
        // A doorbell written as two halves is a driver bug on this device: record it as a torn value.
        let page = offset / DB_PAGE;
        self.last[page].0.store(value as u64 | 0xDEAD_0000_0000_0000, Ordering::Release);
        self.last[page].1.store((offset % DB_PAGE) as u64 + 1, Ordering::Release);
    }

    #[inline]
    fn write64(&self, offset: usize, value: u64) {
        let page = offset / DB_PAGE;
        self.last[page].0.store(value, Ordering::Release);
        self.last[page].1.store((offset % DB_PAGE) as u64 + 1, Ordering::Release);
    }

    fn len(&self) -> usize {
        FAKE_DB_PAGES * DB_PAGE
    }
}

/// Which BAR a [`FakeBar`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BarKind {
    /// The cfg BAR.
    Cfg,
    /// The mgmt BAR.
    Mgmt,
    /// The doorbell BAR.
    Db,
}

/// A management command the fake firmware received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MgmtCmd {
    /// Module.
    pub module: u8,
    /// Command.
    pub cmd: u16,
    /// The request body.
    pub body: Vec<u8>,
    /// The mailbox header it came with.
    pub header: crate::mbox::Header,
    /// MAILBOX_INT_OFFSET as the send left it.
    pub int_offset: u32,
}

/// A command-queue command the fake firmware received: the ucode command and its buffer as it sat in memory (big-endian
/// per dword).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdqCmd {
    /// Module.
    pub module: u8,
    /// Command.
    pub cmd: u8,
    /// The buffer bytes.
    pub buf: Vec<u8>,
}

/// How the fake firmware answers one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The request sent back with status 0 (what firmware does for SET-style commands).
    Echo,
    /// This status byte and body (the status goes into byte 0).
    Reply(u8, Vec<u8>),
    /// No answer at all (the write-back still comes).
    Silent,
}

/// The script: an answer per command.
pub type Responder = Box<dyn Fn(&MgmtCmd) -> Answer + Send>;

struct Fw {
    cfg: Vec<u32>,
    mgmt: Vec<u32>,
    aeq_pages: [u64; 4],
    aeq_pi: [usize; 4],
    aeq_wrap: [u32; 4],
    mgmt_log: Vec<MgmtCmd>,
    cmdq_log: Vec<CmdqCmd>,
    cmdq_ring: u64,
    data_db: Vec<(usize, u64)>,
    respond: Responder,
}

/// A scripted firmware behind three fake BARs, for the bring-up tests: the register file is big-endian on the bus; a
/// mailbox send (DMA mode) is answered at once with a write-back and an AEQ 1 answer; the command queue completes each
/// WQE when its doorbell rings. It follows docs/hw/hinic3.md, and is no device model: it checks little and answers what
/// it is scripted to.
pub struct FakeFw {
    fw: Mutex<Fw>,
}

/// One BAR of a [`FakeFw`].
pub struct FakeBar {
    fw: Arc<FakeFw>,
    kind: BarKind,
}

/// Bytes of the fake cfg BAR.
const CFG_LEN: usize = 0x1000;
/// Bytes of the fake mgmt BAR.
const MGMT_LEN: usize = 0x8000;

impl FakeFw {
    /// A ready PF with global function index `func_id`, four AEQs, 8 IRQs.
    pub fn new(func_id: u16, respond: Responder) -> Arc<FakeFw> {
        let mut cfg = vec![0u32; CFG_LEN / 4];
        cfg[0] = (func_id as u32).to_be();
        cfg[1] = (attr1::MGMT_INIT_DONE | attr1::AEQS_LOG2.val(2)).to_be();
        cfg[2] = (attr2::IRQS.val(8) | 4).to_be();
        Arc::new(FakeFw {
            fw: Mutex::new(Fw {
                cfg,
                mgmt: vec![0; MGMT_LEN / 4],
                aeq_pages: [0; 4],
                aeq_pi: [0; 4],
                aeq_wrap: [1; 4],
                mgmt_log: Vec::new(),
                cmdq_log: Vec::new(),
                cmdq_ring: 0,
                data_db: Vec::new(),
                respond,
            }),
        })
    }

    /// The three BARs.
    pub fn bars(self: &Arc<Self>) -> crate::Bars<FakeBar> {
        crate::Bars {
            cfg: Arc::new(FakeBar { fw: self.clone(), kind: BarKind::Cfg }),
            mgmt: Some(Arc::new(FakeBar { fw: self.clone(), kind: BarKind::Mgmt })),
            db: Arc::new(FakeBar { fw: self.clone(), kind: BarKind::Db }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Fw> {
        self.fw.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A cfg register in CPU order.
    pub fn reg(&self, reg: crate::regs::Reg) -> u32 {
        u32::from_be(self.lock().cfg[reg.0 / 4])
    }

    /// Sets a cfg register (CPU order).
    pub fn set_reg(&self, reg: crate::regs::Reg, v: u32) {
        self.lock().cfg[reg.0 / 4] = v.to_be();
    }

    /// Every management command so far.
    pub fn mgmt_log(&self) -> Vec<MgmtCmd> {
        self.lock().mgmt_log.clone()
    }

    /// Every command-queue command so far.
    pub fn cmdq_log(&self) -> Vec<CmdqCmd> {
        self.lock().cmdq_log.clone()
    }

    /// Data-path doorbells so far: (offset in the BAR, value).
    pub fn data_doorbells(&self) -> Vec<(usize, u64)> {
        self.lock().data_db.clone()
    }

    /// Posts a management-CPU message to AEQ `q` (inline segments), as the firmware does for events.
    pub fn post(&self, q: usize, h: crate::mbox::Header, body: &[u8]) {
        let mut fw = self.lock();
        post_locked(&mut fw, q, h, body);
    }

    fn mbox_send(&self) {
        let mut fw = self.lock();
        let w: Vec<u32> = (0..8).map(|i| u32::from_be(fw.cfg[(0x80 >> 2) + i])).collect();
        let h = crate::mbox::Header::decode(w[0] as u64 | (w[1] as u64) << 32);
        let iova = (w[3] as u64) << 32 | w[4] as u64;
        let len = w[5] as usize;
        let body = if h.dma && iova != 0 {
            // SAFETY: the driver's mailbox body buffer of at least `len` bytes (IOVA = VA with the identity mapper),
            // which it does not touch until the write-back.
            unsafe { std::slice::from_raw_parts(iova as usize as *const u8, len) }.to_vec()
        } else {
            Vec::new()
        };
        let wb = (u32::from_be(fw.cfg[0x108 / 4]) as u64) << 32 | u32::from_be(fw.cfg[0x10C / 4]) as u64;
        if wb != 0 {
            // Status 0xFF (done) in the low byte of the big-endian u64 (docs/hw/hinic3.md §6.2). SAFETY: the 16-byte
            // write-back area the driver registered (IOVA = VA).
            unsafe { (wb as usize as *mut u64).write_volatile(0xFFu64.to_be()) };
        }
        let int_offset = u32::from_be(fw.cfg[0x104 / 4]);
        let c = MgmtCmd { module: h.module, cmd: h.cmd, body, header: h, int_offset };
        fw.mgmt_log.push(c.clone());
        if h.answer || h.no_ack {
            return; // an acknowledgement of an event
        }
        // The SYNC queue's ring (cmdq_id 0): the only one commands go through.
        if h.module == 0 && h.cmd == crate::mgmt::comm::SET_CMDQ_CTXT && c.body.len() >= 24 && c.body[10] == 0 {
            let mut q = [0u8; 8];
            q.copy_from_slice(&c.body[16..24]);
            fw.cmdq_ring = (u64::from_le_bytes(q) & ((1 << 52) - 1)) << 12;
        }
        let (status, mut ans) = match (fw.respond)(&c) {
            Answer::Echo => (0, c.body.clone()),
            Answer::Reply(s, b) => (s, b),
            Answer::Silent => return,
        };
        if ans.is_empty() {
            ans.push(0);
        }
        ans[0] = status;
        let a = crate::mbox::Header {
            src: crate::mbox::MGMT_FUNC,
            source: true,
            aeq_id: 1,
            msg_id: h.msg_id,
            cmd: h.cmd,
            module: h.module,
            msg_len: ans.len() as u16,
            answer: true,
            ..Default::default()
        };
        post_locked(&mut fw, 1, a, &ans);
    }

    fn cmdq_doorbell(&self, off: usize, v: u64) {
        let mut fw = self.lock();
        let pi = ((crate::doorbell::PI_HI.get((v >> 32) as u32) << 8) as usize | (off / 8)) % crate::cmdq::CMDQ_DEPTH;
        let idx = (pi + crate::cmdq::CMDQ_DEPTH - 1) % crate::cmdq::CMDQ_DEPTH;
        let wqe = (fw.cmdq_ring as usize + idx * 64) as *mut u32;
        // SAFETY: the command queue ring the driver registered with COMM 20 (IOVA = VA), 64 WQEs of 64 bytes; the
        // driver handed WQE `idx` over with this doorbell.
        unsafe {
            let ctrl = u32::from_le(wqe.add(3).read_volatile());
            let hi = u32::from_le(wqe.add(8).read_volatile()) as u64;
            let lo = u32::from_le(wqe.add(9).read_volatile()) as u64;
            let len = u32::from_le(wqe.add(10).read_volatile()) as usize;
            let buf = std::slice::from_raw_parts((hi << 32 | lo) as usize as *const u8, len).to_vec();
            fw.cmdq_log.push(CmdqCmd { module: (ctrl >> 24 & 0x1F) as u8, cmd: (ctrl >> 16) as u8, buf });
            wqe.add(2).write_volatile(0);
            wqe.add(4).write_volatile(0);
            wqe.add(5).write_volatile(0);
            wqe.add(3).write_volatile((ctrl | 1 << 31).to_le());
        }
    }
}

/// Writes `body` as inline segments into AEQ `q`'s page (each element big-endian per dword, docs/hw/hinic3.md §5.2).
fn post_locked(fw: &mut Fw, q: usize, h: crate::mbox::Header, body: &[u8]) {
    let page = fw.aeq_pages[q];
    if page == 0 {
        return;
    }
    let chunks: Vec<&[u8]> = if body.is_empty() { vec![&[][..]] } else { body.chunks(48).collect() };
    let n = chunks.len();
    for (seq, seg) in chunks.into_iter().enumerate() {
        let sh = crate::mbox::Header { seq_id: seq as u8, seg_len: seg.len() as u8, last: seq + 1 == n, ..h };
        let mut data = [0u8; 60];
        data[..8].copy_from_slice(&sh.encode().to_le_bytes());
        data[8..8 + seg.len()].copy_from_slice(seg);
        let at = (page as usize + fw.aeq_pi[q] * 64) as *mut u8;
        let desc = crate::aeq::desc::TYPE.val(crate::aeq::desc::TYPE_MSG_FROM_MGMT)
            | crate::aeq::desc::WRAP.val(fw.aeq_wrap[q]);
        for k in 0..15 {
            let w = u32::from_le_bytes([data[4 * k], data[4 * k + 1], data[4 * k + 2], data[4 * k + 3]]);
            // SAFETY: the AEQ page the driver registered (64 elements of 64 bytes, IOVA = VA), aeq_pi < 64.
            unsafe { at.add(4 * k).cast::<[u8; 4]>().write_volatile(w.to_be_bytes()) };
        }
        // SAFETY: as above; the descriptor last, so the driver sees a whole element.
        unsafe { at.add(60).cast::<[u8; 4]>().write_volatile(desc.to_be_bytes()) };
        fw.aeq_pi[q] += 1;
        if fw.aeq_pi[q] == crate::aeq::AEQ_LEN {
            fw.aeq_pi[q] = 0;
            fw.aeq_wrap[q] ^= 1;
        }
    }
}

impl RegisterSpace for FakeBar {
    fn read32(&self, offset: usize) -> u32 {
        let fw = self.fw.lock();
        match self.kind {
            BarKind::Cfg => fw.cfg[offset / 4],
            BarKind::Mgmt => fw.mgmt[offset / 4],
            BarKind::Db => 0,
        }
    }

    fn write32(&self, offset: usize, value: u32) {
        match self.kind {
            BarKind::Cfg => {
                {
                    let mut fw = self.fw.lock();
                    fw.cfg[offset / 4] = value;
                    let v = u32::from_be(value);
                    let sel = u32::from_be(fw.cfg[0x210 / 4]) as usize & 3;
                    match offset {
                        0x240 => fw.aeq_pages[sel] = (fw.aeq_pages[sel] & 0xFFFF_FFFF) | (v as u64) << 32,
                        0x244 => fw.aeq_pages[sel] = (fw.aeq_pages[sel] & !0xFFFF_FFFF) | v as u64,
                        0x20C => {
                            fw.aeq_pi[sel] = 0;
                            fw.aeq_wrap[sel] = 1;
                        }
                        _ => {}
                    }
                }
                if offset == 0x100 {
                    self.fw.mbox_send();
                }
            }
            BarKind::Mgmt => self.fw.lock().mgmt[offset / 4] = value,
            BarKind::Db => self.write64(offset & !7, value as u64),
        }
    }

    fn write64(&self, offset: usize, value: u64) {
        match self.kind {
            BarKind::Db if offset < DB_PAGE => self.fw.cmdq_doorbell(offset, value),
            BarKind::Db => self.fw.lock().data_db.push((offset, value)),
            _ => {
                self.write32(offset, value as u32);
                self.write32(offset + 4, (value >> 32) as u32);
            }
        }
    }

    fn len(&self) -> usize {
        match self.kind {
            BarKind::Cfg => CFG_LEN,
            BarKind::Mgmt => MGMT_LEN,
            BarKind::Db => FAKE_DB_PAGES * DB_PAGE,
        }
    }
}
