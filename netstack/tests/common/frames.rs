//! Frames built field by field for the tests (independently of the stack's own output path).
#![allow(dead_code)]

use std::net::Ipv4Addr;

use pkthdr::{
    ArpOperation, ArpPacket, ArpRepr, EtherType, EthernetFrame, EthernetRepr, IcmpPacket, IcmpType, IpProtocol,
    Ipv4Packet, Ipv4Repr, Sum, UdpPacket, UdpRepr,
};
use pktio::MacAddr;

pub fn eth(dst: MacAddr, src: MacAddr, ethertype: EtherType, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 14 + payload.len()];
    EthernetRepr { src_addr: src, dst_addr: dst, ethertype }.emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    f[14..].copy_from_slice(payload);
    f
}

pub fn arp(op: ArpOperation, sha: MacAddr, spa: Ipv4Addr, tha: MacAddr, tpa: Ipv4Addr) -> Vec<u8> {
    let mut p = vec![0u8; 28];
    ArpRepr {
        operation: op,
        source_hardware_addr: sha,
        source_protocol_addr: spa,
        target_hardware_addr: tha,
        target_protocol_addr: tpa,
    }
    .emit(&mut ArpPacket::new_unchecked(&mut p[..]));
    p
}

pub fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, protocol: IpProtocol, ttl: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 20 + payload.len()];
    let mut ip = Ipv4Packet::new_unchecked(&mut p[..]);
    Ipv4Repr { src_addr: src, dst_addr: dst, protocol, payload_len: payload.len(), ttl }.emit(&mut ip);
    ip.set_ident(0x1234);
    ip.fill_checksum();
    p[20..].copy_from_slice(payload);
    p
}

pub fn icmp_echo(t: IcmpType, ident: u16, seq: u16, data: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 8 + data.len()];
    let mut icmp = IcmpPacket::new_unchecked(&mut p[..]);
    icmp.set_msg_type(t);
    icmp.set_code(0);
    icmp.set_echo_ident(ident);
    icmp.set_echo_seq_no(seq);
    icmp.data_mut().copy_from_slice(data);
    icmp.fill_checksum(Sum::ZERO);
    p
}

pub fn udp(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, data: &[u8]) -> Vec<u8> {
    let mut p = ipv4(src, dst, IpProtocol::UDP, 64, &vec![0u8; 8 + data.len()]);
    let mut ip = Ipv4Packet::new_unchecked(&mut p[..]);
    let pseudo = ip.pseudo_header((8 + data.len()) as u16);
    let mut u = UdpPacket::new_unchecked(ip.payload_mut());
    UdpRepr { src_port: sport, dst_port: dport }.emit(&mut u, data.len());
    u.payload_mut().copy_from_slice(data);
    u.fill_checksum(pseudo);
    p
}
