//! The TX ring: packets from a batch placed as data descriptors (the common burst four at a time, anything else
//! out of line, checksum offloads through context descriptors), RS groups, and the cleanup that frees them.

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use hugepage::Allocator;
use mempool::{ol_flags, Mbuf, MbufHeader, Mempool, PacketBatch, PoolId};
use pktio::bar::RegisterSpace;
use pktio::barrier::dma_wmb;
use pktio::dma::{DmaMapper, DmaMapping};
use pktio::stats::TxQueueStats;
use pktio::{Error, Result, TxQueue};

use super::ring::{disable_queue, idx, split_iova, RingConfig, RingMemory};
use super::Family;
use crate::desc::{tx, TxContext, TxContextDesc, TxData, TxDesc};
use crate::regs::{PollTimeout, Regs};

/// Most data descriptors per packet (DPDK's limit for ixgbe).
pub const MAX_TX_SEGS: usize = 40;

/// Offload flags that need a context descriptor.
const TX_CTX_FLAGS: u64 = ol_flags::TX_IP_CKSUM | ol_flags::TX_UDP_CKSUM | ol_flags::TX_VLAN;
/// Offload flags the driver does not support (the packet is dropped as an error).
const TX_BAD_FLAGS: u64 = ol_flags::TX_TCP_SEG;

/// The test of a plain packet, which the fast paths send as one data descriptor without a context: a single
/// segment, no offload flag that needs a context (or is unsupported), not empty. Every argument may be an OR over
/// several packets, so one call tests a group of four as well as one packet: `not_single` is non-zero when some
/// packet is a chain ([`tx_groups`] passes the OR of [`Mbuf::single_of`], which also fails packets of other
/// pools), `flags` their offload flags, `lens_m1` their data lengths through [`tx_len_m1`].
#[inline(always)]
fn is_plain_tx(not_single: usize, flags: u64, lens_m1: u64) -> bool {
    not_single == 0 && flags & (TX_CTX_FLAGS | TX_BAD_FLAGS) == 0 && lens_m1 >> tx::DTALEN.width == 0
}

/// A data length minus one, wrapping: 0 becomes all ones, past DTALEN's 16 bits, and 1..=65535 stay within them,
/// so an OR of these exceeds 16 bits exactly when some length was 0 (see [`is_plain_tx`]).
#[inline(always)]
fn tx_len_m1(len: u16) -> u64 {
    (len as u64).wrapping_sub(1)
}
/// In an `rs_fifo` entry: the group ending at this RS has slots without a packet.
const RS_HOLES: u32 = 1 << 31;
/// In an `rs_fifo` entry: the group may hold chains or packets of other pools than the port's (freed with a test
/// per packet; without this bit a hole-free group goes back to the port's pool in one put).
const RS_CHECK: u32 = 1 << 30;
const RS_FLAGS: u32 = RS_HOLES | RS_CHECK;
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

/// One TX queue: its descriptor ring, the packets the device has not confirmed yet, and its counters.
pub struct TxRing<R: RegisterSpace, F: Family> {
    ring: NonNull<TxDesc>,
    size: usize,
    /// Next slot to fill (= TDT).
    tail: usize,
    /// Oldest slot not yet cleaned.
    clean: usize,
    nb_free: usize,
    /// Descriptors written since the last RS.
    since_rs: usize,
    rs_thresh: usize,
    free_thresh: usize,
    /// Slots of the descriptors that carry RS, oldest first; [`RS_HOLES`] marks a group with empty slots,
    /// [`RS_CHECK`] one with packets that are not single segments of `pool`.
    rs_fifo: Box<[u32]>,
    rs_head: usize,
    rs_len: usize,
    /// The `rs_fifo` flags of the group since the last RS: [`RS_HOLES`] when some slot holds no packet (a context
    /// descriptor or a segment before the last), [`RS_CHECK`] when some packet is not a single segment of `pool`.
    rs_flags: u32,
    /// The port's pool (the one its RX rings fill from): groups of its single segments are freed without tests.
    pool: Mempool,
    pool_id: PoolId,
    /// The packet (chain head) whose last descriptor is in this slot. Only the slots from `clean` up to `tail`
    /// are live (each written when its descriptor was, `None` where no packet ends); the others are stale.
    shadow: Box<[Option<NonNull<MbufHeader>>]>,
    /// Context in slot 0 of the device, if any.
    ctx_key: Option<u64>,
    regs: Regs<R>,
    tdt: usize,
    queue: u16,
    stats: Arc<TxQueueStats>,
    config: RingConfig,
    // Dropped after `Drop::drop` disabled the queue.
    _mem: RingMemory,
    _pool_map: DmaMapping,
    _family: PhantomData<F>,
}

// SAFETY: as for RxRing: the ring owns its memory and the packets in `shadow`; one owner thread at a time.
unsafe impl<R: RegisterSpace, F: Family> Send for TxRing<R, F> {}

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
    /// Port name for errors.
    pub port: &'a str,
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
        let mem = RingMemory::new(setup.allocator, setup.mapper, size * size_of::<TxDesc>(), setup.port)?;
        let ring = NonNull::new(mem.as_ptr().cast::<TxDesc>()).ok_or_else(|| bad("null ring".into()))?;
        let q = setup.queue;
        let regs = setup.regs.clone();
        disable_queue(&regs, F::txdctl(q), F::QUEUE_ENABLE, F::TXDCTL_DISABLE, config.enable_timeout);
        let (lo, hi) = split_iova(mem.iova());
        regs.write(F::tdbal(q), lo);
        regs.write(F::tdbah(q), hi);
        regs.write(F::tdlen(q), (size * size_of::<TxDesc>()) as u32);
        regs.write(F::tdh(q), 0);
        regs.write(F::tdt(q), 0);
        F::tx_queue_extra(&regs, q);
        regs.write(F::txdctl(q), F::TXDCTL_INIT);
        Ok(TxRing {
            ring,
            size,
            tail: 0,
            clean: 0,
            nb_free: size - 1,
            since_rs: 0,
            rs_thresh,
            free_thresh,
            rs_fifo: vec![0; size].into_boxed_slice(),
            rs_head: 0,
            rs_len: 0,
            rs_flags: 0,
            pool: setup.pool.clone(),
            pool_id: setup.pool.id(),
            shadow: vec![None; size].into_boxed_slice(),
            ctx_key: None,
            tdt: F::tdt(q).0,
            regs,
            queue: q,
            stats: setup.stats,
            config,
            _mem: mem,
            _pool_map: pool_map,
            _family: PhantomData,
        })
    }

    /// Enables the queue (docs/hw/ixgbe.md §3.7 step 33; after DMATXCTL.TE on ixgbe). A queue that does not report enabled
    /// in time is the poll's timeout (TXDCTL), for the caller to report.
    pub fn enable(&mut self) -> std::result::Result<(), PollTimeout> {
        let q = self.queue;
        self.regs.write(F::tdh(q), 0);
        self.regs.set_bits(F::txdctl(q), F::QUEUE_ENABLE);
        self.regs.poll(F::txdctl(q), F::QUEUE_ENABLE, F::QUEUE_ENABLE, self.config.enable_timeout)?;
        self.regs.write(F::tdt(q), 0);
        Ok(())
    }

    /// Queue index.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// Free descriptor slots.
    pub fn free_slots(&self) -> usize {
        self.nb_free
    }

    /// Packets handed to the device and not yet confirmed sent.
    pub fn in_flight(&self) -> usize {
        let live = idx::dist(self.clean, self.tail, self.size);
        (0..live).filter(|&k| self.shadow[idx::add(self.clean, k, self.size)].is_some()).count()
    }

    #[inline(always)]
    fn desc(&self, i: usize) -> *mut TxDesc {
        // SAFETY: callers pass i < size.
        unsafe { self.ring.as_ptr().add(i) }
    }

    /// Frees the packets whose last descriptor lies in `from..from+count` (mod size), in bulk. Without
    /// [`RS_HOLES`] in `flags` every slot there holds a packet and the shadow ring itself is handed to the mempool
    /// (no copy); otherwise the packets are gathered first.
    #[inline]
    fn free_range(&mut self, from: usize, count: usize, flags: u32) {
        let size = self.size;
        let first = count.min(size - from);
        if flags == 0 {
            let fast_free = |at: usize, n: usize| {
                // SAFETY: at + n <= size.
                let slots = unsafe { self.shadow.get_unchecked(at..at + n) };
                debug_assert!(slots.iter().all(Option::is_some));
                // SAFETY: the range is live and without holes, so every entry is `Some` (laid out as the
                // NonNull); without RS_CHECK every packet there was a single segment of `pool` when tx_burst took
                // it (Mbuf::single_of), and the ring has owned it unchanged since. Each is freed once: the caller
                // moves `clean` past the range.
                unsafe { self.pool.free_single_bulk(std::slice::from_raw_parts(slots.as_ptr().cast(), n)) };
            };
            fast_free(from, first);
            if count > first {
                fast_free(0, count - first);
            }
            return;
        }
        if flags & RS_HOLES == 0 {
            let runs = [(from, first), (0, count - first)];
            for (at, n) in runs {
                // SAFETY: at + n <= size.
                let slots = unsafe { self.shadow.get_unchecked(at..at + n) };
                debug_assert!(slots.iter().all(Option::is_some));
                // SAFETY: the range is live and without holes, so every entry is `Some`: an
                // Option<NonNull<_>> that is Some has the layout of the NonNull. Each packet is owned by its slot
                // (moved there by tx_burst) and freed once: the caller moves `clean` past the range.
                unsafe { mempool::free_raw_bulk(std::slice::from_raw_parts(slots.as_ptr().cast(), n)) };
            }
            return;
        }
        let mut gather = [NonNull::<MbufHeader>::dangling(); 64];
        let mut n = 0;
        for k in 0..count {
            // SAFETY: the index is reduced modulo size.
            if let Some(p) = unsafe { *self.shadow.get_unchecked(idx::add(from, k, size)) } {
                gather[n] = p;
                n += 1;
                if n == gather.len() {
                    // SAFETY: owned by their slots, which the caller retires (moves `clean` past): freed once.
                    unsafe { mempool::free_raw_bulk(&gather) };
                    n = 0;
                }
            }
        }
        // SAFETY: as above.
        unsafe { mempool::free_raw_bulk(&gather[..n]) };
    }

    /// Reclaims the oldest group if the device has marked its RS descriptor done. Returns true if it did.
    ///
    /// One group (`rs_thresh` descriptors) at a time, as DPDK does: a forwarding loop then frees about what it
    /// receives per burst, and the buffers cycle through the lcore cache instead of overflowing it into the
    /// pool's shared ring.
    #[inline]
    fn clean_one(&mut self) -> bool {
        if self.rs_len == 0 {
            return false;
        }
        // SAFETY: rs_head < size.
        let entry = *unsafe { self.rs_fifo.get_unchecked(self.rs_head) };
        let rs = (entry & !RS_FLAGS) as usize;
        // SAFETY: rs < size; atomic acquire load of a status dword the device may be writing.
        let st = unsafe { AtomicU32::from_ptr(TxDesc::status_ptr(self.desc(rs)).cast_mut()).load(Ordering::Acquire) };
        if st & tx::STA_DD == 0 {
            return false;
        }
        let clean = self.clean;
        if entry & RS_FLAGS == 0 && clean <= rs {
            // The common group: single segments of `pool` in every slot, not wrapping.
            let count = rs + 1 - clean;
            // SAFETY: clean <= rs < size. The range is live and without holes, so every entry is `Some` (laid
            // out as the NonNull); without RS_CHECK every packet there was a single segment of `pool` when
            // tx_burst took it (Mbuf::single_of), and the ring has owned it unchanged since. Each is freed once:
            // `clean` moves past the range.
            unsafe {
                let slots = self.shadow.get_unchecked(clean..rs + 1);
                debug_assert!(slots.iter().all(Option::is_some));
                self.pool.free_single_bulk(std::slice::from_raw_parts(slots.as_ptr().cast(), count));
            }
            self.clean = if rs + 1 == self.size { 0 } else { rs + 1 };
            self.nb_free += count;
        } else {
            let count = idx::dist(clean, rs, self.size) + 1;
            self.free_range(clean, count, entry & RS_FLAGS);
            self.clean = idx::add(rs, 1, self.size);
            self.nb_free += count;
        }
        let next = self.rs_head + 1;
        self.rs_head = if next == self.size { 0 } else { next };
        self.rs_len -= 1;
        true
    }

    /// Writes a descriptor that ends no packet (its shadow slot becomes a hole); callers put the packet in the
    /// shadow slot of its last descriptor afterwards.
    #[inline(always)]
    fn put(&mut self, d: TxDesc) {
        // SAFETY: tail < size; the slot is free (counted in nb_free), so the device does not read it.
        unsafe {
            self.desc(self.tail).write_volatile(d);
            *self.shadow.get_unchecked_mut(self.tail) = None;
        }
        self.tail = idx::add(self.tail, 1, self.size);
    }

    /// Notes the RS descriptor in `slot` for cleanup, and whether its group has holes.
    #[inline(always)]
    fn push_rs(&mut self, slot: usize) {
        let at = idx::add(self.rs_head, self.rs_len, self.size);
        let flags = std::mem::take(&mut self.rs_flags);
        // SAFETY: at < size; at most one RS per descriptor, so the fifo never holds more than `size`.
        unsafe { *self.rs_fifo.get_unchecked_mut(at) = slot as u32 | flags };
        self.rs_len += 1;
    }

    /// Queues one packet (context, data descriptors); false when it does not fit now. Bad packets are consumed
    /// and counted as errors (`Err`).
    #[inline(never)]
    fn queue_packet(&mut self, m: &Mbuf, p: NonNull<MbufHeader>) -> std::result::Result<bool, ()> {
        let flags = m.ol_flags();
        let segs = m.nb_segs() as usize;
        let len = m.data_len();
        // An empty plain packet fails here and below as an empty segment.
        if is_plain_tx((segs != 1) as usize, flags, tx_len_m1(len)) {
            // Fast path: one data descriptor.
            if self.nb_free == 0 {
                return Ok(false);
            }
            self.since_rs += 1;
            if m.single_of(self.pool_id) != 0 {
                self.rs_flags |= RS_CHECK;
            }
            let rs = self.since_rs >= self.rs_thresh;
            let slot = self.tail;
            self.put(TxDesc::data(TxData {
                addr: m.data_iova(),
                len,
                eop: true,
                rs,
                paylen: len as u32,
                ixsm: false,
                txsm: false,
                idx: 0,
            }));
            if rs {
                self.push_rs(slot);
                self.since_rs = 0;
            }
            self.nb_free -= 1;
            // SAFETY: slot < size; it was free.
            unsafe { *self.shadow.get_unchecked_mut(slot) = Some(p) };
            return Ok(true);
        }
        if flags & TX_BAD_FLAGS != 0 || segs == 0 || segs > MAX_TX_SEGS {
            return Err(());
        }
        let (key, ctx, popts, vle) =
            if flags & TX_CTX_FLAGS != 0 { tx_context(m) } else { (0, TxContextDesc::default(), 0, 0) };
        let need_ctx = flags & TX_CTX_FLAGS != 0 && self.ctx_key != Some(key);
        let need = segs + need_ctx as usize;
        if need > self.nb_free {
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
            self.put(TxDesc::context(ctx));
            self.ctx_key = Some(key);
        }
        self.since_rs += need;
        let rs = self.since_rs >= self.rs_thresh;
        let mut last = self.tail;
        for (k, s) in m.segments().enumerate() {
            let eop = k + 1 == segs;
            last = self.tail;
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
            self.put(d);
        }
        self.rs_flags |= if need > 1 { RS_HOLES | RS_CHECK } else { RS_CHECK };
        if rs {
            self.push_rs(last);
            self.since_rs = 0;
        }
        self.nb_free -= need;
        // SAFETY: last < size; it was free.
        unsafe { *self.shadow.get_unchecked_mut(last) = Some(p) };
        Ok(true)
    }
}

impl<R: RegisterSpace, F: Family> TxRing<R, F> {
    /// Places packets from the front of `pkts` (owned by the caller's batch) on the ring and returns how many it
    /// took ownership of: sent, or dropped as bad (freed). The packet, byte and error counters move here, each path
    /// doing its own share once, so that no tuple of results is merged between the two.
    ///
    /// A plain packet ([`is_plain_tx`]) is written as one data descriptor without per-packet ring-wrap or RS
    /// checks: packets go in runs that end at the ring's end, at the next RS point, or when room runs out, and RS
    /// is set on the run's last descriptor when its group is complete. Within a run, [`tx_groups`] writes four
    /// packets at a time and then tests them together; a group that fails is redone one packet at a time (its
    /// descriptors are not handed over before TDT moves, and its shadow slots are not live until `tail` passes
    /// them). Anything else goes through [`TxRing::queue_packet`].
    ///
    /// The common burst (it fits before the ring's end, the next RS point and the free room) is one call of
    /// [`tx_groups`] over all of it; whatever that leaves continues out of line in [`TxRing::tx_from_general`].
    #[inline(always)]
    fn tx_from(&mut self, pkts: &[NonNull<MbufHeader>]) -> usize {
        let len = pkts.len();
        let tail = self.tail;
        let (mut n, mut bytes) = (0, 0);
        if len <= (self.rs_thresh - self.since_rs).min(self.nb_free).min(self.size - tail) {
            // SAFETY: len <= size - tail and len <= nb_free: free slots of the ring and the shadow array.
            let (k, b) = unsafe {
                tx_groups(
                    pkts.as_ptr(),
                    self.ring.as_ptr().add(tail),
                    self.shadow.as_mut_ptr().add(tail),
                    len,
                    self.pool_id,
                )
            };
            if k > 0 {
                self.advance(tail, k);
                if k == len {
                    self.stats.packets.add(k as u64);
                    self.stats.bytes.add(b);
                    return k;
                }
                (n, bytes) = (k, b);
            }
        }
        self.tx_from_general(pkts, n, bytes)
    }

    /// Hands on the `k` descriptors written from slot `tail` (`tail + k <= size`, within the current RS group):
    /// RS on the last when the group is complete, then `tail` and the free count move.
    #[inline(always)]
    fn advance(&mut self, tail: usize, k: usize) {
        let last = tail + k - 1;
        self.since_rs += k;
        if self.since_rs == self.rs_thresh {
            // SAFETY: last < size, written by the caller and not yet handed over.
            unsafe {
                let c = std::ptr::addr_of_mut!((*self.ring.as_ptr().add(last)).cmd_type_len);
                c.write_volatile(c.read_volatile() | tx::DCMD_RS);
            }
            self.push_rs(last);
            self.since_rs = 0;
        }
        self.tail = if tail + k == self.size { 0 } else { tail + k };
        self.nb_free -= k;
    }

    /// The rest of [`TxRing::tx_from`] from packet `n` (those before it placed, with `bytes`): runs bounded by
    /// the ring's end, the RS point and the free room, packets one at a time, the general path. Returns how many
    /// packets were taken in all; moves the counters for all of them.
    #[inline(never)]
    fn tx_from_general(&mut self, pkts: &[NonNull<MbufHeader>], n: usize, bytes: u64) -> usize {
        let ring = self.ring.as_ptr();
        let size = self.size;
        let rs_thresh = self.rs_thresh;
        let pool_id = self.pool_id;
        let (mut bytes, mut errors, mut sent) = (bytes, 0u64, n as u64);
        let mut n = n;
        while n < pkts.len() {
            // Hot state in locals: the descriptor stores go through raw pointers the compiler cannot tell apart
            // from `self`. since_rs < rs_thresh between packets.
            let tail = self.tail;
            let room = (rs_thresh - self.since_rs).min(self.nb_free).min(size - tail).min(pkts.len() - n);
            let shadow = self.shadow.as_mut_ptr();
            let mut k = 0;
            // SAFETY: n + room <= pkts.len(); tail + room <= size (room <= size - tail) and those slots are free
            // (room <= nb_free): see tx_groups.
            let (taken, group_bytes) =
                unsafe { tx_groups(pkts.as_ptr().add(n), ring.add(tail), shadow.add(tail), room, pool_id) };
            k += taken;
            bytes += group_bytes;
            let mut other = 0;
            while k < room {
                // SAFETY: n + k < pkts.len().
                let p = unsafe { *pkts.get_unchecked(n + k) };
                // A borrowed view of a packet still owned by the batch (never dropped through this handle).
                // SAFETY: the batch owns a live packet here.
                let m = ManuallyDrop::new(unsafe { Mbuf::from_raw(p) });
                let len = m.data_len();
                if !is_plain_tx((m.nb_segs() != 1) as usize, m.ol_flags(), tx_len_m1(len)) {
                    break;
                }
                other |= m.single_of(pool_id);
                // SAFETY: tail + k < size (room <= size - tail); the slot is free (room <= nb_free), so the device
                // does not read it before the TDT write below. The packet moves into the shadow slot (the batch
                // gives it up: it is among the `n` returned).
                unsafe {
                    write_tx_data(ring.add(tail + k), m.data_iova(), len);
                    *shadow.add(tail + k) = Some(p);
                }
                bytes += len as u64;
                k += 1;
            }
            if other != 0 {
                self.rs_flags |= RS_CHECK;
            }
            if k > 0 {
                self.advance(tail, k);
                sent += k as u64;
                n += k;
                if k == room {
                    continue;
                }
            }
            if n == pkts.len() {
                break;
            }
            // The general path for packet n: offloads, chains, a full ring (cleanup, then retry), bad packets.
            // SAFETY: n < pkts.len(); a borrowed view as above.
            let p = unsafe { *pkts.get_unchecked(n) };
            // SAFETY: as above.
            let m = ManuallyDrop::new(unsafe { Mbuf::from_raw(p) });
            let mut r = self.queue_packet(&m, p);
            // No room: reclaim groups until it fits or the device has completed no more.
            while r == Ok(false) && self.clean_one() {
                r = self.queue_packet(&m, p);
            }
            match r {
                Ok(true) => {
                    bytes += m.pkt_len() as u64;
                    sent += 1;
                }
                Ok(false) => break,
                Err(()) => {
                    errors += 1;
                    drop(ManuallyDrop::into_inner(m));
                }
            }
            n += 1;
        }
        self.stats.packets.add(sent);
        self.stats.bytes.add(bytes);
        if errors != 0 {
            self.stats.errors.add(errors);
        }
        n
    }
}

/// The four-at-a-time part of [`TxRing::tx_from`]: writes the data descriptors and shadow slots of up to `room`
/// packets from `pkts`, four at a time, each group tested after it was written (all plain, [`is_plain_tx`], and
/// of the port's pool); stops at the first group that fails. Returns how many packets it placed
/// (a multiple of four) and their bytes. The descriptors and shadow slots of a failed group are rewritten by
/// whatever places those packets: the device reads nothing before TDT moves, and a shadow slot is live only once
/// `tail` passes it.
///
/// Kept out of line so that its loop has the registers to itself.
///
/// # Safety
/// `pkts` must hold `room` live packets owned by the caller's batch (ownership of those placed moves to the shadow
/// slots); `d` and `shadow` must be `room` free slots of the ring and its shadow array.
#[inline(never)]
unsafe fn tx_groups(
    pkts: *const NonNull<MbufHeader>,
    d: *mut TxDesc,
    shadow: *mut Option<NonNull<MbufHeader>>,
    room: usize,
    pool_id: PoolId,
) -> (usize, u64) {
    let mut k = 0;
    let mut bytes = 0;
    let end = room & !3;
    while k != end {
        let (mut other, mut flags, mut lens_m1, mut group_bytes) = (0usize, 0u64, 0u64, 0u64);
        for j in 0..4 {
            // SAFETY: k + j < room.
            let p = unsafe { *pkts.add(k + j) };
            // A borrowed view of a packet still owned by the batch (never dropped through this handle).
            // SAFETY: the batch owns a live packet here.
            let m = ManuallyDrop::new(unsafe { Mbuf::from_raw(p) });
            let len = m.data_len();
            other |= m.single_of(pool_id);
            flags |= m.ol_flags();
            lens_m1 |= tx_len_m1(len);
            group_bytes += len as u64;
            // SAFETY: k + j < room: a free slot (caller's contract), not read by the device before TDT moves; the
            // shadow slot becomes live (and the batch gives the packet up) only if the group passes.
            unsafe {
                write_tx_data(d.add(k + j), m.data_iova(), len);
                *shadow.add(k + j) = Some(p);
            }
        }
        if !is_plain_tx(other, flags, lens_m1) {
            break;
        }
        bytes += group_bytes;
        k += 4;
    }
    (k, bytes)
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

impl<R: RegisterSpace, F: Family> TxQueue for TxRing<R, F> {
    #[inline]
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        while self.nb_free < self.free_thresh && self.clean_one() {}
        let start_tail = self.tail;
        // SAFETY: tx_from takes ownership of exactly the first `n` chains it reports: queued ones move into the
        // shadow ring, bad ones are freed; it keeps nothing else. It also moves the counters.
        let taken = unsafe { batch.drain_raw(|pkts| self.tx_from(pkts)) };
        if self.tail != start_tail {
            dma_wmb();
            self.regs.space().write32(self.tdt, self.tail as u32);
        }
        taken
    }
}

impl<R: RegisterSpace, F: Family> Drop for TxRing<R, F> {
    fn drop(&mut self) {
        // Stop the device reading our buffers, then free whatever it had not confirmed.
        disable_queue(
            &self.regs,
            F::txdctl(self.queue),
            F::QUEUE_ENABLE,
            F::TXDCTL_DISABLE,
            self.config.enable_timeout,
        );
        let (from, live) = (self.clean, idx::dist(self.clean, self.tail, self.size));
        self.free_range(from, live, RS_FLAGS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::FakeRegs;
    use crate::IxgbeFamily;
    use mempool::PoolConfig;
    use pktio::dma::IdentityMapper;

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
            port: "test",
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
            unsafe { self.desc(i).read_volatile() }
        }
    }
}
