//! `net_af_packet`: a port on a kernel network interface through AF_PACKET sockets with memory-mapped TPACKET_V2
//! rings, like DPDK's af_packet PMD. Frames are copied between the rings and pool buffers; the kernel is asked to
//! transmit once per burst (one `sendto`), and receiving costs no system call at all.
//!
//! Devargs (DPDK's):
//! - `iface=NAME` (required): the interface, in the network namespace of the thread that opens the port.
//! - `qpairs=N` (default 1, at most [`MAX_QUEUES`]): queue pairs, one socket each; with more than one the sockets
//!   form a `PACKET_FANOUT` group that spreads received flows over them.
//! - `blocksz=B` (default 4096, a power-of-two multiple of the page size), `framesz=F` (default 2048, a multiple
//!   of 16 that divides B), `framecnt=C` (default 512, a multiple of B/F): the size of each RX and TX ring.
//! - `qdisc_bypass=0|1` (default 1): transmit straight to the driver, skipping the qdisc layer.
//! - `fanout_mode=hash|lb|cpu|rollover|rnd|qm` (default hash, with defragmentation and rollover).
//!
//! The port sees frames arriving on the interface, not the ones the host itself sends out of it
//! (PACKET_IGNORE_OUTGOING). Promiscuous and all-multicast modes are socket memberships (PACKET_ADD_MEMBERSHIP):
//! they end with the port. `start` brings the interface up if it is down and drops what queued in the RX rings
//! while the port was stopped. Link state comes from the interface flags (up and running) and its speed from
//! ethtool (sysfs or 10G when unknown).
//!
//! Counters: ipackets/ibytes per frame taken from the RX ring; imissed from the kernel's PACKET_STATISTICS drops
//! (frames the ring had no room for); ierrors for frames cut by the frame size; rx_nombuf when the pool is dry
//! (the frame stays in the ring for the next burst). opackets/obytes per frame placed on the TX ring; frames
//! shorter than 14 bytes or longer than a TX frame count oerrors and are freed. VLAN tags the kernel strips into
//! the ring header are put back into the frame.

use pktio::TypedQueues;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use mempool::{Mempool, PacketBatch};

use crate::netif::{self, mbuf_from_bytes, os_error, IfCtl};
use pktio::devargs::Devargs;
use pktio::stats::{RxQueueStats, TxQueueStats};
use pktio::MacAddr;
use pktio::PortState;
use pktio::{DevInfo, EthDev, LinkStatus, PortConfig, RxQueue, TxQueue};
use pktio::{Error, Result};

/// Most queue pairs (sockets) of one port.
pub const MAX_QUEUES: u16 = 16;
/// Default ring block size (DPDK: the page size).
pub const DEFAULT_BLOCKSZ: u32 = 4096;
/// Default ring frame size.
pub const DEFAULT_FRAMESZ: u32 = 2048;
/// Default frames per ring.
pub const DEFAULT_FRAMECNT: u32 = 512;

const TPACKET_V2: libc::c_int = 1;
const PACKET_LOSS: libc::c_int = 14;
const TPACKET_ALIGNMENT: usize = 16;
/// sizeof(struct tpacket2_hdr) rounded to TPACKET_ALIGNMENT, plus sizeof(struct sockaddr_ll).
const TPACKET2_HDRLEN: usize = 32 + 20;
/// Where a TX frame's data starts (TPACKET2_HDRLEN - sizeof(sockaddr_ll), without PACKET_TX_HAS_OFF).
const TX_DATA_OFFSET: usize = TPACKET2_HDRLEN - 20;
/// Where the kernel puts received data at the latest: TPACKET_ALIGN(hdrlen + 16) (the MAC header ends there).
const RX_NET_OFFSET: usize = (TPACKET2_HDRLEN + 16 + TPACKET_ALIGNMENT - 1) & !(TPACKET_ALIGNMENT - 1);
const ETH_P_ALL: u16 = 0x0003;

const _: () = assert!(std::mem::size_of::<libc::tpacket2_hdr>() == 32);

/// How a fanout group spreads received frames over the queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FanoutMode {
    /// By flow hash (the default).
    #[default]
    Hash,
    /// Round robin.
    LoadBalance,
    /// By the receiving CPU.
    Cpu,
    /// Fill one socket, then the next.
    Rollover,
    /// Randomly.
    Random,
    /// By the NIC's receive queue.
    QueueMapping,
}

impl FanoutMode {
    fn bits(self) -> u32 {
        let flags = libc::PACKET_FANOUT_FLAG_ROLLOVER;
        match self {
            FanoutMode::Hash => libc::PACKET_FANOUT_HASH | libc::PACKET_FANOUT_FLAG_DEFRAG | flags,
            FanoutMode::LoadBalance => 1 | flags,
            FanoutMode::Cpu => 2 | flags,
            FanoutMode::Rollover => 3,
            FanoutMode::Random => 4 | flags,
            FanoutMode::QueueMapping => 5 | flags,
        }
    }
}

/// Settings of an af_packet port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AfPacketConfig {
    /// Interface name.
    pub iface: String,
    /// Queue pairs.
    pub qpairs: u16,
    /// Ring block size in bytes.
    pub blocksz: u32,
    /// Ring frame size in bytes.
    pub framesz: u32,
    /// Frames per ring.
    pub framecnt: u32,
    /// Transmit with PACKET_QDISC_BYPASS.
    pub qdisc_bypass: bool,
    /// Fanout mode when `qpairs > 1`.
    pub fanout: FanoutMode,
}

impl AfPacketConfig {
    /// Defaults for `iface`.
    pub fn new(iface: &str) -> Self {
        AfPacketConfig {
            iface: iface.to_string(),
            qpairs: 1,
            blocksz: DEFAULT_BLOCKSZ,
            framesz: DEFAULT_FRAMESZ,
            framecnt: DEFAULT_FRAMECNT,
            qdisc_bypass: true,
            fanout: FanoutMode::Hash,
        }
    }

    /// Checks the ring geometry the kernel will be asked for.
    fn check(&self) -> std::result::Result<(), String> {
        netif::check_ifname(&self.iface)?;
        if self.qpairs == 0 || self.qpairs > MAX_QUEUES {
            return Err(format!("qpairs={} must be 1..={MAX_QUEUES}", self.qpairs));
        }
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u32;
        let (b, f, c) = (self.blocksz, self.framesz, self.framecnt);
        if b < page || b % page != 0 || !b.is_power_of_two() || b > 1 << 30 {
            return Err(format!("blocksz={b} must be a power of two, a multiple of the page size ({page})"));
        }
        if (f as usize) < RX_NET_OFFSET + 64 || f as usize & (TPACKET_ALIGNMENT - 1) != 0 || f > b {
            return Err(format!(
                "framesz={f} must be a multiple of {TPACKET_ALIGNMENT}, at least {} and at most blocksz={b}",
                RX_NET_OFFSET + 64
            ));
        }
        let per_block = b / f;
        if c == 0 || c % per_block != 0 {
            return Err(format!("framecnt={c} must be a positive multiple of blocksz/framesz = {per_block}"));
        }
        if (c / per_block) as u64 * b as u64 > 1 << 32 {
            return Err(format!("a ring of {c} frames of {f} bytes is too large"));
        }
        Ok(())
    }
}

/// One mapped ring: `frame_nr` frames of `frame_size`, `frames_per_block` to a block.
#[derive(Debug, Clone, Copy)]
struct RingGeom {
    base: NonNull<u8>,
    block_size: usize,
    frame_size: usize,
    frames_per_block: usize,
    frame_nr: usize,
}

impl RingGeom {
    /// The header of frame `i` (< frame_nr).
    #[inline(always)]
    fn frame(&self, i: usize) -> *mut u8 {
        let off = (i / self.frames_per_block) * self.block_size + (i % self.frames_per_block) * self.frame_size;
        // SAFETY: i < frame_nr, so the offset lies inside the ring's mapping.
        unsafe { self.base.as_ptr().add(off) }
    }

    /// The status word of frame `i`, shared with the kernel.
    #[inline(always)]
    fn status(&self, i: usize) -> &AtomicU32 {
        // SAFETY: tp_status is the first u32 of a 16-byte aligned frame inside the mapping, which lives as long as
        // the socket that owns this geometry; the kernel and we access it atomically.
        unsafe { AtomicU32::from_ptr(self.frame(i).cast::<u32>()) }
    }

    #[inline(always)]
    fn hdr(&self, i: usize) -> *mut libc::tpacket2_hdr {
        self.frame(i).cast()
    }
}

/// One AF_PACKET socket with its RX and TX rings mapped.
#[derive(Debug)]
struct PacketSocket {
    fd: OwnedFd,
    map: NonNull<u8>,
    map_len: usize,
    rx: RingGeom,
    tx: RingGeom,
    /// Ring positions kept while no queue handle holds them.
    rx_head: AtomicUsize,
    tx_head: AtomicUsize,
    /// Kernel drops read so far from PACKET_STATISTICS (which resets on read).
    drops: AtomicU64,
}

// SAFETY: the mapping belongs to the socket; the RX half is only touched by the one RX queue handle and the TX half
// by the one TX queue handle (each handed out once per start), the control plane only reads statistics through
// the descriptor or walks the RX ring while no RX handle exists.
unsafe impl Send for PacketSocket {}
// SAFETY: as above.
unsafe impl Sync for PacketSocket {}

impl Drop for PacketSocket {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping, which nothing references any more.
        unsafe { libc::munmap(self.map.as_ptr().cast(), self.map_len) };
    }
}

fn setsockopt<T>(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: passes a pointer to a live `T` and its size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl PacketSocket {
    fn open(cfg: &AfPacketConfig, ifindex: i32, fanout_id: Option<u16>) -> Result<PacketSocket> {
        let ifname = &cfg.iface;
        let err = |what: &str, e: io::Error| os_error(format!("af_packet {ifname}: {what}"), e);
        // Protocol 0: nothing is received before bind, when the rings are in place.
        // SAFETY: plain socket(2) call; the result is checked.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(err("socket(AF_PACKET)", io::Error::last_os_error()));
        }
        // SAFETY: a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_VERSION, &TPACKET_V2).map_err(|e| err("TPACKET_V2", e))?;
        // Malformed TX frames are skipped rather than stalling the ring.
        setsockopt(&fd, libc::SOL_PACKET, PACKET_LOSS, &1i32).map_err(|e| err("PACKET_LOSS", e))?;
        if cfg.qdisc_bypass {
            // Older kernels lack it; transmitting through the qdisc is still correct.
            let _ = setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &1i32);
        }
        let _ = setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &1i32);
        let per_block = cfg.blocksz / cfg.framesz;
        let req = libc::tpacket_req {
            tp_block_size: cfg.blocksz,
            tp_block_nr: cfg.framecnt / per_block,
            tp_frame_size: cfg.framesz,
            tp_frame_nr: cfg.framecnt,
        };
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &req).map_err(|e| err("PACKET_RX_RING", e))?;
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_TX_RING, &req).map_err(|e| err("PACKET_TX_RING", e))?;
        let ring_len = req.tp_block_nr as usize * req.tp_block_size as usize;
        // SAFETY: maps both rings of our socket (RX first, then TX, as the kernel lays them out); checked below.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                2 * ring_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(err("mmap of the packet rings", io::Error::last_os_error()));
        }
        let map = NonNull::new(map.cast::<u8>()).ok_or_else(|| err("mmap", io::Error::other("null mapping")))?;
        let geom = |base| RingGeom {
            base,
            block_size: cfg.blocksz as usize,
            frame_size: cfg.framesz as usize,
            frames_per_block: per_block as usize,
            frame_nr: cfg.framecnt as usize,
        };
        // SAFETY: the TX ring starts ring_len bytes into the 2 * ring_len mapping.
        let tx_base = unsafe { NonNull::new_unchecked(map.as_ptr().add(ring_len)) };
        let sock = PacketSocket {
            fd,
            map,
            map_len: 2 * ring_len,
            rx: geom(map),
            tx: geom(tx_base),
            rx_head: AtomicUsize::new(0),
            tx_head: AtomicUsize::new(0),
            drops: AtomicU64::new(0),
        };
        // SAFETY: sockaddr_ll is plain old data.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL.to_be();
        sll.sll_ifindex = ifindex;
        // SAFETY: binds our socket to a valid sockaddr_ll of the size given.
        let rc = unsafe {
            libc::bind(
                sock.fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(err("bind", io::Error::last_os_error()));
        }
        if let Some(id) = fanout_id {
            let arg: u32 = id as u32 | (cfg.fanout.bits() << 16);
            setsockopt(&sock.fd, libc::SOL_PACKET, libc::PACKET_FANOUT, &arg).map_err(|e| err("PACKET_FANOUT", e))?;
        }
        Ok(sock)
    }

    /// Reads (and thereby resets) the kernel's counters, adding its drops to ours; returns the total.
    fn poll_drops(&self) -> u64 {
        // SAFETY: tpacket_stats is plain old data.
        let mut st: libc::tpacket_stats = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: the kernel writes at most `len` bytes into `st`.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut st as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if rc == 0 {
            self.drops.fetch_add(st.tp_drops as u64, Ordering::Relaxed);
        }
        self.drops.load(Ordering::Relaxed)
    }

    /// Gives every filled RX frame back to the kernel (while no RX queue handle exists).
    fn flush_rx(&self) {
        let mut head = self.rx_head.load(Ordering::Relaxed);
        for _ in 0..self.rx.frame_nr {
            let st = self.rx.status(head);
            if st.load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                break;
            }
            st.store(libc::TP_STATUS_KERNEL, Ordering::Release);
            head = (head + 1) % self.rx.frame_nr;
        }
        self.rx_head.store(head, Ordering::Relaxed);
    }

    fn membership(&self, ifindex: i32, kind: libc::c_int, on: bool) -> io::Result<()> {
        let mreq = libc::packet_mreq { mr_ifindex: ifindex, mr_type: kind as u16, mr_alen: 0, mr_address: [0; 8] };
        let opt = if on { libc::PACKET_ADD_MEMBERSHIP } else { libc::PACKET_DROP_MEMBERSHIP };
        setsockopt(&self.fd, libc::SOL_PACKET, opt, &mreq)
    }

    /// Asks the kernel to send every frame marked for sending.
    fn kick(&self) -> io::Result<()> {
        // SAFETY: sendto with no buffer: the kernel takes the data from the TX ring.
        let rc =
            unsafe { libc::sendto(self.fd.as_raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT, std::ptr::null(), 0) };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

/// An af_packet port.
#[derive(Debug)]
pub struct AfPacketPort {
    state: PortState,
    cfg: AfPacketConfig,
    ctl: IfCtl,
    ifindex: i32,
    sockets: Vec<Arc<PacketSocket>>,
    pool: Option<Mempool>,
    drops_base: u64,
}

impl AfPacketPort {
    /// Opens interface `cfg.iface` (in the calling thread's network namespace) with `cfg.qpairs` sockets.
    pub fn new(name: &str, cfg: &AfPacketConfig) -> Result<Self> {
        cfg.check().map_err(|reason| Error::InvalidConfig { port: name.to_string(), reason })?;
        let ctl = IfCtl::new(&cfg.iface)?;
        let ifindex = ctl.ifindex().map_err(|e| match e {
            Error::Os { source, .. } if source.raw_os_error() == Some(libc::ENODEV) => Error::InvalidConfig {
                port: name.to_string(),
                reason: format!(
                    "iface={}: no such network interface in this network namespace (see `ip link`)",
                    cfg.iface
                ),
            },
            other => other,
        })?;
        let fanout_id = (cfg.qpairs > 1).then(|| {
            static NEXT: AtomicU16 = AtomicU16::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            ((std::process::id() as u16) ^ (ifindex as u16).rotate_left(8) ^ n.wrapping_mul(0x9e37)) | 1
        });
        let sockets = (0..cfg.qpairs)
            .map(|_| PacketSocket::open(cfg, ifindex, fanout_id).map(Arc::new))
            .collect::<Result<Vec<_>>>()?;
        let mac = ctl.mac()?;
        let mtu = ctl.mtu()?;
        let mut info = DevInfo::software("net_af_packet", name, cfg.qpairs);
        let max_frame = (cfg.framesz as usize - RX_NET_OFFSET + 14).min(cfg.framesz as usize - TX_DATA_OFFSET);
        info.max_rx_pktlen = max_frame as u32;
        info.max_mtu = (max_frame.saturating_sub(18)).clamp(68, 65_535) as u16;
        info.speed_capa = vec![10_000];
        let config = PortConfig {
            rx_queues: cfg.qpairs,
            tx_queues: cfg.qpairs,
            mtu: (mtu as u16).clamp(info.min_mtu, info.max_mtu),
            ..PortConfig::default()
        };
        info.check(&config)?;
        let state = PortState::new(info, mac, config);
        Ok(AfPacketPort { state, cfg: cfg.clone(), ctl, ifindex, sockets, pool: None, drops_base: 0 })
    }

    /// Opens from devargs (`net_af_packet0,iface=eth1,qpairs=2`).
    pub fn from_devargs(args: &Devargs) -> Result<Self> {
        args.check_keys(&["iface", "qpairs", "blocksz", "framesz", "framecnt", "qdisc_bypass", "fanout_mode"])?;
        let Some(iface) = args.get("iface").filter(|s| !s.is_empty()) else {
            return Err(args.error("net_af_packet needs iface=NAME (the kernel interface to attach to)"));
        };
        let fanout = match args.get("fanout_mode").unwrap_or("hash") {
            "hash" => FanoutMode::Hash,
            "lb" => FanoutMode::LoadBalance,
            "cpu" => FanoutMode::Cpu,
            "rollover" => FanoutMode::Rollover,
            "rnd" => FanoutMode::Random,
            "qm" => FanoutMode::QueueMapping,
            other => return Err(args.error(format!("fanout_mode={other}: use hash, lb, cpu, rollover, rnd or qm"))),
        };
        let cfg = AfPacketConfig {
            iface: iface.to_string(),
            qpairs: args.parse_or("qpairs", 1)?,
            blocksz: args.parse_or("blocksz", DEFAULT_BLOCKSZ)?,
            framesz: args.parse_or("framesz", DEFAULT_FRAMESZ)?,
            framecnt: args.parse_or("framecnt", DEFAULT_FRAMECNT)?,
            qdisc_bypass: args.flag("qdisc_bypass", true)?,
            fanout,
        };
        cfg.check().map_err(|reason| args.error(reason))?;
        AfPacketPort::new(&args.name, &cfg)
    }

    /// The interface's name.
    pub fn iface(&self) -> &str {
        &self.cfg.iface
    }

    fn drops(&self) -> u64 {
        self.sockets.iter().map(|s| s.poll_drops()).sum()
    }
}

impl TypedQueues for AfPacketPort {
    type Rx = AfPacketRxQueue;
    type Tx = AfPacketTxQueue;

    /// Typed RX queue.
    fn rx_queue_typed(&mut self, queue: u16) -> Result<Self::Rx> {
        let stats = self.state.claim_rx(queue, Some)?;
        let pool = self.pool.clone().ok_or_else(|| Error::NotStarted { port: self.state.name().to_string() })?;
        let sock = self.sockets[queue as usize].clone();
        let head = sock.rx_head.load(Ordering::Relaxed);
        Ok(AfPacketRxQueue { sock, head, pool, stats, port_id: self.state.port_id, scratch: Vec::new() })
    }

    /// Typed TX queue.
    fn tx_queue_typed(&mut self, queue: u16) -> Result<Self::Tx> {
        let stats = self.state.claim_tx(queue, Some)?;
        let sock = self.sockets[queue as usize].clone();
        let head = sock.tx_head.load(Ordering::Relaxed);
        Ok(AfPacketTxQueue { sock, head, stats })
    }
}

impl EthDev for AfPacketPort {
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
        self.ctl.change_flags(libc::IFF_UP, true)?;
        for s in &self.sockets {
            s.flush_rx();
        }
        self.state.start_with_pool(pool)?;
        self.pool = Some(pool.clone());
        Ok(())
    }

    fn stop(&mut self) -> Result<()> {
        self.state.stop()?;
        self.pool = None;
        Ok(())
    }

    fn rx_queue(&mut self, queue: u16) -> Result<Box<dyn RxQueue>> {
        Ok(Box::new(self.rx_queue_typed(queue)?))
    }

    fn tx_queue(&mut self, queue: u16) -> Result<Box<dyn TxQueue>> {
        Ok(Box::new(self.tx_queue_typed(queue)?))
    }

    fn link(&self) -> LinkStatus {
        self.ctl.link(10_000)
    }

    fn set_link_up(&mut self, up: bool) -> Result<()> {
        self.ctl.change_flags(libc::IFF_UP, up)
    }

    fn set_mac_addr(&mut self, mac: MacAddr) -> Result<()> {
        self.ctl.set_port_mac(&mut self.state, mac)
    }

    fn set_promiscuous(&mut self, on: bool) -> Result<()> {
        if on != self.state.promiscuous {
            self.sockets[0]
                .membership(self.ifindex, libc::PACKET_MR_PROMISC, on)
                .map_err(|e| os_error(format!("promiscuous mode on {}", self.cfg.iface), e))?;
            self.state.promiscuous = on;
        }
        Ok(())
    }

    fn set_allmulticast(&mut self, on: bool) -> Result<()> {
        if on != self.state.allmulticast {
            self.sockets[0]
                .membership(self.ifindex, libc::PACKET_MR_ALLMULTI, on)
                .map_err(|e| os_error(format!("all-multicast mode on {}", self.cfg.iface), e))?;
            self.state.allmulticast = on;
        }
        Ok(())
    }

    fn set_mtu(&mut self, mtu: u16) -> Result<()> {
        self.ctl.set_port_mtu(&mut self.state, mtu)
    }

    fn stats(&self) -> pktio::PortStats {
        let mut s = self.state.stats();
        s.imissed += self.drops().wrapping_sub(self.drops_base);
        s
    }

    fn reset_stats(&mut self) {
        self.state.reset_stats();
        self.drops_base = self.drops();
    }
}

/// RX side of an af_packet port: reads one socket's RX ring.
#[derive(Debug)]
pub struct AfPacketRxQueue {
    sock: Arc<PacketSocket>,
    head: usize,
    pool: Mempool,
    stats: Arc<RxQueueStats>,
    port_id: u16,
    scratch: Vec<u8>,
}

impl RxQueue for AfPacketRxQueue {
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let ring = self.sock.rx;
        let (mut n, mut bytes, mut errors) = (0usize, 0u64, 0u64);
        while !batch.is_full() {
            let status = ring.status(self.head).load(Ordering::Acquire);
            if status & libc::TP_STATUS_USER == 0 {
                break;
            }
            let hdr = ring.hdr(self.head);
            // SAFETY: the frame is ours (TP_STATUS_USER, read with acquire) until we hand it back below.
            let (len, snaplen, mac, tci, tpid) =
                unsafe { ((*hdr).tp_len, (*hdr).tp_snaplen, (*hdr).tp_mac, (*hdr).tp_vlan_tci, (*hdr).tp_vlan_tpid) };
            let start = mac as usize;
            let fits = start + snaplen as usize <= ring.frame_size && snaplen >= 12;
            if snaplen < len || !fits {
                // Cut by the frame size: not a frame we can deliver.
                errors += 1;
            } else {
                // SAFETY: [start, start + snaplen) lies inside this frame (checked above), which is ours.
                let data = unsafe { std::slice::from_raw_parts(ring.frame(self.head).add(start), snaplen as usize) };
                let vlan = status & libc::TP_STATUS_VLAN_VALID != 0;
                let m = if vlan {
                    let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 && tpid != 0 { tpid } else { 0x8100 };
                    self.scratch.clear();
                    self.scratch.extend_from_slice(&data[..12]);
                    self.scratch.extend_from_slice(&tpid.to_be_bytes());
                    self.scratch.extend_from_slice(&tci.to_be_bytes());
                    self.scratch.extend_from_slice(&data[12..]);
                    mbuf_from_bytes(&self.pool, &self.scratch)
                } else {
                    mbuf_from_bytes(&self.pool, data)
                };
                let Some(mut m) = m else {
                    // Pool dry: leave the frame in the ring for the next burst.
                    self.stats.nombuf.add(1);
                    break;
                };
                m.set_port(self.port_id);
                bytes += m.pkt_len() as u64;
                let _ = batch.push(m);
                n += 1;
            }
            ring.status(self.head).store(libc::TP_STATUS_KERNEL, Ordering::Release);
            self.head = (self.head + 1) % ring.frame_nr;
        }
        self.stats.packets.add(n as u64);
        self.stats.bytes.add(bytes);
        if errors > 0 {
            self.stats.errors.add(errors);
        }
        n
    }

    /// The queue's packet socket: with an RX ring, the kernel reports it readable while the last frame it
    /// filled is still marked for us (`TP_STATUS_USER`), i.e. until the burst that takes it hands it back.
    fn wait_fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.sock.fd.as_raw_fd())
    }
}

impl Drop for AfPacketRxQueue {
    fn drop(&mut self) {
        self.sock.rx_head.store(self.head, Ordering::Relaxed);
    }
}

/// TX side of an af_packet port: fills one socket's TX ring and kicks the kernel once per burst.
#[derive(Debug)]
pub struct AfPacketTxQueue {
    sock: Arc<PacketSocket>,
    head: usize,
    stats: Arc<TxQueueStats>,
}

impl TxQueue for AfPacketTxQueue {
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let ring = self.sock.tx;
        let room = ring.frame_size - TX_DATA_OFFSET;
        let (mut done, mut queued, mut bytes, mut errors) = (0usize, 0u64, 0u64, 0u64);
        for m in batch.iter() {
            let st = ring.status(self.head);
            let status = st.load(Ordering::Acquire);
            if status & (libc::TP_STATUS_SEND_REQUEST | libc::TP_STATUS_SENDING) != 0 {
                // The kernel has not sent this frame yet: the ring is full.
                break;
            }
            let len = m.pkt_len() as usize;
            done += 1;
            if !(14..=room).contains(&len) {
                errors += 1;
                continue;
            }
            // SAFETY: the frame is ours (available, read with acquire); its data area holds `room` >= len bytes.
            unsafe {
                let out = std::slice::from_raw_parts_mut(ring.frame(self.head).add(TX_DATA_OFFSET), len);
                m.copy_to(out);
                let hdr = ring.hdr(self.head);
                (*hdr).tp_len = len as u32;
                (*hdr).tp_snaplen = len as u32;
            }
            st.store(libc::TP_STATUS_SEND_REQUEST, Ordering::Release);
            self.head = (self.head + 1) % ring.frame_nr;
            queued += 1;
            bytes += len as u64;
        }
        if queued > 0 {
            // Errors here (ENOBUFS, EAGAIN) leave the frames marked: the next kick sends them.
            let _ = self.sock.kick();
        }
        if done == batch.len() {
            batch.clear();
        } else {
            batch.drain_front(done, drop);
        }
        self.stats.packets.add(queued);
        self.stats.bytes.add(bytes);
        if errors > 0 {
            self.stats.errors.add(errors);
        }
        done
    }
}

impl Drop for AfPacketTxQueue {
    fn drop(&mut self) {
        let _ = self.sock.kick();
        self.sock.tx_head.store(self.head, Ordering::Relaxed);
    }
}
