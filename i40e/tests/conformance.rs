//! The i40e driver on the independent X710 model of nicsim runs the test kit's conformance suite
//! (`testkit::conformance`: bring-up, frames both ways, jumbo, stats, RSS against Toeplitz, faults, the threaded
//! forwarding run, the pool full at the end of each). `I40E_FWD_PACKETS=n` sets the forwarding run's count.
//! What is particular to the i40e (admin queue, HMC, filters, 48-bit counters) is in the other files here.

mod common;

use common::Port;
use i40e::I40e;
use nicsim::{X710Bar, X710Config, X710RxError, X710State};
use testkit::conformance::{Conformance, Spec};

impl Conformance for Port {
    type Dev = I40e<X710Bar>;
    type Error = i40e::Error;
    type Model = X710State;
    /// RETA: the model's table size (capability 0x40); the CRC counter: GLPRT_CRCERRS.
    const SPEC: Spec = Spec {
        name: "i40e",
        fwd_packets_var: "I40E_FWD_PACKETS",
        link_mbps: 10_000,
        rss_key_len: 52,
        reta_size: 512,
        crc_xstat: "rx_crc_errors",
        reta_repeats: true,
        // MTU + 26 with the CRC (docs/hw/i40e.md §7.3).
        frame_over_mtu: Some(26 - 4),
        oversize_xstat: Some("rx_oversize_errors"),
    };
    fn open_one() -> Port {
        common::open_one(X710Config::default())
    }
    fn open_pair() -> (Port, Port) {
        common::open_pair(X710Config::default())
    }
    testkit::conformance_fields!();
    fn bad_fcs() -> X710RxError {
        X710RxError::Crc
    }
    fn set_tx_hang(&self, queue: u16, hung: bool) {
        self.model.tx_hang(Some(usize::from(queue)), hung)
    }
    fn close(self) {
        common::close(self)
    }
}

testkit::conformance_tests!(Port);
