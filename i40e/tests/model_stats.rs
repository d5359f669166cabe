//! The i40e statistics particular to the X710: a 48-bit counter wrapping while the driver keeps counting, the
//! octet counter's FCS taken off. The port statistics every driver has are in the conformance suite
//! (conformance.rs).

mod common;

use common::*;
use nicsim::x710::regs::stat;
use nicsim::X710Config;
use pktio::TypedQueues;
use pktio::{EthDev, PortConfig};

const IPS: ([u8; 4], [u8; 4]) = ([10, 0, 0, 1], [10, 0, 0, 2]);

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
