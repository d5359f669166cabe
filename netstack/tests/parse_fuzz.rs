//! Malformed Ethernet/ARP/IPv4/ICMP/UDP/TCP frames never panic the stack and never leak a buffer: valid frames
//! of each kind, randomly truncated, padded and bit-flipped, go through the whole input path (and smoltcp for
//! TCP), and the pool is full again once the stack and ports are gone.

mod common;

use common::frames::*;
use common::*;
use pkthdr::{ArpOperation, EtherType, IcmpType, IpProtocol, Ipv4Packet, TcpFlags, TcpPacket};
use pktio::MacAddr;
use proptest::prelude::*;
use std::net::Ipv4Addr;

const PEER: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 7);

fn tcp_syn(dport: u16) -> Vec<u8> {
    let mut seg = vec![0u8; 20];
    let mut t = TcpPacket::new_unchecked(&mut seg[..]);
    t.set_src_port(40000);
    t.set_dst_port(dport);
    t.set_seq_number(1000);
    t.set_header_len(20);
    t.set_flags(TcpFlags::SYN);
    t.set_window_len(65535);
    let mut p = ipv4(PEER, A_IP, IpProtocol::TCP, 64, &seg);
    let mut ip = Ipv4Packet::new_unchecked(&mut p[..]);
    let pseudo = ip.pseudo_header(20);
    TcpPacket::new_unchecked(ip.payload_mut()).fill_checksum(pseudo);
    p
}

/// Valid templates, one per protocol, addressed to the stack (`mac`) from the peer.
fn templates(mac: MacAddr, peer: MacAddr) -> Vec<Vec<u8>> {
    vec![
        eth(MacAddr::BROADCAST, peer, EtherType::ARP, &arp(ArpOperation::REQUEST, peer, PEER, MacAddr::ZERO, A_IP)),
        eth(mac, peer, EtherType::ARP, &arp(ArpOperation::REPLY, peer, PEER, mac, A_IP)),
        eth(
            mac,
            peer,
            EtherType::IPV4,
            &ipv4(PEER, A_IP, IpProtocol::ICMP, 64, &icmp_echo(IcmpType::V4_ECHO_REQUEST, 1, 2, b"abcdefgh")),
        ),
        eth(mac, peer, EtherType::IPV4, &udp(PEER, A_IP, 1000, 53, b"query")),
        eth(mac, peer, EtherType::IPV4, &tcp_syn(80)),
        eth(mac, peer, EtherType::IPV4, &tcp_syn(81)),
    ]
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, bits: u8 },
    Truncate(usize),
    Pad(usize),
    Set { at: usize, value: u8 },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0usize..80, 1u8..=255).prop_map(|(at, bits)| Mutation::Flip { at, bits }),
        (0usize..80).prop_map(Mutation::Truncate),
        (1usize..64).prop_map(Mutation::Pad),
        (0usize..80, any::<u8>()).prop_map(|(at, value)| Mutation::Set { at, value }),
    ]
}

fn apply(frame: &mut Vec<u8>, m: &Mutation) {
    match *m {
        Mutation::Flip { at, bits } if at < frame.len() => frame[at] ^= bits,
        Mutation::Set { at, value } if at < frame.len() => frame[at] = value,
        Mutation::Truncate(n) => frame.truncate(n),
        Mutation::Pad(n) => frame.extend(std::iter::repeat(0xa5).take(n)),
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn mutated_frames_never_panic_or_leak(
        frames in prop::collection::vec((0usize..6, prop::collection::vec(mutation(), 0..4)), 1..24),
        noise in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..120), 0..4),
    ) {
        let mut w = Wire::new("fuzz", |_| {});
        let udp_socket = w.stack.udp_bind(53).unwrap();
        let listener = w.stack.listen(80).unwrap();
        let (mac, peer) = (w.stack.config().mac, w.peer_mac);
        let templates = templates(mac, peer);
        for (which, mutations) in &frames {
            let mut f = templates[*which].clone();
            for m in mutations {
                apply(&mut f, m);
            }
            w.inject(&f);
        }
        for n in &noise {
            w.inject(n);
        }
        for _ in 0..4 {
            w.poll();
        }
        let c = *w.stack.counters();
        prop_assert_eq!(c.rx_packets, (frames.len() + noise.len()) as u64);
        // Whatever was queued for the application stays accounted for until it lets go.
        while w.stack.recv_from(udp_socket).is_ok() {}
        while let Ok(h) = w.stack.accept(listener) {
            w.stack.abort(h).unwrap();
        }
        w.sent();
        w.finish();
    }
}
