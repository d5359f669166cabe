//! The RX fast run of every build this CPU runs (the SSE2, AVX and AVX2 builds of the x86-64 groups; the NEON groups
//! on aarch64) against the one-at-a-time path: the same CQEs taken (and cleared), the same bytes and fields.

use std::ptr::NonNull;
use std::sync::Arc;

use hugepage::Allocator;
use mempool::{Mbuf, Mempool, PoolConfig};
use proptest::prelude::*;
use ringkit::rx::{fast_run, IsaLevel, RxFormat, RxRun};

use super::rx_decode::{Cqe32, Memo};
use crate::desc::{cqe, RxCqe};

const BUF: u32 = 2048;

/// What a taken buffer holds: pkt_len, data_len, ol_flags, packet type, RSS hash, VLAN tag, segments.
type Fields = (u32, u16, u64, u32, u32, u16, u16);

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

/// The fast run of build `isa` over `cqes` after `prime` set the memo (or, with `None`, the format's one-at-a-time
/// test alone): what it took, its bytes, the buffers' fields and the status dwords after it.
fn run(pool: &Mempool, prime: RxCqe, cqes: &[RxCqe], isa: Option<IsaLevel>) -> (usize, u64, Vec<Fields>, Vec<u32>) {
    let n = cqes.len();
    let mut cqes = cqes.to_vec();
    let mut shadow = vec![NonNull::dangling(); n];
    assert!(pool.alloc_raw_bulk(&mut shadow));
    let rearm = pool.rx_rearm(3);
    for &h in &shadow {
        // SAFETY: fresh buffers of this pool that `shadow` owns.
        unsafe { rearm.apply(h) };
    }
    let mut out = vec![NonNull::dangling(); n];
    let fmt = Cqe32::new(BUF, Arc::default());
    // The memo as an earlier burst leaves it (the general path's decode of a CQE like `prime`).
    let mut memo = Memo::of(prime.0[0], prime.0[2]);
    let (taken, bytes) = match isa {
        Some(isa) => {
            let run =
                RxRun { wb: cqes.as_mut_ptr(), shadow: shadow.as_ptr(), out: out.as_mut_ptr(), n, max_len: BUF as u16 };
            // SAFETY: n CQEs, buffers and output slots; the data room is at least BUF; a build the CPU runs.
            unsafe { fast_run(&fmt, isa, run, &mut memo) }
        }
        None => {
            let (mut k, mut bytes) = (0, 0);
            while k < n {
                // SAFETY: k < n: a CQE of the array.
                let Some(f) = (unsafe { fmt.fast_one(cqes.as_mut_ptr().add(k), BUF as u16, &mut memo) }) else {
                    break;
                };
                // SAFETY: the buffer of slot k, owned, posted with the rearm word (a view: `out` takes it).
                let mut m = std::mem::ManuallyDrop::new(unsafe { Mbuf::from_raw(shadow[k]) });
                // SAFETY: one segment; f.len <= BUF, within its data room.
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
    (taken, bytes, fields, cqes.iter().map(|c| c.0[0]).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Every build takes exactly what the one-at-a-time path takes, with the same bytes and fields, and clears the
    /// done bits of exactly those CQEs: every run length, mixed kinds ending the run where they stand.
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
        let prime = cqe_of(first, 60, 0);
        let reference = run(&pool, prime, &cqes, None);
        for isa in IsaLevel::supported() {
            prop_assert_eq!(&run(&pool, prime, &cqes, Some(isa)), &reference, "build {:?}", isa);
        }
        prop_assert!(pool.is_full());
    }
}
