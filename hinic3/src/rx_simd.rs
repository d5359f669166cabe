//! The four-at-a-time part of the RX fast run (docs/hw/hinic3.md §10.5): groups of four CQEs that each repeat the
//! memo's status and offload word with a length of 1 to the buffer size, tested with one branch per group and the Mbuf
//! RX blocks built with SSE2 from each CQE's first 16 bytes. Elsewhere (aarch64) no groups are taken and the scalar
//! loop of `RxRing::fast_run` does every entry.

use std::ptr::NonNull;

use mempool::MbufHeader;

use crate::rx::Memo;

/// Takes groups of four completed single-buffer frames among the `n` CQEs at `cqes` (8 dwords each) while each
/// repeats the memo's status (so done, not flushed, no LRO) and offload word with a length of 1 to `buf_len`;
/// writes each buffer's RX fields, moves it from `shadow[k]` to `out[k]` and clears its done bit. Returns how many
/// it took (a multiple of four) and their bytes.
///
/// # Safety
/// `cqes`, `shadow` and `out` valid for `n` entries; the shadow entries own buffers posted with the rearm word, whose
/// data room is at least `buf_len` (at most 16384, a size of the buffer table); the CQEs are memory the device may
/// write.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn rx_groups(
    cqes: *mut u32,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    buf_len: u32,
    memo: &Memo,
) -> (usize, u64) {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi32, _mm_cmpeq_epi8, _mm_cvtsi128_si32, _mm_load_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_set_epi16, _mm_set_epi32, _mm_set_epi64x, _mm_setzero_si128, _mm_shuffle_epi32, _mm_srli_epi64,
        _mm_srli_si128, _mm_sub_epi16, _mm_subs_epu16, _mm_unpacklo_epi32,
    };
    use std::mem::ManuallyDrop;

    use mempool::Mbuf;
    use std::sync::atomic::{AtomicU32, Ordering};

    use crate::desc::cqe;
    use pktio::barrier::dma_rmb;

    // The CQE's first 16 bytes as eight 16-bit words: 0-1 status, 2 VLAN, 3 length, 4-5 offload word, 6-7 RSS hash.
    const _: () = assert!(cqe::VLAN.lo == 0 && cqe::LEN.lo == 16 && cqe::LEN.width == 16);
    // After a 48-bit right shift of each qword: 32-bit lane 0 the length, lane 1 zero (lanes 2 and 3: the hash's high
    // half, zero).
    const LEN_SHIFT: i32 = 48;
    // pkt_len (lane 3) from the length lane, lanes 0 to 2 from the zero lane.
    const LEN_TO_LANE3: i32 = 0b00_01_01_01;

    let (status, offload) = (memo.status, memo.offload);
    #[allow(unused_unsafe)]
    // SAFETY: no memory operands.
    let (want, limit, template, zero) = unsafe {
        (
            // Subtracted word by word: 0 where the CQE matches; the length word becomes length − 1 (wrapping).
            _mm_set_epi32(0, offload as i32, 1 << 16, status as i32),
            // Then a saturating subtraction of this: the status and offload words stay as they were (non-zero on a
            // mismatch), the VLAN and hash words become 0, and length − 1 is non-zero past buf_len − 1 (a length of
            // 0 wrapped to 0xFFFF included).
            _mm_set_epi16(-1, -1, 0, 0, (buf_len - 1) as u16 as i16, -1, 0, 0),
            // ol_flags, packet_type; pkt_len comes from the CQE.
            _mm_set_epi64x(memo.ptype as i64, memo.flags as i64),
            _mm_setzero_si128(),
        )
    };
    let mut sum = zero;
    let mut k = 0;
    let end = n & !3;
    while k != end {
        // SAFETY: k + 3 < n: CQEs of the array; the status dwords first, with acquire order (docs/hw/hinic3.md §10.6:
        // the rest of a CQE is valid once its done bit is).
        let done = unsafe {
            let st = |j: usize| AtomicU32::from_ptr(cqes.add((k + j) * 8)).load(Ordering::Acquire);
            st(0) & st(1) & st(2) & st(3)
        };
        if done & cqe::DONE == 0 {
            break;
        }
        dma_rmb();
        // SAFETY: done bits seen (then dma_rmb); CQEs are 32-byte aligned.
        let v: [__m128i; 4] = unsafe { std::array::from_fn(|j| _mm_load_si128(cqes.add((k + j) * 8).cast())) };
        #[allow(unused_unsafe)]
        // SAFETY: no memory operands.
        let odd = unsafe {
            let bad = |v| _mm_subs_epu16(_mm_sub_epi16(v, want), limit);
            let acc = _mm_or_si128(_mm_or_si128(bad(v[0]), bad(v[1])), _mm_or_si128(bad(v[2]), bad(v[3])));
            _mm_movemask_epi8(_mm_cmpeq_epi8(acc, zero)) != 0xFFFF
        };
        if odd {
            break;
        }
        for (j, &v) in v.iter().enumerate() {
            #[allow(unused_unsafe)]
            // SAFETY: no memory operands.
            let (b1, b2, len) = unsafe {
                let t = _mm_srli_epi64::<LEN_SHIFT>(v);
                // [ol_flags, packet_type, pkt_len] and [data_len, vlan_tci 0, rss_hash, tx_offload 0].
                let b1 = _mm_or_si128(template, _mm_shuffle_epi32::<LEN_TO_LANE3>(t));
                let b2 = _mm_unpacklo_epi32(t, _mm_srli_si128::<12>(v));
                (b1, b2, t)
            };
            // SAFETY: no memory operands.
            sum = unsafe { _mm_add_epi32(sum, len) };
            // SAFETY: slot k + j owns a buffer posted with the rearm word, a single segment; its length is 1 to
            // buf_len (checked), within its data room; pkt_len = data_len. Ownership moves to out[k + j]; then the
            // driver clears the done bit (docs/hw/hinic3.md §10.6 step 3).
            unsafe {
                let p = *shadow.add(k + j);
                ManuallyDrop::new(Mbuf::from_raw(p)).set_rx_blocks(b1, b2);
                out.add(k + j).write(p);
                cqes.add((k + j) * 8).write_volatile(0);
            }
        }
        k += 4;
    }
    #[allow(unused_unsafe)]
    // SAFETY: no memory operands.
    let bytes = unsafe { _mm_cvtsi128_si32(sum) } as u32 as u64;
    (k, bytes)
}

/// Without SSE2 no groups are taken: the scalar loop of the fast run does every entry.
///
/// # Safety
/// None needed; kept `unsafe` to match the x86-64 build.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) unsafe fn rx_groups(
    _cqes: *mut u32,
    _shadow: *const NonNull<MbufHeader>,
    _n: usize,
    _out: *mut NonNull<MbufHeader>,
    _buf_len: u32,
    _memo: &Memo,
) -> (usize, u64) {
    (0, 0)
}
