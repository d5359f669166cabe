//! The socket calls on stack sockets, with Linux's errno. Each returns `Ok(None)` where the call is the
//! kernel's after all (a socket bound or connected to an address the stack does not own).

use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

use libc::c_int;
use netstack::Error as NsError;

use crate::fdtable::{self, Kind};
use crate::real;
use crate::state::{errno, Errno, Opts, Phase, Proto, Res, State};

/// Linux's `sockaddr_in` length.
pub const SOCKADDR_IN_LEN: libc::socklen_t = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;

/// The IPv4 address in `addr` (`None` for another family or a short length).
///
/// # Safety
/// `addr` is null or points to `len` readable bytes.
pub unsafe fn read_sockaddr(addr: *const libc::sockaddr, len: libc::socklen_t) -> Option<SocketAddrV4> {
    if addr.is_null() || len < SOCKADDR_IN_LEN {
        return None;
    }
    // SAFETY: at least a sockaddr_in of readable bytes, per the caller; read unaligned.
    let sin = unsafe { std::ptr::read_unaligned(addr as *const libc::sockaddr_in) };
    if sin.sin_family != libc::AF_INET as libc::sa_family_t {
        return None;
    }
    Some(SocketAddrV4::new(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)), u16::from_be(sin.sin_port)))
}

/// Writes `a` to `addr` as Linux does: at most `*len` bytes, and `*len` set to the full length.
///
/// # Safety
/// `addr` and `len` are null or valid (`addr` for `*len` bytes).
pub unsafe fn write_sockaddr(a: SocketAddrV4, addr: *mut libc::sockaddr, len: *mut libc::socklen_t) {
    if addr.is_null() || len.is_null() {
        return;
    }
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(*a.ip()).to_be() },
        sin_zero: [0; 8],
    };
    // SAFETY: `len` is valid per the caller; we copy at most what it says `addr` holds.
    unsafe {
        let room = (*len as usize).min(SOCKADDR_IN_LEN as usize);
        std::ptr::copy_nonoverlapping(&sin as *const _ as *const u8, addr as *mut u8, room);
        *len = SOCKADDR_IN_LEN;
    }
}

/// Flags of a read or write call.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flags {
    pub dontwait: bool,
    pub nosignal: bool,
    pub peek: bool,
    pub waitall: bool,
}

impl Flags {
    /// From `MSG_*` flags; EOPNOTSUPP for those we do not serve (MSG_OOB).
    pub fn from_msg(flags: c_int) -> Res<Flags> {
        if flags & libc::MSG_OOB != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        Ok(Flags {
            dontwait: flags & libc::MSG_DONTWAIT != 0,
            nosignal: flags & libc::MSG_NOSIGNAL != 0,
            peek: flags & libc::MSG_PEEK != 0,
            waitall: flags & libc::MSG_WAITALL != 0,
        })
    }
}

fn ns_errno(e: &NsError) -> Errno {
    match e {
        NsError::WouldBlock => libc::EAGAIN,
        NsError::PortInUse(_) => libc::EADDRINUSE,
        NsError::NoEphemeralPort(_) => libc::EADDRNOTAVAIL,
        NsError::NotConnected => libc::ENOTCONN,
        NsError::TooLong { .. } => libc::EMSGSIZE,
        NsError::NoBuffers => libc::ENOBUFS,
        NsError::BadHandle(_) => libc::EBADF,
        _ => libc::EIO,
    }
}

/// Replaces kernel socket `fd` by a reserved descriptor of ours with the same number (an eventfd, keeping its
/// close-on-exec flag), and returns the socket's O_NONBLOCK.
fn reserve_in_place(fd: c_int) -> Res<bool> {
    // SAFETY: fcntl, eventfd, dup3 and close on descriptors we were handed or made here.
    unsafe {
        let fd_flags = real::fcntl(fd, libc::F_GETFD, 0);
        let fl = real::fcntl(fd, libc::F_GETFL, 0);
        if fd_flags < 0 || fl < 0 {
            return Err(errno());
        }
        let e = real::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC);
        if e < 0 {
            return Err(errno());
        }
        let cloexec = if fd_flags & libc::FD_CLOEXEC != 0 { libc::O_CLOEXEC } else { 0 };
        let r = real::dup3(e, fd, cloexec);
        let saved = errno();
        real::close(e);
        if r < 0 {
            return Err(saved);
        }
        Ok(fl & libc::O_NONBLOCK != 0)
    }
}

/// A new reserved descriptor (an eventfd).
fn reserve_new(cloexec: bool) -> Res<c_int> {
    let flags = libc::EFD_NONBLOCK | if cloexec { libc::EFD_CLOEXEC } else { 0 };
    // SAFETY: eventfd has no memory preconditions.
    let fd = unsafe { real::eventfd(0, flags) };
    if fd < 0 {
        Err(errno())
    } else {
        Ok(fd)
    }
}

fn timeout_deadline(t: Option<Duration>) -> Option<Instant> {
    t.map(|t| Instant::now() + t)
}

impl State {
    /// A kernel AF_INET socket was made: it may become ours at bind or connect.
    pub fn socket_made(&mut self, fd: c_int, proto: Proto) {
        if fdtable::set(fd, Kind::Pending) {
            self.pending.insert(fd, (proto, Opts::default()));
        }
    }

    /// Turns pending kernel socket `fd` into stack socket `phase` on `port`.
    fn convert(&mut self, fd: c_int, phase: Phase, port: u16) -> Res<u32> {
        let (proto, opts) = self.pending.get(&fd).copied().ok_or(libc::EBADF)?;
        if port != 0 && !self.bound.insert((proto, port)) {
            return Err(libc::EADDRINUSE);
        }
        let nonblock = match reserve_in_place(fd) {
            Ok(nb) => nb,
            Err(e) => {
                self.bound.remove(&(proto, port));
                return Err(e);
            }
        };
        self.pending.remove(&fd);
        let i = self.new_sock(proto, phase, port, nonblock, opts);
        self.attach(fd, i)?;
        Ok(i)
    }

    /// Forgets pending socket `fd`: it stays the kernel's.
    pub fn to_kernel(&mut self, fd: c_int) {
        self.pending.remove(&fd);
        fdtable::set(fd, Kind::Kernel);
    }

    /// `bind`.
    pub fn bind(&mut self, fd: c_int, addr: Option<SocketAddrV4>) -> Res<Option<()>> {
        if fdtable::kind(fd) == Kind::Stack {
            // Bound already (Linux: EINVAL).
            self.sock(fd)?;
            return Err(libc::EINVAL);
        }
        let Some(a) = addr else {
            self.to_kernel(fd);
            return Ok(None);
        };
        let ours = *a.ip() == self.addr() || (a.ip().is_unspecified() && self.any_to_stack);
        if !ours {
            self.to_kernel(fd);
            return Ok(None);
        }
        let proto = self.pending.get(&fd).map(|p| p.0).ok_or(libc::EBADF)?;
        let port = if a.port() == 0 && proto == Proto::Udp { self.ephemeral(proto)? } else { a.port() };
        let i = self.convert(fd, Phase::Bound, port)?;
        if proto == Proto::Udp && self.up.is_some() {
            self.udp_open(i)?;
        }
        Ok(Some(()))
    }

    fn udp_open(&mut self, i: u32) -> Res<()> {
        let port = self.at(i).port;
        let up = self.stack()?;
        let h = up.stack.udp_bind(port).map_err(|e| ns_errno(&e))?;
        self.set_handle(i, h);
        Ok(())
    }

    /// `listen`.
    pub fn listen(&mut self, fd: c_int) -> Res<Option<()>> {
        if fdtable::kind(fd) == Kind::Pending {
            // Unbound: Linux binds it to 0.0.0.0 and a free port.
            if !self.any_to_stack {
                self.to_kernel(fd);
                return Ok(None);
            }
            let port = self.ephemeral(Proto::Tcp)?;
            self.convert(fd, Phase::Bound, port)?;
        }
        let i = self.sock_of(fd)?;
        let s = self.at(i);
        if s.proto != Proto::Tcp {
            return Err(libc::EOPNOTSUPP);
        }
        match s.phase {
            Phase::Listening => return Ok(Some(())),
            Phase::Bound => {}
            _ => return Err(libc::EINVAL),
        }
        if s.port == 0 {
            let port = self.ephemeral(Proto::Tcp)?;
            self.bound.insert((Proto::Tcp, port));
            self.at(i).port = port;
        }
        self.at(i).phase = Phase::Listening;
        if self.up.is_some() {
            let port = self.at(i).port;
            let up = self.stack()?;
            match up.stack.listen(port) {
                Ok(h) => self.set_handle(i, h),
                Err(e) => {
                    self.at(i).phase = Phase::Bound;
                    return Err(ns_errno(&e));
                }
            }
        }
        Ok(Some(()))
    }

    /// `accept4`: the new descriptor and the peer.
    pub fn accept(&mut self, fd: c_int, flags: c_int) -> Res<(c_int, SocketAddrV4)> {
        let i = self.sock_of(fd)?;
        if self.at(i).phase != Phase::Listening {
            return Err(libc::EINVAL);
        }
        self.stack()?;
        let (nonblock, timeout) = (self.at(i).nonblock, self.at(i).opts.rcvtimeo);
        let deadline = timeout_deadline(timeout);
        loop {
            let Some(lh) = self.at(i).handle else { return Err(libc::EINVAL) };
            let up = self.stack()?;
            match up.stack.accept(lh) {
                Ok(h) => {
                    let peer = up.stack.peer_addr(h).unwrap_or(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));
                    let waiting = up.stack.recv_queue(lh).unwrap_or(0);
                    let port = self.at(i).port;
                    self.at(i).rx_mark = waiting;
                    let opts = self.at(i).opts;
                    let nfd = match reserve_new(flags & libc::SOCK_CLOEXEC != 0) {
                        Ok(nfd) => nfd,
                        Err(e) => {
                            let _ = self.stack()?.stack.abort(h);
                            return Err(e);
                        }
                    };
                    let ni = self.new_sock(Proto::Tcp, Phase::Connected, port, flags & libc::SOCK_NONBLOCK != 0, opts);
                    self.set_handle(ni, h);
                    if let Err(e) = self.attach(nfd, ni) {
                        // SAFETY: our own descriptor.
                        unsafe { real::close(nfd) };
                        let _ = self.stack()?.stack.abort(h);
                        return Err(e);
                    }
                    self.at(ni).refs = 1;
                    if !opts.nodelay {
                        // netstack turns Nagle off by default; Linux has it on until TCP_NODELAY.
                        let _ = self.stack()?.stack.set_nodelay(h, false);
                    }
                    return Ok((nfd, peer));
                }
                Err(NsError::WouldBlock) if nonblock => return Err(libc::EAGAIN),
                Err(NsError::WouldBlock) => {
                    self.block_until(deadline, |st| {
                        st.up.as_ref().is_some_and(|u| u.stack.recv_queue(lh).unwrap_or(0) > 0)
                    })?;
                }
                Err(e) => return Err(ns_errno(&e)),
            }
        }
    }

    /// `connect`.
    pub fn connect(&mut self, fd: c_int, addr: Option<SocketAddrV4>) -> Res<Option<()>> {
        let Some(a) = addr else {
            if fdtable::kind(fd) == Kind::Pending {
                self.to_kernel(fd);
                return Ok(None);
            }
            return Err(libc::EAFNOSUPPORT);
        };
        if fdtable::kind(fd) == Kind::Pending {
            if !self.routes(*a.ip()) {
                self.to_kernel(fd);
                return Ok(None);
            }
            let proto = self.pending.get(&fd).map(|p| p.0).ok_or(libc::EBADF)?;
            let port = if proto == Proto::Udp { self.ephemeral(proto)? } else { 0 };
            self.convert(fd, Phase::Bound, port)?;
        }
        let i = self.sock_of(fd)?;
        if self.at(i).proto == Proto::Udp {
            if self.at(i).handle.is_none() {
                self.udp_open(i)?;
            }
            self.at(i).peer = Some(a);
            return Ok(Some(()));
        }
        match self.at(i).phase {
            Phase::Connecting => return Err(libc::EALREADY),
            Phase::Connected => {
                let e = std::mem::take(&mut self.at(i).so_error);
                return Err(if e != 0 { e } else { libc::EISCONN });
            }
            Phase::Listening => return Err(libc::EINVAL),
            Phase::Bound => {}
        }
        let bound_port = self.at(i).port;
        if bound_port != 0 {
            self.log_once(format!(
                "fd {fd}: connect from a bound port ({bound_port}) is not supported: the stack picks the local port"
            ));
            return Err(libc::EOPNOTSUPP);
        }
        let nodelay = self.at(i).opts.nodelay;
        let up = self.stack()?;
        let h = up.stack.connect(a).map_err(|e| ns_errno(&e))?;
        if !nodelay {
            let _ = up.stack.set_nodelay(h, false);
        }
        let local = up.stack.local_addr(h).map(|l| l.port()).unwrap_or(0);
        self.set_handle(i, h);
        let s = self.at(i);
        s.phase = Phase::Connecting;
        s.peer = Some(a);
        s.port = local;
        if s.nonblock {
            return Err(libc::EINPROGRESS);
        }
        let deadline = timeout_deadline(s.opts.sndtimeo);
        self.block_until(deadline, |st| {
            let ev = st.events_of(i);
            ev & (libc::EPOLLOUT | libc::EPOLLERR) as u32 != 0
        })
        .map_err(|e| if e == libc::EAGAIN { libc::EINPROGRESS } else { e })?;
        let s = self.at(i);
        if s.so_error != 0 {
            return Err(std::mem::take(&mut s.so_error));
        }
        s.phase = Phase::Connected;
        Ok(Some(()))
    }

    /// The connection of socket `i`, waiting (for a blocking socket) while it is still opening.
    fn conn_handle(&mut self, i: u32, nonblock: bool) -> Res<netstack::Handle> {
        loop {
            let s = self.at(i);
            match (s.phase, s.handle) {
                (Phase::Connected, Some(h)) => return Ok(h),
                (Phase::Connecting, Some(_)) if nonblock => return Err(libc::EAGAIN),
                (Phase::Connecting, Some(_)) => {
                    let deadline = timeout_deadline(s.opts.sndtimeo);
                    self.block_until(deadline, |st| st.at(i).phase != Phase::Connecting || st.events_of(i) != 0)?;
                    let s = self.at(i);
                    if s.so_error != 0 {
                        return Err(std::mem::take(&mut s.so_error));
                    }
                    if s.phase == Phase::Connecting {
                        s.phase = Phase::Connected;
                    }
                }
                _ => return Err(libc::ENOTCONN),
            }
        }
    }

    /// `recv` into `bufs` (readv, recvmsg: several buffers); the peer for UDP.
    pub fn recv(&mut self, fd: c_int, bufs: &mut [&mut [u8]], flags: Flags) -> Res<(usize, Option<SocketAddrV4>)> {
        let i = self.sock_of(fd)?;
        let want: usize = bufs.iter().map(|b| b.len()).sum();
        let nonblock = self.at(i).nonblock || flags.dontwait;
        if self.at(i).proto == Proto::Udp {
            return self.recv_udp(i, bufs, nonblock, flags);
        }
        let h = self.conn_handle(i, nonblock)?;
        self.stack()?;
        let deadline = timeout_deadline(self.at(i).opts.rcvtimeo);
        let mut got = 0;
        loop {
            if self.at(i).shut_rd {
                return Ok((got, None));
            }
            self.events_of(i);
            let s = self.at(i);
            if s.so_error != 0 && got == 0 {
                return Err(std::mem::take(&mut s.so_error));
            }
            let up = self.up.as_mut().expect("checked by stack()");
            let mut eof = false;
            let mut offset = got;
            for b in bufs.iter_mut() {
                if offset >= b.len() {
                    offset -= b.len();
                    continue;
                }
                let r =
                    if flags.peek { up.stack.peek(h, &mut b[offset..]) } else { up.stack.read(h, &mut b[offset..]) };
                match r {
                    Ok(0) => {
                        eof = true;
                        break;
                    }
                    Ok(n) => {
                        got += n;
                        if n < b.len() - offset {
                            break;
                        }
                        offset = 0;
                    }
                    Err(NsError::WouldBlock) => break,
                    Err(e) => {
                        if got == 0 {
                            return Err(ns_errno(&e));
                        }
                        break;
                    }
                }
                if flags.peek {
                    break;
                }
            }
            let left = up.stack.recv_queue(h).unwrap_or(0);
            self.at(i).rx_mark = left;
            if eof || want == 0 || (got > 0 && (!flags.waitall || got == want)) || (got > 0 && flags.peek) {
                return Ok((got, None));
            }
            if nonblock {
                return if got > 0 { Ok((got, None)) } else { Err(libc::EAGAIN) };
            }
            self.block_until(deadline, |st| st.events_of(i) & (libc::EPOLLIN | libc::EPOLLERR) as u32 != 0)
                .or_else(|e| if e == libc::EAGAIN && got > 0 { Ok(()) } else { Err(e) })?;
            if deadline.is_some_and(|d| Instant::now() >= d) && got > 0 {
                return Ok((got, None));
            }
        }
    }

    fn recv_udp(
        &mut self,
        i: u32,
        bufs: &mut [&mut [u8]],
        nonblock: bool,
        flags: Flags,
    ) -> Res<(usize, Option<SocketAddrV4>)> {
        if self.at(i).handle.is_none() {
            self.udp_open(i)?;
        }
        let h = self.at(i).handle.expect("opened above");
        if flags.peek {
            self.log_once("MSG_PEEK on a UDP stack socket is not supported".into());
            return Err(libc::EOPNOTSUPP);
        }
        let deadline = timeout_deadline(self.at(i).opts.rcvtimeo);
        loop {
            let up = self.stack()?;
            match up.stack.recv_from(h) {
                Ok(d) => {
                    let mut data = d.payload();
                    let mut n = 0;
                    for b in bufs.iter_mut() {
                        let k = b.len().min(data.len());
                        b[..k].copy_from_slice(&data[..k]);
                        data = &data[k..];
                        n += k;
                    }
                    let left = up.stack.recv_queue(h).unwrap_or(0);
                    self.at(i).rx_mark = left;
                    return Ok((n, Some(d.from)));
                }
                Err(NsError::WouldBlock) if nonblock => return Err(libc::EAGAIN),
                Err(NsError::WouldBlock) => {
                    self.block_until(deadline, |st| st.events_of(i) & libc::EPOLLIN as u32 != 0)?;
                }
                Err(e) => return Err(ns_errno(&e)),
            }
        }
    }

    /// `send` from `bufs` (writev, sendmsg); `to` for UDP's sendto.
    pub fn send(&mut self, fd: c_int, bufs: &[&[u8]], flags: Flags, to: Option<SocketAddrV4>) -> Res<usize> {
        let i = self.sock_of(fd)?;
        let nonblock = self.at(i).nonblock || flags.dontwait;
        if self.at(i).proto == Proto::Udp {
            return self.send_udp(i, bufs, to);
        }
        let h = match self.conn_handle(i, nonblock) {
            Ok(h) => h,
            Err(libc::ENOTCONN) if self.at(i).phase == Phase::Bound => return Err(self.epipe(flags)),
            Err(e) => return Err(e),
        };
        self.stack()?;
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let deadline = timeout_deadline(self.at(i).opts.sndtimeo);
        let mut sent = 0;
        loop {
            if self.at(i).shut_wr {
                return if sent > 0 { Ok(sent) } else { Err(self.epipe(flags)) };
            }
            self.events_of(i);
            let s = self.at(i);
            if s.so_error != 0 && sent == 0 {
                return Err(std::mem::take(&mut s.so_error));
            }
            let up = self.up.as_mut().expect("checked by stack()");
            let mut skip = sent;
            let mut full = false;
            let mut closed = false;
            for b in bufs {
                if skip >= b.len() {
                    skip -= b.len();
                    continue;
                }
                let part = &b[skip..];
                skip = 0;
                match up.stack.write(h, part) {
                    Ok(n) => {
                        sent += n;
                        if n < part.len() {
                            // Full: one more try makes the stack report Writable when room comes back (an
                            // epoll waiter for EPOLLOUT needs that edge).
                            let _ = up.stack.write(h, &part[n..]).map(|m| sent += m);
                            full = true;
                            break;
                        }
                    }
                    Err(NsError::WouldBlock) => {
                        full = true;
                        break;
                    }
                    Err(_) => {
                        closed = true;
                        break;
                    }
                }
            }
            if closed && sent == 0 {
                self.events_of(i);
                let s = self.at(i);
                if s.so_error != 0 {
                    return Err(std::mem::take(&mut s.so_error));
                }
                return Err(self.epipe(flags));
            }
            if !nonblock {
                // A blocking writer may wait in the kernel next (not in the stack): the data goes now.
                up.stack.flush_writes();
            }
            if sent == total || closed || (sent > 0 && nonblock) {
                return Ok(sent);
            }
            if nonblock {
                return Err(libc::EAGAIN);
            }
            debug_assert!(full);
            match self.block_until(deadline, |st| st.events_of(i) & (libc::EPOLLOUT | libc::EPOLLERR) as u32 != 0) {
                Ok(()) => {}
                Err(libc::EAGAIN) if sent > 0 => return Ok(sent),
                Err(e) => return Err(e),
            }
        }
    }

    /// EPIPE, with SIGPIPE to the calling thread unless MSG_NOSIGNAL.
    fn epipe(&self, flags: Flags) -> Errno {
        if !flags.nosignal {
            // SAFETY: raise sends a signal to the calling thread; no memory is involved.
            unsafe { libc::raise(libc::SIGPIPE) };
        }
        libc::EPIPE
    }

    fn send_udp(&mut self, i: u32, bufs: &[&[u8]], to: Option<SocketAddrV4>) -> Res<usize> {
        let to = to.or(self.at(i).peer).ok_or(libc::EDESTADDRREQ)?;
        if self.at(i).handle.is_none() {
            self.udp_open(i)?;
        }
        let h = self.at(i).handle.expect("opened above");
        let data: Vec<u8> = bufs.concat();
        let up = self.stack()?;
        up.stack.send_to(h, to, &data).map_err(|e| ns_errno(&e))?;
        Ok(data.len())
    }

    /// `sendfile` from kernel descriptor `input` to stack socket `fd`: the file is read straight into the
    /// connection's send buffer. `offset`: read there (`pread`) and advance it; `None`: the file's position.
    pub fn sendfile(&mut self, fd: c_int, input: c_int, offset: Option<&mut i64>, count: usize) -> Res<usize> {
        let i = self.sock_of(fd)?;
        if self.at(i).proto != Proto::Tcp {
            return Err(libc::EINVAL);
        }
        let nonblock = self.at(i).nonblock;
        let h = self.conn_handle(i, nonblock)?;
        let deadline = timeout_deadline(self.at(i).opts.sndtimeo);
        let mut pos = offset.as_ref().map(|o| **o);
        let mut sent = 0usize;
        let mut read_error = 0;
        while sent < count {
            if self.at(i).shut_wr {
                break;
            }
            let up = self.stack()?;
            let mut eof = false;
            let r = up.stack.write_with(h, |room| {
                let want = room.len().min(count - sent);
                // SAFETY: `room` is writable for `want` bytes; `input` is the caller's descriptor.
                let n = unsafe {
                    match pos {
                        Some(p) => libc::pread64(input, room.as_mut_ptr().cast(), want, p),
                        None => real::read(input, room.as_mut_ptr().cast(), want),
                    }
                };
                if n < 0 {
                    read_error = errno();
                    0
                } else {
                    eof = n == 0;
                    n as usize
                }
            });
            match r {
                Ok(n) => {
                    sent += n;
                    if let Some(p) = pos.as_mut() {
                        *p += n as i64;
                    }
                    if read_error != 0 || eof {
                        break;
                    }
                }
                Err(NsError::WouldBlock) => {
                    // A write that finds no room makes the stack report Writable when room comes back (an
                    // edge-triggered EPOLLOUT waiter needs it); with no room, the byte is not taken.
                    let _ = up.stack.write(h, &[0]);
                    if nonblock {
                        break;
                    }
                    match self
                        .block_until(deadline, |st| st.events_of(i) & (libc::EPOLLOUT | libc::EPOLLERR) as u32 != 0)
                    {
                        Ok(()) => {}
                        Err(libc::EAGAIN) => break,
                        Err(e) if sent == 0 => return Err(e),
                        Err(_) => break,
                    }
                }
                Err(_) if sent > 0 => break,
                Err(_) => return Err(self.epipe(Flags::default())),
            }
        }
        if let (Some(o), Some(p)) = (offset, pos) {
            *o = p;
        }
        if sent == 0 {
            if read_error != 0 {
                return Err(read_error);
            }
            if nonblock && count > 0 {
                return Err(libc::EAGAIN);
            }
        }
        Ok(sent)
    }

    /// `close` of stack socket or epoll descriptor `fd`: the connection ends once its last descriptor is closed
    /// (FIN after the queued data; a reset with SO_LINGER 0).
    pub fn close(&mut self, fd: c_int) {
        match fdtable::kind(fd) {
            Kind::Pending => self.to_kernel(fd),
            Kind::Epoll => {
                self.drop_epoll(fd);
                fdtable::set(fd, Kind::Kernel);
            }
            Kind::Stack => {
                if let Some(s) = self.detach(fd) {
                    self.unwatch(&s.watchers);
                    self.bound.remove(&(s.proto, s.port));
                    if let Some(h) = s.handle {
                        if self.polls_here() {
                            let up = self.up.as_mut().expect("polls_here");
                            let _ = if s.opts.linger == Some(0) { up.stack.abort(h) } else { up.stack.close(h) };
                            // The FIN (or reset) goes now: the application may not call into the stack again soon.
                            up.stack.flush_writes();
                        }
                    }
                }
            }
            Kind::Kernel => {}
        }
    }

    /// `dup`-family: `new` (a fresh number from the kernel) names the same socket as `old`.
    pub fn dup_to(&mut self, old: c_int, new: c_int) -> Res<()> {
        let i = self.sock_of(old)?;
        self.attach(new, i)?;
        self.at(i).refs += 1;
        Ok(())
    }

    /// `shutdown`.
    pub fn shutdown(&mut self, fd: c_int, how: c_int) -> Res<()> {
        let i = self.sock_of(fd)?;
        let (rd, wr) = match how {
            libc::SHUT_RD => (true, false),
            libc::SHUT_WR => (false, true),
            libc::SHUT_RDWR => (true, true),
            _ => return Err(libc::EINVAL),
        };
        let s = self.at(i);
        if s.proto == Proto::Tcp && !matches!(s.phase, Phase::Connected | Phase::Connecting) {
            return Err(libc::ENOTCONN);
        }
        let h = s.handle;
        if wr && !s.shut_wr {
            if let Some(h) = h {
                if s.proto == Proto::Tcp {
                    self.stack()?.stack.shutdown_write(h).map_err(|e| ns_errno(&e))?;
                }
            }
        }
        let s = self.at(i);
        s.shut_rd |= rd;
        s.shut_wr |= wr;
        self.notify(i);
        if wr && self.polls_here() {
            self.up.as_mut().expect("polls_here").stack.flush_writes();
        }
        Ok(())
    }

    /// `getsockname`.
    pub fn local_addr(&mut self, fd: c_int) -> Res<SocketAddrV4> {
        let i = self.sock_of(fd)?;
        let addr = self.addr();
        let s = self.at(i);
        let (port, h) = (s.port, s.handle);
        if let (Some(h), Some(up)) = (h, self.up.as_ref()) {
            if let Ok(a) = up.stack.local_addr(h) {
                return Ok(a);
            }
        }
        Ok(SocketAddrV4::new(addr, port))
    }

    /// `getpeername`.
    pub fn peer_addr(&mut self, fd: c_int) -> Res<SocketAddrV4> {
        let i = self.sock_of(fd)?;
        let s = self.at(i);
        if s.proto == Proto::Udp {
            return s.peer.ok_or(libc::ENOTCONN);
        }
        if s.phase != Phase::Connected {
            return Err(libc::ENOTCONN);
        }
        let h = s.handle.ok_or(libc::ENOTCONN)?;
        match self.up.as_ref().map(|u| u.stack.peer_addr(h)) {
            Some(Ok(a)) => Ok(a),
            _ => self.at(i).peer.ok_or(libc::ENOTCONN),
        }
    }

    /// FIONREAD.
    pub fn bytes_waiting(&mut self, fd: c_int) -> Res<usize> {
        let i = self.sock_of(fd)?;
        let (h, proto) = (self.at(i).handle, self.at(i).proto);
        match (h, self.up.as_ref()) {
            (Some(h), Some(up)) if proto == Proto::Tcp => Ok(up.stack.recv_queue(h).unwrap_or(0)),
            (Some(_), Some(_)) => {
                self.log_once("FIONREAD on a UDP stack socket is not supported".into());
                Err(libc::EOPNOTSUPP)
            }
            _ => Ok(0),
        }
    }
}
