//! The hinic3 driver on the independent SP670 model of nicsim runs the test kit's conformance suite
//! (`testkit::conformance`: bring-up, frames both ways, jumbo, stats, RSS against Toeplitz, faults, the threaded
//! forwarding run, the pool full at the end of each). `HINIC3_FWD_PACKETS=n` sets the forwarding run's count.
//! What is particular to the hinic3 (mailbox, management and command-queue faults, vport statistics, the control
//! plane) is in the other files here.

mod common;

use common::Port;
use hinic3::Hinic3;
use nicsim::{Sp670Bar, Sp670Config, Sp670RxError, Sp670State};
use pktio::EthDev;
use testkit::conformance::{Conformance, Spec};

impl Conformance for Port {
    type Dev = Hinic3<Sp670Bar>;
    type Error = hinic3::Error;
    type Model = Sp670State;
    /// RETA: the indirection table (docs/hw/hinic3.md §11); the CRC counter: the vport's rx_err (L2NIC
    /// GET_VPORT_STAT).
    const SPEC: Spec = Spec {
        name: "hinic3",
        fwd_packets_var: "HINIC3_FWD_PACKETS",
        link_mbps: 100_000,
        rss_key_len: 40,
        reta_size: 256,
        crc_xstat: "rx_err",
        reta_repeats: false,
        // the function table's MTU plus 26 bytes, CRC included (docs/hw/hinic3.md §19).
        frame_over_mtu: Some(26 - 4),
        oversize_xstat: Some("mac_rx_oversize_pkt_num"),
    };
    fn open_one() -> Port {
        common::open_one(Sp670Config::default())
    }
    fn open_pair() -> (Port, Port) {
        common::open_pair(Sp670Config::default())
    }
    testkit::conformance_fields!();
    fn bad_fcs() -> Sp670RxError {
        Sp670RxError::Crc
    }
    fn set_tx_hang(&self, queue: u16, hung: bool) {
        self.model.tx_hang(Some(usize::from(queue)), hung)
    }
    fn close(self) {
        common::close(self)
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
