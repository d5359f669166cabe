//! The harness of the driver benchmarks (`src/bin/DRIVER-bench.rs`): the per-packet cost of a driver's `rx_burst` +
//! `tx_burst` with the device's own work excluded. Each program sets a driver up on its test doubles (the driver's
//! `testing` feature: fake registers or doorbells, a scripted firmware), and plays the device itself between bursts
//! ([`Device::work`]: completes every RX descriptor the driver handed over as a 60-byte IPv4/UDP frame with an RSS
//! hash, and every TX descriptor up to the tail). Only [`burst_pair`] is the driver's work.
//!
//! Wall time: `cargo run --release -p bench --bin DRIVER-bench -- [iterations] [burst]` prints ns per packet, timed
//! around `burst_pair` only. Instructions (repeatable): `bash bench/driver-callgrind.sh DRIVER [burst...]` runs the
//! program twice under callgrind collecting only inside `burst_pair` and prints `instructions/packet: N` per burst
//! (the difference of the two runs over the difference of their packets, so set-up and warm-up cancel out).

use std::time::{Duration, Instant};

use hugepage::Allocator;
use mempool::{lcore::LcoreGuard, Mempool, PacketBatch, PoolConfig};
use pktio::{RxQueue, TxQueue};

/// Descriptors per ring.
pub const RING: u16 = 1024;

/// The TX offloads the benchmarks configure: none, so the queues run the plain TX path
/// ([`ringkit::TxPath::Plain`], offload flags not read) that a forwarding loop without offloads gets.
pub const TX_OFFLOADS: u64 = 0;

/// The port configuration of the benchmarks: one queue pair of [`RING`] descriptors, [`TX_OFFLOADS`].
pub fn port_config() -> pktio::PortConfig {
    pktio::PortConfig { rx_desc: RING, tx_desc: RING, tx_offloads: TX_OFFLOADS, ..Default::default() }
}

/// The TX path the benchmarks measure (what [`TX_OFFLOADS`] chooses); each program checks its port runs it.
pub fn tx_path() -> ringkit::TxPath {
    ringkit::TxPath::for_offloads(TX_OFFLOADS)
}

/// Burst pairs run before the measurement (caches, the steady state of refills and cleanups).
const WARM_UP: u64 = 10_000;

/// The device side of a benchmark: completes what the driver handed over, between bursts.
pub trait Device {
    /// Completes every RX descriptor before the tail and every TX descriptor the driver handed over.
    fn work(&mut self);
}

/// Where the device side stands on a ring: the next slot it completes.
#[derive(Debug, Default)]
pub struct Head(u32);

impl Head {
    /// Calls `complete` with every slot from here up to (not including) the driver's `tail`, in ring order, and
    /// stops at the tail.
    pub fn advance_to(&mut self, tail: u32, mut complete: impl FnMut(usize)) {
        while self.0 != tail {
            complete(self.0 as usize);
            self.0 = (self.0 + 1) % RING as u32;
        }
    }
}

/// The command line: `[iterations] [burst]`.
#[derive(Debug, Clone, Copy)]
pub struct Args {
    /// Burst pairs measured.
    pub iters: u64,
    /// Packets per burst.
    pub burst: usize,
}

impl Args {
    /// The arguments after the program name (default 2,000,000 iterations of bursts of 32).
    pub fn from_env() -> Args {
        let mut args = std::env::args().skip(1);
        let iters = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
        let burst = args.next().and_then(|a| a.parse().ok()).unwrap_or(32);
        Args { iters, burst }
    }
}

/// Binds this thread to lcore 0 (the pools' per-lcore caches need it), for the benchmark's life.
pub fn bind_lcore() -> LcoreGuard {
    mempool::lcore::bind_current_thread(0).expect("lcore 0")
}

/// The benchmark's pool: 4,095 buffers with a 256-buffer lcore cache, in plain memory (the test doubles map IOVA =
/// VA).
pub fn pool(name: &str) -> Mempool {
    Mempool::new(name, &PoolConfig { size: 4095, cache_size: 256, ..Default::default() }, &Allocator::no_huge())
        .expect("pool")
}

/// The measured part: one receive burst and one transmit burst of what was received.
#[inline(never)]
pub fn burst_pair<R: RxQueue, T: TxQueue>(rxq: &mut R, txq: &mut T, batch: &mut PacketBatch) -> usize {
    let n = rxq.rx_burst(batch);
    txq.tx_burst(batch);
    n
}

/// Warms up, then runs `args.iters` burst pairs with `device` working between them, and prints the line the
/// callgrind script reads (`packets=`) with the wall time per packet (timer overhead subtracted).
pub fn run<R: RxQueue, T: TxQueue>(rxq: &mut R, txq: &mut T, device: &mut impl Device, args: Args) {
    let Args { iters, burst } = args;
    let mut batch = PacketBatch::with_capacity(burst);
    for _ in 0..WARM_UP {
        device.work();
        burst_pair(rxq, txq, &mut batch);
    }
    let mut packets = 0u64;
    let mut measured = Duration::ZERO;
    for _ in 0..iters {
        device.work();
        let t = Instant::now();
        packets += burst_pair(rxq, txq, &mut batch) as u64;
        measured += t.elapsed();
    }
    assert!(batch.is_empty(), "TX left packets behind");
    // Timer overhead: what two Instant::now() cost, subtracted per burst.
    let rounds = iters.clamp(1, 1_000_000);
    let mut overhead = Duration::ZERO;
    for _ in 0..rounds {
        let t = Instant::now();
        overhead += t.elapsed();
    }
    let per_burst_overhead = overhead.as_nanos() as f64 / rounds as f64;
    let ns = (measured.as_nanos() as f64 - per_burst_overhead * iters as f64) / packets.max(1) as f64;
    println!(
        "burst={burst} iterations={iters} packets={packets} ns_per_packet={ns:.2} (raw {:.2}, timer overhead {:.1} ns \
         per burst)",
        measured.as_nanos() as f64 / packets.max(1) as f64,
        per_burst_overhead
    );
}
