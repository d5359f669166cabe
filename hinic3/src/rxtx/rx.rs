//! The RX queue (docs/hw/hinic3.md §10.1, §10.3 to §10.6): normal 16-byte RQ WQEs whose CQE address is written once at
//! creation, a separate array of 32-byte CQEs, on the shared engine ([`ringkit::RxEngine`] over [`Cqe32`]: bursts,
//! frames longer than a buffer as chains of consecutive entries, the bulk refill), and one RQ doorbell per refill.
//! No allocation, lock or dynamic call per packet.

use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Instant;

use drvkit::bar::RegisterSpace;
use drvkit::dma::{DmaArea, DmaMapper, DmaMapping};
use drvkit::reg::Regs;
use hugepage::Allocator;
use mempool::{Mempool, PacketBatch};
use pktio::stats::{Counter, RxQueueStats};
use pktio::{Error, Result, RxQueue};
use ringkit::{RxBuffers, RxEngine};

use super::rx_decode::{clear, status, Cqe32, Memo};
use crate::desc::{cqe, RqWqe, RxCqe, CQE_SIZE, RQ_WQE_SHIFT, WQ_ALIGN};
use crate::doorbell::{self, DbKind};
use crate::wq::WqMem;

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
    /// WQ page size code (COMM 22: 4 KiB << this); a ring larger than a page spans several ([`crate::wq`]).
    pub wq_page_log2: u8,
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
// The engine first (C layout): its address is the ring's, so a burst passes it on without an offset.
#[repr(C)]
pub struct RxRing<D: RegisterSpace> {
    /// The shared engine: buffers, bursts, chains, counters.
    engine: RxEngine<Cqe32>,
    /// The doorbell BAR.
    db: Regs<D>,
    db_info: u32,
    queue: u16,
    /// The queue's interrupt, on a port configured with intr_conf.rxq.
    intr: Option<super::RqIntr<D>>,
    // Dropped after the engine freed the buffers (the port stopped the queue first).
    wq_mem: WqMem,
    cq_mem: DmaArea,
    _pool_map: DmaMapping,
}

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
        if (setup.pool.data_room() as u32) < setup.buf_len || setup.buf_len > u16::MAX as u32 {
            return Err(bad(format!(
                "mempool {} data room {} is smaller than the RX buffer size {}",
                setup.pool.name(),
                setup.pool.data_room(),
                setup.buf_len
            )));
        }
        let pool_map = setup.mapper.map(setup.pool.memory())?;
        let wq_mem =
            WqMem::new(setup.allocator, setup.mapper, depth * 16, setup.wq_page_log2, setup.port, "an RQ ring")?;
        let cq_mem =
            DmaArea::new_aligned(setup.allocator, setup.mapper, depth * CQE_SIZE, WQ_ALIGN, setup.port, "a CQE array")?;
        let wqes = NonNull::new(wq_mem.as_ptr().cast::<RqWqe>()).ok_or_else(|| bad("null ring".into()))?;
        let cqes = NonNull::new(cq_mem.as_ptr().cast::<RxCqe>()).ok_or_else(|| bad("null CQEs".into()))?;
        for i in 0..depth {
            let w = RqWqe { buf: 0, cqe: crate::desc::hi_lo(cq_mem.iova(i * CQE_SIZE)) };
            // SAFETY: i < depth: inside the ring memory, which the device does not own yet.
            unsafe { wqes.as_ptr().add(i).write_volatile(w) };
        }
        // From here every slot owns a buffer (the last one not yet posted: PI = depth - 1, docs/hw/hinic3.md §10.6
        // step 5); the engine's drop frees them.
        // SAFETY: `wqes` is `depth` WQEs of `wq_mem`, which the ring keeps until after the engine drops; the queue
        // is not started; each WQE's CQE address is written (the post writes the buffer address only).
        let bufs = unsafe { RxBuffers::new(wqes, depth, RX_FREE_THRESH, setup.pool, setup.port_id) }
            .map_err(|e| bad(format!("RX queue {}: {e}", setup.queue)))?;
        let format = Cqe32::new(setup.buf_len, setup.csum_errors);
        // SAFETY: one CQE per WQE, in `cq_mem`, kept until after the engine drops; buf_len <= the data room
        // (checked above).
        let engine = unsafe { RxEngine::new(bufs, cqes, format, Memo::NONE, setup.buf_len as u16, setup.stats) };
        Ok(RxRing {
            engine,
            db: Regs::new(setup.db.clone()),
            db_info: doorbell::info(DbKind::Rq, setup.queue, 0),
            queue: setup.queue,
            intr: None,
            wq_mem,
            cq_mem,
            _pool_map: pool_map,
        })
    }

    /// Lets go of the queue's counters (the port keeps them), for a ring its handle gave back to the port.
    pub(crate) fn detach_stats(&mut self) {
        self.engine.set_stats(Arc::new(RxQueueStats::default()));
    }

    /// Function-local queue index.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// IOVA of the WQE ring's first WQ page (for the RQ context and for tests playing the device).
    pub fn ring_iova(&self) -> u64 {
        self.wq_mem.iova()
    }

    /// IOVA of the ring's WQ block (RQ context): the ring, or its page table.
    pub fn block_iova(&self) -> u64 {
        self.wq_mem.block_iova()
    }

    /// IOVA of the CQE array.
    pub fn cqe_iova(&self) -> u64 {
        self.cq_mem.iova(0)
    }

    /// Entries.
    pub fn depth(&self) -> usize {
        self.engine.bufs().size()
    }

    /// Bytes per buffer.
    pub fn buf_len(&self) -> u32 {
        self.engine.format().buf_len()
    }

    /// The RQ doorbell with the current PI (the next entry to post: the buffer core's tail), in 8-byte units
    /// (docs/hw/hinic3.md §10.1).
    #[inline(always)]
    pub fn ring_doorbell(&self) {
        self.doorbell(self.engine.bufs().tail() as u32);
    }

    /// The RQ doorbell with PI `pi`.
    #[inline(always)]
    fn doorbell(&self, pi: u32) {
        let units = (pi << RQ_WQE_SHIFT) & ((self.depth() as u32) << RQ_WQE_SHIFT).wrapping_sub(1);
        doorbell::ring(&self.db, crate::regs::DB_PAGE_RQ, self.db_info, units);
    }
}

impl<D: RegisterSpace> RxRing<D> {
    /// After a per-queue stop's flush: a buffer into every free slot again, then the doorbell
    /// (docs/hw/hinic3.md §14.6 RX start). A pool that runs short leaves the rest to the bursts' refills.
    pub(crate) fn repost(&mut self) {
        let stats = self.engine.stats().clone();
        if self.engine.bufs_mut().refill(&stats.nombuf).is_some() {
            self.ring_doorbell();
        }
    }

    /// After the RQ flush (docs/hw/hinic3.md §10.6): takes back every posted buffer as its CQE returns (flush bit or
    /// done; a done frame over several buffers takes its following entries with it), clearing the CQE and freeing the
    /// buffer, until all are back or `deadline` passes. Returns how many came back; the rest are freed by the drop.
    pub fn reclaim_flushed(&mut self, deadline: Instant) -> usize {
        let bufs = self.engine.bufs();
        let (size, next) = (bufs.size(), bufs.next());
        let posted = size - 1 - bufs.held();
        let buf_len = self.buf_len() as usize;
        let mut k = 0;
        while k < posted {
            let i = ringkit::idx::add(next, k, size);
            let c = self.engine.wb(i).cast::<u32>();
            // SAFETY: a CQE of this ring's array.
            let st = unsafe { status(c) };
            if st & (cqe::DONE | cqe::FLUSH) == 0 {
                if Instant::now() >= deadline {
                    break;
                }
                std::thread::yield_now();
                continue;
            }
            // SAFETY: done or flushed: the rest of the CQE is valid.
            let len = if st & cqe::FLUSH != 0 { 0 } else { cqe::LEN.get(unsafe { c.add(1).read_volatile() }) };
            let n = (len as usize).div_ceil(buf_len).clamp(1, posted - k);
            for j in 0..n {
                let e = ringkit::idx::add(i, j, size);
                // SAFETY: a posted slot's CQE, its entry consumed here; the slot owns its buffer, which is freed once,
                // as `next` moves past it below.
                unsafe {
                    clear(self.engine.wb(e).cast());
                    drop(self.engine.bufs().take(e));
                }
            }
            k += n;
        }
        // SAFETY: the k slots from `next` on were taken (freed) above.
        unsafe { self.engine.bufs_mut().consume(ringkit::idx::add(next, k, size), k) };
        k
    }
}

impl<D: RegisterSpace> RxQueue for RxRing<D> {
    #[inline]
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let (got, tail) = self.engine.rx_burst(batch);
        if let Some(pi) = tail {
            self.doorbell(pi);
        }
        got
    }

    fn wait_fd(&self) -> Option<std::os::fd::RawFd> {
        self.intr.as_ref().map(|i| i.raw_fd())
    }

    fn intr_enable(&mut self) -> Result<()> {
        match &self.intr {
            Some(i) => i.arm("hinic3"),
            None => Err(no_intr()),
        }
    }

    fn intr_disable(&mut self) -> Result<()> {
        match &self.intr {
            Some(i) => {
                i.disarm();
                Ok(())
            }
            None => Err(no_intr()),
        }
    }
}

fn no_intr() -> Error {
    Error::NotSupported {
        port: "(an hinic3 RX queue)".to_string(),
        driver: "net_hinic3",
        what: "RX queue interrupts on a port not configured with intr_conf.rxq",
    }
}

impl<D: RegisterSpace> RxRing<D> {
    /// Gives the queue its interrupt (docs/hw/hinic3.md §5.5), disarmed; `None` takes it away.
    pub fn set_intr(&mut self, intr: Option<super::RqIntr<D>>) {
        if let Some(i) = &intr {
            i.disarm();
        }
        self.intr = intr;
    }

    /// The queue's MSI-X vector, when it has an interrupt.
    pub fn intr_vector(&self) -> Option<u16> {
        self.intr.as_ref().map(|i| i.vector as u16)
    }
}

impl<D: RegisterSpace> Drop for RxRing<D> {
    fn drop(&mut self) {
        // The port stopped the queue (vport off, RQ flushed, resources cleared) before dropping it. No stale done bit
        // survives into the next start (docs/hw/hinic3.md §10.6); the engine then frees the buffers.
        let bufs = self.engine.bufs();
        for k in 0..bufs.size() - 1 - bufs.held() {
            let i = ringkit::idx::add(bufs.next(), k, bufs.size());
            // SAFETY: a posted slot's CQE; the device no longer writes it.
            unsafe { clear(self.engine.wb(i).cast()) };
        }
    }
}
