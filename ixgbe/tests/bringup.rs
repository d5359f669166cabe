//! Bring-up and link against the X540 model.
mod common;

use std::time::Duration;

use common::*;
use nicsim::{LinkSpeed, X540Config};
use pktio::{EthDev, MacAddr, PortConfig};

#[test]
fn bring_up_reads_the_mac_and_link_comes_up_at_10g() {
    let (mut dev, port) = single(X540Config::default());
    assert_eq!(dev.mac_addr(), MacAddr(X540Config::default().mac));
    assert!(dev.phy_note().is_none(), "PHY set-up: {:?}", dev.phy_note());
    wait_for("link up", Duration::from_secs(2), || dev.link().up);
    assert_eq!(dev.link().speed_mbps, 10_000);
    let pool = pool(2048, 2048);
    start(&mut dev, &PortConfig { rx_desc: 512, tx_desc: 512, ..Default::default() }, &pool);
    assert!(dev.is_started());
    assert_eq!(pool.in_use(), 512);
    dev.stop().unwrap();
    assert!(pool.is_full());
    port.assert_no_faults();
}

#[test]
fn a_powered_down_phy_is_powered_up_and_the_partner_speed_is_reported() {
    let cfg = X540Config { phy_powered_down: true, partner_speed: LinkSpeed::G1, ..Default::default() };
    let (dev, port) = single(cfg);
    wait_for("link up", Duration::from_secs(2), || dev.link().up);
    assert_eq!(dev.link().speed_mbps, 1_000);
    port.assert_no_faults();
}
