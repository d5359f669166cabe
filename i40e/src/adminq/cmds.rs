//! The admin-queue commands this driver sends, as typed layouts of the 16 parameter bytes (descriptor bytes 16 to
//! 31) and of their buffers, at the byte offsets docs/hw/i40e.md §6 and §7 give. For an indirect command the last
//! eight parameter bytes are the buffer address, which [`super::AdminQueue::send`] fills in; the layouts below do
//! not declare them.

use super::layout::aq_layout;

/// Admin-queue opcodes (docs/hw/i40e.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Opcode {
    /// Get Version.
    GetVersion = 0x0001,
    /// Driver Version.
    DriverVersion = 0x0002,
    /// Queue Shutdown.
    QueueShutdown = 0x0003,
    /// List Function Capabilities.
    ListFuncCaps = 0x000A,
    /// MAC Address Read.
    MacAddressRead = 0x0107,
    /// Clear PXE Mode.
    ClearPxeMode = 0x0110,
    /// Get Switch Config.
    GetSwitchConfig = 0x0200,
    /// RX control register read.
    RxCtlRead = 0x0206,
    /// RX control register write.
    RxCtlWrite = 0x0207,
    /// Update VSI.
    UpdateVsi = 0x0211,
    /// Get VSI Parameters.
    GetVsiParams = 0x0212,
    /// Add MAC-VLAN.
    AddMacVlan = 0x0250,
    /// Remove MAC-VLAN.
    RemoveMacVlan = 0x0251,
    /// Set VSI Promiscuous Modes.
    SetVsiPromisc = 0x0254,
    /// Configure VSI TC Bandwidth.
    VsiTcBandwidth = 0x0407,
    /// Get PHY Abilities.
    GetPhyAbilities = 0x0600,
    /// Set PHY Config.
    SetPhyConfig = 0x0601,
    /// Set MAC Config.
    SetMacConfig = 0x0603,
    /// Get Link Status (also the link event on the ARQ).
    GetLinkStatus = 0x0607,
    /// Set PHY Interrupt Mask.
    SetPhyIntMask = 0x0613,
    /// Set Loopback.
    SetLoopback = 0x0618,
    /// LAN queue overflow (event only).
    LanOverflow = 0x1001,
}

impl Opcode {
    /// The opcode's value.
    pub const fn value(self) -> u16 {
        self as u16
    }

    /// Its name, for errors.
    pub const fn name(self) -> &'static str {
        match self {
            Opcode::GetVersion => "get version",
            Opcode::DriverVersion => "driver version",
            Opcode::QueueShutdown => "queue shutdown",
            Opcode::ListFuncCaps => "list function capabilities",
            Opcode::MacAddressRead => "MAC address read",
            Opcode::ClearPxeMode => "clear PXE mode",
            Opcode::GetSwitchConfig => "get switch config",
            Opcode::RxCtlRead => "RX control register read",
            Opcode::RxCtlWrite => "RX control register write",
            Opcode::UpdateVsi => "update VSI",
            Opcode::GetVsiParams => "get VSI parameters",
            Opcode::AddMacVlan => "add MAC-VLAN",
            Opcode::RemoveMacVlan => "remove MAC-VLAN",
            Opcode::SetVsiPromisc => "set VSI promiscuous modes",
            Opcode::VsiTcBandwidth => "configure VSI TC bandwidth",
            Opcode::GetPhyAbilities => "get PHY abilities",
            Opcode::SetPhyConfig => "set PHY config",
            Opcode::SetMacConfig => "set MAC config",
            Opcode::GetLinkStatus => "get link status",
            Opcode::SetPhyIntMask => "set PHY interrupt mask",
            Opcode::SetLoopback => "set loopback",
            Opcode::LanOverflow => "LAN overflow",
        }
    }
}

/// Descriptor flags (docs/hw/i40e.md §5.2).
pub mod flags {
    /// The firmware processed the descriptor.
    pub const DD: u16 = 0x0001;
    /// The firmware completed the command.
    pub const CMP: u16 = 0x0002;
    /// The command failed (see retval).
    pub const ERR: u16 = 0x0004;
    /// Large buffer: more than [`super::LB_THRESHOLD`] bytes.
    pub const LB: u16 = 0x0200;
    /// The buffer carries data for the firmware.
    pub const RD: u16 = 0x0400;
    /// The descriptor has an indirect buffer.
    pub const BUF: u16 = 0x1000;
    /// No completion interrupt.
    pub const SI: u16 = 0x2000;
}

/// Buffers longer than this need [`flags::LB`].
pub const LB_THRESHOLD: usize = 512;

/// Name of an admin-queue status code (`retval & 0xFF`, docs/hw/i40e.md §5.2).
pub const fn status_name(code: u8) -> &'static str {
    const NAMES: [&str; 23] = [
        "OK", "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "EAGAIN", "ENOMEM", "EACCES", "EFAULT",
        "EBUSY", "EEXIST", "EINVAL", "ENOTTY", "ENOSPC", "ENOSYS", "ERANGE", "EFLUSHED", "BAD_ADDR", "EMODE", "EFBIG",
    ];
    if (code as usize) < NAMES.len() {
        NAMES[code as usize]
    } else {
        "unknown"
    }
}

/// Status codes the driver acts on.
pub mod status {
    /// Success.
    pub const OK: u8 = 0;
    /// Try again.
    pub const EAGAIN: u8 = 8;
    /// Buffer too small (List Capabilities puts the size needed in datalen).
    pub const ENOMEM: u8 = 9;
    /// Not ready.
    pub const EBUSY: u8 = 12;
    /// Already there (adding a filter that exists).
    pub const EEXIST: u8 = 13;
}

aq_layout!(
    /// Get Version 0x0001 response (docs/hw/i40e.md §6.1).
    GetVersionResp, 16, {
        /// ROM version.
        rom_ver: u32 = 0,
        /// Firmware build.
        fw_build: u32 = 4,
        /// Firmware major.
        fw_major: u16 = 8,
        /// Firmware minor.
        fw_minor: u16 = 10,
        /// API major.
        api_major: u16 = 12,
        /// API minor.
        api_minor: u16 = 14,
    }
);

aq_layout!(
    /// Driver Version 0x0002 (docs/hw/i40e.md §6.1); the buffer holds the driver's name.
    DriverVersionCmd, 8, {
        /// Major.
        major: u8 = 0,
        /// Minor.
        minor: u8 = 1,
        /// Build.
        build: u8 = 2,
        /// Sub-build.
        subbuild: u8 = 3,
    }
);

aq_layout!(
    /// Queue Shutdown 0x0003 (docs/hw/i40e.md §6.1).
    QueueShutdownCmd, 4, {
        /// Bit 0: the driver is unloading.
        driver_unloading: u32 = 0,
    }
);

aq_layout!(
    /// Clear PXE Mode 0x0110 (docs/hw/i40e.md §6.1).
    ClearPxeCmd, 1, {
        /// DPDK writes 2.
        rx_cnt: u8 = 0,
    }
);

aq_layout!(
    /// List Function Capabilities 0x000A (docs/hw/i40e.md §6.2), command and completion.
    ListCapsCmd, 8, {
        /// Bit 0 PF_INDEX_EN.
        command_flags: u8 = 0,
        /// PF index.
        pf_index: u8 = 1,
        /// In the completion: elements returned.
        count: u32 = 4,
    }
);

aq_layout!(
    /// One capability element of the List Capabilities buffer (docs/hw/i40e.md §6.2).
    CapElement, 32, {
        /// Capability ID.
        id: u16 = 0,
        /// Major revision.
        major_rev: u8 = 2,
        /// Minor revision.
        minor_rev: u8 = 3,
        /// Number (meaning per ID).
        number: u32 = 4,
        /// Logical ID.
        logical_id: u32 = 8,
        /// Physical ID.
        phys_id: u32 = 12,
    }
);

/// Capability IDs (docs/hw/i40e.md §6.2).
pub mod cap {
    /// VSIs available.
    pub const VSI: u16 = 0x0017;
    /// RSS table size (number) and entry width (logical_id).
    pub const RSS: u16 = 0x0040;
    /// RX queues (number), first queue (phys_id).
    pub const RXQ: u16 = 0x0041;
    /// TX queues, first queue.
    pub const TXQ: u16 = 0x0042;
    /// MSI-X vectors.
    pub const MSIX: u16 = 0x0043;
    /// Flow director present.
    pub const FLOW_DIRECTOR: u16 = 0x0045;
}

aq_layout!(
    /// MAC Address Read 0x0107 (docs/hw/i40e.md §6.4), command and completion.
    MacReadCmd, 2, {
        /// Completion: 0x10 LAN valid, 0x20 SAN, 0x40 port, 0x80 WoL.
        command_flags: u16 = 0,
    }
);

/// MAC Address Read flags and buffer (docs/hw/i40e.md §6.4).
pub mod mac_read {
    /// The LAN address (buffer bytes 0-5) is valid.
    pub const LAN_ADDR_VALID: u16 = 0x10;
    /// Buffer size.
    pub const BUF_LEN: usize = 24;
}

aq_layout!(
    /// Get Switch Config 0x0200 (docs/hw/i40e.md §6.5), command and completion.
    SwitchSeidCmd, 2, {
        /// SEID to start from; in the completion, the next one when more remain.
        seid: u16 = 0,
    }
);

aq_layout!(
    /// Header of the Get Switch Config buffer (docs/hw/i40e.md §6.5).
    SwitchConfigHeader, 16, {
        /// Elements in this buffer.
        num_reported: u16 = 0,
        /// Elements in all.
        num_total: u16 = 2,
    }
);

aq_layout!(
    /// One element of the Get Switch Config buffer (docs/hw/i40e.md §6.5).
    SwitchElement, 16, {
        /// 1 MAC, 2 PF, 3 VF, 19 VSI, ...
        element_type: u8 = 0,
        /// Revision.
        revision: u8 = 1,
        /// The element's SEID.
        seid: u16 = 2,
        /// Its uplink.
        uplink_seid: u16 = 4,
        /// Its downlink.
        downlink_seid: u16 = 6,
        /// 1 regular, 2 default, 3 cascaded.
        connection_type: u8 = 11,
        /// Scheduler ID.
        scheduler_id: u16 = 12,
        /// Element info.
        element_info: u16 = 14,
    }
);

/// Switch element types (docs/hw/i40e.md §6.5).
pub mod element {
    /// A MAC (port).
    pub const MAC: u8 = 1;
    /// A VSI.
    pub const VSI: u8 = 19;
    /// The Get Switch Config buffer DPDK uses.
    pub const BUF_LEN: usize = 512;
}

aq_layout!(
    /// Add / Update / Get VSI 0x0210-0x0212 (docs/hw/i40e.md §6.6) command.
    VsiCmd, 8, {
        /// Uplink SEID (add), the VSI's SEID (get, update).
        uplink_seid: u16 = 0,
        /// Add only.
        connection_type: u8 = 2,
        /// VF ID.
        vf_id: u8 = 4,
        /// Add only: type in bits 1:0.
        vsi_flags: u16 = 6,
    }
);

aq_layout!(
    /// Add / Update / Get VSI completion (docs/hw/i40e.md §6.6).
    VsiResp, 8, {
        /// The VSI's SEID.
        seid: u16 = 0,
        /// VSI number (the RSS commands take it).
        vsi_number: u16 = 2,
        /// VSIs used.
        vsi_used: u16 = 4,
        /// VSIs free.
        vsi_free: u16 = 6,
    }
);

aq_layout!(
    /// The VSI properties buffer (docs/hw/i40e.md §6.6), 128 bytes.
    VsiProperties, 128, {
        /// Sections an update applies ([`vsi::SECTION_VLAN`], ...).
        valid_sections: u16 = 0,
        /// Switch ID and flags.
        switch_id: u16 = 2,
        /// Security flags.
        sec_flags: u8 = 6,
        /// Port VLAN.
        pvid: u16 = 8,
        /// Outer VLAN.
        outer_vlan: u16 = 10,
        /// Port VLAN mode and stripping.
        port_vlan_flags: u8 = 12,
        /// Outer VLAN flags.
        outer_vlan_flags: u8 = 13,
        /// Ingress user-priority table.
        ingress_table: u32 = 16,
        /// Egress user-priority table.
        egress_table: u32 = 20,
        /// Cascaded PV tag.
        cas_pv_tag: u16 = 24,
        /// Cascaded PV flags.
        cas_pv_flags: u8 = 26,
        /// 0 contiguous, 1 non-contiguous.
        mapping_flags: u16 = 28,
        /// Contiguous: entry 0 is the VSI's first PF queue.
        queue_mapping: [u16; 16] = 30,
        /// Per TC: offset in bits 8:0, log2(queues) in bits 11:9.
        tc_mapping: [u16; 8] = 62,
        /// Queueing options.
        queueing_opt_flags: u8 = 78,
        /// User priorities enabled.
        up_enable_bits: u8 = 82,
        /// Outer user-priority table.
        outer_up_table: u32 = 84,
        /// Queue-set handle per TC (firmware).
        qs_handle: [u16; 8] = 96,
        /// Index of the VSI's GLV_* counters (firmware).
        stat_counter_idx: u16 = 112,
        /// Scheduler ID (firmware).
        sched_id: u16 = 114,
    }
);

/// VSI property values (docs/hw/i40e.md §6.6).
pub mod vsi {
    use crate::regs::Field;
    /// VLAN section.
    pub const SECTION_VLAN: u16 = 0x4;
    /// Queue-map section.
    pub const SECTION_QUEUE_MAP: u16 = 0x40;
    /// Accept tagged and untagged frames.
    pub const PVLAN_MODE_ALL: u8 = 0x3;
    /// Leave the tags in the packet.
    pub const PVLAN_EMOD_NOTHING: u8 = 0x18;
    /// Contiguous queue mapping.
    pub const MAP_CONTIG: u16 = 0;
    /// tc_mapping: queue offset.
    pub const TC_QUEUE_OFFSET: Field = Field::new(8, 0);
    /// tc_mapping: log2 of the queue count.
    pub const TC_QUEUE_NUMBER: Field = Field::new(11, 9);
    /// An invalid queue-set handle.
    pub const QS_HANDLE_INVALID: u16 = 0xFFFF;
    /// Largest queue count of one TC (a power of two).
    pub const MAX_Q_PER_TC: u16 = 64;
}

aq_layout!(
    /// Configure VSI TC Bandwidth 0x0407 buffer (docs/hw/i40e.md §6.6), 32 bytes.
    TcBandwidthBuf, 32, {
        /// TCs enabled.
        tc_valid_bits: u8 = 0,
        /// Credits per TC.
        tc_bw_credits: [u8; 8] = 4,
        /// Queue-set handles (response).
        qs_handles: [u16; 8] = 16,
    }
);

aq_layout!(
    /// Add / Remove MAC-VLAN 0x0250/0x0251 command (docs/hw/i40e.md §6.7).
    MacVlanCmd, 8, {
        /// Elements in the buffer.
        num_addresses: u16 = 0,
        /// The VSI's SEID | [`macvlan::SEID_VALID`].
        seid0: u16 = 2,
        /// 0.
        seid1: u16 = 4,
        /// 0.
        seid2: u16 = 6,
    }
);

aq_layout!(
    /// Add MAC-VLAN element (docs/hw/i40e.md §6.7).
    AddMacVlanElem, 16, {
        /// Address in wire order.
        mac: [u8; 6] = 0,
        /// VLAN.
        vlan_tag: u16 = 6,
        /// [`macvlan::PERFECT_MATCH`], ...
        flags: u16 = 8,
        /// With TO_QUEUE.
        queue_number: u16 = 10,
        /// Response: 1 perfect, 2 hash, 0xFF no room.
        match_method: u8 = 12,
    }
);

aq_layout!(
    /// Remove MAC-VLAN element (docs/hw/i40e.md §6.7).
    RemoveMacVlanElem, 16, {
        /// Address in wire order.
        mac: [u8; 6] = 0,
        /// VLAN.
        vlan_tag: u16 = 6,
        /// [`macvlan::PERFECT_MATCH`], ...
        flags: u8 = 8,
        /// Response: 0 done, 0xFF failed.
        error_code: u8 = 12,
    }
);

/// MAC-VLAN values (docs/hw/i40e.md §6.7).
pub mod macvlan {
    /// SEID valid bit.
    pub const SEID_VALID: u16 = 0x8000;
    /// Perfect match.
    pub const PERFECT_MATCH: u16 = 0x1;
    /// Ignore the VLAN (add element flags).
    pub const IGNORE_VLAN: u16 = 0x4;
    /// Ignore the VLAN (remove element flags).
    pub const REMOVE_IGNORE_VLAN: u8 = 0x8;
    /// Multicast addresses.
    pub const USE_SHARED_MAC: u16 = 0x10;
    /// Response: no room.
    pub const MATCH_NONE: u8 = 0xFF;
}

aq_layout!(
    /// Set VSI Promiscuous Modes 0x0254 (docs/hw/i40e.md §6.8).
    PromiscCmd, 8, {
        /// Modes on.
        promiscuous_flags: u16 = 0,
        /// Modes this command sets.
        valid_flags: u16 = 2,
        /// The VSI's SEID.
        seid: u16 = 4,
        /// VLAN, valid bit 15.
        vlan_tag: u16 = 6,
    }
);

/// Promiscuous flags (docs/hw/i40e.md §6.8).
pub mod promisc {
    /// Unicast.
    pub const UNICAST: u16 = 0x01;
    /// Multicast.
    pub const MULTICAST: u16 = 0x02;
    /// Broadcast.
    pub const BROADCAST: u16 = 0x04;
    /// Only what is received (API 1.5).
    pub const RX_ONLY: u16 = 0x8000;
}

aq_layout!(
    /// Get PHY Abilities 0x0600 command (docs/hw/i40e.md §7.1).
    PhyAbilitiesCmd, 4, {
        /// Bit 0 qualified modules, bit 1 initial values; 0 the current configuration.
        param0: u32 = 0,
    }
);

aq_layout!(
    /// Get PHY Abilities buffer head (docs/hw/i40e.md §7.1); the buffer is [`phy::ABILITIES_LEN`] bytes.
    PhyAbilities, 24, {
        /// PHY types.
        phy_type: u32 = 0,
        /// Speeds (docs/hw/i40e.md §7.5).
        link_speed: u8 = 4,
        /// Abilities.
        abilities: u8 = 5,
        /// EEE.
        eee_capability: u16 = 6,
        /// EEER.
        eeer_val: u32 = 8,
        /// D3 low-power AN.
        d3_lpan: u8 = 12,
        /// 25G PHY types.
        phy_type_ext: u8 = 13,
        /// FEC.
        fec_cfg_curr_mod_ext_info: u8 = 14,
        /// Extended compliance code.
        ext_comp_code: u8 = 15,
        /// PHY ID.
        phy_id: u32 = 16,
        /// Module type.
        module_type: [u8; 3] = 20,
        /// Qualified modules.
        qualified_module_count: u8 = 23,
    }
);

aq_layout!(
    /// Set PHY Config 0x0601 (docs/hw/i40e.md §7.2).
    SetPhyConfigCmd, 16, {
        /// PHY types.
        phy_type: u32 = 0,
        /// Speeds.
        link_speed: u8 = 4,
        /// [`phy::ENABLE_LINK`], ...
        abilities: u8 = 5,
        /// EEE.
        eee_capability: u16 = 6,
        /// EEER.
        eeer: u32 = 8,
        /// Low power.
        low_power_ctrl: u8 = 12,
        /// 25G PHY types.
        phy_type_ext: u8 = 13,
        /// FEC.
        fec_config: u8 = 14,
    }
);

/// PHY values (docs/hw/i40e.md §7.1, §7.2).
pub mod phy {
    /// Buffer of Get PHY Abilities.
    pub const ABILITIES_LEN: usize = 536;
    /// Report the NVM's initial values.
    pub const REPORT_INIT: u32 = 0x2;
    /// Pause TX | pause RX | low power: kept from the current abilities.
    pub const KEEP_MASK: u8 = 0x07;
    /// Flow control: PAUSE_TX | PAUSE_RX.
    pub const PAUSE: u8 = 0x03;
    /// Link enabled.
    pub const ENABLE_LINK: u8 = 0x08;
    /// Auto-negotiation.
    pub const ENABLE_AN: u8 = 0x10;
    /// Apply at once.
    pub const ENABLE_ATOMIC_LINK: u8 = 0x20;
    /// Every PHY type below 25G.
    pub const ALL_TYPES: u32 = 0x7FFF_FFFF;
    /// Every 25G PHY type.
    pub const ALL_TYPES_EXT: u8 = 0x3F;
}

aq_layout!(
    /// Set Loopback 0x0618 (docs/hw/i40e.md §7.6).
    SetLoopbackCmd, 2, {
        /// [`loopback::NONE`], ...
        lb_mode: u16 = 0,
    }
);

/// Loopback modes (docs/hw/i40e.md §7.6).
pub mod loopback {
    /// No loopback.
    pub const NONE: u16 = 0;
}

aq_layout!(
    /// Set MAC Config 0x0603 (docs/hw/i40e.md §7.3).
    SetMacConfigCmd, 8, {
        /// Largest frame, CRC included.
        max_frame_size: u16 = 0,
        /// [`mac_config::CRC_EN`], pacing.
        params: u8 = 2,
        /// TX timer priority.
        tx_timer_priority: u8 = 3,
        /// TX timer.
        tx_timer_value: u16 = 4,
        /// Flow-control refresh threshold.
        fc_refresh_threshold: u16 = 6,
    }
);

/// MAC config values (docs/hw/i40e.md §7.3).
pub mod mac_config {
    /// Append the CRC on transmit.
    pub const CRC_EN: u8 = 0x04;
    /// DPDK's refresh threshold.
    pub const FC_REFRESH: u16 = 0x7FFF;
}

aq_layout!(
    /// Get Link Status 0x0607 command (docs/hw/i40e.md §7.4).
    LinkStatusCmd, 2, {
        /// Bits 1:0: 0 NOP, 2 disable LSE, 3 enable LSE.
        command_flags: u16 = 0,
    }
);

aq_layout!(
    /// Get Link Status response and the link event's parameters (docs/hw/i40e.md §7.4).
    LinkStatus, 11, {
        /// Bit 0: LSE on.
        command_flags: u16 = 0,
        /// PHY type.
        phy_type: u8 = 2,
        /// Speed bitmap value (docs/hw/i40e.md §7.5).
        link_speed: u8 = 3,
        /// [`link::LINK_UP`], ...
        link_info: u8 = 4,
        /// AN info.
        an_info: u8 = 5,
        /// Extended info.
        ext_info: u8 = 6,
        /// Loopback.
        loopback: u8 = 7,
        /// Largest frame.
        max_frame_size: u16 = 8,
        /// FEC, CRC, pacing.
        config: u8 = 10,
    }
);

/// Link values (docs/hw/i40e.md §7.4, §7.5).
pub mod link {
    /// Enable link status events.
    pub const LSE_ENABLE: u16 = 3;
    /// Disable link status events.
    pub const LSE_DISABLE: u16 = 2;
    /// link_info: link up.
    pub const LINK_UP: u8 = 0x01;
    /// an_info: AN complete.
    pub const AN_COMPLETED: u8 = 0x01;

    /// Mb/s of a speed bitmap value (docs/hw/i40e.md §7.5); 0 for none or several.
    pub const fn speed_mbps(bits: u8) -> u32 {
        match bits {
            0x01 => 2_500,
            0x02 => 100,
            0x04 => 1_000,
            0x08 => 10_000,
            0x10 => 40_000,
            0x20 => 20_000,
            0x40 => 25_000,
            0x80 => 5_000,
            _ => 0,
        }
    }
}

aq_layout!(
    /// Set PHY Interrupt Mask 0x0613 (docs/hw/i40e.md §7.6).
    PhyIntMaskCmd, 10, {
        /// A set bit suppresses the event.
        event_mask: u16 = 8,
    }
);

/// PHY event mask bits (docs/hw/i40e.md §7.6).
pub mod phy_event {
    /// Link up/down.
    pub const LINK_UPDOWN: u16 = 0x0002;
    /// Media not available.
    pub const MEDIA_NA: u16 = 0x0004;
    /// Module qualification failed.
    pub const MODULE_QUAL_FAIL: u16 = 0x0100;
}

aq_layout!(
    /// RX control register read 0x0206 and write 0x0207 (docs/hw/i40e.md §6.11): the read answers in `value`.
    RxCtlWriteCmd, 16, {
        /// Register address.
        address: u32 = 4,
        /// Value.
        value: u32 = 12,
    }
);

aq_layout!(
    /// The indirect buffer address in the parameter area (docs/hw/i40e.md §5.2: bytes 24-31 of the descriptor).
    BufAddr, 16, {
        /// Address bits 63:32.
        addr_high: u32 = 8,
        /// Address bits 31:0.
        addr_low: u32 = 12,
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Each field lands on the bytes docs/hw/i40e.md gives, little-endian, and decodes back.
    #[test]
    fn layouts_put_each_field_at_its_documented_bytes() {
        let v = GetVersionResp {
            rom_ver: 0x0403_0201,
            fw_build: 0x0807_0605,
            fw_major: 0x0A09,
            fw_minor: 0x0C0B,
            api_major: 0x0E0D,
            api_minor: 0x100F,
        };
        let b = v.encode();
        assert_eq!(b, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
        assert_eq!(GetVersionResp::decode(&b), v);

        let p = PromiscCmd { promiscuous_flags: 0x8001, valid_flags: 0x8005, seid: 0x0123, vlan_tag: 0 };
        assert_eq!(p.encode(), [0x01, 0x80, 0x05, 0x80, 0x23, 0x01, 0, 0]);

        let m = SetMacConfigCmd {
            max_frame_size: 9728,
            params: mac_config::CRC_EN,
            fc_refresh_threshold: 0x7FFF,
            ..Default::default()
        };
        assert_eq!(m.encode(), [0x00, 0x26, 0x04, 0, 0, 0, 0xFF, 0x7F]);

        let e = SwitchElement::decode(&[19, 1, 0x10, 0x02, 0x02, 0x02, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!((e.element_type, e.seid, e.uplink_seid, e.connection_type), (19, 0x210, 0x202, 1));

        let c = CapElement::decode(&{
            let mut b = [0u8; 32];
            b[0..2].copy_from_slice(&0x41u16.to_le_bytes());
            b[4..8].copy_from_slice(&64u32.to_le_bytes());
            b[12..16].copy_from_slice(&128u32.to_le_bytes());
            b
        });
        assert_eq!((c.id, c.number, c.phys_id), (cap::RXQ, 64, 128));

        let mut vsi = VsiProperties::default();
        vsi.queue_mapping[0] = 0x0102;
        vsi.tc_mapping[0] = 0x0C00;
        vsi.qs_handle[7] = 0xBEEF;
        vsi.stat_counter_idx = 0x0155;
        let b = vsi.encode();
        assert_eq!((b[30], b[31]), (0x02, 0x01), "queue_mapping[0] at 30");
        assert_eq!((b[62], b[63]), (0x00, 0x0C), "tc_mapping[0] at 62");
        assert_eq!((b[110], b[111]), (0xEF, 0xBE), "qs_handle[7] at 110");
        assert_eq!((b[112], b[113]), (0x55, 0x01), "stat_counter_idx at 112");
        assert_eq!(VsiProperties::decode(&b), vsi);

        let a = AddMacVlanElem {
            mac: [0x02, 0, 0, 0, 0, 1],
            flags: macvlan::PERFECT_MATCH | macvlan::IGNORE_VLAN,
            ..Default::default()
        };
        assert_eq!(a.encode(), [2, 0, 0, 0, 0, 1, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0]);

        let l = LinkStatus::decode(&[1, 0, 0x14, 0x08, 0x41, 0x01, 0, 0, 0x00, 0x26, 0x04]);
        assert_eq!((l.link_info & link::LINK_UP, link::speed_mbps(l.link_speed), l.max_frame_size), (1, 10_000, 9728));

        let w = RxCtlWriteCmd { address: 0x245900, value: 0xAABB_CCDD };
        assert_eq!(&w.encode()[4..8], &[0x00, 0x59, 0x24, 0x00]);
        assert_eq!(&w.encode()[12..16], &[0xDD, 0xCC, 0xBB, 0xAA]);

        let s = SetPhyConfigCmd { phy_type: phy::ALL_TYPES, link_speed: 0x08, abilities: 0x38, ..Default::default() };
        assert_eq!(&s.encode()[..6], &[0xFF, 0xFF, 0xFF, 0x7F, 0x08, 0x38]);

        assert_eq!(PhyIntMaskCmd { event_mask: 0xFEF9 }.encode()[8..10], [0xF9, 0xFE]);
        assert_eq!(BufAddr { addr_high: 1, addr_low: 2 }.encode()[8..16], [1, 0, 0, 0, 2, 0, 0, 0]);
    }

    #[test]
    fn status_codes_have_names() {
        assert_eq!(status_name(0), "OK");
        assert_eq!(status_name(14), "EINVAL");
        assert_eq!(status_name(22), "EFBIG");
        assert_eq!(status_name(200), "unknown");
    }
}
