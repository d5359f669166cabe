//! The RX fast run (docs/hw/i40e.md §10.2): the leading run of common frames of a burst (one descriptor, DD and
//! EOF, no frame error, a length within the buffer), four descriptors per test while they repeat the memo's flag
//! bits, the Mbuf RX fields built with SSE2 shuffles on x86-64 (built a second time for AVX), one at a time
//! elsewhere and at the run's end.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use drvkit::barrier::dma_rmb;
use mempool::{Mbuf, MbufHeader};

use crate::desc::{rx, RxDesc};
use crate::rx_flags::{RxMemo, KEY};

/// qword-1 bits a fast frame must have as [`FAST`]: DD, EOF, and no frame error.
pub(crate) const FAST_MASK: u64 = rx::DD | rx::EOF | rx::FRAME_ERRORS;
/// DD and EOF.
pub(crate) const FAST: u64 = rx::DD | rx::EOF;

/// Qword 1 of a descriptor the device may be writing (an acquire load: the rest is read only after DD).
///
/// # Safety
/// `d` must point into live ring memory.
#[inline(always)]
pub(crate) unsafe fn rx_qw1(d: *const RxDesc) -> u64 {
    // SAFETY: an aligned qword of the ring memory (caller's contract).
    unsafe { AtomicU64::from_ptr(std::ptr::addr_of!((*d).qw1).cast_mut()).load(Ordering::Acquire) }
}

/// Receives the leading run of common frames among the `n` descriptors at `d` (one descriptor, DD and EOF, no
/// frame error, a length within `max_len`), writing each buffer's RX fields and moving it from `shadow[k]` to
/// `out[k]`. Four descriptors per test while they repeat the memo's flag bits, then one at a time (updating the
/// memo) to the end of the run. Returns how many it took and their bytes.
///
/// # Safety
/// `d`, `shadow` and `out` valid for `n` entries; the shadow entries owned buffers posted with the rearm word whose
/// data room is at least `max_len`; the descriptors ring memory the device may write.
#[inline(never)]
pub(crate) unsafe fn rx_fast_run(
    d: *const RxDesc,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    memo: &mut RxMemo,
) -> (usize, u64) {
    // SAFETY: the caller's contract, passed on.
    unsafe { rx_fast_run_body::<false>(d, shadow, n, out, max_len, memo) }
}

/// [`rx_fast_run`] compiled for AVX: the SSE2 intrinsics of the groups get the VEX three-operand forms (no register
/// copies). Called when the CPU has AVX ([`RxRing`] checks once, at creation).
///
/// # Safety
/// As [`rx_fast_run`], and the CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
#[inline(never)]
pub(crate) unsafe fn rx_fast_run_avx(
    d: *const RxDesc,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    memo: &mut RxMemo,
) -> (usize, u64) {
    // SAFETY: the caller's contract, passed on.
    unsafe { rx_fast_run_body::<true>(d, shadow, n, out, max_len, memo) }
}

/// qword-1 bits above the length: the header length and SPH, zero without header split. The fast path requires
/// them zero, so that qword 1 shifted right to the length is the length alone.
#[cfg(target_arch = "x86_64")]
const ABOVE_LEN: u64 = !((1u64 << (rx::LENGTH_PBUF.lo + rx::LENGTH_PBUF.width)) - 1);

/// The body of [`rx_fast_run`] and [`rx_fast_run_avx`].
///
/// # Safety
/// As [`rx_fast_run`].
#[inline(always)]
unsafe fn rx_fast_run_body<const AVX: bool>(
    d: *const RxDesc,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    memo: &mut RxMemo,
) -> (usize, u64) {
    let mut m0 = *memo;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's contract, passed on.
    let (mut k, mut bytes) = unsafe { rx_groups_sse2::<AVX>(d, shadow, n, out, max_len, &m0) };
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's contract, passed on.
    let (mut k, mut bytes) = unsafe { rx_groups_scalar(d, shadow, n, out, max_len, &m0) };
    while k < n {
        // SAFETY: k < n.
        let q = unsafe { rx_qw1(d.add(k)) };
        if (q ^ FAST) & FAST_MASK != 0 {
            break;
        }
        let len = rx::LENGTH_PBUF.get(q);
        if len > max_len as u64 {
            break;
        }
        dma_rmb();
        if q & KEY != m0.key {
            m0 = RxMemo::of(q);
        }
        // SAFETY: DD seen (then dma_rmb); an owned buffer posted with the rearm word; len <= max_len, within its
        // data room; ownership moves to out[k].
        unsafe {
            let qw0 = std::ptr::addr_of!((*d.add(k)).qw0).read_volatile();
            let p = *shadow.add(k);
            ManuallyDrop::new(Mbuf::from_raw(p)).set_rx_unchecked(
                len as u16,
                m0.flags,
                m0.ptype,
                rx::RSS_HASH.get(qw0) as u32,
            );
            out.add(k).write(p);
        }
        bytes += len;
        k += 1;
    }
    *memo = m0;
    (k, bytes)
}

/// The four-at-a-time part of [`rx_fast_run`] on x86-64: takes groups of four descriptors while each repeats
/// the memo's flag bits, builds each buffer's two RX blocks with SSE2 from the descriptor (`[ol_flags,
/// packet_type, pkt_len]` from the memo and the length, `[data_len, vlan_tci = 0, rss_hash, tx_offload = 0]`
/// from the length and qword 0's high half) and stores them with [`Mbuf::set_rx_blocks`]. Returns how many it
/// took (a multiple of four) and their bytes.
///
/// # Safety
/// As [`rx_fast_run`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn rx_groups_sse2<const AVX: bool>(
    d: *const RxDesc,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    m0: &RxMemo,
) -> (usize, u64) {
    use std::arch::x86_64::{
        _mm_add_epi32, _mm_and_si128, _mm_blend_epi16, _mm_cvtsi128_si32, _mm_load_si128, _mm_or_si128, _mm_set_epi32,
        _mm_set_epi64x, _mm_setzero_si128, _mm_shuffle_epi32, _mm_srli_epi64,
    };
    const MASK: u64 = FAST_MASK | KEY | ABOVE_LEN;
    const LEN_SHIFT: i32 = rx::LENGTH_PBUF.lo as i32;
    // After the shift, the length is 32-bit lane 2 and lane 3 is zero: lane 0 <- 2, the rest <- 3 ...
    const LEN_TO_LANE0: i32 = 0b11_11_11_10;
    // ... or lane 3 <- 2, the rest <- 3.
    const LEN_TO_LANE3: i32 = 0b10_11_11_11;
    let want = FAST | m0.key;
    #[allow(unused_unsafe)]
    // SAFETY: no memory operands.
    let (template, rss_lane, mut sum) =
        unsafe { (_mm_set_epi64x(m0.ptype as i64, m0.flags as i64), _mm_set_epi32(0, 0, -1, 0), _mm_setzero_si128()) };
    let mut k = 0;
    let end = n & !3;
    while k != end {
        // SAFETY: k + 3 < n: inside the ring.
        let (q0, q1, q2, q3) =
            unsafe { (rx_qw1(d.add(k)), rx_qw1(d.add(k + 1)), rx_qw1(d.add(k + 2)), rx_qw1(d.add(k + 3))) };
        if ((q0 ^ want) | (q1 ^ want) | (q2 ^ want) | (q3 ^ want)) & MASK != 0 {
            break;
        }
        // Nothing above the lengths (checked): the OR of the shifted words bounds each length.
        if (q0 | q1 | q2 | q3) >> LEN_SHIFT > max_len as u64 {
            break;
        }
        dma_rmb();
        for j in 0..4 {
            // SAFETY: DD seen on this descriptor (then dma_rmb); descriptors are 32-byte aligned.
            let v = unsafe { _mm_load_si128(d.add(k + j).cast()) };
            #[allow(unused_unsafe)]
            // SAFETY: no memory operands; the SSE4.1 blend only in the AVX instantiation, which runs only on CPUs with
            // AVX (and so SSE4.1; checked at ring creation).
            let (b1, b2, len) = unsafe {
                let t = _mm_srli_epi64::<LEN_SHIFT>(v);
                let len = _mm_shuffle_epi32::<LEN_TO_LANE0>(t);
                // The RSS hash (32-bit lane 1) from the descriptor, the rest from the length lane: one SSE4.1
                // blend of the 16-bit words 2 and 3 in the AVX build, an AND and an OR otherwise.
                let b2 = if AVX {
                    _mm_blend_epi16::<0b0000_1100>(len, v)
                } else {
                    _mm_or_si128(len, _mm_and_si128(v, rss_lane))
                };
                let b1 = _mm_or_si128(template, _mm_shuffle_epi32::<LEN_TO_LANE3>(t));
                (b1, b2, len)
            };
            // SAFETY: no memory operands.
            sum = unsafe { _mm_add_epi32(sum, len) };
            // SAFETY: an owned buffer posted with the rearm word; its length is at most max_len (checked), within
            // its data room; pkt_len and data_len both the length. Ownership moves to out[k + j].
            unsafe {
                let p = *shadow.add(k + j);
                ManuallyDrop::new(Mbuf::from_raw(p)).set_rx_blocks(b1, b2);
                out.add(k + j).write(p);
            }
        }
        k += 4;
    }
    #[allow(unused_unsafe)]
    // SAFETY: no memory operands.
    let bytes = unsafe { _mm_cvtsi128_si32(sum) } as u32 as u64;
    (k, bytes)
}

/// The four-at-a-time part of [`rx_fast_run`] without SIMD.
///
/// # Safety
/// As [`rx_fast_run`].
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn rx_groups_scalar(
    d: *const RxDesc,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    m0: &RxMemo,
) -> (usize, u64) {
    let mut k = 0;
    let mut bytes = 0u64;
    let end = n & !3;
    let want = FAST | m0.key;
    const MASK: u64 = FAST_MASK | KEY;
    while k != end {
        // SAFETY: k + 3 < n: inside the ring.
        let (q0, q1, q2, q3) =
            unsafe { (rx_qw1(d.add(k)), rx_qw1(d.add(k + 1)), rx_qw1(d.add(k + 2)), rx_qw1(d.add(k + 3))) };
        if ((q0 ^ want) | (q1 ^ want) | (q2 ^ want) | (q3 ^ want)) & MASK != 0 {
            break;
        }
        let lens = [q0, q1, q2, q3].map(|q| rx::LENGTH_PBUF.get(q));
        if (lens[0] | lens[1] | lens[2] | lens[3]) > max_len as u64 {
            break;
        }
        dma_rmb();
        for (j, &len) in lens.iter().enumerate() {
            // SAFETY: DD seen on this descriptor (then dma_rmb); k + j < n.
            let qw0 = unsafe { std::ptr::addr_of!((*d.add(k + j)).qw0).read_volatile() };
            // SAFETY: an owned buffer posted with the rearm word; len <= max_len, within its data room; ownership
            // moves to out[k + j].
            unsafe {
                let p = *shadow.add(k + j);
                ManuallyDrop::new(Mbuf::from_raw(p)).set_rx_unchecked(
                    len as u16,
                    m0.flags,
                    m0.ptype,
                    rx::RSS_HASH.get(qw0) as u32,
                );
                out.add(k + j).write(p);
            }
            bytes += len;
        }
        k += 4;
    }
    (k, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hugepage::Allocator;
    use mempool::Mempool;
    use mempool::{ol_flags, ptype as pt, PoolConfig};

    /// Both builds of the fast run take the same frames and write the same fields; each stops at a frame error,
    /// a chain and a flag change of the memo where it must.
    #[test]
    fn the_fast_run_builds_agree_and_stop_where_they_must() {
        let pool =
            Mempool::new("rx-fast", &PoolConfig { size: 255, ..Default::default() }, &Allocator::no_huge()).unwrap();
        let run = |avx: bool| {
            let mut ring = vec![RxDesc::default(); 16];
            for (i, d) in ring.iter_mut().enumerate() {
                let ptype = if i < 9 { 24 } else { 26 };
                *d = RxDesc::writeback(60 + i as u16, ptype, Some(0x100 + i as u32), true, 0);
            }
            ring[13].qw1 |= rx::ERR_RXE;
            let mut shadow = vec![NonNull::dangling(); 16];
            assert!(pool.alloc_raw_bulk(&mut shadow));
            let rearm = pool.rx_rearm(7);
            for &h in &shadow {
                // SAFETY: fresh buffers of this pool that `shadow` owns.
                unsafe { rearm.apply(h) };
            }
            let mut out = vec![NonNull::dangling(); 16];
            let mut memo = RxMemo::of(0);
            // SAFETY: 16 descriptors, buffers and output slots; the buffers' data room is the pool's.
            let (n, bytes) = unsafe {
                if avx {
                    #[cfg(target_arch = "x86_64")]
                    {
                        rx_fast_run_avx(
                            ring.as_ptr(),
                            shadow.as_ptr(),
                            16,
                            out.as_mut_ptr(),
                            pool.data_room(),
                            &mut memo,
                        )
                    }
                    #[cfg(not(target_arch = "x86_64"))]
                    unreachable!()
                } else {
                    rx_fast_run(ring.as_ptr(), shadow.as_ptr(), 16, out.as_mut_ptr(), pool.data_room(), &mut memo)
                }
            };
            let got: Vec<(u32, u16, u64, u32, u32)> = out[..n]
                .iter()
                .map(|&p| {
                    // SAFETY: taken by the run: owned here.
                    let m = unsafe { Mbuf::from_raw(p) };
                    (m.pkt_len(), m.data_len(), m.ol_flags(), m.packet_type(), m.rss_hash())
                })
                .collect();
            // SAFETY: the slots not taken still own their buffers.
            unsafe { mempool::free_raw_bulk(&shadow[n..]) };
            (n, bytes, got)
        };
        let (n, bytes, got) = run(false);
        assert_eq!(n, 13, "stops at the frame error of descriptor 13");
        assert_eq!(bytes, (60..73).sum::<u64>());
        let udp = ol_flags::RX_RSS_HASH | ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_GOOD;
        assert_eq!(got[0], (60, 60, udp, pt::L2_ETHER | pt::L3_IPV4 | pt::L4_UDP, 0x100));
        assert_eq!(got[12].3, pt::L2_ETHER | pt::L3_IPV4 | pt::L4_TCP, "the memo follows the type change");
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx") {
            assert_eq!(run(true), (n, bytes, got));
        }
        assert!(pool.is_full());
    }
}
