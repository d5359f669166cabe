//! net_af_packet over a veth pair whose ends live in two network namespaces the test creates (and removes): the
//! port opens one end, a raw socket on the other end plays the kernel side. Needs root and `ip`; skipped with a
//! message otherwise, or failed when NETNS_TESTS_REQUIRED=1 (scripts/test.sh sets it).

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
        self.enter(&self.ns_a);
        let port = open_vdev(&format!("net_af_packet0,iface={}{extra}", self.a));
        self.leave();
        port.unwrap()
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

fn pool(name: &str) -> Mempool {
    Mempool::new(&format!("{name}-{}", std::process::id()), &PoolConfig::with_size(2048), &Allocator::no_huge())
        .unwrap()
}

const PEER: MacAddr = MacAddr([0x02, 0, 0, 0, 0xbb, 1]);

#[test]
fn af_packet_exchanges_frames_with_the_kernel() {
    let Some(veth) = VethPair::new("afp") else { return };
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
    let Some(veth) = VethPair::new("afd") else { return };
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
    let Some(veth) = VethPair::new("afq") else { return };
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
    let Some(veth) = VethPair::new("afe") else { return };
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

/// Whether `poll(2)` finds `fd` readable within `timeout_ms`.
fn readable(fd: std::os::fd::RawFd, timeout_ms: i32) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd on our stack, for the duration of the call.
    let rc = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    assert!(rc >= 0, "poll: {}", std::io::Error::last_os_error());
    rc == 1 && p.revents & libc::POLLIN != 0
}

#[test]
fn af_packet_wait_fd_wakes_on_a_frame() {
    let Some(veth) = VethPair::new("afw") else { return };
    let pool = pool("afp-w");
    let peer = veth.peer_socket();
    let mut port = veth.open_port("");
    let mac = port.mac_addr();
    port.configure(&PortConfig::default()).unwrap();
    port.start(&pool).unwrap();
    let mut rx = port.rx_queue(0).unwrap();
    let fd = rx.wait_fd().expect("an af_packet queue has a descriptor to wait on");
    let mut batch = PacketBatch::new();

    // Drained, the socket is not readable (the link is quiet: nothing but our frames cross it).
    rx.rx_burst(&mut batch);
    batch.clear();
    assert!(!readable(fd, 0), "an empty ring is not readable");

    // A frame sent while we block in poll(2) wakes us, and the burst after it finds the frame.
    let sent = frame(mac, PEER, 5, 128);
    let start = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(150));
            peer.send(&sent);
        });
        assert!(readable(fd, 5000), "woken by the frame");
    });
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(100), "poll returned before the frame was sent ({waited:?})");
    assert_eq!(rx.rx_burst(&mut batch), 1);
    let mut data = vec![0u8; batch.as_slice()[0].pkt_len() as usize];
    batch.as_slice()[0].copy_to(&mut data);
    assert_eq!(data, sent);
    batch.clear();

    // The burst handed the frame back: readable no more (no lost or stuck readiness).
    assert!(!readable(fd, 0), "readable after the frame was taken");
    drop(rx);
    port.stop().unwrap();
}
