//! The groups of the RX fast run on x86-64: four advanced write-backs per test, the Mbuf fields built with SSE2
//! shuffles (the engine builds this once for SSE2 and once for AVX), or eight per test with AVX2, two write-backs
//! per register (the AVX2 build). Elsewhere the engine takes every frame one at a time ([`super::rx_decode`]).

use std::mem::offset_of;

use drvkit::barrier::dma_rmb;
use ringkit::rx::{Isa, RxRun};

use super::rx_decode::{rx_csum_bits, rx_status, RxMemo, RX_INFO_KEY};
use super::Family;
use crate::desc::{rx, RxDesc, RxWriteback};

/// The groups of the build `I`: eight at a time with AVX2, then four (the run's rest); four at a time otherwise.
///
/// # Safety
/// As [`ringkit::RxFormat::groups`], and the CPU runs `I`.
#[inline(always)]
pub(super) unsafe fn rx_groups<F: Family, I: Isa>(run: RxRun<RxDesc>, m0: &RxMemo) -> (usize, u64) {
    if !I::AVX2 {
        // SAFETY: the caller's contract, passed on.
        return unsafe { rx_groups_sse2::<F>(run, m0) };
    }
    // SAFETY: the caller's contract; the CPU has AVX2 (I::AVX2).
    let (k, bytes) = unsafe { rx_groups_avx2::<F>(run, m0) };
    if run.n - k < 4 {
        return (k, bytes);
    }
    // The rest of the run (after the last group of eight, or from one that failed) in fours: a run of its own.
    // SAFETY: the first k entries were taken; the rest, k .. n, keep the caller's contract.
    let rest = unsafe {
        RxRun { wb: run.wb.add(k), shadow: run.shadow.add(k), out: run.out.add(k), n: run.n - k, max_len: run.max_len }
    };
    // SAFETY: as above.
    let (k4, bytes4) = unsafe { rx_groups_sse2::<F>(rest, m0) };
    (k + k4, bytes + bytes4)
}

/// Takes groups of four descriptors while each repeats the memo's flag key, and returns how many descriptors it
/// took (a multiple of four) and their bytes.
///
/// A group's four status dwords are read first (acquire loads) and tested together: DD, EOP, no MAC error, the
/// memo's checksum bits. Only then are the four descriptors read whole (16-byte loads), and their packet info
/// (the memo's key bits) and lengths (their OR bounds each one: at most `max_len`) tested together. The Mbuf
/// fields are then built with SSE2 shuffles, two 16-byte stores per buffer (`Mbuf::set_rx_blocks`), as
/// DPDK's vector path does: `[ol_flags, packet_type, pkt_len]` from the memo and the length, `[data_len, vlan_tci
/// = 0, rss_hash, tx_offload = 0]` from the descriptor's length and hash.
///
/// # Safety
/// As [`ringkit::RxFormat::groups`].
#[inline(always)]
pub(super) unsafe fn rx_groups_sse2<F: Family>(run: RxRun<RxDesc>, m0: &RxMemo) -> (usize, u64) {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cvtsi128_si32, _mm_load_si128, _mm_or_si128, _mm_set_epi32, _mm_set_epi64x,
        _mm_shuffle_epi32, _mm_xor_si128,
    };
    const FAST: u32 = rx::STAT_DD | rx::STAT_EOP;
    // Write-back dwords as vector lanes, and the length in its dword.
    const DW_INFO: i32 = (offset_of!(RxWriteback, pkt_info) / 4) as i32;
    const DW_RSS: i32 = (offset_of!(RxWriteback, rss_hash) / 4) as i32;
    const DW_LEN: i32 = (offset_of!(RxWriteback, length) / 4) as i32;
    const LEN: i32 = rx::LENGTH.mask() as i32;
    // The packet info is compared in lane 0 (`_mm_cvtsi128_si32` below).
    const { assert!(DW_INFO == 0) };
    // The status every descriptor of a group must have in `group_mask`, and the packet info in RX_INFO_KEY.
    let group_status = FAST | m0.key_status();
    let group_mask = FAST | F::RX_ERR_RXE | rx_csum_bits::<F>();
    let (d, max_len) = (run.wb.cast_const(), run.max_len);
    // Value operations on SSE2 (part of x86-64) registers: safe intrinsics on current compilers, `unsafe` on
    // older ones, hence the allowance.
    #[allow(unused_unsafe)]
    // SAFETY: no memory operands.
    let (info, template, m1, m2) = unsafe {
        (
            _mm_set_epi32(0, 0, 0, m0.key_info() as i32),
            // ol_flags, then packet_type and a zero pkt_len (filled from the length lane).
            _mm_set_epi64x(m0.ptype as i64, m0.flags as i64),
            // Of the shuffled descriptor [len|vlan, rss, info, len|vlan]: the length in the pkt_len lane ...
            _mm_set_epi32(LEN, 0, 0, 0),
            // ... and data_len (vlan cleared), rss_hash, zero tx_offload.
            _mm_set_epi32(0, 0, -1, LEN),
        )
    };
    // Shuffle: lanes (length|vlan, rss_hash, pkt_info, length|vlan) of the write-back.
    const SHUF: i32 = DW_LEN | DW_RSS << 2 | DW_INFO << 4 | DW_LEN << 6;
    let group = |k: usize| {
        // SAFETY: k + 3 < n (the skeleton's groups): inside the ring.
        let g = unsafe { d.add(k) };
        // SAFETY: as above.
        let (s0, s1, s2, s3) = unsafe { (rx_status(g), rx_status(g.add(1)), rx_status(g.add(2)), rx_status(g.add(3))) };
        if ((s0 ^ group_status) | (s1 ^ group_status) | (s2 ^ group_status) | (s3 ^ group_status)) & group_mask != 0 {
            return None;
        }
        dma_rmb();
        // SAFETY: DD was seen on all four (then dma_rmb): the device is done with them; descriptors are 16-byte
        // aligned.
        let dv: [__m128i; 4] = unsafe { std::array::from_fn(|j| _mm_load_si128(g.add(j).cast())) };
        #[allow(unused_unsafe)]
        // SAFETY: no memory operands.
        let (sv, info_diff, lens) = unsafe {
            let sv: [__m128i; 4] = std::array::from_fn(|j| _mm_shuffle_epi32::<SHUF>(dv[j]));
            let x = |j: usize| _mm_xor_si128(dv[j], info);
            let info_diff = _mm_or_si128(_mm_or_si128(x(0), x(1)), _mm_or_si128(x(2), x(3)));
            let lens = _mm_or_si128(_mm_or_si128(sv[0], sv[1]), _mm_or_si128(sv[2], sv[3]));
            (sv, _mm_cvtsi128_si32(info_diff) as u32, _mm_cvtsi128_si32(lens) as u16)
        };
        // The OR of the lengths bounds each of them, so one compare covers four (a false alarm only sends the
        // group down the one-at-a-time path).
        if info_diff & RX_INFO_KEY != 0 || lens > max_len {
            return None;
        }
        // [ol_flags, packet_type, pkt_len] and [data_len (vlan cleared), rss_hash, tx_offload 0]; pkt_len and
        // data_len both come from the length lane.
        #[allow(unused_unsafe)]
        // SAFETY: no memory operands.
        Some(std::array::from_fn(|j| unsafe {
            (_mm_or_si128(_mm_and_si128(sv[j], m1), template), _mm_and_si128(sv[j], m2))
        }))
    };
    // SAFETY: the caller's contract; `group` takes four descriptors with DD and EOP, no MAC error, the memo's flag
    // key and lengths of at most max_len, and gives their blocks.
    unsafe { run.simd_groups::<4>(group) }
}

/// [`rx_groups_sse2`] eight descriptors at a time, two per 256-bit register: the same tests and the same blocks
/// (built from the same named lanes), with half the vector operations per descriptor. The status dwords are read
/// first (acquire loads, all eight tested together), the descriptors whole only after them and [`dma_rmb`].
/// Returns how many it took (a multiple of eight) and their bytes.
///
/// # Safety
/// As [`ringkit::RxFormat::groups`], and the CPU has AVX2.
#[inline(always)]
unsafe fn rx_groups_avx2<F: Family>(run: RxRun<RxDesc>, m0: &RxMemo) -> (usize, u64) {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_and_si256, _mm256_castsi256_si128, _mm256_extracti128_si256, _mm256_loadu_si256,
        _mm256_or_si256, _mm256_set_epi32, _mm256_set_epi64x, _mm256_shuffle_epi32, _mm256_xor_si256,
        _mm_cvtsi128_si32, _mm_or_si128,
    };
    const FAST: u32 = rx::STAT_DD | rx::STAT_EOP;
    const DW_INFO: i32 = (offset_of!(RxWriteback, pkt_info) / 4) as i32;
    const DW_RSS: i32 = (offset_of!(RxWriteback, rss_hash) / 4) as i32;
    const DW_LEN: i32 = (offset_of!(RxWriteback, length) / 4) as i32;
    const LEN: i32 = rx::LENGTH.mask() as i32;
    const { assert!(DW_INFO == 0 && size_of::<RxDesc>() == 16) };
    const SHUF: i32 = DW_LEN | DW_RSS << 2 | DW_INFO << 4 | DW_LEN << 6;
    let group_status = FAST | m0.key_status();
    let group_mask = FAST | F::RX_ERR_RXE | rx_csum_bits::<F>();
    let (d, max_len) = (run.wb.cast_const(), run.max_len);
    // The SSE2 group's constants in both 128-bit halves (one descriptor each).
    // SAFETY: no memory operands; the CPU has AVX2 (the caller's contract).
    let (info, template, m1, m2) = unsafe {
        let k = m0.key_info() as i32;
        (
            _mm256_set_epi32(0, 0, 0, k, 0, 0, 0, k),
            _mm256_set_epi64x(m0.ptype as i64, m0.flags as i64, m0.ptype as i64, m0.flags as i64),
            _mm256_set_epi32(LEN, 0, 0, 0, LEN, 0, 0, 0),
            _mm256_set_epi32(0, 0, -1, LEN, 0, 0, -1, LEN),
        )
    };
    // Lane 0 of the two halves ORed.
    // SAFETY: no memory operands; AVX2 (the caller's contract).
    let fold = |v: __m256i| unsafe {
        _mm_cvtsi128_si32(_mm_or_si128(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v))) as u32
    };
    let group = |k: usize| {
        // SAFETY: k + 7 < n (the skeleton's groups): inside the ring.
        let g = unsafe { d.add(k) };
        // SAFETY: as above.
        let s: [u32; 8] = std::array::from_fn(|j| unsafe { rx_status(g.add(j)) });
        let diff = ((s[0] ^ group_status) | (s[1] ^ group_status))
            | ((s[2] ^ group_status) | (s[3] ^ group_status))
            | ((s[4] ^ group_status) | (s[5] ^ group_status))
            | ((s[6] ^ group_status) | (s[7] ^ group_status));
        if diff & group_mask != 0 {
            return None;
        }
        dma_rmb();
        // SAFETY: DD was seen on all eight (then dma_rmb): the device is done with them; two descriptors per load.
        let dv: [__m256i; 4] = std::array::from_fn(|j| unsafe { _mm256_loadu_si256(g.add(2 * j).cast()) });
        // SAFETY: no memory operands; AVX2.
        let (sv, info_diff, lens) = unsafe {
            let sv: [__m256i; 4] = std::array::from_fn(|j| _mm256_shuffle_epi32::<SHUF>(dv[j]));
            let x = |j: usize| _mm256_xor_si256(dv[j], info);
            let info_diff = _mm256_or_si256(_mm256_or_si256(x(0), x(1)), _mm256_or_si256(x(2), x(3)));
            let lens = _mm256_or_si256(_mm256_or_si256(sv[0], sv[1]), _mm256_or_si256(sv[2], sv[3]));
            (sv, fold(info_diff), fold(lens) as u16)
        };
        if info_diff & RX_INFO_KEY != 0 || lens > max_len {
            return None;
        }
        // SAFETY: no memory operands; AVX2.
        let blocks: [(__m256i, __m256i); 4] = std::array::from_fn(|j| unsafe {
            (_mm256_or_si256(_mm256_and_si256(sv[j], m1), template), _mm256_and_si256(sv[j], m2))
        });
        // Descriptor 2j in the low half of pair j, 2j + 1 in the high half.
        // SAFETY: no memory operands; AVX2.
        let half = |v: __m256i, hi: bool| -> __m128i {
            // SAFETY: no memory operands; AVX2.
            unsafe {
                if hi {
                    _mm256_extracti128_si256::<1>(v)
                } else {
                    _mm256_castsi256_si128(v)
                }
            }
        };
        Some(std::array::from_fn(|i| {
            let (b1, b2) = blocks[i / 2];
            (half(b1, i % 2 == 1), half(b2, i % 2 == 1))
        }))
    };
    // SAFETY: the caller's contract; `group` takes eight descriptors with DD and EOP, no MAC error, the memo's flag
    // key and lengths of at most max_len, and gives their blocks.
    unsafe { run.simd_groups::<8>(group) }
}
