//! Giving buffers back: one chain segment by segment, or a burst in bulk, where a burst of single segments of one
//! pool (the common case: what a port received, sent on) is told in one branch-free pass and goes back in one put.

use std::ptr::NonNull;

use crate::mbuf::{MbufHeader, STATE_FREE, STATE_IN_USE};
use crate::pool::PoolInner;

/// Returns one segment chain to its pools (segments may come from different pools).
///
/// # Safety
/// The caller owns the whole chain starting at `hdr`, and nothing uses it afterwards.
#[inline]
pub(crate) unsafe fn free_chain(hdr: NonNull<MbufHeader>) {
    let mut cur = hdr.as_ptr();
    while !cur.is_null() {
        // SAFETY: owned by the caller; initialised at pool creation.
        let h = unsafe { &mut *cur };
        let next = h.next;
        h.next = std::ptr::null_mut();
        // SAFETY: every element points at its live pool (a pool with elements out is never freed).
        let pool = unsafe { &*h.pool };
        if pool.checks() {
            check_and_mark_free(pool, h);
        }
        // SAFETY: cur is non-null.
        pool.put_bulk(&[unsafe { NonNull::new_unchecked(cur) }]);
        cur = next;
    }
}

#[cold]
pub(crate) fn check_and_mark_free(pool: &PoolInner, h: &mut MbufHeader) {
    assert_eq!(h.state, STATE_IN_USE, "mempool {}: double free of buffer {}", pool.name, h.index);
    h.state = STATE_FREE;
}

/// Frees many single-or-chained packets, grouping runs of single segments from the same pool into one bulk put.
///
/// A single segment is already in the free state (`next` null), so nothing is written into it. The common case,
/// a whole burst of single segments from one pool, is told by one pass over the burst with no branch per buffer
/// ([`Links`]) and goes back in one put; any other burst takes [`free_mixed`].
///
/// # Safety
/// The caller owns every chain in `hdrs` and uses none of them afterwards.
#[inline]
pub(crate) unsafe fn free_bulk(hdrs: &[NonNull<MbufHeader>]) {
    // SAFETY: the caller's contract.
    unsafe { free_bulk_with::<false>(hdrs) };
}

/// [`free_bulk`], also returning the packets' total length (the sum of their `pkt_len`), read in the same pass.
///
/// # Safety
/// As [`free_bulk`].
#[inline]
pub(crate) unsafe fn free_bulk_counting_bytes(hdrs: &[NonNull<MbufHeader>]) -> u64 {
    // SAFETY: the caller's contract.
    unsafe { free_bulk_with::<true>(hdrs) }
}

/// The pass behind [`free_bulk`]: the burst's [`Links`] tell whether it is single segments of one pool (then one
/// put); the byte sum (`BYTES`) is added four packets at a time.
///
/// # Safety
/// As [`free_bulk`].
#[inline(always)]
unsafe fn free_bulk_with<const BYTES: bool>(hdrs: &[NonNull<MbufHeader>]) -> u64 {
    if hdrs.is_empty() {
        return 0;
    }
    let mut links = Links::new();
    let mut bytes = 0u64;
    let mut quads = hdrs.chunks_exact(4);
    for quad in &mut quads {
        // SAFETY: owned by the caller; a chunk of exactly four.
        let [a, b, c, d] = [0, 1, 2, 3].map(|k| unsafe { &*quad.get_unchecked(k).as_ptr() });
        for h in [a, b, c, d] {
            links.add(h);
        }
        if BYTES {
            bytes += (a.pkt_len as u64 + b.pkt_len as u64) + (c.pkt_len as u64 + d.pkt_len as u64);
        }
    }
    for hdr in quads.remainder() {
        // SAFETY: owned by the caller.
        let h = unsafe { &*hdr.as_ptr() };
        links.add(h);
        if BYTES {
            bytes += h.pkt_len as u64;
        }
    }
    let Some(pool_ptr) = links.single_pool() else {
        // SAFETY: the caller's contract.
        unsafe { free_mixed(hdrs) };
        return bytes;
    };
    // SAFETY: every buffer's pool pointer (all equal); the pool is alive while it has elements out.
    let pool = unsafe { &*pool_ptr };
    if pool.checks() {
        for hdr in hdrs {
            // SAFETY: owned by the caller.
            check_and_mark_free(pool, unsafe { &mut *hdr.as_ptr() });
        }
    }
    pool.put_bulk(hdrs);
    bytes
}

/// The OR and the AND of the `next` and `pool` words of a burst's headers: the burst is single segments of one pool
/// exactly when the OR of `next` is zero and the OR and the AND of `pool` agree (every bit the same in all). No
/// branch per buffer; on x86-64 the two words are one aligned 16-byte lane, so a header costs one load, one OR and
/// one AND.
#[derive(Clone, Copy)]
struct Links {
    #[cfg(target_arch = "x86_64")]
    any: std::arch::x86_64::__m128i,
    #[cfg(target_arch = "x86_64")]
    all: std::arch::x86_64::__m128i,
    #[cfg(not(target_arch = "x86_64"))]
    any: [usize; 2],
    #[cfg(not(target_arch = "x86_64"))]
    all: [usize; 2],
}

const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(MbufHeader, next).is_multiple_of(16) && std::mem::align_of::<MbufHeader>().is_multiple_of(16));
    assert!(offset_of!(MbufHeader, pool) == offset_of!(MbufHeader, next) + 8);
};

impl Links {
    #[inline(always)]
    fn new() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_set1_epi64x, _mm_setzero_si128};
            // SAFETY: SSE2 is part of x86-64 (no feature to check); register operations only.
            unsafe { Links { any: _mm_setzero_si128(), all: _mm_set1_epi64x(-1) } }
        }
        #[cfg(not(target_arch = "x86_64"))]
        Links { any: [0; 2], all: [usize::MAX; 2] }
    }

    #[inline(always)]
    fn add(&mut self, h: &MbufHeader) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_and_si128, _mm_load_si128, _mm_or_si128};
            // SAFETY: `next` then `pool`, 16 bytes at a 16-byte aligned offset of the header (checked above), which
            // we may read.
            // SSE2 is part of x86-64.
            unsafe {
                let v = _mm_load_si128(std::ptr::addr_of!(h.next).cast());
                self.any = _mm_or_si128(self.any, v);
                self.all = _mm_and_si128(self.all, v);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let v = [h.next as usize, h.pool as usize];
            self.any = [self.any[0] | v[0], self.any[1] | v[1]];
            self.all = [self.all[0] & v[0], self.all[1] & v[1]];
        }
    }

    /// The one pool of a burst of single segments, or `None`.
    #[inline(always)]
    fn single_pool(self) -> Option<*const PoolInner> {
        #[cfg(target_arch = "x86_64")]
        let (any_next, any_pool, all_pool) = {
            use std::arch::x86_64::{_mm_cvtsi128_si64, _mm_unpackhi_epi64};
            // SAFETY: SSE2 is part of x86-64; register operations only.
            let high = |v| unsafe { _mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v)) as usize };
            // SAFETY: as above.
            (unsafe { _mm_cvtsi128_si64(self.any) as usize }, high(self.any), high(self.all))
        };
        #[cfg(not(target_arch = "x86_64"))]
        let (any_next, any_pool, all_pool) = (self.any[0], self.any[1], self.all[1]);
        (any_next == 0 && any_pool == all_pool).then_some(any_pool as *const PoolInner)
    }
}

/// [`free_bulk`] of a burst with chains or buffers of several pools: runs of single segments from one pool still
/// go back with one put each (checked four buffers per test), chains segment by segment.
///
/// # Safety
/// As [`free_bulk`].
#[inline(never)]
unsafe fn free_mixed(hdrs: &[NonNull<MbufHeader>]) {
    let n = hdrs.len();
    let mut i = 0;
    while i < n {
        // SAFETY: i < n; owned by the caller; its pool is alive while it has elements out.
        let pool_ptr = unsafe { (*hdrs.get_unchecked(i).as_ptr()).pool };
        // SAFETY: as above.
        let pool = unsafe { &*pool_ptr };
        let start = i;
        // Zero exactly for a single segment of this pool.
        let other = |k: usize| {
            // SAFETY: callers pass k < n; owned by the caller.
            let h = unsafe { &*hdrs.get_unchecked(k).as_ptr() };
            (h.pool as usize ^ pool_ptr as usize) | h.next as usize
        };
        if pool.checks() {
            while i < n && other(i) == 0 {
                // SAFETY: i < n; owned by the caller.
                check_and_mark_free(pool, unsafe { &mut *hdrs.get_unchecked(i).as_ptr() });
                i += 1;
            }
        } else {
            while i + 4 <= n && other(i) | other(i + 1) | other(i + 2) | other(i + 3) == 0 {
                i += 4;
            }
            while i < n && other(i) == 0 {
                i += 1;
            }
        }
        if start < i {
            // SAFETY: start < i <= n.
            pool.put_bulk(unsafe { hdrs.get_unchecked(start..i) });
        }
        // SAFETY: i < n; owned by the caller.
        if i < n && unsafe { !(*hdrs.get_unchecked(i).as_ptr()).next.is_null() } {
            // SAFETY: a chain owned by the caller, freed once.
            unsafe { free_chain(*hdrs.get_unchecked(i)) };
            i += 1;
        }
    }
}

/// Frees packets held as raw pointers (drivers keep sent packets this way): the same as dropping each as an
/// [`Mbuf`](crate::Mbuf), but in bulk. Runs of single segments from one pool go back as they are (nothing is reset on free) with
/// one bulk put into the calling lcore's cache (DPDK's `rte_pktmbuf_free_bulk`); chains and mixed pools take the
/// general path.
///
/// # Safety
/// Every entry must be an owned packet (from [`Mbuf::into_raw`](crate::Mbuf::into_raw) or a pool's raw allocation), each listed once, and
/// none may be used afterwards.
#[inline]
pub unsafe fn free_raw_bulk(hdrs: &[NonNull<MbufHeader>]) {
    // SAFETY: the caller's contract is free_bulk's.
    unsafe { free_bulk(hdrs) }
}
