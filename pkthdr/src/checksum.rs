//! The Internet checksum (RFC 1071): sums over data, pseudo-header sums for TCP/UDP/ICMPv6 over IPv4 and IPv6,
//! and the incremental update of RFC 1624.
//!
//! [`Sum`] accumulates 64-bit little-endian words with end-around carry: one load and two additions per 8 bytes,
//! no byte swaps. That works because 2^16 - 1 divides 2^64 - 1 (so folding a 64-bit one's complement sum to 16
//! bits gives the 16-bit one) and because the one's complement sum of byte-swapped words is the byte-swapped sum
//! (RFC 1071 section 2(B)). The swap back to big-endian happens once, when the sum is folded.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::IpProtocol;

/// A one's complement sum being accumulated, not yet folded to 16 bits. `Copy` and register-sized: build it from
/// pieces ([`Sum::of`], [`Sum::add_bytes`], [`Sum::add_word`], [`Sum::add`]) and end with [`Sum::checksum`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sum(u64);

impl Sum {
    /// The empty sum.
    pub const ZERO: Sum = Sum(0);

    /// The sum of `data` taken as big-endian 16-bit words (an odd last byte is padded with a zero byte).
    #[inline(always)]
    pub fn of(data: &[u8]) -> Sum {
        Sum(raw_sum(data))
    }

    /// This sum plus the words of `data`. `data` must start at an even offset of the checksummed range (an odd
    /// length is fine only for the last piece).
    #[inline(always)]
    pub fn add_bytes(self, data: &[u8]) -> Sum {
        Sum(adc(self.0, raw_sum(data)))
    }

    /// This sum plus the big-endian 16-bit word `w`.
    #[inline(always)]
    pub fn add_word(self, w: u16) -> Sum {
        Sum(adc(self.0, w.swap_bytes() as u64))
    }

    /// This sum minus (one's complement) the big-endian 16-bit word `w`: how a field already summed is taken
    /// out again, e.g. the checksum field itself.
    #[inline(always)]
    pub fn sub_word(self, w: u16) -> Sum {
        Sum(adc(self.0, (!w).swap_bytes() as u64))
    }

    /// The sum of both.
    #[inline(always)]
    #[allow(clippy::should_implement_trait)] // by value and inline like the other adders; `+` would read oddly
    pub fn add(self, other: Sum) -> Sum {
        Sum(adc(self.0, other.0))
    }

    /// The 16-bit one's complement sum (not complemented): the value in 1..=0xffff congruent to the sum modulo
    /// 0xffff, or 0 for an empty or all-zero sum.
    #[inline(always)]
    pub fn folded(self) -> u16 {
        fold64(self.0).swap_bytes()
    }

    /// The checksum to write into a header: the complement of [`Sum::folded`]. Over data that includes a correct
    /// checksum field this is 0.
    #[inline(always)]
    pub fn checksum(self) -> u16 {
        !self.folded()
    }
}

/// `a + b` with end-around carry: one's complement addition of 64-bit words.
#[inline(always)]
fn adc(a: u64, b: u64) -> u64 {
    let (s, c) = a.overflowing_add(b);
    s + c as u64
}

/// The little-endian-domain sum of `data`, not folded. Inlined, so that constant lengths unroll.
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

/// Folds a 64-bit one's complement sum to 16 bits (same domain, not complemented).
#[inline(always)]
fn fold64(acc: u64) -> u16 {
    let a = (acc & 0xffff_ffff) + (acc >> 32); // < 2^33
    let a = (a & 0xffff) + (a >> 16); // < 2^18
    let a = (a & 0xffff) + (a >> 16); // < 2^16 + 4
    let a = (a & 0xffff) + (a >> 16); // <= 0xffff
    a as u16
}

/// The folded 16-bit one's complement sum of `data` (not complemented), as smoltcp's `checksum::data`.
#[inline]
pub fn data(data: &[u8]) -> u16 {
    Sum::of(data).folded()
}

/// The folded one's complement sum of 16-bit words (not complemented).
#[inline]
pub fn combine(words: &[u16]) -> u16 {
    words.iter().fold(Sum::ZERO, |s, &w| s.add_word(w)).folded()
}

/// The pseudo-header sum of a TCP, UDP or other upper-layer message of `len` bytes over IPv4 (RFC 793/768):
/// source, destination, protocol and length.
#[inline(always)]
pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: IpProtocol, len: u16) -> Sum {
    let mut addrs = [0u8; 8];
    addrs[..4].copy_from_slice(&src.octets());
    addrs[4..].copy_from_slice(&dst.octets());
    pseudo_header_from_addrs(&addrs, protocol, len as u32)
}

/// The pseudo-header sum of an upper-layer message of `len` bytes over IPv6 (RFC 8200 section 8.1).
#[inline(always)]
pub fn pseudo_header_v6(src: Ipv6Addr, dst: Ipv6Addr, protocol: IpProtocol, len: u32) -> Sum {
    let mut addrs = [0u8; 32];
    addrs[..16].copy_from_slice(&src.octets());
    addrs[16..].copy_from_slice(&dst.octets());
    pseudo_header_from_addrs(&addrs, protocol, len)
}

/// The pseudo-header sum from the source and destination address bytes as they sit back to back in an IP header
/// (one load per 8 bytes when the views call it on their own buffer).
#[inline(always)]
pub(crate) fn pseudo_header_from_addrs(addrs: &[u8], protocol: IpProtocol, len: u32) -> Sum {
    Sum::of(addrs).add_word(protocol.0 as u16).add_word((len >> 16) as u16).add_word(len as u16)
}

/// RFC 1624 equation 3: the checksum `old_checksum` after one 16-bit word of the covered data changed from
/// `old_word` to `new_word`, without summing the data again (HC' = ~(~HC + ~m + m')).
#[inline(always)]
pub fn update(old_checksum: u16, old_word: u16, new_word: u16) -> u16 {
    Sum::ZERO.add_word(!old_checksum).sub_word(old_word).add_word(new_word).checksum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The textbook algorithm: big-endian 16-bit words into a wide accumulator, folded at the end.
    fn reference(data: &[u8]) -> u16 {
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
    fn rfc1071_example_words() {
        // RFC 1071 section 3's example: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2.
        assert_eq!(data(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]), 0xddf2);
    }

    #[test]
    fn fold_edges() {
        assert_eq!(Sum::ZERO.folded(), 0);
        assert_eq!(Sum(u64::MAX).folded(), 0xffff);
        assert_eq!(data(&[0xff; 64]), 0xffff);
        assert_eq!(data(&[0x00, 0x01, 0x00, 0x00]), 1);
        assert_eq!(combine(&[0xffff, 0x0001]), 0x0001);
        assert_eq!(Sum::of(&[0x12, 0x34]).sub_word(0x1234).folded(), 0xffff, "x - x is negative zero");
    }

    #[test]
    fn pseudo_header_v4_matches_the_bytes_it_stands_for() {
        let (s, d) = (Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(198, 51, 100, 7));
        let bytes = [192, 0, 2, 1, 198, 51, 100, 7, 0, 17, 0x01, 0x2c];
        assert_eq!(pseudo_header_v4(s, d, IpProtocol::UDP, 300).folded(), reference(&bytes));
    }

    #[test]
    fn pseudo_header_v6_matches_the_bytes_it_stands_for() {
        let s: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let d: Ipv6Addr = "fe80::1234:5678".parse().unwrap();
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&s.octets());
        bytes.extend_from_slice(&d.octets());
        bytes.extend_from_slice(&0x0001_0004u32.to_be_bytes());
        bytes.extend_from_slice(&[0, 0, 0, 6]);
        assert_eq!(pseudo_header_v6(s, d, IpProtocol::TCP, 0x0001_0004).folded(), reference(&bytes));
    }

    proptest! {
        #[test]
        fn sum_equals_the_reference(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            prop_assert_eq!(super::data(&data), reference(&data));
        }

        #[test]
        fn sum_of_pieces_at_even_offsets_equals_the_whole(
            data in proptest::collection::vec(any::<u8>(), 0..200),
            cut in 0usize..100,
        ) {
            let cut = (cut * 2).min(data.len() & !1);
            let s = Sum::of(&data[..cut]).add(Sum::ZERO.add_bytes(&data[cut..]));
            prop_assert_eq!(s.folded(), reference(&data));
        }

        #[test]
        fn incremental_update_equals_a_full_recompute(
            mut data in proptest::collection::vec(any::<u8>(), 2..64),
            at in 0usize..32,
            new_word in any::<u16>(),
        ) {
            data.truncate(data.len() & !1);
            let at = (at * 2) % data.len();
            let before = !reference(&data);
            let old_word = u16::from_be_bytes([data[at], data[at + 1]]);
            data[at..at + 2].copy_from_slice(&new_word.to_be_bytes());
            let after = !reference(&data);
            // Equal as one's complement numbers: 0x0000 and 0xffff are both zero (RFC 1624 section 3).
            let got = update(before, old_word, new_word);
            prop_assert!(got == after || (got, after) == (0, 0xffff) || (got, after) == (0xffff, 0),
                "got {:#06x}, recomputed {:#06x}", got, after);
        }
    }
}
