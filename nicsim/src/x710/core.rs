//! Register semantics of one PF: reads and writes, PF reset, link state, the HMC segment commands and the
//! queue enable handshakes of docs/hw/i40e.md §9.4, with the queue contexts read through the HMC.

use crate::Error;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::hmc;
use super::regs::*;
use super::stats::Stats;
use super::{
    adminq, opcode, AdminQ, Core, Enable, Inbound, Link, MacFilter, RxQ, SdTable, TxQ, Vsi, X710Config, X710Part,
    X710State,
};

impl Enable {
    pub(super) fn new() -> Self {
        Enable { req: false, target: false, at: Instant::now() }
    }

    pub(super) fn stat(&self, now: Instant) -> bool {
        if now >= self.at {
            self.target
        } else {
            !self.target
        }
    }

    pub(super) fn bits(&self, now: Instant) -> u32 {
        QENA_REQ.val(self.req.into()) | QENA_STAT.val(self.stat(now).into())
    }
}

impl Vsi {
    pub(super) fn new(config: &X710Config) -> Vsi {
        let mut props = [0u8; 128];
        // Bytes 12: port_vlan_flags MODE_ALL | EMOD nothing, as firmware leaves an unconfigured VSI.
        props[12] = 0x1B;
        Vsi {
            props,
            queue_base: 0,
            queue_count: 0,
            filters: vec![MacFilter { mac: config.mac, vlan: None }],
            promisc: 0,
            strip_vlan: false,
            vlan_mode: 3,
        }
    }
}

impl Core {
    pub(super) fn new(config: &X710Config) -> Core {
        let now = Instant::now();
        let n = usize::from(config.num_queues);
        let mut core = Core {
            regs: HashMap::new(),
            stats: Stats::default(),
            reset_until: now,
            fw_ready_at: now + config.fw_ready_delay,
            aq: AdminQ::default(),
            sd: SdTable::default(),
            txq: vec![
                TxQ { ena: Enable::new(), ctx: None, head: 0, pending: None, hung: false, qdis_cleared: false };
                n
            ],
            rxq: vec![RxQ { ena: Enable::new(), ctx: None, head: 0 }; n],
            vsi: Vsi::new(config),
            link: Link {
                enabled: config.link_enabled,
                cable: true,
                down_until: None,
                last_up: false,
                lse: false,
                event_mask: 0,
                max_frame: 9728,
                crc_en: true,
                loopback: 0,
                pause: config.nvm_pause & super::PHY_PAUSE_MASK,
                phy_config: None,
            },
            rx_blocked: None,
            hang_all: false,
            tx_suspended: false,
            reset_delay: config.reset_delay,
            sr: super::nvm::ShadowRam::new(),
            intr: super::intr::Intr::new(config.msix_vectors.into()),
        };
        core.power_on_registers(config);
        core
    }

    pub(super) fn power_on_registers(&mut self, c: &X710Config) {
        let first = u32::from(c.first_queue);
        let last = first + u32::from(c.num_queues) - 1;
        let fixed = [
            (PFGEN_PORTNUM, PFGEN_PORTNUM_PORT_NUM.val(c.port.into())),
            (PF_FUNC_RID, PF_FUNC_RID_FUNCTION.val(c.pf_id.into())),
            (PFLAN_QALLOC, PFLAN_QALLOC_FIRSTQ.val(first) | PFLAN_QALLOC_LASTQ.val(last) | PFLAN_QALLOC_VALID.val(1)),
            // MSI_X_VF_N: the drivers' shared `i40e_clear_hw` loops to MSI_X_VF_N - 2 in unsigned arithmetic
            // (docs/hw/i40e.md §4.3), so a part reports at least 2; 0 sent DPDK's PMD through the whole BAR.
            (GLPCI_CNF2, GLPCI_CNF2_MSI_X_PF_N.val(c.msix_vectors.into()) | GLPCI_CNF2_MSI_X_VF_N.val(2)),
            (GLHMC_LANTXOBJSZ, 7),
            (GLHMC_LANRXOBJSZ, 5),
            (GLHMC_LANQMAX, GLHMC_CNT.val(c.num_queues.into())),
            // docs/hw/i40e.md §18.3: room for the smallest FCoE tables (1K filters + 512 contexts) a driver validates.
            (GLHMC_FCOEFMAX, GLHMC_FCOEFMAX_PMFCOEFMAX.val(0x1000)),
            (glhmc_sdpart(c.pf_id.into()), GLHMC_SDPART_PMSDBASE.val(0) | GLHMC_SDPART_PMSDSIZE.val(64)),
            (GLQF_CTL, GLQF_CTL_HTOEP.val(1)),
            (PRTMAC_MACC, PRTMAC_MACC_25G.val((c.part == X710Part::Xxv710Sfp28).into())),
        ];
        for (off, v) in fixed {
            self.regs.insert(off, v);
        }
    }

    pub(super) fn reg(&self, offset: usize) -> u32 {
        self.regs.get(&offset).copied().unwrap_or(0)
    }

    pub(super) fn set_reg(&mut self, offset: usize, value: u32) {
        self.regs.insert(offset, value);
    }

    pub(super) fn in_reset(&self, now: Instant) -> bool {
        now < self.reset_until
    }

    /// PF reset (docs/hw/i40e.md §4.1, §4.2): what the PFR domain holds goes; the firmware also resets the PF's VSI and filters.
    /// CORER registers (QTX_CTL, QRX_TAIL, GLHMC_LAN*, RSS, statistics) and the EMPR admin-queue registers stay.
    pub(super) fn pf_reset(&mut self, shared: &X710State) {
        let now = Instant::now();
        self.reset_until = now + self.reset_delay;
        for q in self.txq.iter_mut() {
            *q = TxQ { ena: Enable::new(), ctx: None, head: 0, pending: None, hung: false, qdis_cleared: false };
        }
        for q in self.rxq.iter_mut() {
            *q = RxQ { ena: Enable::new(), ctx: None, head: 0 };
        }
        for t in shared.tx_tail.iter().chain(shared.tx_qlen.iter()).chain(shared.rx_qlen.iter()) {
            t.store(0, Ordering::Relaxed);
        }
        self.sd = SdTable::default();
        for off in [PFHMC_SDCMD, PFHMC_SDDATALOW, PFHMC_SDDATAHIGH, PFHMC_PDINV, PFINT_DYN_CTL0, PFINT_LNKLST0] {
            self.regs.remove(&off);
        }
        self.regs.retain(|&off, _| {
            !(qtx_ena(0)..qtx_ena(MAX_QUEUES)).contains(&off)
                && !(qrx_ena(0)..qrx_ena(MAX_QUEUES)).contains(&off)
                && !(pfint_lnklstn(0)..pfint_lnklstn(512)).contains(&off)
                && !(pfint_dyn_ctln(0)..pfint_dyn_ctln(512)).contains(&off)
                && !(pfint_itrn(0, 0)..pfint_itrn(3, 0)).contains(&off)
        });
        self.vsi = Vsi::new(&shared.config);
        self.link.lse = false;
        self.link.event_mask = 0;
        self.rx_blocked = None;
        self.intr.reset();
        let mut inbound = shared.inbound.lock().unwrap_or_else(|e| e.into_inner());
        let lost = inbound.frames.len();
        *inbound = Inbound::default();
        drop(inbound);
        shared.counters().rx_disabled += lost as u64;
    }

    pub(super) fn link_up(&self, shared: &X710State, now: Instant) -> bool {
        let own = self.link.cable && self.link.enabled && self.link.down_until.is_none_or(|t| now >= t);
        own && shared.peer().is_none_or(|p| p.link_active.load(Ordering::Relaxed))
    }

    /// Re-evaluates the link and posts a link status event on the ARQ when it changed (docs/hw/i40e.md §5.5).
    pub(super) fn update_link(&mut self, shared: &X710State, now: Instant) {
        shared.link_active.store(self.link.cable && self.link.enabled, Ordering::Relaxed);
        let up = self.link_up(shared, now);
        if up == self.link.last_up {
            return;
        }
        self.link.last_up = up;
        self.raise_icr0(shared, PFINT_ICR0_LINK_STAT_CHANGE);
        // Mask bit 0x0002 suppresses link up/down events (docs/hw/i40e.md §7.6).
        if self.link.lse && self.link.event_mask & adminq::PHY_EVENT_LINK_UPDOWN == 0 {
            let params = self.link_status_params(shared, up);
            self.post_event(shared, opcode::GET_LINK_STATUS, params, &[]);
        }
    }

    pub(super) fn read(&mut self, shared: &X710State, offset: usize) -> u32 {
        let now = Instant::now();
        if let Some(v) = self.stats.read(offset) {
            return v;
        }
        match offset {
            PFGEN_CTRL => PFGEN_CTRL_PFSWR.val(self.in_reset(now).into()),
            GLNVM_ULD => {
                let done = u32::from(now >= self.fw_ready_at);
                GLNVM_ULD_CONF_CORE_DONE.val(done) | GLNVM_ULD_CONF_GLOBAL_DONE.val(done)
            }
            GLGEN_RSTAT | GL_FWSTS => 0,
            // A programmed NVM: normal mode, not blank programming (docs/hw/i40e.md §18).
            GLNVM_FLA => GLNVM_FLA_LOCKED.val(1),
            GLNVM_GENS | GLNVM_SRCTL | GLNVM_SRDATA => self.nvm_read(offset),
            PRTMAC_LINKSTA => {
                self.update_link(shared, now);
                if self.link_up(shared, now) {
                    PRTMAC_LINKSTA_UP_BITS | PRTMAC_LINKSTA_SPEED.val(shared.config.part.linksta_speed())
                } else {
                    0
                }
            }
            PFINT_ICR0 => self.regs.remove(&PFINT_ICR0).unwrap_or(0),
            PF_ATQH | PF_ATQT | PF_ATQLEN | PF_ARQH | PF_ARQT | PF_ARQLEN | PF_ATQBAL | PF_ATQBAH | PF_ARQBAL
            | PF_ARQBAH => self.aq.read(offset),
            _ => {
                if let Some((q, kind)) = queue_reg(offset) {
                    if let Some(v) = self.read_queue(shared, q, kind, now) {
                        return v;
                    }
                }
                self.reg(offset)
            }
        }
    }

    fn read_queue(&self, shared: &X710State, q: usize, kind: QReg, now: Instant) -> Option<u32> {
        if q >= self.txq.len() {
            return None;
        }
        Some(match kind {
            QReg::TxEna => self.txq[q].ena.bits(now),
            QReg::RxEna => self.rxq[q].ena.bits(now),
            QReg::TxHead => {
                if self.txq[q].ctx.is_some() {
                    QTX_HEAD_HEAD.val(self.txq[q].head)
                } else {
                    self.reg(qtx_head(q))
                }
            }
            QReg::TxTail => shared.tx_tail[q].load(Ordering::Acquire),
            QReg::RxTail => shared.rx_tail[q].load(Ordering::Acquire),
            QReg::TxCtl => return None,
        })
    }

    pub(super) fn write(&mut self, shared: &X710State, offset: usize, value: u32) {
        let now = Instant::now();
        if self.in_reset(now) {
            return; // the device ignores writes while the PF resets
        }
        if Stats::owns(offset) {
            return; // read-only counters
        }
        if let Some(vector) = self.dyn_ctl_vector(offset) {
            self.write_dyn_ctl(shared, vector, value);
            return;
        }
        match offset {
            PFGEN_CTRL => {
                if PFGEN_CTRL_PFSWR.is_set(value) {
                    self.pf_reset(shared);
                }
            }
            GLGEN_RTRIG => {
                if value != 0 {
                    shared.fault(format!(
                        "GLGEN_RTRIG = {value:#x}: global resets are not modelled (docs/hw/i40e.md §4.1)"
                    ))
                }
            }
            GLNVM_SRCTL | GLNVM_SRDATA => self.nvm_write(shared, offset, value),
            GLNVM_ULD | GLNVM_FLA | GLNVM_GENS | GLGEN_RSTAT | GL_FWSTS | PRTMAC_LINKSTA | PFGEN_PORTNUM
            | PF_FUNC_RID | PFLAN_QALLOC | GLHMC_LANQMAX | GLHMC_FCOEFMAX | GLHMC_LANTXOBJSZ | GLHMC_LANRXOBJSZ => {
                shared.fault(format!("write of {value:#x} to read-only register {offset:#x}"))
            }
            PF_ATQH | PF_ATQT | PF_ATQLEN | PF_ARQH | PF_ARQT | PF_ARQLEN | PF_ATQBAL | PF_ATQBAH | PF_ARQBAL
            | PF_ARQBAH => self.aq.write(shared, offset, value),
            PFHMC_SDCMD => self.write_sdcmd(shared, value),
            PFINT_ICR0 => {}
            PFINT_ICR0_ENA => self.write_icr0_ena(shared, value),
            _ if (gllan_txpre_qdis(0)..gllan_txpre_qdis(12)).contains(&offset) => {
                self.write_txpre_qdis(shared, (offset - gllan_txpre_qdis(0)) / 4, value)
            }
            _ => {
                if let Some((q, kind)) = queue_reg(offset) {
                    if q >= self.txq.len() {
                        shared.fault(format!(
                            "queue register {offset:#x} of PF queue {q}, beyond this PF's {} queues (docs/hw/i40e.md §9.1)",
                            self.txq.len()
                        ));
                        return;
                    }
                    self.write_queue(shared, q, kind, offset, value, now);
                    return;
                }
                if super::aqcmd::rx_ctl_register(offset) {
                    shared.counters().rx_ctl_mmio_writes += 1;
                }
                self.set_reg(offset, value);
            }
        }
    }

    /// PFHMC_SDCMD with PMSDWR: latch SDDATALOW/HIGH into SD `PMSDIDX` (docs/hw/i40e.md §8.2, §8.3 step 4).
    pub(super) fn write_sdcmd(&mut self, shared: &X710State, value: u32) {
        self.set_reg(PFHMC_SDCMD, value);
        if !PFHMC_SDCMD_PMSDWR.is_set(value) {
            return;
        }
        let idx = PFHMC_SDCMD_PMSDIDX.get(value) as usize;
        let part = self.reg(glhmc_sdpart(shared.config.pf_id.into()));
        let size = GLHMC_SDPART_PMSDSIZE.get(part) as usize;
        if idx >= size {
            shared.fault(format!("PFHMC_SDCMD: SD index {idx} outside this function's partition of {size} SDs"));
            return;
        }
        let sd = hmc::Sd::decode(self.reg(PFHMC_SDDATALOW), self.reg(PFHMC_SDDATAHIGH));
        if sd.valid && (sd.bp_count == 0 || sd.bp_count > 512) {
            shared.fault(format!(
                "PFHMC_SDDATALOW: BPCOUNT {} for SD {idx} (1..=512, docs/hw/i40e.md §8.3)",
                sd.bp_count
            ));
            return;
        }
        self.sd.sds[idx] = sd;
    }

    /// GLLAN_TXPRE_QDIS(b): announce a TX queue disable (SET_QDIS) or its end (CLEAR_QDIS), docs/hw/i40e.md §9.4 step 1.
    pub(super) fn write_txpre_qdis(&mut self, shared: &X710State, block: usize, value: u32) {
        let set = TXPRE_QDIS_SET_QDIS.is_set(value);
        let clear = TXPRE_QDIS_CLEAR_QDIS.is_set(value);
        let stored = value & !(TXPRE_QDIS_SET_QDIS.mask() | TXPRE_QDIS_CLEAR_QDIS.mask());
        self.set_reg(gllan_txpre_qdis(block), stored);
        if !set && !clear {
            return;
        }
        if set && clear {
            shared.fault(format!("GLLAN_TXPRE_QDIS({block}) = {value:#x}: SET_QDIS and CLEAR_QDIS together"));
            return;
        }
        let abs = block * 128 + TXPRE_QDIS_QINDX.get(value) as usize;
        let first = usize::from(shared.config.first_queue);
        let Some(q) = abs.checked_sub(first).filter(|&q| q < self.txq.len()) else {
            shared.fault(format!(
                "GLLAN_TXPRE_QDIS({block}) names absolute queue {abs}, not one of this PF's (first {first}, {} queues; \
                 block = absolute / 128, QINDX = absolute mod 128, docs/hw/i40e.md §9.1)",
                self.txq.len()
            ));
            return;
        };
        self.txq[q].qdis_cleared = clear;
    }

    fn write_queue(&mut self, shared: &X710State, q: usize, kind: QReg, offset: usize, value: u32, now: Instant) {
        let delay = shared.config.queue_enable_delay;
        match kind {
            QReg::TxTail => shared.ring_doorbell(true, q, value),
            QReg::RxTail => shared.ring_doorbell(false, q, value),
            QReg::TxHead => {
                if self.txq[q].ena.req || self.txq[q].ena.stat(now) {
                    shared.fault(format!("QTX_HEAD({q}) written while the queue is enabled (docs/hw/i40e.md §9.1)"));
                    return;
                }
                self.set_reg(offset, value);
            }
            QReg::TxCtl => self.set_reg(offset, value),
            QReg::TxEna => {
                let req = QENA_REQ.is_set(value);
                let busy = self.txq[q].ena.stat(now) != self.txq[q].ena.target;
                if busy {
                    shared.fault(format!(
                        "QTX_ENA({q}) written while a change is under way (wait REQ == STAT, docs/hw/i40e.md §9.4)"
                    ));
                }
                if req == self.txq[q].ena.req {
                    return;
                }
                self.txq[q].ena.req = req;
                if req {
                    match self.enable_tx(shared, q) {
                        Ok(()) => self.txq[q].ena = Enable { req, target: true, at: now + delay },
                        Err(why) => shared.fault(format!("QTX_ENA({q}).QENA_REQ: {why}; the queue stays disabled")),
                    }
                } else {
                    if self.txq[q].qdis_cleared {
                        shared.fault(format!(
                            "QTX_ENA({q}) cleared without SET_QDIS announced in GLLAN_TXPRE_QDIS first (docs/hw/i40e.md §9.4)"
                        ));
                    }
                    self.txq[q].ena = Enable { req, target: false, at: now + delay };
                    self.txq[q].ctx = None;
                    shared.tx_qlen[q].store(0, Ordering::Release);
                    // A disabled queue's tail starts again at 0 (docs/hw/i40e.md §9.4): DPDK's and Linux's PMDs
                    // re-enable a queue without writing QTX_TAIL, with the head at 0.
                    shared.tx_tail[q].store(0, Ordering::Release);
                    self.txq[q].pending = None;
                }
            }
            QReg::RxEna => {
                let req = QENA_REQ.is_set(value);
                if self.rxq[q].ena.stat(now) != self.rxq[q].ena.target {
                    shared.fault(format!(
                        "QRX_ENA({q}) written while a change is under way (wait REQ == STAT, docs/hw/i40e.md §9.4)"
                    ));
                }
                if req == self.rxq[q].ena.req {
                    return;
                }
                self.rxq[q].ena.req = req;
                if req {
                    match self.enable_rx(shared, q) {
                        Ok(()) => self.rxq[q].ena = Enable { req, target: true, at: now + delay },
                        Err(why) => shared.fault(format!("QRX_ENA({q}).QENA_REQ: {why}; the queue stays disabled")),
                    }
                } else {
                    self.rxq[q].ena = Enable { req, target: false, at: now + delay };
                    self.rxq[q].ctx = None;
                    shared.rx_qlen[q].store(0, Ordering::Release);
                    if self.rx_blocked.as_ref().is_some_and(|b| b.queue == Some(q)) {
                        self.rx_blocked = None;
                    }
                }
            }
        }
    }

    /// Reads and checks PF queue `q`'s context through the HMC (docs/hw/i40e.md §8.3 step 7).
    pub(super) fn read_context(&mut self, shared: &X710State, q: usize, tx: bool) -> Result<Vec<u8>, Error> {
        let f = usize::from(shared.config.pf_id);
        let (base, cnt, len, obj) = if tx {
            (glhmc_lantxbase(f), glhmc_lantxcnt(f), hmc::TX_CTX_LEN, "TX")
        } else {
            (glhmc_lanrxbase(f), glhmc_lanrxcnt(f), hmc::RX_CTX_LEN, "RX")
        };
        let count = GLHMC_CNT.get(self.reg(cnt)) as usize;
        if q >= count {
            return Err(Error::Violation {
                at: format!("GLHMC_LAN{obj}CNT({f})"),
                rule: format!("= {count} has no context for queue {q} (docs/hw/i40e.md §8.3 step 6)"),
            });
        }
        let fpm = u64::from(GLHMC_BASE.get(self.reg(base))) * hmc::FPM_BASE_UNIT + (q * len) as u64;
        let iova = match self.sd.translate(&shared.io.dma, fpm, len) {
            Ok(iova) => iova,
            Err(why) => {
                self.hmc_error(fpm, tx);
                return Err(why);
            }
        };
        let mut obj_bytes = vec![0u8; len];
        shared.io.dma.read(iova, &mut obj_bytes, &|| format!("{obj} queue context {q}")).map_err(|_| {
            Error::Unmapped(format!("{obj} context of queue {q} at IOVA {iova:#x} is outside the IOVA map"))
        })?;
        Ok(obj_bytes)
    }

    pub(super) fn hmc_error(&mut self, fpm: u64, tx: bool) {
        // Object types as the model numbers them: 0 TX context, 1 RX context.
        let info = PFHMC_ERRORINFO_ERROR_DETECTED.val(1) | PFHMC_ERRORINFO_HMC_OBJECT_TYPE.val((!tx).into());
        self.set_reg(PFHMC_ERRORINFO, info);
        self.set_reg(PFHMC_ERRORDATA, (fpm & 0x3FFF_FFFF) as u32);
        let icr = self.reg(PFINT_ICR0) | PFINT_ICR0_HMC_ERR.mask();
        self.set_reg(PFINT_ICR0, icr);
    }

    pub(super) fn enable_tx(&mut self, shared: &X710State, q: usize) -> Result<(), Error> {
        if !self.txq[q].qdis_cleared {
            return Err(Error::Violation {
                at: "GLLAN_TXPRE_QDIS".into(),
                rule: "no CLEAR_QDIS for the queue since reset or the last SET_QDIS (docs/hw/i40e.md §9.4 step 1)"
                    .into(),
            });
        }
        let ctl = self.reg(qtx_ctl(q));
        if QTX_CTL_PFVF_Q.get(ctl) != QTX_CTL_PFVF_Q_PF || QTX_CTL_PF_INDX.get(ctl) != u32::from(shared.config.pf_id) {
            return Err(Error::Violation {
                at: format!("QTX_CTL({q})"),
                rule: format!(
                    "= {ctl:#x}, want PFVF_Q = 2 (PF queue) and PF_INDX = {} (docs/hw/i40e.md §9.2 step 3)",
                    shared.config.pf_id
                ),
            });
        }
        let head = QTX_HEAD_HEAD.get(self.reg(qtx_head(q)));
        let obj = self.read_context(shared, q, true)?;
        let what = format!("TX context of queue {q}");
        let u = hmc::unpack(&obj, hmc::TX_CTX_FIELDS, &what)?;
        let ctx = hmc::tx_ctx(&u, &what, &self.aq.qs_handles(&shared.config), shared.config.flow_director)?;
        if head >= ctx.qlen {
            return Err(Error::Violation {
                at: format!("QTX_HEAD({q})"),
                rule: format!("= {head} past the ring of {}", ctx.qlen),
            });
        }
        let tail = shared.tx_tail[q].load(Ordering::Acquire);
        if tail != head {
            shared.fault(format!("TX queue {q} enabled with tail {tail} != head {head}: stale descriptors would go"));
        }
        self.txq[q].ctx = Some(ctx);
        shared.tx_qlen[q].store(ctx.qlen, Ordering::Release);
        self.txq[q].head = head;
        self.txq[q].pending = None;
        self.txq[q].hung = self.hang_all || self.txq[q].hung;
        Ok(())
    }

    pub(super) fn enable_rx(&mut self, shared: &X710State, q: usize) -> Result<(), Error> {
        let obj = self.read_context(shared, q, false)?;
        let what = format!("RX context of queue {q}");
        let u = hmc::unpack(&obj, hmc::RX_CTX_FIELDS, &what)?;
        let ctx = hmc::rx_ctx(&u, &what)?;
        let head = u.get("head") as u32;
        if head >= ctx.qlen {
            return Err(Error::Violation { at: what.to_string(), rule: format!("head {head} past the ring") });
        }
        let tail = shared.rx_tail[q].load(Ordering::Acquire);
        if tail >= ctx.qlen {
            return Err(Error::Violation {
                at: format!("QRX_TAIL({q})"),
                rule: format!("= {tail} past the ring of {}", ctx.qlen),
            });
        }
        self.rxq[q].ctx = Some(ctx);
        shared.rx_qlen[q].store(ctx.qlen, Ordering::Release);
        self.rxq[q].head = head;
        Ok(())
    }
}

/// Which per-queue register an offset is (docs/hw/i40e.md §9.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QReg {
    TxEna,
    TxCtl,
    TxTail,
    TxHead,
    RxEna,
    RxTail,
}

fn queue_reg(offset: usize) -> Option<(usize, QReg)> {
    let table = [
        (qtx_ena(0), QReg::TxEna),
        (qtx_ctl(0), QReg::TxCtl),
        (qtx_tail(0), QReg::TxTail),
        (qtx_head(0), QReg::TxHead),
        (qrx_ena(0), QReg::RxEna),
        (qrx_tail(0), QReg::RxTail),
    ];
    table.iter().find_map(|&(base, kind)| {
        let rel = offset.checked_sub(base)?;
        (rel < 4 * MAX_QUEUES && rel.is_multiple_of(4)).then_some((rel / 4, kind))
    })
}
