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

/// # Safety
/// As `socket(2)`.
#[no_mangle]
pub unsafe extern "C" fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int {
    // SAFETY: forwarded as given.
    let fd = unsafe { real::socket(domain, ty, protocol) };
    if fd < 0 || domain != libc::AF_INET || LOADED.load(Ordering::Acquire) == 2 || STATE.held_here() {
        // The library's own sockets (the port's interface ioctls) stay the kernel's.
        return fd;
    }
    let proto = match (ty & !(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC), protocol) {
        (libc::SOCK_STREAM, 0 | libc::IPPROTO_TCP) => Proto::Tcp,
        (libc::SOCK_DGRAM, 0 | libc::IPPROTO_UDP) => Proto::Udp,
        _ => return fd,
    };
    let _ = with(|st| {
        st.socket_made(fd, proto);
        Ok(())
    });
    fd
}

/// # Safety
/// As `bind(2)`.
#[no_mangle]
pub unsafe extern "C" fn bind(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
    if matches!(fdtable::kind(fd), Kind::Pending | Kind::Stack) {
        // SAFETY: the caller's address of `len` bytes.
        let a = unsafe { read_sockaddr(addr, len) };
        match with(|st| st.bind(fd, a)) {
            Ok(Some(())) => return 0,
            Ok(None) | Err(libc::ENOSYS) => {}
            Err(e) => return ret_int(Err(e)),
        }
    }
    // SAFETY: forwarded as given.
    unsafe { real::bind(fd, addr, len) }
}

/// # Safety
/// As `listen(2)`.
#[no_mangle]
pub unsafe extern "C" fn listen(fd: c_int, backlog: c_int) -> c_int {
    if matches!(fdtable::kind(fd), Kind::Pending | Kind::Stack) {
        match with(|st| st.listen(fd)) {
            Ok(Some(())) => return 0,
            Ok(None) | Err(libc::ENOSYS) => {}
            Err(e) => return ret_int(Err(e)),
        }
    }
    // SAFETY: forwarded as given.
    unsafe { real::listen(fd, backlog) }
}

/// # Safety
/// As `accept4(2)`.
#[no_mangle]
pub unsafe extern "C" fn accept4(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::accept4(fd, addr, len, flags) };
    }
    if flags & !(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) != 0 {
        return ret_int(Err(libc::EINVAL));
    }
    ret_int(with(|st| st.accept(fd, flags)).map(|(nfd, peer)| {
        // SAFETY: the caller's address buffer.
        unsafe { write_sockaddr(peer, addr, len) };
        nfd
    }))
}

/// # Safety
/// As `accept(2)`.
#[no_mangle]
pub unsafe extern "C" fn accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::accept(fd, addr, len) };
    }
    // SAFETY: as accept4.
    unsafe { accept4(fd, addr, len, 0) }
}

/// # Safety
/// As `connect(2)`.
#[no_mangle]
pub unsafe extern "C" fn connect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
    if matches!(fdtable::kind(fd), Kind::Pending | Kind::Stack) {
        // SAFETY: the caller's address of `len` bytes.
        let a = unsafe { read_sockaddr(addr, len) };
        match with(|st| st.connect(fd, a)) {
            Ok(Some(())) => return 0,
            Ok(None) | Err(libc::ENOSYS) => {}
            Err(e) => return ret_int(Err(e)),
        }
    }
    // SAFETY: forwarded as given.
    unsafe { real::connect(fd, addr, len) }
}

fn recv_one(fd: c_int, buf: *mut c_void, n: size_t, flags: Res<Flags>) -> Res<(usize, Option<std::net::SocketAddrV4>)> {
    let flags = flags?;
    if n > 0 && buf.is_null() {
        return Err(libc::EFAULT);
    }
    let mut one: Vec<&mut [u8]> = Vec::with_capacity(1);
    if n > 0 {
        // SAFETY: the caller's buffer of `n` bytes.
        one.push(unsafe { std::slice::from_raw_parts_mut(buf as *mut u8, n) });
    }
    with(|st| st.recv(fd, &mut one, flags))
}

fn send_one(
    fd: c_int,
    buf: *const c_void,
    n: size_t,
    flags: Res<Flags>,
    to: Option<std::net::SocketAddrV4>,
) -> Res<usize> {
    let flags = flags?;
    if n > 0 && buf.is_null() {
        return Err(libc::EFAULT);
    }
    // SAFETY: the caller's buffer of `n` bytes.
    let data: &[u8] = if n > 0 { unsafe { std::slice::from_raw_parts(buf as *const u8, n) } } else { &[] };
    with(|st| st.send(fd, &[data], flags, to))
}

/// # Safety
/// As `read(2)`.
#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::read(fd, buf, n) };
    }
    ret_size(recv_one(fd, buf, n, Ok(Flags::default())).map(|r| r.0))
}

/// # Safety
/// As `write(2)`.
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::write(fd, buf, n) };
    }
    ret_size(send_one(fd, buf, n, Ok(Flags::default()), None))
}

/// # Safety
/// As `recv(2)`.
#[no_mangle]
pub unsafe extern "C" fn recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::recv(fd, buf, n, flags) };
    }
    ret_size(recv_one(fd, buf, n, Flags::from_msg(flags)).map(|r| r.0))
}

/// # Safety
/// As `recvfrom(2)`.
#[no_mangle]
pub unsafe extern "C" fn recvfrom(
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    flags: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
) -> ssize_t {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::recvfrom(fd, buf, n, flags, addr, len) };
    }
    ret_size(recv_one(fd, buf, n, Flags::from_msg(flags)).map(|(k, from)| {
        match from {
            // SAFETY: the caller's address buffer.
            Some(a) => unsafe { write_sockaddr(a, addr, len) },
            None if !len.is_null() => {
                // SAFETY: the caller's length (TCP: no address).
                unsafe { *len = 0 }
            }
            None => {}
        }
        k
    }))
}

/// # Safety
/// As `send(2)`.
#[no_mangle]
pub unsafe extern "C" fn send(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::send(fd, buf, n, flags) };
    }
    ret_size(send_one(fd, buf, n, Flags::from_msg(flags), None))
}

/// # Safety
/// As `sendto(2)`.
#[no_mangle]
pub unsafe extern "C" fn sendto(
    fd: c_int,
    buf: *const c_void,
    n: size_t,
    flags: c_int,
    addr: *const sockaddr,
    len: socklen_t,
) -> ssize_t {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::sendto(fd, buf, n, flags, addr, len) };
    }
    // SAFETY: the caller's address.
    let to = unsafe { read_sockaddr(addr, len) };
    ret_size(send_one(fd, buf, n, Flags::from_msg(flags), to))
}

/// # Safety
/// As `readv(2)`.
#[no_mangle]
pub unsafe extern "C" fn readv(fd: c_int, iov: *const libc::iovec, n: c_int) -> ssize_t {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::readv(fd, iov, n) };
    }
    // SAFETY: the caller's iovecs.
    ret_size(unsafe { iovecs(iov, n) }.and_then(|mut b| with(|st| st.recv(fd, &mut b, Flags::default())).map(|r| r.0)))
}

/// # Safety
/// As `writev(2)`.
#[no_mangle]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const libc::iovec, n: c_int) -> ssize_t {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::writev(fd, iov, n) };
    }
    // SAFETY: the caller's iovecs.
    ret_size(unsafe { iovecs(iov, n) }.and_then(|b| {
        let b: Vec<&[u8]> = b.into_iter().map(|x| &*x).collect();
        with(|st| st.send(fd, &b, Flags::default(), None))
    }))
}

/// # Safety
/// As `recvmsg(2)`.
#[no_mangle]
pub unsafe extern "C" fn recvmsg(fd: c_int, msg: *mut libc::msghdr, flags: c_int) -> ssize_t {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::recvmsg(fd, msg, flags) };
    }
    if msg.is_null() {
        return ret_size(Err(libc::EFAULT));
    }
    // SAFETY: the caller's message header and the buffers it names.
    unsafe {
        let m = &mut *msg;
        let r = iovecs(m.msg_iov, m.msg_iovlen as c_int)
            .and_then(|mut b| Flags::from_msg(flags).and_then(|f| with(|st| st.recv(fd, &mut b, f))));
        ret_size(r.map(|(k, from)| {
            match from {
                Some(a) if !m.msg_name.is_null() => write_sockaddr(a, m.msg_name as *mut sockaddr, &mut m.msg_namelen),
                _ => m.msg_namelen = 0,
            }
            m.msg_controllen = 0;
            m.msg_flags = 0;
            k
        }))
    }
}

/// # Safety
/// As `sendmsg(2)`.
#[no_mangle]
pub unsafe extern "C" fn sendmsg(fd: c_int, msg: *const libc::msghdr, flags: c_int) -> ssize_t {
    if !is_stack(fd) {
        // SAFETY: forwarded as given.
        return unsafe { real::sendmsg(fd, msg, flags) };
    }
    if msg.is_null() {
        return ret_size(Err(libc::EFAULT));
    }
    // SAFETY: the caller's message header and the buffers it names.
    unsafe {
        let m = &*msg;
        if m.msg_controllen > 0 {
            let _ = with(|st| {
                st.log_once("sendmsg with control messages (ancillary data) is not supported on stack sockets".into());
                Ok(())
            });
            return ret_size(Err(libc::EOPNOTSUPP));
        }
        let to = read_sockaddr(m.msg_name as *const sockaddr, m.msg_namelen);
        ret_size(iovecs(m.msg_iov, m.msg_iovlen as c_int).and_then(|b| {
            let b: Vec<&[u8]> = b.into_iter().map(|x| &*x).collect();
            Flags::from_msg(flags).and_then(|f| with(|st| st.send(fd, &b, f, to)))
        }))
    }
}

/// # Safety
/// As `sendfile(2)`.
#[no_mangle]
pub unsafe extern "C" fn sendfile(out: c_int, input: c_int, off: *mut libc::off_t, n: size_t) -> ssize_t {
    if !is_stack(out) {
        // SAFETY: forwarded as given.
        return unsafe { real::sendfile(out, input, off, n) };
    }
    // SAFETY: `off` is null or the caller's offset.
    ret_size(with(|st| st.sendfile(out, input, unsafe { off.as_mut() }, n)))
}

/// # Safety
/// As `sendfile64(2)`.
#[no_mangle]
pub unsafe extern "C" fn sendfile64(out: c_int, input: c_int, off: *mut libc::off64_t, n: size_t) -> ssize_t {
    if !is_stack(out) {
        // SAFETY: forwarded as given.
        return unsafe { real::sendfile64(out, input, off, n) };
    }
    // SAFETY: `off` is null or the caller's offset.
    ret_size(with(|st| st.sendfile(out, input, unsafe { off.as_mut() }, n)))
}

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
