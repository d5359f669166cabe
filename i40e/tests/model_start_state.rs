//! What an earlier user of the port may have left on is put back to DPDK's defaults: flow control off at bring-up
//! (DPDK `i40e_set_fc(I40E_FC_NONE)`), loopback off at start (0x0618, `i40e_dev_start`), PFQF_CTL_0 cleared and the
//! port's symmetric hash off at bring-up (`i40e_hw_init`). docs/hw/i40e.md §7.2, §7.6, §12.2.

mod common;

use common::*;
use drvkit::bar::RegisterSpace;
use nicsim::{X710Config, X710};
use pktio::{EthDev, PortConfig};

/// PFQF_CTL_0 and PRTQF_CTL_0 with HSYM_ENA (docs/hw/i40e.md §12.1).
const PFQF_CTL_0: usize = 0x1C_0AC0;
const PRTQF_CTL_0: usize = 0x25_6E60;
const HSYM_ENA: u32 = 1 << 0;
/// Set PHY Config (docs/hw/i40e.md §7.2).
const SET_PHY_CONFIG: u16 = 0x0601;

fn start(port: &mut Port, pool: &mempool::Mempool) {
    port.dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
    port.dev.start(pool).unwrap();
    wait_for(5, "link up", || port.dev.link().up);
}

#[test]
fn flow_control_the_nvm_left_on_is_turned_off_at_bring_up() {
    let pool = pool("state-fc", 1023);
    let (bar, model) = X710::new(X710Config { nvm_pause: 0x03, ..Default::default() });
    assert_eq!(model.flow_control(), 0x03, "pause TX and RX as the NVM leaves them");
    let mut port = open("model0", bar, model).unwrap();
    assert_eq!(port.model.flow_control(), 0, "flow control NONE, as DPDK's i40e_set_fc");
    start(&mut port, &pool);
    assert_eq!(port.model.flow_control(), 0, "start keeps it off");
    port.model.assert_no_faults();
    port.dev.stop().unwrap();
    close(port);
}

#[test]
fn flow_control_already_off_costs_no_set_phy_config_at_bring_up() {
    let port = open_one(X710Config::default());
    let sent = port.model.aq_log().iter().filter(|(op, _)| *op == SET_PHY_CONFIG).count();
    assert_eq!(sent, 0, "nothing to change, nothing sent (DPDK sends only changed abilities)");
    close(port);
}

#[test]
fn a_port_left_in_loopback_is_taken_out_of_it_at_start() {
    let pool = pool("state-lb", 1023);
    let (bar, model) = X710::new(X710Config::default());
    model.set_loopback(1);
    let mut port = open("model0", bar, model).unwrap();
    start(&mut port, &pool);
    assert_eq!(port.model.loopback(), 0, "Set Loopback NONE at start");
    // Left on again while the port is stopped: the next start turns it off too.
    port.dev.stop().unwrap();
    port.model.set_loopback(1);
    start(&mut port, &pool);
    assert_eq!(port.model.loopback(), 0);
    port.model.assert_no_faults();
    port.dev.stop().unwrap();
    close(port);
}

#[test]
fn hash_filter_leftovers_are_cleared_at_bring_up() {
    let (bar, model) = X710::new(X710Config::default());
    // An earlier driver's hash set-up: the 512-entry table and the port's symmetric hash.
    bar.write32(PFQF_CTL_0, 1 << 16);
    bar.write32(PRTQF_CTL_0, HSYM_ENA);
    let before = model.counters().rx_ctl_mmio_writes;
    let port = open("model0", bar, model).unwrap();
    assert_eq!(port.model.bar().read32(PFQF_CTL_0), 0, "PFQF_CTL_0 cleared (DPDK i40e_hw_init)");
    assert_eq!(port.model.bar().read32(PRTQF_CTL_0) & HSYM_ENA, 0, "symmetric hash off");
    assert_eq!(port.model.counters().rx_ctl_mmio_writes, before, "through the RX-control commands");
    port.model.assert_no_faults();
    close(port);
}
