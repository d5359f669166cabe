//! Pool behaviour: names, lookup, configuration limits, bulk allocation contracts, per-lcore caches, debug checks
//! and dropping a pool with buffers still out.
//!
//! Tests in one binary run in parallel and lcore ids are process-wide, so every test binds its own ids (20..40).

use hugepage::Allocator;
use mempool::{lcore, Error, Mbuf, Mempool, PacketBatch, PoolConfig, MAX_CACHE_SIZE};

fn new_pool(name: &str, config: PoolConfig) -> Mempool {
    Mempool::new(name, &config, &Allocator::no_huge()).unwrap()
}

#[test]
fn names_are_unique_while_alive_and_reusable_after_drop() {
    let alloc = Allocator::no_huge();
    let a = Mempool::new("pool-name", &PoolConfig::with_size(16), &alloc).unwrap();
    assert_eq!(a.name(), "pool-name");
    match Mempool::new("pool-name", &PoolConfig::with_size(8), &alloc) {
        Err(Error::NameExists(name)) => assert_eq!(name, "pool-name"),
        other => panic!("expected NameExists, got {other:?}"),
    }
    // A clone keeps the name taken.
    let clone = a.clone();
    drop(a);
    assert!(matches!(Mempool::new("pool-name", &PoolConfig::with_size(8), &alloc), Err(Error::NameExists(_))));
    assert!(clone.is_full());
    drop(clone);
    assert!(Mempool::lookup("pool-name").is_none());
    let b = Mempool::new("pool-name", &PoolConfig::with_size(8), &alloc).unwrap();
    assert_eq!(b.size(), 8);
    assert!(b.is_full());
}

#[test]
fn lookup_finds_the_same_pool() {
    let p = new_pool("pool-lookup", PoolConfig::with_size(10));
    assert!(Mempool::lookup("pool-lookup-other").is_none());
    let q = Mempool::lookup("pool-lookup").expect("live pool found by name");
    assert_eq!((q.name(), q.size()), ("pool-lookup", 10));
    let m = q.alloc().unwrap();
    assert_eq!(p.in_use(), 1, "the looked-up handle shares the pool");
    assert_eq!(p.available(), 9);
    drop(q);
    drop(m);
    assert!(p.is_full());
}

#[test]
fn invalid_configs_are_rejected() {
    let alloc = Allocator::no_huge();
    let bad = |c: PoolConfig| match Mempool::new("pool-invalid", &c, &alloc) {
        Err(Error::InvalidConfig(msg)) => msg,
        other => panic!("expected InvalidConfig for {c:?}, got {other:?}"),
    };
    assert!(bad(PoolConfig::with_size(0)).contains("size"));
    let msg = bad(PoolConfig { cache_size: MAX_CACHE_SIZE + 1, ..PoolConfig::with_size(64) });
    assert!(msg.contains("cache"), "{msg}");
    bad(PoolConfig { headroom: 1024, data_room: u16::MAX, ..PoolConfig::with_size(4) });
    // A failed creation does not take the name.
    let ok =
        Mempool::new("pool-invalid", &PoolConfig { cache_size: MAX_CACHE_SIZE, ..PoolConfig::with_size(4) }, &alloc)
            .unwrap();
    assert!(ok.is_full());
}

#[test]
fn cache_size_is_capped_by_pool_size() {
    let p = new_pool("pool-cache-cap", PoolConfig { cache_size: 256, ..PoolConfig::with_size(30) });
    assert_eq!(p.cache_size(), 20, "cache clamped to 2/3 of the pool");
    let p1 = new_pool("pool-cache-cap-1", PoolConfig { cache_size: 256, ..PoolConfig::with_size(1) });
    assert_eq!(p1.cache_size(), 1);
    let big = new_pool("pool-cache-cap-big", PoolConfig { cache_size: 256, ..PoolConfig::with_size(4096) });
    assert_eq!(big.cache_size(), 256);
    let none = new_pool("pool-cache-cap-0", PoolConfig { cache_size: 0, ..PoolConfig::with_size(100) });
    assert_eq!(none.cache_size(), 0);

    // One lcore can still take every buffer of a small cached pool, and single buffers of a pool of one.
    std::thread::spawn(move || {
        let _g = lcore::bind_current_thread(20).unwrap();
        let all: Vec<Mbuf> = (0..30).map(|_| p.alloc().expect("whole pool reachable from one lcore")).collect();
        assert!(p.alloc().is_none());
        assert_eq!(p.available(), 0);
        drop(all);
        assert!(p.is_full());
        for _ in 0..10 {
            let m = p1.alloc().unwrap();
            assert!(p1.alloc().is_none());
            drop(m);
            assert!(p1.is_full());
        }
        let mut batch = PacketBatch::with_capacity(64);
        for _ in 0..50 {
            assert!(batch.alloc_from(&big, 64));
            batch.clear();
        }
        assert!(big.is_full());
    })
    .join()
    .unwrap();
}

#[test]
fn lcore_cache_is_counted_and_follows_the_lcore_id() {
    let cfg = PoolConfig { cache_size: 32, ..PoolConfig::with_size(256) };
    let p = new_pool("pool-cache-follow", cfg);
    let p2 = p.clone();
    // An lcore thread frees a lot into its cache, then lets the id go.
    std::thread::spawn(move || {
        let _g = lcore::bind_current_thread(21).unwrap();
        let all: Vec<Mbuf> = (0..256).map(|_| p2.alloc().unwrap()).collect();
        drop(all);
        assert!(p2.is_full(), "cached buffers count as available");
    })
    .join()
    .unwrap();
    assert!(p.is_full());
    // An unbound thread reaches only the shared ring: at most 1.5 x cache size stayed behind in lcore 21's cache.
    let mut outside: Vec<Mbuf> = Vec::new();
    while let Some(m) = p.alloc() {
        outside.push(m);
    }
    let stranded = 256 - outside.len();
    assert!(stranded <= 48, "{stranded} buffers stuck in a cache of 32");
    assert_eq!(p.available(), stranded);
    // The next holder of lcore 21 gets them.
    let p3 = p.clone();
    let got = std::thread::spawn(move || {
        let _g = lcore::bind_current_thread(21).unwrap();
        let rest: Vec<Mbuf> = std::iter::from_fn(|| p3.alloc()).collect();
        rest.len()
    })
    .join()
    .unwrap();
    assert_eq!(got, stranded);
    drop(outside);
    assert!(p.is_full());
}

#[test]
fn alloc_bulk_is_all_or_nothing() {
    let p = new_pool("pool-bulk", PoolConfig { cache_size: 0, ..PoolConfig::with_size(40) });
    let mut slots: Vec<Option<Mbuf>> = (0..32).map(|_| None).collect();
    assert!(p.alloc_bulk(&mut slots));
    assert!(slots.iter().all(Option::is_some));
    assert_eq!(p.in_use(), 32);
    let mut more: Vec<Option<Mbuf>> = (0..9).map(|_| None).collect();
    assert!(!p.alloc_bulk(&mut more), "only 8 left");
    assert!(more.iter().all(Option::is_none));
    assert_eq!(p.in_use(), 32);
    // Refilling full slots frees what they held first.
    assert!(p.alloc_bulk(&mut slots[..8]));
    assert_eq!(p.in_use(), 32);
    let mut batch = PacketBatch::with_capacity(16);
    assert!(batch.alloc_from(&p, 8));
    assert!(!batch.alloc_from(&p, 1), "pool empty");
    assert_eq!(batch.len(), 8, "a failed alloc_from leaves the batch alone");
    assert!(p.alloc().is_none());
    assert!(p.alloc_bulk(&mut []), "zero buffers always succeed");
    drop(slots);
    drop(batch);
    assert!(p.is_full());
}

#[test]
fn alloc_from_respects_batch_room() {
    let p = new_pool("pool-batch-room", PoolConfig::with_size(100));
    let mut batch = PacketBatch::with_capacity(10);
    assert!(batch.alloc_from(&p, 6));
    assert!(!batch.alloc_from(&p, 5), "only 4 slots left");
    assert_eq!((batch.len(), p.in_use()), (6, 6));
    assert!(batch.alloc_from(&p, 4));
    assert!(batch.is_full());
    let indexes: std::collections::HashSet<u32> = batch.iter().map(Mbuf::pool_index).collect();
    assert_eq!(indexes.len(), 10, "ten distinct buffers");
    drop(batch);
    assert!(p.is_full());
}

/// Bulk requests larger than one cached burst (512) are served in chunks; a request that fails part-way must
/// still change nothing (documented contract of `alloc_bulk`).
#[test]
fn alloc_bulk_over_512_is_all_or_nothing() {
    let p = new_pool("pool-bulk-big", PoolConfig { cache_size: 0, ..PoolConfig::with_size(1000) });
    let held: Vec<Mbuf> = (0..450).map(|_| p.alloc().unwrap()).collect();
    let mut slots: Vec<Option<Mbuf>> = (0..600).map(|_| None).collect();
    assert!(!p.alloc_bulk(&mut slots), "550 free, 600 asked");
    assert_eq!(slots.iter().filter(|s| s.is_some()).count(), 0, "a failed alloc_bulk filled slots");
    assert_eq!(p.in_use(), 450);
    drop(held);
    assert!(p.alloc_bulk(&mut slots));
    assert_eq!(p.in_use(), 600);
    drop(slots);
    assert!(p.is_full());
}

#[test]
fn dropping_a_pool_with_buffers_out_keeps_the_memory() {
    let p = new_pool("pool-drop-early", PoolConfig::with_size(8));
    let mut m = p.alloc().unwrap();
    let mut batch = PacketBatch::new();
    assert!(batch.alloc_from(&p, 3));
    p.allow_leak_on_drop();
    drop(p);
    assert!(Mempool::lookup("pool-drop-early").is_none(), "the name is released");
    // The buffers stay usable, and freeing them later is fine.
    m.append(100).unwrap().fill(0x5a);
    assert!(m.data().iter().all(|&b| b == 0x5a));
    drop(m);
    batch.clear();
    // The name can be reused at once; the new pool is independent.
    let q = new_pool("pool-drop-early", PoolConfig::with_size(4));
    assert!(q.is_full());
}

#[test]
#[cfg_attr(
    debug_assertions,
    should_panic(expected = "mempool pool-leak-check: dropped with 2 of 4 buffers still in use")
)]
fn a_leak_fails_the_test_in_debug_builds() {
    let p = new_pool("pool-leak-check", PoolConfig::with_size(4));
    let mut batch = PacketBatch::new();
    assert!(batch.alloc_from(&p, 2));
    drop(p);
    // Release builds only print; the buffers are still freed into the kept memory.
    batch.clear();
}

#[test]
fn a_leak_found_while_unwinding_keeps_the_first_panic() {
    // A second panic during unwinding would abort the whole test binary: the pool must only print then.
    let t = std::thread::spawn(|| {
        let p = new_pool("pool-leak-unwind", PoolConfig::with_size(4));
        let _m = p.alloc().unwrap();
        let _p = p;
        panic!("the first failure");
    });
    let err = t.join().expect_err("the thread panicked");
    assert_eq!(err.downcast_ref::<&str>(), Some(&"the first failure"));
}

#[test]
fn get_raw_and_put_raw_round_trip() {
    let p = new_pool("pool-raw", PoolConfig::with_size(64));
    let mut raw = [std::ptr::NonNull::dangling(); 16];
    // SAFETY: every element taken is given back once below.
    assert!(unsafe { p.get_raw(&mut raw) });
    assert_eq!(p.in_use(), 16);
    // SAFETY: ours, unchanged, not used afterwards.
    unsafe { p.put_raw(&raw[..8]) };
    assert_eq!(p.in_use(), 8);
    for hdr in &raw[8..] {
        // SAFETY: each remaining element is owned here and wrapped exactly once.
        drop(unsafe { p.adopt_raw(*hdr) });
    }
    assert!(p.is_full());
}

#[test]
#[should_panic(expected = "double free")]
fn debug_mode_catches_a_double_free() {
    let p = new_pool("pool-double-free", PoolConfig { debug: true, cache_size: 0, ..PoolConfig::with_size(4) });
    let raw = p.alloc().unwrap().into_raw();
    // SAFETY: deliberately wrong (two owners of one element): the debug check must catch the second free before
    // it reaches the free ring.
    let (a, b) = unsafe { (Mbuf::from_raw(raw), Mbuf::from_raw(raw)) };
    drop(a);
    assert!(p.is_full());
    drop(b);
}

#[test]
fn debug_mode_double_free_leaves_the_pool_consistent() {
    let p = new_pool("pool-double-free-2", PoolConfig { debug: true, cache_size: 0, ..PoolConfig::with_size(4) });
    let raw = p.alloc().unwrap().into_raw();
    // SAFETY: as above, deliberately two owners.
    let (a, b) = unsafe { (Mbuf::from_raw(raw), Mbuf::from_raw(raw)) };
    drop(a);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(b)));
    assert!(caught.is_err(), "second free not caught");
    // The element went back once: four distinct buffers, then none.
    let all: Vec<Mbuf> = std::iter::from_fn(|| p.alloc()).collect();
    assert_eq!(all.len(), 4);
    let distinct: std::collections::HashSet<u32> = all.iter().map(Mbuf::pool_index).collect();
    assert_eq!(distinct.len(), 4);
    drop(all);
    assert!(p.is_full());
}

/// `available()` is a snapshot, but it must never claim more free buffers than the pool has: `in_use()` would
/// underflow, and the pool's drop (which frees the memory when every buffer looks back) could free memory a thread
/// is still returning buffers into. A bound thread churns bursts that make its cache flush to the ring; another
/// thread watches the count.
#[test]
fn available_never_exceeds_size_under_churn() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let p = new_pool("pool-available-race", PoolConfig { cache_size: 64, ..PoolConfig::with_size(512) });
    let stop = Arc::new(AtomicBool::new(false));
    let (p2, stop2) = (p.clone(), stop.clone());
    let churn = std::thread::spawn(move || {
        let _g = lcore::bind_current_thread(22).unwrap();
        let (mut a, mut b) = (PacketBatch::with_capacity(30), PacketBatch::with_capacity(60));
        while !stop2.load(Ordering::Relaxed) {
            // With a cache of 64 (flush at 96): taking 30 then 60 leaves 64 cached; freeing 30 makes 94, freeing
            // 60 more makes 154 and flushes 90 to the ring from a cache that was above its size.
            if a.alloc_from(&p2, 30) && b.alloc_from(&p2, 60) {
                a.clear();
                b.clear();
            }
            a.clear();
            b.clear();
        }
    });
    let mut worst = 0usize;
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(300);
    while std::time::Instant::now() < deadline {
        for _ in 0..1000 {
            worst = worst.max(p.available());
        }
    }
    stop.store(true, Ordering::Relaxed);
    churn.join().unwrap();
    assert!(worst <= 512, "available() reported {worst} free buffers in a pool of 512");
    assert!(p.is_full());
}

#[test]
fn element_of_maps_every_byte_of_an_element_back_to_it() {
    let p = new_pool("pool-element-of", PoolConfig::with_size(64));
    let mut held = Vec::new();
    for _ in 0..64 {
        let mut m = p.alloc().unwrap();
        let idx = m.pool_index();
        let room = m.data_room_mut();
        let (first, last) = (room.as_ptr(), room.as_ptr().wrapping_add(room.len() - 1));
        for ptr in [first, last] {
            let (i, hdr) = p.element_of(ptr).expect("inside the pool");
            assert_eq!(i, idx);
            // The header found is this buffer's own (same data start).
            // SAFETY: only compared, never used as an owner.
            let again = unsafe { Mbuf::from_raw(hdr) };
            assert_eq!(again.data_iova(), m.data_iova());
            std::mem::forget(again);
        }
        held.push(m);
    }
    let base = p.memory().as_ptr();
    assert!(p.element_of(base.wrapping_sub(1)).is_none(), "before the memory");
    assert!(p.element_of(base.wrapping_add(64 * p.element_size())).is_none(), "past the last element");
}

/// A batch freed in bulk (`clear`) sends every segment to its own pool, whatever the mix: a burst of single
/// segments of one pool (the one-put fast path), and bursts where a chain or a foreign buffer sits first, in the
/// middle or last (the general path). Run with and without an lcore cache.
#[test]
fn batch_clear_sends_every_segment_home_in_any_mix() {
    let a = new_pool("pool-free-mix-a", PoolConfig { size: 200, cache_size: 32, ..Default::default() });
    let b = new_pool("pool-free-mix-b", PoolConfig { size: 200, cache_size: 32, ..Default::default() });
    let check = || {
        // (pool of each packet, segments of each packet)
        let patterns: [&[(bool, usize)]; 6] = [
            &[(false, 1); 32],
            &[(true, 1), (false, 1), (false, 1), (false, 1), (false, 1)],
            &[(false, 1), (false, 1), (false, 1), (false, 1), (false, 1), (true, 1)],
            &[(false, 2), (false, 1), (false, 1), (false, 1), (false, 1)],
            &[(false, 1), (false, 1), (false, 1), (false, 1), (false, 1), (false, 1), (false, 3)],
            &[(false, 1), (true, 1), (false, 2), (true, 1), (false, 1), (false, 1), (false, 1), (false, 1), (true, 2)],
        ];
        let mut batch = PacketBatch::with_capacity(32);
        for pattern in patterns {
            for &(in_b, segs) in pattern {
                let home = if in_b { &b } else { &a };
                let mut m = home.alloc().unwrap();
                for s in 1..segs {
                    // Tails from the other pool: each segment goes back to where it came from.
                    let tail = if s % 2 == 1 { &b } else { &a };
                    m.chain(tail.alloc().unwrap());
                }
                batch.push(m).unwrap();
            }
            assert!(a.in_use() + b.in_use() > 0);
            batch.clear();
            assert!(batch.is_empty());
            assert!(a.is_full() && b.is_full(), "{pattern:?}: a {} b {} in use", a.in_use(), b.in_use());
        }
    };
    check();
    std::thread::scope(|s| {
        s.spawn(|| {
            let _g = lcore::bind_current_thread(23).unwrap();
            check();
        });
    });
    assert!(a.is_full() && b.is_full());
}
