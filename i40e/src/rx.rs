//! The RX ring (docs/hw/i40e.md §9.3, §10.1-10.2, §11): 32-byte descriptors filled with buffers from the mempool,
//! bursts that hand completed frames to a batch, chains for frames that span buffers (EOF = 0), and a bulk
//! refill that moves QRX_TAIL once.
//!
//! The common burst (no chain pending, no wrap, frames of one descriptor with DD and EOF and no frame error) goes
//! through `rx_fast_run`, four descriptors per test, the flags taken from a memo of the last combination of
//! qword-1 bits; anything else continues one descriptor at a time in `rx_into_general`. Buffers come
//! from the pool's raw allocation with stale metadata: the ring writes their rearm word when it posts them and
//! every RX field when it receives into them. No allocation, lock or dynamic call per packet.

use std::ptr::NonNull;
use std::sync::Arc;

use drvkit::bar::RegisterSpace;
use drvkit::barrier::{dma_rmb, dma_wmb};
use drvkit::dma::{DmaMapper, DmaMapping};
use hugepage::Allocator;
use mempool::{Mbuf, MbufHeader, Mempool, PacketBatch};
use pktio::stats::RxQueueStats;
use pktio::{Error, Result, RxQueue};
use ringkit::{RxBuffers, RxDescriptor};

use crate::desc::{rx, RxDesc};
use crate::hmc::{LanHmc, RxQueueContext, CTX_BASE_UNIT, DBUFF_UNIT};
use crate::queue::switch_rx;
use crate::regs::{self, PollTimeout, Regs};
use crate::ring::RingConfig;
use crate::rx_flags::RxMemo;
#[cfg(target_arch = "x86_64")]
use crate::rx_simd::rx_fast_run_avx;
use crate::rx_simd::{rx_fast_run, rx_qw1};
use drvkit::dma::DmaArea;

/// Largest RX data buffer (docs/hw/i40e.md §15: a multiple of 128, at most 16 KiB − 128).
pub const MAX_RX_BUF: u32 = 16 * 1024 - 128;
/// Buffers the hardware chains per frame (docs/hw/i40e.md §15).
pub const MAX_CHAINED: u32 = 5;
/// Largest frame (docs/hw/i40e.md §15).
pub const MAX_FRAME: u32 = 9728;

/// The 32-byte descriptor's read format in the shared buffer core: packet address, header address 0 (the
/// write-back rewrites the other two qwords).
impl RxDescriptor for RxDesc {
    #[inline(always)]
    fn read(iova: u64) -> Self {
        RxDesc::read(iova)
    }
}

/// One RX queue. Owned by one thread.
pub struct RxRing<R: RegisterSpace> {
    /// The descriptor ring's buffers: shadow ring, indices, refill (shared with the other drivers).
    bufs: RxBuffers<RxDesc>,
    /// Bytes the device writes into one buffer at most (the context's dbuff).
    max_len: u16,
    memo: RxMemo,
    /// The CPU has AVX: the fast run uses `rx_fast_run_avx` (x86-64 only; always false elsewhere).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    avx: bool,
    /// Head of a frame whose later descriptors have not completed yet.
    pending: Option<Mbuf>,
    pending_bad: bool,
    regs: Regs<R>,
    tail_reg: usize,
    queue: u16,
    stats: Arc<RxQueueStats>,
    config: RingConfig,
    // Dropped after `Drop::drop` disabled the queue.
    _mem: DmaArea,
    _pool_map: DmaMapping,
}

// SAFETY: the ring owns its descriptor memory and its buffers; the raw pointer is into that memory and is only used
// by the owning thread. Moving the ring moves all of it.
unsafe impl<R: RegisterSpace> Send for RxRing<R> {}

/// What an RX ring needs from its port.
pub struct RxSetup<'a, R> {
    /// Register access.
    pub regs: &'a Regs<R>,
    /// Ring memory.
    pub allocator: &'a Allocator,
    /// DMA map of the device.
    pub mapper: &'a Arc<dyn DmaMapper>,
    /// The HMC its context goes into.
    pub hmc: &'a LanHmc,
    /// Buffers.
    pub pool: &'a Mempool,
    /// PF queue number.
    pub queue: u16,
    /// Port number stamped into packets.
    pub port_id: u16,
    /// Largest frame to accept (the context's rxmax).
    pub max_frame: u32,
    /// Counters.
    pub stats: Arc<RxQueueStats>,
    /// Port name for errors.
    pub port: &'a str,
}

impl<R: RegisterSpace> RxRing<R> {
    /// Allocates the ring, fills it with buffers, writes the queue's RX context and the tail (docs/hw/i40e.md §9.3), queue still
    /// disabled: [`RxRing::enable`] starts it.
    pub fn new(setup: RxSetup<'_, R>, config: RingConfig) -> Result<Self> {
        let size = config.size as usize;
        let bad = |reason: String| Error::InvalidConfig { port: setup.port.to_string(), reason };
        RingConfig::check_size(config.size).map_err(bad)?;
        let free_thresh = config.free_thresh as usize;
        if free_thresh == 0 || 2 * free_thresh >= size {
            return Err(bad(format!("RX free threshold {free_thresh} for a ring of {size}: need 0 < 2 x thresh < N")));
        }
        let buf = (setup.pool.data_room() as u32).min(MAX_RX_BUF) / DBUFF_UNIT * DBUFF_UNIT;
        if buf == 0 {
            return Err(bad(format!(
                "mempool {} has a {}-byte data room; RX buffers must hold at least {DBUFF_UNIT} bytes",
                setup.pool.name(),
                setup.pool.data_room()
            )));
        }
        let pool_map = setup.mapper.map(setup.pool.memory())?;
        let mem = DmaArea::new(setup.allocator, setup.mapper, size * size_of::<RxDesc>(), setup.port, "an RX ring")?;
        let ring = NonNull::new(mem.as_ptr().cast::<RxDesc>()).ok_or_else(|| bad("null ring".into()))?;
        let q = setup.queue;
        let regs = setup.regs.clone();
        // A queue left enabled by an earlier user is off before its context changes.
        switch_rx(&regs, q, false, &config.timing).map_err(|t| {
            crate::error::timeout(format!("RX queue {q} disable"), "QRX_ENA", t.last, config.timing.switch)
                .at(setup.port)
        })?;

        // SAFETY: `ring` is `size` descriptors of `mem`, which the ring keeps until after `bufs` drops; the queue
        // is disabled.
        let bufs = unsafe { RxBuffers::new(ring, size, free_thresh, setup.pool, setup.port_id) }
            .map_err(|e| bad(format!("RX queue {q}: {e}")))?;
        let rxmax = setup.max_frame.min(MAX_CHAINED * buf).min(MAX_FRAME);
        setup.hmc.write_rx(
            q,
            &RxQueueContext {
                base: mem.iova(0) / CTX_BASE_UNIT,
                qlen: config.size,
                dbuff: (buf / DBUFF_UNIT) as u8,
                dsize: true,
                crcstrip: true,
                l2tsel: true,
                rxmax: rxmax as u16,
                tphrdesc_ena: true,
                tphwdesc_ena: true,
                tphdata_ena: true,
                tphhead_ena: true,
                lrxqthresh: 2,
                prefena: true,
                ..Default::default()
            },
        );
        regs.write(regs::qint_rqctl(q), 0);
        regs.write(regs::qrx_tail(q), (size - 1) as u32);
        Ok(RxRing {
            bufs,
            max_len: buf as u16,
            memo: RxMemo::of(0),
            avx: ringkit::cpu_has_avx(),
            pending: None,
            pending_bad: false,
            tail_reg: regs::qrx_tail(q).0,
            regs,
            queue: q,
            stats: setup.stats,
            config,
            _mem: mem,
            _pool_map: pool_map,
        })
    }

    /// Writes the tail again and enables the queue (docs/hw/i40e.md §9.3 step 4, §9.4).
    pub fn enable(&mut self) -> std::result::Result<(), PollTimeout> {
        dma_wmb();
        self.regs.write(regs::qrx_tail(self.queue), self.bufs.tail() as u32);
        switch_rx(&self.regs, self.queue, true, &self.config.timing)
    }

    /// PF queue number.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// IOVA of the ring (for tests playing the device).
    pub fn ring_iova(&self) -> u64 {
        self._mem.iova(0)
    }

    /// Bytes per buffer the device may write.
    pub fn buf_len(&self) -> u16 {
        self.max_len
    }

    /// The general completion path: chains and errors. Returns the finished packet, if any.
    #[cold]
    #[inline(never)]
    fn complete_slow(&mut self, mut m: Mbuf, qw0: u64, qw1: u64, errors: &mut u64) -> Option<Mbuf> {
        let len = rx::LENGTH_PBUF.get(qw1) as u16;
        let seg_ok = len <= self.max_len;
        // SAFETY: a single segment posted with our rearm word; a length up to max_len (<= the data room) fits; a
        // longer one is recorded as 0 and the frame dropped below.
        unsafe { m.set_rx_unchecked(if seg_ok { len } else { 0 }, 0, 0, 0) };
        let m = match self.pending.take() {
            Some(mut head) => {
                head.chain(m);
                head
            }
            None => m,
        };
        if qw1 & rx::EOF == 0 {
            if !seg_ok {
                self.pending_bad = true;
            }
            self.pending = Some(m);
            return None;
        }
        if !seg_ok || std::mem::take(&mut self.pending_bad) || qw1 & rx::FRAME_ERRORS != 0 {
            *errors += 1;
            return None;
        }
        let mut m = m;
        let memo = RxMemo::of(qw1);
        m.set_ol_flags(memo.flags);
        m.set_packet_type(memo.ptype);
        m.set_rss_hash(rx::RSS_HASH.get(qw0) as u32);
        Some(m)
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
            return unsafe { rx_fast_run_avx(d, sh, n, out, self.max_len, &mut self.memo) };
        }
        // SAFETY: the caller's contract.
        unsafe { rx_fast_run(d, sh, n, out, self.max_len, &mut self.memo) }
    }

    /// Receives into `spare` and returns how many packets it wrote there; consumed descriptors go to `nb_hold`
    /// and the counters move here.
    #[inline(always)]
    fn rx_into(&mut self, spare: &mut [NonNull<MbufHeader>]) -> usize {
        let size = self.bufs.size();
        let i = self.bufs.next();
        let left = spare.len().min(size - 1 - self.bufs.held());
        if left == 0 || left > size - i || self.pending.is_some() {
            return self.rx_into_general(spare, i, left, 0, 0);
        }
        // SAFETY: i + left <= size, every slot there between `next` and the tail (owns its buffer);
        // left <= spare.len().
        let (n, b) = unsafe { self.fast_run(i, left, spare.as_mut_ptr()) };
        if n < left {
            return self.rx_into_general(spare, i + n, left - n, n, b);
        }
        // SAFETY: fast_run took the buffers of those n slots from `next` on.
        unsafe { self.bufs.consume(if i + n == size { 0 } else { i + n }, n) };
        self.stats.packets.add(n as u64);
        self.stats.bytes.add(b);
        n
    }

    /// The rest of [`RxRing::rx_into`] from slot `i` with `left` descriptors to look at, after `done` packets of
    /// `bytes`: the ring's end, chains, errors.
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
                    // SAFETY: i..end inside the ring, slots owning their buffers; got + (end - i) <= spare.len().
                    let (n, b) = unsafe { self.fast_run(i, end - i, spare.as_mut_ptr().add(got)) };
                    i += n;
                    got += n;
                    bytes += b;
                    if i == end {
                        break;
                    }
                }
                // SAFETY: i < size: a descriptor of our ring.
                let qw1 = unsafe { rx_qw1(ring.add(i)) };
                if qw1 & rx::DD == 0 {
                    consumed += i - start;
                    break 'runs;
                }
                dma_rmb();
                // SAFETY: DD is set: the device is done with it.
                let qw0 = unsafe { std::ptr::addr_of!((*ring.add(i)).qw0).read_volatile() };
                // SAFETY: a slot between `next` and the tail: its buffer moves into `m`.
                let m = unsafe { self.bufs.take(i) };
                i += 1;
                if let Some(m) = self.complete_slow(m, qw0, qw1, &mut errors) {
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

impl<R: RegisterSpace> RxQueue for RxRing<R> {
    #[inline]
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        // SAFETY: rx_into writes only uniquely owned packets (taken out of the shadow ring) into the first `got`
        // spare slots and returns `got`.
        let got = unsafe { batch.fill_raw(|spare| self.rx_into(spare)) };
        // Also retries a refill that failed earlier (pool empty) while the ring is idle.
        if self.bufs.refill_due() {
            if let Some(tail) = self.bufs.refill(&self.stats.nombuf) {
                self.regs.space().write32(self.tail_reg, tail);
            }
        }
        got
    }
}

impl<R: RegisterSpace> Drop for RxRing<R> {
    fn drop(&mut self) {
        // The device must stop writing into our buffers before they go back to the pool.
        let _ = switch_rx(&self.regs, self.queue, false, &self.config.timing);
        // The core then frees the buffers the ring still owns.
    }
}
