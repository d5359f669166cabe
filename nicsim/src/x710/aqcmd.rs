//! The firmware's side of each admin command (docs/hw/i40e.md §6, §7, §12.3), after the generic descriptor checks
//! of `adminq`: every field a command carries is decoded at the offset the notes give and checked for the values
//! the notes allow; a value outside them is a recorded fault answered with EINVAL (or the code the notes name).

use super::adminq::{le16, put16, put32, qs_handle, vsi_number, vsi_seid, vsi_stat_index, AqRc, Desc, Outcome};
use super::aqdecode::{Command, Lse, SEID_VALID};
use super::regs::*;
use super::{Core, MacFilter, X710Config, X710State, MAC_SEID_BASE};
use crate::Error;

/// Capability IDs (docs/hw/i40e.md §6.2).
mod cap {
    pub const SWITCH_MODE: u16 = 0x0001;
    pub const VSI: u16 = 0x0017;
    pub const DCB: u16 = 0x0018;
    pub const RSS: u16 = 0x0040;
    pub const RXQ: u16 = 0x0041;
    pub const TXQ: u16 = 0x0042;
    pub const MSIX: u16 = 0x0043;
    pub const FLOW_DIRECTOR: u16 = 0x0045;
}

/// Capability element length (docs/hw/i40e.md §6.2).
const CAP_LEN: usize = 32;
/// VSIs in the device (docs/hw/i40e.md §15).
const VSIS: u32 = 384;
/// Perfect MAC filters the model's switch holds per PF.
const PERFECT_FILTERS: u16 = 256;
/// VSI properties buffer length (docs/hw/i40e.md §6.6).
const VSI_PROPS_LEN: usize = 128;
/// TC bandwidth buffer length (docs/hw/i40e.md §6.6).
const TC_BW_LEN: usize = 32;
/// MAC-VLAN element length (docs/hw/i40e.md §6.7).
const MACVLAN_LEN: usize = 16;
/// Get PHY Abilities: the fixed part of the response before the qualified modules (docs/hw/i40e.md §7.1).
const PHY_ABILITIES_HEAD: usize = 24;
/// MAC Address Read buffer (docs/hw/i40e.md §6.4).
const MAC_READ_LEN: usize = 24;
/// Get Switch Config: header and one element (docs/hw/i40e.md §6.5).
const SWITCH_HEADER: usize = 16;
const SWITCH_ELEMENT: usize = 16;

/// RX control registers command 0x0206/0x0207 may reach (docs/hw/i40e.md §6.11, §12.1).
pub(super) fn rx_ctl_register(addr: usize) -> bool {
    matches!(addr, PFQF_CTL_0 | GLQF_CTL | PRTQF_CTL_0)
        || addr == pfqf_hena(0)
        || addr == pfqf_hena(1)
        || (0x24_5400..0x24_5400 + 8 * 128).contains(&addr) // PFQF_HREGION(0..7) (docs/hw/i40e.md §6.11)
        || (0x26_9D00..0x26_9D00 + 64 * 4).contains(&addr) // GLQF_HSYM(0..63) (docs/hw/i40e.md §6.11)
        || (0x26_7200..0x26_7200 + 8 * 64).contains(&addr) // GLQF_FD_MSK (docs/hw/i40e.md §6.11)
        || (0x26_7600..0x26_7600 + 8 * 64).contains(&addr)
        || (0x26_7A00..0x26_7A00 + 8 * 64).contains(&addr)
        || (PRTQF_FD_INSET..PRTQF_FD_INSET + 64 * 64).contains(&addr)
}

impl Core {
    /// One command's semantics, after the generic checks and the typed decode: what depends on the device's
    /// state (the VSI's SEID, the API version, buffer contents) is checked here.
    pub(super) fn command(&mut self, shared: &X710State, d: &Desc, cmd: Command, buf: &mut [u8]) -> Outcome {
        let c = &shared.config;
        let op = d.opcode;
        let mut p = d.params;
        let ok = |params: [u8; 16], write_buf: bool| Outcome { rc: AqRc::Ok, params, datalen: None, write_buf };
        let fail = |core: &Core, rc: AqRc, why: String| {
            core.aq_fault(shared, op, why);
            Outcome { rc, params: d.params, datalen: None, write_buf: false }
        };
        match cmd {
            Command::GetVersion => {
                put32(&mut p, 0, c.rom_ver);
                put32(&mut p, 4, c.fw_build);
                put16(&mut p, 8, c.fw_version.0);
                put16(&mut p, 10, c.fw_version.1);
                put16(&mut p, 12, c.api_version.0);
                put16(&mut p, 14, c.api_version.1);
                ok(p, false)
            }
            Command::DriverVersion { version } => {
                // docs/hw/i40e.md §6.1: the name is ASCII, at most 32 characters.
                if buf.len() > 32 || !buf.iter().all(|b| b.is_ascii()) {
                    return fail(self, AqRc::Einval, format!("driver name of {} bytes, not ASCII ≤ 32", buf.len()));
                }
                let name = String::from_utf8_lossy(buf).trim_end_matches('\0').to_string();
                self.aq.driver_version = Some((version, name));
                ok(p, false)
            }
            Command::QueueShutdown { .. } => {
                self.link.lse = false;
                ok(p, false)
            }
            Command::SetPfContext { pf_id } => {
                if pf_id != c.pf_id {
                    return fail(self, AqRc::Einval, format!("pf_id {pf_id} is not this PF ({})", c.pf_id));
                }
                ok(p, false)
            }
            // The NVM is granted at once and released without fuss.
            Command::Resource { .. } => ok(p, false),
            Command::ListCaps { pf_index } => {
                if pf_index.is_some_and(|i| i != c.pf_id) {
                    return fail(self, AqRc::Einval, format!("pf_index {pf_index:?} is not this PF ({})", c.pf_id));
                }
                self.list_caps(shared, d, p, buf)
            }
            Command::MacAddressRead => {
                if buf.len() < MAC_READ_LEN {
                    return fail(
                        self,
                        AqRc::Einval,
                        format!("buffer of {} bytes, 24 needed (docs/hw/i40e.md §6.4)", buf.len()),
                    );
                }
                buf[0..6].copy_from_slice(&c.mac);
                buf[12..18].copy_from_slice(&c.mac);
                // LAN and port addresses valid (docs/hw/i40e.md §6.4).
                put16(&mut p, 0, 0x10 | 0x40);
                ok(p, true)
            }
            Command::ClearPxeMode { .. } => ok(p, false),
            Command::PortTx { suspend: Some(seid) } => {
                let mac_seid = MAC_SEID_BASE + u16::from(c.port);
                if seid != mac_seid {
                    return fail(
                        self,
                        AqRc::Enoent,
                        format!("seid {seid:#x} is not the port's MAC ({mac_seid:#x}, docs/hw/i40e.md §6.14)"),
                    );
                }
                self.tx_suspended = true;
                ok(p, false)
            }
            Command::PortTx { suspend: None } => {
                // docs/hw/i40e.md §6.14: resuming a port that is not suspended succeeds.
                self.tx_suspended = false;
                ok(p, false)
            }
            Command::GetSwitchConfig { start_seid } => {
                if start_seid != 0 {
                    return fail(self, AqRc::Einval, format!("start SEID {start_seid}: the switch has one element"));
                }
                if buf.len() < SWITCH_HEADER + SWITCH_ELEMENT {
                    return fail(
                        self,
                        AqRc::Einval,
                        format!("buffer of {} bytes, 32 needed (docs/hw/i40e.md §6.5)", buf.len()),
                    );
                }
                put16(buf, 0, 1);
                put16(buf, 2, 1);
                let e = &mut buf[SWITCH_HEADER..SWITCH_HEADER + SWITCH_ELEMENT];
                e[0] = 19; // VSI
                e[1] = 1;
                put16(e, 2, vsi_seid(c));
                put16(e, 4, MAC_SEID_BASE + u16::from(c.port));
                put16(e, 6, 0);
                e[11] = 1; // regular
                put16(&mut p, 0, 0);
                ok(p, true)
            }
            Command::SetSwitchConfig { .. } => ok(p, false),
            Command::DebugReadReg { address } => {
                // docs/hw/i40e.md §18.2: absolute addresses; the value's high word at 8, low word at 12.
                let value = if let Some(port) = prtgen_cnf_port(address) {
                    PRTGEN_CNF_PORT_DIS.val((port >= c.part.ports()).into())
                } else {
                    self.reg(address)
                };
                put32(&mut p, 8, 0);
                put32(&mut p, 12, value);
                ok(p, false)
            }
            Command::RxCtl { write, address, value } => {
                if !rx_ctl_register(address) {
                    return fail(self, AqRc::Einval, format!("register {address:#x} is not an RX control register"));
                }
                if write {
                    self.set_reg(address, value);
                } else {
                    put32(&mut p, 12, self.reg(address));
                }
                ok(p, false)
            }
            Command::Vsi { update, seid } => self.vsi_command(shared, d, update, seid, buf),
            Command::MacVlan { add, num_addresses, seid } => self.macvlan(shared, d, add, num_addresses, seid, buf),
            Command::SetPromisc { flags, valid_flags, seid, vlan_tag } => {
                if seid != vsi_seid(c) & 0x3FF {
                    return fail(self, AqRc::Einval, format!("seid {seid:#x} is not the VSI's ({:#x})", vsi_seid(c)));
                }
                if valid_flags & 0x8000 != 0 && c.api_version < (1, 5) {
                    return fail(self, AqRc::Einval, "RX_ONLY before API 1.5 (docs/hw/i40e.md §6.8)".into());
                }
                if vlan_tag & 0x8000 != 0 {
                    return fail(self, AqRc::Einval, "per-VLAN promiscuous mode is not modelled".into());
                }
                self.vsi.promisc = (self.vsi.promisc & !valid_flags) | (flags & valid_flags);
                ok(p, false)
            }
            Command::VsiBwLimit { seid, credit, .. } => {
                if seid != vsi_seid(c) {
                    return fail(self, AqRc::Enoent, format!("seid {seid:#x} is not the VSI's ({:#x})", vsi_seid(c)));
                }
                // The model does not shape: only "no limit" is something it does.
                if credit != 0 {
                    return fail(
                        self,
                        AqRc::Einval,
                        format!("a limit of {credit} × 50 Mb/s: TX shaping is not modelled"),
                    );
                }
                ok(p, false)
            }
            Command::QueryVsiBw { seid, ets } => {
                if seid != vsi_seid(c) {
                    return fail(self, AqRc::Enoent, format!("seid {seid:#x} is not the VSI's ({:#x})", vsi_seid(c)));
                }
                // docs/hw/i40e.md §6.13: TC0 only, no limits; the plain form also names TC0's queue set.
                let need = if ets { 32 } else { 64 };
                if buf.len() < need {
                    return fail(self, AqRc::Einval, format!("buffer of {} bytes, {need} needed", buf.len()));
                }
                buf.fill(0);
                buf[0] = 0x01;
                if ets {
                    buf[4] = 1; // TC0's share credits
                } else {
                    put16(buf, 16, qs_handle(c));
                    for tc in 1..8 {
                        put16(buf, 16 + 2 * tc, 0xFFFF);
                    }
                }
                ok(p, true)
            }
            Command::VsiTcBw { seid } => {
                if seid != vsi_seid(c) {
                    return fail(self, AqRc::Enoent, format!("seid {seid:#x} is not the VSI's ({:#x})", vsi_seid(c)));
                }
                if buf.len() != TC_BW_LEN {
                    return fail(
                        self,
                        AqRc::Einval,
                        format!("buffer of {} bytes, 32 expected (docs/hw/i40e.md §6.6)", buf.len()),
                    );
                }
                if buf[0] != 0x01 || buf[5..12].iter().any(|&b| b != 0) || buf[4] == 0 {
                    return fail(
                        self,
                        AqRc::Einval,
                        format!("tc_valid_bits {:#x} / credits {:?}: the model has TC0 only", buf[0], &buf[4..12]),
                    );
                }
                put16(buf, 16, qs_handle(c));
                for tc in 1..8 {
                    put16(buf, 16 + 2 * tc, 0xFFFF);
                }
                ok(p, true)
            }
            Command::GetPhyAbilities { report_init, .. } => {
                if buf.len() < PHY_ABILITIES_HEAD {
                    return fail(
                        self,
                        AqRc::Einval,
                        format!("buffer of {} bytes, 24 at least (docs/hw/i40e.md §7.1)", buf.len()),
                    );
                }
                self.phy_abilities(c, report_init, buf);
                ok(p, true)
            }
            Command::SetPhyConfig { phy_type, link_speed, abilities, phy_type_ext, .. } => {
                // The link comes up only with ENABLE_LINK (0x08) and this part's PHY type and speed requested.
                let t = c.part.phy_type();
                let type_ok = if t < 32 { phy_type & (1 << t) != 0 } else { phy_type_ext & 0x04 != 0 };
                self.link.enabled = abilities & 0x08 != 0 && type_ok && link_speed & c.part.speed_bit() != 0;
                self.link.phy_config = Some((phy_type, link_speed, phy_type_ext));
                self.link.pause = abilities & super::PHY_PAUSE_MASK;
                ok(p, false)
            }
            Command::SetMacConfig { max_frame_size, crc_en, drop_blocking } => {
                if drop_blocking && c.api_version < (1, 8) {
                    return fail(self, AqRc::Einval, "drop-blocking before API 1.8 (docs/hw/i40e.md §7.3)".into());
                }
                // docs/hw/i40e.md §7.3: on some parts the MAC takes its configuration only with the link up.
                if c.mac_config_needs_link && !self.link_up(shared, std::time::Instant::now()) {
                    return ok(p, false);
                }
                self.link.max_frame = max_frame_size;
                self.link.crc_en = crc_en;
                ok(p, false)
            }
            Command::SetLinkRestartAn { enable_link, .. } => {
                if enable_link {
                    self.link.enabled = true;
                }
                ok(p, false)
            }
            Command::GetLinkStatus { lse } => {
                match lse {
                    Lse::Nop => {}
                    Lse::Disable => self.link.lse = false,
                    Lse::Enable => self.link.lse = true,
                }
                let up = self.link_up(shared, std::time::Instant::now());
                ok(self.link_status_params(shared, up), false)
            }
            Command::SetPhyIntMask { event_mask } => {
                self.link.event_mask = event_mask;
                ok(p, false)
            }
            Command::SetLoopback { mode } => {
                // 0x4 (MAC local) is the X722's; the XL710 family uses 0x1 (docs/hw/i40e.md §7.6).
                if !matches!(mode, 0..=2) {
                    return fail(
                        self,
                        AqRc::Einval,
                        format!("lb_mode {mode:#x} (0, 0x1 or 0x2 on this part, docs/hw/i40e.md §7.6)"),
                    );
                }
                self.link.loopback = mode;
                ok(p, false)
            }
            Command::Lldp { .. } => ok(p, false),
            Command::RssKey { set, vsi_id } => self.rss_command(shared, d, set, vsi_id, None, buf),
            Command::RssLut { set, vsi_id, pf_table } => self.rss_command(shared, d, set, vsi_id, Some(pf_table), buf),
        }
    }

    fn list_caps(&mut self, shared: &X710State, d: &Desc, mut p: [u8; 16], buf: &mut [u8]) -> Outcome {
        let c = &shared.config;
        let q = u32::from(c.num_queues);
        let first = u32::from(c.first_queue);
        let mut caps: Vec<(u16, u32, u32, u32)> = vec![
            (cap::SWITCH_MODE, 0, 0, 0),
            (cap::VSI, VSIS, 0, 0),
            // DCB present, enabled TC map 0x1 (TC0), one TC (docs/hw/i40e.md §6.2): DPDK's PMD refuses a main VSI
            // whose TC map is not within the reported one.
            (cap::DCB, 1, 0x1, 1),
            (cap::RSS, c.rss_table_size.into(), 6, 0),
            (cap::RXQ, q, 0, first),
            (cap::TXQ, q, 0, first),
            (cap::MSIX, c.msix_vectors.into(), 0, 0),
        ];
        if c.flow_director {
            // number = guaranteed filters, logical_id = best-effort ones (docs/hw/i40e.md §6.2).
            caps.push((cap::FLOW_DIRECTOR, c.fd_filters.0, c.fd_filters.1, 0));
        }
        let need = caps.len() * CAP_LEN;
        if buf.len() < need {
            // docs/hw/i40e.md §6.2: ENOMEM with the size needed in datalen; count means nothing.
            return Outcome { rc: AqRc::Enomem, params: d.params, datalen: Some(need as u16), write_buf: false };
        }
        for (i, (id, number, logical, phys)) in caps.iter().enumerate() {
            let e = &mut buf[i * CAP_LEN..(i + 1) * CAP_LEN];
            put16(e, 0, *id);
            e[2] = 1;
            put32(e, 4, *number);
            put32(e, 8, *logical);
            put32(e, 12, *phys);
        }
        put32(&mut p, 4, caps.len() as u32);
        Outcome { rc: AqRc::Ok, params: p, datalen: None, write_buf: true }
    }

    fn vsi_command(&mut self, shared: &X710State, d: &Desc, update: bool, seid: u16, buf: &mut [u8]) -> Outcome {
        let mut p = d.params;
        let c = &shared.config;
        let fail = |core: &Core, rc, why: String| {
            core.aq_fault(shared, d.opcode, why);
            Outcome { rc, params: d.params, datalen: None, write_buf: false }
        };
        if seid != vsi_seid(c) {
            return fail(
                self,
                AqRc::Enoent,
                format!("seid {seid:#x} is not the main VSI's ({:#x}, docs/hw/i40e.md §6.5)", vsi_seid(c)),
            );
        }
        if buf.len() != VSI_PROPS_LEN {
            return fail(
                self,
                AqRc::Einval,
                format!("buffer of {} bytes, 128 expected (docs/hw/i40e.md §6.6)", buf.len()),
            );
        }
        if update {
            if let Err(why) = self.update_vsi(c, buf) {
                return fail(self, AqRc::Einval, why.to_string());
            }
        } else {
            buf[..96].copy_from_slice(&self.vsi.props[..96]);
            put16(buf, 96, qs_handle(c));
            for tc in 1..8 {
                put16(buf, 96 + 2 * tc, 0xFFFF);
            }
            put16(buf, 112, vsi_stat_index(c) as u16);
            put16(buf, 114, 0);
        }
        put16(&mut p, 0, vsi_seid(c));
        put16(&mut p, 2, vsi_number(c));
        put16(&mut p, 4, 1);
        put16(&mut p, 6, (VSIS - 1) as u16);
        Outcome { rc: AqRc::Ok, params: p, datalen: None, write_buf: !update }
    }

    /// Update VSI (docs/hw/i40e.md §6.6): the sections named in valid_sections take effect.
    fn update_vsi(&mut self, c: &X710Config, b: &[u8]) -> Result<(), Error> {
        const SWITCH: u16 = 0x1;
        const SECURITY: u16 = 0x2;
        const VLAN: u16 = 0x4;
        const QUEUE_MAP: u16 = 0x40;
        const QUEUE_OPT: u16 = 0x80;
        let valid = le16(b, 0);
        if valid & !(SWITCH | SECURITY | VLAN | QUEUE_MAP | QUEUE_OPT) != 0 {
            return Err(Error::Violation {
                at: format!("valid_sections {valid:#x}"),
                rule: "the model applies switch, security, VLAN, queue map and queue options only".into(),
            });
        }
        if valid & VLAN != 0 {
            let f = b[12];
            let mode = f & 0x3;
            if mode == 0 || f & 0x4 != 0 || f & !0x1F != 0 {
                return Err(Error::Violation {
                    at: format!("port_vlan_flags {f:#x}"),
                    rule: "MODE 0 is invalid, PVID insertion is not modelled (docs/hw/i40e.md §6.6)".into(),
                });
            }
            self.vsi.vlan_mode = mode;
            // EMOD (bits 4:3): 0 and 0x10 strip the tag into the descriptor; 0x08 (priority only) and 0x18 leave it.
            self.vsi.strip_vlan = matches!(f & 0x18, 0x00 | 0x10);
        }
        if valid & QUEUE_MAP != 0 {
            let mapping = le16(b, 28);
            if mapping != 0 {
                return Err(Error::Violation {
                    at: format!("mapping_flags {mapping}"),
                    rule: "only contiguous (0) mapping is modelled".into(),
                });
            }
            let base = le16(b, 30) & 0x7FF;
            let tc0 = le16(b, 62);
            if tc0 & 0x1FF != 0 || tc0 & !0xFFF != 0 {
                return Err(Error::Violation {
                    at: format!("tc_mapping[0] {tc0:#x}"),
                    rule: "TC0's queue offset must be 0 (docs/hw/i40e.md §6.6)".into(),
                });
            }
            if (1..8).any(|tc| le16(b, 62 + 2 * tc) != 0) {
                return Err(Error::Violation {
                    at: "tc_mapping[1..7] not zero".into(),
                    rule: "the model has TC0 only".into(),
                });
            }
            let count = 1u16 << (tc0 >> 9);
            if count > 64 || usize::from(base) + usize::from(count) > usize::from(c.num_queues) {
                return Err(Error::Violation { at: "queue map".into(), rule: format!("base {base}, {count} queues, past this PF's {} queues (or more than 64 per TC, docs/hw/i40e.md §15)", c.num_queues) });
            }
            self.vsi.queue_base = base;
            self.vsi.queue_count = count;
        }
        if valid & QUEUE_OPT != 0 && b[78] & 0x40 != 0 {
            return Err(Error::Violation {
                at: String::new(),
                rule: "queueing_opt_flags 0x40 (the VSI's own RSS LUT) is not modelled".into(),
            });
        }
        for (i, v) in b[..96].iter().enumerate() {
            let section_of = |i: usize| match i {
                2..=7 => SWITCH | SECURITY,
                8..=15 => VLAN,
                28..=77 => QUEUE_MAP,
                78..=81 => QUEUE_OPT,
                _ => 0,
            };
            if valid & section_of(i) != 0 {
                self.vsi.props[i] = *v;
            }
        }
        put16(&mut self.vsi.props, 0, 0);
        Ok(())
    }

    fn macvlan(
        &mut self,
        shared: &X710State,
        d: &Desc,
        add: bool,
        num: u16,
        seid: [u16; 3],
        buf: &mut [u8],
    ) -> Outcome {
        let mut p = d.params;
        let c = &shared.config;
        let fail = |core: &Core, rc, why: String| {
            core.aq_fault(shared, d.opcode, why);
            Outcome { rc, params: d.params, datalen: None, write_buf: false }
        };
        let [seid0, seid1, seid2] = seid;
        if seid0 != vsi_seid(c) | SEID_VALID || seid1 != 0 || seid2 != 0 {
            return fail(
                self,
                AqRc::Einval,
                format!("seid[] = {seid0:#x}, {seid1:#x}, {seid2:#x}: want the VSI's SEID | 0x8000, 0, 0 (docs/hw/i40e.md §6.7)"),
            );
        }
        if num == 0 || buf.len() != usize::from(num) * MACVLAN_LEN {
            return fail(
                self,
                AqRc::Einval,
                format!("{num} addresses in a {}-byte buffer (16 each, docs/hw/i40e.md §6.7)", buf.len()),
            );
        }
        let mut rc = AqRc::Ok;
        for e in buf.chunks_exact_mut(MACVLAN_LEN) {
            let mac: [u8; 6] = e[0..6].try_into().expect("6");
            let vlan = le16(e, 6);
            if add {
                let flags = le16(e, 8);
                if flags & !0x1F != 0 || flags & 0x3 == 0 || (flags & 0x8 == 0 && le16(e, 10) != 0) {
                    return fail(
                        self,
                        AqRc::Einval,
                        format!("add element flags {flags:#x} / queue {} (docs/hw/i40e.md §6.7)", le16(e, 10)),
                    );
                }
                if flags & 0x8 != 0 {
                    return fail(self, AqRc::Einval, "TO_QUEUE filters are not modelled".into());
                }
                if flags & 0x1 == 0 {
                    e[12] = 0xFF; // hash filters are not modelled: out of resources
                    rc = AqRc::Enospc;
                    continue;
                }
                let f = MacFilter { mac, vlan: (flags & 0x4 == 0).then_some(vlan & 0xFFF) };
                if !self.vsi.filters.contains(&f) {
                    if self.vsi.filters.len() >= usize::from(PERFECT_FILTERS) {
                        e[12] = 0xFF;
                        rc = AqRc::Enospc;
                        continue;
                    }
                    self.vsi.filters.push(f);
                }
                e[12] = 1;
            } else {
                let flags = e[8];
                if flags & !0x1B != 0 || flags & 0x3 == 0 {
                    return fail(self, AqRc::Einval, format!("remove element flags {flags:#x} (docs/hw/i40e.md §6.7)"));
                }
                let f = MacFilter { mac, vlan: (flags & 0x8 == 0).then_some(vlan & 0xFFF) };
                let before = self.vsi.filters.len();
                self.vsi.filters.retain(|x| *x != f);
                if self.vsi.filters.len() == before {
                    e[12] = 0xFF;
                    rc = AqRc::Enoent;
                } else {
                    e[12] = 0;
                }
            }
        }
        let used = self.vsi.filters.len() as u16;
        put16(&mut p, 0, used);
        put16(&mut p, 2, PERFECT_FILTERS - used);
        put16(&mut p, 4, 0);
        put16(&mut p, 6, 0);
        Outcome { rc, params: p, datalen: None, write_buf: true }
    }

    /// Set / Get RSS Key (`table` None) or LUT (`table` Some(PF table?)), docs/hw/i40e.md §12.3.
    fn rss_command(
        &mut self,
        shared: &X710State,
        d: &Desc,
        set: bool,
        vsi_id: u16,
        table: Option<bool>,
        buf: &mut [u8],
    ) -> Outcome {
        let p = d.params;
        let c = &shared.config;
        let fail = |core: &Core, why: String| {
            core.aq_fault(shared, d.opcode, why);
            Outcome { rc: AqRc::Einval, params: d.params, datalen: None, write_buf: false }
        };
        if vsi_id != vsi_number(c) | SEID_VALID {
            return fail(
                self,
                format!("vsi_id {vsi_id:#x}: want vsi_number {} | 0x8000 (docs/hw/i40e.md §12.3)", vsi_number(c)),
            );
        }
        match table {
            None => {
                if buf.len() != RSS_KEY_LEN {
                    return fail(
                        self,
                        format!("key buffer of {} bytes, 52 expected (docs/hw/i40e.md §12.3)", buf.len()),
                    );
                }
                for (i, chunk) in buf.chunks_exact_mut(4).enumerate() {
                    if set {
                        let v = u32::from_le_bytes(chunk.try_into().expect("4"));
                        self.set_reg(pfqf_hkey(i), v);
                    } else {
                        chunk.copy_from_slice(&self.reg(pfqf_hkey(i)).to_le_bytes());
                    }
                }
            }
            Some(pf_table) => {
                if !pf_table {
                    return fail(
                        self,
                        "the VSI's own table (type 0) is not modelled, only the PF's (docs/hw/i40e.md §12.3)".into(),
                    );
                }
                if !matches!(buf.len(), 128 | 512) || buf.len() > usize::from(c.rss_table_size) {
                    return fail(self, format!("table of {} entries (128 or 512, docs/hw/i40e.md §12.3)", buf.len()));
                }
                for (i, chunk) in buf.chunks_exact_mut(4).enumerate() {
                    if set {
                        let v = u32::from_le_bytes(chunk.try_into().expect("4"));
                        self.set_reg(pfqf_hlut(i), v);
                    } else {
                        chunk.copy_from_slice(&self.reg(pfqf_hlut(i)).to_le_bytes());
                    }
                }
            }
        }
        let write_buf = !set;
        Outcome { rc: AqRc::Ok, params: p, datalen: None, write_buf }
    }

    fn phy_abilities(&self, c: &X710Config, initial: bool, buf: &mut [u8]) {
        match self.link.phy_config {
            // The current configuration is what Set PHY Config last asked for, e.g. phy_type 0 after a link-down
            // configuration (docs/hw/i40e.md §7.2), restricted to what this part has.
            Some((phy_type, speed, ext)) if !initial => {
                let t = c.part.phy_type();
                let mine = if t < 32 { 1u32 << t } else { 0 };
                put32(buf, 0, phy_type & mine);
                buf[13] = if t < 32 { 0 } else { ext & 0x04 };
                buf[4] = speed & c.part.speed_bit();
            }
            _ => {
                let t = c.part.phy_type();
                if t < 32 {
                    put32(buf, 0, 1 << t);
                } else {
                    buf[13] = 0x04; // 25GBASE-SR in phy_type_ext (docs/hw/i40e.md §7.1)
                }
                buf[4] = c.part.speed_bit();
            }
        }
        let enabled = initial || self.link.enabled;
        // link enabled 0x08, AN enabled 0x10, module qualified 0x20 (docs/hw/i40e.md §7.1).
        let pause = if initial { c.nvm_pause & super::PHY_PAUSE_MASK } else { self.link.pause };
        buf[5] = if enabled { 0x08 } else { 0 } | 0x10 | 0x20 | pause;
        put32(buf, 16, 0x7710_0000 | u32::from(c.part.device_id()));
    }

    /// The 16 parameter bytes of a Get Link Status response or link event (docs/hw/i40e.md §7.4).
    pub(crate) fn link_status_params(&self, shared: &X710State, up: bool) -> [u8; 16] {
        let c = &shared.config;
        let mut r = [0u8; 16];
        put16(&mut r, 0, self.link.lse.into());
        r[2] = c.part.phy_type();
        r[3] = if up { c.part.speed_bit() } else { 0 };
        let media = if self.link.cable { 0x40 | 0x80 } else { 0 };
        r[4] = if up { 0x01 | 0x20 } else { 0 } | media;
        r[5] = if up { 0x01 } else { 0 } | if self.link.cable { 0x80 } else { 0 };
        r[7] = self.link.loopback as u8 & 0x7;
        put16(&mut r, 8, self.link.max_frame);
        r[10] = if self.link.crc_en { 0x04 } else { 0 };
        r
    }
}

/// The port whose PRTGEN_CNF `address` is (docs/hw/i40e.md §18.2), if it is one.
fn prtgen_cnf_port(address: usize) -> Option<usize> {
    let rel = address.checked_sub(PRTGEN_CNF)?;
    (rel.is_multiple_of(4) && rel / 4 < 4).then_some(rel / 4)
}
