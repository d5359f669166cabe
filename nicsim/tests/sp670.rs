//! The SP670 model driven through raw register writes, mailbox messages, cmdq WQEs, contexts and ring entries built
//! here from docs/hw/hinic3.md (section cited per helper), not from any driver: offsets and bit positions are the
//! notes' tables typed out again, so a model that misreads a table disagrees with these tests.

use std::sync::Arc;
use std::time::{Duration, Instant};

use drvkit::bar::RegisterSpace;
use drvkit::dma::{DmaMapper, DmaMapping};
use hugepage::{Allocator, DmaMemory};
use nicsim::sp670::{module, STATUS_BAD, STATUS_UNSUPPORTED};
use nicsim::{net, Sp670, Sp670Config, Sp670Port, Sp670RxError};

// ---- registers (docs/hw/hinic3.md §3, §5.2, §6.2) ------------------------------------------------------------------

const FUNC_ATTR0: usize = 0x000;
const FUNC_ATTR1: usize = 0x004;
const FUNC_ATTR2: usize = 0x008;
const FUNC_ATTR4: usize = 0x010;
const FUNC_ATTR5: usize = 0x014;
const FUNC_ATTR6: usize = 0x018;
const AEQ_CI: usize = 0x050;
const MSI_CLR: usize = 0x058;
const MBOX_WIN: usize = 0x080;
const MBOX_CONTROL: usize = 0x100;
const MBOX_INT_OFFSET: usize = 0x104;
const MBOX_RESULT_H: usize = 0x108;
const MBOX_RESULT_L: usize = 0x10C;
const AEQ_CTRL_0: usize = 0x200;
const AEQ_CTRL_1: usize = 0x204;
const AEQ_PROD: usize = 0x20C;
const AEQ_INDIR: usize = 0x210;
const AEQ_PAGE: usize = 0x240;
const PPF_ELECTION: usize = 0x6000;

// ---- memory layout of the rig ------------------------------------------------------------------------------------

const MEM: usize = 4 << 20;
const AEQ_MEM: usize = 0x0000; // AEQ q at + q × 4 KiB
const AEQ_LEN: u32 = 64;
const MBOX_WB: usize = 0x4000;
const MBOX_BODY: usize = 0x4800;
const CI_SLOTS: usize = 0x5000; // SQ q at + q × 64
const CMDQ_BUF: usize = 0x8000;
const CMDQ_RING: usize = 0x40000;
const CMDQ_DEPTH: u32 = 64;
const SQ_RING: usize = 0x100000; // q at + q × 64 KiB
const CQES: usize = 0x180000; // q at + q × 8 KiB
const RQ_RING: usize = 0x200000; // q at + q × 64 KiB
const RX_BUF: usize = 0x280000; // q, i at + (q × 64 + i) × 2 KiB
const TX_BUF: usize = 0x300000; // i at + i × 16 KiB
const DEPTH: u32 = 64;
const BUF: usize = 2048;
const FUNC: u16 = 0;

struct Rig {
    port: Sp670Port,
    cfg: nicsim::Sp670CfgBar,
    db: nicsim::Sp670DbBar,
    mem: Arc<DmaMemory>,
    _map: DmaMapping,
    msg_id: u64,
    aeq_ci: [u32; 4],
    aeq_wrapped: [bool; 4],
    cmdq_pi: u32,
    cmdq_wrapped: bool,
    sq_pi: Vec<u32>,
    sq_owner: Vec<bool>,
    rq_pi: Vec<u32>,
    rq_ci: Vec<u32>,
}

fn poll(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_micros(50));
    }
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Swaps every 32-bit word (the cmdq buffer order of docs/hw/hinic3.md §0.1).
fn swab_dwords(b: &[u8]) -> Vec<u8> {
    b.chunks(4).flat_map(|c| c.iter().rev().copied().collect::<Vec<_>>()).collect()
}

// Mailbox header fields (docs/hw/hinic3.md §6.1).
#[allow(clippy::too_many_arguments)] // one argument per header field
fn header(module: u8, cmd: u16, msg_id: u64, msg_len: usize, seg_len: usize, seq: u64, last: bool, dma: bool) -> u64 {
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
    fn new(config: Sp670Config) -> Rig {
        Rig::with(Sp670::new(config))
    }

    fn with(port: Sp670Port) -> Rig {
        let mem = Arc::new(Allocator::no_huge().allocate(MEM).expect("memory"));
        let map = port.dma_mapper().map(&mem).expect("map");
        let n = port.config().max_queues as usize;
        Rig {
            cfg: port.cfg_bar(),
            db: port.db_bar(),
            port,
            mem,
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
        }
    }

    /// A CSR read: big-endian on the bus (docs/hw/hinic3.md §0.1).
    fn rd(&self, off: usize) -> u32 {
        u32::from_be(self.cfg.read32(off))
    }
    fn wr(&self, off: usize, v: u32) {
        self.cfg.write32(off, v.to_be())
    }
    fn iova(&self, off: usize) -> u64 {
        self.mem.iova_at(off).unwrap()
    }
    fn write_mem(&self, off: usize, data: &[u8]) {
        // SAFETY: in bounds of the live mapping; the model touches it only after the doorbell or trigger that follows.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.mem.as_ptr().add(off), data.len()) }
    }
    fn read_mem(&self, off: usize, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        // SAFETY: in bounds of the live mapping.
        unsafe { std::ptr::copy_nonoverlapping(self.mem.as_ptr().add(off), v.as_mut_ptr(), len) }
        v
    }
    fn step(&self) {
        self.port.step();
    }

    /// docs/hw/hinic3.md §3.2 and §5.3: readiness, attributes, PPF election, MSI-X masked, PF status INIT, the AEQs,
    /// the mailbox write-back area.
    fn bring_up(&mut self) {
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

    fn wb_status(&self) -> u64 {
        u64::from_be_bytes(self.read_mem(MBOX_WB, 8).try_into().unwrap())
    }

    /// One mailbox segment: header and `dwords` through the window (big-endian per dword), then INT_OFFSET and
    /// CONTROL (docs/hw/hinic3.md §6.2, §6.3). Returns the write-back status.
    fn send_segment(&self, header: u64, dwords: &[u32], seg_len: usize) -> u64 {
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
    fn send_dma(&mut self, module: u8, cmd: u16, body: &[u8]) -> u64 {
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
    fn send_inline(&mut self, module: u8, cmd: u16, body: &[u8]) {
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
    fn aeq_take(&mut self, q: usize) -> Option<(u32, u64, Vec<u8>)> {
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
    fn aeq_message(&mut self, q: usize) -> Option<(u64, Vec<u8>)> {
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
    fn answer(&mut self, module: u8, cmd: u16) -> Vec<u8> {
        self.step();
        let (h, body) = self.aeq_message(1).expect("an answer on AEQ 1");
        assert_eq!(h >> 63, 1, "DIRECTION answer");
        assert_eq!(h & 0x1FFF, 0x1FFF, "from the management CPU");
        assert_eq!((h >> 18) & 0xF, self.msg_id, "MSG_ID");
        assert_eq!(((h >> 43) & 0x1F) as u8, module);
        assert_eq!(((h >> 22) & 0x3FF) as u16, cmd);
        assert_eq!((h >> 13) & 1, 0, "header STATUS");
        body
    }

    /// Acknowledges an event (docs/hw/hinic3.md §6.5): DIRECTION 1, NO_ACK 1, the same MSG_ID, the body echoed.
    fn ack(&mut self, h: u64, body: &[u8]) {
        let id = (h >> 18) & 0xF;
        let (m, c) = (((h >> 43) & 0x1F) as u8, ((h >> 22) & 0x3FF) as u16);
        let mut p = body.to_vec();
        p.resize(body.len().div_ceil(4) * 4, 0);
        let ack = header(m, c, id, body.len(), body.len(), 0, true, false) | 1 << 54 | 1 << 63;
        let dw: Vec<u32> = p.chunks(4).map(|c| le32(c, 0)).collect();
        assert_eq!(self.send_segment(ack, &dw, body.len()) & 0xFF, 0xFF);
    }

    fn call(&mut self, module: u8, cmd: u16, body: &[u8]) -> Vec<u8> {
        assert_eq!(self.send_dma(module, cmd, body) & 0xFF, 0xFF, "write-back done");
        self.answer(module, cmd)
    }

    /// A call that must succeed (status byte 0).
    fn ok(&mut self, module: u8, cmd: u16, body: &[u8]) -> Vec<u8> {
        let r = self.call(module, cmd, body);
        assert_eq!(r[0], 0, "module {module} cmd {cmd} status");
        r
    }

    /// The command queue (docs/hw/hinic3.md §8.3): COMM 20 for cmdq 0, then COMM 21 with the depth.
    fn cmdq_setup(&mut self) {
        let mut b = vec![0u8; 32];
        b[8..10].copy_from_slice(&FUNC.to_le_bytes());
        let pfn = self.iova(CMDQ_RING) >> 12;
        b[16..24].copy_from_slice(&(pfn | 1 << 63).to_le_bytes());
        b[24..32].copy_from_slice(&pfn.to_le_bytes());
        self.ok(module::COMM, 20, &b);
        let mut v = vec![0u8; 32];
        v[8..10].copy_from_slice(&FUNC.to_le_bytes());
        v[10] = 1;
        v[11] = CMDQ_DEPTH.trailing_zeros() as u8;
        self.ok(module::COMM, 21, &v);
    }

    /// One cmdq call (docs/hw/hinic3.md §8.2, §8.4, §8.5): `data` little-endian, swapped per dword into the buffer.
    /// Returns (error code, direct result), or None if the busy bit never came.
    fn cmdq_try(&mut self, cmd: u8, data: &[u8], swap: bool) -> Option<(u32, u64)> {
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

    fn cmdq(&mut self, cmd: u8, data: &[u8]) -> (u32, u64) {
        self.cmdq_try(cmd, data, true).expect("cmdq completion")
    }

    /// The docs/hw/hinic3.md §14.1 init steps the model answers, then the §14.3 start for `nq` queue pairs with RSS over them.
    fn init_and_start(&mut self, nq: usize) {
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

    /// RSS as DPDK orders it (docs/hw/hinic3.md §11), the table spreading entry e to queue (e × 7 + 3) mod nq.
    fn rss_setup(&mut self, nq: usize) {
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

    /// SQ context of docs/hw/hinic3.md §9.1.
    fn sq_ctx(&self, q: usize) -> Vec<u8> {
        let ring = self.iova(SQ_RING + q * 0x10000);
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
    fn rq_ctx(&self, q: usize) -> Vec<u8> {
        let ring = self.iova(RQ_RING + q * 0x10000);
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

    fn rx_buf(q: usize, i: u32) -> usize {
        RX_BUF + (q * 64 + i as usize) * BUF
    }

    /// RQ WQE i: buffer and CQE addresses (docs/hw/hinic3.md §10.3); the PI advances.
    fn post_rx(&mut self, q: usize, i: u32) {
        let (b, c) = (self.iova(Rig::rx_buf(q, i)), self.iova(CQES + q * 0x2000 + i as usize * 32));
        let mut w = Vec::new();
        for v in [(b >> 32) as u32, b as u32, (c >> 32) as u32, c as u32] {
            w.extend_from_slice(&v.to_le_bytes());
        }
        self.write_mem(RQ_RING + q * 0x10000 + i as usize * 16, &w);
        self.write_mem(CQES + q * 0x2000 + i as usize * 32, &[0; 32]);
        self.rq_pi[q] = (i + 1) % DEPTH;
    }

    /// RQ doorbell (docs/hw/hinic3.md §10.1): PI in 8-byte units, cflag 1, source type 1, page 2.
    fn rq_doorbell(&self, q: usize) {
        let pi = self.rq_pi[q] << 1;
        self.db.write64(
            2 * 4096 + (pi as usize & 0xFF) * 8,
            u64::from(pi >> 8) << 32 | u64::from(1u32 << 27 | 1 << 23 | q as u32),
        );
    }

    /// The next received frame of RQ `q` (docs/hw/hinic3.md §10.5, §10.6): (CQE dwords, bytes).
    fn recv(&mut self, q: usize) -> Option<([u32; 8], Vec<u8>)> {
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

    fn tx_buf(i: u32) -> usize {
        TX_BUF + (i as usize % 16) * (16 << 10)
    }

    /// Writes WQEBBs at the SQ's PI (wrapping), then rings (docs/hw/hinic3.md §10.1, §10.2).
    fn push_sq(&mut self, q: usize, wqebbs: &[[u32; 4]]) {
        let n = wqebbs.len() as u32;
        for (k, w) in wqebbs.iter().enumerate() {
            let e = (self.sq_pi[q] + k as u32) % DEPTH;
            let b: Vec<u8> = w.iter().flat_map(|v| v.to_le_bytes()).collect();
            self.write_mem(SQ_RING + q * 0x10000 + e as usize * 16, &b);
        }
        if self.sq_pi[q] + n >= DEPTH {
            self.sq_owner[q] = !self.sq_owner[q];
        }
        self.sq_pi[q] = (self.sq_pi[q] + n) % DEPTH;
        let pi = self.sq_pi[q];
        self.db.write64(4096 + (pi as usize & 0xFF) * 8, u64::from(pi >> 8) << 32 | u64::from(1u32 << 27 | q as u32));
    }

    /// A compact one-WQEBB send (docs/hw/hinic3.md §10.2).
    fn send(&mut self, q: usize, frame: &[u8]) {
        let slot = Rig::tx_buf(self.sq_pi[q]);
        self.write_mem(slot, frame);
        let a = self.iova(slot);
        let ctrl = frame.len() as u32 | u32::from(self.sq_owner[q]) << 31;
        self.push_sq(q, &[[ctrl, 0, (a >> 32) as u32, a as u32]]);
    }

    /// An extended send: task section (`task`) and the frame cut into `pieces` buffers.
    fn send_ext(&mut self, q: usize, frame: &[u8], pieces: usize, task: Option<[u32; 4]>) {
        let per = frame.len().div_ceil(pieces);
        let mut addrs = Vec::new();
        for (k, c) in frame.chunks(per).enumerate() {
            let slot = Rig::tx_buf(self.sq_pi[q] + k as u32);
            self.write_mem(slot, c);
            addrs.push((self.iova(slot), c.len() as u32));
        }
        let n = addrs.len() as u32;
        let ctrl = addrs[0].1 | n << 19 | u32::from(task.is_some()) << 27 | 1 << 30 | u32::from(self.sq_owner[q]) << 31;
        let mut w = vec![[ctrl, 1 << 28, (addrs[0].0 >> 32) as u32, addrs[0].0 as u32]];
        w.extend(task);
        for (a, l) in &addrs[1..] {
            w.push([*l, 0, (a >> 32) as u32, *a as u32]);
        }
        self.push_sq(q, &w);
    }

    fn hw_ci(&self, q: usize) -> u16 {
        u16::from_le_bytes(self.read_mem(CI_SLOTS + 64 * q, 2).try_into().unwrap())
    }
}

const RSS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b,
    0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac,
    0x01, 0xfa,
];

fn udp_frame(dst: [u8; 6], src_ip: [u8; 4], sport: u16, payload: usize) -> Vec<u8> {
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

fn protocol_faults(p: &Sp670Port) -> Vec<String> {
    p.take_faults().into_iter().map(|f| f.to_string()).collect()
}

// ---- tests ---------------------------------------------------------------------------------------------------------

#[test]
fn readiness_attributes_and_big_endian_csrs() {
    let r = Rig::new(Sp670Config { fw_ready_delay: Duration::from_millis(100), func_id: 5, ..Default::default() });
    assert_eq!(r.rd(FUNC_ATTR1) & (1 << 30), 0, "not ready at once");
    poll("ready", Duration::from_secs(2), || r.rd(FUNC_ATTR1) & (1 << 30) != 0);
    assert_eq!(r.rd(FUNC_ATTR0) & 0xFFF, 5);
    assert_eq!(r.rd(FUNC_ATTR0) >> 28 & 1, 0, "a PF");
    assert_eq!(1 << ((r.rd(FUNC_ATTR1) >> 8) & 3), 4, "4 AEQs");
    assert_eq!(r.rd(FUNC_ATTR6) >> 23, 64, "most queues");
    // Read without the swap, the ready bit is elsewhere: a driver that forgets docs/hw/hinic3.md §0.1 sees garbage.
    assert_eq!(r.cfg.read32(FUNC_ATTR1) & (1 << 30), 0);
    assert_eq!(r.cfg.read32(FUNC_ATTR1).swap_bytes() & (1 << 30), 1 << 30);
    assert_eq!(r.port.pci_identity().device, 0x0222);
    r.port.assert_no_faults();
}

#[test]
fn management_round_trip_dma_and_multi_segment_inline() {
    let mut r = Rig::new(Sp670Config { fw_version: "1.2.3.4".into(), port_id: 1, ..Default::default() });
    r.bring_up();
    let mut fw = vec![0u8; 48];
    fw[8] = 1;
    let v = r.ok(module::COMM, 60, &fw);
    assert_eq!(v.len(), 48, "the answer is the whole structure");
    assert_eq!(&v[12..19], b"1.2.3.4");
    // GET_DEV_CAP, 336 bytes: 7 inline segments out, 7 AEQ segments back.
    r.send_inline(module::CFGM, 0, &[0; 336]);
    let cap = r.answer(module::CFGM, 0);
    assert_eq!(cap.len(), 336);
    assert_eq!(cap[0], 0);
    assert_eq!(cap[15], 1, "port_id");
    assert_eq!(u16::from_le_bytes([cap[80], cap[81]]), 63, "nic_max_sq_id");
    // L2NIC 9 answers 192 bytes, MAG 151 816 (docs/hw/hinic3.md §6.4).
    assert_eq!(r.ok(module::L2NIC, 9, &[0; 12]).len(), 192);
    let mut ps = vec![0u8; 12];
    ps[8] = 1;
    assert_eq!(r.ok(module::MAG, 151, &ps).len(), 816);
    r.port.assert_no_faults();
}

#[test]
fn malformed_and_unknown_commands_are_refused() {
    let mut r = Rig::new(Sp670Config::default());
    r.bring_up();
    // FUNC_RESET for another function.
    let mut reset = vec![0u8; 24];
    reset[8] = 9;
    reset[16] = 1;
    assert_eq!(r.call(module::COMM, 0, &reset)[0], STATUS_BAD);
    let f = protocol_faults(&r.port);
    assert!(f.iter().any(|s| s.contains("func_id 9")), "{f:?}");
    // The root context naming another RX buffer size than SET_FUNC_TBL (docs/hw/hinic3.md §10.4).
    let mut tbl = vec![0u8; 56];
    tbl[12] = 2;
    tbl[16..18].copy_from_slice(&4096u16.to_le_bytes());
    r.ok(module::L2NIC, 5, &tbl);
    let mut root = vec![0u8; 32];
    root[12] = 11;
    root[14] = 1;
    root[16] = 6;
    root[18] = 7;
    assert_eq!(r.call(module::COMM, 21, &root)[0], STATUS_BAD);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("SET_FUNC_TBL said 4096")));
    root[12] = 13;
    r.ok(module::COMM, 21, &root);
    // Wrong length.
    assert_eq!(r.call(module::L2NIC, 6, &[0; 20])[0], STATUS_BAD);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("request of 20 bytes")));
    // Reserved bytes set.
    let mut vport = vec![0u8; 16];
    vport[15] = 1;
    assert_eq!(r.call(module::L2NIC, 6, &vport)[0], STATUS_BAD);
    assert!(!protocol_faults(&r.port).is_empty());
    // Unknown: an error status, not silent success, and no fault (a driver may probe).
    assert_eq!(r.call(module::L2NIC, 200, &[0; 16])[0], STATUS_UNSUPPORTED);
    assert_eq!(r.call(9, 1, &[0; 16])[0], STATUS_UNSUPPORTED);
    // A DMA descriptor with a wrong checksum is refused in the write-back (0xFE).
    r.msg_id += 1;
    r.write_mem(MBOX_BODY, &[0; 16]);
    let iova = r.iova(MBOX_BODY);
    let h = header(module::L2NIC, 6, r.msg_id, 16, 16, 0, true, true);
    let s = r.send_segment(h, &[0x1234, (iova >> 32) as u32, iova as u32, 16, 0, 0], 16);
    assert_eq!(s & 0xFF, 0xFE);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("checksum")));
    // An inline segment out of order.
    let h = header(module::CFGM, 0, 3, 336, 48, 2, false, false);
    assert_eq!(r.send_segment(h, &[0; 12], 48) & 0xFF, 0xFE);
    assert!(!protocol_faults(&r.port).is_empty());
}

#[test]
fn wrong_byte_order_is_rejected() {
    let mut r = Rig::new(Sp670Config::default());
    r.bring_up();
    r.port.assert_no_faults();
    // A CSR written without the swap: AEQ_CTRL_1 = 64 | 1 << 24 arrives as 0x0100_0040 swapped.
    r.wr(AEQ_INDIR, 2);
    r.cfg.write32(AEQ_CTRL_1, 64 | 1 << 24);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("AEQ_CTRL_1")));
    r.cfg.write32(FUNC_ATTR6, 0x11);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("FUNC_ATTR6")));
    // A mailbox header without the swap: refused in the write-back.
    r.write_mem(MBOX_WB, &[0; 16]);
    let h = header(module::COMM, 60, 1, 48, 48, 0, true, false);
    r.cfg.write32(MBOX_WIN, h as u32);
    r.cfg.write32(MBOX_WIN + 4, (h >> 32) as u32);
    r.wr(MBOX_INT_OFFSET, 14 << 20 | 1 << 28);
    r.wr(MBOX_CONTROL, 1 << 1 | 0x1FFF << 16);
    r.step();
    assert_eq!(r.wb_status() & 0xFF, 0xFE);
    assert!(!protocol_faults(&r.port).is_empty());
    // A cmdq buffer left little-endian: the context header's fields trade places and the command fails.
    r.cmdq_setup();
    let mut b = vec![0u8; 8];
    b[0..2].copy_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&r.sq_ctx(0));
    let (err, _) = r.cmdq_try(0, &b, false).expect("completes");
    assert_ne!(err, 0);
    assert!(!protocol_faults(&r.port).is_empty());
    assert_eq!(r.port.sq_context(0), None);
    // The same buffer swapped is taken.
    assert_eq!(r.cmdq(0, &b), (0, 0));
    assert!(r.port.sq_context(0).is_some());
    r.port.assert_no_faults();
}

#[test]
fn send_and_receive_through_descriptors() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    r.port.assert_no_faults();
    let mac = r.port.config().mac;
    // TX: compact WQE; the frame on the wire byte for byte, the CI slot at 1.
    let f = udp_frame([0x02, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 1000, 100);
    r.send(0, &f);
    r.step();
    assert_eq!(r.port.take_tx(), vec![f.clone()]);
    assert_eq!(r.hw_ci(0), 1);
    // Extended WQE, 3 buffers, IPv4 and UDP checksum offload and VLAN insertion.
    let mut g = udp_frame([0x02, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 1001, 300);
    g[24..26].fill(0);
    r.send_ext(0, &g, 3, Some([1 << 24 | 1 << 25, 0, 0, 1 << 19 | 100]));
    r.step();
    let out = r.port.take_tx();
    assert_eq!(out.len(), 1);
    let o = &out[0];
    assert_eq!(&o[12..16], &[0x81, 0x00, 0x00, 100]);
    assert_eq!(net::internet_checksum(&o[18..38]), 0, "IPv4 header checksum");
    assert_eq!(r.hw_ci(0), 1 + 4, "the compact WQE, then control, task and 2 BDs");
    // RX: byte-exact, length and type in the CQE.
    let h = udp_frame(mac, [10, 0, 0, 9], 7, 64);
    r.port.inject(&h);
    r.step();
    let (cqe, data) = r.recv(0).expect("a frame");
    assert_eq!(data, h);
    assert_eq!(cqe[1] >> 16, h.len() as u32);
    assert_eq!(cqe[2] & 0x1F, 4, "UDP");
    assert_eq!(cqe[0] & 0xFFFF, 0, "no checksum error");
    // Another MAC is filtered (RX mode 0x7 without promiscuous).
    r.port.inject(&udp_frame([0x02, 9, 9, 9, 9, 9], [10, 0, 0, 9], 7, 64));
    r.step();
    assert!(r.recv(0).is_none());
    assert_eq!(r.port.counters().rx_filtered, 1);
    r.port.assert_no_faults();
}

#[test]
fn jumbo_frames_span_buffers_and_descriptors() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    let mac = r.port.config().mac;
    let big = udp_frame(mac, [10, 0, 0, 9], 9, 9000 - 42);
    r.port.inject(&big);
    r.step();
    let (cqe, data) = r.recv(0).expect("jumbo");
    assert_eq!(cqe[1] >> 16, 9000);
    assert_eq!(data, big);
    assert_eq!(r.rq_ci[0], 5, "9000 bytes take five 2 KiB buffers");
    let out = udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 9, 9000 - 42);
    r.send_ext(0, &out, 5, None);
    r.step();
    assert_eq!(r.port.take_tx(), vec![out]);
    r.port.assert_no_faults();
}

#[test]
fn rss_spreads_flows_as_the_indirection_table_says() {
    let nq = 4;
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(nq);
    let mac = r.port.config().mac;
    let mut per_q = vec![0; nq];
    for flow in 0..64u16 {
        let sport = flow.wrapping_mul(7919).wrapping_add(1000);
        let f = udp_frame(mac, [10, 1, (flow >> 8) as u8, flow as u8], sport, 32);
        let mut input = vec![10, 1, (flow >> 8) as u8, flow as u8, 10, 0, 0, 2];
        input.extend_from_slice(&sport.to_be_bytes());
        input.extend_from_slice(&4791u16.to_be_bytes());
        let hash = net::toeplitz(&RSS_KEY, &input);
        let want = ((hash & 0xFF) as usize * 7 + 3) % nq;
        r.port.inject(&f);
        r.step();
        let (cqe, data) = r.recv(want).unwrap_or_else(|| panic!("flow {flow} not on queue {want}"));
        assert_eq!(data, f);
        assert_eq!(cqe[3], hash, "hash in the CQE");
        assert_ne!(cqe[2] >> 24, 0, "RSS type valid");
        per_q[want] += 1;
    }
    assert!(per_q.iter().all(|&n| n > 0), "{per_q:?}");
    assert_eq!(r.port.counters().rx_delivered, 64);
    r.port.assert_no_faults();
}

#[test]
fn link_flap_posts_events_on_aeq0_and_takes_acks() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    // The first report once the PF is ACTIVE and the port enabled: link up, acknowledged.
    r.step();
    let (h, body) = r.aeq_message(0).expect("the first link report");
    assert_eq!(body[9], 1);
    r.ack(h, &body);
    assert!(r.port.unacked_events().is_empty());
    r.port.link_flap(Duration::from_millis(50));
    r.step();
    let (h, body) = r.aeq_message(0).expect("link down event");
    assert_eq!((h >> 43) & 0x1F, 14, "HILINK");
    assert_eq!((h >> 22) & 0x3FF, 7);
    assert_eq!(h >> 63, 0, "an event, DIRECTION 0");
    assert_eq!((h >> 54) & 1, 0, "wants an ack");
    assert_eq!(body.len(), 12);
    assert_eq!(body[9], 0, "down");
    assert!(!r.port.link_up());
    let mut pi = vec![0u8; 36];
    pi[8] = r.port.config().port_id;
    assert_eq!(r.ok(module::MAG, 153, &pi)[16], 0, "no speed while down");
    // Acknowledge: DIRECTION 1, NO_ACK 1, same MSG_ID, the body echoed.
    r.ack(h, &body);
    assert!(r.port.unacked_events().is_empty());
    poll("link back", Duration::from_secs(2), || {
        r.step();
        r.port.link_up()
    });
    r.step();
    let (h, body) = r.aeq_message(0).expect("link up event");
    assert_eq!(body[9], 1);
    r.ack(h, &body);
    assert!(r.port.unacked_events().is_empty());
    assert_eq!(r.ok(module::MAG, 153, &pi)[16], 8, "100G again");
    r.port.assert_no_faults();
}

#[test]
fn injected_faults_are_observable() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    let mac = r.port.config().mac;
    // Firmware error status for one command.
    r.port.inject_mgmt_error(module::L2NIC, 7, Some(0x0B));
    assert_eq!(r.call(module::L2NIC, 7, &[0; 16])[0], 0x0B);
    r.port.inject_mgmt_error(module::L2NIC, 7, None);
    // A mailbox request that never completes: written back, never answered.
    r.port.stall_mailbox(true);
    assert_eq!(r.send_dma(module::COMM, 60, &[0; 48]) & 0xFF, 0xFF);
    for _ in 0..10 {
        r.step();
    }
    assert!(r.aeq_take(1).is_none());
    r.port.stall_mailbox(false);
    // A cmdq command that never completes, until the stall is lifted.
    r.port.stall_cmdq(true);
    let mut ctx = vec![0u8; 20];
    ctx[16..20].copy_from_slice(&(1u32 << 23 | 1 << 29).to_le_bytes());
    assert!(r.cmdq_try(5, &ctx, true).is_none());
    let at = CMDQ_RING + (r.cmdq_pi as usize + CMDQ_DEPTH as usize - 1) % CMDQ_DEPTH as usize * 64;
    for _ in 0..5 {
        r.step();
    }
    assert_eq!(le32(&r.read_mem(at, 64), 12) >> 31, 0, "still not complete");
    r.port.stall_cmdq(false);
    r.step();
    assert_eq!(le32(&r.read_mem(at, 64), 12) >> 31, 1, "completes once released");
    r.write_mem(at + 12, &[0; 4]);
    // RX completions with error bits.
    r.port.inject_error(&udp_frame(mac, [10, 0, 0, 9], 7, 64), Sp670RxError::IpChecksum);
    r.step();
    assert_eq!(r.recv(0).expect("delivered").0[0] & 0xFFFF, 1);
    r.port.inject_error(&udp_frame(mac, [10, 0, 0, 9], 7, 64), Sp670RxError::L4Checksum);
    r.step();
    assert_eq!(r.recv(0).expect("delivered").0[0] & 0xFFFF, 1 << 2, "UDP checksum error");
    r.port.inject_error(&udp_frame(mac, [10, 0, 0, 9], 7, 64), Sp670RxError::Crc);
    r.step();
    assert!(r.recv(0).is_none());
    // TX hang: the CI stops; released, it moves.
    let before = r.hw_ci(0);
    r.port.tx_hang(Some(0), true);
    r.send(0, &udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 1, 60));
    for _ in 0..5 {
        r.step();
    }
    assert_eq!(r.hw_ci(0), before);
    assert!(r.port.take_tx().is_empty());
    r.port.tx_hang(Some(0), false);
    r.step();
    assert_eq!(r.hw_ci(0), before + 1);
    assert_eq!(r.port.take_tx().len(), 1);
    r.port.assert_no_faults();
}

/// Recovery by function reset (docs/hw/hinic3.md §7.3 COMM 0): a hung SQ and a stalled cmdq are cleared, the old
/// doorbells forgotten, and a second bring-up of the queues works.
#[test]
fn function_reset_recovers_hangs() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    r.port.tx_hang(None, true);
    r.send(0, &udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 1, 60));
    r.port.stall_cmdq(true);
    assert!(r.cmdq_try(1, &[0; 12], true).is_none());
    r.step();
    assert_eq!(r.hw_ci(0), 0, "hung");
    let mut reset = vec![0u8; 24];
    reset[16..24].copy_from_slice(&0x3407u64.to_le_bytes());
    r.ok(module::COMM, 0, &reset);
    for _ in 0..3 {
        r.step();
    }
    assert!(r.port.take_tx().is_empty(), "the old doorbell is forgotten");
    assert_eq!(r.port.sq_context(0), None);
    // The driver starts over: fresh rings, fresh indexes.
    r.write_mem(CMDQ_RING, &[0; 64 * CMDQ_DEPTH as usize]);
    r.cmdq_pi = 0;
    r.cmdq_wrapped = true;
    r.sq_pi[0] = 0;
    r.sq_owner[0] = true;
    r.rq_ci[0] = 0;
    r.write_mem(CI_SLOTS, &[0; 64]);
    // The AEQs are set up again too (docs/hw/hinic3.md §5.3: descriptors back to wrapped = 0).
    r.write_mem(AEQ_MEM, &[0; 4 * 4096]);
    r.aeq_ci = [0; 4];
    r.aeq_wrapped = [false; 4];
    r.wr(FUNC_ATTR6, r.rd(FUNC_ATTR6) & !0xFFFF);
    r.init_and_start(1);
    let f = udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 2, 60);
    r.send(0, &f);
    r.step();
    assert_eq!(r.port.take_tx(), vec![f]);
    r.port.assert_no_faults();
}

#[test]
fn stats_count_exactly() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    let mac = r.port.config().mac;
    for i in 0..10 {
        r.send(0, &udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], i, 100));
    }
    r.send(0, &udp_frame([0xFF; 6], [10, 0, 0, 1], 1, 100));
    r.step();
    for i in 0..5 {
        r.port.inject(&udp_frame(mac, [10, 0, 0, 9], i, 200));
    }
    r.step();
    while r.recv(0).is_some() {}
    let s = r.ok(module::L2NIC, 9, &[0; 12]);
    let c = |i: usize| u64::from_le_bytes(s[16 + 8 * i..24 + 8 * i].try_into().unwrap());
    assert_eq!(c(0), 10, "tx unicast");
    assert_eq!(c(1), 10 * (14 + 28 + 100), "tx unicast bytes");
    assert_eq!(c(4), 1, "tx broadcast");
    assert_eq!(c(6), 5, "rx unicast");
    assert_eq!(c(7), 5 * (14 + 28 + 200));
    r.port.assert_no_faults();
}

#[test]
fn threaded_forwarding_between_two_ports_counts_exactly() {
    let (a, b) = Sp670::pair(Sp670Config::default());
    let mut ra = Rig::with(a);
    let mut rb = Rig::with(b);
    ra.init_and_start(1);
    rb.init_and_start(1);
    let dst = rb.port.config().mac;
    let _ta = ra.port.start_thread();
    let _tb = rb.port.start_thread();
    // SP670_FORWARD_PACKETS scales the run (e.g. a release-mode throughput check); 20 000 by default.
    let total: u32 = std::env::var("SP670_FORWARD_PACKETS").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let (mut sent, mut got) = (0u32, 0u32);
    let start = Instant::now();
    while got < total {
        assert!(start.elapsed() < Duration::from_secs(60), "sent {sent}, received {got}");
        // Keep at most 32 in flight so nothing waits for a buffer.
        let ci = ra.hw_ci(0) as u32;
        // At most 16 in flight: the rig has 16 TX buffer slots.
        if sent < total && (sent as u16).wrapping_sub(ci as u16) < 16 && sent - got < 16 {
            ra.send(0, &udp_frame(dst, [10, 0, 0, 1], sent as u16, 64));
            sent += 1;
        }
        while let Some((_, d)) = rb.recv(0) {
            assert_eq!(&d[34..36], &(got as u16).to_be_bytes(), "in order");
            assert_eq!(d.len(), 14 + 28 + 64);
            got += 1;
        }
    }
    eprintln!("{total} frames forwarded in {:?}", start.elapsed());
    assert_eq!(rb.port.counters().rx_delivered, u64::from(total));
    assert_eq!(rb.port.counters().rx_no_buffer + rb.port.counters().rx_filtered, 0);
    assert_eq!(ra.port.counters().tx_sent, u64::from(total));
    ra.port.assert_no_faults();
    rb.port.assert_no_faults();
}

#[test]
fn stop_and_close_sequences_are_answered() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(2);
    let mac = r.port.config().mac;
    r.step();
    while let Some((h, b)) = r.aeq_message(0) {
        r.ack(h, &b);
    }
    // Per-queue RX stop (docs/hw/hinic3.md §14.6): L2NIC 35 and the cmdq 10 flush hand back every posted buffer.
    let mut en = vec![0u8; 16];
    en[8] = 1;
    r.ok(module::L2NIC, 35, &en);
    let mut flush = Vec::new();
    flush.extend_from_slice(&(1u32 << 16).to_le_bytes());
    assert_eq!(r.cmdq(10, &flush), (0, 0));
    for i in 0..DEPTH - 1 {
        let c = le32(&r.read_mem(CQES + 0x2000 + i as usize * 32, 4), 0);
        assert_ne!(c & (1 << 28), 0, "CQE {i} of RQ 1 comes back flushed");
    }
    // Stop (docs/hw/hinic3.md §14.4).
    r.ok(module::MAG, 6, &[0; 16]);
    r.ok(module::L2NIC, 6, &[0; 16]);
    r.port.inject(&udp_frame(mac, [10, 0, 0, 9], 7, 64));
    r.step();
    assert!(r.recv(0).is_none(), "nothing is delivered with the vport off");
    r.ok(module::L2NIC, 113, &[0; 12]);
    r.ok(module::L2NIC, 11, &[0; 12]);
    assert_eq!(r.port.sq_context(0), None, "CLEAR_QP_RESOURCE drops the contexts");
    r.ok(module::L2NIC, 7, &[0; 16]);
    r.ok(module::L2NIC, 60, &[0; 24]);
    let mut free = vec![0u8; 16];
    free[10] = 2;
    r.ok(module::L2NIC, 61, &free);
    r.ok(module::COMM, 21, &[0; 32]);
    // Close (docs/hw/hinic3.md §14.5), DPDK then Linux's flush.
    let mut del = vec![0u8; 20];
    del[14..20].copy_from_slice(&mac);
    r.ok(module::L2NIC, 22, &del);
    r.ok(module::L2NIC, 25, &[0; 16]);
    r.ok(module::MAG, 8, &[0; 16]);
    r.wr(FUNC_ATTR6, r.rd(FUNC_ATTR6) & !0xFFFF);
    let mut ps = vec![0u8; 16];
    ps[10] = 1;
    r.ok(module::COMM, 22, &ps);
    r.ok(module::COMM, 7, &[0; 48]);
    let mut nego = vec![0u8; 48];
    nego[10] = 1;
    r.ok(module::COMM, 1, &nego);
    r.wr(FUNC_ATTR4, 1);
    r.ok(module::COMM, 2, &[0; 16]);
    // START_FLUSH has no answer.
    assert_eq!(r.send_dma(module::COMM, 3, &[0; 16]) & 0xFF, 0xFF);
    r.step();
    assert!(r.aeq_take(1).is_none());
    r.wr(FUNC_ATTR4, 0);
    assert_eq!(r.port.pf_status(), 0);
    r.port.assert_no_faults();
}

#[test]
fn descriptor_mistakes_are_faults() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    // An SQ WQE with the wrong owner bit stops the queue and is recorded.
    r.sq_owner[0] = false;
    r.send(0, &udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 1, 60));
    r.step();
    assert!(r.port.take_tx().is_empty());
    assert_eq!(r.hw_ci(0), 0);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("owner bit")));
    // A doorbell while FUNC_ATTR4 has doorbells off is lost.
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    r.wr(FUNC_ATTR4, 1);
    r.send(0, &udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 1, 60));
    r.step();
    assert!(r.port.take_tx().is_empty());
    r.wr(FUNC_ATTR4, 0);
    r.port.assert_no_faults();
    // An SQ context with a wrong queue id, a reserved bit, or without the owner bit is refused field by field.
    let mut c = r.sq_ctx(3);
    c[24..28].copy_from_slice(&7u32.to_le_bytes());
    let mut b = vec![1, 0, 0, 0, 3, 0, 0, 0];
    b.extend_from_slice(&c);
    assert_ne!(r.cmdq(0, &b).0, 0);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("SQ id 7")));
    let mut c = r.rq_ctx(3);
    let d2 = le32(&c, 8) & !(1 << 31);
    c[8..12].copy_from_slice(&d2.to_le_bytes());
    let mut b = vec![1, 0, 1, 0, 3, 0, 0, 0];
    b.extend_from_slice(&c);
    assert_ne!(r.cmdq(0, &b).0, 0);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("owner bit 31")));
}

/// A reserved byte of each structure of docs/hw/hinic3.md §7.3 that the §14 sequences send is refused and recorded.
#[test]
fn reserved_fields_of_each_structure_are_checked() {
    let mut r = Rig::new(Sp670Config::default());
    r.bring_up();
    let cases: &[(u8, u16, usize, usize)] = &[
        (module::COMM, 0, 24, 12),
        (module::COMM, 1, 48, 11),
        (module::COMM, 7, 48, 20),
        (module::COMM, 20, 32, 12),
        (module::COMM, 21, 32, 24),
        (module::COMM, 22, 16, 13),
        (module::COMM, 25, 20, 17),
        (module::COMM, 60, 48, 40),
        (module::CFGM, 0, 336, 100),
        (module::L2NIC, 5, 56, 30),
        (module::L2NIC, 6, 16, 15),
        (module::L2NIC, 7, 16, 10),
        (module::L2NIC, 8, 32, 21),
        (module::L2NIC, 15, 48, 11),
        (module::L2NIC, 20, 20, 12),
        (module::L2NIC, 27, 16, 12),
        (module::L2NIC, 35, 16, 14),
        (module::MAG, 6, 16, 14),
        (module::MAG, 7, 12, 11),
        (module::MAG, 8, 16, 14),
        (module::MAG, 153, 36, 20),
        (module::L2NIC, 6, 16, 3), // the head's reserved bytes
    ];
    for &(m, c, len, at) in cases {
        let mut b = vec![0u8; len];
        b[at] = 0x5A;
        assert_eq!(r.call(m, c, &b)[0], STATUS_BAD, "module {m} cmd {c} byte {at}");
        let f = protocol_faults(&r.port);
        assert!(f.iter().any(|s| s.contains("reserved")), "module {m} cmd {c} byte {at}: {f:?}");
    }
    r.port.assert_no_faults();
}

/// The doorbell as two 32-bit stores, low dword then high (what a `RegisterSpace` offers), rings like one 64-bit
/// store (docs/hw/hinic3.md §10.1); a high dword alone is a fault.
#[test]
fn doorbell_as_two_dwords() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    let f = udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 3, 60);
    let slot = Rig::tx_buf(0);
    r.write_mem(slot, &f);
    let a = r.iova(slot);
    let w: Vec<u8> =
        [f.len() as u32 | 1 << 31, 0, (a >> 32) as u32, a as u32].iter().flat_map(|v| v.to_le_bytes()).collect();
    r.write_mem(SQ_RING, &w);
    r.db.write32(4096 + 8, 1 << 27);
    r.step();
    assert!(r.port.take_tx().is_empty(), "the low dword alone does not ring");
    r.db.write32(4096 + 8 + 4, 0);
    r.step();
    assert_eq!(r.port.take_tx(), vec![f]);
    r.port.assert_no_faults();
    r.db.write32(4096 + 16 + 4, 0);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("without its low dword")));
}
