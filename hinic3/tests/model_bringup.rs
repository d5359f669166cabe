//! Bring-up, start, stop and close of the hinic3 driver against the independent SP670 model (nicsim), which checks
//! every register access, management struct, command-queue buffer and queue context field by field against
//! docs/hw/hinic3.md and records a fault for anything off; and the byte order of the CSRs (§0.1): a driver whose
//! register accesses miss the swap is refused.
mod common;

use pktio::TypedQueues;
use std::sync::Arc;

use common::*;
use drvkit::bar::RegisterSpace;
use hinic3::{Bars, Hinic3, Options, Timing};
use hugepage::Allocator;
use nicsim::sp670::module;
use nicsim::{Sp670, Sp670Bar, Sp670Config};
use pktio::{EthDev, PortConfig};

#[test]
fn brings_up_starts_stops_and_closes_cleanly() {
    let pool = pool("bringup", 2048);
    let mut p = open_one(Sp670Config::default());
    let id = p.dev.identity().clone();
    assert_eq!(id.mac.octets(), p.model.config().mac, "the factory MAC (L2NIC GET_MAC)");
    assert_eq!((id.func_id, id.num_aeqs), (0, 4));
    assert_eq!(id.nic_features & !nicsim::sp670::DEFAULT_NIC_FEATURES, 0, "only features offered");
    assert_eq!(p.model.pf_status(), 0x11, "PF status ACTIVE after bring-up (docs/hw/hinic3.md §14.1 step 13)");
    let config = PortConfig { rx_queues: 2, tx_queues: 2, rx_desc: 256, tx_desc: 512, ..Default::default() };
    p.dev.configure(&config).unwrap();
    p.dev.start(&pool).unwrap();
    p.model.assert_no_faults();
    wait_for(5, "link", || p.dev.link().up);
    assert_eq!(p.dev.link().speed_mbps, 100_000);
    // The link event was taken and acknowledged (docs/hw/hinic3.md §6.5: same module, command and MSG_ID, body echoed).
    wait_for(5, "the link event acknowledged", || p.dev.link().up && p.model.unacked_events().is_empty());
    for q in 0..2u16 {
        let (rx, tx) = (p.dev.rx_queue_typed(q).unwrap(), p.dev.tx_queue_typed(q).unwrap());
        let (sq, rq) = (p.model.sq_context(q as usize).unwrap(), p.model.rq_context(q as usize).unwrap());
        assert_eq!((sq.ring, sq.pi, sq.ci), (tx.ring_iova(), 0, 0), "SQ {q} context");
        assert_eq!((rq.ring, rq.ci), (rx.ring_iova(), 0), "RQ {q} context");
        assert_eq!((tx.depth(), rx.depth()), (512, 256));
    }
    assert!(p.model.sq_context(2).is_none(), "only the configured queues have contexts");
    let log = p.model.mgmt_log();
    assert!(log.iter().all(|&(_, _, status)| status == 0), "every command answered ok: {log:?}");
    for (m, c, what) in
        [(module::COMM, 0, "FUNC_RESET"), (module::COMM, 21, "root context"), (14, 6, "MAG port enable")]
    {
        assert!(log.iter().any(|&(lm, lc, _)| (lm, lc) == (m, c)), "{what} sent: {log:?}");
    }
    p.dev.stop().unwrap();
    p.model.assert_no_faults();
    assert!(pool.is_full(), "{} buffers leaked", pool.in_use());
    assert!(p.model.sq_context(0).is_none() && p.model.rq_context(0).is_none(), "queue resources freed at stop");
    assert!(!p.model.link_up(), "port disabled at stop (MAG 6)");
    // Restart after stop: the same port comes back with fresh contexts.
    p.dev.start(&pool).unwrap();
    wait_for(5, "link after restart", || p.dev.link().up);
    p.dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers leaked after a restart", pool.in_use());
    let model = p.model.clone();
    close(p);
    assert_eq!(model.pf_status(), 0, "PF status back to INIT after close (docs/hw/hinic3.md §14.5)");
}

/// A cfg BAR as a driver that forgot the big-endian swap would see it (docs/hw/hinic3.md §0.1).
struct Unswapped(Sp670Bar);

impl RegisterSpace for Unswapped {
    fn read32(&self, offset: usize) -> u32 {
        self.0.read32(offset).swap_bytes()
    }
    fn write32(&self, offset: usize, value: u32) {
        self.0.write32(offset, value.swap_bytes())
    }
    fn write64(&self, offset: usize, value: u64) {
        self.0.write64(offset, value)
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

#[test]
fn a_driver_that_misses_the_csr_byte_swap_is_refused_with_a_typed_error() {
    let model = Sp670::new(Sp670Config::default());
    let _thread = model.start_thread();
    let (cfg, mgmt, db) = model.bars();
    let bars =
        Bars { cfg: Arc::new(Unswapped(cfg)), mgmt: Some(Arc::new(Unswapped(mgmt))), db: Arc::new(Unswapped(db)) };
    let options = Options { timing: Timing::fast(), ..Options::new("unswapped") };
    let err = Hinic3::new(bars, model.dma_mapper(), Allocator::no_huge(), options).err().expect("bring-up must fail");
    // The ready bit (FUNC_ATTR1 bit 30) lands in another byte: the driver waits for it and gives up, typed.
    match err.driver_error::<hinic3::Error>() {
        Some(hinic3::Error::Timeout { register, .. }) => assert_eq!(*register, "FUNC_ATTR1", "{err}"),
        other => panic!("expected a FUNC_ATTR1 timeout, got {other:?} ({err})"),
    }
}

#[test]
fn with_comm_bit_3_every_request_goes_inline_in_segments_and_the_model_takes_them() {
    let pool = pool("inline", 1023);
    // COMM feature bit 3 (MBOX_SEGMENT) offered: requests go inline (docs/hw/hinic3.md §6.3).
    let mut p = open_one(Sp670Config { comm_features: hinic3::mbox::COMM_MBOX_SEGMENT, ..Default::default() });
    p.dev
        .configure(&PortConfig { rx_queues: 2, tx_queues: 1, rx_desc: 128, tx_desc: 128, ..Default::default() })
        .unwrap();
    p.dev.start(&pool).unwrap();
    wait_for(5, "link", || p.dev.link().up);
    p.dev.stop().unwrap();
    let s = p.dev.mailbox_stats();
    // Only GET_BOARD_INFO, GET_FW_VERSION, FUNC_RESET and FEATURE_NEGO go by DMA, before the feature is known.
    assert_eq!(s.dma_messages, 4, "{s:?}");
    assert!(s.inline_messages > 20, "{s:?}");
    // GET_DEV_CAP alone (336 bytes) takes 7 segments; RSS key (52), SET_FUNC_TBL (56) two each.
    assert!(s.inline_segments >= s.inline_messages + 6 + 2, "{s:?}");
    p.model.assert_no_faults();
    let log = p.model.mgmt_log();
    assert!(log.iter().any(|&(m, c, st)| (m, c, st) == (module::CFGM, 0, 0)), "GET_DEV_CAP answered: {log:?}");
    assert!(log.iter().all(|&(_, _, st)| st == 0), "{log:?}");
    assert!(pool.is_full(), "{} buffers leaked", pool.in_use());
    close(p);
}

#[test]
fn without_comm_bit_3_requests_go_by_dma() {
    let p = open_one(Sp670Config::default());
    let s = p.dev.mailbox_stats();
    assert_eq!((s.inline_messages, s.inline_segments), (0, 0), "{s:?}");
    assert!(s.dma_messages > 10, "{s:?}");
    close(p);
}

#[test]
fn stop_flushes_every_rq_and_takes_its_posted_buffers_back() {
    let pool = pool("flush", 1023);
    let mut p = open_one(Sp670Config::default());
    p.dev
        .configure(&PortConfig { rx_queues: 2, tx_queues: 1, rx_desc: 128, tx_desc: 128, ..Default::default() })
        .unwrap();
    p.dev.start(&pool).unwrap();
    wait_for(5, "link", || p.dev.link().up);
    // Some buffers hold frames nobody received (done CQEs), the rest are empty: all come back.
    let frame = udp_frame(p.model.config().mac, [2, 0, 0, 0, 0, 9], ([1, 1, 1, 1], [2, 2, 2, 2]), (5, 6), 64);
    for _ in 0..3 {
        assert!(p.model.inject(&frame));
    }
    wait_for(5, "three frames delivered", || p.model.counters().rx_delivered == 3);
    // Each ring holds a buffer per entry: 127 posted, one ready in the entry the next refill posts.
    assert_eq!(pool.in_use(), 2 * 128);
    p.dev.stop().unwrap();
    // cmdq 10 SET_RQ_FLUSH once per RQ, accepted (docs/hw/hinic3.md §10.6, §14.6).
    let flushes: Vec<_> = p.model.cmdq_log().into_iter().filter(|&(c, _)| c == 10).collect();
    assert_eq!(flushes, vec![(10, 0), (10, 0)]);
    assert_eq!(p.dev.rx_buffers_flushed(), 2 * 127, "every posted buffer came back before it was freed");
    p.model.assert_no_faults();
    assert!(pool.is_full(), "{} buffers leaked", pool.in_use());
    // A second start: nothing stale from the flush (CQEs cleared) turns into a packet. A claimed queue whose handle
    // was dropped gave its ring back to the port, so stop flushes it too and takes its buffers back.
    p.dev.start(&pool).unwrap();
    let mut rx = p.dev.rx_queue_typed(0).unwrap();
    let mut got = mempool::PacketBatch::new();
    assert_eq!(pktio::RxQueue::rx_burst(&mut rx, &mut got), 0);
    drop(rx);
    assert_eq!(pool.in_use(), 2 * 128, "the dropped handle's ring still holds its buffers");
    p.dev.stop().unwrap();
    assert_eq!(p.model.cmdq_log().iter().filter(|&&(c, st)| (c, st) == (10, 0)).count(), 4);
    assert_eq!(p.dev.rx_buffers_flushed(), 2 * 127);
    p.model.assert_no_faults();
    assert!(pool.is_full(), "{} buffers leaked", pool.in_use());
    close(p);
}

/// COMM bit 9 (USE_REAL_RX_BUF_SIZE) offered: the root context carries the RX buffer size in bytes (DPDK
/// get_hw_rx_buf_size's caller, docs/hw/hinic3.md §10.4); the model reads it so and agrees with SET_FUNC_TBL, and a
/// frame arrives whole.
#[test]
fn with_comm_bit_9_the_root_context_gives_the_rx_buffer_size_in_bytes() {
    let pool = pool("realbuf", 511);
    let bit9 = hinic3::mgmt::comm::FEATURE_USE_REAL_RX_BUF_SIZE;
    assert_eq!(bit9, nicsim::sp670::COMM_REAL_RX_BUF);
    let mut p = open_one(Sp670Config { comm_features: bit9, ..Default::default() });
    p.dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
    p.dev.start(&pool).unwrap();
    wait_for(5, "link", || p.dev.link().up);
    let frame = udp_frame(p.model.config().mac, [2, 0, 0, 0, 0, 9], ([1, 1, 1, 1], [2, 2, 2, 2]), (5, 6), 1000);
    let mut rx = p.dev.rx_queue_typed(0).unwrap();
    assert!(p.model.inject(&frame));
    let mut got = mempool::PacketBatch::new();
    wait_for(5, "the frame", || {
        pktio::RxQueue::rx_burst(&mut rx, &mut got);
        !got.is_empty()
    });
    assert_eq!(bytes(got.iter().next().unwrap()), frame);
    drop((got, rx));
    p.model.assert_no_faults();
    p.dev.stop().unwrap();
    close(p);
}

/// Probe asks the firmware version (COMM 60, fw_type MPU) and the board (COMM 61) as DPDK does
/// (hinic3_get_mgmt_version, hinic3_get_board_info); the driver exposes what the model answered.
#[test]
fn probe_reads_the_firmware_version_and_the_board() {
    let config = Sp670Config { fw_version: "3.1.4.15".into(), ..Default::default() };
    let p = open_one(config);
    let id = p.dev.identity();
    assert_eq!(id.fw_version.as_deref(), Some("3.1.4.15"));
    let board = id.board.expect("board info");
    assert_eq!((board.port_num, board.pf_num), (2, 1));
    let log = p.model.mgmt_log();
    for cmd in [60, 61] {
        assert!(log.iter().any(|&(m, c, st)| (m, c, st) == (module::COMM, cmd, 0)), "COMM {cmd}: {log:?}");
    }
    p.model.assert_no_faults();
    close(p);
}

/// Every AEQ the function has (the model 4) is programmed at probe, as DPDK's hinic3_aeqs_init does, not only the
/// two the mailbox reads.
#[test]
fn probe_programs_every_aeq_the_function_has() {
    let p = open_one(Sp670Config::default());
    assert_eq!((0..4).map(|q| p.model.aeq_len(q)).collect::<Vec<_>>(), vec![64; 4]);
    p.model.assert_no_faults();
    close(p);
}
