//! The socket side: DPDK's v2 path for a file prefix, a listening `SOCK_SEQPACKET` socket, one thread per client
//! (as DPDK), each request one message and each answer one message.

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::{Telemetry, MAX_CMD_LEN};

/// The socket's file name, as DPDK 22.11's.
pub const SOCKET_NAME: &str = "dpdk_telemetry.v2";

/// Where DPDK (and `dpdk-telemetry.py -f PREFIX`) puts the runtime files of `file_prefix`: `$RUNTIME_DIRECTORY`,
/// else `/var/run` for root and `$XDG_RUNTIME_DIR` (or `/tmp`) otherwise, then `dpdk/<prefix>`.
pub fn runtime_dir(file_prefix: &str) -> PathBuf {
    let base = match std::env::var_os("RUNTIME_DIRECTORY") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        // SAFETY: getuid has no preconditions.
        _ if unsafe { libc::getuid() } == 0 => PathBuf::from("/var/run"),
        _ => std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()).map_or("/tmp".into(), PathBuf::from),
    };
    base.join("dpdk").join(file_prefix)
}

/// The socket path of `file_prefix` (the first instance; later ones get `:1`, `:2`, as newer DPDK names them).
pub fn socket_path(file_prefix: &str) -> PathBuf {
    runtime_dir(file_prefix).join(SOCKET_NAME)
}

/// The listening socket and its accept thread; dropping it closes the socket and removes its file.
#[derive(Debug)]
pub struct Server {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    listener: Arc<OwnedFd>,
    thread: Option<JoinHandle<()>>,
}

fn sockaddr(path: &Path) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_encoded_bytes();
    if bytes.len() >= addr.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is too long for a socket", path.display()),
        ));
    }
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    Ok((addr, std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t))
}

fn seqpacket() -> io::Result<OwnedFd> {
    // SAFETY: socket() takes no pointers; a non-negative result is a new descriptor we own.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by socket() and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Connects a `SOCK_SEQPACKET` client to `path` (tests, and the check for a live server).
pub fn connect(path: &Path) -> io::Result<OwnedFd> {
    let fd = seqpacket()?;
    let (addr, len) = sockaddr(path)?;
    // SAFETY: addr is a valid sockaddr_un of `len` bytes living across the call.
    let rc = unsafe { libc::connect(fd.as_raw_fd(), (&addr as *const libc::sockaddr_un).cast(), len) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// Sends one message.
pub fn send(fd: &OwnedFd, msg: &[u8]) -> io::Result<()> {
    // SAFETY: msg is valid for msg.len() bytes during the call.
    let n = unsafe { libc::send(fd.as_raw_fd(), msg.as_ptr().cast(), msg.len(), libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Receives one message of at most `max` bytes (empty: the peer closed).
pub fn recv(fd: &OwnedFd, max: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; max];
    loop {
        // SAFETY: buf is valid for writes of buf.len() bytes during the call.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n >= 0 {
            buf.truncate(n as usize);
            return Ok(buf);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Binds `path`, replacing a stale socket file (no server behind it); a live one is [`io::ErrorKind::AddrInUse`].
fn bind_listen(path: &Path) -> io::Result<OwnedFd> {
    if path.exists() {
        if connect(path).is_ok() {
            return Err(io::Error::new(io::ErrorKind::AddrInUse, format!("{} is in use", path.display())));
        }
        std::fs::remove_file(path)?;
    }
    let fd = seqpacket()?;
    let (addr, len) = sockaddr(path)?;
    // SAFETY: addr is a valid sockaddr_un of `len` bytes living across the call.
    let rc = unsafe { libc::bind(fd.as_raw_fd(), (&addr as *const libc::sockaddr_un).cast(), len) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: listen takes no pointers.
    if unsafe { libc::listen(fd.as_raw_fd(), 8) } != 0 {
        let e = io::Error::last_os_error();
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(fd)
}

impl Server {
    /// Starts serving `telemetry` on [`socket_path`] of `file_prefix`; if another live process holds that path,
    /// on the first free `dpdk_telemetry.v2:N` (N = 1..) instead.
    pub fn start(telemetry: Telemetry, file_prefix: &str) -> io::Result<Server> {
        let dir = runtime_dir(file_prefix);
        std::fs::create_dir_all(&dir)?;
        let first = dir.join(SOCKET_NAME);
        let mut bound = bind_listen(&first).map(|fd| (first.clone(), fd));
        let mut n = 1;
        while matches!(&bound, Err(e) if e.kind() == io::ErrorKind::AddrInUse) && n < 32 {
            let p = dir.join(format!("{SOCKET_NAME}:{n}"));
            bound = bind_listen(&p).map(|fd| (p, fd));
            n += 1;
        }
        let (path, fd) = bound?;
        Self::serve(telemetry, path, fd)
    }

    /// Starts serving `telemetry` at exactly `path`.
    pub fn start_at(telemetry: Telemetry, path: &Path) -> io::Result<Server> {
        let fd = bind_listen(path)?;
        Self::serve(telemetry, path.to_path_buf(), fd)
    }

    fn serve(telemetry: Telemetry, path: PathBuf, fd: OwnedFd) -> io::Result<Server> {
        let stop = Arc::new(AtomicBool::new(false));
        let listener = Arc::new(fd);
        let (l, s) = (listener.clone(), stop.clone());
        let thread =
            std::thread::Builder::new().name("telemetry".into()).spawn(move || accept_loop(&l, &s, telemetry))?;
        Ok(Server { path, stop, listener, thread: Some(thread) })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The first pause after a failed accept; doubled on each failure in a row up to [`ACCEPT_BACKOFF_MAX`].
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(1);
/// The longest pause between two accepts that fail: short enough that a freed descriptor is used at once.
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_millis(100);

fn accept_loop(listener: &OwnedFd, stop: &AtomicBool, telemetry: Telemetry) {
    let mut backoff = ACCEPT_BACKOFF_MIN;
    let mut reported = false;
    while !stop.load(Ordering::Acquire) {
        // SAFETY: null address pointers are allowed: the peer's address is not wanted.
        let fd = unsafe {
            libc::accept4(listener.as_raw_fd(), std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC)
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted || stop.load(Ordering::Acquire) {
                continue;
            }
            // EMFILE/ENFILE (descriptors run out), ENOBUFS/ENOMEM, ECONNABORTED: all pass, and the waiting client
            // stays queued until a descriptor is free. The service must outlive them: pause, retry, say it once.
            if !reported {
                eprintln!("EAL: telemetry: accept failed ({e}); retrying until it succeeds");
                reported = true;
            }
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
            continue;
        }
        backoff = ACCEPT_BACKOFF_MIN;
        // SAFETY: accept4 returned a new descriptor owned by nobody else.
        let client = unsafe { OwnedFd::from_raw_fd(fd) };
        let t = telemetry.clone();
        // A thread that cannot be made (EAGAIN) drops the client: it sees the socket close, and the next one may
        // get a thread.
        let _ = std::thread::Builder::new().name("telemetry-client".into()).spawn(move || client_loop(client, t));
    }
}

/// Each client connection's id, for the leases it holds ([`capture`](super::capture)).
static NEXT_CLIENT: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The connection the current telemetry thread serves (`None` off the socket, e.g. [`Telemetry::handle`]).
    static CLIENT: Cell<Option<u64>> = const { Cell::new(None) };
}

/// The id of the client connection whose request is being answered on this thread, if any.
pub(super) fn current_client() -> Option<u64> {
    CLIENT.with(Cell::get)
}

fn client_loop(client: OwnedFd, telemetry: Telemetry) {
    let id = NEXT_CLIENT.fetch_add(1, Ordering::Relaxed);
    CLIENT.with(|c| c.set(Some(id)));
    serve_client(&client, &telemetry);
    // However the connection ended (closed, killed peer, error), what it held ends with it.
    super::capture::release(id);
}

fn serve_client(client: &OwnedFd, telemetry: &Telemetry) {
    if send(client, telemetry.hello().as_bytes()).is_err() {
        return;
    }
    while let Ok(msg) = recv(client, MAX_CMD_LEN) {
        if msg.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&msg);
        // The client sends the command alone; trailing NULs or a newline from other clients are not part of it.
        let request = text.trim_end_matches(['\0', '\n']);
        if send(client, telemetry.handle(request).as_bytes()).is_err() {
            return;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // SAFETY: shutdown takes no pointers; it wakes the accept() blocked on this descriptor.
        unsafe { libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR) };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}
