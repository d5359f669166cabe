//! Typed decoding of admin commands (docs/hw/i40e.md §6, §7, §12.3): for each opcode, how it uses the indirect
//! buffer, which parameter bytes it may set (the rest are reserved and must be zero), and its fields by name with
//! the values the notes allow. A decode error is a fault the firmware answers with EINVAL.

use super::adminq::{le16, le32};
use super::opcode::*;
use crate::Error;

/// How an opcode uses the indirect buffer (docs/hw/i40e.md §5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Buf {
    /// Direct command: no BUF, datalen 0.
    None,
    /// The firmware writes the buffer: BUF without RD.
    Get,
    /// The firmware reads the buffer: BUF | RD.
    Set,
    /// A get that drivers send with RD as well (DPDK's get RSS key/LUT, docs/hw/i40e.md §5.4): RD allowed, not required.
    GetRdAllowed,
}

/// An opcode's buffer use and the parameter bytes (offset, length) a request may set. An indirect command's
/// bytes 8..16 hold the buffer address.
pub(super) struct Spec {
    pub buf: Buf,
    pub params: &'static [(usize, usize)],
}

/// The spec of `op`, or `None` for an opcode the model's firmware does not know.
pub(super) fn spec(op: u16, api: (u16, u16)) -> Option<Spec> {
    let s = |buf, params| Some(Spec { buf, params });
    match op {
        GET_VERSION => s(Buf::None, &[]),
        DRIVER_VERSION => s(Buf::Set, &[(0, 4)]),
        QUEUE_SHUTDOWN => s(Buf::None, &[(0, 4)]),
        SET_PF_CONTEXT => s(Buf::None, &[(0, 1)]),
        REQUEST_RESOURCE | RELEASE_RESOURCE => s(Buf::None, &[(0, 12)]),
        LIST_FUNC_CAPS | LIST_DEV_CAPS => s(Buf::Get, &[(0, 2), (4, 4)]),
        MAC_ADDRESS_READ => s(Buf::Get, &[(0, 2)]),
        CLEAR_PXE_MODE => s(Buf::None, &[(0, 1)]),
        GET_SWITCH_CONFIG => s(Buf::Get, &[(0, 2)]),
        SET_SWITCH_CONFIG => s(Buf::None, &[(0, 11)]),
        // From API 1.5 on (docs/hw/i40e.md §6.11); older firmware does not know them.
        RX_CTL_READ if api >= (1, 5) => s(Buf::None, &[(4, 4)]),
        RX_CTL_WRITE if api >= (1, 5) => s(Buf::None, &[(4, 4), (12, 4)]),
        UPDATE_VSI => s(Buf::Set, &[(0, 2)]),
        GET_VSI_PARAMS => s(Buf::Get, &[(0, 2)]),
        ADD_MACVLAN | REMOVE_MACVLAN => s(Buf::Set, &[(0, 8)]),
        SET_VSI_PROMISC => s(Buf::None, &[(0, 8)]),
        VSI_TC_BW => s(Buf::Set, &[(0, 2)]),
        VSI_BW_LIMIT => s(Buf::None, &[(0, 2), (4, 2), (8, 1)]),
        QUERY_VSI_BW | QUERY_VSI_ETS_SLA => s(Buf::Get, &[(0, 2)]),
        SUSPEND_PORT_TX => s(Buf::None, &[(0, 2)]),
        RESUME_PORT_TX => s(Buf::None, &[]),
        GET_PHY_ABILITIES => s(Buf::Get, &[(0, 2)]),
        SET_PHY_CONFIG => s(Buf::None, &[(0, 15)]),
        SET_MAC_CONFIG => s(Buf::None, &[(0, 8)]),
        SET_LINK_RESTART_AN => s(Buf::None, &[(0, 1)]),
        GET_LINK_STATUS => s(Buf::None, &[(0, 2)]),
        SET_PHY_INT_MASK => s(Buf::None, &[(8, 2)]),
        SET_LOOPBACK => s(Buf::None, &[(0, 2)]),
        LLDP_STOP | LLDP_START => s(Buf::None, &[(0, 1)]),
        SET_RSS_KEY => s(Buf::Set, &[(0, 2)]),
        SET_RSS_LUT => s(Buf::Set, &[(0, 4)]),
        GET_RSS_KEY => s(Buf::GetRdAllowed, &[(0, 2)]),
        GET_RSS_LUT => s(Buf::GetRdAllowed, &[(0, 4)]),
        DEBUG_READ_REG => s(Buf::None, &[(4, 4)]),
        _ => None,
    }
}

/// Get Link Status command_flags (docs/hw/i40e.md §7.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lse {
    Nop,
    Disable,
    Enable,
}

/// A decoded admin command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Command {
    GetVersion,
    /// docs/hw/i40e.md §6.1: major, minor, build, sub-build.
    DriverVersion {
        version: [u8; 4],
    },
    QueueShutdown {
        driver_unloading: bool,
    },
    SetPfContext {
        pf_id: u8,
    },
    /// docs/hw/i40e.md §6.1: resource_id (1 = NVM), access_type, timeout, resource_number.
    Resource {
        release: bool,
        resource_id: u16,
        access_type: u16,
    },
    /// docs/hw/i40e.md §6.2: PF_INDEX_EN and pf_index.
    ListCaps {
        pf_index: Option<u8>,
    },
    MacAddressRead,
    ClearPxeMode {
        rx_cnt: u8,
    },
    /// docs/hw/i40e.md §6.5: the SEID to start from.
    GetSwitchConfig {
        start_seid: u16,
    },
    /// docs/hw/i40e.md §6.5: flags, valid_flags (0x1 PROMISC, 0x2 L2_FILTER, 0x4 HW_ATR_EVICT, 0x8 OUTER_VLAN), the tags, mode.
    SetSwitchConfig {
        flags: u16,
        valid_flags: u16,
    },
    /// docs/hw/i40e.md §18.2: the register's address at 4.
    DebugReadReg {
        address: usize,
    },
    /// docs/hw/i40e.md §6.11: register address at 4, value at 12.
    RxCtl {
        write: bool,
        address: usize,
        value: u32,
    },
    /// docs/hw/i40e.md §6.6: the VSI's SEID.
    Vsi {
        update: bool,
        seid: u16,
    },
    /// docs/hw/i40e.md §6.7: num_addresses and seid[0..3].
    MacVlan {
        add: bool,
        num_addresses: u16,
        seid: [u16; 3],
    },
    /// docs/hw/i40e.md §6.8.
    SetPromisc {
        flags: u16,
        valid_flags: u16,
        seid: u16,
        vlan_tag: u16,
    },
    /// docs/hw/i40e.md §6.6: the VSI's SEID.
    VsiTcBw {
        seid: u16,
    },
    /// docs/hw/i40e.md §6.13: the VSI; `ets` for the per-TC (ETS SLA) form.
    QueryVsiBw {
        seid: u16,
        ets: bool,
    },
    /// docs/hw/i40e.md §6.12: the VSI, its limit in 50 Mb/s credits (0: none), the burst exponent.
    VsiBwLimit {
        seid: u16,
        credit: u16,
        max_credit: u8,
    },
    /// docs/hw/i40e.md §6.14: `Some(seid)` suspends the port's TX (the SEID of its MAC), `None` resumes it.
    PortTx {
        suspend: Option<u16>,
    },
    /// docs/hw/i40e.md §7.1: param0 bit 0 qualified modules, bit 1 initial values.
    GetPhyAbilities {
        qualified_modules: bool,
        report_init: bool,
    },
    /// docs/hw/i40e.md §7.2.
    SetPhyConfig {
        phy_type: u32,
        link_speed: u8,
        abilities: u8,
        phy_type_ext: u8,
        fec_config: u8,
    },
    /// docs/hw/i40e.md §7.3.
    SetMacConfig {
        max_frame_size: u16,
        crc_en: bool,
        drop_blocking: bool,
    },
    /// docs/hw/i40e.md §7.6: 0x02 restart AN, 0x04 link enable.
    SetLinkRestartAn {
        restart: bool,
        enable_link: bool,
    },
    GetLinkStatus {
        lse: Lse,
    },
    /// docs/hw/i40e.md §7.6: a set bit suppresses the event.
    SetPhyIntMask {
        event_mask: u16,
    },
    /// docs/hw/i40e.md §7.6: lb_mode.
    SetLoopback {
        mode: u16,
    },
    Lldp {
        start: bool,
    },
    /// docs/hw/i40e.md §12.3: vsi_id = vsi_number | 0x8000.
    RssKey {
        set: bool,
        vsi_id: u16,
    },
    /// docs/hw/i40e.md §12.3: vsi_id, and flags bit 0 the table type (1 the PF's).
    RssLut {
        set: bool,
        vsi_id: u16,
        pf_table: bool,
    },
}

/// Valid bit of the SEIDs in MAC-VLAN commands and of vsi_id in the RSS commands (docs/hw/i40e.md §6.7, §12.3).
pub(super) const SEID_VALID: u16 = 0x8000;

impl Command {
    /// Decodes the parameters of `op` (whose spec exists), checking the values each field may take.
    pub(super) fn decode(op: u16, p: &[u8; 16]) -> Result<Command, Error> {
        let bad = |at: String, rule: String| Err(Error::Violation { at, rule });
        Ok(match op {
            GET_VERSION => Command::GetVersion,
            DRIVER_VERSION => Command::DriverVersion { version: p[0..4].try_into().expect("4 bytes") },
            QUEUE_SHUTDOWN => {
                let v = le32(p, 0);
                if v & !1 != 0 {
                    return bad(
                        format!("param {v:#x}"),
                        "only bit 0 (driver unloading) exists (docs/hw/i40e.md §6.1)".into(),
                    );
                }
                Command::QueueShutdown { driver_unloading: v & 1 == 1 }
            }
            SET_PF_CONTEXT => Command::SetPfContext { pf_id: p[0] },
            REQUEST_RESOURCE | RELEASE_RESOURCE => {
                let resource_id = le16(p, 0);
                if resource_id != 1 {
                    return bad(
                        format!("resource_id {resource_id}"),
                        "only 1, the NVM, exists (docs/hw/i40e.md §6.1)".into(),
                    );
                }
                Command::Resource { release: op == RELEASE_RESOURCE, resource_id, access_type: le16(p, 2) }
            }
            LIST_FUNC_CAPS | LIST_DEV_CAPS => {
                let (flags, index) = (p[0], p[1]);
                if flags & !1 != 0 || (flags & 1 == 0 && index != 0) {
                    return bad(
                        format!("command_flags {flags:#x} / pf_index {index}"),
                        "not a valid request (docs/hw/i40e.md §6.2)".into(),
                    );
                }
                Command::ListCaps { pf_index: (flags & 1 == 1).then_some(index) }
            }
            MAC_ADDRESS_READ => {
                if le16(p, 0) != 0 {
                    return bad(
                        format!("command_flags {:#x}", le16(p, 0)),
                        "the response fills them (docs/hw/i40e.md §6.4)".into(),
                    );
                }
                Command::MacAddressRead
            }
            CLEAR_PXE_MODE => Command::ClearPxeMode { rx_cnt: p[0] },
            GET_SWITCH_CONFIG => Command::GetSwitchConfig { start_seid: le16(p, 0) },
            SET_SWITCH_CONFIG => {
                let valid_flags = le16(p, 2);
                if valid_flags & !0xF != 0 {
                    return bad(format!("valid_flags {valid_flags:#x}"), "(0x1 to 0x8, docs/hw/i40e.md §6.5)".into());
                }
                Command::SetSwitchConfig { flags: le16(p, 0), valid_flags }
            }
            QUERY_VSI_BW | QUERY_VSI_ETS_SLA => Command::QueryVsiBw { seid: le16(p, 0), ets: op == QUERY_VSI_ETS_SLA },
            SUSPEND_PORT_TX => Command::PortTx { suspend: Some(le16(p, 0)) },
            RESUME_PORT_TX => Command::PortTx { suspend: None },
            VSI_BW_LIMIT => Command::VsiBwLimit { seid: le16(p, 0), credit: le16(p, 4), max_credit: p[8] },
            DEBUG_READ_REG => Command::DebugReadReg { address: le32(p, 4) as usize },
            RX_CTL_READ | RX_CTL_WRITE => {
                Command::RxCtl { write: op == RX_CTL_WRITE, address: le32(p, 4) as usize, value: le32(p, 12) }
            }
            UPDATE_VSI | GET_VSI_PARAMS => Command::Vsi { update: op == UPDATE_VSI, seid: le16(p, 0) },
            ADD_MACVLAN | REMOVE_MACVLAN => Command::MacVlan {
                add: op == ADD_MACVLAN,
                num_addresses: le16(p, 0),
                seid: [le16(p, 2), le16(p, 4), le16(p, 6)],
            },
            SET_VSI_PROMISC => {
                const KNOWN: u16 = 0x1F | 0x8000;
                let (flags, valid_flags, seid, vlan_tag) = (le16(p, 0), le16(p, 2), le16(p, 4), le16(p, 6));
                if (flags | valid_flags) & !KNOWN != 0 || flags & !valid_flags != 0 {
                    return bad(
                        format!("promiscuous_flags {flags:#x} / valid_flags {valid_flags:#x}"),
                        "(docs/hw/i40e.md §6.8)".into(),
                    );
                }
                if seid & !0x3FF != 0 {
                    return bad(format!("seid {seid:#x}"), "bits 9:0 only (docs/hw/i40e.md §6.8)".into());
                }
                if vlan_tag & 0x7000 != 0 {
                    return bad(
                        format!("vlan_tag {vlan_tag:#x}"),
                        "bits 11:0 and valid bit 15 (docs/hw/i40e.md §6.8)".into(),
                    );
                }
                Command::SetPromisc { flags, valid_flags, seid, vlan_tag }
            }
            VSI_TC_BW => Command::VsiTcBw { seid: le16(p, 0) },
            GET_PHY_ABILITIES => {
                let v = le16(p, 0);
                if v & !3 != 0 {
                    return bad(format!("param0 {v:#x}"), "bits 0 and 1 exist (docs/hw/i40e.md §7.1)".into());
                }
                Command::GetPhyAbilities { qualified_modules: v & 1 != 0, report_init: v & 2 != 0 }
            }
            SET_PHY_CONFIG => {
                let abilities = p[5];
                if abilities & 0xC0 != 0 {
                    return bad(
                        format!("abilities {abilities:#x}"),
                        "bits 7:6 are reserved (docs/hw/i40e.md §7.2)".into(),
                    );
                }
                if p[14] & !0x1F != 0 {
                    return bad(format!("fec_config {:#x}", p[14]), "bits 4:0 exist (docs/hw/i40e.md §7.2)".into());
                }
                Command::SetPhyConfig {
                    phy_type: le32(p, 0),
                    link_speed: p[4],
                    abilities,
                    phy_type_ext: p[13],
                    fec_config: p[14],
                }
            }
            SET_MAC_CONFIG => {
                let max_frame_size = le16(p, 0);
                if !(64..=9728).contains(&max_frame_size) {
                    return bad(
                        format!("max_frame_size {max_frame_size}"),
                        "(at most 9728, docs/hw/i40e.md §7.3, §15)".into(),
                    );
                }
                if p[2] & 0x03 != 0 {
                    return bad(format!("params {:#x}", p[2]), "bits 1:0 are reserved (docs/hw/i40e.md §7.3)".into());
                }
                Command::SetMacConfig { max_frame_size, crc_en: p[2] & 0x04 != 0, drop_blocking: p[2] & 0x80 != 0 }
            }
            SET_LINK_RESTART_AN => {
                if p[0] & !0x06 != 0 {
                    return bad(
                        format!("command {:#x}", p[0]),
                        "0x02 restart, 0x04 link enable (docs/hw/i40e.md §7.6)".into(),
                    );
                }
                Command::SetLinkRestartAn { restart: p[0] & 0x02 != 0, enable_link: p[0] & 0x04 != 0 }
            }
            GET_LINK_STATUS => Command::GetLinkStatus {
                lse: match le16(p, 0) {
                    0 => Lse::Nop,
                    2 => Lse::Disable,
                    3 => Lse::Enable,
                    f => {
                        return bad(
                            format!("command_flags {f:#x}"),
                            "(0 NOP, 2 disable, 3 enable, docs/hw/i40e.md §7.4)".into(),
                        )
                    }
                },
            },
            SET_PHY_INT_MASK => Command::SetPhyIntMask { event_mask: le16(p, 8) },
            SET_LOOPBACK => Command::SetLoopback { mode: le16(p, 0) },
            LLDP_STOP | LLDP_START => Command::Lldp { start: op == LLDP_START },
            SET_RSS_KEY | GET_RSS_KEY => Command::RssKey { set: op == SET_RSS_KEY, vsi_id: le16(p, 0) },
            SET_RSS_LUT | GET_RSS_LUT => {
                let flags = le16(p, 2);
                if flags & !1 != 0 {
                    return bad(format!("flags {flags:#x}"), "bit 0 (table type) only (docs/hw/i40e.md §12.3)".into());
                }
                Command::RssLut { set: op == SET_RSS_LUT, vsi_id: le16(p, 0), pf_table: flags & 1 == 1 }
            }
            _ => unreachable!("decode is called only for opcodes with a spec"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_come_from_their_offsets() {
        let mut p = [0u8; 16];
        p[0..2].copy_from_slice(&0x0004u16.to_le_bytes());
        p[2..4].copy_from_slice(&0x0005u16.to_le_bytes());
        p[4..6].copy_from_slice(&0x0201u16.to_le_bytes());
        assert_eq!(
            Command::decode(SET_VSI_PROMISC, &p),
            Ok(Command::SetPromisc { flags: 4, valid_flags: 5, seid: 0x201, vlan_tag: 0 })
        );
        p[0] = 0x08;
        assert!(Command::decode(SET_VSI_PROMISC, &p).is_err(), "a flag outside valid_flags");
        let mut m = [0u8; 16];
        m[0..2].copy_from_slice(&9000u16.to_le_bytes());
        m[2] = 0x04;
        assert_eq!(
            Command::decode(SET_MAC_CONFIG, &m),
            Ok(Command::SetMacConfig { max_frame_size: 9000, crc_en: true, drop_blocking: false })
        );
        m[2] = 0x05;
        assert!(Command::decode(SET_MAC_CONFIG, &m).is_err());
    }
}
