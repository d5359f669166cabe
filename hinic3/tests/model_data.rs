//! The hinic3 data path against the independent SP670 model: frames byte for byte each way, 9000-byte jumbo frames
//! both ways, RSS spread as Toeplitz and the table say (the hash computed here with `nicsim::net::toeplitz`, not by
//! either side), and the port and vport statistics. Every test ends with the pool full and no fault.

mod common;

use common::*;
use mempool::{ol_flags, PacketBatch};
use nicsim::Sp670Config;
use pktio::TypedQueues;
use pktio::{EthDev, PortConfig, RssConfig, RssHashFunctions, TxQueue};

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
fn frames_cross_each_way_byte_for_byte() {
    let pool = pool("model-each-way", 1023);
    let (mut a, mut b) = started_pair(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }, &pool);
    let (mac0, mac1) = (a.dev.mac_addr().0, b.dev.mac_addr().0);
    let (mut rx0, mut tx0) = (a.dev.rx_queue_typed(0).unwrap(), a.dev.tx_queue_typed(0).unwrap());
    let (mut rx1, mut tx1) = (b.dev.rx_queue_typed(0).unwrap(), b.dev.tx_queue_typed(0).unwrap());
    for (i, len) in [60usize, 64, 65, 127, 1514].into_iter().enumerate() {
        let f01 = udp_frame(mac1, mac0, IPS, (1000 + i as u16, 2000), len);
        let f10 = udp_frame(mac0, mac1, (IPS.1, IPS.0), (2000, 1000 + i as u16), len);
        for (tx, rx, want) in [(&mut tx0, &mut rx1, &f01), (&mut tx1, &mut rx0, &f10)] {
            let got = cross(&pool, tx, rx, want);
            let m = got.iter().next().unwrap();
            assert_eq!(
                m.ol_flags() & (ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_GOOD),
                ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_GOOD
            );
        }
    }
    let c0 = a.model.counters();
    assert_eq!((c0.tx_sent, c0.rx_delivered), (5, 5));
    let s0 = a.dev.stats();
    wait_for(2, "TX counted", || a.dev.stats().opackets == 5);
    assert_eq!(s0.ipackets, 5);
    drop((rx0, tx0, rx1, tx1));
    a.dev.stop().unwrap();
    b.dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers leaked", pool.in_use());
    a.model.assert_no_faults();
    b.model.assert_no_faults();
    close(a);
    close(b);
}

#[test]
fn jumbo_9000_byte_frames_both_ways_as_chains() {
    let pool = pool("model-jumbo", 2047);
    let config = PortConfig { mtu: 9000, rx_desc: 256, tx_desc: 256, ..Default::default() };
    let (mut a, mut b) = started_pair(&config, &pool);
    let (mac0, mac1) = (a.dev.mac_addr().0, b.dev.mac_addr().0);
    let (mut rx0, mut tx0) = (a.dev.rx_queue_typed(0).unwrap(), a.dev.tx_queue_typed(0).unwrap());
    let (mut rx1, mut tx1) = (b.dev.rx_queue_typed(0).unwrap(), b.dev.tx_queue_typed(0).unwrap());
    let room = pool.data_room() as usize;
    let max = 9000 + 14;
    for (i, len) in [max, 9000, 4097, room, room + 1, max].into_iter().enumerate() {
        let f01 = udp_frame(mac1, mac0, IPS, (1000 + i as u16, 2000), len);
        let f10 = udp_frame(mac0, mac1, (IPS.1, IPS.0), (2000, 1000 + i as u16), len);
        for (tx, rx, want) in [(&mut tx0, &mut rx1, &f01), (&mut tx1, &mut rx0, &f10)] {
            let got = cross(&pool, tx, rx, want);
            let m = got.iter().next().unwrap();
            assert_eq!(m.pkt_len() as usize, len);
            assert!(m.nb_segs() as usize >= len.div_ceil(room), "{len} bytes in {} segments", m.nb_segs());
        }
    }
    drop((rx0, tx0, rx1, tx1));
    a.dev.stop().unwrap();
    b.dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers leaked", pool.in_use());
    a.model.assert_no_faults();
    b.model.assert_no_faults();
    close(a);
    close(b);
}

fn rss_run(nq: u16, reta: Option<Vec<u16>>) {
    let key: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37).wrapping_add(11)).collect();
    let mut port = open_one(Sp670Config::default());
    let pool = pool("model-rss", 4095);
    let config = PortConfig {
        rx_queues: nq,
        tx_queues: 1,
        rx_desc: 128,
        tx_desc: 128,
        rss: Some(RssConfig { key: Some(key.clone()), functions: RssHashFunctions::ALL }),
        ..Default::default()
    };
    port.dev.configure(&config).unwrap();
    port.dev.start(&pool).unwrap();
    let size = port.dev.info().reta_size as usize;
    assert_eq!(size, 256, "the indirection table (docs/hw/hinic3.md §11)");
    assert_eq!(port.model.rss_config().0.to_vec(), key, "the key the device holds");
    let table: Vec<u16> = match &reta {
        Some(t) => {
            let full: Vec<u16> = (0..size).map(|e| t[e % t.len()]).collect();
            port.dev.reta_update(&full).unwrap();
            full
        }
        None => (0..size).map(|e| (e % nq as usize) as u16).collect(),
    };
    assert_eq!(port.model.rss_indirection().to_vec(), table, "the table the device holds");
    let mac = port.dev.mac_addr().0;
    let mut queues: Vec<_> = (0..nq).map(|q| port.dev.rx_queue_typed(q).unwrap()).collect();
    let mut expected = vec![Vec::new(); nq as usize];
    for (i, flow) in testkit::rss_flows(mac, 200).into_iter().enumerate() {
        let hash = nicsim::net::toeplitz(&key, &flow.tuple);
        assert!(port.model.inject(&flow.frame));
        expected[table[hash as usize % size] as usize].push((hash, flow.frame));
        if i % 32 == 31 {
            wait_for(5, "the model to take the frames", || port.model.rx_pending() == 0);
        }
    }
    wait_for(5, "every frame delivered", || port.model.counters().rx_delivered == 200);
    testkit::assert_rss_spread(&mut queues, &expected);
    drop(queues);
    port.dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers leaked", pool.in_use());
    port.model.assert_no_faults();
    close(port);
}

#[test]
fn rss_spreads_flows_over_four_queues_as_toeplitz_and_the_table_say() {
    rss_run(4, None);
}

#[test]
fn rss_follows_an_updated_table_over_sixteen_queues() {
    rss_run(16, Some((0..16).rev().collect()));
}

#[test]
fn stats_count_packets_bytes_and_errors_and_reset() {
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
