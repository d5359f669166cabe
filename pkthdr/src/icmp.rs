//! ICMP (RFC 792) and ICMPv6 (RFC 4443) messages: the shared 4-byte header (type, code, checksum) and the echo
//! message's identifier and sequence number. The two differ only in type numbers and in the checksum: ICMPv6
//! includes the IPv6 pseudo header, ICMP for IPv4 none (pass [`Sum::ZERO`]).

use super::checksum::{self, Sum};
use super::{check_len, field, Error, Result};

/// Byte offsets of the ICMP header and of the echo message's rest-of-header.
mod field_at {
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: usize = 2;
    pub const ECHO_IDENT: usize = 4;
    pub const ECHO_SEQ_NO: usize = 6;
    pub const DATA: usize = 8;
}

const NAME: &str = "ICMP";

/// An ICMP message type (the numbers differ between ICMP for IPv4 and ICMPv6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IcmpType(pub u8);

impl IcmpType {
    /// ICMP (IPv4) echo reply.
    pub const V4_ECHO_REPLY: IcmpType = IcmpType(0);
    /// ICMP (IPv4) destination unreachable.
    pub const V4_DEST_UNREACHABLE: IcmpType = IcmpType(3);
    /// ICMP (IPv4) echo request.
    pub const V4_ECHO_REQUEST: IcmpType = IcmpType(8);
    /// ICMP (IPv4) time exceeded.
    pub const V4_TIME_EXCEEDED: IcmpType = IcmpType(11);
    /// ICMPv6 echo request.
    pub const V6_ECHO_REQUEST: IcmpType = IcmpType(128);
    /// ICMPv6 echo reply.
    pub const V6_ECHO_REPLY: IcmpType = IcmpType(129);
}

/// A view of an ICMP or ICMPv6 message of at least 8 bytes (every ICMP for IPv4 message, and ICMPv6 echo).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcmpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> IcmpPacket<T> {
    /// Length of the header with the 4-byte rest-of-header (echo: identifier and sequence number).
    pub const HEADER_LEN: usize = field_at::DATA;

    /// A view without checks.
    #[inline(always)]
    pub fn new_unchecked(buffer: T) -> Self {
        IcmpPacket { buffer }
    }

    /// A view of `buffer` if it holds the 8-byte header.
    #[inline(always)]
    pub fn new_checked(buffer: T) -> Result<Self> {
        check_len(NAME, buffer.as_ref().len(), field_at::DATA)?;
        Ok(IcmpPacket { buffer })
    }

    /// The buffer back.
    #[inline(always)]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Message type.
    #[inline(always)]
    pub fn msg_type(&self) -> IcmpType {
        IcmpType(self.buffer.as_ref()[field_at::TYPE])
    }

    /// Message code.
    #[inline(always)]
    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[field_at::CODE]
    }

    /// Checksum field.
    #[inline(always)]
    pub fn checksum(&self) -> u16 {
        field::get16(self.buffer.as_ref(), field_at::CHECKSUM)
    }

    /// Echo identifier.
    #[inline(always)]
    pub fn echo_ident(&self) -> u16 {
        field::get16(self.buffer.as_ref(), field_at::ECHO_IDENT)
    }

    /// Echo sequence number.
    #[inline(always)]
    pub fn echo_seq_no(&self) -> u16 {
        field::get16(self.buffer.as_ref(), field_at::ECHO_SEQ_NO)
    }

    /// The checksum the message (the whole buffer) needs; `pseudo` is [`Sum::ZERO`] for ICMP over IPv4 and the
    /// IPv6 pseudo-header sum for ICMPv6. The field's current value is left out.
    #[inline(always)]
    pub fn compute_checksum(&self, pseudo: Sum) -> u16 {
        Sum::of(self.buffer.as_ref()).sub_word(self.checksum()).add(pseudo).checksum()
    }

    /// The checksum field is right.
    #[inline(always)]
    pub fn verify_checksum(&self, pseudo: Sum) -> bool {
        Sum::of(self.buffer.as_ref()).add(pseudo).folded() == 0xffff
    }

    /// What follows the 8-byte header (echo data).
    #[inline(always)]
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field_at::DATA..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IcmpPacket<T> {
    /// Sets the message type (the checksum is not updated; see [`Self::rewrite_msg_type`]).
    #[inline(always)]
    pub fn set_msg_type(&mut self, t: IcmpType) {
        self.buffer.as_mut()[field_at::TYPE] = t.0;
    }

    /// Sets the message code.
    #[inline(always)]
    pub fn set_code(&mut self, c: u8) {
        self.buffer.as_mut()[field_at::CODE] = c;
    }

    /// Sets the checksum field.
    #[inline(always)]
    pub fn set_checksum(&mut self, c: u16) {
        field::set16(self.buffer.as_mut(), field_at::CHECKSUM, c);
    }

    /// Sets the echo identifier.
    #[inline(always)]
    pub fn set_echo_ident(&mut self, v: u16) {
        field::set16(self.buffer.as_mut(), field_at::ECHO_IDENT, v);
    }

    /// Sets the echo sequence number.
    #[inline(always)]
    pub fn set_echo_seq_no(&mut self, v: u16) {
        field::set16(self.buffer.as_mut(), field_at::ECHO_SEQ_NO, v);
    }

    /// Sets the message type and updates the checksum incrementally (RFC 1624): turning an echo request into
    /// its reply without summing the data again.
    #[inline(always)]
    pub fn rewrite_msg_type(&mut self, t: IcmpType) {
        let old_word = field::get16(self.buffer.as_ref(), field_at::TYPE);
        self.set_msg_type(t);
        let new_word = field::get16(self.buffer.as_ref(), field_at::TYPE);
        let c = checksum::update(self.checksum(), old_word, new_word);
        self.set_checksum(c);
    }

    /// Computes and writes the checksum (see [`Self::compute_checksum`] for `pseudo`).
    #[inline(always)]
    pub fn fill_checksum(&mut self, pseudo: Sum) {
        let c = self.compute_checksum(pseudo);
        self.set_checksum(c);
    }

    /// What follows the 8-byte header, writable.
    #[inline(always)]
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field_at::DATA..]
    }
}

/// An echo request or reply (ICMP for IPv4 or ICMPv6) as values; the data is the packet's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcmpEchoRepr {
    /// One of the four echo types.
    pub msg_type: IcmpType,
    /// Identifier.
    pub ident: u16,
    /// Sequence number.
    pub seq_no: u16,
}

impl IcmpEchoRepr {
    /// The echo message in `packet` (from [`IcmpPacket::new_checked`]) if its checksum is right for `pseudo`
    /// ([`Sum::ZERO`] over IPv4) and its type is an echo type with code 0.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(packet: &IcmpPacket<T>, pseudo: Sum) -> Result<Self> {
        if !packet.verify_checksum(pseudo) {
            return Err(Error::BadChecksum {
                header: NAME,
                found: packet.checksum(),
                computed: packet.compute_checksum(pseudo),
            });
        }
        let t = packet.msg_type();
        let echo =
            [IcmpType::V4_ECHO_REQUEST, IcmpType::V4_ECHO_REPLY, IcmpType::V6_ECHO_REQUEST, IcmpType::V6_ECHO_REPLY];
        if !echo.contains(&t) || packet.code() != 0 {
            return Err(Error::Unsupported { header: NAME, what: "a message other than echo" });
        }
        Ok(IcmpEchoRepr { msg_type: t, ident: packet.echo_ident(), seq_no: packet.echo_seq_no() })
    }

    /// Length of the header it emits.
    #[inline(always)]
    pub const fn header_len(&self) -> usize {
        field_at::DATA
    }

    /// Writes the header and the checksum over the whole buffer: write the data into `packet` first.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut IcmpPacket<T>, pseudo: Sum) {
        packet.set_msg_type(self.msg_type);
        packet.set_code(0);
        packet.set_echo_ident(self.ident);
        packet.set_echo_seq_no(self.seq_no);
        packet.fill_checksum(pseudo);
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv6Addr;

    use super::*;
    use crate::checksum::pseudo_header_v6;
    use crate::IpProtocol;
    use proptest::prelude::*;

    /// A Linux `ping` echo request as captured (id 0x1c46, seq 1, 8 bytes of data "abcdefgh"), checksum worked out
    /// by hand: 0800 + 1c46 + 0001 + 6162 + 6364 + 6566 + 6768 = 0x1b5db, folded 0xb5dc, complement 0x4a23.
    const PING: [u8; 16] =
        [0x08, 0x00, 0x4a, 0x23, 0x1c, 0x46, 0x00, 0x01, b'a', b'b', b'c', b'd', b'e', b'f', b'g', b'h'];

    #[test]
    fn reads_a_captured_echo_request() {
        let p = IcmpPacket::new_checked(&PING[..]).unwrap();
        assert_eq!((p.msg_type(), p.code(), p.checksum()), (IcmpType::V4_ECHO_REQUEST, 0, 0x4a23));
        assert_eq!((p.echo_ident(), p.echo_seq_no()), (0x1c46, 1));
        assert_eq!(p.data(), b"abcdefgh");
        assert!(p.verify_checksum(Sum::ZERO));
        assert_eq!(
            IcmpEchoRepr::parse(&p, Sum::ZERO),
            Ok(IcmpEchoRepr { msg_type: IcmpType::V4_ECHO_REQUEST, ident: 0x1c46, seq_no: 1 })
        );
    }

    #[test]
    fn reply_by_incremental_update_is_the_reply_from_scratch() {
        let mut b = PING;
        let mut p = IcmpPacket::new_checked(&mut b[..]).unwrap();
        p.rewrite_msg_type(IcmpType::V4_ECHO_REPLY);
        // 0x4a23 + 0x0800 = 0x5223: the type word dropped by 0x0800.
        assert_eq!(p.checksum(), 0x5223);
        let incremental = b;
        let mut p = IcmpPacket::new_unchecked(&mut b[..]);
        p.fill_checksum(Sum::ZERO);
        assert_eq!(b, incremental);
    }

    #[test]
    fn a_corrupted_message_is_reported() {
        let mut b = PING;
        b[15] ^= 0x20;
        let p = IcmpPacket::new_checked(&b[..]).unwrap();
        assert!(matches!(IcmpEchoRepr::parse(&p, Sum::ZERO), Err(Error::BadChecksum { found: 0x4a23, .. })));
    }

    proptest! {
        #[test]
        fn rejects_every_truncation(cut in 0usize..8) {
            prop_assert!(
                matches!(IcmpPacket::new_checked(&PING[..cut]), Err(Error::Truncated { have, .. }) if have == cut),
                "a {}-byte prefix was accepted", cut
            );
        }

        #[test]
        fn v6_echo_round_trips(
            src: [u8; 16], dst: [u8; 16], ident: u16, seq_no: u16, request: bool,
            data in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let t = if request { IcmpType::V6_ECHO_REQUEST } else { IcmpType::V6_ECHO_REPLY };
            let repr = IcmpEchoRepr { msg_type: t, ident, seq_no };
            let len = repr.header_len() + data.len();
            let pseudo = pseudo_header_v6(Ipv6Addr::from(src), Ipv6Addr::from(dst), IpProtocol::ICMPV6, len as u32);
            let mut b = vec![0u8; len];
            let mut p = IcmpPacket::new_unchecked(&mut b[..]);
            p.data_mut().copy_from_slice(&data);
            repr.emit(&mut p, pseudo);
            let p = IcmpPacket::new_checked(&b[..]).unwrap();
            prop_assert_eq!(IcmpEchoRepr::parse(&p, pseudo), Ok(repr));
            prop_assert_eq!(p.data(), &data[..]);
            // The same bytes without the pseudo header do not verify: ICMPv6 covers the addresses.
            prop_assert!(!p.verify_checksum(Sum::ZERO) || pseudo.folded() == 0xffff);
        }
    }
}
