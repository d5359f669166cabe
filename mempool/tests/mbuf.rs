//! Mbuf edge cases: room arithmetic at zero, exact fit and one over; lengths; IOVA arithmetic; chains; clean
//! metadata on every user-facing allocation. Every test ends with its pool full.

use hugepage::Allocator;
use mempool::{
    ol_flags, Mbuf, Mempool, PacketBatch, PoolConfig, RxFrame, TxOffload, DEFAULT_DATA_ROOM, DEFAULT_HEADROOM, NO_PORT,
};

fn pool(name: &str, size: u32) -> Mempool {
    Mempool::new(name, &PoolConfig::with_size(size), &Allocator::no_huge()).unwrap()
}

const HEAD: u16 = DEFAULT_HEADROOM;
const ROOM: u16 = DEFAULT_DATA_ROOM;

/// Writes `len` bytes of a recognisable pattern at the end of `m`.
fn append_pattern(m: &mut Mbuf, len: u16, seed: u8) {
    let out = m.append(len).expect("room to append");
    for (i, b) in out.iter_mut().enumerate() {
        *b = seed.wrapping_add(i as u8);
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| seed.wrapping_add(i as u8)).collect()
}

#[test]
fn fresh_buffer_geometry() {
    let p = pool("mbuf-geometry", 4);
    let m = p.alloc().unwrap();
    assert_eq!(m.headroom(), HEAD);
    assert_eq!(m.tailroom(), ROOM);
    assert_eq!(m.buf_len(), HEAD + ROOM);
    assert_eq!(m.data_len(), 0);
    assert_eq!(m.pkt_len(), 0);
    assert_eq!(m.nb_segs(), 1);
    assert_eq!(m.port(), NO_PORT);
    assert!(m.data().is_empty());
    assert_eq!(p.headroom(), HEAD);
    assert_eq!(p.data_room(), ROOM);
    assert!(p.element_size() >= 128 + (HEAD + ROOM) as usize);
    assert_eq!(p.element_size() % 64, 0);
    drop(m);
    assert!(p.is_full());
}

#[test]
fn append_zero_exact_and_one_over() {
    let p = pool("mbuf-append", 4);
    let mut m = p.alloc().unwrap();
    assert_eq!(m.append(0).map(|s| s.len()), Some(0));
    assert_eq!(m.data_len(), 0);
    // One over on a fresh buffer: refused, nothing changes.
    assert!(m.append(ROOM + 1).is_none());
    assert_eq!((m.data_len(), m.pkt_len(), m.tailroom()), (0, 0, ROOM));
    // Exact fit.
    append_pattern(&mut m, ROOM - 10, 1);
    append_pattern(&mut m, 10, 50);
    assert_eq!(m.tailroom(), 0);
    assert_eq!((m.data_len(), m.pkt_len()), (ROOM, ROOM as u32));
    assert!(m.append(1).is_none());
    assert_eq!(m.append(0).map(|s| s.len()), Some(0));
    assert_eq!(m.data_len(), ROOM);
    let mut expect = pattern((ROOM - 10) as usize, 1);
    expect.extend(pattern(10, 50));
    assert_eq!(m.data(), &expect[..]);
    drop(m);
    assert!(p.is_full());
}

#[test]
fn prepend_zero_exact_and_one_over() {
    let p = pool("mbuf-prepend", 4);
    let mut m = p.alloc().unwrap();
    append_pattern(&mut m, 20, 100);
    assert!(m.prepend(HEAD + 1).is_none());
    assert_eq!((m.headroom(), m.data_len(), m.pkt_len()), (HEAD, 20, 20));
    assert_eq!(m.prepend(0).map(|s| s.len()), Some(0));
    assert_eq!(m.headroom(), HEAD);
    m.prepend(14).unwrap().copy_from_slice(&[0xee; 14]);
    assert_eq!((m.headroom(), m.data_len(), m.pkt_len()), (HEAD - 14, 34, 34));
    assert_eq!(&m.data()[..14], &[0xee; 14]);
    assert_eq!(&m.data()[14..], &pattern(20, 100)[..]);
    // Exact fit of the rest of the headroom.
    m.prepend(HEAD - 14).unwrap().fill(0x11);
    assert_eq!(m.headroom(), 0);
    assert!(m.prepend(1).is_none());
    assert_eq!(m.data_len(), HEAD + 20);
    // Tailroom is unchanged by prepending.
    assert_eq!(m.tailroom(), ROOM - 20);
    drop(m);
    assert!(p.is_full());
}

#[test]
fn adj_and_trim_zero_exact_and_one_over() {
    let p = pool("mbuf-adj-trim", 4);
    let mut m = p.alloc().unwrap();
    append_pattern(&mut m, 100, 0);
    assert!(m.adj(0));
    assert!(m.trim(0));
    assert_eq!(m.data_len(), 100);
    assert!(!m.adj(101));
    assert!(!m.trim(101));
    assert_eq!((m.data_len(), m.pkt_len(), m.headroom()), (100, 100, HEAD));
    assert!(m.adj(10));
    assert_eq!((m.data_len(), m.pkt_len(), m.headroom()), (90, 90, HEAD + 10));
    assert_eq!(m.data(), &pattern(100, 0)[10..]);
    assert!(m.trim(10));
    assert_eq!((m.data_len(), m.pkt_len(), m.tailroom()), (80, 80, ROOM - 100 + 10));
    assert_eq!(m.data(), &pattern(100, 0)[10..90]);
    // Exact: remove everything.
    assert!(m.adj(40));
    assert!(m.trim(40));
    assert_eq!((m.data_len(), m.pkt_len()), (0, 0));
    assert!(!m.adj(1));
    assert!(!m.trim(1));
    drop(m);
    assert!(p.is_full());
}

#[test]
fn set_len_over_capacity_is_rejected() {
    let p = pool("mbuf-set-len", 4);
    let mut m = p.alloc().unwrap();
    assert!(m.set_len(0));
    assert!(m.set_len(ROOM));
    assert_eq!((m.data_len(), m.pkt_len(), m.tailroom()), (ROOM, ROOM as u32, 0));
    assert!(!m.set_len(ROOM + 1));
    assert_eq!((m.data_len(), m.pkt_len()), (ROOM, ROOM as u32), "a rejected set_len changes nothing");
    assert!(!m.set_len(u16::MAX));
    assert!(m.set_len(60));
    assert_eq!((m.data_len(), m.pkt_len()), (60, 60));
    // Moving the data start into the headroom makes room at the end for a longer packet.
    assert!(m.prepend(8).is_some());
    assert!(m.set_len(ROOM + 8));
    assert!(!m.set_len(ROOM + 9));
    assert!(!m.set_data_len(ROOM + 9));
    assert!(m.set_data_len(5));
    assert_eq!(m.data_len(), 5);
    // reset_data: any offset up to the buffer end, not past it.
    assert!(m.reset_data(HEAD + ROOM));
    assert_eq!((m.data_len(), m.pkt_len(), m.tailroom(), m.headroom()), (0, 0, 0, HEAD + ROOM));
    assert!(!m.set_len(1));
    assert!(!m.reset_data(HEAD + ROOM + 1));
    assert!(m.reset_data(0));
    assert_eq!(m.data_room_mut().len(), (HEAD + ROOM) as usize);
    assert!(m.set_len(HEAD + ROOM));
    drop(m);
    assert!(p.is_full());
}

#[test]
fn data_iova_arithmetic() {
    let p = pool("mbuf-iova", 8);
    let mut m = p.alloc().unwrap();
    let buf = m.buf_iova();
    assert_eq!(m.data_iova(), buf + HEAD as u64);
    // The buffer lies inside the pool's memory and its IOVA is the memory's translation of its address.
    let data_ptr = m.data_room_mut().as_ptr();
    assert_eq!(p.memory().iova_of(data_ptr), Some(m.data_iova()));
    m.prepend(14).unwrap();
    assert_eq!(m.data_iova(), buf + HEAD as u64 - 14);
    m.append(20).unwrap();
    assert!(m.adj(20));
    assert_eq!(m.data_iova(), buf + HEAD as u64 + 6);
    m.reset_data(0);
    assert_eq!(m.data_iova(), buf);
    assert_eq!(m.buf_iova(), buf, "buf_iova never moves");
    // Different buffers do not overlap.
    let other = p.alloc().unwrap();
    let (a, b) = (m.buf_iova(), other.buf_iova());
    let len = m.buf_len() as u64;
    assert!(a + len <= b || b + len <= a, "buffers overlap: {a:#x} {b:#x}");
    drop((m, other));
    assert!(p.is_full());
}

#[test]
fn chains_lengths_segments_and_copy() {
    let p = pool("mbuf-chain", 8);
    let lens = [100u16, 200, 300];
    let mut segs: Vec<Mbuf> = lens
        .iter()
        .enumerate()
        .map(|(i, &l)| {
            let mut m = p.alloc().unwrap();
            append_pattern(&mut m, l, i as u8 * 50);
            m
        })
        .collect();
    let c = segs.pop().unwrap();
    let mut b = segs.pop().unwrap();
    let mut a = segs.pop().unwrap();
    let iovas = [a.data_iova(), b.data_iova(), c.data_iova()];
    let idx = [a.pool_index(), b.pool_index(), c.pool_index()];
    // Chain a chain onto a single segment: b+c first, then a+(b+c).
    b.chain(c);
    assert_eq!((b.pkt_len(), b.nb_segs(), b.data_len()), (500, 2, 200));
    a.chain(b);
    assert_eq!((a.pkt_len(), a.nb_segs(), a.data_len()), (600, 3, 100));
    assert_eq!(p.in_use(), 3);
    let seen: Vec<(usize, u64)> = a.segments().map(|s| (s.data.len(), s.iova)).collect();
    assert_eq!(seen, vec![(100, iovas[0]), (200, iovas[1]), (300, iovas[2])]);
    let mut expect = pattern(100, 0);
    expect.extend(pattern(200, 50));
    expect.extend(pattern(300, 100));
    let mut out = vec![0u8; 1000];
    assert_eq!(a.copy_to(&mut out), 600);
    assert_eq!(&out[..600], &expect[..]);
    // Exact-size and short destinations.
    let mut exact = vec![0u8; 600];
    assert_eq!(a.copy_to(&mut exact), 600);
    assert_eq!(exact, expect);
    let mut short = vec![0u8; 150];
    assert_eq!(a.copy_to(&mut short), 150);
    assert_eq!(&short[..], &expect[..150]);
    assert_eq!(a.copy_to(&mut []), 0);

    // Split: a alone, then b+c.
    let mut rest = a.split_first().unwrap();
    assert_eq!((a.pkt_len(), a.nb_segs()), (100, 1));
    assert_eq!((rest.pkt_len(), rest.nb_segs(), rest.pool_index()), (500, 2, idx[1]));
    assert!(a.split_first().is_none());
    assert_eq!(a.segments().count(), 1);
    let last = rest.split_first().unwrap();
    assert_eq!((rest.pkt_len(), rest.nb_segs()), (200, 1));
    assert_eq!((last.pkt_len(), last.nb_segs(), last.pool_index()), (300, 1, idx[2]));
    assert_eq!(p.in_use(), 3);
    // Re-chain and drop the whole chain at once: every segment goes back.
    a.chain(rest);
    a.chain(last);
    assert_eq!((a.pkt_len(), a.nb_segs()), (600, 3));
    drop(a);
    assert!(p.is_full());
}

#[test]
fn chain_across_pools_frees_each_segment_home() {
    let p1 = pool("mbuf-chain-home-1", 4);
    let p2 = pool("mbuf-chain-home-2", 4);
    let mut head = p1.alloc().unwrap();
    let mut tail = p2.alloc().unwrap();
    append_pattern(&mut head, 10, 0);
    append_pattern(&mut tail, 20, 0);
    tail.chain(p1.alloc().unwrap());
    head.chain(tail);
    assert_eq!((head.nb_segs(), head.pkt_len()), (3, 30));
    assert_eq!((p1.in_use(), p2.in_use()), (2, 1));
    drop(head);
    assert!(p1.is_full());
    assert!(p2.is_full());
}

/// Dirties every per-packet field of `m` (what a previous user of the buffer may leave behind).
fn dirty(m: &mut Mbuf) {
    m.prepend(4).unwrap();
    m.set_len(77);
    m.set_port(3);
    m.set_ol_flags(ol_flags::RX_RSS_HASH | ol_flags::RX_VLAN_STRIPPED);
    m.set_packet_type(0x211);
    m.set_rss_hash(0xdead_beef);
    m.set_vlan_tci(42);
    let off = TxOffload { l2_len: 14, l3_len: 20, l4_len: 8, tso_segsz: 1400 };
    m.set_tx_offload(off);
    assert_eq!(m.tx_offload(), off, "tx_offload round-trips");
}

/// Every per-packet field of `m` is as a fresh allocation gives it.
fn assert_clean(m: &Mbuf) {
    assert_eq!((m.headroom(), m.data_len(), m.pkt_len(), m.nb_segs()), (HEAD, 0, 0, 1));
    assert_eq!((m.port(), m.ol_flags(), m.packet_type(), m.rss_hash(), m.vlan_tci()), (NO_PORT, 0, 0, 0, 0));
    assert_eq!(m.tx_offload(), TxOffload::default());
}

#[test]
fn fresh_allocation_has_clean_metadata() {
    // Buffers are not reset on free (the free state only guarantees `next` null, as in DPDK): every user-facing
    // allocation path resets them instead. A pool of one, so each path gets the buffer the last one dirtied.
    let p = pool("mbuf-reset-single", 1);
    let mut m = p.alloc().unwrap();
    let index = m.pool_index();
    dirty(&mut m);
    assert!(p.alloc().is_none(), "a pool of one has nothing more");
    drop(m);
    assert!(p.is_full());

    // Mempool::alloc
    let mut m = p.alloc().unwrap();
    assert_eq!(m.pool_index(), index);
    assert_clean(&m);
    dirty(&mut m);
    drop(m);

    // Mempool::alloc_bulk
    let mut slots = [None];
    assert!(p.alloc_bulk(&mut slots));
    let mut m = slots[0].take().unwrap();
    assert_eq!(m.pool_index(), index);
    assert_clean(&m);
    dirty(&mut m);
    drop(m);

    // PacketBatch::alloc_from (freed in bulk by clear)
    let mut batch = PacketBatch::with_capacity(4);
    assert!(batch.alloc_from(&p, 1));
    assert_clean(&batch.as_slice()[0]);
    dirty(&mut batch.as_mut_slice()[0]);
    batch.clear();
    assert!(p.is_full());

    // Mempool::get_raw + adopt_raw
    let mut raw = [std::ptr::NonNull::dangling()];
    // SAFETY: the element is adopted right below, and dropped once.
    assert!(unsafe { p.get_raw(&mut raw) });
    // SAFETY: taken from this pool just above, owned by nobody else.
    let m = unsafe { p.adopt_raw(raw[0]) };
    assert_eq!(m.pool_index(), index);
    assert_clean(&m);
    drop(m);
    assert!(p.is_full());
}

#[test]
fn alloc_rx_is_alloc_from_then_set_len_and_port() {
    // A pool of one: each allocation gets the buffer the previous user dirtied.
    let p = pool("mbuf-alloc-rx", 1);
    let mut batch = PacketBatch::with_capacity(4);
    for (port, len) in [(9u16, 60u16), (0, 1), (NO_PORT - 1, ROOM)] {
        assert!(batch.alloc_from(&p, 1));
        dirty(&mut batch.as_mut_slice()[0]);
        batch.clear();
        assert!(batch.alloc_rx(&p, 1, p.rx_rearm(port), len));
        let m = &batch.as_slice()[0];
        assert_eq!((m.headroom(), m.data_len(), m.pkt_len(), m.nb_segs()), (HEAD, len, len as u32, 1));
        assert_eq!((m.port(), m.ol_flags(), m.packet_type(), m.rss_hash(), m.vlan_tci()), (port, 0, 0, 0, 0));
        assert_eq!((m.tx_offload(), m.buf_len(), m.tailroom()), (TxOffload::default(), HEAD + ROOM, ROOM - len));
        // The same as the slow path gives.
        dirty(&mut batch.as_mut_slice()[0]);
        batch.clear();
        assert!(batch.alloc_from(&p, 1));
        let s = &mut batch.as_mut_slice()[0];
        assert!(s.set_len(len));
        s.set_port(port);
        assert_eq!((s.headroom(), s.data_len(), s.pkt_len(), s.nb_segs(), s.port()), (HEAD, len, len as u32, 1, port));
        batch.clear();
    }
    // All or nothing: the pool (or the batch) lacks room, nothing changes.
    assert!(batch.alloc_rx(&p, 1, p.rx_rearm(1), 64));
    assert!(!batch.alloc_rx(&p, 1, p.rx_rearm(1), 64), "pool empty");
    assert!(!batch.alloc_rx(&p, 4, p.rx_rearm(1), 64), "batch has room for 3");
    assert_eq!(batch.len(), 1);
    batch.clear();
    assert!(p.is_full());
}

#[test]
#[should_panic(expected = "rearm word")]
fn alloc_rx_refuses_another_pools_rearm() {
    let p = pool("mbuf-alloc-rx-foreign", 2);
    let q = pool("mbuf-alloc-rx-other", 2);
    let mut batch = PacketBatch::with_capacity(4);
    batch.alloc_rx(&p, 1, q.rx_rearm(0), 64);
}

#[test]
#[should_panic(expected = "at most 2048 bytes")]
fn alloc_rx_refuses_a_length_over_the_data_room() {
    let p = pool("mbuf-alloc-rx-long", 2);
    let mut batch = PacketBatch::with_capacity(4);
    batch.alloc_rx(&p, 1, p.rx_rearm(0), ROOM + 1);
}

#[test]
fn alloc_rx_with_fills_each_buffer_as_alloc_rx_then_timestamp() {
    // A pool of two: the buffers are dirtied first, so every field must be written.
    let p = pool("mbuf-alloc-rx-with", 2);
    let mut batch = PacketBatch::with_capacity(4);
    assert!(batch.alloc_from(&p, 2));
    for m in batch.iter_mut() {
        dirty(m);
        m.set_timestamp(99);
    }
    batch.clear();
    let frames = [(pattern(60, 7), 1_000u64), (pattern(ROOM as usize, 9), 2_000)];
    let mut rooms = Vec::new();
    assert!(batch.alloc_rx_with(&p, p.rx_rearm(5), frames.iter(), |(data, ts), room| {
        rooms.push(room.len());
        room[..data.len()].copy_from_slice(data);
        // Bytes past the frame are scratch (a rounded copy), not part of the packet.
        if let Some(tail) = room.get_mut(data.len()..data.len() + 4) {
            tail.fill(0xee);
        }
        RxFrame { len: data.len() as u16, timestamp: *ts }
    }));
    assert_eq!(rooms, [ROOM as usize; 2], "fill sees the whole data room");
    assert_eq!(batch.len(), 2);
    for (m, (data, ts)) in batch.iter().zip(&frames) {
        let len = data.len() as u16;
        assert_eq!((m.headroom(), m.data_len(), m.pkt_len(), m.nb_segs()), (HEAD, len, len as u32, 1));
        assert_eq!((m.port(), m.ol_flags(), m.packet_type(), m.rss_hash(), m.vlan_tci()), (5, 0, 0, 0, 0));
        assert_eq!((m.tx_offload(), m.buf_len(), m.timestamp()), (TxOffload::default(), HEAD + ROOM, *ts));
        assert_eq!(m.data(), &data[..]);
    }
    // All or nothing: the pool is empty, the batch unchanged; a batch without room takes nothing either.
    assert!(!batch.alloc_rx_with(&p, p.rx_rearm(5), frames.iter(), |_, _| RxFrame::default()));
    assert_eq!(batch.len(), 2);
    batch.clear();
    let mut small = PacketBatch::with_capacity(1);
    assert!(!small.alloc_rx_with(&p, p.rx_rearm(5), frames.iter(), |_, _| RxFrame::default()));
    assert!(small.is_empty() && p.is_full());
}

/// An iterator that claims more items than it yields: the buffers left over go back at once.
#[test]
fn alloc_rx_with_returns_the_buffers_an_iterator_does_not_fill() {
    struct Liar(u32);
    impl Iterator for Liar {
        type Item = u32;
        fn next(&mut self) -> Option<u32> {
            self.0 = self.0.checked_sub(1)?;
            Some(self.0)
        }
    }
    impl ExactSizeIterator for Liar {
        fn len(&self) -> usize {
            3
        }
    }
    let p = pool("mbuf-alloc-rx-with-short", 4);
    let mut batch = PacketBatch::with_capacity(4);
    assert!(batch.alloc_rx_with(&p, p.rx_rearm(0), Liar(1), |_, _| RxFrame { len: 8, timestamp: 0 }));
    assert_eq!(batch.len(), 1);
    assert_eq!(p.in_use(), 1);
    batch.clear();
    assert!(p.is_full());
}

#[test]
#[should_panic(expected = "over the data room")]
fn alloc_rx_with_refuses_a_length_over_the_data_room() {
    let p = pool("mbuf-alloc-rx-with-long", 2);
    p.allow_leak_on_drop();
    let mut batch = PacketBatch::with_capacity(4);
    batch.alloc_rx_with(&p, p.rx_rearm(0), 0..1, |_, _| RxFrame { len: ROOM + 1, timestamp: 0 });
}

#[test]
#[should_panic(expected = "rearm word")]
fn alloc_rx_with_refuses_another_pools_rearm() {
    let p = pool("mbuf-alloc-rx-with-foreign", 2);
    let q = pool("mbuf-alloc-rx-with-other", 2);
    let mut batch = PacketBatch::with_capacity(4);
    batch.alloc_rx_with(&p, q.rx_rearm(0), 0..1, |_, _| RxFrame::default());
}

#[test]
fn tx_offload_fields_are_masked_to_their_widths() {
    let p = pool("mbuf-txoff", 1);
    let mut m = p.alloc().unwrap();
    let max = TxOffload { l2_len: 0x7f, l3_len: 0x1ff, l4_len: 0xff, tso_segsz: 0xffff };
    m.set_tx_offload(max);
    assert_eq!(m.tx_offload(), max);
    m.set_tx_offload(TxOffload { l2_len: 0xff, l3_len: 0xffff, l4_len: 1, tso_segsz: 2 });
    // Out-of-width bits are dropped and do not spill into the neighbouring fields.
    assert_eq!(m.tx_offload(), TxOffload { l2_len: 0x7f, l3_len: 0x1ff, l4_len: 1, tso_segsz: 2 });
    drop(m);
    assert!(p.is_full());
}
