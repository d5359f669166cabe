//! The X710 test rig: the notes' register offsets typed out again, the memory layout, the admin queue, HMC and ring helpers every x710_*.rs test file uses.

// Each test file uses a part of the rig (and of what it re-exports).
#![allow(dead_code, unused_imports)]

pub use std::sync::Arc;
pub use std::time::{Duration, Instant};

pub use drvkit::bar::RegisterSpace;
pub use drvkit::dma::{DmaMapper, DmaMapping};
pub use hugepage::{Allocator, DmaMemory};
pub use nicsim::x710::regs::{self, stat};
pub use nicsim::{net, AqRc, Fault, X710Bar, X710Config, X710Part, X710Port, X710RxError, X710};

// ---- memory layout of the rig ------------------------------------------------------------------------------------

pub const MEM: usize = 4 << 20;
pub const AQ_LEN: u32 = 32;
pub const ATQ_RING: usize = 0x0000;
pub const ARQ_RING: usize = 0x0400;
pub const ATQ_BUF: usize = 0x1000; // 32 × 4 KiB
pub const ARQ_BUF: usize = 0x2_1000; // 32 × 4 KiB
pub const AQ_BUF_LEN: usize = 4096;
pub const HMC: usize = 0x4_1000;
pub const TX_RING: usize = 0x5_0000;
pub const RX_RING: usize = 0x6_0000; // queue q at + q × 0x2000
pub const RX_BUF: usize = 0x10_0000; // queue q, slot i at + (q × 64 + i) × 2 KiB
pub const TX_BUF: usize = 0x20_0000; // slot i at + i × 16 KiB
pub const RING: u32 = 64;
pub const RX_BUF_LEN: usize = 2048;
pub const TX_BUF_LEN: usize = 16 << 10;
pub const MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x71, 0x00, 0x00];

// ---- register offsets typed from the notes (docs/hw/i40e.md §4, §5.1, §8.2, §9.1, §12.1) ------------------------

pub const PFGEN_CTRL: usize = 0x09_2400;
pub const GLNVM_ULD: usize = 0x0B_6008;
pub const GLGEN_RSTAT: usize = 0x0B_8188;
pub const PF_ATQBAL: usize = 0x08_0000;
pub const PF_ARQBAL: usize = 0x08_0080;
pub const PF_ATQBAH: usize = 0x08_0100;
pub const PF_ARQBAH: usize = 0x08_0180;
pub const PF_ATQLEN: usize = 0x08_0200;
pub const PF_ARQLEN: usize = 0x08_0280;
pub const PF_ATQH: usize = 0x08_0300;
pub const PF_ARQH: usize = 0x08_0380;
pub const PF_ATQT: usize = 0x08_0400;
pub const PF_ARQT: usize = 0x08_0480;
pub const PFHMC_SDCMD: usize = 0x0C_0000;
pub const PFHMC_SDDATALOW: usize = 0x0C_0100;
pub const PFHMC_SDDATAHIGH: usize = 0x0C_0200;
pub const PRTMAC_LINKSTA: usize = 0x1E_2420;
pub const GLHMC_LANQMAX: usize = 0x0C_2008;
pub const PFLAN_QALLOC: usize = 0x1C_0400;
pub const PFQF_CTL_0: usize = 0x1C_0AC0;
pub const GL_MDET_TX: usize = 0x0E_6480;
pub fn qtx_ena(q: usize) -> usize {
    0x10_0000 + 4 * q
}
pub fn qtx_ctl(q: usize) -> usize {
    0x10_4000 + 4 * q
}
pub fn qtx_tail(q: usize) -> usize {
    0x10_8000 + 4 * q
}
pub fn qtx_head(q: usize) -> usize {
    0x0E_4000 + 4 * q
}
pub fn qrx_ena(q: usize) -> usize {
    0x12_0000 + 4 * q
}
pub fn qrx_tail(q: usize) -> usize {
    0x12_8000 + 4 * q
}
pub fn gllan_txpre_qdis(b: usize) -> usize {
    0x0E_6500 + 4 * b
}
pub fn pfqf_hkey(i: usize) -> usize {
    0x24_4800 + 128 * i
}
pub fn pfqf_hlut(i: usize) -> usize {
    0x24_0000 + 128 * i
}
pub fn pfqf_hena(i: usize) -> usize {
    0x24_5900 + 128 * i
}

// Admin descriptor flags (docs/hw/i40e.md §5.2).
pub const DD: u16 = 0x0001;
pub const CMP: u16 = 0x0002;
pub const ERR: u16 = 0x0004;
pub const LB: u16 = 0x0200;
pub const RD: u16 = 0x0400;
pub const BUF: u16 = 0x1000;
pub const SI: u16 = 0x2000;

/// The default RSS key of docs/hw/i40e.md §12.2.
pub const KEY: [u8; 52] = [
    0x44, 0x39, 0x79, 0x6b, 0xb5, 0x4c, 0x50, 0x23, 0xb6, 0x75, 0xea, 0x5b, 0x12, 0x4f, 0x9f, 0x30, 0xb8, 0xa2, 0xc0,
    0x3d, 0xdf, 0xdc, 0x4d, 0x02, 0xa0, 0x8c, 0x9b, 0x33, 0x4a, 0xf6, 0x4a, 0x4c, 0x05, 0xc6, 0xfa, 0x34, 0x39, 0x58,
    0xd8, 0x55, 0x7d, 0x99, 0x58, 0x3a, 0xe1, 0x38, 0xc9, 0x2e, 0x81, 0x15, 0x03, 0x66,
];

pub fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
pub fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
pub fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Stores `width` bits of `value` at bit `lsb` of a little-endian bit string (docs/hw/i40e.md §8.4).
pub fn pack(obj: &mut [u8], lsb: usize, width: usize, value: u64) {
    for i in 0..width {
        if (value >> i) & 1 == 1 {
            obj[(lsb + i) / 8] |= 1 << ((lsb + i) % 8);
        }
    }
}

pub fn poll(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// A completed admin command: its descriptor and the slot's buffer afterwards.
pub struct Done {
    pub desc: [u8; 32],
    pub buf: Vec<u8>,
}

impl Done {
    pub fn flags(&self) -> u16 {
        le16(&self.desc, 0)
    }
    pub fn retval(&self) -> u16 {
        le16(&self.desc, 6)
    }
    pub fn datalen(&self) -> u16 {
        le16(&self.desc, 4)
    }
    pub fn p16(&self, at: usize) -> u16 {
        le16(&self.desc, 16 + at)
    }
    pub fn p32(&self, at: usize) -> u32 {
        le32(&self.desc, 16 + at)
    }
    #[track_caller]
    pub fn ok(&self) -> &Self {
        assert_eq!(self.retval(), 0, "retval of opcode {:#06x}", le16(&self.desc, 2));
        assert_eq!(self.flags() & (DD | CMP | ERR), DD | CMP);
        self
    }
    #[track_caller]
    pub fn failed(&self, rc: AqRc) -> &Self {
        assert_eq!(self.retval(), rc as u16, "retval of opcode {:#06x}", le16(&self.desc, 2));
        assert_eq!(self.flags() & (DD | CMP | ERR), DD | CMP | ERR);
        self
    }
}

/// What bring-up learnt from the firmware.
#[derive(Debug, Default, Clone, Copy)]
pub struct Learnt {
    pub vsi_seid: u16,
    pub vsi_number: u16,
    pub qs_handle: u16,
    pub stat_idx: usize,
    pub first_queue: u32,
}

pub struct Rig {
    pub bar: X710Bar,
    pub port: X710Port,
    pub mem: Arc<DmaMemory>,
    pub _map: DmaMapping,
    pub atq_next: u32,
    pub arq_next: u32,
    pub tx_next: u32,
    pub rx_next: Vec<u32>,
    pub learnt: Learnt,
}

impl Rig {
    pub fn new(config: X710Config) -> Rig {
        let (bar, port) = X710::new(config);
        Rig::with(bar, port)
    }

    pub fn with(bar: X710Bar, port: X710Port) -> Rig {
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

    pub fn rd(&self, off: usize) -> u32 {
        self.bar.read32(off)
    }
    pub fn wr(&self, off: usize, v: u32) {
        self.bar.write32(off, v)
    }
    pub fn iova(&self, off: usize) -> u64 {
        self.mem.iova_at(off).unwrap()
    }
    pub fn write_mem(&self, off: usize, data: &[u8]) {
        assert!(off + data.len() <= self.mem.len());
        // SAFETY: in bounds of the live allocation; the model touches this range only after a doorbell that
        // follows.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.mem.as_ptr().add(off), data.len()) }
    }
    pub fn read_mem(&self, off: usize, len: usize) -> Vec<u8> {
        assert!(off + len <= self.mem.len());
        let mut v = vec![0u8; len];
        // SAFETY: in bounds of the live allocation.
        unsafe { std::ptr::copy_nonoverlapping(self.mem.as_ptr().add(off), v.as_mut_ptr(), len) }
        v
    }
    pub fn step(&self) {
        nicsim::run_until_idle_x710(&[&self.port]);
    }

    /// docs/hw/i40e.md §4.1: wait for the firmware, then a PF reset.
    pub fn reset(&self) {
        poll("GLNVM_ULD", || self.rd(GLNVM_ULD) & 0x18 == 0x18);
        assert_eq!(self.rd(GLGEN_RSTAT) & 0x3, 0);
        self.wr(PFGEN_CTRL, self.rd(PFGEN_CTRL) | 1);
        poll("PFSWR", || self.rd(PFGEN_CTRL) & 1 == 0);
    }

    pub fn arm_arq(&self, slot: u32) {
        let mut d = [0u8; 32];
        d[0..2].copy_from_slice(&(BUF | LB).to_le_bytes());
        d[4..6].copy_from_slice(&(AQ_BUF_LEN as u16).to_le_bytes());
        let a = self.iova(ARQ_BUF + slot as usize * AQ_BUF_LEN);
        d[24..28].copy_from_slice(&((a >> 32) as u32).to_le_bytes());
        d[28..32].copy_from_slice(&(a as u32).to_le_bytes());
        self.write_mem(ARQ_RING + slot as usize * 32, &d);
    }

    /// docs/hw/i40e.md §5.3: both rings.
    pub fn init_aq(&mut self) {
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
    pub fn post_raw(&mut self, mut desc: [u8; 32], buf: Option<&[u8]>) -> u32 {
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
    pub fn complete(&self, slot: u32, buf_len: usize) -> Done {
        let start = Instant::now();
        while self.rd(PF_ATQH) != self.atq_next {
            self.port.step();
            assert!(start.elapsed() < Duration::from_secs(5), "admin command never completed");
        }
        let desc: [u8; 32] = self.read_mem(ATQ_RING + slot as usize * 32, 32).try_into().unwrap();
        Done { desc, buf: self.read_mem(ATQ_BUF + slot as usize * AQ_BUF_LEN, buf_len) }
    }

    pub fn send_raw(&mut self, desc: [u8; 32], buf: Option<&[u8]>) -> Done {
        let len = buf.map_or(0, <[u8]>::len);
        let slot = self.post_raw(desc, buf);
        self.complete(slot, len)
    }

    /// A direct command (docs/hw/i40e.md §5.4): flags SI, the parameters at descriptor bytes 16..32.
    pub fn direct(&mut self, op: u16, params: [u8; 16]) -> Done {
        self.send_raw(desc(SI, op, 0, params), None)
    }

    /// An indirect command: BUF (+LB above 512 bytes) (+RD when `rd`), datalen, the buffer address at 24/28.
    pub fn indirect(&mut self, op: u16, rd: bool, params: [u8; 8], buf: &[u8]) -> Done {
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
    pub fn next_event(&mut self) -> Option<[u8; 32]> {
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
    pub fn bring_up(&mut self, nq: u16) {
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
    pub fn setup_hmc(&self, n: usize) {
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

    pub fn rx_ctx_offset(&self, q: usize) -> usize {
        let n = self.port.config().num_queues as usize;
        HMC + (n * 128).div_ceil(512) * 512 + q * 32
    }

    /// docs/hw/i40e.md §8.5 and §9.2: TX context for queue `q` on the rig's TX ring, QTX_CTL.
    pub fn setup_tx(&self, q: usize, tweak: impl FnOnce(&mut [u8; 128])) {
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
    pub fn enable_tx(&self, q: usize) {
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
    pub fn setup_rx(&mut self, q: usize, rxmax: u64, tweak: impl FnOnce(&mut [u8; 32])) {
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

    pub fn rx_buf(q: usize, i: u32) -> usize {
        RX_BUF + (q * RING as usize + i as usize) * RX_BUF_LEN
    }

    pub fn post_rx(&self, q: usize, i: u32) {
        let mut d = [0u8; 32];
        d[0..8].copy_from_slice(&self.iova(Self::rx_buf(q, i)).to_le_bytes());
        self.write_mem(RX_RING + q * 0x2000 + i as usize * 32, &d);
    }

    pub fn enable_rx(&self, q: usize) {
        poll("RX REQ == STAT", || {
            let e = self.rd(qrx_ena(q));
            e & 1 == (e >> 2) & 1
        });
        self.wr(qrx_ena(q), 1);
        poll("RX enabled", || self.rd(qrx_ena(q)) & 0x5 == 0x5);
    }

    /// Queues a one-descriptor packet (docs/hw/i40e.md §10.3) with EOP | RS | ICRC (+ `cmd`), rings the tail.
    pub fn send(&mut self, frame: &[u8], cmd: u64, offset: u64) -> u32 {
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

    pub fn tx_done(&self, i: u32) -> bool {
        le64(&self.read_mem(TX_RING + i as usize * 16, 16), 8) & 0xF == 0xF
    }

    /// The next received frame on queue `q` (docs/hw/i40e.md §10.2): (bytes, qword 0, last qword 1), re-posting the descriptors.
    pub fn recv(&mut self, q: usize) -> Option<(Vec<u8>, u64, u64)> {
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

pub fn desc(flags: u16, op: u16, datalen: u16, params: [u8; 16]) -> [u8; 32] {
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
pub fn udp(dst: [u8; 6], sport: u16, dport: u16, payload: usize) -> Vec<u8> {
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

pub fn protocol_faults(port: &X710Port) -> Vec<String> {
    port.take_faults()
        .into_iter()
        .map(|f| match f {
            Fault::Protocol { what } => what,
            other => panic!("unexpected fault {other}"),
        })
        .collect()
}

/// A port brought up with `nq` VSI queues, TX queue 0 and RX queues 0..nrx enabled.
pub fn ready(config: X710Config, nq: u16, nrx: usize) -> Rig {
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
