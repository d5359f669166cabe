//! The i40e (X710) data path on the shared harness ([`bench::driver`]): the registers are an
//! [`i40e::testing::FakeRegs`] (a scripted firmware for the bring-up), and between bursts this program completes every
//! RX descriptor the driver handed over (DD | EOF, 60 bytes, IPv4/UDP, RSS hash) and every RS descriptor up to the TX
//! tail (DTYPE 0xF).

use std::sync::Arc;

use bench::driver::{self, Device, RING};
use drvkit::dma::IdentityMapper;
use hugepage::Allocator;
use i40e::desc::{tx, RxDesc, TxDesc};
use i40e::regs;
use i40e::testing::FakeRegs;
use i40e::{I40e, Options, Timing};
use pktio::{EthDev, PortConfig, TypedQueues};

/// The device side.
struct FakeDevice {
    regs: Arc<FakeRegs>,
    rx_ring: *mut RxDesc,
    tx_ring: *mut TxDesc,
    rx_head: u32,
    tx_head: u32,
}

impl Device for FakeDevice {
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

fn main() {
    let args = driver::Args::from_env();
    let _lcore = driver::bind_lcore();
    let fake = Arc::new(FakeRegs::default());
    let options = Options { timing: Timing::fast(), ..Options::new("bench0") };
    let mut dev = I40e::new(fake.clone(), Arc::new(IdentityMapper), Allocator::no_huge(), options).expect("probe");
    let pool = driver::pool("bench");
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
    driver::run(&mut rxq, &mut txq, &mut device, args);
    drop((rxq, txq));
    dev.stop().unwrap();
    assert!(pool.is_full(), "buffers leaked");
}
