//! Our L2/L3: gratuitous ARP, ARP replies and learning, resolution with a bounded pending queue, ICMP echo
//! byte for byte, UDP delivery, and every drop reason counted exactly once.

mod common;

use std::net::{Ipv4Addr, SocketAddrV4};

use common::frames::*;
use common::*;
use netstack::{Error, EventKind};
use pkthdr::{ArpOperation, EtherType, IcmpType, IpProtocol, Ipv4Packet};
use pktio::MacAddr;

const PEER: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 7);

#[test]
fn gratuitous_arp_on_first_poll() {
    let mut w = Wire::new("l2-garp", |_| {});
    w.poll();
    let sent = w.sent();
    let mac = w.stack.config().mac;
    let mut expected =
        eth(MacAddr::BROADCAST, mac, EtherType::ARP, &arp(ArpOperation::REQUEST, mac, A_IP, MacAddr::ZERO, A_IP));
    expected.resize(60, 0);
    assert_eq!(sent, vec![expected]);
    w.poll();
    assert!(w.sent().is_empty(), "announced once");
    assert_eq!(w.stack.counters().arp_requests_sent, 1);
    w.finish();
}

#[test]
fn arp_request_for_us_is_answered_and_learned_others_are_not() {
    let mut w = Wire::new("l2-arp", |_| {});
    w.poll();
    w.sent();
    let (mac, peer_mac) = (w.stack.config().mac, w.peer_mac);
    let mut req = eth(
        MacAddr::BROADCAST,
        peer_mac,
        EtherType::ARP,
        &arp(ArpOperation::REQUEST, peer_mac, PEER, MacAddr::ZERO, A_IP),
    );
    req.resize(60, 0);
    w.inject(&req);
    // A request for someone else: no reply, not learned.
    let other = Ipv4Addr::new(10, 9, 0, 8);
    w.inject(&eth(
        MacAddr::BROADCAST,
        MacAddr([2, 0, 0, 0, 0, 8]),
        EtherType::ARP,
        &arp(ArpOperation::REQUEST, MacAddr([2, 0, 0, 0, 0, 8]), other, MacAddr::ZERO, PEER),
    ));
    w.poll();
    let mut expected = eth(peer_mac, mac, EtherType::ARP, &arp(ArpOperation::REPLY, mac, A_IP, peer_mac, PEER));
    expected.resize(60, 0);
    assert_eq!(w.sent(), vec![expected]);
    let entries = w.stack.arp_entries();
    assert_eq!(entries.len(), 1);
    assert_eq!((entries[0].ip, entries[0].mac), (PEER, peer_mac));
    let c = w.stack.counters();
    assert_eq!((c.arp_replies_sent, c.drops.bad_arp), (1, 1));
    w.finish();
}

#[test]
fn icmp_echo_reply_is_byte_exact() {
    let mut w = Wire::new("l2-icmp", |_| {});
    w.poll();
    w.sent();
    let (mac, peer_mac) = (w.stack.config().mac, w.peer_mac);
    let data: Vec<u8> = (0..56u8).collect();
    let request = eth(
        mac,
        peer_mac,
        EtherType::IPV4,
        &ipv4(PEER, A_IP, IpProtocol::ICMP, 63, &icmp_echo(IcmpType::V4_ECHO_REQUEST, 0x4242, 7, &data)),
    );
    w.inject(&request);
    w.poll();
    let mut reply_ip = ipv4(A_IP, PEER, IpProtocol::ICMP, 64, &icmp_echo(IcmpType::V4_ECHO_REPLY, 0x4242, 7, &data));
    // The reply keeps the request's IP identification.
    let mut ip = Ipv4Packet::new_unchecked(&mut reply_ip[..]);
    ip.set_ident(0x1234);
    ip.fill_checksum();
    assert_eq!(w.sent(), vec![eth(peer_mac, mac, EtherType::IPV4, &reply_ip)]);
    assert_eq!(w.stack.counters().icmp_echo_replies, 1);
    // Ethernet padding after a short request is not echoed.
    let mut padded = eth(
        mac,
        peer_mac,
        EtherType::IPV4,
        &ipv4(PEER, A_IP, IpProtocol::ICMP, 64, &icmp_echo(IcmpType::V4_ECHO_REQUEST, 1, 1, b"ab")),
    );
    padded.resize(60, 0xee);
    w.inject(&padded);
    w.poll();
    let sent = w.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].len(), 14 + 20 + 8 + 2);
    w.finish();
}

#[test]
fn every_drop_reason_counts_once() {
    let mut w = Wire::new("l2-drops", |_| {});
    let h = w.stack.udp_bind(53).unwrap();
    w.poll();
    w.sent();
    let (mac, peer) = (w.stack.config().mac, w.peer_mac);
    let good_udp = udp(PEER, A_IP, 1000, 53, b"hello");
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("bad_ethernet", vec![0u8; 10]),
        ("not_our_mac", eth(MacAddr([2, 9, 9, 9, 9, 9]), peer, EtherType::IPV4, &good_udp)),
        ("unknown_ethertype", eth(mac, peer, EtherType::IPV6, &[0u8; 40])),
        ("bad_arp", eth(mac, peer, EtherType::ARP, &[0u8; 10])),
        ("bad_ipv4", eth(mac, peer, EtherType::IPV4, &good_udp[..15])),
        ("not_for_us", eth(mac, peer, EtherType::IPV4, &udp(PEER, Ipv4Addr::new(10, 9, 0, 99), 1, 53, b"x"))),
        ("ttl_expired", eth(mac, peer, EtherType::IPV4, &ipv4(PEER, A_IP, IpProtocol::UDP, 0, &[0; 8]))),
        ("unknown_protocol", eth(mac, peer, EtherType::IPV4, &ipv4(PEER, A_IP, IpProtocol(47), 64, &[0; 8]))),
        (
            "bad_icmp",
            eth(mac, peer, EtherType::IPV4, &ipv4(PEER, A_IP, IpProtocol::ICMP, 64, &[8, 0, 0, 0, 0, 0, 0, 0])),
        ),
        ("udp_no_socket", eth(mac, peer, EtherType::IPV4, &udp(PEER, A_IP, 1000, 54, b"x"))),
    ];
    let mut bad_sum = good_udp.clone();
    bad_sum[10] ^= 0xff;
    cases.push(("ipv4_checksum", eth(mac, peer, EtherType::IPV4, &bad_sum)));
    let mut frag = good_udp.clone();
    let mut ip = Ipv4Packet::new_unchecked(&mut frag[..]);
    ip.set_frag(false, true, 0);
    ip.fill_checksum();
    cases.push(("fragments", eth(mac, peer, EtherType::IPV4, &frag)));
    let mut bad_udp = good_udp.clone();
    *bad_udp.last_mut().unwrap() ^= 1;
    cases.push(("bad_udp", eth(mac, peer, EtherType::IPV4, &bad_udp)));
    for (reason, frame) in &cases {
        let before = w.stack.counters().drops;
        w.inject(frame);
        w.poll();
        let after = w.stack.counters().drops;
        let changed: Vec<_> =
            before.fields().iter().zip(after.fields()).filter(|(b, a)| b.1 != a.1).map(|(_, a)| (a.0, a.1)).collect();
        let expected = format!("drop_{reason}");
        assert_eq!(changed, vec![(expected.as_str(), 1)], "frame {reason}");
    }
    assert!(w.sent().is_empty(), "nothing answered a bad frame");
    assert!(matches!(w.stack.recv_from(h), Err(Error::WouldBlock)));
    // The good datagram is delivered, in place, with its sender.
    w.inject(&eth(mac, peer, EtherType::IPV4, &good_udp));
    w.poll();
    assert!(w.events.iter().any(|e| e.handle == h && e.kind == EventKind::Readable));
    let d = w.stack.recv_from(h).unwrap();
    assert_eq!((d.payload(), d.from), (&b"hello"[..], SocketAddrV4::new(PEER, 1000)));
    assert_eq!(w.stack.counters().rx_packets, cases.len() as u64 + 1);
    drop(d);
    w.finish();
}

#[test]
fn unresolved_next_hop_holds_a_bounded_queue_then_sends_in_order() {
    let mut w = Wire::new("l2-pending", |c| c.arp.pending_per_hop = 4);
    let h = w.stack.udp_bind(5000).unwrap();
    w.poll();
    w.sent();
    let (mac, peer_mac) = (w.stack.config().mac, w.peer_mac);
    for i in 0..6u8 {
        w.stack.send_to(h, SocketAddrV4::new(PEER, 9), &[i; 3]).unwrap();
    }
    w.poll();
    let mut request =
        eth(MacAddr::BROADCAST, mac, EtherType::ARP, &arp(ArpOperation::REQUEST, mac, A_IP, MacAddr::ZERO, PEER));
    request.resize(60, 0);
    assert_eq!(w.sent(), vec![request], "one request for six datagrams");
    assert_eq!(w.stack.counters().drops.arp_unresolved, 2);
    assert_eq!(w.stack.arp_unresolved(), (vec![PEER], 4));
    let reply = eth(mac, peer_mac, EtherType::ARP, &arp(ArpOperation::REPLY, peer_mac, PEER, mac, A_IP));
    w.inject(&reply);
    w.poll();
    let sent = w.sent();
    let expected: Vec<Vec<u8>> = (0..4u8)
        .map(|i| {
            let mut ip = udp(A_IP, PEER, 5000, 9, &[i; 3]);
            // The stack numbers its datagrams and sets DF; take those from what it sent.
            ip[4..8].copy_from_slice(&sent[i as usize][18..22]);
            let mut p = Ipv4Packet::new_unchecked(&mut ip[..]);
            p.fill_checksum();
            eth(peer_mac, mac, EtherType::IPV4, &ip)
        })
        .collect();
    assert_eq!(sent, expected);
    assert_eq!(w.stack.arp_unresolved(), (vec![], 0));
    w.finish();
}

#[test]
fn off_link_without_gateway_is_no_route_and_with_one_goes_to_the_gateway() {
    let mut w = Wire::new("l2-route", |_| {});
    let h = w.stack.udp_bind(5000).unwrap();
    w.poll();
    w.sent();
    w.stack.send_to(h, SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 9), b"x").unwrap();
    w.poll();
    assert!(w.sent().is_empty());
    assert_eq!(w.stack.counters().drops.no_route, 1);
    w.finish();

    let gw = Ipv4Addr::new(10, 9, 0, 254);
    let mut w = Wire::new("l2-gw", |c| c.gateway = Some(gw));
    let h = w.stack.udp_bind(5000).unwrap();
    w.poll();
    w.sent();
    w.stack.send_to(h, SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 9), b"x").unwrap();
    w.poll();
    let sent = w.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(&sent[0][38..42], &gw.octets(), "ARP asks for the gateway");
    w.finish();
}

#[test]
fn on_link_senders_are_learned_from_their_frames() {
    let mut w = Wire::new("l2-learn", |_| {});
    let h = w.stack.udp_bind(53).unwrap();
    w.poll();
    w.sent();
    let (mac, peer) = (w.stack.config().mac, w.peer_mac);
    w.inject(&eth(mac, peer, EtherType::IPV4, &udp(PEER, A_IP, 1000, 53, b"q")));
    // Off-link sources are not learned (their frames come from a router).
    w.inject(&eth(
        mac,
        MacAddr([2, 7, 7, 7, 7, 7]),
        EtherType::IPV4,
        &udp(Ipv4Addr::new(192, 0, 2, 9), A_IP, 1000, 53, b"q"),
    ));
    w.poll();
    let entries: Vec<_> = w.stack.arp_entries().iter().map(|e| (e.ip, e.mac)).collect();
    assert_eq!(entries, vec![(PEER, peer)]);
    let d = w.stack.recv_from(h).unwrap();
    w.stack.send_to(h, d.from, b"answer").unwrap();
    drop(d);
    while w.stack.recv_from(h).is_ok() {}
    w.poll();
    let sent = w.sent();
    assert_eq!(sent.len(), 1, "the answer goes out at once, with no ARP request");
    assert_eq!(&sent[0][..6], &peer.0);
    w.finish();
}
