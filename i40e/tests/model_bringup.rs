//! Bring-up of the i40e driver against the independent X710 model (nicsim), every part.

mod common;

use nicsim::{X710Config, X710Part};
use pktio::EthDev;

#[test]
fn x710_comes_up_against_the_model() {
    let port = common::open_one(X710Config::default());
    let id = port.dev.identity();
    assert_eq!(id.queues, 64);
    port.model.assert_no_faults();
    drop(port.dev);
}

#[test]
fn every_part_comes_up() {
    for part in [X710Part::X710Sfp, X710Part::Xl710QsfpA, X710Part::Xl710QsfpB, X710Part::Xxv710Sfp28] {
        let port = common::open_one(X710Config::part(part));
        assert_eq!(port.dev.info().speed_capa.last().copied(), Some(part.mbps()), "{part:?}");
        port.model.assert_no_faults();
    }
}
