//! A bounded, lock-free, multi-producer multi-consumer ring that moves items in bulk, after DPDK's rte_ring: each
//! side has a head (reserved) and a tail (published) index; a thread reserves a run of slots with one CAS on the
//! head, copies, then publishes by moving the tail once the threads ahead of it have published theirs.
//!
//! One CAS per burst, not per item, is what makes it fit behind the mempool caches and between software ports.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::pool::copy_burst;

#[repr(align(128))]
struct HeadTail {
    head: AtomicU32,
    tail: AtomicU32,
}

/// A fixed-capacity MPMC ring of `Copy` items (pointers, indices).
pub struct Ring<T: Copy> {
    prod: HeadTail,
    cons: HeadTail,
    mask: u32,
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
}

// SAFETY: slots are only written by the producer that reserved them and only read by the consumer that reserved
// them, with the head/tail protocol ordering the two (Release on tail, Acquire on the other side's tail).
unsafe impl<T: Copy + Send> Send for Ring<T> {}
// SAFETY: as above; every shared mutation goes through atomics or a reserved slot range.
unsafe impl<T: Copy + Send> Sync for Ring<T> {}

impl<T: Copy> std::fmt::Debug for Ring<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring").field("capacity", &self.capacity()).field("len", &self.len()).finish()
    }
}

impl<T: Copy> Ring<T> {
    /// A ring that holds at least `min_capacity` items (rounded up to a power of two, at most 2^31).
    pub fn new(min_capacity: usize) -> Self {
        let capacity = min_capacity.max(1).next_power_of_two();
        assert!(capacity <= 1 << 31, "ring capacity {capacity} too large");
        let slots = (0..capacity).map(|_| UnsafeCell::new(MaybeUninit::uninit())).collect();
        Ring {
            prod: HeadTail { head: AtomicU32::new(0), tail: AtomicU32::new(0) },
            cons: HeadTail { head: AtomicU32::new(0), tail: AtomicU32::new(0) },
            mask: capacity as u32 - 1,
            slots,
        }
    }

    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.mask as usize + 1
    }

    /// Items in the ring (a snapshot under concurrency).
    pub fn len(&self) -> usize {
        let prod = self.prod.tail.load(Ordering::Acquire);
        let cons = self.cons.tail.load(Ordering::Acquire);
        (prod.wrapping_sub(cons) as usize).min(self.capacity())
    }

    /// True when the ring holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Enqueues all of `items` or none; returns whether it did.
    #[inline]
    pub fn enqueue_bulk(&self, items: &[T]) -> bool {
        self.enqueue(items, false) == items.len()
    }

    /// Enqueues as many of `items` as fit, from the front; returns how many.
    #[inline]
    pub fn enqueue_burst(&self, items: &[T]) -> usize {
        self.enqueue(items, true)
    }

    /// Dequeues exactly `out.len()` items or none; returns whether it did.
    #[inline]
    pub fn dequeue_bulk(&self, out: &mut [T]) -> bool {
        self.dequeue(out, false) == out.len()
    }

    /// Dequeues up to `out.len()` items into the front of `out`; returns how many.
    #[inline]
    pub fn dequeue_burst(&self, out: &mut [T]) -> usize {
        self.dequeue(out, true)
    }

    /// The slot array as raw `T`s (`UnsafeCell<MaybeUninit<T>>` has `T`'s layout).
    #[inline(always)]
    fn slot_ptr(&self) -> *mut T {
        UnsafeCell::raw_get(self.slots.as_ptr()).cast()
    }

    /// Writes `items` into the slots from index `head` on, wrapping at the end.
    ///
    /// # Safety
    /// The caller has reserved slots `head..head + items.len()`.
    #[inline(always)]
    unsafe fn copy_in(&self, head: u32, items: &[T]) {
        let start = (head & self.mask) as usize;
        let first = items.len().min(self.capacity() - start);
        if first == items.len() {
            // SAFETY: start + len <= capacity; the caller reserved these slots. (No wrap, the usual case: a burst
            // of 32 is then vector moves instead of a memcpy call.)
            unsafe { copy_burst(self.slot_ptr().add(start), items.as_ptr(), first) };
            return;
        }
        // SAFETY: start + first <= capacity and the rest wraps to 0..; the caller reserved these slots.
        unsafe {
            std::ptr::copy_nonoverlapping(items.as_ptr(), self.slot_ptr().add(start), first);
            std::ptr::copy_nonoverlapping(items.as_ptr().add(first), self.slot_ptr(), items.len() - first);
        }
    }

    /// Reads the slots from index `head` on into `out`, wrapping at the end.
    ///
    /// # Safety
    /// The caller has reserved slots `head..head + out.len()` and they hold published items.
    #[inline(always)]
    unsafe fn copy_out(&self, head: u32, out: &mut [T]) {
        let start = (head & self.mask) as usize;
        let first = out.len().min(self.capacity() - start);
        if first == out.len() {
            // SAFETY: as in copy_in; the slots are initialised by their producers.
            unsafe { copy_burst(out.as_mut_ptr(), self.slot_ptr().add(start), first) };
            return;
        }
        // SAFETY: as in copy_in; the slots are initialised by their producers.
        unsafe {
            std::ptr::copy_nonoverlapping(self.slot_ptr().add(start), out.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(self.slot_ptr(), out.as_mut_ptr().add(first), out.len() - first);
        }
    }

    #[inline]
    fn enqueue(&self, items: &[T], partial: bool) -> usize {
        let capacity = self.capacity() as u32;
        let mut head = self.prod.head.load(Ordering::Relaxed);
        let n = loop {
            // Acquire: consumers finished reading the slots before they published this tail.
            // With a stale `head` the difference can exceed the capacity; the CAS below then fails and we retry.
            let free = capacity.wrapping_sub(head.wrapping_sub(self.cons.tail.load(Ordering::Acquire)));
            if free > capacity {
                head = self.prod.head.load(Ordering::Relaxed);
                continue;
            }
            let n = if items.len() as u64 <= free as u64 {
                items.len() as u32
            } else if partial {
                free
            } else {
                return 0;
            };
            if n == 0 {
                return 0;
            }
            match self.prod.head.compare_exchange_weak(head, head.wrapping_add(n), Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break n,
                Err(now) => head = now,
            }
        };
        // SAFETY: slots head..head+n were reserved by our CAS and consumers have released them (checked above).
        unsafe { self.copy_in(head, &items[..n as usize]) };
        wait_for_turn(&self.prod.tail, head);
        self.prod.tail.store(head.wrapping_add(n), Ordering::Release);
        n as usize
    }

    #[inline]
    fn dequeue(&self, out: &mut [T], partial: bool) -> usize {
        let capacity = self.capacity() as u32;
        let mut head = self.cons.head.load(Ordering::Relaxed);
        let n = loop {
            // Acquire: the producers' slot writes are visible once we see their tail.
            let entries = self.prod.tail.load(Ordering::Acquire).wrapping_sub(head);
            if entries > capacity {
                head = self.cons.head.load(Ordering::Relaxed);
                continue;
            }
            let n = if out.len() as u64 <= entries as u64 {
                out.len() as u32
            } else if partial {
                entries
            } else {
                return 0;
            };
            if n == 0 {
                return 0;
            }
            match self.cons.head.compare_exchange_weak(head, head.wrapping_add(n), Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break n,
                Err(now) => head = now,
            }
        };
        // SAFETY: slots head..head+n were published by producers (prod.tail) and reserved for us by our CAS.
        unsafe { self.copy_out(head, &mut out[..n as usize]) };
        wait_for_turn(&self.cons.tail, head);
        self.cons.tail.store(head.wrapping_add(n), Ordering::Release);
        n as usize
    }
}

/// Waits until the threads that reserved before us have published (tail reaches our start).
#[inline]
fn wait_for_turn(tail: &AtomicU32, start: u32) {
    let mut spins = 0u32;
    while tail.load(Ordering::Relaxed) != start {
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            // The thread ahead of us may have been preempted: let it run.
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn bulk_and_burst_semantics() {
        let ring = Ring::<u32>::new(6);
        assert_eq!(ring.capacity(), 8);
        assert!(ring.enqueue_bulk(&[1, 2, 3, 4, 5]));
        assert!(!ring.enqueue_bulk(&[6, 7, 8, 9]), "bulk is all or nothing");
        assert_eq!(ring.enqueue_burst(&[6, 7, 8, 9]), 3);
        assert_eq!(ring.len(), 8);
        let mut out = [0; 10];
        assert!(!ring.dequeue_bulk(&mut out));
        assert_eq!(ring.dequeue_burst(&mut out), 8);
        assert_eq!(&out[..8], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(ring.is_empty());
    }

    #[test]
    fn wraps_around_many_times() {
        let ring = Ring::<u64>::new(4);
        let mut next = 0u64;
        let mut expect = 0u64;
        for _ in 0..10_000 {
            let items = [next, next + 1, next + 2];
            assert!(ring.enqueue_bulk(&items));
            next += 3;
            let mut out = [0; 3];
            assert!(ring.dequeue_bulk(&mut out));
            for v in out {
                assert_eq!(v, expect);
                expect += 1;
            }
        }
    }

    #[test]
    fn concurrent_producers_and_consumers_lose_nothing() {
        let ring = Arc::new(Ring::<u32>::new(64));
        const PER_THREAD: u32 = 50_000;
        let producers: Vec<_> = (0..2)
            .map(|t| {
                let ring = ring.clone();
                std::thread::spawn(move || {
                    let mut i = 0;
                    while i < PER_THREAD {
                        let batch: Vec<u32> = (i..(i + 7).min(PER_THREAD)).map(|v| t * PER_THREAD + v).collect();
                        i += ring.enqueue_burst(&batch) as u32;
                    }
                })
            })
            .collect();
        let taken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let consumers: Vec<_> = (0..2)
            .map(|_| {
                let ring = ring.clone();
                let taken = taken.clone();
                std::thread::spawn(move || {
                    let mut got = Vec::new();
                    let mut out = [0u32; 5];
                    while taken.load(Ordering::Relaxed) < 2 * PER_THREAD as usize {
                        let n = ring.dequeue_burst(&mut out);
                        taken.fetch_add(n, Ordering::Relaxed);
                        got.extend_from_slice(&out[..n]);
                        if n == 0 {
                            std::thread::yield_now();
                        }
                    }
                    got
                })
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        let mut all: Vec<u32> = consumers.into_iter().flat_map(|c| c.join().unwrap()).collect();
        all.sort_unstable();
        assert_eq!(all, (0..2 * PER_THREAD).collect::<Vec<_>>());
    }
}
