//! Packet headers (`pkthdr`) and testpmd-rs's per-packet rewrites on any byte string: the checked views never
//! panic, a header that parses re-emits to one that parses back equal, a router TTL decrement keeps the IPv4
//! checksum valid, and the forwarding modes' in-place rewrites (csum fix-up, 5-tuple swap, ICMP echo) never panic
//! or change the frame's length.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pkthdr::{
    ArpPacket, ArpRepr, EtherType, EthernetFrame, IcmpPacket, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, TcpPacket,
    UdpPacket,
};
use pktio::MacAddr;

fn ipv4(d: &[u8]) {
    let Ok(ip) = Ipv4Packet::new_checked(d) else { return };
    let _ = (ip.header_len(), ip.total_len(), ip.is_fragment(), ip.verify_checksum(), ip.payload().len());
    if let Ok(repr) = Ipv4Repr::parse(&ip) {
        let mut out = vec![0u8; ip.header_len().max(20) + repr.payload_len];
        let mut view = Ipv4Packet::new_unchecked(&mut out[..]);
        repr.emit(&mut view);
        let back = Ipv4Packet::new_checked(&out[..]).expect("emitted IPv4 header is checked");
        assert_eq!(Ipv4Repr::parse(&back).expect("emitted IPv4 header parses"), repr);
    }
    let mut copy = d.to_vec();
    let mut ip = Ipv4Packet::new_unchecked(&mut copy[..]);
    if ip.verify_checksum() && ip.decrement_ttl() {
        assert!(ip.verify_checksum(), "TTL decrement broke the header checksum");
    }
    l4(ip.payload(), ip.protocol().0);
}

fn ipv6(d: &[u8]) {
    let Ok(ip) = Ipv6Packet::new_checked(d) else { return };
    if let Ok(repr) = Ipv6Repr::parse(&ip) {
        let mut out = vec![0u8; 40 + repr.payload_len];
        repr.emit(&mut Ipv6Packet::new_unchecked(&mut out[..]));
        let back = Ipv6Packet::new_checked(&out[..]).expect("emitted IPv6 header is checked");
        assert_eq!(Ipv6Repr::parse(&back).expect("emitted IPv6 header parses"), repr);
    }
    l4(ip.payload(), ip.next_header().0);
}

fn l4(d: &[u8], proto: u8) {
    match proto {
        6 => {
            if let Ok(t) = TcpPacket::new_checked(d) {
                let _ = (t.src_port(), t.dst_port(), t.seq_number());
            }
        }
        17 => {
            if let Ok(u) = UdpPacket::new_checked(d) {
                let _ = (u.len(), u.checksum(), u.payload().len());
            }
        }
        1 | 58 => {
            if let Ok(i) = IcmpPacket::new_checked(d) {
                let _ = (i.msg_type(), i.code(), i.echo_ident(), i.echo_seq_no(), i.verify_checksum(Default::default()));
            }
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(eth) = EthernetFrame::new_checked(data) {
        if let Ok((l2, ty)) = eth.untagged() {
            let rest = &data[l2..];
            match ty {
                EtherType::IPV4 => ipv4(rest),
                EtherType::IPV6 => ipv6(rest),
                EtherType::ARP => {
                    if let Ok(arp) = ArpPacket::new_checked(rest) {
                        if let Ok(repr) = ArpRepr::parse(&arp) {
                            let mut out = [0u8; 28];
                            repr.emit(&mut ArpPacket::new_unchecked(&mut out[..]));
                            let back = ArpPacket::new_checked(&out[..]).expect("emitted ARP is checked");
                            assert_eq!(ArpRepr::parse(&back).expect("emitted ARP parses"), repr);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    // Bare L3 too: the views must hold up without an Ethernet header in front.
    ipv4(data);
    ipv6(data);
    let mut frame = data.to_vec();
    let _ = testpmd_rs::pkt::check_and_fix_checksums(&mut frame);
    testpmd_rs::pkt::five_tuple_swap(&mut frame);
    let _ = testpmd_rs::pkt::icmpecho_reply(&mut frame, &MacAddr([2, 0, 0, 0, 0, 1]));
    assert_eq!(frame.len(), data.len());
});
