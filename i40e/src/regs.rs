//! 700-series registers, declared as data: offsets (with the per-queue and per-function formulas), bits and fields,
//! named as in docs/hw/i40e.md (sections cited per group).
//!
//! Driver logic never uses a naked mask: it names a [`Reg`], a bit constant or a [`Field`] from here.

pub use drvkit::reg::{bit, Field, PollTimeout, Reg, Regs};

// ---- docs/hw/i40e.md §4 reset, §3 firmware state ----

/// Firmware status (docs/hw/i40e.md §3 step 1).
pub const GL_FWSTS: Reg = Reg(0x083048);
/// GL_FWSTS fields.
pub mod gl_fwsts {
    use super::Field;
    /// Non-zero: the firmware is in recovery mode.
    pub const FWS1B: Field = Field::new(23, 16);
}
/// PF control (docs/hw/i40e.md §4.1).
pub const PFGEN_CTRL: Reg = Reg(0x092400);
/// PFGEN_CTRL bits.
pub mod pfgen_ctrl {
    /// PF software reset; clears itself.
    pub const PFSWR: u32 = super::bit(0);
}
/// Global reset status (docs/hw/i40e.md §4.1).
pub const GLGEN_RSTAT: Reg = Reg(0x0B8188);
/// GLGEN_RSTAT fields.
pub mod glgen_rstat {
    use super::Field;
    /// 0: no global reset under way.
    pub const DEVSTATE: Field = Field::new(1, 0);
}
/// Global reset control (docs/hw/i40e.md §4.1).
pub const GLGEN_RSTCTL: Reg = Reg(0x0B8180);
/// GLGEN_RSTCTL fields.
pub mod glgen_rstctl {
    use super::Field;
    /// Global reset delay, in units DPDK multiplies by 20 polls of 100 ms.
    pub const GRSTDEL: Field = Field::new(5, 0);
}
/// NVM configuration load status (docs/hw/i40e.md §4.1).
pub const GLNVM_ULD: Reg = Reg(0x0B6008);
/// GLNVM_ULD bits.
pub mod glnvm_uld {
    /// Core configuration loaded.
    pub const CONF_CORE_DONE: u32 = super::bit(3);
    /// Global configuration loaded.
    pub const CONF_GLOBAL_DONE: u32 = super::bit(4);
}
/// This PF's port (docs/hw/i40e.md §3 step 4).
pub const PFGEN_PORTNUM: Reg = Reg(0x1C0480);
/// PFGEN_PORTNUM fields.
pub mod pfgen_portnum {
    use super::Field;
    /// Port number.
    pub const PORT_NUM: Field = Field::new(1, 0);
}
/// PCI function requester ID (docs/hw/i40e.md §3 step 4).
pub const PF_FUNC_RID: Reg = Reg(0x09C000);
/// PF_FUNC_RID fields.
pub mod pf_func_rid {
    use super::Field;
    /// Function number with ARI.
    pub const FUNCTION_NUMBER_ARI: Field = Field::new(7, 0);
    /// Function number without ARI.
    pub const FUNCTION_NUMBER: Field = Field::new(2, 0);
}
/// PCI capabilities supported (docs/hw/i40e.md §3 step 4).
pub const GLPCI_CAPSUP: Reg = Reg(0x0BE4A8);
/// GLPCI_CAPSUP bits.
pub mod glpci_capsup {
    /// Alternative routing-ID interpretation on.
    pub const ARI_EN: u32 = super::bit(4);
}
/// PCI configuration 2: MSI-X vector counts (docs/hw/i40e.md §4.3).
pub const GLPCI_CNF2: Reg = Reg(0x0BE494);
/// GLPCI_CNF2 fields.
pub mod glpci_cnf2 {
    use super::Field;
    /// MSI-X vectors of the PF.
    pub const MSI_X_PF_N: Field = Field::new(12, 2);
}
/// The PF's queue range (docs/hw/i40e.md §4.3).
pub const PFLAN_QALLOC: Reg = Reg(0x1C0400);
/// PFLAN_QALLOC fields.
pub mod pflan_qalloc {
    use super::Field;
    /// First absolute queue.
    pub const FIRSTQ: Field = Field::new(10, 0);
    /// Last absolute queue.
    pub const LASTQ: Field = Field::new(26, 16);
    /// The range is valid.
    pub const VALID: u32 = super::bit(31);
}
/// Leave PXE mode (docs/hw/i40e.md §3 step 7).
pub const GLLAN_RCTL_0: Reg = Reg(0x12A500);
/// GLLAN_RCTL_0 bits.
pub mod gllan_rctl_0 {
    /// DPDK writes 1 after Clear PXE Mode.
    pub const PXE_MODE: u32 = super::bit(0);
}

// ---- docs/hw/i40e.md §14 interrupts (RX queues and link changes with intr_conf; off otherwise) ----

/// Interrupt cause enables of vector 0.
pub const PFINT_ICR0_ENA: Reg = Reg(0x038800);
/// Vector 0 dynamic control.
pub const PFINT_DYN_CTL0: Reg = Reg(0x038480);
/// Dynamic control of vector `n + 1`.
pub const fn pfint_dyn_ctln(n: u32) -> Reg {
    Reg(0x034800 + 4 * n as usize)
}
/// PFINT_DYN_CTL* fields.
pub mod pfint_dyn_ctl {
    use super::{bit, Field};
    /// The vector may signal (it clears itself when it does).
    pub const INTENA: u32 = bit(0);
    /// Clear the vector's pending bit.
    pub const CLEARPBA: u32 = bit(1);
    /// ITR index; 3 = none.
    pub const ITR_INDX: Field = Field::new(4, 3);
    /// "No ITR".
    pub const ITR_NONE: u32 = 3;
}
/// Vector 0 causes, cleared by reading (docs/hw/i40e.md §14).
pub const PFINT_ICR0: Reg = Reg(0x038780);
/// PFINT_ICR0 / PFINT_ICR0_ENA bits.
pub mod pfint_icr0 {
    use super::bit;
    /// A link change.
    pub const LINK_STAT_CHANGE: u32 = bit(25);
}
/// ITR `i` of vector `n + 1`: the interval in 2 µs units (docs/hw/i40e.md §14.2).
pub const fn pfint_itrn(i: u32, n: u32) -> Reg {
    Reg(0x030000 + 2048 * i as usize + 4 * n as usize)
}
/// QINT_RQCTL / QINT_TQCTL fields (docs/hw/i40e.md §14.2).
pub mod qint_ctl {
    use super::{bit, Field};
    /// The vector of the queue's cause.
    pub const MSIX_INDX: Field = Field::new(7, 0);
    /// The vector's ITR the cause uses.
    pub const ITR_INDX: Field = Field::new(12, 11);
    /// The next queue on the vector's list.
    pub const NEXTQ_INDX: Field = Field::new(26, 16);
    /// Its type: 0 RX, 1 TX.
    pub const NEXTQ_TYPE: Field = Field::new(28, 27);
    /// The cause is enabled.
    pub const CAUSE_ENA: u32 = bit(30);
}
/// Queue list of vector 0.
pub const PFINT_LNKLST0: Reg = Reg(0x038500);
/// Queue list of vector `n + 1`.
pub const fn pfint_lnklstn(n: u32) -> Reg {
    Reg(0x035000 + 4 * n as usize)
}
/// PFINT_LNKLST* fields.
pub mod pfint_lnklst {
    use super::Field;
    /// First queue of the list.
    pub const FIRSTQ_INDX: Field = Field::new(10, 0);
    /// Its type: 0 RX, 1 TX.
    pub const FIRSTQ_TYPE: Field = Field::new(12, 11);
    /// "End of list".
    pub const EOL: u32 = 0x7FF;
}

// ---- docs/hw/i40e.md §5.1 admin queue ----

/// ATQ base, bits 31:0.
pub const PF_ATQBAL: Reg = Reg(0x080000);
/// ARQ base, bits 31:0.
pub const PF_ARQBAL: Reg = Reg(0x080080);
/// ATQ base, bits 63:32.
pub const PF_ATQBAH: Reg = Reg(0x080100);
/// ARQ base, bits 63:32.
pub const PF_ARQBAH: Reg = Reg(0x080180);
/// ATQ length and enable.
pub const PF_ATQLEN: Reg = Reg(0x080200);
/// ARQ length and enable.
pub const PF_ARQLEN: Reg = Reg(0x080280);
/// ATQ head (firmware).
pub const PF_ATQH: Reg = Reg(0x080300);
/// ARQ head (firmware).
pub const PF_ARQH: Reg = Reg(0x080380);
/// ATQ tail (driver).
pub const PF_ATQT: Reg = Reg(0x080400);
/// ARQ tail (driver).
pub const PF_ARQT: Reg = Reg(0x080480);
/// PF_ATQLEN fields (PF_ARQLEN has the same layout).
pub mod atqlen {
    use super::{bit, Field};
    /// Ring length in entries.
    pub const LEN: Field = Field::new(9, 0);
    /// VF error.
    pub const VFE: u32 = bit(28);
    /// Overflow.
    pub const OVFL: u32 = bit(29);
    /// Critical error.
    pub const ATQCRIT: u32 = bit(30);
    /// Ring enabled.
    pub const ENABLE: u32 = bit(31);
}
/// PF_ATQH / PF_ARQH / tails: the index field.
pub mod aq_index {
    use super::Field;
    /// Ring index.
    pub const INDEX: Field = Field::new(9, 0);
}

// ---- docs/hw/i40e.md §8.2 HMC ----

/// log2 of the TX context size.
pub const GLHMC_LANTXOBJSZ: Reg = Reg(0x0C2004);
/// Most LAN queues per function.
pub const GLHMC_LANQMAX: Reg = Reg(0x0C2008);
/// log2 of the RX context size.
pub const GLHMC_LANRXOBJSZ: Reg = Reg(0x0C200C);
/// GLHMC_LAN*OBJSZ / LANQMAX fields.
pub mod glhmc {
    use super::Field;
    /// log2 of the object size.
    pub const OBJSZ: Field = Field::new(3, 0);
    /// Most queues.
    pub const QMAX: Field = Field::new(10, 0);
    /// FPM base in 512-byte units.
    pub const BASE: Field = Field::new(23, 0);
    /// Object count.
    pub const CNT: Field = Field::new(10, 0);
}
/// FPM base of function `f`'s TX contexts.
pub const fn glhmc_lantxbase(f: u32) -> Reg {
    Reg(0x0C6200 + 4 * f as usize)
}
/// Number of function `f`'s TX contexts.
pub const fn glhmc_lantxcnt(f: u32) -> Reg {
    Reg(0x0C6300 + 4 * f as usize)
}
/// FPM base of function `f`'s RX contexts.
pub const fn glhmc_lanrxbase(f: u32) -> Reg {
    Reg(0x0C6400 + 4 * f as usize)
}
/// Number of function `f`'s RX contexts.
pub const fn glhmc_lanrxcnt(f: u32) -> Reg {
    Reg(0x0C6500 + 4 * f as usize)
}
/// FCoE DDP base of function `f`.
pub const fn glhmc_fcoeddpbase(f: u32) -> Reg {
    Reg(0x0C6600 + 4 * f as usize)
}
/// FCoE DDP count of function `f`.
pub const fn glhmc_fcoeddpcnt(f: u32) -> Reg {
    Reg(0x0C6700 + 4 * f as usize)
}
/// FCoE filter base of function `f`.
pub const fn glhmc_fcoefbase(f: u32) -> Reg {
    Reg(0x0C6800 + 4 * f as usize)
}
/// FCoE filter count of function `f`.
pub const fn glhmc_fcoefcnt(f: u32) -> Reg {
    Reg(0x0C6900 + 4 * f as usize)
}
/// SD command.
pub const PFHMC_SDCMD: Reg = Reg(0x0C0000);
/// PFHMC_SDCMD fields.
pub mod pfhmc_sdcmd {
    use super::{bit, Field};
    /// SD index.
    pub const PMSDIDX: Field = Field::new(11, 0);
    /// Write strobe.
    pub const PMSDWR: u32 = bit(31);
}
/// SD data, low word.
pub const PFHMC_SDDATALOW: Reg = Reg(0x0C0100);
/// PFHMC_SDDATALOW fields.
pub mod pfhmc_sddatalow {
    use super::{bit, Field};
    /// The SD is valid.
    pub const PMSDVALID: u32 = bit(0);
    /// 1 direct, 0 paged.
    pub const PMSDTYPE: u32 = bit(1);
    /// Backing pages (DPDK always writes 512).
    pub const PMSDBPCOUNT: Field = Field::new(11, 2);
    /// Address bits 31:12.
    pub const PMSDDATALOW: Field = Field::new(31, 12);
}
/// SD data, high word (address bits 63:32).
pub const PFHMC_SDDATAHIGH: Reg = Reg(0x0C0200);
/// Drop a cached PD.
pub const PFHMC_PDINV: Reg = Reg(0x0C0300);
/// PFHMC_PDINV fields.
pub mod pfhmc_pdinv {
    use super::Field;
    /// SD index.
    pub const PMSDIDX: Field = Field::new(11, 0);
    /// PD index.
    pub const PMPDIDX: Field = Field::new(24, 16);
}
/// HMC error information.
pub const PFHMC_ERRORINFO: Reg = Reg(0x0C0400);

// ---- docs/hw/i40e.md §9.1 queues ----

/// TX queue enable.
pub const fn qtx_ena(q: u16) -> Reg {
    Reg(0x100000 + 4 * q as usize)
}
/// TX queue control.
pub const fn qtx_ctl(q: u16) -> Reg {
    Reg(0x104000 + 4 * q as usize)
}
/// TX tail.
pub const fn qtx_tail(q: u16) -> Reg {
    Reg(0x108000 + 4 * q as usize)
}
/// TX head.
pub const fn qtx_head(q: u16) -> Reg {
    Reg(0x0E4000 + 4 * q as usize)
}
/// RX queue enable.
pub const fn qrx_ena(q: u16) -> Reg {
    Reg(0x120000 + 4 * q as usize)
}
/// RX tail.
pub const fn qrx_tail(q: u16) -> Reg {
    Reg(0x128000 + 4 * q as usize)
}
/// RX queue interrupt cause control.
pub const fn qint_rqctl(q: u16) -> Reg {
    Reg(0x03A000 + 4 * q as usize)
}
/// TX queue interrupt cause control.
pub const fn qint_tqctl(q: u16) -> Reg {
    Reg(0x03C000 + 4 * q as usize)
}
/// QTX_ENA / QRX_ENA bits.
pub mod qena {
    use super::bit;
    /// Enable request.
    pub const QENA_REQ: u32 = bit(0);
    /// Fast disable.
    pub const FAST_QDIS: u32 = bit(1);
    /// Actual state.
    pub const QENA_STAT: u32 = bit(2);
}
/// QTX_CTL fields.
/// QTX_HEAD fields (docs/hw/i40e.md §9.1).
pub mod qtx_head {
    use super::Field;
    /// The next descriptor the queue fetches.
    pub const HEAD: Field = Field::new(12, 0);
}

pub mod qtx_ctl {
    use super::Field;
    /// Queue owner type.
    pub const PFVF_Q: Field = Field::new(1, 0);
    /// A PF queue.
    pub const PFVF_Q_PF: u32 = 2;
    /// Owning PF.
    pub const PF_INDX: Field = Field::new(5, 2);
}
/// TX pre-disable announcement, block `b` (absolute queue / 128).
pub const fn gllan_txpre_qdis(b: u32) -> Reg {
    Reg(0x0E6500 + 4 * b as usize)
}
/// GLLAN_TXPRE_QDIS fields.
pub mod gllan_txpre_qdis {
    use super::{bit, Field};
    /// Absolute queue mod 128.
    pub const QINDX: Field = Field::new(10, 0);
    /// Status.
    pub const QDIS_STAT: u32 = bit(16);
    /// Announce a disable.
    pub const SET_QDIS: u32 = bit(30);
    /// Announce an enable.
    pub const CLEAR_QDIS: u32 = bit(31);
    /// Queues per block.
    pub const QUEUES_PER_BLOCK: u32 = 128;
}
/// Malicious-driver detection, TX (docs/hw/i40e.md §11).
pub const GL_MDET_TX: Reg = Reg(0x0E6480);
/// Malicious-driver detection, RX (docs/hw/i40e.md §11).
pub const GL_MDET_RX: Reg = Reg(0x12A510);

// ---- docs/hw/i40e.md §12 RSS ----

/// RSS key word `i` (0..13).
pub const fn pfqf_hkey(i: usize) -> Reg {
    Reg(0x244800 + 128 * i)
}
/// RSS table register `i` (0..128), four entries.
pub const fn pfqf_hlut(i: usize) -> Reg {
    Reg(0x240000 + 128 * i)
}
/// Hashed packet classifier types, bits 31:0 (`i` = 0) and 63:32 (`i` = 1).
pub const fn pfqf_hena(i: usize) -> Reg {
    Reg(0x245900 + 128 * i)
}
/// PF queue filter control.
pub const PFQF_CTL_0: Reg = Reg(0x1C0AC0);
/// PFQF_CTL_0 bits.
pub mod pfqf_ctl_0 {
    use super::bit;
    /// 0: 128-entry table, 1: 512.
    pub const HASHLUTSIZE: u32 = bit(16);
}
/// Global hash control.
pub const GLQF_CTL: Reg = Reg(0x269BA4);
/// GLQF_CTL bits.
pub mod glqf_ctl {
    /// Toeplitz (1) or XOR (0).
    pub const HTOEP: u32 = super::bit(1);
}
/// Per-port hash control.
pub const PRTQF_CTL_0: Reg = Reg(0x256E60);
/// PRTQF_CTL_0 bits.
pub mod prtqf_ctl_0 {
    /// Symmetric hash.
    pub const HSYM_ENA: u32 = super::bit(0);
}
/// RSS key words.
pub const HKEY_REGS: usize = 13;
/// RSS key bytes.
pub const RSS_KEY_LEN: usize = 4 * HKEY_REGS;
/// RSS table entries (the 128-entry table; PFQF_CTL_0.HASHLUTSIZE = 0).
pub const HLUT_ENTRIES: usize = 128;
/// Largest table entry (6 bits, docs/hw/i40e.md §12.1).
pub const HLUT_MAX_QUEUE: u16 = 63;

/// PCTYPE bit numbers of PFQF_HENA (docs/hw/i40e.md §12.1).
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

// ---- docs/hw/i40e.md §7.4 link register ----

/// MAC link status of port 0 (DPDK reads it at index 0).
pub const PRTMAC_LINKSTA: Reg = Reg(0x1E2420);

// ---- docs/hw/i40e.md §13 statistics ----

/// Low word of a 48-bit (or the 32-bit) port counter at `base` for `port`.
pub const fn glprt(base: usize, port: u8) -> Reg {
    Reg(base + 8 * port as usize)
}
/// Low word of a VSI counter at `base` for statistics index `idx`.
pub const fn glv(base: usize, idx: u16) -> Reg {
    Reg(base + 8 * idx as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_and_function_formulas_follow_the_notes() {
        assert_eq!(qtx_ena(3), Reg(0x10000C));
        assert_eq!(qrx_tail(1535), Reg(0x128000 + 4 * 1535));
        assert_eq!(glhmc_lanrxcnt(2), Reg(0x0C6508));
        assert_eq!(pfqf_hkey(12), Reg(0x244800 + 12 * 128));
        assert_eq!(pfqf_hena(1), Reg(0x245980));
        assert_eq!(gllan_txpre_qdis(11), Reg(0x0E652C));
        assert_eq!(glprt(0x300000, 3), Reg(0x300018));
        assert_eq!(pfhmc_sddatalow::PMSDBPCOUNT.val(512), 512 << 2);
        assert_eq!(gllan_txpre_qdis::QINDX.mask(), 0x7FF);
    }
}
