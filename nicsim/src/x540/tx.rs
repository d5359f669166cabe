//! Transmit: descriptor fetch from TDH to TDT (docs/hw/ixgbe.md §7.3, §7.4, §8.1), data gathering across descriptors, checksum
//! offload from context descriptors, DD write-back on RS, head write-back (docs/hw/ixgbe.md §6.4), statistics (§13).

use crate::Error;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::regs::*;
use super::rx::size_bucket;
use super::{Core, RxError, TxCtx, WireFrame, X540State};
use crate::fault::Fault;
use crate::net;

impl Core {
    pub(super) fn process_tx(&mut self, shared: &Arc<X540State>) -> usize {
        if self.reg(DMATXCTL) & DMATXCTL_TE == 0 || self.active_tx.is_empty() {
            return 0;
        }
        let link_up = self.link_up(shared, Instant::now());
        let mut work = 0;
        for i in 0..self.active_tx.len() {
            let q = self.active_tx[i];
            work += self.tx_queue(shared, q, link_up);
        }
        work
    }

    fn tx_queue(&mut self, shared: &Arc<X540State>, qi: usize, link_up: bool) -> usize {
        let q = &self.txq[qi];
        if !q.enabled || q.hung || q.enabled_at.is_some_and(|t| Instant::now() < t) {
            return 0;
        }
        let (base, n) = (q.base, q.n);
        let tail = shared.tdt[qi].load(Ordering::Acquire);
        if tail >= n {
            shared
                .io
                .faults
                .record(Fault::Protocol { what: format!("TDT({qi}) = {tail} past the ring of {n} descriptors") });
            self.txq[qi].hung = true;
            return 0;
        }
        let mut work = 0;
        while self.txq[qi].head != tail {
            let head = self.txq[qi].head;
            let addr = base + u64::from(head) * 16;
            let what = || format!("TX descriptor {head} of queue {qi} at {addr:#x}");
            let Ok([lo, hi]) = shared.io.dma.read_desc(addr, &what) else {
                self.txq[qi].hung = true; // a DMA error stops the queue
                break;
            };
            self.txq[qi].head = (head + 1) % n;
            work += 1;
            let cmd = hi as u32;
            let olinfo = (hi >> 32) as u32;
            if cmd & TXD_CMD_DEXT == 0 {
                shared.io.faults.record(Fault::Protocol {
                    what: format!("legacy TX descriptor (DEXT clear) at {head} of queue {qi}: DEXT is required (docs/hw/ixgbe.md §7.3)"),
                });
                continue;
            }
            match (cmd >> TXD_DTYP_SHIFT) & 0xF {
                TXD_DTYP_CTXT => {
                    let mss_l4len_idx = olinfo;
                    let idx = ((mss_l4len_idx >> 4) & 7) as usize;
                    if idx > 1 {
                        shared.io.faults.record(Fault::Protocol {
                            what: format!(
                                "TX context descriptor IDX {idx} on queue {qi}: only slots 0 and 1 exist (docs/hw/ixgbe.md §7.4)"
                            ),
                        });
                        continue;
                    }
                    self.txq[qi].ctx[idx] = TxCtx { vlan_macip_lens: lo as u32, type_tucmd_mlhl: cmd, mss_l4len_idx };
                }
                TXD_DTYP_DATA => {
                    let len = (cmd & 0xFFFF) as usize;
                    if len == 0 {
                        shared.io.faults.record(Fault::Protocol {
                            what: format!("TX data descriptor {head} of queue {qi} with DTALEN 0"),
                        });
                    }
                    let mut buf = vec![0u8; len];
                    let what_data = || format!("TX data buffer of descriptor {head}, queue {qi}");
                    if shared.io.dma.read(lo, &mut buf, &what_data).is_err() {
                        self.txq[qi].pending = None;
                        self.txq[qi].hung = true;
                        break;
                    }
                    let pending = self.txq[qi].pending.get_or_insert_with(|| (Vec::new(), cmd, olinfo));
                    pending.0.extend_from_slice(&buf);
                    if cmd & TXD_CMD_EOP != 0 {
                        let (frame, first_cmd, first_olinfo) = self.txq[qi].pending.take().expect("pending");
                        self.finish_frame(shared, qi, frame, first_cmd, first_olinfo, link_up);
                    }
                }
                other => shared.io.faults.record(Fault::Protocol {
                    what: format!("TX descriptor {head} of queue {qi} with DTYP {other:#x} (data 0x3, context 0x2)"),
                }),
            }
            if cmd & TXD_CMD_RS != 0 {
                let _ = shared.io.dma.write_u32(addr + 12, olinfo | TXD_STAT_DD, &what);
                self.queue_cause(shared, false, qi);
            }
        }
        let wbal = self.reg(tdwbal(qi));
        if work > 0 && wbal & 1 != 0 {
            let wb = u64::from(self.reg(tdwbah(qi))) << 32 | u64::from(wbal & !3);
            let head = self.txq[qi].head;
            let _ = shared.io.dma.write_u32(wb, head, &|| format!("TX head write-back of queue {qi}"));
        }
        work
    }

    fn finish_frame(
        &mut self,
        shared: &Arc<X540State>,
        qi: usize,
        mut frame: Vec<u8>,
        cmd: u32,
        olinfo: u32,
        link_up: bool,
    ) {
        let paylen = (olinfo >> TXD_PAYLEN_SHIFT) as usize;
        if cmd & TXD_CMD_TSE != 0 {
            shared.io.faults.record(Fault::Protocol {
                what: format!("TSO (DCMD.TSE) on queue {qi}: not modelled; frame sent unsegmented"),
            });
        } else if paylen != frame.len() {
            shared.io.faults.record(Fault::Protocol {
                what: format!(
                    "TX frame of {} bytes on queue {qi} with PAYLEN {paylen} (must be the total length, docs/hw/ixgbe.md §7.3)",
                    frame.len()
                ),
            });
        }
        let ctx = self.txq[qi].ctx[((olinfo >> TXD_IDX_SHIFT) & 1) as usize];
        if cmd & TXD_CMD_VLE != 0 && frame.len() >= 12 {
            let tci = (ctx.vlan_macip_lens >> 16) as u16;
            let mut tag = [0u8; 4];
            tag[0..2].copy_from_slice(&net::ETH_P_VLAN.to_be_bytes());
            tag[2..4].copy_from_slice(&tci.to_be_bytes());
            frame.splice(12..12, tag);
        }
        if olinfo & (TXD_POPTS_IXSM | TXD_POPTS_TXSM) != 0 {
            if let Err(why) = checksum_offload(&mut frame, &ctx, olinfo) {
                shared.io.faults.record(Fault::Protocol { what: format!("TX checksum offload on queue {qi}: {why}") });
            }
        }
        let mut error = None;
        if cmd & TXD_CMD_IFCS == 0 {
            // Software supplied the FCS: the last 4 bytes of the buffer go out as the CRC.
            let at = frame.len().saturating_sub(4);
            let fcs = frame.split_off(at);
            if fcs.len() != 4 || net::crc32(&frame).to_le_bytes()[..] != fcs[..] {
                error = Some(RxError::Crc);
            }
        }
        if self.reg(HLREG0) & HLREG0_TXPADEN != 0 && frame.len() < 60 {
            frame.resize(60, 0);
        }
        if !link_up {
            shared.counters().tx_dropped_link_down += 1;
            return;
        }
        let len_crc = frame.len() as u64 + 4;
        self.count(GPTC, 1);
        self.count(GOTCL, len_crc);
        self.count(TPT, 1);
        self.count(PTC64 + 4 * size_bucket(len_crc as usize), 1);
        if frame.len() >= 6 && frame[0..6].iter().all(|&b| b == 0xFF) {
            self.count(BPTC, 1);
        } else if frame.first().is_some_and(|b| b & 1 != 0) {
            self.count(MPTC, 1);
        }
        self.count(TXDGPC, 1);
        self.count(TXDGBCL, len_crc);
        let set = self.stat_set(tqsm, qi);
        self.count(qptc(set), 1);
        self.count(qbtc_l(set), len_crc);
        shared.counters().tx_sent += 1;
        let loopback = self.reg(HLREG0) & HLREG0_LPBK != 0;
        shared.transmit(WireFrame { data: frame, error }, loopback);
    }
}

/// IPv4 header checksum (IXSM) and TCP/UDP checksum (TXSM) as the hardware inserts them (docs/hw/ixgbe.md §7.3, §7.4): the
/// hardware sums the bytes as they are — for L4 starting from whatever the checksum field holds (software seeds
/// it with the pseudo-header sum, as DPDK's `rte_net_intel_cksum_prepare` and Linux do), for the IPv4 header with
/// the field as given (software zeroes it) — and stores the complement.
fn checksum_offload(frame: &mut [u8], ctx: &TxCtx, olinfo: u32) -> Result<(), Error> {
    let maclen = ((ctx.vlan_macip_lens >> 9) & 0x7F) as usize;
    let iplen = (ctx.vlan_macip_lens & 0x1FF) as usize;
    if maclen == 0 || iplen == 0 || maclen + iplen > frame.len() {
        return Err(Error::Violation {
            at: String::new(),
            rule: format!("context MACLEN {maclen} / IPLEN {iplen} do not fit a {}-byte frame", frame.len()),
        });
    }
    if olinfo & TXD_POPTS_IXSM != 0 {
        if ctx.type_tucmd_mlhl & TXCTX_TUCMD_IPV4 == 0 {
            return Err(Error::Violation { at: "TX context".into(), rule: "IXSM with TUCMD.IPV4 clear".into() });
        }
        let c = net::internet_checksum(&frame[maclen..maclen + iplen]);
        frame[maclen + 10..maclen + 12].copy_from_slice(&c.to_be_bytes());
    }
    if olinfo & TXD_POPTS_TXSM != 0 {
        let l4 = maclen + iplen;
        let field = match (ctx.type_tucmd_mlhl >> TXCTX_L4T_SHIFT) & 3 {
            0 => 6,
            1 => 16,
            2 => return Err(Error::Violation { at: "TXSM".into(), rule: "SCTP CRC offload is not modelled".into() }),
            _ => return Err(Error::Violation { at: "TXSM".into(), rule: "L4T = 3 (reserved)".into() }),
        };
        if l4 + field + 2 > frame.len() {
            return Err(Error::Violation { at: "TXSM".into(), rule: "L4 header beyond the frame".into() });
        }
        let mut c = !net::fold(net::ones_sum(&frame[l4..], 0));
        if field == 6 && c == 0 {
            c = 0xFFFF;
        }
        frame[l4 + field..l4 + field + 2].copy_from_slice(&c.to_be_bytes());
    }
    Ok(())
}
