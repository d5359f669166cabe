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

/// A TCP segment in IPv4 (checksums filled), with raw `options` (a multiple of 4 bytes).
#[allow(clippy::too_many_arguments)]
pub fn tcp(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: pkthdr::TcpFlags,
    options: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let len = 20 + options.len() + payload.len();
    let mut p = ipv4(src, dst, IpProtocol::TCP, 64, &vec![0u8; len]);
    let mut ip = Ipv4Packet::new_unchecked(&mut p[..]);
    let pseudo = ip.pseudo_header(len as u16);
    let mut t = pkthdr::TcpPacket::new_unchecked(ip.payload_mut());
    t.set_src_port(sport);
    t.set_dst_port(dport);
    t.set_seq_number(seq);
    t.set_ack_number(ack);
    t.set_header_len(20 + options.len());
    t.set_flags(flags);
    t.set_window_len(65535);
    let buf = t.into_inner();
    buf[20..20 + options.len()].copy_from_slice(options);
    buf[20 + options.len()..].copy_from_slice(payload);
    pkthdr::TcpPacket::new_unchecked(&mut buf[..]).fill_checksum(pseudo);
    p
}

/// A TCP segment as the tests look at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seg {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: pkthdr::TcpFlags,
    pub window: u16,
    pub options: Vec<u8>,
    pub payload: Vec<u8>,
    /// Its TCP checksum is right.
    pub checksum_ok: bool,
}

/// The TCP segment in an Ethernet frame, if it holds one.
pub fn parse_tcp(frame: &[u8]) -> Option<Seg> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::IPV4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(&frame[14..]).ok()?;
    if ip.protocol() != IpProtocol::TCP {
        return None;
    }
    let payload = ip.payload();
    let t = pkthdr::TcpPacket::new_checked(payload).ok()?;
    Some(Seg {
        src: ip.src_addr(),
        dst: ip.dst_addr(),
        sport: t.src_port(),
        dport: t.dst_port(),
        seq: t.seq_number(),
        ack: t.ack_number(),
        flags: t.flags(),
        window: t.window_len(),
        options: payload[20..t.header_len()].to_vec(),
        payload: t.payload().to_vec(),
        checksum_ok: t.verify_checksum(ip.pseudo_header(payload.len() as u16)),
    })
}
