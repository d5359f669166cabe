//! close, shutdown, socket options, addresses, fcntl, ioctl and dup on stack sockets.

use super::*;

/// # Safety
/// As `close(2)`.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if !fdtable::is_kernel(fd) {
        let _ = with(|st| {
            st.close(fd);
            Ok(())
        });
        // A descriptor we lost track of (no configuration) is still the kernel's to close.
    }
    // SAFETY: forwarded as given.
    unsafe { real::close(fd) }
}

/// # Safety
/// As `shutdown(2)`.
#[no_mangle]
pub unsafe extern "C" fn shutdown(fd: c_int, how: c_int) -> c_int {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::shutdown(fd, how) };
    }
    ret_int(with(|st| st.shutdown(fd, how)).map(|()| 0))
}

/// # Safety
/// As `setsockopt(2)`.
#[no_mangle]
pub unsafe extern "C" fn setsockopt(fd: c_int, level: c_int, name: c_int, val: *const c_void, len: socklen_t) -> c_int {
    let kind = fdtable::kind(fd);
    if kind != Kind::Stack {
        // SAFETY: forwarded as given.
        let r = unsafe { real::setsockopt(fd, level, name, val, len) };
        if r == 0 && kind == Kind::Pending && !val.is_null() {
            // SAFETY: the kernel just read `len` bytes there.
            let v = unsafe { std::slice::from_raw_parts(val as *const u8, len as usize) };
            let _ = with(|st| {
                st.record_pending(fd, level, name, v);
                Ok(())
            });
        }
        return r;
    }
    if val.is_null() {
        return ret_int(Err(libc::EFAULT));
    }
    // SAFETY: the caller's value of `len` bytes.
    let v = unsafe { std::slice::from_raw_parts(val as *const u8, len as usize) };
    ret_int(with(|st| st.setsockopt(fd, level, name, v)).map(|()| 0))
}

/// # Safety
/// As `getsockopt(2)`.
#[no_mangle]
pub unsafe extern "C" fn getsockopt(
    fd: c_int,
    level: c_int,
    name: c_int,
    val: *mut c_void,
    len: *mut socklen_t,
) -> c_int {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::getsockopt(fd, level, name, val, len) };
    }
    if val.is_null() || len.is_null() {
        return ret_int(Err(libc::EFAULT));
    }
    ret_int(with(|st| st.getsockopt(fd, level, name)).map(|bytes| {
        // SAFETY: the caller's buffer of `*len` bytes; Linux truncates to it and reports the length copied.
        unsafe {
            let k = (*len as usize).min(bytes.len());
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), val as *mut u8, k);
            *len = k as socklen_t;
        }
        0
    }))
}

/// # Safety
/// As `getsockname(2)`.
#[no_mangle]
pub unsafe extern "C" fn getsockname(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::getsockname(fd, addr, len) };
    }
    ret_int(with(|st| st.local_addr(fd)).map(|a| {
        // SAFETY: the caller's buffer.
        unsafe { write_sockaddr(a, addr, len) };
        0
    }))
}

/// # Safety
/// As `getpeername(2)`.
#[no_mangle]
pub unsafe extern "C" fn getpeername(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::getpeername(fd, addr, len) };
    }
    ret_int(with(|st| st.peer_addr(fd)).map(|a| {
        // SAFETY: the caller's buffer.
        unsafe { write_sockaddr(a, addr, len) };
        0
    }))
}

/// fcntl on a stack socket: O_NONBLOCK is ours, FD_CLOEXEC the reserved descriptor's, F_DUPFD a dup.
fn fcntl_stack(fd: c_int, cmd: c_int, arg: usize, next: unsafe fn(c_int, c_int, usize) -> c_int) -> c_int {
    match cmd {
        libc::F_GETFL => {
            ret_int(with(|st| Ok(libc::O_RDWR | if st.sock(fd)?.nonblock { libc::O_NONBLOCK } else { 0 })))
        }
        libc::F_SETFL => ret_int(with(|st| {
            st.sock(fd)?.nonblock = arg as c_int & libc::O_NONBLOCK != 0;
            Ok(0)
        })),
        // SAFETY: the reserved descriptor carries the close-on-exec flag.
        libc::F_GETFD | libc::F_SETFD => unsafe { next(fd, cmd, arg) },
        libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => {
            // SAFETY: duplicating the reserved descriptor; the copy names the same socket.
            let new = unsafe { next(fd, cmd, arg) };
            if new < 0 {
                return new;
            }
            ret_int(with(|st| st.dup_to(fd, new)).map(|()| new).inspect_err(|_| {
                // SAFETY: the copy just made.
                unsafe { real::close(new) };
            }))
        }
        _ => ret_int(with(|st| {
            st.log_once(format!("fcntl command {cmd} is not supported on stack sockets"));
            Err(libc::EINVAL)
        })),
    }
}

/// # Safety
/// As `fcntl(2)` (the third argument, when there is one, is an integer or a pointer).
#[no_mangle]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: usize) -> c_int {
    match fdtable::kind(fd) {
        Kind::Stack => fcntl_stack(fd, cmd, arg, real::fcntl),
        Kind::Pending if matches!(cmd, libc::F_DUPFD | libc::F_DUPFD_CLOEXEC) => {
            let _ = with(|st| {
                st.to_kernel(fd);
                Ok(())
            });
            // SAFETY: forwarded as given.
            unsafe { real::fcntl(fd, cmd, arg) }
        }
        // SAFETY: forwarded as given.
        _ => unsafe { real::fcntl(fd, cmd, arg) },
    }
}

/// # Safety
/// As `fcntl(2)`.
#[no_mangle]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: usize) -> c_int {
    match fdtable::kind(fd) {
        Kind::Stack => fcntl_stack(fd, cmd, arg, real::fcntl64),
        Kind::Pending if matches!(cmd, libc::F_DUPFD | libc::F_DUPFD_CLOEXEC) => {
            let _ = with(|st| {
                st.to_kernel(fd);
                Ok(())
            });
            // SAFETY: forwarded as given.
            unsafe { real::fcntl64(fd, cmd, arg) }
        }
        // SAFETY: forwarded as given.
        _ => unsafe { real::fcntl64(fd, cmd, arg) },
    }
}

/// # Safety
/// As `ioctl(2)`.
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: c_ulong, arg: usize) -> c_int {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::ioctl(fd, request, arg) };
    }
    let p = arg as *mut c_int;
    if p.is_null() {
        return ret_int(Err(libc::EFAULT));
    }
    match request {
        libc::FIONBIO => ret_int(with(|st| {
            // SAFETY: FIONBIO's argument is an int.
            st.sock(fd)?.nonblock = unsafe { p.read_unaligned() } != 0;
            Ok(0)
        })),
        libc::FIONREAD => ret_int(with(|st| st.bytes_waiting(fd)).map(|n| {
            // SAFETY: FIONREAD's argument is an int to fill.
            unsafe { p.write_unaligned(n.min(c_int::MAX as usize) as c_int) };
            0
        })),
        _ => ret_int(with(|st| {
            st.log_once(format!("ioctl request {request:#x} is not supported on stack sockets"));
            Err(libc::ENOTTY)
        })),
    }
}

/// # Safety
/// As `dup(2)`.
#[no_mangle]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    match fdtable::kind(fd) {
        // SAFETY: dup is fcntl(F_DUPFD, 0).
        Kind::Stack | Kind::Pending => unsafe { fcntl(fd, libc::F_DUPFD, 0) },
        // SAFETY: forwarded as given.
        _ => unsafe { real::dup(fd) },
    }
}

/// # Safety
/// As `dup3(2)`.
#[no_mangle]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    if fdtable::is_kernel(old) && fdtable::is_kernel(new) {
        // SAFETY: forwarded as given.
        return unsafe { real::dup3(old, new, flags) };
    }
    dup_onto(old, new, |o, n| {
        // SAFETY: forwarded as given.
        unsafe { real::dup3(o, n, flags) }
    })
}

/// # Safety
/// As `dup2(2)`.
#[no_mangle]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    if (fdtable::is_kernel(old) && fdtable::is_kernel(new)) || old == new {
        // SAFETY: forwarded as given.
        return unsafe { real::dup2(old, new) };
    }
    dup_onto(old, new, |o, n| {
        // SAFETY: forwarded as given.
        unsafe { real::dup2(o, n) }
    })
}

fn dup_onto(old: c_int, new: c_int, next: impl FnOnce(c_int, c_int) -> c_int) -> c_int {
    // The kernel closes `new` first; we forget what it was.
    if !fdtable::is_kernel(new) {
        let _ = with(|st| {
            st.close(new);
            Ok(())
        });
    }
    if fdtable::kind(old) == Kind::Pending {
        let _ = with(|st| {
            st.to_kernel(old);
            Ok(())
        });
    }
    let r = next(old, new);
    if r >= 0 && is_stack(old) {
        return ret_int(with(|st| st.dup_to(old, r)).map(|()| r));
    }
    r
}
