//! net_af_packet over a veth pair whose ends live in two network namespaces the test creates (and removes): the
//! port opens one end, a raw socket on the other end plays the kernel side. Needs root and `ip`; skipped with a
//! message otherwise, or failed when NETNS_TESTS_REQUIRED=1 (scripts/test.sh sets it).

use std::time::{Duration, Instant};

use hugepage::Allocator;
use pktio::{EthDev, Mempool, PacketBatch, PoolConfig, PortConfig};
use swports::open_vdev;

use testkit::veth::{assert_wait_fd_wakes, frame, ip, ip_out, seq_of, RawSocket, VethPair, MAGIC, PEER};

fn pool(name: &str) -> Mempool {
    Mempool::new(&format!("{name}-{}", std::process::id()), &PoolConfig::with_size(2048), &Allocator::no_huge())
        .unwrap()
}

#[test]
fn af_packet_exchanges_frames_with_the_kernel() {
    let Some(veth) = VethPair::new("afp", "net_af_packet0") else { return };
    let pool = pool("afp-x");
    let peer = veth.peer_socket();
    let mut port = veth.open_port("");
    assert_eq!(port.info().driver_name, "net_af_packet");
    let mac = port.mac_addr();
    port.configure(&PortConfig::default()).unwrap();
    port.start(&pool).unwrap();
    let link = port.link();
    assert!(link.up && link.speed_mbps > 0, "{link:?}");

    // Promiscuous mode is a socket membership the kernel counts on the interface.
    port.set_promiscuous(true).unwrap();
    assert!(ip_out(&["-n", &veth.ns_a, "-d", "link", "show", &veth.a]).contains("promiscuity 1"));
    port.set_promiscuous(false).unwrap();
    assert!(ip_out(&["-n", &veth.ns_a, "-d", "link", "show", &veth.a]).contains("promiscuity 0"));

    let mut rx = port.rx_queue(0).unwrap();
    let mut tx = port.tx_queue(0).unwrap();
    let mut batch = PacketBatch::new();

    // Kernel -> port: N frames of varied sizes, in order, byte for byte.
    const N: u32 = 300;
    let sizes = |i: u32| 60 + (i as usize * 331) % 1455;
    let sent: Vec<Vec<u8>> = (0..N).map(|i| frame(mac, PEER, i, sizes(i))).collect();
    for f in &sent {
        peer.send(f);
    }
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while got.len() < N as usize && Instant::now() < deadline {
        if rx.rx_burst(&mut batch) == 0 {
            std::thread::sleep(Duration::from_micros(100));
        }
        for m in batch.iter() {
            let mut data = vec![0u8; m.pkt_len() as usize];
            m.copy_to(&mut data);
            if seq_of(&data).is_some() {
                got.push(data);
            }
        }
        batch.clear();
    }
    assert_eq!(got.len(), N as usize, "{:?}", port.stats());
    assert!(got == sent, "frames arrive intact and in order");

    // Port -> kernel: N frames in bursts, seen by the raw socket on the peer.
    let mut out: Vec<Vec<u8>> = Vec::new();
    for chunk in (0..N).collect::<Vec<_>>().chunks(32) {
        for &i in chunk {
            let f = frame(PEER, mac, 10_000 + i, sizes(i + 7));
            let mut m = pool.alloc().unwrap();
            m.append(f.len() as u16).unwrap().copy_from_slice(&f);
            batch.push(m).unwrap();
            out.push(f);
        }
        let mut left = batch.len();
        let deadline = Instant::now() + Duration::from_secs(5);
        while left > 0 && Instant::now() < deadline {
            tx.tx_burst(&mut batch);
            left = batch.len();
        }
        assert_eq!(left, 0, "the TX ring drained");
    }
    let mut seen = Vec::new();
    while seen.len() < out.len() {
        let Some(f) = peer.recv(Duration::from_secs(5)) else { break };
        if seq_of(&f).is_some() {
            seen.push(f);
        }
    }
    assert_eq!(seen.len(), out.len());
    assert!(seen == out, "sent frames arrive intact and in order");

    let s = port.stats();
    let in_bytes: u64 = sent.iter().map(|f| f.len() as u64).sum();
    let out_bytes: u64 = out.iter().map(|f| f.len() as u64).sum();
    assert_eq!((s.ipackets, s.ibytes), (N as u64, in_bytes), "only our frames crossed the quiet link");
    assert_eq!((s.opackets, s.obytes), (N as u64, out_bytes));
    assert_eq!((s.imissed, s.ierrors, s.oerrors, s.rx_nombuf), (0, 0, 0, 0));
    port.reset_stats();

    // A VLAN-tagged frame: the kernel strips the tag into the ring header; the port puts it back.
    let mut tagged = frame(mac, PEER, 77, 100);
    tagged.splice(12..12, [0x81, 0x00, 0x20, 0x05]);
    peer.send(&tagged);
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut back = None;
    while back.is_none() && Instant::now() < deadline {
        rx.rx_burst(&mut batch);
        back = batch.iter().find(|m| m.data().get(12..14) == Some(&[0x81, 0x00])).map(|m| m.data().to_vec());
        batch.clear();
    }
    assert_eq!(back.as_deref(), Some(&tagged[..]), "the VLAN tag is back in place");

    // Oversized and runt frames are errors, not crashes.
    let mut m = pool.alloc().unwrap();
    m.append(10).unwrap().fill(0);
    batch.push(m).unwrap();
    assert_eq!(tx.tx_burst(&mut batch), 1);
    let s = port.stats();
    assert_eq!((s.ipackets, s.oerrors), (1, 1));

    // The link follows the peer.
    ip(&["-n", &veth.ns_b, "link", "set", &veth.b, "down"]);
    // The operational state follows the carrier through the kernel's link watch, within about a second.
    let deadline = Instant::now() + Duration::from_secs(5);
    while port.link().up && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!port.link().up, "peer down: no carrier");
    ip(&["-n", &veth.ns_b, "link", "set", &veth.b, "up"]);

    drop((rx, tx, batch));
    port.stop().unwrap();
    port.reset_stats();
    assert_eq!(port.stats().ipackets, 0);
    drop(port);
    assert!(pool.is_full(), "{} buffers not returned", pool.in_use());
}

/// A ring with no room counts what the kernel dropped as imissed; what fit is delivered.
#[test]
fn af_packet_counts_ring_drops() {
    let Some(veth) = VethPair::new("afd", "net_af_packet0") else { return };
    let pool = pool("afp-drop");
    let peer = veth.peer_socket();
    // 8 frames per ring.
    let mut port = veth.open_port(",blocksz=4096,framesz=2048,framecnt=8");
    port.start(&pool).unwrap();
    let mac = port.mac_addr();
    const N: u32 = 50;
    for i in 0..N {
        peer.send(&frame(mac, PEER, i, 100));
    }
    // The kernel has handled every frame once the ring's 8 are there and it counted the other 42 as drops (read
    // before the ring is drained: a frame arriving after a burst made room would otherwise be delivered).
    let deadline = Instant::now() + Duration::from_secs(5);
    while port.stats().imissed < (N - 8) as u64 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut rx = port.rx_queue(0).unwrap();
    let mut batch = PacketBatch::new();
    let mut got = 0;
    for _ in 0..10 {
        got += rx.rx_burst(&mut batch);
        batch.clear();
    }
    assert_eq!(got, 8);
    let s = port.stats();
    assert_eq!((s.ipackets, s.imissed), (8, N as u64 - 8), "{s:?}");
    port.reset_stats();
    assert_eq!(port.stats().imissed, 0);
    drop((rx, batch));
    port.stop().unwrap();
    assert!(pool.is_full());
}

/// Two queue pairs: the fanout group spreads flows over both, and together they see each frame once.
#[test]
fn af_packet_qpairs_fan_out() {
    let Some(veth) = VethPair::new("afq", "net_af_packet0") else { return };
    let pool = pool("afp-q");
    veth.enter(&veth.ns_b);
    let peer = RawSocket::bind(&veth.b, 0x0800);
    veth.leave();
    let mut port = veth.open_port(",qpairs=2");
    assert_eq!(port.info().max_rx_queues, 2);
    assert_eq!(port.config().rx_queues, 2);
    port.start(&pool).unwrap();
    let mac = port.mac_addr();
    // IPv4/UDP frames of 64 flows (the hash needs addresses and ports).
    const N: u16 = 64;
    for i in 0..N {
        let mut f = Vec::new();
        f.extend(mac.0);
        f.extend(PEER.0);
        f.extend([0x08, 0x00]);
        let mut iph = [0x45, 0, 0, 32, 0, 0, 0, 0, 64, 17, 0, 0, 10, 9, 0, 1, 10, 9, 0, 2];
        let mut sum: u32 = iph.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32).sum();
        sum = (sum & 0xffff) + (sum >> 16);
        let ck = !(sum as u16);
        iph[10..12].copy_from_slice(&ck.to_be_bytes());
        f.extend(iph);
        f.extend((1000 + i).to_be_bytes());
        f.extend(7777u16.to_be_bytes());
        f.extend(12u16.to_be_bytes());
        f.extend([0, 0]);
        f.extend(MAGIC);
        f.resize(60, 0);
        peer.send(&f);
    }
    let mut rxs = [port.rx_queue(0).unwrap(), port.rx_queue(1).unwrap()];
    let mut per_queue = [0usize; 2];
    let mut batch = PacketBatch::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while per_queue.iter().sum::<usize>() < N as usize && Instant::now() < deadline {
        for (q, rx) in rxs.iter_mut().enumerate() {
            rx.rx_burst(&mut batch);
            per_queue[q] += batch.iter().filter(|m| m.data().get(42..46) == Some(MAGIC)).count();
            batch.clear();
        }
    }
    eprintln!("frames per queue: {per_queue:?}");
    assert_eq!(per_queue.iter().sum::<usize>(), N as usize);
    assert!(per_queue.iter().all(|&n| n > 0), "both queues got flows: {per_queue:?}");
    // Each TX queue sends through its own socket.
    let mut txs = [port.tx_queue(0).unwrap(), port.tx_queue(1).unwrap()];
    for tx in &mut txs {
        let mut m = pool.alloc().unwrap();
        m.append(60).unwrap().copy_from_slice(&frame(PEER, mac, 1, 60));
        batch.push(m).unwrap();
        assert_eq!(tx.tx_burst(&mut batch), 1);
    }
    assert_eq!(port.stats().q_opackets, [1, 1]);
    drop((rxs, txs, batch));
    port.stop().unwrap();
    assert!(pool.is_full());
}

/// The reason of a devargs error (not its echo of the devargs string, which names every key given).
fn devargs_reason(r: pktio::Result<Box<dyn EthDev>>) -> String {
    match r {
        Err(pktio::Error::Devargs { reason, .. }) => reason,
        Err(e) => panic!("a devargs error expected, got: {e}"),
        Ok(_) => panic!("a devargs error expected, the port opened"),
    }
}

#[test]
fn af_packet_bad_input_gets_clear_errors() {
    assert!(devargs_reason(open_vdev("net_af_packet0")).contains("iface=NAME"));
    assert!(devargs_reason(open_vdev("net_af_packet0,iface=waytoolongname012345")).contains("must be 1..=15 bytes"));
    // Each bad devarg on an interface that exists, next to the same port opening with a good value of it: only the
    // devarg can be what is refused.
    let Some(veth) = VethPair::new("afe", "net_af_packet0") else { return };
    veth.enter(&veth.ns_a);
    let open = |extra: &str| open_vdev(&format!("net_af_packet0,iface={}{extra}", veth.a));
    let cases = [
        (",qpairs=2", ",qpairs=0", "qpairs=0 must be"),
        (",qpairs=2", ",qpairs=many", "qpairs=many is not a valid value"),
        (",framesz=1024", ",framesz=1000", "framesz=1000 must be a multiple of"),
        (",blocksz=8192", ",blocksz=5000", "blocksz=5000 must be a power of two"),
        (",framecnt=4", ",framecnt=3", "framecnt=3 must be a positive multiple"),
        (",fanout_mode=lb,qpairs=2", ",fanout_mode=odd,qpairs=2", "fanout_mode=odd: use"),
        ("", ",nosuchkey=1", "nosuchkey"),
    ];
    for (good, bad, why) in cases {
        if let Err(e) = open(good) {
            panic!("{} with{good} should open: {e}", veth.a);
        }
        let reason = devargs_reason(open(bad));
        assert!(reason.contains(why), "with{bad}: {reason:?} should say {why:?}");
    }
    let err = open_vdev("net_af_packet0,iface=nosuchif0").err().unwrap().to_string();
    veth.leave();
    assert!(err.contains("nosuchif0") && err.contains("no such network interface"), "{err}");
}

#[test]
fn af_packet_wait_fd_wakes_on_a_frame() {
    let Some(veth) = VethPair::new("afw", "net_af_packet0") else { return };
    let pool = pool("afp-w");
    let peer = veth.peer_socket();
    let mut port = veth.open_port("");
    let mac = port.mac_addr();
    port.configure(&PortConfig::default()).unwrap();
    port.start(&pool).unwrap();
    let mut rx = port.rx_queue(0).unwrap();
    assert_wait_fd_wakes(&mut *rx, &peer, &frame(mac, PEER, 5, 128));
    drop(rx);
    port.stop().unwrap();
}
