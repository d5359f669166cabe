//! Per-packet cost of `rx_burst` + `tx_burst` on the hinic3 rings with the device's own work excluded: the doorbells go
//! to a [`hinic3::testing::FakeDb`], and between bursts this program plays the device: it completes every RQ entry the
//! driver posted (a 60-byte IPv4/UDP CQE with an RSS hash, written at the CQE address the WQE names) and writes the
//! SQ's consumer index up to the last SQ doorbell. Only [`burst_pair`] is the driver's work.
//!
//! Wall time: `cargo run --release -p hinic3 --bin hinic3-bench -- [iterations] [burst]` prints ns per packet, timed
//! around `burst_pair` only. Instructions: `bash bench/hinic3-callgrind.sh [burst...]`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use drvkit::dma::{DmaMapper, IdentityMapper};
use hinic3::desc::{cqe, RqWqe, RxCqe, RQ_WQE_SHIFT};
use hinic3::regs::{DB_PAGE_RQ, DB_PAGE_SQ};
use hinic3::rx::{RxRing, RxSetup};
use hinic3::testing::FakeDb;
use hinic3::tx::{TxRing, TxSetup};
use hugepage::Allocator;
use mempool::{Mempool, PacketBatch, PoolConfig};
use pktio::{RxQueue, TxQueue};

const RING: u16 = 1024;

/// The device side: completes RQ entries and SQ WQEs between bursts.
struct FakeDevice {
    db: Arc<FakeDb>,
    rq: *const RqWqe,
    ci_slot: *mut u16,
    rx_head: u32,
    hash: u32,
}

impl FakeDevice {
    #[inline(never)]
    fn work(&mut self) {
        let n = RING as u32;
        if let Some((_, units)) = self.db.last(DB_PAGE_RQ) {
            let tail = units >> RQ_WQE_SHIFT;
            while self.rx_head != tail {
                // SAFETY: rx_head < RING: an entry the driver posted; its CQE address is in our identity-mapped memory.
                unsafe {
                    let w = self.rq.add(self.rx_head as usize).read_volatile();
                    let at = w.cqe.rotate_right(32) as usize as *mut RxCqe;
                    self.hash = self.hash.wrapping_mul(2654435761).wrapping_add(1);
                    at.write_volatile(RxCqe::done(
                        60,
                        0,
                        cqe::PKT_TYPE.val(cqe::PKT_UDP) | cqe::RSS_TYPE.val(1),
                        self.hash,
                    ));
                }
                self.rx_head = (self.rx_head + 1) % n;
            }
        }
        if let Some((_, pi)) = self.db.last(DB_PAGE_SQ) {
            // SAFETY: the CI slot of the SQ, identity-mapped.
            unsafe { self.ci_slot.write_volatile((pi as u16).to_le()) };
        }
    }
}

/// The measured part: one receive burst and one transmit burst of what was received.
#[inline(never)]
fn burst_pair(rxq: &mut RxRing<FakeDb>, txq: &mut TxRing<FakeDb>, batch: &mut PacketBatch) -> usize {
    let n = rxq.rx_burst(batch);
    txq.tx_burst(batch);
    n
}

/// The control-plane timings (see the crate doc).
fn mgmt(rounds: u32) {
    use hinic3::testing::{Answer, FakeFw};
    use pktio::EthDev;
    let fw = FakeFw::new(0, Box::new(|_| Answer::Echo));
    let t = Instant::now();
    let options = hinic3::Options { name: "bench0".into(), timing: hinic3::Timing::fast() };
    let mut dev =
        hinic3::Hinic3::new(fw.bars(), Arc::new(IdentityMapper), Allocator::no_huge(), options).expect("bring-up");
    let bring_up = t.elapsed();
    let commands = fw.mgmt_log().len();
    let pool = Mempool::new(
        "bench-mgmt",
        &PoolConfig { size: 4095, cache_size: 256, ..Default::default() },
        &Allocator::no_huge(),
    )
    .expect("pool");
    let t = Instant::now();
    dev.start(&pool).expect("start");
    dev.stop().expect("stop");
    let start_stop = t.elapsed();
    let t = Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(dev.stats());
    }
    let rt = t.elapsed() / rounds;
    println!(
        "bring_up_us={:.1} ({commands} commands) start_stop_us={:.1} mgmt_round_trip_us={:.2} (rounds={rounds})",
        bring_up.as_secs_f64() * 1e6,
        start_stop.as_secs_f64() * 1e6,
        rt.as_secs_f64() * 1e6
    );
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("mgmt") {
        let rounds = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(10_000);
        return mgmt(rounds);
    }
    let mut args = std::env::args().skip(1);
    let iters: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
    let burst: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(32);
    let _lcore = mempool::lcore::bind_current_thread(0).expect("lcore 0");

    let db = Arc::new(FakeDb::default());
    let mapper: Arc<dyn DmaMapper> = Arc::new(IdentityMapper);
    let alloc = Allocator::no_huge();
    let pool =
        Mempool::new("bench", &PoolConfig { size: 4095, cache_size: 256, ..Default::default() }, &alloc).expect("pool");
    let mut rxq = RxRing::new(RxSetup {
        db: &db,
        allocator: &alloc,
        mapper: &mapper,
        pool: &pool,
        queue: 0,
        depth: RING,
        buf_len: 2048,
        port_id: 0,
        stats: Default::default(),
        csum_errors: Default::default(),
        port: "bench0",
    })
    .expect("rx ring");
    let mut txq = TxRing::new(TxSetup {
        db: &db,
        allocator: &alloc,
        mapper: &mapper,
        queue: 0,
        depth: RING,
        cos: 0,
        pool: &pool,
        stats: Default::default(),
        port: "bench0",
    })
    .expect("tx ring");
    rxq.ring_doorbell();
    let mut device = FakeDevice {
        db: db.clone(),
        rq: rxq.ring_iova() as usize as *const RqWqe,
        ci_slot: txq.ci_iova() as usize as *mut u16,
        rx_head: 0,
        hash: 1,
    };
    let mut batch = PacketBatch::with_capacity(burst);

    // Warm up (caches, the steady state of refills and cleanups).
    for _ in 0..10_000 {
        device.work();
        burst_pair(&mut rxq, &mut txq, &mut batch);
    }
    let mut packets = 0u64;
    let mut measured = Duration::ZERO;
    for _ in 0..iters {
        device.work();
        let t = Instant::now();
        packets += burst_pair(&mut rxq, &mut txq, &mut batch) as u64;
        measured += t.elapsed();
    }
    assert!(batch.is_empty(), "TX left packets behind");
    let mut overhead = Duration::ZERO;
    for _ in 0..iters.min(1_000_000) {
        let t = Instant::now();
        overhead += t.elapsed();
    }
    let per_burst_overhead = overhead.as_nanos() as f64 / iters.min(1_000_000) as f64;
    let ns = (measured.as_nanos() as f64 - per_burst_overhead * iters as f64) / packets as f64;
    println!(
        "burst={burst} iterations={iters} packets={packets} ns_per_packet={ns:.2} (raw {:.2}, timer overhead {:.1} ns per burst)",
        measured.as_nanos() as f64 / packets as f64,
        per_burst_overhead
    );
    drop((rxq, txq));
    assert!(pool.is_full(), "buffers leaked");
}
