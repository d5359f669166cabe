//! Above the 700 series' largest frame (9728 bytes with the CRC) nothing can be sent: a non-TSO packet over it is
//! taken, dropped and counted in `oerrors` at once (DPDK `i40e_prep_pkts`; docs/hw/i40e.md §19). Frames over the
//! receiving port's MTU are counted as RX over-size by the conformance suite (`tests/conformance.rs`).

mod common;

use common::*;
use mempool::PacketBatch;
use nicsim::X710Config;
use pktio::TypedQueues;
use pktio::{EthDev, PortConfig, TxQueue};

#[test]
fn a_packet_over_the_largest_frame_is_refused_and_counted_as_a_tx_error() {
    let pool = pool("oversize", 1023);
    let (mut a, mut b) = open_pair(X710Config::default());
    for p in [&mut a, &mut b] {
        p.dev.configure(&PortConfig { rx_desc: 256, tx_desc: 256, ..Default::default() }).unwrap();
        p.dev.start(&pool).unwrap();
    }
    wait_for(5, "links", || a.dev.link().up && b.dev.link().up);
    let (src, dst) = (a.dev.mac_addr().0, b.dev.mac_addr().0);
    let mut tx = a.dev.tx_queue_typed(0).unwrap();
    let mut batch = PacketBatch::new();
    batch.push(mbuf_from(&pool, &udp_frame(dst, src, ([1, 1, 1, 1], [2, 2, 2, 2]), (1, 2), 9800))).unwrap();
    assert_eq!(tx.tx_burst(&mut batch), 1, "taken, to be dropped");
    // A frame that fits, after it, still goes: the refusal held nothing back.
    let mut batch = PacketBatch::new();
    batch.push(mbuf_from(&pool, &udp_frame(dst, src, ([1, 1, 1, 1], [2, 2, 2, 2]), (1, 2), 1514))).unwrap();
    assert_eq!(tx.tx_burst(&mut batch), 1);
    let mut rx = b.dev.rx_queue_typed(0).unwrap();
    let got = receive(&mut rx, 1);
    assert_eq!(got.iter().map(|m| m.pkt_len()).collect::<Vec<_>>(), vec![1514]);
    drop(got);
    let s0 = a.dev.stats();
    assert_eq!((s0.opackets, s0.oerrors), (1, 1), "{s0:?}");
    drop((tx, rx));
    a.dev.stop().unwrap();
    b.dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers held", pool.in_use());
    close(a);
    close(b);
}
