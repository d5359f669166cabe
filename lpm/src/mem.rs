//! Table memory: zeroed `u32` arrays from the global allocator, large ones advised onto transparent hugepages.
//!
//! tbl24 is 64 MiB: on 4 KiB pages nearly every random lookup also misses the TLB, so large tables ask the kernel
//! for 2 MiB pages (`MADV_HUGEPAGE`, honoured when transparent hugepages are `always` or `madvise`). The memory is
//! a plain `Vec`, not the `hugepage` crate's DMA memory: no device reads these tables, and a `Vec` keeps them
//! safe to index.

/// Tables at least this large are advised onto hugepages.
const HUGE_ADVICE_MIN: usize = 4 << 20;
/// Transparent hugepage size on x86-64 and most aarch64 kernels.
const HUGE_PAGE: usize = 2 << 20;

/// A zeroed table of `len` entries (all [`crate::entry::Entry::INVALID`]).
pub(crate) fn zeroed_table(len: usize) -> Box<[u32]> {
    // vec![0; n] takes zeroed pages straight from the kernel (calloc / fresh mmap): nothing is touched here, so
    // the advice below still applies to every page.
    let table = vec![0u32; len].into_boxed_slice();
    let bytes = len * size_of::<u32>();
    if bytes >= HUGE_ADVICE_MIN {
        advise_huge(table.as_ptr() as usize, bytes);
    }
    table
}

/// Asks for hugepages over the 2 MiB-aligned part of `[start, start + len)`; a refusal only costs speed.
fn advise_huge(start: usize, len: usize) {
    let first = start.next_multiple_of(HUGE_PAGE);
    let end = (start + len) / HUGE_PAGE * HUGE_PAGE;
    if end > first {
        // SAFETY: the range lies inside the live allocation `table` owned by the caller; MADV_HUGEPAGE only changes
        // how the kernel backs those pages, never their contents or validity.
        unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE) };
    }
}
