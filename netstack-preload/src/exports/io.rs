//! The data calls: read, write, readv, writev, recv*, send* and sendfile.

use super::*;

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
