//! The TX core on both paths against a model of what each packet must become: random bursts of plain packets
//! (some with an offload flag), chains, packets of another pool and too-short ones, on rings of several sizes and
//! thresholds, the device completing a random part of what it was given between bursts so that every wrap, RS
//! point and full ring comes up. After every burst: the descriptors from the old tail to the new one are exactly
//! the model's (address, length, end of packet, checksum asked, context), RS is only ever on a packet's last
//! descriptor, the counters move by what was sent and dropped, the buffers held are exactly those of the packets not
//! yet completed (nothing freed early, late or twice, and into its own pool), and at the end every buffer is back.

use std::collections::VecDeque;
use std::ptr::NonNull;
use std::sync::Arc;

use hugepage::Allocator;
use mempool::{ol_flags, Mbuf, MbufHeader, Mempool, PacketBatch, PoolConfig};
use pktio::stats::TxQueueStats;
use proptest::prelude::*;

use super::{TxCore, TxDescriptor, TxPath, RS_CHECK, RS_HOLES};
use crate::idx;

/// The smallest length the test device takes (as i40e's 17).
const MIN_LEN: u16 = 17;
/// The one offload the test device has.
const CSUM: u64 = ol_flags::TX_IP_CKSUM;

/// The test device's descriptor: a data descriptor or a context one, the RS request and the device's done mark.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, align(16))]
struct Desc {
    addr: u64,
    len: u16,
    eop: bool,
    csum: bool,
    ctx: bool,
    rs: bool,
    done: bool,
}

impl Desc {
    fn data(addr: u64, len: u16, eop: bool, csum: bool) -> Desc {
        Desc { addr, len, eop, csum, ..Default::default() }
    }

    /// What the model compares: all but the RS request and the done mark.
    fn key(self) -> (u64, u16, bool, bool, bool) {
        (self.addr, self.len, self.eop, self.csum, self.ctx)
    }
}

impl TxDescriptor for Desc {
    #[inline(always)]
    fn is_plain(not_single: usize, flags: u64, len_keys: u64) -> bool {
        not_single == 0 && flags & CSUM == 0 && len_keys >> 16 == 0
    }

    #[inline(always)]
    fn len_key(len: u16) -> u64 {
        (len as u64).wrapping_sub(MIN_LEN as u64)
    }

    #[inline(always)]
    unsafe fn write_plain(d: *mut Self, iova: u64, len: u16) {
        // SAFETY: the trait's contract: a free slot.
        unsafe { d.write_volatile(Desc::data(iova, len, true, false)) }
    }

    #[inline(always)]
    unsafe fn set_rs(d: *mut Self) {
        // SAFETY: the trait's contract: a written slot not yet handed over.
        unsafe { std::ptr::addr_of_mut!((*d).rs).write_volatile(true) }
    }

    #[inline(always)]
    unsafe fn done(d: *mut Self) -> bool {
        // SAFETY: a slot of the ring (one thread plays driver and device).
        unsafe { std::ptr::addr_of!((*d).done).read_volatile() }
    }
}

/// The driver's general path of the test device: a context descriptor when the flag asks the offload, one data
/// descriptor per segment (checksum bit from the flag), too-short packets refused.
fn queue_packet(core: &mut TxCore<Desc>, m: &Mbuf, p: NonNull<MbufHeader>) -> Result<bool, ()> {
    if m.pkt_len() < MIN_LEN as u32 {
        return Err(());
    }
    let csum = m.ol_flags() & CSUM != 0;
    let segs = m.nb_segs() as usize;
    let need = segs + csum as usize;
    if need > core.free_slots() {
        return Ok(false);
    }
    if csum {
        core.put(Desc { ctx: true, ..Default::default() });
    }
    let rs = core.rs_due(need);
    let mut last = 0;
    for (k, s) in m.segments().enumerate() {
        let eop = k + 1 == segs;
        last = core.put(Desc { rs: eop && rs, ..Desc::data(s.iova, s.data.len() as u16, eop, csum) });
    }
    let flags = if need > 1 { RS_HOLES | RS_CHECK } else { RS_CHECK };
    core.finish(last, p, need, rs, flags);
    Ok(true)
}

/// A packet the test builds.
#[derive(Debug, Clone)]
enum Kind {
    /// One segment of the port's pool (the flag asks the offload).
    Plain { len: u16, csum: bool },
    /// Segments of the port's pool.
    Chain { lens: Vec<u16>, csum: bool },
    /// One segment of another pool.
    Foreign { len: u16, csum: bool },
    /// One segment of the port's pool, shorter than the device takes (0 included).
    Short { len: u16 },
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        6 => (MIN_LEN..200, prop::bool::weighted(0.2)).prop_map(|(len, csum)| Kind::Plain { len, csum }),
        1 => (prop::collection::vec(1u16..80, 2..4), any::<bool>()).prop_map(|(lens, csum)| Kind::Chain { lens, csum }),
        1 => (MIN_LEN..200, any::<bool>()).prop_map(|(len, csum)| Kind::Foreign { len, csum }),
        1 => (0..MIN_LEN).prop_map(|len| Kind::Short { len }),
    ]
}

fn alloc(pool: &Mempool, len: u16) -> Mbuf {
    let mut m = pool.alloc().expect("a buffer");
    assert!(m.set_len(len));
    m
}

fn build(k: &Kind, port: &Mempool, other: &Mempool) -> Mbuf {
    let (mut m, csum) = match k {
        Kind::Plain { len, csum } => (alloc(port, *len), *csum),
        Kind::Foreign { len, csum } => (alloc(other, *len), *csum),
        Kind::Short { len } => (alloc(port, *len), false),
        Kind::Chain { lens, csum } => {
            let mut m = alloc(port, lens[0]);
            for &l in &lens[1..] {
                m.chain(alloc(port, l));
            }
            (m, *csum)
        }
    };
    if csum {
        m.set_ol_flags(CSUM | ol_flags::TX_IPV4);
    }
    m
}

/// What a packet must become on `path`: `None` dropped as bad, else its descriptors.
fn expected(m: &Mbuf, path: TxPath) -> Option<Vec<Desc>> {
    let csum = m.ol_flags() & CSUM != 0;
    if m.pkt_len() < MIN_LEN as u32 {
        return None;
    }
    if m.nb_segs() == 1 && (path == TxPath::Plain || !csum) {
        return Some(vec![Desc::data(m.data_iova(), m.data_len(), true, false)]);
    }
    let mut v = Vec::new();
    if csum {
        v.push(Desc { ctx: true, ..Default::default() });
    }
    let segs: Vec<_> = m.segments().map(|s| (s.iova, s.data.len() as u16)).collect();
    for (k, &(iova, len)) in segs.iter().enumerate() {
        v.push(Desc::data(iova, len, k + 1 == segs.len(), csum));
    }
    Some(v)
}

/// A packet on the ring in the model: its last descriptor counted from the first one ever placed (slots are reused,
/// this number is not), and how many buffers it holds.
struct Live {
    last: u64,
    bufs: usize,
}

/// Runs `bursts` through a core of `size` slots on `path`, the device completing `done[i]` more slots after burst i.
fn run(path: TxPath, size: usize, rs: usize, free: usize, bursts: &[Vec<Kind>], done: &[usize]) {
    let alloc = Allocator::no_huge();
    let cfg = PoolConfig { size: 1023, cache_size: 0, ..Default::default() };
    let port = Mempool::new("tx-prop-port", &cfg, &alloc).unwrap();
    let other = Mempool::new("tx-prop-other", &cfg, &alloc).unwrap();
    let mut mem = vec![Desc::default(); size].into_boxed_slice();
    let ring = NonNull::new(mem.as_mut_ptr()).unwrap();
    let read = |i: usize| {
        // SAFETY: i < size: the ring memory, written by the core through the same pointer.
        unsafe { ring.as_ptr().add(i).read_volatile() }
    };
    let stats = Arc::new(TxQueueStats::default());
    // SAFETY: `mem` holds `size` descriptors and outlives the core (dropped at the end of this function, after it).
    let mut core = unsafe { TxCore::new(ring, size, rs, free, &port, stats.clone()) };
    core.set_path(path);
    assert_eq!(core.path(), path);
    let (mut head, mut live) = (0usize, VecDeque::<Live>::new());
    // Descriptors placed so far (the tail, not wrapped).
    let mut placed = 0u64;
    let (mut sent, mut bytes, mut errors) = (0u64, 0u64, 0u64);
    for (b, kinds) in bursts.iter().enumerate() {
        let mut batch = PacketBatch::with_capacity(kinds.len().max(1));
        let mut want = Vec::new();
        for k in kinds {
            let m = build(k, &port, &other);
            want.push((expected(&m, path), m.pkt_len(), m.nb_segs() as usize));
            batch.push(m).unwrap();
        }
        let old_tail = core.tail;
        let taken = core.tx_burst(&mut batch, queue_packet).0;
        assert_eq!(batch.len(), kinds.len() - taken, "burst {b}: the rest stay in the batch");
        // The ring took less only when it was full.
        assert!(taken == kinds.len() || core.free_slots() < 4, "burst {b}: stopped with room");
        let mut at = old_tail;
        for (i, (want, len, segs)) in want.iter().take(taken).enumerate() {
            match want {
                None => errors += 1,
                Some(descs) => {
                    for (j, d) in descs.iter().enumerate() {
                        let got = read(at);
                        assert_eq!(got.key(), d.key(), "burst {b} packet {i} descriptor {j} in slot {at}");
                        assert!(!got.rs || j + 1 == descs.len(), "burst {b} packet {i}: RS before the last");
                        at = idx::add(at, 1, size);
                        placed += 1;
                    }
                    live.push_back(Live { last: placed - 1, bufs: *segs });
                    sent += 1;
                    bytes += *len as u64;
                }
            }
        }
        assert_eq!(at, core.tail, "burst {b}: the tail after the expected descriptors");
        assert_eq!((stats.packets.get(), stats.bytes.get(), stats.errors.get()), (sent, bytes, errors));
        drop(batch);
        // The packets the core has not cleaned are those from `clean` on; it cleans only completed groups.
        let clean = core.clean;
        let clean_at = placed - idx::dist(clean, core.tail, size) as u64;
        while live.front().is_some_and(|p| p.last < clean_at) {
            live.pop_front();
        }
        let held: usize = live.iter().map(|p| p.bufs).sum();
        assert_eq!(port.in_use() + other.in_use(), held, "burst {b}: buffers held by the ring");
        assert!(idx::dist(clean, head, size) <= idx::dist(clean, core.tail, size), "cleaned past the device");
        // The device takes `done[b]` more slots (up to the tail) and marks the RS descriptors among them.
        let todo = done[b % done.len()].min(idx::dist(head, core.tail, size));
        for _ in 0..todo {
            if read(head).rs {
                // SAFETY: head < size, a slot handed over.
                unsafe { std::ptr::addr_of_mut!((*ring.as_ptr().add(head)).done).write_volatile(true) };
            }
            head = idx::add(head, 1, size);
        }
    }
    drop(core);
    drop(mem);
    assert!(port.is_full() && other.is_full(), "every buffer back in its own pool");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn both_paths_place_every_packet_as_the_model_says_and_free_each_once(
        plain in any::<bool>(),
        eighths in 2usize..17,
        rs in 1usize..64,
        free in 1usize..64,
        bursts in prop::collection::vec(prop::collection::vec(kind(), 0..40), 1..60),
        done in prop::collection::vec(0usize..80, 1..60),
    ) {
        let size = 8 * eighths;
        let rs = 1 + rs % (size / 2);
        let free = 1 + free % (size - 4);
        run(if plain { TxPath::Plain } else { TxPath::Full }, size, rs, free, &bursts, &done);
    }
}

/// The path for a configuration, as DPDK picks the simple TX: nothing asked but fast free.
#[test]
fn the_plain_path_is_for_queues_that_ask_no_tx_offload_but_fast_free() {
    use pktio::offload::*;
    assert_eq!(TxPath::for_offloads(0), TxPath::Plain);
    assert_eq!(TxPath::for_offloads(TX_MBUF_FAST_FREE), TxPath::Plain);
    for o in [TX_IPV4_CKSUM, TX_UDP_CKSUM, TX_TCP_CKSUM, TX_TCP_TSO, TX_MULTI_SEGS, TX_CKSUM | TX_MBUF_FAST_FREE] {
        assert_eq!(TxPath::for_offloads(o), TxPath::Full, "{o:#x}");
    }
    assert_ne!(TxPath::Plain.name(), TxPath::Full.name());
}
