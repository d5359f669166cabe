//! Per-packet cost of `rx_burst` + `tx_burst` on the i40e rings with the device's own work excluded: the registers
//! are an [`i40e::testing::FakeRegs`] (a scripted firmware for the bring-up), and between bursts this program plays
//! the device, completing every RX descriptor the driver handed over (DD | EOF, 60 bytes, IPv4/UDP, RSS hash) and
//! every RS descriptor up to the TX tail (DTYPE 0xF). Only [`burst_pair`] is the driver's work.
//!
//! Wall time: `cargo run --release -p i40e --bin i40e-bench -- [iterations] [burst]` prints ns per packet, timed
//! around `burst_pair` only.
//!
//! Instructions (repeatable): `bash bench/i40e-callgrind.sh [burst...]` runs this program twice under callgrind
//! collecting only inside `burst_pair` and prints `instructions/packet: N` per burst (the difference of the two
//! runs over the difference of their packets, so set-up and warm-up cancel out).

use std::sync::Arc;
use std::time::{Duration, Instant};

use drvkit::dma::IdentityMapper;
use hugepage::Allocator;
use i40e::desc::{tx, RxDesc, TxDesc};
use i40e::regs;
use i40e::testing::FakeRegs;
use i40e::{I40e, I40eRxQueue, I40eTxQueue, Options, Timing};
use mempool::{Mempool, PacketBatch, PoolConfig};
use pktio::{EthDev, PortConfig, RxQueue, TxQueue};

const RING: u16 = 1024;

/// The device side: completes descriptors between bursts.
struct FakeDevice {
    regs: Arc<FakeRegs>,
    rx_ring: *mut RxDesc,
    tx_ring: *mut TxDesc,
    rx_head: u32,
    tx_head: u32,
}

impl FakeDevice {
    #[inline(never)]
    fn work(&mut self) {
        let n = RING as u32;
        let tail = self.regs.peek(regs::qrx_tail(0));
        while self.rx_head != tail {
            let wb = RxDesc::writeback(60, 24, Some(0x1234_5678 ^ self.rx_head), true, 0);
            // SAFETY: rx_head < RING: a descriptor of the driver's ring that the device owns (before the tail).
            unsafe { self.rx_ring.add(self.rx_head as usize).write_volatile(wb) };
            self.rx_head = (self.rx_head + 1) % n;
        }
        let tail = self.regs.peek(regs::qtx_tail(0));
        while self.tx_head != tail {
            // SAFETY: tx_head < RING: a descriptor the driver handed over (before the tail).
            unsafe {
                let d = self.tx_ring.add(self.tx_head as usize);
                let v = d.read_volatile();
                if v.qw1 & tx::CMD_RS != 0 {
                    d.write_volatile(TxDesc { qw0: v.qw0, qw1: tx::DTYPE_DONE });
                }
            }
            self.tx_head = (self.tx_head + 1) % n;
        }
    }
}

/// The measured part: one receive burst and one transmit burst of what was received.
#[inline(never)]
fn burst_pair(rxq: &mut I40eRxQueue<FakeRegs>, txq: &mut I40eTxQueue<FakeRegs>, batch: &mut PacketBatch) -> usize {
    let n = rxq.rx_burst(batch);
    txq.tx_burst(batch);
    n
}

fn main() {
    let mut args = std::env::args().skip(1);
    let iters: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
    let burst: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(32);
    let _lcore = mempool::lcore::bind_current_thread(0).expect("lcore 0");

    let fake = Arc::new(FakeRegs::default());
    let options = Options { timing: Timing::fast(), ..Options::new("bench0") };
    let mut dev = I40e::new(fake.clone(), Arc::new(IdentityMapper), Allocator::no_huge(), options).expect("probe");
    let pool =
        Mempool::new("bench", &PoolConfig { size: 4095, cache_size: 256, ..Default::default() }, &Allocator::no_huge())
            .expect("pool");
    dev.configure(&PortConfig { rx_desc: RING, tx_desc: RING, ..Default::default() }).unwrap();
    dev.start(&pool).unwrap();
    let mut rxq = dev.rx_queue_typed(0).unwrap();
    let mut txq = dev.tx_queue_typed(0).unwrap();
    let mut device = FakeDevice {
        rx_ring: rxq.ring_iova() as usize as *mut RxDesc,
        tx_ring: txq.ring_iova() as usize as *mut TxDesc,
        regs: fake.clone(),
        rx_head: 0,
        tx_head: 0,
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
    dev.stop().unwrap();
    assert!(pool.is_full());
}
