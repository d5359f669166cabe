//! Set MAC Config on a part that takes it only with the link up (docs/hw/i40e.md §7.3): the driver sends it at
//! start and again at the first link-up event.

mod common;

use common::*;
use nicsim::X710Config;
use pktio::{EthDev, PortConfig};

const SET_MAC_CONFIG: u16 = 0x0603;

#[test]
fn set_mac_config_sent_with_the_link_down_is_sent_again_at_the_first_link_up() {
    let pool = pool("maccfg-link", 1023);
    let mut port = open_one(X710Config { mac_config_needs_link: true, ..Default::default() });
    let power_up = port.model.mac_config().0;
    port.model.set_cable(false);
    port.dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, mtu: 1500, ..Default::default() }).unwrap();
    port.dev.start(&pool).unwrap();
    assert!(!port.dev.link().up);
    assert_eq!(port.model.mac_config().0, power_up, "the part ignored Set MAC Config with the link down");
    port.model.set_cable(true);
    wait_for(5, "link up", || port.dev.link().up);
    assert_eq!(port.model.mac_config(), (1500 + 26, true), "MTU + 26 with CRC insertion, sent again at link up");
    let sent = port.model.aq_log().iter().filter(|(op, _)| *op == SET_MAC_CONFIG).count();
    assert_eq!(sent, 2, "once at start, once at the first link-up");
    // A later flap sends nothing more: the MAC has its configuration.
    port.model.set_cable(false);
    wait_for(5, "link down", || !port.dev.link().up);
    port.model.set_cable(true);
    wait_for(5, "link up again", || port.dev.link().up);
    assert_eq!(port.model.aq_log().iter().filter(|(op, _)| *op == SET_MAC_CONFIG).count(), 2);
    port.model.assert_no_faults();
    port.dev.stop().unwrap();
    close(port);
}
