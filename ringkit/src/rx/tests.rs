//! The engine on a toy descriptor format of its own (one 16-byte descriptor per slot, the write-back in it), with the
//! test playing the device: bursts, chains across bursts, bad frames, the ring's end, the refill and its tail, an
//! empty pool.

use std::ptr::NonNull;
use std::sync::Arc;

use drvkit::reg::{bit64, Field64};
use hugepage::Allocator;
use mempool::{Mempool, PacketBatch, PoolConfig};
use pktio::stats::RxQueueStats;

use super::{FastFrame, RxBuffers, RxDescriptor, RxEngine, RxEntry, RxFormat, RxMeta};

/// A slot: the buffer address, then the write-back word.
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Toy {
    pub(super) addr: u64,
    pub(super) wb: u64,
}

pub(super) const DONE: u64 = bit64(0);
pub(super) const LAST: u64 = bit64(1);
pub(super) const BAD: u64 = bit64(2);
pub(super) const LEN: Field64 = Field64::new(31, 16);
/// The flags a toy frame gets (any value the engine must copy through).
const FLAGS: u64 = 0x40;

impl RxDescriptor for Toy {}

struct ToyFormat;

// SAFETY: fast_one takes only done, last, good write-backs of at most max_len bytes.
unsafe impl RxFormat for ToyFormat {
    type Desc = Toy;
    type Wb = Toy;
    type Memo = u32;

    unsafe fn fast_one(&self, d: *mut Toy, max_len: u16, memo: &mut u32) -> Option<FastFrame> {
        // SAFETY: a slot of the ring (the trait's contract); the test's device writes from this thread.
        let wb = unsafe { std::ptr::addr_of!((*d).wb).read_volatile() };
        let len = LEN.get(wb) as u16;
        if wb & (DONE | LAST | BAD) != DONE | LAST || len > max_len {
            return None;
        }
        *memo += 1;
        Some(FastFrame { len, flags: FLAGS, ptype: 1, rss: *memo })
    }

    unsafe fn decode(&mut self, d: *mut Toy, _memo: &mut u32) -> RxEntry {
        // SAFETY: as above.
        let wb = unsafe { std::ptr::addr_of!((*d).wb).read_volatile() };
        if wb & DONE == 0 {
            return RxEntry::Pending;
        }
        let meta = RxMeta { flags: FLAGS, ptype: 2, rss: 0xabc, vlan: 0 };
        RxEntry::Buf { len: LEN.get(wb) as u16, last: wb & LAST != 0, bad: wb & BAD != 0, meta }
    }
}

/// A ring of `size` slots on `pool` and the device's view of it.
struct Ring {
    engine: RxEngine<ToyFormat>,
    slots: Box<[Toy]>,
    stats: Arc<RxQueueStats>,
}

impl Ring {
    fn new(size: usize, pool: &Mempool) -> Ring {
        let mut slots = vec![Toy::default(); size].into_boxed_slice();
        let ring = NonNull::new(slots.as_mut_ptr()).unwrap();
        // SAFETY: `slots` lives as long as the engine (dropped after it: field order) and is not moved (a box).
        let bufs = unsafe { RxBuffers::new(ring, size, 4, pool, 3) }.unwrap();
        let stats = Arc::new(RxQueueStats::default());
        // SAFETY: the completions are the slots; max_len is the pool's data room.
        let engine = unsafe { RxEngine::new(bufs, ring, ToyFormat, 0, pool.data_room(), stats.clone()) };
        Ring { engine, slots, stats }
    }

    /// The device writes `wb` into slot `i`, which must be one it owns (before the tail).
    fn complete(&mut self, i: usize, len: u16, flags: u64) {
        let b = self.engine.bufs();
        assert!(
            ringkit_dist(b.next(), i, b.size()) < ringkit_dist(b.next(), b.tail(), b.size()),
            "slot {i} not posted"
        );
        let d = &mut self.slots[i];
        assert_ne!(d.addr, 0, "a posted slot has its buffer address");
        // SAFETY: a slot of the ring; nothing else writes it now.
        unsafe { std::ptr::addr_of_mut!(d.wb).write_volatile(DONE | flags | LEN.val(len as u64)) };
    }

    fn burst(&mut self, batch: &mut PacketBatch) -> (usize, Option<u32>) {
        self.engine.rx_burst(batch)
    }
}

fn ringkit_dist(from: usize, to: usize, n: usize) -> usize {
    crate::idx::dist(from, to, n)
}

fn pool(name: &str, size: u32) -> Mempool {
    Mempool::new(name, &PoolConfig { size, cache_size: 0, ..Default::default() }, &Allocator::no_huge()).unwrap()
}

#[test]
fn single_frames_come_out_with_their_fields_and_the_refill_moves_the_tail() {
    let p = pool("ringkit-rx-single", 127);
    let mut r = Ring::new(16, &p);
    assert_eq!((r.engine.bufs().next(), r.engine.bufs().tail()), (0, 15));
    for i in 0..5 {
        r.complete(i, 60 + i as u16, LAST);
    }
    let mut b = PacketBatch::with_capacity(32);
    let (got, tail) = r.burst(&mut b);
    assert_eq!(got, 5);
    assert_eq!(tail, Some((15 + 5) % 16), "5 held >= the threshold of 4: refilled, the tail moved past them");
    let lens: Vec<u32> = b.iter().map(|m| m.pkt_len()).collect();
    assert_eq!(lens, [60, 61, 62, 63, 64]);
    assert!(b.iter().all(|m| m.ol_flags() == FLAGS && m.port() == 3 && m.nb_segs() == 1));
    assert_eq!((r.stats.packets.get(), r.stats.bytes.get()), (5, 310));
    // Nothing new: no packet, and no refill due.
    b.clear();
    assert_eq!(r.burst(&mut b), (0, None));
    drop(r);
    assert!(p.is_full(), "{} buffers out", p.in_use());
}

#[test]
fn a_chain_waits_across_bursts_and_a_bad_buffer_drops_its_frame() {
    let p = pool("ringkit-rx-chain", 127);
    let mut r = Ring::new(16, &p);
    let mut b = PacketBatch::with_capacity(32);
    r.complete(0, 1000, 0);
    assert_eq!(r.burst(&mut b).0, 0, "the frame's last buffer has not come");
    assert_eq!(r.engine.buffers_held(), 16, "the pending head is still the ring's");
    r.complete(1, 500, LAST);
    assert_eq!(r.burst(&mut b).0, 1);
    let m = &b.as_slice()[0];
    assert_eq!((m.pkt_len(), m.nb_segs(), m.data_len(), m.ol_flags(), m.rss_hash()), (1500, 2, 1000, FLAGS, 0xabc));
    // A bad middle buffer: the whole frame goes, counted once; the next frame is whole.
    r.complete(2, 100, 0);
    r.complete(3, 100, BAD);
    r.complete(4, 100, LAST);
    r.complete(5, 70, LAST);
    b.clear();
    assert_eq!(r.burst(&mut b).0, 1);
    assert_eq!(b.as_slice()[0].pkt_len(), 70);
    assert_eq!((r.stats.errors.get(), r.stats.packets.get()), (1, 2));
    // A buffer longer than the data room drops its frame too.
    r.complete(6, u16::MAX, LAST);
    b.clear();
    assert_eq!(r.burst(&mut b).0, 0);
    assert_eq!(r.stats.errors.get(), 2);
    b.clear();
    drop(r);
    assert!(p.is_full(), "{} buffers out", p.in_use());
}

#[test]
fn bursts_run_around_the_ring_and_frames_come_out_whole_and_in_order() {
    let p = pool("ringkit-rx-wrap", 255);
    let mut r = Ring::new(16, &p);
    let mut b = PacketBatch::with_capacity(8);
    let (mut want, mut got) = (Vec::new(), Vec::new());
    let (mut len, mut frame) = (60u16, 0u32);
    for round in 0..20 {
        // The device completes every slot it owns; now and then a chain (across the ring's end too), the last owned
        // slot always ending a frame.
        let (next, tail, size) = (r.engine.bufs().next(), r.engine.bufs().tail(), r.engine.bufs().size());
        let owned = ringkit_dist(next, tail, size);
        for k in 0..owned {
            let last = k + 1 == owned || (round + k) % 3 != 0;
            r.complete(crate::idx::add(next, k, size), len, if last { LAST } else { 0 });
            frame += len as u32;
            if last {
                want.push(frame);
                frame = 0;
            }
            len = 60 + (len - 59) % 200;
        }
        for _ in 0..4 {
            b.clear();
            r.burst(&mut b);
            got.extend(b.iter().map(|m| m.pkt_len()));
        }
        assert_eq!(got, want, "round {round}");
    }
    assert!(want.len() > 100 && want.iter().any(|&l| l > 300), "chains and wraps were exercised");
    assert_eq!((r.stats.packets.get(), r.stats.errors.get()), (want.len() as u64, 0));
    b.clear();
    drop(r);
    assert!(p.is_full(), "{} buffers out", p.in_use());
}

#[test]
fn an_empty_pool_counts_nombuf_and_the_ring_refills_later() {
    // 16 slots + 4 spare buffers: the first refill of 5 cannot be had.
    let p = pool("ringkit-rx-nombuf", 20);
    let mut r = Ring::new(16, &p);
    let spare: Vec<_> = (0..4).map(|_| p.alloc().unwrap()).collect();
    for i in 0..5 {
        r.complete(i, 64, LAST);
    }
    let mut b = PacketBatch::with_capacity(32);
    assert_eq!(r.burst(&mut b), (5, None), "no buffer to refill with: the tail stays");
    assert_eq!(r.stats.nombuf.get(), 5);
    drop(spare);
    b.clear();
    let (got, tail) = r.burst(&mut b);
    assert_eq!((got, tail), (0, Some(4)), "retried while idle, once the packets went back");
    drop(r);
    assert!(p.is_full(), "{} buffers out", p.in_use());
}
