//! A capture on wrapped net_null queues: count limit, snap length, bytes, statistics blocks, drops.
//! Port ids are per test (taps are process-wide).

use super::pcapng::{read_blocks, Block};
use super::*;
use crate::{EthDev, Mempool, PacketBatch, PoolConfig};

fn pool(name: &str) -> Mempool {
    let alloc = hugepage::Allocator::new(hugepage::DmaConfig {
        page_size: hugepage::PageSize::Small4K,
        no_huge: true,
        ..Default::default()
    })
    .unwrap();
    Mempool::new(name, &PoolConfig { size: 1024, cache_size: 0, ..Default::default() }, &alloc).unwrap()
}

fn null_rx(pool: &Mempool, port: u16) -> (Box<dyn EthDev>, Box<dyn RxQueue>) {
    let mut dev = crate::ports::open_vdev(&format!("net_null{port}")).unwrap();
    dev.configure(&crate::PortConfig::default()).unwrap();
    dev.start(pool).unwrap();
    let q = dev.rx_queue(0).unwrap();
    (dev, wrap_rx(port, q))
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("pktio-capture-{}-{name}", std::process::id()))
}

/// Bursts on `rx` until the running capture stops writing (its count reached) or `deadline` passes; returns
/// every packet's bytes received while doing so.
fn poll_until_done(rx: &mut Box<dyn RxQueue>, limit: Duration) -> Vec<Vec<u8>> {
    let mut seen = Vec::new();
    let mut batch = PacketBatch::with_capacity(32);
    let deadline = Instant::now() + limit;
    while status().is_some_and(|(_, _, running)| running) {
        assert!(Instant::now() < deadline, "capture did not finish: {:?}", status());
        rx.rx_burst(&mut batch);
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
    let (_dev, mut rx) = null_rx(&pool, 0);
    let path = temp("count.pcapng");
    let mut cfg = CaptureConfig::new(vec![(0, Direction::Rx)], &path);
    cfg.snaplen = 40;
    cfg.count = Some(50);
    start(&cfg, &|p| format!("net_null{p}")).unwrap();
    assert!(matches!(start(&cfg, &|_| String::new()), Err(CaptureError::Busy(_))));
    let seen = poll_until_done(&mut rx, Duration::from_secs(10));
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
    assert!(status().is_none());
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_full_ring_drops_copies_and_counts_them() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = pool("cap_drop");
    let (_dev, mut rx) = null_rx(&pool, 1);
    let path = temp("drop.pcapng");
    let mut cfg = CaptureConfig::new(vec![(1, Direction::Rx)], &path);
    cfg.ring_size = 1;
    start(&cfg, &|p| format!("net_null{p}")).unwrap();
    let mut batch = PacketBatch::with_capacity(32);
    for _ in 0..20 {
        rx.rx_burst(&mut batch);
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
fn unwrapped_ports_and_empty_requests_are_refused() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = CaptureConfig::new(vec![(77, Direction::Tx)], temp("none.pcapng"));
    let err = start(&cfg, &|_| String::new()).unwrap_err();
    assert!(matches!(err, CaptureError::UnknownPort { port: 77, dir: "tx" }), "{err}");
    let cfg = CaptureConfig::new(vec![], temp("none.pcapng"));
    assert!(matches!(start(&cfg, &|_| String::new()), Err(CaptureError::Empty)));
}
