//! net_pcap loses nothing without a count and truncates no input: a record the pool can never hold is dropped
//! and counted (RX goes on), a write error at the file's flush is counted as TX errors, and a file is refused
//! when it would be both replayed and written, or written by two ports.

use std::path::Path;

use hugepage::Allocator;
use pktio::{EthDev, Mempool, PacketBatch, PoolConfig};
use swports::open_vdev;
use swports::pcap_file::PcapWriter;
use testkit::TempDir;

fn frame(len: usize, seed: u8) -> Vec<u8> {
    let mut f = vec![seed; len];
    f[..12].copy_from_slice(&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2]);
    f[12..14].copy_from_slice(&[0x88, 0xb5]);
    f
}

fn write_capture(path: &Path, frames: &[Vec<u8>]) {
    let mut w = PcapWriter::create(path).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(1_700_000_000_000_000_000 + i as u64 * 1000, f).unwrap();
    }
    w.flush().unwrap();
}

/// The error opening `devargs` gives.
fn refusal(devargs: &str) -> String {
    match open_vdev(devargs) {
        Ok(_) => panic!("{devargs} was opened"),
        Err(e) => e.to_string(),
    }
}

/// A pool of `size` buffers of the default 2048-byte data room.
fn pool(tag: &str, size: u32) -> Mempool {
    let cfg = PoolConfig { size, cache_size: 0, ..PoolConfig::default() };
    Mempool::new(&format!("pcap-loss-{tag}-{}", std::process::id()), &cfg, &Allocator::no_huge()).unwrap()
}

/// The frames received over `bursts` bursts (freed), by their seed byte.
fn receive(port: &mut dyn EthDev, bursts: usize) -> Vec<u8> {
    let mut rx = port.rx_queue(0).unwrap();
    let mut batch = PacketBatch::new();
    let mut seeds = Vec::new();
    for _ in 0..bursts {
        rx.rx_burst(&mut batch);
        seeds.extend(batch.iter().map(|m| m.data()[20]));
        batch.clear();
    }
    seeds
}

#[test]
fn a_record_the_pool_can_never_hold_is_dropped_and_counted() {
    let dir = TempDir::new("huge");
    let input = dir.file("in.pcap");
    // 9000 bytes need 5 buffers of 2048: more than the pool's 4.
    let frames = [frame(64, 1), frame(9000, 2), frame(1500, 3), frame(9000, 4), frame(4000, 5)];
    write_capture(&input, &frames);
    let pool = pool("huge", 4);
    let mut port = open_vdev(&format!("net_pcap20,rx_pcap={}", input.display())).unwrap();
    port.start(&pool).unwrap();
    assert_eq!(receive(&mut *port, 20), [1, 3, 5], "the others arrive, in order");
    let s = port.stats();
    assert_eq!((s.ipackets, s.ierrors), (3, 2), "{s:?}");
    port.stop().unwrap();

    // Replayed from memory, the file goes round and round past the records it drops.
    let mut port = open_vdev(&format!("net_pcap21,rx_pcap={},infinite_rx=1", input.display())).unwrap();
    port.start(&pool).unwrap();
    let seeds = receive(&mut *port, 30);
    assert!(seeds.len() > 30, "received {}", seeds.len());
    assert!(seeds.iter().all(|s| [1, 3, 5].contains(s)), "{seeds:?}");
    let s = port.stats();
    assert!(s.ierrors >= 2 * (seeds.len() as u64 / 3), "{s:?} for {} received", seeds.len());
    port.stop().unwrap();
    assert!(pool.is_full());
}

#[test]
fn a_write_error_at_the_flush_is_counted_as_tx_errors() {
    let pool = pool("full", 64);
    let mut port = open_vdev("net_pcap22,tx_pcap=/dev/full").unwrap();
    port.start(&pool).unwrap();
    let mut tx = port.tx_queue(0).unwrap();
    let mut batch = PacketBatch::new();
    for i in 0..10 {
        let mut m = pool.alloc().unwrap();
        m.append(64).unwrap().copy_from_slice(&frame(64, i));
        batch.push(m).unwrap();
    }
    assert_eq!(tx.tx_burst(&mut batch), 10, "the queue takes (and frees) them");
    drop(tx);
    let s = port.stats();
    assert_eq!((s.opackets, s.obytes, s.oerrors), (0, 0, 10), "{s:?}");
    assert!(port.stop().is_err(), "the last flush fails too");
    assert!(pool.is_full());
}

#[test]
fn rx_and_tx_naming_one_file_are_refused_before_the_input_is_touched() {
    let dir = TempDir::new("same");
    let input = dir.file("in.pcap");
    write_capture(&input, &[frame(64, 1), frame(64, 2)]);
    let size = std::fs::metadata(&input).unwrap().len();
    let other_spelling = dir.0.join(".").join("in.pcap");
    for tx in [&input, &other_spelling] {
        let msg = refusal(&format!("net_pcap23,rx_pcap={},tx_pcap={}", input.display(), tx.display()));
        assert!(msg.contains("truncate") && msg.contains("rx_pcap"), "{msg}");
        assert_eq!(std::fs::metadata(&input).unwrap().len(), size, "the input is intact");
    }
}

#[test]
fn a_file_another_port_reads_or_writes_is_refused() {
    let dir = TempDir::new("two");
    let (input, out) = (dir.file("in.pcap"), dir.file("out.pcap"));
    write_capture(&input, &[frame(64, 1)]);
    let size = std::fs::metadata(&input).unwrap().len();
    let first = open_vdev(&format!("net_pcap24,rx_pcap={},tx_pcap={}", input.display(), out.display())).unwrap();
    let e = refusal(&format!("net_pcap25,tx_pcap={}", out.display()));
    assert!(e.contains("net_pcap24") && e.contains("lose"), "{e}");
    let e = refusal(&format!("net_pcap26,tx_pcap={}", input.display()));
    assert!(e.contains("net_pcap24") && e.contains("truncate"), "{e}");
    assert_eq!(std::fs::metadata(&input).unwrap().len(), size, "the input is intact");
    // Reading a file another port reads is fine; so is /dev/null written twice.
    let reader = open_vdev(&format!("net_pcap27,rx_pcap={}", input.display())).unwrap();
    let nulls =
        (open_vdev("net_pcap28,tx_pcap=/dev/null").unwrap(), open_vdev("net_pcap29,tx_pcap=/dev/null").unwrap());
    // Once the first port is closed, its files are free.
    drop(first);
    let again = open_vdev(&format!("net_pcap30,tx_pcap={}", out.display())).unwrap();
    drop((reader, nulls, again));
}
