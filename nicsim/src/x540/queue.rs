//! The X540/82599 model's queues: per-queue RX and TX state, the queue registers (RDH/TDH, RXDCTL/TXDCTL) and the
//! checks a queue enable makes (docs/hw/ixgbe.md §6).

use crate::Error;
use std::time::Instant;

use super::regs::*;
use super::{Core, X540State};
use crate::fault::Fault;

/// Per-queue RX state (docs/hw/ixgbe.md §6.2).
#[derive(Debug, Clone, Default)]
pub(super) struct RxQ {
    pub(super) enabled: bool,
    pub(super) enabled_at: Option<Instant>,
    pub(super) head: u32,
    pub(super) base: u64,
    pub(super) n: u32,
}

/// A TX context slot (docs/hw/ixgbe.md §7.4).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct TxCtx {
    pub(super) vlan_macip_lens: u32,
    pub(super) type_tucmd_mlhl: u32,
    #[allow(dead_code)] // MSS and L4LEN: only TSO needs them, which is not modelled
    pub(super) mss_l4len_idx: u32,
}

/// Per-queue TX state (docs/hw/ixgbe.md §6.3).
#[derive(Debug, Clone, Default)]
pub(super) struct TxQ {
    pub(super) enabled: bool,
    pub(super) enabled_at: Option<Instant>,
    pub(super) head: u32,
    pub(super) base: u64,
    pub(super) n: u32,
    pub(super) ctx: [TxCtx; 2],
    /// A frame being gathered across descriptors: bytes, first descriptor's cmd_type_len and olinfo_status.
    pub(super) pending: Option<(Vec<u8>, u32, u32)>,
    pub(super) hung: bool,
}

impl Core {
    pub(super) fn read_queue(&self, rx: bool, q: usize, offset: usize, now: Instant) -> u32 {
        let (enabled, at, head) = if rx {
            (self.rxq[q].enabled, self.rxq[q].enabled_at, self.rxq[q].head)
        } else {
            (self.txq[q].enabled, self.txq[q].enabled_at, self.txq[q].head)
        };
        if offset == rdh(q) && rx || offset == tdh(q) && !rx {
            return head;
        }
        // RXDCTL / TXDCTL: ENABLE reads 1 once the queue is running.
        let v = self.reg(offset) & !QCTL_ENABLE;
        if enabled && at.is_none_or(|t| now >= t) {
            v | QCTL_ENABLE
        } else {
            v
        }
    }

    pub(super) fn write_queue(
        &mut self,
        shared: &X540State,
        rx: bool,
        q: usize,
        offset: usize,
        value: u32,
        now: Instant,
    ) {
        let delay = shared.config.queue_enable_delay;
        if rx && offset == rdh(q) {
            if self.rxq[q].enabled && value >= self.rxq[q].n {
                shared.io.faults.record(Fault::Protocol { what: format!("RDH({q}) = {value} past the ring") });
            }
            self.rxq[q].head = value;
            return;
        }
        if !rx && offset == tdh(q) {
            if self.txq[q].enabled && value >= self.txq[q].n {
                shared.io.faults.record(Fault::Protocol { what: format!("TDH({q}) = {value} past the ring") });
            }
            self.txq[q].head = value;
            return;
        }
        let was = self.reg(offset) & QCTL_ENABLE != 0;
        let on = value & QCTL_ENABLE != 0;
        if value & QCTL_SWFLSH != 0 {
            self.saw_queue_flush(rx, q, now);
        }
        self.set_reg(offset, value & !QCTL_SWFLSH);
        if was == on {
            return;
        }
        if rx {
            if on {
                let (base, len) = ((self.reg(rdbah(q)) as u64) << 32 | self.reg(rdbal(q)) as u64, self.reg(rdlen(q)));
                if let Err(why) = check_ring(base, len) {
                    shared.io.faults.record(Fault::Protocol { what: format!("RXDCTL({q}).ENABLE with {why}") });
                    self.set_reg(offset, value & !QCTL_ENABLE);
                    return;
                }
                let srrctl = self.reg(srrctl(q));
                if (srrctl >> SRRCTL_DESCTYPE_SHIFT) & 7 != SRRCTL_DESCTYPE_ADV_ONEBUF
                    || srrctl & SRRCTL_BSIZEPKT_MASK == 0
                {
                    shared.io.faults.record(Fault::Protocol {
                        what: format!(
                            "RXDCTL({q}).ENABLE with SRRCTL({q}) = {srrctl:#x}: the model needs DESCTYPE advanced one-buffer (docs/hw/ixgbe.md §6.2) and BSIZEPACKET > 0"
                        ),
                    });
                }
                let head = self.rxq[q].head.min(len / 16 - 1);
                self.rxq[q] = RxQ { enabled: true, enabled_at: Some(now + delay), head, base, n: len / 16 };
            } else {
                self.rxq[q].enabled = false;
            }
        } else if on {
            let (base, len) = ((self.reg(tdbah(q)) as u64) << 32 | self.reg(tdbal(q)) as u64, self.reg(tdlen(q)));
            if let Err(why) = check_ring(base, len) {
                shared.io.faults.record(Fault::Protocol { what: format!("TXDCTL({q}).ENABLE with {why}") });
                self.set_reg(offset, value & !QCTL_ENABLE);
                return;
            }
            if self.reg(DMATXCTL) & DMATXCTL_TE == 0 {
                shared.io.faults.record(Fault::Protocol {
                    what: format!(
                        "TXDCTL({q}).ENABLE before DMATXCTL.TE (TE must be set first, docs/hw/ixgbe.md §3.6 step 32)"
                    ),
                });
            }
            let head = self.txq[q].head.min(len / 16 - 1);
            self.txq[q] = TxQ {
                enabled: true,
                enabled_at: Some(now + delay),
                head,
                base,
                n: len / 16,
                hung: self.hang_all,
                ..TxQ::default()
            };
            if !self.active_tx.contains(&q) {
                self.active_tx.push(q);
            }
        } else {
            self.txq[q].enabled = false;
            self.txq[q].pending = None;
            self.active_tx.retain(|&x| x != q);
        }
    }
}

fn check_ring(base: u64, len: u32) -> Result<(), Error> {
    if len == 0 || !len.is_multiple_of(128) {
        return Err(Error::Violation {
            at: String::new(),
            rule: format!("ring length {len} bytes (must be a non-zero multiple of 128, docs/hw/ixgbe.md §6.2)"),
        });
    }
    if !base.is_multiple_of(16) {
        return Err(Error::Violation {
            at: String::new(),
            rule: format!("ring base {base:#x} not 16-byte aligned (docs/hw/ixgbe.md §14)"),
        });
    }
    Ok(())
}

/// Which queue register (RDH/RXDCTL or TDH/TXDCTL) an offset is, if any.
pub(super) fn queue_reg(offset: usize) -> Option<(bool, usize)> {
    let (rx, q) = match offset {
        0x01000..0x02000 => (true, (offset - 0x01000) / 0x40),
        0x0D000..0x0E000 => (true, 64 + (offset - 0x0D000) / 0x40),
        0x06000..0x08000 => (false, (offset - 0x06000) / 0x40),
        _ => return None,
    };
    matches!(offset & 0x3F, 0x10 | 0x28).then_some((rx, q))
}
