//! SYN cookies: the stateless answer to a SYN once a listener's SYN backlog is full (RFC 4987 section 3.6). The
//! SYN-ACK's initial sequence number encodes what the connection needs to be rebuilt from the client's ACK alone:
//! a coarse clock, the client's MSS (one of four values) and a keyed hash of the connection's addresses, ports and
//! the client's own initial sequence number. Nothing is stored until an ACK carries a valid cookie back.
//!
//! Layout of the 32-bit cookie: bits 31-27 the clock (64-second ticks, mod 32), bits 26-25 the MSS index, bits
//! 24-0 the hash. A cookie is accepted in its tick and the next one (64 to 128 seconds). Window scaling, SACK and
//! timestamps are not encoded (the SYN-ACK offers none of them), as with cookies without TCP timestamps elsewhere.
//!
//! smoltcp draws its own initial sequence number when a socket takes a SYN, so a connection rebuilt from a cookie
//! keeps a constant offset between the numbers the client knows and smoltcp's: [`Shift`] moves acknowledgment
//! numbers into smoltcp's space on the way in and sequence numbers into the client's on the way out.

use std::hash::{BuildHasher, RandomState};
use std::net::Ipv4Addr;
use std::time::Duration;

use pkthdr::checksum;

/// Length of one clock tick.
pub(crate) const TICK: Duration = Duration::from_secs(64);
/// The client MSS values a cookie can carry (the largest not above the client's is chosen).
pub(crate) const MSS_TABLE: [u16; 4] = [536, 1220, 1440, 1460];
const HASH_BITS: u32 = 25;
const HASH_MASK: u32 = (1 << HASH_BITS) - 1;

/// What a valid cookie gives back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decoded {
    /// The client's MSS (from [`MSS_TABLE`]).
    pub mss: u16,
}

/// The secret and the cookie arithmetic of one stack.
pub(crate) struct Cookies {
    key: RandomState,
}

impl Cookies {
    /// Cookies keyed by a fresh random secret (std's `RandomState`: SipHash with random keys).
    pub(crate) fn new() -> Self {
        Cookies { key: RandomState::new() }
    }

    fn hash(&self, tick: u64, client: Ipv4Addr, client_port: u16, our_port: u16, client_isn: u32) -> u32 {
        let h = self.key.hash_one((tick, u32::from(client), client_port, our_port, client_isn));
        (h as u32 ^ (h >> 32) as u32) & HASH_MASK
    }

    /// The cookie for a SYN from `client:client_port` to `our_port` with initial sequence number `client_isn`
    /// and MSS option `client_mss` (536 when it had none), at clock tick `tick`.
    pub(crate) fn make(
        &self,
        tick: u64,
        client: Ipv4Addr,
        client_port: u16,
        our_port: u16,
        client_isn: u32,
        client_mss: u16,
    ) -> u32 {
        let mss_index = MSS_TABLE.iter().rposition(|&m| m <= client_mss).unwrap_or(0) as u32;
        ((tick as u32 & 31) << 27)
            | (mss_index << HASH_BITS)
            | self.hash(tick, client, client_port, our_port, client_isn)
    }

    /// Checks `cookie` (the client's acknowledgment number minus one) of a connection whose client's initial
    /// sequence number was `client_isn` (its sequence number minus one), at clock tick `now_tick`.
    pub(crate) fn check(
        &self,
        now_tick: u64,
        client: Ipv4Addr,
        client_port: u16,
        our_port: u16,
        client_isn: u32,
        cookie: u32,
    ) -> Option<Decoded> {
        let sent = u64::from(cookie >> 27);
        // The tick it was made in: this one or the one before (mod 32).
        let tick = (0..2).map(|age| now_tick.wrapping_sub(age)).find(|t| t & 31 == sent)?;
        if cookie & HASH_MASK != self.hash(tick, client, client_port, our_port, client_isn) {
            return None;
        }
        let mss_index = ((cookie >> HASH_BITS) & 3) as usize;
        Some(Decoded { mss: MSS_TABLE[mss_index] })
    }
}

/// The constant offset of a connection rebuilt from a cookie: the client's view of our sequence numbers minus
/// smoltcp's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shift(pub u32);

impl Shift {
    /// Rewrites a 32-bit field at `at` of a TCP header by `delta`, keeping the TCP checksum (at 16) right.
    fn rewrite(tcp: &mut [u8], at: usize, delta: u32) {
        let old = u32::from_be_bytes(tcp[at..at + 4].try_into().expect("a TCP header has the field"));
        let new = old.wrapping_add(delta);
        tcp[at..at + 4].copy_from_slice(&new.to_be_bytes());
        let mut sum = u16::from_be_bytes([tcp[16], tcp[17]]);
        sum = checksum::update(sum, (old >> 16) as u16, (new >> 16) as u16);
        sum = checksum::update(sum, old as u16, new as u16);
        tcp[16..18].copy_from_slice(&sum.to_be_bytes());
    }

    /// An incoming segment (TCP header at the start of `tcp`): its acknowledgment number, if it carries one,
    /// into smoltcp's space.
    pub(crate) fn inbound(self, tcp: &mut [u8]) {
        if tcp[13] & 0x10 != 0 {
            Self::rewrite(tcp, 8, self.0.wrapping_neg());
        }
    }

    /// An outgoing segment: its sequence number into the client's space.
    pub(crate) fn outbound(self, tcp: &mut [u8]) {
        Self::rewrite(tcp, 4, self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 7);

    #[test]
    fn a_cookie_checks_in_its_tick_and_the_next_only() {
        let k = Cookies::new();
        let cookie = k.make(100, C, 40000, 6379, 0xdead_beef, 1460);
        assert_eq!(k.check(100, C, 40000, 6379, 0xdead_beef, cookie), Some(Decoded { mss: 1460 }));
        assert_eq!(k.check(101, C, 40000, 6379, 0xdead_beef, cookie), Some(Decoded { mss: 1460 }));
        assert_eq!(k.check(102, C, 40000, 6379, 0xdead_beef, cookie), None, "too old");
        assert_eq!(k.check(99, C, 40000, 6379, 0xdead_beef, cookie), None, "from the future");
        assert_eq!(k.check(132, C, 40000, 6379, 0xdead_beef, cookie), None, "same tick mod 32, 32 ticks later");
    }

    #[test]
    fn any_other_field_fails_the_check() {
        let k = Cookies::new();
        let cookie = k.make(7, C, 40000, 6379, 12345, 1300);
        assert!(k.check(7, Ipv4Addr::new(198, 18, 0, 8), 40000, 6379, 12345, cookie).is_none());
        assert!(k.check(7, C, 40001, 6379, 12345, cookie).is_none());
        assert!(k.check(7, C, 40000, 6380, 12345, cookie).is_none());
        assert!(k.check(7, C, 40000, 6379, 12346, cookie).is_none());
        assert!(k.check(7, C, 40000, 6379, 12345, cookie ^ 1).is_none());
        assert!(Cookies::new().check(7, C, 40000, 6379, 12345, cookie).is_none(), "another secret");
    }

    #[test]
    fn mss_rounds_down_to_the_table() {
        let k = Cookies::new();
        for (mss, want) in [(0, 536), (536, 536), (1300, 1220), (1440, 1440), (1460, 1460), (9000, 1460)] {
            let cookie = k.make(3, C, 1, 2, 3, mss);
            assert_eq!(k.check(3, C, 1, 2, 3, cookie).unwrap().mss, want, "MSS {mss}");
        }
    }

    #[test]
    fn shifts_keep_the_checksum_right() {
        use pkthdr::{IpProtocol, TcpPacket};
        let pseudo = checksum::pseudo_header_v4(C, Ipv4Addr::new(10, 0, 0, 1), IpProtocol::TCP, 24);
        let mut seg = vec![0u8; 24];
        {
            let mut t = TcpPacket::new_unchecked(&mut seg[..]);
            t.set_header_len(20);
            t.set_seq_number(0xffff_fff0);
            t.set_ack_number(77);
            t.set_flags(pkthdr::TcpFlags::ACK);
            t.payload_mut().copy_from_slice(b"data");
            t.fill_checksum(pseudo);
        }
        let shift = Shift(0x8000_0020);
        shift.outbound(&mut seg);
        shift.inbound(&mut seg);
        let t = TcpPacket::new_unchecked(&seg[..]);
        assert_eq!((t.seq_number(), t.ack_number()), (0x8000_0010, 77u32.wrapping_sub(0x8000_0020)));
        assert!(t.verify_checksum(pseudo), "checksum kept through both rewrites");
    }
}
