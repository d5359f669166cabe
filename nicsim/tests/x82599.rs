//! The 82599 variant of the model, driven through its registers: identity, CTRL.RST versus CTRL.LNK_RST, the MAC
//! link through AUTOC/AUTOC2 and the SFP+ laser on ESDP.SDP3, and the RX security-block errata handshake (see
//! docs/hw/ixgbe.md §3.2 step 4, §3.7 step 35, §5.6, §15).

mod common;

use std::time::{Duration, Instant};

use common::*;
use drvkit::bar::RegisterSpace;
use nicsim::x540::regs::*;
use nicsim::{run_until_idle, Chip, Fault, LinkSpeed, X540Config, X540};

fn cfg() -> X540Config {
    X540Config { mac: MAC, ..X540Config::x82599() }
}

fn link_up(r: &Rig) -> bool {
    r.rd(LINKS) & LINKS_UP != 0
}

fn speed(r: &Rig) -> u32 {
    (r.rd(LINKS) >> LINKS_SPEED_SHIFT) & 3
}

fn protocol_faults(r: &Rig) -> Vec<String> {
    r.port
        .take_faults()
        .into_iter()
        .map(|f| match f {
            Fault::Protocol { what } => what,
            other => panic!("unexpected fault {other}"),
        })
        .collect()
}

#[test]
fn identity_and_power_up_link() {
    let r = Rig::new(cfg());
    assert_eq!(r.port.config().chip, Chip::X82599);
    let id = r.port.pci_identity();
    assert_eq!((id.vendor, id.device), (0x8086, 0x10FB));
    assert_eq!(id.bar0_len(), 512 << 10);
    assert_eq!(r.bar.len(), 512 << 10);
    // NVM defaults: LMS = 10G serial, SFI, link enabled, laser on: the link trains at power-up.
    assert_eq!((r.rd(AUTOC) >> AUTOC_LMS_SHIFT) & AUTOC_LMS_MASK, LMS_10G_SERIAL);
    assert_eq!(r.rd(AUTOC2) & AUTOC2_LINK_DISABLE_MASK, 0);
    assert_eq!(r.rd(ESDP) & ESDP_SDP3, 0);
    assert!(link_up(&r));
    assert_eq!(speed(&r), 0b11);
    // No MDIO PHY: a read cycle completes and reads all ones.
    r.wr(MSCA, (1 << 16) | (3 << 26) | MSCA_MDI_COMMAND);
    assert_eq!(r.rd(MSCA) & MSCA_MDI_COMMAND, 0);
    assert_eq!(r.rd(MSRWD) >> 16, 0xFFFF);
    r.port.assert_no_faults();
}

#[test]
fn ctrl_rst_keeps_the_link_and_lnk_rst_with_link_up_is_a_fault() {
    // Training takes a second: long enough to see the link down after LNK_RST on a loaded host.
    let r = Rig::new(X540Config { link_up_delay: Duration::from_secs(1), ..cfg() });
    poll("link up at power-up", Duration::from_secs(30), || link_up(&r));
    r.wr(FCTRL, FCTRL_UPE);
    r.set(CTRL, CTRL_RST);
    assert_eq!(r.rd(CTRL) & (CTRL_RST | CTRL_LNK_RST), 0);
    assert_eq!(r.rd(FCTRL), 0, "MAC registers back to defaults");
    assert!(link_up(&r), "CTRL.RST does not reset the link");
    r.port.assert_no_faults();

    r.set(CTRL, CTRL_LNK_RST);
    let f = protocol_faults(&r);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].contains("LNK_RST with the link up"), "{}", f[0]);
    assert!(!link_up(&r), "LNK_RST resets the link");
    // It trains again by itself with AUTOC's mode (DPDK's port start relies on it), no AN_RESTART needed.
    assert_ne!(r.rd(ANLP1) >> ANLP1_AN_STATE_SHIFT & 0xF, 0, "training");
    poll("link up again after LNK_RST", Duration::from_secs(30), || link_up(&r));
    r.set(AUTOC, AUTOC_AN_RESTART);
    assert_eq!(r.rd(AUTOC) & AUTOC_AN_RESTART, 0, "AN_RESTART is not stored");
    poll("link up after AN_RESTART", Duration::from_secs(30), || link_up(&r));
    // With the link down LNK_RST is the right reset: no fault.
    r.set(AUTOC2, AUTOC2_LINK_DISABLE_MASK);
    assert!(!link_up(&r));
    r.set(CTRL, CTRL_LNK_RST);
    assert_eq!(r.rd(AUTOC2) & AUTOC2_LINK_DISABLE_MASK, 0, "AUTOC2 back to its NVM value");
    r.port.assert_no_faults();
}

#[test]
fn slow_link_reset_reads_back_lnk_rst() {
    let (r, ctrl) = with_delay("link reset delay", |d| {
        let r = Rig::new(X540Config { phy_powered_down: true, ..cfg() });
        r.port.set_reset_delay(d);
        let t = Instant::now();
        r.set(CTRL, CTRL_LNK_RST);
        let ctrl = r.rd(CTRL);
        (t.elapsed() < d).then_some((r, ctrl))
    });
    assert_ne!(ctrl & CTRL_LNK_RST, 0);
    poll("LNK_RST clear", Duration::from_secs(30), || r.rd(CTRL) & CTRL_LNK_RST == 0);
    r.port.assert_no_faults();
}

#[test]
fn laser_off_at_power_up_needs_laser_on_and_an_restart() {
    let delay = Duration::from_millis(30);
    let r = Rig::new(X540Config { phy_powered_down: true, link_up_delay: delay, ..cfg() });
    assert_ne!(r.rd(ESDP) & ESDP_SDP3, 0, "laser off");
    assert!(!link_up(&r));
    r.clear(ESDP, ESDP_SDP3);
    stays("the laser alone does not train the link", delay * 4, || !link_up(&r));
    let t = Instant::now();
    r.set(AUTOC, AUTOC_AN_RESTART);
    poll("link up", Duration::from_secs(30), || link_up(&r));
    assert!(t.elapsed() >= delay, "training takes link_up_delay: up after {:?}", t.elapsed());
    assert_eq!(speed(&r), 0b11);
    // ESDP survives a reset (the laser stays on, the link stays trained).
    r.set(CTRL, CTRL_RST);
    assert_eq!(r.rd(ESDP) & ESDP_SDP3, 0);
    assert!(link_up(&r));
    r.port.assert_no_faults();
}

#[test]
fn link_speed_follows_autoc_lms_and_the_partner() {
    let r = Rig::new(X540Config { partner_speed: LinkSpeed::G1, ..cfg() });
    assert!(!link_up(&r), "10G serial against a 1G partner: no link");
    let autoc = r.rd(AUTOC) & !(AUTOC_LMS_MASK << AUTOC_LMS_SHIFT);
    r.wr(AUTOC, autoc | (LMS_1G_AN << AUTOC_LMS_SHIFT) | AUTOC_AN_RESTART);
    assert!(link_up(&r));
    assert_eq!(speed(&r), 0b10);
    r.wr(AUTOC, autoc | (LMS_KX4_KX_KR << AUTOC_LMS_SHIFT) | AUTOC_AN_RESTART);
    assert_eq!(speed(&r), 0b10);
    r.set(AUTOC2, 1 << 28);
    assert!(!link_up(&r), "AUTOC2.LINK_DISABLE");
    r.clear(AUTOC2, AUTOC2_LINK_DISABLE_MASK);
    assert!(link_up(&r));
    r.port.assert_no_faults();
}

#[test]
fn wired_pair_needs_both_lasers() {
    let ((bar_a, a), (bar_b, b)) = X540::pair(cfg());
    let (ra, rb) = (Rig::with(bar_a, a), Rig::with(bar_b, b));
    assert_eq!(rb.port.config().chip, Chip::X82599);
    assert!(link_up(&ra) && link_up(&rb));
    ra.set(ESDP, ESDP_SDP3);
    assert!(!link_up(&ra) && !link_up(&rb), "a's laser off: neither end has a link");
    assert_ne!(rb.rd(EICR) & EICR_LSC, 0);
    ra.clear(ESDP, ESDP_SDP3);
    assert!(link_up(&ra) && link_up(&rb));
    ra.port.assert_no_faults();
    rb.port.assert_no_faults();
}

#[test]
fn rxen_without_the_security_block_disabled_is_a_fault() {
    let r = Rig::new(cfg());
    r.bring_up();
    r.set(RXCTRL, RXCTRL_RXEN);
    let f = protocol_faults(&r);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].contains("SECRXCTRL.RX_DIS is clear"), "{}", f[0]);
    // Re-writing RXEN while already set is no new enable.
    r.set(RXCTRL, RXCTRL_RXEN);
    r.port.assert_no_faults();
}

#[test]
fn rxen_before_secrx_rdy_is_a_fault() {
    let (r, rdy, f) = with_delay("SECRX_RDY delay", |d| {
        let r = Rig::new(X540Config { secrx_ready_delay: d, ..cfg() });
        r.bring_up();
        let t = Instant::now();
        r.set(SECRXCTRL, SECRXCTRL_RX_DIS);
        let rdy = r.rd(SECRXSTAT) & SECRXSTAT_SECRX_RDY;
        r.set(RXCTRL, RXCTRL_RXEN);
        let quick = t.elapsed() < d;
        let f = protocol_faults(&r);
        quick.then_some((r, rdy, f))
    });
    assert_eq!(rdy, 0, "not ready yet");
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].contains("before SECRXSTAT.SECRX_RDY"), "{}", f[0]);
    // The proper sequence: RX_DIS, poll SECRX_RDY, RXEN, clear RX_DIS.
    r.clear(RXCTRL, RXCTRL_RXEN);
    poll("SECRX_RDY", Duration::from_secs(30), || r.rd(SECRXSTAT) & SECRXSTAT_SECRX_RDY != 0);
    r.set(RXCTRL, RXCTRL_RXEN);
    r.clear(SECRXCTRL, SECRXCTRL_RX_DIS);
    assert_eq!(r.rd(SECRXSTAT) & SECRXSTAT_SECRX_RDY, 0, "SECRX_RDY only while RX_DIS holds the block");
    r.port.assert_no_faults();
}

#[test]
fn frames_wait_while_the_security_block_is_disabled() {
    let mut r = Rig::new(cfg());
    r.bring_up();
    r.setup_rx(0, 2, false);
    r.port.assert_no_faults();
    r.set(FCTRL, FCTRL_UPE);
    r.set(SECRXCTRL, SECRXCTRL_RX_DIS);
    for i in 0..3 {
        assert!(r.port.inject(&udp4_frame(MAC, 100 + i, 64)));
    }
    r.port.step();
    assert!(r.rx_frame(0).is_none(), "held at the security block");
    assert_eq!(r.port.rx_pending(), 3);
    r.clear(SECRXCTRL, SECRXCTRL_RX_DIS);
    r.port.step();
    for _ in 0..3 {
        let (d, _, n) = r.rx_frame(0).expect("delivered once RX_DIS is clear");
        assert_ne!(d[2] & RXD_STAT_EOP, 0);
        assert_eq!(n, 1);
    }
    assert_eq!(r.port.counters().rx_delivered, 3);
    r.port.assert_no_faults();
}

#[test]
fn a_wired_82599_pair_exchanges_frames() {
    let ((bar_a, a), (bar_b, b)) = X540::pair(cfg());
    let (mut ra, mut rb) = (Rig::with(bar_a, a), Rig::with(bar_b, b));
    for r in [&mut ra, &mut rb] {
        r.bring_up();
        r.setup_rx(0, 2, false);
        r.setup_tx(0);
        r.set(FCTRL, FCTRL_UPE);
    }
    let mut mac_b = MAC;
    mac_b[5] += 1;
    for i in 0..10 {
        ra.send(0, &udp4_frame(mac_b, i, 100));
        rb.send(0, &udp4_frame(MAC, i, 100));
    }
    run_until_idle(&[&ra.port, &rb.port]);
    let (mut got_a, mut got_b) = (0, 0);
    while ra.rx_frame(0).is_some() {
        got_a += 1;
    }
    while rb.rx_frame(0).is_some() {
        got_b += 1;
    }
    assert_eq!((got_a, got_b), (10, 10));
    ra.port.assert_no_faults();
    rb.port.assert_no_faults();
}

#[test]
fn the_x540_keeps_plain_rxen() {
    let mut r = Rig::new(X540Config { mac: MAC, ..Default::default() });
    assert_eq!(r.port.config().chip, Chip::X540);
    r.bring_up();
    r.setup_rx(0, 2, false);
    r.set(CTRL, CTRL_LNK_RST);
    r.port.assert_no_faults();
}

/// Receives `frame` on a fresh port of `config` and returns its write-back status/error dword and XEC.
fn rx_status(config: X540Config, frame: &[u8]) -> (u32, u32) {
    let mut r = Rig::new(config);
    r.bring_up();
    r.setup_rx(0, 2, false);
    r.set(FCTRL, FCTRL_UPE);
    assert!(r.port.inject(frame));
    r.port.step();
    let (d, data, _) = r.rx_frame(0).expect("delivered");
    assert_eq!(data, frame);
    r.port.assert_no_faults();
    (d[2], r.rd(XEC))
}

#[test]
fn udp_zero_checksum_errata_flags_l4e_on_the_82599_only() {
    let good = udp4_frame(MAC, 5, 60);
    let mut zero = good.clone();
    zero[40..42].copy_from_slice(&[0, 0]); // UDP checksum field: "no checksum"
    let mut wrong = good.clone();
    wrong[41] ^= 0x5A; // a wrong non-zero checksum
    let x540 = X540Config { mac: MAC, ..Default::default() };
    let l4 = RXD_STAT_L4CS | RXD_STAT_UDPCS | RXD_STAT_UDPV | RXD_ERR_L4E | RXD_ERR_IPE;

    // 82599: the errata (docs/hw/ixgbe.md §7.2, §15) flags TCPE/L4E although the frame is fine; UDPV tells it apart.
    let (st, xec) = rx_status(cfg(), &zero);
    assert_eq!(st & l4, RXD_STAT_L4CS | RXD_STAT_UDPCS | RXD_ERR_L4E);
    assert_eq!(xec, 1);
    let (st, _) = rx_status(cfg(), &wrong);
    assert_eq!(st & l4, RXD_STAT_L4CS | RXD_STAT_UDPCS | RXD_STAT_UDPV | RXD_ERR_L4E);
    let (st, xec) = rx_status(cfg(), &good);
    assert_eq!(st & l4, RXD_STAT_L4CS | RXD_STAT_UDPCS | RXD_STAT_UDPV);
    assert_eq!(xec, 0);

    // X540: no errata; a zero UDP checksum over IPv4 is "no checksum", not an error.
    let (st, xec) = rx_status(x540.clone(), &zero);
    assert_eq!(st & l4, RXD_STAT_L4CS | RXD_STAT_UDPCS);
    assert_eq!(xec, 0);
    let (st, _) = rx_status(x540, &wrong);
    assert_eq!(st & l4, RXD_STAT_L4CS | RXD_STAT_UDPCS | RXD_STAT_UDPV | RXD_ERR_L4E);
}

/// Bit-bangs a one-byte random read of the SFP+ module's page A0h through I2CCTL, the way the drivers clock the
/// two-wire bus (data changed with the clock low, sampled with it high); `None` when the module does not acknowledge.
fn sfp_read(r: &Rig, offset: u8) -> Option<u8> {
    let line = |scl: bool, sda: bool| {
        r.wr(I2CCTL, if scl { I2CCTL_CLK_OUT } else { 0 } | if sda { I2CCTL_DATA_OUT } else { 0 });
        r.rd(I2CCTL) & I2CCTL_DATA_IN != 0
    };
    let bit = |b: bool| {
        line(false, b);
        let v = line(true, b);
        line(false, b);
        v
    };
    let start = || {
        line(false, true);
        line(true, true);
        line(true, false);
        line(false, false);
    };
    let stop = || {
        line(false, false);
        line(true, false);
        line(true, true);
    };
    let send = |byte: u8| {
        (0..8).rev().for_each(|i| {
            bit(byte >> i & 1 != 0);
        });
        !bit(true)
    };
    start();
    let acked = send(0xA0) && send(offset) && {
        start();
        send(0xA1)
    };
    let v = acked.then(|| (0..8).fold(0u8, |b, _| b << 1 | u8::from(bit(true))));
    if acked {
        bit(true); // NACK: one byte only
    }
    stop();
    v
}

#[test]
fn sfp_cage_holds_a_passive_da_cable_identified_over_i2c() {
    let r = Rig::new(cfg());
    assert_ne!(r.rd(ESDP) & ESDP_SDP2, 0, "ESDP.SDP2: module present");
    // Writing the pin does not empty the cage (it is an input).
    r.clear(ESDP, ESDP_SDP2);
    assert_ne!(r.rd(ESDP) & ESDP_SDP2, 0);
    assert_eq!(sfp_read(&r, SFF_IDENTIFIER as u8), Some(SFF_IDENTIFIER_SFP));
    assert_eq!(sfp_read(&r, SFF_CABLE_TECHNOLOGY as u8), Some(SFF_DA_PASSIVE_CABLE));
    assert_eq!(sfp_read(&r, SFF_10GBE_COMP_CODES as u8), Some(0), "a cable, not an optic");
    assert_eq!(sfp_read(&r, SFF_1GBE_COMP_CODES as u8), Some(0));
    let base: u8 = (0..63).map(|i| sfp_read(&r, i).unwrap()).fold(0, u8::wrapping_add);
    assert_eq!(sfp_read(&r, SFF_CC_BASE as u8), Some(base), "CC_BASE checks bytes 0..=62");
    // The module is on the link side: a MAC reset leaves it readable.
    r.set(CTRL, CTRL_RST);
    assert_eq!(sfp_read(&r, SFF_IDENTIFIER as u8), Some(SFF_IDENTIFIER_SFP));
    assert!(link_up(&r));
    r.port.assert_no_faults();
}

#[test]
fn empty_sfp_cage_reads_absent_and_never_links() {
    let r = Rig::new(X540Config { sfp_module: false, ..cfg() });
    assert_eq!(r.rd(ESDP) & ESDP_SDP2, 0, "ESDP.SDP2: cage empty");
    assert_eq!(sfp_read(&r, 0), None, "nobody acknowledges address 0xA0");
    assert!(!link_up(&r));
    r.set(AUTOC, AUTOC_AN_RESTART);
    stays("no link without a module", Duration::from_millis(50), || !link_up(&r));
    r.port.assert_no_faults();
}
