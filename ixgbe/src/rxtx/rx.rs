//! The RX queue: its descriptor ring on the shared engine ([`ringkit::RxEngine`] over [`AdvRx`]: bursts, chains
//! across bursts, the bulk refill), the queue registers and the RDT doorbell.

use std::marker::PhantomData;
use std::os::fd::{AsRawFd, RawFd};
use std::ptr::NonNull;
use std::sync::Arc;

use drvkit::bar::RegisterSpace;
use drvkit::barrier::dma_wmb;
use drvkit::dma::{DmaArea, DmaMapper, DmaMapping};
use drvkit::vfio::EventFd;
use hugepage::Allocator;
use mempool::{Mempool, PacketBatch};
use pktio::stats::RxQueueStats;
use pktio::{Error, Result, RxQueue};
use ringkit::{RxBuffers, RxEngine};

use super::ring::{disable_queue, split_iova, RingConfig};
use super::rx_decode::{rx_status, AdvRx, RxMemo};
use super::Family;
use crate::desc::{rx, RxDesc};
use crate::regs::{PollTimeout, Reg, Regs};

/// One RX queue: its descriptor ring, the buffers posted to it, and its counters. Owned by one thread.
// The engine first (C layout): its address is the ring's, so a burst passes it on without an offset.
#[repr(C)]
pub struct RxRing<R: RegisterSpace, F: Family> {
    /// The shared engine: buffers, bursts, chains, counters.
    engine: RxEngine<AdvRx<F>>,
    regs: Regs<R>,
    rdt: Reg,
    queue: u16,
    config: RingConfig,
    /// The queue's interrupt, on a port configured with RX interrupts.
    intr: Option<RxIntr>,
    // Dropped after `Drop::drop` disabled the queue and the engine freed its buffers: the ring's mapping, then the
    // pool's.
    _mem: DmaArea,
    _pool_map: DmaMapping,
    _family: PhantomData<F>,
}

/// An RX queue's interrupt: the eventfd its vector signals and the register writes that arm and disarm it, as
/// the device's driver computed them for the queue's vector (the ring code knows no interrupt register).
#[derive(Debug, Clone)]
pub struct RxIntr {
    /// The eventfd the vector's messages signal.
    pub fd: Arc<EventFd>,
    /// Unmasks the vector: (register, bits written).
    pub unmask: (Reg, u32),
    /// Masks it.
    pub mask: (Reg, u32),
    /// Clears its pending cause, where the device has a register for that.
    pub clear: Option<(Reg, u32)>,
    /// Sets its cause, as a frame written back does (the device then signals the vector if unmasked).
    pub trigger: (Reg, u32),
}

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
        let mem = DmaArea::new(setup.allocator, setup.mapper, size * size_of::<RxDesc>(), setup.port, "an RX ring")?;
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
        let (lo, hi) = split_iova(mem.iova(0));
        regs.write(F::rdbal(q), lo);
        regs.write(F::rdbah(q), hi);
        regs.write(F::rdlen(q), (size * size_of::<RxDesc>()) as u32);
        regs.write(F::rdh(q), 0);
        regs.write(F::rdt(q), 0);
        regs.write(F::srrctl(q), F::srrctl_value(buf_kb, config.drop_en));
        F::rx_queue_extra(&regs, q);
        let format = AdvRx::new(setup.udp_csum_zero_err);
        // SAFETY: the completions are the descriptors themselves; a pool buffer's data room is its data room.
        let engine =
            unsafe { RxEngine::new(bufs, ring, format, RxMemo::new::<F>(), setup.pool.data_room(), setup.stats) };
        Ok(RxRing {
            engine,
            rdt: F::rdt(q),
            regs,
            queue: q,
            config,
            intr: None,
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
        self.regs.write(F::rdh(q), 0);
        dma_wmb();
        self.regs.write(self.rdt, self.engine.bufs().tail() as u32);
        Ok(())
    }

    /// Queue index.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// Buffers currently owned by the ring (posted or held in a partial chain).
    pub fn buffers_held(&self) -> usize {
        self.engine.buffers_held()
    }

    /// Gives the queue its interrupt (the port was configured with RX interrupts); it starts masked.
    pub fn set_intr(&mut self, intr: RxIntr) {
        self.intr = Some(intr);
    }

    /// True when the next descriptor the burst will look at has been written back (DD): a frame waits.
    fn frame_waiting(&self) -> bool {
        let b = self.engine.bufs();
        // Only a slot the device owns (between `next` and the tail) carries a DD that means anything.
        if b.size() - 1 - b.held() == 0 {
            return false;
        }
        // SAFETY: a descriptor of the ring, which lives as long as `self`.
        unsafe { rx_status(self.engine.wb(b.next())) & rx::STAT_DD != 0 }
    }

    fn no_intr(&self) -> Error {
        Error::NotSupported {
            port: format!("RX queue {}", self.queue),
            driver: F::DRIVER,
            what: "RX queue interrupts on a port configured without intr_conf.rxq",
        }
    }
}

impl<R: RegisterSpace, F: Family> RxQueue for RxRing<R, F> {
    #[inline]
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let (got, tail) = self.engine.rx_burst(batch);
        if let Some(tail) = tail {
            self.regs.write(self.rdt, tail);
        }
        got
    }

    fn wait_fd(&self) -> Option<RawFd> {
        self.intr.as_ref().map(|i| i.fd.as_raw_fd())
    }

    /// Arms the vector (docs/hw/ixgbe.md §12.1): drains the eventfd, clears the vector's stale cause (frames the
    /// application already took while it polled), unmasks it, then looks at the next descriptor: a frame written
    /// back after the last empty burst but before the cause was cleared would otherwise wait for the next one, so
    /// its cause is set again (EICS) and the device signals the vector now. A frame after the clear sets the cause
    /// itself, and the unmask (or the unmasked vector) sends the message. The vector is auto-masked when it
    /// fires (EIAM), so one arm is at most one wake-up.
    fn intr_enable(&mut self) -> Result<()> {
        let Some(intr) = &self.intr else { return Err(self.no_intr()) };
        let drained = intr.fd.read();
        if let Some((reg, bits)) = intr.clear {
            self.regs.write(reg, bits);
        }
        self.regs.write(intr.unmask.0, intr.unmask.1);
        if self.frame_waiting() {
            self.regs.write(intr.trigger.0, intr.trigger.1);
        }
        drained
            .map(|_| ())
            .map_err(|e| Error::os(format!("RX queue {}: draining its interrupt eventfd", self.queue), e))
    }

    fn intr_disable(&mut self) -> Result<()> {
        let Some(intr) = &self.intr else { return Err(self.no_intr()) };
        self.regs.write(intr.mask.0, intr.mask.1);
        // Flush the posted write (docs/hw/ixgbe.md: a read of STATUS): disarmed means no signal for the next frame.
        let _ = self.regs.read(crate::regs::STATUS);
        Ok(())
    }
}

impl<R: RegisterSpace, F: Family> Drop for RxRing<R, F> {
    fn drop(&mut self) {
        // The device must stop writing into our buffers before they go back to the pool.
        disable_queue(&self.regs, F::rxdctl(self.queue), F::QUEUE_ENABLE, 0, self.config.enable_timeout);
        self.regs.write(F::rdt(self.queue), 0);
        // The engine frees the buffers the ring still owns (posted, or in a pending chain); then the ring's and the
        // pool's mappings (unmapped, then freed if last) drop.
    }
}
