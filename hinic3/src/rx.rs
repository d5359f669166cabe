//! The RX queue (docs/hw/hinic3.md §10.1, §10.3 to §10.6): normal 16-byte RQ WQEs whose CQE address is written once at
//! creation, a separate array of 32-byte CQEs, bursts that take completed CQEs (done bit, length, VLAN, RSS hash,
//! packet type, checksum errors), frames longer than a buffer as chains of consecutive entries, a bulk refill, and one
//! RQ doorbell per refill. The driver clears each consumed CQE's status (the device does not). No allocation, lock or
//! dynamic call per packet.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

use drvkit::bar::RegisterSpace;
use drvkit::barrier::dma_wmb;
use drvkit::dma::{DmaMapper, DmaMapping};
use hugepage::Allocator;
use mempool::{ol_flags, Mbuf, MbufHeader, Mempool, PacketBatch, RxRearm};
use pktio::stats::{Counter, RxQueueStats};
use pktio::{Error, Result, RxQueue};

use crate::desc::{cqe, hi_lo, rx_flags, RqWqe, RxCqe, CQE_SIZE, RQ_WQE_SHIFT};
use crate::doorbell::{self, DbKind};
use drvkit::dma::DmaArea;

/// The mbuf flags of a checksum-error completion.
const CSUM_BAD: u64 = ol_flags::RX_IP_CKSUM_BAD | ol_flags::RX_L4_CKSUM_BAD;

/// Refill once this many entries are consumed.
pub const RX_FREE_THRESH: usize = 32;

/// The RX buffer sizes the root context can name, by index (docs/hw/hinic3.md §10.4).
pub const RX_BUF_SIZES: [u32; 16] =
    [32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192, 16384];

/// The largest table size not above `room` and its index (docs/hw/hinic3.md §10.4: only table sizes, since COMM bit 9
/// is not used).
pub fn rx_buf_size_index(room: u32) -> Option<(u16, u32)> {
    RX_BUF_SIZES.iter().enumerate().rev().find(|(_, &s)| s <= room).map(|(i, &s)| (i as u16, s))
}

/// The memo of the last (status, offload word) pair of a plain frame and the mbuf fields they give. The status is
/// compared whole: a memo's status is DONE plus checksum bits, so a match also says "done, not flushed, no LRO". A
/// checksum-error completion never becomes the memo (it is counted on the scalar path).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Memo {
    pub(crate) status: u32,
    pub(crate) offload: u32,
    pub(crate) flags: u64,
    pub(crate) ptype: u32,
}

impl Memo {
    pub(crate) fn of(status: u32, offload: u32) -> Memo {
        let (flags, ptype) = rx_flags(status, offload);
        Memo { status: cqe::DONE | (status & cqe::CSUM_ERR.mask()), offload, flags, ptype }
    }

    /// A memo no CQE matches (status 0 is "not done").
    const NONE: Memo = Memo { status: 0, offload: 0, flags: 0, ptype: 0 };
}

/// What an RX queue needs from its port.
pub struct RxSetup<'a, D> {
    /// The doorbell BAR.
    pub db: &'a Arc<D>,
    /// Ring memory.
    pub allocator: &'a Allocator,
    /// DMA map of the device.
    pub mapper: &'a Arc<dyn DmaMapper>,
    /// Buffers.
    pub pool: &'a Mempool,
    /// Function-local queue index.
    pub queue: u16,
    /// Entries (a power of two).
    pub depth: u16,
    /// Bytes the device writes per buffer (a size of the docs/hw/hinic3.md §10.4 table).
    pub buf_len: u32,
    /// Port number stamped into packets.
    pub port_id: u16,
    /// Counters.
    pub stats: Arc<RxQueueStats>,
    /// Completions with a bad IP or L4 checksum (a per-queue xstat).
    pub csum_errors: Arc<Counter>,
    /// Port name for errors.
    pub port: &'a str,
}

/// One RX queue. Owned by one thread.
pub struct RxRing<D: RegisterSpace> {
    wqes: NonNull<RqWqe>,
    cqes: NonNull<RxCqe>,
    mask: usize,
    /// Next entry to look at (software CI).
    next: usize,
    /// Next entry to post (next_to_update).
    pi: usize,
    /// Consumed entries waiting for a refill: from `pi` up to `next`.
    nb_hold: usize,
    shadow: Box<[NonNull<MbufHeader>]>,
    buf_len: u32,
    headroom: u64,
    rearm: RxRearm,
    memo: Memo,
    /// The CPU has AVX: the four-at-a-time groups use their AVX build (x86-64 only; false elsewhere).
    avx: bool,
    pool: Mempool,
    db: Arc<D>,
    db_info: u32,
    queue: u16,
    stats: Arc<RxQueueStats>,
    csum_errors: Arc<Counter>,
    wq_mem: DmaArea,
    cq_mem: DmaArea,
    _pool_map: DmaMapping,
}

// SAFETY: the ring owns its WQE and CQE memory and its buffers; the raw pointers are into that memory and used only by
// the owning thread. Moving the ring moves all of it.
unsafe impl<D: RegisterSpace> Send for RxRing<D> {}

impl<D: RegisterSpace> RxRing<D> {
    /// Allocates the WQE ring and CQE array, gives every WQE its CQE address, posts depth − 1 buffers
    /// (docs/hw/hinic3.md §10.6 step 5). The doorbell is rung by [`RxRing::ring_doorbell`] once the context is written.
    pub fn new(setup: RxSetup<'_, D>) -> Result<Self> {
        let depth = setup.depth as usize;
        let bad = |reason: String| Error::InvalidConfig { port: setup.port.to_string(), reason };
        if !depth.is_power_of_two() || !(64..=16384).contains(&depth) {
            return Err(bad(format!(
                "RX ring of {depth}: hinic3 takes a power of two from 64 to 16384 (docs/hw/hinic3.md §9.3)"
            )));
        }
        if setup.pool.data_room() as u32 > 0 && (setup.pool.data_room() as u32) < setup.buf_len {
            return Err(bad(format!(
                "mempool {} data room {} is smaller than the RX buffer size {}",
                setup.pool.name(),
                setup.pool.data_room(),
                setup.buf_len
            )));
        }
        let pool_map = setup.mapper.map(setup.pool.memory())?;
        let wq_mem = DmaArea::new(setup.allocator, setup.mapper, depth * 16, setup.port, "an RQ ring")?;
        let cq_mem = DmaArea::new(setup.allocator, setup.mapper, depth * CQE_SIZE, setup.port, "a CQE array")?;
        let wqes = NonNull::new(wq_mem.as_ptr().cast::<RqWqe>()).ok_or_else(|| bad("null ring".into()))?;
        let cqes = NonNull::new(cq_mem.as_ptr().cast::<RxCqe>()).ok_or_else(|| bad("null CQEs".into()))?;
        let mut shadow: Box<[NonNull<MbufHeader>]> = vec![NonNull::dangling(); depth].into_boxed_slice();
        if !setup.pool.alloc_raw_bulk(&mut shadow[..depth - 1]) {
            return Err(bad(format!(
                "mempool {} ran out filling RX queue {} ({} buffers, {} free)",
                setup.pool.name(),
                setup.queue,
                depth - 1,
                setup.pool.available()
            )));
        }
        let headroom = setup.pool.headroom() as u64;
        let rearm = setup.pool.rx_rearm(setup.port_id);
        for i in 0..depth {
            let buf = if i < depth - 1 {
                // SAFETY: a fresh buffer of this pool that slot i owns.
                unsafe { rearm.apply(shadow[i]) };
                hi_lo(buffer_iova(shadow[i], headroom))
            } else {
                0
            };
            let w = RqWqe { buf, cqe: hi_lo(cq_mem.iova(i * CQE_SIZE)) };
            // SAFETY: i < depth: inside the ring memory, which the device does not own yet.
            unsafe { wqes.as_ptr().add(i).write_volatile(w) };
        }
        Ok(RxRing {
            wqes,
            cqes,
            mask: depth - 1,
            next: 0,
            pi: depth - 1,
            nb_hold: 0,
            shadow,
            buf_len: setup.buf_len,
            headroom,
            rearm,
            memo: Memo::NONE,
            avx: ringkit::cpu_has_avx(),
            pool: setup.pool.clone(),
            db: setup.db.clone(),
            db_info: doorbell::info(DbKind::Rq, setup.queue, 0),
            queue: setup.queue,
            stats: setup.stats,
            csum_errors: setup.csum_errors,
            wq_mem,
            cq_mem,
            _pool_map: pool_map,
        })
    }

    /// Lets go of the queue's counters (the port keeps them), for a ring its handle gave back to the port.
    pub(crate) fn detach_stats(&mut self) {
        self.stats = Arc::new(RxQueueStats::default());
    }

    /// Function-local queue index.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// IOVA of the WQE ring (for the RQ context and for tests playing the device).
    pub fn ring_iova(&self) -> u64 {
        self.wq_mem.iova(0)
    }

    /// IOVA of the CQE array.
    pub fn cqe_iova(&self) -> u64 {
        self.cq_mem.iova(0)
    }

    /// Entries.
    pub fn depth(&self) -> usize {
        self.mask + 1
    }

    /// Bytes per buffer.
    pub fn buf_len(&self) -> u32 {
        self.buf_len
    }

    /// The RQ doorbell with the current PI (in 8-byte units, docs/hw/hinic3.md §10.1).
    #[inline(always)]
    pub fn ring_doorbell(&self) {
        let units = (self.pi << RQ_WQE_SHIFT) & ((self.depth() << RQ_WQE_SHIFT) - 1);
        doorbell::ring(&*self.db, crate::regs::DB_PAGE_RQ, self.db_info, units as u32);
    }

    /// The status dword of CQE `i`, read with acquire order: the rest of the CQE is read only after it.
    #[inline(always)]
    fn status(&self, i: usize) -> u32 {
        // SAFETY: i <= mask: an aligned dword of the CQE memory this ring owns; the device writes it (atomic view).
        unsafe { AtomicU32::from_ptr(self.cqes.as_ptr().add(i).cast::<u32>()).load(Ordering::Acquire) }
    }

    /// Dword `k` of CQE `i` (after its done bit was seen).
    #[inline(always)]
    fn cqe_word(&self, i: usize, k: usize) -> u32 {
        // SAFETY: i <= mask, k < 8: inside the CQE memory.
        unsafe { self.cqes.as_ptr().add(i).cast::<u32>().add(k).read_volatile() }
    }

    /// Clears the status dword of CQE `i` (docs/hw/hinic3.md §10.6 step 3).
    #[inline(always)]
    fn clear(&self, i: usize) {
        // SAFETY: as in `cqe_word`.
        unsafe { self.cqes.as_ptr().add(i).cast::<u32>().write_volatile(0) }
    }

    /// The common run: up to `n` entries from `i` (no wrap inside), each a completed single-buffer frame whose status
    /// and offload word repeat the memo's. Moves their buffers to `out`; returns (count, bytes). Four at a time where
    /// the CPU has SSE2 (`rx_simd`), then one at a time.
    ///
    /// # Safety `i + n <= depth`, every entry posted (its slot owns a buffer), `out` valid for `n` writes.
    #[inline(always)]
    unsafe fn fast_run(&mut self, i: usize, n: usize, out: *mut NonNull<MbufHeader>) -> (usize, u64) {
        let (memo, buf_len) = (self.memo, self.buf_len);
        // Locals, so that the loop keeps the bases in registers across its stores.
        let (cqes, shadow) = (self.cqes.as_ptr().cast::<u32>(), self.shadow.as_ptr());
        let (mut k, mut bytes) = if n >= 4 {
            // SAFETY: the caller's contract: n CQEs, slots and outputs from i; buf_len is a size of the buffer table.
            unsafe { crate::rx_simd::rx_groups(cqes.add(i * 8), shadow.add(i), n, out, buf_len, &memo, self.avx) }
        } else {
            (0, 0)
        };
        while k < n {
            // SAFETY: i + k < depth: CQE i + k of the array this ring owns (8 dwords each); the device writes it.
            let c = unsafe { cqes.add((i + k) * 8) };
            // SAFETY: as above; the status first with acquire order, the other dwords after it.
            let status = unsafe { AtomicU32::from_ptr(c).load(Ordering::Acquire) };
            // SAFETY: as above.
            let (w1, w2) = unsafe { (c.add(1).read_volatile(), c.add(2).read_volatile()) };
            let len = cqe::LEN.get(w1);
            // The memo's status and offload word (done, not flushed, no LRO, the same flags; a VLAN-stripped frame's
            // memo is never kept), one buffer, not empty: one branch.
            let odd =
                (status != memo.status) as u32 | (w2 != memo.offload) as u32 | (len.wrapping_sub(1) >= buf_len) as u32;
            if odd != 0 {
                break;
            }
            // SAFETY: as above.
            let rss = unsafe { c.add(3).read_volatile() };
            // SAFETY: slot i + k is posted: its buffer moves into `m` and on to `out[k]`.
            unsafe {
                let mut m = Mbuf::from_raw(*shadow.add(i + k));
                // A single segment posted with our rearm word; len <= buf_len <= the data room (checked).
                m.set_rx_unchecked(len as u16, memo.flags, memo.ptype, rss);
                *out.add(k) = m.into_raw();
                // The driver clears the done bit (docs/hw/hinic3.md §10.6 step 3).
                c.write_volatile(0);
            }
            bytes += len as u64;
            k += 1;
        }
        (k, bytes)
    }

    /// Receives into `spare`; returns how many packets it wrote there.
    #[inline(always)]
    fn rx_into(&mut self, spare: &mut [NonNull<MbufHeader>]) -> usize {
        let posted = self.mask - self.nb_hold;
        let want = spare.len().min(posted);
        let (mut got, mut used, mut bytes) = (0usize, 0usize, 0u64);
        while got < want {
            let i = (self.next + used) & self.mask;
            let run = (want - got).min(self.mask + 1 - i).min(posted - used);
            // SAFETY: i + run <= depth; the entries from `next` up to `posted` are posted; got + run <= spare.len().
            let (k, b) = unsafe { self.fast_run(i, run, spare.as_mut_ptr().add(got)) };
            got += k;
            used += k;
            bytes += b;
            if got == want || k == run {
                continue;
            }
            // The entry at i + k, the slow way: not done yet, a new memo, VLAN, a chain, a flushed buffer.
            let i = (i + k) & self.mask;
            let status = self.status(i);
            if status & cqe::DONE == 0 {
                break;
            }
            let w1 = self.cqe_word(i, 1);
            let len = cqe::LEN.get(w1);
            if status & (cqe::FLUSH | cqe::NUM_LRO.mask()) != 0 || len > self.buf_len || len == 0 {
                match self.take_slow(i, status, len, posted - used) {
                    Some((m, n)) => {
                        used += n;
                        if let Some(m) = m {
                            bytes += m.pkt_len() as u64;
                            // SAFETY: got < want <= spare.len().
                            unsafe { *spare.get_unchecked_mut(got) = m.into_raw() };
                            got += 1;
                        }
                        continue;
                    }
                    None => break,
                }
            }
            let offload = self.cqe_word(i, 2);
            self.memo = Memo::of(status, offload);
            let rss = self.cqe_word(i, 3);
            // SAFETY: slot i is posted: its buffer moves into `m`.
            let mut m = unsafe { Mbuf::from_raw(*self.shadow.get_unchecked(i)) };
            // SAFETY: a single segment posted with our rearm word; len <= buf_len <= the data room (checked).
            unsafe { m.set_rx_unchecked(len as u16, self.memo.flags, self.memo.ptype, rss) };
            let flags = self.memo.flags;
            if flags & ol_flags::RX_VLAN_STRIPPED != 0 {
                m.set_vlan_tci(cqe::VLAN.get(w1) as u16);
                // The tag differs per packet: VLAN frames always come this way.
                self.memo = Memo::NONE;
            }
            if flags & CSUM_BAD != 0 {
                // Counted here; with no memo, every such frame comes this way and none passes the fast path uncounted.
                self.csum_errors.add(1);
                self.memo = Memo::NONE;
            }
            self.clear(i);
            bytes += len as u64;
            // SAFETY: got < want <= spare.len().
            unsafe { *spare.get_unchecked_mut(got) = m.into_raw() };
            got += 1;
            used += 1;
        }
        if used != 0 {
            self.next = (self.next + used) & self.mask;
            self.nb_hold += used;
            self.stats.packets.add(got as u64);
            self.stats.bytes.add(bytes);
        }
        got
    }

    /// A flushed buffer, an LRO CQE, or a frame over several buffers at entry `i` with `avail` posted entries from it.
    /// Returns the packet (or none: dropped) and the entries it used, or `None` when the frame's later buffers are not
    /// all posted yet.
    #[cold]
    #[inline(never)]
    fn take_slow(&mut self, i: usize, status: u32, len: u32, avail: usize) -> Option<(Option<Mbuf>, usize)> {
        let n = if len == 0 { 1 } else { (len as usize).div_ceil(self.buf_len as usize) };
        if n > avail {
            return None;
        }
        let mut head: Option<Mbuf> = None;
        let mut left = len;
        for k in 0..n {
            let j = (i + k) & self.mask;
            // SAFETY: a posted slot: its buffer moves into `m`.
            let mut m = unsafe { Mbuf::from_raw(*self.shadow.get_unchecked(j)) };
            let seg = left.min(self.buf_len);
            left -= seg;
            // SAFETY: seg <= buf_len <= the data room; a single segment with our rearm word.
            unsafe { m.set_rx_unchecked(seg as u16, 0, 0, 0) };
            self.clear(j);
            match head.as_mut() {
                Some(h) => h.chain(m),
                None => head = Some(m),
            }
        }
        let mut m = head?;
        if status & cqe::FLUSH != 0 || len == 0 || status & cqe::NUM_LRO.mask() != 0 {
            // A flushed buffer carries no packet; LRO is never enabled by this driver.
            self.stats.errors.add(1);
            return Some((None, n));
        }
        let offload = self.cqe_word(i, 2);
        let (flags, ptype) = rx_flags(status, offload);
        self.csum_errors.add((flags & CSUM_BAD != 0) as u64);
        m.set_ol_flags(flags);
        m.set_packet_type(ptype);
        m.set_rss_hash(self.cqe_word(i, 3));
        if flags & ol_flags::RX_VLAN_STRIPPED != 0 {
            m.set_vlan_tci(cqe::VLAN.get(self.cqe_word(i, 1)) as u16);
        }
        Some((Some(m), n))
    }

    /// Posts fresh buffers into every held entry it can (split at the ring's end) and rings the doorbell once.
    #[inline]
    fn refill(&mut self) {
        let depth = self.mask + 1;
        let mut left = self.nb_hold;
        let mut done = 0;
        while left > 0 {
            let start = self.pi;
            let run = left.min(depth - start);
            // SAFETY: start + run <= depth; consumed slots own nothing (their buffers were handed on).
            let slots = unsafe { self.shadow.get_unchecked_mut(start..start + run) };
            if !self.pool.alloc_raw_bulk(slots) {
                self.stats.nombuf.add(left as u64);
                break;
            }
            let (wqes, shadow, rearm, headroom) = (self.wqes.as_ptr(), self.shadow.as_ptr(), self.rearm, self.headroom);
            // Four per loop round where they come in fours (the refill's runs usually do), then one at a time.
            let post = |k: usize| {
                // SAFETY: k < start + run <= depth: a fresh buffer its slot owns and a WQE the device does not own.
                unsafe {
                    let h = *shadow.add(k);
                    rearm.apply(h);
                    std::ptr::addr_of_mut!((*wqes.add(k)).buf).write_volatile(hi_lo(buffer_iova(h, headroom)));
                }
            };
            let mut k = start;
            while k + 4 <= start + run {
                post(k);
                post(k + 1);
                post(k + 2);
                post(k + 3);
                k += 4;
            }
            while k < start + run {
                post(k);
                k += 1;
            }
            self.pi = (start + run) & self.mask;
            left -= run;
            done += run;
        }
        if done > 0 {
            self.nb_hold -= done;
            dma_wmb();
            self.ring_doorbell();
        }
    }
}

impl<D: RegisterSpace> RxRing<D> {
    /// After the RQ flush (docs/hw/hinic3.md §10.6): takes back every posted buffer as its CQE returns (flush bit or
    /// done; a done frame over several buffers takes its following entries with it), clearing the CQE and freeing the
    /// buffer, until all are back or `deadline` passes. Returns how many came back; the rest are freed by the drop.
    pub fn reclaim_flushed(&mut self, deadline: Instant) -> usize {
        let posted = self.mask - self.nb_hold;
        let mut k = 0;
        while k < posted {
            let i = (self.next + k) & self.mask;
            let status = self.status(i);
            if status & (cqe::DONE | cqe::FLUSH) == 0 {
                if Instant::now() >= deadline {
                    break;
                }
                std::thread::yield_now();
                continue;
            }
            let len = if status & cqe::FLUSH != 0 { 0 } else { cqe::LEN.get(self.cqe_word(i, 1)) };
            let n = (len as usize).div_ceil(self.buf_len as usize).clamp(1, posted - k);
            for j in 0..n {
                let e = (i + j) & self.mask;
                self.clear(e);
                // SAFETY: a posted slot owns its buffer; it is freed once, as `next` moves past it below.
                unsafe { mempool::free_raw_bulk(std::slice::from_ref(&self.shadow[e])) };
            }
            k += n;
        }
        self.next = (self.next + k) & self.mask;
        self.nb_hold += k;
        k
    }
}

impl<D: RegisterSpace> RxQueue for RxRing<D> {
    #[inline]
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        // SAFETY: rx_into writes only uniquely owned packets (taken out of the shadow ring) into the first `got` spare
        // slots and returns `got`.
        let got = unsafe { batch.fill_raw(|spare| self.rx_into(spare)) };
        if self.nb_hold >= RX_FREE_THRESH {
            self.refill();
        }
        got
    }
}

/// IOVA of the data start of a fresh RX buffer.
#[inline(always)]
fn buffer_iova(h: NonNull<MbufHeader>, headroom: u64) -> u64 {
    // SAFETY: `h` is a live buffer the caller owns; the borrowed view is never dropped.
    let m = ManuallyDrop::new(unsafe { Mbuf::from_raw(h) });
    m.buf_iova() + headroom
}

impl<D: RegisterSpace> Drop for RxRing<D> {
    fn drop(&mut self) {
        // The port stopped the queue (vport off, RQ flushed, resources cleared) before dropping it.
        let posted = self.mask - self.nb_hold;
        for k in 0..posted {
            let i = (self.next + k) & self.mask;
            self.clear(i);
            // SAFETY: posted slots own their buffers, each once; the device no longer writes into them.
            unsafe { mempool::free_raw_bulk(std::slice::from_ref(&self.shadow[i])) };
        }
    }
}
