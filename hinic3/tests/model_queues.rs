//! Per-queue start and stop (docs/hw/hinic3.md §14.6, DPDK's `rte_eth_dev_{rx,tx}_queue_{start,stop}`) against the
//! independent SP670 model: the RQ flush brings every buffer back, the last RX queue turns the vport off, a stopped
//! queue leaves the RSS table, and a restarted queue carries frames again.

mod common;

use common::*;
use mempool::PacketBatch;
use nicsim::Sp670Config;
use pktio::{Error, EthDev, PortConfig, RssConfig, RssHashFunctions, RxQueue, TxQueue, TypedQueues};

const IPS: ([u8; 4], [u8; 4]) = ([10, 0, 0, 1], [10, 0, 0, 2]);

fn send(tx: &mut impl TxQueue, pool: &mempool::Mempool, frames: &[Vec<u8>]) {
    for f in frames {
        let mut out = PacketBatch::new();
        out.push(mbuf_from(pool, f)).unwrap();
        assert_eq!(tx.tx_burst(&mut out), 1);
    }
}

#[test]
fn one_queue_stops_and_starts_while_the_port_runs() {
    let pool = pool("model-queues", 2047);
    let (mut a, mut b) = open_pair(Sp670Config::default());
    let config = PortConfig { rx_desc: 256, tx_desc: 256, ..Default::default() };
    for p in [&mut a, &mut b] {
        p.dev.configure(&config).unwrap();
        p.dev.start(&pool).unwrap();
    }
    wait_for(30, "both links up", || a.dev.link().up && b.dev.link().up);
    let (mac0, mac1) = (a.dev.mac_addr().0, b.dev.mac_addr().0);
    let frames: Vec<_> = (0..8).map(|i| udp_frame(mac1, mac0, IPS, (i, 9), 100 + i as usize)).collect();
    let mut tx = a.dev.tx_queue_typed(0).unwrap();
    let rx = b.dev.rx_queue_typed(0).unwrap();

    // A queue with a live handle does not stop.
    assert!(matches!(b.dev.rx_queue_stop(0), Err(Error::QueuesInUse { .. })));
    drop(rx);
    b.dev.rx_queue_stop(0).unwrap();
    assert_eq!(b.dev.rx_buffers_flushed(), 255, "every posted buffer came back from the RQ flush");
    assert!(b.dev.rx_queue_typed(0).is_err(), "a stopped queue is not handed out");
    // The only RX queue stopped: the vport is off, frames are refused before any RQ.
    let filtered = b.model.counters().rx_filtered;
    send(&mut tx, &pool, &frames[..4]);
    wait_for(30, "frames refused by the disabled vport", || b.model.counters().rx_filtered == filtered + 4);

    b.dev.rx_queue_start(0).unwrap();
    let mut rx = b.dev.rx_queue_typed(0).unwrap();
    // The start posted the buffers again: the device takes frames before the application's first burst.
    let delivered = b.model.counters().rx_delivered;
    send(&mut tx, &pool, &frames[4..]);
    wait_for(30, "frames in the restarted RQ", || b.model.counters().rx_delivered == delivered + 4);
    let got = receive(&mut rx, 4);
    assert_eq!(got.iter().map(bytes).collect::<Vec<_>>(), frames[4..].to_vec(), "byte for byte after the restart");
    drop(got);

    // TX: stop drains what was queued; the stopped queue is not handed out; it starts again.
    send(&mut tx, &pool, &frames[..2]);
    drop(tx);
    a.dev.tx_queue_stop(0).unwrap();
    assert!(a.dev.tx_queue_typed(0).is_err());
    let got = receive(&mut rx, 2);
    assert_eq!(got.iter().map(bytes).collect::<Vec<_>>(), frames[..2].to_vec(), "sent before the stop returned");
    drop(got);
    a.dev.tx_queue_start(0).unwrap();
    let mut tx = a.dev.tx_queue_typed(0).unwrap();
    send(&mut tx, &pool, &frames[2..3]);
    assert_eq!(receive(&mut rx, 1).iter().map(bytes).collect::<Vec<_>>(), frames[2..3].to_vec());
    drop((tx, rx));
    a.model.assert_no_faults();
    b.model.assert_no_faults();
    close(a);
    close(b);
}

#[test]
fn a_stopped_rss_queue_leaves_the_indirection_table_and_returns() {
    let pool = pool("model-queues-rss", 4095);
    let (mut a, mut b) = open_pair(Sp670Config::default());
    let rss = RssConfig { key: None, functions: RssHashFunctions::ALL };
    let config =
        PortConfig { rx_queues: 4, tx_queues: 1, rx_desc: 256, tx_desc: 256, rss: Some(rss), ..Default::default() };
    a.dev.configure(&PortConfig { rx_desc: 256, tx_desc: 256, ..Default::default() }).unwrap();
    b.dev.configure(&config).unwrap();
    for p in [&mut a, &mut b] {
        p.dev.start(&pool).unwrap();
    }
    wait_for(30, "both links up", || a.dev.link().up && b.dev.link().up);
    let (mac0, mac1) = (a.dev.mac_addr().0, b.dev.mac_addr().0);
    let flows: Vec<_> = (0..64u16).map(|i| udp_frame(mac1, mac0, IPS, (1000 + 7 * i, 9), 80)).collect();
    let mut tx = a.dev.tx_queue_typed(0).unwrap();
    b.dev.rx_queue_stop(1).unwrap();
    let mut rxs: Vec<_> = [0u16, 2, 3].iter().map(|&q| b.dev.rx_queue_typed(q).unwrap()).collect();
    send(&mut tx, &pool, &flows);
    // Every flow reaches a running queue: none is hashed to the stopped one.
    let mut got = 0;
    wait_for(30, "64 frames on queues 0, 2 and 3", || {
        for r in rxs.iter_mut() {
            let mut inb = PacketBatch::new();
            got += r.rx_burst(&mut inb);
        }
        got == flows.len()
    });
    assert_eq!(b.model.counters().rx_no_buffer, 0);
    // Back in the table after its start: some flow lands on queue 1 again.
    b.dev.rx_queue_start(1).unwrap();
    let mut rx1 = b.dev.rx_queue_typed(1).unwrap();
    send(&mut tx, &pool, &flows);
    let mut on1 = 0;
    let mut all = 0;
    wait_for(30, "64 frames on the four queues", || {
        let mut inb = PacketBatch::new();
        let n = rx1.rx_burst(&mut inb);
        on1 += n;
        all += n;
        for r in rxs.iter_mut() {
            let mut inb = PacketBatch::new();
            all += r.rx_burst(&mut inb);
        }
        all == flows.len()
    });
    assert!(on1 > 0, "queue 1 takes its share again");
    drop((tx, rxs, rx1));
    a.model.assert_no_faults();
    b.model.assert_no_faults();
    close(a);
    close(b);
}
