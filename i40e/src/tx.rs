//! The TX ring (docs/hw/i40e.md §9.2, §10.3, §11): packets from a batch placed as 16-byte data descriptors (the
//! common burst four at a time, anything else out of line; checksum offload in the data descriptor's command and
//! offset fields), RS on the packet that completes each group of `rs_thresh` descriptors, and the cleanup that
//! frees a group once its RS descriptor reads DTYPE 0xF. One QTX_TAIL write per burst, after a store fence.
//!
//! The limits that trip malicious-driver detection (docs/hw/i40e.md §11) are enforced before anything reaches the ring: packets of
//! at least 17 bytes, at most 8 data descriptors per packet, no empty buffer, at most 16383 bytes per buffer. A
//! packet that breaks them is dropped and counted as an error. No allocation, lock or dynamic call per packet.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hugepage::Allocator;
use mempool::{ol_flags, Mbuf, MbufHeader, Mempool, PacketBatch, PoolId};
use pktio::bar::RegisterSpace;
use pktio::barrier::dma_wmb;
use pktio::dma::{DmaMapper, DmaMapping};
use pktio::stats::TxQueueStats;
use pktio::{Error, Result, TxQueue};

use crate::desc::{tx, TxDesc};
use crate::dma::DmaArea;
use crate::hmc::{LanHmc, TxQueueContext, CTX_BASE_UNIT};
use crate::queue::switch_tx;
use crate::regs::{self, qtx_ctl, PollTimeout, Regs};
use crate::ring::{idx, RingConfig};

/// Offload flags the data descriptor carries (checksums, VLAN insertion) or that need a context descriptor (TSO).
const TX_OFFLOAD_FLAGS: u64 = ol_flags::TX_IP_CKSUM | ol_flags::TX_UDP_CKSUM | ol_flags::TX_VLAN | ol_flags::TX_TCP_SEG;
/// TSO limits (docs/hw/i40e.md §11, §15): the MSS range and the largest TSO frame.
const TSO_MSS_MIN: u16 = 256;
const TSO_MSS_MAX: u16 = 9674;
const TSO_MAX_LEN: u32 = 256 * 1024;
/// Bits of a length-minus-minimum at and above which a plain packet is not plain: with the pool's data room at
/// most [`tx::MAX_BUF`] (checked at creation), a single segment is at most that long, so only a length below
/// [`tx::MIN_PKT_LEN`] (which wraps) sets them.
const LEN_PLAIN_BITS: u32 = 14;

/// The test of a plain packet (one descriptor, no offload, a length the MDD rules allow). Every argument may be
/// an OR over several packets.
#[inline(always)]
fn is_plain_tx(not_single: usize, flags: u64, lens_m: u64) -> bool {
    not_single == 0 && flags & TX_OFFLOAD_FLAGS == 0 && lens_m >> LEN_PLAIN_BITS == 0
}

/// A data length minus the smallest packet, wrapping (see [`is_plain_tx`]).
#[inline(always)]
fn tx_len_m(len: u16) -> u64 {
    (len as u64).wrapping_sub(tx::MIN_PKT_LEN as u64)
}

/// In an `rs_fifo` entry: the group has slots without a packet.
const RS_HOLES: u32 = 1 << 31;
/// In an `rs_fifo` entry: the group may hold chains or packets of other pools.
const RS_CHECK: u32 = 1 << 30;
const RS_FLAGS: u32 = RS_HOLES | RS_CHECK;
const TX_L4_SHIFT: u32 = 52;
const TX_L4_MASK: u64 = 0b11;
const TX_L4_TCP: u64 = 1;
const TX_L4_UDP: u64 = 3;
/// L4LEN written for a checksum without TSO (docs/hw/i40e.md §10.3): the fixed header sizes DPDK uses, in 4-byte units.
const L4LEN_TCP: u64 = 5;
const L4LEN_UDP: u64 = 2;

/// The command and offset bits of a packet's data descriptors for its offloads (docs/hw/i40e.md §10.3).
#[inline]
fn tx_offload_bits(m: &Mbuf) -> u64 {
    let flags = m.ol_flags();
    let o = m.tx_offload();
    let mut v = tx::MACLEN.val(o.l2_len as u64 / 2);
    if flags & ol_flags::TX_IP_CKSUM != 0 {
        v |= tx::CMD_IIPT_IPV4_CSUM | tx::IPLEN.val(o.l3_len as u64 / 4);
    } else if flags & ol_flags::TX_IPV4 != 0 {
        v |= tx::CMD_IIPT_IPV4 | tx::IPLEN.val(o.l3_len as u64 / 4);
    } else if flags & ol_flags::TX_IPV6 != 0 {
        v |= tx::CMD_IIPT_IPV6 | tx::IPLEN.val(o.l3_len as u64 / 4);
    }
    if flags & ol_flags::TX_TCP_SEG != 0 {
        // TSO: the TCP header's real length (docs/hw/i40e.md §10.3).
        v |= tx::CMD_L4T_TCP | tx::L4LEN.val(o.l4_len as u64 / 4);
    } else {
        match (flags >> TX_L4_SHIFT) & TX_L4_MASK {
            TX_L4_TCP => v |= tx::CMD_L4T_TCP | tx::L4LEN.val(L4LEN_TCP),
            TX_L4_UDP => v |= tx::CMD_L4T_UDP | tx::L4LEN.val(L4LEN_UDP),
            _ => {}
        }
    }
    if flags & ol_flags::TX_VLAN != 0 {
        v |= tx::CMD_IL2TAG1 | tx::L2TAG1.val(m.vlan_tci() as u64);
    }
    v
}

/// One TX queue: its descriptor ring, the packets the device has not confirmed yet, and its counters.
pub struct TxRing<R: RegisterSpace> {
    ring: NonNull<TxDesc>,
    size: usize,
    /// Next slot to fill (= the tail).
    tail: usize,
    /// Oldest slot not yet cleaned.
    clean: usize,
    nb_free: usize,
    /// Descriptors written since the last RS.
    since_rs: usize,
    rs_thresh: usize,
    free_thresh: usize,
    /// Slots of the RS descriptors, oldest first, with [`RS_HOLES`] / [`RS_CHECK`].
    rs_fifo: Box<[u32]>,
    rs_head: usize,
    rs_len: usize,
    rs_flags: u32,
    /// The port's pool: groups of its single segments are freed without tests.
    pool: Mempool,
    pool_id: PoolId,
    /// The packet whose last descriptor is in this slot (live from `clean` up to `tail`).
    shadow: Box<[Option<NonNull<MbufHeader>>]>,
    regs: Regs<R>,
    tail_reg: usize,
    queue: u16,
    abs_queue: u32,
    stats: Arc<TxQueueStats>,
    config: RingConfig,
    // Dropped after `Drop::drop` disabled the queue.
    _mem: DmaArea,
    _pool_map: DmaMapping,
}

// SAFETY: as for RxRing: the ring owns its memory and the packets in `shadow`; one owner thread at a time.
unsafe impl<R: RegisterSpace> Send for TxRing<R> {}

/// What a TX ring needs from its port.
pub struct TxSetup<'a, R> {
    /// Register access.
    pub regs: &'a Regs<R>,
    /// Ring memory.
    pub allocator: &'a Allocator,
    /// DMA map of the device.
    pub mapper: &'a Arc<dyn DmaMapper>,
    /// The HMC its context goes into.
    pub hmc: &'a LanHmc,
    /// The port's pool (mapped for the ring's life).
    pub pool: &'a Mempool,
    /// PF queue number.
    pub queue: u16,
    /// Absolute queue number (for GLLAN_TXPRE_QDIS).
    pub abs_queue: u32,
    /// The PF's number (QTX_CTL.PF_INDX).
    pub pf_id: u8,
    /// The main VSI's queue-set handle of TC 0 (the context's rdylist).
    pub qs_handle: u16,
    /// Counters.
    pub stats: Arc<TxQueueStats>,
    /// Port name for errors.
    pub port: &'a str,
}

impl<R: RegisterSpace> TxRing<R> {
    /// Allocates the ring, writes its TX context and QTX_CTL (docs/hw/i40e.md §9.2), queue disabled.
    pub fn new(setup: TxSetup<'_, R>, config: RingConfig) -> Result<Self> {
        let size = config.size as usize;
        let bad = |reason: String| Error::InvalidConfig { port: setup.port.to_string(), reason };
        RingConfig::check_size(config.size).map_err(bad)?;
        let (rs, free) = (config.rs_thresh as usize, config.free_thresh as usize);
        if rs == 0 || !size.is_multiple_of(rs) || rs > free || rs + free > size || rs + 2 >= size || free + 3 >= size {
            return Err(bad(format!(
                "TX thresholds rs={rs} free={free} for a ring of {size}: need rs dividing N, rs <= free, rs + free <= \
                 N, rs < N - 2, free < N - 3 (docs/hw/i40e.md §11)"
            )));
        }
        if setup.pool.data_room() > tx::MAX_BUF {
            return Err(bad(format!(
                "mempool {} has a {}-byte data room; one TX descriptor carries at most {} bytes",
                setup.pool.name(),
                setup.pool.data_room(),
                tx::MAX_BUF
            )));
        }
        let pool_map = setup.mapper.map(setup.pool.memory())?;
        let mem = DmaArea::new(setup.allocator, setup.mapper, size * size_of::<TxDesc>(), setup.port, "a TX ring")?;
        let ring = NonNull::new(mem.as_ptr().cast::<TxDesc>()).ok_or_else(|| bad("null ring".into()))?;
        let q = setup.queue;
        let regs = setup.regs.clone();
        switch_tx(&regs, q, setup.abs_queue, false, &config.timing).map_err(|t| {
            crate::error::timeout(format!("TX queue {q} disable"), "QTX_ENA", t.last, config.timing.switch)
                .at(setup.port)
        })?;
        // DPDK marks every slot done for its own bookkeeping (docs/hw/i40e.md §9.2 step 1).
        for i in 0..size {
            // SAFETY: i < size: the ring memory, not read by the device while the queue is disabled.
            unsafe { ring.as_ptr().add(i).write_volatile(TxDesc { qw0: 0, qw1: tx::DTYPE_DONE }) };
        }
        setup.hmc.write_tx(
            q,
            &TxQueueContext {
                new_context: true,
                base: mem.iova(0) / CTX_BASE_UNIT,
                qlen: config.size,
                rdylist: setup.qs_handle,
                ..Default::default()
            },
        );
        regs.write(regs::qint_tqctl(q), 0);
        regs.write(
            regs::qtx_ctl(q),
            qtx_ctl::PFVF_Q.val(qtx_ctl::PFVF_Q_PF) | qtx_ctl::PF_INDX.val(setup.pf_id as u32),
        );
        let _ = regs.read(regs::GLGEN_RSTAT);
        regs.write(regs::qtx_tail(q), 0);
        Ok(TxRing {
            ring,
            size,
            tail: 0,
            clean: 0,
            nb_free: size - 1,
            since_rs: 0,
            rs_thresh: rs,
            free_thresh: free,
            rs_fifo: vec![0; size].into_boxed_slice(),
            rs_head: 0,
            rs_len: 0,
            rs_flags: 0,
            pool: setup.pool.clone(),
            pool_id: setup.pool.id(),
            shadow: vec![None; size].into_boxed_slice(),
            tail_reg: regs::qtx_tail(q).0,
            regs,
            queue: q,
            abs_queue: setup.abs_queue,
            stats: setup.stats,
            config,
            _mem: mem,
            _pool_map: pool_map,
        })
    }

    /// Enables the queue (docs/hw/i40e.md §9.4).
    pub fn enable(&mut self) -> std::result::Result<(), PollTimeout> {
        switch_tx(&self.regs, self.queue, self.abs_queue, true, &self.config.timing)
    }

    /// PF queue number.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// IOVA of the ring (for tests playing the device).
    pub fn ring_iova(&self) -> u64 {
        self._mem.iova(0)
    }

    /// Free descriptor slots.
    pub fn free_slots(&self) -> usize {
        self.nb_free
    }

    #[inline(always)]
    fn desc(&self, i: usize) -> *mut TxDesc {
        // SAFETY: callers pass i < size.
        unsafe { self.ring.as_ptr().add(i) }
    }

    /// Frees the packets whose last descriptor lies in `from..from+count` (mod size), in bulk.
    #[inline]
    fn free_range(&mut self, from: usize, count: usize, flags: u32) {
        let size = self.size;
        let first = count.min(size - from);
        if flags & RS_HOLES == 0 {
            for (at, n) in [(from, first), (0, count - first)] {
                // SAFETY: at + n <= size.
                let slots = unsafe { self.shadow.get_unchecked(at..at + n) };
                debug_assert!(slots.iter().all(Option::is_some));
                // SAFETY: a live, hole-free range: every entry is `Some` (laid out as the NonNull). Without
                // RS_CHECK every packet was a single segment of `pool` when tx_burst took it. Each is freed once:
                // the caller moves `clean` past the range.
                unsafe {
                    let hdrs = std::slice::from_raw_parts(slots.as_ptr().cast(), n);
                    if flags == 0 {
                        self.pool.free_single_bulk(hdrs);
                    } else {
                        mempool::free_raw_bulk(hdrs);
                    }
                }
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
                    // SAFETY: owned by their slots, which the caller retires: freed once.
                    unsafe { mempool::free_raw_bulk(&gather) };
                    n = 0;
                }
            }
        }
        // SAFETY: as above.
        unsafe { mempool::free_raw_bulk(&gather[..n]) };
    }

    /// Reclaims the oldest group if the device wrote its RS descriptor back. Returns true if it did.
    #[inline]
    fn clean_one(&mut self) -> bool {
        if self.rs_len == 0 {
            return false;
        }
        // SAFETY: rs_head < size.
        let entry = *unsafe { self.rs_fifo.get_unchecked(self.rs_head) };
        let rs = (entry & !RS_FLAGS) as usize;
        // SAFETY: rs < size; an acquire load of a qword the device may be writing.
        let qw1 = unsafe { AtomicU64::from_ptr(std::ptr::addr_of_mut!((*self.desc(rs)).qw1)).load(Ordering::Acquire) };
        if !TxDesc::done(qw1) {
            return false;
        }
        let clean = self.clean;
        if entry & RS_FLAGS == 0 && clean <= rs {
            let count = rs + 1 - clean;
            // SAFETY: clean <= rs < size; a live, hole-free group of single segments of `pool` (see free_range).
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

    /// Writes a descriptor that ends no packet (its shadow slot becomes a hole).
    #[inline(always)]
    fn put(&mut self, d: TxDesc) {
        // SAFETY: tail < size; the slot is free, so the device does not read it.
        unsafe {
            self.desc(self.tail).write_volatile(d);
            *self.shadow.get_unchecked_mut(self.tail) = None;
        }
        self.tail = idx::add(self.tail, 1, self.size);
    }

    #[inline(always)]
    fn push_rs(&mut self, slot: usize) {
        let at = idx::add(self.rs_head, self.rs_len, self.size);
        let flags = std::mem::take(&mut self.rs_flags);
        // SAFETY: at < size; at most one RS per descriptor.
        unsafe { *self.rs_fifo.get_unchecked_mut(at) = slot as u32 | flags };
        self.rs_len += 1;
    }

    /// Queues one packet that is not plain (offloads, chains); false when it does not fit now. Packets that break
    /// the MDD rules are consumed and counted as errors (`Err`).
    #[inline(never)]
    fn queue_packet(&mut self, m: &Mbuf, p: NonNull<MbufHeader>) -> std::result::Result<bool, ()> {
        let flags = m.ol_flags();
        let segs = m.nb_segs() as usize;
        if segs == 0 || segs > tx::MAX_DATA_PER_PKT || m.pkt_len() < tx::MIN_PKT_LEN as u32 {
            return Err(());
        }
        if m.segments().any(|s| s.data.is_empty() || s.data.len() > tx::MAX_BUF as usize) {
            return Err(());
        }
        // TSO: a context descriptor before the data (docs/hw/i40e.md §10.4). With at most 8 data descriptors in the whole packet,
        // no segment the NIC cuts can span more than 8 (the MDD rule), whatever the MSS.
        let tso = if flags & ol_flags::TX_TCP_SEG != 0 {
            let o = m.tx_offload();
            let hdr = o.l2_len as u32 + o.l3_len as u32 + o.l4_len as u32;
            let len = m.pkt_len();
            if !(TSO_MSS_MIN..=TSO_MSS_MAX).contains(&o.tso_segsz) || len > TSO_MAX_LEN || len <= hdr || o.l4_len < 20 {
                return Err(());
            }
            Some(TxDesc::tso_context(len - hdr, o.tso_segsz))
        } else {
            None
        };
        let need = segs + tso.is_some() as usize;
        if need > self.nb_free {
            return Ok(false);
        }
        let bits = if flags & TX_OFFLOAD_FLAGS != 0 { tx_offload_bits(m) } else { 0 };
        if let Some(ctx) = tso {
            self.put(ctx);
        }
        self.since_rs += need;
        let rs = self.since_rs >= self.rs_thresh;
        let mut last = self.tail;
        for (k, s) in m.segments().enumerate() {
            let eop = k + 1 == segs;
            last = self.tail;
            let mut cmd = bits;
            if eop {
                cmd |= tx::CMD_EOP;
                if rs {
                    cmd |= tx::CMD_RS;
                }
            }
            self.put(TxDesc::data(s.iova, s.data.len() as u16, cmd));
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

    /// Places packets from the front of `pkts` and returns how many it took ownership of (sent or dropped as
    /// bad). The common burst (it fits before the ring's end, the next RS point and the free room) is one call of
    /// [`tx_groups`]; the rest continues out of line.
    #[inline(always)]
    fn tx_from(&mut self, pkts: &[NonNull<MbufHeader>]) -> usize {
        let len = pkts.len();
        let tail = self.tail;
        let (mut n, mut bytes) = (0, 0);
        if len <= (self.rs_thresh - self.since_rs).min(self.nb_free).min(self.size - tail) {
            // SAFETY: len <= size - tail and len <= nb_free: free slots.
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

    /// Hands on the `k` descriptors written from slot `tail` (within the current RS group): RS on the last when
    /// the group is complete, then `tail` and the free count move.
    #[inline(always)]
    fn advance(&mut self, tail: usize, k: usize) {
        let last = tail + k - 1;
        self.since_rs += k;
        if self.since_rs == self.rs_thresh {
            // SAFETY: last < size, written by the caller and not yet handed over.
            unsafe {
                let c = std::ptr::addr_of_mut!((*self.ring.as_ptr().add(last)).qw1);
                c.write_volatile(c.read_volatile() | tx::CMD_RS);
            }
            self.push_rs(last);
            self.since_rs = 0;
        }
        self.tail = if tail + k == self.size { 0 } else { tail + k };
        self.nb_free -= k;
    }

    /// The rest of [`TxRing::tx_from`] from packet `n`.
    #[inline(never)]
    fn tx_from_general(&mut self, pkts: &[NonNull<MbufHeader>], n: usize, bytes: u64) -> usize {
        let ring = self.ring.as_ptr();
        let size = self.size;
        let rs_thresh = self.rs_thresh;
        let pool_id = self.pool_id;
        let (mut bytes, mut errors, mut sent) = (bytes, 0u64, n as u64);
        let mut n = n;
        while n < pkts.len() {
            let tail = self.tail;
            let room = (rs_thresh - self.since_rs).min(self.nb_free).min(size - tail).min(pkts.len() - n);
            let shadow = self.shadow.as_mut_ptr();
            // SAFETY: n + room <= pkts.len(); tail + room <= size and those slots are free.
            let (mut k, group_bytes) =
                unsafe { tx_groups(pkts.as_ptr().add(n), ring.add(tail), shadow.add(tail), room, pool_id) };
            bytes += group_bytes;
            let mut other = 0;
            while k < room {
                // SAFETY: n + k < pkts.len().
                let p = unsafe { *pkts.get_unchecked(n + k) };
                // SAFETY: a borrowed view of a live packet still owned by the batch.
                let m = ManuallyDrop::new(unsafe { Mbuf::from_raw(p) });
                let len = m.data_len();
                if !is_plain_tx((m.nb_segs() != 1) as usize, m.ol_flags(), tx_len_m(len)) {
                    break;
                }
                other |= m.single_of(pool_id);
                // SAFETY: tail + k < size, a free slot not read before the tail moves; the packet moves into the
                // shadow slot.
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
                    if room == 0 && !self.clean_one() {
                        break;
                    }
                    continue;
                }
            }
            if n == pkts.len() {
                break;
            }
            // SAFETY: n < pkts.len(); a borrowed view as above.
            let p = unsafe { *pkts.get_unchecked(n) };
            // SAFETY: as above.
            let m = ManuallyDrop::new(unsafe { Mbuf::from_raw(p) });
            let mut r = self.queue_packet(&m, p);
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

/// Writes the data descriptors and shadow slots of up to `room` plain packets, four at a time, each group tested
/// after it was written; stops at the first group that fails. Returns how many it placed (a multiple of four) and
/// their bytes. A failed group's slots are rewritten by whatever places those packets (nothing is handed over
/// before the tail moves).
///
/// # Safety
/// `pkts` must hold `room` live packets owned by the caller's batch; `d` and `shadow` `room` free slots.
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
        let (mut other, mut flags, mut lens_m, mut group_bytes) = (0usize, 0u64, 0u64, 0u64);
        for j in 0..4 {
            // SAFETY: k + j < room.
            let p = unsafe { *pkts.add(k + j) };
            // SAFETY: a borrowed view of a live packet owned by the batch.
            let m = ManuallyDrop::new(unsafe { Mbuf::from_raw(p) });
            let len = m.data_len();
            other |= m.single_of(pool_id);
            flags |= m.ol_flags();
            lens_m |= tx_len_m(len);
            group_bytes += len as u64;
            // SAFETY: k + j < room: a free slot; the shadow slot becomes live only if the group passes.
            unsafe {
                write_tx_data(d.add(k + j), m.data_iova(), len);
                *shadow.add(k + j) = Some(p);
            }
        }
        if !is_plain_tx(other, flags, lens_m) {
            break;
        }
        bytes += group_bytes;
        k += 4;
    }
    (k, bytes)
}

/// Writes a plain packet's data descriptor: the address, then ICRC | EOP and the length.
///
/// # Safety
/// `d` must be a free slot of the ring.
#[inline(always)]
unsafe fn write_tx_data(d: *mut TxDesc, iova: u64, len: u16) {
    // SAFETY: the caller's contract.
    unsafe {
        std::ptr::addr_of_mut!((*d).qw0).write_volatile(iova);
        // qword 1 as its two little-endian dwords: the command in the low one, the length (BUF_SZ starts in the
        // high one) in the other, one instruction fewer than building the qword. The length is not masked: a
        // packet placed here is checked plain (at most the pool's data room, itself at most 14 bits) before its
        // descriptor is handed over, or rewritten by the general path.
        const LO: u32 = tx::PLAIN as u32;
        const _: () = assert!(tx::PLAIN >> 32 == 0 && tx::BUF_SZ.lo >= 32);
        let qw1 = std::ptr::addr_of_mut!((*d).qw1).cast::<u32>();
        qw1.write_volatile(LO);
        qw1.add(1).write_volatile((len as u32) << (tx::BUF_SZ.lo - 32));
    }
}

impl<R: RegisterSpace> TxQueue for TxRing<R> {
    #[inline]
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        while self.nb_free < self.free_thresh && self.clean_one() {}
        let start_tail = self.tail;
        // SAFETY: tx_from takes ownership of exactly the first `n` packets it reports.
        let taken = unsafe { batch.drain_raw(|pkts| self.tx_from(pkts)) };
        if self.tail != start_tail {
            dma_wmb();
            self.regs.space().write32(self.tail_reg, self.tail as u32);
        }
        taken
    }
}

impl<R: RegisterSpace> Drop for TxRing<R> {
    fn drop(&mut self) {
        // Stop the device reading our buffers, then free whatever it had not confirmed.
        let _ = switch_tx(&self.regs, self.queue, self.abs_queue, false, &self.config.timing);
        let (from, live) = (self.clean, idx::dist(self.clean, self.tail, self.size));
        self.free_range(from, live, RS_FLAGS);
    }
}
