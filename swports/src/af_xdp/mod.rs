//! `net_af_xdp`: a port on any Linux network interface through AF_XDP sockets, one per queue, like DPDK's af_xdp
//! PMD. The port loads and attaches its own XDP program (see [`bpf`](self) and netlink), which redirects each of
//! its queues to that queue's socket and passes every other queue's frames to the kernel stack; closing (dropping)
//! the port detaches it.
//!
//! Devargs (DPDK's): `iface=NAME` (required), `start_queue=Q` (default 0), `queue_count=N` (default 1, at most
//! [`MAX_QUEUES`]), `force_copy=0|1` (default 0: zero-copy when the driver can), `busy_budget=N` (default 64:
//! preferred busy polling, frames per poll; 0 turns it off; as DPDK, silently off where the kernel lacks it). Our
//! own: `xdp_mode=auto|drv|skb` (default auto: native driver mode, generic SKB mode when the driver has none); `umem=pool|own` (DPDK has no
//! such choice; default `own`, see [`DEFAULT_UMEM`] for the measurement):
//!
//! - `umem=pool`: each socket registers the memory of the pool the port is started with as its UMEM
//!   ([`pool_umem`](self)): the fill ring carries free mbufs' buffers, a received frame is the mbuf the kernel
//!   wrote it into, a sent mbuf is posted as it is and freed from the completion ring. Mbufs of another pool (or
//!   chained) are copied into one of the port's pool on TX. The sockets are made at start and closed at stop (a
//!   UMEM belongs to one pool), which is when busy queues and bind errors show up; a pool whose buffers are under
//!   2048 bytes (headroom + data room) makes start fail with a typed error that says to use `umem=own`.
//! - `umem=own`: each socket has a UMEM of its own (4096 chunks of 2 KiB: half for receiving, half for sending),
//!   made when the port opens, and frames are copied between it and pool buffers, as af_packet does.
//!
//! The kernel side is zero-copy or copy as the driver allows ([`AfXdpPort::zerocopy`]). Receiving costs no system
//! call unless the kernel asks to be woken (need-wakeup); sending wakes it once per burst when it asks. Not
//! supported: shared UMEM between ports, custom XDP programs, frames larger than 1792 bytes. A closed pool-UMEM
//! socket's buffers go back to the mempool only once the kernel has detached its buffer pool from the queue (it
//! does so in deferred work, a few milliseconds after close here; a zero-copy driver may write into them until
//! then): the port probes the queue with throwaway copy-mode binds. Not verified on a NIC whose driver binds
//! zero-copy (veth is copy mode).
//!
//! Counters: ipackets/ibytes per frame taken; rx_nombuf when the pool is dry (own UMEM: per frame, which stays for
//! the next burst; pool UMEM: per buffer the fill ring could not get back, the kernel then drops what finds no
//! buffer); imissed = the kernel's rx_dropped + rx_ring_full; opackets/obytes per frame put on the TX ring; frames
//! shorter than 14 bytes or longer than a chunk count oerrors, as do (pool UMEM) foreign mbufs when the pool has no
//! buffer to copy them into. xstats add the kernel's XDP_STATISTICS per queue.

mod bpf;
mod netlink;
mod pool_queue;
mod pool_umem;
mod xsk;

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

use mempool::{Mempool, PacketBatch};

use crate::netif::{self, mbuf_from_bytes, IfCtl};
use pktio::devargs::Devargs;
use pktio::stats::{RxQueueStats, TxQueueStats, XStat};
use pktio::MacAddr;
use pktio::PortState;
use pktio::{DevInfo, EthDev, LinkStatus, PortConfig, QueueBurstMode, RxQueue, TxQueue};
use pktio::{Error, Result};

pub use pool_queue::{AfXdpPoolRxQueue, AfXdpPoolTxQueue};
use xsk::{Consumer, NetNs, Producer, UmemSpec, Xsk, XskStats, MAX_FRAME};

/// Most queues of one port.
pub const MAX_QUEUES: u16 = 16;
/// Descriptors in each ring (and UMEM chunks for each direction).
pub const RING_SIZE: u32 = 2048;

/// Where the XDP program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum XdpMode {
    /// Native if the driver supports it, generic otherwise.
    #[default]
    Auto,
    /// In the driver (native XDP).
    Drv,
    /// Generic (SKB) XDP: every interface, copy mode only.
    Skb,
}

/// What the sockets' UMEM is (devarg `umem=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UmemMode {
    /// The port's mempool memory: no copies (`umem=pool`).
    Pool,
    /// A mapping of each socket's own, frames copied to and from mbufs (`umem=own`).
    Own,
}

/// The UMEM a port uses when `umem=` is not given: its own. Measured on veth (copy mode, BENCHMARKS.md AF_XDP),
/// the pool UMEM was no faster: even in native XDP mode, 0.89 times as fast in SKB mode; the kernel copies each
/// frame either way, and what it saves in user space (a 64-byte copy each way) it pays in buffers that come back
/// cold after a ring's worth of frames.
pub const DEFAULT_UMEM: UmemMode = UmemMode::Own;

/// Settings of an af_xdp port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AfXdpConfig {
    /// Interface name.
    pub iface: String,
    /// First interface queue.
    pub start_queue: u16,
    /// Queues (one socket each).
    pub queue_count: u16,
    /// Bind in copy mode even where zero-copy is possible.
    pub force_copy: bool,
    /// Where the XDP program runs.
    pub xdp_mode: XdpMode,
    /// Frames per busy poll (0: no busy polling).
    pub busy_budget: u32,
    /// What the sockets' UMEM is.
    pub umem: UmemMode,
}

/// Default busy-polling budget (DPDK's).
pub const DEFAULT_BUSY_BUDGET: u32 = 64;

impl AfXdpConfig {
    /// Defaults for `iface`.
    pub fn new(iface: &str) -> Self {
        AfXdpConfig {
            iface: iface.into(),
            start_queue: 0,
            queue_count: 1,
            force_copy: false,
            xdp_mode: XdpMode::Auto,
            busy_budget: DEFAULT_BUSY_BUDGET,
            umem: DEFAULT_UMEM,
        }
    }
}

/// Error hint for the usual OS failures of AF_XDP and bpf().
fn hint(err: &io::Error) -> &'static str {
    match err.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            " (missing privileges: AF_XDP needs CAP_NET_RAW, the XDP program CAP_BPF and CAP_NET_ADMIN (or \
             CAP_SYS_ADMIN); run as root)"
        }
        Some(libc::EAFNOSUPPORT) => {
            " (this kernel has no XDP sockets: it needs CONFIG_XDP_SOCKETS, Linux 4.18 or later)"
        }
        Some(libc::ENOSYS) => " (this kernel has no bpf() system call: it needs CONFIG_BPF_SYSCALL)",
        Some(libc::ENODEV) | Some(libc::ENXIO) => " (no such network interface in this network namespace)",
        _ => "",
    }
}

fn os(what: String, err: io::Error) -> Error {
    let h = hint(&err);
    Error::os(format!("{what}{h}"), err)
}

/// Receive queues of `iface` (ETHTOOL_GCHANNELS: rx + combined), when the driver reports them.
fn rx_queues(iface: &str) -> Option<u32> {
    const ETHTOOL_GCHANNELS: u32 = 0x3c;
    // struct ethtool_channels: cmd, max_rx, max_tx, max_other, max_combined, rx, tx, other, combined.
    let mut ch = [0u32; 9];
    ch[0] = ETHTOOL_GCHANNELS;
    let mut ifr = netif::ifreq(iface);
    ifr.ifr_ifru.ifru_data = ch.as_mut_ptr().cast();
    // SAFETY: plain socket(2) call; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: SIOCETHTOOL reads and writes the ethtool_channels `ifr` points to, which outlives the call.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCETHTOOL as _, &mut ifr as *mut libc::ifreq) };
    (rc == 0).then(|| ch[5] + ch[8]).filter(|&n| n > 0)
}

/// Opens one socket per queue of `cfg` with the UMEM `spec` makes for it and enters them in the program's XSKMAP.
fn open_sockets<'a>(
    name: &str,
    cfg: &AfXdpConfig,
    netns: &NetNs,
    xdp: &XdpAttachment,
    spec: impl Fn() -> UmemSpec<'a>,
) -> Result<Vec<Arc<Xsk>>> {
    let mut socks = Vec::with_capacity(cfg.queue_count as usize);
    for q in cfg.start_queue..cfg.start_queue + cfg.queue_count {
        let mut s = Xsk::open(netns, xdp.ifindex, q as u32, spec(), cfg.force_copy).map_err(|e| {
            let range = match (e.step, e.source.raw_os_error()) {
                ("bind", Some(libc::EINVAL)) => " (is the queue in range? see `ethtool -l`)",
                ("bind", Some(libc::EBUSY)) => " (another AF_XDP socket is bound to this queue)",
                ("XDP_UMEM_REG", Some(libc::EINVAL)) if cfg.umem == UmemMode::Pool => {
                    " (the kernel refused the pool's memory as a UMEM: it needs unaligned chunks, Linux 5.4 or \
                     later; use umem=own)"
                }
                _ => "",
            };
            os(format!("port {name}: {} of the AF_XDP socket for {} queue {q}{range}", e.step, cfg.iface), e.source)
        })?;
        // Where the kernel has no preferred busy polling the socket simply works without it.
        let _ = s.set_busy_poll(cfg.busy_budget);
        socks.push(Arc::new(s));
    }
    for (q, s) in (cfg.start_queue..).zip(&socks) {
        bpf::xskmap_set(&xdp.map, q as u32, s.raw_fd())
            .map_err(|e| os(format!("port {name}: XSKMAP update for queue {q}"), e))?;
    }
    Ok(socks)
}

/// The port's XDP program and map, attached to the interface; detached on drop.
#[derive(Debug)]
struct XdpAttachment {
    nl: netlink::Socket,
    ifindex: i32,
    mode: u32,
    prog: OwnedFd,
    map: OwnedFd,
}

impl XdpAttachment {
    fn load_and_attach(port: &str, cfg: &AfXdpConfig, ifindex: i32) -> Result<XdpAttachment> {
        let entries = u32::from(cfg.start_queue) + u32::from(cfg.queue_count);
        let map = bpf::create_xskmap(entries).map_err(|e| os(format!("port {port}: BPF_MAP_CREATE (XSKMAP)"), e))?;
        let prog = bpf::load_redirect(&map).map_err(|e| {
            let log = if e.log.is_empty() { String::new() } else { format!("; verifier log:\n{}", e.log) };
            os(format!("port {port}: BPF_PROG_LOAD of the XDP redirect program{log}"), e.source)
        })?;
        let nl = netlink::Socket::open().map_err(|e| os(format!("port {port}: rtnetlink socket"), e))?;
        let modes: &[u32] = match cfg.xdp_mode {
            XdpMode::Auto => &[netlink::XDP_FLAGS_DRV_MODE, netlink::XDP_FLAGS_SKB_MODE],
            XdpMode::Drv => &[netlink::XDP_FLAGS_DRV_MODE],
            XdpMode::Skb => &[netlink::XDP_FLAGS_SKB_MODE],
        };
        let mut last = None;
        for &mode in modes {
            match netlink::attach(&nl, ifindex, prog.as_raw_fd(), mode) {
                Ok(()) => return Ok(XdpAttachment { nl, ifindex, mode, prog, map }),
                Err(e) if matches!(e.source.raw_os_error(), Some(libc::EBUSY) | Some(libc::EEXIST)) => {
                    let id = netlink::attached_prog(&nl, ifindex).ok().flatten();
                    let which = match id {
                        Some(id) => match bpf::prog_name(id) {
                            Some(name) if !name.is_empty() => format!("XDP program id {id} ({name})"),
                            _ => format!("XDP program id {id}"),
                        },
                        None => "an XDP program".to_string(),
                    };
                    return Err(Error::InvalidConfig {
                        port: port.to_string(),
                        reason: format!(
                            "iface={} already has {which} attached; stop the application that owns it or detach it \
                             with `ip link set dev {} xdp off`",
                            cfg.iface, cfg.iface
                        ),
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        let e = last.expect("at least one mode tried");
        let msg = e.message.map(|m| format!(" ({m})")).unwrap_or_default();
        Err(os(format!("port {port}: attaching the XDP program to {}{msg}", cfg.iface), e.source))
    }

    /// Whether the program runs in the driver.
    fn native(&self) -> bool {
        self.mode == netlink::XDP_FLAGS_DRV_MODE
    }
}

impl Drop for XdpAttachment {
    fn drop(&mut self) {
        // An error means the program is gone already (interface deleted) or replaced by someone else's.
        let _ = netlink::detach(&self.nl, self.ifindex, self.prog.as_raw_fd(), self.mode);
    }
}

/// An af_xdp port.
#[derive(Debug)]
pub struct AfXdpPort {
    state: PortState,
    cfg: AfXdpConfig,
    ctl: IfCtl,
    /// Where the sockets are made.
    netns: NetNs,
    // Declared before the sockets: the program is detached before they close.
    xdp: XdpAttachment,
    socks: Vec<Arc<Xsk>>,
    pool: Option<Mempool>,
    /// Per queue: the kernel's counters at the last reset (of the live socket)...
    kernel_base: Vec<XskStats>,
    /// ... and what sockets closed since then counted (pool UMEM: one socket per start).
    kernel_acc: Vec<XskStats>,
}

impl AfXdpPort {
    /// Opens `cfg.queue_count` queues of `cfg.iface` from `cfg.start_queue` (in the calling thread's network
    /// namespace) and attaches the redirect program.
    pub fn new(name: &str, cfg: &AfXdpConfig) -> Result<Self> {
        let invalid = |reason: String| Error::InvalidConfig { port: name.to_string(), reason };
        netif::check_ifname(&cfg.iface).map_err(invalid)?;
        if cfg.queue_count == 0 || cfg.queue_count > MAX_QUEUES {
            return Err(invalid(format!("queue_count={} must be 1..={MAX_QUEUES}", cfg.queue_count)));
        }
        let ctl = IfCtl::new(&cfg.iface)?;
        let ifindex = ctl.ifindex().map_err(|e| match e {
            Error::Os { source, .. } if source.raw_os_error() == Some(libc::ENODEV) => invalid(format!(
                "iface={}: no such network interface in this network namespace (see `ip link`)",
                cfg.iface
            )),
            other => other,
        })?;
        let last = u32::from(cfg.start_queue) + u32::from(cfg.queue_count);
        if let Some(n) = rx_queues(&cfg.iface) {
            if last > n {
                return Err(invalid(format!(
                    "start_queue={} queue_count={}: {} has {n} receive queue(s), 0..={} (see `ethtool -l {}`)",
                    cfg.start_queue,
                    cfg.queue_count,
                    cfg.iface,
                    n - 1,
                    cfg.iface
                )));
            }
        }
        // The program first: an interface that has one already is reported as such, not as a busy queue.
        let xdp = XdpAttachment::load_and_attach(name, cfg, ifindex)?;
        let netns = NetNs::current().map_err(|e| Error::os(format!("port {name}: /proc/thread-self/ns/net"), e))?;
        // An own UMEM needs nothing of the pool: its sockets are made now, where errors show at open.
        let socks = match cfg.umem {
            UmemMode::Own => {
                open_sockets(name, cfg, &netns, &xdp, || UmemSpec::Own { rx_frames: RING_SIZE, tx_frames: RING_SIZE })?
            }
            UmemMode::Pool => Vec::new(),
        };
        let mac = ctl.mac()?;
        let mtu = ctl.mtu()?;
        let mut info = DevInfo::software("net_af_xdp", name, cfg.queue_count);
        info.max_rx_pktlen = MAX_FRAME;
        info.max_mtu = (MAX_FRAME - 18) as u16;
        info.speed_capa = vec![10_000];
        let config = PortConfig {
            rx_queues: cfg.queue_count,
            tx_queues: cfg.queue_count,
            mtu: (mtu as u16).clamp(info.min_mtu, info.max_mtu),
            ..PortConfig::default()
        };
        info.check(&config)?;
        let queues = cfg.queue_count as usize;
        let (kernel_base, kernel_acc) = (vec![XskStats::default(); queues], vec![XskStats::default(); queues]);
        let state = PortState::new(info, mac, config);
        Ok(AfXdpPort { state, cfg: cfg.clone(), ctl, netns, xdp, socks, pool: None, kernel_base, kernel_acc })
    }

    /// Opens from devargs (`net_af_xdp0,iface=eth1,start_queue=0,queue_count=2`).
    pub fn from_devargs(args: &Devargs) -> Result<Self> {
        args.check_keys(&["iface", "start_queue", "queue_count", "force_copy", "xdp_mode", "busy_budget", "umem"])?;
        let Some(iface) = args.get("iface").filter(|s| !s.is_empty()) else {
            return Err(args.error("net_af_xdp needs iface=NAME (the kernel interface to attach to)"));
        };
        let xdp_mode = match args.get("xdp_mode").unwrap_or("auto") {
            "auto" => XdpMode::Auto,
            "drv" | "native" => XdpMode::Drv,
            "skb" | "generic" => XdpMode::Skb,
            other => return Err(args.error(format!("xdp_mode={other}: use auto, drv or skb"))),
        };
        let umem = match args.get("umem") {
            None => DEFAULT_UMEM,
            Some("pool") => UmemMode::Pool,
            Some("own") => UmemMode::Own,
            Some(other) => {
                return Err(args.error(format!(
                    "umem={other}: use pool (the port's mempool memory, no copies) or own (a UMEM per socket, \
                     frames copied)"
                )))
            }
        };
        let cfg = AfXdpConfig {
            iface: iface.to_string(),
            start_queue: args.parse_or("start_queue", 0)?,
            queue_count: args.parse_or("queue_count", 1)?,
            force_copy: args.flag("force_copy", false)?,
            xdp_mode,
            busy_budget: args.parse_or("busy_budget", DEFAULT_BUSY_BUDGET)?,
            umem,
        };
        AfXdpPort::new(&args.name, &cfg)
    }

    /// The interface's name.
    pub fn iface(&self) -> &str {
        &self.cfg.iface
    }

    /// Whether the sockets are bound in zero-copy mode (with `umem=pool`, known once started).
    pub fn zerocopy(&self) -> bool {
        !self.socks.is_empty() && self.socks.iter().all(|s| s.zerocopy)
    }

    /// Queue `queue`'s path: its socket's kernel side, zero-copy or copy, which the kernel settles per socket at
    /// bind, so it is flagged per queue. Before its socket exists (`umem=pool`, not started) the port-level name.
    fn queue_burst_mode(&self, rx: bool, queue: u16) -> Result<QueueBurstMode> {
        self.state.check_queue(rx, queue)?;
        Ok(match self.socks.get(queue as usize) {
            Some(s) => {
                QueueBurstMode { name: if s.zerocopy { "AF_XDP zero-copy" } else { "AF_XDP copy" }, per_queue: true }
            }
            None => {
                let port = self.burst_mode();
                QueueBurstMode { name: if rx { port.rx } else { port.tx }, per_queue: false }
            }
        })
    }

    /// What the sockets' UMEM is.
    pub fn umem(&self) -> UmemMode {
        self.cfg.umem
    }

    /// Whether the XDP program runs in the driver (native) rather than generically.
    pub fn native_xdp(&self) -> bool {
        self.xdp.native()
    }

    fn kernel_stats(&self) -> Vec<XskStats> {
        (0..self.kernel_base.len())
            .map(|q| {
                let now = self.socks.get(q).map(|s| s.stats()).unwrap_or_default();
                self.kernel_acc[q].plus(now.minus(self.kernel_base[q]))
            })
            .collect()
    }
}

impl EthDev for AfXdpPort {
    fn state(&self) -> &PortState {
        &self.state
    }

    fn state_mut(&mut self) -> &mut PortState {
        &mut self.state
    }

    fn configure(&mut self, config: &PortConfig) -> Result<()> {
        self.ctl.configure_port(&mut self.state, config)
    }

    fn start(&mut self, pool: &Mempool) -> Result<()> {
        if self.state.started {
            return Err(Error::Started { port: self.state.name().to_string() });
        }
        if self.cfg.umem == UmemMode::Pool {
            let name = self.state.name().to_string();
            pool_umem::check(pool).map_err(|reason| Error::InvalidConfig { port: name.clone(), reason })?;
            // A full ring per queue, as an own UMEM keeps, where the pool has room (a third of it per port): the
            // kernel drops what finds no buffer, and on a loaded host the buffers cover the forwarder's absences
            // (measured: an eighth of the ring forwarded a third as much on veth, half a ring 0.8 times, a full ring
            // as much as an own UMEM).
            let fill = RING_SIZE.min(pool.size() / (3 * u32::from(self.cfg.queue_count))).max(1);
            self.socks = open_sockets(&name, &self.cfg, &self.netns, &self.xdp, || UmemSpec::Pool {
                pool,
                ring: RING_SIZE,
                fill,
            })?;
        }
        self.ctl.change_flags(libc::IFF_UP, true)?;
        self.state.start_with_pool(pool)?;
        self.pool = Some(pool.clone());
        Ok(())
    }

    fn stop(&mut self) -> Result<()> {
        self.state.stop()?;
        self.pool = None;
        if self.cfg.umem == UmemMode::Pool {
            // Keep what the closing sockets counted; the next ones count from zero.
            self.kernel_acc = self.kernel_stats();
            self.kernel_base = vec![XskStats::default(); self.kernel_base.len()];
            // Closed once the queue handles are gone too; the kernel's buffers go back to the pool then.
            self.socks.clear();
        }
        Ok(())
    }

    fn rx_queue(&mut self, queue: u16) -> Result<Box<dyn RxQueue>> {
        let stats = self.state.claim_rx(queue, Some)?;
        let pool = self.pool.clone().ok_or_else(|| Error::NotStarted { port: self.state.name().to_string() })?;
        let sock = self.socks[queue as usize].clone();
        let port_id = self.state.port_id;
        if sock.pool_umem().is_some() {
            return Ok(Box::new(AfXdpPoolRxQueue::new(sock, stats, port_id)));
        }
        let (rx, fill) = (Consumer::attach(&sock.rx), Producer::attach(&sock.fill));
        Ok(Box::new(AfXdpRxQueue { sock, rx, fill, pool, stats, port_id }))
    }

    fn tx_queue(&mut self, queue: u16) -> Result<Box<dyn TxQueue>> {
        let stats = self.state.claim_tx(queue, Some)?;
        let sock = self.socks.get(queue as usize).cloned();
        let sock = sock.ok_or_else(|| Error::NotStarted { port: self.state.name().to_string() })?;
        if sock.pool_umem().is_some() {
            return Ok(Box::new(AfXdpPoolTxQueue::new(sock, stats)));
        }
        let (tx, comp) = (Producer::attach(&sock.tx), Consumer::attach(&sock.comp));
        Ok(Box::new(AfXdpTxQueue { sock, tx, comp, stats }))
    }

    fn link(&self) -> LinkStatus {
        self.ctl.link(10_000)
    }

    fn rx_burst_mode(&self, queue: u16) -> Result<QueueBurstMode> {
        self.queue_burst_mode(true, queue)
    }

    fn tx_burst_mode(&self, queue: u16) -> Result<QueueBurstMode> {
        self.queue_burst_mode(false, queue)
    }

    fn set_link_up(&mut self, up: bool) -> Result<()> {
        self.ctl.change_flags(libc::IFF_UP, up)
    }

    fn set_mac_addr(&mut self, mac: MacAddr) -> Result<()> {
        self.ctl.set_port_mac(&mut self.state, mac)
    }

    fn set_promiscuous(&mut self, on: bool) -> Result<()> {
        self.ctl.set_port_promiscuous(&mut self.state, on)
    }

    fn set_allmulticast(&mut self, on: bool) -> Result<()> {
        self.ctl.set_port_allmulticast(&mut self.state, on)
    }

    fn set_mtu(&mut self, mtu: u16) -> Result<()> {
        self.ctl.set_port_mtu(&mut self.state, mtu)
    }

    fn stats(&self) -> pktio::PortStats {
        let mut s = self.state.stats();
        for k in self.kernel_stats() {
            s.imissed += k.rx_dropped + k.rx_ring_full;
        }
        s
    }

    fn reset_stats(&mut self) {
        self.state.reset_stats();
        self.kernel_base = self.socks.iter().map(|s| s.stats()).collect();
        self.kernel_base.resize(self.kernel_acc.len(), XskStats::default());
        self.kernel_acc.fill(XskStats::default());
    }

    fn xstats(&self) -> Vec<XStat> {
        let mut x = self.stats().generic_xstats();
        for (q, k) in self.kernel_stats().iter().enumerate() {
            x.push(XStat::new(format!("rx_q{q}_xsk_dropped"), k.rx_dropped));
            x.push(XStat::new(format!("rx_q{q}_xsk_invalid_descs"), k.rx_invalid_descs));
            x.push(XStat::new(format!("rx_q{q}_xsk_ring_full"), k.rx_ring_full));
            x.push(XStat::new(format!("rx_q{q}_xsk_fill_ring_empty"), k.rx_fill_ring_empty_descs));
            x.push(XStat::new(format!("tx_q{q}_xsk_invalid_descs"), k.tx_invalid_descs));
            x.push(XStat::new(format!("tx_q{q}_xsk_ring_empty"), k.tx_ring_empty_descs));
        }
        x
    }
}

/// RX side of an af_xdp port with its own UMEM (`umem=own`): takes frames from one socket's RX ring and gives their chunks back on the fill ring.
#[derive(Debug)]
pub struct AfXdpRxQueue {
    sock: Arc<Xsk>,
    rx: Consumer,
    fill: Producer,
    pool: Mempool,
    stats: Arc<RxQueueStats>,
    port_id: u16,
}

impl RxQueue for AfXdpRxQueue {
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let room = (batch.capacity() - batch.len()) as u32;
        let ready = self.rx.peek(&self.sock.rx, room);
        let (mut taken, mut n, mut bytes, mut errors) = (0u32, 0usize, 0u64, 0u64);
        while taken < ready {
            let desc = self.rx.desc(&self.sock.rx, taken);
            match self.sock.frame(desc.addr, desc.len) {
                Some(data) => {
                    let Some(mut m) = mbuf_from_bytes(&self.pool, data) else {
                        // Pool dry: the frame stays on the RX ring for the next burst.
                        self.stats.nombuf.add(1);
                        break;
                    };
                    m.set_port(self.port_id);
                    bytes += m.pkt_len() as u64;
                    let _ = batch.push(m);
                    n += 1;
                }
                None => errors += 1,
            }
            // The chunk goes straight back to the kernel (aligned mode: the chunk's start address).
            self.fill.put_addr(&self.sock.fill, taken, desc.addr & !(xsk::CHUNK_SIZE as u64 - 1));
            taken += 1;
        }
        if taken > 0 {
            self.fill.submit(&self.sock.fill, taken);
            self.rx.release(&self.sock.rx, taken);
        }
        end_rx_burst(&self.sock, &self.stats, n, bytes, errors);
        n
    }

    fn wait_fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.sock.raw_fd())
    }
}

/// The end of an RX burst of either UMEM: wakes the kernel when it asks (or always, busy polling: the call runs
/// the queue's NAPI here, which is what brings the next frames in) and counts the burst.
#[inline(always)]
fn end_rx_burst(sock: &Xsk, stats: &RxQueueStats, n: usize, bytes: u64, errors: u64) {
    if sock.busy_poll || sock.fill.needs_wakeup() {
        sock.wake_rx();
    }
    stats.packets.add(n as u64);
    stats.bytes.add(bytes);
    if errors > 0 {
        stats.errors.add(errors);
    }
}

/// TX side of an af_xdp port with its own UMEM (`umem=own`): copies frames into the TX chunks, wakes the kernel when it asks, and counts the
/// completions that free the chunks again.
#[derive(Debug)]
pub struct AfXdpTxQueue {
    sock: Arc<Xsk>,
    tx: Producer,
    comp: Consumer,
    stats: Arc<TxQueueStats>,
}

impl AfXdpTxQueue {
    /// Takes every completion: their TX slots are free again.
    #[inline(always)]
    fn reap(&mut self) {
        let done = self.comp.peek(&self.sock.comp, RING_SIZE);
        if done > 0 {
            self.comp.release(&self.sock.comp, done);
        }
    }
}

impl TxQueue for AfXdpTxQueue {
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        self.reap();
        let completed = self.comp_index();
        let free = RING_SIZE - self.tx.prod.wrapping_sub(completed);
        let (mut done, mut queued, mut bytes, mut errors) = (0usize, 0u32, 0u64, 0u64);
        for m in batch.iter() {
            if queued == free {
                break;
            }
            done += 1;
            let len = m.pkt_len();
            if !(14..=xsk::CHUNK_SIZE).contains(&len) {
                errors += 1;
                continue;
            }
            let slot = self.tx.prod.wrapping_add(queued);
            self.sock.tx_copy(slot, m);
            let desc = libc::xdp_desc { addr: self.sock.tx_chunk(slot), len, options: 0 };
            self.tx.put_desc(&self.sock.tx, queued, desc);
            queued += 1;
            bytes += len as u64;
        }
        if queued > 0 {
            self.tx.submit(&self.sock.tx, queued);
        }
        // Copy mode always needs the system call to send; native zero-copy only when the kernel asks.
        if queued > 0 && (!self.sock.zerocopy || self.sock.tx.needs_wakeup()) {
            self.sock.wake_tx();
        }
        if done == batch.len() {
            batch.clear();
        } else {
            batch.drain_front(done, drop);
        }
        self.stats.packets.add(queued as u64);
        self.stats.bytes.add(bytes);
        if errors > 0 {
            self.stats.errors.add(errors);
        }
        done
    }
}

impl AfXdpTxQueue {
    /// Frames completed so far (our completion-ring consumer index): TX slots before it are free.
    #[inline(always)]
    fn comp_index(&self) -> u32 {
        self.comp.index()
    }
}

impl Drop for AfXdpTxQueue {
    fn drop(&mut self) {
        self.sock.wake_tx();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_name_the_usual_causes() {
        let e = |errno| os("port p: socket(AF_XDP)".into(), io::Error::from_raw_os_error(errno)).to_string();
        assert!(
            e(libc::EAFNOSUPPORT).contains("no XDP sockets") && e(libc::EAFNOSUPPORT).contains("CONFIG_XDP_SOCKETS")
        );
        assert!(e(libc::EPERM).contains("missing privileges") && e(libc::EPERM).contains("CAP_BPF"));
        assert!(e(libc::ENOSYS).contains("CONFIG_BPF_SYSCALL"));
        assert!(e(libc::ENODEV).contains("no such network interface"));
        assert!(!e(libc::EIO).contains("(missing"), "no made-up cause for other errors");
    }

    #[test]
    fn devargs_are_checked_before_anything_is_opened() {
        let err = |text: &str| AfXdpPort::from_devargs(&Devargs::parse(text).unwrap()).unwrap_err().to_string();
        assert!(err("net_af_xdp0").contains("needs iface=NAME"));
        assert!(err("net_af_xdp0,iface=x,xdp_mode=hw").contains("use auto, drv or skb"));
        assert!(err("net_af_xdp0,iface=x,bogus=1").contains("bogus"));
        assert!(err("net_af_xdp0,iface=x,queue_count=0").contains("queue_count=0 must be 1..=16"));
        assert!(err("net_af_xdp0,iface=x,queue_count=17").contains("queue_count=17"));
        assert!(err("net_af_xdp0,iface=a/b").contains("does not allow"));
        assert!(err("net_af_xdp0,iface=x,umem=shared").contains("umem=shared: use pool"));
    }
}
