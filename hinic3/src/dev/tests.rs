//! The port against the scripted [`FakeFw`]: bring-up order, refusals and errors, start/stop/close effects, link
//! events.

use pktio::TypedQueues;
use std::sync::Arc;

use drvkit::dma::IdentityMapper;
use hugepage::Allocator;
use mempool::{Mempool, PoolConfig};
use pktio::{EthDev, MacAddr, PortConfig};

use super::*;
use crate::mbox::Header;
use crate::mgmt::{comm, l2nic, mag, module};
use crate::regs::{self, attr6};
use crate::testing::{Answer, FakeFw, MgmtCmd};

const MAC: [u8; 6] = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];

/// DEV_CAP (port 1, CoS 0 and 3, 4 SQs and RQs), GET_MAC, MAG 7 up, MAG 153 100G; everything else echoed.
fn script(c: &MgmtCmd) -> Answer {
    match (c.module, c.cmd) {
        (module::CFGM, 0) => {
            let mut a = vec![0u8; 336];
            a[15] = 1;
            a[33] = 0b1001;
            a[80] = 3;
            a[82] = 3;
            Answer::Reply(0, a)
        }
        (module::L2NIC, l2nic::GET_MAC) => {
            let mut a = c.body.clone();
            a[14..20].copy_from_slice(&MAC);
            Answer::Reply(0, a)
        }
        (module::HILINK, mag::GET_LINK_STATUS) => {
            let mut a = c.body.clone();
            a[9] = 1;
            Answer::Reply(0, a)
        }
        (module::HILINK, mag::GET_PORT_INFO) => {
            let mut a = c.body.clone();
            a[16] = 8;
            Answer::Reply(0, a)
        }
        _ => Answer::Echo,
    }
}

fn open(fw: &Arc<FakeFw>) -> pktio::Result<Hinic3<crate::testing::FakeBar>> {
    let options = Options { timing: Timing::fast(), ..Options::new("hinic3-test") };
    Hinic3::new(fw.bars(), Arc::new(IdentityMapper), Allocator::no_huge(), options)
}

fn cmds(fw: &FakeFw) -> Vec<(u8, u16)> {
    fw.mgmt_log().iter().map(|c| (c.module, c.cmd)).collect()
}

#[test]
fn bring_up_runs_in_dpdk_order_and_leaves_the_pf_active() {
    let fw = FakeFw::new(5, Box::new(script));
    let dev = open(&fw).unwrap();
    assert_eq!(
        cmds(&fw),
        vec![
            (module::COMM, comm::GET_BOARD_INFO),
            (module::COMM, comm::GET_FW_VERSION),
            (module::COMM, comm::FUNC_RESET),
            (module::COMM, comm::FEATURE_NEGO),
            (module::COMM, comm::SET_FUNC_SVC_USED_STATE),
            (module::COMM, comm::SET_DMA_ATTR),
            (module::COMM, comm::CFG_PAGESIZE),
            (module::COMM, comm::SET_CMDQ_CTXT),
            (module::COMM, comm::SET_CMDQ_CTXT),
            (module::COMM, comm::SET_VAT),
            (module::CFGM, 0),
            (module::L2NIC, l2nic::FEATURE_NEGO),
            (module::L2NIC, l2nic::GET_MAC),
            (module::L2NIC, l2nic::SET_MAC),
            (module::HILINK, mag::SET_LINK_FOLLOW),
        ]
    );
    let log = fw.mgmt_log();
    assert_eq!(&log[1].body[8..10], &comm::FW_TYPE_MPU.to_le_bytes(), "the MPU's version");
    assert_eq!(&log[2].body[8..10], &5u16.to_le_bytes(), "func_id from FUNC_ATTR0");
    assert_eq!(crate::mgmt::get_u64(&log[2].body, 16), comm::RESET_FLAGS);
    assert_eq!(log[6].body[11], 8, "1 MiB WQ pages");
    // Both command queues, SYNC then ASYNC, each its own 256 KiB-aligned ring (DPDK hinic3_set_cmdq_ctxts).
    assert_eq!((log[7].body[10], log[8].body[10]), (0, 1), "cmdq ids SYNC, ASYNC");
    let ring = |b: &[u8]| (crate::mgmt::get_u64(b, 16) & ((1 << 52) - 1)) << 12;
    let (sync, asyn) = (ring(&log[7].body), ring(&log[8].body));
    assert_ne!(sync, asyn, "two rings");
    assert!(sync % (256 << 10) == 0 && asyn % (256 << 10) == 0, "{sync:#x} {asyn:#x} on 256 KiB");
    assert_eq!(log[9].body[10..12], [1, 6], "cmdq depth 64");
    assert_eq!(attr6::PF_STATUS.get(fw.reg(regs::FUNC_ATTR6)), attr6::STATUS_ACTIVE);
    assert_ne!(fw.reg(regs::MAILBOX_RESULT_L), 0, "write-back area registered");
    assert_eq!(dev.mac_addr(), MacAddr(MAC));
    assert_eq!(dev.info().max_rx_queues, 4);
    assert_eq!(dev.identity().cap.default_cos(), 3);
}

#[test]
fn a_firmware_with_only_the_enhanced_cmdq_is_refused_by_name() {
    let fw = FakeFw::new(
        0,
        Box::new(|c: &MgmtCmd| match (c.module, c.cmd) {
            (module::COMM, comm::FEATURE_NEGO) => {
                let mut a = c.body.clone();
                a[16] = 0; // bit 8 is in byte 17
                a[17] = 1;
                Answer::Reply(0, a)
            }
            _ => Answer::Echo,
        }),
    );
    let e = open(&fw).err().expect("refused");
    let e = e.driver_error::<crate::Error>().expect("a driver error");
    assert!(matches!(e, crate::Error::Unsupported(m) if m.contains("bit 8")), "{e}");
}

#[test]
fn a_refused_command_names_module_command_and_status() {
    let fw = FakeFw::new(
        0,
        Box::new(|c: &MgmtCmd| match (c.module, c.cmd) {
            (module::L2NIC, l2nic::SET_MAC) => Answer::Reply(0x0C, c.body.clone()),
            _ => script(c),
        }),
    );
    let e = open(&fw).err().expect("fails");
    assert_eq!(
        e.driver_error::<crate::Error>(),
        Some(&crate::Error::Mgmt {
            module: 1,
            module_name: "L2NIC",
            command: 21,
            status: 0x0C,
            status_name: "table full"
        })
    );
}

#[test]
fn an_unanswered_command_times_out_naming_it() {
    let fw = FakeFw::new(
        0,
        Box::new(|c: &MgmtCmd| match (c.module, c.cmd) {
            (module::CFGM, 0) => Answer::Silent,
            _ => script(c),
        }),
    );
    let e = open(&fw).err().expect("times out");
    match e.driver_error::<crate::Error>() {
        Some(crate::Error::MgmtTimeout { module: 7, command: 0, stage: "answer on AEQ 1", .. }) => {}
        other => panic!("{other:?}"),
    }
}

fn pool() -> Mempool {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let name = format!("hinic3-dev-{}", N.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    Mempool::new(&name, &PoolConfig { size: 2047, cache_size: 0, ..Default::default() }, &Allocator::no_huge()).unwrap()
}

#[test]
fn start_programs_queues_and_rss_stop_and_close_undo_it() {
    let fw = FakeFw::new(2, Box::new(script));
    let mut dev = open(&fw).unwrap();
    let pool = pool();
    dev.configure(&PortConfig { rx_queues: 2, tx_queues: 2, rx_desc: 256, tx_desc: 256, ..Default::default() })
        .unwrap();
    let before = fw.mgmt_log().len();
    dev.start(&pool).unwrap();
    let started: Vec<_> = cmds(&fw)[before..].to_vec();
    let pos = |m: u8, c: u16| started.iter().position(|&x| x == (m, c)).unwrap_or_else(|| panic!("{m}/{c} sent"));
    assert!(pos(module::L2NIC, l2nic::SET_FUNC_TBL) < pos(module::COMM, comm::SET_VAT));
    assert!(pos(module::COMM, comm::SET_VAT) < pos(module::L2NIC, l2nic::SQ_CI_ATTR_SET));
    assert!(pos(module::L2NIC, l2nic::RSS_CFG) < pos(module::L2NIC, l2nic::SET_VPORT_ENABLE));
    assert!(pos(module::L2NIC, l2nic::SET_VPORT_ENABLE) < pos(module::HILINK, mag::SET_PORT_ENABLE));
    let cq = fw.cmdq_log();
    let kinds: Vec<u8> = cq.iter().map(|c| c.cmd).collect();
    assert_eq!(kinds, vec![0, 0, 1, 1, 4], "SQ contexts, RQ contexts, two cleans, the RSS table");
    // The SQ batch: header (big-endian dwords: type 0, two queues; start 0) then two 64-byte contexts.
    assert_eq!(&cq[0].buf[..8], &[0, 0, 0, 2, 0, 0, 0, 0]);
    assert_eq!(cq[0].buf.len(), 8 + 2 * 64);
    assert_eq!(&cq[1].buf[..4], &[0, 1, 0, 2], "RQ type");
    assert_eq!(cq[4].buf.len(), 16 + 512);
    assert_eq!(&cq[4].buf[16..20], &[0, 1, 0, 0], "entries 1 then 0, big-endian");
    // The RQ doorbells: page 2, PI = 255 entries << 1 in 8-byte units.
    let rq_db: Vec<_> = fw.data_doorbells().into_iter().filter(|&(o, _)| o / 4096 == 2).collect();
    assert_eq!(rq_db.len(), 2);
    for (k, &(off, v)) in rq_db.iter().enumerate() {
        assert_eq!(off % 4096, (510 & 0xFF) * 8);
        assert_eq!(v as u32 & 0x1FFF, k as u32);
        assert_eq!(v >> 32, 510 >> 8);
    }
    assert!(dev.link().up);
    assert_eq!(dev.link().speed_mbps, 100_000);

    let (rx, tx) = (dev.rx_queue_typed(0).unwrap(), dev.tx_queue_typed(1).unwrap());
    drop((rx, tx));
    let before = fw.mgmt_log().len();
    dev.stop().unwrap();
    let stopped: Vec<_> = cmds(&fw)[before..].to_vec();
    assert_eq!(
        stopped,
        vec![
            (module::HILINK, mag::SET_PORT_ENABLE),
            (module::L2NIC, l2nic::SET_VPORT_ENABLE),
            (module::L2NIC, l2nic::CLEAR_QP_RESOURCE),
            (module::L2NIC, l2nic::SET_RX_MODE),
            (module::L2NIC, l2nic::RSS_CFG),
            (module::L2NIC, l2nic::RSS_TEMP_MGR),
            (module::COMM, comm::SET_VAT),
        ]
    );
    // Vport enable and disable both carry the number of RQs (DPDK hinic3_set_vport_enable: num_qps = num_rqs).
    let log = fw.mgmt_log();
    let vport: Vec<_> = log.iter().filter(|c| (c.module, c.cmd) == (module::L2NIC, l2nic::SET_VPORT_ENABLE)).collect();
    assert_eq!(vport.iter().map(|c| (c.body[12], c.body[13])).collect::<Vec<_>>(), vec![(1, 2), (0, 2)]);
    assert!(pool.is_full(), "every RX buffer back in the pool");
    let before = fw.mgmt_log().len();
    drop(dev);
    assert_eq!(
        cmds(&fw)[before..].to_vec(),
        vec![
            (module::L2NIC, l2nic::DEL_MAC),
            (module::HILINK, mag::SET_LINK_FOLLOW),
            (module::COMM, comm::CFG_PAGESIZE),
            (module::COMM, comm::SET_FUNC_SVC_USED_STATE),
        ]
    );
    assert_eq!(attr6::PF_STATUS.get(fw.reg(regs::FUNC_ATTR6)), attr6::STATUS_INIT);
    assert_eq!((fw.reg(regs::MAILBOX_RESULT_H), fw.reg(regs::MAILBOX_RESULT_L)), (0, 0));
}

#[test]
fn a_link_event_changes_the_link_and_is_acknowledged() {
    let fw = FakeFw::new(0, Box::new(script));
    let dev = open(&fw).unwrap();
    let mut body = vec![0u8; 12];
    body[8] = 1;
    body[9] = 1;
    let h = Header {
        src: crate::mbox::MGMT_FUNC,
        module: module::HILINK,
        cmd: mag::GET_LINK_STATUS,
        msg_id: 3,
        msg_len: 12,
        ..Header::default()
    };
    fw.post(0, h, &body);
    let l = dev.link();
    assert!(l.up);
    assert_eq!(l.speed_mbps, 100_000);
    let ack = fw.mgmt_log().into_iter().find(|c| c.module == module::HILINK && c.cmd == 7 && c.body == body);
    let ack = ack.expect("the event's body echoed back");
    // As DPDK's send_mbox_seg for a response: AEQ_ID and the destination AEQ both HINIC3_MBOX_RSP_MSG_AEQ (1).
    assert!(ack.header.answer && ack.header.no_ack);
    assert_eq!(ack.header.aeq_id, 1, "AEQ_ID of the acknowledgement");
    assert_eq!(crate::regs::mbox_int::DST_AEQ.get(ack.int_offset), 1, "destination AEQ of the acknowledgement");
    body[9] = 0;
    fw.post(0, Header { msg_id: 4, ..h }, &body);
    assert!(!dev.link().up);
}

#[test]
fn promiscuous_and_mtu_reach_the_firmware_while_started() {
    let fw = FakeFw::new(0, Box::new(script));
    let mut dev = open(&fw).unwrap();
    let pool = pool();
    dev.configure(&PortConfig { rx_desc: 256, tx_desc: 256, ..Default::default() }).unwrap();
    dev.start(&pool).unwrap();
    dev.set_promiscuous(true).unwrap();
    let last = fw.mgmt_log().pop().unwrap();
    assert_eq!((last.module, last.cmd, last.body[12]), (module::L2NIC, l2nic::SET_RX_MODE, 0x17));
    dev.set_mtu(9000).unwrap();
    let last = fw.mgmt_log().pop().unwrap();
    assert_eq!((last.cmd, last.body[12], crate::mgmt::get_u16(&last.body, 18)), (l2nic::SET_FUNC_TBL, 4, 9000));
    dev.stop().unwrap();
}
