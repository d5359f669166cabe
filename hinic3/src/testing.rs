//! A fake doorbell BAR for tests and the benchmark: it remembers the last doorbell rung on each page and decodes
//! the producer index from it (docs/hw/hinic3.md §10.1). Not a device model.

use std::sync::atomic::{AtomicU64, Ordering};

use pktio::bar::RegisterSpace;

use crate::doorbell::PI_HI;
use crate::regs::DB_PAGE;

/// Pages the fake doorbell BAR has.
pub const FAKE_DB_PAGES: usize = 4;

/// A doorbell BAR that records the last 64-bit store per page.
#[derive(Debug, Default)]
pub struct FakeDb {
    /// Per page: the last value, and the offset inside the page + 1 (0: never rung).
    last: [(AtomicU64, AtomicU64); FAKE_DB_PAGES],
}

impl FakeDb {
    /// The last doorbell of `page`: (information dword, producer index), if any.
    pub fn last(&self, page: usize) -> Option<(u32, u32)> {
        let off = self.last[page].1.load(Ordering::Acquire);
        if off == 0 {
            return None;
        }
        let v = self.last[page].0.load(Ordering::Acquire);
        let pi = (PI_HI.get((v >> 32) as u32) << 8) | ((off - 1) / 8) as u32;
        Some((v as u32, pi))
    }
}

impl RegisterSpace for FakeDb {
    fn read32(&self, _offset: usize) -> u32 {
        0
    }

    fn write32(&self, offset: usize, value: u32) {
        // A doorbell written as two halves is a driver bug on this device: record it as a torn value.
        let page = offset / DB_PAGE;
        self.last[page].0.store(value as u64 | 0xDEAD_0000_0000_0000, Ordering::Release);
        self.last[page].1.store((offset % DB_PAGE) as u64 + 1, Ordering::Release);
    }

    #[inline]
    fn write64(&self, offset: usize, value: u64) {
        let page = offset / DB_PAGE;
        self.last[page].0.store(value, Ordering::Release);
        self.last[page].1.store((offset % DB_PAGE) as u64 + 1, Ordering::Release);
    }

    fn len(&self) -> usize {
        FAKE_DB_PAGES * DB_PAGE
    }
}
