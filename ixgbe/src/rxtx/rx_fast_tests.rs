//! The RX fast run of every build this CPU runs (SSE2, AVX, AVX2 groups on x86-64; NEON groups on aarch64) against
//! the one-at-a-time path (ringkit's `rx::testing`): the same frames taken, the same bytes, buffer headers and memo.

use hugepage::Allocator;
use mempool::{Mempool, PoolConfig};
use proptest::prelude::*;
use ringkit::rx::testing::{every_build_matches_the_reference, Posted};
use ringkit::rx::{IsaLevel, RxFormat};

use super::rx_decode::{AdvRx, RxMemo};
use super::Family;
use crate::desc::{rx, RxDesc, RxWriteback};
use crate::IxgbeFamily;

/// One write-back of a kind: 0-3 common frames (UDP or TCP over IPv4, with or without checksum errors), 4 a MAC
/// error, 5 no EOP (a chain's first buffer), 6 not done, 7 a length past the buffer.
fn writeback(kind: u8, len: u16, hash: u32, max_len: u16) -> RxDesc {
    let common = rx::STAT_DD | rx::STAT_EOP | rx::STAT_IPCS | rx::STAT_L4CS;
    let (info, status, len) = match kind {
        0 => (1 | rx::PTYPE_IPV4 | rx::PTYPE_UDP, common | rx::STAT_UDPV, len),
        1 => (1 | rx::PTYPE_IPV4 | rx::PTYPE_TCP, common, len),
        2 => (rx::PTYPE_IPV4 | rx::PTYPE_UDP, common | rx::STAT_UDPV | IxgbeFamily::RX_ERR_IPE, len),
        3 => (2 | rx::PTYPE_IPV6 | rx::PTYPE_TCP, common | IxgbeFamily::RX_ERR_L4E, len),
        4 => (1 | rx::PTYPE_IPV4 | rx::PTYPE_UDP, common | IxgbeFamily::RX_ERR_RXE, len),
        5 => (1 | rx::PTYPE_IPV4 | rx::PTYPE_UDP, rx::STAT_DD, len),
        6 => (0, 0, 0),
        _ => (1 | rx::PTYPE_IPV4 | rx::PTYPE_UDP, common, max_len + 1),
    };
    RxDesc::writeback(RxWriteback { pkt_info: info, rss_hash: hash, status_error: status, length: len, vlan: 0 })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Every build takes exactly what the one-at-a-time reference takes, with the same bytes, buffer headers and
    /// memo (ringkit's shared comparison): every run length (groups of eight, of four, the rest one by one), mixed
    /// kinds (the memo changing inside a group, errors, chains, pending and over-long descriptors ending the run
    /// where they stand).
    #[test]
    fn every_build_matches_the_one_at_a_time_reference(
        descs in prop::collection::vec((0u8..8, 60u16..1600, any::<u32>()), 0..70),
        common in 0usize..70,
        first in 0u8..4,
    ) {
        let pool =
            Mempool::new("ixgbe-rx-builds", &PoolConfig { size: 255, ..Default::default() }, &Allocator::no_huge())
                .unwrap();
        let max_len = pool.data_room();
        // A leading run of `common` frames of the first kind, as bursts mostly are, then the mix.
        let ring: Vec<RxDesc> = descs
            .iter()
            .enumerate()
            .map(|(i, &(kind, len, hash))| {
                let kind = if i < common { first } else { kind };
                writeback(kind, len.min(max_len), hash, max_len)
            })
            .collect();
        // The memo as an earlier burst leaves it (the groups take frames that repeat it).
        let fmt = AdvRx::<IxgbeFamily>::new(false);
        let mut memo = RxMemo::new::<IxgbeFamily>();
        let mut prime = writeback(first, 60, 0, max_len);
        // SAFETY: one descriptor in local memory.
        unsafe { fmt.fast_one(&mut prime, max_len, &mut memo) };
        let posted = Posted::new(&pool, ring.len());
        every_build_matches_the_reference(&fmt, &posted, &ring, memo, max_len)?;
        drop(posted);
        prop_assert!(pool.is_full());
    }
}

#[test]
fn this_cpu_runs_the_best_build_it_has() {
    let best = IsaLevel::detect();
    assert_eq!(IsaLevel::supported().last(), Some(&best));
    if has_avx2() {
        assert_eq!(best, IsaLevel::Avx2, "an AVX2 CPU takes the groups of eight");
    }
}

#[cfg(target_arch = "x86_64")]
fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

#[cfg(not(target_arch = "x86_64"))]
fn has_avx2() -> bool {
    false
}
