//! What testpmd's forwarding engines do to packets, written on [`pkthdr`]: the csum engine's check and fix,
//! 5tswap, icmpecho's replies, and the frames txonly and flowgen send. Header layouts and checksums live in
//! `pkthdr`; this file holds only testpmd's behaviour.

use std::net::Ipv4Addr;

use pkthdr::{
    ArpOperation, ArpPacket, ArpRepr, EtherType, EthernetFrame, EthernetRepr, IcmpPacket, IcmpType, IpProtocol,
    Ipv4Packet, Ipv4Repr, Ipv6Packet, Sum, TcpPacket, UdpPacket, UdpRepr,
};
use pktio::MacAddr;

/// Length of an untagged Ethernet header.
const ETH_LEN: usize = EthernetFrame::<&[u8]>::HEADER_LEN;
/// Length of a UDP/IPv4 frame without payload (the shortest txonly and flowgen send).
pub const UDP_FRAME_MIN: usize = ETH_LEN + Ipv4Packet::<&[u8]>::MIN_HEADER_LEN + UdpPacket::<&[u8]>::HEADER_LEN;

/// What the checksum engine found in one packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CsumResult {
    /// The IPv4 header checksum was wrong (now fixed).
    pub bad_ip: bool,
    /// The TCP/UDP checksum was wrong (now fixed).
    pub bad_l4: bool,
}

/// Checks the IPv4 header checksum and the TCP/UDP checksum (IPv4 or IPv6) of the frame `d` in software, reports
/// which were wrong, and writes correct ones (a zero UDP checksum stays zero, as in testpmd's csum engine without
/// TX offloads). Frames it does not understand are left alone.
#[inline(always)]
pub fn check_and_fix_checksums(d: &mut [u8]) -> CsumResult {
    let Ok(eth) = EthernetFrame::new_checked(&*d) else { return CsumResult::default() };
    // Untagged IPv4, the common case, inline; the rest out of line.
    if eth.ethertype() == EtherType::IPV4 {
        return check_and_fix_ipv4(&mut d[ETH_LEN..]);
    }
    match eth.untagged() {
        Ok((l2, EtherType::IPV4)) => check_and_fix_ipv4_outlined(&mut d[l2..]),
        Ok((l2, EtherType::IPV6)) => check_and_fix_ipv6(&mut d[l2..]),
        _ => CsumResult::default(),
    }
}

#[inline(never)]
fn check_and_fix_ipv4_outlined(ip: &mut [u8]) -> CsumResult {
    check_and_fix_ipv4(ip)
}

#[inline(always)]
fn check_and_fix_ipv4(ip: &mut [u8]) -> CsumResult {
    let mut out = CsumResult::default();
    let Ok(mut ip) = Ipv4Packet::new_checked(ip) else { return out };
    let good = ip.compute_checksum();
    if ip.checksum() != good {
        out.bad_ip = true;
        ip.set_checksum(good);
    }
    // Fragments other than the first carry no L4 header; first fragments' L4 checksum covers more.
    if ip.is_fragment() {
        return out;
    }
    let protocol = ip.protocol();
    let pseudo = ip.pseudo_header(ip.total_len() - ip.header_len() as u16);
    out.bad_l4 = check_and_fix_l4(ip.payload_mut(), protocol, pseudo, true);
    out
}

#[inline(never)]
fn check_and_fix_ipv6(ip: &mut [u8]) -> CsumResult {
    let Ok(mut ip) = Ipv6Packet::new_checked(ip) else { return CsumResult::default() };
    let next = ip.next_header();
    let pseudo = ip.pseudo_header(next, ip.payload_len() as u32);
    CsumResult { bad_ip: false, bad_l4: check_and_fix_l4(ip.payload_mut(), next, pseudo, false) }
}

/// Checks and writes the TCP or UDP checksum of `l4` (the IP payload: the L4 length comes from the IP header, as
/// testpmd's engine takes it; the UDP length field and TCP data offset are not consulted). True if it was wrong.
#[inline(always)]
fn check_and_fix_l4(l4: &mut [u8], protocol: IpProtocol, pseudo: Sum, over_ipv4: bool) -> bool {
    match protocol {
        IpProtocol::UDP if l4.len() >= UdpPacket::<&[u8]>::HEADER_LEN => {
            let mut udp = UdpPacket::new_unchecked(l4);
            // A zero UDP checksum means "none" over IPv4 (and is invalid over IPv6): dpdk-testpmd's csum engine
            // leaves it zero either way, so the frame leaves as it came.
            if udp.checksum() == 0 {
                return !over_ipv4;
            }
            let (old, good) = (udp.checksum(), udp.compute_checksum(pseudo));
            udp.set_checksum(good);
            old != good
        }
        IpProtocol::TCP if l4.len() >= TcpPacket::<&[u8]>::MIN_HEADER_LEN => {
            let mut tcp = TcpPacket::new_unchecked(l4);
            let (old, good) = (tcp.checksum(), tcp.compute_checksum(pseudo));
            tcp.set_checksum(good);
            old != good
        }
        _ => false,
    }
}

/// Swaps the Ethernet, IP (v4 or v6) and TCP/UDP source and destination of the frame `d`, as far as it parses
/// (testpmd's 5tswap). Checksums stay valid: swapping does not change a one's complement sum. Like testpmd, it
/// trusts the IP header's length fields beyond the fixed header size.
#[inline]
pub fn five_tuple_swap(d: &mut [u8]) {
    let Ok(mut eth) = EthernetFrame::new_checked(&mut *d) else { return };
    eth.swap_addrs();
    // Untagged IPv4 first: one compare for the common case, the VLAN walk after it.
    let (l2, ty) = match eth.ethertype() {
        EtherType::IPV4 => (ETH_LEN, EtherType::IPV4),
        _ => match eth.untagged() {
            Ok(l2_ty) => l2_ty,
            Err(_) => return,
        },
    };
    let ip = &mut d[l2..];
    let (protocol, l4) = match ty {
        EtherType::IPV4 if ip.len() >= Ipv4Packet::<&[u8]>::MIN_HEADER_LEN => {
            let mut ip = Ipv4Packet::new_unchecked(ip);
            ip.swap_addrs();
            let (protocol, hlen) = (ip.protocol(), ip.header_len());
            (protocol, ip.into_inner().get_mut(hlen..))
        }
        EtherType::IPV6 if ip.len() >= Ipv6Packet::<&[u8]>::HEADER_LEN => {
            let mut ip = Ipv6Packet::new_unchecked(ip);
            ip.swap_addrs();
            (ip.next_header(), ip.into_inner().get_mut(Ipv6Packet::<&[u8]>::HEADER_LEN..))
        }
        _ => return,
    };
    // Only the ports are touched: both fit in the first 4 bytes of either header.
    const PORTS_LEN: usize = 4;
    match (protocol, l4) {
        (IpProtocol::UDP, Some(l4)) if l4.len() >= PORTS_LEN => UdpPacket::new_unchecked(l4).swap_ports(),
        (IpProtocol::TCP, Some(l4)) if l4.len() >= PORTS_LEN => TcpPacket::new_unchecked(l4).swap_ports(),
        _ => {}
    }
}

/// Turns an ARP request or an ICMP echo request (IPv4) in `d` into its reply in place, as testpmd's icmpecho
/// does: ARP is answered for any target address with `port_mac`; an echo reply swaps the Ethernet and IP
/// addresses and patches the ICMP checksum. Returns false for anything else (the caller drops it).
pub fn icmpecho_reply(d: &mut [u8], port_mac: &MacAddr) -> bool {
    let Ok(eth) = EthernetFrame::new_checked(&*d) else { return false };
    match eth.untagged() {
        Ok((l2, EtherType::ARP)) => arp_reply(d, l2, *port_mac),
        Ok((l2, EtherType::IPV4)) => echo_reply(d, l2),
        _ => false,
    }
}

/// The ARP reply to a request at `d[l2..]`, from `port_mac`, to the asker.
fn arp_reply(d: &mut [u8], l2: usize, port_mac: MacAddr) -> bool {
    let Ok(arp) = ArpPacket::new_checked(&d[l2..]) else { return false };
    let Ok(request) = ArpRepr::parse(&arp) else { return false };
    if request.operation != ArpOperation::REQUEST {
        return false;
    }
    let mut eth = EthernetFrame::new_unchecked(&mut *d);
    let asker = eth.src_addr();
    eth.set_dst_addr(asker);
    eth.set_src_addr(port_mac);
    request.reply(port_mac).emit(&mut ArpPacket::new_unchecked(&mut d[l2..]));
    true
}

/// The ICMP echo reply to a request in the IPv4 packet at `d[l2..]`.
fn echo_reply(d: &mut [u8], l2: usize) -> bool {
    let Ok(ip) = Ipv4Packet::new_checked(&d[l2..]) else { return false };
    if ip.protocol() != IpProtocol::ICMP {
        return false;
    }
    match IcmpPacket::new_checked(ip.payload()) {
        Ok(icmp) if icmp.msg_type() == IcmpType::V4_ECHO_REQUEST && icmp.code() == 0 => {}
        _ => return false,
    }
    EthernetFrame::new_unchecked(&mut *d).swap_addrs();
    let mut ip = Ipv4Packet::new_unchecked(&mut d[l2..]);
    if ip.dst_addr().is_multicast() {
        // Multicast destination: reply from a unicast address next to the asker's (testpmd's choice: the low
        // two bits become 01, or 10 if they were 01).
        let asker = ip.src_addr();
        let a = u32::from(asker);
        let ours = if a & 3 == 1 { (a & !3) | 2 } else { (a & !3) | 1 };
        ip.set_dst_addr(asker);
        ip.set_src_addr(Ipv4Addr::from(ours));
        ip.fill_checksum();
    } else {
        ip.swap_addrs();
    }
    IcmpPacket::new_unchecked(ip.payload_mut()).rewrite_msg_type(IcmpType::V4_ECHO_REPLY);
    true
}

/// Addresses and ports of the UDP/IPv4 frames txonly sends (testpmd's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpFlow {
    /// Ethernet destination.
    pub dst_mac: MacAddr,
    /// Ethernet source.
    pub src_mac: MacAddr,
    /// IPv4 source.
    pub src_ip: Ipv4Addr,
    /// IPv4 destination.
    pub dst_ip: Ipv4Addr,
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
}

/// testpmd's txonly source address 198.18.0.1.
pub const TXONLY_SRC_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
/// testpmd's txonly destination address 198.18.0.2.
pub const TXONLY_DST_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
/// `--txonly-multi-flow`: the IPv4 source of generated packet number `var` (a per-stream byte counter) sent from
/// lcore `lcore`, as dpdk-testpmd derives it: the destination with `var` in its third byte, plus the lcore id.
pub fn multi_flow_src(var: u8, lcore: u32) -> Ipv4Addr {
    Ipv4Addr::from((u32::from(TXONLY_DST_IP) | (var as u32) << 8).wrapping_add(lcore))
}

/// Writes `src` as the IPv4 source of the UDP/IPv4 frame `d` (as txonly builds it) and its header checksum.
pub fn set_ipv4_src(d: &mut [u8], src: Ipv4Addr) {
    if let Ok(mut ip) = Ipv4Packet::new_checked(&mut d[ETH_LEN..]) {
        ip.set_src_addr(src);
        ip.fill_checksum();
    }
}

/// testpmd's txonly UDP ports (discard, 9 -> 9).
pub const TXONLY_UDP_PORT: u16 = 9;
/// flowgen's Ethernet source 00:01:02:03:04:00.
pub const FLOWGEN_SRC_MAC: MacAddr = MacAddr([0, 1, 2, 3, 4, 0]);
/// flowgen's Ethernet destination 00:01:02:03:04:01.
pub const FLOWGEN_DST_MAC: MacAddr = MacAddr([0, 1, 2, 3, 4, 1]);
/// flowgen's IPv4 source 10.254.0.0.
pub const FLOWGEN_SRC_IP: Ipv4Addr = Ipv4Addr::new(10, 254, 0, 0);
/// flowgen's first IPv4 destination 10.253.0.0 (the flow number is added).
pub const FLOWGEN_DST_IP: Ipv4Addr = Ipv4Addr::new(10, 253, 0, 0);
/// flowgen's UDP ports.
const FLOWGEN_PORTS: (u16, u16) = (1000, 1001);
/// TTL of generated frames.
const GEN_TTL: u8 = 64;

/// A UDP/IPv4 frame of `len` bytes (at least 42): headers for `flow`, a zero payload, IPv4 checksum set, UDP
/// checksum 0 (none), TTL 64.
pub fn udp_frame(flow: &UdpFlow, len: usize) -> Vec<u8> {
    let len = len.max(UDP_FRAME_MIN);
    let mut f = vec![0u8; len];
    let eth = EthernetRepr { src_addr: flow.src_mac, dst_addr: flow.dst_mac, ethertype: EtherType::IPV4 };
    eth.emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    let ip = Ipv4Repr {
        src_addr: flow.src_ip,
        dst_addr: flow.dst_ip,
        protocol: IpProtocol::UDP,
        payload_len: len - ETH_LEN - Ipv4Packet::<&[u8]>::MIN_HEADER_LEN,
        ttl: GEN_TTL,
    };
    let mut ip_packet = Ipv4Packet::new_unchecked(&mut f[ETH_LEN..]);
    ip.emit(&mut ip_packet);
    let udp = UdpRepr { src_port: flow.src_port, dst_port: flow.dst_port };
    udp.emit(&mut UdpPacket::new_unchecked(ip_packet.payload_mut()), ip.payload_len - UdpPacket::<&[u8]>::HEADER_LEN);
    f
}

/// flowgen's frames: one UDP/IPv4 template whose IPv4 destination is [`FLOWGEN_DST_IP`] plus the flow number,
/// its header checksum patched from a sum taken once (no per-packet sum over the header).
#[derive(Debug, Clone)]
pub struct FlowgenTemplate {
    frame: Box<[u8]>,
    /// One's complement sum of the IPv4 header without its checksum, destination 0.0.0.0.
    ip_sum: Sum,
    dst_base: u32,
}

impl FlowgenTemplate {
    /// Frames of `len` bytes (at least 42).
    pub fn new(len: usize) -> FlowgenTemplate {
        let flow = UdpFlow {
            dst_mac: FLOWGEN_DST_MAC,
            src_mac: FLOWGEN_SRC_MAC,
            src_ip: FLOWGEN_SRC_IP,
            dst_ip: Ipv4Addr::UNSPECIFIED,
            src_port: FLOWGEN_PORTS.0,
            dst_port: FLOWGEN_PORTS.1,
        };
        let frame = udp_frame(&flow, len).into_boxed_slice();
        // The checksum's complement is the header's sum without it.
        let ip_sum = Sum::ZERO.add_word(!Ipv4Packet::new_unchecked(&frame[ETH_LEN..]).checksum());
        FlowgenTemplate { frame, ip_sum, dst_base: u32::from(FLOWGEN_DST_IP) }
    }

    /// Frame length.
    pub fn len(&self) -> usize {
        self.frame.len()
    }

    /// True for a zero-length template (never: frames have headers at least).
    pub fn is_empty(&self) -> bool {
        self.frame.is_empty()
    }

    /// Writes the frame of flow `flow` into `d` (exactly [`Self::len`] bytes).
    #[inline(always)]
    pub fn write(&self, d: &mut [u8], flow: u32) {
        d.copy_from_slice(&self.frame);
        let dst = self.dst_base.wrapping_add(flow);
        let mut ip = Ipv4Packet::new_unchecked(&mut d[ETH_LEN..]);
        ip.set_dst_addr(Ipv4Addr::from(dst));
        ip.set_checksum(self.ip_sum.add_word((dst >> 16) as u16).add_word(dst as u16).checksum());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pkthdr::checksum;

    fn frame() -> Vec<u8> {
        udp_frame(
            &UdpFlow {
                dst_mac: MacAddr([2, 0, 0, 0, 0, 1]),
                src_mac: MacAddr([2, 0, 0, 0, 0, 0]),
                src_ip: TXONLY_SRC_IP,
                dst_ip: TXONLY_DST_IP,
                src_port: 9,
                dst_port: 9,
            },
            64,
        )
    }

    #[test]
    fn udp_frame_is_testpmds_txonly_frame() {
        let f = frame();
        let want: [u8; 42] = [
            2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0x08, 0x00, // Ethernet
            0x45, 0, 0, 50, 0, 0, 0, 0, 64, 17, 0x00, 0x00, 198, 18, 0, 1, 198, 18, 0, 2, // IPv4, checksum below
            0, 9, 0, 9, 0, 30, 0, 0, // UDP, no checksum
        ];
        assert_eq!(&f[..24], &want[..24]);
        assert_eq!(&f[26..42], &want[26..42]);
        assert_eq!(&f[42..], &[0u8; 22]);
        assert_eq!(checksum::data(&f[14..34]), 0xffff, "IPv4 header checksum valid");
    }

    #[test]
    fn multi_flow_sources_vary_per_packet_and_keep_the_header_valid() {
        assert_eq!(multi_flow_src(0, 1), Ipv4Addr::new(198, 18, 0, 3));
        assert_eq!(multi_flow_src(7, 1), Ipv4Addr::new(198, 18, 7, 3));
        let mut f = frame();
        set_ipv4_src(&mut f, multi_flow_src(9, 2));
        assert_eq!(f[26..30], [198, 18, 9, 4]);
        assert_eq!(checksum::data(&f[14..34]), 0xffff, "IPv4 header checksum valid");
    }

    #[test]
    fn csum_fixes_and_counts() {
        let mut f = frame();
        let none = f.clone();
        assert_eq!(&none[40..42], &[0, 0], "txonly frames carry no UDP checksum");
        assert_eq!(check_and_fix_checksums(&mut f), CsumResult { bad_ip: false, bad_l4: false });
        assert_eq!(f, none, "a zero UDP checksum over IPv4 (none) stays zero, as in dpdk-testpmd");
        f[40..42].copy_from_slice(&[0x12, 0x34]);
        assert_eq!(check_and_fix_checksums(&mut f), CsumResult { bad_ip: false, bad_l4: true });
        let fixed = f.clone();
        assert_ne!(&fixed[40..42], &[0x12, 0x34], "a wrong UDP checksum is rewritten");
        assert_eq!(check_and_fix_checksums(&mut f.clone()), CsumResult::default());
        f[24] ^= 0x55;
        f[41] ^= 0x01;
        assert_eq!(check_and_fix_checksums(&mut f), CsumResult { bad_ip: true, bad_l4: true });
        assert_eq!(f, fixed);
    }

    #[test]
    fn csum_fixes_tcp_over_vlan_tagged_ipv6() {
        // 802.1Q tag, IPv6 (40) and a 20-byte TCP header with a wrong checksum.
        let mut f = vec![0u8; 14 + 4 + 40 + 20];
        f[12..14].copy_from_slice(&[0x81, 0x00]);
        f[16..18].copy_from_slice(&[0x86, 0xdd]);
        f[18] = 0x60;
        f[22..24].copy_from_slice(&20u16.to_be_bytes());
        f[24] = 6;
        f[25] = 64;
        f[26..42].copy_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        f[42..58].copy_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        f[58..62].copy_from_slice(&[0x9c, 0x40, 0x00, 0x50]);
        f[70] = 0x50;
        f[74..76].copy_from_slice(&[0xde, 0xad]);
        assert_eq!(check_and_fix_checksums(&mut f), CsumResult { bad_ip: false, bad_l4: true });
        // Recomputed by the textbook sum: pseudo header (addresses, length 20, next header 6) plus the segment.
        let mut pseudo = f[26..58].to_vec();
        pseudo.extend_from_slice(&[0, 0, 0, 20, 0, 0, 0, 6]);
        pseudo.extend_from_slice(&f[58..]);
        assert_eq!(checksum::data(&pseudo), 0xffff, "TCP checksum valid");
        assert_eq!(check_and_fix_checksums(&mut f), CsumResult::default());
    }

    #[test]
    fn five_tuple_swap_swaps_and_twice_is_identity() {
        let f = frame();
        let mut g = f.clone();
        five_tuple_swap(&mut g);
        assert_eq!((&g[0..6], &g[6..12]), (&f[6..12], &f[0..6]));
        assert_eq!((&g[26..30], &g[30..34]), (&f[30..34], &f[26..30]));
        five_tuple_swap(&mut g);
        assert_eq!(f, g);
        let mut short = f[..20].to_vec();
        five_tuple_swap(&mut short);
        assert_eq!(&short[..6], &f[6..12], "a cut frame still gets its MACs swapped");
    }

    #[test]
    fn icmp_echo_reply_checksum_stays_valid() {
        let mut f = frame();
        f[23] = IpProtocol::ICMP.0;
        let mut ip = Ipv4Packet::new_unchecked(&mut f[14..]);
        ip.fill_checksum();
        f[34] = 8;
        f[35] = 0;
        IcmpPacket::new_unchecked(&mut f[34..]).fill_checksum(Sum::ZERO);
        let mac = MacAddr([2, 0x70, 0, 0, 0, 9]);
        assert!(icmpecho_reply(&mut f, &mac));
        assert_eq!(f[34], 0);
        assert_eq!(checksum::data(&f[34..]), 0xffff, "ICMP checksum valid after the reply");
        assert_eq!(&f[26..30], &TXONLY_DST_IP.octets());
        assert_eq!(&f[30..34], &TXONLY_SRC_IP.octets());
    }

    #[test]
    fn icmp_echo_to_multicast_is_answered_from_a_neighbour_address() {
        let mut f = frame();
        f[23] = IpProtocol::ICMP.0;
        f[30..34].copy_from_slice(&[224, 0, 0, 1]);
        Ipv4Packet::new_unchecked(&mut f[14..]).fill_checksum();
        f[34..36].copy_from_slice(&[8, 0]);
        IcmpPacket::new_unchecked(&mut f[34..]).fill_checksum(Sum::ZERO);
        assert!(icmpecho_reply(&mut f, &MacAddr::ZERO));
        // Asker 198.18.0.1 (low bits 01): we answer from 198.18.0.2.
        assert_eq!(&f[26..34], &[198, 18, 0, 2, 198, 18, 0, 1]);
        assert!(Ipv4Packet::new_checked(&f[14..]).unwrap().verify_checksum());
    }

    #[test]
    fn arp_request_gets_a_reply() {
        let mut f = vec![0u8; 42];
        f[0..6].copy_from_slice(&[0xff; 6]);
        f[6..12].copy_from_slice(&[2, 1, 1, 1, 1, 1]);
        f[12..14].copy_from_slice(&[0x08, 0x06]);
        f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
        f[22..28].copy_from_slice(&[2, 1, 1, 1, 1, 1]);
        f[28..32].copy_from_slice(&[10, 0, 0, 1]);
        f[38..42].copy_from_slice(&[10, 0, 0, 2]);
        let mac = MacAddr([2, 0x70, 0, 0, 0, 9]);
        let mut reply = f.clone();
        assert!(icmpecho_reply(&mut reply, &mac));
        assert_eq!(&reply[0..6], &[2, 1, 1, 1, 1, 1]);
        assert_eq!(&reply[6..12], &mac.0);
        assert_eq!(&reply[20..22], &[0, 2]);
        assert_eq!(&reply[22..28], &mac.0);
        assert_eq!(&reply[28..32], &[10, 0, 0, 2]);
        assert_eq!(&reply[32..38], &[2, 1, 1, 1, 1, 1]);
        assert_eq!(&reply[38..42], &[10, 0, 0, 1]);
        assert!(!icmpecho_reply(&mut reply.clone(), &mac), "a reply is not answered");
        assert!(!icmpecho_reply(&mut f[..41].to_vec(), &mac), "a cut request is not answered");
        assert!(!icmpecho_reply(&mut [0u8; 10], &mac));
    }

    #[test]
    fn flowgen_frames_carry_their_flow_and_a_valid_checksum() {
        let t = FlowgenTemplate::new(60);
        let mut d = vec![0u8; t.len()];
        for flow in [0u32, 1, 255, 256, 65_535, 65_536, 1_000_000] {
            t.write(&mut d, flow);
            let ip = Ipv4Packet::new_checked(&d[14..]).unwrap();
            assert_eq!(ip.dst_addr(), Ipv4Addr::from(u32::from(FLOWGEN_DST_IP) + flow));
            assert!(ip.verify_checksum(), "flow {flow}");
            let mut full = d.clone();
            Ipv4Packet::new_unchecked(&mut full[14..]).fill_checksum();
            assert_eq!(d, full, "flow {flow}: patched checksum equals a full recompute");
        }
    }
}
