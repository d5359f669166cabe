//! Frames shorter than the SQ's 32-byte minimum (docs/hw/hinic3.md §18) leave padded with zeros to 32, as Linux's
//! hinic3 sends them; the queue keeps working after them (the model stops an SQ at a shorter WQE), and what cannot be
//! padded is dropped and counted.

mod common;

use pktio::TypedQueues;

use common::*;
use hinic3::rxtx::MIN_TX_LEN;
use mempool::PacketBatch;
use nicsim::Sp670Config;
use pktio::{EthDev, PortConfig, TxQueue};

#[test]
fn frames_of_1_to_31_bytes_leave_padded_to_32_and_the_good_ones_after_them_still_arrive() {
    let pool = pool("short-tx", 1023);
    let mut port = open_one(Sp670Config::default());
    let config = PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() };
    port.dev.configure(&config).unwrap();
    port.dev.start(&pool).unwrap();
    wait_for(5, "link up", || port.dev.link().up);
    port.model.unwire();
    let mac = port.dev.mac_addr().0;
    let mut tx = port.dev.tx_queue_typed(0).unwrap();
    let good = udp_frame([2, 0, 0, 0, 0, 9], mac, ([1, 1, 1, 1], [2, 2, 2, 2]), (1, 2), 64);
    // What the issue sent: a 1-byte frame, then good ones; then every short length, in bursts the fast run takes
    // (groups of four) and one at a time.
    let mut want: Vec<Vec<u8>> = Vec::new();
    let mut frames: Vec<Vec<u8>> = vec![vec![0xAB]];
    frames.extend(std::iter::repeat_n(good.clone(), 10));
    frames.extend((1..MIN_TX_LEN as usize).map(|n| (0..n as u8).map(|b| b.wrapping_mul(7) | 1).collect()));
    frames.extend(std::iter::repeat_n(good.clone(), 4));
    for f in &frames {
        let mut padded = f.clone();
        padded.resize(padded.len().max(MIN_TX_LEN as usize), 0);
        want.push(padded);
    }
    for chunk in frames.chunks(8) {
        let mut b = PacketBatch::new();
        for f in chunk {
            b.push(mbuf_from(&pool, f)).unwrap();
        }
        assert_eq!(tx.tx_burst(&mut b), chunk.len());
    }
    // An empty frame cannot be padded into anything: dropped and counted.
    let mut b = PacketBatch::new();
    b.push(pool.alloc().expect("buffer")).unwrap();
    assert_eq!(tx.tx_burst(&mut b), 1);
    let mut out = Vec::new();
    wait_for(5, "every frame on the wire", || {
        out.extend(port.model.take_tx());
        out.len() >= want.len()
    });
    assert_eq!(out.len(), want.len());
    for (k, (got, exp)) in out.iter().zip(&want).enumerate() {
        assert_eq!(got, exp, "frame {k} of {} bytes before padding", frames[k].len());
    }
    let s = port.dev.stats();
    assert_eq!((s.opackets, s.oerrors), (want.len() as u64, 1), "{s:?}");
    drop(tx);
    port.dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers held", pool.in_use());
    close(port);
}
