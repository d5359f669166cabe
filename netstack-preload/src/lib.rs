//! netstack-preload: `libnetstack_preload.so`, which puts an unmodified application (Debian's redis-server,
//! nginx) on netstack with `LD_PRELOAD`, as K-NET's `libknet_frame.so` and F-Stack's adapter do:
//!
//! ```text
//! NETSTACK_CONFIG=redis.toml LD_PRELOAD=target/release/libnetstack_preload.so \
//!     redis-server --port 6380 --bind 10.0.0.2
//! ```
//!
//! `NETSTACK_CONFIG` is the servers' TOML file (`netstack::config`: port with devargs or a PCI address, MAC,
//! IPv4 address/prefix, gateway, one lcore, memory, TCP sizes, control socket). Without it the library does
//! nothing (every call is the kernel's, and it says so once on stderr).
//!
//! # Which sockets are the stack's
//! An AF_INET TCP or UDP socket becomes a stack socket when it is bound to the configured address (or to
//! 0.0.0.0, unless `NETSTACK_PRELOAD_ANY=kernel`) or connected to an address on the configured subnet; `listen`
//! on an unbound socket listens on the stack too (as Linux binds it to 0.0.0.0). Everything else stays the
//! kernel's, untouched: files, pipes, UNIX sockets, IPv6, loopback (a Redis admin socket on 127.0.0.1 or a
//! UNIX socket works in the same process), other addresses. Until it is bound or connected an AF_INET socket
//! is a kernel socket whose options are recorded; at that point its number is taken over by an eventfd of
//! ours (dup3 onto it), so a stack socket's descriptor is a real kernel descriptor: numbers never collide,
//! close-on-exec is the kernel's, `dup` works. The port comes up (through the EAL, on the configuration's
//! device) the first time a thread waits on, accepts from or connects a stack socket; that thread then owns
//! the stack and polls it from inside its own calls.
//!
//! # Intercepted calls
//! `socket`, `bind`, `listen`, `accept`, `accept4`, `connect` (non-blocking: EINPROGRESS, then EPOLLOUT and
//! `SO_ERROR`), `read`, `write`, `readv`, `writev`, `recv`, `recvfrom`, `recvmsg`, `send`, `sendto`,
//! `sendmsg`, `sendfile`/`sendfile64` (the file is read straight into the connection's send buffer),
//! `close`, `shutdown`, `setsockopt`/`getsockopt`, `getsockname`, `getpeername`, `fcntl`/`fcntl64`
//! (O_NONBLOCK, FD_CLOEXEC, F_DUPFD), `ioctl` (FIONBIO, FIONREAD), `dup`, `dup2`, `dup3`, `epoll_ctl`,
//! `epoll_wait`, `epoll_pwait`, `poll`, `ppoll`, `select`, `pselect`, `fork`, and `sigaction`/`signal` (the
//! application's handlers are wrapped to count the signals a thread receives: a wait that spins in user space
//! fails with EINTR after a handler ran, as the kernel's does; see [`signals`]). `epoll_create`/`epoll_create1`
//! need nothing of ours: a set becomes mixed when its first stack socket is added. Flags: MSG_DONTWAIT,
//! MSG_NOSIGNAL, MSG_PEEK (TCP), MSG_WAITALL. Errors are Linux's: EAGAIN, EINPROGRESS, EALREADY, EISCONN,
//! ECONNREFUSED, ECONNRESET (once, then EPIPE), EPIPE with SIGPIPE unless MSG_NOSIGNAL, EADDRINUSE, ENOTCONN.
//!
//! # Mixed epoll sets, poll and select
//! An epoll set keeps the application's kernel descriptors in the kernel's set and its stack sockets in a
//! user-space interest list with a ready list (level-triggered, EPOLLET, EPOLLONESHOT, EPOLLRDHUP; see
//! [`epoll`]). A wait polls the stack, reports both kinds in one call, and when nothing is ready follows the
//! runtime's idle policy: it polls on (yielding the core between polls) for `netstack::runtime`'s idle spin
//! after the last traffic (`NETSTACK_PRELOAD_SPIN_US` to change it), then sleeps in the kernel's `epoll_wait`
//! on the set itself, to which the port's descriptor (af_packet, af_xdp, TAP: `RxQueue::wait_fd`) and the
//! control socket were added, until a packet, a kernel descriptor, the stack's next timer or the caller's
//! timeout. `poll`/`select` do the same with a copy of the array. Ports without a descriptor (NIC drivers)
//! are polled without sleeping. `netstack-ctl --config FILE counters` reads the stack's counters while the
//! application runs.
//!
//! # Processes and threads (what is supported)
//! - One event loop per process, on one thread: the thread that brought the stack up (Redis's main thread,
//!   nginx's worker) is the only one that may use stack sockets; another thread gets EPERM and a log line.
//!   Kernel descriptors work from any thread and from signal handlers (no lock on that path); a signal
//!   handler that calls into a stack socket while its thread is inside the library gets EAGAIN.
//! - `fork` after the stack is up (Redis BGSAVE, BGREWRITEAOF): the child never polls the port; its stack
//!   sockets can only be closed (which does not touch the parent's connections). Everything else on them is
//!   EPERM with a log line.
//! - `fork` before the stack is up (nginx `master_process on`): sockets bound and listening in the parent are
//!   inherited; the first process that waits on them brings the port up and owns it (a word shared across
//!   the forks records who), and any other gets EPERM: nginx with `worker_processes 1`. The master keeps no
//!   stack.
//! - `exec` ends the library's knowledge of its sockets (the new program sees eventfds): nginx's binary
//!   upgrade is not supported.
//!
//! # Not supported
//! IPv6 (AF_INET6 sockets are the kernel's), a bind to our address with a port followed by `connect` (the
//! stack picks the local port: EOPNOTSUPP), more than one socket on a port (SO_REUSEPORT is recorded, not
//! acted on), MSG_OOB, MSG_PEEK and FIONREAD on UDP, ancillary data (`sendmsg` control messages), stdio
//! streams on stack sockets (`fdopen`: libc's internal calls bypass interposition), `close_range`,
//! `epoll_pwait2`, the fortified `__read_chk`/`__recv_chk` entry points, more than one lcore (one stack per
//! process), TIME-WAIT and the other limits of netstack itself. Options: SO_REUSEADDR, SO_REUSEPORT,
//! SO_KEEPALIVE, TCP_KEEPIDLE/INTVL/CNT, TCP_CORK, SO_RCVBUF/SNDBUF are accepted and reported back; the
//! stack's keep-alive and buffer sizes are the configuration's. TCP_NODELAY takes effect (netstack's default
//! is no Nagle; an accepted or connected socket starts with Nagle on, as Linux's), SO_LINGER 0 makes close
//! send a reset, SO_RCVTIMEO/SO_SNDTIMEO bound blocking calls. Any other option, fcntl command or ioctl fails
//! with ENOPROTOOPT, EINVAL or ENOTTY and a one-time log line; a call on a stack socket never goes to the
//! kernel silently.

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod calls;
pub mod epoll;
#[cfg(all(feature = "interpose", not(test)))]
mod exports;
pub mod fdtable;
pub mod lock;
pub mod real;
pub mod signals;
pub mod sockopt;
pub mod state;
