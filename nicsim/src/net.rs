//! Packet parsing and the arithmetic a NIC does on packets: Toeplitz hash, Internet checksum, Ethernet CRC.
//! Public so that tests (and drivers' tests) can compute expected values independently.

/// The Toeplitz hash of `input` under `key` (Microsoft RSS): for every set bit of the input, XOR in the 32-bit
/// window of the key starting at that bit position. The key must be at least `input.len() + 4` bytes.
pub fn toeplitz(key: &[u8], input: &[u8]) -> u32 {
    assert!(key.len() >= input.len() + 4, "Toeplitz key too short for the input");
    let mut hash = 0u32;
    let mut window = u32::from_be_bytes([key[0], key[1], key[2], key[3]]);
    for (i, byte) in input.iter().enumerate() {
        let next = key[i + 4];
        for bit in 0..8 {
            if byte & (0x80 >> bit) != 0 {
                hash ^= window;
            }
            window = (window << 1) | u32::from((next >> (7 - bit)) & 1);
        }
    }
    hash
}

/// Ones'-complement sum of `data` (big-endian 16-bit words, odd byte padded) added to `initial`, not folded.
pub fn ones_sum(data: &[u8], initial: u32) -> u32 {
    let mut sum = u64::from(initial);
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u64::from(*last) << 8;
    }
    while sum > 0xFFFF_FFFF {
        sum = (sum & 0xFFFF_FFFF) + (sum >> 32);
    }
    sum as u32
}

/// Folds a 32-bit ones'-complement sum to 16 bits.
pub fn fold(mut sum: u32) -> u16 {
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    sum as u16
}

/// The Internet checksum (complement of the folded sum) of `data`.
pub fn internet_checksum(data: &[u8]) -> u16 {
    !fold(ones_sum(data, 0))
}

/// Ethernet FCS (CRC-32, reflected, polynomial 0xEDB88320), as appended to a frame in little-endian byte order.
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// Ethertypes the model understands.
pub const ETH_P_IPV4: u16 = 0x0800;
/// IPv6.
pub const ETH_P_IPV6: u16 = 0x86DD;
/// 802.1Q VLAN tag.
pub const ETH_P_VLAN: u16 = 0x8100;
/// MAC control (PAUSE).
pub const ETH_P_PAUSE: u16 = 0x8808;
/// IP protocol numbers.
pub const IPPROTO_TCP: u8 = 6;
/// UDP.
pub const IPPROTO_UDP: u8 = 17;
/// SCTP.
pub const IPPROTO_SCTP: u8 = 132;

/// Layer 3 of a parsed frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L3 {
    /// Not IP (or truncated).
    None,
    /// IPv4 header at `off`, `ihl` bytes long.
    V4 {
        /// Offset of the IP header.
        off: usize,
        /// Header length in bytes.
        ihl: usize,
        /// Fragment (MF set or offset ≠ 0).
        frag: bool,
        /// Source address.
        src: [u8; 4],
        /// Destination address.
        dst: [u8; 4],
    },
    /// IPv6 header at `off`.
    V6 {
        /// Offset of the IP header.
        off: usize,
        /// Extension headers present before L4.
        ext: bool,
        /// Source address.
        src: [u8; 16],
        /// Destination address.
        dst: [u8; 16],
    },
}

/// A frame parsed far enough for filtering, RSS, packet type and checksums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    /// VLAN TCI if the frame carries an 802.1Q tag (after the MAC addresses).
    pub vlan: Option<u16>,
    /// Ethertype after any tag.
    pub ethertype: u16,
    /// Layer 3.
    pub l3: L3,
    /// L4 protocol and offset (only for unfragmented IP with a whole L4 header).
    pub l4: Option<(u8, usize)>,
    /// L4 protocol number (also for fragments).
    pub proto: Option<u8>,
}

fn be16(d: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*d.get(at)?, *d.get(at + 1)?]))
}

/// Parses an Ethernet frame (no FCS) with VLAN tag type `vet` (normally 0x8100).
pub fn parse(frame: &[u8], vet: u16) -> Parsed {
    let mut p = Parsed { vlan: None, ethertype: 0, l3: L3::None, l4: None, proto: None };
    let Some(mut ethertype) = be16(frame, 12) else { return p };
    let mut off = 14;
    if ethertype == vet {
        p.vlan = be16(frame, 14);
        let Some(inner) = be16(frame, 16) else { return p };
        ethertype = inner;
        off = 18;
    }
    p.ethertype = ethertype;
    match ethertype {
        ETH_P_IPV4 => {
            let Some(&vihl) = frame.get(off) else { return p };
            let ihl = usize::from(vihl & 0xF) * 4;
            if vihl >> 4 != 4 || ihl < 20 || frame.len() < off + ihl {
                return p;
            }
            let h = &frame[off..off + ihl];
            let frag = u16::from_be_bytes([h[6], h[7]]) & 0x3FFF != 0;
            p.l3 =
                L3::V4 { off, ihl, frag, src: h[12..16].try_into().expect("4"), dst: h[16..20].try_into().expect("4") };
            p.proto = Some(h[9]);
            if !frag {
                p.l4 = l4_at(frame, h[9], off + ihl);
            }
        }
        ETH_P_IPV6 => {
            if frame.len() < off + 40 || frame[off] >> 4 != 6 {
                return p;
            }
            let h = &frame[off..off + 40];
            let mut next = h[6];
            let mut at = off + 40;
            let mut ext = false;
            let mut frag = false;
            // Hop-by-hop, routing, fragment, destination options.
            while matches!(next, 0 | 43 | 44 | 60) {
                ext = true;
                frag |= next == 44;
                let (Some(&n), Some(&l)) = (frame.get(at), frame.get(at + 1)) else { break };
                let len = if next == 44 { 8 } else { (usize::from(l) + 1) * 8 };
                next = n;
                at += len;
            }
            p.l3 = L3::V6 { off, ext, src: h[8..24].try_into().expect("16"), dst: h[24..40].try_into().expect("16") };
            p.proto = Some(next);
            if !frag {
                p.l4 = l4_at(frame, next, at);
            }
        }
        _ => {}
    }
    p
}

fn l4_at(frame: &[u8], proto: u8, off: usize) -> Option<(u8, usize)> {
    let need = match proto {
        IPPROTO_TCP => 20,
        IPPROTO_UDP => 8,
        IPPROTO_SCTP => 12,
        _ => return None,
    };
    (frame.len() >= off + need).then_some((proto, off))
}

/// Ones'-complement sum of the TCP/UDP pseudo-header for the L3 header of `p` and an L4 length.
pub fn pseudo_header_sum(frame: &[u8], p: &Parsed, proto: u8, l4_len: usize) -> u32 {
    match p.l3 {
        L3::V4 { src, dst, .. } => {
            let mut s = ones_sum(&src, 0);
            s = ones_sum(&dst, s);
            ones_sum(&[0, proto, (l4_len >> 8) as u8, l4_len as u8], s)
        }
        L3::V6 { src, dst, .. } => {
            let mut s = ones_sum(&src, 0);
            s = ones_sum(&dst, s);
            let len = (l4_len as u32).to_be_bytes();
            s = ones_sum(&len, s);
            ones_sum(&[0, 0, 0, proto], s)
        }
        L3::None => {
            let _ = frame;
            0
        }
    }
}

/// Length of the IP payload (L4 length) from the IP header, clamped to the frame.
pub fn l4_len(frame: &[u8], p: &Parsed, l4_off: usize) -> usize {
    let end = match p.l3 {
        L3::V4 { off, .. } => off + usize::from(be16(frame, off + 2).unwrap_or(0)),
        L3::V6 { off, .. } => off + 40 + usize::from(be16(frame, off + 4).unwrap_or(0)),
        L3::None => frame.len(),
    };
    end.min(frame.len()).saturating_sub(l4_off)
}
