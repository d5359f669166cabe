//! net_af_xdp over a veth pair whose ends live in two network namespaces the test creates (and removes): the port
//! opens one end (loading and attaching its XDP program), a raw socket on the other end plays the kernel side.
//! Needs root and `ip`; skipped with a message otherwise, or failed when NETNS_TESTS_REQUIRED=1 (scripts/test.sh
//! sets it).

use std::time::{Duration, Instant};

use hugepage::Allocator;
use pktio::{EthDev, Mempool, PacketBatch, PoolConfig, PortConfig, QueueBurstMode};
use swports::open_vdev;

use testkit::veth::{assert_wait_fd_wakes, frame, seq_of, VethPair, PEER};

fn sized_pool(name: &str, cfg: PoolConfig) -> Mempool {
    Mempool::new(&format!("{name}-{}", std::process::id()), &cfg, &Allocator::no_huge()).unwrap()
}

fn pump_rx(port: &dyn EthDev, rx: &mut dyn pktio::RxQueue, batch: &mut PacketBatch, want: usize) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while got.len() < want && Instant::now() < deadline {
        if rx.rx_burst(batch) == 0 {
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
    assert_eq!(got.len(), want, "{:?}", port.stats());
    got
}

/// Frames both ways in XDP `mode` with UMEM `umem` (`own` or `pool`).
fn exchange(mode: &str, umem: &str) {
    let tag = format!("ax{}{}", &mode[..1], &umem[..1]);
    let Some(veth) = VethPair::new(&tag, "net_af_xdp0") else { return };
    // A pool UMEM keeps a third of the pool with the kernel: 1365 buffers, room for the N frames sent at once.
    let pool = sized_pool(&format!("axdp-{mode}-{umem}"), PoolConfig::with_size(4096));
    // TX also takes mbufs of a pool the port was not started with (a pool UMEM copies those).
    let other = sized_pool(&format!("axdp-{mode}-{umem}-other"), PoolConfig::with_size(2048));
    let peer = veth.peer_socket();
    let mut port = veth.open_port(&format!(",xdp_mode={mode},force_copy=1,umem={umem}"));
    assert_eq!(port.info().driver_name, "net_af_xdp");
    let shown = veth.link_a();
    assert!(shown.contains("prog/xdp id"), "the port attached its XDP program: {shown}");
    // `ip link` flags the attachment mode: "xdpgeneric" for SKB mode, "xdp" for the driver's own.
    assert_eq!(shown.contains(" xdpgeneric "), mode == "skb", "attached in {mode} mode: {shown}");
    let mac = port.mac_addr();
    port.configure(&PortConfig::default()).unwrap();
    // Each queue's path is its socket's (force_copy: copy mode), flagged per queue; a pool UMEM's socket exists
    // only once started, the port-level name stands for it before.
    let copy = QueueBurstMode { name: "AF_XDP copy", per_queue: true };
    let before = if umem == "pool" { QueueBurstMode { name: "Scalar", per_queue: false } } else { copy };
    assert_eq!(port.rx_burst_mode(0).unwrap(), before);
    port.start(&pool).unwrap();
    assert_eq!(port.rx_burst_mode(0).unwrap(), copy);
    assert_eq!(port.tx_burst_mode(0).unwrap(), copy);
    assert!(matches!(port.rx_burst_mode(1), Err(pktio::Error::InvalidQueue { queue: 1, .. })));
    // A pool UMEM hands the kernel the pool's own buffers to receive into (a full ring where the pool has room);
    // an own UMEM takes none.
    let posted = if umem == "pool" { 4096 / 3 } else { 0 };
    assert_eq!(pool.in_use(), posted, "buffers with the kernel after start");
    let mut rx = port.rx_queue(0).unwrap();
    let mut tx = port.tx_queue(0).unwrap();
    let mut batch = PacketBatch::new();

    // Kernel -> port: N frames of varied sizes (up to a standard MTU), in order, byte for byte.
    const N: u32 = 1000;
    let sizes = |i: u32| 60 + (i as usize * 331) % 1455;
    let sent: Vec<Vec<u8>> = (0..N).map(|i| frame(mac, PEER, i, sizes(i))).collect();
    for (i, f) in sent.iter().enumerate() {
        peer.send(f);
        if i % 64 == 63 {
            // Keep up so the RX ring (2048) is never the limit of the test.
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let got = pump_rx(&*port, &mut *rx, &mut batch, N as usize);
    assert!(got == sent, "frames arrive intact and in order");

    // Port -> kernel: N frames in bursts of 32, seen by the raw socket on the peer.
    let mut out: Vec<Vec<u8>> = Vec::new();
    for chunk in (0..N).collect::<Vec<_>>().chunks(32) {
        for &i in chunk {
            let f = frame(PEER, mac, 10_000 + i, sizes(i + 7));
            let mut m = if i % 3 == 0 { other.alloc() } else { pool.alloc() }.unwrap();
            m.append(f.len() as u16).unwrap().copy_from_slice(&f);
            batch.push(m).unwrap();
            out.push(f);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while !batch.is_empty() && Instant::now() < deadline {
            tx.tx_burst(&mut batch);
        }
        assert!(batch.is_empty(), "the TX ring drained");
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
    let x = port.xstats();
    assert!(x.iter().any(|x| x.name == "rx_q0_xsk_dropped" && x.value == 0), "{x:?}");

    // A runt frame is an error, not a crash.
    let mut m = pool.alloc().unwrap();
    m.append(10).unwrap().fill(0);
    batch.push(m).unwrap();
    assert_eq!(tx.tx_burst(&mut batch), 1);
    assert_eq!(port.stats().oerrors, 1);

    // Stop and start again: new queue handles pick up the rings where the old ones left them (own UMEM) or new
    // sockets start afresh (pool UMEM), both ways.
    drop((rx, tx));
    port.stop().unwrap();
    assert!(pool.is_full() && other.is_full(), "after stop: {} + {} buffers out", pool.in_use(), other.in_use());
    port.start(&pool).unwrap();
    let mut rx = port.rx_queue(0).unwrap();
    let mut tx = port.tx_queue(0).unwrap();
    let again: Vec<Vec<u8>> = (0..40).map(|i| frame(mac, PEER, 20_000 + i, 100 + i as usize)).collect();
    for f in &again {
        peer.send(f);
    }
    assert!(pump_rx(&*port, &mut *rx, &mut batch, again.len()) == again, "after a restart");
    let f = frame(PEER, mac, 30_000, 90);
    let mut m = pool.alloc().unwrap();
    m.append(f.len() as u16).unwrap().copy_from_slice(&f);
    batch.push(m).unwrap();
    assert_eq!(tx.tx_burst(&mut batch), 1);
    let back = std::iter::from_fn(|| peer.recv(Duration::from_secs(5))).find(|g| seq_of(g).is_some());
    assert_eq!(back.as_deref(), Some(&f[..]), "sent after a restart");

    drop((rx, tx, batch));
    port.stop().unwrap();
    drop(port);
    let shown = veth.link_a();
    assert!(!shown.contains("prog/xdp"), "closing the port detached its program: {shown}");
    assert!(pool.is_full(), "{} buffers not returned", pool.in_use());
}

#[test]
fn af_xdp_exchanges_frames_with_the_kernel_in_skb_mode() {
    exchange("skb", "own");
}

#[test]
fn af_xdp_exchanges_frames_with_the_kernel_in_native_mode() {
    exchange("drv", "own");
}

#[test]
fn af_xdp_pool_umem_exchanges_frames_with_the_kernel_in_skb_mode() {
    exchange("skb", "pool");
}

#[test]
fn af_xdp_pool_umem_exchanges_frames_with_the_kernel_in_native_mode() {
    exchange("drv", "pool");
}

#[test]
fn af_xdp_detaches_its_program_when_a_panic_drops_the_port() {
    let Some(veth) = VethPair::new("axp", "net_af_xdp0") else { return };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _port = veth.open_port("");
        assert!(veth.link_a().contains("prog/xdp id"));
        panic!("application failure");
    }));
    assert!(r.is_err());
    let shown = veth.link_a();
    assert!(!shown.contains("prog/xdp"), "the unwinding drop detached the program: {shown}");
}

fn open_err(veth: &VethPair, extra: &str) -> String {
    match veth.try_open(extra) {
        Ok(_) => panic!("opening with {extra:?} should fail"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn af_xdp_errors_name_the_cause() {
    let Some(veth) = VethPair::new("axe", "net_af_xdp0") else { return };
    // No such interface.
    veth.enter(&veth.ns_a);
    let e = open_vdev("net_af_xdp0,iface=nosuchif0").err().expect("no such interface").to_string();
    veth.leave();
    assert!(e.contains("nosuchif0") && e.contains("no such network interface"), "{e}");
    // Queue out of range: a veth has one receive queue.
    let e = open_err(&veth, ",start_queue=3");
    assert!(e.contains("start_queue=3") && e.contains("1 receive queue"), "{e}");
    let e = open_err(&veth, ",queue_count=2");
    assert!(e.contains("queue_count=2") && e.contains("receive queue"), "{e}");
    // A program already attached (here: another port's) is named, and left in place.
    let first = veth.open_port("");
    let before = veth.link_a();
    let e = open_err(&veth, "");
    assert!(e.contains("already has XDP program id") && e.contains("pktio_xsk") && e.contains("xdp off"), "{e}");
    assert_eq!(veth.link_a(), before, "the failed open did not touch the first port's program");
    drop(first);
    assert!(!veth.link_a().contains("prog/xdp"));
    // umem=pool with a pool whose buffers are too small for a chunk: start says so, and nothing is left behind.
    let small = sized_pool("axdp-small", PoolConfig { data_room: 1024, ..PoolConfig::with_size(256) });
    let mut port = veth.open_port(",umem=pool");
    port.configure(&PortConfig::default()).unwrap();
    let e = port.start(&small).expect_err("pool buffers below 2048 bytes").to_string();
    assert!(e.contains("1152 bytes") && e.contains("umem=own"), "{e}");
    drop(port);
    assert!(small.is_full() && !veth.link_a().contains("prog/xdp"));
    // Missing privileges: a thread without capabilities (capset is per thread).
    let e = std::thread::scope(|s| {
        s.spawn(|| {
            veth.enter(&veth.ns_a);
            drop_capabilities();
            // Already in the namespace (entering another needs the capability just dropped).
            let r = open_vdev(&format!("net_af_xdp0,iface={}", veth.a));
            r.err().expect("no privileges").to_string()
        })
        .join()
        .unwrap()
    });
    assert!(e.contains("missing privileges") && e.contains("run as root"), "{e}");
    assert!(!veth.link_a().contains("prog/xdp"));
}

/// Clears the calling thread's effective capabilities (keeps nothing: the thread ends after the check).
fn drop_capabilities() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut h = Header { version: 0x2008_0522, pid: 0 };
    let d = [Data { effective: 0, permitted: 0, inheritable: 0 }; 2];
    // SAFETY: capset with a valid v3 header and two data words; affects only this thread.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut h as *mut Header, d.as_ptr()) };
    assert_eq!(rc, 0, "capset: {}", std::io::Error::last_os_error());
}

#[test]
fn af_xdp_pool_umem_rides_out_a_dry_pool() {
    let Some(veth) = VethPair::new("axd", "net_af_xdp0") else { return };
    let pool = sized_pool("axdp-dry", PoolConfig { cache_size: 0, ..PoolConfig::with_size(300) });
    let peer = veth.peer_socket();
    let mut port = veth.open_port(",xdp_mode=skb,umem=pool");
    let mac = port.mac_addr();
    port.configure(&PortConfig::default()).unwrap();
    port.start(&pool).unwrap();
    assert_eq!(pool.in_use(), 100, "a third of the pool went to the fill ring");
    // The application holds every other buffer: nothing is left to give the kernel back.
    let hoard: Vec<_> = std::iter::from_fn(|| pool.alloc()).collect();
    assert_eq!(hoard.len(), 200);
    let mut rx = port.rx_queue(0).unwrap();
    let mut batch = PacketBatch::new();
    // SKB-mode XDP runs in the sender's transmit: by the time send returns the kernel has placed each frame into
    // one of its 100 buffers, or dropped it.
    let first: Vec<Vec<u8>> = (0..150).map(|i| frame(mac, PEER, i, 100)).collect();
    for f in &first {
        peer.send(f);
    }
    assert_eq!(rx.rx_burst(&mut batch), 32);
    let head: Vec<Vec<u8>> = batch.iter().map(|m| m.data().to_vec()).collect();
    assert!(head[..] == first[..32]);
    let s = port.stats();
    assert_eq!((s.imissed, s.rx_nombuf), (50, 32), "no buffer for 50 frames; the first refill found the pool dry");
    batch.clear();
    let rest = pump_rx(&*port, &mut *rx, &mut batch, 68);
    assert!(rest[..] == first[32..100], "the frames the kernel had buffers for, in order");
    // With buffers back, receiving goes on as before.
    drop(hoard);
    let again: Vec<Vec<u8>> = (0..50).map(|i| frame(mac, PEER, 1000 + i, 200)).collect();
    for f in &again {
        peer.send(f);
    }
    assert!(pump_rx(&*port, &mut *rx, &mut batch, 50) == again);
    assert_eq!(port.stats().imissed, 50, "nothing more dropped");
    drop((rx, batch));
    port.stop().unwrap();
    assert!(pool.is_full(), "{} buffers not returned", pool.in_use());
}

/// The queue's descriptor (what a sleeping netstack lcore polls) turns readable when a frame arrives, and not
/// before; the burst after it has the frame.
fn wait_fd_wakes_on_a_frame(umem: &str) {
    let Some(veth) = VethPair::new(&format!("axw{}", &umem[..1]), "net_af_xdp0") else { return };
    let pool = sized_pool(&format!("axdp-wait-{umem}"), PoolConfig::with_size(4096));
    let peer = veth.peer_socket();
    let mut port = veth.open_port(&format!(",xdp_mode=skb,force_copy=1,umem={umem}"));
    let mac = port.mac_addr();
    port.configure(&PortConfig::default()).unwrap();
    port.start(&pool).unwrap();
    let mut rx = port.rx_queue(0).unwrap();
    assert_wait_fd_wakes(&mut *rx, &peer, &frame(mac, PEER, 7, 200));
    drop(rx);
    port.stop().unwrap();
}

#[test]
fn af_xdp_own_umem_wait_fd_wakes_on_a_frame() {
    wait_fd_wakes_on_a_frame("own");
}

#[test]
fn af_xdp_pool_umem_wait_fd_wakes_on_a_frame() {
    wait_fd_wakes_on_a_frame("pool");
}
