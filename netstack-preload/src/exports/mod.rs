//! The libc symbols the library exports. Each looks at the descriptor's kind first ([`fdtable`]): a kernel
//! descriptor goes straight to libc's own definition (no lock, nothing allocated: safe in signal handlers and
//! from any thread); a stack socket, an epoll set holding one, or an AF_INET socket not yet bound or connected
//! is served under the state lock.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use libc::{c_int, c_ulong, c_void, size_t, sockaddr, socklen_t, ssize_t};

use crate::calls::{read_sockaddr, write_sockaddr, Flags};
use crate::fdtable::{self, Kind};
use crate::lock::{self, SpinCell};
use crate::real;
use crate::state::{log, set_errno, Proto, Res, State};

static STATE: SpinCell<Option<State>> = SpinCell::new(None);
/// 0: not loaded yet, 1: loaded, 2: no configuration (every call is the kernel's).
static LOADED: AtomicU8 = AtomicU8::new(0);

/// Runs `f` on the state (loading it on first use). ENOSYS without a configuration, EAGAIN from a signal
/// handler that interrupted this thread inside the library, EIO if the library panicked.
fn with<R>(f: impl FnOnce(&mut State) -> Res<R>) -> Res<R> {
    if LOADED.load(Ordering::Acquire) == 2 {
        return Err(libc::ENOSYS);
    }
    let r = STATE.lock(|slot| {
        if slot.is_none() {
            match State::load() {
                Ok(s) => {
                    *slot = Some(s);
                    LOADED.store(1, Ordering::Release);
                }
                Err(why) => {
                    log(&format!("inactive, every socket is the kernel's: {why}"));
                    LOADED.store(2, Ordering::Release);
                    return Err(libc::ENOSYS);
                }
            }
        }
        let state = slot.as_mut().expect("loaded above");
        match catch_unwind(AssertUnwindSafe(|| f(state))) {
            Ok(r) => r,
            Err(_) => {
                log("internal error (a panic) in a socket call: EIO");
                Err(libc::EIO)
            }
        }
    });
    match r {
        Ok(r) => r,
        Err(lock::Reentered) => {
            log("a signal handler called into a stack socket while its thread was inside the library: EAGAIN");
            Err(libc::EAGAIN)
        }
    }
}

fn ret_int(r: Res<c_int>) -> c_int {
    r.unwrap_or_else(|e| {
        set_errno(e);
        -1
    })
}

fn ret_size(r: Res<usize>) -> ssize_t {
    match r {
        Ok(n) => n as ssize_t,
        Err(e) => {
            set_errno(e);
            -1
        }
    }
}

fn is_stack(fd: c_int) -> bool {
    fdtable::kind(fd) == Kind::Stack
}

/// The buffers of an iovec array.
///
/// # Safety
/// `iov` points to `n` valid iovecs.
unsafe fn iovecs<'a>(iov: *const libc::iovec, n: c_int) -> Res<Vec<&'a mut [u8]>> {
    if !(0..=libc::UIO_MAXIOV).contains(&n) {
        return Err(libc::EINVAL);
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: per the caller.
    let iov = unsafe { std::slice::from_raw_parts(iov, n as usize) };
    Ok(iov
        .iter()
        .filter(|v| v.iov_len > 0)
        // SAFETY: each iovec names its buffer, per the caller.
        .map(|v| unsafe { std::slice::from_raw_parts_mut(v.iov_base as *mut u8, v.iov_len) })
        .collect())
}

mod control;
mod io;
mod poll;
mod signals;
mod sockets;
