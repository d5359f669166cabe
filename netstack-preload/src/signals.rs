//! Signal handlers the application installs, seen by the library, so that a wait it serves in user space
//! returns EINTR when a handler ran, as the kernel's `epoll_wait`, `poll` and `select` do (signal(7): never
//! restarted, whatever SA_RESTART says).
//!
//! A wait that finds nothing spins in user space for a while (the runtime's idle policy) before it sleeps in
//! the kernel. A signal that arrives during the spin runs the application's handler and returns into the spin:
//! the kernel has no call of ours to interrupt. nginx stops on SIGTERM by setting a flag in its handler and
//! looking at it when `epoll_wait` fails with EINTR; a SIGTERM during the spin was lost, and nginx (with no
//! timer, a wait without timeout) never exited. So every handler the application installs through `sigaction`
//! or `signal` is wrapped in `trampoline`, which counts the signals the thread received before calling the
//! application's handler; a wait compares the count with the one it started with ([`delivered`]).

use std::cell::Cell;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use libc::c_int;

use crate::real;

/// Signal numbers we wrap handlers of: 1 ..= 64 (Linux's `_NSIG` - 1).
const SIGNALS: usize = 65;

/// The application's handler per signal (its `sa_sigaction`), while our trampoline stands in for it.
static HANDLER: [AtomicUsize; SIGNALS] = [const { AtomicUsize::new(0) }; SIGNALS];
/// The application's `sa_flags` for it (SA_SIGINFO says how to call the handler).
static FLAGS: [AtomicI32; SIGNALS] = [const { AtomicI32::new(0) }; SIGNALS];

thread_local! {
    /// Signals whose handler ran on this thread (a const-initialised Cell: no allocation, no destructor, so
    /// usable from a handler).
    static DELIVERED: Cell<u64> = const { Cell::new(0) };
}

/// How many of the application's signal handlers have run on this thread.
pub fn delivered() -> u64 {
    DELIVERED.with(|d| d.get())
}

/// What the library installs in place of the application's handler: counts the signal, then calls the handler.
extern "C" fn trampoline(sig: c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    DELIVERED.with(|d| d.set(d.get().wrapping_add(1)));
    let Some(i) = usize::try_from(sig).ok().filter(|&i| i < SIGNALS) else { return };
    let handler = HANDLER[i].load(Ordering::Acquire);
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        return;
    }
    if FLAGS[i].load(Ordering::Acquire) & libc::SA_SIGINFO != 0 {
        // SAFETY: the application installed this three-argument handler (SA_SIGINFO) for `sig`.
        let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut libc::c_void) = unsafe { std::mem::transmute(handler) };
        f(sig, info, context);
    } else {
        // SAFETY: the application installed this one-argument handler for `sig`.
        let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(handler) };
        f(sig);
    }
}

/// `sigaction(2)`: a handler the application installs is stored and our trampoline installed for it; the old
/// action reported is the application's own.
///
/// # Safety
/// As `sigaction(2)`: `act` and `old` are null or valid.
pub unsafe fn sigaction(sig: c_int, act: *const libc::sigaction, old: *mut libc::sigaction) -> c_int {
    let Some(i) = usize::try_from(sig).ok().filter(|&i| i > 0 && i < SIGNALS) else {
        // SAFETY: forwarded as given (the kernel answers EINVAL).
        return unsafe { real::sigaction(sig, act, old) };
    };
    let (prev_handler, prev_flags) = (HANDLER[i].load(Ordering::Acquire), FLAGS[i].load(Ordering::Acquire));
    // SAFETY: null or the caller's action.
    let wrapped = unsafe { act.as_ref() }
        .filter(|a| a.sa_sigaction != libc::SIG_DFL && a.sa_sigaction != libc::SIG_IGN)
        .map(|a| {
            FLAGS[i].store(a.sa_flags, Ordering::Release);
            HANDLER[i].store(a.sa_sigaction, Ordering::Release);
            let mut ours = *a;
            ours.sa_sigaction = trampoline as *const () as usize;
            ours.sa_flags |= libc::SA_SIGINFO;
            ours
        });
    let act_ptr = wrapped.as_ref().map_or(act, |w| w as *const libc::sigaction);
    // SAFETY: `act_ptr` is null, the caller's action or our copy of it, alive across the call; `old` is the
    // caller's.
    let r = unsafe { real::sigaction(sig, act_ptr, old) };
    if r != 0 && wrapped.is_some() {
        HANDLER[i].store(prev_handler, Ordering::Release);
        FLAGS[i].store(prev_flags, Ordering::Release);
    }
    // SAFETY: null or the caller's out-parameter, written by the kernel.
    if let Some(o) = unsafe { old.as_mut() } {
        if r == 0 && o.sa_sigaction == trampoline as *const () as usize {
            o.sa_sigaction = prev_handler;
            o.sa_flags = prev_flags;
        }
    }
    r
}

/// `signal(3)` with glibc's BSD semantics (SA_RESTART, the signal blocked in its handler), through
/// [`sigaction`]: glibc's own `signal` calls its internal sigaction, which interposition does not reach.
///
/// # Safety
/// As `signal(3)`.
pub unsafe fn signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    // SAFETY: zeroed sigactions are valid; the set calls write the mask we own.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler;
    act.sa_flags = libc::SA_RESTART;
    // SAFETY: as above.
    unsafe {
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaddset(&mut act.sa_mask, sig);
    }
    // SAFETY: as above.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: both actions are ours and alive across the call.
    if unsafe { sigaction(sig, &act, &mut old) } != 0 {
        return libc::SIG_ERR;
    }
    old.sa_sigaction
}
