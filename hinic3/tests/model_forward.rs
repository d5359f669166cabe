//! A threaded forwarding run between two model ports, each model in its own thread like hardware: a generator on
//! port 0 sends, port 1 forwards everything back out, port 0 receives. Counts must be exact and the pool full
//! after. This is the hinic3 driver on the independent SP670 model (nicsim). `HINIC3_FWD_PACKETS=n` sets the count
//! (the acceptance run: `HINIC3_FWD_PACKETS=10000000 cargo test --release -p hinic3 --test model_forward`); without
//! it, 100 000 in debug builds and 10 million in release builds.
mod common;

use common::*;
use nicsim::Sp670Config;
use pktio::TypedQueues;
use pktio::{EthDev, PortConfig};

#[test]
fn threaded_forwarding_between_two_model_ports_counts_exactly() {
    let total = testkit::forward_packets("HINIC3_FWD_PACKETS");
    let pool = pool("model-forward", 16383);
    let (mut a, mut b) = open_pair(Sp670Config::default());
    let config = PortConfig { rx_desc: 4096, tx_desc: 4096, ..Default::default() };
    for p in [&mut a, &mut b] {
        p.dev.configure(&config).unwrap();
        p.dev.start(&pool).unwrap();
    }
    wait_for(5, "links", || a.dev.link().up && b.dev.link().up);
    let macs = (a.dev.mac_addr().0, b.dev.mac_addr().0);
    let q0 = (a.dev.rx_queue_typed(0).unwrap(), a.dev.tx_queue_typed(0).unwrap());
    let q1 = (b.dev.rx_queue_typed(0).unwrap(), b.dev.tx_queue_typed(0).unwrap());
    testkit::forward_run(q0, q1, macs, &pool, total);
    let (s0, s1) = (a.dev.stats(), b.dev.stats());
    assert_eq!((s0.opackets, s0.ipackets, s1.ipackets, s1.opackets), (total, total, total, total));
    assert_eq!((s0.imissed, s1.imissed, s0.ierrors, s1.ierrors), (0, 0, 0, 0));
    assert_eq!(s0.obytes, total * 64);
    let (c0, c1) = (a.model.counters(), b.model.counters());
    assert_eq!((c0.tx_sent, c0.rx_delivered, c1.tx_sent, c1.rx_delivered), (total, total, total, total));
    assert_eq!((c0.rx_no_buffer, c1.rx_no_buffer, c0.tx_dropped, c1.tx_dropped), (0, 0, 0, 0));
    // The device's own vport counters agree (L2NIC GET_VPORT_STAT, read through the driver).
    assert_eq!((a.dev.xstats()[0].value, b.dev.xstats()[6].value), (total, total));
    a.dev.stop().unwrap();
    b.dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers leaked", pool.in_use());
    a.model.assert_no_faults();
    b.model.assert_no_faults();
    close(a);
    close(b);
}
