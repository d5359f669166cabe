//! One AF_XDP socket: its UMEM (an anonymous mapping of its own, split into RX and TX frames, or the port's pool
//! memory: [`super::pool_umem`]), the four rings mapped from the kernel, and the burst operations on them.
//!
//! Ring protocol: each ring is a power-of-two array with a producer and a consumer index shared with the kernel.
//! The side that produces writes entries, then publishes the new producer index with Release; the side that
//! consumes reads the producer index with Acquire before reading entries, and returns them by storing its consumer
//! index with Release. We produce on the fill and TX rings and consume the RX and completion rings.
//!
//! Frames of an own UMEM: the first `rx_frames` UMEM chunks circulate fill ring -> RX ring -> (copied into a pool buffer) -> fill
//! ring; the fill ring holds all of them, so giving one back never waits. TX chunk `i` belongs to TX ring slot
//! `i`: a slot is free again once the completion ring has reported as many frames as were sent before it
//! (the kernel completes a socket's frames in order).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use mempool::Mempool;

use super::pool_umem::PoolUmem;

/// How long bind waits for a queue the kernel is still releasing.
pub(crate) const BIND_BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(1);
/// Size of one UMEM chunk (one frame).
pub(crate) const CHUNK_SIZE: u32 = 2048;
/// Where the kernel puts received data in a chunk when the UMEM asks for no headroom of its own.
pub(crate) const XDP_PACKET_HEADROOM: u32 = 256;
/// Largest frame one chunk holds.
pub(crate) const MAX_FRAME: u32 = CHUNK_SIZE - XDP_PACKET_HEADROOM;

/// A mapping we own, unmapped on drop.
#[derive(Debug)]
struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

impl Mapping {
    /// Maps `len` bytes of `fd` at page offset `offset`, or anonymous memory when `fd` is `None`.
    fn new(len: usize, fd: Option<&OwnedFd>, offset: u64) -> io::Result<Mapping> {
        let (flags, raw) = match fd {
            Some(fd) => (libc::MAP_SHARED | libc::MAP_POPULATE, fd.as_raw_fd()),
            None => (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE, -1),
        };
        // SAFETY: a fresh mapping at an address the kernel picks; the result is checked.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, flags, raw, offset as libc::off_t)
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Mapping { base, len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping; nothing references it once its owner is dropped.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// One mapped ring: its shared indices and flags, and `size` entries of `T` (u64 addresses or `xdp_desc`).
#[derive(Debug)]
pub(crate) struct Ring {
    producer: NonNull<AtomicU32>,
    consumer: NonNull<AtomicU32>,
    flags: NonNull<AtomicU32>,
    entries: NonNull<u8>,
    mask: u32,
    _map: Mapping,
}

impl Ring {
    fn map(fd: &OwnedFd, off: &libc::xdp_ring_offset, size: u32, entry: usize, pgoff: u64) -> io::Result<Ring> {
        let map = Mapping::new(off.desc as usize + size as usize * entry, Some(fd), pgoff)?;
        let at = |o: u64| {
            // SAFETY: the kernel's offsets lie inside the mapping it sized for this ring.
            unsafe { NonNull::new_unchecked(map.base.as_ptr().add(o as usize)) }
        };
        Ok(Ring {
            producer: at(off.producer).cast(),
            consumer: at(off.consumer).cast(),
            flags: at(off.flags).cast(),
            entries: at(off.desc),
            mask: size - 1,
            _map: map,
        })
    }

    #[inline(always)]
    fn producer(&self) -> &AtomicU32 {
        // SAFETY: an aligned u32 inside the live mapping, shared with the kernel and only accessed atomically.
        unsafe { self.producer.as_ref() }
    }

    #[inline(always)]
    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as for `producer`.
        unsafe { self.consumer.as_ref() }
    }

    /// Whether the kernel asked to be woken to process this ring.
    #[inline(always)]
    pub(crate) fn needs_wakeup(&self) -> bool {
        // SAFETY: as for `producer`.
        unsafe { self.flags.as_ref() }.load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0
    }

    /// Entries in the ring.
    #[inline(always)]
    fn size(&self) -> u32 {
        self.mask + 1
    }

    /// Entry `idx` (taken modulo the ring size) as a `T`.
    #[inline(always)]
    fn entry<T>(&self, idx: u32) -> *mut T {
        // SAFETY: (idx & mask) < size, so the entry lies inside the mapping.
        unsafe { self.entries.as_ptr().cast::<T>().add((idx & self.mask) as usize) }
    }
}

/// What a socket's UMEM is made of.
#[derive(Debug)]
pub(crate) enum UmemSpec<'a> {
    /// An anonymous mapping of its own: `rx_frames` chunks for receiving, `tx_frames` for sending (powers of two,
    /// also the ring sizes).
    Own { rx_frames: u32, tx_frames: u32 },
    /// The memory of `pool`, rings of `ring` entries, `fill` buffers kept with the kernel for receiving.
    Pool { pool: &'a Mempool, ring: u32, fill: u32 },
}

/// A socket's UMEM.
#[derive(Debug)]
enum Umem {
    Own(Mapping),
    Pool(PoolUmem),
}

/// An AF_XDP socket bound to one queue of an interface, with its UMEM and rings.
#[derive(Debug)]
pub(crate) struct Xsk {
    // Declared first so the socket closes before its UMEM and rings are unmapped; the socket is released when the
    // last ring mapping goes, so a pool UMEM (last) gives its buffers back once the kernel is done with them.
    fd: OwnedFd,
    pub(crate) fill: Ring,
    pub(crate) comp: Ring,
    pub(crate) rx: Ring,
    pub(crate) tx: Ring,
    umem: Umem,
    /// UMEM chunks given to receiving; the TX chunks follow them.
    rx_frames: u32,
    /// Whether the kernel binds the socket in zero-copy mode.
    pub(crate) zerocopy: bool,
    /// Whether the socket uses preferred busy polling (every RX burst then enters the kernel to run the queue's
    /// NAPI on the polling core).
    pub(crate) busy_poll: bool,
}

// SAFETY: the fill and RX rings (and the RX chunks) are only used by the one RX queue handle, the TX and completion
// rings (and the TX chunks) only by the one TX queue handle; the control plane only reads statistics through the
// descriptor. Ring indices are atomics shared with the kernel.
unsafe impl Send for Xsk {}
// SAFETY: as above.
unsafe impl Sync for Xsk {}

/// The network namespace a port was opened in. A socket belongs to the namespace it was made in, and bind looks
/// the interface index up there: a port started (`umem=pool` makes its sockets then) from a thread in another
/// namespace must still make them in this one.
#[derive(Debug)]
pub(crate) struct NetNs {
    file: std::fs::File,
}

impl NetNs {
    /// The calling thread's namespace.
    pub(crate) fn current() -> io::Result<NetNs> {
        Ok(NetNs { file: std::fs::File::open("/proc/thread-self/ns/net")? })
    }

    fn try_clone(&self) -> io::Result<NetNs> {
        Ok(NetNs { file: self.file.try_clone()? })
    }

    /// Whether the calling thread is in this namespace (same namespace inode).
    fn is_current(&self) -> io::Result<bool> {
        use std::os::unix::fs::MetadataExt;
        let (here, ours) = (std::fs::metadata("/proc/thread-self/ns/net")?, self.file.metadata()?);
        Ok((here.dev(), here.ino()) == (ours.dev(), ours.ino()))
    }

    /// A new AF_XDP socket in this namespace: made here, or by a short-lived thread that enters it (setns affects
    /// only that thread).
    fn socket(&self) -> io::Result<OwnedFd> {
        if self.is_current()? {
            return xdp_socket();
        }
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: setns on a namespace descriptor we hold; it moves only this helper thread.
                if unsafe { libc::setns(self.file.as_raw_fd(), libc::CLONE_NEWNET) } < 0 {
                    return Err(io::Error::last_os_error());
                }
                xdp_socket()
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the thread making the socket panicked")))
        })
    }
}

fn xdp_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call; the result is checked.
    let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// One queue of one interface, in its namespace.
#[derive(Debug)]
pub(crate) struct QueueId {
    netns: NetNs,
    ifindex: i32,
    queue: u32,
}

impl QueueId {
    /// Waits, up to [`BIND_BUSY_WAIT`], until no AF_XDP buffer pool is attached to this queue any more: the kernel
    /// detaches a closed socket's pool in deferred work, and a zero-copy driver may still write into its buffers
    /// until then. Probes by binding throwaway copy-mode sockets (sharing one page of UMEM of their own). True when
    /// the queue was seen free (or the interface is gone).
    pub(crate) fn wait_released(&self) -> bool {
        let Ok(page) = Mapping::new(2 * CHUNK_SIZE as usize, None, 0) else { return false };
        let deadline = std::time::Instant::now() + BIND_BUSY_WAIT;
        loop {
            match self.probe(&page) {
                Ok(()) => return true,
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENODEV) | Some(libc::ENXIO)) => return true,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
                Err(_) => return false,
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Binds a fresh socket with the two-chunk UMEM `page` to this queue in copy mode (a failed bind can leave a
    /// socket unusable, so each attempt has its own).
    fn probe(&self, page: &Mapping) -> io::Result<()> {
        let fd = self.netns.socket()?;
        let reg = libc::xdp_umem_reg {
            addr: page.base.as_ptr() as u64,
            len: page.len as u64,
            chunk_size: CHUNK_SIZE,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        setsockopt(&fd, libc::XDP_UMEM_REG, &reg)?;
        for ring in [libc::XDP_UMEM_FILL_RING, libc::XDP_UMEM_COMPLETION_RING, libc::XDP_RX_RING] {
            setsockopt(&fd, ring, &2u32)?;
        }
        let sxdp = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: libc::XDP_COPY,
            sxdp_ifindex: self.ifindex as u32,
            sxdp_queue_id: self.queue,
            sxdp_shared_umem_fd: 0,
        };
        // SAFETY: binds our socket to a live, initialised sockaddr_xdp of the given size.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sxdp as *const libc::sockaddr_xdp).cast(),
                std::mem::size_of::<libc::sockaddr_xdp>() as u32,
            )
        };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

/// Why a socket could not be made: the step and the OS error.
#[derive(Debug)]
pub(crate) struct XskError {
    pub(crate) step: &'static str,
    pub(crate) source: io::Error,
}

fn setsockopt<T>(fd: &OwnedFd, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: passes a pointer to a live `T` and its size.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as u32,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn getsockopt_u32(fd: &OwnedFd, name: libc::c_int) -> io::Result<u32> {
    let mut v = 0u32;
    let mut len = 4;
    // SAFETY: the kernel writes at most `len` bytes into the live `v`.
    let rc = unsafe { libc::getsockopt(fd.as_raw_fd(), libc::SOL_XDP, name, (&mut v as *mut u32).cast(), &mut len) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(v)
    }
}

/// Counters the kernel keeps for a socket (XDP_STATISTICS).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct XskStats {
    pub(crate) rx_dropped: u64,
    pub(crate) rx_invalid_descs: u64,
    pub(crate) tx_invalid_descs: u64,
    pub(crate) rx_ring_full: u64,
    pub(crate) rx_fill_ring_empty_descs: u64,
    pub(crate) tx_ring_empty_descs: u64,
}

impl XskStats {
    fn zip(self, o: XskStats, f: impl Fn(u64, u64) -> u64) -> XskStats {
        XskStats {
            rx_dropped: f(self.rx_dropped, o.rx_dropped),
            rx_invalid_descs: f(self.rx_invalid_descs, o.rx_invalid_descs),
            tx_invalid_descs: f(self.tx_invalid_descs, o.tx_invalid_descs),
            rx_ring_full: f(self.rx_ring_full, o.rx_ring_full),
            rx_fill_ring_empty_descs: f(self.rx_fill_ring_empty_descs, o.rx_fill_ring_empty_descs),
            tx_ring_empty_descs: f(self.tx_ring_empty_descs, o.tx_ring_empty_descs),
        }
    }

    /// Counts since `base`.
    pub(crate) fn minus(self, base: XskStats) -> XskStats {
        self.zip(base, u64::wrapping_sub)
    }

    /// Both counts together.
    pub(crate) fn plus(self, other: XskStats) -> XskStats {
        self.zip(other, u64::wrapping_add)
    }
}

impl Xsk {
    /// Creates a socket in network namespace `netns` with the UMEM `spec` asks for and binds it to queue `queue`
    /// of `ifindex` (an interface of that namespace), zero-copy unless `force_copy` or the driver cannot.
    pub(crate) fn open(
        netns: &NetNs,
        ifindex: i32,
        queue: u32,
        spec: UmemSpec<'_>,
        force_copy: bool,
    ) -> Result<Xsk, XskError> {
        let step = |step: &'static str| move |source: io::Error| XskError { step, source };
        let fd = netns.socket().map_err(step("socket(AF_XDP)"))?;
        let (mut umem, reg, rx_frames, tx_frames) = match spec {
            UmemSpec::Own { rx_frames, tx_frames } => {
                let umem_len = (rx_frames + tx_frames) as usize * CHUNK_SIZE as usize;
                let map = Mapping::new(umem_len, None, 0).map_err(step("UMEM mmap"))?;
                let reg = libc::xdp_umem_reg {
                    addr: map.base.as_ptr() as u64,
                    len: umem_len as u64,
                    chunk_size: CHUNK_SIZE,
                    headroom: 0,
                    flags: 0,
                    tx_metadata_len: 0,
                };
                (Umem::Own(map), reg, rx_frames, tx_frames)
            }
            UmemSpec::Pool { pool, ring, fill } => {
                let umem = PoolUmem::new(pool, fill.min(ring));
                let reg = umem.reg();
                (Umem::Pool(umem), reg, ring, ring)
            }
        };
        setsockopt(&fd, libc::XDP_UMEM_REG, &reg).map_err(step("XDP_UMEM_REG"))?;
        setsockopt(&fd, libc::XDP_UMEM_FILL_RING, &rx_frames).map_err(step("XDP_UMEM_FILL_RING"))?;
        setsockopt(&fd, libc::XDP_UMEM_COMPLETION_RING, &tx_frames).map_err(step("XDP_UMEM_COMPLETION_RING"))?;
        setsockopt(&fd, libc::XDP_RX_RING, &rx_frames).map_err(step("XDP_RX_RING"))?;
        setsockopt(&fd, libc::XDP_TX_RING, &tx_frames).map_err(step("XDP_TX_RING"))?;
        let off: libc::xdp_mmap_offsets = {
            // SAFETY: xdp_mmap_offsets is plain old data; all-zero is valid.
            let mut o: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
            // SAFETY: the kernel writes at most `len` bytes into `o`.
            let rc = unsafe {
                libc::getsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_XDP,
                    libc::XDP_MMAP_OFFSETS,
                    (&mut o as *mut libc::xdp_mmap_offsets).cast(),
                    &mut len,
                )
            };
            if rc < 0 {
                return Err(step("XDP_MMAP_OFFSETS")(io::Error::last_os_error()));
            }
            o
        };
        let desc = std::mem::size_of::<libc::xdp_desc>();
        let fill =
            Ring::map(&fd, &off.fr, rx_frames, 8, libc::XDP_UMEM_PGOFF_FILL_RING).map_err(step("fill ring mmap"))?;
        let comp = Ring::map(&fd, &off.cr, tx_frames, 8, libc::XDP_UMEM_PGOFF_COMPLETION_RING)
            .map_err(step("completion ring mmap"))?;
        let rx =
            Ring::map(&fd, &off.rx, rx_frames, desc, libc::XDP_PGOFF_RX_RING as u64).map_err(step("RX ring mmap"))?;
        let tx =
            Ring::map(&fd, &off.tx, tx_frames, desc, libc::XDP_PGOFF_TX_RING as u64).map_err(step("TX ring mmap"))?;
        // Receive buffers go on the fill ring before bind, so the kernel has them from the first frame on.
        match &umem {
            Umem::Own(_) => {
                // Every RX chunk.
                for i in 0..rx_frames {
                    // SAFETY: fill-ring entry i < rx_frames = its size, not yet published to the kernel.
                    unsafe { fill.entry::<u64>(i).write(i as u64 * CHUNK_SIZE as u64) };
                }
                fill.producer().store(rx_frames, Ordering::Release);
            }
            Umem::Pool(p) => {
                // As many pool buffers as the target (fewer if the pool is short: receiving tops up later).
                let _ = p.refill(&fill, &mut Producer::attach(&fill));
            }
        }
        let mode = if force_copy { libc::XDP_COPY } else { 0 };
        let mut sxdp = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: libc::XDP_USE_NEED_WAKEUP | mode,
            sxdp_ifindex: ifindex as u32,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: 0,
        };
        let bind = |sxdp: &libc::sockaddr_xdp| {
            // SAFETY: binds our socket to a live, initialised sockaddr_xdp of the given size.
            let rc = unsafe {
                libc::bind(
                    fd.as_raw_fd(),
                    (sxdp as *const libc::sockaddr_xdp).cast(),
                    std::mem::size_of::<libc::sockaddr_xdp>() as u32,
                )
            };
            if rc < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        // A socket closed on this queue a moment ago (a pool-UMEM port restarting) leaves it busy until the kernel's
        // deferred release of its buffer pool has run (a workqueue, usually well under a millisecond): wait for that,
        // with a deadline, before calling the queue busy.
        let deadline = std::time::Instant::now() + BIND_BUSY_WAIT;
        let mut first = bind(&sxdp);
        while matches!(&first, Err(e) if e.raw_os_error() == Some(libc::EBUSY)) && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
            first = bind(&sxdp);
        }
        if let Err(e) = first {
            // Kernels before need-wakeup (5.4) reject the flag: bind without it.
            if e.raw_os_error() != Some(libc::EINVAL) {
                return Err(step("bind")(e));
            }
            sxdp.sxdp_flags = mode;
            bind(&sxdp).map_err(|_| step("bind")(e))?;
        }
        if let Umem::Pool(p) = &mut umem {
            p.bound(QueueId { netns: netns.try_clone().map_err(step("dup of the namespace"))?, ifindex, queue });
        }
        // struct xdp_options is one u32 of flags.
        let zerocopy = getsockopt_u32(&fd, libc::XDP_OPTIONS).unwrap_or(0) & libc::XDP_OPTIONS_ZEROCOPY != 0;
        Ok(Xsk { fd, fill, comp, rx, tx, umem, rx_frames, zerocopy, busy_poll: false })
    }

    /// The pool UMEM, when the socket has one.
    #[inline(always)]
    pub(crate) fn pool_umem(&self) -> Option<&PoolUmem> {
        match &self.umem {
            Umem::Pool(p) => Some(p),
            Umem::Own(_) => None,
        }
    }

    /// Base of an own UMEM (pool UMEMs have no chunks of the socket's own: never called for them).
    #[inline(always)]
    fn own_base(&self) -> *mut u8 {
        match &self.umem {
            Umem::Own(map) => map.base.as_ptr(),
            Umem::Pool(_) => unreachable!("own-UMEM frame access on a pool UMEM"),
        }
    }

    /// Turns on preferred busy polling with `budget` frames per poll (0: off). Kernels before 5.11 lack it:
    /// the error says so and the socket stays as it was.
    pub(crate) fn set_busy_poll(&mut self, budget: u32) -> io::Result<()> {
        const SO_PREFER_BUSY_POLL: libc::c_int = 69;
        const SO_BUSY_POLL_BUDGET: libc::c_int = 70;
        if budget == 0 {
            return Ok(());
        }
        // Poll for up to 20 us per call, as DPDK does.
        for (opt, v) in [(SO_PREFER_BUSY_POLL, 1), (libc::SO_BUSY_POLL, 20), (SO_BUSY_POLL_BUDGET, budget as i32)] {
            let v: libc::c_int = v;
            // SAFETY: passes a live c_int and its size.
            let rc = unsafe {
                libc::setsockopt(self.fd.as_raw_fd(), libc::SOL_SOCKET, opt, (&v as *const libc::c_int).cast(), 4)
            };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        self.busy_poll = true;
        Ok(())
    }

    /// The socket descriptor (for the XSKMAP).
    pub(crate) fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// The kernel's counters for this socket.
    pub(crate) fn stats(&self) -> XskStats {
        // SAFETY: xdp_statistics is plain old data.
        let mut st: libc::xdp_statistics = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::xdp_statistics>() as libc::socklen_t;
        // SAFETY: the kernel writes at most `len` bytes into `st`.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_STATISTICS,
                (&mut st as *mut libc::xdp_statistics).cast(),
                &mut len,
            )
        };
        if rc < 0 {
            return XskStats::default();
        }
        XskStats {
            rx_dropped: st.rx_dropped,
            rx_invalid_descs: st.rx_invalid_descs,
            tx_invalid_descs: st.tx_invalid_descs,
            rx_ring_full: st.rx_ring_full,
            rx_fill_ring_empty_descs: st.rx_fill_ring_empty_descs,
            tx_ring_empty_descs: st.tx_ring_empty_descs,
        }
    }

    /// Wakes the kernel to refill from the fill ring (receive side).
    pub(crate) fn wake_rx(&self) {
        // SAFETY: recvfrom with no buffer only kicks the socket's receive processing.
        unsafe {
            libc::recvfrom(
                self.fd.as_raw_fd(),
                std::ptr::null_mut(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
    }

    /// Wakes the kernel to send what is on the TX ring. EAGAIN/EBUSY/ENOBUFS leave the frames queued for the
    /// next wake-up.
    pub(crate) fn wake_tx(&self) {
        // SAFETY: sendto with no buffer: the kernel takes the frames from the TX ring.
        unsafe { libc::sendto(self.fd.as_raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT, std::ptr::null(), 0) };
    }

    /// Frame data at UMEM address `addr`, `len` bytes, as given by a descriptor the caller owns.
    #[inline(always)]
    pub(crate) fn frame(&self, addr: u64, len: u32) -> Option<&[u8]> {
        let end = addr.checked_add(len as u64)?;
        if end > self.rx_frames as u64 * CHUNK_SIZE as u64 {
            return None;
        }
        // SAFETY: [addr, end) lies inside the RX part of the UMEM (checked), in a chunk the RX ring handed to us.
        Some(unsafe { std::slice::from_raw_parts(self.own_base().add(addr as usize), len as usize) })
    }

    /// The UMEM address of TX chunk `slot` (a TX ring index).
    #[inline(always)]
    pub(crate) fn tx_chunk(&self, slot: u32) -> u64 {
        (self.rx_frames as u64 + (slot & self.tx.mask) as u64) * CHUNK_SIZE as u64
    }

    /// Copies `m` (at most CHUNK_SIZE bytes, checked by the caller) into TX chunk `slot`.
    #[inline(always)]
    pub(crate) fn tx_copy(&self, slot: u32, m: &mempool::Mbuf) {
        let addr = self.tx_chunk(slot) as usize;
        let len = (m.pkt_len() as usize).min(CHUNK_SIZE as usize);
        // SAFETY: the chunk lies inside the UMEM; its TX ring slot is free (the caller checked against the
        // completions), so the kernel is not reading it, and only the one TX queue handle writes TX chunks.
        let out = unsafe { std::slice::from_raw_parts_mut(self.own_base().add(addr), len) };
        m.copy_to(out);
    }
}

/// The consumer side of a ring (RX, completion): a cached view of the kernel's producer index.
#[derive(Debug, Default)]
pub(crate) struct Consumer {
    cons: u32,
    prod: u32,
}

impl Consumer {
    pub(crate) fn attach(ring: &Ring) -> Consumer {
        let cons = ring.consumer().load(Ordering::Relaxed);
        Consumer { cons, prod: cons }
    }

    /// How many entries are ready (up to `max`), refreshing the producer index when the cached view is empty.
    #[inline(always)]
    pub(crate) fn peek(&mut self, ring: &Ring, max: u32) -> u32 {
        if self.prod == self.cons {
            self.prod = ring.producer().load(Ordering::Acquire);
        }
        self.prod.wrapping_sub(self.cons).min(max)
    }

    /// Address entry `i` (fill/completion rings) of the ones [`Consumer::peek`] reported.
    #[inline(always)]
    pub(crate) fn addr(&self, ring: &Ring, i: u32) -> u64 {
        // SAFETY: as for `desc`.
        unsafe { ring.entry::<u64>(self.cons.wrapping_add(i)).read() }
    }

    /// Entry `i` of the ones [`Consumer::peek`] reported.
    #[inline(always)]
    pub(crate) fn desc(&self, ring: &Ring, i: u32) -> libc::xdp_desc {
        // SAFETY: the entry was published by the kernel (producer index read with Acquire) and not yet returned.
        unsafe { ring.entry::<libc::xdp_desc>(self.cons.wrapping_add(i)).read() }
    }

    /// Our consumer index: entries before it were taken.
    #[inline(always)]
    pub(crate) fn index(&self) -> u32 {
        self.cons
    }

    /// Gives `n` entries back to the kernel.
    #[inline(always)]
    pub(crate) fn release(&mut self, ring: &Ring, n: u32) {
        self.cons = self.cons.wrapping_add(n);
        ring.consumer().store(self.cons, Ordering::Release);
    }
}

/// The producer side of a ring (fill, TX): a cached view of the kernel's consumer index.
#[derive(Debug, Default)]
pub(crate) struct Producer {
    pub(crate) prod: u32,
    /// The kernel's consumer index as last read.
    cons: u32,
}

impl Producer {
    pub(crate) fn attach(ring: &Ring) -> Producer {
        Producer { prod: ring.producer().load(Ordering::Relaxed), cons: ring.consumer().load(Ordering::Acquire) }
    }

    /// Free entries (at least `want` if there are, reading the kernel's consumer index only when the cached one
    /// shows fewer). Acquire: the kernel is done with the entries it consumed before we overwrite them.
    #[inline(always)]
    pub(crate) fn free(&mut self, ring: &Ring, want: u32) -> u32 {
        let free = ring.size() - self.prod.wrapping_sub(self.cons);
        if free >= want {
            return free;
        }
        self.cons = ring.consumer().load(Ordering::Acquire);
        ring.size() - self.prod.wrapping_sub(self.cons)
    }

    /// Writes a fill-ring address at position `i` past the producer index (not yet visible to the kernel).
    #[inline(always)]
    pub(crate) fn put_addr(&self, ring: &Ring, i: u32, addr: u64) {
        // SAFETY: the caller keeps at most `size` entries outstanding, so this slot is not the kernel's.
        unsafe { ring.entry::<u64>(self.prod.wrapping_add(i)).write(addr) }
    }

    /// Writes a TX descriptor at position `i` past the producer index.
    #[inline(always)]
    pub(crate) fn put_desc(&self, ring: &Ring, i: u32, desc: libc::xdp_desc) {
        // SAFETY: as for `put_addr`.
        unsafe { ring.entry::<libc::xdp_desc>(self.prod.wrapping_add(i)).write(desc) }
    }

    /// Publishes `n` written entries to the kernel.
    #[inline(always)]
    pub(crate) fn submit(&mut self, ring: &Ring, n: u32) {
        self.prod = self.prod.wrapping_add(n);
        ring.producer().store(self.prod, Ordering::Release);
    }
}
