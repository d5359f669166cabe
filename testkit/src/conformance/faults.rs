//! The faults every model has: link changes reach `link()`, a hung TX queue fills without harm and a restart
//! recovers, damaged frames are dropped and counted. Each ends in recovery and nothing leaks.

use std::time::Duration;

use mempool::PacketBatch;
use pktio::{EthDev, PortConfig, RxQueue, TxQueue, TypedQueues};

use super::{finish, pool_for, started_one, Conformance};
use crate::{bytes, mbuf_from, udp_frame, wait_for};

fn small() -> PortConfig {
    PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }
}

pub fn a_link_flap_and_a_pulled_cable_reach_link<P: Conformance>() {
    let pool = pool_for::<P>("flap", 1023);
    let port = started_one::<P>(&small(), &pool);
    assert_eq!(port.dev().link().speed_mbps, P::SPEC.link_mbps);
    port.link_flap(Duration::from_millis(300));
    wait_for(5, "link down", || !port.dev().link().up);
    wait_for(5, "link up again", || port.dev().link().up);
    assert_eq!(port.dev().link().speed_mbps, P::SPEC.link_mbps, "{}: the speed after a flap", P::SPEC.name);
    port.set_cable(false);
    wait_for(5, "link down (cable out)", || !port.dev().link().up);
    port.set_cable(true);
    wait_for(5, "link up (cable in)", || port.dev().link().up);
    assert_eq!(port.dev().link().speed_mbps, P::SPEC.link_mbps, "{}: the speed with the cable back", P::SPEC.name);
    port.settle_link_events();
    finish(vec![port], &pool);
}

pub fn a_hung_tx_queue_fills_without_harm_and_a_restart_recovers<P: Conformance>() {
    let pool = pool_for::<P>("hang", 1023);
    let mut port = started_one::<P>(&small(), &pool);
    let mac = port.dev().mac_addr().0;
    port.unwire();
    port.set_tx_hang(0, true);
    let mut tx = port.dev_mut().tx_queue_typed(0).unwrap();
    let frame = udp_frame([2, 0, 0, 0, 0, 9], mac, ([1, 1, 1, 1], [2, 2, 2, 2]), (1, 2), 64);
    let burst = |tx: &mut <P::Dev as TypedQueues>::Tx, n: usize| {
        let mut b = PacketBatch::new();
        for _ in 0..n {
            b.push(mbuf_from(&pool, &frame)).unwrap();
        }
        tx.tx_burst(&mut b)
    };
    let sent: usize = (0..8).map(|_| burst(&mut tx, 32)).sum();
    assert!(sent <= 128, "{}: a hung queue took {sent} frames into a 128-descriptor ring", P::SPEC.name);
    assert_eq!(burst(&mut tx, 8), 0, "{}: a full hung ring takes nothing more", P::SPEC.name);
    assert!(port.take_tx().is_empty(), "{}: nothing leaves a hung queue", P::SPEC.name);
    drop(tx);
    // Stopping either drains the queue or says which one would not stop: both leave no buffer behind.
    if let Err(e) = port.dev_mut().stop() {
        assert!(e.driver_error::<P::Error>().is_some(), "{}: untyped: {e}", P::SPEC.name);
    }
    assert!(pool.is_full(), "{}: {} buffers held by a stopped port", P::SPEC.name, pool.in_use());
    port.set_tx_hang(0, false);
    // The port starts again and sends.
    port.dev_mut().start(&pool).unwrap();
    wait_for(5, "link up after the restart", || port.dev().link().up);
    let mut tx = port.dev_mut().tx_queue_typed(0).unwrap();
    assert_eq!(burst(&mut tx, 32), 32, "{}: a burst after the restart", P::SPEC.name);
    let mut out = Vec::new();
    wait_for(5, "32 frames after recovery", || {
        out.extend(port.take_tx());
        out.len() >= 32
    });
    assert_eq!(out, vec![frame.clone(); 32], "{}: the frames sent after the restart", P::SPEC.name);
    drop(tx);
    finish(vec![port], &pool);
}

pub fn damaged_frames_are_dropped_and_counted_and_good_ones_still_arrive<P: Conformance>() {
    let pool = pool_for::<P>("crc", 1023);
    let mut port = started_one::<P>(&small(), &pool);
    let mac = port.dev().mac_addr().0;
    let mut rx = port.dev_mut().rx_queue_typed(0).unwrap();
    let good = udp_frame(mac, [2, 0, 0, 0, 0, 9], ([1, 1, 1, 1], [2, 2, 2, 2]), (1, 2), 100);
    for k in 0..6 {
        if k % 2 == 0 {
            assert!(port.inject_bad_fcs(&good));
        } else {
            assert!(port.inject(&good));
        }
    }
    let mut got = PacketBatch::with_capacity(8);
    wait_for(5, "the good frames and the errors counted", || {
        rx.rx_burst(&mut got);
        got.len() >= 3 && port.rx_pending() == 0 && port.dev().stats().ierrors == 3
    });
    // Every frame taken and every error counted: nothing more is on its way.
    rx.rx_burst(&mut got);
    assert_eq!(got.len(), 3, "{}: only the good frames are delivered", P::SPEC.name);
    assert!(got.iter().all(|m| bytes(m) == good));
    drop(got);
    let crc = port.dev().xstats().into_iter().find(|x| x.name == P::SPEC.crc_xstat).map(|x| x.value);
    assert_eq!(crc, Some(3), "{}: {}", P::SPEC.name, P::SPEC.crc_xstat);
    assert_eq!(port.dev().stats().ipackets, 3, "{}", P::SPEC.name);
    drop(rx);
    finish(vec![port], &pool);
}
