//! The next definitions of the calls we interpose (libc's), found with `dlsym(RTLD_NEXT)` on first use. Each
//! pointer is resolved without a lock (a racing second resolution stores the same value), so a call made while
//! another is being resolved cannot deadlock, and nothing here allocates.

use std::sync::atomic::{AtomicUsize, Ordering};

use libc::{c_char, c_int, c_uint, c_void, size_t, sockaddr, socklen_t, ssize_t};

/// The address of `name` (NUL-terminated) in the objects after ours; aborts with a message if there is none.
fn resolve(name: &'static str) -> usize {
    // SAFETY: `name` is NUL-terminated (the macro appends the NUL); RTLD_NEXT searches the objects after ours.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr() as *const c_char) };
    if p.is_null() {
        let msg = format!("netstack-preload: no next definition of {}\n", name.trim_end_matches('\0'));
        // SAFETY: writing a buffer we own to stderr, then aborting: nothing can be done without libc's call.
        unsafe {
            libc::syscall(libc::SYS_write, 2, msg.as_ptr(), msg.len());
            libc::abort();
        }
    }
    p as usize
}

macro_rules! real {
    ($( fn $name:ident($($a:ident: $t:ty),* $(,)?) -> $r:ty; )*) => { $(
        #[doc = concat!("libc's `", stringify!($name), "`.")]
        #[allow(clippy::missing_safety_doc)]
        #[inline]
        pub unsafe fn $name($($a: $t),*) -> $r {
            static PTR: AtomicUsize = AtomicUsize::new(0);
            let mut p = PTR.load(Ordering::Relaxed);
            if p == 0 {
                p = resolve(concat!(stringify!($name), "\0"));
                PTR.store(p, Ordering::Relaxed);
            }
            // SAFETY: `p` is libc's definition of this very function, whose C signature the macro spells out.
            let f: unsafe extern "C" fn($($t),*) -> $r = unsafe { std::mem::transmute::<usize, _>(p) };
            // SAFETY: the caller upholds the C function's contract.
            unsafe { f($($a),*) }
        }
    )* };
}

real! {
    fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int;
    fn bind(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int;
    fn listen(fd: c_int, backlog: c_int) -> c_int;
    fn accept(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    fn accept4(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int;
    fn connect(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int;
    fn read(fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t;
    fn write(fd: c_int, buf: *const c_void, n: size_t) -> ssize_t;
    fn readv(fd: c_int, iov: *const libc::iovec, n: c_int) -> ssize_t;
    fn writev(fd: c_int, iov: *const libc::iovec, n: c_int) -> ssize_t;
    fn recv(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int) -> ssize_t;
    fn recvfrom(fd: c_int, buf: *mut c_void, n: size_t, flags: c_int, a: *mut sockaddr, l: *mut socklen_t) -> ssize_t;
    fn recvmsg(fd: c_int, msg: *mut libc::msghdr, flags: c_int) -> ssize_t;
    fn send(fd: c_int, buf: *const c_void, n: size_t, flags: c_int) -> ssize_t;
    fn sendto(fd: c_int, buf: *const c_void, n: size_t, flags: c_int, a: *const sockaddr, l: socklen_t) -> ssize_t;
    fn sendmsg(fd: c_int, msg: *const libc::msghdr, flags: c_int) -> ssize_t;
    fn sendfile(out: c_int, input: c_int, off: *mut libc::off_t, n: size_t) -> ssize_t;
    fn sendfile64(out: c_int, input: c_int, off: *mut libc::off64_t, n: size_t) -> ssize_t;
    fn close(fd: c_int) -> c_int;
    fn shutdown(fd: c_int, how: c_int) -> c_int;
    fn setsockopt(fd: c_int, level: c_int, name: c_int, val: *const c_void, len: socklen_t) -> c_int;
    fn getsockopt(fd: c_int, level: c_int, name: c_int, val: *mut c_void, len: *mut socklen_t) -> c_int;
    fn getsockname(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    fn getpeername(fd: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    fn dup(fd: c_int) -> c_int;
    fn dup2(old: c_int, new: c_int) -> c_int;
    fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int;
    fn epoll_create(size: c_int) -> c_int;
    fn epoll_create1(flags: c_int) -> c_int;
    fn epoll_ctl(epfd: c_int, op: c_int, fd: c_int, ev: *mut libc::epoll_event) -> c_int;
    fn epoll_wait(epfd: c_int, ev: *mut libc::epoll_event, max: c_int, timeout: c_int) -> c_int;
    fn epoll_pwait(epfd: c_int, ev: *mut libc::epoll_event, max: c_int, timeout: c_int, mask: *const libc::sigset_t) -> c_int;
    fn poll(fds: *mut libc::pollfd, n: libc::nfds_t, timeout: c_int) -> c_int;
    fn ppoll(fds: *mut libc::pollfd, n: libc::nfds_t, ts: *const libc::timespec, mask: *const libc::sigset_t) -> c_int;
    fn select(n: c_int, r: *mut libc::fd_set, w: *mut libc::fd_set, e: *mut libc::fd_set, t: *mut libc::timeval) -> c_int;
    fn pselect(n: c_int, r: *mut libc::fd_set, w: *mut libc::fd_set, e: *mut libc::fd_set, t: *const libc::timespec, mask: *const libc::sigset_t) -> c_int;
    fn fork() -> libc::pid_t;
    fn sigaction(sig: c_int, act: *const libc::sigaction, old: *mut libc::sigaction) -> c_int;
    fn eventfd(init: c_uint, flags: c_int) -> c_int;
}

/// libc's `fcntl` (variadic: the third argument is an integer or a pointer, passed in the same register).
///
/// # Safety
/// As `fcntl(2)` for `cmd` and `arg`.
pub unsafe fn fcntl(fd: c_int, cmd: c_int, arg: usize) -> c_int {
    static PTR: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: the caller upholds the call's contract.
    unsafe { variadic3(&PTR, "fcntl\0", fd, cmd as usize, arg) }
}

/// libc's `fcntl64`.
///
/// # Safety
/// As `fcntl(2)`.
pub unsafe fn fcntl64(fd: c_int, cmd: c_int, arg: usize) -> c_int {
    static PTR: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: the caller upholds the call's contract.
    unsafe { variadic3(&PTR, "fcntl64\0", fd, cmd as usize, arg) }
}

/// libc's `ioctl`.
///
/// # Safety
/// As `ioctl(2)` for `request` and `arg`.
pub unsafe fn ioctl(fd: c_int, request: libc::c_ulong, arg: usize) -> c_int {
    static PTR: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: the caller upholds the call's contract.
    unsafe { variadic3(&PTR, "ioctl\0", fd, request as usize, arg) }
}

unsafe fn variadic3(ptr: &AtomicUsize, name: &'static str, fd: c_int, b: usize, arg: usize) -> c_int {
    let mut p = ptr.load(Ordering::Relaxed);
    if p == 0 {
        p = resolve(name);
        ptr.store(p, Ordering::Relaxed);
    }
    // SAFETY: `p` is libc's fcntl/fcntl64/ioctl, variadic after two arguments; `b` fits the second (an int or
    // unsigned long, both passed as a full register) and the third is an integer or pointer.
    let f: unsafe extern "C" fn(c_int, usize, ...) -> c_int = unsafe { std::mem::transmute::<usize, _>(p) };
    // SAFETY: the caller upholds the call's contract.
    unsafe { f(fd, b, arg) }
}
