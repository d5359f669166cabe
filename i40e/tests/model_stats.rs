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
    let gorc = stat::GLPRT_GORC + 8 * usize::from(port.model.config().port);
    port.model.set_stat(gorc, (1 << 48) - 100);
    // The presets are jumps no real traffic makes (2^48 packets in no bytes): counting starts after them.
    port.dev.reset_stats();
    let before = base(&port.dev, "rx_unicast_packets");
    let bytes_before = hw_xstat(&port.dev, "rx_good_bytes");
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
    assert_eq!(hw_xstat(&port.dev, "rx_good_bytes") - bytes_before, 10 * 100);
    drop(rx);
    port.dev.stop().unwrap();
    assert!(pool.is_full());
    port.model.assert_no_faults();
    close(port);
}

/// The hardware counter `name` (the last xstat of that name: the generic software ones come first).
fn hw_xstat(dev: &i40e::I40e<nicsim::X710Bar>, name: &str) -> u64 {
    dev.xstats().into_iter().rev().find(|x| x.name == name).unwrap_or_else(|| panic!("no xstat {name}")).value
}

#[test]
fn ierrors_sums_as_dpdk_does_gl_rxerr1_in_illerrc_out() {
    let mut port = open_one(X710Config::default());
    let pool = pool("model-ierrors", 1023);
    port.dev.configure(&PortConfig { rx_desc: 128, tx_desc: 64, ..Default::default() }).unwrap();
    port.dev.start(&pool).unwrap();
    let before = port.dev.stats().ierrors;
    let p = usize::from(port.model.config().port);
    let pf = usize::from(port.model.config().pf_id);
    // GLPRT_ILLERRC counts illegal bytes, not packets: DPDK's i40e_dev_stats_get leaves it out of ierrors.
    port.model.set_stat(stat::GLPRT_ILLERRC + 8 * p, 5);
    assert_eq!(port.dev.stats().ierrors - before, 0, "ILLERRC is not in ierrors");
    // GL_RXERR1 of this PF (index 128 + pf_id, after the 128 VFs) is.
    port.model.set_stat(stat::GL_RXERR1 + 8 * (128 + pf), 3);
    port.model.set_stat(stat::GL_RXERR1 + 8 * pf, 100); // VF `pf`'s: not this PF's
    assert_eq!(port.dev.stats().ierrors - before, 3, "GL_RXERR1 of the PF is in ierrors");
    assert_eq!(hw_xstat(&port.dev, "rx_function_error_packets"), 3);
    port.dev.stop().unwrap();
    port.model.assert_no_faults();
    close(port);
}

#[test]
fn the_hardware_byte_xstats_leave_the_crc_out_as_dpdk_does() {
    let mut port = open_one(X710Config::default());
    let pool = pool("model-bytes", 1023);
    port.dev.configure(&PortConfig { rx_desc: 128, tx_desc: 64, ..Default::default() }).unwrap();
    port.dev.start(&pool).unwrap();
    let (port_before, vsi_before) = (hw_xstat(&port.dev, "rx_good_bytes"), hw_xstat(&port.dev, "vsi_rx_good_bytes"));
    let mut rx = port.dev.rx_queue_typed(0).unwrap();
    let mac = port.dev.mac_addr().0;
    let frame = udp_frame(mac, [2, 0, 0, 0, 0, 9], IPS, (1, 2), 100);
    for _ in 0..10 {
        assert!(port.model.inject(&frame));
    }
    drop(receive(&mut rx, 10));
    let p = usize::from(port.model.config().port);
    assert_eq!(port.model.stat(stat::GLPRT_GORC + 8 * p), 10 * 104, "the MAC counts the FCS");
    assert_eq!(hw_xstat(&port.dev, "rx_good_bytes") - port_before, 10 * 100, "GLPRT_GORC less 4 per packet");
    assert_eq!(hw_xstat(&port.dev, "vsi_rx_good_bytes") - vsi_before, 10 * 100, "GLV_GORC less 4 per packet");
    drop(rx);
    port.dev.stop().unwrap();
    port.model.assert_no_faults();
    close(port);
}

#[test]
fn the_x710_for_10gbe_qsfp_is_advertised_at_10g() {
    // 0x1585: four 10G lanes behind a QSFP+ cage, no 40G PHY type (DPDK i40e_dev_info_get: 1G | 10G).
    assert_eq!(i40e::max_speed_of(0x8086, 0x1585), Some(10_000));
    assert_eq!(i40e::max_speed_of(0x8086, 0x1583), Some(40_000), "the XL710 QSFP+ is the 40G part");
}
