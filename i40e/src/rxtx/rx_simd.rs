//! The groups of the RX fast run (docs/hw/i40e.md §10.2): four common frames per test (one descriptor, DD and EOF,
//! no frame error, a length within the buffer) while they repeat the memo's flag bits, the Mbuf RX fields built with
//! SSE2 shuffles on x86-64 (the engine builds this once for SSE2 and once for AVX), plain code elsewhere.

#[cfg(not(target_arch = "x86_64"))]
use std::mem::ManuallyDrop;

use drvkit::barrier::dma_rmb;
#[cfg(target_arch = "x86_64")]
use drvkit::reg::Field64;
#[cfg(not(target_arch = "x86_64"))]
use mempool::Mbuf;
use ringkit::rx::{Isa, RxRun};

use super::rx_decode::{rx_qw1, RxMemo, FAST, FAST_MASK, KEY};
use crate::desc::{rx, RxDesc};

/// qword-1 bits above the length: the header length and SPH, zero without header split. The fast path requires
/// them zero, so that the length and what is above it, read as one field, is the length alone.
#[cfg(target_arch = "x86_64")]
const ABOVE_LEN: u64 = Field64::new(63, rx::LENGTH_PBUF.lo + rx::LENGTH_PBUF.width).mask();
/// The length and every bit above it.
#[cfg(target_arch = "x86_64")]
const LEN_AND_ABOVE: Field64 = Field64::new(63, rx::LENGTH_PBUF.lo);

/// The groups of four of the fast run: SSE2 (with an SSE4.1 blend in the AVX build) on x86-64, plain code
/// elsewhere.
///
/// # Safety
/// As [`ringkit::RxFormat::groups`].
#[inline(always)]
pub(super) unsafe fn rx_groups<I: Isa>(run: RxRun<RxDesc>, m0: &RxMemo) -> (usize, u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's contract, passed on.
    return unsafe { rx_groups_sse2::<I>(run, m0) };
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's contract, passed on.
    return unsafe { rx_groups_scalar(run, m0) };
}

/// The groups on x86-64, on the engine's skeleton ([`RxRun::simd_groups`]): takes groups of four descriptors while
/// each repeats the memo's flag bits, builds each buffer's two RX blocks with SSE2 from the descriptor (`[ol_flags,
/// packet_type, pkt_len]` from the memo and the length, `[data_len, vlan_tci = 0, rss_hash, tx_offload = 0]` from
/// the length and qword 0's high half).
///
/// # Safety
/// As [`rx_groups`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn rx_groups_sse2<I: Isa>(run: RxRun<RxDesc>, m0: &RxMemo) -> (usize, u64) {
    use std::arch::x86_64::{
        _mm_and_si128, _mm_blend_epi16, _mm_load_si128, _mm_or_si128, _mm_set_epi32, _mm_set_epi64x, _mm_shuffle_epi32,
        _mm_srli_epi64,
    };
    const MASK: u64 = FAST_MASK | KEY | ABOVE_LEN;
    const LEN_SHIFT: i32 = rx::LENGTH_PBUF.lo as i32;
    // After the shift, the length is 32-bit lane 2 and lane 3 is zero: lane 0 <- 2, the rest <- 3 ...
    const LEN_TO_LANE0: i32 = 0b11_11_11_10;
    // ... or lane 3 <- 2, the rest <- 3.
    const LEN_TO_LANE3: i32 = 0b10_11_11_11;
    let want = FAST | m0.key;
    let (d, max_len) = (run.wb.cast_const(), run.max_len as u64);
    #[allow(unused_unsafe)]
    // SAFETY: no memory operands.
    let (template, rss_lane) =
        unsafe { (_mm_set_epi64x(m0.ptype as i64, m0.flags as i64), _mm_set_epi32(0, 0, -1, 0)) };
    let group = |k: usize| {
        // SAFETY: k + 3 < n (the skeleton's groups): inside the ring.
        let (q0, q1, q2, q3) =
            unsafe { (rx_qw1(d.add(k)), rx_qw1(d.add(k + 1)), rx_qw1(d.add(k + 2)), rx_qw1(d.add(k + 3))) };
        if ((q0 ^ want) | (q1 ^ want) | (q2 ^ want) | (q3 ^ want)) & MASK != 0 {
            return None;
        }
        // Nothing above the lengths (checked): the OR of the words bounds each length.
        if LEN_AND_ABOVE.get(q0 | q1 | q2 | q3) > max_len {
            return None;
        }
        dma_rmb();
        Some(std::array::from_fn(|j| {
            // SAFETY: DD seen on this descriptor (then dma_rmb); descriptors are 32-byte aligned.
            let v = unsafe { _mm_load_si128(d.add(k + j).cast()) };
            #[allow(unused_unsafe)]
            // SAFETY: no memory operands; the SSE4.1 blend only in the AVX instantiation, which runs only on CPUs with
            // AVX (and so SSE4.1; checked at ring creation).
            unsafe {
                let t = _mm_srli_epi64::<LEN_SHIFT>(v);
                let len = _mm_shuffle_epi32::<LEN_TO_LANE0>(t);
                // The RSS hash (32-bit lane 1) from the descriptor, the rest from the length lane: one SSE4.1
                // blend of the 16-bit words 2 and 3 in the AVX build, an AND and an OR otherwise.
                let b2 = if I::AVX {
                    _mm_blend_epi16::<0b0000_1100>(len, v)
                } else {
                    _mm_or_si128(len, _mm_and_si128(v, rss_lane))
                };
                (_mm_or_si128(template, _mm_shuffle_epi32::<LEN_TO_LANE3>(t)), b2)
            }
        }))
    };
    // SAFETY: the caller's contract; `group` takes four descriptors with DD and EOF, no frame error, the memo's flag
    // bits and lengths of at most max_len, and gives their blocks (pkt_len and data_len both the length).
    unsafe { run.simd_groups::<4>(group) }
}

/// The groups without SIMD.
///
/// # Safety
/// As [`rx_groups`].
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn rx_groups_scalar(run: RxRun<RxDesc>, m0: &RxMemo) -> (usize, u64) {
    let RxRun { wb: d, shadow, out, n, max_len } = run;
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
    use super::super::rx_decode::Desc32;
    use super::*;
    use hugepage::Allocator;
    use mempool::{ol_flags, ptype as pt, PoolConfig};
    use mempool::{Mbuf, Mempool};
    use ringkit::rx::{fast_run, IsaLevel};
    use std::ptr::NonNull;

    /// Both builds of the fast run (the engine's skeleton over this format) take the same frames and write the same
    /// fields; each stops at a frame error, a chain and a flag change of the memo where it must.
    #[test]
    fn the_fast_run_builds_agree_and_stop_where_they_must() {
        let pool =
            Mempool::new("rx-fast", &PoolConfig { size: 255, ..Default::default() }, &Allocator::no_huge()).unwrap();
        let run = |isa: IsaLevel| {
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
            let run = RxRun {
                wb: ring.as_mut_ptr(),
                shadow: shadow.as_ptr(),
                out: out.as_mut_ptr(),
                n: 16,
                max_len: pool.data_room(),
            };
            // SAFETY: 16 descriptors, buffers and output slots; the buffers' data room is the pool's; a build the CPU
            // runs (the caller takes them from IsaLevel::supported).
            let (n, bytes) = unsafe { fast_run(&Desc32, isa, run, &mut memo) };
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
        let (n, bytes, got) = run(IsaLevel::Base);
        assert_eq!(n, 13, "stops at the frame error of descriptor 13");
        assert_eq!(bytes, (60..73).sum::<u64>());
        let udp = ol_flags::RX_RSS_HASH | ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_GOOD;
        assert_eq!(got[0], (60, 60, udp, pt::L2_ETHER | pt::L3_IPV4 | pt::L4_UDP, 0x100));
        assert_eq!(got[12].3, pt::L2_ETHER | pt::L3_IPV4 | pt::L4_TCP, "the memo follows the type change");
        for isa in IsaLevel::supported() {
            assert_eq!(run(isa), (n, bytes, got.clone()), "build {isa:?}");
        }
        assert!(pool.is_full());
    }
}
