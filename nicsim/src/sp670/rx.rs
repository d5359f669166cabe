//! Receive queues (docs/hw/hinic3.md §10.3 to §10.6, §11): 16-byte normal WQEs (buffer and CQE addresses), 32-byte
//! CQEs written with the done bit last, frames longer than one buffer spread over consecutive entries, the RX mode
//! filters, VLAN strip, RSS (Toeplitz over the hash types of docs/hw/hinic3.md §11 and the 256-entry indirection table), RQ flush, and
//! the checksum-error bits a test can inject.

use super::ctx::RqCtx;
use super::regs::bit;
use super::{Core, Sp670RxError};
use crate::net::{self, L3};
use crate::Error;

const CQE_DONE: u32 = bit(31);
const CQE_FLUSH: u32 = bit(28);
const CQE_CSUM_IP: u32 = bit(0);
const CQE_CSUM_TCP: u32 = bit(1);
const CQE_CSUM_UDP: u32 = bit(2);
const CQE_VLAN_STRIPPED: u32 = bit(21);

/// RSS hash-type bits (docs/hw/hinic3.md §11).
pub mod hash_type {
    /// Valid.
    pub const VALID: u32 = 1 << 23;
    /// TCP over IPv6.
    pub const TCP_V6: u32 = 1 << 26;
    /// IPv6.
    pub const IPV6: u32 = 1 << 27;
    /// TCP over IPv4.
    pub const TCP_V4: u32 = 1 << 28;
    /// IPv4.
    pub const IPV4: u32 = 1 << 29;
    /// UDP over IPv6.
    pub const UDP_V6: u32 = 1 << 30;
    /// UDP over IPv4.
    pub const UDP_V4: u32 = 1 << 31;
}

/// RSS state set by L2NIC 60 to 65 and cmdq 4/5.
#[derive(Debug, Clone)]
pub(crate) struct Rss {
    pub enabled: bool,
    pub key: [u8; 40],
    pub hash_types: u32,
    pub toeplitz: bool,
    pub indir: [u16; 256],
    pub template: Option<u8>,
}

impl Default for Rss {
    fn default() -> Self {
        Rss { enabled: false, key: [0; 40], hash_types: 0, toeplitz: true, indir: [0xFFFF; 256], template: None }
    }
}

/// The RSS input and hash of a frame under `hash_types`, or `None` when no enabled type applies.
pub(crate) fn rss_hash(rss: &Rss, frame: &[u8]) -> Option<u32> {
    let p = net::parse(frame, 0x8100);
    let ports = |bits: u32| -> Option<[u8; 4]> {
        let (proto, off) = p.l4?;
        let want = match proto {
            net::IPPROTO_TCP => bits & (hash_type::TCP_V4 | hash_type::TCP_V6),
            net::IPPROTO_UDP => bits & (hash_type::UDP_V4 | hash_type::UDP_V6),
            _ => 0,
        };
        (want != 0).then(|| frame[off..off + 4].try_into().expect("4"))
    };
    let t = rss.hash_types;
    let mut input = Vec::with_capacity(36);
    match p.l3 {
        L3::V4 { src, dst, .. } => {
            let p4 = ports(t & (hash_type::TCP_V4 | hash_type::UDP_V4));
            if p4.is_none() && t & hash_type::IPV4 == 0 {
                return None;
            }
            input.extend_from_slice(&src);
            input.extend_from_slice(&dst);
            input.extend(p4.into_iter().flatten());
        }
        L3::V6 { src, dst, .. } => {
            let p6 = ports(t & (hash_type::TCP_V6 | hash_type::UDP_V6));
            if p6.is_none() && t & hash_type::IPV6 == 0 {
                return None;
            }
            input.extend_from_slice(&src);
            input.extend_from_slice(&dst);
            input.extend(p6.into_iter().flatten());
        }
        L3::None => return None,
    }
    if rss.toeplitz {
        Some(net::toeplitz(&rss.key, &input))
    } else {
        // The XOR engine's exact function is not in the notes (unverified): the model XORs the input's big-endian
        // dwords, which spreads flows but matches no known hardware bit for bit.
        Some(input.chunks(4).fold(0, |a, c| a ^ u32::from_be_bytes(c.try_into().unwrap_or([0; 4]))))
    }
}

/// One started RQ.
#[derive(Debug, Clone)]
pub(crate) struct Rq {
    /// Entries in the ring.
    pub depth: u32,
    /// Next entry the model fills.
    pub ci: u32,
    /// Entries the driver has posted up to (from the doorbell, in entries).
    pub pi: u32,
    /// Where the ring's WQEs are.
    pub pages: super::ctx::WqPages,
}

impl Rq {
    pub fn new(ctx: RqCtx, depth: u32, pages: super::ctx::WqPages) -> Rq {
        let ci = (u32::from(ctx.ci) >> 1) % depth;
        Rq { depth, ci, pi: ci, pages }
    }
    fn posted(&self) -> u32 {
        (self.pi + self.depth - self.ci) % self.depth
    }
}

/// Why a frame did not reach a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Drop {
    /// Filtered by the RX mode / MAC table, or the vport/port is off.
    Filtered,
    /// No posted buffer (yet): the frame may wait at the MAC.
    NoBuffer,
    /// Dropped for good: the indirection table entry is invalid (0xFFFF) or names a queue without a context.
    Discard,
}

impl Core {
    fn buf_len(&self) -> usize {
        let from_tbl = usize::from(self.mgmt.rx_buf_size);
        let from_root =
            self.mgmt.root.map(|r| super::rx_buf_bytes(r.rx_buf_sz, self.config.comm_features)).unwrap_or(0);
        if from_tbl != 0 {
            from_tbl
        } else {
            from_root
        }
    }

    /// The largest frame received, CRC included: the function table's MTU plus 26 bytes (docs/hw/hinic3.md §15, §19);
    /// before the driver sets a real MTU (0x3FFF at init, docs/hw/hinic3.md §7.3) the largest the port takes at all.
    fn max_rx_frame(&self) -> usize {
        match self.mgmt.mtu {
            mtu @ 256..=9600 => usize::from(mtu) + 26,
            _ => super::tx::FRAME_MAX,
        }
    }

    fn accepts(&self, frame: &[u8]) -> bool {
        let m = self.mgmt.rx_mode;
        let dst = &frame[..6];
        if m & (1 << 4) != 0 {
            return true;
        }
        if dst == [0xFF; 6] {
            return m & (1 << 2) != 0;
        }
        if dst[0] & 1 == 1 {
            return m & ((1 << 1) | (1 << 3)) != 0;
        }
        m & 1 != 0 && self.mgmt.macs.iter().any(|mac| mac[..] == *dst)
    }

    /// Delivers one frame from the wire; `Err` says why it was dropped.
    pub(crate) fn receive(&mut self, frame: &[u8], error: Option<Sp670RxError>) -> Result<usize, Drop> {
        if !self.link_up()
            || !self.mgmt.vport_enabled
            || self.mgmt.port_enable & 2 == 0
            || frame.len() < 14
            || !self.accepts(frame)
        {
            return Err(Drop::Filtered);
        }
        if frame.len() + 4 > self.max_rx_frame() {
            // The MAC refuses it before any function sees it (docs/hw/hinic3.md §19).
            self.stats.port_rx[super::stats::port::OVERSIZE] += 1;
            return Err(Drop::Filtered);
        }
        if error == Some(Sp670RxError::Crc) {
            self.stats.port_rx[super::stats::port::RX_FCS_ERR] += 1;
            self.stats.vport[super::stats::vport::RX_ERR] += 1;
            return Err(Drop::Filtered);
        }
        let hash = if self.mgmt.rss.enabled { rss_hash(&self.mgmt.rss, frame) } else { None };
        let q = match hash {
            Some(h) => self.mgmt.rss.indir[(h & 0xFF) as usize],
            None => 0,
        };
        let q = usize::from(q);
        if self.rq_ctx.get(q).is_none_or(|c| c.is_none()) {
            self.stats.rx(frame, false);
            return Err(Drop::Discard);
        }
        let buf = self.buf_len();
        let mut data = frame.to_vec();
        let mut vlan = 0u32;
        let mut status_vlan = 0;
        if self.mgmt.vlan_strip && data.len() >= 18 && data[12..14] == [0x81, 0x00] {
            vlan = u32::from(u16::from_be_bytes([data[14], data[15]]));
            data.drain(12..16);
            status_vlan = CQE_VLAN_STRIPPED;
        }
        let Some(rq) = self.rqs.get(q).and_then(|r| r.as_ref()) else {
            self.stats.rx(frame, false);
            return Err(Drop::NoBuffer);
        };
        let need = data.len().div_ceil(buf.max(1)) as u32;
        if buf == 0 || rq.posted() < need {
            self.stats.rx(frame, false);
            return Err(Drop::NoBuffer);
        }
        let (depth, ci) = (rq.depth, rq.ci);
        let mut cqe0 = 0;
        for (i, chunk) in data.chunks(buf).enumerate() {
            let e = (ci + i as u32) % depth;
            let mut w = [0u32; 4];
            let mut raw = [0u8; 16];
            if self.dma.read(rq.pages.at(u64::from(e) * 16), &mut raw, &|| format!("RQ {q} WQE fetch")).is_err() {
                return Err(Drop::Discard);
            }
            for (k, d) in w.iter_mut().enumerate() {
                *d = u32::from_le_bytes(raw[4 * k..4 * k + 4].try_into().expect("4"));
            }
            let bufa = u64::from(w[0]) << 32 | u64::from(w[1]);
            if self.dma.write(bufa, chunk, &|| format!("RQ {q} packet buffer")).is_err() {
                return Err(Drop::Discard);
            }
            if i == 0 {
                cqe0 = u64::from(w[2]) << 32 | u64::from(w[3]);
            }
        }
        let p = net::parse(&data, 0x8100);
        let pkt_type = match p.l4.map(|(pr, _)| pr) {
            Some(net::IPPROTO_TCP) => 3,
            Some(net::IPPROTO_UDP) => 4,
            Some(net::IPPROTO_SCTP) => 7,
            _ => 0,
        };
        let ip_type = match p.l3 {
            L3::V4 { .. } => 0,
            L3::V6 { .. } => 1,
            L3::None => 2,
        };
        let cast = if data[0] & 1 == 0 {
            0
        } else if data[..6] == [0xFF; 6] {
            2
        } else {
            1
        };
        let csum = match error {
            Some(Sp670RxError::IpChecksum) => CQE_CSUM_IP,
            Some(Sp670RxError::L4Checksum) if pkt_type == 4 => CQE_CSUM_UDP,
            Some(Sp670RxError::L4Checksum) => CQE_CSUM_TCP,
            _ => 0,
        };
        // RSS type: the notes give only "non-zero: the hash is valid" (docs/hw/hinic3.md §10.5); the model writes 1.
        let rss_type = u32::from(hash.is_some());
        let dwords = [
            CQE_DONE | csum,
            (data.len() as u32) << 16 | vlan,
            pkt_type | ip_type << 5 | cast << 19 | status_vlan | rss_type << 24,
            hash.unwrap_or(0),
            0,
            0,
            0,
            0,
        ];
        self.write_cqe(q, cqe0, dwords)?;
        let rq = self.rqs[q].as_mut().expect("present");
        rq.ci = (rq.ci + need) % rq.depth;
        self.stats.rx(frame, true);
        Ok(q)
    }

    /// Writes a CQE: dwords 1 to 7, then dword 0 (the done bit) with a release store.
    fn write_cqe(&self, q: usize, at: u64, d: [u32; 8]) -> Result<(), Drop> {
        let mut rest = [0u8; 28];
        for (k, v) in d[1..].iter().enumerate() {
            rest[4 * k..4 * k + 4].copy_from_slice(&v.to_le_bytes());
        }
        let what = || format!("RQ {q} CQE write-back");
        self.dma.write(at + 4, &rest, &what).map_err(|_| Drop::Discard)?;
        self.dma.write_u32(at, d[0], &what).map_err(|_| Drop::Discard)
    }

    /// cmdq SET_RQ_FLUSH (docs/hw/hinic3.md §10.6): every posted buffer comes back with a CQE carrying the flush
    /// bit. The notes say "bit 28 (flush) or done"; the model sets both, so a driver polling either sees them.
    pub(crate) fn flush_rq(&mut self, q: usize) -> Result<(), Error> {
        let Some(rq) = self.rqs.get(q).and_then(|r| r.clone()) else {
            return Err(Error::Violation { at: format!("RQ {q}"), rule: "flushed with no context".into() });
        };
        for i in 0..rq.posted() {
            let e = (rq.ci + i) % rq.depth;
            let mut raw = [0u8; 16];
            if self.dma.read(rq.pages.at(u64::from(e) * 16), &mut raw, &|| format!("RQ {q} WQE fetch (flush)")).is_err()
            {
                break;
            }
            let cqe = u64::from(u32::from_le_bytes(raw[8..12].try_into().expect("4"))) << 32
                | u64::from(u32::from_le_bytes(raw[12..16].try_into().expect("4")));
            let _ = self.write_cqe(q, cqe, [CQE_DONE | CQE_FLUSH, 0, 0, 0, 0, 0, 0, 0]);
        }
        if let Some(r) = self.rqs[q].as_mut() {
            r.ci = r.pi;
        }
        Ok(())
    }
}
