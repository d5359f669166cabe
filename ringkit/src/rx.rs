//! The RX ring's buffers: the mbuf shadow ring (which buffer is posted in which slot), the indices that say which
//! slots own theirs, and the bulk refill from the pool that moves the tail once. What a write-back means (status
//! bits, lengths, flags, chains) stays in the driver, which walks the ring through [`RxBuffers::ring`] /
//! [`RxBuffers::shadow`] and reports what it took with [`RxBuffers::consume`].
//!
//! Buffers come from the pool's raw allocation with stale metadata: their rearm word is written when they are
//! posted, and the driver writes every RX field when it receives into them.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use mempool::{Mbuf, MbufHeader, Mempool, RxRearm};

use crate::idx;
use drvkit::barrier::dma_wmb;
use pktio::stats::Counter;

/// What the buffer core needs from a driver's RX descriptor.
pub trait RxDescriptor: Copy {
    /// The read format of a descriptor posting a buffer whose data starts at `iova` (header address 0).
    fn read(iova: u64) -> Self;

    /// Rewrites a consumed descriptor's read format for a buffer whose data starts at `iova`: the words the
    /// device looks at (the rest is rewritten by its write-back). The default writes the Intel read format's first
    /// two qwords, the packet address and a header address of 0; a layout that differs overrides it.
    ///
    /// # Safety
    /// `d` must be a descriptor of the ring the device does not own.
    #[inline(always)]
    unsafe fn post(d: *mut Self, iova: u64) {
        const { assert!(size_of::<Self>() >= 16 && align_of::<Self>() >= 8) };
        let q = d.cast::<u64>();
        // SAFETY: the caller's contract; the descriptor holds at least two aligned qwords (checked above).
        unsafe {
            q.write_volatile(iova);
            q.add(1).write_volatile(0);
        }
    }
}

/// An RX ring's buffers. The slots from `next` through `tail` (`size - nb_hold` of them) own their buffer; the
/// `nb_hold` consumed slots after `tail` hold stale pointers that were handed on and are overwritten by the
/// refill. Dropping frees the owned buffers: the owner stops the device writing into them first.
pub struct RxBuffers<D: RxDescriptor> {
    ring: NonNull<D>,
    size: usize,
    /// Next descriptor to look at.
    next: usize,
    /// Last value written to the tail register: that slot holds a buffer the device does not own yet.
    tail: usize,
    /// Consumed slots waiting for a refill: (tail, next) exclusive.
    nb_hold: usize,
    free_thresh: usize,
    shadow: Box<[NonNull<MbufHeader>]>,
    /// Data start within a posted buffer: its IOVA is `buf_iova + headroom`.
    headroom: u64,
    /// The rearm word written into every buffer when it is posted (data start at `headroom`, one segment, the
    /// port, the pool's buffer length).
    rearm: RxRearm,
    pool: Mempool,
}

// SAFETY: the core owns its buffers; `ring` points into memory its owner keeps alive and uses from one thread at
// a time. Moving the core moves all of it.
unsafe impl<D: RxDescriptor> Send for RxBuffers<D> {}

impl<D: RxDescriptor> RxBuffers<D> {
    /// Fills all `size` slots with buffers of `pool` stamped for port `port_id` and writes their read format
    /// (next 0, tail `size - 1`, nothing held). `Err` names the shortage when the pool runs out.
    ///
    /// # Safety
    /// `ring` must point to `size` descriptors the caller keeps alive, unaliased, for the core's life, and that the
    /// device does not own yet (queue disabled); `0 < free_thresh < size`.
    pub unsafe fn new(
        ring: NonNull<D>,
        size: usize,
        free_thresh: usize,
        pool: &Mempool,
        port_id: u16,
    ) -> Result<Self, String> {
        let mut shadow: Box<[NonNull<MbufHeader>]> = vec![NonNull::dangling(); size].into_boxed_slice();
        if !pool.alloc_raw_bulk(&mut shadow) {
            return Err(format!(
                "mempool {} ran out filling an RX ring of {size} descriptors ({} buffers free)",
                pool.name(),
                pool.available()
            ));
        }
        let headroom = pool.headroom() as u64;
        let rearm = pool.rx_rearm(port_id);
        for (i, &h) in shadow.iter().enumerate() {
            // SAFETY: a buffer of this pool the slot owns, fresh from its raw allocation.
            unsafe { rearm.apply(h) };
            // SAFETY: i < size: inside the ring memory, which the device does not own yet (caller's contract).
            unsafe { ring.as_ptr().add(i).write_volatile(D::read(buffer_iova(h, headroom))) };
        }
        Ok(RxBuffers {
            ring,
            size,
            next: 0,
            tail: size - 1,
            nb_hold: 0,
            free_thresh,
            shadow,
            headroom,
            rearm,
            pool: pool.clone(),
        })
    }

    /// Descriptors.
    #[inline(always)]
    pub fn size(&self) -> usize {
        self.size
    }

    /// Next descriptor to look at.
    #[inline(always)]
    pub fn next(&self) -> usize {
        self.next
    }

    /// The last slot handed to the device (the tail register's value).
    #[inline(always)]
    pub fn tail(&self) -> usize {
        self.tail
    }

    /// Consumed slots waiting for a refill.
    #[inline(always)]
    pub fn held(&self) -> usize {
        self.nb_hold
    }

    /// The descriptor ring.
    #[inline(always)]
    pub fn ring(&self) -> NonNull<D> {
        self.ring
    }

    /// The shadow ring: the buffer posted in each slot (owned only by the slots from `next` through `tail`).
    #[inline(always)]
    pub fn shadow(&self) -> *const NonNull<MbufHeader> {
        self.shadow.as_ptr()
    }

    /// Takes the buffer of slot `i` out of the ring (the slot becomes a consumed one once reported through
    /// [`RxBuffers::consume`]).
    ///
    /// # Safety
    /// `i` must be a slot from `next` through `tail` whose descriptor the device wrote back, taken once.
    #[inline(always)]
    pub unsafe fn take(&self, i: usize) -> Mbuf {
        // SAFETY: the caller's contract: the slot owns its buffer, which moves into the Mbuf.
        unsafe { Mbuf::from_raw(*self.shadow.get_unchecked(i)) }
    }

    /// Reports `n` descriptors consumed from `next` on: `next` becomes `next_slot`.
    ///
    /// # Safety
    /// The `n` slots from `next` must have been taken (their buffers handed on), `next_slot = next + n` mod size.
    #[inline(always)]
    pub unsafe fn consume(&mut self, next_slot: usize, n: usize) {
        debug_assert_eq!(next_slot, idx::add(self.next, n, self.size));
        self.next = next_slot;
        self.nb_hold += n;
    }

    /// Enough slots are held for a refill.
    #[inline(always)]
    pub fn refill_due(&self) -> bool {
        self.nb_hold >= self.free_thresh
    }

    /// Refills every held slot it can (in chunks of at most 64, all-or-nothing per chunk, split at the ring's
    /// end) and rewrites their read format; returns the new tail, if it moved, for the caller to write to the tail
    /// register (the store fence is done). A chunk the pool cannot fill counts its slots in `nombuf` and is
    /// retried at the next refill. The common case (one chunk that does not reach the ring's end) is one
    /// allocation and one posting loop.
    #[inline]
    #[must_use = "the tail register must be written with the new tail"]
    pub fn refill(&mut self, nombuf: &Counter) -> Option<u32> {
        const CHUNK: usize = 64;
        let size = self.size;
        let mut start = self.tail + 1;
        let mut left = self.nb_hold;
        if left <= CHUNK && start + left <= size {
            // SAFETY: start + left <= size. Consumed slots (after the tail, before `next`): their pointers were
            // handed on, so they own nothing and may be overwritten; the device does not own their descriptors.
            let slots = unsafe { self.shadow.get_unchecked_mut(start..start + left) };
            if !self.pool.alloc_raw_bulk(slots) {
                nombuf.add(left as u64);
                return None;
            }
            // SAFETY: as above.
            unsafe { self.post(start, left) };
            self.nb_hold = 0;
            self.tail = start + left - 1;
            dma_wmb();
            return Some(self.tail as u32);
        }
        if start == size {
            start = 0;
        }
        let mut done = 0;
        while left > 0 {
            let run = left.min(size - start).min(CHUNK);
            // SAFETY: start + run <= size; consumed slots as above.
            let slots = unsafe { self.shadow.get_unchecked_mut(start..start + run) };
            if !self.pool.alloc_raw_bulk(slots) {
                nombuf.add(left as u64);
                break;
            }
            // SAFETY: as above.
            unsafe { self.post(start, run) };
            done += run;
            left -= run;
            start = idx::add(start, run, size);
        }
        if done == 0 {
            return None;
        }
        self.nb_hold -= done;
        self.tail = idx::add(self.tail, done, size);
        dma_wmb();
        Some(self.tail as u32)
    }

    /// Posts the fresh buffers of slots `start..start + n`: their rearm word and their descriptors' read format.
    ///
    /// # Safety
    /// start + n <= size; the slots hold fresh buffers of our pool that they own, and the device does not own
    /// their descriptors.
    #[inline(always)]
    unsafe fn post(&mut self, start: usize, n: usize) {
        let headroom = self.headroom;
        let rearm = self.rearm;
        // SAFETY: the caller's contract: inside the ring and the shadow array.
        let (d, slots) = unsafe { (self.ring.as_ptr().add(start), self.shadow.as_ptr().add(start)) };
        // The IOVA is read from the header (computing it from the pointer saves an instruction but measured
        // slower: the read brings in the header line that the rearm store writes).
        let post = |d: *mut D, h: NonNull<MbufHeader>| {
            // SAFETY: `d` is a descriptor the device does not own (caller's contract); `h` is a fresh buffer of our
            // pool that its slot now owns.
            unsafe {
                rearm.apply(h);
                D::post(d, buffer_iova(h, headroom));
            }
        };
        let mut k = 0;
        let end = n & !3;
        while k != end {
            for j in 0..4 {
                // SAFETY: k + j < n.
                unsafe { post(d.add(k + j), *slots.add(k + j)) };
            }
            k += 4;
        }
        while k < n {
            // SAFETY: k < n.
            unsafe { post(d.add(k), *slots.add(k)) };
            k += 1;
        }
    }
}

impl<D: RxDescriptor> Drop for RxBuffers<D> {
    /// Frees the buffers the ring still owns (the owner stopped the device writing into them first).
    fn drop(&mut self) {
        // The slots from `next` through `tail` own their buffers (at most two runs around the ring's end).
        let owned = self.size - self.nb_hold;
        let first = owned.min(self.size - self.next);
        // SAFETY: those slots own their buffers, each once; the device no longer writes into them, and the ring
        // is gone after this, so nothing uses them again.
        unsafe {
            mempool::free_raw_bulk(&self.shadow[self.next..self.next + first]);
            mempool::free_raw_bulk(&self.shadow[..owned - first]);
        }
    }
}

/// IOVA of the data start of a fresh RX buffer (its data offset is the pool's headroom).
#[inline(always)]
fn buffer_iova(h: NonNull<MbufHeader>, headroom: u64) -> u64 {
    // SAFETY: `h` is a live buffer the caller owns; the borrowed view is never dropped.
    let m = ManuallyDrop::new(unsafe { Mbuf::from_raw(h) });
    debug_assert_eq!(m.headroom() as u64, headroom);
    m.buf_iova() + headroom
}
