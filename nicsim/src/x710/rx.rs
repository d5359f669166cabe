//! Receive: the MAC's checks, the VSI's filters (docs/hw/i40e.md §6.7, §6.8), RSS (§12), and RX rings with write-back (§10.1,
//! docs/hw/i40e.md §10.2, §11).
//!
//! RSS hashes the default input sets of docs/hw/i40e.md §12.2 (GLQF_HASH_INSET is not read: the model assumes the defaults DPDK
//! writes), with the Toeplitz function only (GLQF_CTL.HTOEP = 1), and picks table entry `hash mod table size`.

use crate::net::{self, L3};
use crate::Error;

use super::hmc::RxCtx;
use super::regs::pctype::*;
use super::regs::*;
use super::{adminq, Core, WireFrame, X710RxError, X710State};

/// Frames handled per step, so TX and the admin queue are not starved.
const RX_BUDGET: usize = 256;
/// Shortest frame without FCS.
const MIN_FRAME: usize = 60;
/// RX buffers chained per frame (docs/hw/i40e.md §15).
const MAX_CHAIN: usize = 5;

/// A frame that passed the filters, on its way to a queue.
#[derive(Debug, Clone)]
pub(crate) struct Classified {
    pub data: Vec<u8>,
    pub error: Option<X710RxError>,
    /// Target PF queue (`None`: the frame was dropped before a queue was picked).
    pub queue: Option<usize>,
    pub hash: Option<u32>,
    pub ptype: u8,
    pub umbcast: u8,
    pub l2tag1: Option<u16>,
}

/// Write-back qword 1 fields (docs/hw/i40e.md §10.2).
mod wb {
    use super::Field;
    pub const DD: Field = Field::bit(0);
    pub const EOF: Field = Field::bit(1);
    pub const L2TAG1P: Field = Field::bit(2);
    pub const CRCP: Field = Field::bit(4);
    pub const UMBCAST: Field = Field::new(9, 2);
    pub const FLTSTAT: Field = Field::new(12, 2);
    /// FLTSTAT value: RSS hash in qword 0's high half.
    pub const FLTSTAT_RSS: u32 = 3;
    /// Error bits, in the low dword: RXE (19), OVERSIZE (25).
    pub const ERROR_RXE: Field = Field::bit(19);
    /// L3L4P (3): the checksums were checked; IPE (22) and L4E (23) then say which failed.
    pub const L3L4P: Field = Field::bit(3);
    pub const ERROR_IPE: Field = Field::bit(22);
    pub const ERROR_L4E: Field = Field::bit(23);
    pub const ERROR_OVERSIZE: Field = Field::bit(25);
    /// PTYPE is bits 37:30: its low two bits in the low dword, the rest in the high dword.
    pub const PTYPE_LO: Field = Field::new(30, 2);
    pub const PTYPE_HI: Field = Field::new(0, 6);
    /// LENGTH_PBUF is bits 51:38: bits 19:6 of the high dword.
    pub const LENGTH_PBUF: Field = Field::new(6, 14);
}

/// The checksum verdict of a received frame as write-back bits (docs/hw/i40e.md §10.2): L3L4P when the device checked
/// the IPv4 header or a TCP/UDP checksum, with IPE / L4E for the ones that failed. The model does not check SCTP's
/// CRC, and with L3L4P a driver would trust L4E, so SCTP frames carry no L3L4P.
pub(crate) fn checksum_bits(frame: &[u8]) -> u32 {
    let p = net::parse(frame, net::ETH_P_VLAN);
    if p.proto == Some(net::IPPROTO_SCTP) {
        return 0;
    }
    let mut bits = 0;
    if let L3::V4 { off, ihl, .. } = p.l3 {
        bits |= wb::L3L4P.val(1);
        if net::internet_checksum(&frame[off..off + ihl]) != 0 {
            bits |= wb::ERROR_IPE.val(1);
        }
    }
    if let Some((proto @ (net::IPPROTO_TCP | net::IPPROTO_UDP), off)) = p.l4 {
        bits |= wb::L3L4P.val(1);
        let udp = proto == net::IPPROTO_UDP;
        let at = off + if udp { 6 } else { 16 };
        let field = u16::from_be_bytes([frame[at], frame[at + 1]]);
        let len = net::l4_len(frame, &p, off);
        // A zero UDP checksum over IPv4 means "none".
        let unchecked = udp && field == 0 && matches!(p.l3, L3::V4 { .. });
        let sum = net::ones_sum(&frame[off..off + len], net::pseudo_header_sum(frame, &p, proto, len));
        if !unchecked && net::fold(sum) != 0xFFFF {
            bits |= wb::ERROR_L4E.val(1);
        }
    }
    bits
}

/// The packet classifier type and Toeplitz input of a frame (docs/hw/i40e.md §12.1, §12.2).
pub(crate) fn rss_input(frame: &[u8]) -> (u32, Vec<u8>) {
    let p = net::parse(frame, net::ETH_P_VLAN);
    let ports = |off: usize, n: usize| frame.get(off..off + n).map(<[u8]>::to_vec).unwrap_or_default();
    match p.l3 {
        L3::V4 { frag, src, dst, .. } => {
            let mut input = [src, dst].concat();
            if frag {
                return (FRAG_IPV4, input);
            }
            match p.l4 {
                Some((net::IPPROTO_TCP, off)) => {
                    input.extend(ports(off, 4));
                    (IPV4_TCP, input)
                }
                Some((net::IPPROTO_UDP, off)) => {
                    input.extend(ports(off, 4));
                    (IPV4_UDP, input)
                }
                Some((net::IPPROTO_SCTP, off)) => {
                    input.extend(ports(off, 4));
                    input.extend(ports(off + 4, 4));
                    (IPV4_SCTP, input)
                }
                _ => (IPV4_OTHER, input),
            }
        }
        L3::V6 { src, dst, .. } => {
            let mut input = [src.as_slice(), dst.as_slice()].concat();
            match (p.l4, p.proto) {
                (Some((net::IPPROTO_TCP, off)), _) => {
                    input.extend(ports(off, 4));
                    (IPV6_TCP, input)
                }
                (Some((net::IPPROTO_UDP, off)), _) => {
                    input.extend(ports(off, 4));
                    (IPV6_UDP, input)
                }
                (Some((net::IPPROTO_SCTP, off)), _) => {
                    input.extend(ports(off, 4));
                    input.extend(ports(off + 4, 4));
                    (IPV6_SCTP, input)
                }
                (None, Some(net::IPPROTO_TCP | net::IPPROTO_UDP | net::IPPROTO_SCTP)) => (FRAG_IPV6, input),
                _ => (IPV6_OTHER, input),
            }
        }
        L3::None => (L2_PAYLOAD, p.ethertype.to_be_bytes().to_vec()),
    }
}

/// The 8-bit packet type of docs/hw/i40e.md §10.2.
fn ptype(frame: &[u8]) -> u8 {
    let p = net::parse(frame, net::ETH_P_VLAN);
    match p.l3 {
        L3::V4 { frag: true, .. } => 22,
        L3::V4 { .. } => match p.proto {
            Some(net::IPPROTO_UDP) => 24,
            Some(net::IPPROTO_TCP) => 26,
            Some(net::IPPROTO_SCTP) => 27,
            Some(1) => 28,
            _ => 23,
        },
        L3::V6 { .. } => match (p.l4, p.proto) {
            (Some((net::IPPROTO_UDP, _)), _) => 90,
            (Some((net::IPPROTO_TCP, _)), _) => 92,
            (Some((net::IPPROTO_SCTP, _)), _) => 93,
            (_, Some(58)) => 94,
            (None, Some(net::IPPROTO_TCP | net::IPPROTO_UDP | net::IPPROTO_SCTP)) => 88,
            _ => 89,
        },
        L3::None => match p.ethertype {
            0x0806 => 11,
            0x88CC => 6,
            0x88F7 => 2,
            _ => 1,
        },
    }
}

/// What became of a frame offered to a queue.
enum Delivery {
    Done,
    NoDescriptors,
}

impl Core {
    fn count_rx_drop(&mut self, shared: &X710State) {
        let port = usize::from(shared.config.port);
        self.stats.add(stat::GLPRT_RDPC + 8 * port, 1);
        self.stats.add(stat::GLV_RDPC + 8 * adminq::vsi_stat_index(&shared.config), 1);
        shared.counters().rx_disabled += 1;
    }

    /// The RSS key (PFQF_HKEY, docs/hw/i40e.md §12.1) as bytes.
    pub(crate) fn rss_key(&self) -> [u8; RSS_KEY_LEN] {
        let mut key = [0u8; RSS_KEY_LEN];
        for (i, chunk) in key.chunks_exact_mut(4).enumerate() {
            chunk.copy_from_slice(&self.reg(pfqf_hkey(i)).to_le_bytes());
        }
        key
    }

    /// RSS table entry `e` (docs/hw/i40e.md §12.1).
    fn lut_entry(&self, e: usize) -> u32 {
        let reg = self.reg(pfqf_hlut(e / 4));
        HLUT_ENTRY.get(reg >> (8 * (e % 4)))
    }

    /// MAC checks, filters and queue selection. `None`: dropped (and counted).
    fn classify(&mut self, shared: &X710State, frame: WireFrame) -> Option<Classified> {
        let port = usize::from(shared.config.port);
        let len = frame.data.len();
        if len < MIN_FRAME {
            self.stats.add(stat::GLPRT_RUC + 8 * port, 1);
            shared.counters().rx_disabled += 1;
            return None;
        }
        if len + 4 > usize::from(self.link.max_frame) {
            self.stats.add(stat::GLPRT_ROC + 8 * port, 1);
            shared.counters().rx_disabled += 1;
            return None;
        }
        if frame.error == Some(X710RxError::Crc) {
            self.stats.add(stat::GLPRT_CRCERRS + 8 * port, 1);
        }
        let dst: [u8; 6] = frame.data[0..6].try_into().expect("6");
        let parsed = net::parse(&frame.data, net::ETH_P_VLAN);
        let vid = parsed.vlan.map_or(0, |t| t & 0xFFF);
        let tagged = parsed.vlan.is_some();
        let vsi = &self.vsi;
        let vlan_ok = match vsi.vlan_mode {
            1 => tagged,
            2 => !tagged,
            _ => true,
        };
        let broadcast = dst == [0xFF; 6];
        let multicast = dst[0] & 1 == 1 && !broadcast;
        let filter_hit = vsi.filters.iter().any(|f| f.mac == dst && f.vlan.is_none_or(|v| v == vid));
        // Promiscuous flags (docs/hw/i40e.md §6.8): 0x1 unicast, 0x2 multicast, 0x4 broadcast.
        let pass = vlan_ok
            && if broadcast {
                vsi.promisc & 0x4 != 0
            } else if multicast {
                vsi.promisc & 0x2 != 0 || filter_hit
            } else {
                vsi.promisc & 0x1 != 0 || filter_hit
            };
        if !pass {
            shared.counters().rx_filtered += 1;
            return None;
        }
        if vsi.queue_count == 0 {
            // Update VSI never gave the VSI queues (docs/hw/i40e.md §6.6): nowhere to put the frame.
            self.count_rx_drop(shared);
            return None;
        }
        let (pctype, input) = rss_input(&frame.data);
        let hena = u64::from(self.reg(pfqf_hena(1))) << 32 | u64::from(self.reg(pfqf_hena(0)));
        let mut hash = None;
        let mut queue = usize::from(self.vsi.queue_base);
        if hena & (1 << pctype) != 0 {
            if !GLQF_CTL_HTOEP.is_set(self.reg(GLQF_CTL)) {
                shared.fault(
                    "GLQF_CTL.HTOEP = 0: the simple XOR hash is not modelled (DPDK forces Toeplitz, docs/hw/i40e.md §12.2)",
                );
            }
            let h = net::toeplitz(&self.rss_key(), &input);
            let size = if PFQF_CTL_0_HASHLUTSIZE.is_set(self.reg(PFQF_CTL_0)) { 512 } else { 128 };
            let entry = self.lut_entry(h as usize % size);
            if entry >= u32::from(self.vsi.queue_count) {
                shared.fault(format!(
                    "RSS table entry {} = {entry}, beyond the VSI's {} queues (entries are VSI-relative, docs/hw/i40e.md §12.1)",
                    h as usize % size,
                    self.vsi.queue_count
                ));
                self.count_rx_drop(shared);
                return None;
            }
            queue += entry as usize;
            hash = Some(h);
        }
        let mut data = frame.data;
        let mut l2tag1 = None;
        if tagged && self.vsi.strip_vlan {
            l2tag1 = parsed.vlan;
            data.drain(12..16);
        }
        Some(Classified {
            ptype: ptype(&data),
            umbcast: if broadcast { 2 } else { u8::from(multicast) },
            data,
            error: frame.error,
            queue: Some(queue),
            hash,
            l2tag1,
        })
    }

    /// Moves frames from the packet buffer into RX rings. Returns the number of frames handled.
    pub(crate) fn process_rx(&mut self, shared: &X710State) -> usize {
        let mut work = 0;
        while work < RX_BUDGET {
            let c = match self.rx_blocked.take() {
                Some(c) => c,
                None => {
                    let mut inbound = shared.inbound.lock().unwrap_or_else(|e| e.into_inner());
                    let Some(frame) = inbound.frames.pop_front() else { break };
                    inbound.bytes -= frame.data.len();
                    drop(inbound);
                    work += 1;
                    if !self.link_up(shared, std::time::Instant::now()) {
                        shared.counters().rx_disabled += 1;
                        continue;
                    }
                    match self.classify(shared, frame) {
                        Some(c) => c,
                        None => continue,
                    }
                }
            };
            match self.deliver(shared, &c) {
                Delivery::Done => {}
                Delivery::NoDescriptors => {
                    self.rx_blocked = Some(c);
                    break;
                }
            }
        }
        work
    }

    fn deliver(&mut self, shared: &X710State, c: &Classified) -> Delivery {
        let Some(q) = c.queue else { return Delivery::Done };
        let now = std::time::Instant::now();
        let Some(ctx) = self.rxq[q].ctx.filter(|_| self.rxq[q].ena.stat(now)) else {
            self.count_rx_drop(shared);
            return Delivery::Done;
        };
        let mut data = c.data.clone();
        let crcp = !ctx.crcstrip;
        if crcp {
            data.extend_from_slice(&net::crc32(&c.data).to_le_bytes());
        }
        let mut oversize = c.error == Some(X710RxError::Oversize);
        let limit = ctx.rxmax.min(MAX_CHAIN * ctx.dbuff);
        if data.len() > limit {
            data.truncate(limit);
            oversize = true;
        }
        let needed = data.len().div_ceil(ctx.dbuff).max(1);
        let head = self.rxq[q].head;
        let tail = shared.rx_tail[q].load(std::sync::atomic::Ordering::Acquire);
        let avail = (tail + ctx.qlen - head) % ctx.qlen;
        if (avail as usize) < needed {
            return Delivery::NoDescriptors;
        }
        for (i, chunk) in data.chunks(ctx.dbuff).enumerate() {
            let idx = (head + i as u32) % ctx.qlen;
            let last = i + 1 == needed;
            if let Err(why) = self.write_rx_buffer(shared, q, &ctx, idx, chunk, last.then_some((c, crcp, oversize))) {
                shared.fault(why);
                self.rxq[q].head = (idx + 1) % ctx.qlen;
                return Delivery::Done;
            }
        }
        self.rxq[q].head = (head + needed as u32) % ctx.qlen;
        self.stats.count_frame(
            true,
            usize::from(shared.config.port),
            adminq::vsi_stat_index(&shared.config),
            c.data.len(),
            &c.data[0..6],
        );
        shared.counters().rx_delivered += 1;
        self.queue_cause(shared, q, true);
        Delivery::Done
    }

    /// Writes one buffer of a frame and its descriptor write-back; `last` carries the frame's status.
    fn write_rx_buffer(
        &self,
        shared: &X710State,
        q: usize,
        ctx: &RxCtx,
        idx: u32,
        chunk: &[u8],
        last: Option<(&Classified, bool, bool)>,
    ) -> Result<(), Error> {
        let at = ctx.base + u64::from(idx) * ctx.desc_len as u64;
        let [pkt_addr, hdr_addr] = shared
            .io
            .dma
            .read_desc(at, &|| format!("RX descriptor {idx} of queue {q}"))
            .map_err(|_| Error::Unmapped(format!("RX descriptor {idx} of queue {q} outside the IOVA map")))?;
        if hdr_addr & 1 != 0 {
            return Err(Error::Violation {
                at: format!("RX descriptor {idx} of queue {q}"),
                rule: "hdr_addr bit 0 (where DD goes) is set: a descriptor not re-armed (docs/hw/i40e.md §10.1)".into(),
            });
        }
        shared.io.dma.write(pkt_addr, chunk, &|| format!("RX buffer of descriptor {idx}, queue {q}")).map_err(
            |_| {
                Error::Unmapped(format!("RX buffer {pkt_addr:#x} of descriptor {idx}, queue {q}, outside the IOVA map"))
            },
        )?;
        let mut lo = wb::DD.val(1);
        let mut hi = wb::LENGTH_PBUF.val(chunk.len() as u32);
        let mut qw0_lo = 0u32;
        let mut qw0_hi = 0u32;
        if let Some((c, crcp, oversize)) = last {
            lo |= wb::EOF.val(1) | wb::UMBCAST.val(c.umbcast.into()) | wb::CRCP.val(crcp.into());
            lo |= wb::PTYPE_LO.val(c.ptype.into());
            hi |= wb::PTYPE_HI.val(u32::from(c.ptype) >> 2);
            if let Some(tag) = c.l2tag1 {
                if ctx.l2tsel {
                    lo |= wb::L2TAG1P.val(1);
                    qw0_lo = u32::from(tag) << 16;
                }
            }
            if let Some(h) = c.hash {
                lo |= wb::FLTSTAT.val(wb::FLTSTAT_RSS);
                qw0_hi = h;
            }
            lo |= checksum_bits(&c.data);
            if c.error == Some(X710RxError::Crc) {
                lo |= wb::ERROR_RXE.val(1);
            }
            if oversize {
                lo |= wb::ERROR_OVERSIZE.val(1);
            }
        }
        if ctx.desc_len == 32 {
            shared
                .io
                .dma
                .write(at + 16, &[0u8; 16], &|| format!("RX write-back qwords 2-3, descriptor {idx}"))
                .map_err(|_| Error::Unmapped("RX descriptor upper half outside the IOVA map".into()))?;
        }
        shared
            .io
            .dma
            .write_back(at, [qw0_lo, qw0_hi, lo, hi], 2, &|| format!("RX write-back {idx}, queue {q}"))
            .map_err(|_| Error::Unmapped(format!("RX write-back of descriptor {idx}, queue {q}, failed")))
    }
}
