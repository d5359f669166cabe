//! Mempool accounting under two threads sharing one pool (proptest).
//!
//! Each thread runs a random sequence of alloc / alloc_bulk / PacketBatch::alloc_from / clear / drop / chain /
//! split_first / retain. Every buffer handed out is recorded by its pool index in a shared set (a second live
//! owner of an index is a duplicate) and stamped with a unique tag in its first 8 bytes (checked on every free,
//! so two owners writing one buffer are caught too). The run is cut into phases; between phases both threads are
//! quiet, the main thread checks `available() + live == size`, and may hand each thread's buffers to the other
//! (so buffers are freed on another lcore than the one they came from). At the end the pool must be full.
//!
//! Variants: one thread bound to an lcore and one not; both bound to different lcores; caches on or off.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use hugepage::Allocator;
use mempool::{lcore, Mbuf, Mempool, PacketBatch, PoolConfig};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Alloc,
    AllocBulk(usize),
    BatchAlloc(usize),
    BatchClear,
    Drop(usize),
    Chain(usize, usize),
    SplitFirst(usize),
    PushToBatch(usize),
    Retain(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Alloc),
        2 => (1usize..48).prop_map(Op::AllocBulk),
        3 => (1usize..40).prop_map(Op::BatchAlloc),
        1 => Just(Op::BatchClear),
        3 => any::<usize>().prop_map(Op::Drop),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Chain(a, b)),
        1 => any::<usize>().prop_map(Op::SplitFirst),
        2 => any::<usize>().prop_map(Op::PushToBatch),
        2 => any::<u64>().prop_map(Op::Retain),
    ]
}

/// One segment as the test knows it: pool index and the tag written into its first 8 bytes.
type Seg = (u32, u64);

/// A packet (maybe a chain) with what the test expects of each of its segments.
struct Owned {
    m: Mbuf,
    segs: Vec<Seg>,
}

/// What one thread holds between phases.
struct Worker {
    id: u64,
    next_tag: u64,
    held: Vec<Owned>,
    batch: PacketBatch,
    batch_segs: Vec<Vec<Seg>>,
}

impl Worker {
    fn new(id: u64) -> Self {
        Worker { id, next_tag: 0, held: Vec::new(), batch: PacketBatch::with_capacity(64), batch_segs: Vec::new() }
    }

    fn live_segments(&self) -> usize {
        self.held.iter().map(|o| o.segs.len()).sum::<usize>() + self.batch_segs.iter().map(Vec::len).sum::<usize>()
    }
}

/// Registers a fresh buffer: it must not be live elsewhere; stamps it with a new tag.
fn adopt(m: &mut Mbuf, w_id: u64, next_tag: &mut u64, live: &Mutex<HashSet<u32>>) -> Seg {
    assert_eq!((m.data_len(), m.pkt_len(), m.nb_segs()), (0, 0, 1), "a fresh buffer is reset");
    let index = m.pool_index();
    assert!(live.lock().unwrap().insert(index), "buffer {index} handed out while still live");
    *next_tag += 1;
    let tag = (w_id << 48) | *next_tag;
    m.append(8).expect("room for a tag").copy_from_slice(&tag.to_le_bytes());
    (index, tag)
}

/// Checks a packet's segments against what the test expects, then forgets them (the caller frees the packet).
fn release(m: &Mbuf, segs: &[Seg], live: &Mutex<HashSet<u32>>) {
    assert_eq!(m.nb_segs() as usize, segs.len());
    assert_eq!(m.pkt_len(), 8 * segs.len() as u32);
    let seen: Vec<u64> = m.segments().map(|s| u64::from_le_bytes(s.data[..8].try_into().unwrap())).collect();
    let expect: Vec<u64> = segs.iter().map(|s| s.1).collect();
    assert_eq!(seen, expect, "buffer data changed under its owner");
    let mut live = live.lock().unwrap();
    for (index, _) in segs {
        assert!(live.remove(index), "freeing buffer {index} that is not live");
    }
}

fn run(w: &mut Worker, pool: &Mempool, ops: &[Op], live: &Mutex<HashSet<u32>>) {
    let id = w.id;
    for op in ops {
        match *op {
            Op::Alloc => {
                if let Some(mut m) = pool.alloc() {
                    let seg = adopt(&mut m, id, &mut w.next_tag, live);
                    w.held.push(Owned { m, segs: vec![seg] });
                }
            }
            Op::AllocBulk(n) => {
                let mut slots: Vec<Option<Mbuf>> = (0..n).map(|_| None).collect();
                if pool.alloc_bulk(&mut slots) {
                    for slot in slots {
                        let mut m = slot.expect("alloc_bulk filled every slot");
                        let seg = adopt(&mut m, id, &mut w.next_tag, live);
                        w.held.push(Owned { m, segs: vec![seg] });
                    }
                } else {
                    assert!(slots.iter().all(Option::is_none), "failed alloc_bulk filled slots");
                }
            }
            Op::BatchAlloc(n) => {
                let before = w.batch.len();
                if w.batch.alloc_from(pool, n) {
                    assert_eq!(w.batch.len(), before + n);
                    for m in &mut w.batch.as_mut_slice()[before..] {
                        let seg = adopt(m, id, &mut w.next_tag, live);
                        w.batch_segs.push(vec![seg]);
                    }
                } else {
                    assert_eq!(w.batch.len(), before, "failed alloc_from changed the batch");
                }
            }
            Op::BatchClear => {
                for (m, segs) in w.batch.iter().zip(&w.batch_segs) {
                    release(m, segs, live);
                }
                w.batch.clear();
                w.batch_segs.clear();
                assert!(w.batch.is_empty());
            }
            Op::Drop(i) => {
                if !w.held.is_empty() {
                    let o = w.held.swap_remove(i % w.held.len());
                    release(&o.m, &o.segs, live);
                    drop(o);
                }
            }
            Op::Chain(i, j) => {
                if w.held.len() >= 2 {
                    let j = j % w.held.len();
                    let tail = w.held.swap_remove(j);
                    let i = i % w.held.len();
                    let head = &mut w.held[i];
                    let (len, segs) = (head.m.pkt_len() + tail.m.pkt_len(), head.m.nb_segs() + tail.m.nb_segs());
                    head.m.chain(tail.m);
                    head.segs.extend(tail.segs);
                    assert_eq!((head.m.pkt_len(), head.m.nb_segs()), (len, segs));
                }
            }
            Op::SplitFirst(i) => {
                if !w.held.is_empty() {
                    let n = w.held.len();
                    let head = &mut w.held[i % n];
                    let rest_segs = head.segs.split_off(1);
                    match head.m.split_first() {
                        Some(rest) => {
                            assert!(!rest_segs.is_empty());
                            assert_eq!(rest.pool_index(), rest_segs[0].0);
                            assert_eq!((head.m.nb_segs(), head.m.pkt_len()), (1, 8));
                            w.held.push(Owned { m: rest, segs: rest_segs });
                        }
                        None => assert!(rest_segs.is_empty(), "split_first lost a chain"),
                    }
                }
            }
            Op::PushToBatch(i) => {
                if !w.held.is_empty() {
                    let o = w.held.swap_remove(i % w.held.len());
                    match w.batch.push(o.m) {
                        Ok(()) => w.batch_segs.push(o.segs),
                        Err(m) => {
                            assert!(w.batch.is_full());
                            w.held.push(Owned { m, segs: o.segs });
                        }
                    }
                }
            }
            Op::Retain(mask) => {
                let mut k = 0;
                let mut kept = Vec::new();
                let segs = std::mem::take(&mut w.batch_segs);
                w.batch.retain(|m| {
                    let keep = (mask >> (k % 64)) & 1 == 1;
                    if keep {
                        kept.push(segs[k].clone());
                    } else {
                        // Forget them before retain frees them: once freed, another thread may take them.
                        release(m, &segs[k], live);
                    }
                    k += 1;
                    keep
                });
                assert_eq!(k, segs.len());
                assert_eq!(w.batch.len(), kept.len());
                w.batch_segs = kept;
            }
        }
    }
}

static POOL_SEQ: AtomicUsize = AtomicUsize::new(0);

/// Runs the phases on two threads; `lcores[t]` is the lcore thread `t` binds to, if any.
fn check(lcores: [Option<u32>; 2], size: u32, cache_size: u32, phases: Vec<(Vec<Op>, Vec<Op>, bool)>) {
    let name = format!("acct-{}", POOL_SEQ.fetch_add(1, Ordering::Relaxed));
    let pool =
        Mempool::new(&name, &PoolConfig { cache_size, ..PoolConfig::with_size(size) }, &Allocator::no_huge()).unwrap();
    let live = Mutex::new(HashSet::new());
    let mut workers = [Worker::new(1), Worker::new(2)];
    for (ops_a, ops_b, swap) in &phases {
        let [wa, wb] = &mut workers;
        std::thread::scope(|s| {
            for (w, ops, lc) in [(wa, ops_a, lcores[0]), (wb, ops_b, lcores[1])] {
                let (pool, live) = (&pool, &live);
                s.spawn(move || {
                    let _guard = lc.map(|id| lcore::bind_current_thread(id).expect("lcore free"));
                    run(w, pool, ops, live);
                });
            }
        });
        // Quiescent: both threads are done with this phase.
        let live_n = live.lock().unwrap().len();
        assert_eq!(live_n, workers[0].live_segments() + workers[1].live_segments());
        assert_eq!(pool.available() + live_n, size as usize, "available + live != size");
        assert_eq!(pool.in_use(), live_n);
        if *swap {
            let [wa, wb] = &mut workers;
            std::mem::swap(&mut wa.held, &mut wb.held);
        }
    }
    for mut w in workers {
        for o in w.held.drain(..) {
            release(&o.m, &o.segs, &live);
        }
        run(&mut w, &pool, &[Op::BatchClear], &live);
    }
    assert!(live.lock().unwrap().is_empty());
    assert!(pool.is_full(), "pool not full at the end: {} of {}", pool.available(), size);
}

fn phases() -> impl Strategy<Value = Vec<(Vec<Op>, Vec<Op>, bool)>> {
    proptest::collection::vec(
        (proptest::collection::vec(op(), 0..60), proptest::collection::vec(op(), 0..60), any::<bool>()),
        1..5,
    )
}

fn cache() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), Just(8), Just(32), Just(256)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Thread 0 holds lcore 40 (per-lcore cache), thread 1 is unbound (shared ring only).
    #[test]
    fn two_threads_one_bound(size in 40u32..300, cache_size in cache(), phases in phases()) {
        check([Some(40), None], size, cache_size, phases);
    }

    /// Both threads hold lcores (41 and 42), each with its own cache.
    #[test]
    fn two_threads_both_bound(size in 40u32..300, cache_size in cache(), phases in phases()) {
        check([Some(41), Some(42)], size, cache_size, phases);
    }
}

/// A heavier fixed run: two bound threads churn the same small pool with bursts and cross-thread frees.
#[test]
fn churn_two_lcores_small_pool() {
    let pool =
        Mempool::new("acct-churn", &PoolConfig { cache_size: 16, ..PoolConfig::with_size(96) }, &Allocator::no_huge())
            .unwrap();
    let (tx, rx) = std::sync::mpsc::sync_channel::<PacketBatch>(4);
    let p1 = pool.clone();
    let producer = std::thread::spawn(move || {
        let _g = lcore::bind_current_thread(43).unwrap();
        let mut sent = 0u64;
        let mut fails = 0u64;
        while sent < 20_000 {
            let mut b = PacketBatch::with_capacity(32);
            if b.alloc_from(&p1, 32) {
                for m in b.iter_mut() {
                    assert!(m.set_len(8));
                    m.data_mut().copy_from_slice(&sent.to_le_bytes());
                }
                sent += 32;
                tx.send(b).unwrap();
            } else {
                fails += 1;
                std::thread::yield_now();
            }
        }
        fails
    });
    let consumer = std::thread::spawn(move || {
        let _g = lcore::bind_current_thread(44).unwrap();
        let mut got = 0u64;
        while let Ok(mut b) = rx.recv() {
            let seen: HashSet<u32> = b.iter().map(Mbuf::pool_index).collect();
            assert_eq!(seen.len(), b.len(), "one buffer twice in a burst");
            got += b.len() as u64;
            // Free half through retain, the rest through drop.
            let mut k = 0;
            b.retain(|_| {
                k += 1;
                k % 2 == 0
            });
            drop(b);
        }
        got
    });
    producer.join().unwrap();
    assert_eq!(consumer.join().unwrap(), 20_000);
    assert!(pool.is_full(), "{} of 96 back", pool.available());
}
