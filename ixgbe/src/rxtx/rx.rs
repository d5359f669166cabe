//! The RX ring: bursts that hand completed frames to a batch (the common burst through [`super::rx_simd`],
//! anything else out of line), chains across bursts; the buffers posted from the mempool and their bulk refill
//! are the shared core's ([`ringkit::RxBuffers`]).

use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use drvkit::bar::RegisterSpace;
use drvkit::barrier::{dma_rmb, dma_wmb};
use drvkit::dma::{DmaMapper, DmaMapping};
use hugepage::Allocator;
use mempool::{Mbuf, MbufHeader, Mempool, PacketBatch};
use pktio::stats::RxQueueStats;
use pktio::{Error, Result, RxQueue};
use ringkit::{RxBuffers, RxDescriptor};

use super::ring::{disable_queue, split_iova, RingConfig, RingMemory};
use super::rx_flags::{rx_flags, RxMemo};
use super::rx_simd::rx_fast_run;
#[cfg(target_arch = "x86_64")]
use super::rx_simd::rx_fast_run_avx;
use super::Family;
use crate::desc::{rx, RxDesc, RxWriteback};
use crate::regs::{PollTimeout, Regs};

/// The advanced descriptor's read format in the shared buffer core: packet address, header address 0.
impl RxDescriptor for RxDesc {
    #[inline(always)]
    fn read(iova: u64) -> Self {
        RxDesc::read(iova)
    }
}

/// One RX queue: its descriptor ring, the buffers posted to it, and its counters. Owned by one thread.
pub struct RxRing<R: RegisterSpace, F: Family> {
    /// The descriptor ring's buffers: shadow ring, indices, refill (shared with the other drivers).
    bufs: RxBuffers<RxDesc>,
    /// Longest frame a fresh buffer of the pool holds (its data room).
    max_len: u16,
    memo: RxMemo,
    /// The 82599's UDP zero-checksum errata: see [`rx_flags`].
    udp_csum_zero_err: bool,
    /// The CPU has AVX: the fast run uses `rx_fast_run_avx` (x86-64 only; always false elsewhere).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    avx: bool,
    /// Head of a frame whose later descriptors have not completed yet.
    pending: Option<Mbuf>,
    /// A segment of the pending frame was bad: drop the frame at its end.
    pending_bad: bool,
    regs: Regs<R>,
    rdt: usize,
    queue: u16,
    stats: Arc<RxQueueStats>,
    config: RingConfig,
    started: bool,
    // Dropped after `Drop::drop` disabled the queue: the ring's mapping, then the pool's.
    _mem: RingMemory,
    _pool_map: DmaMapping,
    _family: PhantomData<F>,
}

// SAFETY: the ring owns its descriptor memory (RingMemory) and its buffers; the raw pointer is into that memory and
// is only used by the owning thread. Moving the ring to another thread moves all of it.
unsafe impl<R: RegisterSpace, F: Family> Send for RxRing<R, F> {}

/// What an RX ring needs from its device.
pub struct RxSetup<'a, R> {
    /// Register access.
    pub regs: &'a Regs<R>,
    /// Ring memory.
    pub allocator: &'a Allocator,
    /// DMA map of the device.
    pub mapper: &'a Arc<dyn DmaMapper>,
    /// Buffers.
    pub pool: &'a Mempool,
    /// Queue index.
    pub queue: u16,
    /// Port number stamped into packets.
    pub port_id: u16,
    /// Counters (shared with the device).
    pub stats: Arc<RxQueueStats>,
    /// Port name for errors.
    pub port: &'a str,
    /// The device has the 82599's UDP zero-checksum errata (docs/hw/ixgbe.md §7.2, §15): an L4 error on a UDP frame whose
    /// checksum field is 0 (UDPV clear) is reported as unknown, not bad.
    pub udp_csum_zero_err: bool,
}

impl<R: RegisterSpace, F: Family> RxRing<R, F> {
    /// Allocates and maps the ring, fills it with buffers and programs the queue registers (queue still
    /// disabled; [`RxRing::enable`] starts it). docs/hw/ixgbe.md §6.2 steps 1-8.
    pub fn new(setup: RxSetup<'_, R>, config: RingConfig) -> Result<Self> {
        let size = config.size as usize;
        let bad = |reason: String| Error::InvalidConfig { port: setup.port.to_string(), reason };
        if size < 8 || !size.is_multiple_of(8) {
            return Err(bad(format!("RX ring of {size} descriptors: must be a multiple of 8, at least 8")));
        }
        let buf_kb = (setup.pool.data_room() as u32 >> 10).min(F::MAX_RX_BUF_KB);
        if buf_kb == 0 {
            return Err(bad(format!(
                "mempool {} has a {}-byte data room; RX buffers must hold at least 1 KiB",
                setup.pool.name(),
                setup.pool.data_room()
            )));
        }
        let pool_map = setup.mapper.map(setup.pool.memory())?;
        let mem = RingMemory::new(setup.allocator, setup.mapper, size * size_of::<RxDesc>(), setup.port)?;
        let ring = NonNull::new(mem.as_ptr().cast::<RxDesc>()).ok_or_else(|| bad("null ring".into()))?;
        let q = setup.queue;
        let regs = setup.regs.clone();

        // 1. disable the queue first.
        disable_queue(&regs, F::rxdctl(q), F::QUEUE_ENABLE, 0, config.enable_timeout);

        // From here every slot owns its buffer (next = 0, tail = size - 1, nothing held): the core's Drop frees them.
        let free_thresh = (config.free_thresh as usize).clamp(1, size - 1);
        // SAFETY: `ring` is `size` descriptors of `mem`, which the ring keeps until after `bufs` drops; the queue
        // is disabled.
        let bufs = unsafe { RxBuffers::new(ring, size, free_thresh, setup.pool, setup.port_id) }
            .map_err(|e| bad(format!("RX queue {q}: {e}")))?;
        let (lo, hi) = split_iova(mem.iova());
        regs.write(F::rdbal(q), lo);
        regs.write(F::rdbah(q), hi);
        regs.write(F::rdlen(q), (size * size_of::<RxDesc>()) as u32);
        regs.write(F::rdh(q), 0);
        regs.write(F::rdt(q), 0);
        regs.write(F::srrctl(q), F::srrctl_value(buf_kb, config.drop_en));
        F::rx_queue_extra(&regs, q);
        Ok(RxRing {
            bufs,
            max_len: setup.pool.data_room(),
            memo: RxMemo::new::<F>(),
            udp_csum_zero_err: setup.udp_csum_zero_err,
            avx: ringkit::cpu_has_avx(),
            pending: None,
            pending_bad: false,
            rdt: F::rdt(q).0,
            regs,
            queue: q,
            stats: setup.stats,
            config,
            started: false,
            _mem: mem,
            _pool_map: pool_map,
            _family: PhantomData,
        })
    }

    /// Enables the queue and hands N-1 buffers to the device (docs/hw/ixgbe.md §6.2 steps 9-10). A queue that does not
    /// report enabled within the ring's `enable_timeout` is the poll's timeout (RXDCTL), for the caller to report.
    pub fn enable(&mut self) -> std::result::Result<(), PollTimeout> {
        let q = self.queue;
        self.regs.set_bits(F::rxdctl(q), F::QUEUE_ENABLE);
        self.regs.poll(F::rxdctl(q), F::QUEUE_ENABLE, F::QUEUE_ENABLE, self.config.enable_timeout)?;
        self.started = true;
        self.regs.write(F::rdh(q), 0);
        dma_wmb();
        self.regs.write(F::rdt(q), self.bufs.tail() as u32);
        Ok(())
    }

    /// Queue index.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// Buffers currently owned by the ring (posted or held in a partial chain).
    pub fn buffers_held(&self) -> usize {
        self.bufs.size() - self.bufs.held() + self.pending.as_ref().map_or(0, |m| m.nb_segs() as usize)
    }

    /// The general completion path: chains, error write-backs. Returns the finished packet, if any.
    #[cold]
    #[inline(never)]
    fn complete_slow(&mut self, mut m: Mbuf, wb: RxWriteback, errors: &mut u64) -> Option<Mbuf> {
        let st = wb.status_error;
        let seg_ok = wb.length <= self.max_len;
        // SAFETY: a single segment posted with our rearm word (data start at the headroom), so a length up to
        // max_len (the data room) fits; a longer one is recorded as 0 and the frame dropped below.
        unsafe { m.set_rx_unchecked(if seg_ok { wb.length } else { 0 }, 0, 0, 0) };
        let m = match self.pending.take() {
            Some(mut head) => {
                head.chain(m);
                head
            }
            None => m,
        };
        if st & rx::STAT_EOP == 0 {
            // More descriptors follow (a frame larger than one buffer); a bad segment poisons the chain.
            if !seg_ok {
                self.pending_bad = true;
            }
            self.pending = Some(m);
            return None;
        }
        let bad = !seg_ok || std::mem::take(&mut self.pending_bad) || st & F::RX_ERR_RXE != 0;
        if bad {
            // A MAC error (or a length the buffer cannot hold): drop the whole frame.
            *errors += 1;
            return None;
        }
        let mut m = m;
        let (flags, pt) = rx_flags::<F>(wb.pkt_info, st, self.udp_csum_zero_err);
        m.set_ol_flags(flags);
        m.set_packet_type(pt);
        m.set_rss_hash(wb.rss_hash);
        Some(m)
    }
}

impl<R: RegisterSpace, F: Family> RxRing<R, F> {
    /// Receives into `spare` (uninitialised slots of a batch) and returns how many packets it wrote there. The
    /// consumed descriptors go to `nb_hold` (the refill's count) and the packet, byte and error counters move here,
    /// each path doing its own share once, so that no tuple of results is merged between the two.
    ///
    /// The scan is bounded by the descriptors the device owns (those before RDT). The common burst (no chain
    /// pending, the descriptors it may take do not wrap, and all of them are common frames: one descriptor, DD and
    /// EOP, no MAC error, fits the buffer) is one call of [`rx_fast_run`]; anything else continues out of line in
    /// [`RxRing::rx_into_general`], which walks at most two contiguous runs around the ring's end and takes chains
    /// and error write-backs through [`RxRing::complete_slow`] one descriptor at a time.
    #[inline(always)]
    fn rx_into(&mut self, spare: &mut [NonNull<MbufHeader>]) -> usize {
        let size = self.bufs.size();
        let i = self.bufs.next();
        // Descriptors the device may have completed: from `next` up to (not including) RDT.
        let left = spare.len().min(size - 1 - self.bufs.held());
        if left == 0 || left > size - i || self.pending.is_some() {
            return self.rx_into_general(spare, i, left, 0, 0);
        }
        // SAFETY: i + left <= size: inside the ring and the shadow array, and every slot there is between `next`
        // and RDT, so it owns its buffer; left <= spare.len().
        let (n, b) = unsafe { self.fast_run(i, left, spare.as_mut_ptr()) };
        if n < left {
            return self.rx_into_general(spare, i + n, left - n, n, b);
        }
        // n = left > 0 descriptors consumed, all of them packets, no errors.
        // SAFETY: fast_run took the buffers of those n slots from `next` on.
        unsafe { self.bufs.consume(if i + n == size { 0 } else { i + n }, n) };
        self.stats.packets.add(n as u64);
        self.stats.bytes.add(b);
        n
    }

    /// [`rx_fast_run`] (or its AVX build) over the `n` descriptors from slot `i`, into `out`.
    ///
    /// # Safety
    /// As [`rx_fast_run`]: i + n <= size, the slots own their buffers, `out` has room for `n`.
    #[inline(always)]
    unsafe fn fast_run(&mut self, i: usize, n: usize, out: *mut NonNull<MbufHeader>) -> (usize, u64) {
        // SAFETY: the caller's contract.
        let (d, sh) = unsafe { (self.bufs.ring().as_ptr().add(i).cast_const(), self.bufs.shadow().add(i)) };
        #[cfg(target_arch = "x86_64")]
        if self.avx {
            // SAFETY: the caller's contract; the CPU has AVX (checked at creation).
            return unsafe { rx_fast_run_avx::<F>(d, sh, n, out, self.max_len, &mut self.memo) };
        }
        // SAFETY: the caller's contract.
        unsafe { rx_fast_run::<F>(d, sh, n, out, self.max_len, &mut self.memo) }
    }

    /// The rest of [`RxRing::rx_into`] from slot `i` with `left` descriptors to look at, after `done` were
    /// consumed (and written to `spare`) with `bytes`: runs around the ring's end, chains, errors. Returns the
    /// packets written to `spare` in all; moves `nb_hold` and the counters for all of them.
    #[inline(never)]
    fn rx_into_general(
        &mut self,
        spare: &mut [NonNull<MbufHeader>],
        i: usize,
        left: usize,
        done: usize,
        bytes: u64,
    ) -> usize {
        let size = self.bufs.size();
        let ring = self.bufs.ring().as_ptr();
        let (mut i, mut left) = (if i == size { 0 } else { i }, left);
        let (mut consumed, mut got, mut bytes, mut errors) = (done, done, bytes, 0u64);
        'runs: while left > 0 {
            let end = i + left.min(size - i);
            let start = i;
            while i < end {
                if self.pending.is_none() {
                    // SAFETY: i..end lies inside the ring and the shadow array, and every slot there is between
                    // `next` and RDT, so it owns its buffer; got + (end - i) <= spare.len() because
                    // got <= consumed + (i - start) and end - start <= left.
                    let (n, b) = unsafe { self.fast_run(i, end - i, spare.as_mut_ptr().add(got)) };
                    i += n;
                    got += n;
                    bytes += b;
                    if i == end {
                        break;
                    }
                }
                // SAFETY: i < size: a descriptor of our ring.
                let d = unsafe { ring.add(i) };
                // SAFETY: an aligned dword of the ring memory, which lives as long as `self`.
                let st = unsafe { AtomicU32::from_ptr(RxDesc::status_ptr(d).cast_mut()).load(Ordering::Acquire) };
                if st & rx::STAT_DD == 0 {
                    consumed += i - start;
                    break 'runs;
                }
                dma_rmb();
                // SAFETY: DD is set, so the device is done with it.
                let wb = unsafe { d.read_volatile() }.as_writeback();
                // SAFETY: i < size, a slot between `next` and RDT: it owns its buffer, which moves into `m` (the
                // slot becomes a consumed one).
                let m = unsafe { self.bufs.take(i) };
                i += 1;
                if let Some(m) = self.complete_slow(m, wb, &mut errors) {
                    bytes += m.pkt_len() as u64;
                    // SAFETY: got <= consumed + (i - start) <= spare.len().
                    unsafe { *spare.get_unchecked_mut(got) = m.into_raw() };
                    got += 1;
                }
            }
            consumed += i - start;
            left -= i - start;
            if i == size {
                i = 0;
            }
        }
        // SAFETY: the `consumed` slots from `next` on were taken (into packets, chains or dropped frames).
        unsafe { self.bufs.consume(if i == size { 0 } else { i }, consumed) };
        if consumed != 0 {
            self.stats.packets.add(got as u64);
            self.stats.bytes.add(bytes);
            if errors != 0 {
                self.stats.errors.add(errors);
            }
        }
        got
    }
}

impl<R: RegisterSpace, F: Family> RxQueue for RxRing<R, F> {
    #[inline]
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        // SAFETY: rx_into writes only uniquely owned packets (taken out of the shadow ring) into the first `got`
        // spare slots, and returns `got`. It also moves `nb_hold` and the counters.
        let got = unsafe { batch.fill_raw(|spare| self.rx_into(spare)) };
        // Also retries a refill that failed earlier (pool empty) while the ring is idle.
        if self.bufs.refill_due() {
            if let Some(tail) = self.bufs.refill(&self.stats.nombuf) {
                self.regs.space().write32(self.rdt, tail);
            }
        }
        got
    }
}

impl<R: RegisterSpace, F: Family> Drop for RxRing<R, F> {
    fn drop(&mut self) {
        // The device must stop writing into our buffers before they go back to the pool.
        disable_queue(&self.regs, F::rxdctl(self.queue), F::QUEUE_ENABLE, 0, self.config.enable_timeout);
        self.regs.write(F::rdt(self.queue), 0);
        // The core frees the buffers the ring still owns; then pending (buffers), then the ring's and the pool's
        // mappings (unmapped, then freed if last) drop.
    }
}

/// The burst paths every ring of this driver runs on this CPU: RX takes runs of common frames four descriptors
/// at a time with SSE2 shuffles (the AVX build when the CPU has it; one at a time off x86-64), TX places plain
/// packets in groups of four and offloads or chains one by one, both in the same routine.
pub fn burst_mode() -> pktio::BurstMode {
    let rx = if cfg!(not(target_arch = "x86_64")) {
        "Scalar"
    } else if ringkit::cpu_has_avx() {
        "Vector SSE2 (AVX build)"
    } else {
        "Vector SSE2"
    };
    pktio::BurstMode { rx, tx: "Scalar (plain packets by 4, offloads one by one)" }
}
