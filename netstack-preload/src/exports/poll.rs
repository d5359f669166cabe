//! Readiness: epoll, poll and select over stack sockets and kernel descriptors together; fork.

use super::*;

/// # Safety
/// As `epoll_ctl(2)`.
#[no_mangle]
pub unsafe extern "C" fn epoll_ctl(epfd: c_int, op: c_int, fd: c_int, ev: *mut libc::epoll_event) -> c_int {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::epoll_ctl(epfd, op, fd, ev) };
    }
    // SAFETY: `ev` is null or the caller's event.
    let ev = unsafe { ev.as_ref().copied() };
    ret_int(with(|st| st.epoll_ctl(epfd, op, fd, ev)).map(|()| 0))
}

/// # Safety
/// As `epoll_wait(2)`.
#[no_mangle]
pub unsafe extern "C" fn epoll_wait(epfd: c_int, ev: *mut libc::epoll_event, max: c_int, timeout: c_int) -> c_int {
    if fdtable::kind(epfd) != Kind::Epoll {
        // SAFETY: forwarded as given.
        return unsafe { real::epoll_wait(epfd, ev, max, timeout) };
    }
    // SAFETY: the caller's event array of `max`.
    ret_int(with(|st| unsafe { st.epoll_wait(epfd, ev, max, timeout) }).map(|n| n as c_int))
}

/// Runs `f` with the thread's signal mask set to `mask` (if any), as the p-variants of the waits do.
fn with_mask<R>(mask: *const libc::sigset_t, f: impl FnOnce() -> R) -> R {
    if mask.is_null() {
        return f();
    }
    // SAFETY: a zeroed sigset_t is a valid out-parameter; `mask` is the caller's set.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, mask, &mut old) };
    let r = f();
    // SAFETY: restoring the mask read above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    r
}

/// # Safety
/// As `epoll_pwait(2)`.
#[no_mangle]
pub unsafe extern "C" fn epoll_pwait(
    epfd: c_int,
    ev: *mut libc::epoll_event,
    max: c_int,
    timeout: c_int,
    mask: *const libc::sigset_t,
) -> c_int {
    if fdtable::kind(epfd) != Kind::Epoll {
        // SAFETY: forwarded as given.
        return unsafe { real::epoll_pwait(epfd, ev, max, timeout, mask) };
    }
    // SAFETY: as epoll_wait.
    with_mask(mask, || unsafe { epoll_wait(epfd, ev, max, timeout) })
}

fn has_stack_fd(fds: &[libc::pollfd]) -> bool {
    fds.iter().any(|p| is_stack(p.fd))
}

fn poll_timeout_ms(ms: c_int) -> Option<Duration> {
    (ms >= 0).then(|| Duration::from_millis(ms as u64))
}

/// # Safety
/// As `poll(2)`.
#[no_mangle]
pub unsafe extern "C" fn poll(fds: *mut libc::pollfd, n: libc::nfds_t, timeout: c_int) -> c_int {
    // SAFETY: the caller's array of `n`.
    let arr = if fds.is_null() || n == 0 {
        &mut [][..]
    } else {
        // SAFETY: the caller's array of `n`.
        unsafe { std::slice::from_raw_parts_mut(fds, n as usize) }
    };
    if !has_stack_fd(arr) {
        // SAFETY: forwarded as given.
        return unsafe { real::poll(fds, n, timeout) };
    }
    ret_int(with(|st| st.poll(arr, poll_timeout_ms(timeout))).map(|k| k as c_int))
}

fn ts_duration(ts: *const libc::timespec) -> Option<Duration> {
    // SAFETY: null or the caller's timespec.
    unsafe { ts.as_ref() }.map(|t| Duration::new(t.tv_sec.max(0) as u64, t.tv_nsec.clamp(0, 999_999_999) as u32))
}

/// # Safety
/// As `ppoll(2)`.
#[no_mangle]
pub unsafe extern "C" fn ppoll(
    fds: *mut libc::pollfd,
    n: libc::nfds_t,
    ts: *const libc::timespec,
    mask: *const libc::sigset_t,
) -> c_int {
    // SAFETY: the caller's array of `n`.
    let arr = if fds.is_null() || n == 0 {
        &mut [][..]
    } else {
        // SAFETY: the caller's array of `n`.
        unsafe { std::slice::from_raw_parts_mut(fds, n as usize) }
    };
    if !has_stack_fd(arr) {
        // SAFETY: forwarded as given.
        return unsafe { real::ppoll(fds, n, ts, mask) };
    }
    let timeout = ts_duration(ts);
    with_mask(mask, || ret_int(with(|st| st.poll(arr, timeout)).map(|k| k as c_int)))
}

fn sets_have_stack(n: c_int, sets: [*mut libc::fd_set; 3]) -> bool {
    (0..n.clamp(0, libc::FD_SETSIZE as c_int)).any(|fd| {
        // SAFETY: each set is null or the caller's.
        is_stack(fd) && sets.iter().any(|s| !s.is_null() && unsafe { libc::FD_ISSET(fd, *s) })
    })
}

/// # Safety
/// As `select(2)`.
#[no_mangle]
pub unsafe extern "C" fn select(
    n: c_int,
    r: *mut libc::fd_set,
    w: *mut libc::fd_set,
    e: *mut libc::fd_set,
    t: *mut libc::timeval,
) -> c_int {
    if !sets_have_stack(n, [r, w, e]) {
        // SAFETY: forwarded as given.
        return unsafe { real::select(n, r, w, e, t) };
    }
    // SAFETY: null or the caller's timeval.
    let timeout = unsafe { t.as_ref() }
        .map(|tv| Duration::from_secs(tv.tv_sec.max(0) as u64) + Duration::from_micros(tv.tv_usec.max(0) as u64));
    // SAFETY: the caller's sets.
    ret_int(with(|st| unsafe { crate::epoll::select(st, n, r, w, e, timeout) }).map(|k| k as c_int))
}

/// # Safety
/// As `pselect(2)`.
#[no_mangle]
pub unsafe extern "C" fn pselect(
    n: c_int,
    r: *mut libc::fd_set,
    w: *mut libc::fd_set,
    e: *mut libc::fd_set,
    ts: *const libc::timespec,
    mask: *const libc::sigset_t,
) -> c_int {
    if !sets_have_stack(n, [r, w, e]) {
        // SAFETY: forwarded as given.
        return unsafe { real::pselect(n, r, w, e, ts, mask) };
    }
    let timeout = ts_duration(ts);
    // SAFETY: the caller's sets.
    with_mask(mask, || ret_int(with(|st| unsafe { crate::epoll::select(st, n, r, w, e, timeout) }).map(|k| k as c_int)))
}

/// # Safety
/// As `fork(2)`.
#[no_mangle]
pub unsafe extern "C" fn fork() -> libc::pid_t {
    // The lock is held across the fork so the child's copy of the state is consistent and its lock free.
    STATE.hold();
    // SAFETY: forwarded.
    let pid = unsafe { real::fork() };
    if pid == 0 {
        lock::reset_tid();
        STATE.release();
        let _ = STATE.lock(|slot| {
            if let Some(st) = slot.as_mut() {
                st.forked_child();
            }
        });
    } else {
        STATE.release();
    }
    pid
}
