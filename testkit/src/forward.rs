//! The threaded forwarding run: a generator and an exact-byte sink on one port, a MAC-swapping forwarder on the
//! other in its own thread, every frame carrying its sequence number.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mempool::{Mempool, PacketBatch};
use pktio::{RxQueue, TxQueue};

use crate::frames::{checksum, pseudo, udp_frame};

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
