//! SQ and RQ contexts (docs/hw/hinic3.md §9), parsed field by field out of the 64-byte little-endian structure the
//! command queue carries (the caller has already undone the per-dword swap of docs/hw/hinic3.md §8.6). A field the notes fix to a value
//! for a polling driver, or a reserved bit that is set, is an error naming the dword and field.

use super::regs::Field;
use crate::Error;

/// IOVA alignment the model asks of every work queue (docs/hw/hinic3.md §9.3: DPDK reserves its rings on 256 KiB,
/// `hinic3_rx_queue_setup` / `hinic3_tx_queue_setup`); what the hardware needs is not known, the model takes the
/// case that breaks a driver aligning less.
pub const WQ_ALIGN: u64 = 256 << 10;

/// A ring `ring` of `what` not on [`WQ_ALIGN`] is an error.
pub fn check_aligned(ring: u64, what: &str) -> Result<(), Error> {
    if !ring.is_multiple_of(WQ_ALIGN) {
        return Err(Error::Violation {
            at: format!("{what} context"),
            rule: format!("ring IOVA {ring:#x} is not 256 KiB-aligned (docs/hw/hinic3.md §9.3)"),
        });
    }
    Ok(())
}

/// What the model keeps of an SQ context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqCtx {
    /// Ring IOVA (WQ page PFN << 12): the first WQ page.
    pub ring: u64,
    /// WQ block address (block PFN << 9): the ring itself (0-level CLA) or its page table (1-level).
    pub block: u64,
    /// Starting PI and CI.
    pub pi: u16,
    /// Starting CI.
    pub ci: u16,
    /// VLAN insert mode (dword 7 bits 20:19).
    pub vlan_insert_mode: u8,
}

/// What the model keeps of an RQ context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RqCtx {
    /// Ring IOVA: the first WQ page.
    pub ring: u64,
    /// WQ block address, as for the SQ.
    pub block: u64,
    /// Starting PI and CI, in 8-byte units.
    pub pi: u16,
    /// Starting CI.
    pub ci: u16,
    /// WQE type code (2: the 16-byte normal WQE).
    pub wqe_type: u8,
    /// The MSI-X vector of dword 1 when bit 31 leaves the queue's interrupt on.
    pub msix: Option<u16>,
}

fn dw(c: &[u8; 64], i: usize) -> u32 {
    u32::from_le_bytes(c[4 * i..4 * i + 4].try_into().expect("4"))
}

const PI: Field = Field::new(15, 0);
const CI: Field = Field::new(31, 16);
const PFN_HI: Field = Field::new(19, 0);
const BLOCK_PFN_HI: Field = Field::new(22, 0);
const SQ_OWNER: u32 = 1 << 23;
const SQ_ID: Field = Field::new(12, 0);
const VLAN_TAG: Field = Field::new(15, 0);
const VLAN_INSERT_MODE: Field = Field::new(20, 19);
const CEQ_EN: u32 = 1 << 23;
const PREF_CI_HI: Field = Field::new(3, 0);
const PREF_OWNER: u32 = 1 << 4;
const PREF_CI_LO: Field = Field::new(31, 20);
const PREF_THRESHOLD: Field = Field::new(13, 0);
const PREF_MAX: Field = Field::new(24, 14);
const PREF_MIN: Field = Field::new(31, 25);
const RQ_MSIX: Field = Field::new(30, 21);
const RQ_INTR_OFF: u32 = 1 << 31;
const RQ_WQE_TYPE: Field = Field::new(29, 28);
const RQ_OWNER: u32 = 1 << 31;
const RQ_CQE_LEN: Field = Field::new(29, 28);

fn pfn(hi: u32, lo: u32) -> u64 {
    u64::from(hi) << 32 | u64::from(lo)
}

fn reserved(c: &[u8; 64], i: usize, allowed: u32, what: &str) -> Result<(), Error> {
    let extra = dw(c, i) & !allowed;
    if extra != 0 {
        return Err(Error::Violation {
            at: format!("{what} context dword {i} = {:#010x}", dw(c, i)),
            rule: format!("bits {extra:#010x} are reserved (docs/hw/hinic3.md §9)"),
        });
    }
    Ok(())
}

/// The prefetch words (dwords 8 to 11) must repeat the ring and the starting CI, owner 1 (docs/hw/hinic3.md §9.1).
fn prefetch(c: &[u8; 64], page_pfn: u64, ci: u32, what: &str) -> Result<(), Error> {
    let d8 = dw(c, 8);
    if PREF_THRESHOLD.get(d8) == 0 || PREF_MAX.get(d8) == 0 || PREF_MIN.get(d8) == 0 {
        return Err(Error::Violation {
            at: format!("{what} context dword 8 = {d8:#010x}"),
            rule: "prefetch threshold, max and min must be non-zero".into(),
        });
    }
    reserved(c, 9, PREF_CI_HI.mask() | PREF_OWNER, what)?;
    if dw(c, 9) & PREF_OWNER == 0 || PREF_CI_HI.get(dw(c, 9)) != ci >> 12 {
        return Err(Error::Violation {
            at: format!("{what} context dword 9 = {:#010x}", dw(c, 9)),
            rule: format!("prefetch owner 1 and CI high {} expected", ci >> 12),
        });
    }
    let pref = pfn(PFN_HI.get(dw(c, 10)), dw(c, 11));
    if pref != page_pfn || PREF_CI_LO.get(dw(c, 10)) != ci & 0xFFF {
        return Err(Error::Violation {
            at: format!("{what} context"),
            rule: format!("prefetch PFN {pref:#x} / CI low differ from the WQ page PFN {page_pfn:#x}"),
        });
    }
    Ok(())
}

/// The WQ block address (dwords 14, 15: block PFN << 9, docs/hw/hinic3.md §9). Whether it is the ring (0-level CLA)
/// or a page table (1-level) depends on the ring's size against the WQ page size, known once the root context gives
/// the depth ([`wq_pages`]).
fn block(c: &[u8; 64], what: &str) -> Result<u64, Error> {
    reserved(c, 14, BLOCK_PFN_HI.mask(), what)?;
    Ok(pfn(BLOCK_PFN_HI.get(dw(c, 14)), dw(c, 15)) << 9)
}

/// Page-table entries a 1-level WQ block holds: one 4 KiB page of u64 (Linux wq.c `WQ_MAX_NUM_PAGES`).
pub const MAX_WQ_PAGES: u64 = 4096 / 8;

/// Where a work queue's bytes are: its WQ pages, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WqPages {
    pages: Vec<u64>,
    page_shift: u32,
}

impl WqPages {
    /// The IOVA of byte `off` of the ring.
    pub fn at(&self, off: u64) -> u64 {
        self.pages[(off >> self.page_shift) as usize % self.pages.len()] + (off & ((1 << self.page_shift) - 1))
    }
    /// WQ pages the ring spans.
    pub fn count(&self) -> usize {
        self.pages.len()
    }
}

/// The pages of a ring of `bytes` whose context named `ring` and `block`, with WQ pages of 4 KiB << `page_log2`
/// (COMM 22; docs/hw/hinic3.md §9.3). A ring that fits one page is 0-level CLA: the block is the ring. A larger one is
/// 1-level: the block is a table of big-endian u64 page addresses (Linux wq.c `wq_init_wq_block`), the first being
/// the context's page, each page aligned to the page size. `read` fetches table bytes from host memory.
pub fn wq_pages(
    ring: u64,
    block: u64,
    bytes: u64,
    page_log2: u8,
    read: impl Fn(u64, &mut [u8]) -> bool,
    what: &str,
) -> Result<WqPages, Error> {
    let page_shift = 12 + u32::from(page_log2);
    let page = 1u64 << page_shift;
    let bad = |rule: String| Error::Violation { at: format!("{what} context"), rule };
    if bytes <= page {
        if block != ring {
            return Err(bad(format!(
                "WQ block {block:#x} differs from the ring {ring:#x}, which fits one {page}-byte WQ page (0-level CLA)"
            )));
        }
        return Ok(WqPages { pages: vec![ring], page_shift });
    }
    let n = bytes / page;
    if n > MAX_WQ_PAGES {
        return Err(bad(format!("{bytes}-byte ring over {n} WQ pages of {page} bytes: a block holds {MAX_WQ_PAGES}")));
    }
    if block == ring || !block.is_multiple_of(512) {
        return Err(bad(format!(
            "{bytes}-byte ring over {n} WQ pages of {page} bytes needs a page table (1-level CLA), block {block:#x}"
        )));
    }
    let mut raw = vec![0u8; 8 * n as usize];
    if !read(block, &mut raw) {
        return Err(Error::Unmapped(format!("{what} WQ page table at {block:#x} outside the IOVA map")));
    }
    let pages: Vec<u64> = raw.chunks(8).map(|b| u64::from_be_bytes(b.try_into().expect("8"))).collect();
    if pages[0] != ring {
        return Err(bad(format!("page table entry 0 {:#x} is not the context's WQ page {ring:#x}", pages[0])));
    }
    if let Some((i, p)) = pages.iter().enumerate().find(|(_, &p)| p == 0 || !p.is_multiple_of(page)) {
        return Err(bad(format!("page table entry {i} {p:#x} is not a {page}-byte-aligned page")));
    }
    Ok(WqPages { pages, page_shift })
}

/// Parses SQ context `qid` (docs/hw/hinic3.md §9.1).
pub fn parse_sq(c: &[u8; 64], qid: u16) -> Result<SqCtx, Error> {
    let what = format!("SQ {qid}");
    let (pi, ci) = (PI.get(dw(c, 0)), CI.get(dw(c, 0)));
    reserved(c, 1, 0b11, &what)?;
    reserved(c, 2, PFN_HI.mask() | SQ_OWNER, &what)?;
    if dw(c, 2) & SQ_OWNER == 0 {
        return Err(Error::Violation { at: format!("{what} context dword 2"), rule: "owner bit 23 must be 1".into() });
    }
    let page_pfn = pfn(PFN_HI.get(dw(c, 2)), dw(c, 3));
    reserved(c, 4, 0, &what)?;
    reserved(c, 6, SQ_ID.mask(), &what)?;
    if SQ_ID.get(dw(c, 6)) != u32::from(qid) {
        return Err(Error::Violation {
            at: format!("{what} context dword 6"),
            rule: format!("SQ id {} is not the queue's index {qid}", SQ_ID.get(dw(c, 6))),
        });
    }
    reserved(c, 7, VLAN_TAG.mask() | Field::new(18, 16).mask() | VLAN_INSERT_MODE.mask() | CEQ_EN, &what)?;
    prefetch(c, page_pfn, ci, &what)?;
    reserved(c, 12, 0, &what)?;
    reserved(c, 13, 0, &what)?;
    let ring = page_pfn << 12;
    let block = block(c, &what)?;
    if ring == 0 {
        return Err(Error::Violation { at: format!("{what} context"), rule: "ring IOVA 0".into() });
    }
    check_aligned(ring, &what)?;
    Ok(SqCtx { ring, block, pi: pi as u16, ci: ci as u16, vlan_insert_mode: VLAN_INSERT_MODE.get(dw(c, 7)) as u8 })
}

/// Parses RQ context `qid` (docs/hw/hinic3.md §9.2). The model serves the 16-byte normal WQE with 32-byte CQEs
/// only (WQE type 2, CQE length code 1), the classic format of docs/hw/hinic3.md §10.3.
pub fn parse_rq(c: &[u8; 64], qid: u16) -> Result<RqCtx, Error> {
    let what = format!("RQ {qid}");
    let (pi, ci) = (PI.get(dw(c, 0)), CI.get(dw(c, 0)));
    reserved(c, 1, RQ_MSIX.mask() | RQ_INTR_OFF, &what)?;
    reserved(c, 2, PFN_HI.mask() | RQ_WQE_TYPE.mask() | RQ_OWNER, &what)?;
    if dw(c, 2) & RQ_OWNER == 0 {
        return Err(Error::Violation { at: format!("{what} context dword 2"), rule: "owner bit 31 must be 1".into() });
    }
    let wqe_type = RQ_WQE_TYPE.get(dw(c, 2)) as u8;
    if wqe_type != 2 {
        return Err(Error::Violation {
            at: format!("{what} context dword 2"),
            rule: format!("WQE type {wqe_type}; the model serves the 16-byte normal WQE (2) only"),
        });
    }
    let page_pfn = pfn(PFN_HI.get(dw(c, 2)), dw(c, 3));
    for i in 4..=6 {
        reserved(c, i, 0, &what)?;
    }
    reserved(c, 7, RQ_CQE_LEN.mask(), &what)?;
    if RQ_CQE_LEN.get(dw(c, 7)) != 1 {
        return Err(Error::Violation {
            at: format!("{what} context dword 7"),
            rule: format!("CQE length code {} (normal WQEs take 1, 32-byte CQEs)", RQ_CQE_LEN.get(dw(c, 7))),
        });
    }
    prefetch(c, page_pfn, ci, &what)?;
    let ring = page_pfn << 12;
    let block = block(c, &what)?;
    if ring == 0 {
        return Err(Error::Violation { at: format!("{what} context"), rule: "ring IOVA 0".into() });
    }
    check_aligned(ring, &what)?;
    let msix = (dw(c, 1) & RQ_INTR_OFF == 0).then(|| RQ_MSIX.get(dw(c, 1)) as u16);
    Ok(RqCtx { ring, block, pi: pi as u16, ci: ci as u16, wqe_type, msix })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host memory holding one page table at 0x1000 (big-endian u64 entries, docs/hw/hinic3.md §9.3).
    fn table(entries: &[u64]) -> impl Fn(u64, &mut [u8]) -> bool + '_ {
        move |at, buf| {
            let raw: Vec<u8> = entries.iter().flat_map(|e| e.to_be_bytes()).collect();
            at == 0x1000 && buf.len() <= raw.len() && {
                buf.copy_from_slice(&raw[..buf.len()]);
                true
            }
        }
    }

    #[test]
    fn a_ring_in_one_page_is_0_level() {
        let w = wq_pages(0x40_0000, 0x40_0000, 4096, 0, table(&[]), "SQ 0").unwrap();
        assert_eq!((w.count(), w.at(0x10), w.at(4095)), (1, 0x40_0010, 0x40_0FFF));
        // A block elsewhere for a ring that fits one page: wrong.
        assert!(wq_pages(0x40_0000, 0x1000, 4096, 0, table(&[0x40_0000]), "SQ 0").is_err());
        // 1 MiB pages (COMM 22 code 8): a 64 KiB ring is one page.
        assert_eq!(wq_pages(0x40_0000, 0x40_0000, 64 << 10, 8, table(&[]), "SQ 0").unwrap().count(), 1);
    }

    #[test]
    fn a_ring_over_several_pages_reads_its_page_table() {
        // 4096 16-byte WQEs = 64 KiB over sixteen 4 KiB pages, scattered and out of order.
        let pages: Vec<u64> = (0..16u64).map(|i| 0x80_0000 + (15 - i) * 0x3000).collect();
        let w = wq_pages(pages[0], 0x1000, 64 << 10, 0, table(&pages), "RQ 1").unwrap();
        assert_eq!(w.count(), 16);
        assert_eq!(w.at(0), pages[0]);
        assert_eq!(w.at(4096 + 16), pages[1] + 16, "WQE 257 is in the second page");
        assert_eq!(w.at((64 << 10) - 16), pages[15] + 4096 - 16);
        // The 0-level form (block = ring) for a ring larger than a page is refused.
        assert!(wq_pages(pages[0], pages[0], 64 << 10, 0, table(&pages), "RQ 1").is_err());
        // Entry 0 must be the context's page; every page aligned to the page size.
        assert!(wq_pages(pages[1], 0x1000, 64 << 10, 0, table(&pages), "RQ 1").is_err());
        let mut odd = pages.clone();
        odd[3] += 0x800;
        assert!(wq_pages(odd[0], 0x1000, 64 << 10, 0, table(&odd), "RQ 1").is_err());
        // A table the model cannot read.
        assert!(matches!(wq_pages(pages[0], 0x2000, 64 << 10, 0, table(&pages), "RQ 1"), Err(Error::Unmapped(_))));
        // More pages than a 4 KiB block holds.
        assert!(wq_pages(pages[0], 0x1000, 4 << 20, 0, table(&pages), "RQ 1").is_err());
    }
}
