//! X540 / 82599 registers, declared as data: offsets (with the per-queue formulas), bits and fields, named as in
//! the hardware notes (`docs/hw/ixgbe.md`, sections cited per item; offsets from DPDK's `ixgbe_type.h`).
//!
//! Driver logic never uses a naked mask: it names a [`Reg`], a bit constant or a [`Field`] from here.

pub use drvkit::reg::{bit, Field, PollTimeout, Reg, Regs};

mod intr;
pub mod phy;
mod queue;
mod stats;

pub use intr::*;
pub use queue::*;
pub use stats::*;

// ---- 2. Non-queue registers (docs/hw/ixgbe.md §2) ----

/// Device control (docs/hw/ixgbe.md §4, CTRL).
pub const CTRL: Reg = Reg(0x00000);
/// CTRL bits.
pub mod ctrl {
    use super::bit;
    /// PCIe master disable.
    pub const GIO_DIS: u32 = bit(2);
    /// Link reset.
    pub const LNK_RST: u32 = bit(3);
    /// Device software reset (self-clearing).
    pub const RST: u32 = bit(26);
    /// Both reset bits (what must read back 0 after a reset, docs/hw/ixgbe.md §3.2 step 5).
    pub const RST_MASK: u32 = RST | LNK_RST;
}

/// Device status (docs/hw/ixgbe.md §4, STATUS).
pub const STATUS: Reg = Reg(0x00008);
/// STATUS bits.
pub mod status {
    use super::{bit, Field};
    /// Port number, selects the PHY semaphore.
    pub const LAN_ID: Field = Field::new(3, 2);
    /// PCIe master requests pending.
    pub const GIO: u32 = bit(19);
}

/// Extended device control (docs/hw/ixgbe.md §4, CTRL_EXT).
pub const CTRL_EXT: Reg = Reg(0x00018);
/// CTRL_EXT bits.
pub mod ctrl_ext {
    use super::bit;
    /// PF reset done.
    pub const PFRSTD: u32 = bit(14);
    /// No-snoop disable.
    pub const NS_DIS: u32 = bit(16);
    /// Driver loaded.
    pub const DRV_LOAD: u32 = bit(28);
}

/// Extended SDP pin control (docs/hw/ixgbe.md §2; §5.6: the 82599's SFP+ TX laser).
pub const ESDP: Reg = Reg(0x00020);
/// ESDP bits.
pub mod esdp {
    use super::bit;
    /// SDP3: SFP+ TX laser disable on the 82599 (clear = laser on; docs/hw/ixgbe.md §5.6).
    pub const SDP3: u32 = bit(3);
}

/// PCIe control extended (docs/hw/ixgbe.md §3.1 step 3a).
pub const GCR_EXT: Reg = Reg(0x11050);
/// GCR_EXT bits.
pub mod gcr_ext {
    use super::bit;
    /// Starts clearing the buffers of the PCIe transaction layer (pending TX completions) before a second reset.
    pub const BUFFERS_CLEAR: u32 = bit(30);
}

/// Manageability control (docs/hw/ixgbe.md §5.6).
pub const MMNGC: Reg = Reg(0x042D0);
/// MMNGC bits.
pub mod mmngc {
    use super::bit;
    /// Management firmware vetoes resets and laser changes that would cut its own traffic.
    pub const MNG_VETO: u32 = bit(0);
}

/// RX DMA control (docs/hw/ixgbe.md §4, RDRXCTL).
pub const RDRXCTL: Reg = Reg(0x02F00);
/// RDRXCTL bits.
pub mod rdrxctl {
    use super::{bit, Field};
    /// CRC strip (must agree with HLREG0.RXCRCSTRP).
    pub const CRCSTRIP: u32 = bit(1);
    /// DMA init done (read-only).
    pub const DMAIDONE: u32 = bit(3);
    /// RSC first size: write 0.
    pub const RSCFRSTSIZE: Field = Field::new(21, 17);
    /// RSC ACK: write 1.
    pub const RSCACKC: u32 = bit(25);
    /// FCoE write fix: write 1.
    pub const FCOE_WRFIX: u32 = bit(26);
}

/// Global receive control (docs/hw/ixgbe.md §4, RXCTRL).
pub const RXCTRL: Reg = Reg(0x03000);
/// RXCTRL bits.
pub mod rxctrl {
    use super::bit;
    /// Receive enable.
    pub const RXEN: u32 = bit(0);
}

/// RX packet buffer size `i` (docs/hw/ixgbe.md §3.2 step 8).
pub const fn rxpbsize(i: usize) -> Reg {
    Reg(0x03C00 + 4 * i)
}
/// X540: RX packet buffer 0 is 384 KiB (value 384 << 10).
pub const X540_RXPBSIZE_384K: u32 = 384 << 10;

/// TX flow control config (docs/hw/ixgbe.md §4, MFLCN / FCCFG).
pub const FCCFG: Reg = Reg(0x03D00);
/// FCCFG bits.
pub mod fccfg {
    use super::bit;
    /// Send link PAUSE.
    pub const TFCE_802_3X: u32 = bit(3);
    /// Send priority PAUSE.
    pub const TFCE_PRIORITY: u32 = bit(4);
}

/// MAC core control (docs/hw/ixgbe.md §4, HLREG0).
pub const HLREG0: Reg = Reg(0x04240);
/// HLREG0 bits.
pub mod hlreg0 {
    use super::bit;
    /// Append CRC on TX.
    pub const TXCRCEN: u32 = bit(0);
    /// Strip CRC on RX.
    pub const RXCRCSTRP: u32 = bit(1);
    /// Jumbo frames.
    pub const JUMBOEN: u32 = bit(2);
    /// Pad short TX frames.
    pub const TXPADEN: u32 = bit(10);
    /// MAC loopback.
    pub const LPBK: u32 = bit(15);
}

/// MDIO command (docs/hw/ixgbe.md §5.4).
pub const MSCA: Reg = Reg(0x0425C);
/// MSCA fields.
pub mod msca {
    use super::{bit, Field};
    /// Register address.
    pub const NP_ADDR: Field = Field::new(15, 0);
    /// MMD.
    pub const DEV_TYPE: Field = Field::new(20, 16);
    /// PHY address.
    pub const PHY_ADDR: Field = Field::new(25, 21);
    /// Operation.
    pub const OP_CODE: Field = Field::new(27, 26);
    /// OP_CODE: address cycle.
    pub const OP_ADDR: u32 = 0;
    /// OP_CODE: write.
    pub const OP_WRITE: u32 = 1;
    /// OP_CODE: read.
    pub const OP_READ: u32 = 3;
    /// Clause (00 = clause 45).
    pub const ST_CODE: Field = Field::new(29, 28);
    /// Start; hardware clears it when done.
    pub const MDI_COMMAND: u32 = bit(30);
}
/// MDIO data (docs/hw/ixgbe.md §5.4): write data in 15:0, read data in 31:16.
pub const MSRWD: Reg = Reg(0x04260);
/// MSRWD fields.
pub mod msrwd {
    use super::Field;
    /// Data to write.
    pub const WRITE_DATA: Field = Field::new(15, 0);
    /// Data read.
    pub const READ_DATA: Field = Field::new(31, 16);
}

/// Max frame size (docs/hw/ixgbe.md §11; same register as MHADD).
pub const MAXFRS: Reg = Reg(0x04268);
/// MAXFRS fields.
pub mod maxfrs {
    use super::Field;
    /// Max frame size including L2 header and CRC.
    pub const MFS: Field = Field::new(31, 16);
}

/// RX flow control (docs/hw/ixgbe.md §4, MFLCN).
pub const MFLCN: Reg = Reg(0x04294);
/// MFLCN bits.
pub mod mflcn {
    use super::bit;
    /// Receive pause honour.
    pub const RFCE: u32 = bit(3);
    /// Priority flow control enable.
    pub const RPFCE: u32 = bit(2);
}

/// 82599 MAC auto-negotiation control (docs/hw/ixgbe.md §5.6, AUTOC).
pub const AUTOC: Reg = Reg(0x042A0);
/// AUTOC bits and fields (docs/hw/ixgbe.md §5.6).
pub mod autoc {
    use super::{bit, Field};
    /// Restart auto-negotiation.
    pub const AN_RESTART: u32 = bit(12);
    /// Link mode select.
    pub const LMS: Field = Field::new(15, 13);
    /// LMS: 10G serial (SFI), what an SFP+ port runs.
    pub const LMS_10G_SERIAL: u32 = 3;
}

/// 82599 auto-negotiation control 2 (docs/hw/ixgbe.md §5.6, AUTOC2).
pub const AUTOC2: Reg = Reg(0x042A8);
/// AUTOC2 bits and fields (docs/hw/ixgbe.md §5.6).
pub mod autoc2 {
    use super::Field;
    /// 10G serial PMA/PMD (0 KR, 1 XFI, 2 SFI).
    pub const PMA_PMD_10G_SERIAL: Field = Field::new(17, 16);
    /// 10G serial PMA/PMD: SFI (SFP+).
    pub const PMA_PMD_10G_SERIAL_SFI: u32 = 2;
    /// Link disable bits: clear to enable the link.
    pub const LINK_DISABLE_MASK: u32 = 0x7000_0000;
}

/// Link status (docs/hw/ixgbe.md §5.1).
pub const LINKS: Reg = Reg(0x042A4);
/// LINKS fields.
pub mod links {
    use super::{bit, Field};
    /// Link up.
    pub const LINK_UP: u32 = bit(30);
    /// Speed (82599/X540).
    pub const SPEED: Field = Field::new(29, 28);
    /// SPEED: 100 Mb/s.
    pub const SPEED_100M: u32 = 0b01;
    /// SPEED: 1 Gb/s.
    pub const SPEED_1G: u32 = 0b10;
    /// SPEED: 10 Gb/s.
    pub const SPEED_10G: u32 = 0b11;
}

/// DCB TX descriptor plane control (docs/hw/ixgbe.md §4, RTTDCS).
pub const RTTDCS: Reg = Reg(0x04900);
/// RTTDCS bits.
pub mod rttdcs {
    use super::bit;
    /// Arbiter disable (while changing MTQC).
    pub const ARBDIS: u32 = bit(6);
}

/// Global TX DMA control (docs/hw/ixgbe.md §4, DMATXCTL).
pub const DMATXCTL: Reg = Reg(0x04A80);
/// DMATXCTL bits.
pub mod dmatxctl {
    use super::bit;
    /// TX enable.
    pub const TE: u32 = bit(0);
}

/// RX checksum control (docs/hw/ixgbe.md §4, RXCSUM).
pub const RXCSUM: Reg = Reg(0x05000);
/// RXCSUM bits.
pub mod rxcsum {
    use super::bit;
    /// IP payload checksum enable.
    pub const IPPCSE: u32 = bit(12);
    /// Packet checksum disable: the descriptor carries the RSS hash.
    pub const PCSD: u32 = bit(13);
}

/// Filter control (docs/hw/ixgbe.md §4, FCTRL).
pub const FCTRL: Reg = Reg(0x05080);
/// FCTRL bits.
pub mod fctrl {
    use super::bit;
    /// Store bad packets.
    pub const SBP: u32 = bit(1);
    /// Multicast promiscuous.
    pub const MPE: u32 = bit(8);
    /// Unicast promiscuous.
    pub const UPE: u32 = bit(9);
    /// Broadcast accept.
    pub const BAM: u32 = bit(10);
    /// Pass MAC control frames.
    pub const PMCF: u32 = bit(12);
    /// Discard PAUSE frames.
    pub const DPF: u32 = bit(13);
}

/// Multicast table control (docs/hw/ixgbe.md §10.2).
pub const MCSTCTRL: Reg = Reg(0x05090);
/// Multicast hash table word `i` (0..128).
pub const fn mta(i: usize) -> Reg {
    Reg(0x05200 + 4 * i)
}
/// MTA words.
pub const MTA_WORDS: usize = 128;

/// Receive address low `i` (docs/hw/ixgbe.md §10.1).
pub const fn ral(i: usize) -> Reg {
    if i <= 15 {
        Reg(0x05400 + 8 * i)
    } else {
        Reg(0x0A200 + 8 * i)
    }
}
/// Receive address high `i` (docs/hw/ixgbe.md §10.1).
pub const fn rah(i: usize) -> Reg {
    if i <= 15 {
        Reg(0x05404 + 8 * i)
    } else {
        Reg(0x0A204 + 8 * i)
    }
}
/// RAH fields.
pub mod rah {
    use super::{bit, Field};
    /// Address bytes 4 and 5.
    pub const ADDR_HI: Field = Field::new(15, 0);
    /// Address valid.
    pub const AV: u32 = bit(31);
}
/// Unicast address filter entries.
pub const RAR_ENTRIES: usize = 128;
/// Pool select for RAR `i`, pools 0..31 (docs/hw/ixgbe.md §10.1).
pub const fn mpsar_lo(i: usize) -> Reg {
    Reg(0x0A600 + 8 * i)
}
/// Pool select for RAR `i`, pools 32..63.
pub const fn mpsar_hi(i: usize) -> Reg {
    Reg(0x0A604 + 8 * i)
}
/// VLAN control (docs/hw/ixgbe.md §10.3).
pub const VLNCTRL: Reg = Reg(0x05088);
/// VLNCTRL bits.
pub mod vlnctrl {
    use super::bit;
    /// VLAN filter enable: tagged frames pass only if their VLAN ID's VFTA bit is set.
    pub const VFE: u32 = bit(30);
}
/// VLAN filter table word `i` (0..128, docs/hw/ixgbe.md §10.3).
pub const fn vfta(i: usize) -> Reg {
    Reg(0x0A000 + 4 * i)
}
/// VFTA words.
pub const VFTA_WORDS: usize = 128;
/// The highest VLAN ID (12 bits; the VFTA has one bit per ID).
pub const MAX_VLAN_ID: u16 = 4095;
/// The VFTA word holding VLAN ID `vid`'s bit, and that bit (docs/hw/ixgbe.md §10.3).
pub const fn vfta_slot(vid: u16) -> (usize, u32) {
    ((vid >> 5) as usize, bit((vid & 0x1F) as u32))
}

/// Multiple RX queue control (docs/hw/ixgbe.md §9).
pub const MRQC: Reg = Reg(0x05818);
/// MRQC fields.
pub mod mrqc {
    use super::{bit, Field};
    /// Mode.
    pub const MRQE: Field = Field::new(3, 0);
    /// MRQE: RSS only.
    pub const MRQE_RSS: u32 = 0x1;
    /// Hash IPv4/TCP.
    pub const RSS_FIELD_IPV4_TCP: u32 = bit(16);
    /// Hash IPv4.
    pub const RSS_FIELD_IPV4: u32 = bit(17);
    /// Hash IPv6-ext/TCP.
    pub const RSS_FIELD_IPV6_EX_TCP: u32 = bit(18);
    /// Hash IPv6-ext.
    pub const RSS_FIELD_IPV6_EX: u32 = bit(19);
    /// Hash IPv6.
    pub const RSS_FIELD_IPV6: u32 = bit(20);
    /// Hash IPv6/TCP.
    pub const RSS_FIELD_IPV6_TCP: u32 = bit(21);
    /// Hash IPv4/UDP.
    pub const RSS_FIELD_IPV4_UDP: u32 = bit(22);
    /// Hash IPv6/UDP.
    pub const RSS_FIELD_IPV6_UDP: u32 = bit(23);
    /// Hash IPv6-ext/UDP.
    pub const RSS_FIELD_IPV6_EX_UDP: u32 = bit(24);
}
/// RSS redirection table word `i` (0..32): four one-byte entries, lowest byte = lowest entry (docs/hw/ixgbe.md §9).
pub const fn reta(i: usize) -> Reg {
    Reg(0x05C00 + 4 * i)
}
/// RETA entries (128).
pub const RETA_ENTRIES: usize = 128;
/// Only the low 4 bits of each entry count on 82599/X540: RSS spreads over at most 16 queues.
pub const RETA_MAX_QUEUES: u16 = 16;
/// RSS key word `i` (0..10): key byte 4i+j in bits 8j+7:8j (docs/hw/ixgbe.md §9).
pub const fn rssrk(i: usize) -> Reg {
    Reg(0x05C80 + 4 * i)
}
/// RSS key length in bytes.
pub const RSS_KEY_LEN: usize = 40;
/// Linux's default RSS key (docs/hw/ixgbe.md §9), as the ten RSSRK words.
pub const DEFAULT_RSS_KEY_WORDS: [u32; 10] = [
    0xE291D73D, 0x1805EC6C, 0x2A94B30D, 0xA54F2BEC, 0xEA49AF7C, 0xE214AD3D, 0xB855AABE, 0x6A3E67EA, 0x14364D17,
    0x3BED200D,
];

/// Max outstanding TX data read size (docs/hw/ixgbe.md §3.6 step 29).
pub const DTXMXSZRQ: Reg = Reg(0x08100);
/// ixy's value for non-DCB.
pub const DTXMXSZRQ_MAX: u32 = 0xFFF;
/// Multiple TX queue control (docs/hw/ixgbe.md §4, MTQC): 0 = 64 queues, one packet buffer.
pub const MTQC: Reg = Reg(0x08120);

/// RX security block control (docs/hw/ixgbe.md §2, SECRXCTRL; §3.7 step 35: the 82599 RX errata).
pub const SECRXCTRL: Reg = Reg(0x08D00);
/// SECRXCTRL bits.
pub mod secrxctrl {
    use super::bit;
    /// Stop the RX security path (held while RXCTRL.RXEN is set on the 82599).
    pub const RX_DIS: u32 = bit(1);
}
/// RX security block status (docs/hw/ixgbe.md §2, SECRXSTAT).
pub const SECRXSTAT: Reg = Reg(0x08D04);
/// SECRXSTAT bits.
pub mod secrxstat {
    use super::bit;
    /// The RX security path is quiet (poll after setting SECRXCTRL.RX_DIS).
    pub const SECRX_RDY: u32 = bit(0);
}

/// EEPROM/flash control (docs/hw/ixgbe.md §4, EEC).
pub const EEC: Reg = Reg(0x10010);
/// EEC bits.
pub mod eec {
    use super::bit;
    /// EEPROM auto-read done.
    pub const ARD: u32 = bit(9);
}

/// Software semaphore (docs/hw/ixgbe.md §5.5).
pub const SWSM: Reg = Reg(0x10140);
/// SWSM bits.
pub mod swsm {
    use super::bit;
    /// Inter-driver semaphore.
    pub const SMBI: u32 = bit(0);
}
/// SW/FW resource semaphore (docs/hw/ixgbe.md §5.5, SW_FW_SYNC = GSSR).
pub const SW_FW_SYNC: Reg = Reg(0x10160);
/// SW_FW_SYNC bits.
pub mod sw_fw_sync {
    use super::bit;
    /// PHY 0 (software owner).
    pub const PHY0: u32 = bit(1);
    /// PHY 1 (software owner).
    pub const PHY1: u32 = bit(2);
    /// Firmware owner bit = software bit << FW_SHIFT.
    pub const FW_SHIFT: u32 = 5;
    /// Register semaphore.
    pub const REGSMP: u32 = bit(31);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_register_formulas_follow_the_fact_sheet() {
        assert_eq!(rdbal(0), Reg(0x1000));
        assert_eq!(rdt(1), Reg(0x1058));
        assert_eq!(rdbal(64), Reg(0xD000));
        assert_eq!(rxdctl(65), Reg(0xD068));
        assert_eq!(srrctl(15), Reg(0x213C));
        assert_eq!(srrctl(16), Reg(0x1414));
        assert_eq!(srrctl(64), Reg(0xD014));
        assert_eq!(dca_rxctrl(3), Reg(0x220C));
        assert_eq!(tdt(2), Reg(0x6098));
        assert_eq!(txdctl(127), Reg(0x6028 + 0x40 * 127));
        assert_eq!(ral(16), Reg(0xA280));
        assert_eq!(rah(1), Reg(0x540C));
    }

    #[test]
    fn fields() {
        assert_eq!(maxfrs::MFS.mask(), 0xFFFF_0000);
        assert_eq!(maxfrs::MFS.set(0x1234, 9018), (9018 << 16) | 0x1234);
        assert_eq!(links::SPEED.get(0x7000_0000), 0b11);
        assert_eq!(srrctl::DESCTYPE.val(srrctl::DESCTYPE_ADV_ONEBUF), 0x0200_0000);
        assert_eq!(rdrxctl::RSCFRSTSIZE.mask(), 0x003E_0000);
        assert_eq!(Field::new(31, 0).mask(), u32::MAX);
    }

    #[test]
    fn stat_table_indices_match() {
        assert_eq!(STATS[stat_idx::CRCERRS].lo, CRCERRS);
        assert_eq!(STATS[stat_idx::RLEC].name, "rx_length_errors");
        assert_eq!(STATS[stat_idx::XEC].lo, Reg(0x04120));
        assert_eq!(STATS[stat_idx::GPRC].lo, Reg(0x04074));
        assert_eq!(STATS[stat_idx::GOTC].lo, Reg(0x04090));
        assert_eq!(STATS[stat_idx::MPC].lo, mpc(0));
        assert_eq!(STATS[stat_idx::MPTC].lo, Reg(0x040F0));
        assert_eq!(STATS[stat_idx::TPR].lo, Reg(0x040D0));
        assert_eq!(STATS[stat_idx::TOR].lo, Reg(0x040C0));
        assert_eq!(STATS[stat_idx::PTC64].lo, Reg(0x040D8));
        assert_eq!(STATS[stat_idx::LXONTXC].lo, Reg(0x03F60));
        assert_eq!(STATS[stat_idx::LXOFFTXC].lo, Reg(0x03F68));
        assert_eq!(STATS[stat_idx::FCCRC].lo, Reg(0x05118));
        assert_eq!(STATS[stat_idx::FCLAST].lo, Reg(0x02424));
        assert_eq!(STATS[stat_idx::QPRC].lo, Reg(0x01030));
        assert_eq!(STATS.len(), stat_idx::QPRC + 1);
    }
}
