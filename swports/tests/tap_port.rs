//! net_tap: the port exchanges frames with the kernel through a TAP it creates inside a network namespace the test
//! creates (and removes). Needs root and `ip`; skipped with a message otherwise, or failed when
//! NETNS_TESTS_REQUIRED=1 (scripts/test.sh sets it).

use std::fs::File;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::{Duration, Instant};

use hugepage::Allocator;
use pktio::{MacAddr, Mempool, PacketBatch, PoolConfig, PortConfig};
use swports::open_vdev;
use testkit::netns::ip;

/// A network namespace the calling thread has entered; on drop the thread goes back and the namespace is deleted.
struct NetNs {
    name: String,
    home: File,
}

impl NetNs {
    /// Creates namespace `pktio-<tag>-<pid>` and moves this thread into it; `None` (with a message) when the test
    /// cannot run here.
    fn enter(tag: &str) -> Option<NetNs> {
        if !testkit::netns::usable(&["ip"]) {
            return None;
        }
        let name = format!("pktio-{tag}-{}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        ip(&["netns", "add", &name]);
        let home = File::open("/proc/thread-self/ns/net").expect("own network namespace");
        let ns = NetNs { name, home };
        let target = File::open(format!("/run/netns/{}", ns.name)).expect("namespace file");
        // SAFETY: setns on descriptors we opened; it only changes this thread's namespace.
        assert_eq!(unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns into {}", ns.name);
        Some(ns)
    }

    /// Runs `ip -n NS args...`, panicking on failure.
    fn ip(&self, args: &[&str]) {
        let mut all = vec!["-n", &self.name];
        all.extend_from_slice(args);
        ip(&all);
    }

    /// True when `ip -n NS link show dev` succeeds.
    fn has_link(&self, dev: &str) -> bool {
        Command::new("ip").args(["-n", &self.name, "link", "show", dev]).output().is_ok_and(|o| o.status.success())
    }

    /// True once `dev` is gone; the kernel unregisters a closed TAP asynchronously, so allow it a moment.
    fn link_gone(&self, dev: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.has_link(dev) {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        // SAFETY: back to the namespace this thread started in.
        unsafe { libc::setns(self.home.as_raw_fd(), libc::CLONE_NEWNET) };
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}

fn pool(name: &str) -> Mempool {
    Mempool::new(&format!("{name}-{}", std::process::id()), &PoolConfig::with_size(1024), &Allocator::no_huge())
        .unwrap()
}

const PORT_IP: [u8; 4] = [10, 77, 0, 2];
const KERNEL_IP: [u8; 4] = [10, 77, 0, 1];

/// An ARP frame (request: op 1, reply: op 2), padded to 60 bytes.
fn arp(op: u16, dst: MacAddr, sha: MacAddr, spa: [u8; 4], tha: MacAddr, tpa: [u8; 4]) -> Vec<u8> {
    let mut f = Vec::with_capacity(60);
    f.extend(dst.0);
    f.extend(sha.0);
    f.extend([0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4]);
    f.extend(op.to_be_bytes());
    f.extend(sha.0);
    f.extend(spa);
    f.extend(tha.0);
    f.extend(tpa);
    f.resize(60, 0);
    f
}

/// (op, sender MAC, sender IP, target IP) of an ARP frame.
fn parse_arp(f: &[u8]) -> Option<(u16, MacAddr, [u8; 4], [u8; 4])> {
    if f.len() < 42 || f[12..14] != [0x08, 0x06] {
        return None;
    }
    let mac = MacAddr(f[22..28].try_into().ok()?);
    Some((u16::from_be_bytes([f[20], f[21]]), mac, f[28..32].try_into().ok()?, f[38..42].try_into().ok()?))
}

/// The UDP payload of an IPv4/UDP frame to `PORT_IP`.
fn udp_payload(f: &[u8]) -> Option<&[u8]> {
    if f.len() < 42 || f[12..14] != [0x08, 0x00] || f[23] != 17 || f[30..34] != PORT_IP {
        return None;
    }
    let ihl = (f[14] & 0xf) as usize * 4;
    let len = u16::from_be_bytes([f[14 + ihl + 4], f[14 + ihl + 5]]) as usize;
    f.get(14 + ihl + 8..14 + ihl + len)
}

fn send(tx: &mut dyn pktio::TxQueue, pool: &Mempool, frame: &[u8]) {
    let mut batch = PacketBatch::new();
    let mut m = pool.alloc().unwrap();
    m.append(frame.len() as u16).unwrap().copy_from_slice(frame);
    batch.push(m).unwrap();
    assert_eq!(tx.tx_burst(&mut batch), 1);
}

#[test]
fn tap_exchanges_frames_with_the_kernel() {
    let Some(ns) = NetNs::enter("tap") else { return };
    let ifname = format!("ptap{}", std::process::id() % 100_000);
    let pool = pool("tap-x");
    {
        let mut port = open_vdev(&format!("net_tap0,iface={ifname}")).unwrap();
        assert!(ns.has_link(&ifname), "the TAP exists in the namespace");
        let mac = port.mac_addr();
        assert!(mac.is_local() && !mac.is_multicast(), "random locally administered MAC, got {mac}");
        port.configure(&PortConfig::default()).unwrap();
        port.start(&pool).unwrap();
        assert!(port.link().up, "started TAP is up");
        ns.ip(&["addr", "add", "10.77.0.1/24", "dev", &ifname]);

        let mut rx = port.rx_queue(0).unwrap();
        let mut tx = port.tx_queue(0).unwrap();
        let mut batch = PacketBatch::new();

        // 1. Port -> kernel: ask who has the kernel's address; the kernel answers.
        let req = arp(1, MacAddr::BROADCAST, mac, PORT_IP, MacAddr::ZERO, KERNEL_IP);
        send(&mut *tx, &pool, &req);
        let mut sent = 1u64;
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut kernel_mac = None;
        while kernel_mac.is_none() && Instant::now() < deadline {
            if rx.rx_burst(&mut batch) == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            for m in batch.iter() {
                if let Some((2, sha, KERNEL_IP, PORT_IP)) = parse_arp(m.data()) {
                    assert_eq!(&m.data()[..6], &mac.0, "reply addressed to the port");
                    kernel_mac = Some(sha);
                }
            }
            batch.clear();
        }
        let kernel_mac = kernel_mac.expect("the kernel answered our ARP request");

        // 2. Kernel -> port: UDP datagrams to the port's address (answering the kernel's ARP if it asks).
        let sock = UdpSocket::bind("10.77.0.1:0").unwrap();
        const N: usize = 20;
        for i in 0..N {
            sock.send_to(format!("pktio-tap-{i}").as_bytes(), "10.77.0.2:9999").unwrap();
        }
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        while got.len() < N && Instant::now() < deadline {
            if rx.rx_burst(&mut batch) == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            let mut replies = Vec::new();
            for m in batch.iter() {
                let f = m.data();
                if let Some(p) = udp_payload(f) {
                    if p.starts_with(b"pktio-tap-") {
                        got.push(String::from_utf8_lossy(p).into_owned());
                    }
                } else if let Some((1, sha, spa, PORT_IP)) = parse_arp(f) {
                    replies.push(arp(2, sha, mac, PORT_IP, sha, spa));
                }
            }
            batch.clear();
            for r in replies {
                send(&mut *tx, &pool, &r);
                sent += 1;
            }
        }
        let want: Vec<String> = (0..N).map(|i| format!("pktio-tap-{i}")).collect();
        assert_eq!(got, want, "every datagram arrived once, in order (kernel MAC {kernel_mac})");

        let s = port.stats();
        assert_eq!(s.opackets, sent);
        assert!(s.ipackets > N as u64, "ipackets {}", s.ipackets);
        assert_eq!((s.oerrors, s.ierrors), (0, 0));
        drop((rx, tx, batch));
        port.stop().unwrap();
        assert!(!port.link().up, "stopped TAP is down");
        assert!(pool.is_full(), "{} buffers not returned", pool.in_use());
    }
    assert!(ns.link_gone(&ifname), "the TAP disappears with the port");
    assert!(pool.is_full());
}

#[test]
fn tap_multi_queue_and_settings() {
    let Some(ns) = NetNs::enter("tapmq") else { return };
    let ifname = format!("mtap{}", std::process::id() % 100_000);
    let pool = pool("tap-mq");
    {
        let mut port = open_vdev(&format!("net_tap1,iface={ifname},mac=fixed")).unwrap();
        assert_eq!(port.mac_addr(), MacAddr([0x02, b'd', b't', b'a', b'p', 1]));
        assert!(port.configure(&PortConfig { rx_queues: 2, tx_queues: 1, ..Default::default() }).is_err());
        port.configure(&PortConfig { rx_queues: 4, tx_queues: 4, ..Default::default() }).unwrap();
        port.set_mtu(1400).unwrap();
        port.set_mac_addr(MacAddr([0x02, 0, 0, 0, 0x77, 1])).unwrap();
        let shown = String::from_utf8(
            Command::new("ip").args(["-n", &ns.name, "link", "show", &ifname]).output().unwrap().stdout,
        )
        .unwrap();
        assert!(shown.contains("mtu 1400") && shown.contains("02:00:00:00:77:01"), "{shown}");
        port.start(&pool).unwrap();
        ns.ip(&["addr", "add", "10.78.0.1/24", "dev", &ifname]);
        ns.ip(&["neigh", "add", "10.78.0.2", "lladdr", "02:00:00:00:77:02", "dev", &ifname]);
        let mut rxs: Vec<_> = (0..4).map(|q| port.rx_queue(q).unwrap()).collect();
        // Many flows: the kernel spreads them over the queues; together the queues see each datagram once.
        const N: usize = 64;
        for i in 0..N {
            let sock = UdpSocket::bind("10.78.0.1:0").unwrap();
            sock.send_to(format!("mq-{i}").as_bytes(), "10.78.0.2:7000").unwrap();
        }
        let mut batch = PacketBatch::new();
        let mut per_queue = [0usize; 4];
        let deadline = Instant::now() + Duration::from_secs(5);
        while per_queue.iter().sum::<usize>() < N && Instant::now() < deadline {
            for (q, rx) in rxs.iter_mut().enumerate() {
                rx.rx_burst(&mut batch);
                per_queue[q] += batch.iter().filter(|m| m.data().len() > 42 && m.data()[12..14] == [8, 0]).count();
                batch.clear();
            }
        }
        assert_eq!(per_queue.iter().sum::<usize>(), N, "per queue {per_queue:?}");
        eprintln!("datagrams per TAP queue: {per_queue:?}");
        drop(rxs);
        port.stop().unwrap();
        assert!(pool.is_full());
    }
    assert!(ns.link_gone(&ifname), "the TAP disappears with the port");
}

#[test]
fn tap_rejects_bad_devargs() {
    // In a namespace of its own when possible, so that a wrongly accepted name could never touch the host.
    let _ns = NetNs::enter("tapbad");
    assert!(open_vdev("net_tap2,iface=").is_err());
    assert!(open_vdev("net_tap2,iface=waytoolongname012345").is_err());
    assert!(open_vdev("net_tap2,iface=a/b").is_err());
    assert!(open_vdev("net_tap2,mac=zz").is_err());
    assert!(open_vdev("net_tap2,mac=01:00:5e:00:00:01").is_err());
    assert!(open_vdev("net_tap2,queues=2").is_err());
    if let Some(ns) = _ns {
        // Without iface=, the kernel names it dtap0, dtap1, ... (in this fresh namespace: dtap0).
        let args = pktio::devargs::Devargs::parse("net_tap3").unwrap();
        let port = swports::tap::TapPort::from_devargs(&args).unwrap();
        assert_eq!(port.iface(), "dtap0");
        assert!(ns.has_link("dtap0"));
        drop(port);
        assert!(ns.link_gone("dtap0"));
    }
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
fn tap_wait_fd_wakes_on_a_frame() {
    let Some(ns) = NetNs::enter("tapw") else { return };
    let ifname = format!("ptw{}", std::process::id() % 100_000);
    let pool = pool("tap-w");
    let mut port = open_vdev(&format!("net_tap0,iface={ifname}")).unwrap();
    // Quiet link: no IPv6 (router solicitations, DAD), so the only frames are the ones the test causes.
    std::fs::write(format!("/proc/sys/net/ipv6/conf/{ifname}/disable_ipv6"), "1").ok();
    port.configure(&PortConfig::default()).unwrap();
    port.start(&pool).unwrap();
    ns.ip(&["addr", "add", "10.77.0.1/24", "dev", &ifname]);
    let mut rx = port.rx_queue(0).unwrap();
    let fd = rx.wait_fd().expect("a TAP queue has a descriptor to wait on");
    let mut batch = PacketBatch::new();

    // Drain whatever the interface coming up sent, until the descriptor reads idle.
    let deadline = Instant::now() + Duration::from_secs(5);
    while readable(fd, 0) && Instant::now() < deadline {
        rx.rx_burst(&mut batch);
        batch.clear();
    }
    assert!(!readable(fd, 0), "drained, the TAP is not readable");

    // A datagram from the kernel (its ARP request for 10.77.0.2 comes first) wakes a blocked poll(2).
    let sock = UdpSocket::bind("10.77.0.1:0").unwrap();
    let start = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(150));
            sock.send_to(b"wake", "10.77.0.2:9999").unwrap();
        });
        assert!(readable(fd, 5000), "woken by the kernel's frame");
    });
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(100), "poll returned before anything was sent ({waited:?})");
    assert!(rx.rx_burst(&mut batch) >= 1, "the burst after the wake-up finds the frame");
    assert!(
        batch.iter().any(|m| parse_arp(m.data()).is_some_and(|(op, _, _, tpa)| op == 1 && tpa == PORT_IP)),
        "the kernel's ARP request for the port's address"
    );
    batch.clear();
    drop(rx);
    port.stop().unwrap();
}
