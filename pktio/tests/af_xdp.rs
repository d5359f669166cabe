//! net_af_xdp over a veth pair whose ends live in two network namespaces the test creates (and removes): the port
//! opens one end (loading and attaching its XDP program), a raw socket on the other end plays the kernel side.
//! Needs root and `ip`; skipped with a message otherwise, or failed when NETNS_TESTS_REQUIRED=1 (scripts/test.sh
//! sets it).

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;
use std::time::{Duration, Instant};

use hugepage::Allocator;
use pktio::ports::open_vdev;
use pktio::{EthDev, MacAddr, Mempool, PacketBatch, PoolConfig, PortConfig};

/// Our experimental ethertype: frames the test injects carry it, so other traffic is easy to ignore.
const ETHERTYPE: u16 = 0x88b5;
const MAGIC: &[u8; 4] = b"PKIO";

/// Skips the calling test with what it needs, or fails it when NETNS_TESTS_REQUIRED=1 (the project's test command
/// sets it: there a missing tool or privilege is a broken machine, not a pass).
fn skip(reason: &str) {
    if std::env::var("NETNS_TESTS_REQUIRED").is_ok_and(|v| v == "1") {
        panic!("NETNS_TESTS_REQUIRED=1 but the test cannot run: {reason}");
    }
    eprintln!("SKIPPED: {reason}");
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

fn ip_out(args: &[&str]) -> String {
    String::from_utf8_lossy(&Command::new("ip").args(args).output().expect("run ip").stdout).into_owned()
}

/// Two namespaces joined by a veth pair, `a` in the first, `b` in the second, both up and quiet (no IPv6). Removed
/// on drop; the thread returns to its own namespace.
struct VethPair {
    ns_a: String,
    ns_b: String,
    a: String,
    b: String,
    home: File,
}

impl VethPair {
    fn new(tag: &str) -> Option<VethPair> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            skip("needs root to create network namespaces and veth pairs (run as root: sudo -E cargo test)");
            return None;
        }
        if Command::new("ip").arg("-V").output().is_err() {
            skip("the `ip` command is missing (apt-get install iproute2, or bash scripts/setup.sh)");
            return None;
        }
        let id = std::process::id();
        let pair = VethPair {
            ns_a: format!("pktio-{tag}-a-{id}"),
            ns_b: format!("pktio-{tag}-b-{id}"),
            a: format!("{tag}a{}", id % 100_000),
            b: format!("{tag}b{}", id % 100_000),
            home: File::open("/proc/thread-self/ns/net").expect("own namespace"),
        };
        for ns in [&pair.ns_a, &pair.ns_b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
            ip(&["netns", "add", ns]);
        }
        ip(&[
            "link", "add", &pair.a, "netns", &pair.ns_a, "type", "veth", "peer", "name", &pair.b, "netns", &pair.ns_b,
        ]);
        for (ns, dev) in [(&pair.ns_a, &pair.a), (&pair.ns_b, &pair.b)] {
            pair.enter(ns);
            // Quiet links: no IPv6 (router solicitations, DAD), so every frame seen is one the test sent.
            std::fs::write(format!("/proc/sys/net/ipv6/conf/{dev}/disable_ipv6"), "1").ok();
            ip(&["-n", ns, "link", "set", dev, "up"]);
        }
        pair.leave();
        Some(pair)
    }

    /// Moves this thread into namespace `ns`.
    fn enter(&self, ns: &str) {
        let f = File::open(format!("/run/netns/{ns}")).expect("namespace file");
        // SAFETY: setns on a descriptor we opened; it changes only this thread's namespace.
        assert_eq!(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns {ns}");
    }

    fn leave(&self) {
        // SAFETY: back to the thread's own namespace.
        unsafe { libc::setns(self.home.as_raw_fd(), libc::CLONE_NEWNET) };
    }

    /// Opens a port on end `a` (from inside its namespace).
    fn open_port(&self, extra: &str) -> Box<dyn EthDev> {
        self.try_open(extra).unwrap()
    }

    fn try_open(&self, extra: &str) -> pktio::Result<Box<dyn EthDev>> {
        self.enter(&self.ns_a);
        let port = open_vdev(&format!("net_af_xdp0,iface={}{extra}", self.a));
        self.leave();
        port
    }

    /// `ip -d link show` of end `a`, where an attached XDP program shows as `prog/xdp id N`.
    fn link_a(&self) -> String {
        ip_out(&["-n", &self.ns_a, "-d", "link", "show", &self.a])
    }

    /// A raw socket on end `b` that sees only our ethertype.
    fn peer_socket(&self) -> RawSocket {
        self.enter(&self.ns_b);
        let s = RawSocket::bind(&self.b, ETHERTYPE);
        self.leave();
        s
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        self.leave();
        for ns in [&self.ns_a, &self.ns_b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

/// A plain AF_PACKET socket (one send or recv per frame): the kernel side of the test.
struct RawSocket {
    fd: OwnedFd,
    ifindex: i32,
}

impl RawSocket {
    fn bind(dev: &str, ethertype: u16) -> RawSocket {
        let name = std::ffi::CString::new(dev).unwrap();
        // SAFETY: plain libc calls with checked results.
        unsafe {
            let ifindex = libc::if_nametoindex(name.as_ptr()) as i32;
            assert!(ifindex > 0, "interface {dev}");
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK, (ethertype.to_be()) as i32);
            assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
            let fd = OwnedFd::from_raw_fd(fd);
            // Room for every frame a test sends before it reads (the default buffer holds about a hundred).
            let size: i32 = 32 << 20;
            let p = (&size as *const i32).cast();
            libc::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, p, 4);
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = ethertype.to_be();
            sll.sll_ifindex = ifindex;
            let rc = libc::bind(
                fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            );
            assert_eq!(rc, 0, "bind: {}", std::io::Error::last_os_error());
            RawSocket { fd, ifindex }
        }
    }

    fn send(&self, frame: &[u8]) {
        // SAFETY: sockaddr_ll is plain data; send from a live slice.
        unsafe {
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_ifindex = self.ifindex;
            sll.sll_halen = 6;
            let rc = libc::sendto(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            );
            assert_eq!(rc, frame.len() as isize, "sendto: {}", std::io::Error::last_os_error());
        }
    }

    /// The next frame, waiting up to `timeout`.
    fn recv(&self, timeout: Duration) -> Option<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        let mut buf = vec![0u8; 65536];
        loop {
            // SAFETY: receives into our buffer.
            let n = unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n >= 0 {
                buf.truncate(n as usize);
                return Some(buf);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// A test frame: our ethertype, MAGIC, a sequence number, then filler up to `len`.
fn frame(dst: MacAddr, src: MacAddr, seq: u32, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend(dst.0);
    f.extend(src.0);
    f.extend(ETHERTYPE.to_be_bytes());
    f.extend(MAGIC);
    f.extend(seq.to_be_bytes());
    f.extend((f.len()..len).map(|i| (i as u32 ^ seq) as u8));
    f
}

/// The sequence number of one of our frames.
fn seq_of(f: &[u8]) -> Option<u32> {
    (f.len() >= 22 && f[12..14] == ETHERTYPE.to_be_bytes() && &f[14..18] == MAGIC)
        .then(|| u32::from_be_bytes(f[18..22].try_into().unwrap()))
}

fn sized_pool(name: &str, cfg: PoolConfig) -> Mempool {
    Mempool::new(&format!("{name}-{}", std::process::id()), &cfg, &Allocator::no_huge()).unwrap()
}

const PEER: MacAddr = MacAddr([0x02, 0, 0, 0, 0xbb, 1]);

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
    let Some(veth) = VethPair::new(&tag) else { return };
    // A pool UMEM keeps a quarter of the pool with the kernel: 1024 buffers, room for the N frames sent at once.
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
    port.start(&pool).unwrap();
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
    let Some(veth) = VethPair::new("axp") else { return };
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
    let Some(veth) = VethPair::new("axe") else { return };
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
