//! The RX completion format for the shared engine ([`ringkit::RxFormat`], docs/hw/hinic3.md §10.3 to §10.6): normal
//! RQ WQEs whose buffer address is rewritten at each refill (their CQE address is written once, at creation), and a
//! separate array of 32-byte CQEs, one per RQ entry. The memo of the last plain frame, the common frame one at a
//! time, and any completion for the general path: a frame longer than a buffer over consecutive entries (only its
//! first CQE says so), flushed buffers, LRO. The driver clears each consumed CQE's status (the device does not). The
//! groups of four are in [`super::rx_simd`].

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use mempool::ol_flags;
use pktio::stats::Counter;
use ringkit::rx::{FastFrame, RxEntry, RxMeta};
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use ringkit::rx::{Isa, RxRun};
use ringkit::{RxDescriptor, RxFormat};

use crate::desc::{cqe, hi_lo, rx_flags, RqWqe, RxCqe};

/// The mbuf flags of a checksum-error completion.
const CSUM_BAD: u64 = ol_flags::RX_IP_CKSUM_BAD | ol_flags::RX_L4_CKSUM_BAD;

/// Posting a buffer in a normal RQ WQE rewrites its buffer address only: the CQE address it also holds was written
/// when the ring was made.
impl RxDescriptor for RqWqe {
    #[inline(always)]
    unsafe fn post(d: *mut Self, iova: u64) {
        // SAFETY: the trait's contract: a WQE of the ring the device does not own.
        unsafe { std::ptr::addr_of_mut!((*d).buf).write_volatile(hi_lo(iova)) }
    }
}

/// The memo of the last (status, offload word) pair of a plain frame and the mbuf fields they give. The status is
/// compared whole: a memo's status is DONE plus checksum bits, so a match also says "done, not flushed, no LRO". A
/// checksum-error or VLAN-stripped completion never becomes the memo (the first is counted, the second has a tag of
/// its own, on the general path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memo {
    pub(crate) status: u32,
    pub(crate) offload: u32,
    pub(crate) flags: u64,
    pub(crate) ptype: u32,
}

impl Memo {
    /// The memo of a plain frame's status and offload word.
    pub(crate) fn of(status: u32, offload: u32) -> Memo {
        let (flags, ptype) = rx_flags(status, offload);
        Memo { status: cqe::DONE | (status & cqe::CSUM_ERR.mask()), offload, flags, ptype }
    }

    /// A memo no CQE matches: a status with every bit set (flush and LRO among them) is none a plain frame has, and
    /// not 0, which is what a consumed CQE the device has not written again reads.
    pub(crate) const NONE: Memo = Memo { status: u32::MAX, offload: 0, flags: 0, ptype: 0 };
}

/// Dword `k` of the CQE at `c` (after its done bit was seen).
///
/// # Safety
/// `c` must be a CQE of the ring's array, `k < 8`.
#[inline(always)]
unsafe fn word(c: *const u32, k: usize) -> u32 {
    // SAFETY: the caller's contract.
    unsafe { c.add(k).read_volatile() }
}

/// The status dword of the CQE at `c`, read with acquire order: the rest of the CQE is read only after it.
///
/// # Safety
/// `c` must be a CQE of the ring's array.
#[inline(always)]
pub(super) unsafe fn status(c: *const u32) -> u32 {
    // SAFETY: an aligned dword of the CQE memory; the device writes it (atomic view).
    unsafe { AtomicU32::from_ptr(c.cast_mut()).load(Ordering::Acquire) }
}

/// Clears the status dword of the CQE at `c` (docs/hw/hinic3.md §10.6 step 3).
///
/// # Safety
/// `c` must be a CQE of the ring's array whose entry is consumed.
#[inline(always)]
pub(super) unsafe fn clear(c: *mut u32) {
    // SAFETY: the caller's contract.
    unsafe { c.write_volatile(0) }
}

/// hinic3's RQ: normal WQEs and separate 32-byte CQEs, for the shared RX engine.
pub struct Cqe32 {
    /// Bytes the device writes per buffer (a size of the docs/hw/hinic3.md §10.4 table).
    buf_len: u32,
    /// Completions with a bad IP or L4 checksum (a per-queue xstat).
    csum_errors: Arc<Counter>,
    /// Bytes of the current frame still to come in the following entries, whose CQEs are not read.
    chain_left: u32,
    /// The current frame's metadata (from its first CQE).
    chain_meta: RxMeta,
}

impl Cqe32 {
    /// The format of a queue with `buf_len`-byte buffers, counting checksum-error completions in `csum_errors`.
    pub fn new(buf_len: u32, csum_errors: Arc<Counter>) -> Self {
        Cqe32 { buf_len, csum_errors, chain_left: 0, chain_meta: RxMeta::default() }
    }

    /// Bytes per buffer.
    pub fn buf_len(&self) -> u32 {
        self.buf_len
    }
}

// SAFETY: fast_one and the groups take only CQEs that repeat the memo's status (done, not flushed, no LRO; never
// the NONE memo's) with a length of 1 to max_len (= buf_len, one buffer), reading the rest after the status (an
// acquire load; the AVX groups read each CQE's first 16 bytes in one atomic load).
unsafe impl RxFormat for Cqe32 {
    type Desc = RqWqe;
    type Wb = RxCqe;
    type Memo = Memo;

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn groups<I: Isa>(&self, run: RxRun<RxCqe>, memo: &Memo) -> (usize, u64) {
        // SAFETY: the trait's contract, passed on; max_len is buf_len, a size of the buffer table.
        unsafe { super::rx_simd::rx_groups::<I>(run, memo) }
    }

    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    unsafe fn groups<I: Isa>(&self, run: RxRun<RxCqe>, memo: &Memo) -> (usize, u64) {
        // SAFETY: the trait's contract, passed on; max_len is buf_len.
        unsafe { super::rx_neon::rx_groups_neon(run, memo) }
    }

    /// The memo's status and offload word (done, not flushed, no LRO, the same flags; a VLAN-stripped frame's memo
    /// is never kept), one buffer, not empty: one branch.
    #[inline(always)]
    unsafe fn fast_one(&self, c: *mut RxCqe, max_len: u16, memo: &mut Memo) -> Option<FastFrame> {
        let c = c.cast::<u32>();
        // SAFETY: a CQE of the array (the trait's contract); the status first with acquire order, the rest after.
        let (status, w1, w2) = unsafe { (status(c), word(c, 1), word(c, 2)) };
        let len = cqe::LEN.get(w1);
        let odd = (status != memo.status) as u32
            | (w2 != memo.offload) as u32
            | (len.wrapping_sub(1) >= max_len as u32) as u32;
        if odd != 0 {
            return None;
        }
        // SAFETY: as above; the entry is consumed, so the driver clears its done bit (docs/hw/hinic3.md §10.6 step 3).
        let rss = unsafe {
            let rss = word(c, 3);
            clear(c);
            rss
        };
        Some(FastFrame { len: len as u16, flags: memo.flags, ptype: memo.ptype, rss })
    }

    /// Any CQE: a new memo, VLAN, checksum errors, a frame over several entries (docs/hw/hinic3.md §10.6 step 2: only
    /// the first CQE carries status and length; the following entries are consumed without reading theirs), a
    /// flushed buffer or an LRO CQE (dropped: this driver never enables LRO).
    #[inline(always)]
    unsafe fn decode(&mut self, c: *mut RxCqe, memo: &mut Memo) -> RxEntry {
        let c = c.cast::<u32>();
        if self.chain_left > 0 {
            let len = self.chain_left.min(self.buf_len);
            self.chain_left -= len;
            // SAFETY: a CQE of the array whose entry is consumed (clearing a CQE the device did not write does no
            // harm, docs/hw/hinic3.md §10.6 step 3).
            unsafe { clear(c) };
            return RxEntry::Buf { len: len as u16, last: self.chain_left == 0, bad: false, meta: self.chain_meta };
        }
        // SAFETY: a CQE of the array (the trait's contract).
        let status = unsafe { status(c) };
        if status & cqe::DONE == 0 {
            return RxEntry::Pending;
        }
        // SAFETY: done: the rest of the CQE is valid.
        let w1 = unsafe { word(c, 1) };
        let len = cqe::LEN.get(w1);
        let bad = status & (cqe::FLUSH | cqe::NUM_LRO.mask()) != 0 || len == 0;
        let mut meta = RxMeta::default();
        if !bad {
            // SAFETY: as above.
            let (offload, rss) = unsafe { (word(c, 2), word(c, 3)) };
            (meta.flags, meta.ptype) = rx_flags(status, offload);
            meta.rss = rss;
            meta.vlan = cqe::VLAN.get(w1) as u16;
            let csum_bad = meta.flags & CSUM_BAD != 0;
            // Counted here; such a frame never becomes the memo, so none passes the fast run uncounted.
            self.csum_errors.add(csum_bad as u64);
            if len <= self.buf_len {
                // The tag differs per packet: VLAN frames always come this way.
                let plain = !csum_bad && meta.flags & ol_flags::RX_VLAN_STRIPPED == 0;
                *memo = if plain { Memo::of(status, offload) } else { Memo::NONE };
            }
        }
        // SAFETY: the entry is consumed.
        unsafe { clear(c) };
        if len > self.buf_len {
            self.chain_left = len - self.buf_len;
            self.chain_meta = meta;
            return RxEntry::Buf { len: self.buf_len as u16, last: false, bad, meta };
        }
        RxEntry::Buf { len: len as u16, last: true, bad, meta }
    }
}
