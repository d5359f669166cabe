//! The X710 model driven through raw register writes and admin descriptors, queue contexts and ring descriptors
//! built here from docs/hw/i40e.md (section cited per helper), not from any driver. Offsets below are the notes'
//! tables typed out again, so a model that misreads a table disagrees with these tests.

use std::sync::Arc;
use std::time::{Duration, Instant};

use drvkit::bar::RegisterSpace;
use drvkit::dma::{DmaMapper, DmaMapping};
use hugepage::{Allocator, DmaMemory};
use nicsim::x710::regs::{self, stat};
use nicsim::{net, AqRc, Fault, X710Bar, X710Config, X710Part, X710Port, X710RxError, X710};

// ---- memory layout of the rig ------------------------------------------------------------------------------------

const MEM: usize = 4 << 20;
const AQ_LEN: u32 = 32;
const ATQ_RING: usize = 0x0000;
const ARQ_RING: usize = 0x0400;
const ATQ_BUF: usize = 0x1000; // 32 × 4 KiB
const ARQ_BUF: usize = 0x2_1000; // 32 × 4 KiB
const AQ_BUF_LEN: usize = 4096;
const HMC: usize = 0x4_1000;
const TX_RING: usize = 0x5_0000;
const RX_RING: usize = 0x6_0000; // queue q at + q × 0x2000
const RX_BUF: usize = 0x10_0000; // queue q, slot i at + (q × 64 + i) × 2 KiB
const TX_BUF: usize = 0x20_0000; // slot i at + i × 16 KiB
const RING: u32 = 64;
const RX_BUF_LEN: usize = 2048;
const TX_BUF_LEN: usize = 16 << 10;
const MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x71, 0x00, 0x00];

// ---- register offsets typed from the notes (docs/hw/i40e.md §4, §5.1, §8.2, §9.1, §12.1) ------------------------

const PFGEN_CTRL: usize = 0x09_2400;
const GLNVM_ULD: usize = 0x0B_6008;
const GLGEN_RSTAT: usize = 0x0B_8188;
const PF_ATQBAL: usize = 0x08_0000;
const PF_ARQBAL: usize = 0x08_0080;
const PF_ATQBAH: usize = 0x08_0100;
const PF_ARQBAH: usize = 0x08_0180;
const PF_ATQLEN: usize = 0x08_0200;
const PF_ARQLEN: usize = 0x08_0280;
const PF_ATQH: usize = 0x08_0300;
const PF_ARQH: usize = 0x08_0380;
const PF_ATQT: usize = 0x08_0400;
const PF_ARQT: usize = 0x08_0480;
const PFHMC_SDCMD: usize = 0x0C_0000;
const PFHMC_SDDATALOW: usize = 0x0C_0100;
const PFHMC_SDDATAHIGH: usize = 0x0C_0200;
const PRTMAC_LINKSTA: usize = 0x1E_2420;
const GLHMC_LANQMAX: usize = 0x0C_2008;
const PFLAN_QALLOC: usize = 0x1C_0400;
const PFQF_CTL_0: usize = 0x1C_0AC0;
const GL_MDET_TX: usize = 0x0E_6480;
fn qtx_ena(q: usize) -> usize {
    0x10_0000 + 4 * q
}
fn qtx_ctl(q: usize) -> usize {
    0x10_4000 + 4 * q
}
fn qtx_tail(q: usize) -> usize {
    0x10_8000 + 4 * q
}
fn qtx_head(q: usize) -> usize {
    0x0E_4000 + 4 * q
}
fn qrx_ena(q: usize) -> usize {
    0x12_0000 + 4 * q
}
fn qrx_tail(q: usize) -> usize {
    0x12_8000 + 4 * q
}
fn gllan_txpre_qdis(b: usize) -> usize {
    0x0E_6500 + 4 * b
}
fn pfqf_hkey(i: usize) -> usize {
    0x24_4800 + 128 * i
}
fn pfqf_hlut(i: usize) -> usize {
    0x24_0000 + 128 * i
}
fn pfqf_hena(i: usize) -> usize {
    0x24_5900 + 128 * i
}

// Admin descriptor flags (docs/hw/i40e.md §5.2).
const DD: u16 = 0x0001;
const CMP: u16 = 0x0002;
const ERR: u16 = 0x0004;
const LB: u16 = 0x0200;
const RD: u16 = 0x0400;
const BUF: u16 = 0x1000;
const SI: u16 = 0x2000;

/// The default RSS key of docs/hw/i40e.md §12.2.
const KEY: [u8; 52] = [
    0x44, 0x39, 0x79, 0x6b, 0xb5, 0x4c, 0x50, 0x23, 0xb6, 0x75, 0xea, 0x5b, 0x12, 0x4f, 0x9f, 0x30, 0xb8, 0xa2, 0xc0,
    0x3d, 0xdf, 0xdc, 0x4d, 0x02, 0xa0, 0x8c, 0x9b, 0x33, 0x4a, 0xf6, 0x4a, 0x4c, 0x05, 0xc6, 0xfa, 0x34, 0x39, 0x58,
    0xd8, 0x55, 0x7d, 0x99, 0x58, 0x3a, 0xe1, 0x38, 0xc9, 0x2e, 0x81, 0x15, 0x03, 0x66,
];

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Stores `width` bits of `value` at bit `lsb` of a little-endian bit string (docs/hw/i40e.md §8.4).
fn pack(obj: &mut [u8], lsb: usize, width: usize, value: u64) {
    for i in 0..width {
        if (value >> i) & 1 == 1 {
            obj[(lsb + i) / 8] |= 1 << ((lsb + i) % 8);
        }
    }
}

fn poll(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// A completed admin command: its descriptor and the slot's buffer afterwards.
struct Done {
    desc: [u8; 32],
    buf: Vec<u8>,
}

impl Done {
    fn flags(&self) -> u16 {
        le16(&self.desc, 0)
    }
    fn retval(&self) -> u16 {
        le16(&self.desc, 6)
    }
    fn datalen(&self) -> u16 {
        le16(&self.desc, 4)
    }
    fn p16(&self, at: usize) -> u16 {
        le16(&self.desc, 16 + at)
    }
    fn p32(&self, at: usize) -> u32 {
        le32(&self.desc, 16 + at)
    }
    #[track_caller]
    fn ok(&self) -> &Self {
        assert_eq!(self.retval(), 0, "retval of opcode {:#06x}", le16(&self.desc, 2));
        assert_eq!(self.flags() & (DD | CMP | ERR), DD | CMP);
        self
    }
    #[track_caller]
    fn failed(&self, rc: AqRc) -> &Self {
        assert_eq!(self.retval(), rc as u16, "retval of opcode {:#06x}", le16(&self.desc, 2));
        assert_eq!(self.flags() & (DD | CMP | ERR), DD | CMP | ERR);
        self
    }
}

/// What bring-up learnt from the firmware.
#[derive(Debug, Default, Clone, Copy)]
struct Learnt {
    vsi_seid: u16,
    vsi_number: u16,
    qs_handle: u16,
    stat_idx: usize,
    first_queue: u32,
}

struct Rig {
    bar: X710Bar,
    port: X710Port,
    mem: Arc<DmaMemory>,
    _map: DmaMapping,
    atq_next: u32,
    arq_next: u32,
    tx_next: u32,
    rx_next: Vec<u32>,
    learnt: Learnt,
}

impl Rig {
    fn new(config: X710Config) -> Rig {
        let (bar, port) = X710::new(config);
        Rig::with(bar, port)
    }

    fn with(bar: X710Bar, port: X710Port) -> Rig {
        let mem = Arc::new(Allocator::no_huge().allocate(MEM).expect("memory"));
        let map = port.dma_mapper().map(&mem).expect("map");
        Rig {
            bar,
            port,
            mem,
            _map: map,
            atq_next: 0,
            arq_next: 0,
            tx_next: 0,
            rx_next: vec![0; 8],
            learnt: Learnt::default(),
        }
    }

    fn rd(&self, off: usize) -> u32 {
        self.bar.read32(off)
    }
    fn wr(&self, off: usize, v: u32) {
        self.bar.write32(off, v)
    }
    fn iova(&self, off: usize) -> u64 {
        self.mem.iova_at(off).unwrap()
    }
    fn write_mem(&self, off: usize, data: &[u8]) {
        assert!(off + data.len() <= self.mem.len());
        // SAFETY: in bounds of the live allocation; the model touches this range only after a doorbell that
        // follows.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.mem.as_ptr().add(off), data.len()) }
    }
    fn read_mem(&self, off: usize, len: usize) -> Vec<u8> {
        assert!(off + len <= self.mem.len());
        let mut v = vec![0u8; len];
        // SAFETY: in bounds of the live allocation.
        unsafe { std::ptr::copy_nonoverlapping(self.mem.as_ptr().add(off), v.as_mut_ptr(), len) }
        v
    }
    fn step(&self) {
        nicsim::run_until_idle_x710(&[&self.port]);
    }

    /// docs/hw/i40e.md §4.1: wait for the firmware, then a PF reset.
    fn reset(&self) {
        poll("GLNVM_ULD", || self.rd(GLNVM_ULD) & 0x18 == 0x18);
        assert_eq!(self.rd(GLGEN_RSTAT) & 0x3, 0);
        self.wr(PFGEN_CTRL, self.rd(PFGEN_CTRL) | 1);
        poll("PFSWR", || self.rd(PFGEN_CTRL) & 1 == 0);
    }

    fn arm_arq(&self, slot: u32) {
        let mut d = [0u8; 32];
        d[0..2].copy_from_slice(&(BUF | LB).to_le_bytes());
        d[4..6].copy_from_slice(&(AQ_BUF_LEN as u16).to_le_bytes());
        let a = self.iova(ARQ_BUF + slot as usize * AQ_BUF_LEN);
        d[24..28].copy_from_slice(&((a >> 32) as u32).to_le_bytes());
        d[28..32].copy_from_slice(&(a as u32).to_le_bytes());
        self.write_mem(ARQ_RING + slot as usize * 32, &d);
    }

    /// docs/hw/i40e.md §5.3: both rings.
    fn init_aq(&mut self) {
        self.write_mem(ATQ_RING, &[0; 32 * AQ_LEN as usize]);
        for s in 0..AQ_LEN {
            self.arm_arq(s);
        }
        let atq = self.iova(ATQ_RING);
        self.wr(PF_ATQH, 0);
        self.wr(PF_ATQT, 0);
        self.wr(PF_ATQLEN, AQ_LEN | 1 << 31);
        self.wr(PF_ATQBAL, atq as u32);
        self.wr(PF_ATQBAH, (atq >> 32) as u32);
        assert_eq!(self.rd(PF_ATQBAL), atq as u32);
        let arq = self.iova(ARQ_RING);
        self.wr(PF_ARQH, 0);
        self.wr(PF_ARQT, 0);
        self.wr(PF_ARQLEN, AQ_LEN | 1 << 31);
        self.wr(PF_ARQBAL, arq as u32);
        self.wr(PF_ARQBAH, (arq >> 32) as u32);
        self.wr(PF_ARQT, AQ_LEN - 1);
        self.atq_next = 0;
        self.arq_next = 0;
    }

    /// Writes a raw 32-byte descriptor (and its buffer, if any, into the slot's buffer) and rings ATQT.
    fn post_raw(&mut self, mut desc: [u8; 32], buf: Option<&[u8]>) -> u32 {
        let slot = self.atq_next;
        let buf_off = ATQ_BUF + slot as usize * AQ_BUF_LEN;
        if let Some(b) = buf {
            self.write_mem(buf_off, &vec![0; AQ_BUF_LEN]);
            self.write_mem(buf_off, b);
            let a = self.iova(buf_off);
            desc[24..28].copy_from_slice(&((a >> 32) as u32).to_le_bytes());
            desc[28..32].copy_from_slice(&(a as u32).to_le_bytes());
        }
        self.write_mem(ATQ_RING + slot as usize * 32, &desc);
        self.atq_next = (slot + 1) % AQ_LEN;
        self.wr(PF_ATQT, self.atq_next);
        slot
    }

    /// Runs the model until ATQH reaches our tail (docs/hw/i40e.md §5.4 step 5) and returns the completion.
    fn complete(&self, slot: u32, buf_len: usize) -> Done {
        let start = Instant::now();
        while self.rd(PF_ATQH) != self.atq_next {
            self.port.step();
            assert!(start.elapsed() < Duration::from_secs(5), "admin command never completed");
        }
        let desc: [u8; 32] = self.read_mem(ATQ_RING + slot as usize * 32, 32).try_into().unwrap();
        Done { desc, buf: self.read_mem(ATQ_BUF + slot as usize * AQ_BUF_LEN, buf_len) }
    }

    fn send_raw(&mut self, desc: [u8; 32], buf: Option<&[u8]>) -> Done {
        let len = buf.map_or(0, <[u8]>::len);
        let slot = self.post_raw(desc, buf);
        self.complete(slot, len)
    }

    /// A direct command (docs/hw/i40e.md §5.4): flags SI, the parameters at descriptor bytes 16..32.
    fn direct(&mut self, op: u16, params: [u8; 16]) -> Done {
        self.send_raw(desc(SI, op, 0, params), None)
    }

    /// An indirect command: BUF (+LB above 512 bytes) (+RD when `rd`), datalen, the buffer address at 24/28.
    fn indirect(&mut self, op: u16, rd: bool, params: [u8; 8], buf: &[u8]) -> Done {
        let mut flags = SI | BUF;
        if buf.len() > 512 {
            flags |= LB;
        }
        if rd {
            flags |= RD;
        }
        let mut p = [0u8; 16];
        p[..8].copy_from_slice(&params);
        self.send_raw(desc(flags, op, buf.len() as u16, p), Some(buf))
    }

    /// The next ARQ event, if the firmware posted one (docs/hw/i40e.md §5.5); re-arms the slot.
    fn next_event(&mut self) -> Option<[u8; 32]> {
        if self.rd(PF_ARQH) & 0x3FF == self.arq_next {
            return None;
        }
        let slot = self.arq_next;
        let d: [u8; 32] = self.read_mem(ARQ_RING + slot as usize * 32, 32).try_into().unwrap();
        self.arm_arq(slot);
        self.wr(PF_ARQT, slot);
        self.arq_next = (slot + 1) % AQ_LEN;
        Some(d)
    }

    /// docs/hw/i40e.md §3 steps 1-16 and 21-25 against the model, checking every answer; leaves the VSI with `nq` queues.
    fn bring_up(&mut self, nq: u16) {
        assert_eq!(self.rd(0x08_3048) >> 16 & 0xFF, 0, "GL_FWSTS.FWS1B: not in recovery mode");
        self.reset();
        self.init_aq();
        // Get Version (docs/hw/i40e.md §6.1).
        let v = self.direct(0x0001, [0; 16]);
        v.ok();
        assert_eq!(v.p16(12), 1, "api_major");
        // Driver Version (docs/hw/i40e.md §6.1): bytes 0..3 the version, the name in the buffer.
        let mut p = [0u8; 8];
        p[..4].copy_from_slice(&[1, 2, 3, 4]);
        self.indirect(0x0002, true, p, b"nicsim-test").ok();
        assert_eq!(self.port.driver_version(), Some(([1, 2, 3, 4], "nicsim-test".to_string())));
        // Clear PXE (docs/hw/i40e.md §3 step 7).
        let mut p = [0u8; 16];
        p[0] = 2;
        self.direct(0x0110, p).ok();
        self.wr(0x12_A500, 1);
        // PHY abilities with report_init (docs/hw/i40e.md §7.1): 536-byte buffer, so LB.
        let mut p = [0u8; 8];
        p[0] = 2;
        let a = self.indirect(0x0600, false, p, &[0; 536]);
        a.ok();
        assert_ne!(a.buf[4], 0, "a link speed is reported");
        // Capabilities (docs/hw/i40e.md §6.2).
        let caps = self.indirect(0x000A, false, [0; 8], &[0; 4096]);
        caps.ok();
        let n = caps.p32(4) as usize;
        let mut rxq = None;
        for e in caps.buf[..n * 32].chunks(32) {
            if le16(e, 0) == 0x0041 {
                rxq = Some((le32(e, 4), le32(e, 12)));
            }
        }
        let (count, first) = rxq.expect("RXQ capability");
        assert_eq!(count, u32::from(self.port.config().num_queues));
        self.learnt.first_queue = first;
        self.setup_hmc(count as usize);
        // MAC address (docs/hw/i40e.md §6.4).
        let m = self.indirect(0x0107, false, [0; 8], &[0; 24]);
        m.ok();
        assert_ne!(m.p16(0) & 0x10, 0, "LAN address valid");
        assert_eq!(m.buf[0..6], self.port.config().mac);
        // Switch config (docs/hw/i40e.md §6.5): one VSI element, uplink = a MAC.
        let s = self.indirect(0x0200, false, [0; 8], &[0; 512]);
        s.ok();
        assert_eq!(le16(&s.buf, 0), 1, "num_reported");
        assert_eq!(s.buf[16], 19, "element type VSI");
        self.learnt.vsi_seid = le16(&s.buf, 18);
        // VSI parameters (docs/hw/i40e.md §6.6).
        let seid = self.learnt.vsi_seid.to_le_bytes();
        let g = self.indirect(0x0212, false, [seid[0], seid[1], 0, 0, 0, 0, 0, 0], &[0; 128]);
        g.ok();
        self.learnt.vsi_number = g.p16(2);
        self.learnt.qs_handle = le16(&g.buf, 96);
        self.learnt.stat_idx = le16(&g.buf, 112) as usize;
        assert_ne!(self.learnt.qs_handle, 0xFFFF);
        // TC bandwidth (docs/hw/i40e.md §6.6): TC0, credit 1; the handles come back at 16.
        let mut bw = [0u8; 32];
        bw[0] = 1;
        bw[4] = 1;
        let t = self.indirect(0x0407, true, [seid[0], seid[1], 0, 0, 0, 0, 0, 0], &bw);
        t.ok();
        self.learnt.qs_handle = le16(&t.buf, 16);
        // Update VSI (docs/hw/i40e.md §6.6): VLAN and queue map sections.
        let mut props = g.buf.clone();
        props[0..2].copy_from_slice(&(0x4u16 | 0x40).to_le_bytes());
        props[12] = 0x03;
        props[28..30].copy_from_slice(&0u16.to_le_bytes());
        props[30..32].copy_from_slice(&0u16.to_le_bytes());
        props[62..64].copy_from_slice(&((nq.trailing_zeros() as u16) << 9).to_le_bytes());
        self.indirect(0x0211, true, [seid[0], seid[1], 0, 0, 0, 0, 0, 0], &props).ok();
        assert_eq!(self.port.vsi_queues(), (0, nq));
        // Broadcast on (docs/hw/i40e.md §6.8).
        let mut p = [0u8; 16];
        p[0] = 0x04;
        p[2] = 0x04;
        p[4..6].copy_from_slice(&seid);
        self.direct(0x0254, p).ok();
        // Link status events on (docs/hw/i40e.md §7.4), MAC config (§7.3).
        let mut p = [0u8; 16];
        p[0] = 3;
        let l = self.direct(0x0607, p);
        l.ok();
        assert_eq!(l.p16(0) & 1, 1, "LSE on");
        let mut p = [0u8; 16];
        p[0..2].copy_from_slice(&9728u16.to_le_bytes());
        p[2] = 0x04;
        self.direct(0x0603, p).ok();
        self.port.assert_no_faults();
    }

    /// docs/hw/i40e.md §8.3, direct model with one SD: TX contexts at FPM 0, RX contexts at the next 512-byte boundary.
    fn setup_hmc(&self, n: usize) {
        assert!(n <= self.rd(GLHMC_LANQMAX) as usize & 0x7FF);
        let tx_size = n * 128;
        let rx_base = tx_size.div_ceil(512) * 512;
        let total = (rx_base + n * 32).div_ceil(512) * 512;
        self.write_mem(HMC, &vec![0; total]);
        let a = self.iova(HMC);
        self.wr(PFHMC_SDDATAHIGH, (a >> 32) as u32);
        self.wr(PFHMC_SDDATALOW, (a as u32 & 0xFFFF_F000) | 512 << 2 | 1 << 1 | 1);
        self.wr(PFHMC_SDCMD, 1 << 31);
        // The HMC function is the PF (docs/hw/i40e.md §8.2).
        let f = 4 * usize::from(self.port.config().pf_id);
        self.wr(0x0C_6200 + f, 0);
        self.wr(0x0C_6300 + f, n as u32);
        self.wr(0x0C_6400 + f, (rx_base / 512) as u32);
        self.wr(0x0C_6500 + f, n as u32);
    }

    fn rx_ctx_offset(&self, q: usize) -> usize {
        let n = self.port.config().num_queues as usize;
        HMC + (n * 128).div_ceil(512) * 512 + q * 32
    }

    /// docs/hw/i40e.md §8.5 and §9.2: TX context for queue `q` on the rig's TX ring, QTX_CTL.
    fn setup_tx(&self, q: usize, tweak: impl FnOnce(&mut [u8; 128])) {
        self.write_mem(TX_RING, &vec![0; RING as usize * 16]);
        let mut ctx = [0u8; 128];
        pack(&mut ctx, 30, 1, 1);
        pack(&mut ctx, 32, 57, self.iova(TX_RING) / 128);
        pack(&mut ctx, 161, 13, RING.into());
        pack(&mut ctx, 980, 10, self.learnt.qs_handle.into());
        tweak(&mut ctx);
        self.write_mem(HMC + q * 128, &ctx);
        let pf = u32::from(self.port.config().pf_id);
        self.wr(qtx_ctl(q), 2 | pf << 2);
    }

    /// docs/hw/i40e.md §9.4 TX enable.
    fn enable_tx(&self, q: usize) {
        let abs = self.learnt.first_queue as usize + q;
        let b = gllan_txpre_qdis(abs / 128);
        let v = self.rd(b) & !0x7FF;
        self.wr(b, v | (abs % 128) as u32 | 1 << 31);
        poll("TX REQ == STAT", || {
            let e = self.rd(qtx_ena(q));
            e & 1 == (e >> 2) & 1
        });
        self.wr(qtx_head(q), 0);
        self.wr(qtx_ena(q), 1);
        poll("TX enabled", || self.rd(qtx_ena(q)) & 0x5 == 0x5);
    }

    /// docs/hw/i40e.md §8.6, §9.3: RX context (32-byte descriptors, 2 KiB buffers), descriptors posted, tail N − 1.
    fn setup_rx(&mut self, q: usize, rxmax: u64, tweak: impl FnOnce(&mut [u8; 32])) {
        let ring = RX_RING + q * 0x2000;
        let mut ctx = [0u8; 32];
        pack(&mut ctx, 32, 57, self.iova(ring) / 128);
        pack(&mut ctx, 89, 13, RING.into());
        pack(&mut ctx, 102, 7, (RX_BUF_LEN / 128) as u64);
        pack(&mut ctx, 116, 1, 1); // 32-byte descriptors
        pack(&mut ctx, 117, 1, 1); // strip CRC
        pack(&mut ctx, 119, 1, 1); // l2tsel
        pack(&mut ctx, 174, 14, rxmax);
        pack(&mut ctx, 193, 4, 0xF); // tph*
        pack(&mut ctx, 198, 3, 2); // lrxqthresh
        pack(&mut ctx, 201, 1, 1); // prefena
        tweak(&mut ctx);
        self.write_mem(self.rx_ctx_offset(q), &ctx);
        for i in 0..RING {
            self.post_rx(q, i);
        }
        self.wr(qrx_tail(q), RING - 1);
        self.rx_next[q] = 0;
    }

    fn rx_buf(q: usize, i: u32) -> usize {
        RX_BUF + (q * RING as usize + i as usize) * RX_BUF_LEN
    }

    fn post_rx(&self, q: usize, i: u32) {
        let mut d = [0u8; 32];
        d[0..8].copy_from_slice(&self.iova(Self::rx_buf(q, i)).to_le_bytes());
        self.write_mem(RX_RING + q * 0x2000 + i as usize * 32, &d);
    }

    fn enable_rx(&self, q: usize) {
        poll("RX REQ == STAT", || {
            let e = self.rd(qrx_ena(q));
            e & 1 == (e >> 2) & 1
        });
        self.wr(qrx_ena(q), 1);
        poll("RX enabled", || self.rd(qrx_ena(q)) & 0x5 == 0x5);
    }

    /// Queues a one-descriptor packet (docs/hw/i40e.md §10.3) with EOP | RS | ICRC (+ `cmd`), rings the tail.
    fn send(&mut self, frame: &[u8], cmd: u64, offset: u64) -> u32 {
        let i = self.tx_next;
        let buf = TX_BUF + i as usize * TX_BUF_LEN;
        self.write_mem(buf, frame);
        let qw1 = ((0x7 | cmd) << 4) | offset << 16 | (frame.len() as u64) << 34;
        let mut d = [0u8; 16];
        d[0..8].copy_from_slice(&self.iova(buf).to_le_bytes());
        d[8..16].copy_from_slice(&qw1.to_le_bytes());
        self.write_mem(TX_RING + i as usize * 16, &d);
        self.tx_next = (i + 1) % RING;
        self.wr(qtx_tail(0), self.tx_next);
        i
    }

    fn tx_done(&self, i: u32) -> bool {
        le64(&self.read_mem(TX_RING + i as usize * 16, 16), 8) & 0xF == 0xF
    }

    /// The next received frame on queue `q` (docs/hw/i40e.md §10.2): (bytes, qword 0, last qword 1), re-posting the descriptors.
    fn recv(&mut self, q: usize) -> Option<(Vec<u8>, u64, u64)> {
        let mut data = Vec::new();
        let mut i = self.rx_next[q];
        loop {
            let d = self.read_mem(RX_RING + q * 0x2000 + i as usize * 32, 32);
            let qw1 = le64(&d, 8);
            if qw1 & 1 == 0 {
                assert!(data.is_empty(), "a frame's later descriptor not written back");
                return None;
            }
            let len = ((qw1 >> 38) & 0x3FFF) as usize;
            data.extend(self.read_mem(Self::rx_buf(q, i), len));
            self.post_rx(q, i);
            let tail = i;
            i = (i + 1) % RING;
            self.wr(qrx_tail(q), tail);
            if qw1 & 2 != 0 {
                self.rx_next[q] = i;
                return Some((data, le64(&d, 0), qw1));
            }
        }
    }
}

fn desc(flags: u16, op: u16, datalen: u16, params: [u8; 16]) -> [u8; 32] {
    let mut d = [0u8; 32];
    d[0..2].copy_from_slice(&flags.to_le_bytes());
    d[2..4].copy_from_slice(&op.to_le_bytes());
    d[4..6].copy_from_slice(&datalen.to_le_bytes());
    d[8..12].copy_from_slice(&0xC00C_1E01u32.to_le_bytes());
    d[12..16].copy_from_slice(&0xC00C_1E02u32.to_le_bytes());
    d[16..32].copy_from_slice(&params);
    d
}

/// A UDP/IPv4 frame from the rig's peer to `dst` with the given ports and payload length.
fn udp(dst: [u8; 6], sport: u16, dport: u16, payload: usize) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x99]);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let total = 20 + 8 + payload;
    let mut ip = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 0, 0x40, 0, 64, 17, 0, 0];
    ip.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    let c = net::internet_checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend((0..payload).map(|i| i as u8));
    f
}

fn protocol_faults(port: &X710Port) -> Vec<String> {
    port.take_faults()
        .into_iter()
        .map(|f| match f {
            Fault::Protocol { what } => what,
            other => panic!("unexpected fault {other}"),
        })
        .collect()
}

/// A port brought up with `nq` VSI queues, TX queue 0 and RX queues 0..nrx enabled.
fn ready(config: X710Config, nq: u16, nrx: usize) -> Rig {
    let mut r = Rig::new(config);
    r.bring_up(nq);
    r.setup_tx(0, |_| {});
    for q in 0..nrx {
        r.setup_rx(q, 9728, |_| {});
    }
    for q in 0..nrx {
        r.enable_rx(q);
    }
    r.enable_tx(0);
    r.port.assert_no_faults();
    r
}

// ---- identity, reset, firmware ready -----------------------------------------------------------------------------

#[test]
fn identity_of_each_part() {
    for (part, id) in [
        (X710Part::X710Sfp, 0x1572),
        (X710Part::Xl710QsfpA, 0x1583),
        (X710Part::Xl710QsfpB, 0x1584),
        (X710Part::Xxv710Sfp28, 0x158B),
    ] {
        let (bar, port) = X710::new(X710Config::part(part));
        let id_ = port.pci_identity();
        assert_eq!((id_.vendor, id_.device), (0x8086, id));
        assert_eq!(id_.bars[0], 8 << 20);
        assert_eq!(bar.len(), 8 << 20);
    }
}

#[test]
fn reset_waits_for_firmware_and_self_clears() {
    // The firmware's delay runs from the model's creation.
    let t = Instant::now();
    let r = Rig::new(X710Config {
        fw_ready_delay: Duration::from_millis(300),
        reset_delay: Duration::from_millis(300),
        first_queue: 128,
        num_queues: 16,
        port: 2,
        ..X710Config::default()
    });
    let early = r.rd(GLNVM_ULD) & 0x18;
    if t.elapsed() < Duration::from_millis(250) {
        assert_eq!(early, 0, "the configuration is not loaded yet");
    }
    poll("GLNVM_ULD", || r.rd(GLNVM_ULD) & 0x18 == 0x18);
    assert!(t.elapsed() >= Duration::from_millis(300));
    // Who am I (docs/hw/i40e.md §3 step 4, §4.3).
    assert_eq!(r.rd(0x1C_0480) & 3, 2, "PFGEN_PORTNUM");
    assert_eq!(r.rd(PFLAN_QALLOC), 128 | (128 + 15) << 16 | 1 << 31);
    let t = Instant::now();
    r.wr(PFGEN_CTRL, 1);
    let during = r.rd(PFGEN_CTRL) & 1;
    r.wr(PF_ATQLEN, 5);
    if t.elapsed() < Duration::from_millis(250) {
        assert_eq!(during, 1, "PFSWR reads 1 during the reset");
    }
    poll("PFSWR", || r.rd(PFGEN_CTRL) & 1 == 0);
    assert!(t.elapsed() >= Duration::from_millis(300));
    assert_eq!(r.rd(PF_ATQLEN), 0, "writes during the reset are ignored");
    r.port.assert_no_faults();
}

#[test]
fn pf_reset_clears_queue_enables_but_keeps_corer_registers() {
    let mut r = ready(X710Config::default(), 1, 1);
    r.wr(PFQF_CTL_0, 1 << 16);
    assert_eq!(r.rd(qtx_ena(0)) & 0x5, 0x5);
    r.reset();
    assert_eq!(r.rd(qtx_ena(0)), 0, "QTX_ENA is PFR");
    assert_eq!(r.rd(qrx_ena(0)), 0, "QRX_ENA is PFR");
    assert_eq!(r.rd(qtx_ctl(0)), 2, "QTX_CTL is CORER");
    assert_eq!(r.rd(PFQF_CTL_0), 1 << 16, "PFQF_CTL_0 is CORER");
    assert_eq!(r.rd(PF_ATQLEN), AQ_LEN | 1 << 31, "the admin queue is EMPR");
    // The firmware forgot the VSI set-up.
    assert_eq!(r.port.vsi_queues(), (0, 0));
    r.bring_up(1);
}

// ---- admin queue ---------------------------------------------------------------------------------------------------

#[test]
fn direct_command_round_trip() {
    let mut r = Rig::new(X710Config {
        fw_version: (8, 5),
        api_version: (1, 12),
        rom_ver: 0xAABB,
        fw_build: 0x1234_5678,
        ..Default::default()
    });
    r.reset();
    r.init_aq();
    let d = r.direct(0x0001, [0; 16]);
    d.ok();
    assert_eq!(le16(&d.desc, 2), 0x0001, "opcode kept");
    assert_eq!((le32(&d.desc, 8), le32(&d.desc, 12)), (0xC00C_1E01, 0xC00C_1E02), "cookies returned unchanged");
    assert_eq!(d.flags() & SI, SI, "the driver's flags stay");
    assert_eq!(d.p32(0), 0xAABB, "rom_ver at 0");
    assert_eq!(d.p32(4), 0x1234_5678, "fw_build at 4");
    assert_eq!((d.p16(8), d.p16(10)), (8, 5), "fw_major/minor at 8/10");
    assert_eq!((d.p16(12), d.p16(14)), (1, 12), "api_major/minor at 12/14");
    assert_eq!(r.rd(PF_ATQH), 1);
    r.port.assert_no_faults();
}

#[test]
fn indirect_command_round_trip_and_short_buffer() {
    let mut r = Rig::new(X710Config { num_queues: 48, first_queue: 64, flow_director: true, ..Default::default() });
    r.reset();
    r.init_aq();
    let d = r.indirect(0x000A, false, [0; 8], &[0; 4096]);
    d.ok();
    let n = d.p32(4) as usize;
    assert!(n >= 6, "{n} capabilities");
    let caps: Vec<(u16, u32, u32, u32)> =
        d.buf[..n * 32].chunks(32).map(|e| (le16(e, 0), le32(e, 4), le32(e, 8), le32(e, 12))).collect();
    assert!(caps.contains(&(0x0041, 48, 0, 64)), "RXQ: number 48, phys_id 64: {caps:x?}");
    assert!(caps.contains(&(0x0042, 48, 0, 64)), "TXQ");
    assert!(caps.contains(&(0x0040, 512, 6, 0)), "RSS: 512 entries of 6 bits");
    assert!(caps.iter().any(|c| c.0 == 0x0045), "flow director");
    assert!(d.buf[n * 32..].iter().all(|&b| b == 0), "nothing past the elements");
    // Too small: ENOMEM with the size needed in datalen (docs/hw/i40e.md §6.2).
    let s = r.indirect(0x000A, false, [0; 8], &[0; 64]);
    s.failed(AqRc::Enomem);
    assert_eq!(s.datalen() as usize, n * 32);
    // Write direction: the firmware reads a RD buffer (driver version) and never writes it.
    r.indirect(0x0002, true, [9, 8, 7, 6, 0, 0, 0, 0], b"abc").ok();
    assert_eq!(r.port.driver_version(), Some(([9, 8, 7, 6], "abc".into())));
    r.port.assert_no_faults();
}

#[test]
fn malformed_commands_are_rejected_with_einval_and_a_fault() {
    let mut r = Rig::new(X710Config::default());
    r.reset();
    r.init_aq();
    let seid = |r: &mut Rig| {
        let s = r.indirect(0x0200, false, [0; 8], &[0; 512]);
        le16(&s.buf, 18)
    };
    let vsi = seid(&mut r).to_le_bytes();
    // (what is wrong, the descriptor, its buffer)
    type Case = (&'static str, [u8; 32], Option<Vec<u8>>);
    let cases: Vec<Case> = vec![
        ("BUF on a direct command", desc(SI | BUF, 0x0001, 0, [0; 16]), Some(vec![0; 16])),
        ("a direct command with datalen", desc(SI, 0x0001, 16, [0; 16]), None),
        ("reserved parameter byte", desc(SI, 0x0001, 0, [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), None),
        ("DD left set by the driver", desc(SI | DD, 0x0001, 0, [0; 16]), None),
        ("indirect without BUF", desc(SI, 0x0107, 24, [0; 16]), None),
        ("RD on a get", desc(SI | BUF | RD, 0x0200, 512, [0; 16]), Some(vec![0; 512])),
        ("no RD on a set", desc(SI | BUF, 0x0002, 3, [0; 16]), Some(b"abc".to_vec())),
        ("no LB above 512 bytes", desc(SI | BUF, 0x0600, 536, [0; 16]), Some(vec![0; 536])),
        ("LB on a small buffer", desc(SI | BUF | LB, 0x0107, 24, [0; 16]), Some(vec![0; 24])),
        ("MAC read buffer too short", desc(SI | BUF, 0x0107, 16, [0; 16]), Some(vec![0; 16])),
        (
            "VSI seid at the wrong offset",
            desc(SI | BUF, 0x0212, 128, [0, vsi[0], vsi[1], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            Some(vec![0; 128]),
        ),
        (
            "MAC-VLAN without the SEID valid bit",
            desc(SI | BUF | RD, 0x0250, 16, [1, 0, vsi[0], vsi[1], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            Some(vec![2, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]),
        ),
        (
            "MAC-VLAN length not 16 per address",
            desc(SI | BUF | RD, 0x0250, 24, [1, 0, vsi[0], vsi[1] | 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            Some(vec![0; 24]),
        ),
        (
            "promiscuous flags outside valid",
            desc(SI, 0x0254, 0, [0x04, 0, 0x01, 0, vsi[0], vsi[1], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            None,
        ),
        ("link status command_flags 1", desc(SI, 0x0607, 0, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), None),
        ("MAC config above 9728", desc(SI, 0x0603, 0, [0x01, 0x26, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), None),
    ];
    for (what, d, buf) in cases {
        let done = r.send_raw(d, buf.as_deref());
        assert_eq!(done.retval(), AqRc::Einval as u16, "{what}: retval");
        assert_eq!(done.flags() & (DD | CMP | ERR), DD | CMP | ERR, "{what}: flags");
        let faults = protocol_faults(&r.port);
        assert_eq!(faults.len(), 1, "{what}: one fault, got {faults:?}");
    }
    // The 0x0607 at the right offset and 9728 itself are fine.
    r.direct(0x0603, [0x00, 0x26, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).ok();
    assert_eq!(r.port.mac_config(), (9728, true));
    // An unknown opcode: ESRCH, never success, and not a fault.
    r.direct(0x0777, [0; 16]).failed(AqRc::Esrch);
    r.direct(0x0108, [0; 16]).failed(AqRc::Esrch);
    r.port.assert_no_faults();
}

#[test]
fn rx_control_commands_depend_on_the_api_version() {
    let mut r = Rig::new(X710Config { api_version: (1, 4), ..Default::default() });
    r.reset();
    r.init_aq();
    let mut p = [0u8; 16];
    p[4..8].copy_from_slice(&(PFQF_CTL_0 as u32).to_le_bytes());
    p[12..16].copy_from_slice(&(1u32 << 16).to_le_bytes());
    r.direct(0x0207, p).failed(AqRc::Esrch);
    let mut r = Rig::new(X710Config::default());
    r.reset();
    r.init_aq();
    r.direct(0x0207, p).ok();
    assert_eq!(r.rd(PFQF_CTL_0), 1 << 16);
    let mut q = [0u8; 16];
    q[4..8].copy_from_slice(&(pfqf_hena(1) as u32).to_le_bytes());
    r.wr(pfqf_hena(1), 0x8000_0000);
    assert_eq!(r.direct(0x0206, q).ok().p32(12), 0x8000_0000);
    q[4..8].copy_from_slice(&(PFGEN_CTRL as u32).to_le_bytes());
    r.direct(0x0207, q).failed(AqRc::Einval);
    assert_eq!(protocol_faults(&r.port).len(), 1);
}

#[test]
fn mac_filters_and_promiscuous_modes() {
    let mut r = ready(X710Config::default(), 1, 1);
    let other = [0x02, 0, 0, 0, 0, 0x42];
    let seid = r.learnt.vsi_seid;
    let s = seid.to_le_bytes();
    r.port.inject(&udp(other, 1, 2, 40));
    r.step();
    assert!(r.recv(0).is_none(), "an unknown unicast MAC is filtered");
    assert_eq!(r.port.counters().rx_filtered, 1);
    // Add a MAC filter (docs/hw/i40e.md §6.7): PERFECT | IGNORE_VLAN.
    let mut e = [0u8; 16];
    e[0..6].copy_from_slice(&other);
    e[8..10].copy_from_slice(&0x5u16.to_le_bytes());
    let add = r.indirect(0x0250, true, [1, 0, s[0], s[1] | 0x80, 0, 0, 0, 0], &e);
    add.ok();
    assert_eq!(add.buf[12], 1, "match_method perfect");
    assert_eq!(add.p16(0), 2, "perfect_mac_used: the default filter and this one");
    r.port.inject(&udp(other, 1, 2, 40));
    r.step();
    assert!(r.recv(0).is_some());
    // Remove it; removing it twice fails with ENOENT and error_code 0xFF.
    let mut e = [0u8; 16];
    e[0..6].copy_from_slice(&other);
    e[8] = 0x1 | 0x8;
    r.indirect(0x0251, true, [1, 0, s[0], s[1] | 0x80, 0, 0, 0, 0], &e).ok();
    let again = r.indirect(0x0251, true, [1, 0, s[0], s[1] | 0x80, 0, 0, 0, 0], &e);
    again.failed(AqRc::Enoent);
    assert_eq!(again.buf[12], 0xFF);
    // Unicast promiscuous (with RX_ONLY in valid, docs/hw/i40e.md §6.8).
    let mut p = [0u8; 16];
    p[0..2].copy_from_slice(&0x8001u16.to_le_bytes());
    p[2..4].copy_from_slice(&0x8001u16.to_le_bytes());
    p[4..6].copy_from_slice(&s);
    r.direct(0x0254, p).ok();
    assert_eq!(r.port.promiscuous_flags(), 0x8005);
    r.port.inject(&udp(other, 1, 2, 40));
    r.step();
    assert!(r.recv(0).is_some());
    r.port.assert_no_faults();
}

/// A MAC + VLAN filter (docs/hw/i40e.md §6.7) matches its MAC only with that VLAN ID; untagged frames count as
/// VLAN 0; a MAC-only (IGNORE_VLAN) filter takes every tag.
#[test]
fn mac_vlan_filters_match_the_vlan_id() {
    let mut r = ready(X710Config::default(), 1, 1);
    let mac = r.port.config().mac;
    let s = r.learnt.vsi_seid.to_le_bytes();
    let params = [1, 0, s[0], s[1] | 0x80, 0, 0, 0, 0];
    let plain = udp(mac, 1, 2, 40);
    let tag = |vid: u16| [&plain[..12], &[0x81, 0x00], &vid.to_be_bytes()[..], &plain[12..]].concat();
    let elem = |vid: u16, flags: u16| {
        let mut e = [0u8; 16];
        e[0..6].copy_from_slice(&mac);
        e[6..8].copy_from_slice(&vid.to_le_bytes());
        e[8..10].copy_from_slice(&flags.to_le_bytes());
        e
    };
    // Only the MAC + VLAN 5 filter: the firmware's MAC-only filter removed (PERFECT | IGNORE_VLAN in the remove flags).
    r.indirect(0x0250, true, params, &elem(5, 0x1)).ok();
    r.indirect(0x0251, true, params, &elem(0, 0x1 | 0x8)).ok();
    assert_eq!(r.port.mac_filters(), vec![(mac, Some(5))]);
    let filtered = r.port.counters().rx_filtered;
    for (frame, passes) in [(tag(5), true), (tag(6), false), (plain.clone(), false), (tag(0x3005), true)] {
        r.port.inject(&frame);
        r.step();
        let got = r.recv(0).map(|(d, _, _)| d);
        assert_eq!(got.is_some(), passes, "{:02x?}", &frame[12..16]);
        if let Some(d) = got {
            assert_eq!(d, plain, "the rig's VSI strips the tag into the descriptor");
        }
    }
    assert_eq!(r.port.counters().rx_filtered - filtered, 2, "tag 6 and the untagged frame");
    // MAC + VLAN 0 lets untagged frames in, still not tag 6.
    r.indirect(0x0250, true, params, &elem(0, 0x1)).ok();
    r.port.inject(&plain);
    r.port.inject(&tag(6));
    r.step();
    assert_eq!(r.recv(0).map(|(d, _, _)| d), Some(plain.clone()));
    assert!(r.recv(0).is_none());
    // Removing MAC + VLAN 5 (no IGNORE_VLAN in the remove flags) drops tag 5 again.
    r.indirect(0x0251, true, params, &elem(5, 0x1)).ok();
    r.port.inject(&tag(5));
    r.step();
    assert!(r.recv(0).is_none());
    assert_eq!(r.port.counters().rx_filtered - filtered, 4);
    r.port.assert_no_faults();
}

// ---- HMC, queues, traffic ------------------------------------------------------------------------------------------

fn bring_up_and_traffic(config: X710Config) {
    let mac = config.mac;
    let mut r = ready(config, 1, 1);
    // TX: one packet out, DD (DTYPE 0xF) written back, bytes on the wire.
    let f = udp([0x02, 0, 0, 0, 0, 0x99], 1000, 2000, 100);
    let i = r.send(&f, 0, 0);
    r.step();
    assert!(r.tx_done(i), "DTYPE 0xF after RS");
    assert_eq!(r.port.take_tx(), vec![f.clone()]);
    assert_eq!(r.rd(qtx_head(0)), 1);
    // RX: a frame to our MAC lands in the buffer with DD | EOF and its length.
    let g = udp(mac, 5, 6, 200);
    r.port.inject(&g);
    r.step();
    let (data, _, qw1) = r.recv(0).expect("a frame");
    assert_eq!(data, g);
    assert_eq!((qw1 >> 30) & 0xFF, 24, "PTYPE IPv4 UDP");
    assert_eq!((qw1 >> 9) & 3, 0, "unicast");
    assert_eq!((qw1 >> 19) & 0xFF, 0, "no error");
    r.port.inject(&[&[0xFF; 6][..], &g[6..]].concat());
    r.step();
    let (_, _, qw1) = r.recv(0).expect("a broadcast");
    assert_eq!((qw1 >> 9) & 3, 2, "broadcast");
    // Statistics (docs/hw/i40e.md §13) counted per port and per VSI.
    let port = r.port.config().port as usize;
    assert_eq!(r.rd(stat::GLPRT_UPRC + 8 * port), 1);
    assert_eq!(r.rd(stat::GLPRT_BPRC + 8 * port), 1);
    assert_eq!(r.rd(stat::GLPRT_GORC + 8 * port), (2 * (g.len() + 4)) as u32, "octets include the CRC");
    assert_eq!(r.rd(stat::GLV_UPRC + 8 * r.learnt.stat_idx), 1);
    assert_eq!(r.rd(stat::GLPRT_UPTC + 8 * port), 1);
    r.port.assert_no_faults();
}

#[test]
fn full_bring_up_x710() {
    bring_up_and_traffic(X710Config::default());
}

#[test]
fn full_bring_up_xl710_and_xxv710() {
    for (part, speed_bit, linksta) in
        [(X710Part::Xl710QsfpA, 0x10, 3), (X710Part::Xl710QsfpB, 0x10, 3), (X710Part::Xxv710Sfp28, 0x40, 3)]
    {
        bring_up_and_traffic(X710Config { pf_id: 1, port: 1, first_queue: 64, ..X710Config::part(part) });
        let mut r = Rig::new(X710Config::part(part));
        r.bring_up(1);
        let l = r.direct(0x0607, [0; 16]);
        l.ok();
        assert_eq!(l.desc[16 + 3], speed_bit, "{part:?}: link_speed");
        assert_eq!(l.desc[16 + 4] & 1, 1, "{part:?}: link up");
        let v = r.rd(PRTMAC_LINKSTA);
        assert_eq!(v & 0x4000_0080, 0x4000_0080);
        assert_eq!(v >> 27 & 7, linksta);
        assert_eq!(r.rd(0x1E_24E0) >> 17 & 1, u32::from(part == X710Part::Xxv710Sfp28), "25G flag in PRTMAC_MACC");
    }
}

#[test]
fn a_tx_context_with_a_stray_bit_or_wrong_handle_keeps_the_queue_off() {
    let mut r = Rig::new(X710Config::default());
    r.bring_up(1);
    // qlen one bit too low (bit 160 instead of 161): the model sees head_wb_ena and a wrong qlen.
    r.setup_tx(0, |c| {
        c[20] = 0;
        c[21] = 0;
        pack(c, 160, 13, RING.into());
    });
    let abs = r.learnt.first_queue as usize;
    r.wr(gllan_txpre_qdis(abs / 128), (abs % 128) as u32 | 1 << 31);
    r.wr(qtx_ena(0), 1);
    r.step();
    assert_eq!(r.rd(qtx_ena(0)) & 0x5, 0x1, "REQ set, STAT never follows");
    assert!(protocol_faults(&r.port).iter().any(|f| f.contains("qlen")));
    r.reset();
    r.bring_up(1);
    r.setup_tx(0, |c| pack(c, 980, 10, 0x3FF ^ u64::from(0u16)));
    r.wr(gllan_txpre_qdis(abs / 128), (abs % 128) as u32 | 1 << 31);
    r.wr(qtx_ena(0), 1);
    assert_eq!(r.rd(qtx_ena(0)) & 0x4, 0);
    assert!(protocol_faults(&r.port).iter().any(|f| f.contains("rdylist")));
}

#[test]
fn tx_enable_needs_the_pre_disable_clear_and_a_pf_queue_ctl() {
    let mut r = Rig::new(X710Config::default());
    r.bring_up(1);
    r.setup_tx(0, |_| {});
    r.wr(qtx_ena(0), 1);
    assert_eq!(r.rd(qtx_ena(0)) & 0x4, 0);
    assert!(protocol_faults(&r.port).iter().any(|f| f.contains("CLEAR_QDIS")));
    r.reset();
    r.bring_up(1);
    r.setup_tx(0, |_| {});
    r.wr(qtx_ctl(0), 1); // a VM queue, not a PF queue
    let abs = r.learnt.first_queue as usize;
    r.wr(gllan_txpre_qdis(abs / 128), (abs % 128) as u32 | 1 << 31);
    r.wr(qtx_ena(0), 1);
    assert_eq!(r.rd(qtx_ena(0)) & 0x4, 0);
    assert!(protocol_faults(&r.port).iter().any(|f| f.contains("QTX_CTL")));
}

#[test]
fn an_rx_context_without_prefena_is_refused() {
    let mut r = Rig::new(X710Config::default());
    r.bring_up(1);
    r.setup_rx(0, 9728, |c| c[201 / 8] &= !(1 << (201 % 8)));
    r.wr(qrx_ena(0), 1);
    assert_eq!(r.rd(qrx_ena(0)) & 0x5, 0x1);
    assert!(protocol_faults(&r.port).iter().any(|f| f.contains("prefena")));
}

#[test]
fn paged_hmc_segment() {
    let mut r = Rig::new(X710Config::default());
    r.bring_up(1);
    // Re-program SD 0 as paged (docs/hw/i40e.md §8.3 step 5): a PD page whose entry 0 points at a backing page holding the
    // first 4 KiB of FPM (TX contexts 0..31).
    let pd = 0x4_8000;
    let page = 0x4_9000;
    let mut entry = [0u8; 4096];
    entry[0..8].copy_from_slice(&(r.iova(page) | 1).to_le_bytes());
    r.write_mem(pd, &entry);
    r.write_mem(page, &[0; 4096]);
    let a = r.iova(pd);
    r.wr(PFHMC_SDDATAHIGH, (a >> 32) as u32);
    r.wr(PFHMC_SDDATALOW, (a as u32 & 0xFFFF_F000) | 512 << 2 | 1);
    r.wr(PFHMC_SDCMD, 1 << 31);
    r.setup_tx(0, |_| {});
    // setup_tx wrote the context into the direct area; copy it to where the paged SD points.
    let ctx = r.read_mem(HMC, 128);
    r.write_mem(page, &ctx);
    r.enable_tx(0);
    let f = udp([0x02, 0, 0, 0, 0, 0x99], 1, 2, 50);
    r.send(&f, 0, 0);
    r.step();
    assert_eq!(r.port.take_tx(), vec![f]);
    r.port.assert_no_faults();
}

#[test]
fn checksum_and_vlan_insertion() {
    let mut r = ready(X710Config::default(), 1, 1);
    let mut f = udp([0x02, 0, 0, 0, 0, 0x99], 7, 9, 30);
    let want = f.clone();
    f[24..26].fill(0); // IP checksum cleared
                       // UDP checksum seeded with the pseudo-header sum.
    let p = net::parse(&f, 0x8100);
    let seed = net::fold(net::pseudo_header_sum(&f, &p, 17, 38));
    f[40..42].copy_from_slice(&seed.to_be_bytes());
    // IIPT IPv4 with checksum (0x060), L4T UDP (0x300), IL2TAG1 (0x008); MACLEN 14/2, IPLEN 20/4.
    let offset = 7 | 5 << 7;
    let i = r.send(&f, 0x060 | 0x300 | 0x008, offset);
    // L2TAG1 in bits 63:48.
    let mut d = r.read_mem(TX_RING + i as usize * 16, 16);
    let qw1 = le64(&d, 8) | 0x0123 << 48;
    d[8..16].copy_from_slice(&qw1.to_le_bytes());
    r.write_mem(TX_RING + i as usize * 16, &d);
    r.step();
    let out = r.port.take_tx().pop().expect("sent");
    assert_eq!(&out[12..16], &[0x81, 0x00, 0x01, 0x23], "VLAN tag inserted");
    let untagged = [&out[..12], &out[16..]].concat();
    assert_eq!(&untagged[24..26], &want[24..26], "IPv4 header checksum");
    let p = net::parse(&untagged, 0x8100);
    let sum = net::ones_sum(&untagged[34..], net::pseudo_header_sum(&untagged, &p, 17, 38));
    assert_eq!(net::fold(sum), 0xFFFF, "UDP checksum verifies");
    r.port.assert_no_faults();
}

#[test]
fn jumbo_9000_both_ways() {
    let mut r = ready(X710Config::default(), 1, 1);
    let f = udp(MAC, 1, 2, 9000 - 42);
    assert_eq!(f.len(), 9000);
    r.port.inject(&f);
    r.step();
    let start = r.rx_next[0];
    let (data, _, _) = r.recv(0).expect("the jumbo frame");
    assert_eq!(data, f);
    assert_eq!(r.rx_next[0] - start, 5, "9000 bytes in five 2 KiB buffers");
    let port = 0;
    assert_eq!(r.rd(stat::GLPRT_PRC64 + 6 * 0x20 + 8 * port), 1, "PRC9522 bucket");
    let i = r.send(&f, 0, 0);
    r.step();
    assert!(r.tx_done(i));
    assert_eq!(r.port.take_tx(), vec![f]);
    r.port.assert_no_faults();
}

#[test]
fn statistics_wrap_at_48_bits() {
    let mut r = ready(X710Config::default(), 1, 1);
    r.port.set_stat(stat::GLPRT_UPRC, (1 << 48) - 1);
    r.port.set_stat(stat::GLPRT_GORC, (1 << 48) - 10);
    assert_eq!(r.rd(stat::GLPRT_UPRC), 0xFFFF_FFFF);
    assert_eq!(r.rd(stat::GLPRT_UPRC + 4), 0xFFFF, "H holds bits 47:32 in 15:0");
    let f = udp(MAC, 1, 2, 60);
    r.port.inject(&f);
    r.step();
    assert!(r.recv(0).is_some());
    assert_eq!((r.rd(stat::GLPRT_UPRC), r.rd(stat::GLPRT_UPRC + 4)), (0, 0), "wrapped to 0");
    let gorc = u64::from(r.rd(stat::GLPRT_GORC)) | u64::from(r.rd(stat::GLPRT_GORC + 4)) << 32;
    assert_eq!(gorc, (f.len() + 4 - 10) as u64);
    // 32-bit counters wrap at 2^32.
    r.port.set_stat(stat::GLPRT_RUC, u64::from(u32::MAX));
    r.port.inject(&[0u8; 40]);
    r.step();
    assert_eq!(r.rd(stat::GLPRT_RUC), 0);
    // Read-only to the driver.
    r.wr(stat::GLPRT_UPRC, 77);
    assert_eq!(r.rd(stat::GLPRT_UPRC), 0);
    r.port.assert_no_faults();
}

#[test]
fn rss_spreads_by_toeplitz_hash_and_table() {
    let mut r = ready(X710Config::default(), 4, 4);
    for (i, chunk) in KEY.chunks(4).enumerate() {
        r.wr(pfqf_hkey(i), u32::from_le_bytes(chunk.try_into().unwrap()));
    }
    // 512 entries (HASHLUTSIZE), entry e = (e * 7 / 3) mod 4: not a plain round robin.
    r.wr(PFQF_CTL_0, 1 << 16);
    let lut: Vec<u8> = (0..512).map(|e| ((e * 7 / 3) % 4) as u8).collect();
    for (i, c) in lut.chunks(4).enumerate() {
        r.wr(pfqf_hlut(i), u32::from_le_bytes(c.try_into().unwrap()));
    }
    r.wr(pfqf_hena(0), 1 << 31); // IPv4 UDP
    let mut per_queue = [0usize; 4];
    for n in 0..200u16 {
        let f = udp(MAC, 1000 + n * 13, 4791, 30);
        let mut input = vec![10, 0, 0, 1, 10, 0, 0, 2];
        input.extend_from_slice(&(1000 + n * 13).to_be_bytes());
        input.extend_from_slice(&4791u16.to_be_bytes());
        let hash = net::toeplitz(&KEY, &input);
        let q = usize::from(lut[hash as usize % 512]);
        r.port.inject(&f);
        r.step();
        let (data, qw0, qw1) = r.recv(q).unwrap_or_else(|| panic!("frame {n} not on queue {q}"));
        assert_eq!(data, f);
        assert_eq!(qw0 >> 32, u64::from(hash), "hash in qword 0's high half");
        assert_eq!((qw1 >> 12) & 3, 3, "FLTSTAT = RSS hash");
        per_queue[q] += 1;
    }
    assert!(per_queue.iter().all(|&n| n > 20), "spread {per_queue:?}");
    // A TCP frame is not in HENA: queue 0 of the VSI, no hash.
    let mut t = udp(MAC, 1, 2, 30);
    t[23] = 6;
    r.port.inject(&t);
    r.step();
    let (_, _, qw1) = r.recv(0).expect("unhashed frame on the VSI's first queue");
    assert_eq!((qw1 >> 12) & 3, 0);
    r.port.assert_no_faults();
}

#[test]
fn rss_key_and_table_through_the_admin_queue() {
    let mut r = ready(X710Config::default(), 4, 1);
    let vsi = (r.learnt.vsi_number | 0x8000).to_le_bytes();
    r.indirect(0x0B02, true, [vsi[0], vsi[1], 0, 0, 0, 0, 0, 0], &KEY).ok();
    assert_eq!(r.rd(pfqf_hkey(0)), u32::from_le_bytes([0x44, 0x39, 0x79, 0x6b]));
    let lut: Vec<u8> = (0..512).map(|e| (e % 4) as u8).collect();
    r.indirect(0x0B03, true, [vsi[0], vsi[1], 1, 0, 0, 0, 0, 0], &lut).ok();
    assert_eq!(r.rd(pfqf_hlut(1)), u32::from_le_bytes([0, 1, 2, 3]));
    let got = r.indirect(0x0B05, true, [vsi[0], vsi[1], 1, 0, 0, 0, 0, 0], &[0; 512]);
    got.ok();
    assert_eq!(got.buf, lut);
    // The VSI's SEID is not its number.
    let s = r.learnt.vsi_seid.to_le_bytes();
    r.indirect(0x0B02, true, [s[0], s[1] | 0x80, 0, 0, 0, 0, 0, 0], &KEY).failed(AqRc::Einval);
    assert_eq!(protocol_faults(&r.port).len(), 1);
}

#[test]
fn two_pfs_wired_back_to_back() {
    let ((bar_a, a), (bar_b, b)) = X710::pair(X710Config { num_queues: 16, ..X710Config::part(X710Part::Xl710QsfpA) });
    let mut ra = Rig::with(bar_a, a);
    let mut rb = Rig::with(bar_b, b);
    for r in [&mut ra, &mut rb] {
        r.bring_up(1);
        r.setup_tx(0, |_| {});
        r.setup_rx(0, 9728, |_| {});
        r.enable_rx(0);
        r.enable_tx(0);
    }
    let f = udp(rb.port.config().mac, 3, 4, 64);
    ra.send(&f, 0, 0);
    nicsim::run_until_idle_x710(&[&ra.port, &rb.port]);
    assert_eq!(rb.recv(0).expect("across the wire").0, f);
    assert_eq!(rb.learnt.first_queue, 16, "the second PF's queues follow the first's");
    ra.port.assert_no_faults();
    rb.port.assert_no_faults();
}

// ---- link events and fault injection -------------------------------------------------------------------------------

#[test]
fn link_flap_posts_events_on_the_arq() {
    let mut r = ready(X710Config::default(), 1, 1);
    assert!(r.next_event().is_none());
    r.port.link_flap(Duration::from_millis(200));
    r.step();
    let down = r.next_event().expect("link down event");
    assert_eq!(le16(&down, 2), 0x0607);
    assert_eq!(le16(&down, 0) & (DD | CMP), DD | CMP);
    assert_eq!(down[16 + 4] & 1, 0, "link_info: down");
    assert_eq!(r.rd(PRTMAC_LINKSTA) & 0x4000_0080, 0);
    poll("link back", || {
        r.port.step();
        r.rd(PRTMAC_LINKSTA) & 0x4000_0080 == 0x4000_0080
    });
    r.step();
    let up = r.next_event().expect("link up event");
    assert_eq!(up[16 + 4] & 1, 1, "link_info: up");
    assert_eq!(up[16 + 3], 0x08, "10G");
    assert!(r.next_event().is_none());
    // Events masked (docs/hw/i40e.md §7.6) or LSE off: nothing posted.
    let mut p = [0u8; 16];
    p[8..10].copy_from_slice(&0x0002u16.to_le_bytes());
    r.direct(0x0613, p).ok();
    r.port.set_cable(false);
    r.step();
    assert!(r.next_event().is_none());
    assert!(!r.port.link_up());
    r.port.assert_no_faults();
}

#[test]
fn a_full_arq_overflows() {
    let r = ready(X710Config::default(), 1, 1);
    // Leave the event slots unread: after 31 events (ARQT = 31), the next one is lost and ARQOVFL set.
    for _ in 0..16 {
        r.port.set_cable(false);
        r.step();
        r.port.set_cable(true);
        r.step();
    }
    assert_eq!(r.rd(PF_ARQLEN) >> 29 & 1, 1, "ARQOVFL");
    assert_eq!(r.port.counters().arq_events, 31);
}

#[test]
fn injected_admin_error_and_stalled_command() {
    let mut r = Rig::new(X710Config::default());
    r.reset();
    r.init_aq();
    r.port.inject_aq_error(Some(0x0001), AqRc::Ebusy);
    r.direct(0x0001, [0; 16]).failed(AqRc::Ebusy);
    r.direct(0x0001, [0; 16]).ok();
    // A command that never completes: ATQH stands still, ATQCRIT tells.
    r.port.stall_admin_queue(true, true);
    let slot = r.post_raw(desc(SI, 0x0001, 0, [0; 16]), None);
    for _ in 0..10 {
        r.port.step();
    }
    assert_eq!(r.rd(PF_ATQH), slot, "head did not move");
    assert_eq!(r.rd(PF_ATQLEN) >> 30 & 1, 1, "ATQCRIT");
    r.port.stall_admin_queue(false, false);
    r.complete(slot, 0).ok();
    r.port.assert_no_faults();
}

#[test]
fn error_write_backs() {
    let mut r = ready(X710Config::default(), 1, 1);
    let f = udp(MAC, 1, 2, 100);
    r.port.inject_error(&f, X710RxError::Crc);
    r.port.inject_error(&f, X710RxError::Oversize);
    r.step();
    let (_, _, crc) = r.recv(0).unwrap();
    assert_eq!((crc >> 19) & 0xFF, 0x01, "RXE");
    let (_, _, big) = r.recv(0).unwrap();
    assert_eq!((big >> 19) & 0xFF, 0x40, "OVERSIZE");
    assert_eq!(r.rd(stat::GLPRT_CRCERRS), 1);
    r.port.assert_no_faults();
}

#[test]
fn tx_hang_and_recovery() {
    let mut r = ready(X710Config::default(), 1, 1);
    r.port.tx_hang(Some(0), true);
    let f = udp([0x02, 0, 0, 0, 0, 0x99], 1, 2, 50);
    let i = r.send(&f, 0, 0);
    r.step();
    assert!(!r.tx_done(i));
    assert_eq!(r.rd(qtx_head(0)), 0);
    assert!(r.port.take_tx().is_empty());
    r.port.tx_hang(Some(0), false);
    r.step();
    assert!(r.tx_done(i));
    assert_eq!(r.port.take_tx().len(), 1);
    r.port.assert_no_faults();
}

#[test]
fn malicious_driver_detection_stops_the_queue() {
    let mut r = ready(X710Config::default(), 1, 1);
    r.send(&[0u8; 0], 0, 0); // a zero-length buffer (docs/hw/i40e.md §11)
    r.step();
    let faults = protocol_faults(&r.port);
    assert!(faults.iter().any(|f| f.contains("MDD") && f.contains("length 0")), "{faults:?}");
    assert_eq!(r.rd(qtx_ena(0)) & 0x5, 0x1, "REQ stays, STAT drops");
    assert_eq!(r.rd(GL_MDET_TX) >> 31, 1);
}

#[test]
fn link_down_drops_tx_into_tdold() {
    let mut r = ready(X710Config::default(), 1, 1);
    // Set PHY Config without ENABLE_LINK takes the link down administratively (docs/hw/i40e.md §7.2).
    let mut p = [0u8; 16];
    p[4] = 0x08;
    p[5] = 0x20;
    r.direct(0x0601, p).ok();
    r.step();
    assert!(!r.port.link_up());
    let i = r.send(&udp([2, 0, 0, 0, 0, 9], 1, 2, 50), 0, 0);
    r.step();
    assert!(r.tx_done(i), "completed anyway");
    assert!(r.port.take_tx().is_empty());
    assert_eq!(r.rd(stat::GLPRT_TDOLD), 1);
    // And up again with ENABLE_LINK | ENABLE_AN | ATOMIC_LINK, every PHY type (docs/hw/i40e.md §7.2).
    let mut p = [0u8; 16];
    p[0..4].copy_from_slice(&0x7FFF_FFFFu32.to_le_bytes());
    p[4] = 0x08;
    p[5] = 0x08 | 0x10 | 0x20;
    p[13] = 0x3F;
    r.direct(0x0601, p).ok();
    assert!(r.port.link_up());
    r.port.assert_no_faults();
}

#[test]
fn threaded_model_answers_by_itself() {
    let mut r = Rig::new(X710Config::default());
    let _thread = r.port.start_thread();
    r.reset();
    r.init_aq();
    let slot = r.post_raw(desc(SI, 0x0001, 0, [0; 16]), None);
    poll("ATQH", || r.rd(PF_ATQH) == r.atq_next);
    let d: [u8; 32] = r.read_mem(ATQ_RING + slot as usize * 32, 32).try_into().unwrap();
    assert_eq!(le16(&d, 0) & (DD | CMP), DD | CMP);
    r.port.assert_no_faults();
}

#[test]
fn dma_outside_the_map_is_a_fault() {
    let mut r = Rig::new(X710Config::default());
    r.reset();
    r.init_aq();
    let mut d = desc(SI | BUF, 0x0107, 24, [0; 16]);
    d[24..28].copy_from_slice(&0u32.to_le_bytes());
    d[28..32].copy_from_slice(&0x1000u32.to_le_bytes());
    let done = r.send_raw(d, None);
    assert_eq!(done.retval(), AqRc::BadAddr as u16);
    assert!(matches!(r.port.take_faults().as_slice(), [Fault::Dma { iova: 0x1000, write: true, .. }]));
    let _ = regs::BAR0_LEN;
}

#[test]
fn a_tail_past_the_ring_is_refused() {
    let r = ready(X710Config::default(), 1, 1);
    r.wr(qtx_tail(0), RING);
    r.wr(qrx_tail(0), RING + 5);
    assert_eq!(r.rd(qtx_tail(0)), 0, "the TX tail kept its value");
    assert_eq!(r.rd(qrx_tail(0)), RING - 1);
    let faults = protocol_faults(&r.port);
    assert_eq!(faults.len(), 2, "{faults:?}");
    assert!(faults[0].contains("QTX_TAIL(0)") && faults[1].contains("QRX_TAIL(0)"));
    // A queue register beyond this PF's queues is a fault too.
    r.wr(qtx_tail(64), 1);
    assert!(protocol_faults(&r.port)[0].contains("beyond this PF"));
}

#[test]
fn queue_enable_handshake_takes_its_time() {
    let delay = Duration::from_millis(300);
    let mut r = Rig::new(X710Config { queue_enable_delay: delay, ..Default::default() });
    r.bring_up(1);
    r.setup_rx(0, 9728, |_| {});
    let t = Instant::now();
    r.wr(qrx_ena(0), 1);
    let during = r.rd(qrx_ena(0)) & 0x5;
    if t.elapsed() < delay * 4 / 5 {
        assert_eq!(during, 0x1, "REQ set, STAT not yet");
    }
    poll("RX STAT", || r.rd(qrx_ena(0)) & 0x5 == 0x5);
    assert!(t.elapsed() >= delay);
    // Disable: STAT stays 1 until the delay has passed.
    let t = Instant::now();
    r.wr(qrx_ena(0), 0);
    let during = r.rd(qrx_ena(0)) & 0x5;
    if t.elapsed() < delay * 4 / 5 {
        assert_eq!(during, 0x4, "REQ clear, STAT still 1");
    }
    poll("RX off", || r.rd(qrx_ena(0)) & 0x5 == 0);
    assert!(t.elapsed() >= delay);
    r.port.assert_no_faults();
}

#[test]
fn transmitted_frames_to_a_pcap_file() {
    let mut r = ready(X710Config::default(), 1, 1);
    let path = std::env::temp_dir().join(format!("nicsim-x710-{}.pcap", std::process::id()));
    r.port.wire_to_pcap(&path).unwrap();
    let f = udp([0x02, 0, 0, 0, 0, 0x99], 1, 2, 80);
    r.send(&f, 0, 0);
    r.step();
    r.port.flush_pcap().unwrap();
    let records = swports::pcap_file::read_all(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].data, f);
    r.port.assert_no_faults();
}

// ---- found by running the i40e driver against the model ---------------------------------------------------------------

#[test]
fn a_driver_write_of_atqh_rings_nothing() {
    let mut r = Rig::new(X710Config::default());
    r.reset();
    r.init_aq();
    r.direct(0x0001, [0; 16]).ok();
    r.direct(0x0001, [0; 16]).ok();
    let done = r.port.counters().aq_commands;
    // Shutdown's order (docs/hw/i40e.md §5.3): H = 0 while T still points past two completed descriptors.
    r.wr(PF_ATQH, 0);
    for _ in 0..4 {
        r.port.step();
    }
    assert_eq!(r.port.counters().aq_commands, done, "completed commands ran again");
    r.wr(PF_ATQT, 0);
    r.wr(PF_ATQLEN, 0);
    r.port.step();
    r.port.assert_no_faults();
}

#[test]
fn get_phy_abilities_reports_the_last_set_phy_config() {
    let mut r = Rig::new(X710Config::default());
    r.reset();
    r.init_aq();
    let current = |r: &mut Rig| {
        let a = r.indirect(0x0600, false, [0; 8], &[0; 536]);
        a.ok();
        (le32(&a.buf, 0), a.buf[4])
    };
    assert_eq!(current(&mut r), (1 << 0x14, 0x08), "the NVM's 10GBASE-SR at 10G before any Set PHY Config");
    // Link down as DPDK does it: no ENABLE_LINK, phy_type 0 (docs/hw/i40e.md §7.2).
    let mut p = [0u8; 16];
    p[4] = 0x08;
    p[5] = 0x20;
    r.direct(0x0601, p).ok();
    assert_eq!(current(&mut r).0, 0, "phy_type 0 after the link-down configuration");
    let mut init = [0u8; 8];
    init[0] = 2;
    let a = r.indirect(0x0600, false, init, &[0; 536]);
    assert_eq!(le32(&a.ok().buf, 0), 1 << 0x14, "the initial values stay the NVM's");
    r.port.assert_no_faults();
}

#[test]
fn an_armed_admin_error_survives_a_pf_reset() {
    let mut r = Rig::new(X710Config::default());
    r.port.inject_aq_error(Some(0x0001), AqRc::Eio);
    r.reset();
    r.init_aq();
    r.direct(0x0001, [0; 16]).failed(AqRc::Eio);
    r.direct(0x0001, [0; 16]).ok();
}

#[test]
fn rx_write_back_carries_the_checksum_verdict() {
    let mut r = ready(X710Config::default(), 1, 1);
    let good = udp(MAC, 1, 2, 40);
    let mut bad_ip = good.clone();
    bad_ip[14 + 10] ^= 0xFF;
    // A UDP checksum that cannot be right (0 means "none" over IPv4, so put 1).
    let mut bad_l4 = good.clone();
    bad_l4[14 + 20 + 6..14 + 20 + 8].copy_from_slice(&1u16.to_be_bytes());
    for (f, l3l4p, ipe, l4e) in [(&good, 1, 0, 0), (&bad_ip, 1, 1, 0), (&bad_l4, 1, 0, 1)] {
        r.port.inject(f);
        r.step();
        let (_, _, qw1) = r.recv(0).expect("delivered");
        assert_eq!(((qw1 >> 3) & 1, (qw1 >> 22) & 1, (qw1 >> 23) & 1), (l3l4p, ipe, l4e), "L3L4P, IPE, L4E");
    }
    r.port.assert_no_faults();
}

/// A probing driver (Linux's i40e) refuses a port whose NVM looks blank: GLNVM_FLA.LOCKED must read 1, and the
/// register is read-only (docs/hw/i40e.md §18).
#[test]
fn the_nvm_reads_programmed_not_blank() {
    let (bar, port) = X710::new(X710Config::default());
    assert_eq!(bar.read32(regs::GLNVM_FLA) & regs::GLNVM_FLA_LOCKED.mask(), regs::GLNVM_FLA_LOCKED.mask());
    bar.write32(regs::GLNVM_FLA, 0);
    assert_eq!(port.take_faults().len(), 1, "a write to the read-only GLNVM_FLA is a fault");
    assert_ne!(bar.read32(regs::GLNVM_FLA) & regs::GLNVM_FLA_LOCKED.mask(), 0);
}

// ---- what a vendor driver's probe reads: NVM shadow RAM, debug register reads, interrupts --------------------------

const GLNVM_GENS: usize = 0x0B_6100;
const GLNVM_SRCTL: usize = 0x0B_6110;
const GLNVM_SRDATA: usize = 0x0B_6114;
const PFINT_ICR0: usize = 0x03_8780;
const PFINT_ICR0_ENA: usize = 0x03_8800;
const PFINT_DYN_CTL0: usize = 0x03_8480;
fn pfint_dyn_ctln(n: usize) -> usize {
    0x03_4800 + 4 * n
}
fn qint_rqctl(q: usize) -> usize {
    0x03_A000 + 4 * q
}

/// docs/hw/i40e.md §18.1: one shadow RAM word through GLNVM_SRCTL (ADDR 28:14, START 30, DONE 31) and SRDATA 31:16.
fn sr_word(r: &Rig, addr: u32) -> u16 {
    assert_ne!(r.rd(GLNVM_SRCTL) & 1 << 31, 0, "DONE while idle");
    r.wr(GLNVM_SRCTL, addr << 14 | 1 << 30);
    poll("GLNVM_SRCTL.DONE", || r.rd(GLNVM_SRCTL) & 1 << 31 != 0);
    (r.rd(GLNVM_SRDATA) >> 16) as u16
}

#[test]
fn shadow_ram_reads_through_srctl_with_a_valid_checksum() {
    let r = Rig::new(X710Config::default());
    r.reset();
    let gens = r.rd(GLNVM_GENS);
    assert_eq!(gens & 1, 1, "NVM_PRES");
    let words = (1u32 << ((gens >> 5) & 7)) * 512;
    assert_eq!(words % 2048, 0, "whole 4 KB sectors: a checksum pass reads sector by sector (docs/hw/i40e.md §18.1)");
    let image: Vec<u16> = (0..words).map(|a| sr_word(&r, a)).collect();
    assert_eq!((image[0] >> 6) & 3, 0b01, "control word: valid image");
    let (vpd, alt) = (usize::from(image[0x2F]), usize::from(image[0x3E]));
    let sum = image
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != 0x3F && !(vpd..vpd + 512).contains(&i) && !(alt..alt + 512).contains(&i))
        .fold(0u16, |a, (_, &w)| a.wrapping_add(w));
    assert_eq!(sum.wrapping_add(image[0x3F]), 0xBABA, "checksum word 0x3F");
    r.port.assert_no_faults();
    // A write, and a word past the size the register gives, are faults.
    r.wr(GLNVM_SRCTL, 3 << 14 | 1 << 29 | 1 << 30);
    r.wr(GLNVM_SRCTL, words << 14 | 1 << 30);
    let faults = protocol_faults(&r.port);
    assert_eq!(faults.len(), 2, "{faults:?}");
    assert!(faults[0].contains("GLNVM_SRCTL") && faults[1].contains("past the shadow RAM"), "{faults:?}");
}

#[test]
fn debug_register_read_reports_the_board_ports() {
    let mut r = Rig::new(X710Config::default());
    r.reset();
    r.init_aq();
    // docs/hw/i40e.md §18.2: PRTGEN_CNF(n) at 0xB8120 + 4n, PORT_DIS bit 0; the value's low word at 12.
    let port_dis: Vec<u32> = (0..4)
        .map(|n| {
            let mut p = [0u8; 16];
            p[4..8].copy_from_slice(&(0x0B_8120u32 + 4 * n).to_le_bytes());
            let d = r.direct(0xFF03, p);
            d.ok();
            d.p32(12) & 1
        })
        .collect();
    assert_eq!(port_dis, [0, 0, 1, 1], "a two-port board");
    // docs/hw/i40e.md §18.3: GLHMC_FCOEFMAX holds at least 1024 hash filters + 512 contexts.
    assert!(r.rd(0x0C_20D0) & 0xFFFF >= 1536);
    r.port.assert_no_faults();
}

#[test]
fn msix_vectors_signal_once_until_reenabled() {
    let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut r = ready(X710Config::default(), 1, 1);
    let log = sent.clone();
    r.port.set_irq_sink(Some(Arc::new(move |v| log.lock().unwrap().push(v))));
    let taken = || std::mem::take(&mut *sent.lock().unwrap());
    // docs/hw/i40e.md §14: RX queue 0 to vector 1 (QINT_RQCTL MSIX_INDX 7:0, CAUSE_ENA 30), DYN_CTLN(0).INTENA.
    r.wr(qint_rqctl(0), 1 << 30 | 1);
    r.wr(pfint_dyn_ctln(0), 1);
    let g = udp(MAC, 5, 6, 60);
    r.port.inject(&g);
    r.step();
    assert!(r.recv(0).is_some());
    assert_eq!(taken(), [1], "one message on vector 1");
    r.port.inject(&g);
    r.step();
    assert!(r.recv(0).is_some());
    assert_eq!(taken(), [] as [u16; 0], "INTENA cleared itself when the vector fired");
    r.wr(pfint_dyn_ctln(0), 1 << 31 | 1);
    assert_eq!(taken(), [] as [u16; 0], "INTENA_MSK: the write leaves INTENA alone");
    r.wr(pfint_dyn_ctln(0), 1);
    assert_eq!(taken(), [1], "the cause that came while disabled is signalled on re-enable");
    r.wr(pfint_dyn_ctln(0), 1 | 1 << 2);
    assert_eq!(taken(), [1], "SWINT_TRIG");
    // Vector 0: the admin queue cause (PFINT_ICR0 bit 30) once enabled in PFINT_ICR0_ENA and DYN_CTL0.INTENA.
    r.wr(PFINT_ICR0_ENA, 1 << 30);
    r.wr(PFINT_DYN_CTL0, 1);
    r.port.link_flap(Duration::from_millis(50));
    r.step();
    assert!(r.next_event().is_some(), "link event on the ARQ");
    assert_eq!(taken(), [0], "vector 0 for the ARQ event");
    assert_ne!(r.rd(PFINT_ICR0) & 1 << 30, 0, "ADMINQ latched");
    assert_eq!(r.rd(PFINT_ICR0) & 1 << 30, 0, "cleared by reading");
    assert!(r.port.irq_counts()[1] >= 3);
    r.port.assert_no_faults();
}

#[test]
fn vsi_bandwidth_limit_and_flow_director_input_sets() {
    let mut r = ready(X710Config::default(), 1, 1);
    // docs/hw/i40e.md §6.12: SEID at 0, credits at 4 (0 = no limit), max_credit at 8.
    let seid = r.learnt.vsi_seid.to_le_bytes();
    r.direct(0x0400, [seid[0], seid[1], 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0]).ok();
    r.direct(0x0400, [0x99, 0x09, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0]).failed(AqRc::Enoent);
    r.direct(0x0400, [seid[0], seid[1], 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).failed(AqRc::Einval);
    // docs/hw/i40e.md §6.11: PRTQF_FD_INSET(63, 1) is an RX control register.
    let mut p = [0u8; 16];
    p[4..8].copy_from_slice(&(0x25_0000u32 + 63 * 64 + 32).to_le_bytes());
    p[12..16].copy_from_slice(&0x1234u32.to_le_bytes());
    r.direct(0x0207, p).ok();
    p[12..16].fill(0);
    assert_eq!(r.direct(0x0206, p).p32(12), 0x1234);
    let faults = protocol_faults(&r.port);
    assert_eq!(faults.len(), 2, "the two refused limits: {faults:?}");
}

#[test]
fn vsi_bandwidth_queries_report_tc0_only() {
    let mut r = ready(X710Config::default(), 1, 1);
    let seid = r.learnt.vsi_seid.to_le_bytes();
    // docs/hw/i40e.md §6.13: 0x0408 (64 bytes) names TC0's queue set; 0x040A (32 bytes) TC0's share.
    let q = r.indirect(0x0408, false, [seid[0], seid[1], 0, 0, 0, 0, 0, 0], &[0xAA; 64]);
    q.ok();
    assert_eq!(q.buf[0], 0x01, "TC0 valid");
    assert_eq!(le16(&q.buf, 16), r.learnt.qs_handle, "TC0's queue-set handle");
    let e = r.indirect(0x040A, false, [seid[0], seid[1], 0, 0, 0, 0, 0, 0], &[0xAA; 32]);
    e.ok();
    assert_eq!((e.buf[0], e.buf[4]), (0x01, 1), "TC0 valid with its share");
    r.indirect(0x0408, false, [0x99, 0x09, 0, 0, 0, 0, 0, 0], &[0; 64]).failed(AqRc::Enoent);
    assert_eq!(protocol_faults(&r.port).len(), 1);
}

#[test]
fn suspend_port_tx_holds_frames_until_resume() {
    let mut r = ready(X710Config::default(), 1, 1);
    // docs/hw/i40e.md §6.14: Suspend Port TX names the port's MAC element (SEID 2 + port, §6.5).
    r.direct(0x041B, [0x99, 0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).failed(AqRc::Enoent);
    r.direct(0x041B, [2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).ok();
    let f = udp([0x02, 0, 0, 0, 0, 0x99], 1, 2, 50);
    let i = r.send(&f, 0, 0);
    r.step();
    assert!(!r.tx_done(i), "a suspended port transmits nothing");
    assert!(r.port.take_tx().is_empty());
    // Resume Port TX has no parameters; the held frame then goes out.
    r.direct(0x041C, [0; 16]).ok();
    r.step();
    assert!(r.tx_done(i));
    assert_eq!(r.port.take_tx(), vec![f]);
    // Resuming a port that is not suspended also succeeds (Linux resumes after every DCB attempt).
    r.direct(0x041C, [0; 16]).ok();
    // A parameter in a reserved byte is refused.
    r.direct(0x041C, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).failed(AqRc::Einval);
    assert_eq!(protocol_faults(&r.port).len(), 2, "the wrong SEID and the reserved byte");
}

#[test]
fn timesync_queue_enables_and_transmits_but_tsyn_is_refused() {
    // docs/hw/i40e.md §8.5: timesync_ena (bit 90) = 1 is how a driver with IEEE 1588 sets up its LAN queues.
    let mut r = Rig::new(X710Config::default());
    r.bring_up(1);
    r.setup_tx(0, |c| pack(c, 90, 1, 1));
    r.enable_tx(0);
    r.port.assert_no_faults();
    let f = udp([0x02, 0, 0, 0, 0, 0x99], 1, 2, 50);
    let i = r.send(&f, 0, 0);
    r.step();
    assert!(r.tx_done(i));
    assert_eq!(r.port.take_tx(), vec![f]);
    // A context descriptor asking for a timestamp (CMD TSYN, docs/hw/i40e.md §10.4) is not modelled: a fault.
    let at = r.tx_next;
    let qw1: u64 = 0x1 | 0x02 << 4;
    let mut d = [0u8; 16];
    d[8..16].copy_from_slice(&qw1.to_le_bytes());
    r.write_mem(TX_RING + at as usize * 16, &d);
    r.tx_next = (at + 1) % RING;
    r.wr(qtx_tail(0), r.tx_next);
    r.step();
    let faults: Vec<String> = r.port.take_faults().iter().map(|f| format!("{f:?}")).collect();
    assert!(faults.iter().any(|f| f.contains("TSYN")), "{faults:?}");
}

#[test]
fn head_write_back_follows_packets_without_rs() {
    // docs/hw/i40e.md §10.5: with head_wb_ena the head word tracks the processed descriptors, RS or not.
    let mut r = Rig::new(X710Config::default());
    r.bring_up(1);
    let word = TX_RING + RING as usize * 16;
    let iova = r.iova(word);
    r.setup_tx(0, |c| {
        pack(c, 160, 1, 1);
        pack(c, 192, 64, iova);
    });
    r.write_mem(word, &[0xEE; 4]);
    r.enable_tx(0);
    r.port.assert_no_faults();
    let f = udp([0x02, 0, 0, 0, 0, 0x99], 1, 2, 50);
    r.write_mem(TX_BUF, &f);
    // EOP | ICRC, no RS (docs/hw/i40e.md §10.3).
    let qw1 = (0x5u64 << 4) | (f.len() as u64) << 34;
    let mut d = [0u8; 16];
    d[0..8].copy_from_slice(&r.iova(TX_BUF).to_le_bytes());
    d[8..16].copy_from_slice(&qw1.to_le_bytes());
    r.write_mem(TX_RING, &d);
    r.wr(qtx_tail(0), 1);
    r.step();
    assert_eq!(r.port.take_tx(), vec![f]);
    assert_eq!(le32(&r.read_mem(word, 4), 0), 1, "the head word names the next descriptor");
    assert_eq!(le64(&r.read_mem(TX_RING, 16), 8) & 0xF, 0, "no DD write-back in head write-back mode");
    r.port.assert_no_faults();
}
