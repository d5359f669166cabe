//! Secondary unicast addresses (`EthDev::mac_addr_add`/`mac_addr_remove`) against the X710 model: each becomes
//! a MAC perfect filter of the VSI through the admin queue (docs/hw/i40e.md §6.7), so with promiscuous mode off a
//! frame to an added address arrives and one to a removed address is dropped; `set_vlan_filter_enabled` moves
//! every address between MAC-only and MAC + VLAN filters.

mod common;

use common::*;
use mempool::PacketBatch;
use nicsim::X710Config;
use pktio::TypedQueues;
use pktio::{EthDev, MacAddr, PortConfig, RxQueue};

const IPS: ([u8; 4], [u8; 4]) = ([10, 0, 0, 1], [10, 0, 0, 2]);
const PEER: [u8; 6] = [0x02, 0, 0, 0, 0, 0x77];

/// Injects `frame` and returns (delivered to queue 0, filtered) once the model has taken it.
fn offer<R: RxQueue + ?Sized>(port: &Port, rx: &mut R, frame: &[u8]) -> (Vec<Vec<u8>>, u64) {
    let start = port.model.counters();
    assert!(port.model.inject(frame));
    let taken = |c: &nicsim::X710Counters| c.rx_delivered + c.rx_filtered - start.rx_delivered - start.rx_filtered;
    wait_for(5, "the model to take the frame", || taken(&port.model.counters()) >= 1);
    let c = port.model.counters();
    let delivered = c.rx_delivered - start.rx_delivered;
    let mut got = Vec::new();
    let mut batch = PacketBatch::with_capacity(8);
    wait_for(5, "the delivered frame", || {
        rx.rx_burst(&mut batch);
        got.extend(batch.iter().map(bytes));
        batch.clear();
        got.len() as u64 >= delivered
    });
    (got, c.rx_filtered - start.rx_filtered)
}

fn filters_of(port: &Port, mac: [u8; 6]) -> Vec<Option<u16>> {
    let mut v: Vec<_> = port.model.mac_filters().into_iter().filter(|(m, _)| *m == mac).map(|(_, v)| v).collect();
    v.sort();
    v
}

#[test]
fn an_added_mac_is_received_and_a_removed_one_dropped() {
    let pool = pool("model-macs", 511);
    let mut p = open_one(X710Config::default());
    p.dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
    p.dev.start(&pool).unwrap();
    p.dev.set_promiscuous(false).unwrap();
    assert_eq!(p.dev.info().max_mac_addrs, 64);
    let extra = MacAddr([0x02, 0, 0, 0, 0x0a, 0x02]);
    let frame = udp_frame(extra.0, PEER, IPS, (1, 2), 80);
    let mut rx = p.dev.rx_queue_typed(0).unwrap();

    assert_eq!(offer(&p, &mut rx, &frame), (vec![], 1), "an address never added is filtered out");
    p.dev.mac_addr_add(extra, 0).unwrap();
    assert_eq!(filters_of(&p, extra.0), vec![None]);
    assert_eq!(p.dev.mac_addrs(), vec![p.dev.mac_addr(), extra]);
    assert_eq!(offer(&p, &mut rx, &frame), (vec![frame.clone()], 0));

    // VLAN filtering on: the added address gets MAC + VLAN 0 (and each VLAN) like the default one; off again,
    // back to MAC-only.
    p.dev.vlan_filter(5, true).unwrap();
    assert_eq!(filters_of(&p, extra.0), vec![Some(0), Some(5)]);
    p.dev.set_vlan_filter_enabled(false).unwrap();
    assert!(!p.dev.vlan_filter_enabled());
    assert_eq!(filters_of(&p, extra.0), vec![None]);
    p.dev.set_vlan_filter_enabled(true).unwrap();
    assert_eq!(filters_of(&p, extra.0), vec![Some(0), Some(5)], "the VLAN IDs come back with the filter");
    // Adding an ID while the filter is off turns it back on with the IDs kept.
    p.dev.set_vlan_filter_enabled(false).unwrap();
    p.dev.vlan_filter(6, true).unwrap();
    assert!(p.dev.vlan_filter_enabled());
    assert_eq!(filters_of(&p, extra.0), vec![Some(0), Some(5), Some(6)]);

    p.dev.mac_addr_remove(extra).unwrap();
    assert_eq!(filters_of(&p, extra.0), Vec::<Option<u16>>::new());
    assert_eq!(offer(&p, &mut rx, &frame), (vec![], 1), "a removed address is filtered out again");
    let err = p.dev.mac_addr_remove(p.dev.mac_addr()).unwrap_err();
    assert!(matches!(err, pktio::Error::DefaultMacAddr { .. }), "{err}");

    drop(rx);
    p.dev.stop().unwrap();
    close(p);
    assert!(pool.is_full());
}
