//! Bring-up: one port of the default model comes up, starts, links at its speed, hands each queue out once and
//! refuses to stop while one is out, then stops and closes leaving nothing behind.

use pktio::{EthDev, PortConfig, TypedQueues};

use super::{pool_for, Conformance};
use crate::wait_for;

pub fn one_port_comes_up_links_starts_and_stops_clean<P: Conformance>() {
    let mut port = P::open_one();
    port.assert_no_faults();
    let pool = pool_for::<P>("bringup", 1023);
    port.dev_mut().configure(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
    port.dev_mut().start(&pool).unwrap();
    assert!(port.dev().is_started());
    wait_for(5, "link up", || port.dev().link().up);
    assert_eq!(port.dev().link().speed_mbps, P::SPEC.link_mbps, "{}: the model's link speed", P::SPEC.name);
    let in_rings = pool.in_use();
    assert!(in_rings > 0 && in_rings <= 128, "{}: {in_rings} buffers posted to a 128-descriptor ring", P::SPEC.name);

    let rx = port.dev_mut().rx_queue_typed(0).unwrap();
    assert!(port.dev_mut().rx_queue_typed(0).is_err(), "{}: RX queue 0 handed out twice", P::SPEC.name);
    assert!(port.dev_mut().tx_queue_typed(1).is_err(), "{}: a TX queue that was not configured", P::SPEC.name);
    let err = port.dev_mut().stop().expect_err("stop with a queue out");
    assert!(err.to_string().contains("drop"), "{}: {err}", P::SPEC.name);
    drop(rx);
    port.dev_mut().stop().unwrap();
    assert!(!port.dev().is_started());
    assert!(pool.is_full(), "{}: {} buffers left in a stopped port", P::SPEC.name, pool.in_use());
    port.assert_no_faults();
    port.close();
}
