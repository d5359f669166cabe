//! The model's own register map of the X540, written from the hardware notes (`docs/hw/ixgbe.md`, cited by
//! section as "docs/hw/ixgbe.md §n"). Offsets are byte offsets into BAR0; every register is 32 bits wide.
//!
//! This map is deliberately independent of any driver's: a wrong offset here and the same wrong offset in a
//! driver would otherwise agree with each other and hide.

#![allow(dead_code)]

// ---- docs/hw/ixgbe.md §2 / §4 general control ----------------------------------------------------------------

/// CTRL, device control (docs/hw/ixgbe.md §2, §4 "CTRL").
pub const CTRL: usize = 0x00000;
/// CTRL.GIO_DIS bit 2: PCIe master disable (docs/hw/ixgbe.md §4).
pub const CTRL_GIO_DIS: u32 = 1 << 2;
/// CTRL.LNK_RST bit 3: link reset (docs/hw/ixgbe.md §4).
pub const CTRL_LNK_RST: u32 = 1 << 3;
/// CTRL.RST bit 26: device software reset, self-clearing (docs/hw/ixgbe.md §4).
pub const CTRL_RST: u32 = 1 << 26;

/// STATUS (docs/hw/ixgbe.md §2, §4 "STATUS").
pub const STATUS: usize = 0x00008;
/// STATUS.LAN_ID bits 3:2 (docs/hw/ixgbe.md §4).
pub const STATUS_LAN_ID_SHIFT: u32 = 2;
/// STATUS.GIO bit 19: PCIe master enable status (docs/hw/ixgbe.md §4).
pub const STATUS_GIO: u32 = 1 << 19;

/// CTRL_EXT (docs/hw/ixgbe.md §2).
pub const CTRL_EXT: usize = 0x00018;

// ---- docs/hw/ixgbe.md §12 interrupts -------------------------------------------------------------------------

/// EICR, interrupt cause, read-to-clear (docs/hw/ixgbe.md §2, §12).
pub const EICR: usize = 0x00800;
/// EICS, interrupt cause set (docs/hw/ixgbe.md §2).
pub const EICS: usize = 0x00808;
/// EIMS, mask set (docs/hw/ixgbe.md §2).
pub const EIMS: usize = 0x00880;
/// EIMC, mask clear (docs/hw/ixgbe.md §2).
pub const EIMC: usize = 0x00888;
/// EIAC, auto-clear enables: a vector's queue cause clears when its MSI-X message is sent (docs/hw/ixgbe.md §12.1).
pub const EIAC: usize = 0x00810;
/// EIAM, auto-mask enables, bits 15:0 queue vectors, 31:16 the other causes (docs/hw/ixgbe.md §12.1).
pub const EIAM: usize = 0x00890;
/// GPIE, general-purpose interrupt enables (docs/hw/ixgbe.md §4 "GPIE").
pub const GPIE: usize = 0x00898;
/// GPIE.MSIX_MODE bit 4: causes go to MSI-X vectors through IVAR.
pub const GPIE_MSIX_MODE: u32 = 1 << 4;
/// GPIE.EIAME bit 30: auto-mask (EIAM) on interrupt.
pub const GPIE_EIAME: u32 = 1 << 30;
/// IVAR(i), i = 0..63: queue-to-vector entries, one byte per RX/TX queue (docs/hw/ixgbe.md §12).
pub const fn ivar(i: usize) -> usize {
    0x00900 + 4 * i
}
/// IVAR_MISC: byte 1 maps the other causes to a vector (docs/hw/ixgbe.md §12).
pub const IVAR_MISC: usize = 0x00A00;
/// IVAR entry bit 7: the entry is valid.
pub const IVAR_VALID: u32 = 0x80;
/// EITR(n), interrupt throttling of vector n (docs/hw/ixgbe.md §2, §12).
pub const fn eitr(n: usize) -> usize {
    if n <= 23 {
        0x00820 + 4 * n
    } else {
        0x12300 + 4 * (n - 24)
    }
}
/// EITR interval field, bits 11:3, in 2.048 µs units (docs/hw/ixgbe.md §12).
pub const EITR_INTERVAL_SHIFT: u32 = 3;
/// EITR interval field width mask (9 bits).
pub const EITR_INTERVAL_MASK: u32 = 0x1FF;
/// EICS_EX(i), i = 0, 1: set the cause of vectors 32i..32i+31 (docs/hw/ixgbe.md §2).
pub const fn eics_ex(i: usize) -> usize {
    0x00A90 + 4 * i
}
/// EIMS_EX(i), i = 0, 1: unmask vectors 32i..32i+31.
pub const fn eims_ex(i: usize) -> usize {
    0x00AA0 + 4 * i
}
/// EIMC_EX(i), i = 0, 1: mask vectors 32i..32i+31.
pub const fn eimc_ex(i: usize) -> usize {
    0x00AB0 + 4 * i
}
/// EIAM_EX(i), i = 0, 1: auto-mask vectors 32i..32i+31.
pub const fn eiam_ex(i: usize) -> usize {
    0x00AD0 + 4 * i
}
/// EICR bit 17 RX_MISS (docs/hw/ixgbe.md §12).
pub const EICR_RX_MISS: u32 = 1 << 17;
/// EICR bit 20 LSC, link status change (docs/hw/ixgbe.md §12).
pub const EICR_LSC: u32 = 1 << 20;

// ---- docs/hw/ixgbe.md §4 / §3.3 RX DMA -----------------------------------------------------------------------

/// RDRXCTL, RX DMA control (docs/hw/ixgbe.md §2, §4 "RDRXCTL").
pub const RDRXCTL: usize = 0x02F00;
/// RDRXCTL.CRCSTRIP bit 1 (docs/hw/ixgbe.md §4).
pub const RDRXCTL_CRCSTRIP: u32 = 1 << 1;
/// RDRXCTL.DMAIDONE bit 3, read-only: DMA init done (docs/hw/ixgbe.md §4, §3.3 step 10).
pub const RDRXCTL_DMAIDONE: u32 = 1 << 3;

/// RQSMR(i), RX queue → statistics set map, 4 one-byte fields (docs/hw/ixgbe.md §2, §13).
pub const fn rqsmr(i: usize) -> usize {
    0x02300 + 4 * i
}
/// TQSM(i), TX queue → statistics set map (docs/hw/ixgbe.md §2, §13).
pub const fn tqsm(i: usize) -> usize {
    0x08600 + 4 * i
}

/// RXCTRL, global RX enable (docs/hw/ixgbe.md §2, §4 "RXCTRL").
pub const RXCTRL: usize = 0x03000;
/// RXCTRL.RXEN bit 0.
pub const RXCTRL_RXEN: u32 = 1 << 0;

/// RXPBSIZE(i), RX packet buffer size in bytes (docs/hw/ixgbe.md §2).
pub const fn rxpbsize(i: usize) -> usize {
    0x03C00 + 4 * i
}
/// TXPBSIZE(i) (docs/hw/ixgbe.md §2).
pub const fn txpbsize(i: usize) -> usize {
    0x0CC00 + 4 * i
}

// ---- docs/hw/ixgbe.md §4 MAC core ----------------------------------------------------------------------------

/// HLREG0, MAC core control (docs/hw/ixgbe.md §2, §4 "HLREG0").
pub const HLREG0: usize = 0x04240;
/// HLREG0.TXCRCEN bit 0.
pub const HLREG0_TXCRCEN: u32 = 1 << 0;
/// HLREG0.RXCRCSTRP bit 1.
pub const HLREG0_RXCRCSTRP: u32 = 1 << 1;
/// HLREG0.JUMBOEN bit 2.
pub const HLREG0_JUMBOEN: u32 = 1 << 2;
/// HLREG0.TXPADEN bit 10.
pub const HLREG0_TXPADEN: u32 = 1 << 10;
/// HLREG0.LPBK bit 15: MAC loopback.
pub const HLREG0_LPBK: u32 = 1 << 15;

/// MSCA, MDIO command (docs/hw/ixgbe.md §5.4).
pub const MSCA: usize = 0x0425C;
/// MSRWD, MDIO data: write 15:0, read 31:16 (docs/hw/ixgbe.md §5.4).
pub const MSRWD: usize = 0x04260;
/// MSCA.MDI_COMMAND bit 30: start, cleared by hardware when done (docs/hw/ixgbe.md §5.4).
pub const MSCA_MDI_COMMAND: u32 = 1 << 30;

/// MAXFRS (= MHADD): MFS bits 31:16, max frame incl. CRC (docs/hw/ixgbe.md §2, §11).
pub const MAXFRS: usize = 0x04268;
/// LINKS, link status (docs/hw/ixgbe.md §5.1).
pub const LINKS: usize = 0x042A4;
/// LINKS.LINK_UP bit 30 (docs/hw/ixgbe.md §5.1).
pub const LINKS_UP: u32 = 1 << 30;
/// LINKS.SPEED bits 29:28: 01 = 100M, 10 = 1G, 11 = 10G (docs/hw/ixgbe.md §5.1).
pub const LINKS_SPEED_SHIFT: u32 = 28;

/// DMATXCTL, global TX DMA enable (docs/hw/ixgbe.md §2, §4).
pub const DMATXCTL: usize = 0x04A80;
/// DMATXCTL.TE bit 0.
pub const DMATXCTL_TE: u32 = 1 << 0;

// ---- docs/hw/ixgbe.md §4 / §9 / §10 filters and RSS ----------------------------------------------------------

/// RXCSUM, RX checksum control (docs/hw/ixgbe.md §4 "RXCSUM").
pub const RXCSUM: usize = 0x05000;
/// RXCSUM.PCSD bit 13: RSS hash instead of packet checksum in descriptor dword 1.
pub const RXCSUM_PCSD: u32 = 1 << 13;

/// FCTRL, filter control (docs/hw/ixgbe.md §4 "FCTRL").
pub const FCTRL: usize = 0x05080;
/// FCTRL.SBP bit 1: store bad packets.
pub const FCTRL_SBP: u32 = 1 << 1;
/// FCTRL.MPE bit 8: multicast promiscuous.
pub const FCTRL_MPE: u32 = 1 << 8;
/// FCTRL.UPE bit 9: unicast promiscuous.
pub const FCTRL_UPE: u32 = 1 << 9;
/// FCTRL.BAM bit 10: accept broadcast.
pub const FCTRL_BAM: u32 = 1 << 10;
/// FCTRL.DPF bit 13: discard PAUSE frames.
pub const FCTRL_DPF: u32 = 1 << 13;

/// VLNCTRL (docs/hw/ixgbe.md §10.3): VET 15:0, VFE bit 30.
pub const VLNCTRL: usize = 0x05088;
/// VLNCTRL.VFE bit 30: VLAN filter enable.
pub const VLNCTRL_VFE: u32 = 1 << 30;
/// MCSTCTRL (docs/hw/ixgbe.md §10.2): MO bits 1:0, MFE bit 2.
pub const MCSTCTRL: usize = 0x05090;
/// MCSTCTRL.MFE bit 2.
pub const MCSTCTRL_MFE: u32 = 1 << 2;

/// MTA(i), i = 0..127 (docs/hw/ixgbe.md §10.2).
pub const fn mta(i: usize) -> usize {
    0x05200 + 4 * i
}
/// RAL(i), i = 0..127 (docs/hw/ixgbe.md §2, §10.1).
pub const fn ral(i: usize) -> usize {
    if i <= 15 {
        0x05400 + 8 * i
    } else {
        0x0A200 + 8 * i
    }
}
/// RAH(i) (docs/hw/ixgbe.md §2, §10.1): bits 15:0 MAC bytes 4-5, bit 31 AV.
pub const fn rah(i: usize) -> usize {
    ral(i) + 4
}
/// RAH.AV bit 31.
pub const RAH_AV: u32 = 1 << 31;
/// VFTA(i), i = 0..127 (docs/hw/ixgbe.md §10.3).
pub const fn vfta(i: usize) -> usize {
    0x0A000 + 4 * i
}

/// MRQC (docs/hw/ixgbe.md §9): MRQE bits 3:0, hash-field enables bits 16..24.
pub const MRQC: usize = 0x05818;
/// MRQC.MRQE value 0x1: RSS only.
pub const MRQE_RSS: u32 = 0x1;
/// MRQC field enable: IPv4/TCP (bit 16).
pub const MRQC_IPV4_TCP: u32 = 1 << 16;
/// MRQC field enable: IPv4 (bit 17).
pub const MRQC_IPV4: u32 = 1 << 17;
/// MRQC field enable: IPv6-ext/TCP (bit 18).
pub const MRQC_IPV6_EX_TCP: u32 = 1 << 18;
/// MRQC field enable: IPv6-ext (bit 19).
pub const MRQC_IPV6_EX: u32 = 1 << 19;
/// MRQC field enable: IPv6 (bit 20).
pub const MRQC_IPV6: u32 = 1 << 20;
/// MRQC field enable: IPv6/TCP (bit 21).
pub const MRQC_IPV6_TCP: u32 = 1 << 21;
/// MRQC field enable: IPv4/UDP (bit 22).
pub const MRQC_IPV4_UDP: u32 = 1 << 22;
/// MRQC field enable: IPv6/UDP (bit 23).
pub const MRQC_IPV6_UDP: u32 = 1 << 23;
/// MRQC field enable: IPv6-ext/UDP (bit 24).
pub const MRQC_IPV6_EX_UDP: u32 = 1 << 24;

/// RETA(i), i = 0..31: 4 one-byte entries each, low byte = lowest entry, low 4 bits used (docs/hw/ixgbe.md §9).
pub const fn reta(i: usize) -> usize {
    0x05C00 + 4 * i
}
/// RSSRK(i), i = 0..9: key byte 4k+j in bits 8j+7:8j (docs/hw/ixgbe.md §9).
pub const fn rssrk(i: usize) -> usize {
    0x05C80 + 4 * i
}

// ---- docs/hw/ixgbe.md §2 NVM and semaphores ------------------------------------------------------------------

/// EEC, EEPROM/flash control (docs/hw/ixgbe.md §2, §4 "EEC").
pub const EEC: usize = 0x10010;
/// EEC.SK bit 0: the EEPROM's serial clock, driven by software while it holds GNT (docs/hw/ixgbe.md §17.3).
pub const EEC_SK: u32 = 1 << 0;
/// EEC.CS bit 1: the EEPROM's chip select (the line level; low selects).
pub const EEC_CS: u32 = 1 << 1;
/// EEC.DI bit 2: data into the EEPROM.
pub const EEC_DI: u32 = 1 << 2;
/// EEC.DO bit 3: data out of the EEPROM (read-only).
pub const EEC_DO: u32 = 1 << 3;
/// EEC.REQ bit 6: software requests the EEPROM's pins.
pub const EEC_REQ: u32 = 1 << 6;
/// EEC.GNT bit 7: the pins are granted to software (read-only).
pub const EEC_GNT: u32 = 1 << 7;
/// EEC.PRES bit 8: EEPROM present.
pub const EEC_PRES: u32 = 1 << 8;
/// EEC.ARD bit 9: auto-read done.
pub const EEC_ARD: u32 = 1 << 9;
/// EEC.ADDR_SIZE bit 10: 0 = a small part addressed with 8 bits (address bit 8 in the opcode), 1 = 16 bits.
pub const EEC_ADDR_SIZE: u32 = 1 << 10;
/// EEC.SIZE bits 14:11: the NVM holds 2^(SIZE + 6) 16-bit words (docs/hw/ixgbe.md §17).
pub const EEC_SIZE_SHIFT: u32 = 11;
/// EERD, EEPROM read through the MAC (docs/hw/ixgbe.md §17).
pub const EERD: usize = 0x10014;
/// EERD.START bit 0: start a read of the word at ADDR.
pub const EERD_START: u32 = 1 << 0;
/// EERD.DONE bit 1: the read finished, DATA is valid.
pub const EERD_DONE: u32 = 1 << 1;
/// EERD.ADDR bits 15:2: word address.
pub const EERD_ADDR_SHIFT: u32 = 2;
/// EERD.ADDR field mask (14 bits).
pub const EERD_ADDR_MASK: u32 = 0x3FFF;
/// EERD.DATA bits 31:16: the word read.
pub const EERD_DATA_SHIFT: u32 = 16;
/// FWSM, firmware semaphore and mode (docs/hw/ixgbe.md §2, §17.1).
pub const FWSM: usize = 0x10148;
/// FWSM.FW_VAL bit 15: the management firmware loaded and runs (docs/hw/ixgbe.md §17.1).
pub const FWSM_FW_VAL: u32 = 1 << 15;
/// SWSM (docs/hw/ixgbe.md §5.5): SMBI bit 0.
pub const SWSM: usize = 0x10140;
/// SWSM.SMBI bit 0: reading it as 0 grants it.
pub const SWSM_SMBI: u32 = 1 << 0;
/// SW_FW_SYNC = GSSR (docs/hw/ixgbe.md §5.5): REGSMP bit 31.
pub const SW_FW_SYNC: usize = 0x10160;
/// SW_FW_SYNC.REGSMP bit 31: register semaphore, reading it as 0 grants it.
pub const SW_FW_SYNC_REGSMP: u32 = 1 << 31;

// ---- 82599 only: SDP pins, MAC link, security block (docs/hw/ixgbe.md §2, §3.7 step 35, §5.6, §15) ----------

/// ESDP, extended SDP pin control (docs/hw/ixgbe.md §2: "SDP pins (82599 SFP laser control)").
pub const ESDP: usize = 0x00020;
/// ESDP.SDP3 bit 3: SFP+ TX laser, clear = laser on (docs/hw/ixgbe.md §5.6).
pub const ESDP_SDP3: u32 = 1 << 3;
/// ESDP.SDP2 bit 2: the SFP+ cage's module-present input, 1 while a module is seated (docs/hw/ixgbe.md §18.1).
pub const ESDP_SDP2: u32 = 1 << 2;

// ---- 82599 only: SFP+ module two-wire bus and serial-ID EEPROM (docs/hw/ixgbe.md §18) ----------

/// I2CCTL, bit-banged two-wire bus to the SFP+ module (docs/hw/ixgbe.md §18.1).
pub const I2CCTL: usize = 0x00028;
/// I2CCTL.CLK_IN bit 0: the clock line's level.
pub const I2CCTL_CLK_IN: u32 = 1 << 0;
/// I2CCTL.CLK_OUT bit 1: the clock the MAC drives (1 = released).
pub const I2CCTL_CLK_OUT: u32 = 1 << 1;
/// I2CCTL.DATA_IN bit 2: the data line's level.
pub const I2CCTL_DATA_IN: u32 = 1 << 2;
/// I2CCTL.DATA_OUT bit 3: the data the MAC drives (1 = released).
pub const I2CCTL_DATA_OUT: u32 = 1 << 3;
/// SFF-8472 page A0h byte offsets and values (docs/hw/ixgbe.md §18.2).
pub const SFF_IDENTIFIER: usize = 0;
/// Identifier value of an SFP/SFP+ module.
pub const SFF_IDENTIFIER_SFP: u8 = 0x03;
/// Extended identifier.
pub const SFF_EXT_IDENTIFIER: usize = 1;
/// Connector type.
pub const SFF_CONNECTOR: usize = 2;
/// Connector value of a copper pigtail (direct-attach cable).
pub const SFF_CONNECTOR_COPPER_PIGTAIL: u8 = 0x21;
/// 10G Ethernet compliance codes (bit 4 10GBASE-SR, bit 5 10GBASE-LR).
pub const SFF_10GBE_COMP_CODES: usize = 3;
/// 1G Ethernet compliance codes.
pub const SFF_1GBE_COMP_CODES: usize = 6;
/// SFP+ cable technology (bit 2 passive, bit 3 active cable).
pub const SFF_CABLE_TECHNOLOGY: usize = 8;
/// Cable technology: passive direct-attach cable.
pub const SFF_DA_PASSIVE_CABLE: u8 = 1 << 2;
/// Nominal bit rate in units of 100 Mb/s.
pub const SFF_BIT_RATE_NOMINAL: usize = 12;
/// Length of a copper cable in metres.
pub const SFF_LENGTH_COPPER: usize = 18;
/// Vendor IEEE OUI (3 bytes).
pub const SFF_VENDOR_OUI: usize = 37;
/// Cable specification compliance of a passive or active cable.
pub const SFF_CABLE_SPEC_COMP: usize = 60;
/// Check code over bytes 0..=62.
pub const SFF_CC_BASE: usize = 63;
/// Check code over bytes 64..=94.
pub const SFF_CC_EXT: usize = 95;

/// AUTOC, auto-negotiation control of the 82599's MAC link (docs/hw/ixgbe.md §2, §5.6).
pub const AUTOC: usize = 0x042A0;
/// AUTOC.AN_RESTART bit 12 (docs/hw/ixgbe.md §5.6).
pub const AUTOC_AN_RESTART: u32 = 1 << 12;
/// AUTOC.LMS bits 15:13, link mode select (docs/hw/ixgbe.md §5.6).
pub const AUTOC_LMS_SHIFT: u32 = 13;
/// AUTOC.LMS field mask (unshifted).
pub const AUTOC_LMS_MASK: u32 = 0x7;
/// LMS 0: 1G, no AN.
pub const LMS_1G_NO_AN: u32 = 0;
/// LMS 1: 10G, no AN.
pub const LMS_10G_NO_AN: u32 = 1;
/// LMS 2: 1G with AN.
pub const LMS_1G_AN: u32 = 2;
/// LMS 3: 10G serial (SFI).
pub const LMS_10G_SERIAL: u32 = 3;
/// LMS 4: KX4/KX/KR.
pub const LMS_KX4_KX_KR: u32 = 4;
/// LMS 5: SGMII 1G/100M.
pub const LMS_SGMII_1G_100M: u32 = 5;
/// LMS 6: KX4/KX/KR + 1G AN.
pub const LMS_KX4_KX_KR_1G_AN: u32 = 6;
/// LMS 7: KX4/KX/KR/SGMII.
pub const LMS_KX4_KX_KR_SGMII: u32 = 7;

/// AUTOC2 (docs/hw/ixgbe.md §2, §5.6).
pub const AUTOC2: usize = 0x042A8;
/// AUTOC2 10G serial PMA/PMD bits 17:16 (0 KR, 1 XFI, 2 SFI).
pub const AUTOC2_10G_SERIAL_PMA_PMD_SHIFT: u32 = 16;
/// AUTOC2 10G serial PMA/PMD value 2: SFI.
pub const AUTOC2_10G_SFI: u32 = 2;
/// AUTOC2 LINK_DISABLE mask: clear to enable the link (docs/hw/ixgbe.md §5.6).
pub const AUTOC2_LINK_DISABLE_MASK: u32 = 0x7000_0000;

/// ANLP1: AN state in bits 19:16, non-zero once auto-negotiation has run (docs/hw/ixgbe.md §5.6, DPDK's reset pipeline).
pub const ANLP1: usize = 0x042B0;
/// ANLP1 AN state shift.
pub const ANLP1_AN_STATE_SHIFT: u32 = 16;

/// SECRXCTRL, RX security block control (docs/hw/ixgbe.md §2).
pub const SECRXCTRL: usize = 0x08D00;
/// SECRXCTRL.RX_DIS bit 1: stop the RX security path (docs/hw/ixgbe.md §3.7 step 35).
pub const SECRXCTRL_RX_DIS: u32 = 1 << 1;
/// SECRXSTAT, RX security block status (docs/hw/ixgbe.md §2).
pub const SECRXSTAT: usize = 0x08D04;
/// SECRXSTAT.SECRX_RDY bit 0: the RX security path is quiet (docs/hw/ixgbe.md §3.7 step 35).
pub const SECRXSTAT_SECRX_RDY: u32 = 1 << 0;

// ---- docs/hw/ixgbe.md §6 queue registers ---------------------------------------------------------------------

/// Number of RX and TX queues (docs/hw/ixgbe.md §14).
pub const NUM_QUEUES: usize = 128;

const fn rxq_base(i: usize) -> usize {
    if i < 64 {
        0x01000 + 0x40 * i
    } else {
        0x0D000 + 0x40 * (i - 64)
    }
}
/// RDBAL(i) (docs/hw/ixgbe.md §6.1).
pub const fn rdbal(i: usize) -> usize {
    rxq_base(i)
}
/// RDBAH(i) (docs/hw/ixgbe.md §6.1).
pub const fn rdbah(i: usize) -> usize {
    rxq_base(i) + 0x04
}
/// RDLEN(i) (docs/hw/ixgbe.md §6.1).
pub const fn rdlen(i: usize) -> usize {
    rxq_base(i) + 0x08
}
/// RDH(i) (docs/hw/ixgbe.md §6.1).
pub const fn rdh(i: usize) -> usize {
    rxq_base(i) + 0x10
}
/// RDT(i) (docs/hw/ixgbe.md §6.1).
pub const fn rdt(i: usize) -> usize {
    rxq_base(i) + 0x18
}
/// RXDCTL(i) (docs/hw/ixgbe.md §6.1).
pub const fn rxdctl(i: usize) -> usize {
    rxq_base(i) + 0x28
}
/// SRRCTL(i) (docs/hw/ixgbe.md §6.1): 0x2100+4i for i <= 15 (the 0x1014+0x40i form is treated as an alias), 0x1014+0x40i below
/// 64, 0xD014+0x40(i-64) above.
pub const fn srrctl(i: usize) -> usize {
    if i <= 15 {
        0x02100 + 4 * i
    } else {
        rxq_base(i) + 0x14
    }
}
/// DCA_RXCTRL(i) (docs/hw/ixgbe.md §6.1), same three-way split as SRRCTL.
pub const fn dca_rxctrl(i: usize) -> usize {
    if i <= 15 {
        0x02200 + 4 * i
    } else {
        rxq_base(i) + 0x0C
    }
}
/// TDBAL(i) (docs/hw/ixgbe.md §6.1).
pub const fn tdbal(i: usize) -> usize {
    0x06000 + 0x40 * i
}
/// TDBAH(i).
pub const fn tdbah(i: usize) -> usize {
    tdbal(i) + 0x04
}
/// TDLEN(i).
pub const fn tdlen(i: usize) -> usize {
    tdbal(i) + 0x08
}
/// TDH(i).
pub const fn tdh(i: usize) -> usize {
    tdbal(i) + 0x10
}
/// TDT(i).
pub const fn tdt(i: usize) -> usize {
    tdbal(i) + 0x18
}
/// TXDCTL(i).
pub const fn txdctl(i: usize) -> usize {
    tdbal(i) + 0x28
}
/// TDWBAL(i): bit 0 head write-back enable, 31:2 address low (docs/hw/ixgbe.md §6.4).
pub const fn tdwbal(i: usize) -> usize {
    tdbal(i) + 0x38
}
/// TDWBAH(i) (docs/hw/ixgbe.md §6.4).
pub const fn tdwbah(i: usize) -> usize {
    tdbal(i) + 0x3C
}

/// RXDCTL/TXDCTL.ENABLE bit 25 (docs/hw/ixgbe.md §6.2, §6.3).
pub const QCTL_ENABLE: u32 = 1 << 25;
/// RXDCTL/TXDCTL.SWFLSH bit 26.
pub const QCTL_SWFLSH: u32 = 1 << 26;
/// RXDCTL.VME bit 30: strip VLAN per queue (docs/hw/ixgbe.md §6.2).
pub const RXDCTL_VME: u32 = 1 << 30;

/// SRRCTL.BSIZEPACKET bits 6:0 (KiB) (docs/hw/ixgbe.md §6.2).
pub const SRRCTL_BSIZEPKT_MASK: u32 = 0x7F;
/// SRRCTL.DESCTYPE bits 27:25 (docs/hw/ixgbe.md §6.2).
pub const SRRCTL_DESCTYPE_SHIFT: u32 = 25;
/// SRRCTL.DESCTYPE 001: advanced one buffer.
pub const SRRCTL_DESCTYPE_ADV_ONEBUF: u32 = 1;
/// SRRCTL.DROP_EN bit 28.
pub const SRRCTL_DROP_EN: u32 = 1 << 28;

// ---- docs/hw/ixgbe.md §13 statistics (all clear-on-read) -----------------------------------------------------

/// CRCERRS (docs/hw/ixgbe.md §13).
pub const CRCERRS: usize = 0x04000;
/// ILLERRC.
pub const ILLERRC: usize = 0x04004;
/// ERRBC.
pub const ERRBC: usize = 0x04008;
/// MSPDC.
pub const MSPDC: usize = 0x04010;
/// MPC(i), i = 0..7.
pub const fn mpc(i: usize) -> usize {
    0x03FA0 + 4 * i
}
/// MLFC.
pub const MLFC: usize = 0x04034;
/// MRFC.
pub const MRFC: usize = 0x04038;
/// RLEC.
pub const RLEC: usize = 0x04040;
/// LXONTXC.
pub const LXONTXC: usize = 0x03F60;
/// LXOFFTXC.
pub const LXOFFTXC: usize = 0x03F68;
/// LXONRXCNT.
pub const LXONRXCNT: usize = 0x041A4;
/// LXOFFRXCNT.
pub const LXOFFRXCNT: usize = 0x041A8;
/// PRC64, PRC127, PRC255, PRC511, PRC1023, PRC1522 (0x0405C..0x04070 step 4).
pub const PRC64: usize = 0x0405C;
/// GPRC.
pub const GPRC: usize = 0x04074;
/// BPRC.
pub const BPRC: usize = 0x04078;
/// MPRC.
pub const MPRC: usize = 0x0407C;
/// GPTC.
pub const GPTC: usize = 0x04080;
/// GORCL / GORCH.
pub const GORCL: usize = 0x04088;
/// GORCH.
pub const GORCH: usize = 0x0408C;
/// GOTCL.
pub const GOTCL: usize = 0x04090;
/// GOTCH.
pub const GOTCH: usize = 0x04094;
/// RUC.
pub const RUC: usize = 0x040A4;
/// RFC.
pub const RFC: usize = 0x040A8;
/// ROC.
pub const ROC: usize = 0x040AC;
/// RJC.
pub const RJC: usize = 0x040B0;
/// TORL.
pub const TORL: usize = 0x040C0;
/// TORH.
pub const TORH: usize = 0x040C4;
/// TPR.
pub const TPR: usize = 0x040D0;
/// TPT.
pub const TPT: usize = 0x040D4;
/// PTC64..PTC1522 (0x040D8..0x040EC step 4).
pub const PTC64: usize = 0x040D8;
/// MPTC.
pub const MPTC: usize = 0x040F0;
/// BPTC.
pub const BPTC: usize = 0x040F4;
/// XEC.
pub const XEC: usize = 0x04120;
/// RXNFGPC.
pub const RXNFGPC: usize = 0x041B0;
/// RXNFGBCL.
pub const RXNFGBCL: usize = 0x041B4;
/// RXNFGBCH.
pub const RXNFGBCH: usize = 0x041B8;
/// RXDGPC.
pub const RXDGPC: usize = 0x02F50;
/// RXDGBCL.
pub const RXDGBCL: usize = 0x02F54;
/// RXDGBCH.
pub const RXDGBCH: usize = 0x02F58;
/// TXDGPC.
pub const TXDGPC: usize = 0x087A0;
/// TXDGBCL.
pub const TXDGBCL: usize = 0x087A4;
/// TXDGBCH.
pub const TXDGBCH: usize = 0x087A8;
/// QPRC(n), n = 0..15 (docs/hw/ixgbe.md §6.1).
pub const fn qprc(n: usize) -> usize {
    0x01030 + 0x40 * n
}
/// QBRC_L(n).
pub const fn qbrc_l(n: usize) -> usize {
    0x01034 + 0x40 * n
}
/// QBRC_H(n).
pub const fn qbrc_h(n: usize) -> usize {
    0x01038 + 0x40 * n
}
/// QPRDC(n).
pub const fn qprdc(n: usize) -> usize {
    0x01430 + 0x40 * n
}
/// QPTC(n).
pub const fn qptc(n: usize) -> usize {
    0x06030 + 0x40 * n
}
/// QBTC_L(n).
pub const fn qbtc_l(n: usize) -> usize {
    0x08700 + 8 * n
}
/// QBTC_H(n).
pub const fn qbtc_h(n: usize) -> usize {
    0x08704 + 8 * n
}

// ---- docs/hw/ixgbe.md §7 descriptors -------------------------------------------------------------------------

/// RX write-back dword 2 status: DD bit 0 (docs/hw/ixgbe.md §7.2).
pub const RXD_STAT_DD: u32 = 1 << 0;
/// EOP bit 1.
pub const RXD_STAT_EOP: u32 = 1 << 1;
/// VP bit 3: VLAN packet.
pub const RXD_STAT_VP: u32 = 1 << 3;
/// UDPCS bit 4.
pub const RXD_STAT_UDPCS: u32 = 1 << 4;
/// L4CS bit 5.
pub const RXD_STAT_L4CS: u32 = 1 << 5;
/// IPCS bit 6.
pub const RXD_STAT_IPCS: u32 = 1 << 6;
/// PIF bit 7: passed an inexact filter.
pub const RXD_STAT_PIF: u32 = 1 << 7;
/// UDPV bit 10: UDP checksum field non-zero.
pub const RXD_STAT_UDPV: u32 = 1 << 10;
/// RXE bit 29: MAC error (CRC, length).
pub const RXD_ERR_RXE: u32 = 1 << 29;
/// TCPE / L4E bit 30.
pub const RXD_ERR_L4E: u32 = 1 << 30;
/// IPE bit 31.
pub const RXD_ERR_IPE: u32 = 1 << 31;

/// Packet-type bits in RX dword 0 (already shifted, docs/hw/ixgbe.md §7.2).
pub const PTYPE_IPV4: u32 = 0x10;
/// IPv4 with options.
pub const PTYPE_IPV4_EX: u32 = 0x20;
/// IPv6.
pub const PTYPE_IPV6: u32 = 0x40;
/// IPv6 with extension headers.
pub const PTYPE_IPV6_EX: u32 = 0x80;
/// TCP.
pub const PTYPE_TCP: u32 = 0x100;
/// UDP.
pub const PTYPE_UDP: u32 = 0x200;
/// SCTP.
pub const PTYPE_SCTP: u32 = 0x400;

/// RSS types in RX dword 0 bits 3:0 (docs/hw/ixgbe.md §7.2).
pub mod rss_type {
    /// No hash.
    pub const NONE: u32 = 0;
    /// IPv4/TCP.
    pub const IPV4_TCP: u32 = 1;
    /// IPv4.
    pub const IPV4: u32 = 2;
    /// IPv6/TCP.
    pub const IPV6_TCP: u32 = 3;
    /// IPv6 with extension headers.
    pub const IPV6_EX: u32 = 4;
    /// IPv6.
    pub const IPV6: u32 = 5;
    /// IPv6-ext/TCP.
    pub const IPV6_EX_TCP: u32 = 6;
    /// IPv4/UDP.
    pub const IPV4_UDP: u32 = 7;
    /// IPv6/UDP.
    pub const IPV6_UDP: u32 = 8;
    /// IPv6-ext/UDP.
    pub const IPV6_EX_UDP: u32 = 9;
}

/// TX cmd_type_len.DTYP bits 23:20 (docs/hw/ixgbe.md §7.3).
pub const TXD_DTYP_SHIFT: u32 = 20;
/// DTYP 0x3: advanced data.
pub const TXD_DTYP_DATA: u32 = 0x3;
/// DTYP 0x2: advanced context.
pub const TXD_DTYP_CTXT: u32 = 0x2;
/// DCMD.EOP bit 24.
pub const TXD_CMD_EOP: u32 = 1 << 24;
/// DCMD.IFCS bit 25.
pub const TXD_CMD_IFCS: u32 = 1 << 25;
/// DCMD.RS bit 27.
pub const TXD_CMD_RS: u32 = 1 << 27;
/// DCMD.DEXT bit 29.
pub const TXD_CMD_DEXT: u32 = 1 << 29;
/// DCMD.VLE bit 30.
pub const TXD_CMD_VLE: u32 = 1 << 30;
/// DCMD.TSE bit 31.
pub const TXD_CMD_TSE: u32 = 1 << 31;
/// olinfo_status STA.DD bit 0 (write-back).
pub const TXD_STAT_DD: u32 = 1 << 0;
/// olinfo_status IDX bits 6:4.
pub const TXD_IDX_SHIFT: u32 = 4;
/// olinfo_status POPTS.IXSM bit 8.
pub const TXD_POPTS_IXSM: u32 = 1 << 8;
/// olinfo_status POPTS.TXSM bit 9.
pub const TXD_POPTS_TXSM: u32 = 1 << 9;
/// olinfo_status PAYLEN bits 31:14.
pub const TXD_PAYLEN_SHIFT: u32 = 14;
/// Context type_tucmd_mlhl: TUCMD.IPV4 bit 10 (docs/hw/ixgbe.md §7.4).
pub const TXCTX_TUCMD_IPV4: u32 = 1 << 10;
/// Context: L4T bits 12:11 (0 UDP, 1 TCP, 2 SCTP).
pub const TXCTX_L4T_SHIFT: u32 = 11;
