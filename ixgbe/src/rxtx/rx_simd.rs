//! The RX fast run: the leading run of common frames of a burst, four descriptors at a time with SSE2 shuffles
//! into the Mbuf fields on x86-64 (built a second time for AVX), one at a time elsewhere and at the run's end.

use std::mem::offset_of;
#[cfg(target_arch = "x86_64")]
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use drvkit::barrier::dma_rmb;
use mempool::{Mbuf, MbufHeader};

#[cfg(target_arch = "x86_64")]
use super::rx_flags::{rx_csum_bits, RX_INFO_KEY};
use super::rx_flags::{rx_flags, udp_zero_csum_error, RxMemo};
use super::Family;
use crate::desc::{rx, RxDesc, RxWriteback};

/// Reads the status dword of a descriptor the device may be writing (an atomic acquire load: the rest of the
/// descriptor is read only after DD was seen, and [`dma_rmb`]).
///
/// # Safety
/// `d` must point into ring memory that lives as long as the call.
#[inline(always)]
unsafe fn rx_status(d: *const RxDesc) -> u32 {
    // SAFETY: an aligned dword of the ring memory (caller's contract).
    unsafe { AtomicU32::from_ptr(RxDesc::status_ptr(d).cast_mut()).load(Ordering::Acquire) }
}

/// Write-back dword 0-1 (packet info, RSS hash) and the length of a descriptor whose DD was seen.
///
/// # Safety
/// `d` must point into ring memory, and its DD must have been seen (then [`dma_rmb`]).
#[inline(always)]
unsafe fn rx_info_len(d: *const RxDesc) -> (u64, u16) {
    // SAFETY: the caller's contract: the device is done with this descriptor. Fields read one by one.
    unsafe {
        (
            std::ptr::addr_of!((*d).qw0).read_volatile(),
            d.cast::<u8>().add(offset_of!(RxWriteback, length)).cast::<u16>().read_volatile(),
        )
    }
}

/// Receives the leading run of common frames among the `n` descriptors at `d`: each one descriptor with DD and
/// EOP, no MAC error, a length that fits the buffer, and not a UDP zero-checksum error ([`udp_zero_csum_error`],
/// whose flags depend on the queue; checked only on a flag-key miss). Each such frame's buffer (from `shadow`, same index)
/// gets its metadata and is written to `out` (same index). Stops at the first other descriptor; returns how many
/// it took and their bytes.
///
/// Four descriptors at a time ([`rx_groups_sse2`] on x86-64) while they repeat the memo's flag key (the common
/// case: one traffic class per burst); from the first group that does not, one descriptor at a time to the end
/// of the run, which updates the memo for the next burst.
///
/// Kept out of line so that its loop has the registers to itself.
///
/// # Safety
/// `d`, `shadow` and `out` must be valid for `n` entries; the shadow entries must be owned buffers posted with
/// the ring's rearm word, whose data room is at least `max_len` (ownership of those taken moves to `out`); the
/// descriptors must be ring memory the device may write (read here with the DD-then-rest protocol).
#[inline(never)]
pub(super) unsafe fn rx_fast_run<F: Family>(
    d: *const RxDesc,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    memo: &mut RxMemo,
) -> (usize, u64) {
    // SAFETY: the caller's contract, passed on.
    unsafe { rx_fast_run_body::<F>(d, shadow, n, out, max_len, memo) }
}

/// [`rx_fast_run`] compiled for AVX: the same code, but the SSE2 intrinsics of the groups get the VEX
/// three-operand forms (no register copies before the destructive two-operand ones: about ten per group of four).
/// Called when the CPU has AVX ([`super::RxRing`] checks once, at creation).
///
/// # Safety
/// As [`rx_fast_run`], and the CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
#[inline(never)]
pub(super) unsafe fn rx_fast_run_avx<F: Family>(
    d: *const RxDesc,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    memo: &mut RxMemo,
) -> (usize, u64) {
    // SAFETY: the caller's contract, passed on.
    unsafe { rx_fast_run_body::<F>(d, shadow, n, out, max_len, memo) }
}

/// The body of [`rx_fast_run`] and [`rx_fast_run_avx`].
///
/// # Safety
/// As [`rx_fast_run`].
#[inline(always)]
unsafe fn rx_fast_run_body<F: Family>(
    d: *const RxDesc,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    memo: &mut RxMemo,
) -> (usize, u64) {
    const FAST: u32 = rx::STAT_DD | rx::STAT_EOP;
    let mask = FAST | F::RX_ERR_RXE;
    let mut m0 = *memo;
    // Groups of four while they repeat the memo (x86-64: SSE2), then one at a time to the end of the run.
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's contract, passed on.
    let (mut k, mut bytes) = unsafe { rx_groups_sse2::<F>(d, shadow, n, out, max_len, &m0) };
    #[cfg(not(target_arch = "x86_64"))]
    let (mut k, mut bytes) = (0usize, 0u64);
    while k < n {
        // SAFETY: k < n: inside the ring.
        let dk = unsafe { d.add(k) };
        // SAFETY: ring memory.
        let st = unsafe { rx_status(dk) };
        if st & mask != FAST {
            break;
        }
        dma_rmb();
        // SAFETY: DD is set: the device is done with this descriptor.
        let (qw0, len) = unsafe { rx_info_len(dk) };
        if len > max_len {
            break;
        }
        let info = RxDesc::pkt_info_of(qw0);
        let key = RxMemo::key::<F>(info, st);
        if key != m0.key {
            if udp_zero_csum_error::<F>(info, st) {
                // Its flags depend on the queue (the 82599's errata): the slow path knows it.
                break;
            }
            let (flags, ptype) = rx_flags::<F>(info, st, false);
            m0 = RxMemo { key, flags, ptype };
        }
        // SAFETY: k < n; the caller's contract: an owned buffer posted with the rearm word, whose ownership
        // moves to `out[k]`.
        let mut m = unsafe { Mbuf::from_raw(*shadow.add(k)) };
        // SAFETY: len <= max_len, within the data room of a single segment.
        unsafe { m.set_rx_unchecked(len, m0.flags, m0.ptype, RxDesc::rss_hash_of(qw0)) };
        // SAFETY: k < n.
        unsafe { out.add(k).write(m.into_raw()) };
        bytes += len as u64;
        k += 1;
    }
    *memo = m0;
    (k, bytes)
}

/// The four-at-a-time part of [`rx_fast_run`]: takes groups of four descriptors while each repeats the memo's
/// flag key, and returns how many descriptors it took (a multiple of four) and their bytes.
///
/// A group's four status dwords are read first (acquire loads) and tested together: DD, EOP, no MAC error, the
/// memo's checksum bits. Only then are the four descriptors read whole (16-byte loads), and their packet info
/// (the memo's key bits) and lengths (their OR bounds each one: at most `max_len`) tested together. The Mbuf
/// fields are then built with SSE2 shuffles, two 16-byte stores per buffer ([`Mbuf::set_rx_blocks`]), as
/// DPDK's vector path does: `[ol_flags, packet_type, pkt_len]` from the memo and the length, `[data_len, vlan_tci
/// = 0, rss_hash, tx_offload = 0]` from the descriptor's length and hash.
///
/// # Safety
/// As [`rx_fast_run`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn rx_groups_sse2<F: Family>(
    d: *const RxDesc,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    m0: &RxMemo,
) -> (usize, u64) {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi32, _mm_and_si128, _mm_cvtsi128_si32, _mm_load_si128, _mm_or_si128, _mm_set_epi32,
        _mm_set_epi64x, _mm_setzero_si128, _mm_shuffle_epi32, _mm_xor_si128,
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
    let mut k = 0;
    let end = n & !3;
    // Lane 0: the lengths of the groups taken (at most 2^16 descriptors of less than 2^16 bytes: no overflow).
    #[allow(unused_unsafe)]
    // SAFETY: no memory operands.
    let mut sum = unsafe { _mm_setzero_si128() };
    while k != end {
        // SAFETY: k + 3 < n: inside the ring.
        let g = unsafe { d.add(k) };
        // SAFETY: as above.
        let (s0, s1, s2, s3) = unsafe { (rx_status(g), rx_status(g.add(1)), rx_status(g.add(2)), rx_status(g.add(3))) };
        if ((s0 ^ group_status) | (s1 ^ group_status) | (s2 ^ group_status) | (s3 ^ group_status)) & group_mask != 0 {
            break;
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
            break;
        }
        for (j, &sj) in sv.iter().enumerate() {
            #[allow(unused_unsafe)]
            // SAFETY: no memory operands.
            let (b1, b2) = unsafe { (_mm_or_si128(_mm_and_si128(sj, m1), template), _mm_and_si128(sj, m2)) };
            // SAFETY: no memory operands.
            sum = unsafe { _mm_add_epi32(sum, b2) };
            // SAFETY: k + j < n: an owned buffer posted with the rearm word (caller's contract), whose ownership
            // moves to `out[k + j]`; its length is at most `lens` <= max_len, within its data room; pkt_len and
            // data_len both come from the length lane.
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
