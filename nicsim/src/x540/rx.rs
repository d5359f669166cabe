//! Receive: the packet buffer → filters (docs/hw/ixgbe.md §10) → RSS queue choice (§9) → descriptor fetch, data DMA and
//! write-back (docs/hw/ixgbe.md §7.1, §7.2, §8.1), with the statistics of §13.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::regs::*;
use super::{Chip, Core, RxError, WireFrame, X540State};
use crate::net::{self, Parsed, L3};

/// A frame that passed the MAC and the filters, ready for a ring.
#[derive(Debug, Clone)]
pub(crate) struct Classified {
    /// Bytes to write to buffers (VLAN tag stripped if the queue strips, CRC appended if not stripping).
    data: Vec<u8>,
    queue: usize,
    dw0: u32,
    dw1: u32,
    /// Status and error bits, without DD and EOP.
    status: u32,
    vlan: u16,
}

/// Histogram bucket (PRC64.. / PTC64.. registers, step 4) of a frame length including CRC.
pub(super) fn size_bucket(len_with_crc: usize) -> usize {
    match len_with_crc {
        0..=64 => 0,
        65..=127 => 1,
        128..=255 => 2,
        256..=511 => 3,
        512..=1023 => 4,
        _ => 5,
    }
}

impl Core {
    /// The statistics set a queue feeds (RQSMR/TQSM one-byte fields, docs/hw/ixgbe.md §13).
    pub(super) fn stat_set(&self, map_reg: fn(usize) -> usize, q: usize) -> usize {
        ((self.reg(map_reg(q / 4)) >> (8 * (q % 4))) & 0xF) as usize
    }

    pub(super) fn process_rx(&mut self, shared: &Arc<X540State>) -> usize {
        if self.rx_held_by_security_block(shared) {
            return 0; // frames wait in the packet buffer (82599, SECRXCTRL.RX_DIS)
        }
        let mut work = 0;
        loop {
            let c = match self.rx_blocked.take() {
                Some(c) => c,
                None => {
                    let mut inbound = shared.inbound.lock().unwrap_or_else(|e| e.into_inner());
                    let Some(f) = inbound.frames.pop_front() else { break };
                    inbound.bytes -= f.data.len();
                    drop(inbound);
                    work += 1;
                    match self.classify(shared, f) {
                        Some(c) => c,
                        None => continue,
                    }
                }
            };
            match self.place(shared, c) {
                Ok(()) => work += 1,
                Err(c) => {
                    self.rx_blocked = Some(c);
                    break;
                }
            }
        }
        work
    }

    /// L2 address filters (docs/hw/ixgbe.md §10.1, §10.2). Returns (pass, passed an inexact filter).
    fn address_filter(&self, dst: &[u8]) -> (bool, bool) {
        let fctrl = self.reg(FCTRL);
        if dst.iter().all(|&b| b == 0xFF) {
            return (fctrl & FCTRL_BAM != 0, false);
        }
        let lo = u32::from_le_bytes([dst[0], dst[1], dst[2], dst[3]]);
        let hi = u32::from(dst[4]) | u32::from(dst[5]) << 8;
        let exact = (0..128)
            .any(|i| self.reg(rah(i)) & RAH_AV != 0 && self.reg(ral(i)) == lo && self.reg(rah(i)) & 0xFFFF == hi);
        if exact {
            return (true, false);
        }
        if dst[0] & 1 == 0 {
            return (fctrl & FCTRL_UPE != 0, true);
        }
        let mcst = self.reg(MCSTCTRL);
        if mcst & MCSTCTRL_MFE != 0 {
            let (a, b) = (u32::from(dst[4]), u32::from(dst[5]));
            let vector = match mcst & 3 {
                0 => (a >> 4) | (b << 4),
                1 => (a >> 3) | (b << 5),
                2 => (a >> 2) | (b << 6),
                _ => a | (b << 8),
            } & 0xFFF;
            if self.reg(mta(((vector >> 5) & 0x7F) as usize)) & (1 << (vector & 0x1F)) != 0 {
                return (true, true);
            }
        }
        (fctrl & FCTRL_MPE != 0, true)
    }

    /// RSS hash and type (docs/hw/ixgbe.md §9), if MRQC enables RSS and a field set matches.
    fn rss(&self, frame: &[u8], p: &Parsed) -> (u32, u32) {
        let mrqc = self.reg(MRQC);
        if mrqc & 0xF != MRQE_RSS {
            return (0, rss_type::NONE);
        }
        let mut key = [0u8; 40];
        for (k, chunk) in key.chunks_exact_mut(4).enumerate() {
            chunk.copy_from_slice(&self.reg(rssrk(k)).to_le_bytes());
        }
        let ports = |off: usize| -> [u8; 4] { frame[off..off + 4].try_into().expect("4 bytes") };
        let mut input = [0u8; 36];
        let l4 = p.l4.filter(|(proto, _)| *proto == net::IPPROTO_TCP || *proto == net::IPPROTO_UDP);
        match p.l3 {
            L3::V4 { src, dst, .. } => {
                input[0..4].copy_from_slice(&src);
                input[4..8].copy_from_slice(&dst);
                if let Some((proto, off)) = l4 {
                    let (bit, ty) = if proto == net::IPPROTO_TCP {
                        (MRQC_IPV4_TCP, rss_type::IPV4_TCP)
                    } else {
                        (MRQC_IPV4_UDP, rss_type::IPV4_UDP)
                    };
                    if mrqc & bit != 0 {
                        input[8..12].copy_from_slice(&ports(off));
                        return (net::toeplitz(&key, &input[..12]), ty);
                    }
                }
                if mrqc & MRQC_IPV4 != 0 {
                    return (net::toeplitz(&key, &input[..8]), rss_type::IPV4);
                }
            }
            L3::V6 { src, dst, ext, .. } => {
                input[0..16].copy_from_slice(&src);
                input[16..32].copy_from_slice(&dst);
                if let Some((proto, off)) = l4 {
                    let tcp = proto == net::IPPROTO_TCP;
                    let candidates: &[(u32, u32)] = match (ext, tcp) {
                        (true, true) => {
                            &[(MRQC_IPV6_EX_TCP, rss_type::IPV6_EX_TCP), (MRQC_IPV6_TCP, rss_type::IPV6_TCP)]
                        }
                        (true, false) => {
                            &[(MRQC_IPV6_EX_UDP, rss_type::IPV6_EX_UDP), (MRQC_IPV6_UDP, rss_type::IPV6_UDP)]
                        }
                        (false, true) => &[(MRQC_IPV6_TCP, rss_type::IPV6_TCP)],
                        (false, false) => &[(MRQC_IPV6_UDP, rss_type::IPV6_UDP)],
                    };
                    if let Some(&(_, ty)) = candidates.iter().find(|(bit, _)| mrqc & bit != 0) {
                        input[32..36].copy_from_slice(&ports(off));
                        return (net::toeplitz(&key, &input[..36]), ty);
                    }
                }
                let candidates: &[(u32, u32)] = if ext {
                    &[(MRQC_IPV6_EX, rss_type::IPV6_EX), (MRQC_IPV6, rss_type::IPV6)]
                } else {
                    &[(MRQC_IPV6, rss_type::IPV6)]
                };
                if let Some(&(_, ty)) = candidates.iter().find(|(bit, _)| mrqc & bit != 0) {
                    return (net::toeplitz(&key, &input[..32]), ty);
                }
            }
            L3::None => {}
        }
        (0, rss_type::NONE)
    }

    /// Packet type bits (docs/hw/ixgbe.md §7.2) and checksum status/error bits. On the 82599 a UDP checksum field of 0 ("no
    /// checksum") is flagged TCPE/L4E, the errata of docs/hw/ixgbe.md §7.2 and §15 ("UDP zero-checksum errata: yes (TCPE on UDP
    /// csum=0)"); docs/hw/ixgbe.md says it *can* be flagged, and the model always does. The X540 has no such errata.
    /// The errata's L4E counts in XEC like any other checksum error (an assumption: docs/hw/ixgbe.md is silent).
    fn ptype_and_checksums(&mut self, chip: Chip, frame: &[u8], p: &Parsed) -> (u32, u32) {
        let mut ptype = 0;
        let mut status = 0;
        match p.l3 {
            L3::V4 { off, ihl, .. } => {
                ptype |= PTYPE_IPV4 | if ihl > 20 { PTYPE_IPV4_EX } else { 0 };
                status |= RXD_STAT_IPCS;
                if net::internet_checksum(&frame[off..off + ihl]) != 0 {
                    status |= RXD_ERR_IPE;
                }
            }
            L3::V6 { ext, .. } => ptype |= PTYPE_IPV6 | if ext { PTYPE_IPV6_EX } else { 0 },
            L3::None => {}
        }
        if let Some((proto, off)) = p.l4 {
            match proto {
                net::IPPROTO_TCP | net::IPPROTO_UDP => {
                    let udp = proto == net::IPPROTO_UDP;
                    ptype |= if udp { PTYPE_UDP } else { PTYPE_TCP };
                    let len = net::l4_len(frame, p, off);
                    let field = u16::from_be_bytes([
                        frame[off + if udp { 6 } else { 16 }],
                        frame[off + if udp { 7 } else { 17 }],
                    ]);
                    status |= RXD_STAT_L4CS;
                    if udp {
                        status |= RXD_STAT_UDPCS;
                        if field != 0 {
                            status |= RXD_STAT_UDPV;
                        }
                    }
                    let no_checksum = udp && field == 0 && matches!(p.l3, L3::V4 { .. });
                    let sum = net::ones_sum(&frame[off..off + len], net::pseudo_header_sum(frame, p, proto, len));
                    if !no_checksum && net::fold(sum) != 0xFFFF {
                        status |= RXD_ERR_L4E;
                    }
                    if udp && field == 0 && chip == Chip::X82599 {
                        status |= RXD_ERR_L4E;
                    }
                }
                net::IPPROTO_SCTP => ptype |= PTYPE_SCTP,
                _ => {}
            }
        }
        if status & (RXD_ERR_IPE | RXD_ERR_L4E) != 0 {
            self.count(XEC, 1);
        }
        (ptype, status)
    }

    /// MAC checks, filters, statistics and RSS: the frame's fate up to the ring.
    fn classify(&mut self, shared: &X540State, f: WireFrame) -> Option<Classified> {
        if self.reg(RXCTRL) & RXCTRL_RXEN == 0 {
            shared.counters().rx_disabled += 1;
            return None;
        }
        let WireFrame { mut data, error } = f;
        let len_crc = data.len() + 4;
        self.count(TPR, 1);
        self.count(TORL, len_crc as u64);
        let mut status = 0;
        if let Some(e) = error {
            self.count(if e == RxError::Crc { CRCERRS } else { RLEC }, 1);
            if self.reg(FCTRL) & FCTRL_SBP != 0 || shared.config.deliver_bad_frames {
                status |= RXD_ERR_RXE;
            } else {
                shared.counters().rx_errors += 1;
                return None;
            }
        }
        let vet = (self.reg(VLNCTRL) & 0xFFFF) as u16;
        let p = net::parse(&data, vet);
        let hl = self.reg(HLREG0);
        let max = if hl & HLREG0_JUMBOEN != 0 {
            (self.reg(MAXFRS) >> 16) as usize
        } else {
            1518 + if p.vlan.is_some() { 4 } else { 0 }
        };
        if len_crc > max {
            self.count(ROC, 1);
            shared.counters().rx_errors += 1;
            return None;
        }
        if len_crc < 64 {
            self.count(RUC, 1);
            shared.counters().rx_errors += 1;
            return None;
        }
        if status & RXD_ERR_RXE == 0 {
            self.count(RXNFGPC, 1);
            self.count(RXNFGBCL, len_crc as u64);
        }
        if p.ethertype == net::ETH_P_PAUSE && self.reg(FCTRL) & FCTRL_DPF != 0 {
            shared.counters().rx_filtered += 1;
            return None;
        }
        let (pass, pif) = self.address_filter(&data[0..6]);
        let vlan_ok = match p.vlan {
            Some(tci) if self.reg(VLNCTRL) & VLNCTRL_VFE != 0 => {
                let vid = usize::from(tci & 0xFFF);
                self.reg(vfta(vid >> 5)) & (1 << (vid & 0x1F)) != 0
            }
            _ => true,
        };
        if !pass || !vlan_ok {
            shared.counters().rx_filtered += 1;
            return None;
        }
        let strip_crc = hl & HLREG0_RXCRCSTRP != 0;
        let counted = data.len() + if strip_crc { 0 } else { 4 };
        if status & RXD_ERR_RXE == 0 {
            self.count(GPRC, 1);
            self.count(GORCL, counted as u64);
            self.count(PRC64 + 4 * size_bucket(len_crc), 1);
            if data[0..6].iter().all(|&b| b == 0xFF) {
                self.count(BPRC, 1);
            } else if data[0] & 1 != 0 {
                self.count(MPRC, 1);
            }
        }
        let (hash, rss_ty) = self.rss(&data, &p);
        let queue = if rss_ty != rss_type::NONE {
            let e = (hash & 0x7F) as usize;
            ((self.reg(reta(e / 4)) >> (8 * (e % 4))) & 0xF) as usize
        } else {
            0
        };
        let (ptype, csum) = self.ptype_and_checksums(shared.config.chip, &data, &p);
        status |= csum;
        if pif {
            status |= RXD_STAT_PIF;
        }
        let mut vlan = 0;
        if let Some(tci) = p.vlan {
            status |= RXD_STAT_VP;
            vlan = tci;
            if self.reg(rxdctl(queue)) & RXDCTL_VME != 0 {
                data.drain(12..16);
            }
        }
        let dw1 = if self.reg(RXCSUM) & RXCSUM_PCSD != 0 {
            hash
        } else if let L3::V4 { off, .. } = p.l3 {
            u32::from(u16::from_be_bytes([data[off + 4], data[off + 5]]))
        } else {
            0
        };
        if !strip_crc {
            let fcs = net::crc32(&data);
            data.extend_from_slice(&fcs.to_le_bytes());
        }
        Some(Classified { data, queue, dw0: rss_ty | ptype, dw1, status, vlan })
    }

    /// Writes a classified frame to its queue's ring; `Err` gives it back when the ring lacks descriptors and the
    /// queue does not drop (SRRCTL.DROP_EN clear): it then waits in the packet buffer.
    fn place(&mut self, shared: &X540State, c: Classified) -> Result<(), Classified> {
        let qi = c.queue;
        let q = self.rxq[qi].clone();
        if !q.enabled {
            shared.counters().rx_disabled += 1;
            return Ok(());
        }
        let srrctl = self.reg(srrctl(qi));
        let bsize = ((srrctl & SRRCTL_BSIZEPKT_MASK) as usize * 1024).max(1024);
        let ndesc = c.data.len().div_ceil(bsize).max(1) as u32;
        let tail = shared.rdt[qi].load(Ordering::Acquire);
        if tail >= q.n {
            shared.io.faults.record(crate::fault::Fault::Protocol {
                what: format!("RDT({qi}) = {tail} past the ring of {} descriptors", q.n),
            });
            shared.counters().rx_missed += 1;
            return Ok(());
        }
        let avail = (tail + q.n - q.head) % q.n;
        if avail < ndesc {
            if srrctl & SRRCTL_DROP_EN != 0 {
                self.count(mpc(0), 1);
                let set = self.stat_set(rqsmr, qi);
                self.count(qprdc(set), 1);
                let eicr = self.reg(EICR);
                self.set_reg(EICR, eicr | EICR_RX_MISS);
                shared.counters().rx_missed += 1;
                return Ok(());
            }
            return Err(c);
        }
        let mut head = q.head;
        let chunks = c.data.chunks(bsize);
        let last = chunks.len() - 1;
        for (i, chunk) in chunks.enumerate() {
            let desc = q.base + u64::from(head) * 16;
            let what = || format!("RX descriptor {head} of queue {qi} at {desc:#x}");
            let Ok([pkt_addr, _hdr]) = shared.io.dma.read_desc(desc, &what) else { break };
            let what_data = || format!("RX data buffer of descriptor {head}, queue {qi}");
            if shared.io.dma.write(pkt_addr, chunk, &what_data).is_err() {
                break;
            }
            let eop = if i == last { RXD_STAT_EOP } else { 0 };
            let dwords = [c.dw0, c.dw1, c.status | RXD_STAT_DD | eop, chunk.len() as u32 | u32::from(c.vlan) << 16];
            if shared.io.dma.write_back(desc, dwords, 2, &what).is_err() {
                break;
            }
            head = (head + 1) % q.n;
        }
        self.rxq[qi].head = head;
        let set = self.stat_set(rqsmr, qi);
        self.count(qprc(set), 1);
        self.count(qbrc_l(set), c.data.len() as u64);
        self.count(RXDGPC, 1);
        self.count(RXDGBCL, c.data.len() as u64);
        shared.counters().rx_delivered += 1;
        self.queue_cause(shared, true, qi);
        Ok(())
    }
}
