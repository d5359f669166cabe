//! The library's state: the configuration, the stack once it is up, the stack sockets by descriptor, the epoll
//! sets that hold some, and the loop that polls the stack, turns its events into readiness and spins or sleeps
//! when idle.

use std::collections::{HashMap, HashSet};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use libc::c_int;
use netstack::control::ControlServer;
use netstack::{Config, Event, EventKind, Handle, SocketError, Stack};

use crate::epoll::EpollSet;
use crate::fdtable::{self, Kind};
use crate::lock::tid;
use crate::real;

/// An errno value.
pub type Errno = c_int;
/// Results of the library's calls: the value, or the errno to set.
pub type Res<T> = Result<T, Errno>;

const NONE: u32 = u32::MAX;
/// The longest sleep while idle: the loop looks again at least this often (the stack's ARP tick asks every
/// 100 ms anyway).
const MAX_SLEEP: Duration = Duration::from_millis(200);
/// Polls between control-socket checks while busy.
const CONTROL_EVERY: u32 = 1024;
/// Ports `bind(port 0)` and `listen` on an unbound socket pick from (Linux's default
/// `ip_local_port_range`); `connect` uses the stack's own ephemeral range.
const EPHEMERAL: (u16, u16) = (32768, 60999);

/// TCP or UDP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Proto {
    /// SOCK_STREAM.
    Tcp,
    /// SOCK_DGRAM.
    Udp,
}

/// Where a stack socket is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Bound to our address (TCP: no stack socket yet; UDP: a stack socket once the stack is up).
    Bound,
    /// `listen` was called; the stack's listener exists once the stack is up.
    Listening,
    /// A `connect` is in progress.
    Connecting,
    /// An established (or closing) connection.
    Connected,
}

/// Socket options as the application set them (see the crate docs for which take effect).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Opts {
    pub reuseaddr: bool,
    pub reuseport: bool,
    pub keepalive: bool,
    pub nodelay: bool,
    pub cork: bool,
    pub rcvbuf: c_int,
    pub sndbuf: c_int,
    /// SO_LINGER: `Some(0)` makes close send a reset.
    pub linger: Option<c_int>,
    pub keepidle: c_int,
    pub keepintvl: c_int,
    pub keepcnt: c_int,
    pub rcvtimeo: Option<Duration>,
    pub sndtimeo: Option<Duration>,
}

/// One stack socket (shared by the descriptors `dup` made of it).
#[derive(Debug)]
pub struct Sock {
    pub proto: Proto,
    pub phase: Phase,
    pub handle: Option<Handle>,
    /// Our port (0: not yet chosen).
    pub port: u16,
    pub nonblock: bool,
    /// Descriptors referring to it.
    pub refs: u32,
    pub opts: Opts,
    /// The error `SO_ERROR` and the next call report (0: none).
    pub so_error: c_int,
    /// The stack's error for this connection was taken into `so_error` already.
    pub err_latched: bool,
    pub shut_rd: bool,
    pub shut_wr: bool,
    /// Bumped on each new event (data, connection, room, end): what edge-triggered epoll entries report once.
    pub seq: u32,
    /// Bytes (connections, datagrams) waiting when last reported or read: more than this is new.
    pub rx_mark: usize,
    /// Epoll entries watching it: (epoll descriptor, entry index).
    pub watchers: Vec<(c_int, u32)>,
    /// UDP: the connected peer; TCP: the address `connect` was given.
    pub peer: Option<SocketAddrV4>,
}

impl Sock {
    fn new(proto: Proto, phase: Phase, port: u16, nonblock: bool, opts: Opts) -> Sock {
        Sock {
            proto,
            phase,
            handle: None,
            port,
            nonblock,
            refs: 1,
            opts,
            so_error: 0,
            err_latched: false,
            shut_rd: false,
            shut_wr: false,
            seq: 0,
            rx_mark: 0,
            watchers: Vec::new(),
            peer: None,
        }
    }
}

/// The stack, once brought up, and what keeps its port alive.
pub struct Up {
    pub stack: Stack,
    /// Stack handle index -> socket index.
    pub handle_sock: Vec<u32>,
    /// The descriptor to sleep on (the RX queue's), or none: busy-poll.
    pub wait_fd: Option<c_int>,
    pub control: Option<ControlServer>,
    polls: u32,
    _port: eal::Port,
    _eal: eal::Eal,
}

/// Everything behind the lock.
pub struct State {
    pub config: Config,
    /// A bind to 0.0.0.0 goes to the stack (`NETSTACK_PRELOAD_ANY=stack`, the default) or to the kernel.
    pub any_to_stack: bool,
    /// Idle polls before sleeping (after the last traffic).
    pub spin: Duration,
    pub up: Option<Up>,
    /// Bringing the stack up failed: why (calls that need it fail with ENETDOWN).
    pub down: Option<String>,
    /// A process forked from the stack's owner after it came up: it never polls the port.
    pub forked: bool,
    /// The thread that polls the stack.
    pub owner_tid: i32,
    pub socks: Vec<Option<Sock>>,
    free: Vec<u32>,
    /// Descriptor -> socket index.
    fd_sock: Vec<u32>,
    /// Options set on kernel AF_INET sockets not yet bound or connected (they move to the stack socket).
    pub pending: HashMap<c_int, (Proto, Opts)>,
    pub epolls: HashMap<c_int, EpollSet>,
    /// Local (protocol, port) pairs taken by stack sockets.
    pub bound: HashSet<(Proto, u16)>,
    pub events: Vec<Event>,
    logged: HashSet<String>,
    /// A word shared with every process forked from this one: the pid that brought the stack up.
    claim: &'static AtomicI32,
}

// SAFETY: the state lives in one static behind the library's lock, so one thread at a time reaches it; what is
// tied to a thread (the EAL's main-lcore guard) is never dropped, and the stack is used only by its owner
// thread (checked in `State::stack`).
unsafe impl Send for State {}

/// Writes `msg` to stderr with the library's prefix (and the pid: nginx and Redis fork).
pub fn log(msg: &str) {
    // SAFETY: getpid has no preconditions.
    let line = format!("netstack-preload[{}]: {msg}\n", unsafe { libc::getpid() });
    // SAFETY: the buffer is ours and lives across the call.
    unsafe { real::write(2, line.as_ptr().cast(), line.len()) };
}

fn shared_word() -> &'static AtomicI32 {
    // SAFETY: a fresh anonymous shared mapping of one page; it is never unmapped, so the reference is 'static,
    // and an AtomicI32 may live in any 4-aligned memory.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            static FALLBACK: AtomicI32 = AtomicI32::new(0);
            return &FALLBACK;
        }
        &*(p as *const AtomicI32)
    }
}

impl State {
    /// The state for the configuration `NETSTACK_CONFIG` names; `Err` (logged by the caller) when it is unset
    /// or wrong: the library then leaves every call to the kernel.
    pub fn load() -> Result<State, String> {
        let path = std::env::var_os("NETSTACK_CONFIG").ok_or("NETSTACK_CONFIG is not set")?;
        let config = Config::load(std::path::Path::new(&path)).map_err(|e| e.to_string())?;
        if config.lcores.contains(',') || config.lcores.contains('-') {
            return Err(format!(
                "{}: lcores = \"{}\": the preload library runs one stack on the thread that calls it; name one lcore",
                config.file.display(),
                config.lcores
            ));
        }
        let any_to_stack = match std::env::var("NETSTACK_PRELOAD_ANY").as_deref() {
            Ok("kernel") => false,
            Ok("stack") | Err(_) => true,
            Ok(other) => return Err(format!("NETSTACK_PRELOAD_ANY={other}: expected stack or kernel")),
        };
        let spin = match std::env::var("NETSTACK_PRELOAD_SPIN_US") {
            Ok(v) => Duration::from_micros(
                v.parse().map_err(|_| format!("NETSTACK_PRELOAD_SPIN_US={v}: not a number of microseconds"))?,
            ),
            Err(_) => netstack::runtime::DEFAULT_IDLE_SPIN,
        };
        Ok(State {
            config,
            any_to_stack,
            spin,
            up: None,
            down: None,
            forked: false,
            owner_tid: 0,
            socks: Vec::new(),
            free: Vec::new(),
            fd_sock: Vec::new(),
            pending: HashMap::new(),
            epolls: HashMap::new(),
            bound: HashSet::new(),
            events: Vec::with_capacity(256),
            logged: HashSet::new(),
            claim: shared_word(),
        })
    }

    /// Logs `msg` the first time it is seen.
    pub fn log_once(&mut self, msg: String) {
        if self.logged.len() < 1024 && self.logged.insert(msg.clone()) {
            log(&msg);
        }
    }

    /// Our address.
    pub fn addr(&self) -> Ipv4Addr {
        self.config.address
    }

    /// Whether a connection to `ip` goes through the stack: an address on its subnet other than its own.
    pub fn routes(&self, ip: Ipv4Addr) -> bool {
        let mask = if self.config.prefix_len == 0 { 0 } else { u32::MAX << (32 - u32::from(self.config.prefix_len)) };
        ip != self.config.address && (u32::from(ip) ^ u32::from(self.config.address)) & mask == 0
    }

    // ---- sockets by descriptor ----

    /// The socket index behind stack descriptor `fd`.
    pub fn sock_of(&self, fd: c_int) -> Res<u32> {
        match self.fd_sock.get(fd as usize) {
            Some(&i) if i != NONE => Ok(i),
            _ => Err(libc::EBADF),
        }
    }

    /// The socket behind `fd`.
    pub fn sock(&mut self, fd: c_int) -> Res<&mut Sock> {
        let i = self.sock_of(fd)?;
        Ok(self.socks[i as usize].as_mut().expect("fd_sock names live sockets"))
    }

    /// The socket with index `i`.
    pub fn at(&mut self, i: u32) -> &mut Sock {
        self.socks[i as usize].as_mut().expect("live socket index")
    }

    /// Makes `fd` (a descriptor we own: a fresh eventfd, or a socket just replaced by one) name socket `i`.
    pub fn attach(&mut self, fd: c_int, i: u32) -> Res<()> {
        if !fdtable::set(fd, Kind::Stack) {
            return Err(libc::EMFILE);
        }
        let at = fd as usize;
        if self.fd_sock.len() <= at {
            self.fd_sock.resize(at + 1, NONE);
        }
        self.fd_sock[at] = i;
        Ok(())
    }

    /// Forgets descriptor `fd` (the caller closes it); returns its socket if that was its last descriptor.
    pub fn detach(&mut self, fd: c_int) -> Option<Sock> {
        let i = self.sock_of(fd).ok()?;
        fdtable::set(fd, Kind::Kernel);
        self.fd_sock[fd as usize] = NONE;
        let s = self.at(i);
        s.refs -= 1;
        if s.refs > 0 {
            return None;
        }
        self.free.push(i);
        let s = self.socks[i as usize].take().expect("live socket");
        if let (Some(h), Some(up)) = (s.handle, self.up.as_mut()) {
            if up.handle_sock.get(h.index()) == Some(&i) {
                up.handle_sock[h.index()] = NONE;
            }
        }
        Some(s)
    }

    /// A new socket; its index.
    pub fn new_sock(&mut self, proto: Proto, phase: Phase, port: u16, nonblock: bool, opts: Opts) -> u32 {
        let s = Sock::new(proto, phase, port, nonblock, opts);
        match self.free.pop() {
            Some(i) => {
                self.socks[i as usize] = Some(s);
                i
            }
            None => {
                self.socks.push(Some(s));
                self.socks.len() as u32 - 1
            }
        }
    }

    /// Gives socket `i` the stack handle `h`.
    pub fn set_handle(&mut self, i: u32, h: Handle) {
        self.at(i).handle = Some(h);
        let up = self.up.as_mut().expect("handles exist once the stack is up");
        if up.handle_sock.len() <= h.index() {
            up.handle_sock.resize(h.index() + 1, NONE);
        }
        up.handle_sock[h.index()] = i;
    }

    /// A free local port in the ephemeral range.
    pub fn ephemeral(&self, proto: Proto) -> Res<u16> {
        let span = u32::from(EPHEMERAL.1 - EPHEMERAL.0) + 1;
        // SAFETY: getpid has no preconditions.
        let start = (unsafe { libc::getpid() } as u32).wrapping_mul(2654435761) % span;
        (0..span)
            .map(|k| EPHEMERAL.0 + ((start + k) % span) as u16)
            .find(|p| !self.bound.contains(&(proto, *p)))
            .ok_or(libc::EADDRINUSE)
    }

    // ---- the stack ----

    /// The stack, brought up on first use by the calling thread, which then owns it. EPERM for another thread
    /// or for a forked child of the owner, ENETDOWN when the port cannot come up.
    pub fn stack(&mut self) -> Res<&mut Up> {
        if self.up.is_some() {
            let me = tid();
            if self.forked {
                self.log_once("this process was forked from the one that polls the stack: it cannot use stack sockets (close is allowed)".into());
                return Err(libc::EPERM);
            }
            if me != self.owner_tid {
                let owner = self.owner_tid;
                self.log_once(format!(
                    "thread {me} used a stack socket; only thread {owner}, which polls the stack, may (one event loop per process)"
                ));
                return Err(libc::EPERM);
            }
            return Ok(self.up.as_mut().expect("checked above"));
        }
        if let Some(why) = &self.down {
            let why = why.clone();
            self.log_once(format!("the stack is down: {why}"));
            return Err(libc::ENETDOWN);
        }
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        let owner = self.claim.load(Ordering::Acquire);
        // SAFETY: kill(pid, 0) touches no memory; it only checks that the process exists.
        let owner_alive = owner != 0 && owner != me && unsafe { libc::kill(owner, 0) } == 0;
        if owner_alive || self.claim.compare_exchange(owner, me, Ordering::AcqRel, Ordering::Acquire).is_err() {
            let owner = self.claim.load(Ordering::Acquire);
            self.log_once(format!(
                "the stack's port is owned by process {owner}; this process cannot use it (run one worker process)"
            ));
            return Err(libc::EPERM);
        }
        match self.bring_up() {
            Ok(up) => {
                self.up = Some(up);
                self.owner_tid = tid();
                self.materialise();
                Ok(self.up.as_mut().expect("just set"))
            }
            Err(why) => {
                log(&format!("cannot bring the stack up: {why}"));
                self.down = Some(why);
                self.claim.store(0, Ordering::Release);
                Err(libc::ENETDOWN)
            }
        }
    }

    /// In the child of a `fork`: if the stack was up, it stays the parent's (this process never polls it).
    pub fn forked_child(&mut self) {
        if self.up.is_some() {
            self.forked = true;
        }
    }

    /// Whether this thread may poll the stack now (it is up and ours).
    pub fn polls_here(&self) -> bool {
        self.up.is_some() && !self.forked && self.owner_tid == tid()
    }

    fn bring_up(&mut self) -> Result<Up, String> {
        let config = &self.config;
        let mut args = netstack::runtime::eal_args(config);
        // SAFETY: getpid has no preconditions.
        let prefix = format!("netstack-preload-{}", unsafe { libc::getpid() });
        args.extend(["--no-telemetry".to_owned(), "--file-prefix".to_owned(), prefix]);
        // The EAL pins the thread to the lcore and installs its own SIGINT/SIGTERM handlers: the application keeps
        // its affinity and its handlers (Redis saves on SIGTERM).
        // SAFETY: zeroed cpu_set_t and sigaction are valid out-parameters for the calls that fill them.
        let mut cpus: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `cpus` is a valid out-parameter of its size.
        let have_cpus = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut cpus) } == 0;
        // SAFETY: zeroed sigactions are valid out-parameters.
        let mut saved: [libc::sigaction; 2] = unsafe { std::mem::zeroed() };
        for (sig, old) in [libc::SIGINT, libc::SIGTERM].into_iter().zip(saved.iter_mut()) {
            // SAFETY: a null new action only reads the current one into `old`.
            unsafe { libc::sigaction(sig, std::ptr::null(), old) };
        }
        let result = eal::init_with(&pmds::registry(), args);
        for (sig, old) in [libc::SIGINT, libc::SIGTERM].into_iter().zip(saved.iter()) {
            // SAFETY: `old` is the action read above.
            unsafe { libc::sigaction(sig, old, std::ptr::null_mut()) };
        }
        if have_cpus {
            // SAFETY: `cpus` is the mask read above.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &cpus) };
        }
        let (mut eal, _) = result.map_err(|e| format!("EAL: {e}"))?;
        let mut ports = eal.take_ports();
        if ports.is_empty() {
            return Err(format!("{}: port.device `{}` opened no port", config.file.display(), config.device));
        }
        let mut port = ports.remove(0);
        drop(ports);
        port.dev.configure(&pktio::PortConfig::default()).map_err(|e| format!("port {}: {e}", port.name))?;
        let pool = eal
            .pktmbuf_pool("netstack-preload", config.pool_size, 256, mempool::DEFAULT_DATA_ROOM)
            .map_err(|e| format!("mbuf pool: {e}"))?;
        port.dev.start(&pool).map_err(|e| format!("port {}: {e}", port.name))?;
        let mac = port.dev.mac_addr();
        if config.mac.is_some_and(|m| m != mac) {
            port.dev.set_promiscuous(true).map_err(|e| format!("port {}: promiscuous: {e}", port.name))?;
        }
        let rx = port.dev.rx_queue(0).map_err(|e| format!("port {}: {e}", port.name))?;
        let tx = port.dev.tx_queue(0).map_err(|e| format!("port {}: {e}", port.name))?;
        let stack = Stack::new(config.stack_config(mac), rx, tx, pool);
        let wait_fd = stack.wait_fd();
        let lcore: u32 = config.lcores.parse().unwrap_or(0);
        let control = match ControlServer::bind(&config.control_socket(lcore), lcore) {
            Ok(c) => Some(c),
            Err(e) => {
                log(&format!("no control socket: {e}"));
                None
            }
        };
        log(&format!(
            "up: inet {}/{} ether {} on {}{}",
            config.address,
            config.prefix_len,
            config.mac.unwrap_or(mac),
            port.name,
            control.as_ref().map(|c| format!("; control {}", c.path().display())).unwrap_or_default()
        ));
        Ok(Up { stack, handle_sock: Vec::new(), wait_fd, control, polls: 0, _port: port, _eal: eal })
    }

    /// Creates the stack's listeners and UDP sockets for the sockets made before it came up.
    fn materialise(&mut self) {
        for i in 0..self.socks.len() as u32 {
            let Some(s) = &self.socks[i as usize] else { continue };
            if s.handle.is_some() {
                continue;
            }
            let (proto, phase, port) = (s.proto, s.phase, s.port);
            let up = self.up.as_mut().expect("called once up");
            let made = match (proto, phase) {
                (Proto::Tcp, Phase::Listening) => up.stack.listen(port),
                (Proto::Udp, Phase::Bound) => up.stack.udp_bind(port),
                _ => continue,
            };
            match made {
                Ok(h) => {
                    self.set_handle(i, h);
                    self.notify(i);
                }
                Err(e) => {
                    self.at(i).so_error = libc::EADDRINUSE;
                    self.log_once(format!("port {port}: {e}"));
                }
            }
        }
    }

    /// One poll of the stack (if this thread polls it): events become readiness. True when it did work.
    pub fn poll_stack(&mut self) -> bool {
        if !self.polls_here() {
            return false;
        }
        let up = self.up.as_mut().expect("polls_here");
        let mut events = std::mem::take(&mut self.events);
        let received = up.stack.poll(&mut events);
        up.polls = up.polls.wrapping_add(1);
        if up.polls % CONTROL_EVERY == 0 {
            if let Some(c) = up.control.as_mut() {
                c.serve(&up.stack);
            }
        }
        for e in &events {
            let Some(&i) = up.handle_sock.get(e.handle.index()) else { continue };
            if i == NONE {
                continue;
            }
            let s = self.socks[i as usize].as_mut().expect("handle_sock names live sockets");
            if s.handle != Some(e.handle) {
                continue;
            }
            let fresh = match e.kind {
                EventKind::Readable | EventKind::Accepted => {
                    let waiting = up.stack.recv_queue(e.handle).unwrap_or(0);
                    let more = waiting > s.rx_mark;
                    s.rx_mark = waiting;
                    more
                }
                EventKind::Connected => {
                    s.phase = Phase::Connected;
                    true
                }
                EventKind::Writable | EventKind::PeerClosed | EventKind::Closed => true,
            };
            if fresh {
                s.seq = s.seq.wrapping_add(1);
            }
            if !s.watchers.is_empty() {
                let watchers = std::mem::take(&mut s.watchers);
                for &(epfd, entry) in &watchers {
                    if let Some(set) = self.epolls.get_mut(&epfd) {
                        set.queue(entry);
                    }
                }
                self.socks[i as usize].as_mut().expect("still live").watchers = watchers;
            }
        }
        let busy = received > 0 || !events.is_empty();
        self.events = events;
        busy
    }

    /// Marks socket `i` changed (by a call of ours: a shutdown, an error, a new listener): its epoll entries look
    /// at it again, edge-triggered ones included.
    pub fn notify(&mut self, i: u32) {
        let s = self.at(i);
        s.seq = s.seq.wrapping_add(1);
        let watchers = s.watchers.clone();
        for (epfd, entry) in watchers {
            if let Some(set) = self.epolls.get_mut(&epfd) {
                set.queue(entry);
            }
        }
    }

    /// What socket `i` can do now, as epoll bits; takes a connection's error into `so_error` the first time.
    pub fn events_of(&mut self, i: u32) -> u32 {
        let s = self.socks[i as usize].as_mut().expect("live socket index");
        sock_events(self.up.as_ref(), s)
    }

    // ---- idle ----

    /// After a round that found nothing: spins (yielding the core) for `spin` after the last traffic, then
    /// sleeps until a packet, a kernel descriptor of `kernel`, a timer or `deadline`. Returns how many kernel
    /// descriptors (the port's included) were ready; EINTR when a signal woke it.
    pub fn idle(
        &mut self,
        idle_since: &mut Option<Instant>,
        deadline: Option<Instant>,
        kernel: Sleep<'_>,
    ) -> Res<usize> {
        let now = Instant::now();
        let since = *idle_since.get_or_insert(now);
        let polling = self.polls_here();
        let wait_fd = if polling { self.up.as_ref().and_then(|u| u.wait_fd) } else { None };
        if polling && (wait_fd.is_none() || now.duration_since(since) < self.spin) {
            std::thread::yield_now();
            return Ok(0);
        }
        let mut until = deadline;
        let mut control_fd = None;
        if polling {
            let up = self.up.as_mut().expect("polls_here");
            if let Some(c) = up.control.as_mut() {
                c.serve(&up.stack);
            }
            let Some(stack_until) = up.stack.idle_until() else { return Ok(0) };
            let cap =
                if up.control.as_ref().is_some_and(|c| c.has_clients()) { Duration::from_millis(5) } else { MAX_SLEEP };
            let stack_until = stack_until.min(now + cap);
            until = Some(until.map_or(stack_until, |d| d.min(stack_until)));
            control_fd = up.control.as_ref().map(|c| c.wait_fd());
        }
        let timeout = until.map(|u| u.saturating_duration_since(now));
        let woke = match kernel {
            Sleep::Epoll(set_fd, out, max) => {
                if let (Some(fd), Some(set)) = (wait_fd, self.epolls.get_mut(&set_fd)) {
                    set.watch_port(set_fd, fd, control_fd);
                }
                let ms = timeout.map_or(-1, |t| t.as_micros().div_ceil(1000).min(i32::MAX as u128) as c_int);
                // SAFETY: the caller's array has room for `max` events; what the kernel writes is its events
                // (edge-triggered ones included), which the caller hands on.
                let n = unsafe { real::epoll_wait(set_fd, out, max, ms) };
                if n < 0 {
                    return Err(errno());
                }
                n as usize
            }
            Sleep::Poll(fds) => {
                let base = fds.len();
                fds.extend(wait_fd.into_iter().chain(control_fd).map(|fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                }));
                let ts = timeout
                    .map(|t| libc::timespec { tv_sec: t.as_secs() as libc::time_t, tv_nsec: t.subsec_nanos() as _ });
                // SAFETY: `fds` is a valid array of its length; `ts` lives across the call.
                let n = unsafe {
                    real::ppoll(
                        fds.as_mut_ptr(),
                        fds.len() as libc::nfds_t,
                        ts.as_ref().map_or(std::ptr::null(), |t| t),
                        std::ptr::null(),
                    )
                };
                fds.truncate(base);
                if n < 0 {
                    return Err(errno());
                }
                n as usize
            }
        };
        if woke > 0 {
            *idle_since = None;
        }
        Ok(woke)
    }

    /// Polls until `ready` holds (checked after each poll), for a blocking call: EAGAIN at `deadline`
    /// (SO_RCVTIMEO / SO_SNDTIMEO), EINTR on a signal.
    pub fn block_until(&mut self, deadline: Option<Instant>, mut ready: impl FnMut(&mut State) -> bool) -> Res<()> {
        let mut idle_since = None;
        let mut fds = Vec::new();
        loop {
            if self.poll_stack() {
                idle_since = None;
            }
            if ready(self) {
                return Ok(());
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(libc::EAGAIN);
            }
            if !self.polls_here() {
                // Another thread or process polls; nothing will change here.
                return Err(libc::EPERM);
            }
            self.idle(&mut idle_since, deadline, Sleep::Poll(&mut fds))?;
        }
    }
}

/// What socket `s` can do now, as epoll bits; takes a connection's error into `so_error` the first time.
pub fn sock_events(up: Option<&Up>, s: &mut Sock) -> u32 {
    let mut ev = 0u32;
    match s.handle {
        None => {
            ev = match (s.proto, s.phase) {
                // An unconnected TCP socket: writable and hung up, as Linux reports it.
                (Proto::Tcp, Phase::Bound) => (libc::EPOLLOUT | libc::EPOLLHUP) as u32,
                (Proto::Udp, _) => libc::EPOLLOUT as u32,
                _ => 0,
            };
        }
        Some(h) => {
            if let Some(r) = up.and_then(|u| u.stack.readiness(h).ok()) {
                if r.readable {
                    ev |= libc::EPOLLIN as u32;
                }
                if r.writable {
                    ev |= libc::EPOLLOUT as u32;
                }
                if r.peer_closed {
                    ev |= libc::EPOLLRDHUP as u32;
                }
                if r.hung_up {
                    ev |= libc::EPOLLHUP as u32;
                }
                if let Some(err) = r.error {
                    if !s.err_latched {
                        s.err_latched = true;
                        s.so_error = match err {
                            SocketError::Refused => libc::ECONNREFUSED,
                            SocketError::Reset => libc::ECONNRESET,
                        };
                    }
                }
            }
        }
    }
    if s.so_error != 0 {
        ev |= libc::EPOLLERR as u32;
    }
    if s.shut_rd {
        ev |= (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
    }
    ev
}

/// What an idle round sleeps on beside the port.
pub enum Sleep<'a> {
    /// The kernel part of an epoll set (the port's descriptor is added to it), and the caller's event array
    /// (room for the count) the kernel's events go to.
    Epoll(c_int, *mut libc::epoll_event, c_int),
    /// Kernel descriptors of a poll array (the port's descriptor is appended for the sleep).
    Poll(&'a mut Vec<libc::pollfd>),
}

/// The calling thread's errno.
pub fn errno() -> Errno {
    // SAFETY: __errno_location returns this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

/// Sets the calling thread's errno.
pub fn set_errno(e: Errno) {
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = e };
}
