//! The SP670 test rig: the notes' register offsets typed out again, the memory layout, the mailbox, cmdq and ring helpers every sp670_*.rs test file uses.

// Each test file uses a part of the rig (and of what it re-exports).
#![allow(dead_code, unused_imports)]

pub use std::sync::Arc;
pub use std::time::{Duration, Instant};

pub use drvkit::bar::RegisterSpace;
pub use drvkit::dma::{DmaMapper, DmaMapping};
pub use hugepage::{Allocator, DmaMemory};
pub use nicsim::sp670::{module, STATUS_BAD, STATUS_UNSUPPORTED};
pub use nicsim::{net, Sp670, Sp670Config, Sp670Port, Sp670RxError};

// ---- registers (docs/hw/hinic3.md §3, §5.2, §6.2) ------------------------------------------------------------------

pub const FUNC_ATTR0: usize = 0x000;
pub const FUNC_ATTR1: usize = 0x004;
pub const FUNC_ATTR2: usize = 0x008;
pub const FUNC_ATTR4: usize = 0x010;
pub const FUNC_ATTR5: usize = 0x014;
pub const FUNC_ATTR6: usize = 0x018;
pub const AEQ_CI: usize = 0x050;
pub const MSI_CLR: usize = 0x058;
pub const MBOX_WIN: usize = 0x080;
pub const MBOX_CONTROL: usize = 0x100;
pub const MBOX_INT_OFFSET: usize = 0x104;
pub const MBOX_RESULT_H: usize = 0x108;
pub const MBOX_RESULT_L: usize = 0x10C;
pub const AEQ_CTRL_0: usize = 0x200;
pub const AEQ_CTRL_1: usize = 0x204;
pub const AEQ_PROD: usize = 0x20C;
pub const AEQ_INDIR: usize = 0x210;
pub const AEQ_PAGE: usize = 0x240;
pub const PPF_ELECTION: usize = 0x6000;

// ---- memory layout of the rig ------------------------------------------------------------------------------------

pub const MEM: usize = 5 << 20;
pub const AEQ_MEM: usize = 0x0000; // AEQ q at + q × 4 KiB
pub const AEQ_LEN: u32 = 64;
pub const MBOX_WB: usize = 0x4000;
pub const MBOX_BODY: usize = 0x4800;
pub const CI_SLOTS: usize = 0x5000; // SQ q at + q × 64
pub const CMDQ_BUF: usize = 0x8000;
pub const CMDQ_RING: usize = 0x40000;
pub const CMDQ_DEPTH: u32 = 64;
pub const CMDQ_ASYNC_RING: usize = 0x80000;
/// Work queues sit on 256 KiB (docs/hw/hinic3.md §9.3), the rig's memory itself starting on that boundary.
pub const WQ_ALIGN: usize = 256 << 10;
pub const SQ_RING: usize = 0x100000; // q at + q × WQ_ALIGN (queues 0 to 3)
pub const RQ_RING: usize = 0x200000; // q at + q × WQ_ALIGN (queues 0 to 3)
pub const CQES: usize = 0x300000; // q at + q × 8 KiB
pub const RX_BUF: usize = 0x380000; // q, i at + (q × 64 + i) × 2 KiB
pub const TX_BUF: usize = 0x400000; // i at + i × 16 KiB
pub const DEPTH: u32 = 64;
pub const BUF: usize = 2048;
pub const FUNC: u16 = 0;

pub struct Rig {
    pub port: Sp670Port,
    pub cfg: nicsim::Sp670CfgBar,
    pub db: nicsim::Sp670DbBar,
    pub mem: Arc<DmaMemory>,
    /// Offset of the rig's byte 0 in `mem` (its first 256 KiB-aligned IOVA).
    pub base: usize,
    pub _map: DmaMapping,
    pub msg_id: u64,
    pub aeq_ci: [u32; 4],
    pub aeq_wrapped: [bool; 4],
    pub cmdq_pi: u32,
    pub cmdq_wrapped: bool,
    pub sq_pi: Vec<u32>,
    pub sq_owner: Vec<bool>,
    pub rq_pi: Vec<u32>,
    pub rq_ci: Vec<u32>,
    /// `init_and_start` without L2NIC 13, 14, 26 and 27 (a driver that leaves LRO and VLAN offloads unset).
    pub leave_offloads_unset: bool,
    /// While waiting for an answer, acknowledge events from AEQ 0 as a driver must (a model holds an answer posted
    /// with an event until then, docs/hw/hinic3.md §6.5) and keep them in `events_seen`; unset, an event there fails
    /// the wait.
    pub ack_events_while_waiting: bool,
    /// Events acknowledged by [`Rig::answer`]: (header, body).
    pub events_seen: Vec<(u64, Vec<u8>)>,
}

pub fn poll(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_micros(50));
    }
}

pub fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Swaps every 32-bit word (the cmdq buffer order of docs/hw/hinic3.md §0.1).
pub fn swab_dwords(b: &[u8]) -> Vec<u8> {
    b.chunks(4).flat_map(|c| c.iter().rev().copied().collect::<Vec<_>>()).collect()
}

// Mailbox header fields (docs/hw/hinic3.md §6.1).
#[allow(clippy::too_many_arguments)] // one argument per header field
pub fn header(
    module: u8,
    cmd: u16,
    msg_id: u64,
    msg_len: usize,
    seg_len: usize,
    seq: u64,
    last: bool,
    dma: bool,
) -> u64 {
    u64::from(FUNC)
        | 1 << 15
        | 1 << 16
        | (msg_id & 0xF) << 18
        | u64::from(cmd) << 22
        | (msg_len as u64) << 32
        | u64::from(module) << 43
        | (seg_len as u64) << 48
        | u64::from(dma) << 55
        | seq << 56
        | u64::from(last) << 62
}

impl Rig {
    pub fn new(config: Sp670Config) -> Rig {
        Rig::with(Sp670::new(config))
    }

    pub fn with(port: Sp670Port) -> Rig {
        let mem = Arc::new(Allocator::no_huge().allocate(MEM + WQ_ALIGN).expect("memory"));
        let iova = mem.iova_at(0).expect("an IOVA") as usize;
        let base = (WQ_ALIGN - iova % WQ_ALIGN) % WQ_ALIGN;
        let map = port.dma_mapper().map(&mem).expect("map");
        let n = port.config().max_queues as usize;
        Rig {
            cfg: port.cfg_bar(),
            db: port.db_bar(),
            port,
            mem,
            base,
            _map: map,
            msg_id: 0,
            aeq_ci: [0; 4],
            aeq_wrapped: [false; 4],
            cmdq_pi: 0,
            cmdq_wrapped: true,
            sq_pi: vec![0; n],
            sq_owner: vec![true; n],
            rq_pi: vec![0; n],
            rq_ci: vec![0; n],
            leave_offloads_unset: false,
            ack_events_while_waiting: false,
            events_seen: Vec::new(),
        }
    }

    /// A CSR read: big-endian on the bus (docs/hw/hinic3.md §0.1).
    pub fn rd(&self, off: usize) -> u32 {
        u32::from_be(self.cfg.read32(off))
    }
    pub fn wr(&self, off: usize, v: u32) {
        self.cfg.write32(off, v.to_be())
    }
    pub fn iova(&self, off: usize) -> u64 {
        self.mem.iova_at(self.base + off).unwrap()
    }
    pub fn write_mem(&self, off: usize, data: &[u8]) {
        // SAFETY: in bounds of the live mapping; the model touches it only after the doorbell or trigger that follows.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.mem.as_ptr().add(self.base + off), data.len()) }
    }
    pub fn read_mem(&self, off: usize, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        // SAFETY: in bounds of the live mapping.
        unsafe { std::ptr::copy_nonoverlapping(self.mem.as_ptr().add(self.base + off), v.as_mut_ptr(), len) }
        v
    }
    pub fn step(&self) {
        self.port.step();
    }

    /// docs/hw/hinic3.md §3.2 and §5.3: readiness, attributes, PPF election, MSI-X masked, PF status INIT, the AEQs,
    /// the mailbox write-back area.
    pub fn bring_up(&mut self) {
        poll("management ready", Duration::from_secs(2), || self.rd(FUNC_ATTR1) & (1 << 30) != 0);
        assert_eq!(self.rd(FUNC_ATTR0) & 0xFFF, u32::from(FUNC));
        poll("doorbell and outbound enabled", Duration::from_secs(1), || {
            self.rd(FUNC_ATTR4) & 1 == 0 && self.rd(FUNC_ATTR5) & 1 == 0
        });
        let mgmt = self.port.mgmt_bar();
        let v = u32::from_be(mgmt.read32(PPF_ELECTION));
        mgmt.write32(PPF_ELECTION, ((v & !0x3F) | u32::from(FUNC)).to_be());
        assert_eq!(u32::from_be(mgmt.read32(PPF_ELECTION)) & 0x3F, u32::from(FUNC));
        let irqs = (self.rd(FUNC_ATTR2) >> 16) & 0x7FF;
        for i in 0..irqs {
            self.wr(MSI_CLR, 1 << 1 | i << 22);
        }
        self.wr(FUNC_ATTR6, self.rd(FUNC_ATTR6) & !0xFFFF);
        let naeqs = 1 << ((self.rd(FUNC_ATTR1) >> 8) & 3);
        for q in 0..naeqs {
            self.wr(AEQ_INDIR, q);
            self.wr(AEQ_CTRL_1, 0);
            self.wr(AEQ_PROD, 0);
            let page = self.iova(AEQ_MEM + q as usize * 4096);
            self.wr(AEQ_PAGE, (page >> 32) as u32);
            self.wr(AEQ_PAGE + 4, page as u32);
            self.wr(AEQ_CTRL_0, 0);
            self.wr(AEQ_CTRL_1, AEQ_LEN | 1 << 24);
            self.wr(AEQ_CI, q << 30);
        }
        let wb = self.iova(MBOX_WB);
        self.wr(MBOX_RESULT_H, (wb >> 32) as u32);
        self.wr(MBOX_RESULT_L, wb as u32);
    }

    pub fn wb_status(&self) -> u64 {
        u64::from_be_bytes(self.read_mem(MBOX_WB, 8).try_into().unwrap())
    }

    /// One mailbox segment: header and `dwords` through the window (big-endian per dword), then INT_OFFSET and
    /// CONTROL (docs/hw/hinic3.md §6.2, §6.3). Returns the write-back status.
    pub fn send_segment(&self, header: u64, dwords: &[u32], seg_len: usize) -> u64 {
        self.write_mem(MBOX_WB, &[0; 16]);
        self.wr(MBOX_WIN, header as u32);
        self.wr(MBOX_WIN + 4, (header >> 32) as u32);
        for (i, d) in dwords.iter().enumerate() {
            self.wr(MBOX_WIN + 8 + 4 * i, *d);
        }
        self.wr(MBOX_INT_OFFSET, (((seg_len + 8).div_ceil(4)) as u32) << 20 | 1 << 28);
        self.wr(MBOX_CONTROL, 1 << 1 | 0x1FFF << 16);
        self.step();
        let s = self.wb_status();
        assert_ne!(s & 0xFF, 0, "write-back not written");
        s
    }

    /// A request in DMA mode (docs/hw/hinic3.md §6.3): body in host memory, 16-byte descriptor with its XOR.
    pub fn send_dma(&mut self, module: u8, cmd: u16, body: &[u8]) -> u64 {
        self.msg_id = (self.msg_id + 1) & 0xF;
        self.write_mem(MBOX_BODY, body);
        let mut padded = body.to_vec();
        padded.resize(body.len().div_ceil(4) * 4, 0);
        let csum = padded.chunks(4).fold(0x5A5A_5A5A, |a, w| a ^ le32(w, 0));
        let iova = self.iova(MBOX_BODY);
        let h = header(module, cmd, self.msg_id, 16, 16, 0, true, true);
        self.send_segment(h, &[csum, (iova >> 32) as u32, iova as u32, body.len() as u32, 0, 0], 16)
    }

    /// A request in inline 48-byte segments (docs/hw/hinic3.md §6.3, inline mode).
    pub fn send_inline(&mut self, module: u8, cmd: u16, body: &[u8]) {
        self.msg_id = (self.msg_id + 1) & 0xF;
        let n = body.len().div_ceil(48);
        for (i, seg) in body.chunks(48).enumerate() {
            let h = header(module, cmd, self.msg_id, body.len(), seg.len(), i as u64, i + 1 == n, false);
            let mut p = seg.to_vec();
            p.resize(seg.len().div_ceil(4) * 4, 0);
            let dw: Vec<u32> = p.chunks(4).map(|c| le32(c, 0)).collect();
            assert_eq!(self.send_segment(h, &dw, seg.len()) & 0xFF, 0xFF, "segment {i} refused");
        }
    }

    /// The next new element of AEQ `q` (docs/hw/hinic3.md §5.4): (descriptor, header, segment bytes).
    /// An element waits on AEQ `q` (its wrap bit differs from the consumer's), left in place.
    pub fn aeq_ready(&self, q: usize) -> bool {
        let raw = self.read_mem(AEQ_MEM + q * 4096 + self.aeq_ci[q] as usize * 64 + 60, 4);
        (u32::from_be_bytes(raw[..4].try_into().unwrap()) >> 31 != 0) != self.aeq_wrapped[q]
    }

    pub fn aeq_take(&mut self, q: usize) -> Option<(u32, u64, Vec<u8>)> {
        let at = AEQ_MEM + q * 4096 + self.aeq_ci[q] as usize * 64;
        let raw = self.read_mem(at, 64);
        let desc = u32::from_be_bytes(raw[60..64].try_into().unwrap());
        if (desc >> 31 != 0) == self.aeq_wrapped[q] {
            return None;
        }
        let data = swab_dwords(&raw[..60]);
        let h = u64::from_le_bytes(data[..8].try_into().unwrap());
        let seg_len = ((h >> 48) & 0x3F) as usize;
        self.aeq_ci[q] += 1;
        if self.aeq_ci[q] == AEQ_LEN {
            self.aeq_ci[q] = 0;
            self.aeq_wrapped[q] = !self.aeq_wrapped[q];
        }
        self.wr(AEQ_CI, (q as u32) << 30 | u32::from(self.aeq_wrapped[q]) << 20 | self.aeq_ci[q]);
        Some((desc, h, data[8..8 + seg_len].to_vec()))
    }

    /// A whole message from AEQ `q` (docs/hw/hinic3.md §6.4): (first header, body).
    pub fn aeq_message(&mut self, q: usize) -> Option<(u64, Vec<u8>)> {
        let (_, first, mut body) = self.aeq_take(q)?;
        assert_eq!((first >> 56) & 0x3F, 0, "a message starts at SEQID 0");
        let mut h = first;
        let mut seq = 0;
        while (h >> 62) & 1 == 0 {
            self.step();
            let (_, next, seg) = self.aeq_take(q).expect("the next segment");
            seq += 1;
            assert_eq!((next >> 56) & 0x3F, seq);
            assert_eq!(next & (0xF << 18 | 0x3FF << 22 | 0x1F << 43), first & (0xF << 18 | 0x3FF << 22 | 0x1F << 43));
            body.extend_from_slice(&seg);
            h = next;
        }
        assert_eq!(body.len() as u64, (first >> 32) & 0x7FF, "MSG_LEN");
        Some((first, body))
    }

    /// The answer to the last request on AEQ 1, checked against it (docs/hw/hinic3.md §6.4).
    pub fn answer(&mut self, module: u8, cmd: u16) -> Vec<u8> {
        self.step();
        let (h, body) = loop {
            if let Some(m) = self.aeq_message(1) {
                break m;
            }
            let event = self.aeq_message(0).filter(|_| self.ack_events_while_waiting).expect("an answer on AEQ 1");
            self.ack(event.0, &event.1);
            self.events_seen.push(event);
            self.step();
        };
        assert_eq!(h >> 63, 1, "DIRECTION answer");
        assert_eq!(h & 0x1FFF, 0x1FFF, "from the management CPU");
        assert_eq!((h >> 18) & 0xF, self.msg_id, "MSG_ID");
        assert_eq!(((h >> 43) & 0x1F) as u8, module);
        assert_eq!(((h >> 22) & 0x3FF) as u16, cmd);
        assert_eq!((h >> 13) & 1, 0, "header STATUS");
        body
    }

    /// Acknowledges an event (docs/hw/hinic3.md §6.5): DIRECTION 1, NO_ACK 1, the same MSG_ID, the body echoed.
    pub fn ack(&mut self, h: u64, body: &[u8]) {
        let id = (h >> 18) & 0xF;
        let (m, c) = (((h >> 43) & 0x1F) as u8, ((h >> 22) & 0x3FF) as u16);
        let mut p = body.to_vec();
        p.resize(body.len().div_ceil(4) * 4, 0);
        let ack = header(m, c, id, body.len(), body.len(), 0, true, false) | 1 << 54 | 1 << 63;
        let dw: Vec<u32> = p.chunks(4).map(|c| le32(c, 0)).collect();
        assert_eq!(self.send_segment(ack, &dw, body.len()) & 0xFF, 0xFF);
    }

    pub fn call(&mut self, module: u8, cmd: u16, body: &[u8]) -> Vec<u8> {
        assert_eq!(self.send_dma(module, cmd, body) & 0xFF, 0xFF, "write-back done");
        self.answer(module, cmd)
    }

    /// A call that must succeed (status byte 0).
    pub fn ok(&mut self, module: u8, cmd: u16, body: &[u8]) -> Vec<u8> {
        let r = self.call(module, cmd, body);
        assert_eq!(r[0], 0, "module {module} cmd {cmd} status");
        r
    }

    /// The command queue (docs/hw/hinic3.md §8.3): COMM 20 for cmdq 0, then COMM 21 with the depth.
    /// Both command queues' contexts, SYNC (0) then ASYNC (1) on its own ring, as DPDK sets them
    /// (docs/hw/hinic3.md §8.1), then the depth; commands go through SYNC only.
    pub fn cmdq_setup(&mut self) {
        let b = self.cmdq_ctx_at(CMDQ_RING);
        self.ok(module::COMM, 20, &b);
        let mut b = self.cmdq_ctx_at(CMDQ_ASYNC_RING);
        b[10] = 1;
        self.ok(module::COMM, 20, &b);
        let mut v = vec![0u8; 32];
        v[8..10].copy_from_slice(&FUNC.to_le_bytes());
        v[10] = 1;
        v[11] = CMDQ_DEPTH.trailing_zeros() as u8;
        self.ok(module::COMM, 21, &v);
    }

    /// One cmdq call (docs/hw/hinic3.md §8.2, §8.4, §8.5): `data` little-endian, swapped per dword into the buffer.
    /// Returns (error code, direct result), or None if the busy bit never came.
    pub fn cmdq_try(&mut self, cmd: u8, data: &[u8], swap: bool) -> Option<(u32, u64)> {
        let buf = if swap { swab_dwords(data) } else { data.to_vec() };
        self.write_mem(CMDQ_BUF, &buf);
        let at = CMDQ_RING + self.cmdq_pi as usize * 64;
        let biova = self.iova(CMDQ_BUF);
        let mut w = [0u8; 64];
        let ctrl = self.cmdq_pi | u32::from(cmd) << 16 | 1 << 24;
        w[12..16].copy_from_slice(&ctrl.to_le_bytes());
        w[32..36].copy_from_slice(&((biova >> 32) as u32).to_le_bytes());
        w[36..40].copy_from_slice(&(biova as u32).to_le_bytes());
        w[40..44].copy_from_slice(&(buf.len() as u32).to_le_bytes());
        let hdr = 2 | 3 << 27 | 1 << 29 | u32::from(self.cmdq_wrapped) << 31;
        w[0..4].copy_from_slice(&hdr.to_le_bytes());
        self.write_mem(at, &w);
        let idx = self.cmdq_pi;
        self.cmdq_pi += 1;
        if self.cmdq_pi == CMDQ_DEPTH {
            self.cmdq_pi = 0;
            self.cmdq_wrapped = !self.cmdq_wrapped;
        }
        let next = self.cmdq_pi;
        self.db.write64((next as usize & 0xFF) * 8, u64::from(next >> 8) << 32 | 1 << 23);
        self.step();
        let wqe = self.read_mem(at, 64);
        if le32(&wqe, 12) >> 31 == 0 {
            return None;
        }
        let _ = idx;
        self.write_mem(at + 12, &[0; 4]);
        Some((le32(&wqe, 8) & 0x7FFF_FFFF, u64::from_le_bytes(wqe[16..24].try_into().unwrap())))
    }

    pub fn cmdq(&mut self, cmd: u8, data: &[u8]) -> (u32, u64) {
        self.cmdq_try(cmd, data, true).expect("cmdq completion")
    }

    /// The docs/hw/hinic3.md §14.1 init steps the model answers, then the §14.3 start for `nq` queue pairs with RSS over them.
    pub fn init_and_start(&mut self, nq: usize) {
        self.bring_up();
        let mut reset = vec![0u8; 24];
        reset[16..24].copy_from_slice(&0x3407u64.to_le_bytes());
        self.ok(module::COMM, 0, &reset);
        let feats = self.ok(module::COMM, 1, &[0; 48]);
        assert_eq!(u64::from_le_bytes(feats[16..24].try_into().unwrap()) & (1 << 8), 0, "no enhanced cmdq");
        let mut svc = vec![0u8; 48];
        svc[12] = 1;
        self.ok(module::COMM, 7, &svc);
        self.ok(module::COMM, 25, &[0; 20]);
        let mut ps = vec![0u8; 16];
        ps[10] = 1;
        ps[11] = 8;
        self.ok(module::COMM, 22, &ps);
        self.cmdq_setup();
        self.wr(FUNC_ATTR6, (self.rd(FUNC_ATTR6) & !0xFFFF) | 0x11);
        let cap = self.ok(module::CFGM, 0, &[0; 336]);
        assert!(u16::from_le_bytes([cap[80], cap[81]]) as usize + 1 >= nq);
        let nic = self.ok(module::L2NIC, 15, &[0; 48]);
        let offered = u64::from_le_bytes(nic[16..24].try_into().unwrap());
        let mac = self.ok(module::L2NIC, 20, &[0; 20]);
        let mut set = vec![0u8; 20];
        set[14..20].copy_from_slice(&mac[14..20]);
        self.ok(module::L2NIC, 21, &set);
        let mut follow = vec![0u8; 16];
        follow[12] = 1;
        self.ok(module::MAG, 8, &follow);
        // Start (docs/hw/hinic3.md §14.3).
        let mut tbl = vec![0u8; 56];
        tbl[12..16].copy_from_slice(&7u32.to_le_bytes());
        tbl[16..18].copy_from_slice(&(BUF as u16).to_le_bytes());
        tbl[18..20].copy_from_slice(&0x3FFFu16.to_le_bytes());
        self.ok(module::L2NIC, 5, &tbl);
        let mut nego = vec![0u8; 48];
        nego[10] = 1;
        nego[16..24].copy_from_slice(&(offered & 0x3FC3FFF & !(1 << 19 | 1 << 20 | 1 << 21 | 1 << 25)).to_le_bytes());
        self.ok(module::L2NIC, 15, &nego);
        for ty in 0..2u16 {
            let mut b = vec![0u8; 8];
            b[0..2].copy_from_slice(&(nq as u16).to_le_bytes());
            b[2..4].copy_from_slice(&ty.to_le_bytes());
            for q in 0..nq {
                b.extend_from_slice(&if ty == 0 { self.sq_ctx(q) } else { self.rq_ctx(q) });
            }
            assert_eq!(self.cmdq(0, &b), (0, 0), "MODIFY_QUEUE_CTX type {ty}");
        }
        for ty in 0..2u16 {
            let mut b = vec![0u8; 12];
            b[0..2].copy_from_slice(&self.port.config().max_queues.to_le_bytes());
            b[2..4].copy_from_slice(&ty.to_le_bytes());
            assert_eq!(self.cmdq(1, &b), (0, 0), "CLEAN_QUEUE_CONTEXT");
        }
        let mut root = vec![0u8; 32];
        root[12..14].copy_from_slice(&11u16.to_le_bytes()); // 2048 bytes, docs/hw/hinic3.md §10.4
        root[14] = 1;
        root[16..18].copy_from_slice(&(DEPTH.trailing_zeros() as u16).to_le_bytes());
        root[18..20].copy_from_slice(&((DEPTH << 1).trailing_zeros() as u16).to_le_bytes());
        self.ok(module::COMM, 21, &root);
        for q in 0..nq {
            let mut ci = vec![0u8; 32];
            ci[11] = 3;
            ci[12] = 16;
            ci[16..20].copy_from_slice(&(q as u32).to_le_bytes());
            ci[24..32].copy_from_slice(&(self.iova(CI_SLOTS + 64 * q) >> 2).to_le_bytes());
            self.ok(module::L2NIC, 8, &ci);
        }
        tbl[12..16].copy_from_slice(&4u32.to_le_bytes());
        tbl[18..20].copy_from_slice(&9000u16.to_le_bytes());
        self.ok(module::L2NIC, 5, &tbl);
        let mut mode = vec![0u8; 16];
        mode[12..16].copy_from_slice(&7u32.to_le_bytes());
        self.ok(module::L2NIC, 7, &mode);
        if !self.leave_offloads_unset {
            self.lro_and_vlan_off();
        }
        if nq > 1 {
            self.rss_setup(nq);
        }
        for q in 0..nq {
            for i in 0..(DEPTH - 1) {
                self.post_rx(q, i);
            }
            self.rq_doorbell(q);
        }
        let mut vport = vec![0u8; 16];
        vport[12] = 1;
        vport[13] = nq as u8;
        self.ok(module::L2NIC, 6, &vport);
        let mut pe = vec![0u8; 16];
        pe[12] = 3;
        self.ok(module::MAG, 6, &pe);
        let mut ls = vec![0u8; 12];
        ls[8] = self.port.config().port_id;
        assert_eq!(self.ok(module::MAG, 7, &ls)[9], 1, "link up");
    }

    /// What DPDK's `hinic3_set_lro` and `hinic3_set_vlan` send at start without LRO, VLAN filter or strip
    /// (docs/hw/hinic3.md §7.3): L2NIC 13 LRO off (max 1 KiB), 14 timer 16, 26 filter off, 27 strip off.
    pub fn lro_and_vlan_off(&mut self) {
        let mut lro = vec![0u8; 28];
        lro[10] = 1;
        lro[14] = 1;
        self.ok(module::L2NIC, 13, &lro);
        let mut timer = vec![0u8; 16];
        timer[8] = 1;
        timer[12..16].copy_from_slice(&16u32.to_le_bytes());
        self.ok(module::L2NIC, 14, &timer);
        self.ok(module::L2NIC, 26, &[0; 16]);
        self.ok(module::L2NIC, 27, &[0; 16]);
    }

    /// RSS as DPDK orders it (docs/hw/hinic3.md §11), the table spreading entry e to queue (e × 7 + 3) mod nq.
    pub fn rss_setup(&mut self, nq: usize) {
        let mut t = vec![0u8; 16];
        t[10] = 1;
        self.ok(module::L2NIC, 61, &t);
        let mut key = vec![0u8; 52];
        key[10] = 1;
        key[12..52].copy_from_slice(&RSS_KEY);
        self.ok(module::L2NIC, 63, &key);
        let mut ctx = vec![0u8; 16];
        ctx[12..16].copy_from_slice(&(1u32 << 23 | 1 << 28 | 1 << 29 | 1 << 31).to_le_bytes());
        self.ok(module::L2NIC, 65, &ctx);
        let mut eng = vec![0u8; 16];
        eng[10] = 1;
        eng[11] = 1;
        self.ok(module::L2NIC, 64, &eng);
        let mut cfg = vec![0u8; 24];
        cfg[10] = 1;
        self.ok(module::L2NIC, 60, &cfg);
        let mut b = vec![0u8; 16];
        for e in 0..256 {
            b.extend_from_slice(&(((e * 7 + 3) % nq) as u16).to_le_bytes());
        }
        assert_eq!(self.cmdq(4, &b), (0, 0));
    }

    /// COMM 20 SET_CMDQ_CTXT for cmdq 0 with its ring at rig offset `at` (docs/hw/hinic3.md §8.3).
    pub fn cmdq_ctx_at(&self, at: usize) -> Vec<u8> {
        let mut b = vec![0u8; 32];
        b[8..10].copy_from_slice(&FUNC.to_le_bytes());
        let pfn = self.iova(at) >> 12;
        b[16..24].copy_from_slice(&(pfn | 1 << 63).to_le_bytes());
        b[24..32].copy_from_slice(&pfn.to_le_bytes());
        b
    }

    /// SQ context of docs/hw/hinic3.md §9.1.
    pub fn sq_ctx(&self, q: usize) -> Vec<u8> {
        self.sq_ctx_at(q, SQ_RING + q * WQ_ALIGN)
    }

    /// SQ context `q` with its ring at rig offset `at`.
    pub fn sq_ctx_at(&self, q: usize, at: usize) -> Vec<u8> {
        let ring = self.iova(at);
        let (pfn, block) = (ring >> 12, ring >> 9);
        let d: [u32; 16] = [
            0,
            0,
            (pfn >> 32) as u32 | 1 << 23,
            pfn as u32,
            0,
            0xFFFF,
            q as u32,
            1 << 19,
            256 | 6 << 14 | 1 << 25,
            1 << 4,
            (pfn >> 32) as u32,
            pfn as u32,
            0,
            0,
            (block >> 32) as u32,
            block as u32,
        ];
        d.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// RQ context of docs/hw/hinic3.md §9.2 (normal 16-byte WQE, 32-byte CQE, polling).
    pub fn rq_ctx(&self, q: usize) -> Vec<u8> {
        self.rq_ctx_at(RQ_RING + q * WQ_ALIGN)
    }

    /// An RQ context with its ring at rig offset `at`.
    pub fn rq_ctx_at(&self, at: usize) -> Vec<u8> {
        let ring = self.iova(at);
        let (pfn, block) = (ring >> 12, ring >> 9);
        let d: [u32; 16] = [
            0,
            1 << 31,
            (pfn >> 32) as u32 | 2 << 28 | 1 << 31,
            pfn as u32,
            0,
            0,
            0,
            1 << 28,
            256 | 6 << 14 | 1 << 25,
            1 << 4,
            (pfn >> 32) as u32,
            pfn as u32,
            0,
            0,
            (block >> 32) as u32,
            block as u32,
        ];
        d.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    pub fn rx_buf(q: usize, i: u32) -> usize {
        RX_BUF + (q * 64 + i as usize) * BUF
    }

    /// RQ WQE i: buffer and CQE addresses (docs/hw/hinic3.md §10.3); the PI advances.
    pub fn post_rx(&mut self, q: usize, i: u32) {
        let (b, c) = (self.iova(Rig::rx_buf(q, i)), self.iova(CQES + q * 0x2000 + i as usize * 32));
        let mut w = Vec::new();
        for v in [(b >> 32) as u32, b as u32, (c >> 32) as u32, c as u32] {
            w.extend_from_slice(&v.to_le_bytes());
        }
        self.write_mem(RQ_RING + q * WQ_ALIGN + i as usize * 16, &w);
        self.write_mem(CQES + q * 0x2000 + i as usize * 32, &[0; 32]);
        self.rq_pi[q] = (i + 1) % DEPTH;
    }

    /// RQ doorbell (docs/hw/hinic3.md §10.1): PI in 8-byte units, cflag 1, source type 1, page 2.
    pub fn rq_doorbell(&self, q: usize) {
        let pi = self.rq_pi[q] << 1;
        self.db.write64(
            2 * 4096 + (pi as usize & 0xFF) * 8,
            u64::from(pi >> 8) << 32 | u64::from(1u32 << 27 | 1 << 23 | q as u32),
        );
    }

    /// The next received frame of RQ `q` (docs/hw/hinic3.md §10.5, §10.6): (CQE dwords, bytes).
    pub fn recv(&mut self, q: usize) -> Option<([u32; 8], Vec<u8>)> {
        let i = self.rq_ci[q];
        let cqe_at = CQES + q * 0x2000 + i as usize * 32;
        let raw = self.read_mem(cqe_at, 32);
        let d: [u32; 8] = std::array::from_fn(|k| le32(&raw, 4 * k));
        if d[0] >> 31 == 0 {
            return None;
        }
        let len = (d[1] >> 16) as usize;
        let n = len.div_ceil(BUF).max(1) as u32;
        let mut data = Vec::new();
        for k in 0..n {
            let e = (i + k) % DEPTH;
            let take = (len - data.len()).min(BUF);
            data.extend(self.read_mem(Rig::rx_buf(q, e), take));
        }
        self.write_mem(cqe_at, &[0; 4]);
        for _ in 0..n {
            let e = self.rq_pi[q];
            self.post_rx(q, e);
        }
        self.rq_ci[q] = (i + n) % DEPTH;
        self.rq_doorbell(q);
        Some((d, data))
    }

    pub fn tx_buf(i: u32) -> usize {
        TX_BUF + (i as usize % 16) * (16 << 10)
    }

    /// Writes WQEBBs at the SQ's PI (wrapping), then rings (docs/hw/hinic3.md §10.1, §10.2).
    pub fn push_sq(&mut self, q: usize, wqebbs: &[[u32; 4]]) {
        let n = wqebbs.len() as u32;
        for (k, w) in wqebbs.iter().enumerate() {
            let e = (self.sq_pi[q] + k as u32) % DEPTH;
            let b: Vec<u8> = w.iter().flat_map(|v| v.to_le_bytes()).collect();
            self.write_mem(SQ_RING + q * WQ_ALIGN + e as usize * 16, &b);
        }
        if self.sq_pi[q] + n >= DEPTH {
            self.sq_owner[q] = !self.sq_owner[q];
        }
        self.sq_pi[q] = (self.sq_pi[q] + n) % DEPTH;
        let pi = self.sq_pi[q];
        self.db.write64(4096 + (pi as usize & 0xFF) * 8, u64::from(pi >> 8) << 32 | u64::from(1u32 << 27 | q as u32));
    }

    /// A compact one-WQEBB send (docs/hw/hinic3.md §10.2).
    pub fn send(&mut self, q: usize, frame: &[u8]) {
        let slot = Rig::tx_buf(self.sq_pi[q]);
        self.write_mem(slot, frame);
        let a = self.iova(slot);
        let ctrl = frame.len() as u32 | u32::from(self.sq_owner[q]) << 31;
        self.push_sq(q, &[[ctrl, 0, (a >> 32) as u32, a as u32]]);
    }

    /// An extended send: task section (`task`) and the frame cut into `pieces` buffers, queue_info UC with the
    /// default MSS 0x3E00 as DPDK's `hinic3_prepare_sq_ctrl` writes it.
    pub fn send_ext(&mut self, q: usize, frame: &[u8], pieces: usize, task: Option<[u32; 4]>) {
        self.send_ext_qi(q, frame, pieces, task, QI_UC_DEFAULT_MSS);
    }

    /// `send_ext` with the queue_info dword `qi` as given.
    pub fn send_ext_qi(&mut self, q: usize, frame: &[u8], pieces: usize, task: Option<[u32; 4]>, qi: u32) {
        let per = frame.len().div_ceil(pieces);
        let mut addrs = Vec::new();
        for (k, c) in frame.chunks(per).enumerate() {
            let slot = Rig::tx_buf(self.sq_pi[q] + k as u32);
            self.write_mem(slot, c);
            addrs.push((self.iova(slot), c.len() as u32));
        }
        let n = addrs.len() as u32;
        let ctrl = addrs[0].1 | n << 19 | u32::from(task.is_some()) << 27 | 1 << 30 | u32::from(self.sq_owner[q]) << 31;
        let mut w = vec![[ctrl, qi, (addrs[0].0 >> 32) as u32, addrs[0].0 as u32]];
        w.extend(task);
        for (a, l) in &addrs[1..] {
            w.push([*l, 0, (a >> 32) as u32, *a as u32]);
        }
        self.push_sq(q, &w);
    }

    pub fn hw_ci(&self, q: usize) -> u16 {
        u16::from_le_bytes(self.read_mem(CI_SLOTS + 64 * q, 2).try_into().unwrap())
    }
}

/// queue_info of an extended WQE without TSO: UC (bit 28) and MSS (26:13) TX_MSS_DEFAULT 0x3E00.
pub const QI_UC_DEFAULT_MSS: u32 = 1 << 28 | 0x3E00 << 13;

pub const RSS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b,
    0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac,
    0x01, 0xfa,
];

pub fn udp_frame(dst: [u8; 6], src_ip: [u8; 4], sport: u16, payload: usize) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x99, 0x08, 0x00]);
    let total = 20 + 8 + payload;
    let mut ip = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 0, 0x40, 0, 64, 17, 0, 0];
    ip.extend_from_slice(&src_ip);
    ip.extend_from_slice(&[10, 0, 0, 2]);
    let c = net::internet_checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&4791u16.to_be_bytes());
    f.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend((0..payload).map(|i| (i * 7) as u8));
    f
}

pub fn protocol_faults(p: &Sp670Port) -> Vec<String> {
    p.take_faults().into_iter().map(|f| f.to_string()).collect()
}
