//! Control-plane faults injected into the independent SP670 model (management, mailbox, command queue, firmware
//! readiness) end in recovery or a typed [`hinic3::Error`] naming the module and command, and nothing leaks: the
//! pool is full and the model's IOVA map empty after. The faults every model has (link flap, cable, TX hang,
//! damaged frames) are in the conformance suite (conformance.rs).

mod common;

use std::time::Duration;

use common::*;
use hinic3::cmdq::ucode;
use hinic3::mgmt::{l2nic, module};
use hinic3::Error;
use nicsim::{Sp670, Sp670Config};
use pktio::{EthDev, PortConfig};

fn started(pool: &mempool::Mempool, rx_queues: u16) -> Port {
    let mut port = open_one(Sp670Config::default());
    let config = PortConfig { rx_queues, rx_desc: 128, tx_desc: 128, ..Default::default() };
    port.dev.configure(&config).unwrap();
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
fn a_firmware_error_in_bring_up_is_typed_naming_module_and_command_and_leaks_nothing() {
    let model = Sp670::new(Sp670Config::default());
    model.inject_mgmt_error(module::L2NIC, l2nic::GET_MAC, Some(0x0B));
    let err = open("model0", model.clone()).err().expect("bring-up must fail");
    match err.driver_error::<Error>() {
        Some(Error::Mgmt { module: m, command, status, .. }) => {
            assert_eq!((*m, *command, *status), (module::L2NIC, l2nic::GET_MAC, 0x0B))
        }
        other => panic!("{err}: {other:?}"),
    }
    assert!(err.to_string().contains("L2NIC 20"), "{err}");
    assert_eq!(model.dma_mapper().region_count(), 0, "a failed bring-up leaves no DMA mapping");
    model.assert_no_faults();
}

#[test]
fn a_firmware_error_at_run_time_is_typed_and_the_next_command_works() {
    let pool = pool("fault-mgmt", 1023);
    let mut port = started(&pool, 1);
    port.model.inject_mgmt_error(module::L2NIC, l2nic::SET_RX_MODE, Some(0x01));
    let err = port.dev.set_promiscuous(true).expect_err("the firmware refused");
    match err.driver_error::<Error>() {
        Some(Error::Mgmt { module: m, command, status, .. }) => {
            assert_eq!((*m, *command, *status), (module::L2NIC, l2nic::SET_RX_MODE, 1))
        }
        other => panic!("{err}: {other:?}"),
    }
    assert!(err.to_string().contains("L2NIC 7"), "{err}");
    assert!(!port.dev.promiscuous());
    port.model.inject_mgmt_error(module::L2NIC, l2nic::SET_RX_MODE, None);
    port.dev.set_promiscuous(true).unwrap();
    assert!(port.dev.promiscuous());
    finish(port, &pool);
}

#[test]
fn a_command_that_is_never_answered_times_out_naming_it_then_the_next_works() {
    let pool = pool("fault-stall", 1023);
    let mut port = started(&pool, 1);
    port.model.stall_mailbox(true);
    let err = port.dev.set_promiscuous(true).expect_err("the firmware never answers");
    match err.driver_error::<Error>() {
        Some(Error::MgmtTimeout { module: m, command, .. }) => {
            assert_eq!((*m, *command), (module::L2NIC, l2nic::SET_RX_MODE))
        }
        other => panic!("{err}: {other:?}"),
    }
    assert!(err.to_string().contains("L2NIC 7"), "{err}");
    port.model.stall_mailbox(false);
    port.dev.set_promiscuous(true).unwrap();
    assert!(port.dev.promiscuous());
    finish(port, &pool);
}

#[test]
fn a_command_queue_error_and_stall_are_typed_naming_the_command_then_it_recovers() {
    let pool = pool("fault-cmdq", 1023);
    let mut port = started(&pool, 4);
    let reta: Vec<u16> = (0..256).map(|i| (i % 2) as u16).collect();
    port.model.inject_cmdq_error(ucode::SET_RSS_INDIR_TABLE, Some(3));
    let err = port.dev.reta_update(&reta).expect_err("the ucode refused");
    match err.driver_error::<Error>() {
        Some(Error::Cmdq { command, code, .. }) => assert_eq!((*command, *code), (ucode::SET_RSS_INDIR_TABLE, 3)),
        other => panic!("{err}: {other:?}"),
    }
    port.model.inject_cmdq_error(ucode::SET_RSS_INDIR_TABLE, None);
    port.dev.reta_update(&reta).unwrap();
    assert_eq!(port.model.rss_indirection().to_vec(), reta);

    port.model.stall_cmdq(true);
    let reta2: Vec<u16> = (0..256).map(|i| (i % 4) as u16).collect();
    let err = port.dev.reta_update(&reta2).expect_err("the command queue never completes");
    match err.driver_error::<Error>() {
        Some(Error::CmdqTimeout { command, .. }) => assert_eq!(*command, ucode::SET_RSS_INDIR_TABLE),
        other => panic!("{err}: {other:?}"),
    }
    assert!(err.to_string().contains("L2NIC 4"), "{err}");
    port.model.stall_cmdq(false);
    wait_for(5, "the command queue to work again", || port.dev.reta_update(&reta2).is_ok());
    assert_eq!(port.model.rss_indirection().to_vec(), reta2);
    finish(port, &pool);
}

#[test]
fn firmware_ready_late_is_waited_for_and_a_ready_bit_that_never_comes_is_a_timeout() {
    let slow = Sp670Config { fw_ready_delay: Duration::from_millis(300), ..Default::default() };
    let port = open("slow", Sp670::new(slow)).expect("the driver waits for FUNC_ATTR1 bit 30");
    close(port);
    let never = Sp670Config { fw_ready_delay: Duration::from_secs(3600), ..Default::default() };
    let model = Sp670::new(never);
    let err = open("never", model.clone()).err().expect("never ready");
    match err.driver_error::<Error>() {
        Some(Error::Timeout { register, .. }) => assert_eq!(*register, "FUNC_ATTR1"),
        other => panic!("{err}: {other:?}"),
    }
    model.assert_no_faults();
}
