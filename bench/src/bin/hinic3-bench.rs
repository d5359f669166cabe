//! The hinic3 (SP670) rings on the shared harness ([`bench::driver`]): the doorbells go to a
//! [`hinic3::testing::FakeDb`], and between bursts this program completes every RQ entry the driver posted (a 60-byte
//! IPv4/UDP CQE with an RSS hash, written at the CQE address the WQE names) and writes the SQ's consumer index up to
//! the last SQ doorbell.
//!
//! `hinic3-bench mgmt [rounds]` times the control plane instead: bring-up, start/stop and one management round trip
//! against the scripted firmware.

use std::sync::Arc;
use std::time::Instant;

use bench::driver::{self, Device, Head, RING};
use drvkit::dma::{DmaMapper, IdentityMapper};
use hinic3::desc::{cqe, RqWqe, RxCqe, RQ_WQE_SHIFT};
use hinic3::regs::{DB_PAGE_RQ, DB_PAGE_SQ};
use hinic3::rxtx::{RxRing, RxSetup, TxRing, TxSetup};
use hinic3::testing::FakeDb;
use hugepage::Allocator;

/// The device side.
struct FakeDevice {
    db: Arc<FakeDb>,
    rq: *const RqWqe,
    ci_slot: *mut u16,
    rx_head: Head,
    hash: u32,
}

impl Device for FakeDevice {
    #[inline(never)]
    fn work(&mut self) {
        if let Some((_, units)) = self.db.last(DB_PAGE_RQ) {
            let (rq, hash) = (self.rq, &mut self.hash);
            self.rx_head.advance_to(units >> RQ_WQE_SHIFT, |i| {
                // SAFETY: i < RING: an entry the driver posted; its CQE address is in our identity-mapped memory.
                unsafe {
                    let w = rq.add(i).read_volatile();
                    let at = w.cqe.rotate_right(32) as usize as *mut RxCqe;
                    *hash = hash.wrapping_mul(2654435761).wrapping_add(1);
                    at.write_volatile(RxCqe::done(
                        60,
                        0,
                        cqe::PKT_TYPE.val(cqe::PKT_UDP) | cqe::RSS_TYPE.val(1),
                        *hash,
                    ));
                }
            });
        }
        if let Some((_, pi)) = self.db.last(DB_PAGE_SQ) {
            // SAFETY: the CI slot of the SQ, identity-mapped.
            unsafe { self.ci_slot.write_volatile((pi as u16).to_le()) };
        }
    }
}

/// The control-plane timings (see the crate doc).
fn mgmt(rounds: u32) {
    use hinic3::testing::{Answer, FakeFw};
    use pktio::EthDev;
    let fw = FakeFw::new(0, Box::new(|_| Answer::Echo));
    let t = Instant::now();
    let options = hinic3::Options { timing: hinic3::Timing::fast(), ..hinic3::Options::new("bench0") };
    let mut dev =
        hinic3::Hinic3::new(fw.bars(), Arc::new(IdentityMapper), Allocator::no_huge(), options).expect("bring-up");
    let bring_up = t.elapsed();
    let commands = fw.mgmt_log().len();
    let pool = driver::pool("bench-mgmt");
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
    let args = driver::Args::from_env();
    let _lcore = driver::bind_lcore();

    let db = Arc::new(FakeDb::default());
    let mapper: Arc<dyn DmaMapper> = Arc::new(IdentityMapper);
    let alloc = Allocator::no_huge();
    let pool = driver::pool("bench");
    let mut rxq = RxRing::new(RxSetup {
        db: &db,
        allocator: &alloc,
        mapper: &mapper,
        pool: &pool,
        queue: 0,
        depth: RING,
        wq_page_log2: hinic3::wq::MAX_WQ_PAGE_LOG2,
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
        wq_page_log2: hinic3::wq::MAX_WQ_PAGE_LOG2,
        cos: 0,
        pool: &pool,
        stats: Default::default(),
        hang: Default::default(),
        hang_timeout: std::time::Duration::from_secs(2),
        port: "bench0",
        path: driver::tx_path(),
    })
    .expect("tx ring");
    rxq.ring_doorbell();
    let mut device = FakeDevice {
        db: db.clone(),
        rq: rxq.ring_iova() as usize as *const RqWqe,
        ci_slot: txq.ci_iova() as usize as *mut u16,
        rx_head: Head::default(),
        hash: 1,
    };
    driver::run(&mut rxq, &mut txq, &mut device, args);
    drop((rxq, txq));
    assert!(pool.is_full(), "buffers leaked");
}
