//! Admin-queue faults injected into the independent X710 model end in recovery or a typed [`i40e::Error`] naming
//! the opcode, and nothing leaks: the pool is full and the model's IOVA map empty after. The faults every model has
//! (link flap, cable, TX hang, damaged frames) are in the conformance suite (conformance.rs).

mod common;

use std::sync::Arc;

use common::*;
use hugepage::Allocator;
use i40e::{Error, I40e};
use nicsim::{AqRc, X710Config, X710};
use pktio::{EthDev, PortConfig};

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

const GET_PHY_ABILITIES: u16 = 0x0600;

/// How the firmware answered each Get PHY Abilities since the log's `from`-th command.
fn phy_answers(port: &Port, from: usize) -> Vec<AqRc> {
    port.model.aq_log()[from..].iter().filter(|(op, _)| *op == GET_PHY_ABILITIES).map(|(_, rc)| *rc).collect()
}

#[test]
fn get_phy_abilities_answered_eagain_is_asked_again_and_start_succeeds() {
    let pool = pool("fault-phy-eagain", 1023);
    let mut port = started(&pool);
    port.dev.stop().unwrap();
    let from = port.model.aq_log().len();
    port.model.inject_aq_errors(Some(GET_PHY_ABILITIES), AqRc::Eagain, 3);
    port.dev.start(&pool).expect("a busy PHY (EAGAIN) is waited for, as DPDK does");
    let answers = phy_answers(&port, from);
    assert_eq!(answers[..4], [AqRc::Eagain, AqRc::Eagain, AqRc::Eagain, AqRc::Ok], "{answers:?}");
    wait_for(5, "link up", || port.dev.link().up);
    port.model.assert_no_faults();
    finish(port, &pool);
}

#[test]
fn get_phy_abilities_eagain_past_500_attempts_is_a_typed_error() {
    let pool = pool("fault-phy-eagain-long", 1023);
    let mut port = started(&pool);
    let from = port.model.aq_log().len();
    port.model.inject_aq_errors(Some(GET_PHY_ABILITIES), AqRc::Eagain, i40e::PHY_ABILITIES_ATTEMPTS + 10);
    let err = port.dev.set_link_up(false).expect_err("a PHY busy for longer than DPDK waits");
    match err.driver_error::<Error>() {
        Some(Error::AdminQueue { opcode, status, .. }) => assert_eq!((*opcode, *status), (GET_PHY_ABILITIES, 8)),
        other => panic!("{err}: {other:?}"),
    }
    assert_eq!(phy_answers(&port, from).len(), i40e::PHY_ABILITIES_ATTEMPTS as usize, "asked exactly 500 times");
    port.model.inject_aq_errors(Some(GET_PHY_ABILITIES), AqRc::Eagain, 0);
    port.model.assert_no_faults();
    finish(port, &pool);
}
