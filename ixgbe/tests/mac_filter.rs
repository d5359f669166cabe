//! Secondary unicast addresses (`EthDev::mac_addr_add`/`mac_addr_remove`) against the X540 model: each lands in a
//! receive address register pair RAL/RAH(i) (docs/hw/ixgbe.md §10.1), so with promiscuous mode off a frame to an
//! added address arrives and one to a removed address is dropped.
mod common;

use common::*;
use mempool::PacketBatch;
use nicsim::X540Config;
use pktio::TypedQueues;
use pktio::{EthDev, MacAddr, PortConfig, RxQueue};

#[test]
fn an_added_mac_is_received_and_a_removed_one_dropped_also_across_a_restart() {
    let (mut dev, port) = single(X540Config::default());
    let pool = pool(512, 2048);
    start(&mut dev, &PortConfig { rx_desc: 128, tx_desc: 64, ..Default::default() }, &pool);
    dev.set_promiscuous(false).unwrap();
    let extra = MacAddr([0x02, 0, 0, 0, 0x0a, 0x01]);
    let frame = |dst: MacAddr| udp_frame(dst.0, [2, 0, 0, 0, 0, 9], ([10, 0, 0, 1], [10, 0, 0, 2]), (1, 2), 80);
    let receive = |dev: &mut ixgbe::Ixgbe<nicsim::SimBar>, dst: MacAddr| {
        let mut rxq = dev.rx_queue_typed(0).unwrap();
        let before = port.counters().rx_filtered;
        assert!(port.inject(&frame(dst)));
        port.step();
        let mut batch = PacketBatch::with_capacity(8);
        let n = rxq.rx_burst(&mut batch);
        let got: Vec<Vec<u8>> = batch.iter().map(|m| m.data().to_vec()).collect();
        batch.clear();
        (n, port.counters().rx_filtered - before, got)
    };
    let restart = |dev: &mut ixgbe::Ixgbe<nicsim::SimBar>| {
        dev.stop().unwrap();
        dev.start(&pool).unwrap();
    };

    let (n, filtered, _) = receive(&mut dev, extra);
    assert_eq!((n, filtered), (0, 1), "an address never added is filtered out");
    restart(&mut dev);

    dev.mac_addr_add(extra, 0).unwrap();
    assert_eq!(dev.mac_addrs(), vec![dev.mac_addr(), extra]);
    let (n, filtered, got) = receive(&mut dev, extra);
    assert_eq!((n, filtered), (1, 0));
    assert_eq!(got[0], frame(extra));
    restart(&mut dev);
    let (n, _, _) = receive(&mut dev, extra);
    assert_eq!(n, 1, "the reset at start clears RAL/RAH; the driver writes the added address back");
    restart(&mut dev);

    dev.mac_addr_remove(extra).unwrap();
    let (n, filtered, _) = receive(&mut dev, extra);
    assert_eq!((n, filtered), (0, 1), "a removed address is filtered out again");
    assert_eq!(dev.mac_addrs(), vec![dev.mac_addr()]);
    assert!(matches!(dev.mac_addr_remove(dev.mac_addr()), Err(pktio::Error::DefaultMacAddr { .. })));

    dev.stop().unwrap();
    assert!(pool.is_full());
    port.assert_no_faults();
}

#[test]
fn the_receive_address_table_holds_128_entries() {
    let (mut dev, _port) = single(X540Config::default());
    assert_eq!(dev.info().max_mac_addrs, 128);
    for i in 1..128u8 {
        dev.mac_addr_add(MacAddr([0x02, 0, 0, 0, 1, i]), 0).unwrap();
    }
    let err = dev.mac_addr_add(MacAddr([0x02, 0, 0, 0, 2, 0]), 0).unwrap_err();
    assert!(matches!(err, pktio::Error::TableFull { max: 128, .. }), "{err}");
}
