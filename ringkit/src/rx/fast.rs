//! The RX fast run: the leading run of common frames of a burst, the format's groups first (SIMD, several
//! entries per test, on the skeleton [`RxRun::simd_groups`]) and then one entry at a time, built once per [`Isa`]
//! and chosen per ring ([`IsaLevel`]).

use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use mempool::{Mbuf, MbufHeader};

#[cfg(target_arch = "x86_64")]
use super::format::{Avx, Avx2};
use super::format::{Base, Isa, IsaLevel, RxFormat};

/// The entries a fast run looks at: `n` completions from `wb`, the buffers posted in their slots (`shadow`, same
/// index), where the packets go (`out`, same index), and the longest buffer the device writes. A value the engine
/// builds per run; a format's [`RxFormat::groups`] takes it whole.
#[derive(Debug)]
pub struct RxRun<W> {
    /// The first completion.
    pub wb: *mut W,
    /// The buffer of each completion's slot.
    pub shadow: *const NonNull<MbufHeader>,
    /// Where each packet taken goes.
    pub out: *mut NonNull<MbufHeader>,
    /// Entries.
    pub n: usize,
    /// Longest buffer (at most the buffers' data room).
    pub max_len: u16,
}

impl<W> Clone for RxRun<W> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<W> Copy for RxRun<W> {}

impl<W> RxRun<W> {
    /// The groups' skeleton on x86-64: groups of `G` entries from the start of the run while `group(k)` takes the
    /// entries `k .. k + G` whole and returns each buffer's two RX blocks; each buffer gets them
    /// ([`Mbuf::set_rx_blocks`]) and moves to `out`. Returns how many it took (a multiple of `G`) and their bytes
    /// (summed from the blocks' length lane). A format's `groups` is this with its test and its shuffles in `group`.
    ///
    /// # Safety
    /// The run's pointers valid for `n` entries, the shadow entries owned buffers posted with the rearm word whose
    /// data room is at least `max_len`; `group(k)` returns `Some` only for `G` common frames (each one buffer of at
    /// most `max_len` bytes, consumed as the format wants it: a completion bit it clears is cleared), the blocks
    /// `[ol_flags, packet_type, pkt_len]` and `[data_len, vlan_tci, rss_hash, tx_offload]` with `pkt_len = data_len`,
    /// the length (the low half of lane 0 of the second block) at most `max_len`.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub unsafe fn simd_groups<const G: usize>(
        self,
        mut group: impl FnMut(usize) -> Option<[SimdBlocks; G]>,
    ) -> (usize, u64) {
        use std::arch::x86_64::{_mm_add_epi32, _mm_cvtsi128_si32, _mm_setzero_si128};
        let mut k = 0;
        let end = self.n - self.n % G;
        // Lane 0: the lengths of the groups taken (at most 2^16 entries of less than 2^16 bytes: no overflow).
        #[allow(unused_unsafe)]
        // SAFETY: no memory operands.
        let mut sum = unsafe { _mm_setzero_si128() };
        while k != end {
            let Some(blocks) = group(k) else { break };
            for (j, &(b1, b2)) in blocks.iter().enumerate() {
                #[allow(unused_unsafe)]
                // SAFETY: no memory operands.
                let s = unsafe { _mm_add_epi32(sum, b2) };
                sum = s;
                // SAFETY: k + j < n: an owned buffer posted with the rearm word (the caller's contract), whose
                // ownership moves to `out[k + j]`; its length is at most max_len, within its data room.
                unsafe {
                    let p = *self.shadow.add(k + j);
                    ManuallyDrop::new(Mbuf::from_raw(p)).set_rx_blocks(b1, b2);
                    self.out.add(k + j).write(p);
                }
            }
            k += G;
        }
        #[allow(unused_unsafe)]
        // SAFETY: no memory operands.
        let bytes = unsafe { _mm_cvtsi128_si32(sum) } as u32 as u64;
        (k, bytes)
    }
}

/// A buffer's two RX blocks for [`RxRun::simd_groups`].
#[cfg(target_arch = "x86_64")]
pub type SimdBlocks = (std::arch::x86_64::__m128i, std::arch::x86_64::__m128i);

/// Receives the leading run of common frames among the `n` entries at `wb` into `out`, with the build `isa`:
/// each frame's buffer (from `shadow`, same index) gets its RX fields and moves to `out` (same index). Returns how
/// many it took and their bytes; `memo` is the format's memo, updated for the next burst.
///
/// # Safety
/// `wb`, `shadow` and `out` must be valid for `n` entries; the shadow entries must be owned buffers posted with the
/// ring's rearm word, whose data room is at least `max_len` (ownership of those taken moves to `out`); the entries
/// must be completions the device may write; `isa` must be a build this CPU runs ([`IsaLevel::detect`]).
#[inline(always)]
pub unsafe fn fast_run<F: RxFormat>(fmt: &F, isa: IsaLevel, run: RxRun<F::Wb>, memo: &mut F::Memo) -> (usize, u64) {
    // The builds take the run's fields one by one: a struct of five words would be passed through memory, and
    // stored and loaded again on every call.
    let RxRun { wb, shadow, out, n, max_len } = run;
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's contract; the CPU has AVX (the level says so).
        IsaLevel::Avx => unsafe { fast_run_avx(fmt, wb, shadow, out, n, max_len, memo) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's contract; the CPU has AVX2 (the level says so).
        IsaLevel::Avx2 => unsafe { fast_run_avx2(fmt, wb, shadow, out, n, max_len, memo) },
        // SAFETY: the caller's contract.
        _ => unsafe { fast_run_base(fmt, wb, shadow, out, n, max_len, memo) },
    }
}

/// [`fast_run`] for what the target always has. Kept out of line so that its loops have the registers to
/// themselves.
///
/// # Safety
/// As [`fast_run`].
#[inline(never)]
unsafe fn fast_run_base<F: RxFormat>(
    fmt: &F,
    wb: *mut F::Wb,
    shadow: *const NonNull<MbufHeader>,
    out: *mut NonNull<MbufHeader>,
    n: usize,
    max_len: u16,
    memo: &mut F::Memo,
) -> (usize, u64) {
    // SAFETY: the caller's contract, passed on.
    unsafe { fast_run_body::<F, Base>(fmt, RxRun { wb, shadow, out, n, max_len }, memo) }
}

/// [`fast_run`] compiled for AVX: the same code, but the format's SSE intrinsics get the VEX three-operand forms
/// (no register copies before the destructive two-operand ones) and may use SSE4.1/SSSE3 where `I::AVX` says so.
///
/// # Safety
/// As [`fast_run`], and the CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
#[inline(never)]
unsafe fn fast_run_avx<F: RxFormat>(
    fmt: &F,
    wb: *mut F::Wb,
    shadow: *const NonNull<MbufHeader>,
    out: *mut NonNull<MbufHeader>,
    n: usize,
    max_len: u16,
    memo: &mut F::Memo,
) -> (usize, u64) {
    // SAFETY: the caller's contract, passed on.
    unsafe { fast_run_body::<F, Avx>(fmt, RxRun { wb, shadow, out, n, max_len }, memo) }
}

/// [`fast_run`] compiled for AVX2: the format's groups may take eight entries per step, two per 256-bit register
/// (`I::AVX2`).
///
/// # Safety
/// As [`fast_run`], and the CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline(never)]
unsafe fn fast_run_avx2<F: RxFormat>(
    fmt: &F,
    wb: *mut F::Wb,
    shadow: *const NonNull<MbufHeader>,
    out: *mut NonNull<MbufHeader>,
    n: usize,
    max_len: u16,
    memo: &mut F::Memo,
) -> (usize, u64) {
    // SAFETY: the caller's contract, passed on.
    unsafe { fast_run_body::<F, Avx2>(fmt, RxRun { wb, shadow, out, n, max_len }, memo) }
}

/// The body of every build: the format's groups while they repeat the memo (the common case: one traffic class
/// per burst), then one entry at a time to the end of the run, which updates the memo for the next burst. The memo
/// is a local copy meanwhile: the stores into the buffers go through raw pointers the compiler cannot tell apart
/// from it.
///
/// # Safety
/// As [`fast_run`], and the CPU runs `I`.
#[inline(always)]
unsafe fn fast_run_body<F: RxFormat, I: Isa>(fmt: &F, run: RxRun<F::Wb>, memo: &mut F::Memo) -> (usize, u64) {
    let RxRun { wb, shadow, out, n, max_len } = run;
    let mut m0 = *memo;
    // SAFETY: the caller's contract, passed on.
    let (mut k, mut bytes) = unsafe { fmt.groups::<I>(run, &m0) };
    while k < n {
        // SAFETY: k < n: an entry of the completions (caller's contract).
        let Some(f) = (unsafe { fmt.fast_one(wb.add(k), max_len, &mut m0) }) else { break };
        // SAFETY: k < n; an owned buffer posted with the rearm word (caller's contract), whose ownership moves to
        // `out[k]`; f.len <= max_len (the format's contract), within its data room, one segment.
        unsafe {
            let p = *shadow.add(k);
            ManuallyDrop::new(Mbuf::from_raw(p)).set_rx_unchecked(f.len, f.flags, f.ptype, f.rss);
            out.add(k).write(p);
        }
        bytes += f.len as u64;
        k += 1;
    }
    *memo = m0;
    (k, bytes)
}
