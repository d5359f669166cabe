//! Driver-test helpers: pools, polling with a deadline, chained packets, and sending a frame across a pair of
//! queues with its bytes checked.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hugepage::Allocator;
use mempool::{Mbuf, Mempool, PacketBatch, PoolConfig};
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

/// What [`checksum_batch`] builds: the packets, and each frame as given and with its checksums done.
pub struct ChecksumBatch {
    /// The packets, with the checksum offload flags and lengths set; room for one more.
    pub batch: PacketBatch,
    /// The frames as the packets hold them (IP checksum zero, L4 checksum the pseudo-header sum).
    pub prepared: Vec<Vec<u8>>,
    /// The frames with both checksums done (what a device that did the offload sends).
    pub done: Vec<Vec<u8>>,
}

/// `n` UDP and TCP frames (alternating, 90 bytes and up) from `src` to `dst`, prepared for TX checksum offload as
/// rte_net_intel_cksum_prepare leaves them, with the IPv4, IP and L4 checksum flags: for the TX path tests, which
/// tell by the bytes on the wire whether the flags were honoured.
pub fn checksum_batch(pool: &Mempool, dst: [u8; 6], src: [u8; 6], n: usize) -> ChecksumBatch {
    use crate::frames::{checksum, pseudo, tcp_frame, udp_frame};
    use mempool::{ol_flags, TxOffload};
    let ips = ([10, 2, 2, 1], [10, 2, 2, 2]);
    let mut b = ChecksumBatch { batch: PacketBatch::with_capacity(n + 1), prepared: Vec::new(), done: Vec::new() };
    for i in 0..n {
        let udp = i % 2 == 0;
        let len = 90 + i * 40;
        let ports = (7, 8 + i as u16);
        let good = if udp { udp_frame(dst, src, ips, ports, len) } else { tcp_frame(dst, src, ips, ports, len) };
        let mut f = good.clone();
        f[24] = 0;
        f[25] = 0;
        let (off, proto) = if udp { (40, 17) } else { (50, 6) };
        let seed = !checksum(&[], pseudo(&ips, proto, len - 34));
        f[off..off + 2].copy_from_slice(&seed.to_be_bytes());
        let mut m = mbuf_from(pool, &f);
        let l4 = if udp { ol_flags::TX_UDP_CKSUM } else { ol_flags::TX_TCP_CKSUM };
        m.set_ol_flags(ol_flags::TX_IPV4 | ol_flags::TX_IP_CKSUM | l4);
        m.set_tx_offload(TxOffload { l2_len: 14, l3_len: 20, ..Default::default() });
        assert!(b.batch.push(m).is_ok());
        b.prepared.push(f);
        b.done.push(good);
    }
    b
}
