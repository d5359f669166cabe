//! The hinic3 driver on the independent SP670 model of nicsim runs the test kit's conformance suite
//! (`testkit::conformance`: bring-up, frames both ways, jumbo, stats, RSS against Toeplitz, faults, the threaded
//! forwarding run, the pool full at the end of each). `HINIC3_FWD_PACKETS=n` sets the forwarding run's count.
//! What is particular to the hinic3 (mailbox, management and command-queue faults, vport statistics, the control
//! plane) is in the other files here.

mod common;

use std::time::Duration;

use common::Port;
use hinic3::Hinic3;
use nicsim::{Sp670Bar, Sp670Config, Sp670RxError};
use pktio::EthDev;
use testkit::conformance::{Conformance, ModelCounts};

impl Conformance for Port {
    type Dev = Hinic3<Sp670Bar>;
    type Error = hinic3::Error;
    const NAME: &'static str = "hinic3";
    const FWD_PACKETS_VAR: &'static str = "HINIC3_FWD_PACKETS";
    const LINK_MBPS: u32 = 100_000;
    const RSS_KEY_LEN: usize = 40;
    /// The indirection table (docs/hw/hinic3.md §11).
    const RETA_SIZE: usize = 256;
    /// The vport's rx_err (L2NIC GET_VPORT_STAT).
    const CRC_XSTAT: &'static str = "rx_err";

    fn open_one() -> Port {
        common::open_one(Sp670Config::default())
    }
    fn open_pair() -> (Port, Port) {
        common::open_pair(Sp670Config::default())
    }
    fn dev(&self) -> &Hinic3<Sp670Bar> {
        &self.dev
    }
    fn dev_mut(&mut self) -> &mut Hinic3<Sp670Bar> {
        &mut self.dev
    }
    fn inject(&self, frame: &[u8]) -> bool {
        self.model.inject(frame)
    }
    fn inject_bad_fcs(&self, frame: &[u8]) -> bool {
        self.model.inject_error(frame, Sp670RxError::Crc)
    }
    fn rx_pending(&self) -> usize {
        self.model.rx_pending()
    }
    fn take_tx(&self) -> Vec<Vec<u8>> {
        self.model.take_tx()
    }
    fn counts(&self) -> ModelCounts {
        let c = self.model.counters();
        ModelCounts {
            tx_sent: c.tx_sent,
            tx_dropped: c.tx_dropped,
            rx_delivered: c.rx_delivered,
            rx_missed: c.rx_no_buffer,
        }
    }
    fn unwire(&self) {
        self.model.unwire()
    }
    fn set_tx_hang(&self, queue: u16, hung: bool) {
        self.model.tx_hang(Some(usize::from(queue)), hung)
    }
    fn link_flap(&self, down_for: Duration) {
        self.model.link_flap(down_for)
    }
    fn set_cable(&self, connected: bool) {
        self.model.set_cable(connected)
    }
    fn assert_no_faults(&self) {
        self.model.assert_no_faults()
    }
    fn close(self) {
        common::close(self)
    }
    fn largest_frame(_mtu: u16) -> Result<usize, &'static str> {
        Err("the SP670 model does not enforce the MTU (nicsim/src/sp670/mod.rs, not modelled)")
    }
    fn rss_state(&self) -> Option<(Vec<u8>, Vec<u16>)> {
        Some((self.model.rss_config().0.to_vec(), self.model.rss_indirection().to_vec()))
    }
    /// Every link event the AEQ carried is acknowledged to the management CPU.
    fn settle_link_events(&self) {
        testkit::wait_for(5, "every link event acknowledged", || {
            self.dev.link();
            self.model.unacked_events().is_empty()
        });
    }
    /// The device's own vport counters agree (L2NIC GET_VPORT_STAT, read through the driver).
    fn after_forward(a: &Port, b: &Port, total: u64) {
        assert_eq!((a.dev.xstats()[0].value, b.dev.xstats()[6].value), (total, total));
    }
}

testkit::conformance_tests!(Port);
