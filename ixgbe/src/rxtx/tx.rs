//! The TX ring: ixgbe's data and context descriptors on the shared TX core ([`ringkit::TxCore`]: the common
//! burst four at a time, RS groups, the cleanup that frees them); here the descriptor layout, the plain-packet
//! test, checksum offloads through context descriptors, and the queue registers.

use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use drvkit::bar::RegisterSpace;
use drvkit::dma::{DmaArea, DmaMapper, DmaMapping};
use hugepage::Allocator;
use mempool::{ol_flags, Mbuf, MbufHeader, Mempool, PacketBatch};
use pktio::stats::TxQueueStats;
use pktio::{Error, Result, TxQueue};
use ringkit::{TxCore, TxDescriptor, TxHangState, TxPath, TxRestart, TxWatchdog, RS_CHECK, RS_HOLES};

use super::ring::{disable_queue, split_iova, RingConfig};
use super::Family;
use crate::desc::{tx, TxContext, TxContextDesc, TxData, TxDesc};
use crate::regs::{PollTimeout, Reg, Regs};

/// Most data descriptors per packet (DPDK's limit for ixgbe).
pub const MAX_TX_SEGS: usize = 40;

/// Offload flags that need a context descriptor.
const TX_CTX_FLAGS: u64 = ol_flags::TX_IP_CKSUM | ol_flags::TX_UDP_CKSUM | ol_flags::TX_VLAN;
/// Offload flags the driver does not support (the packet is dropped as an error).
const TX_BAD_FLAGS: u64 = ol_flags::TX_TCP_SEG;

const TX_L4_SHIFT: u32 = 52;
const TX_L4_MASK: u64 = 0b11;
const TX_L4_TCP: u64 = 1;
const TX_L4_UDP: u64 = 3;

/// The context a packet needs: (vlan_macip_lens, type_tucmd_mlhl) as one key, and the data descriptor bits.
#[inline]
fn tx_context(m: &Mbuf) -> (u64, TxContextDesc, u32, u32) {
    let flags = m.ol_flags();
    let o = m.tx_offload();
    let l4 = (flags >> TX_L4_SHIFT) & TX_L4_MASK;
    let (l4t, txsm) = match l4 {
        TX_L4_TCP => (tx::L4T_TCP, tx::POPTS_TXSM),
        TX_L4_UDP => (tx::L4T_UDP, tx::POPTS_TXSM),
        _ => (tx::L4T_RSV, 0),
    };
    let ixsm = if flags & ol_flags::TX_IP_CKSUM != 0 { tx::POPTS_IXSM } else { 0 };
    let ipv4 = flags & ol_flags::TX_IPV4 != 0 || (flags & ol_flags::TX_IPV6 == 0 && ixsm != 0);
    let mut ctx = TxContextDesc::checksum(TxContext { mac_len: o.l2_len, ip_len: o.l3_len, ipv4, l4t, idx: 0 });
    let mut vle = 0;
    if flags & ol_flags::TX_VLAN != 0 {
        ctx.vlan_macip_lens = tx::VLAN.set(ctx.vlan_macip_lens, m.vlan_tci() as u32);
        vle = tx::DCMD_VLE;
    }
    let key = ctx.vlan_macip_lens as u64 | (ctx.type_tucmd_mlhl as u64) << 32;
    (key, ctx, ixsm | txsm, vle)
}

/// Writes a one-descriptor packet's data descriptor (EOP, no offload) in two 8-byte stores, the second built from
/// the length alone: cmd_type_len | olinfo_status << 32 with PAYLEN = DTALEN = `len`.
///
/// # Safety
/// `d` must be a free slot of the ring (the device does not read it until TDT passes it).
#[inline(always)]
unsafe fn write_tx_data(d: *mut TxDesc, iova: u64, len: u16) {
    const CMD: u64 = (tx::DATA_FLAGS | tx::DCMD_EOP) as u64;
    // len in DTALEN (bits 15:0) and in PAYLEN (olinfo bits 31:14, i.e. bit 46 of the pair).
    const LEN_TIMES: u64 = 1 | (tx::PAYLEN.val(1) as u64) << 32;
    // SAFETY: the caller's contract.
    unsafe {
        std::ptr::addr_of_mut!((*d).addr).write_volatile(iova);
        std::ptr::addr_of_mut!((*d).cmd_type_len).cast::<u64>().write_volatile(CMD | (len as u64 * LEN_TIMES));
    }
}

/// ixgbe's advanced data descriptor in the shared TX core: the plain test, the fast write above, DD in the
/// write-back status dword, RS in cmd_type_len.
impl TxDescriptor for TxDesc {
    /// Plain: a single segment of the port's pool, no offload flag that needs a context (or is unsupported),
    /// not empty.
    #[inline(always)]
    fn is_plain(not_single: usize, flags: u64, len_keys: u64) -> bool {
        not_single == 0 && flags & (TX_CTX_FLAGS | TX_BAD_FLAGS) == 0 && len_keys >> tx::DTALEN.width == 0
    }

    /// The length minus one, wrapping: 0 becomes all ones, past DTALEN's 16 bits, and 1..=65535 stay within
    /// them, so an OR of these exceeds 16 bits exactly when some length was 0.
    #[inline(always)]
    fn len_key(len: u16) -> u64 {
        (len as u64).wrapping_sub(1)
    }

    #[inline(always)]
    unsafe fn write_plain(d: *mut Self, iova: u64, len: u16) {
        // SAFETY: the trait's contract is write_tx_data's.
        unsafe { write_tx_data(d, iova, len) }
    }

    #[inline(always)]
    unsafe fn set_rs(d: *mut Self) {
        // SAFETY: the trait's contract: a written slot not yet handed over.
        unsafe {
            let c = std::ptr::addr_of_mut!((*d).cmd_type_len);
            c.write_volatile(c.read_volatile() | tx::DCMD_RS);
        }
    }

    #[inline(always)]
    unsafe fn done(d: *mut Self) -> bool {
        // SAFETY: a slot of the ring; atomic acquire load of a status dword the device may be writing.
        let st = unsafe { AtomicU32::from_ptr(TxDesc::status_ptr(d).cast_mut()).load(Ordering::Acquire) };
        st & tx::STA_DD != 0
    }
}

/// One TX queue: the shared ring core (shadow ring, RS groups, counters), the context in the device and its
/// registers.
pub struct TxRing<R: RegisterSpace, F: Family> {
    core: TxCore<TxDesc>,
    /// Context in slot 0 of the device, if any, with the core's generation when it was written (a restart makes
    /// the device forget it).
    ctx_key: Option<(u64, u32)>,
    regs: Regs<R>,
    tdt: Reg,
    queue: u16,
    config: RingConfig,
    // Dropped after `Drop::drop` disabled the queue and the core freed its packets.
    _mem: DmaArea,
    _pool_map: DmaMapping,
    _family: PhantomData<F>,
}

/// What a TX ring needs from its device.
pub struct TxSetup<'a, R> {
    /// Register access.
    pub regs: &'a Regs<R>,
    /// Ring memory.
    pub allocator: &'a Allocator,
    /// DMA map of the device.
    pub mapper: &'a Arc<dyn DmaMapper>,
    /// The pool the port was started with: mapped for the ring's life, so packets from it (forwarded ones) can be
    /// sent. Packets from other pools need a mapping of their own.
    pub pool: &'a Mempool,
    /// Queue index.
    pub queue: u16,
    /// Counters (shared with the device).
    pub stats: Arc<TxQueueStats>,
    /// What the hang watchdog found (shared with the device, for its xstats and [`crate::Error::TxHang`]).
    pub hang: Arc<TxHangState>,
    /// Port name for errors.
    pub port: &'a str,
    /// The burst the queue runs: [`TxPath::for_offloads`] of its configuration (offload flags are ignored on
    /// [`TxPath::Plain`]).
    pub path: TxPath,
}

impl<R: RegisterSpace, F: Family> TxRing<R, F> {
    /// Allocates and maps the ring and programs the queue registers, queue disabled (docs/hw/ixgbe.md §6.3 steps 1-7).
    pub fn new(setup: TxSetup<'_, R>, config: RingConfig) -> Result<Self> {
        let size = config.size as usize;
        let bad = |reason: String| Error::InvalidConfig { port: setup.port.to_string(), reason };
        if size < 8 || !size.is_multiple_of(8) {
            return Err(bad(format!("TX ring of {size} descriptors: must be a multiple of 8, at least 8")));
        }
        let rs_thresh = config.rs_thresh as usize;
        let free_thresh = config.free_thresh as usize;
        if rs_thresh == 0 || rs_thresh + 2 >= size || free_thresh == 0 || free_thresh + 3 >= size {
            return Err(bad(format!(
                "TX thresholds rs={rs_thresh} free={free_thresh} do not fit a ring of {size} (need 0 < rs < N-2, \
                 0 < free < N-3)"
            )));
        }
        let pool_map = setup.mapper.map(setup.pool.memory())?;
        let mem = DmaArea::new(setup.allocator, setup.mapper, size * size_of::<TxDesc>(), setup.port, "a TX ring")?;
        let ring = NonNull::new(mem.as_ptr().cast::<TxDesc>()).ok_or_else(|| bad("null ring".into()))?;
        let q = setup.queue;
        let regs = setup.regs.clone();
        disable_queue(&regs, F::txdctl(q), F::QUEUE_ENABLE, F::TXDCTL_DISABLE, config.enable_timeout);
        let (lo, hi) = split_iova(mem.iova(0));
        regs.write(F::tdbal(q), lo);
        regs.write(F::tdbah(q), hi);
        regs.write(F::tdlen(q), (size * size_of::<TxDesc>()) as u32);
        regs.write(F::tdh(q), 0);
        regs.write(F::tdt(q), 0);
        F::tx_queue_extra(&regs, q);
        regs.write(F::txdctl(q), F::TXDCTL_INIT);
        // SAFETY: `ring` is `size` descriptors of `mem`, which the ring keeps until after the core drops.
        let mut core = unsafe { TxCore::new(ring, size, rs_thresh, free_thresh, setup.pool, setup.stats) };
        core.set_path(setup.path);
        let restart =
            QueueRestart::<R, F> { regs: regs.clone(), queue: q, timeout: config.enable_timeout, family: PhantomData };
        core.set_watchdog(TxWatchdog::new(setup.port, q, config.tx_hang, setup.hang), Box::new(restart));
        Ok(TxRing {
            core,
            ctx_key: None,
            tdt: F::tdt(q),
            regs,
            queue: q,
            config,
            _mem: mem,
            _pool_map: pool_map,
            _family: PhantomData,
        })
    }

    /// Enables the queue (docs/hw/ixgbe.md §3.7 step 33; after DMATXCTL.TE on ixgbe). A queue that does not report enabled
    /// in time is the poll's timeout (TXDCTL), for the caller to report.
    pub fn enable(&mut self) -> std::result::Result<(), PollTimeout> {
        enable_queue::<R, F>(&self.regs, self.queue, self.config.enable_timeout)
    }

    /// Queue index.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// The burst this queue runs.
    pub fn path(&self) -> TxPath {
        self.core.path()
    }

    /// Free descriptor slots.
    pub fn free_slots(&self) -> usize {
        self.core.free_slots()
    }

    /// Packets handed to the device and not yet confirmed sent.
    pub fn in_flight(&self) -> usize {
        self.core.in_flight()
    }
}

/// Head 0, the queue enabled, tail 0 (docs/hw/ixgbe.md §3.7 step 33, §6.3).
fn enable_queue<R: RegisterSpace, F: Family>(
    regs: &Regs<R>,
    q: u16,
    timeout: std::time::Duration,
) -> std::result::Result<(), PollTimeout> {
    regs.write(F::tdh(q), 0);
    regs.set_bits(F::txdctl(q), F::QUEUE_ENABLE);
    regs.poll(F::txdctl(q), F::QUEUE_ENABLE, F::QUEUE_ENABLE, timeout)?;
    regs.write(F::tdt(q), 0);
    Ok(())
}

/// How the core restarts a hung queue (as Linux's ixgbe resets a hung ring): the queue disabled, every packet on
/// it dropped and counted (the core), head and tail back to 0, the queue enabled again (docs/hw/ixgbe.md §6.3).
/// The device forgets its context slot: the ring notes the core's generation with it, so the next offloaded
/// packet writes it again. The head the slow-path check reads is TDH.
struct QueueRestart<R: RegisterSpace, F: Family> {
    regs: Regs<R>,
    queue: u16,
    timeout: std::time::Duration,
    family: PhantomData<F>,
}

impl<R: RegisterSpace, F: Family> TxRestart for QueueRestart<R, F> {
    fn head(&mut self) -> usize {
        self.regs.read(F::tdh(self.queue)) as usize
    }

    fn stop(&mut self) {
        disable_queue(&self.regs, F::txdctl(self.queue), F::QUEUE_ENABLE, F::TXDCTL_DISABLE, self.timeout);
    }

    fn start(&mut self) {
        if enable_queue::<R, F>(&self.regs, self.queue, self.timeout).is_err() {
            // Left disabled: the ring fills again and the watchdog tries again after its timeout.
            eprintln!("TX queue {}: did not enable again after the hang restart (TXDCTL)", self.queue);
        }
    }
}

/// Queues one packet that is not plain (context, data descriptors) on `core`; false when it does not fit now.
/// Bad packets are consumed and counted as errors (`Err`). `ctx_key` is the context in slot 0 of the device.
#[inline(never)]
fn queue_packet(
    core: &mut TxCore<TxDesc>,
    ctx_key: &mut Option<(u64, u32)>,
    m: &Mbuf,
    p: NonNull<MbufHeader>,
) -> std::result::Result<bool, ()> {
    let flags = m.ol_flags();
    let segs = m.nb_segs() as usize;
    let len = m.data_len();
    // An empty plain packet fails here and below as an empty segment.
    if TxDesc::is_plain((segs != 1) as usize, flags, TxDesc::len_key(len)) {
        // One data descriptor (a packet of another pool, which the fast runs leave to this path).
        if core.free_slots() == 0 {
            return Ok(false);
        }
        let check = if m.single_of(core.pool_id()) != 0 { RS_CHECK } else { 0 };
        let rs = core.rs_due(1);
        let slot = core.put(TxDesc::data(TxData {
            addr: m.data_iova(),
            len,
            eop: true,
            rs,
            paylen: len as u32,
            ixsm: false,
            txsm: false,
            idx: 0,
        }));
        core.finish(slot, p, 1, rs, check);
        return Ok(true);
    }
    if flags & TX_BAD_FLAGS != 0 || segs == 0 || segs > MAX_TX_SEGS {
        return Err(());
    }
    let (key, ctx, popts, vle) =
        if flags & TX_CTX_FLAGS != 0 { tx_context(m) } else { (0, TxContextDesc::default(), 0, 0) };
    let ctx_now = Some((key, core.generation()));
    let need_ctx = flags & TX_CTX_FLAGS != 0 && *ctx_key != ctx_now;
    let need = segs + need_ctx as usize;
    if need > core.free_slots() {
        return Ok(false);
    }
    let mut paylen = 0u32;
    for s in m.segments() {
        if s.data.is_empty() {
            return Err(());
        }
        paylen += s.data.len() as u32;
    }
    if need_ctx {
        core.put(TxDesc::context(ctx));
        *ctx_key = ctx_now;
    }
    let rs = core.rs_due(need);
    let mut last = core.tail();
    for (k, s) in m.segments().enumerate() {
        let eop = k + 1 == segs;
        let mut d = TxDesc::data(TxData {
            addr: s.iova,
            len: s.data.len() as u16,
            eop,
            rs: eop && rs,
            paylen,
            ixsm: false,
            txsm: false,
            idx: 0,
        });
        d.olinfo_status |= popts;
        d.cmd_type_len |= vle;
        last = core.put(d);
    }
    core.finish(last, p, need, rs, if need > 1 { RS_HOLES | RS_CHECK } else { RS_CHECK });
    Ok(true)
}

impl<R: RegisterSpace, F: Family> TxQueue for TxRing<R, F> {
    #[inline]
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let ctx_key = &mut self.ctx_key;
        let (taken, tail) = self.core.tx_burst(batch, |core, m, p| queue_packet(core, ctx_key, m, p));
        if let Some(tail) = tail {
            self.regs.write(self.tdt, tail);
        }
        taken
    }
}

/// How long a stopping TX queue waits for the NIC to fetch what it was given (docs/hw/ixgbe.md §6.3; DPDK's 10 ms,
/// longer for an emulated NIC's slower fetch). A hung queue costs this once, at stop.
const TX_DRAIN: std::time::Duration = std::time::Duration::from_millis(50);

impl<R: RegisterSpace, F: Family> Drop for TxRing<R, F> {
    fn drop(&mut self) {
        // Let the NIC fetch what it was given (TDH reaches TDT), so frames queued just before a stop still leave.
        let deadline = std::time::Instant::now() + TX_DRAIN;
        while self.regs.read(F::tdh(self.queue)) != self.regs.read(self.tdt) && std::time::Instant::now() < deadline {
            std::hint::spin_loop();
        }
        // Stop the device reading our buffers; the core then frees whatever it had not confirmed.
        disable_queue(
            &self.regs,
            F::txdctl(self.queue),
            F::QUEUE_ENABLE,
            F::TXDCTL_DISABLE,
            self.config.enable_timeout,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakeRegs;
    use crate::IxgbeFamily;
    use drvkit::dma::IdentityMapper;
    use mempool::PoolConfig;

    /// An empty packet is not plain: inside a group of four (the group falls back to one at a time) and alone
    /// (the general path), it is dropped as an error while the others are sent, and nothing leaks.
    #[test]
    fn empty_packets_are_errors_in_a_group_and_alone() {
        let fake = Arc::new(FakeRegs::default());
        let regs = Regs::new(fake.clone());
        let allocator = Allocator::no_huge();
        let mapper: Arc<dyn DmaMapper> = Arc::new(IdentityMapper);
        let pool = Mempool::new("tx-empty", &PoolConfig { size: 63, ..Default::default() }, &allocator).unwrap();
        let stats = Arc::new(TxQueueStats::default());
        let setup = TxSetup {
            regs: &regs,
            allocator: &allocator,
            mapper: &mapper,
            pool: &pool,
            queue: 0,
            stats: stats.clone(),
            hang: Default::default(),
            port: "test",
            path: TxPath::Full,
        };
        let mut ring = TxRing::<FakeRegs, IxgbeFamily>::new(setup, RingConfig::new(64)).unwrap();
        let tdt = IxgbeFamily::tdt(0);
        let lens = [60u16, 61, 62, 63, 64, 0, 66, 67];
        let mut batch = PacketBatch::new();
        for &len in &lens {
            let mut m = pool.alloc().unwrap();
            assert!(m.set_len(len));
            batch.push(m).unwrap();
        }
        assert_eq!(ring.tx_burst(&mut batch), lens.len());
        assert!(batch.is_empty());
        assert_eq!((stats.packets.get(), stats.errors.get()), (7, 1));
        assert_eq!(stats.bytes.get(), lens.iter().map(|&l| l as u64).sum::<u64>());
        assert_eq!(fake.peek(tdt), 7);
        let sent: Vec<u16> = (0..7).map(|i| ring.ring_desc(i).as_data().unwrap().len).collect();
        assert_eq!(sent, [60, 61, 62, 63, 64, 66, 67]);
        assert_eq!(pool.in_use(), 7, "the empty packet goes back to the pool");

        let mut m = pool.alloc().unwrap();
        assert!(m.set_len(0));
        batch.push(m).unwrap();
        assert_eq!(ring.tx_burst(&mut batch), 1);
        assert_eq!((stats.packets.get(), stats.errors.get()), (7, 2));
        assert_eq!(fake.peek(tdt), 7, "nothing handed to the device");
        assert_eq!(pool.in_use(), 7);
        drop(ring);
        assert!(pool.is_full());
    }

    impl<R: RegisterSpace, F: Family> TxRing<R, F> {
        fn ring_desc(&self, i: usize) -> TxDesc {
            // SAFETY: i < size; the test reads what the ring wrote.
            unsafe { self.core.ring().as_ptr().add(i).read_volatile() }
        }
    }
}
