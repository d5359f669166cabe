//! The null and ring software ports through the public API: bring-up, data path, exact stats, errors, ring
//! pairs and loopback, buffers left in rings, and two-thread forwarding. Every test ends with its pool full.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use hugepage::Allocator;
use pktio::{Error, EthDev, Mbuf, Mempool, PacketBatch, PoolConfig, PortConfig, RxQueue, TxQueue};
use swports::open_vdev;

fn pool(name: &str, size: u32) -> Mempool {
    Mempool::new(name, &PoolConfig::with_size(size), &Allocator::no_huge()).unwrap()
}

fn open(devargs: &str) -> Box<dyn EthDev> {
    open_vdev(devargs).unwrap_or_else(|e| panic!("{devargs}: {e}"))
}

/// Allocates `n` packets of `len` bytes whose first 8 bytes hold `first + i`.
fn fill(batch: &mut PacketBatch, p: &Mempool, n: usize, len: u16, first: u64) {
    let start = batch.len();
    assert!(batch.alloc_from(p, n), "pool {} has {} free, {n} wanted", p.name(), p.available());
    for (i, m) in batch.as_mut_slice()[start..].iter_mut().enumerate() {
        assert!(m.set_len(len));
        m.data_mut()[..8].copy_from_slice(&(first + i as u64).to_le_bytes());
    }
}

fn seq(m: &Mbuf) -> u64 {
    u64::from_le_bytes(m.data()[..8].try_into().unwrap())
}

fn xstat(dev: &dyn EthDev, name: &str) -> Option<u64> {
    dev.xstats().into_iter().find(|x| x.name == name).map(|x| x.value)
}

// ---------------------------------------------------------------------------------------------------------------
// net_null

#[test]
fn null_rx_gives_sized_packets_with_port_id_and_tx_frees() {
    let p = pool("nr-null-basic", 256);
    let mut dev = open("net_null0,size=100");
    assert_eq!(dev.info().driver_name, "net_null");
    assert_eq!(dev.info().device_name, "net_null0");
    dev.configure(&PortConfig::default()).unwrap();
    dev.set_port_id(7);
    assert!(!dev.is_started());
    assert!(!dev.link().up);
    dev.start(&p).unwrap();
    assert!(dev.is_started());
    assert!(dev.link().up);
    let mut rx = dev.rx_queue(0).unwrap();
    let mut tx = dev.tx_queue(0).unwrap();
    let mut batch = PacketBatch::with_capacity(32);
    assert_eq!(rx.rx_burst(&mut batch), 32);
    assert_eq!(batch.len(), 32);
    assert_eq!(p.in_use(), 32);
    let distinct: HashSet<u32> = batch.iter().map(Mbuf::pool_index).collect();
    assert_eq!(distinct.len(), 32);
    for m in batch.iter() {
        assert_eq!((m.data_len(), m.pkt_len(), m.nb_segs(), m.port()), (100, 100, 1, 7));
    }
    // A full batch receives nothing more.
    assert_eq!(rx.rx_burst(&mut batch), 0);
    assert_eq!(tx.tx_burst(&mut batch), 32);
    assert!(batch.is_empty());
    assert!(p.is_full(), "tx frees what it sends");
    // A partly full batch is topped up.
    fill(&mut batch, &p, 10, 60, 0);
    assert_eq!(rx.rx_burst(&mut batch), 22);
    assert_eq!(batch.len(), 32);
    assert_eq!(batch.as_slice()[9].data_len(), 60);
    assert_eq!(batch.as_slice()[10].data_len(), 100);
    assert_eq!(tx.tx_burst(&mut batch), 32);
    drop((rx, tx));
    dev.stop().unwrap();
    assert!(!dev.is_started());
    assert!(p.is_full());
}

#[test]
fn null_rx_packets_are_as_fresh_allocations_whatever_the_buffers_held() {
    // A pool of 32 and bursts of 32: every RX gets every buffer, each dirtied by its previous user.
    let p = pool("nr-null-fresh", 32);
    let mut dev = open("net_null8,size=70");
    dev.configure(&PortConfig::default()).unwrap();
    dev.set_port_id(5);
    dev.start(&p).unwrap();
    let (mut rx, mut tx) = (dev.rx_queue(0).unwrap(), dev.tx_queue(0).unwrap());
    let mut batch = PacketBatch::with_capacity(32);
    for round in 0..3 {
        assert!(batch.alloc_from(&p, 32));
        for m in batch.iter_mut() {
            m.prepend(6).unwrap();
            assert!(m.set_len(900));
            m.set_port(2);
            m.set_ol_flags(pktio::mempool::ol_flags::RX_RSS_HASH);
            m.set_packet_type(0x211);
            m.set_rss_hash(0xdead_beef);
            m.set_vlan_tci(42);
            m.set_tx_offload(pktio::mempool::TxOffload { l2_len: 14, l3_len: 20, l4_len: 8, tso_segsz: 1400 });
        }
        // Free them through the TX path too (its bulk free).
        assert_eq!(tx.tx_burst(&mut batch), 32);
        assert_eq!(rx.rx_burst(&mut batch), 32, "round {round}");
        for m in batch.iter() {
            assert_eq!((m.headroom(), m.data_len(), m.pkt_len(), m.nb_segs(), m.port()), (128, 70, 70, 1, 5));
            assert_eq!((m.ol_flags(), m.packet_type(), m.rss_hash(), m.vlan_tci()), (0, 0, 0, 0));
            assert_eq!((m.tx_offload(), m.tailroom()), (pktio::mempool::TxOffload::default(), p.data_room() - 70));
        }
        assert_eq!(tx.tx_burst(&mut batch), 32);
        assert!(p.is_full());
    }
    let s = dev.stats();
    assert_eq!((s.ipackets, s.ibytes, s.opackets, s.obytes), (96, 96 * 70, 192, 96 * 900 + 96 * 70));
    drop((rx, tx));
    dev.stop().unwrap();
    assert!(p.is_full());
}

#[test]
fn null_tx_frees_chains_and_foreign_buffers_home_and_counts_their_bytes() {
    let p = pool("nr-null-txmix", 64);
    let q = pool("nr-null-txmix-q", 64);
    let mut dev = open("net_null9");
    dev.configure(&PortConfig::default()).unwrap();
    dev.start(&p).unwrap();
    let mut tx = dev.tx_queue(0).unwrap();
    let mut batch = PacketBatch::with_capacity(32);
    let mut want = 0;
    for i in 0..7u16 {
        let home = if i % 3 == 1 { &q } else { &p };
        let mut m = home.alloc().unwrap();
        assert!(m.set_len(10 + i));
        if i % 2 == 0 {
            let mut tail = q.alloc().unwrap();
            assert!(tail.set_len(100));
            m.chain(tail);
        }
        want += m.pkt_len() as u64;
        batch.push(m).unwrap();
    }
    assert!(q.in_use() > 0);
    assert_eq!(tx.tx_burst(&mut batch), 7);
    assert_eq!(dev.stats().obytes, want);
    assert!(p.is_full() && q.is_full());
    // Single segments only, one of them foreign (last, so the run before it is all of one pool).
    for i in 0..9u16 {
        let mut m = if i == 8 { &q } else { &p }.alloc().unwrap();
        assert!(m.set_len(200 + i));
        want += m.pkt_len() as u64;
        batch.push(m).unwrap();
    }
    assert_eq!(tx.tx_burst(&mut batch), 9);
    assert_eq!(dev.stats().obytes, want);
    assert!(p.is_full() && q.is_full(), "p {} q {} in use", p.in_use(), q.in_use());
    // One pool only, one packet a chain: its tail must go back too.
    for i in 0..6u16 {
        let mut m = p.alloc().unwrap();
        assert!(m.set_len(300 + i));
        if i == 3 {
            m.chain(p.alloc().unwrap());
        }
        want += m.pkt_len() as u64;
        batch.push(m).unwrap();
    }
    assert_eq!(tx.tx_burst(&mut batch), 6);
    assert_eq!(dev.stats().obytes, want);
    assert!(p.is_full(), "p {} in use", p.in_use());
    drop(tx);
    dev.stop().unwrap();
}

#[test]
fn null_stats_are_exact_and_reset() {
    let p = pool("nr-null-stats", 512);
    let mut dev = open("net_null3,size=64");
    dev.configure(&PortConfig { rx_queues: 2, tx_queues: 2, ..Default::default() }).unwrap();
    dev.start(&p).unwrap();
    let mut rx0 = dev.rx_queue(0).unwrap();
    let mut rx1 = dev.rx_queue(1).unwrap();
    let mut tx0 = dev.tx_queue(0).unwrap();
    let mut tx1 = dev.tx_queue(1).unwrap();
    let mut batch = PacketBatch::with_capacity(32);
    for _ in 0..10 {
        assert_eq!(rx0.rx_burst(&mut batch), 32);
        assert_eq!(tx0.tx_burst(&mut batch), 32);
    }
    batch.set_capacity(8);
    for _ in 0..3 {
        assert_eq!(rx1.rx_burst(&mut batch), 8);
        // Change the lengths before sending: TX counts what it is given.
        for m in batch.iter_mut() {
            assert!(m.set_len(1000));
        }
        assert_eq!(tx1.tx_burst(&mut batch), 8);
    }
    let s = dev.stats();
    assert_eq!((s.ipackets, s.ibytes), (344, 344 * 64));
    assert_eq!((s.opackets, s.obytes), (344, 320 * 64 + 24 * 1000));
    assert_eq!((s.q_ipackets.clone(), s.q_opackets.clone()), (vec![320, 24], vec![320, 24]));
    assert_eq!((s.q_ibytes.clone(), s.q_obytes.clone()), (vec![320 * 64, 24 * 64], vec![320 * 64, 24 * 1000]));
    assert_eq!((s.imissed, s.ierrors, s.oerrors, s.rx_nombuf), (0, 0, 0, 0));
    assert_eq!(xstat(&*dev, "rx_good_packets"), Some(344));
    assert_eq!(xstat(&*dev, "tx_good_packets"), Some(344));
    assert_eq!(xstat(&*dev, "rx_good_bytes"), Some(344 * 64));
    assert_eq!(xstat(&*dev, "rx_q0_packets"), Some(320));
    assert_eq!(xstat(&*dev, "rx_q1_packets"), Some(24));
    assert_eq!(xstat(&*dev, "tx_q1_bytes"), Some(24 * 1000));
    assert_eq!(xstat(&*dev, "rx_q2_packets"), None);

    dev.reset_stats();
    let z = dev.stats();
    assert_eq!((z.ipackets, z.opackets, z.ibytes, z.obytes, z.rx_nombuf), (0, 0, 0, 0, 0));
    assert!(z.q_ipackets.iter().chain(&z.q_opackets).all(|&v| v == 0));
    assert!(dev.xstats().iter().all(|x| x.value == 0), "{:?}", dev.xstats());
    // Counting goes on from zero.
    batch.set_capacity(5);
    assert_eq!(rx1.rx_burst(&mut batch), 5);
    assert_eq!(tx0.tx_burst(&mut batch), 5);
    let s = dev.stats();
    assert_eq!((s.ipackets, s.ibytes, s.opackets, s.obytes), (5, 320, 5, 320));
    assert_eq!((s.q_ipackets.clone(), s.q_opackets.clone()), (vec![0, 5], vec![5, 0]));
    drop((rx0, rx1, tx0, tx1));
    dev.stop().unwrap();
    assert!(p.is_full());
}

#[test]
fn null_nombuf_counted_when_pool_is_empty() {
    let p = pool("nr-null-nombuf", 40);
    let mut dev = open("net_null1");
    dev.configure(&PortConfig::default()).unwrap();
    dev.start(&p).unwrap();
    let mut rx = dev.rx_queue(0).unwrap();
    let mut held = PacketBatch::with_capacity(32);
    assert_eq!(rx.rx_burst(&mut held), 32);
    let mut batch = PacketBatch::with_capacity(32);
    assert_eq!(rx.rx_burst(&mut batch), 0, "8 left, 32 asked");
    assert!(batch.is_empty());
    let s = dev.stats();
    assert_eq!((s.ipackets, s.ibytes), (32, 32 * 64));
    assert!(s.rx_nombuf > 0);
    assert_eq!(xstat(&*dev, "rx_mbuf_allocation_errors"), Some(s.rx_nombuf));
    // What is left can still be taken in a smaller burst.
    batch.set_capacity(8);
    assert_eq!(rx.rx_burst(&mut batch), 8);
    assert_eq!(p.available(), 0);
    drop((held, batch, rx));
    dev.stop().unwrap();
    assert!(p.is_full());
}

#[test]
fn null_copy_mode_and_no_rx() {
    let p = pool("nr-null-copy", 128);
    let mut dev = open("net_null2,size=1500,copy=1");
    dev.configure(&PortConfig::default()).unwrap();
    dev.start(&p).unwrap();
    let (mut rx, mut tx) = (dev.rx_queue(0).unwrap(), dev.tx_queue(0).unwrap());
    let mut batch = PacketBatch::new();
    // Dirty a buffer so that the copy is visible: the next RX must overwrite it with the template.
    let mut dirty = p.alloc().unwrap();
    dirty.append(1500).unwrap().fill(0xcc);
    drop(dirty);
    assert_eq!(rx.rx_burst(&mut batch), 32);
    assert!(batch.iter().all(|m| m.data_len() == 1500 && m.data().iter().all(|&b| b == 0)));
    assert_eq!(tx.tx_burst(&mut batch), 32);
    assert_eq!(dev.stats().obytes, 32 * 1500);
    drop((rx, tx));
    dev.stop().unwrap();

    let mut quiet = open("net_null4,no-rx=1");
    quiet.configure(&PortConfig::default()).unwrap();
    quiet.start(&p).unwrap();
    let mut rx = quiet.rx_queue(0).unwrap();
    assert_eq!(rx.rx_burst(&mut batch), 0);
    assert_eq!(quiet.stats().ipackets, 0);
    drop(rx);
    quiet.stop().unwrap();
    assert!(p.is_full());
}

#[test]
fn queue_errors() {
    let p = pool("nr-errors", 64);
    let mut dev = open("net_null5");
    dev.configure(&PortConfig { rx_queues: 2, tx_queues: 1, ..Default::default() }).unwrap();
    assert!(matches!(dev.rx_queue(0), Err(Error::NotStarted { .. })));
    assert!(matches!(dev.tx_queue(0), Err(Error::NotStarted { .. })));
    dev.start(&p).unwrap();
    assert!(matches!(dev.start(&p), Err(Error::Started { .. })), "start twice");
    assert!(matches!(dev.configure(&PortConfig::default()), Err(Error::Started { .. })), "configure while started");
    match dev.rx_queue(2) {
        Err(Error::InvalidQueue { kind: "rx", queue: 2, count: 2, .. }) => {}
        other => panic!("expected InvalidQueue, got {:?}", other.err()),
    }
    assert!(matches!(dev.tx_queue(1), Err(Error::InvalidQueue { kind: "tx", queue: 1, count: 1, .. })));
    let rx0 = dev.rx_queue(0).unwrap();
    assert!(matches!(dev.rx_queue(0), Err(Error::QueueTaken { kind: "rx", queue: 0, .. })));
    let tx0 = dev.tx_queue(0).unwrap();
    assert!(matches!(dev.tx_queue(0), Err(Error::QueueTaken { kind: "tx", queue: 0, .. })));
    // Dropping a handle does not make the queue available again before a restart.
    drop(tx0);
    assert!(matches!(dev.tx_queue(0), Err(Error::QueueTaken { .. })));
    // Stop refuses while a handle is alive, and the port stays started.
    assert!(matches!(dev.stop(), Err(Error::QueuesInUse { .. })));
    assert!(dev.is_started());
    drop(rx0);
    dev.stop().unwrap();
    // After a restart every queue can be taken again.
    dev.start(&p).unwrap();
    let (rx0, rx1, tx0) = (dev.rx_queue(0).unwrap(), dev.rx_queue(1).unwrap(), dev.tx_queue(0).unwrap());
    drop((rx0, rx1, tx0));
    dev.stop().unwrap();
    // Error messages name the port.
    let msg = dev.rx_queue(0).err().unwrap().to_string();
    assert!(msg.contains("net_null5"), "{msg}");
    assert!(p.is_full());
}

#[test]
fn invalid_configs_are_rejected() {
    let mut dev = open("net_null6");
    let max_q = dev.info().max_rx_queues;
    let max_d = dev.info().rx_desc_lim.max;
    let bad = [
        PortConfig { rx_queues: 0, ..Default::default() },
        PortConfig { tx_queues: 0, ..Default::default() },
        PortConfig { rx_queues: max_q + 1, ..Default::default() },
        PortConfig { tx_queues: dev.info().max_tx_queues + 1, ..Default::default() },
        PortConfig { rx_desc: max_d + 1, ..Default::default() },
        PortConfig { tx_desc: dev.info().tx_desc_lim.max + 1, ..Default::default() },
        PortConfig { rx_desc: 0, ..Default::default() },
        PortConfig { mtu: dev.info().max_mtu + 1, ..Default::default() },
        PortConfig { mtu: dev.info().min_mtu - 1, ..Default::default() },
    ];
    for c in &bad {
        match dev.configure(c) {
            Err(Error::InvalidConfig { port, .. }) => assert_eq!(port, "net_null6"),
            other => panic!("{c:?} accepted or wrong error: {other:?}"),
        }
    }
    // A rejected configuration leaves the previous one in force; the limits themselves are fine.
    assert_eq!(dev.config(), &PortConfig::default());
    let edge = PortConfig { rx_queues: max_q, tx_queues: 1, rx_desc: max_d, tx_desc: 1, ..Default::default() };
    dev.configure(&edge).unwrap();
    assert_eq!(dev.config(), &edge);
    assert!(dev.set_mtu(dev.info().max_mtu + 1).is_err());
    dev.set_mtu(9000).unwrap();
    assert_eq!(dev.mtu(), 9000);
}

#[test]
fn bad_devargs_are_rejected() {
    for (args, needle) in [
        ("net_null0,size=abc", "size=abc"),
        ("net_null0,bogus=1", "bogus"),
        ("net_null0,size=0", "size"),
        ("net_null0,size=70000", "size"),
        ("net_null0,copy=maybe", "copy"),
        ("net_null0,size", "size"),
        ("net_ring0,queues=0", "queues"),
        ("net_ring0,size=0", "size"),
        ("net_ring0,colour=red", "colour"),
        ("", "device name"),
    ] {
        match open_vdev(args) {
            Err(e @ Error::Devargs { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(needle), "{args}: message {msg:?} does not mention {needle:?}");
            }
            Err(e) => panic!("{args}: expected a devargs error, got {e}"),
            Ok(_) => panic!("{args}: accepted"),
        }
    }
    match open_vdev("net_bogus0") {
        Err(Error::UnknownDriver { name, known }) => {
            assert_eq!(name, "net_bogus0");
            assert!(known.contains("net_null") && known.contains("net_ring"), "{known}");
        }
        other => panic!("expected UnknownDriver, got {:?}", other.err()),
    }
}

#[test]
fn null_size_larger_than_data_room_is_refused() {
    let p = pool("nr-null-too-big", 16);
    let mut dev = open("net_null7,size=3000");
    dev.configure(&PortConfig::default()).unwrap();
    // Refusing at start is fine; otherwise the RX queue must be refused, every time it is asked for.
    match dev.start(&p) {
        Err(Error::InvalidConfig { .. }) => assert!(!dev.is_started()),
        Err(e) => panic!("start: wrong error {e}"),
        Ok(()) => {
            assert!(matches!(dev.rx_queue(0), Err(Error::InvalidConfig { .. })));
            // The refusal is stable: asking again gives the same answer, not "queue taken".
            match dev.rx_queue(0) {
                Err(Error::InvalidConfig { .. }) => {}
                other => panic!("second rx_queue: expected InvalidConfig, got {:?}", other.err()),
            }
            dev.stop().unwrap();
        }
    }
    assert!(p.is_full());
}

// ---------------------------------------------------------------------------------------------------------------
// net_ring

fn start(dev: &mut dyn EthDev, p: &Mempool, queues: u16) {
    dev.configure(&PortConfig { rx_queues: queues, tx_queues: queues, ..Default::default() }).unwrap();
    dev.start(p).unwrap();
}

#[test]
fn ring_loopback() {
    let p = pool("nr-ring-loop", 128);
    let mut dev = open("net_ring0");
    assert_eq!(dev.info().driver_name, "net_ring");
    dev.set_port_id(3);
    start(&mut *dev, &p, 1);
    let (mut rx, mut tx) = (dev.rx_queue(0).unwrap(), dev.tx_queue(0).unwrap());
    let mut batch = PacketBatch::new();
    fill(&mut batch, &p, 20, 70, 100);
    let sent: Vec<u32> = batch.iter().map(Mbuf::pool_index).collect();
    assert_eq!(tx.tx_burst(&mut batch), 20);
    assert!(batch.is_empty());
    assert_eq!(p.in_use(), 20, "zero-copy: the ring holds the buffers");
    let mut got = PacketBatch::new();
    assert_eq!(rx.rx_burst(&mut got), 20);
    assert_eq!(got.iter().map(Mbuf::pool_index).collect::<Vec<_>>(), sent, "same buffers, same order");
    assert_eq!(got.iter().map(seq).collect::<Vec<_>>(), (100..120).collect::<Vec<_>>());
    assert!(got.iter().all(|m| m.port() == 3 && m.data_len() == 70));
    assert_eq!(rx.rx_burst(&mut got), 0, "nothing more");
    let s = dev.stats();
    assert_eq!((s.ipackets, s.ibytes, s.opackets, s.obytes), (20, 20 * 70, 20, 20 * 70));
    drop(got);
    drop((rx, tx));
    dev.stop().unwrap();
    assert!(p.is_full());
}

#[test]
fn ring_pair_both_directions() {
    let p = pool("nr-ring-pair", 256);
    let mut a = open("net_ring10,link=nr-pair");
    let mut b = open("net_ring11,link=nr-pair");
    start(&mut *a, &p, 1);
    start(&mut *b, &p, 1);
    a.set_port_id(0);
    b.set_port_id(1);
    let (mut arx, mut atx) = (a.rx_queue(0).unwrap(), a.tx_queue(0).unwrap());
    let (mut brx, mut btx) = (b.rx_queue(0).unwrap(), b.tx_queue(0).unwrap());
    let mut batch = PacketBatch::new();
    fill(&mut batch, &p, 32, 64, 0);
    assert_eq!(atx.tx_burst(&mut batch), 32);
    assert_eq!(arx.rx_burst(&mut batch), 0, "a pair is not a loopback");
    assert_eq!(brx.rx_burst(&mut batch), 32);
    assert_eq!(batch.iter().map(seq).collect::<Vec<_>>(), (0..32).collect::<Vec<_>>());
    assert!(batch.iter().all(|m| m.port() == 1));
    // And back.
    for m in batch.iter_mut() {
        assert!(m.set_len(128));
    }
    assert_eq!(btx.tx_burst(&mut batch), 32);
    assert_eq!(brx.rx_burst(&mut batch), 0);
    assert_eq!(arx.rx_burst(&mut batch), 32);
    assert!(batch.iter().all(|m| m.port() == 0 && m.data_len() == 128));
    let (sa, sb) = (a.stats(), b.stats());
    assert_eq!((sa.opackets, sa.obytes, sa.ipackets, sa.ibytes), (32, 32 * 64, 32, 32 * 128));
    assert_eq!((sb.opackets, sb.obytes, sb.ipackets, sb.ibytes), (32, 32 * 128, 32, 32 * 64));
    drop(batch);
    drop((arx, atx, brx, btx));
    assert!(p.is_full());
}

#[test]
fn ring_third_port_on_a_link_is_rejected() {
    let _a = open("net_ring20,link=nr-three");
    let _b = open("net_ring21,link=nr-three");
    match open_vdev("net_ring22,link=nr-three") {
        Err(Error::Devargs { reason, .. }) => assert!(reason.contains("nr-three"), "{reason}"),
        Err(e) => panic!("wrong error {e}"),
        Ok(_) => panic!("a third port joined a two-port link"),
    }
    // A mismatched queue count is refused too.
    let _c = open("net_ring23,link=nr-queues,queues=2");
    assert!(open_vdev("net_ring24,link=nr-queues,queues=3").is_err());
}

fn devargs_reason(devargs: &str) -> String {
    match open_vdev(devargs) {
        Err(Error::Devargs { reason, .. }) => reason,
        Err(e) => panic!("{devargs}: wrong error {e}"),
        Ok(_) => panic!("{devargs} accepted"),
    }
}

/// An empty `link=` names no link (it used to make a pair with any other empty name); two ends of one link asking
/// for different ring sizes (the default 1024 included) are refused, as different queue counts are.
#[test]
fn ring_link_needs_a_name_and_one_size() {
    assert!(devargs_reason("net_ring25,link=").contains("link= needs a name"));
    let _a = open("net_ring26,link=nr-size,size=512");
    let r = devargs_reason("net_ring27,link=nr-size,size=1024");
    assert!(r.contains("link \"nr-size\" has rings of 512 slots, not 1024"), "{r}");
    let r = devargs_reason("net_ring27,link=nr-size");
    assert!(r.contains("not 1024"), "{r}");
    let _b = open("net_ring27,link=nr-size,size=512");
    let _c = open("net_ring28,link=nr-size2,size=64");
    let _d = open("net_ring29,link=nr-size2,size=64");
}

#[test]
fn ring_multiple_queues_stay_separate() {
    let p = pool("nr-ring-mq", 512);
    let mut a = open("net_ring30,link=nr-mq,queues=4");
    let mut b = open("net_ring31,link=nr-mq,queues=4");
    assert_eq!(a.info().max_rx_queues, 4);
    start(&mut *a, &p, 4);
    start(&mut *b, &p, 4);
    let mut atx: Vec<_> = (0..4).map(|q| a.tx_queue(q).unwrap()).collect();
    let mut brx: Vec<_> = (0..4).map(|q| b.rx_queue(q).unwrap()).collect();
    let mut batch = PacketBatch::new();
    for (q, tx) in atx.iter_mut().enumerate() {
        fill(&mut batch, &p, q + 1, 64, 1000 * q as u64);
        assert_eq!(tx.tx_burst(&mut batch), q + 1);
    }
    for (q, rx) in brx.iter_mut().enumerate() {
        let mut got = PacketBatch::new();
        assert_eq!(rx.rx_burst(&mut got), q + 1, "queue {q}");
        assert!(got.iter().all(|m| seq(m) / 1000 == q as u64), "queue {q} got another queue's packets");
    }
    let s = b.stats();
    assert_eq!(s.q_ipackets, vec![1, 2, 3, 4]);
    assert_eq!(a.stats().q_opackets, vec![1, 2, 3, 4]);
    assert!(matches!(a.configure(&PortConfig { rx_queues: 5, ..Default::default() }), Err(Error::Started { .. })));
    drop((atx, brx));
    a.stop().unwrap();
    assert!(matches!(
        a.configure(&PortConfig { rx_queues: 5, tx_queues: 5, ..Default::default() }),
        Err(Error::InvalidConfig { .. })
    ));
    assert!(p.is_full());
}

#[test]
fn ring_full_leaves_unsent_packets_in_the_batch() {
    let p = pool("nr-ring-full", 256);
    let mut dev = open("net_ring40,size=64");
    start(&mut *dev, &p, 1);
    let (mut rx, mut tx) = (dev.rx_queue(0).unwrap(), dev.tx_queue(0).unwrap());
    let mut batch = PacketBatch::with_capacity(100);
    fill(&mut batch, &p, 100, 64, 0);
    assert_eq!(tx.tx_burst(&mut batch), 64);
    assert_eq!(batch.len(), 36, "what did not fit stays");
    assert_eq!(batch.iter().map(seq).collect::<Vec<_>>(), (64..100).collect::<Vec<_>>(), "in order, from the front");
    assert_eq!(tx.tx_burst(&mut batch), 0, "ring full");
    assert_eq!(batch.len(), 36);
    let s = dev.stats();
    assert_eq!((s.opackets, s.obytes, s.oerrors), (64, 64 * 64, 0));
    let mut got = PacketBatch::with_capacity(10);
    assert_eq!(rx.rx_burst(&mut got), 10);
    assert_eq!(tx.tx_burst(&mut batch), 10);
    assert_eq!(batch.iter().map(seq).collect::<Vec<_>>(), (74..100).collect::<Vec<_>>());
    assert_eq!(dev.stats().opackets, 74);
    drop((got, batch));
    // 64 buffers still sit in the ring.
    assert_eq!(p.in_use(), 64);
    drop((rx, tx));
    dev.stop().unwrap();
    assert_eq!(p.in_use(), 64, "stop does not drain a ring port");
    drop(dev);
    assert!(p.is_full(), "buffers left in the rings go back when the port drops");
}

#[test]
fn ring_pair_buffers_freed_when_ports_drop() {
    let p = pool("nr-ring-drop", 128);
    let mut a = open("net_ring50,link=nr-drop");
    let mut b = open("net_ring51,link=nr-drop");
    start(&mut *a, &p, 1);
    start(&mut *b, &p, 1);
    let (mut atx, mut btx) = (a.tx_queue(0).unwrap(), b.tx_queue(0).unwrap());
    let mut batch = PacketBatch::new();
    fill(&mut batch, &p, 30, 64, 0);
    assert_eq!(atx.tx_burst(&mut batch), 30);
    fill(&mut batch, &p, 20, 64, 0);
    assert_eq!(btx.tx_burst(&mut batch), 20);
    drop((atx, btx));
    assert_eq!(p.in_use(), 50);
    drop(a);
    assert_eq!(p.in_use(), 50, "b still holds the link");
    drop(b);
    assert!(p.is_full());
    // The link name is free again.
    let _c = open("net_ring52,link=nr-drop");
    let _d = open("net_ring53,link=nr-drop");
}

#[test]
fn ring_pair_two_thread_forwarding_million_packets() {
    const TOTAL: u64 = 1_000_000;
    let p = pool("nr-ring-fwd", 2048);
    let mut a = open("net_ring60,link=nr-fwd,size=32");
    let mut b = open("net_ring61,link=nr-fwd,size=32");
    start(&mut *a, &p, 1);
    start(&mut *b, &p, 1);
    let mut atx = a.tx_queue(0).unwrap();
    let mut brx = b.rx_queue(0).unwrap();
    let p2 = p.clone();
    // Lets the receiver give up if the sender dies (its counts then fail the test instead of hanging it).
    struct Alive(Arc<AtomicBool>);
    impl Drop for Alive {
        fn drop(&mut self) {
            self.0.store(false, Ordering::Release);
        }
    }
    let alive = Arc::new(AtomicBool::new(true));
    let sender_alive = Alive(alive.clone());
    let sender = std::thread::spawn(move || {
        let _alive = sender_alive;
        let _g = pktio::mempool::lcore::bind_current_thread(60).unwrap();
        let mut batch = PacketBatch::new();
        let mut next = 0u64;
        let mut sent = 0u64;
        while sent < TOTAL {
            let want = (batch.remaining() as u64).min(TOTAL - next) as usize;
            if want > 0 && batch.alloc_from(&p2, want) {
                let start = batch.len() - want;
                for m in &mut batch.as_mut_slice()[start..] {
                    assert!(m.set_len(60 + (next % 4) as u16));
                    m.data_mut()[..8].copy_from_slice(&next.to_le_bytes());
                    next += 1;
                }
            }
            let n = atx.tx_burst(&mut batch) as u64;
            if n == 0 {
                std::thread::yield_now();
            }
            sent += n;
        }
        assert!(batch.is_empty());
        sent
    });
    let receiver = std::thread::spawn(move || {
        let _g = pktio::mempool::lcore::bind_current_thread(61).unwrap();
        let mut batch = PacketBatch::new();
        let mut expect = 0u64;
        let mut bytes = 0u64;
        while expect < TOTAL {
            if brx.rx_burst(&mut batch) == 0 {
                if !alive.load(Ordering::Acquire) && brx.rx_burst(&mut batch) == 0 {
                    break;
                }
                std::thread::yield_now();
            }
            for m in batch.iter() {
                assert_eq!(seq(m), expect, "lost, duplicated or reordered");
                assert_eq!(m.data_len() as u64, 60 + expect % 4);
                bytes += m.data_len() as u64;
                expect += 1;
            }
            batch.clear();
        }
        (expect, bytes)
    });
    let (sent, received) = (sender.join(), receiver.join());
    let (sent, (received, bytes)) = (sent.expect("sender panicked"), received.expect("receiver panicked"));
    let expect_bytes: u64 = (0..TOTAL).map(|i| 60 + i % 4).sum();
    assert_eq!((sent, received, bytes), (TOTAL, TOTAL, expect_bytes));
    let (sa, sb) = (a.stats(), b.stats());
    assert_eq!((sa.opackets, sa.obytes), (TOTAL, expect_bytes));
    assert_eq!((sb.ipackets, sb.ibytes), (TOTAL, expect_bytes));
    assert_eq!((sa.ipackets, sb.opackets), (0, 0));
    assert!(p.is_full(), "{} of 2048 back", p.available());
}

/// A TX queue's counters must count exactly what went into its ring, also while the peer drains the ring at the
/// same time (the room a sender sees can only grow under it). A small ring, full bursts in, small bursts out.
#[test]
fn ring_tx_counts_what_it_sent_while_peer_drains() {
    let p = pool("nr-ring-drain", 512);
    let mut a = open("net_ring70,link=nr-drain,size=32");
    let mut b = open("net_ring71,link=nr-drain,size=32");
    start(&mut *a, &p, 1);
    start(&mut *b, &p, 1);
    let mut atx = a.tx_queue(0).unwrap();
    let mut brx = b.rx_queue(0).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let receiver = std::thread::spawn(move || {
        let mut batch = PacketBatch::with_capacity(4);
        let (mut packets, mut bytes) = (0u64, 0u64);
        loop {
            let stopping = stop2.load(Ordering::Acquire);
            let n = brx.rx_burst(&mut batch);
            packets += n as u64;
            bytes += batch.iter().map(|m| m.pkt_len() as u64).sum::<u64>();
            batch.clear();
            if stopping && n == 0 {
                return (packets, bytes);
            }
        }
    });
    let p2 = p.clone();
    let sender = std::thread::spawn(move || {
        let mut batch = PacketBatch::with_capacity(32);
        let (mut packets, mut i) = (0u64, 0u64);
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(400);
        while std::time::Instant::now() < deadline {
            while !batch.is_full() {
                let mut m = p2.alloc().expect("pool sized for ring + batch");
                m.append(60 + (i % 5) as u16).unwrap();
                i += 1;
                batch.push(m).unwrap();
            }
            packets += atx.tx_burst(&mut batch) as u64;
        }
        packets
    });
    let sent = sender.join();
    stop.store(true, Ordering::Release);
    let (packets, bytes) = receiver.join().expect("receiver panicked");
    let sent = sent.expect("sender panicked (RingTxQueue::tx_burst sent more than the room it saw)");
    assert_eq!(sent, packets);
    let (sa, sb) = (a.stats(), b.stats());
    assert_eq!((sb.ipackets, sb.ibytes), (packets, bytes));
    assert_eq!((sa.opackets, sa.obytes), (packets, bytes), "TX counters differ from what the peer received");
    drop(b);
    drop(a);
    assert!(p.is_full());
}
