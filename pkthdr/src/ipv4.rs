//! IPv4 headers (RFC 791). Options are carried (the header length covers them) but not parsed.

use std::net::Ipv4Addr;

use super::checksum::{self, Sum};
use super::{check_len, field, Error, IpProtocol, Result};

/// Byte offsets and bit fields of the IPv4 header.
mod field_at {
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const TOTAL_LEN: usize = 2;
    pub const IDENT: usize = 4;
    pub const FLAGS_FRAG: usize = 6;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: usize = 10;
    pub const SRC_ADDR: usize = 12;
    pub const DST_ADDR: usize = 16;
    /// End of the fixed header (IHL 5).
    pub const OPTIONS: usize = 20;

    /// Version: the high nibble of byte 0.
    pub const VERSION_SHIFT: u32 = 4;
    /// Internet header length in 32-bit words: the low nibble of byte 0.
    pub const IHL: u8 = 0x0f;
    /// DSCP: the high 6 bits of byte 1; ECN the low 2.
    pub const DSCP_SHIFT: u32 = 2;
    pub const ECN: u8 = 0x03;
    /// Don't fragment.
    pub const DF: u16 = 0x4000;
    /// More fragments.
    pub const MF: u16 = 0x2000;
    /// Fragment offset in 8-byte units.
    pub const FRAG_OFFSET: u16 = 0x1fff;
}

/// A view of an IPv4 packet: header (with options) and payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

const NAME: &str = "IPv4";

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Length of the header without options.
    pub const MIN_HEADER_LEN: usize = field_at::OPTIONS;

    /// A view without checks; the getters panic if the buffer is shorter than the fields they read.
    #[inline(always)]
    pub fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// A view of `buffer` if it holds a whole IPv4 packet: version 4, a header length of at least 20 bytes, a
    /// total length covering the header, and a buffer holding the total length (it may hold more, e.g.
    /// Ethernet padding; [`Self::payload`] ends at the total length).
    #[inline(always)]
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Ipv4Packet { buffer };
        let have = p.buffer.as_ref().len();
        check_len(NAME, have, field_at::OPTIONS)?;
        if p.version() != 4 {
            return Err(Error::BadVersion { header: NAME, found: p.version(), expected: 4 });
        }
        let hlen = p.header_len();
        if hlen < field_at::OPTIONS {
            return Err(Error::BadLength { header: NAME, len: hlen, min: field_at::OPTIONS });
        }
        check_len(NAME, have, hlen)?;
        let total = p.total_len() as usize;
        if total < hlen {
            return Err(Error::BadLength { header: NAME, len: total, min: hlen });
        }
        check_len(NAME, have, total)?;
        Ok(p)
    }

    /// The buffer back.
    #[inline(always)]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version field (4 for a valid packet).
    #[inline(always)]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field_at::VER_IHL] >> field_at::VERSION_SHIFT
    }

    /// Header length in bytes (IHL x 4), options included.
    #[inline(always)]
    pub fn header_len(&self) -> usize {
        (self.buffer.as_ref()[field_at::VER_IHL] & field_at::IHL) as usize * 4
    }

    /// Differentiated services code point.
    #[inline(always)]
    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[field_at::DSCP_ECN] >> field_at::DSCP_SHIFT
    }

    /// Explicit congestion notification.
    #[inline(always)]
    pub fn ecn(&self) -> u8 {
        self.buffer.as_ref()[field_at::DSCP_ECN] & field_at::ECN
    }

    /// Total length (header and payload) in bytes.
    #[inline(always)]
    pub fn total_len(&self) -> u16 {
        field::get16(self.buffer.as_ref(), field_at::TOTAL_LEN)
    }

    /// Identification.
    #[inline(always)]
    pub fn ident(&self) -> u16 {
        field::get16(self.buffer.as_ref(), field_at::IDENT)
    }

    #[inline(always)]
    fn flags_frag(&self) -> u16 {
        field::get16(self.buffer.as_ref(), field_at::FLAGS_FRAG)
    }

    /// Don't-fragment flag.
    #[inline(always)]
    pub fn dont_frag(&self) -> bool {
        self.flags_frag() & field_at::DF != 0
    }

    /// More-fragments flag.
    #[inline(always)]
    pub fn more_frags(&self) -> bool {
        self.flags_frag() & field_at::MF != 0
    }

    /// Fragment offset in bytes.
    #[inline(always)]
    pub fn frag_offset(&self) -> u16 {
        (self.flags_frag() & field_at::FRAG_OFFSET) * 8
    }

    /// Part of a fragmented datagram (more fragments follow, or not the first): the payload is not a whole
    /// upper-layer message.
    #[inline(always)]
    pub fn is_fragment(&self) -> bool {
        self.flags_frag() & (field_at::MF | field_at::FRAG_OFFSET) != 0
    }

    /// Time to live.
    #[inline(always)]
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field_at::TTL]
    }

    /// Protocol of the payload.
    #[inline(always)]
    pub fn protocol(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field_at::PROTOCOL])
    }

    /// Header checksum field.
    #[inline(always)]
    pub fn checksum(&self) -> u16 {
        field::get16(self.buffer.as_ref(), field_at::CHECKSUM)
    }

    /// Source address.
    #[inline(always)]
    pub fn src_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(field::array::<4>(self.buffer.as_ref(), field_at::SRC_ADDR))
    }

    /// Destination address.
    #[inline(always)]
    pub fn dst_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(field::array::<4>(self.buffer.as_ref(), field_at::DST_ADDR))
    }

    /// The header checksum the header needs (the checksum field's current value is left out of the sum).
    #[inline(always)]
    pub fn compute_checksum(&self) -> u16 {
        let d = self.buffer.as_ref();
        let hlen = self.header_len();
        // The common 20-byte header gets a sum of constant length: three loads.
        let sum = match d.first_chunk::<{ field_at::OPTIONS }>() {
            Some(h) if hlen == field_at::OPTIONS => Sum::of(h),
            _ => Sum::of(&d[..hlen]),
        };
        sum.sub_word(self.checksum()).checksum()
    }

    /// The header checksum is right.
    #[inline(always)]
    pub fn verify_checksum(&self) -> bool {
        self.compute_checksum() == self.checksum()
    }

    /// The pseudo-header sum for an upper-layer message of `len` bytes of this packet's protocol, for
    /// [`UdpPacket`](super::UdpPacket) and [`TcpPacket`](super::TcpPacket) checksums. Reads the two addresses
    /// with one 8-byte load.
    #[inline(always)]
    pub fn pseudo_header(&self, len: u16) -> Sum {
        let d = self.buffer.as_ref();
        checksum::pseudo_header_from_addrs(&field::array::<8>(d, field_at::SRC_ADDR), self.protocol(), len as u32)
    }

    /// The payload: from the end of the header (options included) to the total length.
    #[inline(always)]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..self.total_len() as usize]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets version 4 and the header length in bytes (a multiple of 4, 20..=60).
    #[inline(always)]
    pub fn set_version_and_header_len(&mut self, header_len: usize) {
        debug_assert!(
            header_len.is_multiple_of(4) && (20..=60).contains(&header_len),
            "IPv4 header length {header_len}"
        );
        self.buffer.as_mut()[field_at::VER_IHL] = (4 << field_at::VERSION_SHIFT) | (header_len / 4) as u8;
    }

    /// Sets DSCP and ECN.
    #[inline(always)]
    pub fn set_dscp_ecn(&mut self, dscp: u8, ecn: u8) {
        self.buffer.as_mut()[field_at::DSCP_ECN] = (dscp << field_at::DSCP_SHIFT) | (ecn & field_at::ECN);
    }

    /// Sets the total length.
    #[inline(always)]
    pub fn set_total_len(&mut self, len: u16) {
        field::set16(self.buffer.as_mut(), field_at::TOTAL_LEN, len);
    }

    /// Sets the identification.
    #[inline(always)]
    pub fn set_ident(&mut self, ident: u16) {
        field::set16(self.buffer.as_mut(), field_at::IDENT, ident);
    }

    /// Sets the flags and the fragment offset (in bytes, a multiple of 8).
    #[inline(always)]
    pub fn set_frag(&mut self, dont_frag: bool, more_frags: bool, offset: u16) {
        let v = if dont_frag { field_at::DF } else { 0 }
            | if more_frags { field_at::MF } else { 0 }
            | ((offset / 8) & field_at::FRAG_OFFSET);
        field::set16(self.buffer.as_mut(), field_at::FLAGS_FRAG, v);
    }

    /// Sets the time to live (the checksum is not updated; see [`Self::decrement_ttl`]).
    #[inline(always)]
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[field_at::TTL] = ttl;
    }

    /// Sets the protocol.
    #[inline(always)]
    pub fn set_protocol(&mut self, p: IpProtocol) {
        self.buffer.as_mut()[field_at::PROTOCOL] = p.0;
    }

    /// Sets the checksum field.
    #[inline(always)]
    pub fn set_checksum(&mut self, c: u16) {
        field::set16(self.buffer.as_mut(), field_at::CHECKSUM, c);
    }

    /// Sets the source address.
    #[inline(always)]
    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field_at::SRC_ADDR..field_at::SRC_ADDR + 4].copy_from_slice(&a.octets());
    }

    /// Sets the destination address.
    #[inline(always)]
    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field_at::DST_ADDR..field_at::DST_ADDR + 4].copy_from_slice(&a.octets());
    }

    /// Swaps source and destination address (the header checksum stays valid: the sum does not change).
    #[inline(always)]
    pub fn swap_addrs(&mut self) {
        let (s, d) = (self.src_addr(), self.dst_addr());
        self.set_src_addr(d);
        self.set_dst_addr(s);
    }

    /// Computes and writes the header checksum.
    #[inline(always)]
    pub fn fill_checksum(&mut self) {
        let c = self.compute_checksum();
        self.set_checksum(c);
    }

    /// A router's TTL decrement (RFC 1812 section 5.3.1): if the TTL is above 1, decrements it, updates the
    /// checksum incrementally (RFC 1624, no sum over the header) and returns true; otherwise changes nothing and
    /// returns false (the packet must not be forwarded).
    #[inline(always)]
    pub fn decrement_ttl(&mut self) -> bool {
        let ttl = self.ttl();
        if ttl <= 1 {
            return false;
        }
        // TTL and protocol share one 16-bit word of the checksummed header.
        let old_word = field::get16(self.buffer.as_ref(), field_at::TTL);
        let new_word = old_word - (1 << 8);
        let c = checksum::update(self.checksum(), old_word, new_word);
        field::set16(self.buffer.as_mut(), field_at::TTL, new_word);
        self.set_checksum(c);
        true
    }

    /// The payload, writable.
    #[inline(always)]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (start, end) = (self.header_len(), self.total_len() as usize);
        &mut self.buffer.as_mut()[start..end]
    }
}

/// An IPv4 header without options, not a fragment, as values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Repr {
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// Protocol of the payload.
    pub protocol: IpProtocol,
    /// Payload length in bytes.
    pub payload_len: usize,
    /// Time to live.
    pub ttl: u8,
}

impl Ipv4Repr {
    /// The header of `packet` (from [`Ipv4Packet::new_checked`]) if its checksum is right and it is not a
    /// fragment. Options are skipped.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv4Packet<T>) -> Result<Self> {
        if !packet.verify_checksum() {
            return Err(Error::BadChecksum {
                header: NAME,
                found: packet.checksum(),
                computed: packet.compute_checksum(),
            });
        }
        if packet.is_fragment() {
            return Err(Error::Unsupported { header: NAME, what: "a fragment (no reassembly)" });
        }
        Ok(Ipv4Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            payload_len: packet.total_len() as usize - packet.header_len(),
            ttl: packet.ttl(),
        })
    }

    /// Length of the header it emits.
    #[inline(always)]
    pub const fn buffer_len(&self) -> usize {
        field_at::OPTIONS
    }

    /// Writes a 20-byte header (DSCP/ECN 0, identification 0, no flags) with its checksum into `packet`, whose
    /// buffer must hold at least the header. The payload is not touched.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv4Packet<T>) {
        packet.set_version_and_header_len(field_at::OPTIONS);
        packet.set_dscp_ecn(0, 0);
        packet.set_total_len((field_at::OPTIONS + self.payload_len) as u16);
        packet.set_ident(0);
        packet.set_frag(false, false, 0);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.set_checksum(0);
        packet.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A UDP datagram's IPv4 header as captured (192.168.0.1 -> 192.168.0.199, total length 115, DF, TTL 64),
    /// with its correct checksum 0xb861 and 95 payload bytes.
    fn captured() -> Vec<u8> {
        let mut b = vec![
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8,
            0x00, 0xc7,
        ];
        b.resize(0x73, 0xab);
        b
    }

    #[test]
    fn reads_a_captured_header() {
        let b = captured();
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.version(), p.header_len(), p.dscp(), p.ecn()), (4, 20, 0, 0));
        assert_eq!(
            (p.total_len(), p.ident(), p.dont_frag(), p.more_frags(), p.frag_offset()),
            (115, 0, true, false, 0)
        );
        assert!(!p.is_fragment());
        assert_eq!((p.ttl(), p.protocol(), p.checksum()), (64, IpProtocol::UDP, 0xb861));
        assert_eq!(p.src_addr(), Ipv4Addr::new(192, 168, 0, 1));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(192, 168, 0, 199));
        assert!(p.verify_checksum());
        assert_eq!(p.payload().len(), 95);
        let r = Ipv4Repr::parse(&p).unwrap();
        assert_eq!(r.payload_len, 95);
        let mut b = b.clone();
        let mut p = Ipv4Packet::new_checked(&mut b[..]).unwrap();
        p.swap_addrs();
        assert_eq!((p.src_addr(), p.dst_addr()), (r.dst_addr, r.src_addr));
        assert!(p.verify_checksum(), "swapping addresses keeps the sum");
    }

    #[test]
    fn a_wrong_checksum_is_reported_with_the_right_one() {
        let mut b = captured();
        b[11] = 0x62;
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p), Err(Error::BadChecksum { header: "IPv4", found: 0xb862, computed: 0xb861 }));
        let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
        p.fill_checksum();
        assert_eq!(p.checksum(), 0xb861);
    }

    #[test]
    fn options_are_covered_by_header_length_and_checksum() {
        let mut b = captured();
        // IHL 6: one 4-byte option word (four NOPs) taken from the payload.
        b[0] = 0x46;
        b[20..24].copy_from_slice(&[1, 1, 1, 1]);
        let mut p = Ipv4Packet::new_checked(&mut b[..]).unwrap();
        p.fill_checksum();
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.payload().len(), 91);
        assert_eq!(checksum::data(&b[..24]), 0xffff, "the checksum makes the header sum to all ones");
    }

    #[test]
    fn rejects_bad_version_and_lengths() {
        let mut b = captured();
        b[0] = 0x65;
        assert_eq!(Ipv4Packet::new_checked(&b[..]), Err(Error::BadVersion { header: "IPv4", found: 6, expected: 4 }));
        b[0] = 0x44;
        assert_eq!(Ipv4Packet::new_checked(&b[..]), Err(Error::BadLength { header: "IPv4", len: 16, min: 20 }));
        b[0] = 0x45;
        b[2..4].copy_from_slice(&19u16.to_be_bytes());
        assert_eq!(Ipv4Packet::new_checked(&b[..]), Err(Error::BadLength { header: "IPv4", len: 19, min: 20 }));
        b[0] = 0x4f;
        b[2..4].copy_from_slice(&60u16.to_be_bytes());
        assert_eq!(Ipv4Packet::new_checked(&b[..40]), Err(Error::Truncated { header: "IPv4", need: 60, have: 40 }));
    }

    #[test]
    fn fragments_are_seen() {
        let mut b = captured();
        let mut p = Ipv4Packet::new_checked(&mut b[..]).unwrap();
        p.set_frag(false, false, 1480);
        assert!(p.is_fragment());
        assert_eq!(p.frag_offset(), 1480);
        p.set_frag(false, true, 0);
        assert!(p.is_fragment());
        p.fill_checksum();
        assert!(matches!(Ipv4Repr::parse(&p), Err(Error::Unsupported { .. })));
    }

    #[test]
    fn ttl_stops_at_one() {
        let mut b = captured();
        let mut p = Ipv4Packet::new_checked(&mut b[..]).unwrap();
        p.set_ttl(1);
        p.fill_checksum();
        let before = p.into_inner().to_vec();
        let mut p = Ipv4Packet::new_checked(&mut b[..]).unwrap();
        assert!(!p.decrement_ttl());
        assert_eq!(b, before, "a TTL of 1 is left for the caller to drop");
    }

    proptest! {
        #[test]
        fn incremental_ttl_update_equals_a_full_recompute(
            ttl in 2u8..=255, proto: u8, ident: u16, src: [u8; 4], dst: [u8; 4], tos: u8, extra in 0usize..4,
        ) {
            let mut b = vec![0u8; 20 + extra * 4];
            let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
            p.set_version_and_header_len(20 + extra * 4);
            p.set_dscp_ecn(tos >> 2, tos & 3);
            p.set_total_len((20 + extra * 4) as u16);
            p.set_ident(ident);
            p.set_ttl(ttl);
            p.set_protocol(IpProtocol(proto));
            p.set_src_addr(src.into());
            p.set_dst_addr(dst.into());
            p.fill_checksum();
            prop_assert!(p.decrement_ttl());
            prop_assert_eq!(p.ttl(), ttl - 1);
            let incremental = p.checksum();
            p.fill_checksum();
            // RFC 1624's update never yields 0x0000 where a full sum yields 0xffff or vice versa for a header
            // holding a nonzero version byte; so the values are equal, not merely equivalent.
            prop_assert_eq!(incremental, p.checksum());
            prop_assert!(p.verify_checksum());
        }

        #[test]
        fn repr_round_trips(src: [u8; 4], dst: [u8; 4], proto: u8, ttl: u8, payload_len in 0usize..64) {
            let repr = Ipv4Repr {
                src_addr: src.into(), dst_addr: dst.into(), protocol: IpProtocol(proto), payload_len, ttl,
            };
            let mut b = vec![0x5au8; repr.buffer_len() + payload_len];
            repr.emit(&mut Ipv4Packet::new_unchecked(&mut b[..]));
            let p = Ipv4Packet::new_checked(&b[..]).unwrap();
            prop_assert_eq!(Ipv4Repr::parse(&p), Ok(repr));
            prop_assert_eq!(p.payload(), &vec![0x5au8; payload_len][..]);
        }

        #[test]
        fn rejects_every_truncation(extra in 0usize..10, cut in 0usize..60) {
            let total = 20 + extra * 4;
            let mut b = vec![0u8; total];
            let repr = Ipv4Repr {
                src_addr: Ipv4Addr::LOCALHOST, dst_addr: Ipv4Addr::LOCALHOST, protocol: IpProtocol::UDP,
                payload_len: extra * 4, ttl: 64,
            };
            repr.emit(&mut Ipv4Packet::new_unchecked(&mut b[..]));
            let cut = cut % total;
            prop_assert!(
                matches!(Ipv4Packet::new_checked(&b[..cut]), Err(Error::Truncated { have, .. }) if have == cut),
                "{} of {} bytes accepted", cut, total
            );
            prop_assert!(Ipv4Packet::new_checked(&b[..]).is_ok());
        }
    }
}
