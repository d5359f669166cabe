//! Ctrl-C: the first SIGINT/SIGTERM asks the application to stop (it polls [`stop_requested`] and prints its
//! statistics on the way out); a second one ends the process at once.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(signal: libc::c_int) {
    // Only async-signal-safe work here: an atomic swap, and on the second signal the default action.
    if STOP.swap(true, Ordering::SeqCst) {
        // SAFETY: signal() and raise() are async-signal-safe; restoring the default action then re-raising ends
        // the process the way the user asked twice.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
    }
}

/// Installs the SIGINT and SIGTERM handlers (idempotent).
pub fn install_handlers() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: zeroed sigaction is valid; we set a plain handler with an empty mask.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        // SAFETY: the handler only touches an atomic; old action not needed.
        unsafe {
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// True once Ctrl-C (SIGINT) or SIGTERM arrived, or [`request_stop`] was called.
#[inline]
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Asks everything polling [`stop_requested`] to stop, as Ctrl-C would.
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// Clears a stop request (an interactive application going back to its prompt).
pub fn clear_stop() {
    STOP.store(false, Ordering::SeqCst);
}
