//! A fixed-capacity burst of packets: what `rx_burst` fills and `tx_burst` drains.

use std::mem::MaybeUninit;
use std::ptr::NonNull;

use crate::mbuf::MbufHeader;
use crate::{Mbuf, Mempool, RxFrame, RxRearm};

/// The largest burst a batch can hold (DPDK testpmd's MAX_PKT_BURST).
pub const MAX_BURST: usize = 512;
/// The default burst size.
pub const DEFAULT_BURST: usize = 32;

/// Up to `capacity()` packets, stored inline (no allocation). Packets still in the batch are freed (in bulk) when
/// it is cleared or dropped.
pub struct PacketBatch {
    len: usize,
    capacity: usize,
    slots: [MaybeUninit<Mbuf>; MAX_BURST],
}

impl Default for PacketBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for PacketBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PacketBatch").field("len", &self.len).field("capacity", &self.capacity).finish()
    }
}

impl PacketBatch {
    /// An empty batch of [`DEFAULT_BURST`] packets.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_BURST)
    }

    /// An empty batch of `capacity` packets, clamped to `1..=MAX_BURST`.
    pub fn with_capacity(capacity: usize) -> Self {
        PacketBatch {
            len: 0,
            capacity: capacity.clamp(1, MAX_BURST),
            slots: [const { MaybeUninit::uninit() }; MAX_BURST],
        }
    }

    /// Packets held.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The most packets this batch holds.
    #[inline(always)]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Changes the capacity (clamped to `1..=MAX_BURST`, and never below the packets held).
    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity.clamp(1, MAX_BURST).max(self.len);
    }

    /// Room left.
    #[inline(always)]
    pub fn remaining(&self) -> usize {
        self.capacity - self.len
    }

    /// True when no room is left.
    #[inline(always)]
    pub fn is_full(&self) -> bool {
        self.len == self.capacity
    }

    /// Adds a packet at the end, or hands it back when full.
    #[inline(always)]
    pub fn push(&mut self, mbuf: Mbuf) -> Result<(), Mbuf> {
        if self.len == self.capacity {
            return Err(mbuf);
        }
        self.slots[self.len].write(mbuf);
        self.len += 1;
        Ok(())
    }

    /// Removes the last packet.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<Mbuf> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        // SAFETY: slot `len` was initialised and is now outside the live range.
        Some(unsafe { self.slots[self.len].assume_init_read() })
    }

    /// The packets, in order.
    #[inline(always)]
    pub fn as_slice(&self) -> &[Mbuf] {
        // SAFETY: the first `len` slots are initialised.
        unsafe { std::slice::from_raw_parts(self.slots.as_ptr().cast(), self.len) }
    }

    /// The packets, in order, writable.
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [Mbuf] {
        // SAFETY: the first `len` slots are initialised.
        unsafe { std::slice::from_raw_parts_mut(self.slots.as_mut_ptr().cast(), self.len) }
    }

    /// Iterates over the packets.
    pub fn iter(&self) -> std::slice::Iter<'_, Mbuf> {
        self.as_slice().iter()
    }

    /// Iterates over the packets, writable.
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Mbuf> {
        self.as_mut_slice().iter_mut()
    }

    /// Moves the first `n` packets (or all, if fewer) out through `sink`, in order, then shifts the rest to the
    /// front. This is how a TX path takes what it could place on its ring.
    #[inline]
    pub fn drain_front(&mut self, n: usize, mut sink: impl FnMut(Mbuf)) {
        let n = n.min(self.len);
        for slot in &mut self.slots[..n] {
            // SAFETY: slots 0..n are initialised; each is read exactly once and then treated as moved-out.
            sink(unsafe { slot.assume_init_read() });
        }
        let rest = self.len - n;
        if rest > 0 && n > 0 {
            // Moving Mbufs bitwise is fine: they are plain owning pointers.
            // SAFETY: source n..len and destination 0..rest are inside the array; ptr::copy handles the overlap.
            unsafe { std::ptr::copy(self.slots.as_ptr().add(n), self.slots.as_mut_ptr(), rest) };
        }
        self.len = rest;
    }

    /// Keeps only the packets for which `keep` is true (in order); the others are freed in bulk.
    pub fn retain(&mut self, mut keep: impl FnMut(&mut Mbuf) -> bool) {
        let mut dropped = [NonNull::<MbufHeader>::dangling(); MAX_BURST];
        let mut n_dropped = 0;
        let mut kept = 0;
        for i in 0..self.len {
            // SAFETY: slot i is initialised; we move it either to position `kept` or into `dropped`.
            let mut m = unsafe { self.slots[i].assume_init_read() };
            if keep(&mut m) {
                self.slots[kept].write(m);
                kept += 1;
            } else {
                dropped[n_dropped] = m.into_raw();
                n_dropped += 1;
            }
        }
        self.len = kept;
        // SAFETY: each dropped chain is owned here and used no more.
        unsafe { crate::free::free_bulk(&dropped[..n_dropped]) };
    }

    /// The first `n` free slots (`n` at most [`PacketBatch::remaining`]) as raw buffer pointers, for a bulk get or a
    /// software ring to write; they become packets only when the caller then adds them to `len`.
    #[inline(always)]
    fn spare_raw(&mut self, n: usize) -> &mut [NonNull<MbufHeader>] {
        debug_assert!(n <= self.remaining());
        // SAFETY: Mbuf is a transparent NonNull, so the spare slots (inside the capacity, uninitialised) can be seen
        // as raw pointers; they are only written through this view.
        unsafe { std::slice::from_raw_parts_mut(self.slots.as_mut_ptr().add(self.len).cast(), n) }
    }

    /// Lets `fill` write raw owned buffers into the free slots (`remaining()` of them); it returns how many it
    /// wrote, which become the batch's last packets. For zero-copy software rings.
    ///
    /// # Safety
    /// The first `n` (returned) entries `fill` writes must each be a uniquely owned buffer chain that nothing else
    /// frees, and `n` must not exceed the slice length.
    #[inline]
    pub unsafe fn fill_raw(&mut self, fill: impl FnOnce(&mut [NonNull<MbufHeader>]) -> usize) -> usize {
        let free = self.remaining();
        let n = fill(self.spare_raw(free));
        debug_assert!(n <= free);
        self.len += n.min(free);
        n
    }

    /// Offers the packets as raw pointers to `take`, which returns how many from the front it took ownership of;
    /// those leave the batch and the rest shift to the front.
    ///
    /// # Safety
    /// `take` must take ownership of exactly the first `n` (returned) chains, and must not keep or free the others.
    #[inline]
    pub unsafe fn drain_raw(&mut self, take: impl FnOnce(&[NonNull<MbufHeader>]) -> usize) -> usize {
        // SAFETY: the first `len` slots are initialised Mbufs, i.e. owning NonNulls.
        let live = unsafe { std::slice::from_raw_parts(self.slots.as_ptr().cast::<NonNull<MbufHeader>>(), self.len) };
        let n = take(live).min(self.len);
        let rest = self.len - n;
        if rest > 0 && n > 0 {
            // SAFETY: in-bounds overlapping move of the untaken entries to the front.
            unsafe { std::ptr::copy(self.slots.as_ptr().add(n), self.slots.as_mut_ptr(), rest) };
        }
        self.len = rest;
        n
    }

    /// Frees every packet (in bulk) and empties the batch.
    #[inline]
    pub fn clear(&mut self) {
        let len = self.len;
        self.len = 0;
        // SAFETY: Mbuf is a transparent NonNull<MbufHeader>; the first `len` slots were initialised and are now
        // outside the live range, so each chain is freed exactly once.
        unsafe { crate::free::free_bulk(std::slice::from_raw_parts(self.slots.as_ptr().cast(), len)) };
    }

    /// Frees every packet (in bulk) and empties the batch, as [`PacketBatch::clear`], returning their total length
    /// in bytes (the sum of [`Mbuf::pkt_len`]). The lengths are read in the same pass over the headers that checks
    /// the burst for the one-put bulk free: for a TX path that counts what it frees (net_null).
    #[inline]
    pub fn clear_counting_bytes(&mut self) -> u64 {
        let len = self.len;
        self.len = 0;
        // SAFETY: as in `clear`.
        unsafe { crate::free::free_bulk_counting_bytes(std::slice::from_raw_parts(self.slots.as_ptr().cast(), len)) }
    }

    /// Appends `n` fresh buffers from `pool`, metadata reset (all or none; false when the pool or the batch lacks
    /// room).
    #[inline]
    pub fn alloc_from(&mut self, pool: &Mempool, n: usize) -> bool {
        if n > self.remaining() {
            return false;
        }
        // get_raw writes all `n` spare slots or none, and each written element is uniquely ours.
        let spare = self.spare_raw(n);
        // SAFETY: on success every element is adopted as an Mbuf in place (below).
        if !unsafe { pool.get_raw(spare) } {
            return false;
        }
        pool.prepare_alloc(spare);
        self.len += n;
        true
    }

    /// Appends `n` fresh buffers from `pool` as a port receives them (all or none; false when the pool or the batch
    /// lacks room): each a single segment of `len` bytes received on the port `rearm` was made for
    /// ([`Mempool::rx_rearm`]), no flags, type, hash, VLAN or TX offload. Exactly what [`PacketBatch::alloc_from`]
    /// and then [`Mbuf::set_len`] and [`Mbuf::set_port`] on each leave, but written as one block per buffer: the
    /// fast path of a software port that makes its packets (net_null).
    ///
    /// # Panics
    /// When `rearm` was made by another pool, or `len` is over the pool's data room.
    #[inline]
    pub fn alloc_rx(&mut self, pool: &Mempool, n: usize, rearm: RxRearm, len: u16) -> bool {
        if n > self.remaining() {
            return false;
        }
        // All `n` written or none, each uniquely ours and fully set (every per-packet field) before it counts.
        if !pool.alloc_received(self.spare_raw(n), rearm, len) {
            return false;
        }
        self.len += n;
        true
    }

    /// Appends one fresh buffer per item of `items` (all buffers taken in one bulk get, or none: false when the
    /// pool or the batch lacks room for `items.len()`), each holding a frame written by `fill` and received on the
    /// port `rearm` was made for ([`Mempool::rx_rearm`]). `fill` gets the item and the buffer's whole data room
    /// ([`Mempool::data_room`] bytes from the data start), writes the frame at its start and returns its length
    /// and timestamp; bytes after the length may be written too (a fixed-size copy) and are not part of the packet.
    /// The packets are what [`PacketBatch::alloc_rx`] with that length, then [`Mbuf::set_timestamp`], leave, but
    /// each header is written once, after its data: a software port's RX copying from memory (net_pcap's replay).
    /// Should `items` end early, the buffers left over go back and the batch holds those filled.
    ///
    /// # Panics
    /// When `rearm` was made by another pool, or `fill` returns a length over the data room. A panic in `fill`
    /// leaks the burst's buffers (never frees one twice).
    #[inline]
    pub fn alloc_rx_with<I: ExactSizeIterator>(
        &mut self,
        pool: &Mempool,
        rearm: RxRearm,
        items: I,
        fill: impl FnMut(I::Item, &mut [u8]) -> RxFrame,
    ) -> bool {
        let n = items.len();
        if n > self.remaining() {
            return false;
        }
        // Only the first `filled` (returned) count, each uniquely ours with every per-packet field set.
        let Some(filled) = pool.alloc_received_with(self.spare_raw(n), rearm, items, fill) else { return false };
        self.len += filled;
        true
    }
}

impl Drop for PacketBatch {
    fn drop(&mut self) {
        self.clear();
    }
}

impl Extend<Mbuf> for PacketBatch {
    /// Adds packets until full; the rest are dropped (freed).
    fn extend<I: IntoIterator<Item = Mbuf>>(&mut self, iter: I) {
        for m in iter {
            if self.push(m).is_err() {
                break;
            }
        }
    }
}
