//! The SP670 model driven through raw register writes, mailbox messages, cmdq WQEs, contexts and ring entries built
//! here from docs/hw/hinic3.md (section cited per helper), not from any driver: offsets and bit positions are the
//! notes' tables typed out again, so a model that misreads a table disagrees with these tests.
//!
//! This file: readiness, the management channel (mailbox, malformed and unknown commands, byte order), stop and close.

mod sp670_rig;

use sp670_rig::*;

// ---- tests ---------------------------------------------------------------------------------------------------------

#[test]
fn readiness_attributes_and_big_endian_csrs() {
    let r = Rig::new(Sp670Config { fw_ready_delay: Duration::from_millis(100), func_id: 5, ..Default::default() });
    assert_eq!(r.rd(FUNC_ATTR1) & (1 << 30), 0, "not ready at once");
    poll("ready", Duration::from_secs(2), || r.rd(FUNC_ATTR1) & (1 << 30) != 0);
    assert_eq!(r.rd(FUNC_ATTR0) & 0xFFF, 5);
    assert_eq!(r.rd(FUNC_ATTR0) >> 28 & 1, 0, "a PF");
    assert_eq!(1 << ((r.rd(FUNC_ATTR1) >> 8) & 3), 4, "4 AEQs");
    assert_eq!(r.rd(FUNC_ATTR6) >> 23, 64, "most queues");
    // Read without the swap, the ready bit is elsewhere: a driver that forgets docs/hw/hinic3.md §0.1 sees garbage.
    assert_eq!(r.cfg.read32(FUNC_ATTR1) & (1 << 30), 0);
    assert_eq!(r.cfg.read32(FUNC_ATTR1).swap_bytes() & (1 << 30), 1 << 30);
    assert_eq!(r.port.pci_identity().device, 0x0222);
    r.port.assert_no_faults();
}

#[test]
fn management_round_trip_dma_and_multi_segment_inline() {
    let mut r = Rig::new(Sp670Config { fw_version: "1.2.3.4".into(), port_id: 1, ..Default::default() });
    r.bring_up();
    let mut fw = vec![0u8; 48];
    fw[8] = 1;
    let v = r.ok(module::COMM, 60, &fw);
    assert_eq!(v.len(), 48, "the answer is the whole structure");
    assert_eq!(&v[12..19], b"1.2.3.4");
    // GET_DEV_CAP, 336 bytes: 7 inline segments out, 7 AEQ segments back.
    r.send_inline(module::CFGM, 0, &[0; 336]);
    let cap = r.answer(module::CFGM, 0);
    assert_eq!(cap.len(), 336);
    assert_eq!(cap[0], 0);
    assert_eq!(cap[15], 1, "port_id");
    assert_eq!(u16::from_le_bytes([cap[80], cap[81]]), 63, "nic_max_sq_id");
    // L2NIC 9 answers 192 bytes, MAG 151 816 (docs/hw/hinic3.md §6.4).
    assert_eq!(r.ok(module::L2NIC, 9, &[0; 12]).len(), 192);
    let mut ps = vec![0u8; 12];
    ps[8] = 1;
    assert_eq!(r.ok(module::MAG, 151, &ps).len(), 816);
    r.port.assert_no_faults();
}

#[test]
fn malformed_and_unknown_commands_are_refused() {
    let mut r = Rig::new(Sp670Config::default());
    r.bring_up();
    // FUNC_RESET for another function.
    let mut reset = vec![0u8; 24];
    reset[8] = 9;
    reset[16] = 1;
    assert_eq!(r.call(module::COMM, 0, &reset)[0], STATUS_BAD);
    let f = protocol_faults(&r.port);
    assert!(f.iter().any(|s| s.contains("func_id 9")), "{f:?}");
    // A command queue beyond those GET_GLOBAL_ATTR reports (cmdq_num, at most 4; docs/hw/hinic3.md §7.3, §8.1).
    let mut c = r.cmdq_ctx_at(CMDQ_ASYNC_RING);
    c[10] = 4;
    assert_eq!(r.call(module::COMM, 20, &c)[0], STATUS_BAD);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("cmdq_id 4")));
    // The root context naming another RX buffer size than SET_FUNC_TBL (docs/hw/hinic3.md §10.4).
    let mut tbl = vec![0u8; 56];
    tbl[12] = 2;
    tbl[16..18].copy_from_slice(&4096u16.to_le_bytes());
    r.ok(module::L2NIC, 5, &tbl);
    let mut root = vec![0u8; 32];
    root[12] = 11;
    root[14] = 1;
    root[16] = 6;
    root[18] = 7;
    assert_eq!(r.call(module::COMM, 21, &root)[0], STATUS_BAD);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("SET_FUNC_TBL said 4096")));
    root[12] = 13;
    r.ok(module::COMM, 21, &root);
    // Wrong length.
    assert_eq!(r.call(module::L2NIC, 6, &[0; 20])[0], STATUS_BAD);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("request of 20 bytes")));
    // Reserved bytes set.
    let mut vport = vec![0u8; 16];
    vport[15] = 1;
    assert_eq!(r.call(module::L2NIC, 6, &vport)[0], STATUS_BAD);
    assert!(!protocol_faults(&r.port).is_empty());
    // Unknown: an error status, not silent success, and no fault (a driver may probe).
    assert_eq!(r.call(module::L2NIC, 200, &[0; 16])[0], STATUS_UNSUPPORTED);
    assert_eq!(r.call(9, 1, &[0; 16])[0], STATUS_UNSUPPORTED);
    // A DMA descriptor with a wrong checksum is refused in the write-back (0xFE).
    r.msg_id += 1;
    r.write_mem(MBOX_BODY, &[0; 16]);
    let iova = r.iova(MBOX_BODY);
    let h = header(module::L2NIC, 6, r.msg_id, 16, 16, 0, true, true);
    let s = r.send_segment(h, &[0x1234, (iova >> 32) as u32, iova as u32, 16, 0, 0], 16);
    assert_eq!(s & 0xFF, 0xFE);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("checksum")));
    // An inline segment out of order.
    let h = header(module::CFGM, 0, 3, 336, 48, 2, false, false);
    assert_eq!(r.send_segment(h, &[0; 12], 48) & 0xFF, 0xFE);
    assert!(!protocol_faults(&r.port).is_empty());
}

#[test]
fn wrong_byte_order_is_rejected() {
    let mut r = Rig::new(Sp670Config::default());
    r.bring_up();
    r.port.assert_no_faults();
    // A CSR written without the swap: AEQ_CTRL_1 = 64 | 1 << 24 arrives as 0x0100_0040 swapped.
    r.wr(AEQ_INDIR, 2);
    r.cfg.write32(AEQ_CTRL_1, 64 | 1 << 24);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("AEQ_CTRL_1")));
    r.cfg.write32(FUNC_ATTR6, 0x11);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("FUNC_ATTR6")));
    // A mailbox header without the swap: refused in the write-back.
    r.write_mem(MBOX_WB, &[0; 16]);
    let h = header(module::COMM, 60, 1, 48, 48, 0, true, false);
    r.cfg.write32(MBOX_WIN, h as u32);
    r.cfg.write32(MBOX_WIN + 4, (h >> 32) as u32);
    r.wr(MBOX_INT_OFFSET, 14 << 20 | 1 << 28);
    r.wr(MBOX_CONTROL, 1 << 1 | 0x1FFF << 16);
    r.step();
    assert_eq!(r.wb_status() & 0xFF, 0xFE);
    assert!(!protocol_faults(&r.port).is_empty());
    // A cmdq buffer left little-endian: the context header's fields trade places and the command fails.
    r.cmdq_setup();
    let mut b = vec![0u8; 8];
    b[0..2].copy_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&r.sq_ctx(0));
    let (err, _) = r.cmdq_try(0, &b, false).expect("completes");
    assert_ne!(err, 0);
    assert!(!protocol_faults(&r.port).is_empty());
    assert_eq!(r.port.sq_context(0), None);
    // The same buffer swapped is taken.
    assert_eq!(r.cmdq(0, &b), (0, 0));
    assert!(r.port.sq_context(0).is_some());
    r.port.assert_no_faults();
}

#[test]
fn stop_and_close_sequences_are_answered() {
    let mut r = Rig::new(Sp670Config::default());
    r.init_and_start(2);
    let mac = r.port.config().mac;
    r.step();
    while let Some((h, b)) = r.aeq_message(0) {
        r.ack(h, &b);
    }
    // Per-queue RX stop (docs/hw/hinic3.md §14.6): L2NIC 35 and the cmdq 10 flush hand back every posted buffer.
    let mut en = vec![0u8; 16];
    en[8] = 1;
    r.ok(module::L2NIC, 35, &en);
    let mut flush = Vec::new();
    flush.extend_from_slice(&(1u32 << 16).to_le_bytes());
    assert_eq!(r.cmdq(10, &flush), (0, 0));
    for i in 0..DEPTH - 1 {
        let c = le32(&r.read_mem(CQES + 0x2000 + i as usize * 32, 4), 0);
        assert_ne!(c & (1 << 28), 0, "CQE {i} of RQ 1 comes back flushed");
    }
    // Stop (docs/hw/hinic3.md §14.4).
    r.ok(module::MAG, 6, &[0; 16]);
    r.ok(module::L2NIC, 6, &[0; 16]);
    r.port.inject(&udp_frame(mac, [10, 0, 0, 9], 7, 64));
    r.step();
    assert!(r.recv(0).is_none(), "nothing is delivered with the vport off");
    r.ok(module::L2NIC, 113, &[0; 12]);
    r.ok(module::L2NIC, 11, &[0; 12]);
    assert_eq!(r.port.sq_context(0), None, "CLEAR_QP_RESOURCE drops the contexts");
    r.ok(module::L2NIC, 7, &[0; 16]);
    r.ok(module::L2NIC, 60, &[0; 24]);
    let mut free = vec![0u8; 16];
    free[10] = 2;
    r.ok(module::L2NIC, 61, &free);
    r.ok(module::COMM, 21, &[0; 32]);
    // Close (docs/hw/hinic3.md §14.5), DPDK then Linux's flush.
    let mut del = vec![0u8; 20];
    del[14..20].copy_from_slice(&mac);
    r.ok(module::L2NIC, 22, &del);
    r.ok(module::L2NIC, 25, &[0; 16]);
    r.ok(module::MAG, 8, &[0; 16]);
    r.wr(FUNC_ATTR6, r.rd(FUNC_ATTR6) & !0xFFFF);
    let mut ps = vec![0u8; 16];
    ps[10] = 1;
    r.ok(module::COMM, 22, &ps);
    r.ok(module::COMM, 7, &[0; 48]);
    let mut nego = vec![0u8; 48];
    nego[10] = 1;
    r.ok(module::COMM, 1, &nego);
    r.wr(FUNC_ATTR4, 1);
    r.ok(module::COMM, 2, &[0; 16]);
    // START_FLUSH has no answer.
    assert_eq!(r.send_dma(module::COMM, 3, &[0; 16]) & 0xFF, 0xFF);
    r.step();
    assert!(r.aeq_take(1).is_none());
    r.wr(FUNC_ATTR4, 0);
    assert_eq!(r.port.pf_status(), 0);
    r.port.assert_no_faults();
}

/// LRO and VLAN strip start on (the firmware's defaults are unknown, docs/hw/hinic3.md §7.3): a start without
/// L2NIC 13 is a fault and without 27 tags are stripped; 13 and 27 turn them off, and 13 reads the state back.
#[test]
fn lro_and_vlan_strip_start_on_until_set() {
    let mut r = Rig::new(Sp670Config::default());
    r.leave_offloads_unset = true;
    r.init_and_start(1);
    let f = protocol_faults(&r.port);
    assert!(f.iter().any(|s| s.contains("CFG_RX_LRO")), "{f:?}");
    let get = [0u8; 28];
    assert_eq!(r.ok(module::L2NIC, 13, &get)[12..14], [1, 1], "LRO on for IPv4 and IPv6");
    let mac = r.port.config().mac;
    let mut tagged = udp_frame(mac, [10, 0, 0, 9], 7, 64);
    tagged.splice(12..12, [0x81, 0x00, 0x00, 42]);
    r.port.inject(&tagged);
    r.step();
    let (cqe, data) = r.recv(0).expect("a tagged frame");
    assert_eq!(data.len(), tagged.len() - 4, "the tag stripped");
    assert_eq!((cqe[1] & 0xFFFF, cqe[2] & (1 << 21)), (42, 1 << 21), "VLAN 42 reported stripped");
    r.lro_and_vlan_off();
    assert_eq!(r.ok(module::L2NIC, 13, &get)[12..14], [0, 0], "LRO off");
    r.port.inject(&tagged);
    r.step();
    let (cqe, data) = r.recv(0).expect("a tagged frame");
    assert_eq!(data, tagged, "the tag kept");
    assert_eq!(cqe[2] & (1 << 21), 0);
    r.port.assert_no_faults();
}

/// L2NIC 23 UPDATE_MAC (docs/hw/hinic3.md §7.3, 28 bytes; DPDK's hinic3_update_mac at every port start, which
/// found the model answering "not supported"): the old address leaves the filter table, the new one enters it
/// (0x06 when it is there already); a multicast new address is refused.
#[test]
fn update_mac_replaces_the_filter_entry() {
    let mut r = Rig::new(Sp670Config::default());
    r.bring_up();
    let old = [0x02, 0, 0, 0, 0, 0x0a];
    let new = [0x02, 0, 0, 0, 0, 0x0b];
    let mut set = vec![0u8; 20];
    set[14..20].copy_from_slice(&old);
    r.ok(module::L2NIC, 21, &set);
    let mut upd = vec![0u8; 28];
    upd[14..20].copy_from_slice(&old);
    upd[22..28].copy_from_slice(&new);
    r.ok(module::L2NIC, 23, &upd);
    // The new address is in the table now (SET_MAC: already exists), the old one is not (SET_MAC adds it).
    set[14..20].copy_from_slice(&new);
    assert_eq!(r.call(module::L2NIC, 21, &set)[0], 0x06);
    set[14..20].copy_from_slice(&old);
    r.ok(module::L2NIC, 21, &set);
    assert_eq!(r.call(module::L2NIC, 23, &upd)[0], 0x06, "new already present");
    upd[22] = 0x01;
    assert_eq!(r.call(module::L2NIC, 23, &upd)[0], STATUS_BAD);
    assert!(protocol_faults(&r.port).iter().any(|s| s.contains("not a unicast address")));
    assert_eq!(r.call(module::L2NIC, 23, &[0; 20])[0], STATUS_BAD, "wrong length");
}
