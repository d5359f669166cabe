//! The groups of the RX fast run on x86-64: four advanced write-backs per test, the Mbuf fields built with SSE2
//! shuffles (the engine builds this once for SSE2 and once for AVX). Elsewhere the engine takes every frame one at a
//! time ([`super::rx_decode`]).

use std::mem::offset_of;

use drvkit::barrier::dma_rmb;
use ringkit::rx::RxRun;

use super::rx_decode::{rx_csum_bits, rx_status, RxMemo, RX_INFO_KEY};
use super::Family;
use crate::desc::{rx, RxDesc, RxWriteback};

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
