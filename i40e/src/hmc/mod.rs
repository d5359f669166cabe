//! The LAN Host Memory Cache (docs/hw/i40e.md §8): the FPM layout of this function's TX and RX queue contexts,
//! the host memory backing it (direct segments, or paged ones when no contiguous area can be had), the segment
//! descriptor registers, and the bit-exact packing of the TX (128-byte) and RX (32-byte) queue contexts from their
//! field tables (docs/hw/i40e.md §8.4-§8.6).

use std::sync::Arc;

use drvkit::bar::RegisterSpace;
use drvkit::dma::DmaMapper;
use hugepage::Allocator;

use crate::error::Error;
use crate::regs::{self, glhmc, pfhmc_pdinv, pfhmc_sdcmd, pfhmc_sddatalow, Regs};
use drvkit::dma::DmaArea;

/// FPM space one segment descriptor covers (docs/hw/i40e.md §8.1).
pub const SD_SIZE: usize = 2 << 20;
/// A paged backing page (docs/hw/i40e.md §8.1).
pub const PAGE_SIZE: usize = 4096;
/// PD entries per paged SD.
pub const PDS_PER_SD: usize = SD_SIZE / PAGE_SIZE;
/// FPM object bases are aligned to this (docs/hw/i40e.md §8.1).
pub const BASE_ALIGN: usize = 512;
/// The backing-page count written into every SD entry (docs/hw/i40e.md §8.3 step 4).
pub const SD_BPCOUNT: u32 = 512;
/// A PD entry's valid bit (docs/hw/i40e.md §8.1).
pub const PD_VALID: u64 = 1;

/// One field of a queue context: `width` bits at bit `lsb` of the object, little-endian (docs/hw/i40e.md §8.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CtxField {
    /// Its name in docs/hw/i40e.md.
    pub name: &'static str,
    /// Width in bits (at most 64).
    pub width: u32,
    /// Lowest bit.
    pub lsb: u32,
}

const fn f(name: &'static str, width: u32, lsb: u32) -> CtxField {
    CtxField { name, width, lsb }
}

/// The TX queue context's fields (docs/hw/i40e.md §8.5), in [`TxQueueContext::values`] order.
pub const TXQ_CTX_FIELDS: [CtxField; 18] = [
    f("head", 13, 0),
    f("new_context", 1, 30),
    f("base", 57, 32),
    f("fc_ena", 1, 89),
    f("timesync_ena", 1, 90),
    f("fd_ena", 1, 91),
    f("alt_vlan_ena", 1, 92),
    f("cpuid", 8, 96),
    f("thead_wb", 13, 128),
    f("head_wb_ena", 1, 160),
    f("qlen", 13, 161),
    f("tphrdesc_ena", 1, 174),
    f("tphrpacket_ena", 1, 175),
    f("tphwdesc_ena", 1, 176),
    f("head_wb_addr", 64, 192),
    f("crc", 32, 896),
    f("rdylist", 10, 980),
    f("rdylist_act", 1, 990),
];

/// The RX queue context's fields (docs/hw/i40e.md §8.6), in [`RxQueueContext::values`] order.
pub const RXQ_CTX_FIELDS: [CtxField; 21] = [
    f("head", 13, 0),
    f("cpuid", 8, 13),
    f("base", 57, 32),
    f("qlen", 13, 89),
    f("dbuff", 7, 102),
    f("hbuff", 5, 109),
    f("dtype", 2, 114),
    f("dsize", 1, 116),
    f("crcstrip", 1, 117),
    f("fc_ena", 1, 118),
    f("l2tsel", 1, 119),
    f("hsplit_0", 4, 120),
    f("hsplit_1", 2, 124),
    f("showiv", 1, 127),
    f("rxmax", 14, 174),
    f("tphrdesc_ena", 1, 193),
    f("tphwdesc_ena", 1, 194),
    f("tphdata_ena", 1, 195),
    f("tphhead_ena", 1, 196),
    f("lrxqthresh", 3, 198),
    f("prefena", 1, 201),
];

/// TX context object size.
pub const TXQ_CTX_LEN: usize = 128;
/// RX context object size.
pub const RXQ_CTX_LEN: usize = 32;
/// The ring base is stored in units of this (docs/hw/i40e.md §8.5, §8.6).
pub const CTX_BASE_UNIT: u64 = 128;
/// The RX data buffer size is stored in units of this (docs/hw/i40e.md §8.6 dbuff).
pub const DBUFF_UNIT: u32 = 128;

/// Packs `values` (one per field of `fields`, masked to the field's width) into `out` (docs/hw/i40e.md §8.4): each value is
/// shifted to its bit offset and OR-ed into the bytes from `lsb / 8` on. `out` should be zeroed first.
pub fn pack(fields: &[CtxField], values: &[u64], out: &mut [u8]) {
    for (fd, &v) in fields.iter().zip(values) {
        if fd.width == 0 {
            continue;
        }
        let v = if fd.width == 64 { v } else { v & ((1u64 << fd.width) - 1) };
        let shifted = (v as u128) << (fd.lsb % 8);
        let first = (fd.lsb / 8) as usize;
        let nbytes = (fd.lsb % 8 + fd.width).div_ceil(8) as usize;
        for (k, byte) in out[first..first + nbytes].iter_mut().enumerate() {
            *byte |= (shifted >> (8 * k)) as u8;
        }
    }
}

/// The TX queue context (docs/hw/i40e.md §8.5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxQueueContext {
    /// Head.
    pub head: u16,
    /// Set to 1 (docs/hw/i40e.md §8.5).
    pub new_context: bool,
    /// Ring IOVA / 128.
    pub base: u64,
    /// FCoE.
    pub fc_ena: bool,
    /// IEEE 1588.
    pub timesync_ena: bool,
    /// Flow-director programming queue.
    pub fd_ena: bool,
    /// Alternate VLAN.
    pub alt_vlan_ena: bool,
    /// TPH hint.
    pub cpuid: u8,
    /// Head write-back value (hardware).
    pub thead_wb: u16,
    /// Head write-back instead of DD.
    pub head_wb_ena: bool,
    /// Ring length in descriptors.
    pub qlen: u16,
    /// TPH descriptor reads.
    pub tphrdesc_ena: bool,
    /// TPH packet reads.
    pub tphrpacket_ena: bool,
    /// TPH descriptor writes.
    pub tphwdesc_ena: bool,
    /// Head write-back address.
    pub head_wb_addr: u64,
    /// CRC.
    pub crc: u32,
    /// The VSI's queue-set handle of TC 0.
    pub rdylist: u16,
    /// Ready-list action.
    pub rdylist_act: bool,
}

impl TxQueueContext {
    /// The field values in [`TXQ_CTX_FIELDS`] order.
    pub fn values(&self) -> [u64; 18] {
        [
            self.head as u64,
            self.new_context as u64,
            self.base,
            self.fc_ena as u64,
            self.timesync_ena as u64,
            self.fd_ena as u64,
            self.alt_vlan_ena as u64,
            self.cpuid as u64,
            self.thead_wb as u64,
            self.head_wb_ena as u64,
            self.qlen as u64,
            self.tphrdesc_ena as u64,
            self.tphrpacket_ena as u64,
            self.tphwdesc_ena as u64,
            self.head_wb_addr,
            self.crc as u64,
            self.rdylist as u64,
            self.rdylist_act as u64,
        ]
    }

    /// The 128-byte object.
    pub fn pack(&self) -> [u8; TXQ_CTX_LEN] {
        let mut b = [0u8; TXQ_CTX_LEN];
        pack(&TXQ_CTX_FIELDS, &self.values(), &mut b);
        b
    }
}

/// The RX queue context (docs/hw/i40e.md §8.6).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RxQueueContext {
    /// Head.
    pub head: u16,
    /// TPH hint.
    pub cpuid: u8,
    /// Ring IOVA / 128.
    pub base: u64,
    /// Ring length in descriptors.
    pub qlen: u16,
    /// Data buffer size / 128.
    pub dbuff: u8,
    /// Header buffer size / 64.
    pub hbuff: u8,
    /// Header split type.
    pub dtype: u8,
    /// 1: 32-byte descriptors.
    pub dsize: bool,
    /// Strip the CRC.
    pub crcstrip: bool,
    /// FCoE.
    pub fc_ena: bool,
    /// First stripped VLAN into L2TAG1.
    pub l2tsel: bool,
    /// Split points.
    pub hsplit_0: u8,
    /// Split points.
    pub hsplit_1: u8,
    /// Show the inner VLAN.
    pub showiv: bool,
    /// Largest frame.
    pub rxmax: u16,
    /// TPH descriptor reads.
    pub tphrdesc_ena: bool,
    /// TPH descriptor writes.
    pub tphwdesc_ena: bool,
    /// TPH data.
    pub tphdata_ena: bool,
    /// TPH headers.
    pub tphhead_ena: bool,
    /// Low RX queue threshold.
    pub lrxqthresh: u8,
    /// Prefetch (required, docs/hw/i40e.md §8.6).
    pub prefena: bool,
}

impl RxQueueContext {
    /// The field values in [`RXQ_CTX_FIELDS`] order.
    pub fn values(&self) -> [u64; 21] {
        [
            self.head as u64,
            self.cpuid as u64,
            self.base,
            self.qlen as u64,
            self.dbuff as u64,
            self.hbuff as u64,
            self.dtype as u64,
            self.dsize as u64,
            self.crcstrip as u64,
            self.fc_ena as u64,
            self.l2tsel as u64,
            self.hsplit_0 as u64,
            self.hsplit_1 as u64,
            self.showiv as u64,
            self.rxmax as u64,
            self.tphrdesc_ena as u64,
            self.tphwdesc_ena as u64,
            self.tphdata_ena as u64,
            self.tphhead_ena as u64,
            self.lrxqthresh as u64,
            self.prefena as u64,
        ]
    }

    /// The 32-byte object.
    pub fn pack(&self) -> [u8; RXQ_CTX_LEN] {
        let mut b = [0u8; RXQ_CTX_LEN];
        pack(&RXQ_CTX_FIELDS, &self.values(), &mut b);
        b
    }
}

/// Where this function's objects sit in its FPM space (docs/hw/i40e.md §8.3 step 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FpmLayout {
    /// TX contexts.
    pub tx_count: u32,
    /// RX contexts.
    pub rx_count: u32,
    /// TX context size.
    pub tx_obj: usize,
    /// RX context size.
    pub rx_obj: usize,
    /// FPM address of TX context 0.
    pub tx_base: usize,
    /// FPM address of RX context 0.
    pub rx_base: usize,
    /// FPM bytes in all (rounded up to 512).
    pub total: usize,
}

impl FpmLayout {
    /// The layout for `ntx` TX and `nrx` RX contexts of 2^`tx_log2` and 2^`rx_log2` bytes.
    pub fn new(ntx: u32, nrx: u32, tx_log2: u32, rx_log2: u32) -> FpmLayout {
        let (tx_obj, rx_obj) = (1usize << tx_log2, 1usize << rx_log2);
        let tx_base = 0;
        let rx_base = (tx_base + ntx as usize * tx_obj).next_multiple_of(BASE_ALIGN);
        let total = (rx_base + nrx as usize * rx_obj).next_multiple_of(BASE_ALIGN);
        FpmLayout { tx_count: ntx, rx_count: nrx, tx_obj, rx_obj, tx_base, rx_base, total }
    }

    /// Segment descriptors needed.
    pub fn sd_count(&self) -> usize {
        self.total.div_ceil(SD_SIZE)
    }

    /// FPM address of queue `q`'s TX context.
    pub fn tx_ctx(&self, q: u16) -> usize {
        self.tx_base + q as usize * self.tx_obj
    }

    /// FPM address of queue `q`'s RX context.
    pub fn rx_ctx(&self, q: u16) -> usize {
        self.rx_base + q as usize * self.rx_obj
    }
}

/// How the FPM space is backed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HmcMode {
    /// Direct segments, paged when no contiguous area can be had.
    #[default]
    Auto,
    /// Direct segments only.
    Direct,
    /// Paged segments only.
    Paged,
}

enum Backing {
    /// One contiguous area per SD.
    Direct(Vec<DmaArea>),
    /// One PD page per SD, and one 4 KiB backing page per 4 KiB of FPM space.
    Paged { pds: Vec<DmaArea>, pages: Vec<DmaArea> },
}

/// This function's LAN HMC: its layout, backing memory, and the function ID its registers are indexed by.
pub struct LanHmc {
    layout: FpmLayout,
    backing: Backing,
    hmc_fn: u32,
}

impl std::fmt::Debug for LanHmc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LanHmc").field("layout", &self.layout).field("paged", &self.is_paged()).finish()
    }
}

impl LanHmc {
    /// Sizes the FPM for `ntx`/`nrx` contexts from GLHMC_LAN{TX,RX}OBJSZ, checks them against GLHMC_LANQMAX,
    /// allocates the backing and programs the SDs and the object bases and counts of function `hmc_fn` (docs/hw/i40e.md §8.3).
    #[allow(clippy::too_many_arguments)]
    pub fn new<R: RegisterSpace>(
        regs: &Regs<R>,
        allocator: &Allocator,
        mapper: &Arc<dyn DmaMapper>,
        port: &str,
        hmc_fn: u32,
        ntx: u32,
        nrx: u32,
        mode: HmcMode,
    ) -> pktio::Result<LanHmc> {
        let qmax = glhmc::QMAX.get(regs.read(regs::GLHMC_LANQMAX));
        if ntx > qmax || nrx > qmax {
            return Err(Error::Hmc {
                reason: format!("{ntx} TX / {nrx} RX contexts asked, GLHMC_LANQMAX allows {qmax} per function"),
            }
            .at(port));
        }
        let tx_log2 = glhmc::OBJSZ.get(regs.read(regs::GLHMC_LANTXOBJSZ));
        let rx_log2 = glhmc::OBJSZ.get(regs.read(regs::GLHMC_LANRXOBJSZ));
        if (1usize << tx_log2) != TXQ_CTX_LEN || (1usize << rx_log2) != RXQ_CTX_LEN {
            return Err(Error::Hmc {
                reason: format!(
                    "context sizes 2^{tx_log2} (TX) and 2^{rx_log2} (RX); this driver packs {TXQ_CTX_LEN} and \
                     {RXQ_CTX_LEN} bytes (docs/hw/i40e.md §8.2)"
                ),
            }
            .at(port));
        }
        let layout = FpmLayout::new(ntx, nrx, tx_log2, rx_log2);
        let direct = |allocator: &Allocator| -> pktio::Result<Backing> {
            let mut areas = Vec::new();
            for j in 0..layout.sd_count() {
                let len = (layout.total - j * SD_SIZE).min(SD_SIZE).next_multiple_of(PAGE_SIZE);
                areas.push(DmaArea::new(allocator, mapper, len, port, "LAN HMC backing")?);
            }
            Ok(Backing::Direct(areas))
        };
        let paged = |allocator: &Allocator| -> pktio::Result<Backing> {
            let mut pds = Vec::new();
            let mut pages = Vec::new();
            for _ in 0..layout.sd_count() {
                pds.push(DmaArea::new(allocator, mapper, PAGE_SIZE, port, "LAN HMC page descriptors")?);
            }
            for _ in 0..layout.total.div_ceil(PAGE_SIZE) {
                pages.push(DmaArea::new(allocator, mapper, PAGE_SIZE, port, "LAN HMC backing page")?);
            }
            Ok(Backing::Paged { pds, pages })
        };
        let backing = match mode {
            HmcMode::Direct => direct(allocator)?,
            HmcMode::Paged => paged(allocator)?,
            HmcMode::Auto => match direct(allocator) {
                Ok(b) => b,
                Err(_) => paged(allocator)?,
            },
        };
        let hmc = LanHmc { layout, backing, hmc_fn };
        hmc.program(regs);
        Ok(hmc)
    }

    /// The FPM layout.
    pub fn layout(&self) -> &FpmLayout {
        &self.layout
    }

    /// True when the backing is paged.
    pub fn is_paged(&self) -> bool {
        matches!(self.backing, Backing::Paged { .. })
    }

    fn write_sd<R: RegisterSpace>(regs: &Regs<R>, j: usize, addr: u64, direct: bool, valid: bool) {
        let mut low =
            pfhmc_sddatalow::PMSDDATALOW.val((addr >> 12) as u32) | pfhmc_sddatalow::PMSDBPCOUNT.val(SD_BPCOUNT);
        if direct {
            low |= pfhmc_sddatalow::PMSDTYPE;
        }
        if valid {
            low |= pfhmc_sddatalow::PMSDVALID;
        }
        regs.write(regs::PFHMC_SDDATAHIGH, (addr >> 32) as u32);
        regs.write(regs::PFHMC_SDDATALOW, low);
        regs.write(regs::PFHMC_SDCMD, pfhmc_sdcmd::PMSDIDX.val(j as u32) | pfhmc_sdcmd::PMSDWR);
    }

    /// Programs the SDs (and PD entries) and the object bases and counts (docs/hw/i40e.md §8.3 steps 4 to 6).
    fn program<R: RegisterSpace>(&self, regs: &Regs<R>) {
        match &self.backing {
            Backing::Direct(areas) => {
                for (j, a) in areas.iter().enumerate() {
                    Self::write_sd(regs, j, a.iova(0), true, true);
                }
            }
            Backing::Paged { pds, pages } => {
                for (p, page) in pages.iter().enumerate() {
                    let (j, k) = (p / PDS_PER_SD, p % PDS_PER_SD);
                    pds[j].write_u64(8 * k, page.iova(0) | PD_VALID);
                    regs.write(
                        regs::PFHMC_PDINV,
                        pfhmc_pdinv::PMSDIDX.val(j as u32) | pfhmc_pdinv::PMPDIDX.val(k as u32),
                    );
                }
                for (j, pd) in pds.iter().enumerate() {
                    Self::write_sd(regs, j, pd.iova(0), false, true);
                }
            }
        }
        let (l, f) = (&self.layout, self.hmc_fn);
        regs.write(regs::glhmc_lantxbase(f), glhmc::BASE.val((l.tx_base / BASE_ALIGN) as u32));
        regs.write(regs::glhmc_lantxcnt(f), glhmc::CNT.val(l.tx_count));
        regs.write(regs::glhmc_lanrxbase(f), glhmc::BASE.val((l.rx_base / BASE_ALIGN) as u32));
        regs.write(regs::glhmc_lanrxcnt(f), glhmc::CNT.val(l.rx_count));
        let fcoe = (l.total / BASE_ALIGN) as u32;
        regs.write(regs::glhmc_fcoeddpbase(f), glhmc::BASE.val(fcoe));
        regs.write(regs::glhmc_fcoeddpcnt(f), 0);
        regs.write(regs::glhmc_fcoefbase(f), glhmc::BASE.val(fcoe));
        regs.write(regs::glhmc_fcoefcnt(f), 0);
    }

    /// The area and offset backing FPM address `fpm`.
    fn locate(&self, fpm: usize) -> (&DmaArea, usize) {
        match &self.backing {
            Backing::Direct(areas) => (&areas[fpm / SD_SIZE], fpm % SD_SIZE),
            Backing::Paged { pages, .. } => (&pages[fpm / PAGE_SIZE], fpm % PAGE_SIZE),
        }
    }

    /// Writes queue `q`'s TX context (zeroed, then packed; docs/hw/i40e.md §8.4).
    pub fn write_tx(&self, q: u16, ctx: &TxQueueContext) {
        assert!((q as u32) < self.layout.tx_count, "TX context {q} outside the HMC");
        let (a, off) = self.locate(self.layout.tx_ctx(q));
        a.write(off, &ctx.pack());
    }

    /// Writes queue `q`'s RX context.
    pub fn write_rx(&self, q: u16, ctx: &RxQueueContext) {
        assert!((q as u32) < self.layout.rx_count, "RX context {q} outside the HMC");
        let (a, off) = self.locate(self.layout.rx_ctx(q));
        a.write(off, &ctx.pack());
    }

    /// Reads back queue `q`'s TX context bytes (for tests and diagnostics).
    pub fn read_tx(&self, q: u16) -> [u8; TXQ_CTX_LEN] {
        let mut b = [0u8; TXQ_CTX_LEN];
        let (a, off) = self.locate(self.layout.tx_ctx(q));
        a.read(off, &mut b);
        b
    }

    /// Reads back queue `q`'s RX context bytes.
    pub fn read_rx(&self, q: u16) -> [u8; RXQ_CTX_LEN] {
        let mut b = [0u8; RXQ_CTX_LEN];
        let (a, off) = self.locate(self.layout.rx_ctx(q));
        a.read(off, &mut b);
        b
    }

    /// Invalidates the SDs and zeroes the object counts (docs/hw/i40e.md §8.3 teardown); the memory goes when `self` drops.
    pub fn clear<R: RegisterSpace>(&self, regs: &Regs<R>) {
        let direct = !self.is_paged();
        for j in 0..self.layout.sd_count() {
            Self::write_sd(regs, j, 0, direct, false);
        }
        let f = self.hmc_fn;
        for r in [regs::glhmc_lantxbase(f), regs::glhmc_lantxcnt(f), regs::glhmc_lanrxbase(f), regs::glhmc_lanrxcnt(f)]
        {
            regs.write(r, 0);
        }
    }
}

#[cfg(test)]
mod tests;
