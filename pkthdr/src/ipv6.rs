//! IPv6 fixed headers (RFC 8200). Extension headers are payload here: `next_header` names the first one.

use std::net::Ipv6Addr;

use super::checksum::{self, Sum};
use super::{check_len, field, Error, IpProtocol, Result};

/// Byte offsets and bit fields of the IPv6 header.
mod field_at {
    /// Version (4 bits), traffic class (8), flow label (20).
    pub const VER_TC_FLOW: usize = 0;
    pub const PAYLOAD_LEN: usize = 4;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: usize = 8;
    pub const DST_ADDR: usize = 24;
    pub const PAYLOAD: usize = 40;

    pub const VERSION_SHIFT: u32 = 28;
    pub const TRAFFIC_CLASS_SHIFT: u32 = 20;
    pub const FLOW_LABEL: u32 = 0x000f_ffff;
}

const NAME: &str = "IPv6";

/// A view of an IPv6 packet: fixed header and payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Length of the fixed header.
    pub const HEADER_LEN: usize = field_at::PAYLOAD;

    /// A view without checks.
    #[inline(always)]
    pub fn new_unchecked(buffer: T) -> Self {
        Ipv6Packet { buffer }
    }

    /// A view of `buffer` if it holds the fixed header with version 6 and the payload length it gives.
    #[inline(always)]
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Ipv6Packet { buffer };
        let have = p.buffer.as_ref().len();
        check_len(NAME, have, field_at::PAYLOAD)?;
        if p.version() != 6 {
            return Err(Error::BadVersion { header: NAME, found: p.version(), expected: 6 });
        }
        check_len(NAME, have, field_at::PAYLOAD + p.payload_len() as usize)?;
        Ok(p)
    }

    /// The buffer back.
    #[inline(always)]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline(always)]
    fn first_word(&self) -> u32 {
        field::get32(self.buffer.as_ref(), field_at::VER_TC_FLOW)
    }

    /// Version field (6 for a valid packet).
    #[inline(always)]
    pub fn version(&self) -> u8 {
        (self.first_word() >> field_at::VERSION_SHIFT) as u8
    }

    /// Traffic class (DSCP and ECN).
    #[inline(always)]
    pub fn traffic_class(&self) -> u8 {
        (self.first_word() >> field_at::TRAFFIC_CLASS_SHIFT) as u8
    }

    /// Flow label (20 bits).
    #[inline(always)]
    pub fn flow_label(&self) -> u32 {
        self.first_word() & field_at::FLOW_LABEL
    }

    /// Payload length (extension headers included).
    #[inline(always)]
    pub fn payload_len(&self) -> u16 {
        field::get16(self.buffer.as_ref(), field_at::PAYLOAD_LEN)
    }

    /// Type of the header after this one.
    #[inline(always)]
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field_at::NEXT_HEADER])
    }

    /// Hop limit.
    #[inline(always)]
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field_at::HOP_LIMIT]
    }

    /// Source address.
    #[inline(always)]
    pub fn src_addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(field::array::<16>(self.buffer.as_ref(), field_at::SRC_ADDR))
    }

    /// Destination address.
    #[inline(always)]
    pub fn dst_addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(field::array::<16>(self.buffer.as_ref(), field_at::DST_ADDR))
    }

    /// The pseudo-header sum for an upper-layer message of `len` bytes of type `next_header` (which differs from
    /// this header's when extension headers come between). Reads the addresses as four 8-byte loads.
    #[inline(always)]
    pub fn pseudo_header(&self, next_header: IpProtocol, len: u32) -> Sum {
        let addrs = field::array::<32>(self.buffer.as_ref(), field_at::SRC_ADDR);
        checksum::pseudo_header_from_addrs(&addrs, next_header, len)
    }

    /// The payload: the payload length's bytes after the fixed header.
    #[inline(always)]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field_at::PAYLOAD..field_at::PAYLOAD + self.payload_len() as usize]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    /// Sets version 6, the traffic class and the flow label (cut to 20 bits).
    #[inline(always)]
    pub fn set_version_tc_flow(&mut self, traffic_class: u8, flow_label: u32) {
        let w = (6 << field_at::VERSION_SHIFT)
            | ((traffic_class as u32) << field_at::TRAFFIC_CLASS_SHIFT)
            | (flow_label & field_at::FLOW_LABEL);
        field::set32(self.buffer.as_mut(), field_at::VER_TC_FLOW, w);
    }

    /// Sets the payload length.
    #[inline(always)]
    pub fn set_payload_len(&mut self, len: u16) {
        field::set16(self.buffer.as_mut(), field_at::PAYLOAD_LEN, len);
    }

    /// Sets the next header.
    #[inline(always)]
    pub fn set_next_header(&mut self, p: IpProtocol) {
        self.buffer.as_mut()[field_at::NEXT_HEADER] = p.0;
    }

    /// Sets the hop limit.
    #[inline(always)]
    pub fn set_hop_limit(&mut self, h: u8) {
        self.buffer.as_mut()[field_at::HOP_LIMIT] = h;
    }

    /// Sets the source address.
    #[inline(always)]
    pub fn set_src_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field_at::SRC_ADDR..field_at::DST_ADDR].copy_from_slice(&a.octets());
    }

    /// Sets the destination address.
    #[inline(always)]
    pub fn set_dst_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field_at::DST_ADDR..field_at::PAYLOAD].copy_from_slice(&a.octets());
    }

    /// Swaps source and destination address.
    #[inline(always)]
    pub fn swap_addrs(&mut self) {
        let (s, d) = (self.src_addr(), self.dst_addr());
        self.set_src_addr(d);
        self.set_dst_addr(s);
    }

    /// The payload, writable.
    #[inline(always)]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = field_at::PAYLOAD + self.payload_len() as usize;
        &mut self.buffer.as_mut()[field_at::PAYLOAD..end]
    }
}

/// An IPv6 fixed header as values (traffic class and flow label 0 when emitted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Repr {
    /// Source address.
    pub src_addr: Ipv6Addr,
    /// Destination address.
    pub dst_addr: Ipv6Addr,
    /// Type of the payload.
    pub next_header: IpProtocol,
    /// Payload length in bytes.
    pub payload_len: usize,
    /// Hop limit.
    pub hop_limit: u8,
}

impl Ipv6Repr {
    /// The header of `packet` (from [`Ipv6Packet::new_checked`]).
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv6Packet<T>) -> Result<Self> {
        Ok(Ipv6Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: packet.payload_len() as usize,
            hop_limit: packet.hop_limit(),
        })
    }

    /// Length of the header it emits.
    #[inline(always)]
    pub const fn buffer_len(&self) -> usize {
        field_at::PAYLOAD
    }

    /// Writes the 40-byte header into `packet`.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv6Packet<T>) {
        packet.set_version_tc_flow(0, 0);
        packet.set_payload_len(self.payload_len as u16);
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An ICMPv6 echo request header from fe80::1 to ff02::1 as captured: traffic class 0xb8, flow label 0x12345,
    /// payload 16 bytes, hop limit 255.
    const HEADER: [u8; 40] = [
        0x6b, 0x81, 0x23, 0x45, 0x00, 0x10, 0x3a, 0xff, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff,
        0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
    ];

    #[test]
    fn reads_a_captured_header() {
        let mut b = HEADER.to_vec();
        b.resize(56, 0);
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.version(), p.traffic_class(), p.flow_label()), (6, 0xb8, 0x12345));
        assert_eq!((p.payload_len(), p.next_header(), p.hop_limit()), (16, IpProtocol::ICMPV6, 255));
        assert_eq!(p.src_addr(), "fe80::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(p.dst_addr(), "ff02::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(p.payload().len(), 16);
        let mut b2 = [0u8; 40];
        let mut q = Ipv6Packet::new_unchecked(&mut b2[..]);
        q.set_version_tc_flow(0xb8, 0x12345);
        q.set_payload_len(16);
        q.set_next_header(IpProtocol::ICMPV6);
        q.set_hop_limit(255);
        q.set_src_addr(p.src_addr());
        q.set_dst_addr(p.dst_addr());
        assert_eq!(b2, HEADER);
        let mut q = Ipv6Packet::new_unchecked(&mut b2[..]);
        q.swap_addrs();
        assert_eq!((q.src_addr(), q.dst_addr()), (p.dst_addr(), p.src_addr()));
    }

    #[test]
    fn rejects_bad_version() {
        let mut b = HEADER.to_vec();
        b.resize(56, 0);
        b[0] = 0x4b;
        assert_eq!(Ipv6Packet::new_checked(&b[..]), Err(Error::BadVersion { header: "IPv6", found: 4, expected: 6 }));
    }

    proptest! {
        #[test]
        fn rejects_every_truncation(cut in 0usize..56) {
            let mut b = HEADER.to_vec();
            b.resize(56, 0);
            prop_assert!(
                matches!(Ipv6Packet::new_checked(&b[..cut]), Err(Error::Truncated { have, .. }) if have == cut),
                "a {}-byte prefix was accepted", cut
            );
        }

        #[test]
        fn repr_round_trips(src: [u8; 16], dst: [u8; 16], nh: u8, hop: u8, payload_len in 0usize..64) {
            let repr = Ipv6Repr {
                src_addr: src.into(), dst_addr: dst.into(), next_header: IpProtocol(nh), payload_len, hop_limit: hop,
            };
            let mut b = vec![0u8; repr.buffer_len() + payload_len];
            repr.emit(&mut Ipv6Packet::new_unchecked(&mut b[..]));
            prop_assert_eq!(Ipv6Repr::parse(&Ipv6Packet::new_checked(&b[..]).unwrap()), Ok(repr));
        }
    }
}
