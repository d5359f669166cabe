//! The i40e data path against the independent X710 model: frames byte for byte each way, 9000-byte jumbo frames
//! both ways, RSS spread as Toeplitz and the table say (the hash computed here with `nicsim::net::toeplitz`, not
//! by either side), and a 48-bit statistics counter wrapping. Every test ends with the pool full and no fault.

mod common;

use common::*;
use mempool::{ol_flags, PacketBatch};
use nicsim::x710::regs::stat;
use nicsim::X710Config;
use pktio::TypedQueues;
use pktio::{EthDev, PortConfig, RssConfig, RssHashFunctions, RxQueue, TxQueue};
use std::time::Duration;

const IPS: ([u8; 4], [u8; 4]) = ([10, 0, 0, 1], [10, 0, 0, 2]);

fn started_pair(config: &PortConfig, pool: &mempool::Mempool) -> (Port, Port) {
    let (mut a, mut b) = open_pair(X710Config::default());
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
    // The model counts a delivery after its write-back, which the driver may see first: poll for the count.
    wait_for(2, "the model's counters", || {
        let c0 = a.model.counters();
        (c0.tx_sent, c0.rx_delivered) == (5, 5)
    });
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
    // A frame from the wire one byte over the largest the port takes (MTU + 26 with the CRC, docs/hw/i40e.md
    // docs/hw/i40e.md §7.3) is not delivered whole.
    let over = udp_frame(mac1, mac0, IPS, (1, 2), 9000 + 26 - 4 + 1);
    let delivered = b.model.counters().rx_delivered;
    assert!(b.model.inject(&over));
    wait_for(5, "the model to take the frame", || b.model.rx_pending() == 0);
    let mut b2 = PacketBatch::new();
    std::thread::sleep(Duration::from_millis(10));
    rx1.rx_burst(&mut b2);
    assert!(
        b2.iter().all(|m| m.pkt_len() as usize != over.len()),
        "a frame beyond the port's largest was delivered whole ({} delivered before, {} after)",
        delivered,
        b.model.counters().rx_delivered
    );
    drop((rx0, tx0, rx1, tx1, b2));
    a.dev.stop().unwrap();
    b.dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers leaked", pool.in_use());
    a.model.assert_no_faults();
    b.model.assert_no_faults();
    close(a);
    close(b);
}

fn rss_run(nq: u16, reta: Option<Vec<u16>>) {
    let key: Vec<u8> = (0..52u8).map(|i| i.wrapping_mul(37).wrapping_add(11)).collect();
    let mut port = open_one(X710Config::default());
    let pool = pool("model-rss", 4095);
    let config = PortConfig {
        rx_queues: nq,
        tx_queues: 1,
        rx_desc: 128,
        tx_desc: 64,
        rss: Some(RssConfig { key: Some(key.clone()), functions: RssHashFunctions::ALL }),
        ..Default::default()
    };
    port.dev.configure(&config).unwrap();
    port.dev.start(&pool).unwrap();
    let size = port.dev.info().reta_size as usize;
    assert_eq!(size, 512, "the model's table size (capability 0x40)");
    let table: Vec<u16> = match &reta {
        Some(t) => {
            port.dev.reta_update(t).unwrap();
            (0..size).map(|e| t[e % t.len()]).collect()
        }
        None => (0..size).map(|e| (e % nq as usize) as u16).collect(),
    };
    let mac = port.dev.mac_addr().0;
    let mut queues: Vec<_> = (0..nq).map(|q| port.dev.rx_queue_typed(q).unwrap()).collect();
    let mut expected = vec![Vec::new(); nq as usize];
    for (i, flow) in drvtest::rss_flows(mac, 200).into_iter().enumerate() {
        let hash = nicsim::net::toeplitz(&key, &flow.tuple);
        assert!(port.model.inject(&flow.frame));
        expected[table[hash as usize % size] as usize].push((hash, flow.frame));
        if i % 32 == 31 {
            wait_for(5, "the model to take the frames", || port.model.rx_pending() == 0);
        }
    }
    wait_for(5, "every frame delivered", || port.model.counters().rx_delivered == 200);
    drvtest::assert_rss_spread(&mut queues, &expected);
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
fn a_48_bit_counter_wraps_and_the_driver_keeps_counting() {
    let mut port = open_one(X710Config::default());
    let pool = pool("model-wrap", 1023);
    port.dev.configure(&PortConfig { rx_desc: 128, tx_desc: 64, ..Default::default() }).unwrap();
    port.dev.start(&pool).unwrap();
    let base = |dev: &i40e::I40e<nicsim::X710Bar>, name: &str| {
        dev.xstats().into_iter().find(|x| x.name == name).unwrap().value
    };
    let uprc = stat::GLPRT_UPRC + 8 * usize::from(port.model.config().port);
    // Five below the 48-bit limit: the driver reads it once, then ten frames carry it over.
    port.model.set_stat(uprc, (1 << 48) - 5);
    let before = base(&port.dev, "rx_unicast_packets");
    let gorc = stat::GLPRT_GORC + 8 * usize::from(port.model.config().port);
    port.model.set_stat(gorc, (1 << 48) - 100);
    let bytes_before = base(&port.dev, "rx_good_bytes");
    let mut rx = port.dev.rx_queue_typed(0).unwrap();
    let mac = port.dev.mac_addr().0;
    let frame = udp_frame(mac, [2, 0, 0, 0, 0, 9], IPS, (1, 2), 100);
    for _ in 0..10 {
        assert!(port.model.inject(&frame));
    }
    let got = receive(&mut rx, 10);
    drop(got);
    assert!(port.model.stat(uprc) < 10, "the model's counter wrapped: {}", port.model.stat(uprc));
    assert_eq!(base(&port.dev, "rx_unicast_packets") - before, 10, "ten frames counted across the wrap");
    // GLPRT_GORC counts each frame with its 4-byte FCS; the driver takes the CRC off again, as DPDK does
    // (docs/hw/i40e.md §13), across the wrap.
    assert!(port.model.stat(gorc) < 1000, "the model's octet counter wrapped");
    assert_eq!(base(&port.dev, "rx_good_bytes") - bytes_before, 10 * 100);
    drop(rx);
    port.dev.stop().unwrap();
    assert!(pool.is_full());
    port.model.assert_no_faults();
    close(port);
}

#[test]
fn a_paged_hmc_carries_the_contexts_as_a_direct_one_does() {
    use i40e::hmc::HmcMode;
    let pool = pool("model-paged", 1023);
    let mut ports = Vec::new();
    let ((b0, m0), (b1, m1)) = nicsim::X710::pair(X710Config::default());
    for (name, bar, model) in [("paged0", b0, m0), ("paged1", b1, m1)] {
        let thread = model.start_thread();
        let options = i40e::Options { hmc_mode: HmcMode::Paged, ..options(name, &model) };
        let dev =
            i40e::I40e::new(std::sync::Arc::new(bar), model.dma_mapper(), hugepage::Allocator::no_huge(), options)
                .expect("bring-up with a paged HMC");
        assert!(dev.hmc().unwrap().is_paged());
        ports.push(Port { dev, thread, model });
    }
    let mut b = ports.pop().unwrap();
    let mut a = ports.pop().unwrap();
    for p in [&mut a, &mut b] {
        p.dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
        p.dev.start(&pool).unwrap();
    }
    wait_for(5, "links", || a.dev.link().up && b.dev.link().up);
    let (mac0, mac1) = (a.dev.mac_addr().0, b.dev.mac_addr().0);
    let mut tx0 = a.dev.tx_queue_typed(0).unwrap();
    let mut rx1 = b.dev.rx_queue_typed(0).unwrap();
    let f = udp_frame(mac1, mac0, IPS, (7, 8), 300);
    let mut out = PacketBatch::new();
    out.push(mbuf_from(&pool, &f)).unwrap();
    assert_eq!(tx0.tx_burst(&mut out), 1);
    let got = receive(&mut rx1, 1);
    assert_eq!(bytes(got.iter().next().unwrap()), f);
    drop((got, tx0, rx1));
    a.dev.stop().unwrap();
    b.dev.stop().unwrap();
    assert!(pool.is_full());
    close(a);
    close(b);
}
