//! The X710 model driven through raw register writes and admin descriptors, queue contexts and ring descriptors
//! built here from docs/hw/i40e.md (section cited per helper), not from any driver. Offsets below are the notes'
//! tables typed out again, so a model that misreads a table disagrees with these tests.
//!
//! This file: identity, reset and firmware ready, the admin queue, MAC and VLAN filters.

mod x710_rig;

use x710_rig::*;

// ---- identity, reset, firmware ready -----------------------------------------------------------------------------

#[test]
fn identity_of_each_part() {
    for (part, id) in [
        (X710Part::X710Sfp, 0x1572),
        (X710Part::Xl710QsfpA, 0x1583),
        (X710Part::Xl710QsfpB, 0x1584),
        (X710Part::Xxv710Sfp28, 0x158B),
    ] {
        let (bar, port) = X710::new(X710Config::part(part));
        let id_ = port.pci_identity();
        assert_eq!((id_.vendor, id_.device), (0x8086, id));
        assert_eq!(id_.bars[0], 8 << 20);
        assert_eq!(bar.len(), 8 << 20);
    }
}

#[test]
fn reset_waits_for_firmware_and_self_clears() {
    // The firmware's delay runs from the model's creation.
    let t = Instant::now();
    let r = Rig::new(X710Config {
        fw_ready_delay: Duration::from_millis(300),
        reset_delay: Duration::from_millis(300),
        first_queue: 128,
        num_queues: 16,
        port: 2,
        ..X710Config::default()
    });
    let early = r.rd(GLNVM_ULD) & 0x18;
    if t.elapsed() < Duration::from_millis(250) {
        assert_eq!(early, 0, "the configuration is not loaded yet");
    }
    poll("GLNVM_ULD", || r.rd(GLNVM_ULD) & 0x18 == 0x18);
    assert!(t.elapsed() >= Duration::from_millis(300));
    // Who am I (docs/hw/i40e.md §3 step 4, §4.3).
    assert_eq!(r.rd(0x1C_0480) & 3, 2, "PFGEN_PORTNUM");
    assert_eq!(r.rd(PFLAN_QALLOC), 128 | (128 + 15) << 16 | 1 << 31);
    let t = Instant::now();
    r.wr(PFGEN_CTRL, 1);
    let during = r.rd(PFGEN_CTRL) & 1;
    r.wr(PF_ATQLEN, 5);
    if t.elapsed() < Duration::from_millis(250) {
        assert_eq!(during, 1, "PFSWR reads 1 during the reset");
    }
    poll("PFSWR", || r.rd(PFGEN_CTRL) & 1 == 0);
    assert!(t.elapsed() >= Duration::from_millis(300));
    assert_eq!(r.rd(PF_ATQLEN), 0, "writes during the reset are ignored");
    r.port.assert_no_faults();
}

#[test]
fn pf_reset_clears_queue_enables_but_keeps_corer_registers() {
    let mut r = ready(X710Config::default(), 1, 1);
    r.wr(PFQF_CTL_0, 1 << 16);
    assert_eq!(r.rd(qtx_ena(0)) & 0x5, 0x5);
    r.reset();
    assert_eq!(r.rd(qtx_ena(0)), 0, "QTX_ENA is PFR");
    assert_eq!(r.rd(qrx_ena(0)), 0, "QRX_ENA is PFR");
    assert_eq!(r.rd(qtx_ctl(0)), 2, "QTX_CTL is CORER");
    assert_eq!(r.rd(PFQF_CTL_0), 1 << 16, "PFQF_CTL_0 is CORER");
    assert_eq!(r.rd(PF_ATQLEN), AQ_LEN | 1 << 31, "the admin queue is EMPR");
    // The firmware forgot the VSI set-up.
    assert_eq!(r.port.vsi_queues(), (0, 0));
    r.bring_up(1);
}

// ---- admin queue ---------------------------------------------------------------------------------------------------

#[test]
fn direct_command_round_trip() {
    let mut r = Rig::new(X710Config {
        fw_version: (8, 5),
        api_version: (1, 12),
        rom_ver: 0xAABB,
        fw_build: 0x1234_5678,
        ..Default::default()
    });
    r.reset();
    r.init_aq();
    let d = r.direct(0x0001, [0; 16]);
    d.ok();
    assert_eq!(le16(&d.desc, 2), 0x0001, "opcode kept");
    assert_eq!((le32(&d.desc, 8), le32(&d.desc, 12)), (0xC00C_1E01, 0xC00C_1E02), "cookies returned unchanged");
    assert_eq!(d.flags() & SI, SI, "the driver's flags stay");
    assert_eq!(d.p32(0), 0xAABB, "rom_ver at 0");
    assert_eq!(d.p32(4), 0x1234_5678, "fw_build at 4");
    assert_eq!((d.p16(8), d.p16(10)), (8, 5), "fw_major/minor at 8/10");
    assert_eq!((d.p16(12), d.p16(14)), (1, 12), "api_major/minor at 12/14");
    assert_eq!(r.rd(PF_ATQH), 1);
    r.port.assert_no_faults();
}

#[test]
fn indirect_command_round_trip_and_short_buffer() {
    let mut r = Rig::new(X710Config { num_queues: 48, first_queue: 64, flow_director: true, ..Default::default() });
    r.reset();
    r.init_aq();
    let d = r.indirect(0x000A, false, [0; 8], &[0; 4096]);
    d.ok();
    let n = d.p32(4) as usize;
    assert!(n >= 6, "{n} capabilities");
    let caps: Vec<(u16, u32, u32, u32)> =
        d.buf[..n * 32].chunks(32).map(|e| (le16(e, 0), le32(e, 4), le32(e, 8), le32(e, 12))).collect();
    assert!(caps.contains(&(0x0041, 48, 0, 64)), "RXQ: number 48, phys_id 64: {caps:x?}");
    assert!(caps.contains(&(0x0042, 48, 0, 64)), "TXQ");
    assert!(caps.contains(&(0x0040, 512, 6, 0)), "RSS: 512 entries of 6 bits");
    // docs/hw/i40e.md §6.2: number = guaranteed filters, logical_id = best effort; DPDK's pool is their sum.
    assert!(caps.contains(&(0x0045, 512, 7680, 0)), "flow director with its filter space: {caps:x?}");
    // docs/hw/i40e.md §6.2: DCB with the enabled TC map 0x1 (TC0) and one TC, which DPDK's VSI set-up checks against.
    assert!(caps.contains(&(0x0018, 1, 0x1, 1)), "DCB: TC map 0x1, one TC: {caps:x?}");
    assert!(d.buf[n * 32..].iter().all(|&b| b == 0), "nothing past the elements");
    // Too small: ENOMEM with the size needed in datalen (docs/hw/i40e.md §6.2).
    let s = r.indirect(0x000A, false, [0; 8], &[0; 64]);
    s.failed(AqRc::Enomem);
    assert_eq!(s.datalen() as usize, n * 32);
    // Write direction: the firmware reads a RD buffer (driver version) and never writes it.
    r.indirect(0x0002, true, [9, 8, 7, 6, 0, 0, 0, 0], b"abc").ok();
    assert_eq!(r.port.driver_version(), Some(([9, 8, 7, 6], "abc".into())));
    r.port.assert_no_faults();
}

#[test]
fn malformed_commands_are_rejected_with_einval_and_a_fault() {
    let mut r = Rig::new(X710Config::default());
    r.reset();
    r.init_aq();
    let seid = |r: &mut Rig| {
        let s = r.indirect(0x0200, false, [0; 8], &[0; 512]);
        le16(&s.buf, 18)
    };
    let vsi = seid(&mut r).to_le_bytes();
    // (what is wrong, the descriptor, its buffer)
    type Case = (&'static str, [u8; 32], Option<Vec<u8>>);
    let cases: Vec<Case> = vec![
        ("BUF on a direct command", desc(SI | BUF, 0x0001, 0, [0; 16]), Some(vec![0; 16])),
        ("a direct command with datalen", desc(SI, 0x0001, 16, [0; 16]), None),
        ("reserved parameter byte", desc(SI, 0x0001, 0, [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), None),
        ("DD left set by the driver", desc(SI | DD, 0x0001, 0, [0; 16]), None),
        ("indirect without BUF", desc(SI, 0x0107, 24, [0; 16]), None),
        ("RD on a get", desc(SI | BUF | RD, 0x0200, 512, [0; 16]), Some(vec![0; 512])),
        ("no RD on a set", desc(SI | BUF, 0x0002, 3, [0; 16]), Some(b"abc".to_vec())),
        ("no LB above 512 bytes", desc(SI | BUF, 0x0600, 536, [0; 16]), Some(vec![0; 536])),
        ("LB on a small buffer", desc(SI | BUF | LB, 0x0107, 24, [0; 16]), Some(vec![0; 24])),
        ("MAC read buffer too short", desc(SI | BUF, 0x0107, 16, [0; 16]), Some(vec![0; 16])),
        (
            "VSI seid at the wrong offset",
            desc(SI | BUF, 0x0212, 128, [0, vsi[0], vsi[1], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            Some(vec![0; 128]),
        ),
        (
            "MAC-VLAN without the SEID valid bit",
            desc(SI | BUF | RD, 0x0250, 16, [1, 0, vsi[0], vsi[1], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            Some(vec![2, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]),
        ),
        (
            "MAC-VLAN length not 16 per address",
            desc(SI | BUF | RD, 0x0250, 24, [1, 0, vsi[0], vsi[1] | 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            Some(vec![0; 24]),
        ),
        (
            "promiscuous flags outside valid",
            desc(SI, 0x0254, 0, [0x04, 0, 0x01, 0, vsi[0], vsi[1], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            None,
        ),
        ("link status command_flags 1", desc(SI, 0x0607, 0, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), None),
        ("MAC config above 9728", desc(SI, 0x0603, 0, [0x01, 0x26, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), None),
    ];
    for (what, d, buf) in cases {
        let done = r.send_raw(d, buf.as_deref());
        assert_eq!(done.retval(), AqRc::Einval as u16, "{what}: retval");
        assert_eq!(done.flags() & (DD | CMP | ERR), DD | CMP | ERR, "{what}: flags");
        let faults = protocol_faults(&r.port);
        assert_eq!(faults.len(), 1, "{what}: one fault, got {faults:?}");
    }
    // The 0x0607 at the right offset and 9728 itself are fine.
    r.direct(0x0603, [0x00, 0x26, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).ok();
    assert_eq!(r.port.mac_config(), (9728, true));
    // An unknown opcode: ESRCH, never success, and not a fault.
    r.direct(0x0777, [0; 16]).failed(AqRc::Esrch);
    r.direct(0x0108, [0; 16]).failed(AqRc::Esrch);
    r.port.assert_no_faults();
}

#[test]
fn rx_control_commands_depend_on_the_api_version() {
    let mut r = Rig::new(X710Config { api_version: (1, 4), ..Default::default() });
    r.reset();
    r.init_aq();
    let mut p = [0u8; 16];
    p[4..8].copy_from_slice(&(PFQF_CTL_0 as u32).to_le_bytes());
    p[12..16].copy_from_slice(&(1u32 << 16).to_le_bytes());
    r.direct(0x0207, p).failed(AqRc::Esrch);
    let mut r = Rig::new(X710Config::default());
    r.reset();
    r.init_aq();
    r.direct(0x0207, p).ok();
    assert_eq!(r.rd(PFQF_CTL_0), 1 << 16);
    let mut q = [0u8; 16];
    q[4..8].copy_from_slice(&(pfqf_hena(1) as u32).to_le_bytes());
    r.wr(pfqf_hena(1), 0x8000_0000);
    assert_eq!(r.direct(0x0206, q).ok().p32(12), 0x8000_0000);
    q[4..8].copy_from_slice(&(PFGEN_CTRL as u32).to_le_bytes());
    r.direct(0x0207, q).failed(AqRc::Einval);
    assert_eq!(protocol_faults(&r.port).len(), 1);
}

#[test]
fn mac_filters_and_promiscuous_modes() {
    let mut r = ready(X710Config::default(), 1, 1);
    let other = [0x02, 0, 0, 0, 0, 0x42];
    let seid = r.learnt.vsi_seid;
    let s = seid.to_le_bytes();
    r.port.inject(&udp(other, 1, 2, 40));
    r.step();
    assert!(r.recv(0).is_none(), "an unknown unicast MAC is filtered");
    assert_eq!(r.port.counters().rx_filtered, 1);
    // Add a MAC filter (docs/hw/i40e.md §6.7): PERFECT | IGNORE_VLAN.
    let mut e = [0u8; 16];
    e[0..6].copy_from_slice(&other);
    e[8..10].copy_from_slice(&0x5u16.to_le_bytes());
    let add = r.indirect(0x0250, true, [1, 0, s[0], s[1] | 0x80, 0, 0, 0, 0], &e);
    add.ok();
    assert_eq!(add.buf[12], 1, "match_method perfect");
    assert_eq!(add.p16(0), 2, "perfect_mac_used: the default filter and this one");
    r.port.inject(&udp(other, 1, 2, 40));
    r.step();
    assert!(r.recv(0).is_some());
    // Remove it; removing it twice fails with ENOENT and error_code 0xFF.
    let mut e = [0u8; 16];
    e[0..6].copy_from_slice(&other);
    e[8] = 0x1 | 0x8;
    r.indirect(0x0251, true, [1, 0, s[0], s[1] | 0x80, 0, 0, 0, 0], &e).ok();
    let again = r.indirect(0x0251, true, [1, 0, s[0], s[1] | 0x80, 0, 0, 0, 0], &e);
    again.failed(AqRc::Enoent);
    assert_eq!(again.buf[12], 0xFF);
    // Unicast promiscuous (with RX_ONLY in valid, docs/hw/i40e.md §6.8).
    let mut p = [0u8; 16];
    p[0..2].copy_from_slice(&0x8001u16.to_le_bytes());
    p[2..4].copy_from_slice(&0x8001u16.to_le_bytes());
    p[4..6].copy_from_slice(&s);
    r.direct(0x0254, p).ok();
    assert_eq!(r.port.promiscuous_flags(), 0x8005);
    r.port.inject(&udp(other, 1, 2, 40));
    r.step();
    assert!(r.recv(0).is_some());
    r.port.assert_no_faults();
}

/// A MAC + VLAN filter (docs/hw/i40e.md §6.7) matches its MAC only with that VLAN ID; untagged frames count as
/// VLAN 0; a MAC-only (IGNORE_VLAN) filter takes every tag.
#[test]
fn mac_vlan_filters_match_the_vlan_id() {
    let mut r = ready(X710Config::default(), 1, 1);
    let mac = r.port.config().mac;
    let s = r.learnt.vsi_seid.to_le_bytes();
    let params = [1, 0, s[0], s[1] | 0x80, 0, 0, 0, 0];
    let plain = udp(mac, 1, 2, 40);
    let tag = |vid: u16| [&plain[..12], &[0x81, 0x00], &vid.to_be_bytes()[..], &plain[12..]].concat();
    let elem = |vid: u16, flags: u16| {
        let mut e = [0u8; 16];
        e[0..6].copy_from_slice(&mac);
        e[6..8].copy_from_slice(&vid.to_le_bytes());
        e[8..10].copy_from_slice(&flags.to_le_bytes());
        e
    };
    // Only the MAC + VLAN 5 filter: the firmware's MAC-only filter removed (PERFECT | IGNORE_VLAN in the remove flags).
    r.indirect(0x0250, true, params, &elem(5, 0x1)).ok();
    r.indirect(0x0251, true, params, &elem(0, 0x1 | 0x8)).ok();
    assert_eq!(r.port.mac_filters(), vec![(mac, Some(5))]);
    let filtered = r.port.counters().rx_filtered;
    for (frame, passes) in [(tag(5), true), (tag(6), false), (plain.clone(), false), (tag(0x3005), true)] {
        r.port.inject(&frame);
        r.step();
        let got = r.recv(0).map(|(d, _, _)| d);
        assert_eq!(got.is_some(), passes, "{:02x?}", &frame[12..16]);
        if let Some(d) = got {
            assert_eq!(d, plain, "the rig's VSI strips the tag into the descriptor");
        }
    }
    assert_eq!(r.port.counters().rx_filtered - filtered, 2, "tag 6 and the untagged frame");
    // MAC + VLAN 0 lets untagged frames in, still not tag 6.
    r.indirect(0x0250, true, params, &elem(0, 0x1)).ok();
    r.port.inject(&plain);
    r.port.inject(&tag(6));
    r.step();
    assert_eq!(r.recv(0).map(|(d, _, _)| d), Some(plain.clone()));
    assert!(r.recv(0).is_none());
    // Removing MAC + VLAN 5 (no IGNORE_VLAN in the remove flags) drops tag 5 again.
    r.indirect(0x0251, true, params, &elem(5, 0x1)).ok();
    r.port.inject(&tag(5));
    r.step();
    assert!(r.recv(0).is_none());
    assert_eq!(r.port.counters().rx_filtered - filtered, 4);
    r.port.assert_no_faults();
}
