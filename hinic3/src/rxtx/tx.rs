//! The TX queue (docs/hw/hinic3.md §10.1, §10.2): 16-byte WQEBBs; a packet of one segment without offloads is one
//! compact WQEBB, anything else an extended WQE (control/BD0, the task section when an offload asks for it, one BD per
//! further segment) that may wrap around the ring's end. The owner bit starts at 1 and flips when a WQE reaches the
//! end, as Linux sets it. Frames shorter than 32 bytes are padded with zeros to 32 first (docs/hw/hinic3.md §18).
//! Completions come from the consumer index the hardware writes into the 64-byte CI slot
//! (registered with L2NIC 8). One SQ doorbell per burst, after a store barrier.
//!
//! The burst is monomorphised per [`TxPath`] (chosen from the queue's configuration, as for the rings on
//! [`ringkit::TxCore`]): on [`TxPath::Plain`] the compact-WQE tests never read the offload flags, only the pool,
//! chain and length tests stay; whatever fails them takes the extended WQE, which honours the flags.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use drvkit::bar::RegisterSpace;
use drvkit::barrier::{dma_rmb, dma_wmb};
use drvkit::dma::DmaMapper;
use drvkit::reg::Regs;
use hugepage::Allocator;
use mempool::{ol_flags, Mbuf, MbufHeader, Mempool, PacketBatch, PoolId};
use pktio::stats::TxQueueStats;
use pktio::{Error, Result, TxQueue};
use ringkit::{TxHangState, TxPath, TxWatchdog};

use crate::desc::{ctrl, queue_info, task, SqWqebb};
use crate::doorbell::{self, DbKind};
use crate::wq::WqMem;
use drvkit::dma::DmaArea;

/// Clean when fewer WQEBBs than this are free.
pub const TX_FREE_THRESH: usize = 64;
/// Most segments of a non-TSO packet (docs/hw/hinic3.md §10.2, Linux's cap).
pub const MAX_SGE: usize = 18;
/// Most segments of a TSO packet.
pub const MAX_SGE_TSO: usize = 127;
/// Size of the CI write-back slot (docs/hw/hinic3.md §10.2).
pub const CI_SLOT: usize = 64;
/// The smallest frame the SQ takes (docs/hw/hinic3.md §18): a shorter one is padded with zeros to this length, as
/// Linux's hinic3 does, or dropped and counted when it cannot be (a chain, an empty buffer).
pub const MIN_TX_LEN: u32 = 32;
/// The largest length minus [`MIN_TX_LEN`] a compact WQE takes: a length below the minimum wraps past it, so one
/// comparison tells both ends.
const COMPACT_SPAN: u32 = ctrl::COMPACT_MAX_LEN - MIN_TX_LEN;

const OFFLOADS: u64 = ol_flags::TX_IP_CKSUM | ol_flags::TX_UDP_CKSUM | ol_flags::TX_VLAN | ol_flags::TX_TCP_SEG;

/// What a TX queue needs from its port.
pub struct TxSetup<'a, D> {
    /// The doorbell BAR.
    pub db: &'a Arc<D>,
    /// Ring memory.
    pub allocator: &'a Allocator,
    /// DMA map of the device.
    pub mapper: &'a Arc<dyn DmaMapper>,
    /// Function-local queue index.
    pub queue: u16,
    /// WQEBBs (a power of two).
    pub depth: u16,
    /// WQ page size code (COMM 22: 4 KiB << this); a ring larger than a page spans several ([`crate::wq`]).
    pub wq_page_log2: u8,
    /// The default CoS for the doorbell (docs/hw/hinic3.md §10.1).
    pub cos: u8,
    /// The pool most packets come from (the port's RX pool): their completions are freed in bulk without a test per
    /// packet.
    pub pool: &'a Mempool,
    /// Counters.
    pub stats: Arc<TxQueueStats>,
    /// What the hang watchdog finds (shared with the port, for its xstats and [`crate::Error::TxHang`]).
    pub hang: Arc<TxHangState>,
    /// How long the SQ may stay full with its consumer index standing still before it is hung.
    pub hang_timeout: std::time::Duration,
    /// Port name for errors.
    pub port: &'a str,
    /// The burst the queue runs: [`TxPath::for_offloads`] of its configuration.
    pub path: TxPath,
}

/// What the port's control plane reads of an SQ for the hang watchdog (docs/hw/hinic3.md §10.2): the consumer
/// index the device writes to the CI slot, and the producer index the owner last rang the doorbell with (one relaxed
/// store per burst). Shared by the ring and the port, so the CI slot outlives both.
pub struct SqProgress {
    ci_mem: DmaArea,
    pi: AtomicU32,
}

impl SqProgress {
    /// The consumer index the hardware last wrote, within a ring of `mask + 1` WQEBBs.
    pub fn hw_ci(&self, mask: usize) -> usize {
        // SAFETY: the slot is a live, aligned u16 of the CI memory this owns, which the device writes.
        let ci = u16::from_le(unsafe { self.ci_mem.as_ptr().cast::<u16>().read_volatile() });
        ci as usize & mask
    }

    /// The producer index of the last doorbell.
    pub fn pi(&self) -> usize {
        self.pi.load(Ordering::Relaxed) as usize
    }
}

/// One TX queue. Owned by one thread.
pub struct TxRing<D: RegisterSpace> {
    ring: NonNull<SqWqebb>,
    mask: usize,
    pi: usize,
    ci: usize,
    owner: u32,
    /// The packet whose WQE starts at each WQEBB; null elsewhere.
    shadow: Box<[*mut MbufHeader]>,
    ci_slot: NonNull<u16>,
    /// The pool of [`TxSetup::pool`] and its ID.
    pool: Mempool,
    pool_id: PoolId,
    /// Some WQE in flight is extended or holds a packet of another pool or a chain: clean slot by slot.
    mixed: bool,
    /// 0 when every buffer of the pool fits a compact WQE (its data room is at most 16383 bytes), so that the fast
    /// run only tests for a short packet; 1 sends every packet the general way.
    fast_off: usize,
    /// Most completions of plain packets one clean frees: the pool's lcore cache size. Freeing a whole ring's worth
    /// at once would spill the cache into the pool's shared ring, and the RX refill would take them back from there.
    clean_max: usize,
    /// The doorbell BAR.
    db: Regs<D>,
    db_info: u32,
    queue: u16,
    stats: Arc<TxQueueStats>,
    /// Packets and bytes the current burst dropped as bad (not counted as sent).
    burst_drops: (usize, u64),
    /// Looked at when a burst finds the SQ full.
    watchdog: TxWatchdog,
    mem: WqMem,
    progress: Arc<SqProgress>,
    /// The burst this ring runs.
    path: TxPath,
}

// SAFETY: the ring owns its WQE memory, its CI slot and the packets in flight; used only by the owning thread.
unsafe impl<D: RegisterSpace> Send for TxRing<D> {}

impl<D: RegisterSpace> TxRing<D> {
    /// Allocates the ring and the CI slot; owner 1, indexes 0 (docs/hw/hinic3.md §14.2).
    pub fn new(setup: TxSetup<'_, D>) -> Result<Self> {
        let depth = setup.depth as usize;
        let bad = |reason: String| Error::InvalidConfig { port: setup.port.to_string(), reason };
        if !depth.is_power_of_two() || !(64..=16384).contains(&depth) {
            return Err(bad(format!(
                "TX ring of {depth}: hinic3 takes a power of two from 64 to 16384 (docs/hw/hinic3.md §9.3)"
            )));
        }
        let mem = WqMem::new(setup.allocator, setup.mapper, depth * 16, setup.wq_page_log2, setup.port, "an SQ ring")?;
        let ci_mem = DmaArea::new(setup.allocator, setup.mapper, CI_SLOT, setup.port, "an SQ CI slot")?;
        Ok(TxRing {
            ring: NonNull::new(mem.as_ptr().cast()).ok_or_else(|| bad("null ring".into()))?,
            mask: depth - 1,
            pi: 0,
            ci: 0,
            owner: 1,
            shadow: vec![std::ptr::null_mut(); depth].into_boxed_slice(),
            ci_slot: NonNull::new(ci_mem.as_ptr().cast()).ok_or_else(|| bad("null CI slot".into()))?,
            progress: Arc::new(SqProgress { ci_mem, pi: AtomicU32::new(0) }),
            pool_id: setup.pool.id(),
            pool: setup.pool.clone(),
            mixed: false,
            fast_off: (setup.pool.data_room() as u32 > ctrl::COMPACT_MAX_LEN) as usize,
            clean_max: if setup.pool.cache_size() == 0 { depth } else { setup.pool.cache_size().max(TX_FREE_THRESH) },
            db: Regs::new(setup.db.clone()),
            db_info: doorbell::info(DbKind::Sq, setup.queue, setup.cos),
            queue: setup.queue,
            stats: setup.stats,
            burst_drops: (0, 0),
            watchdog: TxWatchdog::new(setup.port, setup.queue, setup.hang_timeout, setup.hang),
            mem,
            path: setup.path,
        })
    }

    /// Lets go of the queue's counters (the port keeps them), for a ring its handle gave back to the port.
    pub(crate) fn detach_stats(&mut self) {
        self.stats = Arc::new(TxQueueStats::default());
    }

    /// Function-local queue index.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// The burst this ring runs.
    pub fn path(&self) -> TxPath {
        self.path
    }

    /// The watchdog found this SQ hung (its consumer index stood still with the ring full) and the hardware's
    /// index is still where it stood.
    pub fn hung(&self) -> bool {
        self.watchdog.reported_at() == Some(self.hw_ci())
    }

    /// The slow-path hang check (docs/hw/hinic3.md §10.2: the hardware's consumer index is the SQ's completion
    /// point, the WQEBBs from it to the producer index are outstanding), as the port's control plane looks.
    #[cold]
    #[inline(never)]
    fn check_hang(&mut self) {
        self.clean();
        let _ = self.watchdog.look(self.hw_ci(), self.pi, self.mask + 1);
    }

    /// What the port's control plane reads of this SQ.
    pub fn progress(&self) -> &Arc<SqProgress> {
        &self.progress
    }

    /// IOVA of the ring's first WQ page (SQ context).
    pub fn ring_iova(&self) -> u64 {
        self.mem.iova()
    }

    /// IOVA of the ring's WQ block (SQ context): the ring, or its page table.
    pub fn block_iova(&self) -> u64 {
        self.mem.block_iova()
    }

    /// IOVA of the CI slot (L2NIC 8 takes it >> 2).
    pub fn ci_iova(&self) -> u64 {
        self.progress.ci_mem.iova(0)
    }

    /// WQEBBs.
    pub fn depth(&self) -> usize {
        self.mask + 1
    }

    /// The software producer index.
    pub fn pi(&self) -> usize {
        self.pi
    }

    /// The consumer index the hardware last wrote.
    #[inline(always)]
    pub fn hw_ci(&self) -> usize {
        // SAFETY: the slot is a live, aligned u16 of our CI memory that the device writes.
        let ci = u16::from_le(unsafe { self.ci_slot.as_ptr().read_volatile() });
        ci as usize & self.mask
    }

    /// Free WQEBBs (docs/hw/hinic3.md §10.2: depth − in flight − 1).
    #[inline(always)]
    fn free(&self) -> usize {
        self.mask - ((self.pi.wrapping_sub(self.ci)) & self.mask)
    }

    /// Frees the packets whose WQE the hardware consumed: every one when some in flight is not plain, else up to
    /// `clean_max`.
    #[inline]
    fn clean(&mut self) {
        let hw = self.hw_ci();
        if hw == self.ci {
            return;
        }
        dma_rmb();
        if !self.mixed {
            {
                let hw = if (hw.wrapping_sub(self.ci) & self.mask) > self.clean_max {
                    (self.ci + self.clean_max) & self.mask
                } else {
                    hw
                };
                let pool = &self.pool;
                let (a, b) = if hw > self.ci { (self.ci..hw, 0..0) } else { (self.ci..self.mask + 1, 0..hw) };
                for r in [a, b] {
                    // SAFETY: every slot in flight holds one single-segment packet of `pool` (`mixed` is false),
                    // completed by the hardware; NonNull and the non-null raw pointer share a layout.
                    unsafe {
                        let s = std::slice::from_raw_parts(self.shadow.as_ptr().add(r.start).cast(), r.len());
                        pool.free_single_bulk(s);
                    }
                }
                self.ci = hw;
                return;
            }
        }
        let mut gather = [NonNull::<MbufHeader>::dangling(); 64];
        let mut n = 0;
        let mut i = self.ci;
        while i != hw {
            // SAFETY: i <= mask.
            let p = unsafe { std::mem::replace(self.shadow.get_unchecked_mut(i), std::ptr::null_mut()) };
            if let Some(p) = NonNull::new(p) {
                gather[n] = p;
                n += 1;
                if n == gather.len() {
                    // SAFETY: packets we owned, completed by the hardware, each listed once.
                    unsafe { mempool::free_raw_bulk(&gather) };
                    n = 0;
                }
            }
            i = (i + 1) & self.mask;
        }
        // SAFETY: as above.
        unsafe { mempool::free_raw_bulk(&gather[..n]) };
        self.ci = hw;
        self.mixed = hw != self.pi;
    }

    /// Stores WQEBB `w` at slot `i`.
    #[inline(always)]
    fn put(&mut self, i: usize, w: SqWqebb) {
        let [a, b] = w.qwords();
        // SAFETY: i <= mask: a WQEBB of our ring that the device does not own (free space).
        unsafe {
            let d = self.ring.as_ptr().add(i).cast::<u64>();
            d.write_volatile(a);
            d.add(1).write_volatile(b);
        }
    }

    /// Places one packet; `false` when it does not fit (the burst ends there). Bad packets are dropped (freed, counted)
    /// and reported as placed. `PLAIN`: the offload flags do not keep a packet from the compact WQE.
    #[inline(always)]
    fn place<const PLAIN: bool>(&mut self, p: NonNull<MbufHeader>, free: &mut usize) -> bool {
        // SAFETY: the batch owns the packet; the view is not dropped here.
        let mut m = std::mem::ManuallyDrop::new(unsafe { Mbuf::from_raw(p) });
        let len = m.data_len() as u32;
        if m.single_of(self.pool_id) == 0
            && (PLAIN || m.ol_flags() & OFFLOADS == 0)
            && len.wrapping_sub(MIN_TX_LEN) <= COMPACT_SPAN
        {
            if *free == 0 {
                return false;
            }
            let i = self.pi;
            self.put(i, SqWqebb::compact(len, self.owner, m.data_iova()));
            // SAFETY: i <= mask.
            unsafe { *self.shadow.get_unchecked_mut(i) = p.as_ptr() };
            self.pi = (i + 1) & self.mask;
            self.owner ^= (self.pi == 0) as u32;
            *free -= 1;
            return true;
        }
        self.place_extended(&mut m, p, free)
    }

    /// Drops a packet the device must not see: freed, counted as an error and not as sent (the burst takes its
    /// bytes back).
    #[cold]
    fn drop_bad(&mut self, p: NonNull<MbufHeader>) {
        self.stats.errors.add(1);
        // SAFETY: a live packet of the batch.
        self.burst_drops.1 += u64::from(std::mem::ManuallyDrop::new(unsafe { Mbuf::from_raw(p) }).pkt_len());
        self.burst_drops.0 += 1;
        // SAFETY: the packet is ours (the caller drops it from the batch); freed once.
        drop(unsafe { Mbuf::from_raw(p) });
    }

    /// Pads a frame shorter than [`MIN_TX_LEN`] with zeros (docs/hw/hinic3.md §18); false when it cannot be: an
    /// empty frame, a chain, or no room after the data (the caller drops it and counts an error, as Linux counts
    /// `skb_pad_err`).
    #[cold]
    fn pad_short(m: &mut Mbuf) -> bool {
        let len = m.pkt_len();
        if len == 0 || m.nb_segs() != 1 {
            return false;
        }
        match m.append((MIN_TX_LEN - len) as u16) {
            Some(tail) => {
                tail.fill(0);
                true
            }
            None => false,
        }
    }

    /// An extended WQE (docs/hw/hinic3.md §10.2): control/BD0, the task section with any offload, then a BD per further
    /// segment.
    #[cold]
    #[inline(never)]
    fn place_extended(&mut self, m: &mut Mbuf, p: NonNull<MbufHeader>, free: &mut usize) -> bool {
        if m.pkt_len() < MIN_TX_LEN && !Self::pad_short(m) {
            self.drop_bad(p);
            return true;
        }
        if m.nb_segs() == 1
            && m.ol_flags() & OFFLOADS == 0
            && (m.data_len() as u32).wrapping_sub(MIN_TX_LEN) <= COMPACT_SPAN
        {
            // A plain packet of another pool: compact, but its completion is freed slot by slot.
            if *free == 0 {
                return false;
            }
            self.mixed = true;
            let i = self.pi;
            self.put(i, SqWqebb::compact(m.data_len() as u32, self.owner, m.data_iova()));
            // SAFETY: i <= mask.
            unsafe { *self.shadow.get_unchecked_mut(i) = p.as_ptr() };
            self.pi = (i + 1) & self.mask;
            self.owner ^= (self.pi == 0) as u32;
            *free -= 1;
            return true;
        }
        let flags = m.ol_flags();
        let tso = flags & ol_flags::TX_TCP_SEG != 0;
        let segs = m.nb_segs() as usize;
        let off = m.tx_offload();
        let hdr_len = off.l2_len as u32 + off.l3_len as u32 + off.l4_len as u32;
        let bad = segs == 0
            || segs > if tso { MAX_SGE_TSO } else { MAX_SGE }
            || m.segments().any(|s| s.data.is_empty() || s.data.len() as u32 > ctrl::BD0_LEN.mask())
            || (tso
                && ((off.tso_segsz as u32) < queue_info::MSS_MIN || !hdr_len.is_multiple_of(2) || hdr_len / 2 > 221));
        if bad {
            self.drop_bad(p);
            return true;
        }
        let offload = flags & OFFLOADS != 0;
        let wqebbs = segs + offload as usize;
        if *free < wqebbs {
            return false;
        }
        self.mixed = true;
        // Checksums: task bits 24/25 only; queue_info's SCTP bit is never set (unverified, docs/hw/hinic3.md §17 item
        // 9, as both reference drivers leave it).
        let mut pkt_info0 = 0;
        if flags & ol_flags::TX_IP_CKSUM != 0 || tso {
            pkt_info0 |= task::INNER_L3_CSUM;
        }
        if flags & ol_flags::TX_UDP_CKSUM != 0 || tso {
            pkt_info0 |= task::INNER_L4_CSUM;
        }
        let vlan =
            if flags & ol_flags::TX_VLAN != 0 { task::VLAN_TAG.val(m.vlan_tci() as u32) | task::VLAN_VALID } else { 0 };
        let qinfo = if tso {
            queue_info::UC
                | queue_info::TSO
                | queue_info::PLDOFF.val(hdr_len / 2)
                | queue_info::MSS.val(off.tso_segsz as u32)
        } else {
            // Without TSO the MSS field still carries the default (the SP670 takes 0 as malformed).
            queue_info::UC | queue_info::MSS.val(queue_info::MSS_DEFAULT)
        };
        let start = self.pi;
        let mut segs_it = m.segments();
        let first = segs_it.next().map(|s| (s.data.len() as u32, s.iova)).unwrap_or((0, 0));
        let mut ctrl_len = ctrl::BD0_LEN.val(first.0) | ctrl::EXTENDED | ctrl::BUFDESC_NUM.val(segs as u32);
        if offload {
            ctrl_len |= ctrl::TASKSECT_LEN;
        }
        let mut i = (start + 1) & self.mask;
        if offload {
            self.put(i, SqWqebb::task(pkt_info0, vlan));
            i = (i + 1) & self.mask;
        }
        for s in segs_it {
            self.put(i, SqWqebb::bd(s.data.len() as u32, s.iova));
            i = (i + 1) & self.mask;
        }
        // The owner of the whole WQE is the one current at its start; it flips once the WQE reaches the end.
        let owner = self.owner;
        if start + wqebbs > self.mask {
            self.owner ^= 1;
        }
        // The control WQEBB last, so the device never sees a complete control word before the rest.
        dma_wmb();
        self.put(start, SqWqebb::control(ctrl_len | owner << ctrl::OWNER_SHIFT, qinfo, first.1));
        // The packet at its first WQEBB; the others hold nothing (their old entries were freed by a fast clean that
        // leaves the shadow as it is).
        for k in 0..wqebbs {
            self.shadow[(start + k) & self.mask] = if k == 0 { p.as_ptr() } else { std::ptr::null_mut() };
        }
        self.pi = (start + wqebbs) & self.mask;
        *free -= wqebbs;
        true
    }

    /// The common run: up to `n` packets from `pkts` into WQEBBs from `pi` (no wrap inside), each one plain segment of
    /// the port's pool without offloads. Four packets per test (all tested before any WQE is written: the device may
    /// prefetch WQEBBs by their owner bit), then one at a time. Returns (count, bytes). `PLAIN`: the offload flags are
    /// not read.
    #[inline(always)]
    fn fast_run<const PLAIN: bool>(&mut self, pkts: &[NonNull<MbufHeader>], n: usize) -> (usize, u64) {
        if self.fast_off != 0 {
            return (0, 0);
        }
        let owner = self.owner << ctrl::OWNER_SHIFT;
        let pi = self.pi;
        let pool_id = self.pool_id;
        // SAFETY: pi <= mask: inside the ring and the shadow; the run stays below the ring's end (caller).
        let (ring, shadow) = unsafe { (self.ring.as_ptr().add(pi).cast::<u64>(), self.shadow.as_mut_ptr().add(pi)) };
        // SAFETY: n <= pkts.len() (caller).
        let pkts = unsafe { pkts.get_unchecked(..n) };
        let (mut k, mut bytes) = if n >= 4 {
            // SAFETY: n packets of the batch, n free WQEBBs and shadow slots from pi (the caller's run).
            unsafe { tx_groups::<PLAIN>(pkts.as_ptr(), ring, shadow, n, pool_id, owner) }
        } else {
            (0, 0)
        };
        while k < n {
            // SAFETY: k < n = pkts.len().
            let p = unsafe { *pkts.get_unchecked(k) };
            // SAFETY: a live packet of the batch; the view is not dropped.
            let m = std::mem::ManuallyDrop::new(unsafe { Mbuf::from_raw(p) });
            let len = m.data_len() as u32;
            // As for a group.
            let flags = if PLAIN { 0 } else { m.ol_flags() & OFFLOADS };
            let odd = m.single_of(pool_id) | flags as usize | (len < MIN_TX_LEN) as usize;
            if odd != 0 {
                break;
            }
            // SAFETY: WQEBB pi + k < depth, free (the caller's run); shadow slot pi + k likewise.
            unsafe { put(ring, shadow, k, p, &m, len, owner) };
            bytes += len as u64;
            k += 1;
        }
        if k > 0 {
            let next = pi + k;
            self.owner ^= (next > self.mask) as u32;
            self.pi = next & self.mask;
        }
        (k, bytes)
    }

    #[inline(always)]
    fn tx_from<const PLAIN: bool>(&mut self, pkts: &[NonNull<MbufHeader>]) -> usize {
        let mut free = self.free();
        let mut n = 0;
        let mut bytes = 0u64;
        while n < pkts.len() && free > 0 {
            let run = (pkts.len() - n).min(free).min(self.mask + 1 - self.pi);
            // SAFETY: n < pkts.len().
            let (k, b) = self.fast_run::<PLAIN>(unsafe { pkts.get_unchecked(n..) }, run);
            n += k;
            free -= k;
            bytes += b;
            if k == run {
                continue;
            }
            // SAFETY: n < pkts.len() (k < run).
            let p = unsafe { *pkts.get_unchecked(n) };
            // SAFETY: a live packet of the batch; the view is not dropped.
            let len = std::mem::ManuallyDrop::new(unsafe { Mbuf::from_raw(p) }).pkt_len();
            if !self.place::<PLAIN>(p, &mut free) {
                break;
            }
            bytes += len as u64;
            n += 1;
        }
        if n > 0 {
            dma_wmb();
            doorbell::ring(&self.db, crate::regs::DB_PAGE_SQ, self.db_info, self.pi as u32);
            self.progress.pi.store(self.pi as u32, Ordering::Relaxed);
            let (bad, bad_bytes) = std::mem::take(&mut self.burst_drops);
            self.stats.packets.add((n - bad) as u64);
            self.stats.bytes.add(bytes - bad_bytes);
        }
        n
    }
}

/// Writes the compact WQE of a plain packet `p` (`m`, `len` bytes) into WQEBB `k` from `ring` and the packet into
/// shadow slot `k` from `shadow`.
///
/// # Safety
/// WQEBB `k` and shadow slot `k` must be free slots of the ring.
#[inline(always)]
unsafe fn put(
    ring: *mut u64,
    shadow: *mut *mut MbufHeader,
    k: usize,
    p: NonNull<MbufHeader>,
    m: &Mbuf,
    len: u32,
    owner: u32,
) {
    // The length field (bits 16:0) and the owner bit (31) are disjoint, so adding them is OR-ing them: one `lea`
    // instead of a copy and an OR.
    const _: () = assert!(ctrl::BD0_LEN.mask() < 1 << ctrl::OWNER_SHIFT);
    let [a, b] = SqWqebb::control(ctrl::BD0_LEN.val(len) + owner, 0, m.data_iova()).qwords();
    // SAFETY: the caller's contract.
    unsafe {
        ring.add(2 * k).write_volatile(a);
        ring.add(2 * k + 1).write_volatile(b);
        *shadow.add(k) = p.as_ptr();
    }
}

/// The four-at-a-time part of the TX fast run: groups of four plain packets of the pool (one segment, no offload, at
/// least MIN_TX_LEN bytes), all four tested before any WQE is written (the device may prefetch WQEBBs by their owner bit). Returns how
/// many it placed (a multiple of four) and their bytes. Kept out of line so that its loop has the registers to itself.
/// `PLAIN`: the offload flags are not read.
///
/// # Safety
/// `pkts` must hold `n` live packets of the caller's batch; `ring` (two qwords per WQEBB) and `shadow` must be `n` free
/// WQEBBs and shadow slots; `owner` is the owner bit in place.
#[inline(never)]
unsafe fn tx_groups<const PLAIN: bool>(
    pkts: *const NonNull<MbufHeader>,
    ring: *mut u64,
    shadow: *mut *mut MbufHeader,
    n: usize,
    pool_id: PoolId,
    owner: u32,
) -> (usize, u64) {
    let mut bytes = 0u64;
    let mut k = 0;
    let end = n & !3;
    while k != end {
        // SAFETY: k + 3 < n: live packets of the batch; the views are not dropped.
        let (p, m): ([NonNull<MbufHeader>; 4], [std::mem::ManuallyDrop<Mbuf>; 4]) = unsafe {
            let p = std::array::from_fn(|j| *pkts.add(k + j));
            (p, p.map(|p| std::mem::ManuallyDrop::new(Mbuf::from_raw(p))))
        };
        let lens = m.each_ref().map(|m| m.data_len() as u32);
        // One segment of the port's pool (so at most its data room, which fits a compact WQE: `fast_off`), no
        // offload; a length below MIN_TX_LEN (it needs padding) turns its length − MIN_TX_LEN past the compact
        // limit: one branch for the four.
        let odd = m.iter().fold(0, |o, m| {
            let flags = if PLAIN { 0 } else { m.ol_flags() & OFFLOADS };
            o | m.single_of(pool_id) | flags as usize
        });
        let len_keys = lens.iter().fold(0, |o, l| o | l.wrapping_sub(MIN_TX_LEN));
        if odd != 0 || len_keys > ctrl::COMPACT_MAX_LEN {
            break;
        }
        for j in 0..4 {
            // SAFETY: k + j < n: free slots (the caller's contract).
            unsafe { put(ring, shadow, k + j, p[j], &m[j], lens[j], owner) };
        }
        bytes += (lens[0] + lens[1] + lens[2] + lens[3]) as u64;
        k += 4;
    }
    (k, bytes)
}

impl<D: RegisterSpace> TxQueue for TxRing<D> {
    #[inline]
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        if self.free() < TX_FREE_THRESH {
            self.clean();
        }
        // SAFETY: tx_from takes ownership of exactly the first `n` packets it returns (placed or dropped).
        let n = unsafe {
            match self.path {
                TxPath::Full => batch.drain_raw(|pkts| self.tx_from::<false>(pkts)),
                TxPath::Plain => batch.drain_raw(|pkts| self.tx_from::<true>(pkts)),
            }
        };
        // The slow path: the SQ took less than asked. Is the device still consuming?
        if !batch.is_empty() {
            self.check_hang();
        }
        n
    }
}

impl<D: RegisterSpace> Drop for TxRing<D> {
    fn drop(&mut self) {
        // The port drained the queue (or gave up waiting) and disabled the vport before dropping it. Only the slots in
        // flight own packets (a fast clean leaves freed pointers behind).
        let mut i = self.ci;
        while i != self.pi {
            if let Some(h) = NonNull::new(std::mem::replace(&mut self.shadow[i], std::ptr::null_mut())) {
                // SAFETY: a packet in flight that we own, listed once.
                unsafe { mempool::free_raw_bulk(&[h]) };
            }
            i = (i + 1) & self.mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakeDb;
    use drvkit::dma::IdentityMapper;
    use mempool::PoolConfig;

    /// A batch with an offloaded packet and an empty one inside groups of four: the groups stop before them, the
    /// packets around them still go out as compact WQEs in order, the offloaded one as an extended WQE, the empty one
    /// dropped as an error.
    #[test]
    fn groups_stop_at_packets_that_are_not_plain_and_the_rest_go_out_in_order() {
        let db = Arc::new(FakeDb::default());
        let pool = Mempool::new(
            "hinic3-tx-groups",
            &PoolConfig { size: 127, cache_size: 0, ..Default::default() },
            &Allocator::no_huge(),
        )
        .unwrap();
        let mapper: Arc<dyn DmaMapper> = Arc::new(IdentityMapper);
        let mut tx = TxRing::new(TxSetup {
            db: &db,
            allocator: &Allocator::no_huge(),
            mapper: &mapper,
            queue: 1,
            depth: 64,
            wq_page_log2: 8,
            cos: 0,
            pool: &pool,
            stats: Default::default(),
            hang: Default::default(),
            hang_timeout: ringkit::DEFAULT_TX_HANG_TIMEOUT,
            port: "t",
            path: TxPath::Full,
        })
        .unwrap();
        let mut b = PacketBatch::with_capacity(14);
        let mut iovas = Vec::new();
        for i in 0..14u16 {
            let mut m = pool.alloc().unwrap();
            assert!(m.set_len(if i == 9 { 0 } else { 60 + i }));
            if i == 6 {
                m.set_ol_flags(ol_flags::TX_IP_CKSUM | ol_flags::TX_IPV4);
            }
            iovas.push(m.data_iova());
            b.push(m).unwrap();
        }
        assert_eq!(tx.tx_burst(&mut b), 14);
        assert!(b.is_empty());
        let wqe = |i: usize| {
            // SAFETY: WQEBB i < 64 of the ring (IOVA = VA).
            unsafe { (tx.ring_iova() as usize as *const SqWqebb).add(i).read_volatile() }
        };
        // Packets 0-5 in WQEBBs 0-5, packet 6 in 6 (control) and 7 (task), packets 7, 8 and 10-13 in 8 to 13.
        let slots = [0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13];
        let pkts = [0, 1, 2, 3, 4, 5, 7, 8, 10, 11, 12, 13];
        for (&w, &p) in slots.iter().zip(&pkts) {
            assert_eq!(wqe(w), SqWqebb::compact(60 + p as u32, 1, iovas[p]), "packet {p} in WQEBB {w}");
        }
        let c = wqe(6).0;
        assert_eq!(
            c[0],
            ctrl::BD0_LEN.val(66) | ctrl::EXTENDED | ctrl::BUFDESC_NUM.val(1) | ctrl::TASKSECT_LEN | 1 << 31
        );
        assert_eq!(wqe(7), SqWqebb::task(task::INNER_L3_CSUM, 0));
        assert_eq!(db.last(crate::regs::DB_PAGE_SQ).unwrap().1, 14, "one doorbell, PI 14");
        assert_eq!(tx.stats.errors.get(), 1, "the empty packet");
        // SAFETY: the ring's CI slot.
        unsafe { (tx.ci_iova() as usize as *mut u16).write_volatile(14u16.to_le()) };
        drop(tx);
        assert!(pool.is_full(), "every packet freed once");
    }
}
