//! Work-queue memory (docs/hw/hinic3.md §9.3). A ring that fits one WQ page (the size set with COMM 22) is 0-level
//! CLA: one IOVA-contiguous area, the context's WQ block being the ring itself. A larger ring is 1-level CLA: it spans
//! several WQ pages, each IOVA-contiguous and aligned to the page size, and the WQ block is a 4 KiB table of their
//! big-endian u64 addresses (Linux wq.c `wq_init_wq_block`). The pages need not follow each other in IOVA space; the
//! CPU sees them as one virtually contiguous ring, so the hot path indexes it as before.

use std::sync::Arc;

use drvkit::dma::{DmaArea, DmaError, DmaMapper, DmaMapping};
use hugepage::Allocator;

use crate::desc::WQ_ALIGN;

/// Page-table entries one 4 KiB WQ block holds (Linux wq.c `WQ_MAX_NUM_PAGES`).
pub const MAX_WQ_PAGES: usize = 4096 / 8;
/// The largest WQ page size code COMM 22 takes from this driver: 1 MiB = 4 KiB << 8 (DPDK's page size).
pub const MAX_WQ_PAGE_LOG2: u8 = 8;

/// One work queue's memory.
pub struct WqMem {
    kind: Kind,
    bytes: usize,
}

enum Kind {
    Flat(DmaArea),
    Paged { map: DmaMapping, start: usize, first: u64, table: DmaArea },
}

impl WqMem {
    /// `bytes` of zeroed ring memory for WQ pages of 4 KiB << `page_log2`; the first page (and a 0-level ring) on
    /// [`WQ_ALIGN`].
    pub fn new(
        allocator: &Allocator,
        mapper: &Arc<dyn DmaMapper>,
        bytes: usize,
        page_log2: u8,
        port: &str,
        what: &str,
    ) -> drvkit::dma::Result<WqMem> {
        let page = 4096usize << page_log2;
        if bytes <= page {
            let area = DmaArea::new_aligned(allocator, mapper, bytes, WQ_ALIGN, port, what)?;
            return Ok(WqMem { kind: Kind::Flat(area), bytes });
        }
        let bad = |reason: String| DmaError::Area { port: port.to_string(), reason: format!("{what}: {reason}") };
        let n = bytes / page;
        if n > MAX_WQ_PAGES {
            return Err(bad(format!(
                "{bytes} bytes over {n} WQ pages of {page}: a page table holds {MAX_WQ_PAGES}; use larger WQ pages"
            )));
        }
        let align = WQ_ALIGN as usize;
        let mem = allocator
            .allocate(bytes + align)
            .map_err(|e| bad(format!("cannot allocate {} bytes: {e}", bytes + align)))?;
        // The first page-size step whose IOVA is on WQ_ALIGN; each page then contiguous and aligned on its own.
        let start = (0..=align / page.min(align))
            .map(|k| k * page.min(align))
            .find(|&o| mem.iova_at(o).is_some_and(|a| a.is_multiple_of(WQ_ALIGN)))
            .ok_or_else(|| bad("no 256 KiB-aligned IOVA for the first WQ page".into()))?;
        let mut pages = Vec::with_capacity(n);
        for i in 0..n {
            let off = start + i * page;
            match mem.iova_at(off) {
                Some(a) if a.is_multiple_of(page as u64) && mem.contiguous_from(off) >= page => pages.push(a),
                _ => {
                    return Err(bad(format!(
                        "WQ page {i} is not IOVA-contiguous on {page} bytes; use larger hugepages"
                    )))
                }
            }
        }
        let table = DmaArea::new(allocator, mapper, 4096, port, "a WQ page table")?;
        for (i, a) in pages.iter().enumerate() {
            table.write(8 * i, &a.to_be_bytes());
        }
        let map = mapper.map(&Arc::new(mem))?;
        Ok(WqMem { kind: Kind::Paged { map, start, first: pages[0], table }, bytes })
    }

    /// The CPU address of the ring (virtually contiguous, `bytes` long).
    pub fn as_ptr(&self) -> *mut u8 {
        match &self.kind {
            Kind::Flat(a) => a.as_ptr(),
            // start + bytes lies inside the mapping (allocated bytes + WQ_ALIGN, start below WQ_ALIGN).
            Kind::Paged { map, start, .. } => map.memory().as_ptr().wrapping_add(*start),
        }
    }

    /// The IOVA of the first WQ page (the context's WQ page PFN, docs/hw/hinic3.md §9.1).
    pub fn iova(&self) -> u64 {
        match &self.kind {
            Kind::Flat(a) => a.iova(0),
            Kind::Paged { first, .. } => *first,
        }
    }

    /// The WQ block's IOVA (the context's block PFN): the ring (0-level) or its page table (1-level).
    pub fn block_iova(&self) -> u64 {
        match &self.kind {
            Kind::Flat(a) => a.iova(0),
            Kind::Paged { table, .. } => table.iova(0),
        }
    }

    /// Whether the ring spans several WQ pages (1-level CLA).
    pub fn is_paged(&self) -> bool {
        matches!(self.kind, Kind::Paged { .. })
    }

    /// Ring bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Always false: a ring has at least one entry.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }
}
