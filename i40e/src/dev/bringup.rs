//! Bring-up (docs/hw/i40e.md §3 steps 1 to 17, §4): leftovers cleared, PF reset, admin queue and firmware
//! version, capabilities, HMC, MAC address, main VSI, link events.

use std::time::{Duration, Instant};

use drvkit::bar::RegisterSpace;
use pktio::{DescLimits, DevInfo, MacAddr, Result, RssHashFunctions};

use super::*;
use crate::adminq::cmds::{self, Opcode};
use crate::adminq::{Buffer, BUF_LEN};
use crate::error::Error as DevError;
use crate::hmc::LanHmc;
use crate::queue::{self, QueueTiming};
use crate::rxtx::{RING_ALIGN, RING_MAX, RING_MIN};
use crate::stats::HwStats;

impl<R: RegisterSpace> I40e<R> {
    // ---- docs/hw/i40e.md §4 reset ----

    /// docs/hw/i40e.md §4.3: what an earlier driver left behind (interrupt causes, queue lists, enabled queues).
    pub(super) fn clear_leftovers(&self) {
        let t = &self.options.timing;
        let vectors = glpci_cnf2::MSI_X_PF_N.get(self.regs.read(GLPCI_CNF2));
        let qalloc = self.regs.read(PFLAN_QALLOC);
        let (first, count) = if qalloc & pflan_qalloc::VALID != 0 {
            let (f, l) = (pflan_qalloc::FIRSTQ.get(qalloc), pflan_qalloc::LASTQ.get(qalloc));
            (f, if l >= f { l - f + 1 } else { 0 })
        } else {
            (0, 0)
        };
        self.regs.write(PFINT_ICR0_ENA, 0);
        for n in 0..vectors.saturating_sub(2) {
            self.regs.write(pfint_dyn_ctln(n), pfint_dyn_ctl::ITR_INDX.val(pfint_dyn_ctl::ITR_NONE));
        }
        self.regs.write(PFINT_LNKLST0, pfint_lnklst::EOL);
        for n in 0..vectors.saturating_sub(1) {
            self.regs.write(pfint_lnklstn(n), pfint_lnklst::EOL);
        }
        let no_wait = QueueTiming { pre_cfg: Duration::ZERO, ..t.queue };
        for q in 0..count {
            queue::tx_pre_cfg(&self.regs, first + q, false, &no_wait);
        }
        std::thread::sleep(t.clear_pre_disable);
        for q in 0..count as u16 {
            self.regs.write(qint_tqctl(q), 0);
            self.regs.write(qtx_ena(q), 0);
            self.regs.write(qint_rqctl(q), 0);
            self.regs.write(qrx_ena(q), 0);
        }
        std::thread::sleep(Duration::from_micros(50));
    }

    /// docs/hw/i40e.md §4.1: wait out a global reset, wait for the firmware's configuration, PF software reset.
    pub(super) fn pf_reset(&self) -> Result<()> {
        let t = &self.options.timing;
        let polls = (glgen_rstctl::GRSTDEL.get(self.regs.read(GLGEN_RSTCTL)) * 20).clamp(1, 160);
        let global_budget = t.global_reset_step * polls;
        let mut first_clear = true;
        loop {
            let rstat = self
                .regs
                .poll_with(GLGEN_RSTAT, global_budget, t.global_reset_step, |v| glgen_rstat::DEVSTATE.get(v) == 0);
            match rstat {
                Ok(_) => {}
                Err(p) => return Err(self.timeout("global reset", "GLGEN_RSTAT", p, global_budget)),
            }
            let uld_done = glnvm_uld::CONF_CORE_DONE | glnvm_uld::CONF_GLOBAL_DONE;
            let step = t.nvm_ready / 1000;
            if let Err(p) = self.regs.poll_with(GLNVM_ULD, t.nvm_ready, step, |v| v & uld_done == uld_done) {
                // DPDK goes on when one of the two is done.
                if p.last & uld_done == 0 {
                    return Err(self.timeout("firmware configuration load", "GLNVM_ULD", p, t.nvm_ready));
                }
            }
            if !first_clear {
                // A global reset happened: it reset the PF as well.
                return Ok(());
            }
            self.regs.set_bits(PFGEN_CTRL, pfgen_ctrl::PFSWR);
            let start = Instant::now();
            loop {
                let v = self.regs.read(PFGEN_CTRL);
                if v & pfgen_ctrl::PFSWR == 0 {
                    return Ok(());
                }
                if glgen_rstat::DEVSTATE.get(self.regs.read(GLGEN_RSTAT)) != 0 {
                    first_clear = false;
                    break;
                }
                if start.elapsed() >= t.pf_reset {
                    return Err(self.timeout(
                        "PF software reset",
                        "PFGEN_CTRL",
                        PollTimeout { reg: PFGEN_CTRL, last: v },
                        t.pf_reset,
                    ));
                }
                std::thread::sleep(t.pf_reset / 1000);
            }
        }
    }

    // ---- docs/hw/i40e.md §3 bring-up ----

    pub(super) fn bring_up(&mut self) -> Result<()> {
        let t = self.options.timing.clone();
        let fwsts = self.regs.read(GL_FWSTS);
        if gl_fwsts::FWS1B.get(fwsts) != 0 {
            return Err(self.dev_err(DevError::RecoveryMode { gl_fwsts: fwsts }));
        }
        self.clear_leftovers();
        self.pf_reset()?;
        // docs/hw/i40e.md §3 step 4.
        self.id.port = pfgen_portnum::PORT_NUM.get(self.regs.read(PFGEN_PORTNUM)) as u8;
        let rid = self.regs.read(PF_FUNC_RID);
        self.id.pf_id = if self.regs.read(GLPCI_CAPSUP) & glpci_capsup::ARI_EN != 0 {
            pf_func_rid::FUNCTION_NUMBER_ARI.get(rid)
        } else {
            pf_func_rid::FUNCTION_NUMBER.get(rid)
        } as u8;
        // docs/hw/i40e.md §3 step 5, §5.3.
        let mut version = None;
        let mut last_err = None;
        for attempt in 0..t.version_attempts.max(1) {
            let ok = self.aq.get_mut().unwrap_or_else(|e| e.into_inner()).program(&self.regs);
            if !ok && attempt + 1 == t.version_attempts.max(1) {
                return Err(self.dev_err(DevError::Timeout {
                    what: "admin queue set-up (base register read back)".into(),
                    register: "PF_ATQBAL",
                    last_value: self.regs.read(PF_ATQBAL),
                    budget: Duration::ZERO,
                }));
            }
            match self.aq(Opcode::GetVersion, [0; 16], None, &[]) {
                Ok(d) => {
                    version = Some(cmds::GetVersionResp::decode(&d.params));
                    break;
                }
                Err(e) => last_err = Some(e),
            }
            std::thread::sleep(t.version_retry);
        }
        let Some(v) = version else { return Err(last_err.unwrap_or_else(|| self.state.invalid("no admin queue"))) };
        self.id.fw = (v.fw_major, v.fw_minor);
        self.id.api = (v.api_major, v.api_minor);
        if v.api_major != API_KNOWN.0 {
            return Err(self.dev_err(DevError::ApiVersion {
                driver_knows: API_KNOWN,
                device_has: self.id.api,
                fw: format!("{}.{}", v.fw_major, v.fw_minor),
            }));
        }
        self.send_driver_version();
        // docs/hw/i40e.md §3 step 7: leave PXE mode; the register is written whatever the firmware said.
        let mut pxe = [0u8; 16];
        cmds::ClearPxeCmd { rx_cnt: 2 }.encode_into(&mut pxe);
        match self.aq(Opcode::ClearPxeMode, pxe, None, &[]) {
            Ok(_) => {}
            Err(e) if e.driver_error::<DevError>().is_some_and(|d| matches!(d, DevError::AdminQueue { .. })) => {}
            Err(e) => return Err(e),
        }
        self.regs.write(GLLAN_RCTL_0, gllan_rctl_0::PXE_MODE);
        self.read_capabilities()?;
        // docs/hw/i40e.md §3 step 10.
        let n = self.id.queues as u32;
        self.hmc = Some(LanHmc::new(
            &self.regs,
            &self.allocator,
            &self.mapper,
            &self.options.name.clone(),
            self.id.pf_id as u32,
            n,
            n,
            self.options.hmc_mode,
        )?);
        self.read_mac()?;
        self.setup_main_vsi()?;
        // Link events on (Get Link Status with LSE enable, docs/hw/i40e.md §5.5), and only the events the driver wants (§3 step
        // 24; its mask suppresses the others).
        let ls = self.get_link(cmds::link::LSE_ENABLE)?;
        *self.link.lock().unwrap_or_else(|e| e.into_inner()) = ls;
        let mut mask = [0u8; 16];
        let keep = cmds::phy_event::LINK_UPDOWN | cmds::phy_event::MODULE_QUAL_FAIL | cmds::phy_event::MEDIA_NA;
        cmds::PhyIntMaskCmd { event_mask: !keep }.encode_into(&mut mask);
        self.aq(Opcode::SetPhyIntMask, mask, None, &[])?;
        self.clear_hash_filters();
        // DPDK's `eth_i40e_dev_init` turns flow control off and ignores a refusal: a firmware that will not
        // change it is no reason to give up the port (docs/hw/i40e.md §7.2).
        let _ = self.set_fc_none();
        self.update_info();
        self.state.mac = self.id.mac;
        *self.hw.lock().unwrap_or_else(|e| e.into_inner()) = HwStats::new(&self.regs, self.stat_index());
        Ok(())
    }

    pub(super) fn send_driver_version(&self) {
        let mut p = [0u8; 16];
        cmds::DriverVersionCmd { major: 0, minor: 1, build: 0, subbuild: 0 }.encode_into(&mut p);
        let mut name = *b"pktio-rs i40e\0\0\0";
        // Informational only: a firmware that refuses it is no reason to fail.
        let _ = self.aq(Opcode::DriverVersion, p, Some(Buffer { data: &mut name, rd: true }), &[]);
    }

    /// docs/hw/i40e.md §6.2: queues, first queue, RSS table, vectors, flow director.
    pub(super) fn read_capabilities(&mut self) -> Result<()> {
        let mut len = BUF_LEN;
        loop {
            let mut buf = vec![0u8; len];
            let mut p = [0u8; 16];
            cmds::ListCapsCmd::default().encode_into(&mut p);
            let d =
                self.aq(Opcode::ListFuncCaps, p, Some(Buffer { data: &mut buf, rd: false }), &[cmds::status::ENOMEM])?;
            if d.status() == cmds::status::ENOMEM {
                let need = d.head.datalen as usize;
                if need <= len || need > BUF_LEN {
                    return Err(self.dev_err(DevError::BadAnswer {
                        opcode: Opcode::ListFuncCaps.value(),
                        name: Opcode::ListFuncCaps.name(),
                        reason: format!("ENOMEM asking for {need} bytes with a {len}-byte buffer"),
                    }));
                }
                len = need;
                continue;
            }
            let count = cmds::ListCapsCmd::decode(&d.params).count as usize;
            let (mut rxq, mut txq) = (None, None);
            for e in buf.chunks_exact(cmds::CapElement::SIZE).take(count).map(cmds::CapElement::decode) {
                match e.id {
                    cmds::cap::RXQ => rxq = Some((e.number, e.phys_id)),
                    cmds::cap::TXQ => txq = Some((e.number, e.phys_id)),
                    cmds::cap::RSS => self.id.rss_table = e.number as u16,
                    cmds::cap::MSIX => self.id.msix = e.number,
                    cmds::cap::FLOW_DIRECTOR => self.id.flow_director = e.number != 0,
                    _ => {}
                }
            }
            let (Some((nrx, first)), Some((ntx, _))) = (rxq, txq) else {
                return Err(self.dev_err(DevError::BadAnswer {
                    opcode: Opcode::ListFuncCaps.value(),
                    name: Opcode::ListFuncCaps.name(),
                    reason: format!("no RX/TX queue capability among {count} elements"),
                }));
            };
            self.id.queues = nrx.min(ntx).min(1536) as u16;
            self.id.first_queue = first;
            if self.id.queues == 0 {
                return Err(self.dev_err(DevError::BadAnswer {
                    opcode: Opcode::ListFuncCaps.value(),
                    name: Opcode::ListFuncCaps.name(),
                    reason: "the function has no queues".into(),
                }));
            }
            return Ok(());
        }
    }

    /// docs/hw/i40e.md §6.4.
    pub(super) fn read_mac(&mut self) -> Result<()> {
        let mut buf = [0u8; cmds::mac_read::BUF_LEN];
        let d = self.aq(Opcode::MacAddressRead, [0; 16], Some(Buffer { data: &mut buf, rd: false }), &[])?;
        let flags = cmds::MacReadCmd::decode(&d.params).command_flags;
        let mac = MacAddr([buf[0], buf[1], buf[2], buf[3], buf[4], buf[5]]);
        if flags & cmds::mac_read::LAN_ADDR_VALID == 0 || mac == MacAddr::ZERO || mac.is_multicast() {
            return Err(self.dev_err(DevError::BadAnswer {
                opcode: Opcode::MacAddressRead.value(),
                name: Opcode::MacAddressRead.name(),
                reason: format!("no valid LAN address (flags {flags:#x}, {mac})"),
            }));
        }
        self.id.mac = mac;
        Ok(())
    }

    /// docs/hw/i40e.md §6.5, §6.6: the main VSI's SEID, its parameters, its TC 0 queue set, and its queue map.
    pub(super) fn setup_main_vsi(&mut self) -> Result<()> {
        let bad = |reason: String| DevError::BadAnswer {
            opcode: Opcode::GetSwitchConfig.value(),
            name: Opcode::GetSwitchConfig.name(),
            reason,
        };
        let mut buf = vec![0u8; cmds::element::BUF_LEN];
        self.aq(Opcode::GetSwitchConfig, [0; 16], Some(Buffer { data: &mut buf, rd: false }), &[])?;
        let h = cmds::SwitchConfigHeader::decode(&buf);
        let vsi = (0..h.num_reported as usize)
            .map(|i| cmds::SwitchElement::decode(&buf[16 + 16 * i..]))
            .find(|e| e.element_type == cmds::element::VSI)
            .ok_or_else(|| self.dev_err(bad(format!("no VSI among {} elements", h.num_reported))))?;
        self.vsi.seid = vsi.seid;
        self.vsi.uplink = vsi.uplink_seid;

        let mut p = [0u8; 16];
        cmds::VsiCmd { uplink_seid: self.vsi.seid, ..Default::default() }.encode_into(&mut p);
        let mut props = [0u8; cmds::VsiProperties::SIZE];
        let d = self.aq(Opcode::GetVsiParams, p, Some(Buffer { data: &mut props, rd: false }), &[])?;
        let r = cmds::VsiResp::decode(&d.params);
        let cur = cmds::VsiProperties::decode(&props);
        self.vsi.number = r.vsi_number;
        self.vsi.stat_idx = cur.stat_counter_idx;
        self.vsi.qs_handle = cur.qs_handle[0];

        // TC 0 with one credit; its handle replaces the one above (docs/hw/i40e.md §6.6).
        let mut p = [0u8; 16];
        cmds::VsiCmd { uplink_seid: self.vsi.seid, ..Default::default() }.encode_into(&mut p);
        let mut bw =
            cmds::TcBandwidthBuf { tc_valid_bits: 1, tc_bw_credits: [1, 0, 0, 0, 0, 0, 0, 0], ..Default::default() }
                .encode();
        self.aq(Opcode::VsiTcBandwidth, p, Some(Buffer { data: &mut bw, rd: true }), &[])?;
        let handle = cmds::TcBandwidthBuf::decode(&bw).qs_handles[0];
        if handle != cmds::vsi::QS_HANDLE_INVALID {
            self.vsi.qs_handle = handle;
        }

        // Queue map: contiguous from the VSI's first PF queue, a power of two of them, at most 64 per TC.
        self.vsi.base_queue = self.id.flow_director as u16;
        let avail = self.id.queues.saturating_sub(self.vsi.base_queue).min(cmds::vsi::MAX_Q_PER_TC);
        if avail == 0 {
            return Err(self.dev_err(bad("no queue left for the main VSI".into())));
        }
        let log2 = 15 - avail.leading_zeros() as u16;
        self.vsi.queues = 1 << log2;
        let mut upd = cmds::VsiProperties {
            valid_sections: cmds::vsi::SECTION_VLAN | cmds::vsi::SECTION_QUEUE_MAP,
            port_vlan_flags: cmds::vsi::PVLAN_MODE_ALL | cmds::vsi::PVLAN_EMOD_NOTHING,
            mapping_flags: cmds::vsi::MAP_CONTIG,
            ..cur
        };
        upd.queue_mapping = [0; 16];
        upd.queue_mapping[0] = self.vsi.base_queue;
        upd.tc_mapping = [0; 8];
        upd.tc_mapping[0] =
            cmds::vsi::TC_QUEUE_OFFSET.val(0) as u16 | cmds::vsi::TC_QUEUE_NUMBER.val(log2 as u32) as u16;
        let mut p = [0u8; 16];
        cmds::VsiCmd { uplink_seid: self.vsi.seid, ..Default::default() }.encode_into(&mut p);
        upd.encode_into(&mut props);
        self.aq(Opcode::UpdateVsi, p, Some(Buffer { data: &mut props, rd: true }), &[])?;
        Ok(())
    }

    /// Device limits once the capabilities are known.
    pub(super) fn update_info(&mut self) {
        let lim = DescLimits { min: RING_MIN, max: RING_MAX, align: RING_ALIGN };
        let reta = if self.id.rss_table >= 512 { 512 } else { HLUT_ENTRIES as u16 };
        self.lut = vec![0; reta as usize];
        let speeds: Vec<u32> =
            [1_000, 10_000, 25_000, 40_000].into_iter().filter(|&s| s <= self.options.max_speed).collect();
        self.state.info = DevInfo {
            driver_name: "net_i40e",
            device_name: self.options.name.clone(),
            max_rx_queues: self.vsi.queues,
            max_tx_queues: self.vsi.queues,
            rx_desc_lim: lim,
            tx_desc_lim: lim,
            min_mtu: 68,
            max_mtu: (MAX_FRAME_SIZE - FRAME_OVERHEAD) as u16,
            max_rx_pktlen: MAX_FRAME_SIZE,
            rx_offload_capa: offload::RX_CKSUM | offload::RX_SCATTER | offload::RX_RSS_HASH,
            tx_offload_capa: offload::TX_CKSUM
                | offload::TX_TCP_TSO
                | offload::TX_MULTI_SEGS
                | offload::TX_MBUF_FAST_FREE,
            // DPDK's I40E_NUM_MACADDR_MAX: what one VSI is given of the switch's filters.
            max_mac_addrs: vlan::MAX_MAC_ADDRS,
            flow_type_rss_offloads: RssHashFunctions::ALL,
            reta_size: reta,
            hash_key_size: RSS_KEY_LEN as u8,
            speed_capa: speeds,
            numa_node: None,
        };
        let q = self.state.config.rx_queues.min(self.vsi.queues).max(1);
        self.fill_lut(q);
    }

    pub(super) fn fill_lut(&mut self, queues: u16) {
        // Entries are relative to the VSI's first queue (docs/hw/i40e.md §12.1).
        let n = queues.min(HLUT_MAX_QUEUE + 1) as usize;
        for (e, slot) in self.lut.iter_mut().enumerate() {
            *slot = (e % n) as u8;
        }
    }
}
