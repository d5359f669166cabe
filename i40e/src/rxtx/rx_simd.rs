//! The groups of the RX fast run on x86-64 (docs/hw/i40e.md §10.2): four common frames per test (one descriptor, DD
//! and EOF, no frame error, a length within the buffer) while they repeat the memo's flag bits, the Mbuf RX fields
//! built with SSE2 shuffles (the engine builds this once for SSE2, once for AVX and once for AVX2; the 32-byte
//! descriptors keep groups of four in all of them). The aarch64 groups are in `rx_neon`.

use drvkit::barrier::dma_rmb;
use drvkit::reg::Field64;
use ringkit::rx::{Isa, RxRun};

use super::rx_decode::{rx_qw1, RxMemo, FAST, FAST_MASK, KEY};
use crate::desc::{rx, RxDesc};

/// qword-1 bits above the length: the header length and SPH, zero without header split. The fast path requires
/// them zero, so that the length and what is above it, read as one field, is the length alone.
const ABOVE_LEN: u64 = rx::LENGTH_HBUF.mask() | rx::SPH;
const _: () = assert!(ABOVE_LEN == Field64::new(63, rx::LENGTH_PBUF.lo + rx::LENGTH_PBUF.width).mask());
/// The length and every bit above it.
const LEN_AND_ABOVE: Field64 = Field64::new(63, rx::LENGTH_PBUF.lo);

/// The groups of four, on the engine's skeleton ([`RxRun::simd_groups`]): takes groups of four descriptors while
/// each repeats the memo's flag bits, builds each buffer's two RX blocks with SSE2 from the descriptor (`[ol_flags,
/// packet_type, pkt_len]` from the memo and the length, `[data_len, vlan_tci = 0, rss_hash, tx_offload = 0]` from
/// the length and qword 0's high half).
///
/// # Safety
/// As [`ringkit::RxFormat::groups`], and the CPU runs `I`.
#[inline(always)]
pub(super) unsafe fn rx_groups<I: Isa>(run: RxRun<RxDesc>, m0: &RxMemo) -> (usize, u64) {
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
