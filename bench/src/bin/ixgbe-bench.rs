//! The ixgbe (X540) data path on the shared harness ([`bench::driver`]): the registers are an
//! [`ixgbe::testing::FakeRegs`], and between bursts this program completes every RX descriptor the driver handed over
//! (DD | EOP, 60 bytes, IPv4/UDP, RSS hash) and every TX descriptor up to TDT (DD).

use std::sync::Arc;
use std::time::Duration;

use bench::driver::{self, Device, Head};
use drvkit::dma::IdentityMapper;
use hugepage::Allocator;
use ixgbe::desc::{rx, tx, RxDesc, RxWriteback, TxDesc};
use ixgbe::regs;
use ixgbe::testing::FakeRegs;
use ixgbe::{Ixgbe, MacType, Options, Timing};
use pktio::{EthDev, TypedQueues};

/// The device side.
struct FakeDevice {
    regs: Arc<FakeRegs>,
    rx_ring: *mut RxDesc,
    tx_ring: *mut TxDesc,
    rx_head: Head,
    tx_head: Head,
}

impl Device for FakeDevice {
    #[inline(never)]
    fn work(&mut self) {
        let rx_ring = self.rx_ring;
        self.rx_head.advance_to(self.regs.peek(regs::rdt(0)), |i| {
            let wb = RxWriteback {
                pkt_info: 7 | rx::PTYPE_IPV4 | rx::PTYPE_UDP, // RSS type IPv4/UDP
                rss_hash: 0x1234_5678 ^ i as u32,
                status_error: rx::STAT_DD | rx::STAT_EOP | rx::STAT_IPCS | rx::STAT_L4CS,
                length: 60,
                vlan: 0,
            };
            // SAFETY: i < RING: a descriptor of the driver's ring that the device owns (before RDT).
            unsafe { rx_ring.add(i).write_volatile(RxDesc::writeback(wb)) };
        });
        let tx_ring = self.tx_ring;
        self.tx_head.advance_to(self.regs.peek(regs::tdt(0)), |i| {
            // SAFETY: i < RING: a descriptor the driver handed over (before TDT).
            unsafe {
                let d = tx_ring.add(i);
                let mut v = d.read_volatile();
                v.olinfo_status |= tx::STA_DD;
                d.write_volatile(v);
            }
        });
    }
}

fn main() {
    let args = driver::Args::from_env();
    let _lcore = driver::bind_lcore();
    let fake = Arc::new(FakeRegs::default());
    let timing =
        Timing { reset_settle: Duration::ZERO, mdio: Duration::from_micros(1), ..Timing::hardware(MacType::X540) };
    let options = Options { timing, ..Options::new("bench0", MacType::X540) };
    let mut dev = Ixgbe::new(fake.clone(), Arc::new(IdentityMapper), Allocator::no_huge(), options).expect("probe");
    let pool = driver::pool("bench");
    dev.configure(&driver::port_config()).unwrap();
    dev.start(&pool).unwrap();
    assert_eq!(dev.burst_mode().tx, driver::tx_path().name(), "the TX path measured");
    let mut rxq = dev.rx_queue_typed(0).unwrap();
    let mut txq = dev.tx_queue_typed(0).unwrap();
    let mut device = FakeDevice {
        rx_ring: fake.ring(regs::rdbal(0), regs::rdbah(0)),
        tx_ring: fake.ring(regs::tdbal(0), regs::tdbah(0)),
        regs: fake.clone(),
        rx_head: Head::default(),
        tx_head: Head::default(),
    };
    driver::run(&mut rxq, &mut txq, &mut device, args);
    drop((rxq, txq));
    dev.stop().unwrap();
    assert!(pool.is_full(), "buffers leaked");
}
