//! A capture on tapped queues of fresh buffers and on hand-made chains: count limit, snap length, bytes across segments,
//! statistics blocks, drops, the idle fast path, stop while a queue polls. Port ids are per test (capture points
//! are process-wide).

use super::pcapng::{read_blocks, Block};
use super::*;
use crate::{Mempool, PacketBatch, PoolConfig, RxQueue};

fn pool(name: &str) -> Mempool {
    let alloc = hugepage::Allocator::new(hugepage::DmaConfig {
        page_size: hugepage::PageSize::Small4K,
        no_huge: true,
        ..Default::default()
    })
    .unwrap();
    Mempool::new(name, &PoolConfig { size: 1024, cache_size: 0, ..Default::default() }, &alloc).unwrap()
}

/// RX that hands out fresh 64-byte buffers of its pool as fast as it can, as a `net_null` port does (the software
/// ports are a crate above this one).
struct FreshRx {
    pool: Mempool,
    port: u16,
}

impl RxQueue for FreshRx {
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        let (start, n) = (batch.len(), batch.remaining());
        if n == 0 || !batch.alloc_from(&self.pool, n) {
            return 0;
        }
        for m in &mut batch.as_mut_slice()[start..] {
            m.set_len(64);
            m.set_port(self.port);
        }
        n
    }
}

fn fresh_rx(pool: &Mempool, port: u16) -> (Box<dyn RxQueue>, QueueTap) {
    (Box::new(FreshRx { pool: pool.clone(), port }), QueueTap::rx(port))
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("pktio-capture-{}-{name}", std::process::id()))
}

/// Bursts on `rx` until the running capture stops writing (its count reached) or `deadline` passes; returns
/// every packet's bytes received while doing so.
fn poll_until_done(rx: &mut Box<dyn RxQueue>, tap: &mut QueueTap, limit: Duration) -> Vec<Vec<u8>> {
    let mut seen = Vec::new();
    let mut batch = PacketBatch::with_capacity(32);
    let deadline = Instant::now() + limit;
    while status().is_some_and(|(_, _, running)| running) {
        assert!(Instant::now() < deadline, "capture did not finish: {:?}", status());
        rx.rx_burst(&mut batch);
        tap.observe(batch.as_slice());
        seen.extend(batch.iter().map(|m| m.data().to_vec()));
        batch.clear();
    }
    seen
}

// The capture is process-wide: the tests that run one take turns.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn count_and_snaplen_are_kept_and_statistics_close_the_file() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = pool("cap_count");
    let (mut rx, mut tap) = fresh_rx(&pool, 0);
    let path = temp("count.pcapng");
    let mut cfg = CaptureConfig::new(vec![(0, Direction::Rx)], &path);
    cfg.snaplen = 40;
    cfg.count = Some(50);
    start(&cfg, &|p| format!("net_null{p}")).unwrap();
    assert!(matches!(start(&cfg, &|_| String::new()), Err(CaptureError::Busy(_))));
    let seen = poll_until_done(&mut rx, &mut tap, Duration::from_secs(10));
    let (_, stats) = stop().unwrap().unwrap();
    assert_eq!(stats.written, 50);
    assert_eq!(stats.received, 50, "the count limit stops the copies, not the port");
    assert_eq!(stats.dropped, 0);
    let blocks = read_blocks(&std::fs::read(&path).unwrap()).unwrap();
    assert!(matches!(blocks[0], Block::Section { .. }));
    assert_eq!(blocks[1], Block::Interface { linktype: 1, snaplen: 40, name: "net_null0".into(), tsresol: 9 });
    let packets: Vec<_> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Packet { interface: 0, orig_len, data, .. } => Some((*orig_len, data.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(packets.len(), 50);
    for (i, (orig, data)) in packets.iter().enumerate() {
        assert_eq!(*orig as usize, seen[i].len(), "packet {i}: wire length");
        assert_eq!(data[..], seen[i][..40.min(seen[i].len())], "packet {i}: first snaplen bytes");
    }
    assert_eq!(blocks.last(), Some(&Block::Statistics { interface: 0, recv: Some(50), drop: Some(0) }));
    // After the capture, nothing is copied any more.
    let mut batch = PacketBatch::with_capacity(32);
    rx.rx_burst(&mut batch);
    tap.observe(batch.as_slice());
    assert!(status().is_none());
    assert_eq!(tap.fast, tap.point.generation.load(Ordering::Relaxed), "back on the fast path");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_full_ring_drops_copies_and_counts_them() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = pool("cap_drop");
    let (mut rx, mut tap) = fresh_rx(&pool, 1);
    let path = temp("drop.pcapng");
    let mut cfg = CaptureConfig::new(vec![(1, Direction::Rx)], &path);
    cfg.ring_size = 1;
    start(&cfg, &|p| format!("net_null{p}")).unwrap();
    let mut batch = PacketBatch::with_capacity(32);
    for _ in 0..20 {
        rx.rx_burst(&mut batch);
        tap.observe(batch.as_slice());
        batch.clear();
    }
    let (_, stats) = stop().unwrap().unwrap();
    assert_eq!(stats.received, 20 * 32);
    assert!(stats.dropped > 0, "{stats:?}");
    assert_eq!(stats.written + stats.dropped, stats.received, "{stats:?}");
    let blocks = read_blocks(&std::fs::read(&path).unwrap()).unwrap();
    let isb = Block::Statistics { interface: 0, recv: Some(stats.received), drop: Some(stats.dropped) };
    assert_eq!(blocks.last(), Some(&isb));
    let _ = std::fs::remove_file(&path);
}

#[test]
fn untapped_ports_and_empty_requests_are_refused() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = CaptureConfig::new(vec![(77, Direction::Tx)], temp("none.pcapng"));
    let err = start(&cfg, &|_| String::new()).unwrap_err();
    assert!(matches!(err, CaptureError::UnknownPort { port: 77, dir: "tx" }), "{err}");
    let cfg = CaptureConfig::new(vec![], temp("none.pcapng"));
    assert!(matches!(start(&cfg, &|_| String::new()), Err(CaptureError::Empty)));
}

/// A packet of `lens` segments whose bytes count up from `first` across the chain.
fn chain(pool: &Mempool, lens: &[u16], first: u8) -> (Mbuf, Vec<u8>) {
    let mut whole = Vec::new();
    let mut head: Option<Mbuf> = None;
    for &len in lens {
        let mut seg = pool.alloc().unwrap();
        assert!(seg.set_len(len));
        for b in seg.data_mut() {
            *b = first.wrapping_add(whole.len() as u8);
            whole.push(*b);
        }
        match &mut head {
            Some(h) => h.chain(seg),
            None => head = Some(seg),
        }
    }
    let m = head.unwrap();
    assert_eq!((m.nb_segs() as usize, m.pkt_len() as usize), (lens.len(), whole.len()));
    (m, whole)
}

/// Captures `packets` on `port` RX through a tap with `snaplen`; returns the (orig_len, data) records written.
fn capture_packets(port: u16, packets: &[Mbuf], snaplen: u32, name: &str) -> Vec<(u32, Vec<u8>)> {
    let mut tap = QueueTap::rx(port);
    let path = temp(name);
    let mut cfg = CaptureConfig::new(vec![(port, Direction::Rx)], &path);
    cfg.snaplen = snaplen;
    start(&cfg, &|p| format!("port{p}")).unwrap();
    tap.observe(packets);
    assert_eq!(tap.fast, ACTIVE, "a running capture keeps the tap off the fast path");
    let (_, stats) = stop().unwrap().unwrap();
    assert_eq!((stats.received, stats.written), (packets.len() as u64, packets.len() as u64));
    let blocks = read_blocks(&std::fs::read(&path).unwrap()).unwrap();
    let _ = std::fs::remove_file(&path);
    blocks
        .into_iter()
        .filter_map(|b| match b {
            Block::Packet { orig_len, data, .. } => Some((orig_len, data)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_three_segment_chain_is_captured_whole() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = pool("cap_chain");
    let (m, whole) = chain(&pool, &[60, 100, 41], 7);
    let (single, one) = chain(&pool, &[90], 200);
    let got = capture_packets(2, &[m, single], 262_144, "chain.pcapng");
    assert_eq!(got, vec![(201, whole), (90, one)]);
}

#[test]
fn a_snap_length_inside_the_second_segment_cuts_there() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = pool("cap_chain_snap");
    let (m, whole) = chain(&pool, &[60, 100, 41], 3);
    let got = capture_packets(3, &[m], 100, "chain-snap.pcapng");
    assert_eq!(got, vec![(201, whole[..100].to_vec())], "60 bytes of the first segment, 40 of the second");
}

#[test]
fn an_idle_tap_stays_on_the_fast_path_and_lets_go_of_a_stopped_capture() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = pool("cap_idle");
    let (m, _) = chain(&pool, &[64], 0);
    let packets = [m];
    let mut tap = QueueTap::tx(4);
    tap.observe(&packets);
    let idle = tap.fast;
    assert_eq!(idle, tap.point.generation.load(Ordering::Relaxed), "idle: fast equals the generation");
    tap.observe(&packets);
    assert_eq!(tap.fast, idle, "no change, no refresh");

    // A queue thread bursting (empty bursts too) while a capture starts and stops: stop does not wait for the
    // one-second bound, since the thread lets go of the sink at its next burst.
    let running = Arc::new(AtomicBool::new(true));
    let r = running.clone();
    let poller = std::thread::spawn(move || {
        while r.load(Ordering::Relaxed) {
            tap.observe(&[]);
            std::hint::spin_loop();
        }
        tap
    });
    let path = temp("idle.pcapng");
    start(&CaptureConfig::new(vec![(4, Direction::Tx)], &path), &|p| format!("port{p}")).unwrap();
    // The queue thread takes the sink (the writer, the Running, the capture point and the queue hold it: without
    // the queue's handle the count is already 3, and a poller the scheduler kept waiting would not be tested).
    let deadline = Instant::now() + Duration::from_secs(10);
    let holders = || Arc::strong_count(&current().lock().unwrap().as_ref().unwrap().sink);
    while holders() < 4 {
        assert!(Instant::now() < deadline, "the polling queue never picked up the capture");
        std::thread::yield_now();
    }
    let t0 = Instant::now();
    let (_, stats) = stop().unwrap().unwrap();
    let waited = t0.elapsed();
    running.store(false, Ordering::Relaxed);
    let tap = poller.join().unwrap();
    assert_eq!(stats, CaptureStats::default(), "empty bursts copy nothing");
    assert!(waited < Duration::from_millis(900), "stop waited {waited:?}: the queue kept the sink");
    assert!(tap.sink.is_none());
    assert_eq!(tap.fast, tap.point.generation.load(Ordering::Relaxed), "idle again after the stop");
    assert_ne!(tap.fast, idle, "the start and the stop were seen");
    let _ = std::fs::remove_file(&path);
}
