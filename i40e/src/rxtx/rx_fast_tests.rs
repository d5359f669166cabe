//! The RX fast run of every build this CPU runs (the SSE2, AVX and AVX2 builds of the x86-64 groups; the NEON groups
//! on aarch64) against the one-at-a-time path, byte for byte in the buffers' headers (ringkit's `rx::testing`); and bursts through the shared
//! engine (the fast run, the general path behind it, the ring's end) against what the descriptors say.

use std::ptr::NonNull;
use std::sync::Arc;

use drvkit::reg::Field64;
use hugepage::Allocator;
use mempool::{ol_flags, ptype as pt, Mbuf, Mempool, PacketBatch, PoolConfig};
use pktio::stats::RxQueueStats;
use proptest::prelude::*;
use ringkit::rx::testing::{base_groups, every_build_matches_the_reference, run, Posted};
use ringkit::rx::IsaLevel;
use ringkit::{RxBuffers, RxEngine};

use super::rx_decode::{rx_flags, Desc32, RxMemo};
use crate::desc::{rx, RxDesc};

/// Hardware packet types (docs/hw/i40e.md §10.2).
const IPV4_UDP: u8 = 24;
const IPV4_TCP: u8 = 26;
const IPV6_TCP: u8 = 92;
const L2: u8 = 1;

/// qword-1 bits neither path looks at (docs/hw/i40e.md §10.2): L2TAG1P, CRCP, the timestamp bits, EXT_UDP_0,
/// UMBCAST, FLM (11:4), LPBK, IPV6EXADD, reserved, INT_UDP_0 (18:14), reserved (29:27).
const QW1_IGNORED: u64 =
    rx::L2TAG1P | Field64::new(11, 4).mask() | Field64::new(18, 14).mask() | Field64::new(29, 27).mask();

/// Kinds of write-back [`writeback`] makes.
const KINDS: u8 = 11;

/// One write-back of a kind: 0-3 common frames (IPv4 UDP and TCP with an RSS hash, IPv6 TCP with a flow-director
/// word instead, IPv4 UDP with an L4 checksum error), 4 a MAC error, 5 no EOF (a chain's first buffer), 6 not done,
/// 7 a length past the buffer, 8 an oversize error, 9 header-split lengths above the data length (a common frame:
/// the data length alone counts), 10 an L2 frame whose checksums were not checked. `junk` goes wherever a fast
/// frame's decode must not look: qword 0's low half, the ignored qword-1 bits, qwords 2 and 3.
fn writeback(kind: u8, len: u16, hash: u32, junk: u64, max_len: u16) -> RxDesc {
    let wb = |len, ptype, errors| RxDesc::writeback(len, ptype, Some(hash), true, errors);
    let mut d = match kind {
        0 => wb(len, IPV4_UDP, 0),
        1 => wb(len, IPV4_TCP, 0),
        2 => {
            let mut d = RxDesc::writeback(len, IPV6_TCP, None, true, 0);
            d.qw0 = rx::RSS_HASH.val(hash as u64);
            d
        }
        3 => wb(len, IPV4_UDP, rx::ERR_L4E),
        4 => wb(len, IPV4_UDP, rx::ERR_RXE),
        5 => RxDesc::writeback(len, IPV4_UDP, Some(hash), false, 0),
        6 => {
            let mut d = wb(len, IPV4_UDP, 0);
            d.qw1 &= !rx::DD;
            d
        }
        7 => wb(max_len + 1 + len % 64, IPV4_UDP, 0),
        8 => wb(len, IPV4_TCP, rx::ERR_OVERSIZE),
        9 => {
            let mut d = wb(len, IPV4_UDP, 0);
            d.qw1 |= rx::LENGTH_HBUF.val(junk) | rx::SPH;
            d
        }
        _ => {
            let mut d = wb(len, L2, 0);
            d.qw1 &= !rx::L3L4P;
            d
        }
    };
    d.qw0 |= junk & 0xFFFF_FFFF;
    d.qw1 |= junk & QW1_IGNORED;
    d.qw2 = junk.rotate_left(17);
    d.qw3 = !junk;
    d
}

/// A ring of write-backs from the generator's tuples: a leading run of `common` frames of kind `first` (as bursts
/// mostly are), then the mix. Lengths of common frames are clamped to `max_len` (so `max_len` itself comes up); the
/// frame at `over`, if it is in the leading run, is one byte longer than the buffer (its flag bits are the run's,
/// so only the length test of the groups refuses it).
fn ring_of(descs: &[(u8, u16, u32, u64)], common: usize, first: u8, over: Option<usize>, max_len: u16) -> Vec<RxDesc> {
    descs
        .iter()
        .enumerate()
        .map(|(i, &(kind, len, hash, junk))| {
            let kind = if i < common { first } else { kind };
            let mut d = writeback(kind, len.min(max_len), hash, junk, max_len);
            if over == Some(i) && i < common {
                d.qw1 = rx::LENGTH_PBUF.set(d.qw1, max_len as u64 + 1);
            }
            d
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Every build takes exactly what the one-at-a-time reference takes, into the same output slots, with the same
    /// bytes and memo, and leaves every buffer header byte for byte as the reference does (the taken ones written
    /// alike, the others untouched): every run length (groups of four and the rest one by one), mixed kinds (the
    /// memo changing inside a group, errors, chains, pending and over-long descriptors ending the run where they
    /// stand, junk where the decode must not look).
    #[test]
    fn every_build_matches_the_one_at_a_time_reference(
        descs in prop::collection::vec((0..KINDS, 0u16..4000, any::<u32>(), any::<u64>()), 0..70),
        common in 0usize..70,
        first in 0u8..4,
        over in prop::option::of(0usize..70),
        prime_kind in 0u8..4,
    ) {
        let pool =
            Mempool::new("i40e-rx-builds", &PoolConfig { size: 255, ..Default::default() }, &Allocator::no_huge())
                .unwrap();
        let max_len = pool.data_room();
        let ring = ring_of(&descs, common, first, over, max_len);
        // The memo as an earlier burst leaves it: mostly the leading run's, sometimes another (the groups then take
        // nothing until the one-at-a-time path moved it).
        let memo = RxMemo::of(writeback(prime_kind, 60, 0, 0, max_len).qw1);
        let posted = Posted::new(&pool, ring.len());
        every_build_matches_the_reference(&Desc32, &posted, &ring, memo, max_len)?;
        // The groups themselves (not only the one-at-a-time path behind them) take the leading run when it repeats
        // the memo: its whole groups of four, up to one whose lengths ORed exceed the buffer (the x86-64 groups
        // bound the four lengths by their OR, so such a group may go one at a time).
        let (lead, taken) = if prime_kind == first {
            let or = |g: &[RxDesc]| g.iter().fold(0, |a, d| a | rx::LENGTH_PBUF.get(d.qw1));
            let whole = ring[..common.min(ring.len())].chunks_exact(4);
            let lead = 4 * whole.take_while(|g| or(g) <= max_len as u64).count();
            (lead, base_groups(&Desc32, &posted, &ring, memo, max_len))
        } else {
            (0, 0)
        };
        drop(posted);
        prop_assert!(pool.is_full());
        prop_assert!(taken >= lead && taken % 4 == 0, "{} taken by the groups, {} to take", taken, lead);
    }
}

/// The fast run of every build takes the leading common frames (its groups, then one at a time) and writes their
/// fields; it stops at a frame error and follows a packet-type change through the memo.
#[test]
fn the_fast_run_builds_agree_and_stop_where_they_must() {
    let pool = Mempool::new("rx-fast", &PoolConfig { size: 255, ..Default::default() }, &Allocator::no_huge()).unwrap();
    let mut ring = vec![RxDesc::default(); 16];
    for (i, d) in ring.iter_mut().enumerate() {
        let ptype = if i < 9 { IPV4_UDP } else { IPV4_TCP };
        *d = RxDesc::writeback(60 + i as u16, ptype, Some(0x100 + i as u32), true, 0);
    }
    ring[13].qw1 |= rx::ERR_RXE;
    let posted = Posted::new(&pool, 16);
    let udp = ol_flags::RX_RSS_HASH | ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_GOOD;
    for isa in IsaLevel::supported() {
        // The memo of the first frames (the groups take 0..8; the type changes in the group from 8).
        let got = run(&Desc32, &posted, &ring, RxMemo::of(ring[0].qw1), pool.data_room(), Some(isa));
        assert_eq!(got.taken, 13, "build {isa:?} stops at the frame error of descriptor 13");
        assert_eq!(got.bytes, (60..73).sum::<u64>());
        let fields: Vec<(u32, u16, u64, u32, u32, u16)> = got
            .out
            .iter()
            .map(|&p| {
                // SAFETY: taken by the run (a view: the test keeps it).
                let m = std::mem::ManuallyDrop::new(unsafe { Mbuf::from_raw(p) });
                (m.pkt_len(), m.data_len(), m.ol_flags(), m.packet_type(), m.rss_hash(), m.vlan_tci())
            })
            .collect();
        assert_eq!(fields[0], (60, 60, udp, pt::L2_ETHER | pt::L3_IPV4 | pt::L4_UDP, 0x100, 0));
        for (j, f) in fields[..9].iter().enumerate() {
            let len = 60 + j as u16;
            assert_eq!(*f, (len as u32, len, udp, pt::L2_ETHER | pt::L3_IPV4 | pt::L4_UDP, 0x100 + j as u32, 0));
        }
        assert_eq!(fields[12].3, pt::L2_ETHER | pt::L3_IPV4 | pt::L4_TCP, "the memo follows the type change");
        assert_eq!(fields[12].4, 0x10c);
    }
    drop(posted);
    assert!(pool.is_full());
}

/// A received packet as the test compares it: each segment's length, then ol_flags, packet type, RSS hash, VLAN
/// tag and port.
type Packet = (Vec<u16>, u64, u32, u32, u16, u16);

/// What the engine must deliver for the write-backs `seq` (docs/hw/i40e.md §10.2): the frames up to the first
/// descriptor not done, each ending at EOF with its last descriptor's flags, type and hash; a frame with a frame
/// error or a buffer longer than `max_len` dropped and counted. Returns the packets and the errors.
fn expected(seq: &[RxDesc], max_len: u16) -> (Vec<Packet>, u64) {
    let (mut packets, mut errors, mut segs) = (Vec::new(), 0, Vec::new());
    for d in seq.iter().take_while(|d| d.qw1 & rx::DD != 0) {
        segs.push(rx::LENGTH_PBUF.get(d.qw1) as u16);
        if d.qw1 & rx::EOF == 0 {
            continue;
        }
        if d.qw1 & rx::FRAME_ERRORS != 0 || segs.iter().any(|&l| l > max_len) {
            errors += 1;
            segs.clear();
            continue;
        }
        let (flags, ptype) = rx_flags(d.qw1);
        packets.push((std::mem::take(&mut segs), flags, ptype, rx::RSS_HASH.get(d.qw0) as u32, 0, PORT));
    }
    (packets, errors)
}

/// The test ring's size, refill threshold and port.
const SIZE: usize = 128;
const FREE_THRESH: usize = 32;
const PORT: u16 = 5;

/// Bursts of `cap` through an engine of build `isa` on a ring of [`SIZE`]: first `skip` common frames (received
/// and freed, so that what follows starts at slot `skip` and may run over the ring's end), then `seq` as far as the
/// device owns slots, until a burst neither receives nor consumes anything. Returns the write-backs the device
/// wrote, what the engine delivered after the skip, and its packet, byte and error counters.
fn bursts(
    pool: &Mempool,
    isa: IsaLevel,
    skip: usize,
    seq: &[RxDesc],
    cap: usize,
) -> (Vec<RxDesc>, Vec<Packet>, [u64; 3]) {
    let mut mem = vec![RxDesc::default(); SIZE].into_boxed_slice();
    let ring = NonNull::new(mem.as_mut_ptr()).unwrap();
    // SAFETY: `mem` outlives the engine (dropped at the end of this function, after it) and is not moved (a box);
    // zeroed descriptors.
    let bufs = unsafe { RxBuffers::new(ring, SIZE, FREE_THRESH, pool, PORT) }.unwrap();
    let stats = Arc::new(RxQueueStats::default());
    // SAFETY: the completions are the descriptors themselves; max_len is the pool's data room.
    let mut engine = unsafe { RxEngine::new(bufs, ring, Desc32, RxMemo::of(0), pool.data_room(), stats.clone()) };
    engine.set_isa(isa);
    // The device writes a descriptor (through the engine's pointer: the engine reads it with volatile loads).
    // SAFETY: a slot of the ring.
    let write = |i: usize, d: RxDesc| unsafe { ring.as_ptr().add(i % SIZE).write_volatile(d) };
    let mut batch = PacketBatch::with_capacity(cap);
    let (mut got, mut written) = (0, 0);
    let mut deadline = 10 * SIZE;
    while got < skip {
        // The device owns the slots from the next one the engine looks at, as many as are not held for the refill
        // (counted from the ring's start, not wrapped).
        let owned_end = (got + SIZE - 1 - engine.bufs().held()).min(skip);
        for i in written..owned_end {
            write(i, writeback(0, 60, i as u32, 0, pool.data_room()));
        }
        written = written.max(owned_end);
        got += engine.rx_burst(&mut batch).0;
        batch.clear();
        deadline -= 1;
        assert!(deadline > 0, "the skip does not progress");
    }
    let start = engine.bufs().next();
    assert_eq!(start, skip % SIZE);
    let seq = &seq[..seq.len().min(SIZE - 1 - engine.bufs().held())];
    for (j, &d) in seq.iter().enumerate() {
        write(start + j, d);
    }
    let mut packets = Vec::new();
    loop {
        let next = engine.bufs().next();
        let n = engine.rx_burst(&mut batch).0;
        for m in batch.iter() {
            let segs = m.segments().map(|s| s.data.len() as u16).collect();
            packets.push((segs, m.ol_flags(), m.packet_type(), m.rss_hash(), m.vlan_tci(), m.port()));
        }
        batch.clear();
        if n == 0 && engine.bufs().next() == next {
            break;
        }
        deadline -= 1;
        assert!(deadline > 0, "the bursts do not end");
    }
    let counters = [stats.packets.get() - skip as u64, stats.bytes.get() - 60 * skip as u64, stats.errors.get()];
    drop(engine);
    (seq.to_vec(), packets, counters)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    /// Bursts through the engine with every build deliver what the descriptors say: the fast run's frames, and from
    /// the first it refuses on (an error, a chain, a descriptor not done, a length past the buffer) the general
    /// path's, chains across bursts and the ring's end included, and count them.
    #[test]
    fn bursts_deliver_what_the_descriptors_say(
        skip in 0usize..2 * SIZE,
        descs in prop::collection::vec((0..KINDS, 0u16..4000, any::<u32>(), any::<u64>()), 0..SIZE),
        common in 0usize..SIZE,
        first in 0u8..4,
        over in prop::option::of(0usize..SIZE),
        cap in 1usize..=64,
    ) {
        let pool =
            Mempool::new("i40e-rx-bursts", &PoolConfig { size: 511, ..Default::default() }, &Allocator::no_huge())
                .unwrap();
        let max_len = pool.data_room();
        let seq = ring_of(&descs, common, first, over, max_len);
        for isa in IsaLevel::supported() {
            let (seq, packets, [npackets, bytes, errors]) = bursts(&pool, isa, skip, &seq, cap);
            let (want, want_errors) = expected(&seq, max_len);
            prop_assert_eq!(&packets, &want, "build {:?}", isa);
            prop_assert_eq!(npackets, want.len() as u64);
            prop_assert_eq!(bytes, want.iter().map(|p| p.0.iter().map(|&l| l as u64).sum::<u64>()).sum::<u64>());
            prop_assert_eq!(errors, want_errors);
        }
        prop_assert!(pool.is_full());
    }
}

/// The port's RX burst mode (the shared one, `ringkit::burst_mode`) names the groups this target runs.
#[test]
fn the_burst_mode_names_the_groups() {
    let rx = ringkit::burst_mode().rx;
    if cfg!(target_arch = "aarch64") {
        assert_eq!(rx, "Vector NEON (4 per step)");
    } else {
        assert!(rx.starts_with("Vector SSE2") || rx.starts_with("Vector AVX2"), "{rx}");
    }
}
