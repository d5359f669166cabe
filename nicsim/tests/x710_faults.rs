//! The X710 model driven through raw register writes and admin descriptors, queue contexts and ring descriptors
//! built here from docs/hw/i40e.md (section cited per helper), not from any driver. Offsets below are the notes'
//! tables typed out again, so a model that misreads a table disagrees with these tests.
//!
//! This file: link events and fault injection (admin errors, stalls, error write-backs, hangs, MDD, DMA and tail faults).

mod x710_rig;

use x710_rig::*;

// ---- link events and fault injection -------------------------------------------------------------------------------

#[test]
fn link_flap_posts_events_on_the_arq() {
    let mut r = ready(X710Config::default(), 1, 1);
    assert!(r.next_event().is_none());
    r.port.link_flap(Duration::from_millis(200));
    r.step();
    let down = r.next_event().expect("link down event");
    assert_eq!(le16(&down, 2), 0x0607);
    assert_eq!(le16(&down, 0) & (DD | CMP), DD | CMP);
    assert_eq!(down[16 + 4] & 1, 0, "link_info: down");
    assert_eq!(r.rd(PRTMAC_LINKSTA) & 0x4000_0080, 0);
    poll("link back", || {
        r.port.step();
        r.rd(PRTMAC_LINKSTA) & 0x4000_0080 == 0x4000_0080
    });
    r.step();
    let up = r.next_event().expect("link up event");
    assert_eq!(up[16 + 4] & 1, 1, "link_info: up");
    assert_eq!(up[16 + 3], 0x08, "10G");
    assert!(r.next_event().is_none());
    // Events masked (docs/hw/i40e.md §7.6) or LSE off: nothing posted.
    let mut p = [0u8; 16];
    p[8..10].copy_from_slice(&0x0002u16.to_le_bytes());
    r.direct(0x0613, p).ok();
    r.port.set_cable(false);
    r.step();
    assert!(r.next_event().is_none());
    assert!(!r.port.link_up());
    r.port.assert_no_faults();
}

#[test]
fn a_full_arq_overflows() {
    let r = ready(X710Config::default(), 1, 1);
    // Leave the event slots unread: after 31 events (ARQT = 31), the next one is lost and ARQOVFL set.
    for _ in 0..16 {
        r.port.set_cable(false);
        r.step();
        r.port.set_cable(true);
        r.step();
    }
    assert_eq!(r.rd(PF_ARQLEN) >> 29 & 1, 1, "ARQOVFL");
    assert_eq!(r.port.counters().arq_events, 31);
}

#[test]
fn injected_admin_error_and_stalled_command() {
    let mut r = Rig::new(X710Config::default());
    r.reset();
    r.init_aq();
    r.port.inject_aq_error(Some(0x0001), AqRc::Ebusy);
    r.direct(0x0001, [0; 16]).failed(AqRc::Ebusy);
    r.direct(0x0001, [0; 16]).ok();
    // A command that never completes: ATQH stands still, ATQCRIT tells.
    r.port.stall_admin_queue(true, true);
    let slot = r.post_raw(desc(SI, 0x0001, 0, [0; 16]), None);
    for _ in 0..10 {
        r.port.step();
    }
    assert_eq!(r.rd(PF_ATQH), slot, "head did not move");
    assert_eq!(r.rd(PF_ATQLEN) >> 30 & 1, 1, "ATQCRIT");
    r.port.stall_admin_queue(false, false);
    r.complete(slot, 0).ok();
    r.port.assert_no_faults();
}

#[test]
fn error_write_backs() {
    let mut r = ready(X710Config::default(), 1, 1);
    let f = udp(MAC, 1, 2, 100);
    r.port.inject_error(&f, X710RxError::Crc);
    r.port.inject_error(&f, X710RxError::Oversize);
    r.step();
    let (_, _, crc) = r.recv(0).unwrap();
    assert_eq!((crc >> 19) & 0xFF, 0x01, "RXE");
    let (_, _, big) = r.recv(0).unwrap();
    assert_eq!((big >> 19) & 0xFF, 0x40, "OVERSIZE");
    assert_eq!(r.rd(stat::GLPRT_CRCERRS), 1);
    r.port.assert_no_faults();
}

#[test]
fn tx_hang_and_recovery() {
    let mut r = ready(X710Config::default(), 1, 1);
    r.port.tx_hang(Some(0), true);
    let f = udp([0x02, 0, 0, 0, 0, 0x99], 1, 2, 50);
    let i = r.send(&f, 0, 0);
    r.step();
    assert!(!r.tx_done(i));
    assert_eq!(r.rd(qtx_head(0)), 0);
    assert!(r.port.take_tx().is_empty());
    r.port.tx_hang(Some(0), false);
    r.step();
    assert!(r.tx_done(i));
    assert_eq!(r.port.take_tx().len(), 1);
    r.port.assert_no_faults();
}

#[test]
fn malicious_driver_detection_stops_the_queue() {
    let mut r = ready(X710Config::default(), 1, 1);
    r.send(&[0u8; 0], 0, 0); // a zero-length buffer (docs/hw/i40e.md §11)
    r.step();
    let faults = protocol_faults(&r.port);
    assert!(faults.iter().any(|f| f.contains("MDD") && f.contains("length 0")), "{faults:?}");
    assert_eq!(r.rd(qtx_ena(0)) & 0x5, 0x1, "REQ stays, STAT drops");
    assert_eq!(r.rd(GL_MDET_TX) >> 31, 1);
}

#[test]
fn link_down_drops_tx_into_tdold() {
    let mut r = ready(X710Config::default(), 1, 1);
    // Set PHY Config without ENABLE_LINK takes the link down administratively (docs/hw/i40e.md §7.2).
    let mut p = [0u8; 16];
    p[4] = 0x08;
    p[5] = 0x20;
    r.direct(0x0601, p).ok();
    r.step();
    assert!(!r.port.link_up());
    let i = r.send(&udp([2, 0, 0, 0, 0, 9], 1, 2, 50), 0, 0);
    r.step();
    assert!(r.tx_done(i), "completed anyway");
    assert!(r.port.take_tx().is_empty());
    assert_eq!(r.rd(stat::GLPRT_TDOLD), 1);
    // And up again with ENABLE_LINK | ENABLE_AN | ATOMIC_LINK, every PHY type (docs/hw/i40e.md §7.2).
    let mut p = [0u8; 16];
    p[0..4].copy_from_slice(&0x7FFF_FFFFu32.to_le_bytes());
    p[4] = 0x08;
    p[5] = 0x08 | 0x10 | 0x20;
    p[13] = 0x3F;
    r.direct(0x0601, p).ok();
    assert!(r.port.link_up());
    r.port.assert_no_faults();
}

#[test]
fn threaded_model_answers_by_itself() {
    let mut r = Rig::new(X710Config::default());
    let _thread = r.port.start_thread();
    r.reset();
    r.init_aq();
    let slot = r.post_raw(desc(SI, 0x0001, 0, [0; 16]), None);
    poll("ATQH", || r.rd(PF_ATQH) == r.atq_next);
    let d: [u8; 32] = r.read_mem(ATQ_RING + slot as usize * 32, 32).try_into().unwrap();
    assert_eq!(le16(&d, 0) & (DD | CMP), DD | CMP);
    r.port.assert_no_faults();
}

#[test]
fn dma_outside_the_map_is_a_fault() {
    let mut r = Rig::new(X710Config::default());
    r.reset();
    r.init_aq();
    let mut d = desc(SI | BUF, 0x0107, 24, [0; 16]);
    d[24..28].copy_from_slice(&0u32.to_le_bytes());
    d[28..32].copy_from_slice(&0x1000u32.to_le_bytes());
    let done = r.send_raw(d, None);
    assert_eq!(done.retval(), AqRc::BadAddr as u16);
    assert!(matches!(r.port.take_faults().as_slice(), [Fault::Dma { iova: 0x1000, write: true, .. }]));
    let _ = regs::BAR0_LEN;
}

#[test]
fn a_tail_past_the_ring_is_refused() {
    let r = ready(X710Config::default(), 1, 1);
    r.wr(qtx_tail(0), RING);
    r.wr(qrx_tail(0), RING + 5);
    assert_eq!(r.rd(qtx_tail(0)), 0, "the TX tail kept its value");
    assert_eq!(r.rd(qrx_tail(0)), RING - 1);
    let faults = protocol_faults(&r.port);
    assert_eq!(faults.len(), 2, "{faults:?}");
    assert!(faults[0].contains("QTX_TAIL(0)") && faults[1].contains("QRX_TAIL(0)"));
    // A queue register beyond this PF's queues is a fault too.
    r.wr(qtx_tail(64), 1);
    assert!(protocol_faults(&r.port)[0].contains("beyond this PF"));
}

#[test]
fn queue_enable_handshake_takes_its_time() {
    let delay = Duration::from_millis(300);
    let mut r = Rig::new(X710Config { queue_enable_delay: delay, ..Default::default() });
    r.bring_up(1);
    r.setup_rx(0, 9728, |_| {});
    let t = Instant::now();
    r.wr(qrx_ena(0), 1);
    let during = r.rd(qrx_ena(0)) & 0x5;
    if t.elapsed() < delay * 4 / 5 {
        assert_eq!(during, 0x1, "REQ set, STAT not yet");
    }
    poll("RX STAT", || r.rd(qrx_ena(0)) & 0x5 == 0x5);
    assert!(t.elapsed() >= delay);
    // Disable: STAT stays 1 until the delay has passed.
    let t = Instant::now();
    r.wr(qrx_ena(0), 0);
    let during = r.rd(qrx_ena(0)) & 0x5;
    if t.elapsed() < delay * 4 / 5 {
        assert_eq!(during, 0x4, "REQ clear, STAT still 1");
    }
    poll("RX off", || r.rd(qrx_ena(0)) & 0x5 == 0);
    assert!(t.elapsed() >= delay);
    r.port.assert_no_faults();
}

#[test]
fn transmitted_frames_to_a_pcap_file() {
    let mut r = ready(X710Config::default(), 1, 1);
    let path = std::env::temp_dir().join(format!("nicsim-x710-{}.pcap", std::process::id()));
    r.port.wire_to_pcap(&path).unwrap();
    let f = udp([0x02, 0, 0, 0, 0, 0x99], 1, 2, 80);
    r.send(&f, 0, 0);
    r.step();
    r.port.flush_pcap().unwrap();
    let records = swports::pcap_file::read_all(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].data, f);
    r.port.assert_no_faults();
}

#[test]
fn an_admin_error_injected_n_times_hits_n_commands_of_its_opcode_then_stops() {
    let mut r = Rig::new(X710Config::default());
    r.reset();
    r.init_aq();
    r.port.inject_aq_errors(Some(0x0001), AqRc::Eagain, 3);
    r.direct(0x0607, [0; 16]).ok(); // another opcode (Get Link Status) is not hit
    for _ in 0..3 {
        r.direct(0x0001, [0; 16]).failed(AqRc::Eagain);
    }
    r.direct(0x0001, [0; 16]).ok();
    r.port.assert_no_faults();
}

#[test]
fn rx_control_commands_reach_the_register_and_mmio_writes_are_counted() {
    let mut r = Rig::new(X710Config::default());
    r.reset();
    r.init_aq();
    // docs/hw/i40e.md §6.11: address at 4, value at 12; PFQF_CTL_0 is 0x1C0AC0.
    let mut p = [0u8; 16];
    p[4..8].copy_from_slice(&0x1C_0AC0u32.to_le_bytes());
    p[12..16].copy_from_slice(&0x0001_0000u32.to_le_bytes());
    r.direct(0x0207, p).ok();
    assert_eq!(r.rd(0x1C_0AC0), 0x0001_0000);
    p[12..16].fill(0);
    assert_eq!(r.direct(0x0206, p).ok().p32(12), 0x0001_0000, "0x0206 reads it back");
    assert_eq!(r.port.counters().rx_ctl_mmio_writes, 0);
    r.wr(0x1C_0AC0, 0);
    assert_eq!(r.port.counters().rx_ctl_mmio_writes, 1, "the MMIO fallback is told apart");
    r.port.assert_no_faults();
}
