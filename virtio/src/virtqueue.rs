//! The driver side of a split virtqueue (docs/hw/virtio.md §2.7): a descriptor table, the available ring the driver
//! fills and the used ring the device fills, all in DMA memory.
//!
//! Ring memory is shared with the device: it is only touched through volatile reads and writes of raw pointers,
//! never through Rust references. Ordering: descriptors and ring entries are written before the available index
//! is published ([`dma_wmb`]); the used index is read before the used elements it covers ([`dma_rmb`]); the
//! published index is ordered before reading the device's notification suppression fields ([`mb`]).
//!
//! Interrupt suppression (docs/hw/virtio.md §2.7.7): a queue starts, and stays while polled, with its interrupts
//! suppressed; [`SplitQueue::intr_enable`] asks for one at the next used entry and reports an entry that is already
//! there (the device wrote it while suppressed, so no interrupt comes for it).

use std::ptr::NonNull;

use drvkit::barrier::{dma_rmb, dma_wmb, mb};

use crate::desc::{avail, used, UsedElem, VirtqDesc};

/// Where the three parts of a split virtqueue of `size` entries go, relative to its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Entries.
    pub size: u16,
    /// Offset of the descriptor table (16-byte aligned).
    pub desc: usize,
    /// Offset of the available ring (2-byte aligned).
    pub avail: usize,
    /// Offset of the used ring (4-byte aligned; placed on its own cache line here).
    pub used: usize,
    /// Bytes in all, rounded up to 64.
    pub total: usize,
}

impl Layout {
    /// The layout for `size` entries (a power of two, 1..=32768).
    pub fn new(size: u16) -> Layout {
        assert!(size.is_power_of_two() && size <= 32768, "virtqueue size {size} is not a power of two <= 32768");
        let desc = 0;
        let avail = desc + 16 * size as usize;
        let used = (avail + avail::bytes(size)).next_multiple_of(64);
        let total = (used + used::bytes(size)).next_multiple_of(64);
        Layout { size, desc, avail, used, total }
    }
}

/// `vring_need_event`: whether moving the index from `old` to `new` passed `event` (docs/hw/virtio.md §2.7.10).
#[inline(always)]
pub fn need_event(event: u16, new: u16, old: u16) -> bool {
    new.wrapping_sub(event).wrapping_sub(1) < new.wrapping_sub(old)
}

/// The driver side of one split virtqueue.
#[derive(Debug)]
pub struct SplitQueue {
    size: u16,
    desc: NonNull<VirtqDesc>,
    avail: NonNull<u8>,
    used: NonNull<u8>,
    iova: u64,
    layout: Layout,
    /// Free descriptor ids (a stack: recently freed ones are warm in cache).
    free: Vec<u16>,
    /// Next available slot to fill (free-running), published to the device by [`SplitQueue::publish`].
    avail_idx: u16,
    /// Available index at the last notification decision.
    kicked_idx: u16,
    /// Next used slot to read (free-running).
    last_used: u16,
    event_idx: bool,
    /// The driver asked for an interrupt at the next used entry ([`SplitQueue::intr_enable`]).
    intr_armed: bool,
}

// SAFETY: the queue is the only driver-side user of its ring memory; it moves between threads as a whole.
unsafe impl Send for SplitQueue {}

impl SplitQueue {
    /// Sets up a queue of `size` entries in `[base, base + Layout::new(size).total)`, whose IOVA is `iova`.
    /// The memory is zeroed, every descriptor is free, and interrupts are suppressed (polling).
    ///
    /// # Safety
    /// The memory must be valid for reads and writes, 64-byte aligned, not used by anything else (the device
    /// excepted, once told the addresses), and outlive the queue; `iova` must be how the device reaches `base`,
    /// contiguously for the whole layout.
    pub unsafe fn new(base: NonNull<u8>, iova: u64, size: u16, event_idx: bool) -> SplitQueue {
        let layout = Layout::new(size);
        // SAFETY: the caller gives us `layout.total` writable bytes.
        unsafe { std::ptr::write_bytes(base.as_ptr(), 0, layout.total) };
        // SAFETY: offsets inside the region (Layout), alignment from the 64-byte aligned base.
        let (desc, avail, used) =
            unsafe { (base.add(layout.desc).cast(), base.add(layout.avail), base.add(layout.used)) };
        let mut q = SplitQueue {
            size,
            desc,
            avail,
            used,
            iova,
            layout,
            free: (0..size).rev().collect(),
            avail_idx: 0,
            kicked_idx: 0,
            last_used: 0,
            event_idx,
            intr_armed: true,
        };
        q.intr_disable();
        q
    }

    /// Entries.
    #[inline(always)]
    pub fn size(&self) -> u16 {
        self.size
    }

    /// The layout in use.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Device addresses of (descriptor table, available ring, used ring).
    pub fn addrs(&self) -> (u64, u64, u64) {
        (self.iova + self.layout.desc as u64, self.iova + self.layout.avail as u64, self.iova + self.layout.used as u64)
    }

    /// Free descriptors.
    #[inline(always)]
    pub fn num_free(&self) -> usize {
        self.free.len()
    }

    /// Takes a free descriptor id.
    #[inline(always)]
    pub fn alloc(&mut self) -> Option<u16> {
        self.free.pop()
    }

    /// Returns descriptor `id` to the free list (the device must be done with it).
    #[inline(always)]
    pub fn free(&mut self, id: u16) {
        debug_assert!(id < self.size && self.free.len() < self.size as usize);
        self.free.push(id);
    }

    /// Returns a chain starting at `head` to the free list, following `F_NEXT`; returns its length.
    pub fn free_chain(&mut self, head: u16) -> usize {
        let mut id = head;
        let mut n = 0;
        loop {
            let d = self.desc(id);
            self.free(id);
            n += 1;
            if d.flags & VirtqDesc::F_NEXT == 0 || n >= self.size as usize {
                return n;
            }
            id = d.next;
        }
    }

    /// Writes descriptor `id`.
    #[inline(always)]
    pub fn set_desc(&mut self, id: u16, addr: u64, len: u32, flags: u16, next: u16) {
        assert!(id < self.size);
        // SAFETY: id < size: inside the descriptor table; volatile because the device reads it.
        unsafe { self.desc.add(id as usize).write_volatile(VirtqDesc::new(addr, len, flags, next)) }
    }

    /// Reads descriptor `id` back (in host byte order).
    #[inline(always)]
    pub fn desc(&self, id: u16) -> VirtqDesc {
        assert!(id < self.size);
        // SAFETY: inside the descriptor table.
        let d = unsafe { self.desc.add(id as usize).read_volatile() };
        VirtqDesc {
            addr: u64::from_le(d.addr),
            len: u32::from_le(d.len),
            flags: u16::from_le(d.flags),
            next: u16::from_le(d.next),
        }
    }

    #[inline(always)]
    fn write_avail_u16(&self, offset: usize, v: u16) {
        debug_assert!(offset + 2 <= avail::bytes(self.size));
        // SAFETY: inside the available ring, 2-byte aligned.
        unsafe { self.avail.add(offset).cast::<u16>().write_volatile(v.to_le()) }
    }

    #[inline(always)]
    fn read_used_u16(&self, offset: usize) -> u16 {
        debug_assert!(offset + 2 <= used::bytes(self.size));
        // SAFETY: inside the used ring, 2-byte aligned.
        u16::from_le(unsafe { self.used.add(offset).cast::<u16>().read_volatile() })
    }

    /// Puts chain `head` in the next available slot. The device sees it after [`SplitQueue::publish`].
    #[inline(always)]
    pub fn push_avail(&mut self, head: u16) {
        let slot = (self.avail_idx & (self.size - 1)) as usize;
        self.write_avail_u16(avail::RING + 2 * slot, head);
        self.avail_idx = self.avail_idx.wrapping_add(1);
    }

    /// Makes every pushed chain visible to the device: the descriptors and ring entries first, then the index.
    #[inline(always)]
    pub fn publish(&mut self) {
        dma_wmb();
        self.write_avail_u16(avail::IDX, self.avail_idx);
    }

    /// The available index as published.
    pub fn avail_idx(&self) -> u16 {
        self.avail_idx
    }

    /// After [`SplitQueue::publish`]: whether the device wants a notification for what was published since the
    /// last call (EVENT_IDX's `avail_event`, or the used ring's NO_NOTIFY flag).
    #[inline(always)]
    pub fn needs_notify(&mut self) -> bool {
        let old = self.kicked_idx;
        let new = self.avail_idx;
        if old == new {
            return false;
        }
        self.kicked_idx = new;
        // The index store must be visible before we read what the device asked for.
        mb();
        if self.event_idx {
            let event = self.read_used_u16(used::RING + 8 * self.size as usize);
            need_event(event, new, old)
        } else {
            self.read_used_u16(used::FLAGS) & used::F_NO_NOTIFY == 0
        }
    }

    /// With EVENT_IDX: asks the device to interrupt when it writes the used entry at index `idx`.
    #[inline(always)]
    pub fn set_used_event(&mut self, idx: u16) {
        self.write_avail_u16(avail::RING + 2 * self.size as usize, idx);
    }

    /// Asks the device not to interrupt for this queue (docs/hw/virtio.md §2.7.7). Without EVENT_IDX: the available
    /// ring's NO_INTERRUPT flag. With it the flags must stay 0, so `used_event` goes one behind the next used entry:
    /// the device would reach it only after 65535 more entries, more than a ring holds while the driver keeps
    /// taking them ([`SplitQueue::sync_used_event`] keeps it behind).
    pub fn intr_disable(&mut self) {
        self.intr_armed = false;
        if self.event_idx {
            self.write_avail_u16(avail::FLAGS, 0);
            self.set_used_event(self.last_used.wrapping_sub(1));
        } else {
            self.write_avail_u16(avail::FLAGS, avail::F_NO_INTERRUPT);
        }
    }

    /// Asks the device to interrupt when it writes the next used entry (flags 0, or `used_event` = that entry's
    /// index); then, after a full barrier (the request is visible before the used index is read), whether an entry
    /// is already there: one the device wrote while interrupts were suppressed, which no interrupt will announce.
    pub fn intr_enable(&mut self) -> bool {
        self.intr_armed = true;
        if self.event_idx {
            self.set_used_event(self.last_used);
        } else {
            self.write_avail_u16(avail::FLAGS, 0);
        }
        mb();
        self.used_pending() > 0
    }

    /// Whether [`SplitQueue::intr_enable`] was the last word.
    pub fn intr_armed(&self) -> bool {
        self.intr_armed
    }

    /// With EVENT_IDX, after taking used entries: moves `used_event` with them, to the next entry when armed (so
    /// the next frame interrupts too), one behind it when suppressed. Nothing to do without EVENT_IDX.
    #[inline(always)]
    pub fn sync_used_event(&mut self) {
        if self.event_idx {
            let e = if self.intr_armed { self.last_used } else { self.last_used.wrapping_sub(1) };
            self.set_used_event(e);
        }
    }

    /// Used elements the device has returned and the driver not yet taken.
    #[inline(always)]
    pub fn used_pending(&self) -> u16 {
        self.read_used_u16(used::IDX).wrapping_sub(self.last_used)
    }

    /// Takes the next used element, if any.
    #[inline(always)]
    pub fn pop_used(&mut self) -> Option<UsedElem> {
        if self.used_pending() == 0 {
            return None;
        }
        Some(self.take_used())
    }

    /// Takes the next used element; the caller checked [`SplitQueue::used_pending`] (which also orders the reads).
    #[inline(always)]
    pub fn take_used(&mut self) -> UsedElem {
        dma_rmb();
        let slot = (self.last_used & (self.size - 1)) as usize;
        // SAFETY: inside the used ring (slot < size), 4-byte aligned.
        let e = unsafe { self.used.add(used::RING + 8 * slot).cast::<UsedElem>().read_volatile() };
        self.last_used = self.last_used.wrapping_add(1);
        UsedElem { id: u32::from_le(e.id), len: u32::from_le(e.len) }
    }

    /// The next used index the driver will read.
    pub fn last_used(&self) -> u16 {
        self.last_used
    }
}

/// The device side of a split virtqueue, for tests and software device models: reads what the driver made
/// available and returns used elements, through the same memory.
pub mod device {
    use super::*;

    /// A device-side view of a queue laid out by [`Layout`].
    #[derive(Debug)]
    pub struct DeviceQueue {
        size: u16,
        base: NonNull<u8>,
        layout: Layout,
        last_avail: u16,
        used_idx: u16,
    }

    // SAFETY: a test or model thread owns this view; accesses are volatile.
    unsafe impl Send for DeviceQueue {}

    impl DeviceQueue {
        /// A device view of the queue at `base`.
        ///
        /// # Safety
        /// `base` must be the start of a live queue memory of `size` entries set up by [`SplitQueue::new`].
        pub unsafe fn new(base: NonNull<u8>, size: u16) -> Self {
            DeviceQueue { size, base, layout: Layout::new(size), last_avail: 0, used_idx: 0 }
        }

        fn rd16(&self, off: usize) -> u16 {
            assert!(off + 2 <= self.layout.total);
            // SAFETY: inside the queue memory (checked), aligned by layout.
            u16::from_le(unsafe { self.base.add(off).cast::<u16>().read_volatile() })
        }

        fn wr16(&self, off: usize, v: u16) {
            assert!(off + 2 <= self.layout.total);
            // SAFETY: as in rd16.
            unsafe { self.base.add(off).cast::<u16>().write_volatile(v.to_le()) }
        }

        /// The descriptor `id`.
        pub fn desc(&self, id: u16) -> VirtqDesc {
            assert!(id < self.size);
            // SAFETY: inside the descriptor table.
            let d = unsafe { self.base.add(self.layout.desc).cast::<VirtqDesc>().add(id as usize).read_volatile() };
            VirtqDesc {
                addr: u64::from_le(d.addr),
                len: u32::from_le(d.len),
                flags: u16::from_le(d.flags),
                next: u16::from_le(d.next),
            }
        }

        /// The driver's available index.
        pub fn avail_idx(&self) -> u16 {
            self.rd16(self.layout.avail + avail::IDX)
        }

        /// The driver's available-ring flags.
        pub fn avail_flags(&self) -> u16 {
            self.rd16(self.layout.avail + avail::FLAGS)
        }

        /// The driver's `used_event` (meaningful with EVENT_IDX).
        pub fn used_event(&self) -> u16 {
            self.rd16(self.layout.avail + avail::RING + 2 * self.size as usize)
        }

        /// The next used index the device will write.
        pub fn used_idx(&self) -> u16 {
            self.used_idx
        }

        /// After the used index moved from `old` to [`DeviceQueue::used_idx`]: whether the driver's suppression
        /// allows an interrupt (docs/hw/virtio.md §2.7.7): with EVENT_IDX, if the move wrote the entry at
        /// `used_event`; without, unless NO_INTERRUPT is set. The index store is ordered before the read.
        pub fn needs_interrupt(&self, event_idx: bool, old: u16) -> bool {
            mb();
            if event_idx {
                need_event(self.used_event(), self.used_idx, old)
            } else {
                self.avail_flags() & avail::F_NO_INTERRUPT == 0
            }
        }

        /// Takes the next available chain: its head and descriptors (following `F_NEXT`); `Err` for a chain that
        /// loops or runs off the table.
        pub fn pop_avail(&mut self) -> Option<Result<(u16, Vec<VirtqDesc>), String>> {
            if self.avail_idx() == self.last_avail {
                return None;
            }
            let slot = (self.last_avail & (self.size - 1)) as usize;
            let head = self.rd16(self.layout.avail + avail::RING + 2 * slot);
            self.last_avail = self.last_avail.wrapping_add(1);
            if head >= self.size {
                return Some(Err(format!("available head {head} outside a {}-entry table", self.size)));
            }
            let mut chain = Vec::new();
            let mut id = head;
            loop {
                let d = self.desc(id);
                chain.push(d);
                if d.flags & VirtqDesc::F_NEXT == 0 {
                    return Some(Ok((head, chain)));
                }
                if chain.len() >= self.size as usize || d.next >= self.size {
                    return Some(Err(format!("descriptor chain from {head} loops or leaves the table")));
                }
                id = d.next;
            }
        }

        /// Returns chain `head` as used with `len` bytes written, and publishes the used index.
        pub fn push_used(&mut self, head: u16, len: u32) {
            let slot = (self.used_idx & (self.size - 1)) as usize;
            let off = self.layout.used + used::RING + 8 * slot;
            // SAFETY: inside the used ring.
            unsafe {
                self.base
                    .add(off)
                    .cast::<UsedElem>()
                    .write_volatile(UsedElem { id: (head as u32).to_le(), len: len.to_le() })
            };
            self.used_idx = self.used_idx.wrapping_add(1);
            dma_wmb();
            self.wr16(self.layout.used + used::IDX, self.used_idx);
        }

        /// Sets or clears the used ring's NO_NOTIFY flag.
        pub fn set_no_notify(&mut self, on: bool) {
            self.wr16(self.layout.used + used::FLAGS, if on { used::F_NO_NOTIFY } else { 0 });
        }

        /// Sets `avail_event` (EVENT_IDX): notify me when the available index passes `idx`.
        pub fn set_avail_event(&mut self, idx: u16) {
            self.wr16(self.layout.used + used::RING + 8 * self.size as usize, idx);
        }

        /// Starts the device's indices at `idx` (to test wrap-around from the first operation).
        pub fn force_indices(&mut self, last_avail: u16, used_idx: u16) {
            self.last_avail = last_avail;
            self.used_idx = used_idx;
            self.wr16(self.layout.used + used::IDX, used_idx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::device::DeviceQueue;
    use super::*;

    struct Mem(Vec<u64>);
    impl Mem {
        fn new(size: u16) -> Mem {
            Mem(vec![0u64; Layout::new(size).total / 8 + 8])
        }
        fn base(&mut self) -> NonNull<u8> {
            let p = self.0.as_mut_ptr() as usize;
            NonNull::new(p.next_multiple_of(64) as *mut u8).unwrap()
        }
    }

    fn pair(mem: &mut Mem, size: u16, event_idx: bool) -> (SplitQueue, DeviceQueue) {
        let base = mem.base();
        // SAFETY: test memory, large enough and aligned (Mem::base), alive for the test.
        let q = unsafe { SplitQueue::new(base, base.as_ptr() as u64, size, event_idx) };
        // SAFETY: the same live memory, just set up.
        let d = unsafe { DeviceQueue::new(base, size) };
        (q, d)
    }

    #[test]
    fn layout_alignment_and_sizes() {
        for size in [1u16, 2, 4, 256, 1024, 32768] {
            let l = Layout::new(size);
            assert_eq!(l.desc % 16, 0);
            assert_eq!(l.avail, 16 * size as usize);
            assert!(l.used >= l.avail + 6 + 2 * size as usize && l.used.is_multiple_of(64));
            assert!(l.total >= l.used + 6 + 8 * size as usize && l.total.is_multiple_of(64));
        }
    }

    #[test]
    #[should_panic]
    fn layout_rejects_non_power_of_two() {
        Layout::new(100);
    }

    #[test]
    fn need_event_matches_the_spec_formula() {
        // Passing the event index exactly.
        assert!(need_event(5, 6, 5));
        assert!(!need_event(6, 6, 5));
        assert!(need_event(5, 10, 0));
        assert!(!need_event(10, 10, 0));
        // Across the wrap.
        assert!(need_event(0xffff, 2, 0xfffe));
        assert!(!need_event(3, 2, 0xfffe));
    }

    #[test]
    fn chains_are_seen_by_the_device_and_freed() {
        let mut mem = Mem::new(8);
        let (mut q, mut d) = pair(&mut mem, 8, false);
        assert_eq!(q.num_free(), 8);
        // A three-descriptor chain.
        let ids: Vec<u16> = (0..3).map(|_| q.alloc().unwrap()).collect();
        for (i, &id) in ids.iter().enumerate() {
            let last = i == ids.len() - 1;
            let next = if last { 0 } else { ids[i + 1] };
            q.set_desc(id, 0x1000 * (i as u64 + 1), 100 + i as u32, if last { 0 } else { VirtqDesc::F_NEXT }, next);
        }
        q.push_avail(ids[0]);
        assert!(d.pop_avail().is_none(), "not visible before publish");
        q.publish();
        let (head, chain) = d.pop_avail().unwrap().unwrap();
        assert_eq!(head, ids[0]);
        assert_eq!(
            chain.iter().map(|c| (c.addr, c.len)).collect::<Vec<_>>(),
            [(0x1000, 100), (0x2000, 101), (0x3000, 102)]
        );
        assert!(q.pop_used().is_none());
        d.push_used(head, 0);
        let u = q.pop_used().unwrap();
        assert_eq!(u.id, ids[0] as u32);
        assert_eq!(q.free_chain(u.id as u16), 3);
        assert_eq!(q.num_free(), 8);
    }

    #[test]
    fn indices_wrap_at_u16() {
        let mut mem = Mem::new(4);
        let (mut q, mut d) = pair(&mut mem, 4, false);
        // Run both sides through 70000 buffers: the free-running indices wrap past 65535.
        let mut seen = 0u32;
        for round in 0..70_000u32 {
            let id = q.alloc().unwrap();
            q.set_desc(id, round as u64, round, VirtqDesc::F_WRITE, 0);
            q.push_avail(id);
            q.publish();
            let (head, chain) = d.pop_avail().unwrap().unwrap();
            assert_eq!(chain[0].addr, round as u64);
            d.push_used(head, round & 0xffff);
            let u = q.pop_used().unwrap();
            assert_eq!((u.id, u.len), (id as u32, round & 0xffff));
            q.free(u.id as u16);
            seen += 1;
        }
        assert_eq!(seen, 70_000);
        assert_eq!(q.avail_idx(), (70_000u32 & 0xffff) as u16);
        assert_eq!(q.last_used(), (70_000u32 & 0xffff) as u16);
    }

    #[test]
    fn used_ring_processing_out_of_order_and_in_batches() {
        let mut mem = Mem::new(16);
        let (mut q, mut d) = pair(&mut mem, 16, false);
        for i in 0..16u16 {
            let id = q.alloc().unwrap();
            q.set_desc(id, i as u64, 64, VirtqDesc::F_WRITE, 0);
            q.push_avail(id);
        }
        assert!(q.alloc().is_none(), "ring full");
        q.publish();
        let mut heads: Vec<u16> = std::iter::from_fn(|| d.pop_avail().map(|r| r.unwrap().0)).collect();
        assert_eq!(heads.len(), 16);
        heads.reverse(); // the device completes them in reverse order
        for &h in &heads[..10] {
            d.push_used(h, 60);
        }
        assert_eq!(q.used_pending(), 10);
        let got: Vec<u32> = (0..q.used_pending()).map(|_| q.take_used().id).collect();
        assert_eq!(got, heads[..10].iter().map(|&h| h as u32).collect::<Vec<_>>());
        assert_eq!(q.used_pending(), 0);
        for &h in &heads[10..] {
            d.push_used(h, 60);
        }
        assert_eq!(q.used_pending(), 6);
    }

    #[test]
    fn notification_suppression_flag_and_event_idx() {
        let mut mem = Mem::new(8);
        let (mut q, mut d) = pair(&mut mem, 8, false);
        assert_eq!(d.avail_flags(), avail::F_NO_INTERRUPT, "polling driver asks for no interrupts");
        assert!(!q.needs_notify(), "nothing published");
        let id = q.alloc().unwrap();
        q.push_avail(id);
        q.publish();
        assert!(q.needs_notify());
        d.set_no_notify(true);
        let id = q.alloc().unwrap();
        q.push_avail(id);
        q.publish();
        assert!(!q.needs_notify(), "device said NO_NOTIFY");

        let mut mem = Mem::new(8);
        let (mut q, mut d) = pair(&mut mem, 8, true);
        d.set_avail_event(1); // notify me once index passes 1, i.e. when entry 1 is added
        for expect in [false, true, false] {
            let id = q.alloc().unwrap();
            q.push_avail(id);
            q.publish();
            assert_eq!(q.needs_notify(), expect);
        }
    }

    /// Posts one buffer, has the device return it, and tells whether the device may interrupt for it; the driver
    /// takes it (keeping `used_event` in step) when `take`.
    fn round(q: &mut SplitQueue, d: &mut DeviceQueue, event_idx: bool, take: bool) -> bool {
        let id = q.alloc().unwrap();
        q.set_desc(id, 0x1000, 64, VirtqDesc::F_WRITE, 0);
        q.push_avail(id);
        q.publish();
        let (head, _) = d.pop_avail().unwrap().unwrap();
        let old = d.used_idx();
        d.push_used(head, 64);
        let irq = d.needs_interrupt(event_idx, old);
        if take {
            let u = q.pop_used().unwrap();
            q.free(u.id as u16);
            q.sync_used_event();
        }
        irq
    }

    #[test]
    fn interrupts_are_suppressed_until_armed_with_flags_and_with_event_idx() {
        for event_idx in [false, true] {
            let mut mem = Mem::new(8);
            let (mut q, mut d) = pair(&mut mem, 8, event_idx);
            if event_idx {
                assert_eq!(
                    d.avail_flags(),
                    0,
                    "with EVENT_IDX the driver keeps the flags 0 (docs/hw/virtio.md §2.7.7)"
                );
            }
            assert!(!q.intr_armed());
            // Polled: no entry may interrupt, across many ring wraps and past the 16-bit index wrap.
            for i in 0..70_000u32 {
                assert!(
                    !round(&mut q, &mut d, event_idx, true),
                    "event_idx {event_idx}: entry {i} interrupts while suppressed"
                );
            }
            // Armed: the next entry interrupts; taken while armed, the following one does too.
            assert!(!q.intr_enable(), "nothing pending");
            assert!(round(&mut q, &mut d, event_idx, true), "event_idx {event_idx}: armed, no interrupt");
            assert!(round(&mut q, &mut d, event_idx, false), "event_idx {event_idx}: still armed after a take");
            // Disarmed with an entry untaken: quiet; the entry is reported at the next arm.
            q.intr_disable();
            assert!(!round(&mut q, &mut d, event_idx, false), "event_idx {event_idx}: disarmed but interrupts");
            assert!(q.intr_enable(), "event_idx {event_idx}: arming must report the entries already there");
        }
    }

    #[test]
    fn device_rejects_looping_chains() {
        let mut mem = Mem::new(4);
        let (mut q, mut d) = pair(&mut mem, 4, false);
        q.set_desc(0, 0, 1, VirtqDesc::F_NEXT, 1);
        q.set_desc(1, 0, 1, VirtqDesc::F_NEXT, 0);
        q.push_avail(0);
        q.publish();
        assert!(d.pop_avail().unwrap().is_err());
    }

    proptest::proptest! {
        /// Any interleaving of posting and completing keeps every descriptor accounted for, and the driver sees
        /// exactly what the device returned, in order.
        #[test]
        fn accounting_under_random_interleavings(ops in proptest::collection::vec((0u8..4, 1usize..5), 1..200), start in proptest::prelude::any::<u16>()) {
            let size = 8u16;
            let mut mem = Mem::new(size);
            let (mut q, mut d) = pair(&mut mem, size, false);
            // Start both sides at an arbitrary index so wraps happen.
            q.avail_idx = start; q.kicked_idx = start; q.last_used = start;
            q.write_avail_u16(avail::IDX, start);
            d.force_indices(start, start);
            let mut in_device: Vec<u16> = Vec::new();
            let mut returned: std::collections::VecDeque<u16> = Default::default();
            for (op, n) in ops {
                match op {
                    0 | 1 => {
                        // post up to n chains of length 1..=2
                        for k in 0..n {
                            if q.num_free() < 2 { break; }
                            let a = q.alloc().unwrap();
                            if k % 2 == 0 {
                                let b = q.alloc().unwrap();
                                q.set_desc(a, 1, 1, VirtqDesc::F_NEXT, b);
                                q.set_desc(b, 2, 2, 0, 0);
                            } else {
                                q.set_desc(a, 1, 1, 0, 0);
                            }
                            q.push_avail(a);
                        }
                        q.publish();
                        while let Some(r) = d.pop_avail() { in_device.push(r.unwrap().0); }
                    }
                    2 => {
                        for _ in 0..n {
                            if in_device.is_empty() { break; }
                            let h = in_device.remove(n % in_device.len());
                            d.push_used(h, 7);
                            returned.push_back(h);
                        }
                    }
                    _ => {
                        while let Some(u) = q.pop_used() {
                            proptest::prop_assert_eq!(Some(u.id as u16), returned.pop_front());
                            q.free_chain(u.id as u16);
                        }
                    }
                }
                let chain_descs: usize = in_device.iter().chain(returned.iter()).map(|&h| if q.desc(h).flags & VirtqDesc::F_NEXT != 0 { 2 } else { 1 }).sum();
                proptest::prop_assert_eq!(q.num_free() + chain_descs, size as usize);
            }
        }
    }
}
