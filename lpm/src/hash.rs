//! The exact-match hash: CRC32-C over the key's 64-bit words through SSE4.2 when the CPU has it, a
//! multiply-xorshift mix otherwise. Not SipHash: keys come from packets at line rate, and a flooding attacker is
//! bounded by the table's fixed capacity rather than by the hash.

/// Which hash a table uses, chosen once when it is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HashKind {
    /// `crc32` instructions (x86-64 with SSE4.2).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    Crc32c,
    /// Portable multiply-xorshift.
    Mix,
}

impl HashKind {
    pub(crate) fn detect() -> HashKind {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("sse4.2") {
            return HashKind::Crc32c;
        }
        HashKind::Mix
    }

    /// The 32-bit hash of `words`.
    #[inline(always)]
    pub(crate) fn hash(self, words: &[u64]) -> u32 {
        match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Crc32c` is only chosen by `detect` after the CPU reported SSE4.2.
            HashKind::Crc32c => unsafe { crc32c(words) },
            _ => mix(words),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
#[inline] // into callers compiled with SSE4.2 too (`ExactMatch::lookup_bulk`'s loop), where it is two instructions
fn crc32c(words: &[u64]) -> u32 {
    use std::arch::x86_64::_mm_crc32_u64;
    let mut crc = u64::from(u32::MAX);
    for &w in words {
        crc = _mm_crc32_u64(crc, w);
    }
    crc as u32
}

#[inline(always)]
fn mix(words: &[u64]) -> u32 {
    // Odd 64-bit constant from the golden ratio: multiplication spreads every input bit into the high half.
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = K;
    for &w in words {
        h = (h ^ w).wrapping_mul(K);
        h ^= h >> 32;
    }
    h as u32
}

#[cfg(test)]
mod tests {
    use super::HashKind;

    #[test]
    fn hashes_differ_for_nearby_keys() {
        for kind in [HashKind::detect(), HashKind::Mix] {
            let a = kind.hash(&[1, 2]);
            assert_ne!(a, kind.hash(&[1, 3]), "{kind:?}");
            assert_ne!(a, kind.hash(&[2, 2]), "{kind:?}");
            assert_eq!(a, kind.hash(&[1, 2]), "{kind:?}");
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn crc32c_matches_the_standard_check_value() {
        // CRC-32C of the 8 bytes 00..07 (little-endian word 0x0706050403020100), computed independently with the
        // bitwise reflected polynomial 0x82F63B78.
        let word = u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]);
        let mut crc = u32::MAX;
        for byte in word.to_le_bytes() {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 != 0 { (crc >> 1) ^ 0x82f6_3b78 } else { crc >> 1 };
            }
        }
        if HashKind::detect() == HashKind::Crc32c {
            assert_eq!(HashKind::Crc32c.hash(&[word]), crc);
        }
    }
}
