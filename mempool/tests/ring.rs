//! The bulk ring against a `VecDeque` model: bulk is all or nothing, burst takes what fits, order is FIFO, and
//! the indices wrap many times over small rings.

use std::collections::VecDeque;

use mempool::ring::Ring;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    EnqueueBulk(usize),
    EnqueueBurst(usize),
    DequeueBulk(usize),
    DequeueBurst(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0usize..80).prop_map(Op::EnqueueBulk),
        (0usize..80).prop_map(Op::EnqueueBurst),
        (0usize..80).prop_map(Op::DequeueBulk),
        (0usize..80).prop_map(Op::DequeueBurst),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn ring_matches_vecdeque(min_capacity in 0usize..70, ops in proptest::collection::vec(op(), 1..200)) {
        let ring = Ring::<u32>::new(min_capacity);
        let cap = ring.capacity();
        prop_assert!(cap.is_power_of_two());
        prop_assert!(cap >= min_capacity.max(1));
        prop_assert!(cap < 2 * min_capacity.max(1));
        let mut model: VecDeque<u32> = VecDeque::new();
        let mut next = 0u32;
        for op in ops {
            match op {
                Op::EnqueueBulk(n) | Op::EnqueueBurst(n) => {
                    let items: Vec<u32> = (next..next + n as u32).collect();
                    let room = cap - model.len();
                    let done = if let Op::EnqueueBulk(_) = op {
                        let ok = ring.enqueue_bulk(&items);
                        prop_assert_eq!(ok, n <= room, "bulk of {} with room {}", n, room);
                        if ok { n } else { 0 }
                    } else {
                        let got = ring.enqueue_burst(&items);
                        prop_assert_eq!(got, n.min(room));
                        got
                    };
                    model.extend(&items[..done]);
                    next += done as u32;
                }
                Op::DequeueBulk(n) | Op::DequeueBurst(n) => {
                    let mut out = vec![u32::MAX; n];
                    let have = model.len();
                    let done = if let Op::DequeueBulk(_) = op {
                        let ok = ring.dequeue_bulk(&mut out);
                        prop_assert_eq!(ok, n <= have, "bulk of {} with {} queued", n, have);
                        if ok { n } else { 0 }
                    } else {
                        let got = ring.dequeue_burst(&mut out);
                        prop_assert_eq!(got, n.min(have));
                        got
                    };
                    let expect: Vec<u32> = model.drain(..done).collect();
                    prop_assert_eq!(&out[..done], &expect[..]);
                    prop_assert!(out[done..].iter().all(|&v| v == u32::MAX), "wrote past what it returned");
                }
            }
            prop_assert_eq!(ring.len(), model.len());
            prop_assert_eq!(ring.is_empty(), model.is_empty());
        }
    }
}

#[test]
fn fill_to_capacity_exactly_then_one_more() {
    let ring = Ring::<u64>::new(16);
    assert_eq!(ring.capacity(), 16);
    for round in 0..100u64 {
        let items: Vec<u64> = (0..16).map(|i| round * 100 + i).collect();
        assert!(ring.enqueue_bulk(&items));
        assert_eq!(ring.len(), 16);
        assert!(!ring.enqueue_bulk(&[1]));
        assert_eq!(ring.enqueue_burst(&[1, 2]), 0);
        let mut out = [0u64; 16];
        assert!(ring.dequeue_bulk(&mut out));
        assert_eq!(out.to_vec(), items);
        assert!(!ring.dequeue_bulk(&mut [0u64; 1]));
        assert_eq!(ring.dequeue_burst(&mut [0u64; 1]), 0);
        assert!(ring.is_empty());
    }
    assert!(ring.enqueue_bulk(&[]));
    assert!(ring.dequeue_bulk(&mut []));
}
