//! The control surface an application uses while a port runs (RX modes, MAC, MTU, RSS hash types, link set), each
//! checked by the independent SP670 model field by field: no fault, and the device state follows.
mod common;

use common::*;
use nicsim::Sp670Config;
use pktio::TypedQueues;
use pktio::{EthDev, MacAddr, PortConfig, RssConfig, RssHashFunctions};

#[test]
fn rx_modes_mac_mtu_and_rss_updates_are_taken_by_the_device() {
    let pool = pool("control", 2047);
    let mut p = open_one(Sp670Config::default());
    p.dev.configure(&PortConfig { rx_queues: 4, rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
    p.dev.start(&pool).unwrap();
    wait_for(5, "link", || p.dev.link().up);
    for on in [true, false] {
        p.dev.set_promiscuous(on).unwrap();
        p.dev.set_allmulticast(on).unwrap();
        assert_eq!((p.dev.promiscuous(), p.dev.allmulticast()), (on, on));
    }
    let mac = MacAddr([0x02, 0, 0, 0x12, 0x34, 0x56]);
    p.dev.set_mac_addr(mac).unwrap();
    assert_eq!(p.dev.mac_addr(), mac);
    // The device's MAC table follows: a frame to the new address arrives, one to the old is filtered.
    let old = p.model.config().mac;
    let mut rxs: Vec<_> = (0..4).map(|q| p.dev.rx_queue_typed(q).unwrap()).collect();
    let frame = |dst| udp_frame(dst, [2, 0, 0, 0, 0, 9], ([1, 1, 1, 1], [2, 2, 2, 2]), (5, 6), 64);
    let filtered = p.model.counters().rx_filtered;
    assert!(p.model.inject(&frame(old)));
    wait_for(5, "the old address filtered", || p.model.counters().rx_filtered == filtered + 1);
    assert!(p.model.inject(&frame(mac.0)));
    let mut got = mempool::PacketBatch::new();
    wait_for(5, "a frame to the new address", || {
        for rx in rxs.iter_mut() {
            pktio::RxQueue::rx_burst(rx, &mut got);
        }
        !got.is_empty()
    });
    assert_eq!(bytes(got.iter().next().unwrap()), frame(mac.0));
    drop((got, rxs));
    p.dev.set_mtu(9000).unwrap();
    assert_eq!(p.dev.mtu(), 9000);
    p.dev.set_mtu(1500).unwrap();
    let key: Vec<u8> = (0..40u8).rev().collect();
    p.dev.rss_hash_update(&RssConfig { key: Some(key.clone()), functions: RssHashFunctions::ALL }).unwrap();
    assert_eq!(p.model.rss_config().0.to_vec(), key);
    p.model.assert_no_faults();
    let log = p.model.mgmt_log();
    assert!(log.iter().all(|&(_, _, st)| st == 0), "{log:?}");
    p.dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers leaked", pool.in_use());
    close(p);
}

/// The model starts with LRO and VLAN strip on (the firmware's defaults are unknown): the driver sets LRO off
/// (L2NIC 13, 14) and VLAN filter and strip off (26, 27) at start before the vport goes on, as DPDK's hinic3_set_lro
/// and hinic3_set_vlan, so a tagged frame arrives with its tag and nothing is merged.
#[test]
fn start_sets_lro_and_vlan_offloads_off_before_the_vport_goes_on() {
    let pool = pool("offloads", 511);
    let mut p = open_one(Sp670Config::default());
    p.dev.configure(&PortConfig { rx_queues: 1, rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
    p.dev.start(&pool).unwrap();
    wait_for(5, "link", || p.dev.link().up);
    let log = p.model.mgmt_log();
    let at = |cmd: u16| log.iter().rposition(|&(m, c, st)| (m, c, st) == (1, cmd, 0));
    let vport = at(6).expect("SET_VPORT_ENABLE");
    for cmd in [13, 14, 26, 27] {
        assert!(at(cmd).is_some_and(|i| i < vport), "L2NIC {cmd} before the vport enable: {log:?}");
    }
    let mut tagged = udp_frame(p.model.config().mac, [2, 0, 0, 0, 0, 9], ([1, 1, 1, 1], [2, 2, 2, 2]), (5, 6), 64);
    tagged.splice(12..12, [0x81, 0x00, 0x00, 42]);
    let mut rx = p.dev.rx_queue_typed(0).unwrap();
    assert!(p.model.inject(&tagged));
    let mut got = mempool::PacketBatch::new();
    wait_for(5, "the tagged frame", || {
        pktio::RxQueue::rx_burst(&mut rx, &mut got);
        !got.is_empty()
    });
    assert_eq!(bytes(got.iter().next().unwrap()), tagged, "the tag kept (strip off)");
    drop((got, rx));
    p.model.assert_no_faults();
    p.dev.stop().unwrap();
    close(p);
}
