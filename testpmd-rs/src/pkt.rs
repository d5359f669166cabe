//! Packet header helpers for the forwarding engines: Ethernet/VLAN, ARP, IPv4, IPv6, UDP, TCP and ICMP offsets,
//! Internet checksums, and the frames txonly and flowgen generate. Everything works on plain byte slices.

use pktio::MacAddr;

/// Ethernet header length.
pub const ETH_HLEN: usize = 14;
/// IPv4 header length without options.
pub const IPV4_HLEN: usize = 20;
/// IPv6 fixed header length.
pub const IPV6_HLEN: usize = 40;
/// UDP header length.
pub const UDP_HLEN: usize = 8;

/// EtherType IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType ARP.
pub const ETHERTYPE_ARP: u16 = 0x0806;
/// EtherType IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
/// EtherType 802.1Q VLAN.
pub const ETHERTYPE_VLAN: u16 = 0x8100;
/// EtherType 802.1ad QinQ.
pub const ETHERTYPE_QINQ: u16 = 0x88a8;

/// IP protocol ICMP.
pub const IPPROTO_ICMP: u8 = 1;
/// IP protocol TCP.
pub const IPPROTO_TCP: u8 = 6;
/// IP protocol UDP.
pub const IPPROTO_UDP: u8 = 17;

#[inline(always)]
fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}

/// The L2 header length and the EtherType after up to two VLAN tags, or `None` for a runt frame.
#[inline(always)]
pub fn parse_l2(d: &[u8]) -> Option<(usize, u16)> {
    if d.len() < ETH_HLEN {
        return None;
    }
    let mut l2 = ETH_HLEN;
    let mut ty = be16(d, 12);
    for _ in 0..2 {
        if ty != ETHERTYPE_VLAN && ty != ETHERTYPE_QINQ {
            break;
        }
        if d.len() < l2 + 4 {
            return None;
        }
        ty = be16(d, l2 + 2);
        l2 += 4;
    }
    Some((l2, ty))
}

/// One's complement sum of `data` taken as big-endian 16-bit words (an odd last byte is padded with zero). The
/// result is at most 0xffff and may be added to other sums before a final [`fold`].
#[inline]
pub fn sum_be(data: &[u8]) -> u64 {
    fold(raw_sum(data)).swap_bytes() as u64
}

/// `a + b` with end-around carry: one's complement addition of 64-bit words.
#[inline(always)]
fn adc(a: u64, b: u64) -> u64 {
    let (s, c) = a.overflowing_add(b);
    s + c as u64
}

/// One's complement sum of `data` in the little-endian domain, not folded: `fold(raw_sum(d)).swap_bytes()` is the
/// big-endian 16-bit word sum. Taken over little-endian 64-bit words with end-around carry (2^16 - 1 divides
/// 2^64 - 1, and the one's complement sum of byte-swapped words is the byte-swapped sum, RFC 1071): one load and
/// two additions per 8 bytes, no byte swaps. Inlined, so that constant lengths unroll.
#[inline(always)]
fn raw_sum(data: &[u8]) -> u64 {
    let mut acc = 0u64;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        acc = adc(acc, u64::from_le_bytes(c.try_into().expect("8 bytes")));
    }
    let mut r = chunks.remainder();
    if let Some((w, rest)) = r.split_first_chunk::<4>() {
        acc = adc(acc, u32::from_le_bytes(*w) as u64);
        r = rest;
    }
    if let Some((w, rest)) = r.split_first_chunk::<2>() {
        acc = adc(acc, u16::from_le_bytes(*w) as u64);
        r = rest;
    }
    if let [b] = r {
        acc = adc(acc, *b as u64);
    }
    acc
}

/// The little-endian-domain word at `at` subtracted (one's complement) from a raw sum: the sum without that field.
#[inline(always)]
fn without_field(acc: u64, d: &[u8], at: usize) -> u64 {
    adc(acc, (0xffff - u16::from_le_bytes([d[at], d[at + 1]])) as u64)
}

/// The final checksum (big-endian value) of a raw sum.
#[inline(always)]
fn finish(acc: u64) -> u16 {
    !fold(acc).swap_bytes()
}

/// Folds a sum to 16 bits (not complemented): the value in 1..=0xffff congruent to `acc` modulo 0xffff, or 0 for 0.
#[inline(always)]
pub fn fold(acc: u64) -> u16 {
    let a = (acc & 0xffff_ffff) + (acc >> 32); // < 2^33
    let a = (a & 0xffff) + (a >> 16); // < 2^18
    let a = (a & 0xffff) + (a >> 16); // < 2^16 + 4
    let a = (a & 0xffff) + (a >> 16); // <= 0xffff
    a as u16
}

/// The IPv4 header checksum of `hdr` (its checksum field is ignored).
#[inline(always)]
pub fn ipv4_checksum(hdr: &[u8]) -> u16 {
    // The common 20-byte header gets a sum of constant length (three loads).
    let acc = match hdr.first_chunk::<IPV4_HLEN>() {
        Some(h) if hdr.len() == IPV4_HLEN => raw_sum(h),
        _ => raw_sum(hdr),
    };
    finish(without_field(acc, hdr, 10))
}

/// Raw sum of a TCP/UDP pseudo header: the addresses, the protocol and the L4 length.
#[inline(always)]
fn pseudo_sum(addrs: u64, proto: u8, l4_len: usize) -> u64 {
    adc(adc(addrs, (proto as u64) << 8), (l4_len as u16).swap_bytes() as u64)
}

/// The checksum of an IPv4 TCP/UDP segment `l4` (its own checksum field at `csum_at` is ignored) with the pseudo
/// header from `ip` (the IPv4 header).
#[inline(always)]
pub fn ipv4_l4_checksum(ip: &[u8], proto: u8, l4: &[u8], csum_at: usize) -> u16 {
    let addrs: &[u8; 8] = ip[12..20].try_into().expect("8 bytes");
    let acc = adc(pseudo_sum(raw_sum(addrs), proto, l4.len()), raw_sum(l4));
    finish(without_field(acc, l4, csum_at))
}

/// The checksum of an IPv6 TCP/UDP segment `l4` with the pseudo header from `ip` (the IPv6 header).
#[inline(always)]
pub fn ipv6_l4_checksum(ip: &[u8], proto: u8, l4: &[u8], csum_at: usize) -> u16 {
    let addrs: &[u8; 32] = ip[8..40].try_into().expect("32 bytes");
    let acc = adc(pseudo_sum(raw_sum(addrs), proto, l4.len()), raw_sum(l4));
    finish(without_field(acc, l4, csum_at))
}

/// What the checksum engine found in one packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CsumResult {
    /// The IPv4 header checksum was wrong (now fixed).
    pub bad_ip: bool,
    /// The TCP/UDP checksum was wrong (now fixed).
    pub bad_l4: bool,
}

/// Checks the IPv4 header checksum and the TCP/UDP checksum (IPv4 or IPv6) of the frame `d` in software, reports
/// which were wrong, and writes correct ones (UDP over IPv4 with a zero checksum gets one computed, as testpmd's
/// csum engine does without TX offloads). Frames it does not understand are left alone.
#[inline(always)]
pub fn check_and_fix_checksums(d: &mut [u8]) -> CsumResult {
    // Untagged IPv4, the common case, inline with the L2 length and EtherType known; the rest out of line.
    if d.len() >= ETH_HLEN && be16(d, 12) == ETHERTYPE_IPV4 {
        return check_and_fix_ip_inline(d, ETH_HLEN, ETHERTYPE_IPV4);
    }
    match parse_l2(d) {
        Some((l2, ty)) if ty == ETHERTYPE_IPV4 || ty == ETHERTYPE_IPV6 => check_and_fix_ip(d, l2, ty),
        _ => CsumResult::default(),
    }
}

#[inline(never)]
fn check_and_fix_ip(d: &mut [u8], l2: usize, ty: u16) -> CsumResult {
    check_and_fix_ip_inline(d, l2, ty)
}

#[inline(always)]
fn check_and_fix_ip_inline(d: &mut [u8], l2: usize, ty: u16) -> CsumResult {
    let mut out = CsumResult::default();
    let (l3_end, proto, v4) = match ty {
        ETHERTYPE_IPV4 => {
            if d.len() < l2 + IPV4_HLEN || d[l2] >> 4 != 4 {
                return out;
            }
            let ihl = (d[l2] & 0xf) as usize * 4;
            let total = be16(d, l2 + 2) as usize;
            if ihl < IPV4_HLEN || d.len() < l2 + ihl || total < ihl || d.len() < l2 + total {
                return out;
            }
            let ip = &mut d[l2..l2 + ihl];
            let good = ipv4_checksum(ip);
            if be16(ip, 10) != good {
                out.bad_ip = true;
                ip[10..12].copy_from_slice(&good.to_be_bytes());
            }
            // Fragments other than the first carry no L4 header; first fragments' L4 checksum covers more.
            let frag = be16(d, l2 + 6) & 0x3fff;
            if frag != 0 {
                return out;
            }
            (l2 + total, d[l2 + 9], Some(ihl))
        }
        ETHERTYPE_IPV6 => {
            if d.len() < l2 + IPV6_HLEN {
                return out;
            }
            let payload = be16(d, l2 + 4) as usize;
            if d.len() < l2 + IPV6_HLEN + payload {
                return out;
            }
            (l2 + IPV6_HLEN + payload, d[l2 + 6], None)
        }
        _ => return out,
    };
    let l3_len = v4.unwrap_or(IPV6_HLEN);
    let (csum_at, min_len) = match proto {
        IPPROTO_UDP => (6, UDP_HLEN),
        IPPROTO_TCP => (16, 20),
        _ => return out,
    };
    let (head, rest) = d.split_at_mut(l2 + l3_len);
    let ip = &head[l2..];
    let l4 = &mut rest[..l3_end - l2 - l3_len];
    if l4.len() < min_len {
        return out;
    }
    let old = be16(l4, csum_at);
    let mut good = match v4 {
        Some(_) => ipv4_l4_checksum(ip, proto, l4, csum_at),
        None => ipv6_l4_checksum(ip, proto, l4, csum_at),
    };
    if proto == IPPROTO_UDP && good == 0 {
        good = 0xffff;
    }
    let udp_v4_none = proto == IPPROTO_UDP && v4.is_some() && old == 0;
    if old != good && !udp_v4_none {
        out.bad_l4 = true;
    }
    l4[csum_at..csum_at + 2].copy_from_slice(&good.to_be_bytes());
    out
}

/// Swaps the Ethernet, IP (v4 or v6) and TCP/UDP source and destination of the frame `d`, as far as it parses
/// (testpmd's 5tswap). Checksums stay valid: swapping does not change a one's complement sum.
#[inline]
pub fn five_tuple_swap(d: &mut [u8]) {
    if d.len() < 12 {
        return;
    }
    swap_mac(d);
    let Some((l2, ty)) = parse_l2(d) else { return };
    let (l4, proto) = match ty {
        ETHERTYPE_IPV4 => {
            if d.len() < l2 + IPV4_HLEN {
                return;
            }
            let (src, dst) = d[l2 + 12..l2 + 20].split_at_mut(4);
            src.swap_with_slice(dst);
            (l2 + (d[l2] & 0xf) as usize * 4, d[l2 + 9])
        }
        ETHERTYPE_IPV6 => {
            if d.len() < l2 + IPV6_HLEN {
                return;
            }
            let (src, dst) = d[l2 + 8..l2 + 40].split_at_mut(16);
            src.swap_with_slice(dst);
            (l2 + IPV6_HLEN, d[l2 + 6])
        }
        _ => return,
    };
    if (proto == IPPROTO_UDP || proto == IPPROTO_TCP) && d.len() >= l4 + 4 {
        let (src, dst) = d[l4..l4 + 4].split_at_mut(2);
        src.swap_with_slice(dst);
    }
}

/// Swaps the Ethernet destination and source addresses (`d` holds at least 12 bytes). One 8-byte and one
/// 4-byte load and store: no partial overlapping accesses that would defeat store forwarding.
#[inline(always)]
pub fn swap_mac(d: &mut [u8]) {
    let h: &mut [u8; 12] = (&mut d[..12]).try_into().expect("12 bytes");
    let lo = u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
    let hi = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as u64;
    let dst = lo & 0xffff_ffff_ffff;
    let src = (lo >> 48) | (hi << 16);
    h[..8].copy_from_slice(&(src | (dst << 48)).to_le_bytes());
    h[8..].copy_from_slice(&((dst >> 16) as u32).to_le_bytes());
}

/// Turns an ARP request or an ICMP echo request (IPv4) in `d` into its reply in place, as testpmd's icmpecho
/// does: ARP is answered for any target address with `port_mac`; an echo reply swaps the Ethernet and IP
/// addresses and patches the ICMP checksum. Returns false for anything else (the caller drops it).
pub fn icmpecho_reply(d: &mut [u8], port_mac: &MacAddr) -> bool {
    let Some((l2, ty)) = parse_l2(d) else { return false };
    match ty {
        ETHERTYPE_ARP => {
            let a = l2;
            if d.len() < a + 28 {
                return false;
            }
            // hardware Ethernet, protocol IPv4, address lengths 6 and 4, operation request.
            if be16(d, a) != 1 || be16(d, a + 2) != ETHERTYPE_IPV4 || d[a + 4] != 6 || d[a + 5] != 4 {
                return false;
            }
            if be16(d, a + 6) != 1 {
                return false;
            }
            // Ethernet: to the asker, from us.
            d.copy_within(6..12, 0);
            d[6..12].copy_from_slice(&port_mac.0);
            d[a + 6..a + 8].copy_from_slice(&2u16.to_be_bytes());
            // target hardware address = asker; sender hardware address = us; IP addresses swapped.
            d.copy_within(a + 8..a + 14, a + 18);
            d[a + 8..a + 14].copy_from_slice(&port_mac.0);
            let (sip, tip) = d[a + 14..a + 28].split_at_mut(10);
            sip[..4].swap_with_slice(&mut tip[..4]);
            true
        }
        ETHERTYPE_IPV4 => {
            if d.len() < l2 + IPV4_HLEN || d[l2] >> 4 != 4 {
                return false;
            }
            let ihl = (d[l2] & 0xf) as usize * 4;
            let icmp = l2 + ihl;
            if ihl < IPV4_HLEN || d[l2 + 9] != IPPROTO_ICMP || d.len() < icmp + 8 {
                return false;
            }
            if d[icmp] != 8 || d[icmp + 1] != 0 {
                return false;
            }
            swap_mac(d);
            let dst_first = d[l2 + 16];
            if (224..=239).contains(&dst_first) {
                // Multicast destination: reply from a unicast address next to the asker's.
                let src = u32::from_be_bytes([d[l2 + 12], d[l2 + 13], d[l2 + 14], d[l2 + 15]]);
                let new_src = if src & 3 == 1 { (src & !3) | 2 } else { (src & !3) | 1 };
                d.copy_within(l2 + 12..l2 + 16, l2 + 16);
                d[l2 + 12..l2 + 16].copy_from_slice(&new_src.to_be_bytes());
                let c = ipv4_checksum(&d[l2..l2 + ihl]);
                d[l2 + 10..l2 + 12].copy_from_slice(&c.to_be_bytes());
            } else {
                let (src, dst) = d[l2 + 12..l2 + 20].split_at_mut(4);
                src.swap_with_slice(dst);
            }
            d[icmp] = 0;
            // RFC 1624 incremental update: the type byte went from 8 to 0 (the word 0x0800 to 0x0000).
            let old = be16(d, icmp + 2);
            let sum = (!old as u64) + (!0x0800u16 as u64);
            let new = !fold(sum);
            d[icmp + 2..icmp + 4].copy_from_slice(&new.to_be_bytes());
            true
        }
        _ => false,
    }
}

/// Addresses and ports of the UDP/IPv4 frames txonly sends (testpmd's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpFlow {
    /// Ethernet destination.
    pub dst_mac: MacAddr,
    /// Ethernet source.
    pub src_mac: MacAddr,
    /// IPv4 source.
    pub src_ip: [u8; 4],
    /// IPv4 destination.
    pub dst_ip: [u8; 4],
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
}

/// testpmd's txonly source address 198.18.0.1.
pub const TXONLY_SRC_IP: [u8; 4] = [198, 18, 0, 1];
/// testpmd's txonly destination address 198.18.0.2.
pub const TXONLY_DST_IP: [u8; 4] = [198, 18, 0, 2];
/// testpmd's txonly UDP ports (discard, 9 -> 9).
pub const TXONLY_UDP_PORT: u16 = 9;
/// flowgen's Ethernet source 00:01:02:03:04:00.
pub const FLOWGEN_SRC_MAC: MacAddr = MacAddr([0, 1, 2, 3, 4, 0]);
/// flowgen's Ethernet destination 00:01:02:03:04:01.
pub const FLOWGEN_DST_MAC: MacAddr = MacAddr([0, 1, 2, 3, 4, 1]);
/// flowgen's IPv4 source 10.254.0.0.
pub const FLOWGEN_SRC_IP: [u8; 4] = [10, 254, 0, 0];
/// flowgen's first IPv4 destination 10.253.0.0 (the flow number is added).
pub const FLOWGEN_DST_IP: [u8; 4] = [10, 253, 0, 0];

/// A UDP/IPv4 frame of `len` bytes (at least 42): headers for `flow`, a zero payload, IPv4 checksum set, UDP
/// checksum 0 (none), TTL 64.
pub fn udp_frame(flow: &UdpFlow, len: usize) -> Vec<u8> {
    let len = len.max(ETH_HLEN + IPV4_HLEN + UDP_HLEN);
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&flow.dst_mac.0);
    f[6..12].copy_from_slice(&flow.src_mac.0);
    f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let ip_len = (len - ETH_HLEN) as u16;
    let ip = &mut f[ETH_HLEN..ETH_HLEN + IPV4_HLEN];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[8] = 64;
    ip[9] = IPPROTO_UDP;
    ip[12..16].copy_from_slice(&flow.src_ip);
    ip[16..20].copy_from_slice(&flow.dst_ip);
    let c = ipv4_checksum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let udp = &mut f[ETH_HLEN + IPV4_HLEN..ETH_HLEN + IPV4_HLEN + UDP_HLEN];
    udp[0..2].copy_from_slice(&flow.src_port.to_be_bytes());
    udp[2..4].copy_from_slice(&flow.dst_port.to_be_bytes());
    udp[4..6].copy_from_slice(&(ip_len - IPV4_HLEN as u16).to_be_bytes());
    f
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn ipv4_checksum_known_value() {
        // The classic example header from RFC 1071 discussions (checksum 0xb861).
        let hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8,
            0x00, 0xc7,
        ];
        assert_eq!(ipv4_checksum(&hdr), 0xb861);
    }

    fn sum_be_reference(data: &[u8]) -> u16 {
        let mut acc = 0u64;
        for c in data.chunks(2) {
            acc += ((c[0] as u64) << 8) | c.get(1).copied().unwrap_or(0) as u64;
        }
        while acc >> 16 != 0 {
            acc = (acc & 0xffff) + (acc >> 16);
        }
        acc as u16
    }

    #[test]
    fn sum_be_matches_a_word_by_word_sum() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..200 {
            for fill in [0x00u8, 0xff, 0x80] {
                let data: Vec<u8> = (0..len)
                    .map(|i| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        if i % 3 == 0 {
                            fill
                        } else {
                            x as u8
                        }
                    })
                    .collect();
                assert_eq!(fold(sum_be(&data)), sum_be_reference(&data), "len {len}");
            }
        }
        assert_eq!(fold(sum_be(&[0xff; 64])), 0xffff);
        assert_eq!(fold(u64::MAX), 0xffff);
        assert_eq!(fold(0), 0);
        assert_eq!(fold(0x1_0000), 1);
    }

    #[test]
    fn csum_fixes_and_counts() {
        let mut f = frame();
        assert_eq!(check_and_fix_checksums(&mut f), CsumResult { bad_ip: false, bad_l4: false });
        let fixed = f.clone();
        assert_ne!(&fixed[40..42], &[0, 0], "a UDP checksum was computed");
        assert_eq!(check_and_fix_checksums(&mut f.clone()), CsumResult::default());
        f[24] ^= 0x55;
        f[41] ^= 0x01;
        assert_eq!(check_and_fix_checksums(&mut f), CsumResult { bad_ip: true, bad_l4: true });
        assert_eq!(f, fixed);
    }

    #[test]
    fn swap_mac_swaps() {
        let mut d: Vec<u8> = (1..=14).collect();
        swap_mac(&mut d);
        assert_eq!(d, [7, 8, 9, 10, 11, 12, 1, 2, 3, 4, 5, 6, 13, 14]);
    }

    #[test]
    fn five_tuple_swap_twice_is_identity() {
        let f = frame();
        let mut g = f.clone();
        five_tuple_swap(&mut g);
        assert_eq!(&g[0..6], &f[6..12]);
        assert_eq!(&g[26..30], &f[30..34]);
        five_tuple_swap(&mut g);
        assert_eq!(f, g);
    }

    #[test]
    fn icmp_echo_reply_checksum_stays_valid() {
        let mut f = frame();
        f[23] = IPPROTO_ICMP;
        let c = ipv4_checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f[34] = 8;
        f[35] = 0;
        f[36..38].copy_from_slice(&[0, 0]);
        let c = !fold(sum_be(&f[34..]));
        f[36..38].copy_from_slice(&c.to_be_bytes());
        let mac = MacAddr([2, 0x70, 0, 0, 0, 9]);
        assert!(icmpecho_reply(&mut f, &mac));
        assert_eq!(f[34], 0);
        assert_eq!(fold(sum_be(&f[34..])), 0xffff, "ICMP checksum valid after the reply");
        assert_eq!(&f[26..30], &TXONLY_DST_IP);
    }

    #[test]
    fn arp_request_gets_a_reply() {
        let mut f = vec![0u8; 42];
        f[0..6].copy_from_slice(&[0xff; 6]);
        f[6..12].copy_from_slice(&[2, 1, 1, 1, 1, 1]);
        f[12..14].copy_from_slice(&ETHERTYPE_ARP.to_be_bytes());
        f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
        f[22..28].copy_from_slice(&[2, 1, 1, 1, 1, 1]);
        f[28..32].copy_from_slice(&[10, 0, 0, 1]);
        f[38..42].copy_from_slice(&[10, 0, 0, 2]);
        let mac = MacAddr([2, 0x70, 0, 0, 0, 9]);
        assert!(icmpecho_reply(&mut f, &mac));
        assert_eq!(&f[0..6], &[2, 1, 1, 1, 1, 1]);
        assert_eq!(&f[6..12], &mac.0);
        assert_eq!(&f[20..22], &[0, 2]);
        assert_eq!(&f[22..28], &mac.0);
        assert_eq!(&f[28..32], &[10, 0, 0, 2]);
        assert_eq!(&f[32..38], &[2, 1, 1, 1, 1, 1]);
        assert_eq!(&f[38..42], &[10, 0, 0, 1]);
        assert!(!icmpecho_reply(&mut [0u8; 10], &mac));
    }
}
