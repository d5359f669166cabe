//! socket, bind, listen, accept, accept4 and connect: how a socket becomes the stack's.

use super::*;

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
