//! `net_tap`: a port whose other end is the kernel. Opening it creates a TAP interface (through `/dev/net/tun`);
//! what the port sends, the kernel receives on that interface, and what the kernel sends out of it, the port
//! receives. Like DPDK's tap PMD, it lets ping, curl or tcpdump talk to a dataplane.
//!
//! Devargs:
//! - `iface=NAME`: the TAP's name (default `dtap%d`: the kernel picks the first free dtap0, dtap1, ...). An existing
//!   persistent TAP of that name is attached to instead.
//! - `mac=XX:XX:XX:XX:XX:XX` or `mac=fixed`: the port's MAC address (default: random, locally administered;
//!   `fixed` gives 02:64:74:61:70:NN, NN from the device name's number). As DPDK does, the TAP interface is given
//!   the same address.
//! - `persist=1`: keep the TAP when the port is closed (default: it disappears with the port).
//!
//! The TAP is created with `IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE` (falling back to one queue where multi-queue is
//! refused), so `configure` can set up to [`MAX_QUEUES`] queue pairs: each is one file descriptor on the TAP and
//! the kernel spreads its transmissions over them by flow. RX and TX queue counts must be equal.
//! `start` brings the interface up, `stop` takes it down. I/O is non-blocking: one read per received packet (the
//! TAP has no batch interface), one write per sent packet (chains go out with one writev).
//!
//! Counters: ipackets/ibytes per frame read, opackets/obytes per frame written; a failed write (e.g. the interface
//! is down) counts oerrors and frees the packet; a pool running dry counts rx_nombuf.

use pktio::TypedQueues;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

use mempool::{Mbuf, Mempool, PacketBatch};

use crate::netif::{self, os_error, IfCtl};
use pktio::devargs::Devargs;
use pktio::stats::{RxQueueStats, TxQueueStats};
use pktio::MacAddr;
use pktio::PortState;
use pktio::{DevInfo, EthDev, LinkStatus, PortConfig, RxQueue, TxQueue};
use pktio::{Error, Result};

/// Most queue pairs of a TAP port.
pub const MAX_QUEUES: u16 = 16;
/// The default interface name (the kernel replaces `%d` with the first free number).
pub const DEFAULT_IFACE: &str = "dtap%d";

/// Settings of a TAP port.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TapConfig {
    /// Interface name; may hold one `%d`. `None`: [`DEFAULT_IFACE`].
    pub iface: Option<String>,
    /// The port's MAC address; `None`: random, locally administered.
    pub mac: Option<MacAddr>,
    /// Keep the interface after the port is dropped.
    pub persist: bool,
}

/// A TAP port.
#[derive(Debug)]
pub struct TapPort {
    state: PortState,
    ctl: IfCtl,
    /// One descriptor per queue pair; the first one made the interface.
    fds: Vec<Arc<OwnedFd>>,
    multi_queue: bool,
    pool: Option<Mempool>,
}

/// Opens `/dev/net/tun` and attaches it to TAP `name` (creating it if needed); returns the descriptor and the
/// name the kernel gave.
fn open_tap(name: &str, multi_queue: bool) -> Result<(OwnedFd, String)> {
    // SAFETY: open(2) of a constant NUL-terminated path; the result is checked.
    let fd = unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
    if fd < 0 {
        let err = io::Error::last_os_error();
        let what = if err.kind() == io::ErrorKind::NotFound {
            "open /dev/net/tun (the tun module is not loaded: modprobe tun)".to_string()
        } else {
            "open /dev/net/tun".to_string()
        };
        return Err(os_error(what, err));
    }
    // SAFETY: a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut ifr = netif::ifreq(name);
    let mut flags = libc::IFF_TAP | libc::IFF_NO_PI;
    if multi_queue {
        flags |= libc::IFF_MULTI_QUEUE;
    }
    ifr.ifr_ifru.ifru_flags = flags as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes the ifreq, which lives for the call.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF as _, &mut ifr as *mut libc::ifreq) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        return Err(os_error(format!("TUNSETIFF {name:?} (create the TAP interface)"), err));
    }
    Ok((fd, netif::ifreq_name(&ifr)))
}

impl TapPort {
    /// Creates (or attaches to) the TAP interface and returns a stopped port with one queue pair.
    pub fn new(name: &str, cfg: &TapConfig) -> Result<Self> {
        let iface = cfg.iface.clone().unwrap_or_else(|| DEFAULT_IFACE.to_string());
        let invalid = |reason: String| Error::InvalidConfig { port: name.to_string(), reason };
        netif::check_ifname(&iface.replace("%d", "0")).map_err(invalid)?;
        if iface.matches('%').count() > 1 || (iface.contains('%') && !iface.contains("%d")) {
            return Err(invalid(format!("interface name {iface:?}: only one %d is allowed")));
        }
        let (fd, multi_queue) = match open_tap(&iface, true) {
            Ok(r) => (r, true),
            // A kernel without multi-queue TAPs, or an existing single-queue persistent TAP.
            Err(Error::Os { ref source, .. }) if source.raw_os_error() == Some(libc::EINVAL) => {
                (open_tap(&iface, false)?, false)
            }
            Err(e) => return Err(e),
        };
        let (fd, ifname) = fd;
        if cfg.persist {
            // SAFETY: TUNSETPERSIST takes an integer argument by value.
            if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETPERSIST as _, 1 as libc::c_ulong) } < 0 {
                return Err(os_error(format!("TUNSETPERSIST on {ifname}"), io::Error::last_os_error()));
            }
        }
        let ctl = IfCtl::new(&ifname)?;
        let mac = cfg.mac.unwrap_or_else(netif::random_mac);
        ctl.set_mac(mac)?;
        let mtu = ctl.mtu()?;
        let flags = ctl.flags()?;

        let mut info = DevInfo::software("net_tap", name, if multi_queue { MAX_QUEUES } else { 1 });
        info.max_mtu = 65_521;
        info.max_rx_pktlen = 65_535;
        info.rx_offload_capa = pktio::offload::RX_SCATTER;
        info.speed_capa = vec![10_000];
        let config = PortConfig { mtu: mtu.clamp(68, 65_521) as u16, ..PortConfig::default() };
        let mut state = PortState::new(info, mac, config);
        state.promiscuous = flags & libc::IFF_PROMISC != 0;
        state.allmulticast = flags & libc::IFF_ALLMULTI != 0;
        Ok(TapPort { state, ctl, fds: vec![Arc::new(fd)], multi_queue, pool: None })
    }

    /// Opens from devargs (`net_tap0,iface=tap0,mac=fixed`).
    pub fn from_devargs(args: &Devargs) -> Result<Self> {
        args.check_keys(&["iface", "mac", "persist"])?;
        let mac = match args.get("mac") {
            None => None,
            Some("fixed") => {
                let n: u8 = args.name.trim_start_matches(|c: char| !c.is_ascii_digit()).parse().unwrap_or(0);
                Some(MacAddr([0x02, b'd', b't', b'a', b'p', n]))
            }
            Some(m) => {
                let mac: MacAddr = m.parse().map_err(|e: pktio::MacParseError| args.error(e.to_string()))?;
                if mac.is_multicast() || mac == MacAddr::ZERO {
                    return Err(args.error(format!("mac={m} must be a unicast address")));
                }
                Some(mac)
            }
        };
        let iface = match args.get("iface") {
            Some("") => return Err(args.error("iface= needs a name")),
            other => other.map(str::to_string),
        };
        if let Some(i) = &iface {
            netif::check_ifname(&i.replace("%d", "0")).map_err(|e| args.error(e))?;
        }
        let cfg = TapConfig { iface, mac, persist: args.flag("persist", false)? };
        TapPort::new(&args.name, &cfg)
    }

    /// The interface's name (as the kernel knows it).
    pub fn iface(&self) -> &str {
        self.ctl.name()
    }
}

impl TypedQueues for TapPort {
    type Rx = TapRxQueue;
    type Tx = TapTxQueue;

    /// Typed RX queue.
    fn rx_queue_typed(&mut self, queue: u16) -> Result<Self::Rx> {
        let stats = self.state.claim_rx(queue, Some)?;
        let pool = self.pool.clone().ok_or_else(|| Error::NotStarted { port: self.state.name().to_string() })?;
        // Room for the largest frame the MTU allows (with a VLAN tag), in as many buffers as that takes.
        let max_frame = self.state.config.mtu as usize + 14 + 4;
        let room = (pool.data_room() as usize).max(1);
        let segs = max_frame.div_ceil(room).clamp(1, MAX_IOV);
        Ok(TapRxQueue {
            fd: self.fds[queue as usize].clone(),
            pool,
            stats,
            port_id: self.state.port_id,
            segs,
            spare: Vec::with_capacity(segs),
        })
    }

    /// Typed TX queue.
    fn tx_queue_typed(&mut self, queue: u16) -> Result<Self::Tx> {
        let stats = self.state.claim_tx(queue, Some)?;
        Ok(TapTxQueue { fd: self.fds[queue as usize].clone(), stats, scratch: Vec::new() })
    }
}

impl EthDev for TapPort {
    fn state(&self) -> &PortState {
        &self.state
    }

    fn state_mut(&mut self) -> &mut PortState {
        &mut self.state
    }

    fn configure(&mut self, config: &PortConfig) -> Result<()> {
        if config.rx_queues != config.tx_queues {
            return Err(self.state.invalid(format!(
                "a TAP port needs as many RX as TX queues ({} and {} asked): each pair is one TAP queue",
                config.rx_queues, config.tx_queues
            )));
        }
        if self.state.queues_in_use() {
            return Err(Error::QueuesInUse { port: self.state.name().to_string() });
        }
        self.state.configure(config)?;
        let want = config.rx_queues as usize;
        self.fds.truncate(want);
        while self.fds.len() < want {
            let (fd, _) = open_tap(self.ctl.name(), self.multi_queue)?;
            self.fds.push(Arc::new(fd));
        }
        if config.mtu as u32 != self.ctl.mtu()? {
            self.ctl.set_mtu(config.mtu as u32)?;
        }
        Ok(())
    }

    fn start(&mut self, pool: &Mempool) -> Result<()> {
        self.state.start_with_pool(pool)?;
        if let Err(e) = self.ctl.change_flags(libc::IFF_UP, true) {
            self.state.started = false;
            return Err(e);
        }
        self.pool = Some(pool.clone());
        Ok(())
    }

    fn stop(&mut self) -> Result<()> {
        self.state.stop()?;
        self.pool = None;
        self.ctl.change_flags(libc::IFF_UP, false)
    }

    fn rx_queue(&mut self, queue: u16) -> Result<Box<dyn RxQueue>> {
        Ok(Box::new(self.rx_queue_typed(queue)?))
    }

    fn tx_queue(&mut self, queue: u16) -> Result<Box<dyn TxQueue>> {
        Ok(Box::new(self.tx_queue_typed(queue)?))
    }

    fn link(&self) -> LinkStatus {
        // DPDK's tap PMD reports 10G; the carrier is the interface being up.
        match self.ctl.flags() {
            Ok(f) if f & libc::IFF_UP != 0 && f & libc::IFF_RUNNING != 0 => LinkStatus::up(10_000),
            _ => LinkStatus::default(),
        }
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
}

/// Most segments read or written in one call.
const MAX_IOV: usize = 64;

/// RX side of a TAP port: one queue's descriptor.
#[derive(Debug)]
pub struct TapRxQueue {
    fd: Arc<OwnedFd>,
    pool: Mempool,
    stats: Arc<RxQueueStats>,
    port_id: u16,
    /// Buffers one read needs.
    segs: usize,
    /// Buffers allocated for the next read (kept across bursts, freed with the queue).
    spare: Vec<Mbuf>,
}

impl RxQueue for TapRxQueue {
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let (mut n, mut bytes) = (0usize, 0u64);
        while !batch.is_full() {
            while self.spare.len() < self.segs {
                match self.pool.alloc() {
                    Some(m) => self.spare.push(m),
                    None => {
                        self.stats.nombuf.add(1);
                        break;
                    }
                }
            }
            if self.spare.len() < self.segs {
                break;
            }
            let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; MAX_IOV];
            for (v, m) in iov.iter_mut().zip(self.spare.iter_mut()) {
                let room = m.data_room_mut();
                *v = libc::iovec { iov_base: room.as_mut_ptr().cast(), iov_len: room.len() };
            }
            // SAFETY: each iovec points into the data room of a buffer we own, which outlives the call.
            let r = unsafe { libc::readv(self.fd.as_raw_fd(), iov.as_ptr(), self.segs as libc::c_int) };
            if r <= 0 {
                if r < 0 {
                    let e = io::Error::last_os_error();
                    match e.kind() {
                        io::ErrorKind::WouldBlock => {}
                        io::ErrorKind::Interrupted => continue,
                        _ => self.stats.errors.add(1),
                    }
                }
                break;
            }
            let mut left = r as usize;
            let mut head = self.spare.remove(0);
            let take = left.min(iov[0].iov_len);
            head.set_len(take as u16);
            left -= take;
            let mut i = 1;
            while left > 0 {
                let mut seg = self.spare.remove(0);
                let take = left.min(iov[i].iov_len);
                seg.set_len(take as u16);
                head.chain(seg);
                left -= take;
                i += 1;
            }
            head.set_port(self.port_id);
            bytes += r as u64;
            let _ = batch.push(head);
            n += 1;
        }
        self.stats.packets.add(n as u64);
        self.stats.bytes.add(bytes);
        n
    }

    /// The queue's TAP descriptor: readable while the kernel holds a frame for it.
    fn wait_fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.fd.as_raw_fd())
    }
}

/// TX side of a TAP port.
#[derive(Debug)]
pub struct TapTxQueue {
    fd: Arc<OwnedFd>,
    stats: Arc<TxQueueStats>,
    scratch: Vec<u8>,
}

impl TapTxQueue {
    /// Writes one packet; `Err(true)` when the TAP is full (retry later), `Err(false)` when it failed for good.
    fn write_one(&mut self, m: &Mbuf) -> std::result::Result<(), bool> {
        let fd = self.fd.as_raw_fd();
        let r = if m.nb_segs() == 1 {
            let d = m.data();
            // SAFETY: writes from a live slice of `d.len()` bytes.
            unsafe { libc::write(fd, d.as_ptr().cast(), d.len()) }
        } else if (m.nb_segs() as usize) <= MAX_IOV {
            let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; MAX_IOV];
            let mut k = 0;
            for (v, s) in iov.iter_mut().zip(m.segments()) {
                *v = libc::iovec { iov_base: s.data.as_ptr() as *mut libc::c_void, iov_len: s.data.len() };
                k += 1;
            }
            // SAFETY: the iovecs point into segments of `m`, which outlives the call; writev only reads them.
            unsafe { libc::writev(fd, iov.as_ptr(), k as libc::c_int) }
        } else {
            self.scratch.resize(m.pkt_len() as usize, 0);
            let len = m.copy_to(&mut self.scratch);
            // SAFETY: writes from the first `len` bytes of our scratch buffer.
            unsafe { libc::write(fd, self.scratch.as_ptr().cast(), len) }
        };
        if r >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        Err(matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted))
    }
}

impl TxQueue for TapTxQueue {
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let (mut done, mut sent, mut bytes, mut errors) = (0usize, 0u64, 0u64, 0u64);
        for i in 0..batch.len() {
            let m = &batch.as_slice()[i];
            match self.write_one(m) {
                Ok(()) => {
                    sent += 1;
                    bytes += m.pkt_len() as u64;
                }
                Err(true) => break,
                Err(false) => errors += 1,
            }
            done += 1;
        }
        if done == batch.len() {
            batch.clear();
        } else {
            batch.drain_front(done, drop);
        }
        self.stats.packets.add(sent);
        self.stats.bytes.add(bytes);
        self.stats.errors.add(errors);
        done
    }
}
