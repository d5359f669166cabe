//! The i40e (X710) data path on the shared harness ([`bench::driver`]): the registers are an
//! [`i40e::testing::FakeRegs`] (a scripted firmware for the bring-up), and between bursts this program completes every
//! RX descriptor the driver handed over (DD | EOF, 60 bytes, IPv4/UDP, RSS hash) and every RS descriptor up to the TX
//! tail (DTYPE 0xF).

use std::sync::Arc;

use bench::driver::{self, Device, Head};
use drvkit::dma::IdentityMapper;
use hugepage::Allocator;
use i40e::desc::{tx, RxDesc, TxDesc};
use i40e::regs;
use i40e::testing::FakeRegs;
use i40e::{I40e, Options, Timing};
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
        self.rx_head.advance_to(self.regs.peek(regs::qrx_tail(0)), |i| {
            let wb = RxDesc::writeback(60, 24, Some(0x1234_5678 ^ i as u32), true, 0);
            // SAFETY: i < RING: a descriptor of the driver's ring that the device owns (before the tail).
            unsafe { rx_ring.add(i).write_volatile(wb) };
        });
        let tx_ring = self.tx_ring;
        self.tx_head.advance_to(self.regs.peek(regs::qtx_tail(0)), |i| {
            // SAFETY: i < RING: a descriptor the driver handed over (before the tail).
            unsafe {
                let d = tx_ring.add(i);
                let v = d.read_volatile();
                if v.qw1 & tx::CMD_RS != 0 {
                    d.write_volatile(TxDesc { qw0: v.qw0, qw1: tx::DTYPE_DONE });
                }
            }
        });
    }
}

fn main() {
    let args = driver::Args::from_env();
    let _lcore = driver::bind_lcore();
    let fake = Arc::new(FakeRegs::default());
    let options = Options { timing: Timing::fast(), ..Options::new("bench0") };
    let mut dev = I40e::new(fake.clone(), Arc::new(IdentityMapper), Allocator::no_huge(), options).expect("probe");
    let pool = driver::pool("bench");
    dev.configure(&driver::port_config()).unwrap();
    dev.start(&pool).unwrap();
    assert_eq!(dev.burst_mode().tx, driver::tx_path().name(), "the TX path measured");
    let mut rxq = dev.rx_queue_typed(0).unwrap();
    let mut txq = dev.tx_queue_typed(0).unwrap();
    let mut device = FakeDevice {
        rx_ring: rxq.ring_iova() as usize as *mut RxDesc,
        tx_ring: txq.ring_iova() as usize as *mut TxDesc,
        regs: fake.clone(),
        rx_head: Head::default(),
        tx_head: Head::default(),
    };
    driver::run(&mut rxq, &mut txq, &mut device, args);
    drop((rxq, txq));
    dev.stop().unwrap();
    assert!(pool.is_full(), "buffers leaked");
}
