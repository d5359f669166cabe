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
