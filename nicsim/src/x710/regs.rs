//! The X710 model's own register map: offsets and fields as docs/hw/i40e.md gives them (section cited per group).
//! Written for the model, independently of any driver. A [`Field`] names a bit range; the model reads and writes
//! register values only through fields.

/// A bit field `width` bits wide starting at bit `lsb` of a register (or of any little-endian bit string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Lowest bit.
    pub lsb: u32,
    /// Width in bits (1..=32 for register fields).
    pub width: u32,
}

impl Field {
    /// A field of `width` bits at `lsb`.
    pub const fn new(lsb: u32, width: u32) -> Field {
        Field { lsb, width }
    }

    /// A one-bit field.
    pub const fn bit(lsb: u32) -> Field {
        Field { lsb, width: 1 }
    }

    /// The field's mask in place.
    pub const fn mask(self) -> u32 {
        (((1u64 << self.width) - 1) as u32) << self.lsb
    }

    /// The field's value in `reg`.
    pub const fn get(self, reg: u32) -> u32 {
        (reg & self.mask()) >> self.lsb
    }

    /// True if the (one-bit) field is set in `reg`.
    pub const fn is_set(self, reg: u32) -> bool {
        reg & self.mask() != 0
    }

    /// `value` placed in the field (excess bits dropped).
    pub const fn val(self, value: u32) -> u32 {
        (value << self.lsb) & self.mask()
    }

    /// `reg` with the field replaced by `value`.
    pub const fn with(self, reg: u32, value: u32) -> u32 {
        (reg & !self.mask()) | self.val(value)
    }
}

// ---- docs/hw/i40e.md §1 identity and BAR ----------------------------------------------------------------------

/// BAR0 size of an XL710-Q2 (docs/hw/i40e.md §1; assumed for all parts).
pub const BAR0_LEN: usize = 8 << 20;
/// BAR3 (MSI-X) size (docs/hw/i40e.md §1).
pub const BAR3_LEN: usize = 32 << 10;

// ---- docs/hw/i40e.md §3 / §4 firmware status, reset, identity ---------------------------------------------------

/// Firmware status (docs/hw/i40e.md §3 step 1); FWS1B non-zero means recovery mode.
pub const GL_FWSTS: usize = 0x08_3048;
/// GL_FWSTS.FWS1B.
pub const GL_FWSTS_FWS1B: Field = Field::new(16, 8);
/// PF software reset (docs/hw/i40e.md §4.1).
pub const PFGEN_CTRL: usize = 0x09_2400;
/// PFGEN_CTRL.PFSWR: PF reset, self-clearing.
pub const PFGEN_CTRL_PFSWR: Field = Field::bit(0);
/// Global reset status (docs/hw/i40e.md §4.1).
pub const GLGEN_RSTAT: usize = 0x0B_8188;
/// GLGEN_RSTAT.DEVSTATE (0: no global reset under way).
pub const GLGEN_RSTAT_DEVSTATE: Field = Field::new(0, 2);
/// Global reset control (docs/hw/i40e.md §4.1).
pub const GLGEN_RSTCTL: usize = 0x0B_8180;
/// GLGEN_RSTCTL.GRSTDEL.
pub const GLGEN_RSTCTL_GRSTDEL: Field = Field::new(0, 6);
/// Global reset triggers (docs/hw/i40e.md §4.1; not modelled: a write is a fault).
pub const GLGEN_RTRIG: usize = 0x0B_8190;
/// NVM configuration load status (docs/hw/i40e.md §4.1).
pub const GLNVM_ULD: usize = 0x0B_6008;
/// GLNVM_FLA, flash access (docs/hw/i40e.md §18).
pub const GLNVM_FLA: usize = 0x0B_6108;
/// GLNVM_FLA.LOCKED: the NVM is in normal (locked) mode; 0 means blank-programming mode.
pub const GLNVM_FLA_LOCKED: Field = Field::bit(6);
/// GLHMC_FCOEFMAX: the FCoE filter entries the HMC can hold (docs/hw/i40e.md §8.2, §18.3).
pub const GLHMC_FCOEFMAX: usize = 0x0C_20D0;
/// GLHMC_FCOEFMAX.PMFCOEFMAX.
pub const GLHMC_FCOEFMAX_PMFCOEFMAX: Field = Field::new(0, 16);
/// PRTQF_FD_INSET(i, j): flow-director input set of PCTYPE i (0..63), word j (0..1) at + 64 i + 32 j, written
/// through RX Control Register Write (docs/hw/i40e.md §6.11).
pub const PRTQF_FD_INSET: usize = 0x25_0000;
/// PRTGEN_CNF of port 0; port n's is 4 n above (docs/hw/i40e.md §18.2).
pub const PRTGEN_CNF: usize = 0x0B_8120;
/// PRTGEN_CNF.PORT_DIS: the port is disabled (absent on this board).
pub const PRTGEN_CNF_PORT_DIS: Field = Field::bit(0);
/// GLNVM_GENS, NVM general status (docs/hw/i40e.md §18.1).
pub const GLNVM_GENS: usize = 0x0B_6100;
/// GLNVM_GENS.NVM_PRES: an NVM is present.
pub const GLNVM_GENS_NVM_PRES: Field = Field::bit(0);
/// GLNVM_GENS.SR_SIZE: the shadow RAM holds 2^SR_SIZE KB.
pub const GLNVM_GENS_SR_SIZE: Field = Field::new(5, 3);
/// GLNVM_SRCTL, shadow RAM access control (docs/hw/i40e.md §18.1).
pub const GLNVM_SRCTL: usize = 0x0B_6110;
/// GLNVM_SRCTL.ADDR: the word address.
pub const GLNVM_SRCTL_ADDR: Field = Field::new(14, 15);
/// GLNVM_SRCTL.WRITE: the access is a write.
pub const GLNVM_SRCTL_WRITE: Field = Field::bit(29);
/// GLNVM_SRCTL.START: start the access.
pub const GLNVM_SRCTL_START: Field = Field::bit(30);
/// GLNVM_SRCTL.DONE: the last access finished (1 when idle).
pub const GLNVM_SRCTL_DONE: Field = Field::bit(31);
/// GLNVM_SRDATA, shadow RAM data (docs/hw/i40e.md §18.1).
pub const GLNVM_SRDATA: usize = 0x0B_6114;
/// GLNVM_SRDATA.WRDATA: the word to write.
pub const GLNVM_SRDATA_WRDATA: Field = Field::new(0, 16);
/// GLNVM_SRDATA.RDDATA: the word read.
pub const GLNVM_SRDATA_RDDATA: Field = Field::new(16, 16);
/// GLNVM_ULD.CONF_CORE_DONE.
pub const GLNVM_ULD_CONF_CORE_DONE: Field = Field::bit(3);
/// GLNVM_ULD.CONF_GLOBAL_DONE.
pub const GLNVM_ULD_CONF_GLOBAL_DONE: Field = Field::bit(4);
/// The port this PF drives, bits 1:0 (docs/hw/i40e.md §3 step 4). The offset is not in docs/hw/i40e.md: it is [reg.h]'s, recalled
/// and unverified.
pub const PFGEN_PORTNUM: usize = 0x1C_0480;
/// PFGEN_PORTNUM.PORT_NUM.
pub const PFGEN_PORTNUM_PORT_NUM: Field = Field::new(0, 2);
/// The PF's requester ID: pf_id in bits 2:0 without ARI (docs/hw/i40e.md §3 step 4). Offset recalled from [reg.h], unverified.
pub const PF_FUNC_RID: usize = 0x09_C000;
/// PF_FUNC_RID function number without ARI.
pub const PF_FUNC_RID_FUNCTION: Field = Field::new(0, 3);
/// PCI capabilities: ARI_EN bit 4 (docs/hw/i40e.md §3 step 4).
pub const GLPCI_CAPSUP: usize = 0x0B_E4A8;
/// GLPCI_CAPSUP.ARI_EN.
pub const GLPCI_CAPSUP_ARI_EN: Field = Field::bit(4);
/// MSI-X vector counts (docs/hw/i40e.md §4.3).
pub const GLPCI_CNF2: usize = 0x0B_E494;
/// GLPCI_CNF2.MSI_X_PF_N.
pub const GLPCI_CNF2_MSI_X_PF_N: Field = Field::new(2, 11);
/// GLPCI_CNF2.MSI_X_VF_N (bits 23:13): vectors per VF.
pub const GLPCI_CNF2_MSI_X_VF_N: Field = Field::new(13, 11);
/// The PF's queue range (docs/hw/i40e.md §4.3).
pub const PFLAN_QALLOC: usize = 0x1C_0400;
/// PFLAN_QALLOC.FIRSTQ.
pub const PFLAN_QALLOC_FIRSTQ: Field = Field::new(0, 11);
/// PFLAN_QALLOC.LASTQ.
pub const PFLAN_QALLOC_LASTQ: Field = Field::new(16, 11);
/// PFLAN_QALLOC.VALID.
pub const PFLAN_QALLOC_VALID: Field = Field::bit(31);
/// Written with 1 after Clear PXE Mode (docs/hw/i40e.md §3 step 7).
pub const GLLAN_RCTL_0: usize = 0x12_A500;

// ---- docs/hw/i40e.md §5.1 admin queue ---------------------------------------------------------------------------

/// ATQ base, low half.
pub const PF_ATQBAL: usize = 0x08_0000;
/// ARQ base, low half.
pub const PF_ARQBAL: usize = 0x08_0080;
/// ATQ base, high half.
pub const PF_ATQBAH: usize = 0x08_0100;
/// ARQ base, high half.
pub const PF_ARQBAH: usize = 0x08_0180;
/// ATQ length and enable.
pub const PF_ATQLEN: usize = 0x08_0200;
/// ARQ length and enable.
pub const PF_ARQLEN: usize = 0x08_0280;
/// ATQ head (moved by the firmware).
pub const PF_ATQH: usize = 0x08_0300;
/// ARQ head (moved by the firmware).
pub const PF_ARQH: usize = 0x08_0380;
/// ATQ tail (written by the driver).
pub const PF_ATQT: usize = 0x08_0400;
/// ARQ tail (written by the driver).
pub const PF_ARQT: usize = 0x08_0480;
/// xQLEN.LEN: entries.
pub const AQLEN_LEN: Field = Field::new(0, 10);
/// xQLEN.VFE.
pub const AQLEN_VFE: Field = Field::bit(28);
/// xQLEN.OVFL (ARQ overflowed).
pub const AQLEN_OVFL: Field = Field::bit(29);
/// xQLEN.CRIT (critical error).
pub const AQLEN_CRIT: Field = Field::bit(30);
/// xQLEN.ENABLE.
pub const AQLEN_ENABLE: Field = Field::bit(31);
/// Head / tail index.
pub const AQ_PTR: Field = Field::new(0, 10);

// ---- docs/hw/i40e.md §7.4 link registers ------------------------------------------------------------------------

/// MAC link status of the port.
pub const PRTMAC_LINKSTA: usize = 0x1E_2420;
/// PRTMAC_LINKSTA: both bits set means link up.
pub const PRTMAC_LINKSTA_UP_BITS: u32 = 0x4000_0080;
/// PRTMAC_LINKSTA speed code.
pub const PRTMAC_LINKSTA_SPEED: Field = Field::new(27, 3);
/// MAC control; bit 17 turns speed code 3 into 25G.
pub const PRTMAC_MACC: usize = 0x1E_24E0;
/// PRTMAC_MACC 25G flag.
pub const PRTMAC_MACC_25G: Field = Field::bit(17);

// ---- docs/hw/i40e.md §8.2 HMC -----------------------------------------------------------------------------------

/// log2 of the TX context size.
pub const GLHMC_LANTXOBJSZ: usize = 0x0C_2004;
/// Most LAN queues per function.
pub const GLHMC_LANQMAX: usize = 0x0C_2008;
/// log2 of the RX context size.
pub const GLHMC_LANRXOBJSZ: usize = 0x0C_200C;
/// TX context FPM base of function `f` (512-byte units, bits 23:0).
pub const fn glhmc_lantxbase(f: usize) -> usize {
    0x0C_6200 + 4 * f
}
/// TX context count of function `f` (bits 10:0).
pub const fn glhmc_lantxcnt(f: usize) -> usize {
    0x0C_6300 + 4 * f
}
/// RX context FPM base of function `f`.
pub const fn glhmc_lanrxbase(f: usize) -> usize {
    0x0C_6400 + 4 * f
}
/// RX context count of function `f`.
pub const fn glhmc_lanrxcnt(f: usize) -> usize {
    0x0C_6500 + 4 * f
}
/// SD partition of function `f`, set by the firmware.
pub const fn glhmc_sdpart(f: usize) -> usize {
    0x0C_0800 + 4 * f
}
/// GLHMC_LAN*BASE field.
pub const GLHMC_BASE: Field = Field::new(0, 24);
/// GLHMC_LAN*CNT field.
pub const GLHMC_CNT: Field = Field::new(0, 11);
/// GLHMC_SDPART.PMSDBASE.
pub const GLHMC_SDPART_PMSDBASE: Field = Field::new(0, 12);
/// GLHMC_SDPART.PMSDSIZE.
pub const GLHMC_SDPART_PMSDSIZE: Field = Field::new(16, 13);
/// SD command.
pub const PFHMC_SDCMD: usize = 0x0C_0000;
/// PFHMC_SDCMD.PMSDIDX.
pub const PFHMC_SDCMD_PMSDIDX: Field = Field::new(0, 12);
/// PFHMC_SDCMD.PMSDPARTSEL.
pub const PFHMC_SDCMD_PMSDPARTSEL: Field = Field::bit(15);
/// PFHMC_SDCMD.PMSDWR: write strobe.
pub const PFHMC_SDCMD_PMSDWR: Field = Field::bit(31);
/// SD data, low half.
pub const PFHMC_SDDATALOW: usize = 0x0C_0100;
/// PFHMC_SDDATALOW.PMSDVALID.
pub const PFHMC_SDDATALOW_PMSDVALID: Field = Field::bit(0);
/// PFHMC_SDDATALOW.PMSDTYPE (1 direct, 0 paged).
pub const PFHMC_SDDATALOW_PMSDTYPE: Field = Field::bit(1);
/// PFHMC_SDDATALOW.PMSDBPCOUNT.
pub const PFHMC_SDDATALOW_PMSDBPCOUNT: Field = Field::new(2, 10);
/// PFHMC_SDDATALOW.PMSDDATALOW: address bits 31:12.
pub const PFHMC_SDDATALOW_PMSDDATALOW: Field = Field::new(12, 20);
/// SD data, high half (address bits 63:32).
pub const PFHMC_SDDATAHIGH: usize = 0x0C_0200;
/// PD invalidate.
pub const PFHMC_PDINV: usize = 0x0C_0300;
/// PFHMC_PDINV.PMSDIDX.
pub const PFHMC_PDINV_PMSDIDX: Field = Field::new(0, 12);
/// PFHMC_PDINV.PMPDIDX.
pub const PFHMC_PDINV_PMPDIDX: Field = Field::new(16, 9);
/// HMC error information.
pub const PFHMC_ERRORINFO: usize = 0x0C_0400;
/// PFHMC_ERRORINFO.ERROR_DETECTED.
pub const PFHMC_ERRORINFO_ERROR_DETECTED: Field = Field::bit(31);
/// PFHMC_ERRORINFO.HMC_OBJECT_TYPE.
pub const PFHMC_ERRORINFO_HMC_OBJECT_TYPE: Field = Field::new(16, 5);
/// PFHMC_ERRORINFO.HMC_ERROR_TYPE.
pub const PFHMC_ERRORINFO_HMC_ERROR_TYPE: Field = Field::new(8, 4);
/// HMC error data (the FPM address that failed, bits 29:0).
pub const PFHMC_ERRORDATA: usize = 0x0C_0500;

// ---- docs/hw/i40e.md §9.1 queues --------------------------------------------------------------------------------

/// Queue registers cover queues 0..1535.
pub const MAX_QUEUES: usize = 1536;
/// TX queue enable of PF queue `q`.
pub const fn qtx_ena(q: usize) -> usize {
    0x10_0000 + 4 * q
}
/// TX queue control of PF queue `q`.
pub const fn qtx_ctl(q: usize) -> usize {
    0x10_4000 + 4 * q
}
/// TX tail of PF queue `q`.
pub const fn qtx_tail(q: usize) -> usize {
    0x10_8000 + 4 * q
}
/// TX head of PF queue `q`.
pub const fn qtx_head(q: usize) -> usize {
    0x0E_4000 + 4 * q
}
/// RX queue enable of PF queue `q`.
pub const fn qrx_ena(q: usize) -> usize {
    0x12_0000 + 4 * q
}
/// RX tail of PF queue `q`.
pub const fn qrx_tail(q: usize) -> usize {
    0x12_8000 + 4 * q
}
/// RX interrupt cause control of queue `q`.
pub const fn qint_rqctl(q: usize) -> usize {
    0x03_A000 + 4 * q
}
/// TX interrupt cause control of queue `q`.
pub const fn qint_tqctl(q: usize) -> usize {
    0x03_C000 + 4 * q
}
/// TX pre-disable of block `b` (absolute queues 128 b ..).
pub const fn gllan_txpre_qdis(b: usize) -> usize {
    0x0E_6500 + 4 * b
}
/// xQ_ENA.QENA_REQ.
pub const QENA_REQ: Field = Field::bit(0);
/// xQ_ENA.FAST_QDIS.
pub const QENA_FAST_QDIS: Field = Field::bit(1);
/// xQ_ENA.QENA_STAT (read-only).
pub const QENA_STAT: Field = Field::bit(2);
/// QTX_CTL.PFVF_Q (2: PF queue).
pub const QTX_CTL_PFVF_Q: Field = Field::new(0, 2);
/// QTX_CTL.PFVF_Q value for a PF queue.
pub const QTX_CTL_PFVF_Q_PF: u32 = 2;
/// QTX_CTL.PF_INDX.
pub const QTX_CTL_PF_INDX: Field = Field::new(2, 4);
/// QTX_CTL.VFVM_INDX.
pub const QTX_CTL_VFVM_INDX: Field = Field::new(7, 9);
/// Tail field.
pub const QTAIL: Field = Field::new(0, 13);
/// QTX_HEAD.HEAD.
pub const QTX_HEAD_HEAD: Field = Field::new(0, 13);
/// QTX_HEAD.RS_PENDING.
pub const QTX_HEAD_RS_PENDING: Field = Field::bit(16);
/// GLLAN_TXPRE_QDIS.QINDX.
pub const TXPRE_QDIS_QINDX: Field = Field::new(0, 11);
/// GLLAN_TXPRE_QDIS.QDIS_STAT.
pub const TXPRE_QDIS_QDIS_STAT: Field = Field::bit(16);
/// GLLAN_TXPRE_QDIS.SET_QDIS.
pub const TXPRE_QDIS_SET_QDIS: Field = Field::bit(30);
/// GLLAN_TXPRE_QDIS.CLEAR_QDIS.
pub const TXPRE_QDIS_CLEAR_QDIS: Field = Field::bit(31);
/// Malicious driver detection, TX (docs/hw/i40e.md §11): VALID bit 31.
pub const GL_MDET_TX: usize = 0x0E_6480;
/// Malicious driver detection, RX.
pub const GL_MDET_RX: usize = 0x12_A510;
/// GL_MDET_*.VALID.
pub const GL_MDET_VALID: Field = Field::bit(31);

// ---- docs/hw/i40e.md §12.1 RSS ----------------------------------------------------------------------------------

/// Hash key register `i` (0..12).
pub const fn pfqf_hkey(i: usize) -> usize {
    0x24_4800 + 128 * i
}
/// Hash table register `i` (0..127), four 6-bit entries.
pub const fn pfqf_hlut(i: usize) -> usize {
    0x24_0000 + 128 * i
}
/// Hashed PCTYPEs, `i` 0 (bits 31:0) or 1 (63:32).
pub const fn pfqf_hena(i: usize) -> usize {
    0x24_5900 + 128 * i
}
/// PF queue filter control.
pub const PFQF_CTL_0: usize = 0x1C_0AC0;
/// PFQF_CTL_0.HASHLUTSIZE (0: 128 entries, 1: 512).
pub const PFQF_CTL_0_HASHLUTSIZE: Field = Field::bit(16);
/// Global hash control.
pub const GLQF_CTL: usize = 0x26_9BA4;
/// GLQF_CTL.HTOEP (1: Toeplitz).
pub const GLQF_CTL_HTOEP: Field = Field::bit(1);
/// Port hash control.
pub const PRTQF_CTL_0: usize = 0x25_6E60;
/// PRTQF_CTL_0.HSYM_ENA.
pub const PRTQF_CTL_0_HSYM_ENA: Field = Field::bit(0);
/// HLUT entry width (6 bits, queue 0..63).
pub const HLUT_ENTRY: Field = Field::new(0, 6);
/// RSS key length in bytes.
pub const RSS_KEY_LEN: usize = 52;

/// PCTYPE numbers (docs/hw/i40e.md §12.1).
pub mod pctype {
    /// IPv4 UDP.
    pub const IPV4_UDP: u32 = 31;
    /// IPv4 TCP.
    pub const IPV4_TCP: u32 = 33;
    /// IPv4 SCTP.
    pub const IPV4_SCTP: u32 = 34;
    /// IPv4 other.
    pub const IPV4_OTHER: u32 = 35;
    /// IPv4 fragment.
    pub const FRAG_IPV4: u32 = 36;
    /// IPv6 UDP.
    pub const IPV6_UDP: u32 = 41;
    /// IPv6 TCP.
    pub const IPV6_TCP: u32 = 43;
    /// IPv6 SCTP.
    pub const IPV6_SCTP: u32 = 44;
    /// IPv6 other.
    pub const IPV6_OTHER: u32 = 45;
    /// IPv6 fragment.
    pub const FRAG_IPV6: u32 = 46;
    /// L2 payload.
    pub const L2_PAYLOAD: u32 = 63;
}

// ---- docs/hw/i40e.md §13 statistics -----------------------------------------------------------------------------

/// Per-port 48-bit and 32-bit counters: L offset of port `p` = base + 8 p.
pub mod stat {
    /// Good octets received (48).
    pub const GLPRT_GORC: usize = 0x30_0000;
    /// CRC errors (32).
    pub const GLPRT_CRCERRS: usize = 0x30_0080;
    /// Length errors (32).
    pub const GLPRT_RLEC: usize = 0x30_00A0;
    /// Illegal bytes (32).
    pub const GLPRT_ILLERRC: usize = 0x30_00E0;
    /// Undersize (32).
    pub const GLPRT_RUC: usize = 0x30_0100;
    /// Oversize (32).
    pub const GLPRT_ROC: usize = 0x30_0120;
    /// Received 64 bytes (48); the histogram continues 0x20 apart up to PRC9522.
    pub const GLPRT_PRC64: usize = 0x30_0480;
    /// Unicast received (48).
    pub const GLPRT_UPRC: usize = 0x30_05A0;
    /// Multicast received (48).
    pub const GLPRT_MPRC: usize = 0x30_05C0;
    /// Broadcast received (48).
    pub const GLPRT_BPRC: usize = 0x30_05E0;
    /// Received and dropped (32).
    pub const GLPRT_RDPC: usize = 0x30_0600;
    /// Dropped locally (32).
    pub const GLPRT_LDPC: usize = 0x30_0620;
    /// Good octets sent (48).
    pub const GLPRT_GOTC: usize = 0x30_0680;
    /// Sent 64 bytes (48); the histogram continues 0x20 apart up to PTC9522.
    pub const GLPRT_PTC64: usize = 0x30_06A0;
    /// Unicast sent (48).
    pub const GLPRT_UPTC: usize = 0x30_09C0;
    /// Multicast sent (48).
    pub const GLPRT_MPTC: usize = 0x30_09E0;
    /// Broadcast sent (48).
    pub const GLPRT_BPTC: usize = 0x30_0A00;
    /// Sent and dropped while the link was down (32).
    pub const GLPRT_TDOLD: usize = 0x30_0A20;
    /// Per-VSI counters: L offset of VSI index `v` = base + 8 v.
    pub const GLV_GORC: usize = 0x35_8000;
    /// VSI unicast received (48).
    pub const GLV_UPRC: usize = 0x36_C000;
    /// VSI multicast received (48).
    pub const GLV_MPRC: usize = 0x36_CC00;
    /// VSI broadcast received (48).
    pub const GLV_BPRC: usize = 0x36_D800;
    /// VSI received and dropped (32).
    pub const GLV_RDPC: usize = 0x31_0000;
    /// VSI unknown protocol (32).
    pub const GLV_RUPP: usize = 0x36_E400;
    /// VSI good octets sent (48).
    pub const GLV_GOTC: usize = 0x32_8000;
    /// VSI unicast sent (48).
    pub const GLV_UPTC: usize = 0x33_C000;
    /// VSI multicast sent (48).
    pub const GLV_MPTC: usize = 0x33_CC00;
    /// VSI broadcast sent (48).
    pub const GLV_BPTC: usize = 0x33_D800;
    /// VSI TX errors (32).
    pub const GLV_TEPC: usize = 0x34_4000;
    /// Receive errors per function (48; L of function `f` = base + 8 f, VFs 0..127, PF `p` at 128 + p).
    pub const GL_RXERR1: usize = 0x31_8000;
}

// ---- docs/hw/i40e.md §14 interrupts (signalled by x710/intr.rs) --------------------------------------------------

/// Interrupt causes of vector 0, cleared by reading.
pub const PFINT_ICR0: usize = 0x03_8780;
/// PFINT_ICR0.ADMINQ.
pub const PFINT_ICR0_ADMINQ: Field = Field::bit(30);
/// PFINT_ICR0.LINK_STAT_CHANGE.
pub const PFINT_ICR0_LINK_STAT_CHANGE: Field = Field::bit(25);
/// PFINT_ICR0.MAL_DETECT.
pub const PFINT_ICR0_MAL_DETECT: Field = Field::bit(19);
/// PFINT_ICR0.HMC_ERR.
pub const PFINT_ICR0_HMC_ERR: Field = Field::bit(26);
/// Enables of the vector 0 causes, PFINT_ICR0's bit positions (CORER).
pub const PFINT_ICR0_ENA: usize = 0x03_8800;
/// Vector 0 dynamic control (PFR).
pub const PFINT_DYN_CTL0: usize = 0x03_8480;
/// PFINT_DYN_CTL0/N.INTENA: the vector may signal.
pub const DYN_CTL_INTENA: Field = Field::bit(0);
/// PFINT_DYN_CTL0/N.CLEARPBA: clear the vector's pending bit.
pub const DYN_CTL_CLEARPBA: Field = Field::bit(1);
/// PFINT_DYN_CTL0/N.SWINT_TRIG: software interrupt.
pub const DYN_CTL_SWINT_TRIG: Field = Field::bit(2);
/// PFINT_DYN_CTL0/N.INTENA_MSK: this write leaves INTENA as it is.
pub const DYN_CTL_INTENA_MSK: Field = Field::bit(31);
/// QINT_RQCTL/TQCTL.MSIX_INDX: the MSI-X vector of the queue's cause.
pub const QINT_MSIX_INDX: Field = Field::new(0, 8);
/// QINT_RQCTL/TQCTL.CAUSE_ENA.
pub const QINT_CAUSE_ENA: Field = Field::bit(30);
/// QINT_RQCTL/TQCTL.ITR_INDX: the vector's ITR the cause is throttled by (3: none).
pub const QINT_ITR_INDX: Field = Field::new(11, 2);
/// QINT_RQCTL/TQCTL.NEXTQ_INDX: the next queue on the vector's list (0x7FF: the end).
pub const QINT_NEXTQ_INDX: Field = Field::new(16, 11);
/// QINT_RQCTL/TQCTL.NEXTQ_TYPE: 0 RX, 1 TX.
pub const QINT_NEXTQ_TYPE: Field = Field::new(27, 2);
/// PFINT_LNKLST0/N.FIRSTQ_INDX (0x7FF: an empty list).
pub const LNKLST_FIRSTQ_INDX: Field = Field::new(0, 11);
/// PFINT_LNKLST0/N.FIRSTQ_TYPE: 0 RX, 1 TX.
pub const LNKLST_FIRSTQ_TYPE: Field = Field::new(11, 2);
/// The end of a queue list.
pub const LNKLST_EOL: u32 = 0x7FF;
/// PFINT_ITR0(i) / PFINT_ITRN(i, n).INTERVAL, in 2 µs units.
pub const ITR_INTERVAL: Field = Field::new(0, 12);
/// ITR i of vector 0.
pub const fn pfint_itr0(i: usize) -> usize {
    0x03_8000 + 128 * i
}
/// ITR i of vector n+1 (PFR).
pub const fn pfint_itrn(i: usize, n: usize) -> usize {
    0x03_0000 + 2048 * i + 4 * n
}
/// Vector 0 queue list (PFR).
pub const PFINT_LNKLST0: usize = 0x03_8500;
/// Queue list of vector n+1 (PFR).
pub const fn pfint_lnklstn(n: usize) -> usize {
    0x03_5000 + 4 * n
}
/// Dynamic control of vector n+1 (PFR).
pub const fn pfint_dyn_ctln(n: usize) -> usize {
    0x03_4800 + 4 * n
}
