//! The RX and TX rings against a device played by the test (IOVA = VA): CQEs in, mbuf fields out; WQEs out, the CI slot
//! in; doorbells as the notes lay them out.

use std::sync::Arc;

use drvkit::dma::{DmaMapper, IdentityMapper};
use hugepage::Allocator;
use mempool::{ol_flags, ptype, Mempool, PacketBatch, PoolConfig, TxOffload};
use pktio::{RxQueue, TxQueue};

use super::{RxRing, RxSetup, TxRing, TxSetup};
use crate::desc::{cqe, RqWqe, RxCqe, SqWqebb};
use crate::regs::{DB_PAGE_RQ, DB_PAGE_SQ};
use crate::testing::FakeDb;

const DEPTH: u16 = 64;

/// A pool with a name of its own (names are global and tests run in parallel).
fn named_pool(size: u32, room: u16) -> Mempool {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let name = format!("hinic3-ring-{}", N.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let cfg = PoolConfig { size, cache_size: 0, data_room: room, ..Default::default() };
    Mempool::new(&name, &cfg, &Allocator::no_huge()).unwrap()
}

fn pool(room: u16) -> Mempool {
    named_pool(511, room)
}

fn rx_ring(db: &Arc<FakeDb>, pool: &Mempool, buf_len: u32) -> RxRing<FakeDb> {
    let mapper: Arc<dyn DmaMapper> = Arc::new(IdentityMapper);
    RxRing::new(RxSetup {
        db,
        allocator: &Allocator::no_huge(),
        mapper: &mapper,
        pool,
        queue: 3,
        depth: DEPTH,
        wq_page_log2: 8,
        buf_len,
        port_id: 7,
        stats: Default::default(),
        csum_errors: Default::default(),
        port: "t",
    })
    .unwrap()
}

fn tx_ring(db: &Arc<FakeDb>, pool: &Mempool) -> TxRing<FakeDb> {
    let mapper: Arc<dyn DmaMapper> = Arc::new(IdentityMapper);
    TxRing::new(TxSetup {
        db,
        allocator: &Allocator::no_huge(),
        mapper: &mapper,
        queue: 2,
        depth: DEPTH,
        wq_page_log2: 8,
        cos: 5,
        pool,
        stats: Default::default(),
        hang: Default::default(),
        hang_timeout: ringkit::DEFAULT_TX_HANG_TIMEOUT,
        port: "t",
        path: ringkit::TxPath::Full,
    })
    .unwrap()
}

/// The RQ WQE `i` and a pointer to its CQE, as the device reads them.
fn rq(ring: &RxRing<FakeDb>, i: usize) -> (RqWqe, *mut RxCqe) {
    // SAFETY: entry i < DEPTH of the ring's memory (IOVA = VA).
    let w = unsafe { (ring.ring_iova() as usize as *const RqWqe).add(i).read_volatile() };
    let swap = |q: u64| q.rotate_right(32);
    (w, swap(w.cqe) as usize as *mut RxCqe)
}

fn complete(ring: &RxRing<FakeDb>, i: usize, c: RxCqe) {
    let (_, at) = rq(ring, i);
    // SAFETY: the CQE slot the WQE names, in the ring's CQE array.
    unsafe { at.write_volatile(c) };
}

#[test]
fn rx_delivers_cqe_fields_clears_status_and_refills_with_one_doorbell() {
    let db = Arc::new(FakeDb::default());
    let p = pool(2048);
    let mut rx = rx_ring(&db, &p, 2048);
    let (w0, at0) = rq(&rx, 0);
    assert_eq!(at0 as u64, rx.cqe_iova(), "WQE 0 names CQE 0");
    assert_ne!(w0.buf, 0);
    let udp4 = cqe::PKT_TYPE.val(cqe::PKT_UDP) | cqe::RSS_TYPE.val(2);
    let vlan = cqe::PKT_TYPE.val(cqe::PKT_TCP) | cqe::IP_TYPE.val(1) | cqe::VLAN_STRIPPED;
    complete(&rx, 0, RxCqe::done(60, 0, udp4, 0xABCD));
    complete(&rx, 1, RxCqe::done(1514, cqe::CSUM_ERR_IP, udp4, 0x1234));
    let mut c = RxCqe::done(100, 0, vlan, 0);
    c.0[1] |= cqe::VLAN.val(0x0123);
    complete(&rx, 2, c);
    let mut b = PacketBatch::with_capacity(32);
    assert_eq!(rx.rx_burst(&mut b), 3);
    let m = b.as_slice();
    assert_eq!((m[0].data_len(), m[0].rss_hash(), m[0].port()), (60, 0xABCD, 7));
    assert_eq!(m[0].packet_type(), ptype::L2_ETHER | ptype::L3_IPV4 | ptype::L4_UDP);
    assert_eq!(m[0].ol_flags(), ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_GOOD | ol_flags::RX_RSS_HASH);
    assert_ne!(m[1].ol_flags() & ol_flags::RX_IP_CKSUM_BAD, 0);
    assert_eq!(m[1].pkt_len(), 1514);
    assert_eq!(m[2].vlan_tci(), 0x0123);
    assert_ne!(m[2].ol_flags() & ol_flags::RX_VLAN_STRIPPED, 0);
    for i in 0..3 {
        // SAFETY: CQE slots of the ring.
        assert_eq!(unsafe { rq(&rx, i).1.read_volatile() }.0[0], 0, "the driver clears the status");
    }
    assert!(db.last(DB_PAGE_RQ).is_none(), "no refill below the threshold");
    // 32 more: the refill posts 35 buffers and rings once with PI = 63 + 35 entries, in 8-byte units.
    for i in 3..35 {
        complete(&rx, i, RxCqe::done(64, 0, udp4, i as u32));
    }
    b.clear();
    assert_eq!(rx.rx_burst(&mut b), 32);
    let (info, pi) = db.last(DB_PAGE_RQ).expect("RQ doorbell");
    assert_eq!(info, 3 | 1 << 23 | 1 << 27, "queue 3, RQ, source type 1");
    assert_eq!(pi as usize, ((63 + 35) % 64) << 1);
    b.clear();
    drop(rx);
    assert!(p.is_full());
}

#[test]
fn rx_chains_a_frame_over_several_buffers_and_drops_flushed_ones() {
    let db = Arc::new(FakeDb::default());
    let p = pool(2048);
    let mut rx = rx_ring(&db, &p, 2048);
    let udp4 = cqe::PKT_TYPE.val(cqe::PKT_UDP);
    complete(&rx, 0, RxCqe::done(5000, 0, udp4, 9));
    let mut flushed = RxCqe::done(0, 0, 0, 0);
    flushed.0[0] |= cqe::FLUSH;
    complete(&rx, 3, flushed);
    complete(&rx, 4, RxCqe::done(60, 0, udp4, 1));
    let mut b = PacketBatch::with_capacity(32);
    assert_eq!(rx.rx_burst(&mut b), 2);
    let m = &b.as_slice()[0];
    assert_eq!((m.pkt_len(), m.nb_segs(), m.data_len(), m.rss_hash()), (5000, 3, 2048, 9));
    assert_eq!(b.as_slice()[1].pkt_len(), 60);
    b.clear();
    drop(rx);
    assert!(p.is_full());
}

/// WQEBB `i` of the SQ.
fn sq(ring: &TxRing<FakeDb>, i: usize) -> SqWqebb {
    // SAFETY: WQEBB i < DEPTH of the ring (IOVA = VA).
    unsafe { (ring.ring_iova() as usize as *const SqWqebb).add(i).read_volatile() }
}

fn set_ci(ring: &TxRing<FakeDb>, ci: u16) {
    // SAFETY: the ring's CI slot.
    unsafe { (ring.ci_iova() as usize as *mut u16).write_volatile(ci.to_le()) };
}

fn packets(p: &Mempool, n: usize, len: u16) -> PacketBatch {
    let mut b = PacketBatch::with_capacity(n);
    for _ in 0..n {
        let mut m = p.alloc().unwrap();
        assert!(m.set_len(len));
        b.push(m).unwrap();
    }
    b
}

#[test]
fn tx_writes_compact_wqes_flips_the_owner_at_the_end_and_frees_on_the_ci() {
    let db = Arc::new(FakeDb::default());
    let p = pool(2048);
    let mut tx = tx_ring(&db, &p);
    let mut b = packets(&p, 40, 60);
    let iova0 = b.as_slice()[0].data_iova();
    assert_eq!(tx.tx_burst(&mut b), 40);
    let w = sq(&tx, 0);
    assert_eq!(w.0, [60 | 1 << 31, 0, (iova0 >> 32) as u32, iova0 as u32], "compact, owner 1");
    let (info, pi) = db.last(DB_PAGE_SQ).unwrap();
    assert_eq!((info, pi), (2 | 5 << 24 | 1 << 27, 40), "queue 2, CoS 5, source type 1");
    // The device consumes everything; the next 40 wrap: slots 40..63 owner 1, then 0..15 owner 0.
    set_ci(&tx, 40);
    let mut b = packets(&p, 40, 61);
    assert_eq!(tx.tx_burst(&mut b), 40, "the cleanup made room");
    assert_eq!(sq(&tx, 63).0[0] >> 31, 1);
    assert_eq!(sq(&tx, 0).0[0], 61, "owner 0 after the wrap");
    assert_eq!(db.last(DB_PAGE_SQ).unwrap().1, 16);
    // A full ring keeps what does not fit in the batch.
    let mut b = packets(&p, 60, 62);
    assert_eq!(tx.tx_burst(&mut b), 63 - 40);
    assert_eq!(b.len(), 60 - 23);
    b.clear();
    set_ci(&tx, 39);
    let mut none = PacketBatch::with_capacity(1);
    tx.tx_burst(&mut none);
    drop(tx);
    assert!(p.is_full(), "completed and in-flight packets all freed");
}

#[test]
fn tx_offloads_and_chains_use_the_extended_wqe() {
    let db = Arc::new(FakeDb::default());
    let p = pool(2048);
    let mut tx = tx_ring(&db, &p);
    let mut m = p.alloc().unwrap();
    assert!(m.set_len(100));
    m.set_ol_flags(ol_flags::TX_IP_CKSUM | ol_flags::TX_UDP_CKSUM | ol_flags::TX_VLAN | ol_flags::TX_IPV4);
    m.set_vlan_tci(0x0456);
    let mut tail = p.alloc().unwrap();
    assert!(tail.set_len(30));
    let tail_iova = tail.data_iova();
    m.chain(tail);
    let mut tso = p.alloc().unwrap();
    assert!(tso.set_len(1000));
    tso.set_ol_flags(ol_flags::TX_TCP_SEG | ol_flags::TX_IPV4);
    tso.set_tx_offload(TxOffload { l2_len: 14, l3_len: 20, l4_len: 20, tso_segsz: 536 });
    let mut b = PacketBatch::with_capacity(2);
    b.push(m).unwrap();
    b.push(tso).unwrap();
    assert_eq!(tx.tx_burst(&mut b), 2);
    let c = sq(&tx, 0).0;
    assert_eq!(c[0] & 0x3FFFF, 100);
    assert_eq!(c[0] >> 19 & 0xFF, 2, "two buffer descriptors");
    assert_ne!(c[0] & (1 << 27), 0, "task section");
    assert_ne!(c[0] & (1 << 30), 0, "extended");
    assert_eq!(c[0] >> 31, 1);
    assert_eq!(c[1], 1 << 28 | 0x3E00 << 13, "queue_info: UC and the default MSS");
    assert_eq!(sq(&tx, 1).0, [1 << 24 | 1 << 25, 0, 0, 0x0456 | 1 << 19], "checksums and VLAN insert");
    assert_eq!(sq(&tx, 2).0, [30, 0, (tail_iova >> 32) as u32, tail_iova as u32]);
    let t = sq(&tx, 3).0;
    assert_eq!(t[1], 1 << 28 | 1 << 11 | (54 / 2) << 2 | 536 << 13, "TSO, payload offset, MSS");
    assert_eq!(sq(&tx, 4).0[0], 1 << 24 | 1 << 25);
    assert_eq!(db.last(DB_PAGE_SQ).unwrap().1, 5);
    set_ci(&tx, 5);
    let mut none = PacketBatch::with_capacity(1);
    for _ in 0..2 {
        tx.tx_burst(&mut none);
    }
    drop(tx);
    assert!(p.is_full());
}

#[test]
fn tx_drops_empty_packets_and_frees_other_pools_packets_to_their_pool() {
    let db = Arc::new(FakeDb::default());
    let p = pool(2048);
    let other = Mempool::new(
        "hinic3-other",
        &PoolConfig { size: 63, cache_size: 0, ..Default::default() },
        &Allocator::no_huge(),
    )
    .unwrap();
    let mut tx = tx_ring(&db, &p);
    let mut b = PacketBatch::with_capacity(3);
    b.push(p.alloc().unwrap()).unwrap(); // empty
    let mut m = other.alloc().unwrap();
    assert!(m.set_len(70));
    let iova = m.data_iova();
    b.push(m).unwrap();
    assert_eq!(tx.tx_burst(&mut b), 2);
    assert_eq!(sq(&tx, 0).0, [70 | 1 << 31, 0, (iova >> 32) as u32, iova as u32], "compact, though of another pool");
    assert_eq!(db.last(DB_PAGE_SQ).unwrap().1, 1, "the empty packet took no WQEBB");
    assert!(p.is_full(), "the empty packet was freed");
    set_ci(&tx, 1);
    let mut none = PacketBatch::with_capacity(1);
    for _ in 0..2 {
        tx.tx_burst(&mut none);
    }
    drop(tx);
    assert!(other.is_full());
}

#[test]
fn rx_counts_every_checksum_error_completion_even_in_a_run_the_fast_path_would_take() {
    let db = Arc::new(FakeDb::default());
    let p = pool(2048);
    let mapper: Arc<dyn DmaMapper> = Arc::new(IdentityMapper);
    let csum = Arc::new(pktio::stats::Counter::default());
    let mut rx = RxRing::new(RxSetup {
        db: &db,
        allocator: &Allocator::no_huge(),
        mapper: &mapper,
        pool: &p,
        queue: 0,
        depth: DEPTH,
        wq_page_log2: 8,
        buf_len: 2048,
        port_id: 0,
        stats: Default::default(),
        csum_errors: csum.clone(),
        port: "t",
    })
    .unwrap();
    let udp4 = cqe::PKT_TYPE.val(cqe::PKT_UDP);
    // 8 good, 9 identical L4 errors (a run the memo path would take four at a time), 1 IP + L4 error, a chained
    // frame with an IP error over 3 buffers, 4 good; a bypassed check is no error.
    let mut i = 0;
    let mut put = |c: RxCqe, n: usize, used: usize| {
        for _ in 0..n {
            complete(&rx, i, c);
            i += used;
        }
    };
    put(RxCqe::done(60, 0, udp4, 0), 8, 1);
    put(RxCqe::done(60, 1 << 2, udp4, 0), 9, 1);
    put(RxCqe::done(60, cqe::CSUM_ERR_IP | 1 << 2, udp4, 0), 1, 1);
    put(RxCqe::done(5000, cqe::CSUM_ERR_IP, udp4, 0), 1, 3);
    put(RxCqe::done(60, 0, udp4, 0), 4, 1);
    put(RxCqe::done(60, cqe::CSUM_BYPASSED | cqe::CSUM_ERR_IP, udp4, 0), 1, 1);
    // A VLAN-stripped frame with an L4 error: tag and count both.
    let mut v = RxCqe::done(60, 1 << 2, udp4 | cqe::VLAN_STRIPPED, 0);
    v.0[1] |= cqe::VLAN.val(0x0042);
    put(v, 1, 1);
    let mut b = PacketBatch::with_capacity(64);
    assert_eq!(rx.rx_burst(&mut b), 25);
    assert_eq!(b.as_slice()[24].vlan_tci(), 0x0042);
    let bad = b.iter().filter(|m| m.ol_flags() & (ol_flags::RX_IP_CKSUM_BAD | ol_flags::RX_L4_CKSUM_BAD) != 0).count();
    assert_eq!((csum.get(), bad), (12, 12));
    b.clear();
    drop(rx);
    assert!(p.is_full());
}
