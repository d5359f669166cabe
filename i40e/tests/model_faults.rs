//! Faults injected into the independent X710 model end in recovery or a typed [`i40e::Error`], and nothing leaks:
//! the pool is full and the model's IOVA map empty after.

mod common;

use pktio::TypedQueues;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use hugepage::Allocator;
use i40e::{Error, I40e};
use mempool::PacketBatch;
use nicsim::{AqRc, X710Config, X710RxError, X710};
use pktio::{EthDev, PortConfig, RxQueue, TxQueue};

/// Opcodes (docs/hw/i40e.md §6).
const GET_SWITCH_CONFIG: u16 = 0x0200;
const SET_VSI_PROMISC: u16 = 0x0254;

fn started(pool: &mempool::Mempool) -> Port {
    let mut port = open_one(X710Config::default());
    port.dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
    port.dev.start(pool).unwrap();
    wait_for(5, "link up", || port.dev.link().up);
    port
}

/// Stops and closes the port: nothing may be left behind, and the close itself must not upset the firmware.
fn finish(mut port: Port, pool: &mempool::Mempool) {
    let _ = port.dev.stop();
    let map = port.model.dma_mapper();
    drop(port.dev);
    assert!(pool.is_full(), "{} buffers leaked", pool.in_use());
    assert_eq!(map.region_count(), 0, "DMA mappings left after close");
    port.model.assert_no_faults();
}

#[test]
fn an_admin_error_in_bring_up_is_a_typed_error_naming_the_opcode_and_leaks_nothing() {
    let (bar, model) = X710::new(X710Config::default());
    model.inject_aq_error(Some(GET_SWITCH_CONFIG), AqRc::Eio);
    let thread = model.start_thread();
    let err = I40e::new(Arc::new(bar), model.dma_mapper(), Allocator::no_huge(), options("model0", &model))
        .expect_err("bring-up must fail");
    match err.driver_error::<Error>() {
        Some(Error::AdminQueue { opcode, status, .. }) => assert_eq!((*opcode, *status), (GET_SWITCH_CONFIG, 5)),
        other => panic!("{err}: {other:?}"),
    }
    assert!(err.to_string().contains("0x0200"), "{err}");
    assert_eq!(model.dma_mapper().region_count(), 0, "a failed bring-up leaves no DMA mapping");
    drop(thread);
    model.assert_no_faults();
}

#[test]
fn an_admin_error_at_run_time_is_typed_and_the_next_command_works() {
    let pool = pool("fault-aq", 1023);
    let mut port = started(&pool);
    port.model.inject_aq_error(Some(SET_VSI_PROMISC), AqRc::Eperm);
    let err = port.dev.set_promiscuous(true).expect_err("the firmware refused");
    match err.driver_error::<Error>() {
        Some(Error::AdminQueue { opcode, status, .. }) => assert_eq!((*opcode, *status), (SET_VSI_PROMISC, 1)),
        other => panic!("{err}: {other:?}"),
    }
    assert!(!port.dev.promiscuous());
    port.dev.set_promiscuous(true).unwrap();
    assert!(port.dev.promiscuous());
    assert_ne!(port.model.promiscuous_flags() & 0x1, 0, "unicast promiscuous on in the firmware");
    port.model.assert_no_faults();
    finish(port, &pool);
}

#[test]
fn a_stalled_admin_queue_times_out_naming_the_opcode_then_recovers() {
    let pool = pool("fault-stall", 1023);
    let mut port = started(&pool);
    port.model.stall_admin_queue(true, false);
    let err = port.dev.set_promiscuous(true).expect_err("the firmware never answers");
    match err.driver_error::<Error>() {
        Some(Error::AdminTimeout { opcode, .. }) => assert_eq!(*opcode, SET_VSI_PROMISC),
        other => panic!("{err}: {other:?}"),
    }
    assert!(err.to_string().contains("0x0254"), "{err}");
    port.model.stall_admin_queue(false, false);
    // The firmware takes the late command; the driver's next one still completes.
    wait_for(5, "the next command to go through", || port.dev.set_promiscuous(false).is_ok());
    port.model.assert_no_faults();
    finish(port, &pool);
}

#[test]
fn a_link_flap_reaches_link_through_the_event_queue() {
    let pool = pool("fault-flap", 1023);
    let port = started(&pool);
    let speed = port.dev.link().speed_mbps;
    assert_eq!(speed, 10_000);
    port.model.link_flap(Duration::from_millis(300));
    wait_for(5, "link down", || !port.dev.link().up);
    wait_for(5, "link up again", || port.dev.link().up);
    assert_eq!(port.dev.link().speed_mbps, speed);
    port.model.assert_no_faults();
    finish(port, &pool);
}

#[test]
fn a_hung_tx_queue_fills_and_stop_still_frees_every_buffer() {
    let pool = pool("fault-hang", 1023);
    let mut port = started(&pool);
    let mac = port.dev.mac_addr().0;
    port.model.unwire();
    port.model.tx_hang(Some(0), true);
    let mut tx = port.dev.tx_queue_typed(0).unwrap();
    let frame = udp_frame([2, 0, 0, 0, 0, 9], mac, ([1, 1, 1, 1], [2, 2, 2, 2]), (1, 2), 64);
    let mut sent = 0;
    for _ in 0..8 {
        let mut b = PacketBatch::new();
        for _ in 0..32 {
            b.push(mbuf_from(&pool, &frame)).unwrap();
        }
        sent += tx.tx_burst(&mut b);
        drop(b);
    }
    assert!(sent < 256, "a hung queue took {sent} frames into a 128-descriptor ring");
    assert!(port.model.take_tx().is_empty(), "nothing leaves a hung queue");
    drop(tx);
    // Stopping either disables the queue or says which one would not: both leave no buffer behind.
    match port.dev.stop() {
        Ok(()) => {}
        Err(e) => assert!(e.driver_error::<Error>().is_some(), "untyped: {e}"),
    }
    port.model.tx_hang(Some(0), false);
    // The port starts again and sends.
    port.dev.start(&pool).unwrap();
    wait_for(5, "link up after the restart", || port.dev.link().up);
    let mut tx = port.dev.tx_queue_typed(0).unwrap();
    let mut b = PacketBatch::new();
    b.push(mbuf_from(&pool, &frame)).unwrap();
    assert_eq!(tx.tx_burst(&mut b), 1);
    let mut out = Vec::new();
    wait_for(5, "a frame after recovery", || {
        out.extend(port.model.take_tx());
        !out.is_empty()
    });
    assert_eq!(out, vec![frame]);
    drop(tx);
    port.model.assert_no_faults();
    finish(port, &pool);
}

#[test]
fn damaged_frames_are_dropped_and_counted_and_good_ones_still_arrive() {
    let pool = pool("fault-crc", 1023);
    let mut port = started(&pool);
    let mac = port.dev.mac_addr().0;
    let mut rx = port.dev.rx_queue_typed(0).unwrap();
    let good = udp_frame(mac, [2, 0, 0, 0, 0, 9], ([1, 1, 1, 1], [2, 2, 2, 2]), (1, 2), 100);
    for k in 0..6 {
        if k % 2 == 0 {
            assert!(port.model.inject_error(&good, X710RxError::Crc));
        } else {
            assert!(port.model.inject(&good));
        }
    }
    let mut got = PacketBatch::with_capacity(8);
    wait_for(5, "the good frames", || {
        rx.rx_burst(&mut got);
        got.len() >= 3
    });
    std::thread::sleep(Duration::from_millis(20));
    rx.rx_burst(&mut got);
    assert_eq!(got.len(), 3, "only the good frames are delivered");
    assert!(got.iter().all(|m| bytes(m) == good));
    drop(got);
    wait_for(2, "the CRC errors counted", || port.dev.stats().ierrors == 3);
    let crc = port.dev.xstats().into_iter().find(|x| x.name == "rx_crc_errors").unwrap().value;
    assert_eq!(crc, 3, "GLPRT_CRCERRS");
    drop(rx);
    port.model.assert_no_faults();
    finish(port, &pool);
}

#[test]
fn a_pulled_cable_takes_the_link_down_and_back() {
    let pool = pool("fault-cable", 1023);
    let port = started(&pool);
    port.model.set_cable(false);
    wait_for(5, "link down", || !port.dev.link().up);
    port.model.set_cable(true);
    wait_for(5, "link up", || port.dev.link().up);
    assert_eq!(port.dev.link().speed_mbps, 10_000);
    port.model.assert_no_faults();
    finish(port, &pool);
}
