//! Test support for the NIC drivers' tests against the nicsim models (ixgbe, i40e, hinic3): frame builders with
//! correct checksums, pools, polling with a deadline, chained packets, the RSS flow set and its per-queue check, and
//! the threaded forwarding run the drivers' forward tests make (a generator and an exact-byte sink on one port, a
//! MAC-swapping forwarder on the other, in its own thread). Opening a driver on its model stays in each driver's
//! own `tests/common`. Not for production code: it panics on any mismatch.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hugepage::Allocator;
use mempool::{ol_flags, Mbuf, Mempool, PacketBatch, PoolConfig};
use pktio::{RxQueue, TxQueue};

/// A pool of `size` buffers in ordinary memory, without a per-thread cache; the name gets a unique suffix, since
/// tests of one binary run in parallel and may share a helper (and so a name).
pub fn pool(name: &str, size: u32) -> Mempool {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = format!("{name}-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    Mempool::new(&name, &PoolConfig { size, cache_size: 0, ..Default::default() }, &Allocator::no_huge()).unwrap()
}

/// Polls `f` until it is true; panics naming `what` once `secs` have passed.
#[track_caller]
pub fn wait_for(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(secs), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// A packet holding `frame`, chained over data-room-sized segments.
pub fn mbuf_from(pool: &Mempool, frame: &[u8]) -> Mbuf {
    let room = pool.data_room() as usize;
    let mut head: Option<Mbuf> = None;
    for part in frame.chunks(room) {
        let mut m = pool.alloc().expect("buffer");
        m.data_room_mut()[..part.len()].copy_from_slice(part);
        assert!(m.set_len(part.len() as u16));
        match &mut head {
            Some(h) => h.chain(m),
            None => head = Some(m),
        }
    }
    head.unwrap()
}

/// Every byte of a (possibly chained) packet.
pub fn bytes(m: &Mbuf) -> Vec<u8> {
    let mut v = vec![0u8; m.pkt_len() as usize];
    assert_eq!(m.copy_to(&mut v), v.len());
    v
}

/// Receives exactly `n` packets on `rx` within 5 s (a burst never takes more than asked: the batch holds `n`).
#[track_caller]
pub fn receive<R: RxQueue + ?Sized>(rx: &mut R, n: usize) -> PacketBatch {
    let mut got = PacketBatch::with_capacity(n.max(1));
    wait_for(5, "frames", || {
        rx.rx_burst(&mut got);
        got.len() >= n
    });
    assert_eq!(got.len(), n);
    got
}

/// Sends `frame` (chained over data-room-sized segments from `pool`) on `tx` and requires exactly one packet on
/// `rx` within 5 s, holding the same bytes; returns it for further checks.
#[track_caller]
pub fn cross<T: TxQueue + ?Sized, R: RxQueue + ?Sized>(
    pool: &Mempool,
    tx: &mut T,
    rx: &mut R,
    frame: &[u8],
) -> PacketBatch {
    let mut out = PacketBatch::new();
    out.push(mbuf_from(pool, frame)).unwrap();
    assert_eq!(tx.tx_burst(&mut out), 1, "the {}-byte frame taken", frame.len());
    let got = receive(rx, 1);
    assert_eq!(bytes(got.iter().next().unwrap()), frame, "{}-byte frame", frame.len());
    got
}

/// One flow of the RSS tests: its frame and the Toeplitz input of it (IPv4 addresses then ports, as every NIC here
/// hashes TCP/UDP over IPv4).
pub struct RssFlow {
    /// The hash input.
    pub tuple: Vec<u8>,
    /// The frame (to `mac`), a third of them TCP, the rest UDP of varying lengths.
    pub frame: Vec<u8>,
}

/// The `n` flows the drivers' RSS tests inject, addressed to `mac`.
pub fn rss_flows(mac: [u8; 6], n: u32) -> Vec<RssFlow> {
    (0..n)
        .map(|i| {
            let ips = ([10, 0, (i >> 8) as u8, i as u8], [192, 168, 1, (i * 7) as u8]);
            let ports = (1024 + i as u16 * 13, 80 + (i % 5) as u16);
            let src = [2, 0, 0, 0, 0, 9];
            let frame = if i % 3 == 0 {
                tcp_frame(mac, src, ips, ports, 80)
            } else {
                udp_frame(mac, src, ips, ports, 64 + i as usize % 100)
            };
            let mut tuple = [ips.0, ips.1].concat();
            tuple.extend_from_slice(&ports.0.to_be_bytes());
            tuple.extend_from_slice(&ports.1.to_be_bytes());
            RssFlow { tuple, frame }
        })
        .collect()
}

/// Drains every queue and requires, per queue, exactly the `(hash, frame)` pairs of `expected` in order, each
/// packet flagged with its RSS hash, and every queue to have received some flows.
pub fn assert_rss_spread<Q: RxQueue>(queues: &mut [Q], expected: &[Vec<(u32, Vec<u8>)>]) {
    let mut total = 0;
    for (q, rxq) in queues.iter_mut().enumerate() {
        let mut got = Vec::new();
        let mut batch = PacketBatch::with_capacity(64);
        while rxq.rx_burst(&mut batch) > 0 {
            for m in batch.iter() {
                assert_eq!(m.ol_flags() & ol_flags::RX_RSS_HASH, ol_flags::RX_RSS_HASH);
                got.push((m.rss_hash(), m.data().to_vec()));
            }
            batch.clear();
        }
        assert_eq!(got, expected[q], "queue {q}: hashes and frames in order");
        total += got.len();
    }
    assert_eq!(total, expected.iter().map(Vec::len).sum::<usize>());
    assert!(
        expected.iter().all(|e| !e.is_empty()),
        "every queue got flows: {:?}",
        expected.iter().map(Vec::len).collect::<Vec<_>>()
    );
}

/// An Ethernet + IPv4 + UDP frame of `len` bytes (no FCS) from `src` to `dst` MAC, with the given addresses and
/// ports; checksums correct.
pub fn udp_frame(dst: [u8; 6], src: [u8; 6], ips: ([u8; 4], [u8; 4]), ports: (u16, u16), len: usize) -> Vec<u8> {
    ip_frame(dst, src, ips, 17, ports, len)
}

/// Like [`udp_frame`] for TCP (20-byte header, no options).
pub fn tcp_frame(dst: [u8; 6], src: [u8; 6], ips: ([u8; 4], [u8; 4]), ports: (u16, u16), len: usize) -> Vec<u8> {
    ip_frame(dst, src, ips, 6, ports, len)
}

fn ip_frame(dst: [u8; 6], src: [u8; 6], ips: ([u8; 4], [u8; 4]), proto: u8, ports: (u16, u16), len: usize) -> Vec<u8> {
    let l4_hdr = if proto == 6 { 20 } else { 8 };
    assert!(len >= 14 + 20 + l4_hdr);
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip_len = (len - 14) as u16;
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[8] = 64;
    ip[9] = proto;
    ip[12..16].copy_from_slice(&ips.0);
    ip[16..20].copy_from_slice(&ips.1);
    let c = checksum(&f[14..34], 0);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    for (i, b) in f[34 + l4_hdr..].iter_mut().enumerate() {
        *b = (i * 7 + 3) as u8;
    }
    let l4_len = len - 34;
    {
        let l4 = &mut f[34..];
        l4[0..2].copy_from_slice(&ports.0.to_be_bytes());
        l4[2..4].copy_from_slice(&ports.1.to_be_bytes());
        if proto == 17 {
            l4[4..6].copy_from_slice(&(l4_len as u16).to_be_bytes());
        } else {
            l4[12] = 5 << 4;
        }
    }
    let ck = checksum(&f[34..], pseudo(&ips, proto, l4_len));
    let off = if proto == 17 { 34 + 6 } else { 34 + 16 };
    f[off..off + 2].copy_from_slice(&ck.to_be_bytes());
    f
}

/// Pseudo-header sum (not folded, not inverted).
pub fn pseudo(ips: &([u8; 4], [u8; 4]), proto: u8, l4_len: usize) -> u32 {
    let mut s = 0u32;
    for w in ips.0.chunks(2).chain(ips.1.chunks(2)) {
        s += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    s + proto as u32 + l4_len as u32
}

/// Internet checksum of `data` starting from `initial`.
pub fn checksum(data: &[u8], initial: u32) -> u16 {
    let mut s = initial as u64;
    for c in data.chunks(2) {
        s += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u64;
    }
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// Packets a forward test runs: the environment variable `var` if set, else 100 000 in debug builds and 10
/// million in release builds.
pub fn forward_packets(var: &str) -> u64 {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(if cfg!(debug_assertions) {
        100_000
    } else {
        10_000_000
    })
}

const IPS: ([u8; 4], [u8; 4]) = ([10, 0, 0, 1], [10, 0, 0, 2]);
/// The UDP checksum of a frame from `udp_frame`.
const UDP_CSUM: std::ops::Range<usize> = 40..42;
/// Where the sequence number sits: the first 8 bytes of the UDP payload.
const SEQ: std::ops::Range<usize> = 42..50;

/// Writes `seq` into a 64-byte frame from `udp_frame` and sets its UDP checksum again.
fn stamp(frame: &mut [u8], seq: u64) {
    frame[SEQ].copy_from_slice(&seq.to_le_bytes());
    frame[UDP_CSUM].fill(0);
    let ck = checksum(&frame[34..], pseudo(&IPS, 17, frame.len() - 34));
    frame[UDP_CSUM].copy_from_slice(&ck.to_be_bytes());
}

/// Port 0 (`rx0`/`tx0`, MAC `mac0`) sends `total` 64-byte UDP frames from `pool` to port 1 (MAC `mac1`), each
/// carrying its sequence number; a thread forwards everything port 1 receives back out with the MAC addresses
/// swapped; port 0 receives and compares every byte of every frame, in order. At most 3072 packets are in flight,
/// so no ring overflows. Panics on a differing frame, a stall (50 s in debug builds, 300 s in release builds) or
/// counts that are not exactly `total`; drops every queue before it returns.
pub fn forward_run<R0, T0, R1, T1>(
    (mut rx0, mut tx0): (R0, T0),
    (mut rx1, mut tx1): (R1, T1),
    (mac0, mac1): ([u8; 6], [u8; 6]),
    pool: &Mempool,
    total: u64,
) where
    R0: RxQueue,
    T0: TxQueue,
    R1: RxQueue + Send + 'static,
    T1: TxQueue + Send + 'static,
{
    // Each frame carries its sequence number in the UDP payload (checksum kept right, so the model's checksum
    // counters stay a check too), and the sink compares every byte of every frame, in order.
    let template = udp_frame(mac1, mac0, IPS, (1, 2), 64);
    // What comes back: the same frame with the MAC addresses swapped by the forwarder.
    let mut want = template.clone();
    want[..6].copy_from_slice(&mac0);
    want[6..12].copy_from_slice(&mac1);
    let done = Arc::new(AtomicBool::new(false));
    let forwarded = Arc::new(AtomicU64::new(0));
    let fwd = {
        let (done, forwarded) = (done.clone(), forwarded.clone());
        std::thread::spawn(move || {
            let mut b = PacketBatch::with_capacity(64);
            let mut n = 0u64;
            while !done.load(Ordering::Relaxed) || !b.is_empty() {
                rx1.rx_burst(&mut b);
                for m in b.iter_mut() {
                    // Swap the MAC addresses: back to port 0.
                    let d = m.data_mut();
                    let (a, rest) = d.split_at_mut(6);
                    a.swap_with_slice(&mut rest[..6]);
                }
                n += tx1.tx_burst(&mut b) as u64;
                forwarded.store(n, Ordering::Relaxed);
                if b.is_empty() {
                    // Two shared cores: let the model threads run.
                    std::thread::yield_now();
                }
            }
            (rx1, tx1)
        })
    };

    // Generator and sink on this thread; at most `window` packets in flight, so no ring can overflow.
    let window = 3072u64;
    let (mut sent, mut received) = (0u64, 0u64);
    let mut out = PacketBatch::with_capacity(64);
    let mut inb = PacketBatch::with_capacity(64);
    let start_t = Instant::now();
    let deadline = Duration::from_secs(if cfg!(debug_assertions) { 50 } else { 300 });
    while received < total {
        assert!(
            start_t.elapsed() < deadline,
            "stalled: sent {sent}, received {received}, forwarded {}",
            forwarded.load(Ordering::Relaxed)
        );
        let room = (window - (sent - received)).min(total - sent).min(out.remaining() as u64) as usize;
        let first_new = out.len();
        if room > 0 && out.alloc_from(pool, room) {
            for (k, m) in out.iter_mut().skip(first_new).enumerate() {
                let seq = sent + (first_new + k) as u64;
                let d = &mut m.data_room_mut()[..64];
                d.copy_from_slice(&template);
                stamp(d, seq);
                m.set_len(64);
            }
        }
        sent += tx0.tx_burst(&mut out) as u64;
        let n = rx0.rx_burst(&mut inb);
        for (k, m) in inb.iter().enumerate() {
            stamp(&mut want, received + k as u64);
            if m.data() != &want[..] {
                panic!("frame {} differs:\n got {:02x?}\nwant {:02x?}", received + k as u64, m.data(), want);
            }
        }
        received += n as u64;
        inb.clear();
        if n == 0 {
            std::thread::yield_now();
        }
    }
    let elapsed = start_t.elapsed();
    done.store(true, Ordering::Relaxed);
    let (rx1, tx1) = fwd.join().unwrap();
    eprintln!(
        "forwarded {total} packets in {elapsed:?} ({:.2} Mpps through two models)",
        total as f64 / elapsed.as_secs_f64() / 1e6
    );
    assert_eq!(sent, total);
    assert_eq!(received, total);
    assert_eq!(forwarded.load(Ordering::Relaxed), total);
    drop((rx0, tx0, rx1, tx1, out));
}
