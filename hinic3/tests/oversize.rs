//! Frames above the receiving port's largest frame (MTU + 26) are refused and counted where an SP670 counts them
//! (docs/hw/hinic3.md §19): MAG 151's RX oversize, the `mac_rx_oversize_pkt_num` xstat, and `ierrors`. None is
//! delivered and none vanishes.

mod common;

use common::*;
use mempool::PacketBatch;
use nicsim::Sp670Config;
use pktio::TypedQueues;
use pktio::{EthDev, PortConfig, TxQueue};

#[test]
fn frames_above_the_mtu_are_counted_as_rx_oversize_errors_and_in_ierrors() {
    let pool = pool("oversize", 4095);
    let (mut a, mut b) = open_pair(Sp670Config::default());
    for p in [&mut a, &mut b] {
        p.dev.configure(&PortConfig { rx_desc: 256, tx_desc: 256, ..Default::default() }).unwrap();
        p.dev.start(&pool).unwrap();
    }
    wait_for(5, "links", || a.dev.link().up && b.dev.link().up);
    let (src, dst) = (a.dev.mac_addr().0, b.dev.mac_addr().0);
    let mut tx = a.dev.tx_queue_typed(0).unwrap();
    let mut rx = b.dev.rx_queue_typed(0).unwrap();
    // MTU 1500: the largest frame is 1526 bytes with the CRC (two VLAN tags' room), 1522 without.
    let fits = [1514, 1522];
    let oversize = [1523, 2000, 4000, 9000, 9600];
    let mut sent = 0;
    for len in fits.iter().chain(&oversize) {
        let mut batch = PacketBatch::new();
        batch.push(mbuf_from(&pool, &udp_frame(dst, src, ([1, 1, 1, 1], [2, 2, 2, 2]), (1, 2), *len))).unwrap();
        sent += tx.tx_burst(&mut batch);
    }
    assert_eq!(sent, fits.len() + oversize.len());
    let got = receive(&mut rx, fits.len());
    let lens: Vec<u32> = got.iter().map(|m| m.pkt_len()).collect();
    assert_eq!(lens, vec![1514, 1522]);
    drop(got);
    let xstat = |p: &Port, name: &str| p.dev.xstats().into_iter().find(|x| x.name == name).map(|x| x.value);
    wait_for(5, "the oversize frames counted", || xstat(&b, "mac_rx_oversize_pkt_num") == Some(oversize.len() as u64));
    let (s0, s1) = (a.dev.stats(), b.dev.stats());
    assert_eq!((s0.opackets, s0.oerrors), (sent as u64, 0), "{s0:?}");
    assert_eq!((s1.ipackets, s1.ierrors), (fits.len() as u64, oversize.len() as u64), "{s1:?}");
    drop((tx, rx));
    a.dev.stop().unwrap();
    b.dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers held", pool.in_use());
    close(a);
    close(b);
}
