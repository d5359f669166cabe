//! Link (docs/hw/i40e.md §7), receive modes and MAC filters (§6.7, §6.8), RSS (§12).

use drvkit::bar::RegisterSpace;
use pktio::{LinkStatus, MacAddr, Result, RssHashFunctions};
use std::sync::atomic::Ordering;

use super::*;
use crate::adminq::cmds::{self, Opcode};
use crate::adminq::Buffer;

impl<R: RegisterSpace> I40e<R> {
    // ---- link (docs/hw/i40e.md §7) ----

    pub(super) fn get_link(&self, lse: u16) -> Result<LinkStatus> {
        let mut p = [0u8; 16];
        cmds::LinkStatusCmd { command_flags: lse }.encode_into(&mut p);
        let d = self.aq(Opcode::GetLinkStatus, p, None, &[])?;
        Ok(link_of(&cmds::LinkStatus::decode(&d.params)))
    }

    /// Takes the pending ARQ events; a link event updates the port's link.
    pub fn poll_events(&self) {
        loop {
            let ev = {
                let mut aq = self.aq.lock().unwrap_or_else(|e| e.into_inner());
                aq.receive(&self.regs)
            };
            let Some(ev) = ev else { break };
            if ev.desc.head.opcode == Opcode::GetLinkStatus.value() {
                let link = link_of(&cmds::LinkStatus::decode(&ev.desc.params));
                *self.link.lock().unwrap_or_else(|e| e.into_inner()) = link;
                // The first link-up after start: Set MAC Config again, as some parts ignored it with the link
                // down (docs/hw/i40e.md §7.3); a failure leaves it for the next link-up.
                if link.up
                    && self.mac_config_on_link_up.swap(false, Ordering::Relaxed)
                    && self.set_mac_config().is_err()
                {
                    self.mac_config_on_link_up.store(true, Ordering::Relaxed);
                }
            }
        }
    }

    /// Set PHY Config (docs/hw/i40e.md §7.2): the link up with auto-negotiation, or administratively down.
    /// Get PHY Abilities (docs/hw/i40e.md §7.1) with `param0` (0: the current configuration; [`cmds::phy::REPORT_INIT`]: the
    /// NVM's initial values).
    fn phy_abilities(&self, param0: u32) -> Result<cmds::PhyAbilities> {
        let mut p = [0u8; 16];
        cmds::PhyAbilitiesCmd { param0 }.encode_into(&mut p);
        let mut buf = vec![0u8; cmds::phy::ABILITIES_LEN];
        // The firmware answers EAGAIN while it is busy with the PHY: DPDK's `i40e_aq_get_phy_capabilities` asks
        // again, up to 500 times 1 ms (docs/hw/i40e.md §5.6).
        let buf_ref = Some(Buffer { data: &mut buf, rd: false });
        self.aq_retry(Opcode::GetPhyAbilities, p, buf_ref, &[], PHY_ABILITIES_ATTEMPTS).map_err(|e| self.dev_err(e))?;
        Ok(cmds::PhyAbilities::decode(&buf))
    }

    pub(super) fn set_phy(&self, up: bool) -> Result<()> {
        let cur = self.phy_abilities(0)?;
        // DPDK looks at the type and the speed only, not at the current AN or ENABLE_LINK bits (docs/hw/i40e.md §7.2).
        if up && cur.phy_type != 0 && cur.link_speed != 0 {
            return Ok(());
        }
        // The speeds to ask for: all the NVM's initial values allow (docs/hw/i40e.md §7.2 step 1), else the current ones.
        let speeds = if up {
            let init = self.phy_abilities(cmds::phy::REPORT_INIT)?;
            if init.link_speed != 0 {
                init.link_speed
            } else {
                cur.link_speed
            }
        } else {
            cur.link_speed
        };
        let keep = cur.abilities & cmds::phy::KEEP_MASK;
        let cfg = if up {
            cmds::SetPhyConfigCmd {
                phy_type: cmds::phy::ALL_TYPES,
                phy_type_ext: cmds::phy::ALL_TYPES_EXT,
                link_speed: speeds,
                abilities: keep | cmds::phy::ENABLE_ATOMIC_LINK | cmds::phy::ENABLE_LINK | cmds::phy::ENABLE_AN,
                eee_capability: cur.eee_capability,
                eeer: cur.eeer_val,
                low_power_ctrl: cur.d3_lpan,
                fec_config: cur.fec_cfg_curr_mod_ext_info,
            }
        } else {
            cmds::SetPhyConfigCmd {
                link_speed: cur.link_speed,
                abilities: keep | cmds::phy::ENABLE_ATOMIC_LINK | cmds::phy::ENABLE_AN,
                eee_capability: cur.eee_capability,
                eeer: cur.eeer_val,
                low_power_ctrl: cur.d3_lpan,
                fec_config: cur.fec_cfg_curr_mod_ext_info,
                ..Default::default()
            }
        };
        let mut p = [0u8; 16];
        cfg.encode_into(&mut p);
        self.aq(Opcode::SetPhyConfig, p, None, &[])?;
        Ok(())
    }

    /// Flow control off, as DPDK leaves it (`i40e_set_fc` with I40E_FC_NONE, docs/hw/i40e.md §7.2): the NVM may
    /// leave pause frames on. Set PHY Config only when the current abilities have a pause bit; the rest of the
    /// configuration is the current one, applied at once.
    pub(super) fn set_fc_none(&self) -> Result<()> {
        let cur = self.phy_abilities(0)?;
        if cur.abilities & cmds::phy::PAUSE == 0 {
            return Ok(());
        }
        let mut p = [0u8; 16];
        cmds::SetPhyConfigCmd {
            phy_type: cur.phy_type,
            phy_type_ext: cur.phy_type_ext,
            link_speed: cur.link_speed,
            abilities: (cur.abilities & !cmds::phy::PAUSE) | cmds::phy::ENABLE_ATOMIC_LINK,
            eee_capability: cur.eee_capability,
            eeer: cur.eeer_val,
            low_power_ctrl: cur.d3_lpan,
            fec_config: cur.fec_cfg_curr_mod_ext_info,
        }
        .encode_into(&mut p);
        self.aq(Opcode::SetPhyConfig, p, None, &[])?;
        Ok(())
    }

    /// No loopback (Set Loopback 0x0618, docs/hw/i40e.md §7.6): DPDK's `i40e_dev_start` sets the configured mode,
    /// none by default, so a port an earlier user left in loopback does not stay so.
    pub(super) fn set_loopback_none(&self) -> Result<()> {
        let mut p = [0u8; 16];
        cmds::SetLoopbackCmd { lb_mode: cmds::loopback::NONE }.encode_into(&mut p);
        self.aq(Opcode::SetLoopback, p, None, &[])?;
        Ok(())
    }

    /// Hash filters in a known state (DPDK `i40e_hw_init`, docs/hw/i40e.md §12.2): PFQF_CTL_0 cleared and the
    /// port's symmetric hash off, whatever an earlier driver left.
    pub(super) fn clear_hash_filters(&self) {
        self.write_rx_ctl(PFQF_CTL_0, 0);
        self.update_rx_ctl(PRTQF_CTL_0, |v| v & !prtqf_ctl_0::HSYM_ENA);
    }

    pub(super) fn set_mac_config(&self) -> Result<()> {
        let frame = (self.state.config.mtu as u32 + FRAME_OVERHEAD).min(MAX_FRAME_SIZE);
        let mut p = [0u8; 16];
        cmds::SetMacConfigCmd {
            max_frame_size: frame as u16,
            params: cmds::mac_config::CRC_EN,
            fc_refresh_threshold: cmds::mac_config::FC_REFRESH,
            ..Default::default()
        }
        .encode_into(&mut p);
        self.aq(Opcode::SetMacConfig, p, None, &[])?;
        Ok(())
    }

    // ---- receive modes and filters (docs/hw/i40e.md §6.7, §6.8) ----

    pub(super) fn promisc(&self, flags: u16, valid: u16) -> Result<()> {
        let mut p = [0u8; 16];
        cmds::PromiscCmd { promiscuous_flags: flags, valid_flags: valid, seid: self.vsi.seid, vlan_tag: 0 }
            .encode_into(&mut p);
        self.aq(Opcode::SetVsiPromisc, p, None, &[])?;
        Ok(())
    }

    pub(super) fn apply_rx_modes(&self) -> Result<()> {
        use cmds::promisc::*;
        // RX_ONLY (API 1.5) keeps the PF from receiving its own transmissions.
        let rx_only = if self.id.api >= (1, 5) { RX_ONLY } else { 0 };
        let uc = if self.state.promiscuous { UNICAST | rx_only } else { 0 };
        self.promisc(uc, UNICAST | rx_only)?;
        let mc = if self.state.promiscuous || self.state.allmulticast { MULTICAST } else { 0 };
        self.promisc(mc, MULTICAST)?;
        self.promisc(BROADCAST, BROADCAST)
    }

    /// Adds or removes one perfect filter: `mac` alone (`vlan` None: IGNORE_VLAN) or `mac` with VLAN ID `vlan`
    /// (docs/hw/i40e.md §6.7).
    pub(super) fn mac_filter(&self, mac: MacAddr, vlan: Option<u16>, add: bool) -> Result<()> {
        use cmds::macvlan::*;
        let mut p = [0u8; 16];
        cmds::MacVlanCmd { num_addresses: 1, seid0: self.vsi.seid | SEID_VALID, ..Default::default() }
            .encode_into(&mut p);
        let mut buf = [0u8; 16];
        let vlan_tag = vlan.unwrap_or(0);
        let op = if add {
            let flags = if vlan.is_some() { PERFECT_MATCH } else { PERFECT_MATCH | IGNORE_VLAN };
            cmds::AddMacVlanElem { mac: mac.0, vlan_tag, flags, ..Default::default() }.encode_into(&mut buf);
            Opcode::AddMacVlan
        } else {
            let ignore = if vlan.is_some() { 0 } else { REMOVE_IGNORE_VLAN };
            cmds::RemoveMacVlanElem { mac: mac.0, vlan_tag, flags: PERFECT_MATCH as u8 | ignore, ..Default::default() }
                .encode_into(&mut buf);
            Opcode::RemoveMacVlan
        };
        self.aq(op, p, Some(Buffer { data: &mut buf, rd: true }), &[cmds::status::EEXIST])?;
        Ok(())
    }

    // ---- RSS (docs/hw/i40e.md §12) ----

    /// The RX-control commands are there from API 1.5 on (docs/hw/i40e.md §6.11).
    fn rx_ctl_by_command(&self) -> bool {
        self.id.api >= (1, 5)
    }

    /// Reads an RX-filter register: through command 0x0206 from API 1.5 on, sent again on EAGAIN up to 5 times,
    /// falling back to MMIO (docs/hw/i40e.md §5.6, §6.11; DPDK `i40e_read_rx_ctl`).
    pub(super) fn read_rx_ctl(&self, reg: Reg) -> u32 {
        if self.rx_ctl_by_command() {
            let mut p = [0u8; 16];
            cmds::RxCtlWriteCmd { address: reg.0 as u32, value: 0 }.encode_into(&mut p);
            if let Ok(d) = self.aq_retry(Opcode::RxCtlRead, p, None, &[], RX_CTL_ATTEMPTS) {
                return cmds::RxCtlWriteCmd::decode(&d.params).value;
            }
        }
        self.regs.read(reg)
    }

    /// Writes an RX-filter register: through command 0x0207 from API 1.5 on, sent again on EAGAIN up to 5 times,
    /// falling back to MMIO (docs/hw/i40e.md §5.6, §6.11; DPDK `i40e_write_rx_ctl`).
    pub(super) fn write_rx_ctl(&self, reg: Reg, value: u32) {
        if self.rx_ctl_by_command() {
            let mut p = [0u8; 16];
            cmds::RxCtlWriteCmd { address: reg.0 as u32, value }.encode_into(&mut p);
            if self.aq_retry(Opcode::RxCtlWrite, p, None, &[], RX_CTL_ATTEMPTS).is_ok() {
                return;
            }
        }
        self.regs.write(reg, value);
    }

    /// Read-modify-write of an RX-filter register through the RX-control commands.
    fn update_rx_ctl(&self, reg: Reg, update: impl FnOnce(u32) -> u32) {
        let value = self.read_rx_ctl(reg);
        self.write_rx_ctl(reg, update(value));
    }

    pub(super) fn hena_of(functions: RssHashFunctions) -> u64 {
        let f = functions;
        let mut v = 0u64;
        let mut set = |bits: &[u32]| bits.iter().for_each(|&b| v |= 1 << b);
        if f.contains(RssHashFunctions::IPV4) {
            set(&[pctype::IPV4_OTHER, pctype::FRAG_IPV4]);
        }
        if f.contains(RssHashFunctions::IPV4_TCP) {
            set(&[pctype::IPV4_TCP]);
        }
        if f.contains(RssHashFunctions::IPV4_UDP) {
            set(&[pctype::IPV4_UDP]);
        }
        if f.contains(RssHashFunctions::IPV6) {
            set(&[pctype::IPV6_OTHER, pctype::FRAG_IPV6]);
        }
        if f.contains(RssHashFunctions::IPV6_TCP) {
            set(&[pctype::IPV6_TCP]);
        }
        if f.contains(RssHashFunctions::IPV6_UDP) {
            set(&[pctype::IPV6_UDP]);
        }
        v
    }

    /// docs/hw/i40e.md §12.2: HENA off, Toeplitz, no symmetric hash, table size, key, table, then the hashed types.
    pub(super) fn apply_rss(&self) {
        self.write_rx_ctl(pfqf_hena(0), 0);
        self.write_rx_ctl(pfqf_hena(1), 0);
        let Some(rss) = &self.state.config.rss else { return };
        // GLQF_CTL is shared by every PF of the device and PRTQF_CTL_0 by the port's: both through the firmware,
        // as DPDK does (docs/hw/i40e.md §6.11).
        self.update_rx_ctl(PRTQF_CTL_0, |v| v & !prtqf_ctl_0::HSYM_ENA);
        self.update_rx_ctl(GLQF_CTL, |v| v | glqf_ctl::HTOEP);
        let big = self.lut.len() > HLUT_ENTRIES;
        self.update_rx_ctl(
            PFQF_CTL_0,
            |v| if big { v | pfqf_ctl_0::HASHLUTSIZE } else { v & !pfqf_ctl_0::HASHLUTSIZE },
        );
        self.apply_key();
        self.apply_lut();
        let hena = Self::hena_of(rss.functions);
        self.write_rx_ctl(pfqf_hena(0), hena as u32);
        self.write_rx_ctl(pfqf_hena(1), (hena >> 32) as u32);
    }

    pub(super) fn apply_key(&self) {
        for (i, w) in self.rss_key.chunks(4).enumerate() {
            self.regs.write(pfqf_hkey(i), u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        }
    }

    pub(super) fn apply_lut(&self) {
        for (i, e) in self.lut.chunks(4).enumerate() {
            self.regs.write(pfqf_hlut(i), u32::from_le_bytes([e[0], e[1], e[2], e[3]]));
        }
    }
}
