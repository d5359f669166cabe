//! The RX queue (docs/hw/i40e.md §9.3, §10.1-10.2, §11): 32-byte descriptors on the shared engine
//! ([`ringkit::RxEngine`] over [`Desc32`]: bursts, chains for frames that span buffers (EOF = 0), the bulk refill),
//! the queue's RX context and the QRX_TAIL doorbell.

use std::ptr::NonNull;
use std::sync::Arc;

use drvkit::bar::RegisterSpace;
use drvkit::barrier::dma_wmb;
use drvkit::dma::{DmaArea, DmaMapper, DmaMapping};
use hugepage::Allocator;
use mempool::{Mempool, PacketBatch};
use pktio::stats::RxQueueStats;
use pktio::{Error, Result, RxQueue};
use ringkit::{RxBuffers, RxEngine};

use super::ring::RingConfig;
use super::rx_decode::{Desc32, RxMemo};
use crate::desc::RxDesc;
use crate::hmc::{LanHmc, RxQueueContext, CTX_BASE_UNIT, DBUFF_UNIT};
use crate::queue::switch_rx;
use crate::regs::{self, PollTimeout, Reg, Regs};

/// Largest RX data buffer (docs/hw/i40e.md §15: a multiple of 128, at most 16 KiB − 128).
pub const MAX_RX_BUF: u32 = 16 * 1024 - 128;
/// Buffers the hardware chains per frame (docs/hw/i40e.md §15).
pub const MAX_CHAINED: u32 = 5;
/// Largest frame (docs/hw/i40e.md §15).
pub const MAX_FRAME: u32 = 9728;

/// One RX queue. Owned by one thread.
// The engine first (C layout): its address is the ring's, so a burst passes it on without an offset.
#[repr(C)]
pub struct RxRing<R: RegisterSpace> {
    /// The shared engine: buffers, bursts, chains, counters.
    engine: RxEngine<Desc32>,
    /// Bytes the device writes into one buffer at most (the context's dbuff).
    buf_len: u16,
    regs: Regs<R>,
    tail_reg: Reg,
    queue: u16,
    config: RingConfig,
    /// The queue's interrupt, on a port configured with intr_conf.rxq.
    intr: Option<super::RxIntr>,
    port: String,
    // Dropped after `Drop::drop` disabled the queue and the engine freed its buffers.
    _mem: DmaArea,
    _pool_map: DmaMapping,
}

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
        // SAFETY: the completions are the descriptors themselves; buf is at most the pool's data room.
        let engine = unsafe { RxEngine::new(bufs, ring, Desc32, RxMemo::of(0), buf as u16, setup.stats) };
        Ok(RxRing {
            engine,
            buf_len: buf as u16,
            tail_reg: regs::qrx_tail(q),
            regs,
            queue: q,
            config,
            intr: None,
            port: setup.port.to_string(),
            _mem: mem,
            _pool_map: pool_map,
        })
    }

    /// Writes the tail again and enables the queue (docs/hw/i40e.md §9.3 step 4, §9.4).
    pub fn enable(&mut self) -> std::result::Result<(), PollTimeout> {
        dma_wmb();
        self.regs.write(self.tail_reg, self.engine.bufs().tail() as u32);
        switch_rx(&self.regs, self.queue, true, &self.config.timing)
    }

    /// Gives the queue its interrupt (docs/hw/i40e.md §14.2), disarmed.
    pub fn set_intr(&mut self, intr: super::RxIntr) {
        intr.disarm(&self.regs);
        self.intr = Some(intr);
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
        self.buf_len
    }
}

impl<R: RegisterSpace> RxQueue for RxRing<R> {
    #[inline]
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let (got, tail) = self.engine.rx_burst(batch);
        if let Some(tail) = tail {
            self.regs.write(self.tail_reg, tail);
        }
        got
    }

    fn wait_fd(&self) -> Option<std::os::fd::RawFd> {
        self.intr.as_ref().map(|i| i.raw_fd())
    }

    fn intr_enable(&mut self) -> Result<()> {
        match &self.intr {
            Some(i) => i.arm(&self.regs, &self.port),
            None => Err(no_intr(&self.port)),
        }
    }

    fn intr_disable(&mut self) -> Result<()> {
        match &self.intr {
            Some(i) => {
                i.disarm(&self.regs);
                Ok(())
            }
            None => Err(no_intr(&self.port)),
        }
    }
}

fn no_intr(port: &str) -> Error {
    Error::NotSupported {
        port: port.to_string(),
        driver: "net_i40e",
        what: "RX queue interrupts on a port not configured with intr_conf.rxq",
    }
}

impl<R: RegisterSpace> Drop for RxRing<R> {
    fn drop(&mut self) {
        // The device must stop writing into our buffers before they go back to the pool.
        let _ = switch_rx(&self.regs, self.queue, false, &self.config.timing);
        // The engine then frees the buffers the ring still owns.
    }
}
