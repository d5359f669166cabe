//! A threaded forwarding run between two model ports, each model in its own thread like hardware: a generator on
//! port 0 sends, port 1 forwards everything back out, port 0 receives. Counts must be exact and the pool full
//! after. 10 million packets in release builds (`cargo test --release -p ixgbe --test forward`); fewer in debug
//! builds, or `IXGBE_FWD_PACKETS=n`.
mod common;

use pktio::TypedQueues;
use std::time::Duration;

use common::*;
use nicsim::X540Config;
use pktio::{EthDev, PortConfig};

#[test]
fn threaded_forwarding_between_two_model_ports_counts_exactly() {
    let total = testkit::forward_packets("IXGBE_FWD_PACKETS");
    let ((mut d0, p0), (mut d1, p1)) = pair(X540Config::default());
    let pool = pool(16384, 2048);
    let config = PortConfig { rx_desc: 4096, tx_desc: 4096, ..Default::default() };
    start(&mut d0, &config, &pool);
    start(&mut d1, &config, &pool);
    wait_for("links", Duration::from_secs(2), || d0.link().up && d1.link().up);
    let macs = (d0.mac_addr().0, d1.mac_addr().0);
    let q0 = (d0.rx_queue_typed(0).unwrap(), d0.tx_queue_typed(0).unwrap());
    let q1 = (d1.rx_queue_typed(0).unwrap(), d1.tx_queue_typed(0).unwrap());
    let m0 = p0.start_thread();
    let m1 = p1.start_thread();
    testkit::forward_run(q0, q1, macs, &pool, total);
    m0.stop().unwrap();
    m1.stop().unwrap();
    let (s0, s1) = (d0.stats(), d1.stats());
    assert_eq!((s0.opackets, s0.ipackets, s1.ipackets, s1.opackets), (total, total, total, total));
    assert_eq!((s0.imissed, s1.imissed, s0.ierrors, s1.ierrors), (0, 0, 0, 0));
    assert_eq!(s0.obytes, total * 64);
    let c0 = p0.counters();
    assert_eq!((c0.tx_sent, c0.rx_delivered), (total, total));
    d0.stop().unwrap();
    d1.stop().unwrap();
    assert!(pool.is_full(), "{} buffers leaked", pool.in_use());
    p0.assert_no_faults();
    p1.assert_no_faults();
}
