//! The frames the guest tests and the host peer exchange (see tests/vm/harness.py):
//! `dst, src, 0x88b5, "VMT1", tag[16], seq u32 BE`, padded with [`pad_byte`] (a pattern both sides can check byte
//! for byte).

use pktio::MacAddr;

pub const ETHERTYPE: u16 = 0x88b5;
pub const PEER_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x01]);

/// Writes a tagged frame of `size` bytes into `out` (at least 38 bytes); returns its length.
pub fn build(out: &mut [u8], dst: MacAddr, src: MacAddr, tag: &str, seq: u32, size: usize) -> usize {
    let len = size.max(38);
    let f = &mut out[..len];
    f.fill(0);
    f[0..6].copy_from_slice(&dst.0);
    f[6..12].copy_from_slice(&src.0);
    f[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
    f[14..18].copy_from_slice(b"VMT1");
    let t = tag.as_bytes();
    f[18..18 + t.len().min(16)].copy_from_slice(&t[..t.len().min(16)]);
    f[34..38].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in f.iter_mut().enumerate().skip(38) {
        *b = pad_byte(i, seq);
    }
    len
}

/// The padding byte at offset `i` (>= 38) of the frame with sequence number `seq` (tests/vm/harness.py: `pad`).
pub fn pad_byte(i: usize, seq: u32) -> u8 {
    (i.wrapping_mul(7).wrapping_add(seq as usize * 13) & 0xff) as u8
}

/// Where `got` differs from the tagged frame it should be (`dst`, `src`, `tag`, `seq`, `size` bytes), if it does.
pub fn mismatch(got: &[u8], dst: MacAddr, src: MacAddr, tag: &str, seq: u32, size: usize) -> Option<String> {
    let mut want = vec![0u8; size.max(38)];
    let n = build(&mut want, dst, src, tag, seq, size);
    if got.len() != n {
        return Some(format!("{tag}#{seq}: {} bytes, {n} expected", got.len()));
    }
    let i = got.iter().zip(&want).position(|(a, b)| a != b)?;
    Some(format!("{tag}#{seq}: byte {i} is {:#04x}, {:#04x} expected", got[i], want[i]))
}

/// `(tag, seq)` of a tagged frame.
pub fn parse(f: &[u8]) -> Option<(String, u32)> {
    if f.len() < 38 || f[12..14] != ETHERTYPE.to_be_bytes() || &f[14..18] != b"VMT1" {
        return None;
    }
    let tag = f[18..34].split(|&b| b == 0).next().unwrap_or(&[]);
    Some((String::from_utf8_lossy(tag).into_owned(), u32::from_be_bytes(f[34..38].try_into().ok()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut b = [0u8; 128];
        let n = build(&mut b, MacAddr::BROADCAST, PEER_MAC, "fwd", 7, 60);
        assert_eq!(n, 60);
        assert_eq!(parse(&b[..n]), Some(("fwd".to_string(), 7)));
        assert_eq!(parse(&b[..20]), None);
        assert_eq!(b[40], pad_byte(40, 7));
        assert_eq!(mismatch(&b[..n], MacAddr::BROADCAST, PEER_MAC, "fwd", 7, 60), None);
        b[59] ^= 1;
        assert!(mismatch(&b[..n], MacAddr::BROADCAST, PEER_MAC, "fwd", 7, 60).unwrap().contains("byte 59"));
    }
}
