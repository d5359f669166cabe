//! The model's three BARs (docs/hw/hinic3.md §2, §3): the cfg BAR's function CSRs, big-endian on the bus; the mgmt
//! BAR's PPF/MPF election; the doorbell BAR's 64-bit doorbells (docs/hw/hinic3.md §8.4, §10.1).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use drvkit::bar::RegisterSpace;

use super::aeq::Aeq;
use super::cmdq::MAX_CMDQS;
use super::port::{Sp670State, DB_PENDING};
use super::regs::*;
use crate::fault::Fault;

// ---- cfg BAR ---------------------------------------------------------------------------------------------------------

/// The cfg BAR (BAR1 of the PF): the function CSRs, every one big-endian on the bus (docs/hw/hinic3.md §0.1, §3).
#[derive(Clone)]
pub struct Sp670CfgBar {
    pub(super) shared: Arc<Sp670State>,
}

impl std::fmt::Debug for Sp670CfgBar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sp670CfgBar")
    }
}

impl Sp670CfgBar {
    fn read_logical(&self, off: usize) -> u32 {
        let c = self.shared.lock();
        let cfg = &c.config;
        let aeq = &c.aeqs[c.aeq_indir];
        match off {
            FUNC_ATTR0 => ATTR0_FUNC_IDX.val(cfg.func_id.into()) | ATTR0_P2P_IDX.val(cfg.port_id.into()),
            FUNC_ATTR1 => {
                let ready = if c.fw_ready() { ATTR1_MGMT_INIT_DONE | ATTR1_PF_INIT } else { 0 };
                ATTR1_PPF_IDX.val(cfg.func_id.into()) | ATTR1_AEQS_LOG2.val(cfg.num_aeqs.trailing_zeros()) | ready
            }
            FUNC_ATTR2 => ATTR2_CEQS.val(cfg.num_ceqs) | ATTR2_DMA_ATTR_LOG2.val(0) | ATTR2_IRQS.val(cfg.num_irqs),
            FUNC_ATTR3 => 0,
            FUNC_ATTR4 => c.attr4,
            FUNC_ATTR5 => c.attr5,
            FUNC_ATTR6 => ATTR6_PF_STATUS.val(c.pf_status) | ATTR6_MAX_QUEUES.val(cfg.max_queues.into()),
            o if (MBOX_DATA..MBOX_DATA + 64).contains(&o) => c.mbox.window[(o - MBOX_DATA) / 4],
            MBOX_CONTROL => c.mbox.control,
            MBOX_INT_OFFSET => c.mbox.int_offset,
            MBOX_RESULT_H => c.mbox.result_hi,
            MBOX_RESULT_L => c.mbox.result_lo,
            AEQ_CTRL_0 => aeq.ctrl0,
            AEQ_CTRL_1 => aeq.ctrl1,
            AEQ_CONS_IDX => aeq.ci,
            AEQ_PROD_IDX => aeq.pi,
            AEQ_INDIR_IDX => c.aeq_indir as u32,
            o if (AEQ_PAGE_HI..AEQ_PAGE_HI + 32).contains(&o) => {
                let p = aeq.pages[(o - AEQ_PAGE_HI) / 8];
                if o % 8 == 0 {
                    (p >> 32) as u32
                } else {
                    p as u32
                }
            }
            _ => 0,
        }
    }

    fn write_logical(&self, off: usize, v: u32) {
        let mut c = self.shared.lock();
        let q = c.aeq_indir;
        match off {
            FUNC_ATTR4 | FUNC_ATTR5 => {
                if v & !ATTR45_DISABLED != 0 {
                    c.fault(format!("FUNC_ATTR{} = {v:#010x}: only bit 0 is defined", 4 + (off - FUNC_ATTR4) / 4));
                } else if off == FUNC_ATTR4 {
                    c.attr4 = v;
                    self.shared.db_disabled.store(v & ATTR45_DISABLED != 0, Ordering::Release);
                } else {
                    c.attr5 = v;
                }
            }
            FUNC_ATTR6 => {
                let st = ATTR6_PF_STATUS.get(v);
                let most = u32::from(c.config.max_queues);
                if ATTR6_MAX_QUEUES.get(v) != most || v & Field::new(21, 16).mask() != 0 {
                    c.fault(format!("FUNC_ATTR6 = {v:#010x}: most queues (31:23, read-only) must be written back as {most}, bits 21:16 zero (a missing byte swap? docs/hw/hinic3.md §0.1)"));
                } else if ![PF_STATUS_INIT, PF_STATUS_ACTIVE, PF_STATUS_FLR_START, PF_STATUS_FLR_DONE].contains(&st) {
                    c.fault(format!("FUNC_ATTR6 = {v:#010x}: PF status {st:#x} is none of 0x00/0x11/0x12/0x13 (a missing byte swap? docs/hw/hinic3.md §0.1)"));
                } else {
                    c.pf_status = st;
                    if st != PF_STATUS_ACTIVE {
                        c.reported_link = false;
                        c.events.drop_due();
                    }
                }
            }
            AEQ_CI_SIMPLE_INDIR => {
                let idx = AEQ_CI_IDX.get(v) as usize;
                let ci = AEQ_CI_CI.get(v);
                // A queue being torn down (CTRL_1 = 0) gets its PROD_IDX back as the CI (docs/hw/hinic3.md §5.3).
                let ok = |a: &Aeq| if a.len() == 0 { ci == a.pi } else { ci < a.len() };
                if idx >= c.config.num_aeqs || !ok(&c.aeqs[idx]) {
                    c.fault(format!(
                        "AEQ_CI_SIMPLE_INDIR = {v:#010x}: AEQ {idx} / CI {} out of range",
                        AEQ_CI_CI.get(v)
                    ));
                } else {
                    c.aeqs[idx].ci = AEQ_CI_CI.get(v);
                    c.aeqs[idx].armed = v & AEQ_CI_ARMED != 0;
                }
            }
            FUNC_MSI_CLR_WR => {
                let idx = MSI_CLR_IDX.get(v) as usize;
                if idx >= c.msix.vectors.len() || v & Field::new(21, 5).mask() != 0 {
                    c.fault(format!(
                        "FUNC_MSI_CLR_WR = {v:#010x}: vector {idx} of {} or reserved bits",
                        c.msix.vectors.len()
                    ));
                } else {
                    c.msix.clr_wr(idx, v, std::time::Instant::now());
                    let out = std::mem::take(&mut c.msix.outbox);
                    drop(c);
                    out.into_iter().for_each(|v| self.shared.io.signal(v));
                }
            }
            o if (MBOX_DATA..MBOX_DATA + 64).contains(&o) => c.mbox.window[(o - MBOX_DATA) / 4] = v,
            MBOX_CONTROL => {
                c.mbox.control = v;
                if v & MBOX_CTRL_TX_STATUS != 0 {
                    c.mbox.pending = true;
                    drop(c);
                    self.shared.kick();
                }
            }
            MBOX_INT_OFFSET => c.mbox.int_offset = v,
            MBOX_RESULT_H => c.mbox.result_hi = v,
            MBOX_RESULT_L => c.mbox.result_lo = v,
            AEQ_INDIR_IDX => {
                if v as usize >= c.config.num_aeqs {
                    c.fault(format!("AEQ_INDIR_IDX = {v:#x}: the function has {} AEQs", c.config.num_aeqs));
                } else {
                    c.aeq_indir = v as usize;
                }
            }
            AEQ_CTRL_0 => {
                if v & AEQ_CTRL0_RESERVED != 0 {
                    c.fault(format!(
                        "AEQ_CTRL_0 = {v:#010x}: reserved bits {:#x} set (a missing byte swap?)",
                        v & AEQ_CTRL0_RESERVED
                    ));
                } else {
                    c.aeqs[q].ctrl0 = v;
                }
            }
            AEQ_CTRL_1 => match Aeq::check_ctrl1(v) {
                Ok(()) => c.aeqs[q].ctrl1 = v,
                Err(e) => c.fault(e),
            },
            AEQ_PROD_IDX => {
                if v != 0 {
                    c.fault(format!("AEQ_PROD_IDX = {v:#x}: only 0 is written, at init (docs/hw/hinic3.md §5.3)"));
                }
                c.aeqs[q].pi = 0;
                c.aeqs[q].pass_odd = false;
                c.aeqs[q].ci = 0;
            }
            o if (AEQ_PAGE_HI..AEQ_PAGE_HI + 32).contains(&o) => {
                let p = &mut c.aeqs[q].pages[(o - AEQ_PAGE_HI) / 8];
                *p = if o % 8 == 0 {
                    (*p & 0xFFFF_FFFF) | u64::from(v) << 32
                } else {
                    (*p & !0xFFFF_FFFF) | u64::from(v)
                };
            }
            FUNC_ATTR0..=FUNC_ATTR3 | AEQ_CONS_IDX => c.fault(format!("write of {v:#010x} to read-only CSR {off:#x}")),
            _ => {
                drop(c);
                self.shared.io.faults.record(Fault::Register {
                    offset: off,
                    what: format!("write of {v:#010x} to a CSR the model does not define"),
                });
            }
        }
    }
}

impl RegisterSpace for Sp670CfgBar {
    fn read32(&self, offset: usize) -> u32 {
        if !offset.is_multiple_of(4) || offset + 4 > CFG_BAR_LEN {
            self.shared
                .io
                .faults
                .record(Fault::Register { offset, what: "unaligned or out-of-range cfg BAR read".into() });
            return u32::MAX;
        }
        // Big-endian on the bus: a little-endian CPU's plain load sees the bytes swapped.
        self.read_logical(offset).swap_bytes()
    }
    fn write32(&self, offset: usize, value: u32) {
        if !offset.is_multiple_of(4) || offset + 4 > CFG_BAR_LEN {
            self.shared
                .io
                .faults
                .record(Fault::Register { offset, what: "unaligned or out-of-range cfg BAR write".into() });
            return;
        }
        self.write_logical(offset, value.swap_bytes());
    }
    fn len(&self) -> usize {
        CFG_BAR_LEN
    }
}

// ---- mgmt BAR ----------------------------------------------------------------------------------------------------------

/// The mgmt BAR (BAR3): the PPF and MPF election registers, big-endian (docs/hw/hinic3.md §3.1).
#[derive(Clone)]
pub struct Sp670MgmtBar {
    pub(super) shared: Arc<Sp670State>,
}

impl std::fmt::Debug for Sp670MgmtBar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sp670MgmtBar")
    }
}

impl RegisterSpace for Sp670MgmtBar {
    fn read32(&self, offset: usize) -> u32 {
        let c = self.shared.lock();
        let v = match offset {
            PPF_ELECTION => c.ppf,
            MPF_ELECTION => c.mpf,
            _ => 0,
        };
        v.swap_bytes()
    }
    fn write32(&self, offset: usize, value: u32) {
        let v = value.swap_bytes();
        let mut c = self.shared.lock();
        let own = u32::from(c.config.func_id);
        match offset {
            // The model's PF is alone on its chip: its index always wins the election.
            PPF_ELECTION | MPF_ELECTION => {
                let field = if offset == PPF_ELECTION { Field::new(5, 0) } else { Field::new(4, 0) };
                if field.get(v) != own & field.mask() || v & !field.mask() != 0 {
                    c.fault(format!(
                        "mgmt BAR {offset:#x} = {v:#010x}: an election writes only this function's index {own}"
                    ));
                } else if offset == PPF_ELECTION {
                    c.ppf = v;
                } else {
                    c.mpf = v;
                }
            }
            _ => self
                .shared
                .io
                .faults
                .record(Fault::Register { offset, what: format!("mgmt BAR write of {value:#010x}") }),
        }
    }
    fn len(&self) -> usize {
        MGMT_BAR_LEN
    }
}

// ---- doorbell BAR ------------------------------------------------------------------------------------------------------

/// The doorbell BAR (BAR4): 4 KiB pages; a doorbell is one 64-bit little-endian store at `page + (PI & 0xFF) × 8`
/// (docs/hw/hinic3.md §8.4, §10.1). Use [`Sp670DbBar::write64`]; through `RegisterSpace` the low dword is latched
/// and the write of the high dword (offset + 4) rings.
#[derive(Clone)]
pub struct Sp670DbBar {
    pub(super) shared: Arc<Sp670State>,
}

impl std::fmt::Debug for Sp670DbBar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sp670DbBar")
    }
}

impl Sp670DbBar {
    /// One doorbell: the 64-bit store at `offset` (8-byte aligned).
    pub fn write64(&self, offset: usize, value: u64) {
        let s = &self.shared;
        if !offset.is_multiple_of(8) || offset + 8 > DB_BAR_LEN {
            s.io.faults.record(Fault::Register { offset, what: "unaligned or out-of-range doorbell".into() });
            return;
        }
        if s.db_disabled.load(Ordering::Acquire) {
            return; // doorbells off (FUNC_ATTR4): the write is lost, as on the device
        }
        let (low, high) = (value as u32, (value >> 32) as u32);
        let pi = DB_PI_HI.get(high) << 8 | ((offset % DB_PAGE) / 8) as u32;
        if high & !DB_PI_HI.mask() != 0 {
            return s.fault(format!("doorbell {value:#018x}: high dword bits above 7:0 set"));
        }
        match DB_SRC_TYPE.get(low) {
            0 => {
                let q = DB_COS.get(low) as usize;
                if low & DB_CFLAG == 0 || q >= MAX_CMDQS || low & !(DB_CFLAG | DB_COS.mask()) != 0 {
                    return s.fault(format!(
                        "cmdq doorbell {value:#018x}: queue type bit 23 must be 1 and the cmdq type below {MAX_CMDQS}"
                    ));
                }
                s.cmdq_db[q].store(pi | DB_PENDING, Ordering::Release);
            }
            1 => {
                let q = DB_QID.get(low) as usize;
                if q >= s.sq_db.len() || low & !(DB_QID.mask() | DB_CFLAG | DB_COS.mask() | DB_SRC_TYPE.mask()) != 0 {
                    return s.fault(format!(
                        "data-path doorbell {value:#018x}: queue {q} of {} or reserved bits",
                        s.sq_db.len()
                    ));
                }
                let db = if low & DB_CFLAG != 0 { &s.rq_db[q] } else { &s.sq_db[q] };
                db.store(pi | DB_PENDING, Ordering::Release);
            }
            t => return s.fault(format!("doorbell {value:#018x}: source type {t} (0 cmdq, 1 data path)")),
        }
        s.kick();
    }
}

impl RegisterSpace for Sp670DbBar {
    fn read32(&self, _offset: usize) -> u32 {
        0
    }
    fn write32(&self, offset: usize, value: u32) {
        let slot = offset / 8;
        let mut low = self.shared.db_low.lock().unwrap_or_else(|e| e.into_inner());
        if slot >= low.len() {
            drop(low);
            return self.shared.io.faults.record(Fault::Register { offset, what: "doorbell outside the BAR".into() });
        }
        if offset.is_multiple_of(8) {
            low[slot] = Some(value);
        } else if let Some(l) = low[slot].take() {
            drop(low);
            self.write64(offset - 4, u64::from(value) << 32 | u64::from(l));
        } else {
            drop(low);
            self.shared.fault(format!("doorbell high dword at {offset:#x} without its low dword first"));
        }
    }
    fn len(&self) -> usize {
        DB_BAR_LEN
    }
}

// ---- one type for the three BARs ----------------------------------------------------------------------------------------

/// Any of the three BARs as one [`RegisterSpace`] type, for a driver that takes its BARs as one type (a VFIO device's
/// BARs are all `VfioBar`). [`Sp670Port::bars`](super::Sp670Port::bars) hands out the three.
#[derive(Debug, Clone)]
pub enum Sp670Bar {
    /// BAR1, the function CSRs.
    Cfg(Sp670CfgBar),
    /// BAR3, the PPF/MPF election.
    Mgmt(Sp670MgmtBar),
    /// BAR4, the doorbells.
    Db(Sp670DbBar),
}

impl RegisterSpace for Sp670Bar {
    fn read32(&self, offset: usize) -> u32 {
        match self {
            Sp670Bar::Cfg(b) => b.read32(offset),
            Sp670Bar::Mgmt(b) => b.read32(offset),
            Sp670Bar::Db(b) => b.read32(offset),
        }
    }
    fn write32(&self, offset: usize, value: u32) {
        match self {
            Sp670Bar::Cfg(b) => b.write32(offset, value),
            Sp670Bar::Mgmt(b) => b.write32(offset, value),
            Sp670Bar::Db(b) => b.write32(offset, value),
        }
    }
    fn write64(&self, offset: usize, value: u64) {
        match self {
            Sp670Bar::Db(b) => b.write64(offset, value),
            _ => {
                self.write32(offset, value as u32);
                self.write32(offset + 4, (value >> 32) as u32);
            }
        }
    }
    fn len(&self) -> usize {
        match self {
            Sp670Bar::Cfg(b) => b.len(),
            Sp670Bar::Mgmt(b) => b.len(),
            Sp670Bar::Db(b) => b.len(),
        }
    }
}
