//! The TX ring core: which packet owns which slot, where the tail and the next RS point are, the fast placement
//! of plain packets and the cleanup of completed RS groups. The descriptor memory, its registers and everything
//! a packet with offloads needs stay in the driver.
//!
//! A plain packet (one segment, no offload, a length the device takes; [`TxDescriptor::is_plain`]) is written
//! as one data descriptor without per-packet ring-wrap or RS checks: packets go in runs that end at the ring's
//! end, at the next RS point, or when room runs out, and RS is set on the run's last descriptor when its group is
//! complete. Within a run, [`tx_groups`] writes four packets and then tests them together; a group that fails is
//! redone one packet at a time (its descriptors are not handed over before the tail moves, and its shadow slots
//! are not live until `tail` passes them). Anything else goes through the driver's `queue_packet`, which places
//! descriptors with [`TxCore::put`] and ends the packet with [`TxCore::finish`].
//!
//! Which packets count as plain depends on the queue's [`TxPath`], chosen from its configuration: on the full path
//! a packet with an offload flag is not plain; on the plain path (a queue configured with no TX offload, as DPDK's
//! "simple" TX) the flags are never read, and a packet is plain when it is a single segment of the port's pool
//! with a length the device takes. Both tests matter for memory safety and the device, not for the offloads, so
//! the plain path keeps them: a chain, a packet of another pool or a bad length still goes through
//! `queue_packet` (which then applies what its flags ask). The burst is monomorphised per path.
//!
//! Cleanup checks the done bit of the oldest RS descriptor only when fewer than `free_thresh` slots are free,
//! one group at a time (so a forwarding loop frees about what it receives per burst and buffers cycle through
//! the lcore cache), and frees a group of single segments of the port's pool with one bulk put and no test per
//! buffer (DPDK's fast free); groups with holes or other packets go through `mempool::free_raw_bulk`.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::Arc;

use mempool::{Mbuf, MbufHeader, Mempool, PacketBatch, PoolId};

#[cfg(test)]
#[path = "tx_tests.rs"]
mod tests;

use crate::idx;
use crate::watchdog::{TxRestart, TxWatchdog};
use drvkit::barrier::dma_wmb;
use pktio::offload;
use pktio::stats::TxQueueStats;

/// In an RS record: the group ending at this RS has slots without a packet (context descriptors, segments
/// before a chain's last).
pub const RS_HOLES: u32 = 1 << 31;
/// In an RS record: the group may hold chains or packets of other pools than the port's (freed with a test per
/// packet; without this bit a hole-free group goes back to the port's pool in one put).
pub const RS_CHECK: u32 = 1 << 30;
const RS_FLAGS: u32 = RS_HOLES | RS_CHECK;

/// Which TX burst a queue runs, chosen once from its configuration (as DPDK picks a TX burst function per queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TxPath {
    /// Offload flags are honoured: a packet with one takes the driver's general path.
    #[default]
    Full,
    /// The queue asked for no TX offload (but fast free): offload flags are ignored, as DPDK's simple TX does;
    /// the pool, chain and length tests stay.
    Plain,
}

impl TxPath {
    /// The path for a queue configured with `tx_offloads` ([`pktio::offload`] bits): plain when nothing but
    /// [`offload::TX_MBUF_FAST_FREE`] is asked (DPDK's condition for ixgbe's simple and i40e's vector TX; fast
    /// free is what the cores do anyway for groups of the port's pool).
    pub const fn for_offloads(tx_offloads: u64) -> TxPath {
        if tx_offloads & !offload::TX_MBUF_FAST_FREE == 0 {
            TxPath::Plain
        } else {
            TxPath::Full
        }
    }

    /// A short name for burst-mode reports.
    pub const fn name(self) -> &'static str {
        match self {
            TxPath::Full => "Scalar (plain packets by 4, offloads one by one)",
            TxPath::Plain => "Scalar plain (no offloads, by 4)",
        }
    }
}

/// What the core needs from a driver's TX descriptor. Every function is called on the hot path and should be
/// `#[inline(always)]`; the core is monomorphised over the implementing type.
pub trait TxDescriptor: Copy {
    /// A packet, or an OR over several, is plain: `not_single` is the OR of [`Mbuf::single_of`] (non-zero for a
    /// chain or a packet of another pool), `flags` of the offload flags, `len_keys` of [`TxDescriptor::len_key`].
    fn is_plain(not_single: usize, flags: u64, len_keys: u64) -> bool;

    /// A data length in the form [`TxDescriptor::is_plain`] tests (typically the length minus the smallest one
    /// the device takes, wrapping, so that an OR tells any too-short length by its high bits).
    fn len_key(len: u16) -> u64;

    /// Writes the data descriptor of a plain packet (one buffer, end of packet, no offload, no RS).
    ///
    /// # Safety
    /// `d` must be a free slot of the ring (the device does not read it until the tail passes it).
    unsafe fn write_plain(d: *mut Self, iova: u64, len: u16);

    /// Sets the report-status bit of a descriptor written and not yet handed over.
    ///
    /// # Safety
    /// `d` must be a slot of the ring written by the driver and not yet handed over.
    unsafe fn set_rs(d: *mut Self);

    /// The device has written back this RS descriptor (an acquire load: what follows may free its buffers).
    ///
    /// # Safety
    /// `d` must be a slot of the ring.
    unsafe fn done(d: *mut Self) -> bool;
}

/// A TX ring's software state: the descriptor ring pointer, the packets the device has not confirmed yet, the
/// tail, and the RS groups. Owned by the driver's TX queue, which must stop the device reading the ring before
/// this drops (dropping frees every packet still on the ring).
pub struct TxCore<D: TxDescriptor> {
    ring: NonNull<D>,
    size: usize,
    /// Next slot to fill (= the tail register).
    tail: usize,
    /// Oldest slot not yet cleaned.
    clean: usize,
    nb_free: usize,
    /// Descriptors written since the last RS.
    since_rs: usize,
    rs_thresh: usize,
    free_thresh: usize,
    /// Slots of the descriptors that carry RS, oldest first, with [`RS_HOLES`] / [`RS_CHECK`].
    rs_fifo: Box<[u32]>,
    rs_head: usize,
    rs_len: usize,
    /// The RS flags of the group since the last RS.
    rs_flags: u32,
    /// The port's pool: groups of its single segments are freed without tests.
    pool: Mempool,
    pool_id: PoolId,
    /// The packet (chain head) whose last descriptor is in this slot. Only the slots from `clean` up to `tail`
    /// are live (each written when its descriptor was, `None` where no packet ends); the others are stale.
    shadow: Box<[Option<NonNull<MbufHeader>>]>,
    /// The queue's counters (moved by the burst).
    stats: Arc<TxQueueStats>,
    /// The hang watchdog and how to restart the queue, looked at only when a burst found the ring full
    /// ([`TxCore::check_hang`]).
    watchdog: Option<(TxWatchdog, Box<dyn TxRestart>)>,
    /// Restarts so far: a driver that keeps device state per ring (a context slot) notes it with this.
    generation: u32,
    /// The burst this ring runs.
    path: TxPath,
}

// SAFETY: the core owns the packets in `shadow`; `ring` points into memory its owner keeps alive and uses from
// one thread at a time. Moving the core moves all of it.
unsafe impl<D: TxDescriptor> Send for TxCore<D> {}

impl<D: TxDescriptor> TxCore<D> {
    /// The state of an empty ring of `size` descriptors at `ring` (tail 0, `size - 1` free), counting into
    /// `stats`.
    ///
    /// # Safety
    /// `ring` must point to `size` descriptors the caller keeps alive, unaliased, for the core's life; the caller
    /// checks the thresholds (`0 < rs_thresh`, `free_thresh < size`) as its hardware wants them.
    pub unsafe fn new(
        ring: NonNull<D>,
        size: usize,
        rs_thresh: usize,
        free_thresh: usize,
        pool: &Mempool,
        stats: Arc<TxQueueStats>,
    ) -> Self {
        TxCore {
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
            pool: pool.clone(),
            pool_id: pool.id(),
            shadow: vec![None; size].into_boxed_slice(),
            stats,
            watchdog: None,
            generation: 0,
            path: TxPath::Full,
        }
    }

    /// Runs the `path` burst from now on (the driver's TX setup passes [`TxPath::for_offloads`] of the queue's
    /// configuration). A new core runs [`TxPath::Full`].
    pub fn set_path(&mut self, path: TxPath) {
        self.path = path;
    }

    /// The burst this ring runs.
    pub fn path(&self) -> TxPath {
        self.path
    }

    /// The burst paths a port with this ring as its queue 0 runs (RX as [`crate::burst_mode`]).
    pub fn burst_mode(&self) -> pktio::BurstMode {
        crate::burst_mode_for(self.path)
    }

    /// Watches this ring for hangs with `w`, restarting it through `restart` when it is hung (see
    /// [`TxCore::check_hang`]).
    pub fn set_watchdog(&mut self, w: TxWatchdog, restart: Box<dyn TxRestart>) {
        self.watchdog = Some((w, restart));
    }

    /// Queue restarts so far (it changes when [`TxCore::reset`] ran).
    #[inline(always)]
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The slow-path hang check, run when a burst could not place everything (the ring full after cleanup): the
    /// device's head (read through the driver's [`TxRestart::head`]) is the completion point, the slots from it to
    /// the tail are outstanding. A queue found hung, here or by the port's control plane (the stall reported and
    /// the head still where it stood), is restarted: stopped, emptied ([`TxCore::reset`]) and started again.
    /// Returns whether it was.
    #[cold]
    #[inline(never)]
    pub fn check_hang(&mut self) -> bool {
        let Some((w, mut restart)) = self.watchdog.take() else { return false };
        let head = restart.head();
        let hung = w.look(head, self.tail, self.size).is_some() || w.reported_at() == Some(head);
        if hung {
            restart.stop();
            self.reset_with(Some(&w));
            restart.start();
        }
        self.watchdog = Some((w, restart));
        hung
    }

    /// Empties the ring for a queue restart: frees every packet on it (counted as errors of the queue, and as the
    /// watchdog's drops) and starts again at slot 0. Returns how many packets it dropped. The caller must have
    /// stopped the device reading the ring, and resets the device's head and tail to 0 before enabling it again.
    #[cold]
    pub fn reset(&mut self) -> usize {
        let w = self.watchdog.take();
        let dropped = self.reset_with(w.as_ref().map(|(w, _)| w));
        self.watchdog = w;
        dropped
    }

    fn reset_with(&mut self, w: Option<&TxWatchdog>) -> usize {
        let dropped = self.in_flight();
        let (from, live) = (self.clean, idx::dist(self.clean, self.tail, self.size));
        self.free_range(from, live, RS_FLAGS);
        self.tail = 0;
        self.clean = 0;
        self.nb_free = self.size - 1;
        self.since_rs = 0;
        self.rs_head = 0;
        self.rs_len = 0;
        self.rs_flags = 0;
        self.generation = self.generation.wrapping_add(1);
        self.stats.errors.add(dropped as u64);
        if let Some(w) = w {
            w.reset();
            w.state().dropped.add(dropped as u64);
            w.state().restarts.add(1);
        }
        dropped
    }

    /// Free descriptor slots.
    #[inline(always)]
    pub fn free_slots(&self) -> usize {
        self.nb_free
    }

    /// The next slot to fill.
    #[inline(always)]
    pub fn tail(&self) -> usize {
        self.tail
    }

    /// The port's pool.
    #[inline(always)]
    pub fn pool_id(&self) -> PoolId {
        self.pool_id
    }

    /// The descriptor ring (for the driver's own reads, e.g. in tests).
    #[inline(always)]
    pub fn ring(&self) -> NonNull<D> {
        self.ring
    }

    /// Packets handed to the device and not yet confirmed sent.
    pub fn in_flight(&self) -> usize {
        let live = idx::dist(self.clean, self.tail, self.size);
        (0..live).filter(|&k| self.shadow[idx::add(self.clean, k, self.size)].is_some()).count()
    }

    /// Whether a packet of `need` descriptors placed now completes an RS group (its last descriptor carries RS).
    #[inline(always)]
    pub fn rs_due(&self, need: usize) -> bool {
        self.since_rs + need >= self.rs_thresh
    }

    #[inline(always)]
    fn desc(&self, i: usize) -> *mut D {
        // SAFETY: callers pass i < size.
        unsafe { self.ring.as_ptr().add(i) }
    }

    /// Writes a descriptor at the tail that ends no packet yet (its shadow slot becomes a hole); returns its slot.
    /// The caller checked [`TxCore::free_slots`] and ends the packet with [`TxCore::finish`].
    #[inline(always)]
    pub fn put(&mut self, d: D) -> usize {
        let slot = self.tail;
        // SAFETY: tail < size; the slot is free (counted in nb_free), so the device does not read it.
        unsafe {
            self.desc(slot).write_volatile(d);
            *self.shadow.get_unchecked_mut(slot) = None;
        }
        self.tail = idx::add(slot, 1, self.size);
        slot
    }

    /// Ends a packet of `need` descriptors written with [`TxCore::put`], the last in `last`: the slot takes
    /// ownership of `p`, `flags` ([`RS_HOLES`], [`RS_CHECK`]) join the group's, and when `rs` (from
    /// [`TxCore::rs_due`], set in the last descriptor by the caller) the group is recorded for cleanup.
    #[inline(always)]
    pub fn finish(&mut self, last: usize, p: NonNull<MbufHeader>, need: usize, rs: bool, flags: u32) {
        self.rs_flags |= flags;
        if rs {
            self.push_rs(last);
            self.since_rs = 0;
        } else {
            self.since_rs += need;
        }
        self.nb_free -= need;
        // SAFETY: last < size; it was free and now holds the packet's last descriptor.
        unsafe { *self.shadow.get_unchecked_mut(last) = Some(p) };
    }

    /// Notes the RS descriptor in `slot` for cleanup, with the group's flags.
    #[inline(always)]
    fn push_rs(&mut self, slot: usize) {
        let at = idx::add(self.rs_head, self.rs_len, self.size);
        let flags = std::mem::take(&mut self.rs_flags);
        // SAFETY: at < size; at most one RS per descriptor, so the fifo never holds more than `size`.
        unsafe { *self.rs_fifo.get_unchecked_mut(at) = slot as u32 | flags };
        self.rs_len += 1;
    }

    /// Frees the packets whose last descriptor lies in `from..from+count` (mod size), in bulk. Without
    /// [`RS_HOLES`] every slot there holds a packet and the shadow ring itself is handed to the mempool (no copy);
    /// otherwise the packets are gathered first.
    #[inline]
    fn free_range(&mut self, from: usize, count: usize, flags: u32) {
        let size = self.size;
        let first = count.min(size - from);
        if flags & RS_HOLES == 0 {
            for (at, n) in [(from, first), (0, count - first)] {
                // SAFETY: at + n <= size.
                let slots = unsafe { self.shadow.get_unchecked(at..at + n) };
                debug_assert!(slots.iter().all(Option::is_some));
                // SAFETY: the range is live and without holes, so every entry is `Some` (laid out as the
                // NonNull). Without RS_CHECK every packet was a single segment of `pool` when the burst took it
                // (Mbuf::single_of), unchanged since. Each is freed once: the caller moves `clean` past the range.
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
                    // SAFETY: owned by their slots, which the caller retires (moves `clean` past): freed once.
                    unsafe { mempool::free_raw_bulk(&gather) };
                    n = 0;
                }
            }
        }
        // SAFETY: as above.
        unsafe { mempool::free_raw_bulk(&gather[..n]) };
    }

    /// Reclaims the oldest group if the device has written its RS descriptor back. Returns true if it did.
    #[inline]
    pub fn clean_one(&mut self) -> bool {
        if self.rs_len == 0 {
            return false;
        }
        // SAFETY: rs_head < size.
        let entry = *unsafe { self.rs_fifo.get_unchecked(self.rs_head) };
        let rs = (entry & !RS_FLAGS) as usize;
        // SAFETY: rs < size.
        if !unsafe { D::done(self.desc(rs)) } {
            return false;
        }
        let clean = self.clean;
        if entry & RS_FLAGS == 0 && clean <= rs {
            // The common group: single segments of `pool` in every slot, not wrapping.
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

    /// One TX burst on the ring's [`TxPath`]: cleanup when free slots run short, then the packets placed from the
    /// front of `batch` (plain ones in runs, others through `queue_packet`). Returns how many packets the ring took (sent, or
    /// dropped as bad; the counters move here) and, when the tail moved, its new value, for the caller to write to
    /// the tail register (the store fence is done).
    ///
    /// `queue_packet` places one packet that is not plain: `Ok(true)` placed, `Ok(false)` no room now (the core
    /// cleans a group and retries), `Err(())` a packet the device must not see (the core frees it and counts an
    /// error).
    #[inline(always)]
    pub fn tx_burst<Q>(&mut self, batch: &mut PacketBatch, queue_packet: Q) -> (usize, Option<u32>)
    where
        Q: FnMut(&mut Self, &Mbuf, NonNull<MbufHeader>) -> Result<bool, ()>,
    {
        while self.nb_free < self.free_thresh && self.clean_one() {}
        let start_tail = self.tail;
        // SAFETY: tx_from takes ownership of exactly the first `n` chains it reports: queued ones move into the
        // shadow ring, bad ones are freed; it keeps nothing else.
        let taken = unsafe {
            match self.path {
                TxPath::Full => batch.drain_raw(|pkts| self.tx_from::<false, Q>(pkts, queue_packet)),
                TxPath::Plain => batch.drain_raw(|pkts| self.tx_from::<true, Q>(pkts, queue_packet)),
            }
        };
        if self.tail == start_tail {
            return (taken, None);
        }
        dma_wmb();
        (taken, Some(self.tail as u32))
    }

    /// Places packets from the front of `pkts` (owned by the caller's batch) and returns how many it took
    /// ownership of. The common burst (it fits before the ring's end, the next RS point and the free room) is one
    /// call of [`tx_groups`]; whatever that leaves continues out of line in [`TxCore::tx_from_general`]. `PLAIN`:
    /// the [`TxPath::Plain`] burst (offload flags not read).
    #[inline(always)]
    fn tx_from<const PLAIN: bool, Q>(&mut self, pkts: &[NonNull<MbufHeader>], queue_packet: Q) -> usize
    where
        Q: FnMut(&mut Self, &Mbuf, NonNull<MbufHeader>) -> Result<bool, ()>,
    {
        let len = pkts.len();
        let tail = self.tail;
        let (mut n, mut bytes) = (0, 0);
        if len <= (self.rs_thresh - self.since_rs).min(self.nb_free).min(self.size - tail) {
            // SAFETY: len <= size - tail and len <= nb_free: free slots of the ring and the shadow array.
            let (k, b) = unsafe {
                tx_groups::<D, PLAIN>(
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
        self.tx_from_general::<PLAIN, Q>(pkts, n, bytes, queue_packet)
    }

    /// Hands on the `k` descriptors written from slot `tail` (`tail + k <= size`, within the current RS group):
    /// RS on the last when the group is complete, then `tail` and the free count move.
    #[inline(always)]
    fn advance(&mut self, tail: usize, k: usize) {
        let last = tail + k - 1;
        self.since_rs += k;
        if self.since_rs == self.rs_thresh {
            // SAFETY: last < size, written by the caller and not yet handed over.
            unsafe { D::set_rs(self.ring.as_ptr().add(last)) };
            self.push_rs(last);
            self.since_rs = 0;
        }
        self.tail = if tail + k == self.size { 0 } else { tail + k };
        self.nb_free -= k;
    }

    /// The rest of [`TxCore::tx_from`] from packet `n` (those before it placed, with `bytes`): runs bounded by
    /// the ring's end, the RS point and the free room, packets one at a time, the driver's general path.
    #[inline(never)]
    fn tx_from_general<const PLAIN: bool, Q>(
        &mut self,
        pkts: &[NonNull<MbufHeader>],
        n: usize,
        bytes: u64,
        mut queue_packet: Q,
    ) -> usize
    where
        Q: FnMut(&mut Self, &Mbuf, NonNull<MbufHeader>) -> Result<bool, ()>,
    {
        let ring = self.ring.as_ptr();
        let size = self.size;
        let rs_thresh = self.rs_thresh;
        let pool_id = self.pool_id;
        let (mut bytes, mut errors, mut sent) = (bytes, 0u64, n as u64);
        let mut n = n;
        let mut full = false;
        while n < pkts.len() {
            // Hot state in locals: the descriptor stores go through raw pointers the compiler cannot tell apart
            // from `self`. since_rs < rs_thresh between packets.
            if self.nb_free == 0 {
                // A full ring: reclaim a group before the next packet, so that a plain one is still placed as
                // plain (never handed to the general path, which would honour its flags on the plain path).
                if self.clean_one() {
                    continue;
                }
                full = true;
                break;
            }
            let tail = self.tail;
            let room = (rs_thresh - self.since_rs).min(self.nb_free).min(size - tail).min(pkts.len() - n);
            let shadow = self.shadow.as_mut_ptr();
            // SAFETY: n + room <= pkts.len(); tail + room <= size and those slots are free (room <= nb_free).
            let (mut k, group_bytes) =
                unsafe { tx_groups::<D, PLAIN>(pkts.as_ptr().add(n), ring.add(tail), shadow.add(tail), room, pool_id) };
            bytes += group_bytes;
            let mut other = 0;
            while k < room {
                // SAFETY: n + k < pkts.len().
                let p = unsafe { *pkts.get_unchecked(n + k) };
                // SAFETY: a borrowed view of a live packet still owned by the batch (never dropped through it).
                let m = ManuallyDrop::new(unsafe { Mbuf::from_raw(p) });
                let len = m.data_len();
                let flags = if PLAIN { 0 } else { m.ol_flags() };
                if !D::is_plain((m.nb_segs() != 1) as usize, flags, D::len_key(len)) {
                    break;
                }
                other |= m.single_of(pool_id);
                // SAFETY: tail + k < size, a free slot not read before the tail moves; the packet moves into the
                // shadow slot (the batch gives it up: it is among the `n` returned).
                unsafe {
                    D::write_plain(ring.add(tail + k), m.data_iova(), len);
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
            let mut r = queue_packet(self, &m, p);
            // No room: reclaim groups until it fits or the device has completed no more.
            while r == Ok(false) && self.clean_one() {
                r = queue_packet(self, &m, p);
            }
            match r {
                Ok(true) => {
                    bytes += m.pkt_len() as u64;
                    sent += 1;
                }
                Ok(false) => {
                    full = true;
                    break;
                }
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
        // The slow path: the ring took less than asked. Is the device still completing?
        if full {
            self.check_hang();
        }
        n
    }
}

impl<D: TxDescriptor> Drop for TxCore<D> {
    /// Frees every packet still on the ring (the owner stopped the device first).
    fn drop(&mut self) {
        let (from, live) = (self.clean, idx::dist(self.clean, self.tail, self.size));
        self.free_range(from, live, RS_FLAGS);
    }
}

/// Writes the data descriptors and shadow slots of up to `room` packets, four at a time, each group tested after
/// it was written (all plain and of the port's pool; with `PLAIN` the offload flags are not read); stops at the
/// first group that fails. Returns how many it
/// placed (a multiple of four) and their bytes. A failed group's slots are rewritten by whatever places those
/// packets: the device reads nothing before the tail moves, and a shadow slot is live only once `tail` passes it.
///
/// Kept out of line so that its loop has the registers to itself.
///
/// # Safety
/// `pkts` must hold `room` live packets owned by the caller's batch (ownership of those placed moves to the shadow
/// slots); `d` and `shadow` must be `room` free slots of the ring and its shadow array.
#[inline(never)]
unsafe fn tx_groups<D: TxDescriptor, const PLAIN: bool>(
    pkts: *const NonNull<MbufHeader>,
    d: *mut D,
    shadow: *mut Option<NonNull<MbufHeader>>,
    room: usize,
    pool_id: PoolId,
) -> (usize, u64) {
    let mut k = 0;
    let mut bytes = 0;
    let end = room & !3;
    while k != end {
        let (mut other, mut flags, mut len_keys, mut group_bytes) = (0usize, 0u64, 0u64, 0u64);
        for j in 0..4 {
            // SAFETY: k + j < room.
            let p = unsafe { *pkts.add(k + j) };
            // SAFETY: a borrowed view of a live packet owned by the batch (never dropped through it).
            let m = ManuallyDrop::new(unsafe { Mbuf::from_raw(p) });
            let len = m.data_len();
            other |= m.single_of(pool_id);
            if !PLAIN {
                flags |= m.ol_flags();
            }
            len_keys |= D::len_key(len);
            group_bytes += len as u64;
            // SAFETY: k + j < room: a free slot (caller's contract); the shadow slot becomes live only if the
            // group passes.
            unsafe {
                D::write_plain(d.add(k + j), m.data_iova(), len);
                *shadow.add(k + j) = Some(p);
            }
        }
        if !D::is_plain(other, flags, len_keys) {
            break;
        }
        bytes += group_bytes;
        k += 4;
    }
    (k, bytes)
}
