//! UDP datagrams (RFC 768).
//!
//! The checksum methods sum the view's whole buffer, so give the view the datagram exactly (the IP payload), as
//! checksum engines that take the length from the IP header do.

use super::checksum::Sum;
use super::{check_len, field, Error, Result};

/// Byte offsets of the UDP header.
mod field_at {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const LENGTH: usize = 4;
    pub const CHECKSUM: usize = 6;
    pub const PAYLOAD: usize = 8;
}

const NAME: &str = "UDP";

/// A view of a UDP datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Length of the header.
    pub const HEADER_LEN: usize = field_at::PAYLOAD;

    /// A view without checks.
    #[inline(always)]
    pub fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }

    /// A view of `buffer` if it holds the header and the length field's bytes, and that length covers the header.
    #[inline(always)]
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = UdpPacket { buffer };
        let have = p.buffer.as_ref().len();
        check_len(NAME, have, field_at::PAYLOAD)?;
        let len = p.len() as usize;
        if len < field_at::PAYLOAD {
            return Err(Error::BadLength { header: NAME, len, min: field_at::PAYLOAD });
        }
        check_len(NAME, have, len)?;
        Ok(p)
    }

    /// The buffer back.
    #[inline(always)]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Source port.
    #[inline(always)]
    pub fn src_port(&self) -> u16 {
        field::get16(self.buffer.as_ref(), field_at::SRC_PORT)
    }

    /// Destination port.
    #[inline(always)]
    pub fn dst_port(&self) -> u16 {
        field::get16(self.buffer.as_ref(), field_at::DST_PORT)
    }

    /// Length field: header and payload in bytes.
    #[inline(always)]
    #[allow(clippy::len_without_is_empty)] // a header field, not a collection
    pub fn len(&self) -> u16 {
        field::get16(self.buffer.as_ref(), field_at::LENGTH)
    }

    /// Checksum field (0: none was computed, allowed over IPv4 only).
    #[inline(always)]
    pub fn checksum(&self) -> u16 {
        field::get16(self.buffer.as_ref(), field_at::CHECKSUM)
    }

    /// The checksum the datagram needs with the pseudo-header sum `pseudo` (from
    /// [`Ipv4Packet::pseudo_header`](super::Ipv4Packet::pseudo_header) or
    /// [`Ipv6Packet::pseudo_header`](super::Ipv6Packet::pseudo_header)); the checksum field's current value is
    /// left out. A computed 0 is given as 0xffff, since 0 on the wire means "no checksum".
    #[inline(always)]
    pub fn compute_checksum(&self, pseudo: Sum) -> u16 {
        let c = Sum::of(self.buffer.as_ref()).sub_word(self.checksum()).add(pseudo).checksum();
        if c == 0 {
            0xffff
        } else {
            c
        }
    }

    /// The checksum field is right for `pseudo` (a zero field, "no checksum", is not right here).
    #[inline(always)]
    pub fn verify_checksum(&self, pseudo: Sum) -> bool {
        Sum::of(self.buffer.as_ref()).add(pseudo).folded() == 0xffff
    }

    /// The payload: after the header, up to the length field.
    #[inline(always)]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field_at::PAYLOAD..self.len() as usize]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Sets the source port.
    #[inline(always)]
    pub fn set_src_port(&mut self, p: u16) {
        field::set16(self.buffer.as_mut(), field_at::SRC_PORT, p);
    }

    /// Sets the destination port.
    #[inline(always)]
    pub fn set_dst_port(&mut self, p: u16) {
        field::set16(self.buffer.as_mut(), field_at::DST_PORT, p);
    }

    /// Swaps source and destination port (a checksum stays valid: the sum does not change).
    #[inline(always)]
    pub fn swap_ports(&mut self) {
        let (s, d) = (self.src_port(), self.dst_port());
        self.set_src_port(d);
        self.set_dst_port(s);
    }

    /// Sets the length field.
    #[inline(always)]
    pub fn set_len(&mut self, len: u16) {
        field::set16(self.buffer.as_mut(), field_at::LENGTH, len);
    }

    /// Sets the checksum field.
    #[inline(always)]
    pub fn set_checksum(&mut self, c: u16) {
        field::set16(self.buffer.as_mut(), field_at::CHECKSUM, c);
    }

    /// Computes and writes the checksum for `pseudo`.
    #[inline(always)]
    pub fn fill_checksum(&mut self, pseudo: Sum) {
        let c = self.compute_checksum(pseudo);
        self.set_checksum(c);
    }

    /// The payload, writable.
    #[inline(always)]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = self.len() as usize;
        &mut self.buffer.as_mut()[field_at::PAYLOAD..end]
    }
}

/// A UDP header as values (the length comes from the payload, the checksum from the data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
}

impl UdpRepr {
    /// The header of `packet` (from [`UdpPacket::new_checked`]). With `Some(pseudo)`, a nonzero checksum is
    /// verified; a zero one means none was sent (IPv6 receivers must drop those themselves, RFC 8200 section 8.1).
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(packet: &UdpPacket<T>, pseudo: Option<Sum>) -> Result<Self> {
        if let Some(pseudo) = pseudo {
            if packet.checksum() != 0 && !packet.verify_checksum(pseudo) {
                return Err(Error::BadChecksum {
                    header: NAME,
                    found: packet.checksum(),
                    computed: packet.compute_checksum(pseudo),
                });
            }
        }
        Ok(UdpRepr { src_port: packet.src_port(), dst_port: packet.dst_port() })
    }

    /// Length of the header it emits.
    #[inline(always)]
    pub const fn header_len(&self) -> usize {
        field_at::PAYLOAD
    }

    /// Writes the header for `payload_len` bytes of payload with checksum 0 ("none"); write the payload, then
    /// [`UdpPacket::fill_checksum`] for a checksum.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut UdpPacket<T>, payload_len: usize) {
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len((field_at::PAYLOAD + payload_len) as u16);
        packet.set_checksum(0);
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::checksum::pseudo_header_v4;
    use crate::IpProtocol;
    use proptest::prelude::*;

    /// A DNS query's UDP header and payload as captured: 10.0.0.2:54321 -> 10.0.0.1:53, 12 bytes, checksum worked
    /// out by hand from RFC 768's layout: pseudo header 0a00 0002 0a00 0001 0011 000c (0x1420) plus header d431
    /// 0035 000c (0xd472) plus data abcd 1234 (0xbe01) sums to 0x1a693, folds to 0xa694, complement 0x596b.
    const DATAGRAM: [u8; 12] = [0xd4, 0x31, 0x00, 0x35, 0x00, 0x0c, 0x59, 0x6b, 0xab, 0xcd, 0x12, 0x34];

    fn pseudo() -> Sum {
        pseudo_header_v4(Ipv4Addr::new(10, 0, 0, 2), Ipv4Addr::new(10, 0, 0, 1), IpProtocol::UDP, 12)
    }

    #[test]
    fn reads_a_captured_datagram() {
        let p = UdpPacket::new_checked(&DATAGRAM[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port(), p.len(), p.checksum()), (54321, 53, 12, 0x596b));
        assert_eq!(p.payload(), &[0xab, 0xcd, 0x12, 0x34]);
        assert!(p.verify_checksum(pseudo()));
        assert_eq!(p.compute_checksum(pseudo()), 0x596b);
        assert_eq!(UdpRepr::parse(&p, Some(pseudo())), Ok(UdpRepr { src_port: 54321, dst_port: 53 }));
    }

    #[test]
    fn a_wrong_checksum_is_reported_and_zero_means_none() {
        let mut b = DATAGRAM;
        b[7] ^= 1;
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(
            UdpRepr::parse(&p, Some(pseudo())),
            Err(Error::BadChecksum { header: "UDP", found: 0x596a, computed: 0x596b })
        );
        b[6..8].copy_from_slice(&[0, 0]);
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert!(UdpRepr::parse(&p, Some(pseudo())).is_ok());
        assert!(!p.verify_checksum(pseudo()));
    }

    #[test]
    fn a_zero_sum_is_sent_as_all_ones() {
        // Data chosen so that the sum is 0xffff: the checksum would be 0, which RFC 768 sends as 0xffff.
        let mut b = [0u8; 10];
        b[4..6].copy_from_slice(&10u16.to_be_bytes());
        let pseudo = Sum::ZERO.add_word(!10u16);
        let mut p = UdpPacket::new_checked(&mut b[..]).unwrap();
        p.fill_checksum(pseudo);
        assert_eq!(p.checksum(), 0xffff);
        assert!(p.verify_checksum(pseudo));
    }

    #[test]
    fn rejects_a_length_below_the_header() {
        let mut b = DATAGRAM;
        b[5] = 7;
        assert_eq!(UdpPacket::new_checked(&b[..]), Err(Error::BadLength { header: "UDP", len: 7, min: 8 }));
    }

    proptest! {
        #[test]
        fn rejects_every_truncation(cut in 0usize..12) {
            prop_assert!(
                matches!(UdpPacket::new_checked(&DATAGRAM[..cut]), Err(Error::Truncated { have, .. }) if have == cut),
                "a {}-byte prefix was accepted", cut
            );
        }

        #[test]
        fn repr_round_trips(
            src_port: u16, dst_port: u16, src: [u8; 4], dst: [u8; 4],
            payload in proptest::collection::vec(any::<u8>(), 0..100),
        ) {
            let repr = UdpRepr { src_port, dst_port };
            let len = repr.header_len() + payload.len();
            let pseudo = pseudo_header_v4(src.into(), dst.into(), IpProtocol::UDP, len as u16);
            let mut b = vec![0u8; len];
            let mut p = UdpPacket::new_unchecked(&mut b[..]);
            repr.emit(&mut p, payload.len());
            p.payload_mut().copy_from_slice(&payload);
            p.fill_checksum(pseudo);
            let p = UdpPacket::new_checked(&b[..]).unwrap();
            prop_assert!(p.verify_checksum(pseudo));
            prop_assert_eq!(UdpRepr::parse(&p, Some(pseudo)), Ok(repr));
            prop_assert_eq!(p.payload(), &payload[..]);
        }
    }
}
