//! Veth scaffolding for the port tests that talk to the kernel over veth (swports' af_packet and af_xdp):
//! a veth pair whose ends live in two namespaces the test creates and removes, a raw socket playing the kernel side,
//! and the test frames. Needs root and `ip`; without them a test is skipped with a message, or fails when
//! NETNS_TESTS_REQUIRED=1 (scripts/test.sh sets it).

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;
use std::time::{Duration, Instant};

use pktio::{EthDev, MacAddr};

pub use crate::netns::{ip, ip_out};
use swports::open_vdev;

/// The peer's MAC address in test frames.
pub const PEER: MacAddr = MacAddr([0x02, 0, 0, 0, 0xbb, 1]);

/// Our experimental ethertype: frames the test injects carry it, so other traffic is easy to ignore.
pub const ETHERTYPE: u16 = 0x88b5;
pub const MAGIC: &[u8; 4] = b"PKIO";

/// Two namespaces joined by a veth pair, `a` in the first, `b` in the second, both up and quiet (no IPv6). Removed
/// on drop; the thread returns to its own namespace.
pub struct VethPair {
    /// The vdev opened on end `a` (`net_af_xdp0`, `net_af_packet0`).
    vdev: &'static str,
    pub ns_a: String,
    pub ns_b: String,
    pub a: String,
    pub b: String,
    home: File,
}

impl VethPair {
    /// A fresh pair tagged `tag` (short: it goes into the interface names), whose end `a` opens as `vdev`.
    pub fn new(tag: &str, vdev: &'static str) -> Option<VethPair> {
        if !crate::netns::usable(&["ip"]) {
            return None;
        }
        let id = std::process::id();
        let pair = VethPair {
            vdev,
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
    pub fn enter(&self, ns: &str) {
        let f = File::open(format!("/run/netns/{ns}")).expect("namespace file");
        // SAFETY: setns on a descriptor we opened; it changes only this thread's namespace.
        assert_eq!(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns {ns}");
    }

    pub fn leave(&self) {
        // SAFETY: back to the thread's own namespace.
        unsafe { libc::setns(self.home.as_raw_fd(), libc::CLONE_NEWNET) };
    }

    /// Opens a port on end `a` (from inside its namespace).
    pub fn open_port(&self, extra: &str) -> Box<dyn EthDev> {
        self.try_open(extra).unwrap()
    }

    pub fn try_open(&self, extra: &str) -> pktio::Result<Box<dyn EthDev>> {
        self.enter(&self.ns_a);
        let port = open_vdev(&format!("{},iface={}{extra}", self.vdev, self.a));
        self.leave();
        port
    }

    /// `ip -d link show` of end `a`, where an attached XDP program shows as `prog/xdp id N`.
    pub fn link_a(&self) -> String {
        ip_out(&["-n", &self.ns_a, "-d", "link", "show", &self.a])
    }

    /// A raw socket on end `b` that sees only our ethertype.
    pub fn peer_socket(&self) -> RawSocket {
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
pub struct RawSocket {
    fd: OwnedFd,
    ifindex: i32,
}

impl RawSocket {
    pub fn bind(dev: &str, ethertype: u16) -> RawSocket {
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

    pub fn send(&self, frame: &[u8]) {
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
    pub fn recv(&self, timeout: Duration) -> Option<Vec<u8>> {
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
pub fn frame(dst: MacAddr, src: MacAddr, seq: u32, len: usize) -> Vec<u8> {
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
pub fn seq_of(f: &[u8]) -> Option<u32> {
    (f.len() >= 22 && f[12..14] == ETHERTYPE.to_be_bytes() && &f[14..18] == MAGIC)
        .then(|| u32::from_be_bytes(f[18..22].try_into().unwrap()))
}

/// Whether `poll(2)` finds `fd` readable within `timeout_ms`.
pub fn readable(fd: std::os::fd::RawFd, timeout_ms: i32) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd on our stack, for the duration of the call.
    let rc = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    assert!(rc >= 0, "poll: {}", std::io::Error::last_os_error());
    rc == 1 && p.revents & libc::POLLIN != 0
}

/// The contract of `RxQueue::wait_fd` on a started port's queue `rx`: drained, its descriptor is not readable; a
/// frame `peer` sends while a `poll(2)` waits wakes it (not before the frame); the next bursts hand over exactly
/// that frame; then the descriptor is not readable again.
pub fn assert_wait_fd_wakes(rx: &mut dyn pktio::RxQueue, peer: &RawSocket, sent: &[u8]) {
    let fd = rx.wait_fd().expect("the queue has a descriptor to wait on");
    let mut batch = pktio::PacketBatch::new();
    // Drained, the descriptor is not readable (the link is quiet: nothing but our frames cross it).
    rx.rx_burst(&mut batch);
    batch.clear();
    assert!(!readable(fd, 0), "an empty queue is not readable");

    let start = std::time::Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(150));
            peer.send(sent);
        });
        assert!(readable(fd, 5000), "woken by the frame");
    });
    let waited = start.elapsed();
    assert!(waited >= std::time::Duration::from_millis(100), "poll returned before the frame was sent ({waited:?})");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while batch.is_empty() && std::time::Instant::now() < deadline {
        rx.rx_burst(&mut batch);
    }
    assert_eq!(batch.len(), 1, "the one frame sent");
    let mut data = vec![0u8; batch.as_slice()[0].pkt_len() as usize];
    batch.as_slice()[0].copy_to(&mut data);
    assert_eq!(data, sent);
    batch.clear();
    // The burst handed the frame over: readable no more (no lost or stuck readiness).
    assert!(!readable(fd, 0), "readable after the frame was taken");
}
