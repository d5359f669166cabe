//! net_pcap: replay and capture, byte for byte, with exact counters and no buffer left behind.

use std::path::Path;
use std::process::Command;

use hugepage::Allocator;
use pktio::{EthDev, Mempool, PacketBatch, PoolConfig, PortConfig};
use swports::open_vdev;
use swports::pcap_file::{self, PcapWriter};
use testkit::TempDir;

fn pool(name: &str, size: u32) -> Mempool {
    Mempool::new(&format!("{name}-{}", std::process::id()), &PoolConfig::with_size(size), &Allocator::no_huge())
        .unwrap()
}

/// A frame of `len` bytes whose content depends on `seed`.
fn frame(len: usize, seed: u32) -> Vec<u8> {
    let mut f: Vec<u8> = (0..len).map(|i| (i as u32).wrapping_mul(7).wrapping_add(seed * 13) as u8).collect();
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
    f[12..14].copy_from_slice(&[0x88, 0xb5]);
    f[14..18].copy_from_slice(&seed.to_be_bytes());
    f
}

fn write_capture(path: &Path, frames: &[Vec<u8>]) {
    let mut w = PcapWriter::create(path).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(1_700_000_000_000_000_000 + i as u64 * 1000, f).unwrap();
    }
    w.flush().unwrap();
}

/// Sizes from 60 to 1514 plus chains (the pool's data room is 2048 bytes).
fn varied_frames() -> Vec<Vec<u8>> {
    let mut sizes: Vec<usize> = vec![60, 61, 64, 100, 127, 128, 129, 255, 256, 512, 1000, 1023, 1024, 1500, 1513, 1514];
    sizes.extend((0..80).map(|i| 60 + (i * 977) % 1455));
    sizes.extend([2048, 2049, 3000, 9000]);
    sizes.iter().enumerate().map(|(i, &len)| frame(len, i as u32)).collect()
}

/// Receives until the file ends, sending each burst straight back out.
fn forward_all(port: &mut dyn EthDev, queue: u16) -> usize {
    let mut rx = port.rx_queue(queue).unwrap();
    let mut tx = port.tx_queue(queue).unwrap();
    let mut batch = PacketBatch::new();
    let mut total = 0;
    loop {
        let n = rx.rx_burst(&mut batch);
        if n == 0 {
            break;
        }
        total += n;
        assert_eq!(tx.tx_burst(&mut batch), n);
        assert!(batch.is_empty());
    }
    total
}

#[test]
fn round_trip_is_byte_for_byte() {
    let dir = TempDir::new("rt");
    let (input, output) = (dir.file("in.pcap"), dir.file("out.pcap"));
    let frames = varied_frames();
    write_capture(&input, &frames);
    let pool = pool("pcap-rt", 1024);
    let mut port = open_vdev(&format!("net_pcap0,rx_pcap={},tx_pcap={}", input.display(), output.display())).unwrap();
    assert_eq!(port.info().driver_name, "net_pcap");
    port.configure(&PortConfig::default()).unwrap();
    port.start(&pool).unwrap();
    assert!(port.link().up);
    assert_eq!(forward_all(&mut *port, 0), frames.len());
    port.stop().unwrap();

    let out = pcap_file::read_all(&output).unwrap();
    assert_eq!(out.len(), frames.len());
    for (i, (rec, f)) in out.iter().zip(&frames).enumerate() {
        assert_eq!(rec.data, *f, "record {i} differs ({} vs {} bytes)", rec.data.len(), f.len());
        assert_eq!(rec.header.orig_len as usize, f.len());
    }
    let bytes: u64 = frames.iter().map(|f| f.len() as u64).sum();
    let s = port.stats();
    assert_eq!((s.ipackets, s.ibytes, s.opackets, s.obytes), (frames.len() as u64, bytes, frames.len() as u64, bytes));
    assert_eq!((s.ierrors, s.oerrors, s.imissed, s.rx_nombuf), (0, 0, 0, 0));
    assert!(pool.is_full(), "{} buffers not returned", pool.in_use());

    match Command::new("tcpdump").arg("-r").arg(&output).arg("-nn").output() {
        Ok(o) => {
            assert!(o.status.success(), "tcpdump could not read our capture: {}", String::from_utf8_lossy(&o.stderr))
        }
        Err(_) => eprintln!("tcpdump not installed: skipping the check that tcpdump reads the output"),
    }
    drop(port);
    assert!(pool.is_full());
}

/// Big-endian and nanosecond files replay the same frames.
#[test]
fn reads_big_endian_nanosecond_captures() {
    let dir = TempDir::new("be");
    let input = dir.file("be.pcap");
    let frames = [frame(60, 1), frame(1514, 2), frame(300, 3)];
    let mut f = Vec::new();
    f.extend(0xa1b2_3c4du32.to_be_bytes());
    f.extend(2u16.to_be_bytes());
    f.extend(4u16.to_be_bytes());
    f.extend([0u8; 8]);
    f.extend(65535u32.to_be_bytes());
    f.extend(1u32.to_be_bytes());
    for (i, fr) in frames.iter().enumerate() {
        f.extend(1000u32.to_be_bytes());
        f.extend((i as u32 * 5).to_be_bytes());
        f.extend((fr.len() as u32).to_be_bytes());
        f.extend((fr.len() as u32).to_be_bytes());
        f.extend(fr);
    }
    std::fs::write(&input, f).unwrap();
    let pool = pool("pcap-be", 64);
    let mut port = open_vdev(&format!("net_pcap1,rx_pcap={}", input.display())).unwrap();
    port.start(&pool).unwrap();
    let mut rx = port.rx_queue(0).unwrap();
    let mut batch = PacketBatch::new();
    assert_eq!(rx.rx_burst(&mut batch), 3);
    for (i, (m, fr)) in batch.iter().zip(&frames).enumerate() {
        assert_eq!(m.data(), &fr[..]);
        assert_eq!(m.timestamp(), 1000 * 1_000_000_000 + i as u64 * 5);
    }
    assert_eq!(rx.rx_burst(&mut batch), 0, "end of file returns nothing");
    batch.clear();
    // Without tx_pcap, TX counts and drops.
    let mut tx = port.tx_queue(0).unwrap();
    batch.push(pool.alloc().unwrap()).unwrap();
    batch.as_mut_slice()[0].set_len(100);
    assert_eq!(tx.tx_burst(&mut batch), 1);
    drop((rx, tx));
    port.stop().unwrap();
    let s = port.stats();
    assert_eq!((s.ipackets, s.ibytes, s.opackets, s.obytes), (3, 60 + 1514 + 300, 1, 100));
    assert!(pool.is_full());
}

#[test]
fn infinite_rx_loops_and_restart_replays() {
    let dir = TempDir::new("inf");
    let input = dir.file("in.pcap");
    let frames = [frame(60, 0), frame(70, 1), frame(80, 2)];
    write_capture(&input, &frames);
    let pool = pool("pcap-inf", 256);
    let mut port = open_vdev(&format!("net_pcap2,rx_pcap={},infinite_rx=1", input.display())).unwrap();
    port.start(&pool).unwrap();
    let mut rx = port.rx_queue(0).unwrap();
    let mut batch = PacketBatch::with_capacity(32);
    for burst in 0..10 {
        assert_eq!(rx.rx_burst(&mut batch), 32);
        for (i, m) in batch.iter().enumerate() {
            assert_eq!(m.data(), &frames[(burst * 32 + i) % 3][..]);
        }
        batch.clear();
    }
    drop(rx);
    port.stop().unwrap();
    assert_eq!(port.stats().ipackets, 320);
    assert_eq!(port.stats().ibytes, (0..320).map(|i| 60 + 10 * (i % 3) as u64).sum::<u64>());

    // A plain port replays from the first record after each start.
    let mut port = open_vdev(&format!("net_pcap3,rx_pcap={}", input.display())).unwrap();
    for _ in 0..2 {
        port.start(&pool).unwrap();
        let mut rx = port.rx_queue(0).unwrap();
        assert_eq!(rx.rx_burst(&mut batch), 3);
        assert_eq!(batch.as_slice()[0].data(), &frames[0][..]);
        batch.clear();
        drop(rx);
        port.stop().unwrap();
    }
    assert!(pool.is_full());
}

/// `infinite_rx=1` replays from memory: records in file order, wrapping, byte for byte (chains included), with
/// their timestamps, and it goes on after the file is emptied, since it was read once at start.
#[test]
fn infinite_rx_replays_from_memory_in_order() {
    let dir = TempDir::new("infmem");
    let input = dir.file("in.pcap");
    let frames = varied_frames();
    write_capture(&input, &frames);
    let pool = pool("pcap-infmem", 512);
    let mut port = open_vdev(&format!("net_pcap8,rx_pcap={},infinite_rx=1", input.display())).unwrap();
    port.start(&pool).unwrap();
    // Truncated in place, so a reader still streaming the open file would see it end.
    std::fs::OpenOptions::new().write(true).open(&input).unwrap().set_len(0).unwrap();
    let mut rx = port.rx_queue(0).unwrap();
    // 29 does not divide the record count, so bursts straddle the wrap at different records.
    let mut batch = PacketBatch::with_capacity(29);
    let total = frames.len() * 3 + 7;
    let (mut seen, mut bytes) = (0usize, 0u64);
    while seen < total {
        let n = rx.rx_burst(&mut batch);
        assert_eq!(n, 29, "an endless replay always fills the burst");
        for m in batch.iter() {
            let i = seen % frames.len();
            let data: Vec<u8> = m.segments().flat_map(|s| s.data.iter().copied()).collect();
            assert_eq!(data, frames[i], "record {i} on pass {}", seen / frames.len());
            assert_eq!(m.timestamp(), 1_700_000_000_000_000_000 + i as u64 * 1000);
            bytes += m.pkt_len() as u64;
            seen += 1;
        }
        batch.clear();
    }
    drop(rx);
    port.stop().unwrap();
    assert_eq!((port.stats().ipackets, port.stats().ibytes), (seen as u64, bytes));
    assert_eq!(port.stats().ierrors, 0);
    assert!(pool.is_full());
    // The next start reads the file again, and it is empty now.
    assert!(port.start(&pool).is_err());
}

/// Records that fit one buffer are replayed with the burst's buffers taken in bulk; when the pool cannot give a
/// whole burst, the burst takes what there is one by one, in order, counting rx_nombuf.
#[test]
fn infinite_rx_bulk_bursts_keep_order_when_the_pool_runs_low() {
    let dir = TempDir::new("infbulk");
    let input = dir.file("in.pcap");
    let frames: Vec<_> = (0..13).map(|i| frame(60 + i * 7, i as u32)).collect();
    write_capture(&input, &frames);
    let pool = Mempool::new(
        &format!("pcap-infbulk-{}", std::process::id()),
        &PoolConfig { size: 40, cache_size: 0, ..PoolConfig::default() },
        &Allocator::no_huge(),
    )
    .unwrap();
    let mut port = open_vdev(&format!("net_pcap9,rx_pcap={},infinite_rx=1", input.display())).unwrap();
    port.start(&pool).unwrap();
    let mut rx = port.rx_queue(0).unwrap();
    let (mut first, mut second) = (PacketBatch::with_capacity(32), PacketBatch::with_capacity(32));
    assert_eq!(rx.rx_burst(&mut first), 32, "a full pool gives the whole burst");
    assert_eq!(rx.rx_burst(&mut second), 8, "the 8 buffers left, one by one");
    for (k, m) in first.iter().chain(second.iter()).enumerate() {
        assert_eq!(m.data(), &frames[k % frames.len()][..], "packet {k}");
        assert_eq!(m.timestamp(), 1_700_000_000_000_000_000 + (k % frames.len()) as u64 * 1000);
    }
    first.clear();
    second.clear();
    // Refilled: the replay goes on at packet 40.
    assert_eq!(rx.rx_burst(&mut first), 32);
    assert_eq!(first.as_slice()[0].data(), &frames[40 % frames.len()][..]);
    first.clear();
    drop(rx);
    port.stop().unwrap();
    let s = port.stats();
    assert_eq!(s.ipackets, 72);
    assert_eq!(s.rx_nombuf, 1);
    assert!(pool.is_full());
}

/// Each way a replay copies its records gives the file's bytes, lengths and timestamps, wrapping: every record one
/// 64-byte chunk, records of several chunks in a roomy pool, a data room that holds every record but not rounded
/// up to chunks (exact copies), and records that need chains.
#[test]
fn infinite_rx_every_copy_mode_replays_the_file() {
    let dir = TempDir::new("infmodes");
    let cases: [(&str, Vec<usize>, u16); 4] = [
        ("single", vec![60, 64, 1, 63, 60], 2048),
        ("chunks", vec![60, 65, 128, 129, 1514, 64], 2048),
        ("exact", vec![60, 97, 100, 64, 99], 100),
        ("chains", vec![60, 300, 100, 101, 64], 100),
    ];
    for (k, (name, sizes, data_room)) in cases.into_iter().enumerate() {
        let input = dir.file(&format!("{name}.pcap"));
        let frames: Vec<_> = sizes.iter().enumerate().map(|(i, &len)| frame(len.max(18), i as u32)).collect();
        let frames: Vec<_> = frames.into_iter().zip(&sizes).map(|(f, &len)| f[..len].to_vec()).collect();
        write_capture(&input, &frames);
        let pool = Mempool::new(
            &format!("pcap-infmodes-{name}-{}", std::process::id()),
            &PoolConfig { size: 256, data_room, ..PoolConfig::default() },
            &Allocator::no_huge(),
        )
        .unwrap();
        let mut port = open_vdev(&format!("net_pcap{},rx_pcap={},infinite_rx=1", 20 + k, input.display())).unwrap();
        port.start(&pool).unwrap();
        let mut rx = port.rx_queue(0).unwrap();
        let mut batch = PacketBatch::with_capacity(32);
        let mut seen = 0usize;
        for _ in 0..4 {
            assert_eq!(rx.rx_burst(&mut batch), 32, "{name}: an endless replay fills the burst");
            for m in batch.iter() {
                let i = seen % frames.len();
                let data: Vec<u8> = m.segments().flat_map(|s| s.data.iter().copied()).collect();
                assert_eq!(data, frames[i], "{name}: record {i}");
                assert_eq!(m.pkt_len() as usize, frames[i].len(), "{name}: record {i}");
                assert_eq!(m.timestamp(), 1_700_000_000_000_000_000 + i as u64 * 1000, "{name}: record {i}");
                seen += 1;
            }
            batch.clear();
        }
        drop(rx);
        port.stop().unwrap();
        let want: u64 = (0..seen).map(|i| frames[i % frames.len()].len() as u64).sum();
        assert_eq!((port.stats().ipackets, port.stats().ibytes, port.stats().ierrors), (128, want, 0), "{name}");
        assert!(pool.is_full(), "{name}");
    }
}

/// With the pool dry, the record waits (counted as rx_nombuf) and no packet is lost.
#[test]
fn pool_exhaustion_loses_nothing() {
    let dir = TempDir::new("dry");
    let input = dir.file("in.pcap");
    let frames: Vec<_> = (0..40).map(|i| frame(64 + i, i as u32)).collect();
    write_capture(&input, &frames);
    let pool = Mempool::new(
        &format!("pcap-dry-{}", std::process::id()),
        &PoolConfig { size: 10, cache_size: 0, ..PoolConfig::default() },
        &Allocator::no_huge(),
    )
    .unwrap();
    let mut port = open_vdev(&format!("net_pcap4,rx_pcap={}", input.display())).unwrap();
    port.start(&pool).unwrap();
    let mut rx = port.rx_queue(0).unwrap();
    let mut batch = PacketBatch::new();
    let mut seen = 0;
    loop {
        let n = rx.rx_burst(&mut batch);
        if n == 0 {
            break;
        }
        for m in batch.iter() {
            assert_eq!(m.data(), &frames[seen][..]);
            seen += 1;
        }
        batch.clear();
    }
    assert_eq!(seen, 40);
    drop(rx);
    port.stop().unwrap();
    let s = port.stats();
    assert_eq!(s.ipackets, 40);
    assert!(s.rx_nombuf >= 3, "rx_nombuf {}", s.rx_nombuf);
    assert!(pool.is_full());
}

#[test]
fn several_files_are_several_queues() {
    let dir = TempDir::new("mq");
    let (a, b) = (dir.file("a.pcap"), dir.file("b.pcap"));
    let (oa, ob) = (dir.file("oa.pcap"), dir.file("ob.pcap"));
    let fa: Vec<_> = (0..5).map(|i| frame(100, i)).collect();
    let fb: Vec<_> = (0..7).map(|i| frame(200, 100 + i)).collect();
    write_capture(&a, &fa);
    write_capture(&b, &fb);
    let pool = pool("pcap-mq", 256);
    let mut port = open_vdev(&format!(
        "net_pcap5,rx_pcap={},tx_pcap={},rx_pcap={},tx_pcap={}",
        a.display(),
        oa.display(),
        b.display(),
        ob.display()
    ))
    .unwrap();
    assert_eq!(port.config().rx_queues, 2);
    assert_eq!(port.info().max_tx_queues, 2);
    port.start(&pool).unwrap();
    assert_eq!(forward_all(&mut *port, 0), 5);
    assert_eq!(forward_all(&mut *port, 1), 7);
    port.stop().unwrap();
    let s = port.stats();
    assert_eq!(s.q_ipackets, [5, 7]);
    assert_eq!(s.q_obytes, [500, 1400]);
    assert_eq!(pcap_file::read_all(&oa).unwrap().into_iter().map(|r| r.data).collect::<Vec<_>>(), fa);
    assert_eq!(pcap_file::read_all(&ob).unwrap().into_iter().map(|r| r.data).collect::<Vec<_>>(), fb);
    assert!(pool.is_full());
}

#[test]
fn bad_input_gets_clear_errors() {
    let dir = TempDir::new("bad");
    let missing = dir.file("missing.pcap");
    let err = open_vdev(&format!("net_pcap6,rx_pcap={}", missing.display())).err().unwrap().to_string();
    assert!(err.contains("missing.pcap"), "{err}");

    let ng = dir.file("ng.pcapng");
    std::fs::write(&ng, [0x0a, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap();
    let err = open_vdev(&format!("net_pcap6,rx_pcap={}", ng.display())).err().unwrap().to_string();
    assert!(err.contains("pcapng"), "{err}");

    let short = dir.file("short.pcap");
    std::fs::write(&short, [0xd4, 0xc3, 0xb2]).unwrap();
    assert!(open_vdev(&format!("net_pcap6,rx_pcap={}", short.display())).is_err());

    let empty = dir.file("empty.pcap");
    write_capture(&empty, &[]);
    let err = open_vdev(&format!("net_pcap6,rx_pcap={},infinite_rx=1", empty.display())).err().unwrap().to_string();
    assert!(err.contains("infinite_rx"), "{err}");

    let err = open_vdev("net_pcap6").err().unwrap().to_string();
    assert!(err.contains("rx_pcap"), "{err}");
    let err = open_vdev("net_pcap6,iface=eth0").err().unwrap().to_string();
    assert!(err.contains("net_af_packet"), "{err}");
    assert!(open_vdev("net_pcap6,rx_pcap=").is_err());
    assert!(open_vdev("net_pcap6,bogus=1").is_err());
    let nowhere = dir.file("no/such/dir/out.pcap");
    let err = open_vdev(&format!("net_pcap6,tx_pcap={}", nowhere.display())).err().unwrap().to_string();
    assert!(err.contains("out.pcap"), "{err}");

    // A file cut inside its last record: the whole records come through, then one ierror.
    let cut = dir.file("cut.pcap");
    write_capture(&cut, &[frame(100, 1), frame(100, 2)]);
    let len = std::fs::metadata(&cut).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&cut).unwrap().set_len(len - 30).unwrap();
    let pool = pool("pcap-bad", 64);
    let mut port = open_vdev(&format!("net_pcap7,rx_pcap={}", cut.display())).unwrap();
    port.start(&pool).unwrap();
    let mut rx = port.rx_queue(0).unwrap();
    let mut batch = PacketBatch::new();
    assert_eq!(rx.rx_burst(&mut batch), 1);
    assert_eq!(rx.rx_burst(&mut batch), 0);
    drop((rx, batch));
    port.stop().unwrap();
    assert_eq!((port.stats().ipackets, port.stats().ierrors), (1, 1));
    assert!(pool.is_full());
}
