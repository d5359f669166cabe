//! The ixgbe driver on the independent X540 model of nicsim runs the test kit's conformance suite
//! (`testkit::conformance`: bring-up, frames both ways, jumbo, stats, RSS against Toeplitz, faults, the threaded
//! forwarding run, the pool full at the end of each), the model in its own thread like hardware.
//! `IXGBE_FWD_PACKETS=n` sets the forwarding run's count. What is particular to the X540 and the 82599 (PHY, SFP,
//! reset and queue-enable budgets, length errors, an exhausted pool, the model stepped by hand) is in the other
//! files here.

mod common;

use ixgbe::Ixgbe;
use nicsim::{ModelThread, RxError, SimBar, X540Config, X540Port, X540State};
use testkit::conformance::{Conformance, Spec};

/// The driver on a model port whose thread runs for as long as this lives. Field order: the driver drops (and
/// quiesces its rings) before the model thread stops.
struct Port {
    dev: Ixgbe<SimBar>,
    thread: ModelThread,
    model: X540Port,
}

impl Port {
    /// Brought up on the model by register writes alone (no firmware to answer), then the model thread runs.
    fn running((dev, model): (Ixgbe<SimBar>, X540Port)) -> Port {
        model.assert_no_faults();
        let thread = model.start_thread();
        Port { dev, thread, model }
    }
}

impl Conformance for Port {
    type Dev = Ixgbe<SimBar>;
    type Error = ixgbe::Error;
    type Model = X540State;
    /// RETA: 128 entries of 4 bits; the CRC counter: CRCERRS.
    const SPEC: Spec = Spec {
        name: "ixgbe",
        fwd_packets_var: "IXGBE_FWD_PACKETS",
        link_mbps: 10_000,
        rss_key_len: 40,
        reta_size: 128,
        crc_xstat: "rx_crc_errors",
        reta_repeats: true,
        // MAXFRS.MFS is the MTU plus the 14-byte header and the 4-byte CRC (docs/hw/ixgbe.md §11).
        frame_over_mtu: Some(14),
        oversize_xstat: Some("rx_oversize_errors"),
    };
    fn open_one() -> Port {
        Port::running(common::single(X540Config::default()))
    }
    fn open_pair() -> (Port, Port) {
        let (a, b) = common::pair(X540Config::default());
        (Port::running(a), Port::running(b))
    }
    testkit::conformance_fields!();
    fn bad_fcs() -> RxError {
        RxError::Crc
    }
    fn set_tx_hang(&self, queue: u16, hung: bool) {
        if hung {
            self.model.tx_hang(Some(queue))
        } else {
            self.model.clear_tx_hang()
        }
    }
    fn close(self) {
        let Port { dev, thread, model } = self;
        let map = model.dma_mapper();
        drop(dev);
        assert_eq!(map.region_count(), 0, "DMA mappings left after close");
        thread.stop().expect("the model thread ran without a panic");
        model.assert_no_faults();
    }
}

testkit::conformance_tests!(Port);
