//! Test rig: drives a model port through its registers with descriptors encoded here from docs/hw/ixgbe.md (not
//! from any driver), in DmaMemory mapped through the model's IOVA map.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use drvkit::bar::RegisterSpace;
use drvkit::dma::{DmaMapper, DmaMapping};
use hugepage::{Allocator, DmaMemory};
use nicsim::x540::regs::*;
use nicsim::{Chip, SimBar, X540Config, X540Port, X540};

pub const MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x54, 0x05, 0x00];
pub const RING: u32 = 64;
const RX_RING_AT: usize = 0;
const TX_RING_AT: usize = 0x4_0000;
const RX_BUF_AT: usize = 0x10_0000;
const TX_BUF_AT: usize = 0x80_0000;
/// TX buffer stride.
pub const BUF: usize = 16 << 10;
/// RX buffer stride (queues 0..15 × 64 descriptors × 4 KiB).
pub const RX_BUF: usize = 4 << 10;
pub const MEM: usize = 0xC0_0000;

pub struct Rig {
    pub bar: SimBar,
    pub port: X540Port,
    pub mem: Arc<DmaMemory>,
    /// The rig memory's mapping in the model (drop it to unmap).
    pub map: Option<DmaMapping>,
    /// Next TX descriptor per queue.
    pub tx_tail: Vec<u32>,
    /// Next RX descriptor to look at per queue.
    pub rx_next: Vec<u32>,
}

pub fn poll(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// Runs a check of something the model does not do *yet* (inside a delay it was given) with delays of 50 ms,
/// 500 ms, 5 s, until one run does its reads inside the delay. `attempt(delay)` builds its own rig, records what
/// it reads, and returns `None` (nothing asserted) when the delay had run out before it was done reading: a
/// loaded machine can stall a thread past a short delay, and that is not a model bug. A broken model fails every
/// attempt that was quick enough.
pub fn with_delay<T>(what: &str, mut attempt: impl FnMut(Duration) -> Option<T>) -> T {
    for ms in [50, 500, 5000] {
        if let Some(v) = attempt(Duration::from_millis(ms)) {
            return v;
        }
        eprintln!("{what}: the machine was slower than a {ms} ms delay; again with a longer one");
    }
    panic!("{what}: every attempt outlived its delay");
}

/// Asserts `cond` holds on every look for the whole of `window`: for "this does not happen by itself" checks,
/// with `window` longer than any delay the model was given.
pub fn stays(what: &str, window: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < window {
        assert!(cond(), "{what} stopped holding after {:?}", start.elapsed());
        std::thread::sleep(Duration::from_micros(100));
    }
    assert!(cond(), "{what} stopped holding at the end of {window:?}");
}

impl Rig {
    pub fn new(config: X540Config) -> Rig {
        let (bar, port) = X540::new(config);
        Rig::with(bar, port)
    }

    pub fn with(bar: SimBar, port: X540Port) -> Rig {
        let mem = Arc::new(Allocator::no_huge().allocate(MEM).expect("memory"));
        let map = Some(port.dma_mapper().map(&mem).expect("map"));
        Rig { bar, port, mem, map, tx_tail: vec![0; 128], rx_next: vec![0; 128] }
    }

    pub fn rd(&self, off: usize) -> u32 {
        self.bar.read32(off)
    }
    pub fn wr(&self, off: usize, v: u32) {
        self.bar.write32(off, v)
    }
    pub fn set(&self, off: usize, bits: u32) {
        self.bar.modify32(off, 0, bits)
    }
    pub fn clear(&self, off: usize, bits: u32) {
        self.bar.modify32(off, bits, 0)
    }

    pub fn iova(&self, offset: usize) -> u64 {
        self.mem.iova_at(offset).unwrap()
    }

    pub fn write_mem(&self, offset: usize, data: &[u8]) {
        assert!(offset + data.len() <= self.mem.len());
        // SAFETY: in bounds of the live mapping; the model does not touch this range concurrently in these tests
        // (descriptors are handed over by the tail write that follows).
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.mem.as_ptr().add(offset), data.len()) }
    }

    pub fn read_mem(&self, offset: usize, len: usize) -> Vec<u8> {
        assert!(offset + len <= self.mem.len());
        let mut v = vec![0u8; len];
        // SAFETY: in bounds of the live mapping.
        unsafe { std::ptr::copy_nonoverlapping(self.mem.as_ptr().add(offset), v.as_mut_ptr(), len) }
        v
    }

    pub fn dword(&self, offset: usize) -> u32 {
        // SAFETY: 4-aligned, in bounds; volatile because the model writes it.
        unsafe { (self.mem.as_ptr().add(offset) as *const u32).read_volatile() }
    }

    /// Reset and the docs/hw/ixgbe.md §3 bring-up waits, CRC strip, broadcast, TX enable.
    pub fn bring_up(&self) {
        self.wr(EIMC, 0x7FFF_FFFF);
        self.set(CTRL, CTRL_RST);
        poll("CTRL.RST clear", Duration::from_secs(2), || self.rd(CTRL) & CTRL_RST == 0);
        poll("EEC.ARD", Duration::from_secs(2), || self.rd(EEC) & EEC_ARD != 0);
        poll("DMAIDONE", Duration::from_secs(2), || self.rd(RDRXCTL) & RDRXCTL_DMAIDONE != 0);
        self.set(HLREG0, HLREG0_TXCRCEN | HLREG0_RXCRCSTRP | HLREG0_TXPADEN);
        self.set(RDRXCTL, RDRXCTL_CRCSTRIP);
        self.set(FCTRL, FCTRL_BAM);
        self.set(RXCSUM, RXCSUM_PCSD);
        self.set(DMATXCTL, DMATXCTL_TE);
    }

    pub fn rx_ring(q: usize) -> usize {
        RX_RING_AT + q * RING as usize * 16
    }
    pub fn tx_ring(q: usize) -> usize {
        TX_RING_AT + q * RING as usize * 16
    }
    pub fn rx_buf(q: usize, i: u32) -> usize {
        RX_BUF_AT + (q * RING as usize + i as usize) * RX_BUF
    }
    pub fn tx_buf(i: u32) -> usize {
        TX_BUF_AT + i as usize * BUF
    }

    /// RX descriptor read format: pkt_addr, hdr_addr = 0 (docs/hw/ixgbe.md §7.1).
    pub fn post_rx(&self, q: usize, i: u32, buf_offset: usize) {
        let mut d = [0u8; 16];
        d[0..8].copy_from_slice(&self.iova(buf_offset).to_le_bytes());
        self.write_mem(Self::rx_ring(q) + i as usize * 16, &d);
    }

    /// Queue set-up as docs/hw/ixgbe.md §6.2 orders it, buffers of `bsize_kb` KiB (at most 4); RDT = N-1.
    pub fn setup_rx(&mut self, q: usize, bsize_kb: u32, drop_en: bool) {
        let ring = Self::rx_ring(q);
        self.wr(rdbal(q), self.iova(ring) as u32);
        self.wr(rdbah(q), (self.iova(ring) >> 32) as u32);
        self.wr(rdlen(q), RING * 16);
        self.wr(rdh(q), 0);
        self.wr(rdt(q), 0);
        let drop = if drop_en { SRRCTL_DROP_EN } else { 0 };
        self.wr(srrctl(q), (SRRCTL_DESCTYPE_ADV_ONEBUF << SRRCTL_DESCTYPE_SHIFT) | bsize_kb | drop);
        for i in 0..RING {
            self.post_rx(q, i, Self::rx_buf(q, i));
        }
        self.set(rxdctl(q), QCTL_ENABLE);
        poll("RXDCTL.ENABLE", Duration::from_secs(1), || self.rd(rxdctl(q)) & QCTL_ENABLE != 0);
        self.wr(rdh(q), 0);
        self.wr(rdt(q), RING - 1);
        self.enable_rx();
        self.rx_next[q] = 0;
    }

    /// RXCTRL.RXEN; on the 82599 inside the security-block sequence of docs/hw/ixgbe.md §3.7 step 35.
    pub fn enable_rx(&self) {
        if self.port.config().chip == Chip::X82599 && self.rd(RXCTRL) & RXCTRL_RXEN == 0 {
            self.set(SECRXCTRL, SECRXCTRL_RX_DIS);
            poll("SECRXSTAT.SECRX_RDY", Duration::from_secs(1), || self.rd(SECRXSTAT) & SECRXSTAT_SECRX_RDY != 0);
            self.set(RXCTRL, RXCTRL_RXEN);
            self.clear(SECRXCTRL, SECRXCTRL_RX_DIS);
        } else {
            self.set(RXCTRL, RXCTRL_RXEN);
        }
    }

    pub fn setup_tx(&mut self, q: usize) {
        let ring = Self::tx_ring(q);
        self.wr(tdbal(q), self.iova(ring) as u32);
        self.wr(tdbah(q), (self.iova(ring) >> 32) as u32);
        self.wr(tdlen(q), RING * 16);
        self.wr(tdh(q), 0);
        self.set(txdctl(q), QCTL_ENABLE);
        poll("TXDCTL.ENABLE", Duration::from_secs(1), || self.rd(txdctl(q)) & QCTL_ENABLE != 0);
        self.wr(tdt(q), 0);
        self.tx_tail[q] = 0;
    }

    /// The next RX write-back of queue `q` if DD is set: (dwords, data). Re-posts the descriptor.
    pub fn rx_take(&mut self, q: usize) -> Option<([u32; 4], Vec<u8>)> {
        let i = self.rx_next[q];
        let at = Self::rx_ring(q) + i as usize * 16;
        let d2 = self.dword(at + 8);
        if d2 & RXD_STAT_DD == 0 {
            return None;
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        let d = [self.dword(at), self.dword(at + 4), d2, self.dword(at + 12)];
        let len = (d[3] & 0xFFFF) as usize;
        let data = self.read_mem(Self::rx_buf(q, i), len);
        self.post_rx(q, i, Self::rx_buf(q, i));
        self.wr(rdt(q), i); // give the processed slot back
        self.rx_next[q] = (i + 1) % RING;
        Some((d, data))
    }

    /// A whole frame (following EOP): the write-back of its last descriptor, the data, the descriptor count.
    pub fn rx_frame(&mut self, q: usize) -> Option<([u32; 4], Vec<u8>, usize)> {
        let (mut d, mut data) = self.rx_take(q)?;
        let mut n = 1;
        while d[2] & RXD_STAT_EOP == 0 {
            let (d2, more) = self.rx_take(q).expect("chained descriptor written with its frame");
            data.extend_from_slice(&more);
            d = d2;
            n += 1;
        }
        Some((d, data, n))
    }

    /// Writes an advanced data descriptor (docs/hw/ixgbe.md §7.3).
    pub fn tx_data_desc(&mut self, q: usize, buf_offset: usize, len: usize, cmd: u32, olinfo: u32) -> u32 {
        let i = self.tx_tail[q];
        let mut d = [0u8; 16];
        d[0..8].copy_from_slice(&self.iova(buf_offset).to_le_bytes());
        let cmd_type_len = (TXD_DTYP_DATA << TXD_DTYP_SHIFT) | TXD_CMD_DEXT | cmd | len as u32;
        d[8..12].copy_from_slice(&cmd_type_len.to_le_bytes());
        d[12..16].copy_from_slice(&olinfo.to_le_bytes());
        self.write_mem(Self::tx_ring(q) + i as usize * 16, &d);
        self.tx_tail[q] = (i + 1) % RING;
        i
    }

    /// Writes an advanced context descriptor (docs/hw/ixgbe.md §7.4).
    pub fn tx_ctx_desc(&mut self, q: usize, vlan_macip_lens: u32, tucmd: u32, idx: u32) {
        let i = self.tx_tail[q];
        let mut d = [0u8; 16];
        d[0..4].copy_from_slice(&vlan_macip_lens.to_le_bytes());
        let type_tucmd = (TXD_DTYP_CTXT << TXD_DTYP_SHIFT) | TXD_CMD_DEXT | tucmd;
        d[8..12].copy_from_slice(&type_tucmd.to_le_bytes());
        d[12..16].copy_from_slice(&(idx << 4).to_le_bytes());
        self.write_mem(Self::tx_ring(q) + i as usize * 16, &d);
        self.tx_tail[q] = (i + 1) % RING;
    }

    /// Sends one frame in one descriptor with EOP|IFCS|RS; returns the descriptor index.
    pub fn send(&mut self, q: usize, frame: &[u8]) -> u32 {
        let buf = Self::tx_buf(self.tx_tail[q]);
        self.write_mem(buf, frame);
        let i = self.tx_data_desc(
            q,
            buf,
            frame.len(),
            TXD_CMD_EOP | TXD_CMD_IFCS | TXD_CMD_RS,
            (frame.len() as u32) << TXD_PAYLEN_SHIFT,
        );
        self.doorbell(q);
        i
    }

    pub fn doorbell(&self, q: usize) {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        self.wr(tdt(q), self.tx_tail[q]);
    }

    pub fn tx_dd(&self, q: usize, i: u32) -> bool {
        self.dword(Self::tx_ring(q) + i as usize * 16 + 12) & TXD_STAT_DD != 0
    }
}

// ---- frames -----------------------------------------------------------------------------------------------------

fn sum16(data: &[u8], mut acc: u32) -> u32 {
    for c in data.chunks(2) {
        acc += u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0));
    }
    acc
}
pub fn csum(acc: u32) -> u16 {
    let mut a = acc;
    while a > 0xFFFF {
        a = (a & 0xFFFF) + (a >> 16);
    }
    !(a as u16)
}
/// Uncomplemented folded sum (a pseudo-header seed).
pub fn partial(data: &[u8]) -> u16 {
    !csum(sum16(data, 0))
}

pub fn eth(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// IPv4 + TCP (proto 6) or UDP (17) with correct checksums.
pub fn ipv4_l4(src: [u8; 4], dst: [u8; 4], proto: u8, sport: u16, dport: u16, payload_len: usize) -> Vec<u8> {
    let l4_hdr = if proto == 6 { 20 } else { 8 };
    let l4_len = l4_hdr + payload_len;
    let mut ip = vec![0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((20 + l4_len) as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = proto;
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&dst);
    let c = csum(sum16(&ip, 0));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut l4 = vec![0u8; l4_len];
    l4[0..2].copy_from_slice(&sport.to_be_bytes());
    l4[2..4].copy_from_slice(&dport.to_be_bytes());
    if proto == 6 {
        l4[12] = 5 << 4;
        l4[13] = 0x10;
    } else {
        l4[4..6].copy_from_slice(&(l4_len as u16).to_be_bytes());
    }
    for (i, b) in l4[l4_hdr..].iter_mut().enumerate() {
        *b = (i * 7 + 3) as u8;
    }
    let c = csum(sum16(&l4, sum16(&pseudo4(&ip, l4_len), 0)));
    let at = if proto == 6 { 16 } else { 6 };
    l4[at..at + 2].copy_from_slice(&c.to_be_bytes());
    ip.extend_from_slice(&l4);
    ip
}

pub fn pseudo4(ip: &[u8], l4_len: usize) -> Vec<u8> {
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&ip[12..20]);
    pseudo.extend_from_slice(&[0, ip[9]]);
    pseudo.extend_from_slice(&(l4_len as u16).to_be_bytes());
    pseudo
}

pub fn ipv6_l4(src: [u8; 16], dst: [u8; 16], proto: u8, sport: u16, dport: u16, payload_len: usize) -> Vec<u8> {
    let l4_hdr = if proto == 6 { 20 } else { 8 };
    let l4_len = l4_hdr + payload_len;
    let mut ip = vec![0u8; 40];
    ip[0] = 0x60;
    ip[4..6].copy_from_slice(&(l4_len as u16).to_be_bytes());
    ip[6] = proto;
    ip[7] = 64;
    ip[8..24].copy_from_slice(&src);
    ip[24..40].copy_from_slice(&dst);
    let mut l4 = vec![0u8; l4_len];
    l4[0..2].copy_from_slice(&sport.to_be_bytes());
    l4[2..4].copy_from_slice(&dport.to_be_bytes());
    if proto == 6 {
        l4[12] = 5 << 4;
    } else {
        l4[4..6].copy_from_slice(&(l4_len as u16).to_be_bytes());
    }
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src);
    pseudo.extend_from_slice(&dst);
    pseudo.extend_from_slice(&(l4_len as u32).to_be_bytes());
    pseudo.extend_from_slice(&[0, 0, 0, proto]);
    let c = csum(sum16(&l4, sum16(&pseudo, 0)));
    let at = if proto == 6 { 16 } else { 6 };
    l4[at..at + 2].copy_from_slice(&c.to_be_bytes());
    ip.extend_from_slice(&l4);
    ip
}

pub fn udp4_frame(dst_mac: [u8; 6], sport: u16, payload_len: usize) -> Vec<u8> {
    eth(dst_mac, [2, 0, 0, 0, 0, 9], 0x0800, &ipv4_l4([10, 0, 0, 1], [10, 0, 0, 2], 17, sport, 4000, payload_len))
}

/// Checks IPv4 header and L4 checksums of an Ethernet/IPv4 frame (no VLAN): (ip ok, l4 ok).
pub fn verify_ipv4(frame: &[u8]) -> (bool, bool) {
    let ip = &frame[14..34];
    let ip_ok = csum(sum16(ip, 0)) == 0;
    let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
    let l4 = &frame[34..14 + total];
    (ip_ok, csum(sum16(l4, sum16(&pseudo4(ip, l4.len()), 0))) == 0)
}
