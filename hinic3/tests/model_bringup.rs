//! Bring-up, start, stop and close of the hinic3 driver against the independent SP670 model (nicsim), which checks
//! every register access, management struct and queue context field by field against docs/hw/hinic3.md.
mod common;

use common::*;
use nicsim::Sp670Config;
use pktio::{EthDev, PortConfig};

#[test]
fn brings_up_starts_stops_and_closes_cleanly() {
    let pool = pool("bringup", 2048);
    let mut p = open_one(Sp670Config::default());
    p.dev.configure(&PortConfig { rx_desc: 256, tx_desc: 256, ..Default::default() }).unwrap();
    p.dev.start(&pool).unwrap();
    p.model.assert_no_faults();
    wait_for(5, "link", || p.dev.link().up);
    p.dev.stop().unwrap();
    p.model.assert_no_faults();
    assert!(pool.is_full(), "{} buffers leaked", pool.in_use());
    close(p);
}
