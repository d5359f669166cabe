//! Transmit: data and context descriptors (docs/hw/i40e.md §10.3, §10.4), RS → DTYPE 0xF write-back or head write-back (§10.5),
//! checksum and VLAN insertion, and the malicious-driver checks of docs/hw/i40e.md §11 (a violation disables the queue, sets
//! GL_MDET_TX and is recorded as a fault).

use crate::Error;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::net;

use super::regs::*;
use super::{adminq, Core, WireFrame, X710State};

/// Descriptors handled per queue per step.
const TX_BUDGET: u32 = 256;
/// Descriptor length (docs/hw/i40e.md §10.3).
const DESC_LEN: u64 = 16;
/// Smallest packet and most data descriptors per non-TSO packet (docs/hw/i40e.md §11, §15).
const MIN_PACKET: usize = 17;
const MAX_DATA_DESCS: u32 = 8;
/// Frames shorter than this go out padded (without FCS).
const MIN_FRAME: usize = 60;

/// TX data descriptor qword 1 fields (docs/hw/i40e.md §10.3).
mod txd {
    /// Fields of the 64-bit qword, as (lsb, width).
    pub const DTYPE: (u32, u32) = (0, 4);
    pub const CMD: (u32, u32) = (4, 10);
    pub const OFFSET: (u32, u32) = (16, 18);
    pub const BUF_SZ: (u32, u32) = (34, 14);
    pub const L2TAG1: (u32, u32) = (48, 16);
    pub const DTYPE_DATA: u64 = 0x0;
    pub const DTYPE_CONTEXT: u64 = 0x1;
    pub const DTYPE_DONE: u64 = 0xF;
    pub const CMD_EOP: u64 = 0x001;
    pub const CMD_RS: u64 = 0x002;
    pub const CMD_ICRC: u64 = 0x004;
    pub const CMD_IL2TAG1: u64 = 0x008;
    /// IIPT, CMD bits 6:5: 0x060 IPv4 with checksum.
    pub const CMD_IIPT_MASK: u64 = 0x060;
    pub const CMD_IIPT_IPV4_CSUM: u64 = 0x060;
    /// L4T, CMD bits 9:8: 0x100 TCP, 0x200 SCTP, 0x300 UDP.
    pub const CMD_L4T_MASK: u64 = 0x300;
    pub const CMD_L4T_TCP: u64 = 0x100;
    pub const CMD_L4T_SCTP: u64 = 0x200;
    pub const CMD_L4T_UDP: u64 = 0x300;
    /// Known CMD bits: EOP, RS, ICRC, IL2TAG1, DUMMY, IIPT, FCOET, L4T.
    pub const CMD_KNOWN: u64 = 0x3FF;
    /// OFFSET sub-fields: MACLEN (2-byte units), IPLEN (4-byte units).
    pub const MACLEN: (u32, u32) = (0, 7);
    pub const IPLEN: (u32, u32) = (7, 7);
    /// Context descriptor CMD bit TSO (docs/hw/i40e.md §10.4).
    pub const CTX_CMD_TSO: u64 = 0x01;
    /// Context descriptor CMD bit TSYN: timestamp this packet (docs/hw/i40e.md §10.4).
    pub const CTX_CMD_TSYN: u64 = 0x02;
}

fn get(qw: u64, (lsb, width): (u32, u32)) -> u64 {
    (qw >> lsb) & ((1u64 << width) - 1)
}

/// A packet being gathered across data descriptors.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    data: Vec<u8>,
    descs: u32,
    /// CMD and OFFSET of the first descriptor, L2TAG1 of the last (they agree in a well-formed packet).
    cmd: u64,
    offset: u64,
    l2tag1: u16,
}

impl Core {
    /// Processes every enabled TX queue up to its tail. Returns the number of descriptors handled.
    pub(crate) fn process_tx(&mut self, shared: &X710State, now: Instant) -> usize {
        let mut work = 0;
        if self.tx_suspended {
            return 0;
        }
        for q in 0..self.txq.len() {
            let t = &self.txq[q];
            if t.ctx.is_none() || t.hung || !t.ena.stat(now) {
                continue;
            }
            work += self.process_tx_queue(shared, q);
        }
        work
    }

    fn process_tx_queue(&mut self, shared: &X710State, q: usize) -> usize {
        let Some(ctx) = self.txq[q].ctx else { return 0 };
        let tail = shared.tx_tail[q].load(Ordering::Acquire);
        let mut done = 0;
        while self.txq[q].head != tail && done < TX_BUDGET {
            let idx = self.txq[q].head;
            let at = ctx.base + u64::from(idx) * DESC_LEN;
            let Ok([addr, qw1]) = shared.io.dma.read_desc(at, &|| format!("TX descriptor {idx} of queue {q}")) else {
                return self.mdd(shared, q, format!("TX descriptor {idx} outside the IOVA map")) + done as usize;
            };
            let dtype = get(qw1, txd::DTYPE);
            match dtype {
                txd::DTYPE_DATA => {
                    if let Err(why) = self.tx_data(shared, q, idx, addr, qw1) {
                        return self.mdd(shared, q, why.to_string()) + done as usize;
                    }
                }
                txd::DTYPE_CONTEXT => {
                    if self.txq[q].pending.is_some() {
                        return self.mdd(
                            shared,
                            q,
                            format!("context descriptor {idx} inside a packet (docs/hw/i40e.md §10.4)"),
                        ) + done as usize;
                    }
                    if get(qw1, txd::CMD) & txd::CTX_CMD_TSO != 0 {
                        return self.mdd(shared, q, format!("TSO context descriptor {idx}: TSO is not modelled"))
                            + done as usize;
                    }
                    if get(qw1, txd::CMD) & txd::CTX_CMD_TSYN != 0 {
                        let why = if ctx.timesync {
                            "IEEE 1588 TX timestamps are not modelled"
                        } else {
                            "the queue's context has timesync_ena = 0 (docs/hw/i40e.md §8.5)"
                        };
                        return self.mdd(shared, q, format!("TSYN context descriptor {idx}: {why}")) + done as usize;
                    }
                }
                txd::DTYPE_DONE => {
                    return self.mdd(
                        shared,
                        q,
                        format!("descriptor {idx} between head and tail still has DTYPE 0xF (done): not written"),
                    ) + done as usize;
                }
                other => {
                    return self.mdd(shared, q, format!("descriptor {idx} with DTYPE {other:#x} (not modelled)"))
                        + done as usize;
                }
            }
            let next = (idx + 1) % ctx.qlen;
            self.txq[q].head = next;
            done += 1;
            if get(qw1, txd::CMD) & txd::CMD_RS != 0 {
                let r = match ctx.head_wb {
                    // Head write-back (docs/hw/i40e.md §10.5): the index of the next descriptor the device will read.
                    Some(addr) => shared.io.dma.write_u32(addr, next, &|| format!("TX head write-back, queue {q}")),
                    None => {
                        let v = ((qw1 as u32) & !0xF) | txd::DTYPE_DONE as u32;
                        shared.io.dma.write_u32(at + 8, v, &|| format!("TX DD write-back {idx}, queue {q}"))
                    }
                };
                if r.is_err() {
                    return done as usize;
                }
                self.queue_cause(shared, q, false);
            }
        }
        // Head write-back without RS (docs/hw/i40e.md §10.5): the head word follows the processed descriptors even
        // when none of them asked for a report, as with WB_ON_ITR; Linux's i40e sets RS only every few packets and
        // finds the others complete through this word.
        if let (Some(addr), true) = (ctx.head_wb, done > 0) {
            let head = self.txq[q].head;
            let _ = shared.io.dma.write_u32(addr, head, &|| format!("TX head write-back, queue {q}"));
        }
        done as usize
    }

    /// One data descriptor: gather its buffer, and send the packet at EOP.
    fn tx_data(&mut self, shared: &X710State, q: usize, idx: u32, addr: u64, qw1: u64) -> Result<(), Error> {
        let cmd = get(qw1, txd::CMD);
        let size = get(qw1, txd::BUF_SZ) as usize;
        if cmd & !txd::CMD_KNOWN != 0 {
            return Err(Error::Violation { at: format!("descriptor {idx}"), rule: format!("CMD {cmd:#x}") });
        }
        if size == 0 {
            return Err(Error::Violation {
                at: format!("descriptor {idx}"),
                rule: "a buffer of length 0 (docs/hw/i40e.md §11)".into(),
            });
        }
        let mut buf = vec![0u8; size];
        shared
            .io
            .dma
            .read(addr, &mut buf, &|| format!("TX buffer of descriptor {idx}, queue {q}"))
            .map_err(|_| Error::Unmapped(format!("descriptor {idx}: buffer {addr:#x} outside the IOVA map")))?;
        let p = self.txq[q].pending.get_or_insert_with(|| Pending {
            data: Vec::new(),
            descs: 0,
            cmd,
            offset: get(qw1, txd::OFFSET),
            l2tag1: 0,
        });
        p.data.extend_from_slice(&buf);
        p.descs += 1;
        p.l2tag1 = get(qw1, txd::L2TAG1) as u16;
        if p.descs > MAX_DATA_DESCS {
            return Err(Error::Violation {
                at: String::new(),
                rule: format!("a packet spans more than {MAX_DATA_DESCS} data descriptors (docs/hw/i40e.md §11)"),
            });
        }
        if cmd & txd::CMD_EOP == 0 {
            return Ok(());
        }
        let p = self.txq[q].pending.take().expect("pending packet");
        if p.data.len() < MIN_PACKET {
            return Err(Error::Violation {
                at: String::new(),
                rule: format!("a packet of {} bytes (at least 17, docs/hw/i40e.md §11)", p.data.len()),
            });
        }
        self.send(shared, q, p)
    }

    fn send(&mut self, shared: &X710State, q: usize, p: Pending) -> Result<(), Error> {
        let mut frame = p.data;
        if p.cmd & txd::CMD_ICRC == 0 {
            shared.fault(format!(
                "TX queue {q}: a packet without ICRC (the CRC must always be inserted, docs/hw/i40e.md §10.3)"
            ));
        }
        let mac_len = get(p.offset, txd::MACLEN) as usize * 2;
        let ip_len = get(p.offset, txd::IPLEN) as usize * 4;
        if p.cmd & txd::CMD_IIPT_MASK == txd::CMD_IIPT_IPV4_CSUM {
            if ip_len < 20 || mac_len + ip_len > frame.len() {
                return Err(Error::Violation {
                    at: String::new(),
                    rule: format!("IPv4 checksum with MACLEN {mac_len} / IPLEN {ip_len} outside the packet"),
                });
            }
            frame[mac_len + 10..mac_len + 12].fill(0);
            let c = net::internet_checksum(&frame[mac_len..mac_len + ip_len]);
            frame[mac_len + 10..mac_len + 12].copy_from_slice(&c.to_be_bytes());
        }
        let l4 = p.cmd & txd::CMD_L4T_MASK;
        if l4 != 0 {
            let l4_off = mac_len + ip_len;
            let field = match l4 {
                txd::CMD_L4T_TCP => 16,
                txd::CMD_L4T_UDP => 6,
                txd::CMD_L4T_SCTP => {
                    return Err(Error::Violation { at: "SCTP".into(), rule: "CRC offload is not modelled".into() })
                }
                _ => unreachable!("two-bit field"),
            };
            if ip_len == 0 || l4_off + field + 2 > frame.len() {
                return Err(Error::Violation {
                    at: "L4".into(),
                    rule: format!("checksum with MACLEN {mac_len} / IPLEN {ip_len} outside the packet"),
                });
            }
            // The field holds the pseudo-header sum (as DPDK's checksum prepare leaves it); the device sums the
            // L4 bytes over it.
            let c = !net::fold(net::ones_sum(&frame[l4_off..], 0));
            frame[l4_off + field..l4_off + field + 2].copy_from_slice(&c.to_be_bytes());
        }
        if p.cmd & txd::CMD_IL2TAG1 != 0 {
            let mut tag = net::ETH_P_VLAN.to_be_bytes().to_vec();
            tag.extend_from_slice(&p.l2tag1.to_be_bytes());
            frame.splice(12..12, tag);
        }
        if frame.len() < MIN_FRAME {
            frame.resize(MIN_FRAME, 0);
        }
        // The MTU is the receiver's business (its MAC counts GLPRT_ROC, docs/hw/i40e.md §19); what no 700-series
        // port can send is a frame above the largest one (docs/hw/i40e.md §15).
        if frame.len() + 4 > super::hmc::MAX_FRAME as usize {
            shared.fault(format!(
                "TX queue {q}: a {}-byte frame above the largest frame, {} bytes (dropped; docs/hw/i40e.md §15)",
                frame.len() + 4,
                super::hmc::MAX_FRAME
            ));
            return Ok(());
        }
        let port = usize::from(shared.config.port);
        if !self.link_up(shared, Instant::now()) {
            self.stats.add(stat::GLPRT_TDOLD + 8 * port, 1);
            shared.counters().tx_dropped_link_down += 1;
            return Ok(());
        }
        self.stats.count_frame(false, port, adminq::vsi_stat_index(&shared.config), frame.len(), &frame[0..6]);
        shared.counters().tx_sent += 1;
        shared.transmit(WireFrame { data: frame, error: None }, self.link.loopback == 1);
        Ok(())
    }

    /// Malicious driver detection (docs/hw/i40e.md §11): the queue stops (QENA_STAT drops while QENA_REQ stays), GL_MDET_TX
    /// latches, and the violation is recorded. Returns 1 (work done).
    fn mdd(&mut self, shared: &X710State, q: usize, why: String) -> usize {
        shared.fault(format!("MDD on TX queue {q}: {why}; the queue is disabled"));
        // Only VALID's position is in docs/hw/i40e.md §11; the other fields are left 0.
        self.set_reg(GL_MDET_TX, GL_MDET_VALID.val(1));
        let icr = self.reg(PFINT_ICR0) | PFINT_ICR0_MAL_DETECT.mask();
        self.set_reg(PFINT_ICR0, icr);
        let t = &mut self.txq[q];
        t.ctx = None;
        shared.tx_qlen[q].store(0, Ordering::Release);
        t.pending = None;
        t.ena.target = false;
        t.ena.at = Instant::now();
        1
    }
}
