//! VLAN filtering (`EthDev::vlan_filter`) against the X540 model: VFTA bits and VLNCTRL.VFE
//! (docs/hw/ixgbe.md §10.3) decide which tagged frames arrive; untagged frames always pass.
mod common;

use common::*;
use mempool::{Mempool, PacketBatch};
use nicsim::{X540Config, X540Port};
use pktio::TypedQueues;
use pktio::{EthDev, PortConfig, RxQueue};

/// `frame` with an 802.1Q tag for `vid` inserted after the MAC addresses.
fn tagged(frame: &[u8], vid: u16) -> Vec<u8> {
    let mut f = frame[..12].to_vec();
    f.extend_from_slice(&0x8100u16.to_be_bytes());
    f.extend_from_slice(&vid.to_be_bytes());
    f.extend_from_slice(&frame[12..]);
    f
}

/// Injects each frame, runs the model once and returns what queue 0 received.
fn exchange(port: &X540Port, rxq: &mut impl RxQueue, frames: &[Vec<u8>]) -> Vec<Vec<u8>> {
    for f in frames {
        assert!(port.inject(f));
    }
    port.step();
    let mut got = Vec::new();
    let mut batch = PacketBatch::with_capacity(32);
    while rxq.rx_burst(&mut batch) > 0 {
        got.extend(batch.iter().map(|m| m.data().to_vec()));
        batch.clear();
    }
    got
}

fn started() -> (ixgbe::Ixgbe<nicsim::SimBar>, X540Port, Mempool, Vec<u8>) {
    let (mut dev, port) = single(X540Config::default());
    let pool = pool(512, 2048);
    start(&mut dev, &PortConfig { rx_desc: 128, tx_desc: 64, ..Default::default() }, &pool);
    let mac = dev.mac_addr().0;
    let plain = udp_frame(mac, [2, 0, 0, 0, 0, 9], ([10, 0, 0, 1], [10, 0, 0, 2]), (1000, 2000), 80);
    (dev, port, pool, plain)
}

#[test]
fn only_added_vlan_ids_pass_and_untagged_frames_still_do() {
    let (mut dev, port, pool, plain) = started();
    let (t100, t200) = (tagged(&plain, 100), tagged(&plain, 200));
    let mut rxq = dev.rx_queue_typed(0).unwrap();

    // Before any VLAN is added the port does not filter by VLAN.
    assert_eq!(exchange(&port, &mut rxq, std::slice::from_ref(&t200)), vec![t200.clone()]);

    dev.vlan_filter(100, true).unwrap();
    let before = port.counters().rx_filtered;
    let got = exchange(&port, &mut rxq, &[t100.clone(), t200.clone(), plain.clone()]);
    assert_eq!(got, vec![t100.clone(), plain.clone()], "tag 100 and untagged pass, tag 200 does not");
    assert_eq!(port.counters().rx_filtered - before, 1);

    dev.vlan_filter(100, false).unwrap();
    let got = exchange(&port, &mut rxq, &[t100.clone(), plain.clone()]);
    assert_eq!(got, vec![plain.clone()], "with 100 removed, the tagged-100 frame is dropped");
    assert_eq!(port.counters().rx_filtered - before, 2);

    drop(rxq);
    dev.stop().unwrap();
    assert!(pool.is_full());
    port.assert_no_faults();
}

#[test]
fn the_vlan_filter_survives_a_restart_and_rejects_ids_past_4095() {
    let (mut dev, port, pool, plain) = started();
    dev.vlan_filter(4095, true).unwrap();
    dev.vlan_filter(7, true).unwrap();
    let err = dev.vlan_filter(4096, true).unwrap_err().to_string();
    assert!(err.contains("4096") && err.contains("4095"), "{err}");
    // A restart resets the MAC, which clears the VFTA; the driver writes its table back.
    dev.stop().unwrap();
    dev.start(&pool).unwrap();
    let mut rxq = dev.rx_queue_typed(0).unwrap();
    let frames = [tagged(&plain, 7), tagged(&plain, 8), tagged(&plain, 4095), tagged(&plain, 4094)];
    let got = exchange(&port, &mut rxq, &frames);
    assert_eq!(got, vec![frames[0].clone(), frames[2].clone()]);
    drop(rxq);
    dev.stop().unwrap();
    port.assert_no_faults();
}

#[test]
fn turning_the_vlan_filter_off_lets_every_tag_through_and_on_again_restores_the_ids() {
    let (mut dev, port, pool, plain) = started();
    let (t100, t200) = (tagged(&plain, 100), tagged(&plain, 200));
    dev.vlan_filter(100, true).unwrap();
    assert!(dev.vlan_filter_enabled());
    let mut rxq = dev.rx_queue_typed(0).unwrap();
    dev.set_vlan_filter_enabled(false).unwrap();
    assert!(!dev.vlan_filter_enabled());
    assert_eq!(exchange(&port, &mut rxq, &[t100.clone(), t200.clone()]), vec![t100.clone(), t200.clone()]);
    dev.set_vlan_filter_enabled(true).unwrap();
    assert_eq!(exchange(&port, &mut rxq, &[t100.clone(), t200.clone()]), vec![t100.clone()]);
    drop(rxq);
    dev.stop().unwrap();
    assert!(pool.is_full());
    port.assert_no_faults();
}
