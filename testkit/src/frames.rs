//! Test frames with correct checksums: Ethernet + IPv4 + UDP or TCP of any length, the applications' seeded UDP
//! sets, and the Internet checksum itself.

/// An Ethernet + IPv4 + UDP frame of `len` bytes (no FCS) from `src` to `dst` MAC, with the given addresses and
/// ports; checksums correct.
pub fn udp_frame(dst: [u8; 6], src: [u8; 6], ips: ([u8; 4], [u8; 4]), ports: (u16, u16), len: usize) -> Vec<u8> {
    ip_frame(dst, src, ips, 17, ports, len)
}

/// Like [`udp_frame`] for TCP (20-byte header, no options).
pub fn tcp_frame(dst: [u8; 6], src: [u8; 6], ips: ([u8; 4], [u8; 4]), ports: (u16, u16), len: usize) -> Vec<u8> {
    ip_frame(dst, src, ips, 6, ports, len)
}

fn ip_frame(dst: [u8; 6], src: [u8; 6], ips: ([u8; 4], [u8; 4]), proto: u8, ports: (u16, u16), len: usize) -> Vec<u8> {
    let l4_hdr = if proto == 6 { 20 } else { 8 };
    assert!(len >= 14 + 20 + l4_hdr);
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip_len = (len - 14) as u16;
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[8] = 64;
    ip[9] = proto;
    ip[12..16].copy_from_slice(&ips.0);
    ip[16..20].copy_from_slice(&ips.1);
    let c = checksum(&f[14..34], 0);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    for (i, b) in f[34 + l4_hdr..].iter_mut().enumerate() {
        *b = (i * 7 + 3) as u8;
    }
    let l4_len = len - 34;
    {
        let l4 = &mut f[34..];
        l4[0..2].copy_from_slice(&ports.0.to_be_bytes());
        l4[2..4].copy_from_slice(&ports.1.to_be_bytes());
        if proto == 17 {
            l4[4..6].copy_from_slice(&(l4_len as u16).to_be_bytes());
        } else {
            l4[12] = 5 << 4;
        }
    }
    let ck = checksum(&f[34..], pseudo(&ips, proto, l4_len));
    let off = if proto == 17 { 34 + 6 } else { 34 + 16 };
    f[off..off + 2].copy_from_slice(&ck.to_be_bytes());
    f
}

/// Pseudo-header sum (not folded, not inverted).
pub fn pseudo(ips: &([u8; 4], [u8; 4]), proto: u8, l4_len: usize) -> u32 {
    let mut s = 0u32;
    for w in ips.0.chunks(2).chain(ips.1.chunks(2)) {
        s += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    s + proto as u32 + l4_len as u32
}

/// Internet checksum of `data` starting from `initial`.
pub fn checksum(data: &[u8], initial: u32) -> u16 {
    let mut s = initial as u64;
    for c in data.chunks(2) {
        s += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u64;
    }
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// Ethernet/IPv4/UDP frames with a payload pattern (`n` of them, seeded), checksum right, TTL 64.
pub fn udp_frames(seed: u8, n: usize, dst: impl Fn(usize) -> [u8; 4]) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let len = [60usize, 64, 128, 333, 1000, 1514][i % 6];
            let mut f = vec![0u8; len];
            f[0..6].copy_from_slice(&[0x02, 0xaa, 0, 0, 0, seed]);
            f[6..12].copy_from_slice(&[0x02, 0xbb, 0, 0, 0, i as u8]);
            f[12..14].copy_from_slice(&[0x08, 0x00]);
            f[14] = 0x45;
            f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
            f[18..20].copy_from_slice(&(i as u16).to_be_bytes());
            f[22] = 64;
            f[23] = 17;
            f[26..30].copy_from_slice(&[10, seed, (i >> 8) as u8, i as u8]);
            f[30..34].copy_from_slice(&dst(i));
            f[34..36].copy_from_slice(&(1000 + i as u16).to_be_bytes());
            f[36..38].copy_from_slice(&9u16.to_be_bytes());
            f[38..40].copy_from_slice(&((len - 34) as u16).to_be_bytes());
            for (k, b) in f[42..].iter_mut().enumerate() {
                *b = (k as u8).wrapping_mul(7).wrapping_add(seed);
            }
            set_ipv4_checksum(&mut f[14..34]);
            f
        })
        .collect()
}

/// Writes a correct IPv4 header checksum into a 20-byte header.
pub fn set_ipv4_checksum(h: &mut [u8]) {
    h[10..12].fill(0);
    let mut s = 0u32;
    for c in h.chunks(2) {
        s += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    h[10..12].copy_from_slice(&(!(s as u16)).to_be_bytes());
}
