//! The X540 model driven directly through its registers and hand-built descriptors.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use drvkit::bar::RegisterSpace;
use nicsim::x540::regs::*;
use nicsim::{net, run_until_idle, Fault, LinkSpeed, RxError, X540Config, X540};

fn cfg() -> X540Config {
    X540Config { mac: MAC, ..Default::default() }
}

/// A port brought up with RX queue 0 (2 KiB buffers) and TX queue 0.
fn rig() -> Rig {
    let mut r = Rig::new(cfg());
    r.bring_up();
    r.setup_rx(0, 2, false);
    r.setup_tx(0);
    r
}

// ---- reset -----------------------------------------------------------------------------------------------------

#[test]
fn reset_restores_defaults_and_self_clears() {
    let r = Rig::new(cfg());
    assert_eq!(r.port.pci_identity().vendor, 0x8086);
    assert_eq!(r.port.pci_identity().device, 0x1528);
    assert_eq!(r.bar.len(), 2 << 20);
    r.wr(FCTRL, FCTRL_UPE | FCTRL_BAM);
    r.wr(MAXFRS, 9018 << 16);
    r.wr(ral(0), 0x1234_5678);
    r.wr(mta(3), 0xFFFF);
    r.set(CTRL, CTRL_RST);
    assert_eq!(r.rd(CTRL) & CTRL_RST, 0, "instantaneous reset by default");
    assert_eq!(r.rd(FCTRL), 0);
    assert_eq!(r.rd(MAXFRS), 1518 << 16);
    assert_eq!(r.rd(mta(3)), 0);
    assert_eq!(r.rd(ral(0)), u32::from_le_bytes([MAC[0], MAC[1], MAC[2], MAC[3]]));
    assert_eq!(r.rd(rah(0)), RAH_AV | u32::from(MAC[4]) | u32::from(MAC[5]) << 8);
    assert_ne!(r.rd(EEC) & EEC_ARD, 0);
    assert_ne!(r.rd(RDRXCTL) & RDRXCTL_DMAIDONE, 0);
    assert_eq!(r.rd(STATUS) >> STATUS_LAN_ID_SHIFT & 3, 0);
    assert_ne!(r.rd(STATUS) & STATUS_GIO, 0);
    r.wr(CTRL, CTRL_GIO_DIS);
    assert_eq!(r.rd(STATUS) & STATUS_GIO, 0, "GIO clears once mastering is disabled");
    r.port.assert_no_faults();
}

#[test]
fn slow_reset_and_settle_delays() {
    // Reset for `d`, then the EEPROM read takes 2/5 d more and DMA init 3/5 d more.
    let (r, t, d, (rst, ard, dmai)) = with_delay("slow reset", |d| {
        let r = Rig::new(X540Config { eeprom_delay: d * 2 / 5, dma_init_delay: d * 3 / 5, ..cfg() });
        r.port.set_reset_delay(d);
        let t = Instant::now();
        r.set(CTRL, CTRL_RST);
        let seen = (r.rd(CTRL) & CTRL_RST, r.rd(EEC) & EEC_ARD, r.rd(RDRXCTL) & RDRXCTL_DMAIDONE);
        r.wr(FCTRL, FCTRL_BAM);
        (t.elapsed() < d).then_some((r, t, d, seen))
    });
    assert_ne!(rst, 0, "RST reads 1 during a slow reset");
    assert_eq!(ard, 0);
    assert_eq!(dmai, 0);
    poll("RST", Duration::from_secs(30), || r.rd(CTRL) & CTRL_RST == 0);
    assert!(t.elapsed() >= d);
    assert_eq!(r.rd(FCTRL), 0, "writes during reset are ignored");
    poll("ARD", Duration::from_secs(30), || r.rd(EEC) & EEC_ARD != 0);
    assert!(t.elapsed() >= d * 7 / 5);
    poll("DMAIDONE", Duration::from_secs(30), || r.rd(RDRXCTL) & RDRXCTL_DMAIDONE != 0);
    assert!(t.elapsed() >= d * 8 / 5);
}

#[test]
fn semaphores_grant_on_read() {
    let r = Rig::new(cfg());
    assert_eq!(r.rd(SWSM) & SWSM_SMBI, 0, "first read grants");
    assert_ne!(r.rd(SWSM) & SWSM_SMBI, 0, "then it is taken");
    r.wr(SWSM, 0);
    assert_eq!(r.rd(SW_FW_SYNC) & SW_FW_SYNC_REGSMP, 0);
    assert_ne!(r.rd(SW_FW_SYNC) & SW_FW_SYNC_REGSMP, 0);
    r.wr(SW_FW_SYNC, 0x2); // PHY0 taken, REGSMP released
    assert_eq!(r.rd(SW_FW_SYNC), 0x2);
}

// ---- link ------------------------------------------------------------------------------------------------------

fn mdio(r: &Rig, phy: u32, dev: u32, reg: u32, write: Option<u16>) -> u16 {
    let base = reg | dev << 16 | phy << 21;
    r.wr(MSCA, base | MSCA_MDI_COMMAND); // address cycle (op 00)
    assert_eq!(r.rd(MSCA) & MSCA_MDI_COMMAND, 0);
    match write {
        Some(v) => {
            r.wr(MSRWD, u32::from(v));
            r.wr(MSCA, base | 1 << 26 | MSCA_MDI_COMMAND);
            0
        }
        None => {
            r.wr(MSCA, base | 3 << 26 | MSCA_MDI_COMMAND);
            (r.rd(MSRWD) >> 16) as u16
        }
    }
}

#[test]
fn link_up_after_delay_with_speed_and_lsc() {
    let (r, links) = with_delay("link delay", |d| {
        let t = Instant::now();
        let r = Rig::new(X540Config { link_up_delay: d, ..cfg() });
        let links = r.rd(LINKS);
        // Clears what power-up left, so the LSC below is the link coming up.
        r.rd(EICR);
        (t.elapsed() < d).then_some((r, links))
    });
    assert_eq!(links & LINKS_UP, 0);
    poll("link", Duration::from_secs(30), || r.rd(LINKS) & LINKS_UP != 0);
    assert_eq!(r.rd(LINKS) >> LINKS_SPEED_SHIFT & 3, 0b11, "10G");
    assert_ne!(r.rd(EICR) & EICR_LSC, 0);
    assert_eq!(r.rd(EICR), 0, "EICR clears on read");

    let r = Rig::new(X540Config { partner_speed: LinkSpeed::G1, ..cfg() });
    assert_eq!(r.rd(LINKS), LINKS_UP | 0b10 << LINKS_SPEED_SHIFT, "1G partner");
}

#[test]
fn phy_power_up_and_an_restart_over_mdio() {
    let r = Rig::new(X540Config { phy_powered_down: true, ..cfg() });
    // PHY probing: nobody at address 5, the PHY at its LAN_ID.
    assert_eq!(mdio(&r, 5, 1, 2, None), 0xFFFF);
    let id = u32::from(mdio(&r, 0, 1, 2, None)) << 16 | u32::from(mdio(&r, 0, 1, 3, None));
    assert_eq!(id, 0x0154_0200);
    assert_eq!(r.rd(LINKS) & LINKS_UP, 0, "powered down");
    let v = mdio(&r, 0, 0x1E, 0, None);
    assert_ne!(v & 0x800, 0);
    mdio(&r, 0, 0x1E, 0, Some(v & !0x800));
    assert_ne!(r.rd(LINKS) & LINKS_UP, 0);
    assert_eq!(mdio(&r, 0, 7, 0xC800, None) & 7, 0b111, "vendor status 10G FD");
    // Advertise 1G only and restart AN.
    let adv10 = mdio(&r, 0, 7, 0x20, None);
    mdio(&r, 0, 7, 0x20, Some(adv10 & !0x1000));
    let an = mdio(&r, 0, 7, 0, None);
    mdio(&r, 0, 7, 0, Some(an | 0x200));
    assert_eq!(mdio(&r, 0, 7, 0, None) & 0x200, 0, "restart self-clears");
    assert_eq!(r.rd(LINKS) >> LINKS_SPEED_SHIFT & 3, 0b10);
    r.port.assert_no_faults();
}

#[test]
fn link_flap_and_cable_on_both_ends() {
    let ((bar_a, a), (bar_b, b)) = X540::pair(cfg());
    assert_ne!(bar_a.read32(LINKS) & LINKS_UP, 0);
    assert_ne!(bar_b.read32(LINKS) & LINKS_UP, 0);
    let (a_links, b_links) = with_delay("link flap", |d| {
        let t = Instant::now();
        a.link_flap(d);
        let seen = (bar_a.read32(LINKS), bar_b.read32(LINKS));
        let quick = t.elapsed() < d;
        poll("link back", Duration::from_secs(30), || bar_a.read32(LINKS) & LINKS_UP != 0);
        quick.then_some(seen)
    });
    assert_eq!(a_links & LINKS_UP, 0);
    assert_eq!(b_links & LINKS_UP, 0);
    assert!(b.link_is_up());
    b.set_cable(false);
    assert!(!a.link_is_up() && !b.link_is_up());
    b.set_cable(true);
    assert!(a.link_is_up());
}

// ---- filters ---------------------------------------------------------------------------------------------------

fn delivered(r: &mut Rig, frame: &[u8]) -> bool {
    r.port.inject(frame);
    r.port.step();
    r.rx_frame(0).is_some()
}

#[test]
fn unicast_broadcast_promiscuous_filters() {
    let mut r = rig();
    let other = [0x02, 9, 9, 9, 9, 9];
    assert!(delivered(&mut r, &udp4_frame(MAC, 1, 40)), "own MAC (RAR 0)");
    assert!(!delivered(&mut r, &udp4_frame(other, 1, 40)), "foreign unicast");
    r.wr(ral(5), u32::from_le_bytes([other[0], other[1], other[2], other[3]]));
    r.wr(rah(5), u32::from(other[4]) | u32::from(other[5]) << 8); // not valid yet
    assert!(!delivered(&mut r, &udp4_frame(other, 1, 40)));
    r.set(rah(5), RAH_AV);
    assert!(delivered(&mut r, &udp4_frame(other, 1, 40)), "RAR 5 exact match");
    assert!(delivered(&mut r, &udp4_frame([0xFF; 6], 1, 40)), "broadcast with BAM");
    r.clear(FCTRL, FCTRL_BAM);
    assert!(!delivered(&mut r, &udp4_frame([0xFF; 6], 1, 40)), "broadcast without BAM");
    let stranger = [0x02, 7, 7, 7, 7, 7];
    r.set(FCTRL, FCTRL_UPE);
    r.port.inject(&udp4_frame(stranger, 1, 40));
    r.port.step();
    let (d, _, _) = r.rx_frame(0).expect("promiscuous");
    assert_ne!(d[2] & RXD_STAT_PIF, 0, "passed an inexact filter");
    assert_eq!(r.port.counters().rx_filtered, 3);
}

#[test]
fn multicast_table_with_offsets() {
    let mut r = rig();
    let group = [0x01, 0x00, 0x5E, 0x01, 0xA7, 0x3C];
    assert!(!delivered(&mut r, &udp4_frame(group, 1, 40)));
    for mo in 0..4u32 {
        let (a, b) = (u32::from(group[4]), u32::from(group[5]));
        let vector = match mo {
            0 => (a >> 4) | (b << 4),
            1 => (a >> 3) | (b << 5),
            2 => (a >> 2) | (b << 6),
            _ => a | (b << 8),
        } & 0xFFF;
        (0..128).for_each(|i| r.wr(mta(i), 0));
        r.wr(mta(((vector >> 5) & 0x7F) as usize), 1 << (vector & 0x1F));
        r.wr(MCSTCTRL, mo);
        assert!(!delivered(&mut r, &udp4_frame(group, 1, 40)), "MFE clear");
        r.wr(MCSTCTRL, mo | MCSTCTRL_MFE);
        assert!(delivered(&mut r, &udp4_frame(group, 1, 40)), "MO={mo}");
        let mut near = group;
        near[5] ^= 0x01;
        assert!(!delivered(&mut r, &udp4_frame(near, 1, 40)), "MO={mo} other group");
    }
    r.wr(MCSTCTRL, 0);
    r.set(FCTRL, FCTRL_MPE);
    assert!(delivered(&mut r, &udp4_frame([0x33, 0x33, 0, 0, 0, 1], 1, 40)), "MPE");
    let bprc_mprc = (r.rd(BPRC), r.rd(MPRC));
    assert_eq!(bprc_mprc, (0, 5));
}

// ---- RX write-back ---------------------------------------------------------------------------------------------

#[test]
fn rx_writeback_fields() {
    let mut r = rig();
    let f = udp4_frame(MAC, 7, 100);
    r.port.inject(&f);
    r.port.step();
    let (d, data, n) = r.rx_frame(0).unwrap();
    assert_eq!(n, 1);
    assert_eq!(data, f, "CRC stripped, data intact");
    assert_eq!(d[3] & 0xFFFF, f.len() as u32);
    assert_eq!(d[2] & (RXD_STAT_DD | RXD_STAT_EOP), RXD_STAT_DD | RXD_STAT_EOP);
    assert_eq!(d[2] & (RXD_STAT_IPCS | RXD_STAT_L4CS | RXD_STAT_UDPCS), RXD_STAT_IPCS | RXD_STAT_L4CS | RXD_STAT_UDPCS);
    assert_ne!(d[2] & RXD_STAT_UDPV, 0);
    assert_eq!(d[2] & (RXD_ERR_IPE | RXD_ERR_L4E | RXD_ERR_RXE), 0);
    assert_eq!(d[0] & 0xFFF0, PTYPE_IPV4 | PTYPE_UDP);
    assert_eq!(d[0] & 0xF, 0, "no RSS configured");
    assert_eq!(r.rd(rdh(0)), 1, "head advanced");

    // Bad IP and L4 checksums.
    let mut bad = f.clone();
    bad[24] ^= 0xFF; // IP checksum
    bad[50] ^= 0x01; // payload
    r.port.inject(&bad);
    r.port.step();
    let (d, _, _) = r.rx_frame(0).unwrap();
    assert_ne!(d[2] & RXD_ERR_IPE, 0);
    assert_ne!(d[2] & RXD_ERR_L4E, 0);
    assert_eq!(r.rd(XEC), 1);

    // TCP over IPv6: packet type, L4 checksum good.
    let tcp6 = eth(MAC, [2, 0, 0, 0, 0, 9], 0x86DD, &ipv6_l4([1; 16], [2; 16], 6, 1000, 80, 30));
    r.port.inject(&tcp6);
    r.port.step();
    let (d, _, _) = r.rx_frame(0).unwrap();
    assert_eq!(d[0] & 0xFFF0, PTYPE_IPV6 | PTYPE_TCP);
    assert_eq!(d[2] & (RXD_STAT_L4CS | RXD_ERR_L4E | RXD_STAT_IPCS), RXD_STAT_L4CS);

    // CRC kept when stripping is off (both bits cleared, as they must agree).
    r.clear(RXCTRL, RXCTRL_RXEN);
    r.clear(HLREG0, HLREG0_RXCRCSTRP);
    r.clear(RDRXCTL, RDRXCTL_CRCSTRIP);
    r.set(RXCTRL, RXCTRL_RXEN);
    r.port.inject(&f);
    r.port.step();
    let (d, data, _) = r.rx_frame(0).unwrap();
    assert_eq!(d[3] & 0xFFFF, f.len() as u32 + 4);
    assert_eq!(data[f.len()..], net::crc32(&f).to_le_bytes());
    r.port.assert_no_faults();
}

#[test]
fn crc_strip_disagreement_is_a_fault() {
    let r = Rig::new(cfg());
    r.set(HLREG0, HLREG0_RXCRCSTRP);
    r.set(RXCTRL, RXCTRL_RXEN);
    assert!(matches!(r.port.take_faults().as_slice(), [Fault::Protocol { .. }]));
}

#[test]
fn vlan_strip_and_tag_in_writeback() {
    let mut r = rig();
    r.set(rxdctl(0), RXDCTL_VME);
    let inner = udp4_frame(MAC, 3, 50);
    let mut tagged = inner[..12].to_vec();
    tagged.extend_from_slice(&[0x81, 0x00, 0x20, 0x05]);
    tagged.extend_from_slice(&inner[12..]);
    r.port.inject(&tagged);
    r.port.step();
    let (d, data, _) = r.rx_frame(0).unwrap();
    assert_eq!(data, inner);
    assert_ne!(d[2] & RXD_STAT_VP, 0);
    assert_eq!(d[3] >> 16, 0x2005);
}

// ---- RSS -------------------------------------------------------------------------------------------------------

const MS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b,
    0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac,
    0x01, 0xfa,
];

/// Microsoft's RSS verification suite, IPv4: (src, sport, dst, dport, hash IPv4, hash IPv4/TCP).
type V4Vector = ([u8; 4], u16, [u8; 4], u16, u32, u32);

const MS_V4: [V4Vector; 5] = [
    ([66, 9, 149, 187], 2794, [161, 142, 100, 80], 1766, 0x323e8fc2, 0x51ccc178),
    ([199, 92, 111, 2], 14230, [65, 69, 140, 83], 4739, 0xd718262a, 0xc626b0ea),
    ([24, 19, 198, 95], 12898, [12, 22, 207, 184], 38024, 0xd2d0a5de, 0x5c2b394a),
    ([38, 27, 205, 30], 48228, [209, 142, 163, 6], 2217, 0x82989176, 0xafc7327f),
    ([153, 39, 163, 191], 44251, [202, 188, 127, 2], 1303, 0x5d1809c5, 0x10e828a2),
];

fn v6(s: &str) -> [u8; 16] {
    s.parse::<std::net::Ipv6Addr>().unwrap().octets()
}

fn program_rss(r: &Rig, key: &[u8; 40], fields: u32) {
    for k in 0..10 {
        r.wr(rssrk(k), u32::from_le_bytes(key[4 * k..4 * k + 4].try_into().unwrap()));
    }
    r.wr(MRQC, MRQE_RSS | fields);
}

#[test]
fn toeplitz_known_vectors() {
    for (src, sport, dst, dport, h_ip, h_tcp) in MS_V4 {
        let mut input = Vec::new();
        input.extend_from_slice(&src);
        input.extend_from_slice(&dst);
        assert_eq!(net::toeplitz(&MS_KEY, &input), h_ip);
        input.extend_from_slice(&sport.to_be_bytes());
        input.extend_from_slice(&dport.to_be_bytes());
        assert_eq!(net::toeplitz(&MS_KEY, &input), h_tcp);
    }
    let v6_vectors = [
        ("3ffe:2501:200:1fff::7", 2794u16, "3ffe:2501:200:3::1", 1766u16, 0x2cc18cd5u32, 0x40207d3du32),
        ("3ffe:501:8::260:97ff:fe40:efab", 14230, "ff02::1", 4739, 0x0f0c461c, 0xdde51bbf),
        ("3ffe:1900:4545:3:200:f8ff:fe21:67cf", 44251, "fe80::200:f8ff:fe21:67cf", 38024, 0x4b61e985, 0x02d1feef),
    ];
    for (src, sport, dst, dport, h_ip, h_tcp) in v6_vectors {
        let mut input = Vec::new();
        input.extend_from_slice(&v6(src));
        input.extend_from_slice(&v6(dst));
        assert_eq!(net::toeplitz(&MS_KEY, &input), h_ip, "{src}");
        input.extend_from_slice(&sport.to_be_bytes());
        input.extend_from_slice(&dport.to_be_bytes());
        assert_eq!(net::toeplitz(&MS_KEY, &input), h_tcp, "{src}");
    }
}

#[test]
fn rss_hash_and_type_in_writeback() {
    let mut r = rig();
    program_rss(&r, &MS_KEY, MRQC_IPV4 | MRQC_IPV4_TCP | MRQC_IPV6 | MRQC_IPV6_TCP);
    for (src, sport, dst, dport, h_ip, h_tcp) in MS_V4 {
        let tcp = eth(MAC, [2, 0, 0, 0, 0, 9], 0x0800, &ipv4_l4(src, dst, 6, sport, dport, 10));
        let udp = eth(MAC, [2, 0, 0, 0, 0, 9], 0x0800, &ipv4_l4(src, dst, 17, sport, dport, 20));
        r.port.inject(&tcp);
        r.port.inject(&udp);
        r.port.step();
        let (d, _, _) = r.rx_frame(0).unwrap();
        assert_eq!((d[0] & 0xF, d[1]), (rss_type::IPV4_TCP, h_tcp));
        let (d, _, _) = r.rx_frame(0).unwrap();
        assert_eq!((d[0] & 0xF, d[1]), (rss_type::IPV4, h_ip), "UDP not enabled: IPv4-only hash");
    }
    let tcp6 = eth(
        MAC,
        [2, 0, 0, 0, 0, 9],
        0x86DD,
        &ipv6_l4(v6("3ffe:2501:200:1fff::7"), v6("3ffe:2501:200:3::1"), 6, 2794, 1766, 8),
    );
    r.port.inject(&tcp6);
    r.port.step();
    let (d, _, _) = r.rx_frame(0).unwrap();
    assert_eq!((d[0] & 0xF, d[1]), (rss_type::IPV6_TCP, 0x40207d3d));
    // Non-IP: no hash.
    r.port.inject(&eth(MAC, [2, 0, 0, 0, 0, 9], 0x88B5, &[0; 50]));
    r.port.step();
    let (d, _, _) = r.rx_frame(0).unwrap();
    assert_eq!((d[0] & 0xF, d[1]), (0, 0));
}

#[test]
fn reta_spreads_flows_as_the_hash_says() {
    let mut r = Rig::new(cfg());
    r.bring_up();
    for q in 0..16 {
        r.setup_rx(q, 2, true);
    }
    let key: [u8; 40] = std::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(11));
    program_rss(&r, &key, MRQC_IPV4_UDP | MRQC_IPV4);
    // RETA: entry e -> queue (e * 7) % 16, with junk in the high nibble that the X540 ignores.
    let entry = |e: usize| ((e * 7) % 16) as u32;
    for i in 0..32 {
        let v = (0..4).map(|j| (entry(4 * i + j) | 0xA0) << (8 * j)).fold(0, |a, b| a | b);
        r.wr(reta(i), v);
    }
    let mut per_queue = [0usize; 16];
    for flow in 0..400u16 {
        let src = [10, 1, (flow >> 8) as u8, flow as u8];
        let sport = 1000 + flow * 13;
        let f = eth(MAC, [2, 0, 0, 0, 0, 9], 0x0800, &ipv4_l4(src, [10, 0, 0, 2], 17, sport, 53, 18));
        let mut input = Vec::new();
        input.extend_from_slice(&src);
        input.extend_from_slice(&[10, 0, 0, 2]);
        input.extend_from_slice(&sport.to_be_bytes());
        input.extend_from_slice(&53u16.to_be_bytes());
        let hash = net::toeplitz(&key, &input);
        let want = entry((hash & 0x7F) as usize) as usize;
        r.port.inject(&f);
        r.port.step();
        let got: Vec<usize> =
            (0..16).filter(|&q| r.rx_frame(q).map(|(d, ..)| assert_eq!(d[1], hash)).is_some()).collect();
        assert_eq!(got, vec![want], "flow {flow}");
        per_queue[want] += 1;
    }
    assert!(per_queue.iter().all(|&n| n > 0), "{per_queue:?}");
    r.port.assert_no_faults();
}

// ---- jumbo and multi-descriptor ---------------------------------------------------------------------------------

#[test]
fn jumbo_frames_chain_across_descriptors() {
    let mut r = rig();
    let big = udp4_frame(MAC, 9, 9000 - 42);
    assert_eq!(big.len(), 9000);
    r.port.inject(&big);
    r.port.step();
    assert!(r.rx_frame(0).is_none(), "over 1518 without JUMBOEN");
    assert_eq!(r.rd(ROC), 1);
    r.set(HLREG0, HLREG0_JUMBOEN);
    r.wr(MAXFRS, 9018 << 16);
    r.port.inject(&big);
    r.port.step();
    let (d, data, n) = r.rx_frame(0).unwrap();
    assert_eq!(n, 5, "2 KiB buffers");
    assert_eq!(data, big);
    assert_ne!(d[2] & RXD_STAT_EOP, 0);
    assert_eq!(d[3] & 0xFFFF, (9000 - 4 * 2048) as u32, "last descriptor's length");
    assert_eq!(d[2] & (RXD_ERR_IPE | RXD_ERR_L4E), 0);
    r.port.inject(&udp4_frame(MAC, 9, 9020 - 42));
    r.port.step();
    assert!(r.rx_frame(0).is_none(), "over MFS");

    // TX: a jumbo frame in three descriptors.
    let mut tx = Rig::new(cfg());
    tx.bring_up();
    tx.setup_tx(0);
    let parts = [&big[..3000], &big[3000..6000], &big[6000..]];
    let mut last = 0;
    for (k, p) in parts.iter().enumerate() {
        let buf = Rig::tx_buf(k as u32);
        tx.write_mem(buf, p);
        let eop = if k == 2 { TXD_CMD_EOP | TXD_CMD_RS } else { 0 };
        last = tx.tx_data_desc(0, buf, p.len(), TXD_CMD_IFCS | eop, 9000 << TXD_PAYLEN_SHIFT);
    }
    tx.doorbell(0);
    tx.port.step();
    assert!(tx.tx_dd(0, last));
    assert_eq!(tx.port.take_tx(), vec![big]);
    assert_eq!(tx.rd(tdh(0)), 3);
    tx.port.assert_no_faults();
}

#[test]
fn back_to_back_jumbo_both_ways() {
    let ((bar_a, a), (bar_b, b)) = X540::pair(cfg());
    let mut ra = Rig::with(bar_a, a.clone());
    let mut rb = Rig::with(bar_b, b.clone());
    for r in [&mut ra, &mut rb] {
        r.bring_up();
        r.set(FCTRL, FCTRL_UPE);
        r.set(HLREG0, HLREG0_JUMBOEN);
        r.wr(MAXFRS, 9018 << 16);
        r.setup_rx(0, 4, false);
        r.setup_tx(0);
    }
    let big = udp4_frame([2, 0, 0, 0, 0, 0x42], 5, 9000 - 42);
    ra.send(0, &big);
    rb.send(0, &big);
    run_until_idle(&[&a, &b]);
    assert_eq!(ra.rx_frame(0).unwrap().1, big);
    assert_eq!(rb.rx_frame(0).unwrap().1, big);
    a.assert_no_faults();
    b.assert_no_faults();
}

// ---- TX checksum offload ----------------------------------------------------------------------------------------

#[test]
fn tx_checksum_offload() {
    let mut r = rig();
    for proto in [6u8, 17] {
        let mut f = eth(MAC, [2, 0, 0, 0, 0, 9], 0x0800, &ipv4_l4([10, 0, 0, 1], [10, 0, 0, 2], proto, 1, 2, 33));
        // What software hands the NIC (docs/hw/ixgbe.md §7.4 + DPDK's prepare): IP checksum zeroed, L4 checksum = pseudo-header sum.
        f[24..26].fill(0);
        let l4_len = f.len() - 34;
        let seed = partial(&pseudo4(&f[14..34], l4_len));
        let at = 34 + if proto == 6 { 16 } else { 6 };
        f[at..at + 2].copy_from_slice(&seed.to_be_bytes());
        assert_eq!(verify_ipv4(&f), (false, false));
        let l4t = if proto == 6 { 1 } else { 0 };
        r.tx_ctx_desc(0, 20 | 14 << 9, TXCTX_TUCMD_IPV4 | l4t << TXCTX_L4T_SHIFT, 1);
        let buf = Rig::tx_buf(r.tx_tail[0]);
        r.write_mem(buf, &f);
        let olinfo = (f.len() as u32) << TXD_PAYLEN_SHIFT | 1 << TXD_IDX_SHIFT | TXD_POPTS_IXSM | TXD_POPTS_TXSM;
        r.tx_data_desc(0, buf, f.len(), TXD_CMD_EOP | TXD_CMD_IFCS | TXD_CMD_RS, olinfo);
        r.doorbell(0);
        r.port.step();
        let out = r.port.take_tx();
        assert_eq!(out.len(), 1);
        assert_eq!(verify_ipv4(&out[0]), (true, true), "proto {proto}");
        // Received back, the model's RX checksum status agrees.
        r.port.inject(&out[0]);
        r.port.step();
        let (d, _, _) = r.rx_frame(0).unwrap();
        assert_eq!(d[2] & (RXD_ERR_IPE | RXD_ERR_L4E), 0);
    }
    r.port.assert_no_faults();
}

#[test]
fn tx_padding_and_paylen_check() {
    let mut r = rig();
    r.send(0, &eth([0xFF; 6], MAC, 0x0806, &[1; 28]));
    r.port.step();
    let out = r.port.take_tx();
    assert_eq!(out[0].len(), 60, "TXPADEN pads to 60");
    let buf = Rig::tx_buf(r.tx_tail[0]);
    r.write_mem(buf, &[0u8; 64]);
    r.tx_data_desc(0, buf, 64, TXD_CMD_EOP | TXD_CMD_IFCS, 10 << TXD_PAYLEN_SHIFT);
    r.doorbell(0);
    r.port.step();
    assert!(matches!(r.port.take_faults().as_slice(), [Fault::Protocol { what }] if what.contains("PAYLEN")));
}

// ---- statistics ------------------------------------------------------------------------------------------------

#[test]
fn statistics_clear_on_read() {
    let mut r = rig();
    let f = udp4_frame(MAC, 1, 100); // 142 bytes, 146 with CRC
    for _ in 0..3 {
        r.port.inject(&f);
    }
    r.port.step();
    while r.rx_frame(0).is_some() {}
    assert_eq!(r.rd(GPRC), 3);
    assert_eq!(r.rd(GPRC), 0, "cleared by the read");
    assert_eq!(r.rd(TPR), 3);
    assert_eq!(r.rd(GORCL), 3 * 142, "CRC stripped: not counted");
    assert_eq!(r.rd(GORCH), 0);
    assert_eq!(r.rd(GORCL), 0);
    assert_eq!(r.rd(PRC64 + 8), 3, "PRC255 bucket");
    assert_eq!(r.rd(qprc(0)), 3);
    assert_eq!(r.rd(qbrc_l(0)), 3 * 142);
    assert_eq!(r.rd(RXDGPC), 3);
    for _ in 0..2 {
        r.send(0, &f);
    }
    r.port.step();
    assert_eq!(r.rd(GPTC), 2);
    assert_eq!(r.rd(GOTCL), 2 * 146, "GOTC includes CRC");
    assert_eq!(r.rd(GOTCH), 0);
    assert_eq!(r.rd(TPT), 2);
    assert_eq!(r.rd(qptc(0)), 2);
    assert_eq!(r.rd(GPTC), 0);
    // Per-queue counter sets follow RQSMR/TQSM.
    r.wr(tqsm(0), 5);
    r.send(0, &f);
    r.port.step();
    assert_eq!((r.rd(qptc(0)), r.rd(qptc(5))), (0, 1));
    // Writes do not change counters.
    r.wr(GPRC, 77);
    assert_eq!(r.rd(GPRC), 0);
}

#[test]
fn missed_packets_without_descriptors() {
    let mut r = Rig::new(cfg());
    r.bring_up();
    r.setup_rx(0, 2, true);
    let f = udp4_frame(MAC, 1, 100);
    for _ in 0..RING + 10 {
        r.port.inject(&f);
    }
    r.port.step();
    assert_eq!(r.rd(mpc(0)), 11, "N-1 descriptors posted, the rest dropped (DROP_EN)");
    assert_eq!(r.rd(qprdc(0)), 11);
    assert_eq!(r.port.counters().rx_delivered, u64::from(RING) - 1);

    // Without DROP_EN the frames wait in the packet buffer until descriptors come back.
    let mut r = Rig::new(cfg());
    r.bring_up();
    r.setup_rx(0, 2, false);
    for _ in 0..RING + 10 {
        r.port.inject(&f);
    }
    r.port.step();
    assert_eq!(r.port.rx_pending(), 11);
    let mut got = 0;
    while r.rx_frame(0).is_some() {
        got += 1;
        r.port.step();
    }
    assert_eq!(got, RING + 10);
    assert_eq!(r.rd(mpc(0)), 0);
}

// ---- faults ----------------------------------------------------------------------------------------------------

#[test]
fn dma_outside_the_map_is_a_fault() {
    let mut r = rig();
    r.post_rx(0, 0, 0); // a valid descriptor ...
    let mut d = [0u8; 16];
    d[0..8].copy_from_slice(&0xdead_0000u64.to_le_bytes()); // ... then an unmapped buffer address
    r.write_mem(Rig::rx_ring(0), &d);
    r.port.inject(&udp4_frame(MAC, 1, 40));
    r.port.step();
    let faults = r.port.take_faults();
    assert!(matches!(faults.as_slice(), [Fault::Dma { iova: 0xdead_0000, write: true, .. }]), "{faults:?}");
    // Unmapping the memory makes every descriptor fetch fault.
    let regions = r.port.dma_mapper().region_count();
    let again = {
        use drvkit::dma::DmaMapper;
        r.port.dma_mapper().map(&r.mem).unwrap()
    };
    assert_eq!(r.port.dma_mapper().region_count(), regions, "mapping twice counts, adds nothing");
    r.map = None;
    assert_eq!(r.port.dma_mapper().region_count(), regions, "the second guard still maps it");
    drop(again);
    assert_eq!(r.port.dma_mapper().region_count(), 0);
    r.send(0, &udp4_frame(MAC, 1, 40));
    r.port.step();
    assert!(matches!(r.port.take_faults().as_slice(), [Fault::Dma { write: false, .. }]));
}

#[test]
#[should_panic(expected = "nicsim fault")]
fn panic_on_fault() {
    let mut r = Rig::new(X540Config { panic_on_fault: true, ..cfg() });
    r.bring_up();
    r.setup_tx(0);
    r.wr(tdbal(0), 0x1000); // ring moved to unmapped memory, re-enabled
    r.clear(txdctl(0), QCTL_ENABLE);
    r.set(txdctl(0), QCTL_ENABLE);
    r.wr(tdt(0), 1);
    r.port.step();
}

#[test]
fn crc_and_length_error_writebacks() {
    let mut r = rig();
    let f = udp4_frame(MAC, 1, 40);
    r.port.inject_error(&f, RxError::Crc);
    r.port.inject_error(&f, RxError::Length);
    r.port.step();
    for _ in 0..2 {
        let (d, data, _) = r.rx_frame(0).unwrap();
        assert_ne!(d[2] & RXD_ERR_RXE, 0);
        assert_eq!(data, f);
    }
    assert_eq!((r.rd(CRCERRS), r.rd(RLEC), r.rd(GPRC)), (1, 1, 0));
    // As hardware: without SBP and without the override, bad frames are dropped.
    let mut r = Rig::new(X540Config { deliver_bad_frames: false, ..cfg() });
    r.bring_up();
    r.setup_rx(0, 2, false);
    r.port.inject_error(&f, RxError::Crc);
    r.port.step();
    assert!(r.rx_frame(0).is_none());
    r.set(FCTRL, FCTRL_SBP);
    r.port.inject_error(&f, RxError::Crc);
    r.port.step();
    assert_ne!(r.rx_frame(0).unwrap().0[2] & RXD_ERR_RXE, 0);
}

#[test]
fn tx_hang_stops_the_queue_until_reset() {
    let mut r = rig();
    let f = udp4_frame(MAC, 1, 40);
    r.send(0, &f);
    r.port.step();
    assert_eq!(r.rd(tdh(0)), 1);
    r.port.tx_hang(Some(0));
    let i = r.send(0, &f);
    r.port.step();
    assert_eq!(r.rd(tdh(0)), 1, "head stuck");
    assert!(!r.tx_dd(0, i));
    assert_eq!(r.port.take_tx().len(), 1);
    // The driver's recovery: reset and bring up again.
    r.bring_up();
    r.setup_rx(0, 2, false);
    r.setup_tx(0);
    r.send(0, &f);
    r.port.step();
    assert_eq!(r.port.take_tx().len(), 1);
}

#[test]
fn tx_while_link_down_completes_without_sending() {
    let mut r = rig();
    r.port.set_cable(false);
    let i = r.send(0, &udp4_frame(MAC, 1, 40));
    r.port.step();
    assert!(r.tx_dd(0, i));
    assert!(r.port.take_tx().is_empty());
    assert_eq!(r.port.counters().tx_dropped_link_down, 1);
    assert_eq!(r.rd(GPTC), 0);
}

#[test]
fn ring_programming_errors_are_faults() {
    let r = Rig::new(cfg());
    r.wr(rdlen(0), 100);
    r.set(rxdctl(0), QCTL_ENABLE);
    assert_eq!(r.rd(rxdctl(0)) & QCTL_ENABLE, 0, "not enabled");
    r.wr(tdlen(0), 1024);
    r.set(txdctl(0), QCTL_ENABLE); // before DMATXCTL.TE
    let faults = r.port.take_faults();
    assert_eq!(faults.len(), 2, "{faults:?}");
    let _ = r.rd(0x20_0000 - 4);
    r.rd(0x20_0000);
    assert!(matches!(r.port.take_faults().as_slice(), [Fault::Register { .. }]));
}

#[test]
fn queue_enable_delay_is_visible() {
    let mut r = Rig::new(X540Config { queue_enable_delay: Duration::from_millis(20), ..cfg() });
    r.bring_up();
    let t = Instant::now();
    r.setup_tx(0);
    assert!(t.elapsed() >= Duration::from_millis(20));
}

// ---- wires and threads -----------------------------------------------------------------------------------------

#[test]
fn pcap_wire_and_injection() {
    let dir = std::env::temp_dir().join(format!("nicsim-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tx.pcap");
    let mut r = rig();
    r.port.wire_to_pcap(&path).unwrap();
    let frames: Vec<Vec<u8>> = (0..5).map(|i| udp4_frame(MAC, i, 40 + usize::from(i))).collect();
    for f in &frames {
        r.send(0, f);
    }
    r.port.step();
    r.port.flush_pcap().unwrap();
    let records = swports::pcap_file::read_all(&path).unwrap();
    assert_eq!(records.iter().map(|r| r.data.clone()).collect::<Vec<_>>(), frames);
    assert_eq!(r.port.inject_pcap(&path).unwrap(), 5);
    r.port.step();
    for f in &frames {
        assert_eq!(&r.rx_frame(0).unwrap().1, f);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn mac_loopback() {
    let mut r = rig();
    r.set(HLREG0, HLREG0_LPBK);
    let f = udp4_frame(MAC, 1, 40);
    r.send(0, &f);
    r.port.step();
    r.port.step();
    assert_eq!(r.rx_frame(0).unwrap().1, f);
}

#[test]
fn threaded_back_to_back_exact_counts() {
    let ((bar_a, a), (bar_b, b)) = X540::pair(X540Config { panic_on_fault: true, ..cfg() });
    let mut ra = Rig::with(bar_a, a.clone());
    let mut rb = Rig::with(bar_b, b.clone());
    for r in [&mut ra, &mut rb] {
        r.bring_up();
        r.set(FCTRL, FCTRL_UPE);
        r.setup_rx(0, 2, false);
        r.setup_tx(0);
    }
    let ta = a.start_thread();
    let tb = b.start_thread();
    let total = 20_000u32;
    let (mut sent, mut received, mut completed) = (0u32, 0u32, 0u32);
    let start = Instant::now();
    // TX with RS on every descriptor; at most RING-1 in flight; B's RX ring recycled as frames arrive.
    while received < total {
        assert!(start.elapsed() < Duration::from_secs(60), "stuck: sent {sent} received {received}");
        while completed < sent && ra.tx_dd(0, completed % RING) {
            completed += 1;
        }
        // End-to-end window: the receiver's packet buffer never overflows, so every frame must arrive.
        while sent < total && sent - completed < RING - 1 && sent - received < 2048 {
            let f = udp4_frame([2, 0, 0, 0, 0, 0x77], (sent % 60000) as u16, 26);
            let buf = Rig::tx_buf(ra.tx_tail[0]);
            ra.write_mem(buf, &f);
            // clear the old DD before reuse
            ra.write_mem(Rig::tx_ring(0) + ra.tx_tail[0] as usize * 16 + 12, &[0; 4]);
            ra.tx_data_desc(
                0,
                buf,
                f.len(),
                TXD_CMD_EOP | TXD_CMD_IFCS | TXD_CMD_RS,
                (f.len() as u32) << TXD_PAYLEN_SHIFT,
            );
            sent += 1;
        }
        ra.doorbell(0);
        while let Some((d, data, _)) = rb.rx_frame(0) {
            assert_ne!(d[2] & RXD_STAT_EOP, 0);
            assert_eq!(u16::from_be_bytes([data[34], data[35]]), (received % 60000) as u16, "in order");
            received += 1;
        }
        std::thread::yield_now();
    }
    drop((ta, tb));
    assert_eq!(a.counters().tx_sent, u64::from(total));
    assert_eq!(b.counters().rx_delivered, u64::from(total));
    assert_eq!(b.counters().rx_missed, 0, "no drops without DROP_EN and with a packet buffer");
    assert_eq!(rb.rd(GPRC), total);
    assert_eq!(ra.rd(GPTC), total);
    a.assert_no_faults();
    b.assert_no_faults();
}

#[test]
fn threaded_overload_accounts_for_every_frame() {
    // No end-to-end window: the receiver's packet buffer overflows and drops (MPC), but sent = received + missed.
    let ((bar_a, a), (bar_b, b)) = X540::pair(cfg());
    let mut ra = Rig::with(bar_a, a.clone());
    let mut rb = Rig::with(bar_b, b.clone());
    for r in [&mut ra, &mut rb] {
        r.bring_up();
        r.set(FCTRL, FCTRL_UPE);
        r.wr(rxpbsize(0), 64 << 10); // a small packet buffer, so it overflows quickly
        r.setup_rx(0, 2, false);
        r.setup_tx(0);
    }
    let ta = a.start_thread();
    let tb = b.start_thread();
    let total = 20_000u32;
    let (mut sent, mut completed) = (0u32, 0u32);
    let mut received = 0u64;
    let start = Instant::now();
    while completed < total {
        assert!(start.elapsed() < Duration::from_secs(60), "stuck: sent {sent} completed {completed}");
        while completed < sent && ra.tx_dd(0, completed % RING) {
            completed += 1;
        }
        while sent < total && sent - completed < RING - 1 {
            let f = udp4_frame([2, 0, 0, 0, 0, 0x77], 1, 26);
            let buf = Rig::tx_buf(ra.tx_tail[0]);
            ra.write_mem(buf, &f);
            ra.write_mem(Rig::tx_ring(0) + ra.tx_tail[0] as usize * 16 + 12, &[0; 4]);
            ra.tx_data_desc(
                0,
                buf,
                f.len(),
                TXD_CMD_EOP | TXD_CMD_IFCS | TXD_CMD_RS,
                (f.len() as u32) << TXD_PAYLEN_SHIFT,
            );
            sent += 1;
        }
        ra.doorbell(0);
        if sent % 7 == 0 {
            while rb.rx_frame(0).is_some() {
                received += 1;
            }
        }
    }
    // Every frame left A; wait until B has delivered or counted each (MPC reads clear: keep the sum).
    let mut missed = 0u64;
    let deadline = Instant::now() + Duration::from_secs(30);
    while received + missed < u64::from(total) {
        assert!(Instant::now() < deadline, "stuck: received {received} missed {missed} of {total}");
        while rb.rx_frame(0).is_some() {
            received += 1;
        }
        missed += u64::from(rb.rd(mpc(0)));
        std::thread::yield_now();
    }
    // Then stop the threads and step the models by hand until idle: nothing more may turn up.
    ta.stop().unwrap();
    tb.stop().unwrap();
    run_until_idle(&[&a, &b]);
    while rb.rx_frame(0).is_some() {
        received += 1;
    }
    missed += u64::from(rb.rd(mpc(0)));
    assert_eq!(received + missed, u64::from(total), "received {received} missed {missed}");
    assert_eq!(b.counters().rx_missed, missed);
    a.assert_no_faults();
    b.assert_no_faults();
}

#[test]
fn rx_into_mempool_buffers() {
    use drvkit::dma::DmaMapper;
    use hugepage::Allocator;
    use mempool::{Mempool, PoolConfig};
    let (bar, port) = X540::new(cfg());
    let mut r = Rig::with(bar, port.clone());
    r.bring_up();
    r.setup_rx(0, 2, false); // ring in the rig's memory; buffers replaced by mbufs below
    let pool = Mempool::new(
        "nicsim-rx-test",
        &PoolConfig { size: 127, cache_size: 0, ..Default::default() },
        &Allocator::no_huge(),
    )
    .unwrap();
    let pool_map = port.dma_mapper().map(pool.memory()).unwrap();
    let mut shadow = Vec::new();
    for i in 0..RING {
        let m = pool.alloc().unwrap();
        let mut d = [0u8; 16];
        d[0..8].copy_from_slice(&m.data_iova().to_le_bytes());
        r.write_mem(Rig::rx_ring(0) + i as usize * 16, &d);
        shadow.push(m);
    }
    let frames: Vec<Vec<u8>> = (0..10).map(|i| udp4_frame(MAC, i, 100 + usize::from(i))).collect();
    frames.iter().for_each(|f| assert!(port.inject(f)));
    port.step();
    for (i, f) in frames.iter().enumerate() {
        let d2 = r.dword(Rig::rx_ring(0) + i * 16 + 8);
        assert_ne!(d2 & RXD_STAT_DD, 0);
        let len = r.dword(Rig::rx_ring(0) + i * 16 + 12) & 0xFFFF;
        let m = &mut shadow[i];
        assert!(m.set_len(len as u16));
        assert_eq!(m.data(), &f[..]);
    }
    port.assert_no_faults();
    drop(shadow);
    assert!(pool.is_full());
    // A pool dropped while mapped leaves its memory to the mapping, which frees it when unmapped.
    let memory = Arc::downgrade(pool.memory());
    drop(pool);
    assert!(memory.upgrade().is_some());
    drop(pool_map);
    assert!(memory.upgrade().is_none());
}
