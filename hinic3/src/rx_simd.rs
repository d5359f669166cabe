//! The four-at-a-time part of the RX fast run (docs/hw/hinic3.md §10.5): groups of four CQEs that each repeat the
//! memo's status and offload word with a length of 1 to the buffer size, tested with one branch per group and the Mbuf
//! RX blocks built with SIMD from each CQE's first 16 bytes: an SSE2 build, and an AVX build (three-operand forms,
//! SSSE3 byte shuffles, one atomic 16-byte load per CQE) chosen at ring creation. Elsewhere (aarch64) no groups are
//! taken and the scalar loop of `RxRing::fast_run` does every entry.

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
    avx: bool,
) -> (usize, u64) {
    if avx {
        // SAFETY: the caller's contract, passed on; `avx` says the CPU has AVX (checked at ring creation).
        unsafe { rx_groups_avx(cqes, shadow, n, out, buf_len, memo) }
    } else {
        // SAFETY: the caller's contract, passed on.
        unsafe { rx_groups_sse2(cqes, shadow, n, out, buf_len, memo) }
    }
}

/// [`rx_groups`] for SSE2 (every x86-64 CPU).
///
/// # Safety
/// As [`rx_groups`].
#[cfg(target_arch = "x86_64")]
#[inline(never)]
unsafe fn rx_groups_sse2(
    cqes: *mut u32,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    buf_len: u32,
    memo: &Memo,
) -> (usize, u64) {
    // SAFETY: the caller's contract, passed on.
    unsafe { rx_groups_body::<false>(cqes, shadow, n, out, buf_len, memo) }
}

/// [`rx_groups`] compiled for AVX.
///
/// # Safety
/// As [`rx_groups`], and the CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
#[inline(never)]
unsafe fn rx_groups_avx(
    cqes: *mut u32,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    buf_len: u32,
    memo: &Memo,
) -> (usize, u64) {
    // SAFETY: the caller's contract, passed on.
    unsafe { rx_groups_body::<true>(cqes, shadow, n, out, buf_len, memo) }
}

/// The body of [`rx_groups`], built for SSE2 and for AVX.
///
/// # Safety
/// As [`rx_groups`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn rx_groups_body<const AVX: bool>(
    cqes: *mut u32,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    buf_len: u32,
    memo: &Memo,
) -> (usize, u64) {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi32, _mm_cmpeq_epi8, _mm_cvtsi128_si32, _mm_load_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_set_epi16, _mm_set_epi32, _mm_set_epi64x, _mm_set_epi8, _mm_setzero_si128, _mm_shuffle_epi32,
        _mm_shuffle_epi8, _mm_srli_epi64, _mm_srli_si128, _mm_sub_epi16, _mm_subs_epu16, _mm_unpacklo_epi32,
    };
    use std::mem::ManuallyDrop;

    use mempool::Mbuf;
    use std::sync::atomic::{AtomicU32, Ordering};

    use crate::desc::cqe;
    use drvkit::barrier::dma_rmb;

    // The CQE's first 16 bytes as eight 16-bit words: 0-1 status, 2 VLAN, 3 length, 4-5 offload word, 6-7 RSS hash.
    const _: () = assert!(cqe::VLAN.lo == 0 && cqe::LEN.lo == 16 && cqe::LEN.width == 16);
    // After a 48-bit right shift of each qword: 32-bit lane 0 the length, lane 1 zero (lanes 2 and 3: the hash's high
    // half, zero).
    const LEN_SHIFT: i32 = 48;
    // pkt_len (lane 3) from the length lane, lanes 0 to 2 from the zero lane.
    const LEN_TO_LANE3: i32 = 0b00_01_01_01;
    // The same with byte shuffles (AVX build): the length is CQE bytes 6 and 7, the hash bytes 12 to 15; -128 zeroes.
    const Z: i8 = -128;

    let (status, offload) = (memo.status, memo.offload);
    #[allow(unused_unsafe)]
    // SAFETY: no memory operands.
    let (to_b1, to_b2) = unsafe {
        (
            // pkt_len (bytes 12 to 15) the length, the rest 0.
            _mm_set_epi8(Z, Z, 7, 6, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z, Z),
            // data_len the length, vlan_tci 0, rss_hash the hash, tx_offload 0.
            _mm_set_epi8(Z, Z, Z, Z, Z, Z, Z, Z, 15, 14, 13, 12, Z, Z, 7, 6),
        )
    };
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
        // The SSE2 build reads the status dwords first, with acquire order (docs/hw/hinic3.md §10.6: the rest of a CQE
        // is valid once its done bit is), then the CQEs. The AVX build reads each CQE's first 16 bytes in one aligned
        // load, which CPUs with AVX perform atomically (Intel SDM vol. 3, "guaranteed atomic operations"; AMD APM
        // vol. 2, "access atomicity"): its status and the rest come from one snapshot, and the status test below
        // includes the done bit.
        if !AVX {
            // SAFETY: k + 3 < n: status dwords of the CQE array, which the device writes (atomic view).
            let done = unsafe {
                let st = |j: usize| AtomicU32::from_ptr(cqes.add((k + j) * 8)).load(Ordering::Acquire);
                st(0) & st(1) & st(2) & st(3)
            };
            if done & cqe::DONE == 0 {
                break;
            }
            dma_rmb();
        }
        // SAFETY: k + 3 < n: CQEs of the array, 32-byte aligned; read as said above.
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
            // SAFETY: no memory operands; the SSSE3 byte shuffle only in the AVX build, which runs only on CPUs with
            // AVX (and so SSSE3; checked at ring creation).
            let (b1, b2) = unsafe {
                // [ol_flags, packet_type, pkt_len] and [data_len, vlan_tci 0, rss_hash, tx_offload 0].
                if AVX {
                    (_mm_or_si128(template, _mm_shuffle_epi8(v, to_b1)), _mm_shuffle_epi8(v, to_b2))
                } else {
                    let t = _mm_srli_epi64::<LEN_SHIFT>(v);
                    (
                        _mm_or_si128(template, _mm_shuffle_epi32::<LEN_TO_LANE3>(t)),
                        _mm_unpacklo_epi32(t, _mm_srli_si128::<12>(v)),
                    )
                }
            };
            // SAFETY: no memory operands. The length is lane 0 of the second block.
            sum = unsafe { _mm_add_epi32(sum, b2) };
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
    _avx: bool,
) -> (usize, u64) {
    (0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desc::{cqe, RxCqe};
    use hugepage::Allocator;
    use mempool::{Mbuf, Mempool, PoolConfig};

    const BUF: u32 = 2048;

    /// Runs the groups (SSE2 or AVX build) over 16 CQEs: how many they took, their bytes, the fields of each taken
    /// buffer (pkt_len, data_len, ol_flags, packet_type, rss_hash, vlan_tci) and the status dwords afterwards.
    #[allow(clippy::type_complexity)]
    fn run(
        cqes: &mut [RxCqe; 16],
        memo: &Memo,
        avx: bool,
    ) -> (usize, u64, Vec<(u32, u16, u64, u32, u32, u16)>, Vec<u32>) {
        // Pool names are global and tests run in parallel: a name of its own.
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let name = format!("hinic3-rx-groups-{}", N.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let pool = Mempool::new(&name, &PoolConfig { size: 63, ..Default::default() }, &Allocator::no_huge()).unwrap();
        assert!(pool.data_room() as u32 >= BUF);
        let mut shadow = vec![NonNull::dangling(); 16];
        assert!(pool.alloc_raw_bulk(&mut shadow));
        let rearm = pool.rx_rearm(3);
        for &h in &shadow {
            // SAFETY: fresh buffers of this pool that `shadow` owns.
            unsafe { rearm.apply(h) };
        }
        let mut out = vec![NonNull::dangling(); 16];
        // SAFETY: 16 CQEs, buffers and output slots; the data room is at least BUF.
        let (n, bytes) =
            unsafe { rx_groups(cqes.as_mut_ptr().cast(), shadow.as_ptr(), 16, out.as_mut_ptr(), BUF, memo, avx) };
        assert_eq!(n % 4, 0);
        let got = out[..n]
            .iter()
            .map(|&p| {
                // SAFETY: taken by the groups: owned here.
                let m = unsafe { Mbuf::from_raw(p) };
                (m.pkt_len(), m.data_len(), m.ol_flags(), m.packet_type(), m.rss_hash(), m.vlan_tci())
            })
            .collect();
        // SAFETY: the slots not taken still own their buffers.
        unsafe { mempool::free_raw_bulk(&shadow[n..]) };
        (n, bytes, got, cqes.iter().map(|c| c.0[0]).collect())
    }

    /// The builds to check: SSE2 always, AVX where the CPU has it (elsewhere no groups are taken).
    fn builds() -> Vec<bool> {
        if cfg!(target_arch = "x86_64") {
            if ringkit::cpu_has_avx() {
                vec![false, true]
            } else {
                vec![false]
            }
        } else {
            vec![false]
        }
    }

    fn ring() -> ([RxCqe; 16], Memo) {
        let offload = cqe::PKT_TYPE.val(cqe::PKT_UDP) | cqe::RSS_TYPE.val(1);
        let cqes = std::array::from_fn(|i| RxCqe::done(60 + i as u16, 0, offload, 0x100 + i as u32));
        (cqes, Memo::of(cqe::DONE, offload))
    }

    #[test]
    fn groups_write_every_rx_field_and_clear_the_done_bits_they_take() {
        for avx in builds() {
            let (mut cqes, memo) = ring();
            cqes[15].0[1] = cqe::LEN.val(BUF);
            let (n, bytes, got, status) = run(&mut cqes, &memo, avx);
            if !cfg!(target_arch = "x86_64") {
                assert_eq!(n, 0, "no groups without SSE2");
                continue;
            }
            assert_eq!(n, 16, "avx {avx}: a length of exactly the buffer size is taken");
            assert_eq!(bytes, (60..75).sum::<u64>() + BUF as u64);
            for (i, g) in got.iter().enumerate() {
                let len = if i == 15 { BUF } else { 60 + i as u32 };
                assert_eq!(*g, (len, len as u16, memo.flags, memo.ptype, 0x100 + i as u32, 0), "avx {avx} entry {i}");
            }
            assert!(status.iter().all(|&s| s == 0), "avx {avx}: done bits cleared");
        }
    }

    #[test]
    fn groups_stop_before_the_group_of_an_odd_entry() {
        type Odd = (&'static str, fn(&mut RxCqe));
        let odd: [Odd; 7] = [
            ("not done", |c| c.0[0] = 0),
            ("flushed", |c| c.0[0] |= cqe::FLUSH),
            ("LRO", |c| c.0[0] |= cqe::NUM_LRO.val(2)),
            ("checksum error", |c| c.0[0] |= cqe::CSUM_ERR_IP),
            ("empty", |c| c.0[1] = 0),
            ("longer than a buffer", |c| c.0[1] = cqe::LEN.val(BUF + 1)),
            ("VLAN stripped", |c| c.0[2] |= cqe::VLAN_STRIPPED),
        ];
        for avx in builds() {
            for (what, make) in odd {
                let (mut cqes, memo) = ring();
                make(&mut cqes[6]);
                let before: Vec<u32> = cqes.iter().map(|c| c.0[0]).collect();
                let (n, bytes, _, status) = run(&mut cqes, &memo, avx);
                let want = if cfg!(target_arch = "x86_64") { 4 } else { 0 };
                assert_eq!(n, want, "avx {avx}: {what} at entry 6");
                assert_eq!(bytes, (60..60 + want as u64).sum::<u64>());
                assert_eq!(status[n..], before[n..], "avx {avx}: {what}: entries not taken keep their status");
            }
        }
    }
}
