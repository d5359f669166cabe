//! The X710 model driven through raw register writes and admin descriptors, queue contexts and ring descriptors
//! built here from docs/hw/i40e.md (section cited per helper), not from any driver. Offsets below are the notes'
//! tables typed out again, so a model that misreads a table disagrees with these tests.
//!
//! This file: what running the i40e driver and a vendor driver's probe found: NVM shadow RAM, debug reads, interrupts, bandwidth queries, TX suspend, head write-back.

mod x710_rig;

use x710_rig::*;

// ---- found by running the i40e driver against the model ---------------------------------------------------------------

#[test]
fn a_driver_write_of_atqh_rings_nothing() {
    let mut r = Rig::new(X710Config::default());
    r.reset();
    r.init_aq();
    r.direct(0x0001, [0; 16]).ok();
    r.direct(0x0001, [0; 16]).ok();
    let done = r.port.counters().aq_commands;
    // Shutdown's order (docs/hw/i40e.md §5.3): H = 0 while T still points past two completed descriptors.
    r.wr(PF_ATQH, 0);
    for _ in 0..4 {
        r.port.step();
    }
    assert_eq!(r.port.counters().aq_commands, done, "completed commands ran again");
    r.wr(PF_ATQT, 0);
    r.wr(PF_ATQLEN, 0);
    r.port.step();
    r.port.assert_no_faults();
}

#[test]
fn get_phy_abilities_reports_the_last_set_phy_config() {
    let mut r = Rig::new(X710Config::default());
    r.reset();
    r.init_aq();
    let current = |r: &mut Rig| {
        let a = r.indirect(0x0600, false, [0; 8], &[0; 536]);
        a.ok();
        (le32(&a.buf, 0), a.buf[4])
    };
    assert_eq!(current(&mut r), (1 << 0x14, 0x08), "the NVM's 10GBASE-SR at 10G before any Set PHY Config");
    // Link down as DPDK does it: no ENABLE_LINK, phy_type 0 (docs/hw/i40e.md §7.2).
    let mut p = [0u8; 16];
    p[4] = 0x08;
    p[5] = 0x20;
    r.direct(0x0601, p).ok();
    assert_eq!(current(&mut r).0, 0, "phy_type 0 after the link-down configuration");
    let mut init = [0u8; 8];
    init[0] = 2;
    let a = r.indirect(0x0600, false, init, &[0; 536]);
    assert_eq!(le32(&a.ok().buf, 0), 1 << 0x14, "the initial values stay the NVM's");
    r.port.assert_no_faults();
}

#[test]
fn an_armed_admin_error_survives_a_pf_reset() {
    let mut r = Rig::new(X710Config::default());
    r.port.inject_aq_error(Some(0x0001), AqRc::Eio);
    r.reset();
    r.init_aq();
    r.direct(0x0001, [0; 16]).failed(AqRc::Eio);
    r.direct(0x0001, [0; 16]).ok();
}

#[test]
fn rx_write_back_carries_the_checksum_verdict() {
    let mut r = ready(X710Config::default(), 1, 1);
    let good = udp(MAC, 1, 2, 40);
    let mut bad_ip = good.clone();
    bad_ip[14 + 10] ^= 0xFF;
    // A UDP checksum that cannot be right (0 means "none" over IPv4, so put 1).
    let mut bad_l4 = good.clone();
    bad_l4[14 + 20 + 6..14 + 20 + 8].copy_from_slice(&1u16.to_be_bytes());
    for (f, l3l4p, ipe, l4e) in [(&good, 1, 0, 0), (&bad_ip, 1, 1, 0), (&bad_l4, 1, 0, 1)] {
        r.port.inject(f);
        r.step();
        let (_, _, qw1) = r.recv(0).expect("delivered");
        assert_eq!(((qw1 >> 3) & 1, (qw1 >> 22) & 1, (qw1 >> 23) & 1), (l3l4p, ipe, l4e), "L3L4P, IPE, L4E");
    }
    r.port.assert_no_faults();
}

/// A probing driver (Linux's i40e) refuses a port whose NVM looks blank: GLNVM_FLA.LOCKED must read 1, and the
/// register is read-only (docs/hw/i40e.md §18).
#[test]
fn the_nvm_reads_programmed_not_blank() {
    let (bar, port) = X710::new(X710Config::default());
    assert_eq!(bar.read32(regs::GLNVM_FLA) & regs::GLNVM_FLA_LOCKED.mask(), regs::GLNVM_FLA_LOCKED.mask());
    bar.write32(regs::GLNVM_FLA, 0);
    assert_eq!(port.take_faults().len(), 1, "a write to the read-only GLNVM_FLA is a fault");
    assert_ne!(bar.read32(regs::GLNVM_FLA) & regs::GLNVM_FLA_LOCKED.mask(), 0);
}

/// GLPCI_CNF2 reports the PF's vectors and at least 2 per VF: `i40e_clear_hw` (DPDK's and Linux's shared code,
/// docs/hw/i40e.md §4.3) clears VPINT_LNKLSTN(n) for n below MSI_X_VF_N - 2 in unsigned arithmetic; with 0 there DPDK's
/// i40e PMD wrote 0x7FF through the whole BAR (the admin queue registers included).
#[test]
fn glpci_cnf2_reports_pf_and_vf_vectors() {
    let (bar, _port) = X710::new(X710Config::default());
    let v = bar.read32(regs::GLPCI_CNF2);
    assert_eq!(regs::GLPCI_CNF2_MSI_X_PF_N.get(v), u32::from(X710Config::default().msix_vectors));
    assert!(regs::GLPCI_CNF2_MSI_X_VF_N.get(v) >= 2, "MSI_X_VF_N {}", regs::GLPCI_CNF2_MSI_X_VF_N.get(v));
}

// ---- what a vendor driver's probe reads: NVM shadow RAM, debug register reads, interrupts --------------------------

const GLNVM_GENS: usize = 0x0B_6100;
const GLNVM_SRCTL: usize = 0x0B_6110;
const GLNVM_SRDATA: usize = 0x0B_6114;
const PFINT_ICR0: usize = 0x03_8780;
const PFINT_ICR0_ENA: usize = 0x03_8800;
const PFINT_DYN_CTL0: usize = 0x03_8480;
fn pfint_dyn_ctln(n: usize) -> usize {
    0x03_4800 + 4 * n
}
fn qint_rqctl(q: usize) -> usize {
    0x03_A000 + 4 * q
}
fn pfint_lnklstn(n: usize) -> usize {
    0x03_5000 + 4 * n
}
fn pfint_itrn(i: usize, n: usize) -> usize {
    0x03_0000 + 2048 * i + 4 * n
}

/// docs/hw/i40e.md §18.1: one shadow RAM word through GLNVM_SRCTL (ADDR 28:14, START 30, DONE 31) and SRDATA 31:16.
fn sr_word(r: &Rig, addr: u32) -> u16 {
    assert_ne!(r.rd(GLNVM_SRCTL) & 1 << 31, 0, "DONE while idle");
    r.wr(GLNVM_SRCTL, addr << 14 | 1 << 30);
    poll("GLNVM_SRCTL.DONE", || r.rd(GLNVM_SRCTL) & 1 << 31 != 0);
    (r.rd(GLNVM_SRDATA) >> 16) as u16
}

#[test]
fn shadow_ram_reads_through_srctl_with_a_valid_checksum() {
    let r = Rig::new(X710Config::default());
    r.reset();
    let gens = r.rd(GLNVM_GENS);
    assert_eq!(gens & 1, 1, "NVM_PRES");
    let words = (1u32 << ((gens >> 5) & 7)) * 512;
    assert_eq!(words % 2048, 0, "whole 4 KB sectors: a checksum pass reads sector by sector (docs/hw/i40e.md §18.1)");
    let image: Vec<u16> = (0..words).map(|a| sr_word(&r, a)).collect();
    assert_eq!((image[0] >> 6) & 3, 0b01, "control word: valid image");
    let (vpd, alt) = (usize::from(image[0x2F]), usize::from(image[0x3E]));
    let sum = image
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != 0x3F && !(vpd..vpd + 512).contains(&i) && !(alt..alt + 512).contains(&i))
        .fold(0u16, |a, (_, &w)| a.wrapping_add(w));
    assert_eq!(sum.wrapping_add(image[0x3F]), 0xBABA, "checksum word 0x3F");
    r.port.assert_no_faults();
    // A write, and a word past the size the register gives, are faults.
    r.wr(GLNVM_SRCTL, 3 << 14 | 1 << 29 | 1 << 30);
    r.wr(GLNVM_SRCTL, words << 14 | 1 << 30);
    let faults = protocol_faults(&r.port);
    assert_eq!(faults.len(), 2, "{faults:?}");
    assert!(faults[0].contains("GLNVM_SRCTL") && faults[1].contains("past the shadow RAM"), "{faults:?}");
}

#[test]
fn debug_register_read_reports_the_board_ports() {
    let mut r = Rig::new(X710Config::default());
    r.reset();
    r.init_aq();
    // docs/hw/i40e.md §18.2: PRTGEN_CNF(n) at 0xB8120 + 4n, PORT_DIS bit 0; the value's low word at 12.
    let port_dis: Vec<u32> = (0..4)
        .map(|n| {
            let mut p = [0u8; 16];
            p[4..8].copy_from_slice(&(0x0B_8120u32 + 4 * n).to_le_bytes());
            let d = r.direct(0xFF03, p);
            d.ok();
            d.p32(12) & 1
        })
        .collect();
    assert_eq!(port_dis, [0, 0, 1, 1], "a two-port board");
    // docs/hw/i40e.md §18.3: GLHMC_FCOEFMAX holds at least 1024 hash filters + 512 contexts.
    assert!(r.rd(0x0C_20D0) & 0xFFFF >= 1536);
    r.port.assert_no_faults();
}

#[test]
fn msix_vectors_signal_once_until_reenabled() {
    let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut r = ready(X710Config::default(), 1, 1);
    let log = sent.clone();
    r.port.set_irq_sink(Some(Arc::new(move |v| log.lock().unwrap().push(v))));
    let taken = || std::mem::take(&mut *sent.lock().unwrap());
    // docs/hw/i40e.md §14: RX queue 0 to vector 1 (QINT_RQCTL MSIX_INDX 7:0, ITR_INDX 12:11 = 3 none, NEXTQ_INDX
    // 26:16 = 0x7FF the end, CAUSE_ENA 30), on vector 1's list (PFINT_LNKLSTN(0) FIRSTQ 0, type RX),
    // DYN_CTLN(0).INTENA.
    r.wr(qint_rqctl(0), 1 << 30 | 0x7FF << 16 | 3 << 11 | 1);
    r.wr(pfint_lnklstn(0), 0);
    r.wr(pfint_dyn_ctln(0), 1);
    let g = udp(MAC, 5, 6, 60);
    r.port.inject(&g);
    r.step();
    assert!(r.recv(0).is_some());
    assert_eq!(taken(), [1], "one message on vector 1");
    r.port.inject(&g);
    r.step();
    assert!(r.recv(0).is_some());
    assert_eq!(taken(), [] as [u16; 0], "INTENA cleared itself when the vector fired");
    r.wr(pfint_dyn_ctln(0), 1 << 31 | 1);
    assert_eq!(taken(), [] as [u16; 0], "INTENA_MSK: the write leaves INTENA alone");
    r.wr(pfint_dyn_ctln(0), 1);
    assert_eq!(taken(), [1], "the cause that came while disabled is signalled on re-enable");
    r.wr(pfint_dyn_ctln(0), 1 | 1 << 2);
    assert_eq!(taken(), [1], "SWINT_TRIG");
    // Vector 0: the admin queue cause (PFINT_ICR0 bit 30) once enabled in PFINT_ICR0_ENA and DYN_CTL0.INTENA.
    r.wr(PFINT_ICR0_ENA, 1 << 30);
    r.wr(PFINT_DYN_CTL0, 1);
    r.port.link_flap(Duration::from_millis(50));
    r.step();
    assert!(r.next_event().is_some(), "link event on the ARQ");
    assert_eq!(taken(), [0], "vector 0 for the ARQ event");
    assert_ne!(r.rd(PFINT_ICR0) & 1 << 30, 0, "ADMINQ latched");
    assert_eq!(r.rd(PFINT_ICR0) & 1 << 30, 0, "cleared by reading");
    assert!(r.port.irq_counts()[1] >= 3);
    r.port.assert_no_faults();
}

#[test]
fn queue_causes_follow_the_vector_list_and_the_itr_throttles() {
    let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut r = ready(X710Config::default(), 1, 1);
    let log = sent.clone();
    r.port.set_irq_sink(Some(Arc::new(move |v| log.lock().unwrap().push(v))));
    let count = || sent.lock().unwrap().len();
    let g = udp(MAC, 5, 6, 60);
    // docs/hw/i40e.md §14.2: the cause enabled but the list of vector 1 empty (its reset value): no message, a fault.
    r.wr(qint_rqctl(0), 1 << 30 | 0x7FF << 16 | 1);
    r.wr(pfint_dyn_ctln(0), 1);
    r.port.inject(&g);
    r.step();
    assert!(r.recv(0).is_some());
    assert_eq!(count(), 0, "a queue off its vector's list signals nothing");
    let faults = protocol_faults(&r.port);
    assert!(faults.len() == 1 && faults[0].contains("not on that vector's list"), "{faults:?}");
    // On the list, ITR 0 at 4000 × 2 µs = 8 ms: the first frame signals, the next waits for the interval.
    r.wr(pfint_lnklstn(0), 0);
    r.wr(pfint_itrn(0, 0), 4000);
    let interval = Duration::from_millis(8);
    r.port.inject(&g);
    r.step();
    assert!(r.recv(0).is_some());
    assert_eq!(count(), 1);
    let first = Instant::now();
    r.wr(pfint_dyn_ctln(0), 1);
    r.port.inject(&g);
    r.step();
    assert!(r.recv(0).is_some());
    poll("the throttled message", || {
        r.step();
        count() == 2
    });
    assert!(first.elapsed() + Duration::from_millis(1) >= interval, "not before the ITR interval");
}

#[test]
fn vsi_bandwidth_limit_and_flow_director_input_sets() {
    let mut r = ready(X710Config::default(), 1, 1);
    // docs/hw/i40e.md §6.12: SEID at 0, credits at 4 (0 = no limit), max_credit at 8.
    let seid = r.learnt.vsi_seid.to_le_bytes();
    r.direct(0x0400, [seid[0], seid[1], 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0]).ok();
    r.direct(0x0400, [0x99, 0x09, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0]).failed(AqRc::Enoent);
    r.direct(0x0400, [seid[0], seid[1], 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).failed(AqRc::Einval);
    // docs/hw/i40e.md §6.11: PRTQF_FD_INSET(63, 1) is an RX control register.
    let mut p = [0u8; 16];
    p[4..8].copy_from_slice(&(0x25_0000u32 + 63 * 64 + 32).to_le_bytes());
    p[12..16].copy_from_slice(&0x1234u32.to_le_bytes());
    r.direct(0x0207, p).ok();
    p[12..16].fill(0);
    assert_eq!(r.direct(0x0206, p).p32(12), 0x1234);
    // GLQF_FD_MSK(1, 63) (0x267200 + 4 i + 8 j): DPDK's i40e_filter_input_set_init reads and clears it this way.
    p[4..8].copy_from_slice(&(0x26_7200u32 + 4 + 8 * 63).to_le_bytes());
    p[12..16].copy_from_slice(&0u32.to_le_bytes());
    r.direct(0x0207, p).ok();
    r.direct(0x0206, p).ok();
    // PFQF_HREGION(7) and GLQF_HSYM(63): DPDK's queue-region reset and symmetric-hash set-up (docs/hw/i40e.md §6.11).
    for addr in [0x24_5400u32 + 7 * 128, 0x26_9D00 + 63 * 4] {
        p[4..8].copy_from_slice(&addr.to_le_bytes());
        p[12..16].copy_from_slice(&0x5u32.to_le_bytes());
        r.direct(0x0207, p).ok();
        p[12..16].fill(0);
        assert_eq!(r.direct(0x0206, p).p32(12), 0x5, "{addr:#x} reads back");
    }
    // Past them: not an RX control register.
    p[4..8].copy_from_slice(&(0x26_9D00u32 + 64 * 4).to_le_bytes());
    r.direct(0x0206, p).failed(AqRc::Einval);
    let faults = protocol_faults(&r.port);
    assert_eq!(faults.len(), 3, "the two refused limits and the register past GLQF_HSYM: {faults:?}");
}

#[test]
fn vsi_bandwidth_queries_report_tc0_only() {
    let mut r = ready(X710Config::default(), 1, 1);
    let seid = r.learnt.vsi_seid.to_le_bytes();
    // docs/hw/i40e.md §6.13: 0x0408 (64 bytes) names TC0's queue set; 0x040A (32 bytes) TC0's share.
    let q = r.indirect(0x0408, false, [seid[0], seid[1], 0, 0, 0, 0, 0, 0], &[0xAA; 64]);
    q.ok();
    assert_eq!(q.buf[0], 0x01, "TC0 valid");
    assert_eq!(le16(&q.buf, 16), r.learnt.qs_handle, "TC0's queue-set handle");
    let e = r.indirect(0x040A, false, [seid[0], seid[1], 0, 0, 0, 0, 0, 0], &[0xAA; 32]);
    e.ok();
    assert_eq!((e.buf[0], e.buf[4]), (0x01, 1), "TC0 valid with its share");
    r.indirect(0x0408, false, [0x99, 0x09, 0, 0, 0, 0, 0, 0], &[0; 64]).failed(AqRc::Enoent);
    assert_eq!(protocol_faults(&r.port).len(), 1);
}

#[test]
fn suspend_port_tx_holds_frames_until_resume() {
    let mut r = ready(X710Config::default(), 1, 1);
    // docs/hw/i40e.md §6.14: Suspend Port TX names the port's MAC element (SEID 2 + port, §6.5).
    r.direct(0x041B, [0x99, 0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).failed(AqRc::Enoent);
    r.direct(0x041B, [2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).ok();
    let f = udp([0x02, 0, 0, 0, 0, 0x99], 1, 2, 50);
    let i = r.send(&f, 0, 0);
    r.step();
    assert!(!r.tx_done(i), "a suspended port transmits nothing");
    assert!(r.port.take_tx().is_empty());
    // Resume Port TX has no parameters; the held frame then goes out.
    r.direct(0x041C, [0; 16]).ok();
    r.step();
    assert!(r.tx_done(i));
    assert_eq!(r.port.take_tx(), vec![f]);
    // Resuming a port that is not suspended also succeeds (Linux resumes after every DCB attempt).
    r.direct(0x041C, [0; 16]).ok();
    // A parameter in a reserved byte is refused.
    r.direct(0x041C, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).failed(AqRc::Einval);
    assert_eq!(protocol_faults(&r.port).len(), 2, "the wrong SEID and the reserved byte");
}

#[test]
fn timesync_queue_enables_and_transmits_but_tsyn_is_refused() {
    // docs/hw/i40e.md §8.5: timesync_ena (bit 90) = 1 is how a driver with IEEE 1588 sets up its LAN queues.
    let mut r = Rig::new(X710Config::default());
    r.bring_up(1);
    r.setup_tx(0, |c| pack(c, 90, 1, 1));
    r.enable_tx(0);
    r.port.assert_no_faults();
    let f = udp([0x02, 0, 0, 0, 0, 0x99], 1, 2, 50);
    let i = r.send(&f, 0, 0);
    r.step();
    assert!(r.tx_done(i));
    assert_eq!(r.port.take_tx(), vec![f]);
    // A context descriptor asking for a timestamp (CMD TSYN, docs/hw/i40e.md §10.4) is not modelled: a fault.
    let at = r.tx_next;
    let qw1: u64 = 0x1 | 0x02 << 4;
    let mut d = [0u8; 16];
    d[8..16].copy_from_slice(&qw1.to_le_bytes());
    r.write_mem(TX_RING + at as usize * 16, &d);
    r.tx_next = (at + 1) % RING;
    r.wr(qtx_tail(0), r.tx_next);
    r.step();
    let faults: Vec<String> = r.port.take_faults().iter().map(|f| format!("{f:?}")).collect();
    assert!(faults.iter().any(|f| f.contains("TSYN")), "{faults:?}");
}

#[test]
fn head_write_back_follows_packets_without_rs() {
    // docs/hw/i40e.md §10.5: with head_wb_ena the head word tracks the processed descriptors, RS or not.
    let mut r = Rig::new(X710Config::default());
    r.bring_up(1);
    let word = TX_RING + RING as usize * 16;
    let iova = r.iova(word);
    r.setup_tx(0, |c| {
        pack(c, 160, 1, 1);
        pack(c, 192, 64, iova);
    });
    r.write_mem(word, &[0xEE; 4]);
    r.enable_tx(0);
    r.port.assert_no_faults();
    let f = udp([0x02, 0, 0, 0, 0, 0x99], 1, 2, 50);
    r.write_mem(TX_BUF, &f);
    // EOP | ICRC, no RS (docs/hw/i40e.md §10.3).
    let qw1 = (0x5u64 << 4) | (f.len() as u64) << 34;
    let mut d = [0u8; 16];
    d[0..8].copy_from_slice(&r.iova(TX_BUF).to_le_bytes());
    d[8..16].copy_from_slice(&qw1.to_le_bytes());
    r.write_mem(TX_RING, &d);
    r.wr(qtx_tail(0), 1);
    r.step();
    assert_eq!(r.port.take_tx(), vec![f]);
    assert_eq!(le32(&r.read_mem(word, 4), 0), 1, "the head word names the next descriptor");
    assert_eq!(le64(&r.read_mem(TX_RING, 16), 8) & 0xF, 0, "no DD write-back in head write-back mode");
    r.port.assert_no_faults();
}
