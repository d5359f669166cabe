//! The SP670 model driven through raw register writes, mailbox messages, cmdq WQEs, contexts and ring entries built
//! here from docs/hw/hinic3.md (section cited per helper), not from any driver: offsets and bit positions are the
//! notes' tables typed out again, so a model that misreads a table disagrees with these tests.
//!
//! This file: link events, injected faults, function reset, descriptor mistakes, reserved fields, doorbells.

mod sp670_rig;

use sp670_rig::*;

#[test]
fn link_flap_posts_events_on_aeq0_and_takes_acks() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    // The first report once the PF is ACTIVE and the port enabled: link up, acknowledged.
    r.step();
    let (h, body) = r.aeq_message(0).expect("the first link report");
    assert_eq!(body[9], 1);
    r.ack(h, &body);
    assert!(r.port.unacked_events().is_empty());
    r.port.link_flap(Duration::from_millis(50));
    r.step();
    let (h, body) = r.aeq_message(0).expect("link down event");
    assert_eq!((h >> 43) & 0x1F, 14, "HILINK");
    assert_eq!((h >> 22) & 0x3FF, 7);
    assert_eq!(h >> 63, 0, "an event, DIRECTION 0");
    assert_eq!((h >> 54) & 1, 0, "wants an ack");
    assert_eq!(body.len(), 12);
    assert_eq!(body[9], 0, "down");
    assert!(!r.port.link_up());
    let mut pi = vec![0u8; 36];
    pi[8] = r.port.config().port_id;
    assert_eq!(r.ok(module::MAG, 153, &pi)[16], 0, "no speed while down");
    // Acknowledge: DIRECTION 1, NO_ACK 1, same MSG_ID, the body echoed.
    r.ack(h, &body);
    assert!(r.port.unacked_events().is_empty());
    poll("link back", Duration::from_secs(2), || {
        r.step();
        r.port.link_up()
    });
    r.step();
    let (h, body) = r.aeq_message(0).expect("link up event");
    assert_eq!(body[9], 1);
    r.ack(h, &body);
    assert!(r.port.unacked_events().is_empty());
    assert_eq!(r.ok(module::MAG, 153, &pi)[16], 8, "100G again");
    r.port.assert_no_faults();
}

/// A function has one mailbox window, and DPDK acknowledges events from another thread than the one sending requests
/// (docs/hw/hinic3.md §6.5): an event goes out with the answer to a request, which waits for the acknowledgement, or
/// once the mailbox has been quiet for `event_quiet`, never while a request may be being written.
#[test]
fn link_events_go_out_with_a_held_answer_or_after_a_quiet_mailbox() {
    // Quiet for a minute: only the held-answer path can post during this part.
    let port = Sp670::new(Sp670Config { event_quiet: Duration::from_secs(60), ..Default::default() });
    let mut r = Rig::with(port);
    r.ack_events_while_waiting = true;
    // The port enable brings the link up; the next request's answer (MAG 7 in init_and_start) comes only after the
    // link-up event it went out with is acknowledged.
    r.init_and_start(1);
    let states: Vec<u8> = r.events_seen.iter().map(|(_, b)| b[9]).collect();
    assert_eq!(states, [1], "the link-up event, acknowledged before the answer came");
    assert!(r.port.unacked_events().is_empty());
    // A flap with the mailbox idle: both changes wait for the next request, in order.
    r.port.link_flap(Duration::from_millis(20));
    r.step();
    poll("link back", Duration::from_secs(5), || {
        r.step();
        r.port.link_up()
    });
    r.step();
    assert!(r.aeq_message(0).is_none(), "no event while a request may be being written");
    let mut ls = vec![0u8; 12];
    ls[8] = r.port.config().port_id;
    assert_eq!(r.ok(module::MAG, 7, &ls)[9], 1);
    let states: Vec<u8> = r.events_seen.iter().map(|(_, b)| b[9]).collect();
    assert_eq!(states, [1, 0, 1], "down and up, acknowledged before the answer");
    // A driver that never acknowledges still gets its answer, HOLD_AT_MOST (2 s) later.
    r.ack_events_while_waiting = false;
    r.port.link_flap(Duration::from_millis(20));
    r.step();
    let sent = Instant::now();
    assert_eq!(r.send_dma(module::MAG, 7, &ls) & 0xFF, 0xFF);
    let (h, _) = r.aeq_message(0).expect("the link-down event, with the request");
    poll("the held answer", Duration::from_secs(10), || {
        r.step();
        r.aeq_ready(1)
    });
    assert!(sent.elapsed() >= Duration::from_secs(2), "held until HOLD_AT_MOST");
    r.answer(module::MAG, 7);
    assert_eq!(r.port.unacked_events().len(), 1, "{h:#x} never acknowledged");
    r.port.assert_no_faults();

    // Quiet for 50 ms: an event goes out on its own once nothing was sent for that long.
    let port = Sp670::new(Sp670Config { event_quiet: Duration::from_millis(50), ..Default::default() });
    let mut r = Rig::with(port);
    r.ack_events_while_waiting = true;
    r.init_and_start(1);
    let last_request = Instant::now();
    r.port.link_flap(Duration::from_secs(30));
    poll("the link-down event of a quiet mailbox", Duration::from_secs(5), || {
        r.step();
        r.aeq_ready(0)
    });
    assert!(last_request.elapsed() >= Duration::from_millis(50), "not before the mailbox was quiet");
    let (h, body) = r.aeq_message(0).expect("the event");
    assert_eq!(body[9], 0);
    r.ack(h, &body);
    assert!(r.port.unacked_events().is_empty());
    r.port.assert_no_faults();
}

#[test]
fn injected_faults_are_observable() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    let mac = r.port.config().mac;
    // Firmware error status for one command.
    r.port.inject_mgmt_error(module::L2NIC, 7, Some(0x0B));
    assert_eq!(r.call(module::L2NIC, 7, &[0; 16])[0], 0x0B);
    r.port.inject_mgmt_error(module::L2NIC, 7, None);
    // A mailbox request that never completes: written back, never answered.
    r.port.stall_mailbox(true);
    assert_eq!(r.send_dma(module::COMM, 60, &[0; 48]) & 0xFF, 0xFF);
    for _ in 0..10 {
        r.step();
    }
    assert!(r.aeq_take(1).is_none());
    r.port.stall_mailbox(false);
    // A cmdq command that never completes, until the stall is lifted.
    r.port.stall_cmdq(true);
    let mut ctx = vec![0u8; 20];
    ctx[16..20].copy_from_slice(&(1u32 << 23 | 1 << 29).to_le_bytes());
    assert!(r.cmdq_try(5, &ctx, true).is_none());
    let at = CMDQ_RING + (r.cmdq_pi as usize + CMDQ_DEPTH as usize - 1) % CMDQ_DEPTH as usize * 64;
    for _ in 0..5 {
        r.step();
    }
    assert_eq!(le32(&r.read_mem(at, 64), 12) >> 31, 0, "still not complete");
    r.port.stall_cmdq(false);
    r.step();
    assert_eq!(le32(&r.read_mem(at, 64), 12) >> 31, 1, "completes once released");
    r.write_mem(at + 12, &[0; 4]);
    // RX completions with error bits.
    r.port.inject_error(&udp_frame(mac, [10, 0, 0, 9], 7, 64), Sp670RxError::IpChecksum);
    r.step();
    assert_eq!(r.recv(0).expect("delivered").0[0] & 0xFFFF, 1);
    r.port.inject_error(&udp_frame(mac, [10, 0, 0, 9], 7, 64), Sp670RxError::L4Checksum);
    r.step();
    assert_eq!(r.recv(0).expect("delivered").0[0] & 0xFFFF, 1 << 2, "UDP checksum error");
    r.port.inject_error(&udp_frame(mac, [10, 0, 0, 9], 7, 64), Sp670RxError::Crc);
    r.step();
    assert!(r.recv(0).is_none());
    // TX hang: the CI stops; released, it moves.
    let before = r.hw_ci(0);
    r.port.tx_hang(Some(0), true);
    r.send(0, &udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 1, 60));
    for _ in 0..5 {
        r.step();
    }
    assert_eq!(r.hw_ci(0), before);
    assert!(r.port.take_tx().is_empty());
    r.port.tx_hang(Some(0), false);
    r.step();
    assert_eq!(r.hw_ci(0), before + 1);
    assert_eq!(r.port.take_tx().len(), 1);
    r.port.assert_no_faults();
}

/// Recovery by function reset (docs/hw/hinic3.md §7.3 COMM 0): a hung SQ and a stalled cmdq are cleared, the old
/// doorbells forgotten, and a second bring-up of the queues works.
#[test]
fn function_reset_recovers_hangs() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    r.port.tx_hang(None, true);
    r.send(0, &udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 1, 60));
    r.port.stall_cmdq(true);
    assert!(r.cmdq_try(1, &[0; 12], true).is_none());
    r.step();
    assert_eq!(r.hw_ci(0), 0, "hung");
    let mut reset = vec![0u8; 24];
    reset[16..24].copy_from_slice(&0x3407u64.to_le_bytes());
    r.ok(module::COMM, 0, &reset);
    for _ in 0..3 {
        r.step();
    }
    assert!(r.port.take_tx().is_empty(), "the old doorbell is forgotten");
    assert_eq!(r.port.sq_context(0), None);
    // The driver starts over: fresh rings, fresh indexes.
    r.write_mem(CMDQ_RING, &[0; 64 * CMDQ_DEPTH as usize]);
    r.cmdq_pi = 0;
    r.cmdq_wrapped = true;
    r.sq_pi[0] = 0;
    r.sq_owner[0] = true;
    r.rq_ci[0] = 0;
    r.write_mem(CI_SLOTS, &[0; 64]);
    // The AEQs are set up again too (docs/hw/hinic3.md §5.3: descriptors back to wrapped = 0).
    r.write_mem(AEQ_MEM, &[0; 4 * 4096]);
    r.aeq_ci = [0; 4];
    r.aeq_wrapped = [false; 4];
    r.wr(FUNC_ATTR6, r.rd(FUNC_ATTR6) & !0xFFFF);
    r.init_and_start(1);
    let f = udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 2, 60);
    r.send(0, &f);
    r.step();
    assert_eq!(r.port.take_tx(), vec![f]);
    r.port.assert_no_faults();
}

#[test]
fn descriptor_mistakes_are_faults() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    // An SQ WQE with the wrong owner bit stops the queue and is recorded.
    r.sq_owner[0] = false;
    r.send(0, &udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 1, 60));
    r.step();
    assert!(r.port.take_tx().is_empty());
    assert_eq!(r.hw_ci(0), 0);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("owner bit")));
    // An extended WQE without TSO whose queue_info leaves MSS 0 (DPDK hinic3_prepare_sq_ctrl puts 0x3E00 there).
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    r.send_ext_qi(0, &udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 1, 60), 2, None, 1 << 28);
    r.step();
    assert!(r.port.take_tx().is_empty());
    assert_eq!(r.hw_ci(0), 0);
    let f = protocol_faults(&r.port);
    assert!(f.iter().any(|s| s.contains("SQ 0") && s.contains("MSS 0")), "{f:?}");
    // A doorbell while FUNC_ATTR4 has doorbells off is lost.
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    r.wr(FUNC_ATTR4, 1);
    r.send(0, &udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 1, 60));
    r.step();
    assert!(r.port.take_tx().is_empty());
    r.wr(FUNC_ATTR4, 0);
    r.port.assert_no_faults();
    // An SQ context with a wrong queue id, a reserved bit, or without the owner bit is refused field by field.
    let mut c = r.sq_ctx(3);
    c[24..28].copy_from_slice(&7u32.to_le_bytes());
    let mut b = vec![1, 0, 0, 0, 3, 0, 0, 0];
    b.extend_from_slice(&c);
    assert_ne!(r.cmdq(0, &b).0, 0);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("SQ id 7")));
    let mut c = r.rq_ctx(3);
    let d2 = le32(&c, 8) & !(1 << 31);
    c[8..12].copy_from_slice(&d2.to_le_bytes());
    let mut b = vec![1, 0, 1, 0, 3, 0, 0, 0];
    b.extend_from_slice(&c);
    assert_ne!(r.cmdq(0, &b).0, 0);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("owner bit 31")));
}

/// SQ, RQ and cmdq rings on 4 KiB but not 256 KiB (docs/hw/hinic3.md §9.3) are refused at context set.
#[test]
fn rings_off_256_kib_are_refused() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    for (ty, c) in [(0u8, r.sq_ctx_at(1, SQ_RING + WQ_ALIGN + 0x1000)), (1, r.rq_ctx_at(RQ_RING + WQ_ALIGN + 0x1000))] {
        let mut b = vec![1, 0, ty, 0, 1, 0, 0, 0];
        b.extend_from_slice(&c);
        assert_ne!(r.cmdq(0, &b).0, 0, "type {ty}");
        let f = protocol_faults(&r.port);
        assert!(f.iter().any(|s| s.contains(if ty == 0 { "SQ 1" } else { "RQ 1" }) && s.contains("256 KiB")), "{f:?}");
    }
    // The same contexts on 256 KiB are taken.
    for (ty, c) in [(0u8, r.sq_ctx(1)), (1, r.rq_ctx(1))] {
        let mut b = vec![1, 0, ty, 0, 1, 0, 0, 0];
        b.extend_from_slice(&c);
        assert_eq!(r.cmdq(0, &b), (0, 0), "type {ty}");
    }
    let b = r.cmdq_ctx_at(CMDQ_RING + 0x1000);
    assert_eq!(r.call(module::COMM, 20, &b)[0], STATUS_BAD);
    let f = protocol_faults(&r.port);
    assert!(f.iter().any(|s| s.contains("cmdq 0") && s.contains("256 KiB")), "{f:?}");
    r.port.assert_no_faults();
}

/// A reserved byte of each structure of docs/hw/hinic3.md §7.3 that the §14 sequences send is refused and recorded.
#[test]
fn reserved_fields_of_each_structure_are_checked() {
    let mut r = Rig::new(Sp670Config::default());
    r.bring_up();
    let cases: &[(u8, u16, usize, usize)] = &[
        (module::COMM, 0, 24, 12),
        (module::COMM, 1, 48, 11),
        (module::COMM, 7, 48, 20),
        (module::COMM, 20, 32, 12),
        (module::COMM, 21, 32, 24),
        (module::COMM, 22, 16, 13),
        (module::COMM, 25, 20, 17),
        (module::COMM, 60, 48, 40),
        (module::CFGM, 0, 336, 100),
        (module::L2NIC, 5, 56, 30),
        (module::L2NIC, 6, 16, 15),
        (module::L2NIC, 7, 16, 10),
        (module::L2NIC, 8, 32, 21),
        (module::L2NIC, 15, 48, 11),
        (module::L2NIC, 20, 20, 12),
        (module::L2NIC, 27, 16, 12),
        (module::L2NIC, 35, 16, 14),
        (module::MAG, 6, 16, 14),
        (module::MAG, 7, 12, 11),
        (module::MAG, 8, 16, 14),
        (module::MAG, 153, 36, 20),
        (module::L2NIC, 6, 16, 3), // the head's reserved bytes
    ];
    for &(m, c, len, at) in cases {
        let mut b = vec![0u8; len];
        b[at] = 0x5A;
        assert_eq!(r.call(m, c, &b)[0], STATUS_BAD, "module {m} cmd {c} byte {at}");
        let f = protocol_faults(&r.port);
        assert!(f.iter().any(|s| s.contains("reserved")), "module {m} cmd {c} byte {at}: {f:?}");
    }
    r.port.assert_no_faults();
}

/// The doorbell as two 32-bit stores, low dword then high (what a `RegisterSpace` offers), rings like one 64-bit
/// store (docs/hw/hinic3.md §10.1); a high dword alone is a fault.
#[test]
fn doorbell_as_two_dwords() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(1);
    let f = udp_frame([2, 0, 0, 0, 0, 0x99], [10, 0, 0, 1], 3, 60);
    let slot = Rig::tx_buf(0);
    r.write_mem(slot, &f);
    let a = r.iova(slot);
    let w: Vec<u8> =
        [f.len() as u32 | 1 << 31, 0, (a >> 32) as u32, a as u32].iter().flat_map(|v| v.to_le_bytes()).collect();
    r.write_mem(SQ_RING, &w);
    r.db.write32(4096 + 8, 1 << 27);
    r.step();
    assert!(r.port.take_tx().is_empty(), "the low dword alone does not ring");
    r.db.write32(4096 + 8 + 4, 0);
    r.step();
    assert_eq!(r.port.take_tx(), vec![f]);
    r.port.assert_no_faults();
    r.db.write32(4096 + 16 + 4, 0);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("without its low dword")));
}
