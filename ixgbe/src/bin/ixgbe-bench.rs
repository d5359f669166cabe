//! Per-packet cost of `rx_burst` + `tx_burst` with the device's own work excluded: the registers are a
//! [`ixgbe::testing::FakeRegs`], and between bursts this program plays the device, completing every RX descriptor
//! the driver handed over (DD|EOP, 60 bytes, IPv4/UDP, RSS hash) and every TX descriptor up to TDT (DD). Only
//! [`burst_pair`] is the driver's work.
//!
//! Wall time: `cargo run --release -p ixgbe --bin ixgbe-bench -- [iterations] [burst]` prints ns per packet,
//! timed around `burst_pair` only.
//!
//! Instructions (repeatable): `bash bench/ixgbe-callgrind.sh [burst...]` builds this program, runs it twice under
//! callgrind collecting only inside `burst_pair` (`--toggle-collect='*burst_pair*'`), and prints
//! `instructions/packet: N` per burst: the difference of the two runs' totals over the difference of the packets
//! they report (`packets=`), so the warm-up and set-up cancel out.

use std::sync::Arc;
use std::time::{Duration, Instant};

use drvkit::bar::RegisterSpace;
use drvkit::dma::IdentityMapper;
use hugepage::Allocator;
use ixgbe::desc::{rx, RxDesc, RxWriteback, TxDesc};
use ixgbe::regs;
use ixgbe::testing::FakeRegs;
use ixgbe::{Ixgbe, IxgbeRxQueue, IxgbeTxQueue, MacType, Options, Timing};
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
        let rdt = self.regs.peek(regs::rdt(0));
        while self.rx_head != rdt {
            let wb = RxWriteback {
                pkt_info: 7 | rx::PTYPE_IPV4 | rx::PTYPE_UDP, // RSS type IPv4/UDP
                rss_hash: 0x1234_5678 ^ self.rx_head,
                status_error: rx::STAT_DD | rx::STAT_EOP | rx::STAT_IPCS | rx::STAT_L4CS,
                length: 60,
                vlan: 0,
            };
            // SAFETY: rx_head < RING: a descriptor of the driver's ring that the device owns (before RDT).
            unsafe { self.rx_ring.add(self.rx_head as usize).write_volatile(RxDesc::writeback(wb)) };
            self.rx_head = (self.rx_head + 1) % n;
        }
        let tdt = self.regs.peek(regs::tdt(0));
        while self.tx_head != tdt {
            // SAFETY: tx_head < RING: a descriptor the driver handed over (before TDT).
            unsafe {
                let d = self.tx_ring.add(self.tx_head as usize);
                let mut v = d.read_volatile();
                v.olinfo_status |= ixgbe::desc::tx::STA_DD;
                d.write_volatile(v);
            }
            self.tx_head = (self.tx_head + 1) % n;
        }
    }
}

/// The measured part: one receive burst and one transmit burst of what was received.
#[inline(never)]
fn burst_pair(rxq: &mut IxgbeRxQueue<FakeRegs>, txq: &mut IxgbeTxQueue<FakeRegs>, batch: &mut PacketBatch) -> usize {
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
    let timing =
        Timing { reset_settle: Duration::ZERO, mdio: Duration::from_micros(1), ..Timing::hardware(MacType::X540) };
    let options = Options { timing, ..Options::new("bench0", MacType::X540) };
    let mut dev = Ixgbe::new(fake.clone(), Arc::new(IdentityMapper), Allocator::no_huge(), options).expect("probe");
    let pool =
        Mempool::new("bench", &PoolConfig { size: 4095, cache_size: 256, ..Default::default() }, &Allocator::no_huge())
            .expect("pool");
    dev.configure(&PortConfig { rx_desc: RING, tx_desc: RING, ..Default::default() }).unwrap();
    dev.start(&pool).unwrap();
    let mut rxq = dev.rx_queue_typed(0).unwrap();
    let mut txq = dev.tx_queue_typed(0).unwrap();
    let mut device = FakeDevice {
        rx_ring: fake.ring(regs::rdbal(0), regs::rdbah(0)),
        tx_ring: fake.ring(regs::tdbal(0), regs::tdbah(0)),
        regs: fake.clone(),
        rx_head: 0,
        tx_head: 0,
    };
    let mut batch = PacketBatch::with_capacity(burst);

    // Warm up (fills caches, reaches the steady state of refills and cleanups).
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
    // Timer overhead: what two Instant::now() cost, subtracted per burst.
    let t0 = Instant::now();
    let mut overhead = Duration::ZERO;
    for _ in 0..iters.min(1_000_000) {
        let t = Instant::now();
        overhead += t.elapsed();
    }
    let _ = t0;
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
    let _ = fake.read32(0);
}
