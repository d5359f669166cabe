//! The i40e driver on the independent X710 model of nicsim runs the test kit's conformance suite
//! (`testkit::conformance`: bring-up, frames both ways, jumbo, stats, RSS against Toeplitz, faults, the threaded
//! forwarding run, the pool full at the end of each). `I40E_FWD_PACKETS=n` sets the forwarding run's count.
//! What is particular to the i40e (admin queue, HMC, filters, 48-bit counters) is in the other files here.

mod common;

use std::time::Duration;

use common::Port;
use i40e::I40e;
use nicsim::{X710Bar, X710Config, X710RxError};
use testkit::conformance::{Conformance, ModelCounts};

impl Conformance for Port {
    type Dev = I40e<X710Bar>;
    type Error = i40e::Error;
    const NAME: &'static str = "i40e";
    const FWD_PACKETS_VAR: &'static str = "I40E_FWD_PACKETS";
    const LINK_MBPS: u32 = 10_000;
    const RSS_KEY_LEN: usize = 52;
    /// The model's table size (capability 0x40).
    const RETA_SIZE: usize = 512;
    /// GLPRT_CRCERRS.
    const CRC_XSTAT: &'static str = "rx_crc_errors";

    fn open_one() -> Port {
        common::open_one(X710Config::default())
    }
    fn open_pair() -> (Port, Port) {
        common::open_pair(X710Config::default())
    }
    fn dev(&self) -> &I40e<X710Bar> {
        &self.dev
    }
    fn dev_mut(&mut self) -> &mut I40e<X710Bar> {
        &mut self.dev
    }
    fn inject(&self, frame: &[u8]) -> bool {
        self.model.inject(frame)
    }
    fn inject_bad_fcs(&self, frame: &[u8]) -> bool {
        self.model.inject_error(frame, X710RxError::Crc)
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
            tx_dropped: c.tx_dropped_link_down,
            rx_delivered: c.rx_delivered,
            rx_missed: c.rx_missed,
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
    /// MTU + 26 with the CRC (docs/hw/i40e.md §7.3), so MTU + 22 without it.
    fn largest_frame(mtu: u16) -> Result<usize, &'static str> {
        Ok(usize::from(mtu) + 26 - 4)
    }
}

testkit::conformance_tests!(Port);
