//! Signal handlers: `sigaction` and `signal`, so that a wait served in user space sees a handler run (EINTR).

use super::*;

/// # Safety
/// As `sigaction(2)`.
#[no_mangle]
pub unsafe extern "C" fn sigaction(sig: c_int, act: *const libc::sigaction, old: *mut libc::sigaction) -> c_int {
    // SAFETY: forwarded with the caller's contract.
    unsafe { crate::signals::sigaction(sig, act, old) }
}

/// # Safety
/// As `signal(3)`.
#[no_mangle]
pub unsafe extern "C" fn signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    // SAFETY: forwarded with the caller's contract.
    unsafe { crate::signals::signal(sig, handler) }
}
