//! The RX fast run of every build this CPU runs (SSE2, AVX, AVX2 groups on x86-64; NEON groups on aarch64) against
//! the one-at-a-time path: the same frames taken, the same bytes, fields and memo.

use std::ptr::NonNull;

use hugepage::Allocator;
use mempool::{Mbuf, Mempool, PoolConfig};
use proptest::prelude::*;
use ringkit::rx::{fast_run, IsaLevel, RxFormat, RxRun};

use super::rx_decode::{AdvRx, RxMemo};
use super::Family;
use crate::desc::{rx, RxDesc, RxWriteback};
use crate::IxgbeFamily;

/// What a taken buffer holds: pkt_len, data_len, ol_flags, packet type, RSS hash, VLAN tag, segments.
type Fields = (u32, u16, u64, u32, u32, u16, u16);

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

/// The fast run of build `isa` over `ring` (every build: its groups, then one at a time), with `scalar` the
/// reference instead: the format's one-at-a-time test and fields alone. Returns what it took, its bytes, the
/// buffers' fields and the memo's flags after it.
fn run(pool: &Mempool, prime: RxDesc, ring: &[RxDesc], isa: Option<IsaLevel>) -> (usize, u64, Vec<Fields>, (u64, u32)) {
    let n = ring.len();
    let mut ring = ring.to_vec();
    let mut shadow = vec![NonNull::dangling(); n];
    assert!(pool.alloc_raw_bulk(&mut shadow));
    let rearm = pool.rx_rearm(3);
    for &h in &shadow {
        // SAFETY: fresh buffers of this pool that `shadow` owns.
        unsafe { rearm.apply(h) };
    }
    let mut out = vec![NonNull::dangling(); n];
    let fmt = AdvRx::<IxgbeFamily>::new(false);
    let mut memo = RxMemo::new::<IxgbeFamily>();
    let max_len = pool.data_room();
    // The memo as an earlier burst leaves it (the groups take frames that repeat it).
    let mut prime = prime;
    // SAFETY: one descriptor in local memory.
    unsafe { fmt.fast_one(&mut prime, max_len, &mut memo) };
    let (taken, bytes) = match isa {
        Some(isa) => {
            let run = RxRun { wb: ring.as_mut_ptr(), shadow: shadow.as_ptr(), out: out.as_mut_ptr(), n, max_len };
            // SAFETY: n descriptors, buffers and output slots; the data room is the pool's; a build the CPU runs
            // (IsaLevel::supported).
            unsafe { fast_run(&fmt, isa, run, &mut memo) }
        }
        None => {
            let (mut k, mut bytes) = (0, 0);
            while k < n {
                // SAFETY: k < n: a descriptor of the ring.
                let Some(f) = (unsafe { fmt.fast_one(ring.as_mut_ptr().add(k), max_len, &mut memo) }) else {
                    break;
                };
                // SAFETY: the buffer of slot k, owned, posted with the rearm word (a view: `out` takes it).
                let mut m = std::mem::ManuallyDrop::new(unsafe { Mbuf::from_raw(shadow[k]) });
                // SAFETY: one segment; f.len <= max_len, within its data room.
                unsafe { m.set_rx_unchecked(f.len, f.flags, f.ptype, f.rss) };
                out[k] = shadow[k];
                bytes += f.len as u64;
                k += 1;
            }
            (k, bytes)
        }
    };
    let fields = out[..taken]
        .iter()
        .map(|&p| {
            // SAFETY: taken by the run: owned here, freed at the end of the closure.
            let m = unsafe { Mbuf::from_raw(p) };
            (m.pkt_len(), m.data_len(), m.ol_flags(), m.packet_type(), m.rss_hash(), m.vlan_tci(), m.nb_segs())
        })
        .collect();
    // SAFETY: the slots not taken still own their buffers.
    unsafe { mempool::free_raw_bulk(&shadow[taken..]) };
    (taken, bytes, fields, (memo.flags, memo.ptype))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Every build takes exactly what the one-at-a-time reference takes, with the same bytes, fields and memo:
    /// every run length (groups of eight, of four, the rest one by one), mixed kinds (the memo changing inside
    /// a group, errors, chains, pending and over-long descriptors ending the run where they stand).
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
        let prime = writeback(first, 60, 0, max_len);
        let reference = run(&pool, prime, &ring, None);
        for isa in IsaLevel::supported() {
            prop_assert_eq!(&run(&pool, prime, &ring, Some(isa)), &reference, "build {:?}", isa);
        }
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
