//! The hinic3 statistics against the independent SP670 model: the port statistics and the vport counters the driver
//! reads (L2NIC GET_VPORT_STAT), checksum-error completions flagged and counted per queue, and the reset. Frames
//! both ways, jumbo frames, RSS and what every driver's statistics do are in the conformance suite
//! (conformance.rs). Every test ends with the pool full and no fault.

mod common;

use common::*;
use mempool::{ol_flags, PacketBatch};
use nicsim::Sp670Config;
use pktio::TypedQueues;
use pktio::{EthDev, PortConfig, TxQueue};

const IPS: ([u8; 4], [u8; 4]) = ([10, 0, 0, 1], [10, 0, 0, 2]);

fn started_pair(config: &PortConfig, pool: &mempool::Mempool) -> (Port, Port) {
    let (mut a, mut b) = open_pair(Sp670Config::default());
    for p in [&mut a, &mut b] {
        p.dev.configure(config).unwrap();
        p.dev.start(pool).unwrap();
    }
    wait_for(5, "both links up", || a.dev.link().up && b.dev.link().up);
    (a, b)
}

#[test]
fn vport_counters_and_checksum_errors_agree_with_the_device_and_reset() {
    let pool = pool("model-stats", 1023);
    let (mut a, mut b) = started_pair(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }, &pool);
    let (mac0, mac1) = (a.dev.mac_addr().0, b.dev.mac_addr().0);
    let mut tx0 = a.dev.tx_queue_typed(0).unwrap();
    let mut rx1 = b.dev.rx_queue_typed(0).unwrap();
    let lens = [60usize, 100, 1514, 64, 999];
    for (i, &len) in lens.iter().enumerate() {
        let mut out = PacketBatch::new();
        out.push(mbuf_from(&pool, &udp_frame(mac1, mac0, IPS, (i as u16, 9), len))).unwrap();
        assert_eq!(tx0.tx_burst(&mut out), 1);
    }
    drop(receive(&mut rx1, lens.len()));
    let total: u64 = lens.iter().map(|&l| l as u64).sum();
    wait_for(2, "TX counted", || a.dev.stats().opackets == 5);
    let (s0, s1) = (a.dev.stats(), b.dev.stats());
    assert_eq!((s0.opackets, s0.obytes, s1.ipackets, s1.ibytes), (5, total, 5, total));
    // The vport counters the driver reads (L2NIC GET_VPORT_STAT) are the model's own.
    let x = a.dev.xstats();
    assert_eq!(x[0].value, a.model.vport_stat(nicsim::sp670::vport_stat::TX_UCAST_PKTS));
    assert_eq!(x[0].value, 5);
    assert_eq!(x[1].value, total, "tx_unicast_bytes");
    assert_eq!(b.dev.xstats()[6].value, 5, "rx_unicast_pkts");
    // The 86 physical-port counters (MAG 151) under DPDK's names, each the model's own.
    for p in [&a, &b] {
        let x = p.dev.xstats();
        let mac: Vec<_> = x.iter().filter(|x| x.name.starts_with("mac_")).collect();
        assert_eq!(mac.len(), 86);
        for (i, m) in mac.iter().enumerate() {
            assert_eq!(m.value, p.model.port_stat(i), "{}", m.name);
        }
    }
    let by = |p: &Port, n: &str| p.dev.xstats().iter().find(|x| x.name == n).map(|x| x.value);
    // On the wire with the FCS: 64, 104, 1518, 68 and 1003 bytes.
    assert_eq!(by(&a, "mac_tx_total_pkt_num"), Some(5));
    assert_eq!(by(&a, "mac_tx_total_oct_num"), Some(total + 20));
    assert_eq!(by(&a, "mac_tx_65_127_oct_pkt_num"), Some(2));
    assert_eq!(by(&b, "mac_rx_1024_1518_oct_pkt_num"), Some(1));
    assert_eq!(by(&b, "mac_rx_uni_pkt_num"), Some(5));

    // A bad FCS: dropped by the device, counted as an RX error; IP and L4 checksum errors: delivered, flagged.
    let f = udp_frame(mac1, mac0, IPS, (7, 9), 80);
    assert!(b.model.inject_error(&f, nicsim::Sp670RxError::Crc));
    assert!(b.model.inject_error(&f, nicsim::Sp670RxError::IpChecksum));
    assert!(b.model.inject_error(&f, nicsim::Sp670RxError::L4Checksum));
    let got = receive(&mut rx1, 2);
    let flags: Vec<u64> =
        got.iter().map(|m| m.ol_flags() & (ol_flags::RX_IP_CKSUM_BAD | ol_flags::RX_L4_CKSUM_BAD)).collect();
    assert_eq!(flags, [ol_flags::RX_IP_CKSUM_BAD, ol_flags::RX_L4_CKSUM_BAD]);
    drop(got);
    wait_for(2, "the FCS error counted", || b.dev.stats().ierrors == 1);
    assert_eq!(b.dev.stats().ipackets, 7);
    // The per-queue xstat counts checksum-error completions, a run of identical ones included.
    let delivered = b.model.counters().rx_delivered;
    for _ in 0..6 {
        assert!(b.model.inject_error(&f, nicsim::Sp670RxError::L4Checksum));
    }
    // All in the ring before one burst takes them, as the four-at-a-time path would.
    wait_for(2, "six frames delivered", || b.model.counters().rx_delivered == delivered + 6);
    drop(receive(&mut rx1, 6));
    let csum = |p: &Port| p.dev.xstats().iter().find(|x| x.name == "rx_q0_csum_errors").map(|x| x.value);
    assert_eq!(csum(&b), Some(8));

    a.dev.reset_stats();
    b.dev.reset_stats();
    let (s0, s1) = (a.dev.stats(), b.dev.stats());
    assert_eq!((s0.opackets, s0.obytes, s1.ipackets, s1.ierrors), (0, 0, 0, 0));
    assert!(a.dev.xstats().iter().all(|x| x.value == 0), "{:?}", a.dev.xstats());
    assert_eq!(csum(&b), Some(0), "reset");
    drop((tx0, rx1));
    a.dev.stop().unwrap();
    b.dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers leaked", pool.in_use());
    close(a);
    close(b);
}
