//! VLAN filtering through `EthDev::vlan_filter` against the independent X710 model: MAC + VLAN perfect filters
//! (docs/hw/i40e.md §6.7) decide which tagged frames reach the port; untagged frames pass through MAC + VLAN 0.

mod common;

use common::*;
use mempool::PacketBatch;
use nicsim::X710Config;
use pktio::TypedQueues;
use pktio::{EthDev, MacAddr, PortConfig, RxQueue};

const IPS: ([u8; 4], [u8; 4]) = ([10, 0, 0, 1], [10, 0, 0, 2]);
const PEER: [u8; 6] = [0x02, 0, 0, 0, 0, 0x77];

/// `frame` with an 802.1Q tag for `vid` after the MAC addresses.
fn tagged(frame: &[u8], vid: u16) -> Vec<u8> {
    [&frame[..12], &0x8100u16.to_be_bytes()[..], &vid.to_be_bytes()[..], &frame[12..]].concat()
}

/// Injects `frames` in order and returns what queue 0 received once the model has taken all of them (each one
/// either delivered or counted as filtered).
fn exchange<R: RxQueue + ?Sized>(port: &Port, rx: &mut R, frames: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let start = port.model.counters();
    for f in frames {
        assert!(port.model.inject(f));
    }
    let taken = |c: &nicsim::X710Counters| c.rx_delivered + c.rx_filtered - start.rx_delivered - start.rx_filtered;
    wait_for(5, "the model to take every frame", || taken(&port.model.counters()) >= frames.len() as u64);
    let delivered = port.model.counters().rx_delivered - start.rx_delivered;
    let mut got = Vec::new();
    let mut batch = PacketBatch::with_capacity(32);
    wait_for(5, "the delivered frames", || {
        rx.rx_burst(&mut batch);
        got.extend(batch.iter().map(bytes));
        batch.clear();
        got.len() as u64 >= delivered
    });
    got
}

fn filters_of(port: &Port, mac: [u8; 6]) -> Vec<Option<u16>> {
    let mut v: Vec<_> = port.model.mac_filters().into_iter().filter(|(m, _)| *m == mac).map(|(_, v)| v).collect();
    v.sort();
    v
}

#[test]
fn only_added_vlan_ids_pass_and_untagged_frames_still_do() {
    let pool = pool("model-vlan", 511);
    let mut p = open_one(X710Config::default());
    p.dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
    p.dev.start(&pool).unwrap();
    let mac = p.dev.mac_addr().0;
    let plain = udp_frame(mac, PEER, IPS, (1000, 2000), 100);
    let (t100, t200) = (tagged(&plain, 100), tagged(&plain, 200));
    let mut rx = p.dev.rx_queue_typed(0).unwrap();

    // The firmware's MAC-only filter lets any tag in until VLAN filtering starts.
    assert_eq!(filters_of(&p, mac), vec![None]);
    assert_eq!(exchange(&p, &mut rx, std::slice::from_ref(&t200)), vec![t200.clone()]);

    p.dev.vlan_filter(100, true).unwrap();
    assert_eq!(filters_of(&p, mac), vec![Some(0), Some(100)], "MAC + VLAN 0 replaced the MAC-only filter");
    let filtered = p.model.counters().rx_filtered;
    let got = exchange(&p, &mut rx, &[t100.clone(), t200.clone(), plain.clone()]);
    assert_eq!(got, vec![t100.clone(), plain.clone()], "tag 100 and untagged pass, tag 200 does not");
    assert_eq!(p.model.counters().rx_filtered - filtered, 1);

    p.dev.vlan_filter(100, false).unwrap();
    assert_eq!(filters_of(&p, mac), vec![Some(0)]);
    let got = exchange(&p, &mut rx, &[t100.clone(), plain.clone()]);
    assert_eq!(got, vec![plain.clone()], "with 100 removed the tagged-100 frame is dropped");
    assert_eq!(p.model.counters().rx_filtered - filtered, 2);

    drop(rx);
    p.dev.stop().unwrap();
    close(p);
    assert!(pool.is_full());
}

#[test]
fn a_new_mac_address_gets_the_vlan_filters_and_bad_ids_are_refused() {
    let pool = pool("model-vlan-mac", 511);
    let mut p = open_one(X710Config::default());
    p.dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
    p.dev.start(&pool).unwrap();
    let perm = p.dev.mac_addr().0;
    p.dev.vlan_filter(7, true).unwrap();
    let new = MacAddr([0x02, 0, 0, 0, 0, 0x33]);
    p.dev.set_mac_addr(new).unwrap();
    assert_eq!(filters_of(&p, new.0), vec![Some(0), Some(7)]);
    assert_eq!(filters_of(&p, perm), vec![Some(0), Some(7)]);
    let plain = udp_frame(new.0, PEER, IPS, (1, 2), 80);
    let mut rx = p.dev.rx_queue_typed(0).unwrap();
    let frames = [tagged(&plain, 7), tagged(&plain, 8), plain.clone()];
    assert_eq!(exchange(&p, &mut rx, &frames), vec![frames[0].clone(), plain.clone()]);

    let err = p.dev.vlan_filter(4096, true).unwrap_err().to_string();
    assert!(err.contains("4096") && err.contains("4095"), "{err}");
    let err = p.dev.vlan_filter(0, false).unwrap_err().to_string();
    assert!(err.contains("untagged"), "{err}");
    // Leaving the address again drops its filters, all of them.
    p.dev.set_mac_addr(MacAddr(perm)).unwrap();
    assert_eq!(filters_of(&p, new.0), Vec::<Option<u16>>::new());
    drop(rx);
    p.dev.stop().unwrap();
    close(p);
    assert!(pool.is_full());
}
