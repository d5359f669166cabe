//! The RX fast run: the leading run of common frames of a burst, the format's groups first (SIMD, several
//! entries per test) and then one entry at a time, built once per [`Isa`] and chosen per ring ([`IsaLevel`]).

use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use mempool::{Mbuf, MbufHeader};

#[cfg(target_arch = "x86_64")]
use super::format::Avx;
use super::format::{Base, Isa, IsaLevel, RxFormat};

/// Receives the leading run of common frames among the `n` entries at `wb` into `out`, with the build `isa`:
/// each frame's buffer (from `shadow`, same index) gets its RX fields and moves to `out` (same index). Returns how
/// many it took and their bytes; `memo` is the format's memo, updated for the next burst.
///
/// # Safety
/// `wb`, `shadow` and `out` must be valid for `n` entries; the shadow entries must be owned buffers posted with the
/// ring's rearm word, whose data room is at least `max_len` (ownership of those taken moves to `out`); the entries
/// must be completions the device may write; `isa` must be a build this CPU runs ([`IsaLevel::detect`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)] // What the run works on, each in a register of its own: a struct would be unpacked again.
pub unsafe fn fast_run<F: RxFormat>(
    fmt: &F,
    isa: IsaLevel,
    wb: *mut F::Wb,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    memo: &mut F::Memo,
) -> (usize, u64) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's contract; the CPU has AVX (the level says so).
        IsaLevel::Avx => unsafe { fast_run_avx(fmt, wb, shadow, n, out, max_len, memo) },
        // SAFETY: the caller's contract.
        _ => unsafe { fast_run_base(fmt, wb, shadow, n, out, max_len, memo) },
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
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    memo: &mut F::Memo,
) -> (usize, u64) {
    // SAFETY: the caller's contract, passed on.
    unsafe { fast_run_body::<F, Base>(fmt, wb, shadow, n, out, max_len, memo) }
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
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    memo: &mut F::Memo,
) -> (usize, u64) {
    // SAFETY: the caller's contract, passed on.
    unsafe { fast_run_body::<F, Avx>(fmt, wb, shadow, n, out, max_len, memo) }
}

/// The body of every build: the format's groups while they repeat the memo (the common case: one traffic class
/// per burst), then one entry at a time to the end of the run, which updates the memo for the next burst. The memo
/// is a local copy meanwhile: the stores into the buffers go through raw pointers the compiler cannot tell apart
/// from it.
///
/// # Safety
/// As [`fast_run`], and the CPU runs `I`.
#[inline(always)]
unsafe fn fast_run_body<F: RxFormat, I: Isa>(
    fmt: &F,
    wb: *mut F::Wb,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    memo: &mut F::Memo,
) -> (usize, u64) {
    let mut m0 = *memo;
    // SAFETY: the caller's contract, passed on.
    let (mut k, mut bytes) = unsafe { fmt.groups::<I>(wb, shadow, n, out, max_len, &m0) };
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
