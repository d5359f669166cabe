//! The RX fast run of every build this CPU runs (the SSE2, AVX and AVX2 builds of the x86-64 groups; the NEON groups
//! on aarch64) against the one-at-a-time path (ringkit's `rx::testing`): the same CQEs taken (and cleared), the same
//! bytes, buffer headers and memo.

use std::sync::Arc;

use hugepage::Allocator;
use mempool::{Mempool, PoolConfig};
use proptest::prelude::*;
use ringkit::rx::testing::{every_build_matches_the_reference, Posted};

use super::rx_decode::{Cqe32, Memo};
use crate::desc::{cqe, RxCqe};

const BUF: u32 = 2048;

/// A CQE of a kind: 0-2 common frames (UDP, TCP, UDP with an L4 checksum error), 3 not done, 4 flushed, 5 an
/// LRO completion, 6 a length of 0, 7 a length past the buffer (a chain's first CQE).
fn cqe_of(kind: u8, len: u16, hash: u32) -> RxCqe {
    let udp = cqe::PKT_TYPE.val(cqe::PKT_UDP) | cqe::RSS_TYPE.val(1);
    let tcp = cqe::PKT_TYPE.val(cqe::PKT_TCP) | cqe::RSS_TYPE.val(2);
    let mut c = match kind {
        0 => RxCqe::done(len, 0, udp, hash),
        1 => RxCqe::done(len, 0, tcp, hash),
        2 => RxCqe::done(len, 0x10, udp, hash),
        6 => RxCqe::done(0, 0, udp, hash),
        7 => RxCqe::done(BUF as u16 + 1, 0, udp, hash),
        _ => RxCqe::done(len, 0, udp, hash),
    };
    match kind {
        3 => c.0[0] &= !cqe::DONE,
        4 => c.0[0] |= cqe::FLUSH,
        5 => c.0[0] |= cqe::NUM_LRO.val(2),
        _ => {}
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Every build takes exactly what the one-at-a-time path takes, with the same bytes, buffer headers and memo,
    /// and clears the done bits of exactly those CQEs: every run length, mixed kinds ending the run where they
    /// stand.
    #[test]
    fn every_build_matches_the_one_at_a_time_reference(
        descs in prop::collection::vec((0u8..8, 1u16..=BUF as u16, any::<u32>()), 0..40),
        common in 0usize..40,
        first in 0u8..3,
    ) {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let name = format!("hinic3-rx-builds-{}", N.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let pool = Mempool::new(&name, &PoolConfig { size: 127, ..Default::default() }, &Allocator::no_huge()).unwrap();
        prop_assert!(pool.data_room() as u32 >= BUF);
        let cqes: Vec<RxCqe> = descs
            .iter()
            .enumerate()
            .map(|(i, &(kind, len, hash))| cqe_of(if i < common { first } else { kind }, len, hash))
            .collect();
        // The memo as an earlier burst leaves it (the general path's decode of a CQE like `prime`).
        let prime = cqe_of(first, 60, 0);
        let memo = Memo::of(prime.0[0], prime.0[2]);
        let posted = Posted::new(&pool, cqes.len());
        every_build_matches_the_reference(&Cqe32::new(BUF, Arc::default()), &posted, &cqes, memo, BUF as u16)?;
        drop(posted);
        prop_assert!(pool.is_full());
    }
}
