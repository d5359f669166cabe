//! The threaded forwarding run between two model ports, each model in its own thread like hardware: a generator
//! on port 0 sends, port 1 forwards everything back out, port 0 receives and compares every byte. 100 000 packets
//! in debug builds, 10 million in release builds, or the count in the driver's `*_FWD_PACKETS` variable (the
//! acceptance run: `cargo test --release -p DRIVER --test conformance threaded`). Counts must be exact.

use pktio::{EthDev, PortConfig, TypedQueues};

use super::{finish, pool_for, started_pair, Conformance};
use crate::{forward_packets, forward_run};

pub fn threaded_forwarding_between_two_model_ports_counts_exactly<P: Conformance>() {
    let total = forward_packets(P::SPEC.fwd_packets_var);
    let pool = pool_for::<P>("forward", 16383);
    let config = PortConfig { rx_desc: 4096, tx_desc: 4096, ..Default::default() };
    let (mut a, mut b) = started_pair::<P>(&config, &pool);
    let macs = (a.dev().mac_addr().0, b.dev().mac_addr().0);
    let q0 = (a.dev_mut().rx_queue_typed(0).unwrap(), a.dev_mut().tx_queue_typed(0).unwrap());
    let q1 = (b.dev_mut().rx_queue_typed(0).unwrap(), b.dev_mut().tx_queue_typed(0).unwrap());
    forward_run(q0, q1, macs, &pool, total);
    let (s0, s1) = (a.dev().stats(), b.dev().stats());
    assert_eq!((s0.opackets, s0.ipackets, s1.ipackets, s1.opackets), (total, total, total, total), "{}", P::SPEC.name);
    assert_eq!((s0.imissed, s1.imissed, s0.ierrors, s1.ierrors), (0, 0, 0, 0), "{}", P::SPEC.name);
    assert_eq!((s0.obytes, s1.ibytes), (total * 64, total * 64), "{}", P::SPEC.name);
    let (c0, c1) = (a.counts(), b.counts());
    assert_eq!((c0.tx_sent, c0.rx_delivered, c1.tx_sent, c1.rx_delivered), (total, total, total, total));
    assert_eq!((c0.tx_dropped, c0.rx_dropped, c1.tx_dropped, c1.rx_dropped), (0, 0, 0, 0), "{}", P::SPEC.name);
    P::after_forward(&a, &b, total);
    finish(vec![a, b], &pool);
}
