//! ARP packets (RFC 826). The view reads any hardware/protocol address lengths; [`ArpRepr`] is Ethernet/IPv4.

use std::net::Ipv4Addr;

use super::{check_len, field, Error, EtherType, MacAddr, Result};

/// Byte offsets of the ARP header; the addresses follow at offsets given by the two length fields.
mod field_at {
    pub const HARDWARE_TYPE: usize = 0;
    pub const PROTOCOL_TYPE: usize = 2;
    pub const HARDWARE_LEN: usize = 4;
    pub const PROTOCOL_LEN: usize = 5;
    pub const OPERATION: usize = 6;
    pub const SENDER_HARDWARE_ADDR: usize = 8;
}

const NAME: &str = "ARP";

/// Hardware type of Ethernet (IANA ARP hardware types).
pub const HARDWARE_ETHERNET: u16 = 1;

/// An ARP operation code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArpOperation(pub u16);

impl ArpOperation {
    /// Who has the target protocol address?
    pub const REQUEST: ArpOperation = ArpOperation(1);
    /// The sender has it.
    pub const REPLY: ArpOperation = ArpOperation(2);
}

/// A view of an ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Length of an Ethernet/IPv4 ARP packet.
    pub const ETHERNET_IPV4_LEN: usize = 28;

    /// A view without checks.
    #[inline(always)]
    pub fn new_unchecked(buffer: T) -> Self {
        ArpPacket { buffer }
    }

    /// A view of `buffer` if it holds the fixed fields and the four addresses their lengths give.
    #[inline(always)]
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = ArpPacket { buffer };
        let have = p.buffer.as_ref().len();
        check_len(NAME, have, field_at::SENDER_HARDWARE_ADDR)?;
        check_len(NAME, have, p.target_protocol_at() + p.protocol_len() as usize)?;
        Ok(p)
    }

    /// The buffer back.
    #[inline(always)]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Hardware type ([`HARDWARE_ETHERNET`] for Ethernet).
    #[inline(always)]
    pub fn hardware_type(&self) -> u16 {
        field::get16(self.buffer.as_ref(), field_at::HARDWARE_TYPE)
    }

    /// Protocol type, as an EtherType.
    #[inline(always)]
    pub fn protocol_type(&self) -> EtherType {
        EtherType(field::get16(self.buffer.as_ref(), field_at::PROTOCOL_TYPE))
    }

    /// Hardware address length.
    #[inline(always)]
    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field_at::HARDWARE_LEN]
    }

    /// Protocol address length.
    #[inline(always)]
    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field_at::PROTOCOL_LEN]
    }

    /// Operation.
    #[inline(always)]
    pub fn operation(&self) -> ArpOperation {
        ArpOperation(field::get16(self.buffer.as_ref(), field_at::OPERATION))
    }

    /// Ethernet hardware and IPv4 protocol addresses (what [`ArpRepr`] and the `*_eth`/`*_ipv4` accessors read).
    #[inline(always)]
    pub fn is_ethernet_ipv4(&self) -> bool {
        self.hardware_type() == HARDWARE_ETHERNET
            && self.protocol_type() == EtherType::IPV4
            && self.hardware_len() == 6
            && self.protocol_len() == 4
    }

    #[inline(always)]
    fn sender_protocol_at(&self) -> usize {
        field_at::SENDER_HARDWARE_ADDR + self.hardware_len() as usize
    }

    #[inline(always)]
    fn target_hardware_at(&self) -> usize {
        self.sender_protocol_at() + self.protocol_len() as usize
    }

    #[inline(always)]
    fn target_protocol_at(&self) -> usize {
        self.target_hardware_at() + self.hardware_len() as usize
    }

    #[inline(always)]
    fn slice(&self, at: usize, len: u8) -> &[u8] {
        &self.buffer.as_ref()[at..at + len as usize]
    }

    /// Sender hardware address bytes.
    #[inline(always)]
    pub fn sender_hardware_addr(&self) -> &[u8] {
        self.slice(field_at::SENDER_HARDWARE_ADDR, self.hardware_len())
    }

    /// Sender protocol address bytes.
    #[inline(always)]
    pub fn sender_protocol_addr(&self) -> &[u8] {
        self.slice(self.sender_protocol_at(), self.protocol_len())
    }

    /// Target hardware address bytes.
    #[inline(always)]
    pub fn target_hardware_addr(&self) -> &[u8] {
        self.slice(self.target_hardware_at(), self.hardware_len())
    }

    /// Target protocol address bytes.
    #[inline(always)]
    pub fn target_protocol_addr(&self) -> &[u8] {
        self.slice(self.target_protocol_at(), self.protocol_len())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Sets the hardware type.
    #[inline(always)]
    pub fn set_hardware_type(&mut self, t: u16) {
        field::set16(self.buffer.as_mut(), field_at::HARDWARE_TYPE, t);
    }

    /// Sets the protocol type.
    #[inline(always)]
    pub fn set_protocol_type(&mut self, t: EtherType) {
        field::set16(self.buffer.as_mut(), field_at::PROTOCOL_TYPE, t.0);
    }

    /// Sets the hardware address length (the address offsets move with it).
    #[inline(always)]
    pub fn set_hardware_len(&mut self, len: u8) {
        self.buffer.as_mut()[field_at::HARDWARE_LEN] = len;
    }

    /// Sets the protocol address length (the address offsets move with it).
    #[inline(always)]
    pub fn set_protocol_len(&mut self, len: u8) {
        self.buffer.as_mut()[field_at::PROTOCOL_LEN] = len;
    }

    /// Sets the operation.
    #[inline(always)]
    pub fn set_operation(&mut self, op: ArpOperation) {
        field::set16(self.buffer.as_mut(), field_at::OPERATION, op.0);
    }

    /// Sets the sender hardware address (`a` is hardware-length bytes).
    #[inline(always)]
    pub fn set_sender_hardware_addr(&mut self, a: &[u8]) {
        let at = field_at::SENDER_HARDWARE_ADDR;
        self.buffer.as_mut()[at..at + a.len()].copy_from_slice(a);
    }

    /// Sets the sender protocol address (`a` is protocol-length bytes).
    #[inline(always)]
    pub fn set_sender_protocol_addr(&mut self, a: &[u8]) {
        let at = self.sender_protocol_at();
        self.buffer.as_mut()[at..at + a.len()].copy_from_slice(a);
    }

    /// Sets the target hardware address.
    #[inline(always)]
    pub fn set_target_hardware_addr(&mut self, a: &[u8]) {
        let at = self.target_hardware_at();
        self.buffer.as_mut()[at..at + a.len()].copy_from_slice(a);
    }

    /// Sets the target protocol address.
    #[inline(always)]
    pub fn set_target_protocol_addr(&mut self, a: &[u8]) {
        let at = self.target_protocol_at();
        self.buffer.as_mut()[at..at + a.len()].copy_from_slice(a);
    }
}

/// An Ethernet/IPv4 ARP packet as values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpRepr {
    /// Operation.
    pub operation: ArpOperation,
    /// Sender hardware address.
    pub source_hardware_addr: MacAddr,
    /// Sender protocol address.
    pub source_protocol_addr: Ipv4Addr,
    /// Target hardware address (zero in a request).
    pub target_hardware_addr: MacAddr,
    /// Target protocol address.
    pub target_protocol_addr: Ipv4Addr,
}

impl ArpRepr {
    /// The packet (from [`ArpPacket::new_checked`]) if it is Ethernet/IPv4.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(packet: &ArpPacket<T>) -> Result<Self> {
        if !packet.is_ethernet_ipv4() {
            return Err(Error::Unsupported { header: NAME, what: "hardware/protocol other than Ethernet/IPv4" });
        }
        check_len(NAME, packet.buffer.as_ref().len(), ArpPacket::<T>::ETHERNET_IPV4_LEN)?;
        let mac = |a: &[u8]| MacAddr(a.try_into().expect("hardware length 6"));
        let ip = |a: &[u8]| Ipv4Addr::from(<[u8; 4]>::try_from(a).expect("protocol length 4"));
        Ok(ArpRepr {
            operation: packet.operation(),
            source_hardware_addr: mac(packet.sender_hardware_addr()),
            source_protocol_addr: ip(packet.sender_protocol_addr()),
            target_hardware_addr: mac(packet.target_hardware_addr()),
            target_protocol_addr: ip(packet.target_protocol_addr()),
        })
    }

    /// The reply to this request from the owner of `hardware_addr` (sender and target turned around).
    #[inline]
    pub fn reply(&self, hardware_addr: MacAddr) -> ArpRepr {
        ArpRepr {
            operation: ArpOperation::REPLY,
            source_hardware_addr: hardware_addr,
            source_protocol_addr: self.target_protocol_addr,
            target_hardware_addr: self.source_hardware_addr,
            target_protocol_addr: self.source_protocol_addr,
        }
    }

    /// Length of the packet it emits.
    #[inline(always)]
    pub const fn buffer_len(&self) -> usize {
        ArpPacket::<&[u8]>::ETHERNET_IPV4_LEN
    }

    /// Writes the 28-byte packet into `packet`.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut ArpPacket<T>) {
        packet.set_hardware_type(HARDWARE_ETHERNET);
        packet.set_protocol_type(EtherType::IPV4);
        packet.set_hardware_len(6);
        packet.set_protocol_len(4);
        packet.set_operation(self.operation);
        packet.set_sender_hardware_addr(&self.source_hardware_addr.0);
        packet.set_sender_protocol_addr(&self.source_protocol_addr.octets());
        packet.set_target_hardware_addr(&self.target_hardware_addr.0);
        packet.set_target_protocol_addr(&self.target_protocol_addr.octets());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A request as captured: who has 10.0.0.2? tell 10.0.0.1 (52:54:00:12:34:56).
    const REQUEST: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 10, 0, 0, 1, 0, 0, 0, 0, 0,
        0, 10, 0, 0, 2,
    ];

    #[test]
    fn reads_a_captured_request_and_writes_the_reply() {
        let p = ArpPacket::new_checked(&REQUEST[..]).unwrap();
        assert!(p.is_ethernet_ipv4());
        assert_eq!(p.operation(), ArpOperation::REQUEST);
        assert_eq!(p.sender_protocol_addr(), &[10, 0, 0, 1]);
        assert_eq!(p.target_protocol_addr(), &[10, 0, 0, 2]);
        let req = ArpRepr::parse(&p).unwrap();
        assert_eq!(req.source_hardware_addr, MacAddr([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]));
        let mut b = [0u8; 28];
        req.reply(MacAddr([2, 0, 0, 0, 0, 2])).emit(&mut ArpPacket::new_unchecked(&mut b[..]));
        let want: [u8; 28] = [
            0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02, 2, 0, 0, 0, 0, 2, 10, 0, 0, 2, 0x52, 0x54, 0x00, 0x12,
            0x34, 0x56, 10, 0, 0, 1,
        ];
        assert_eq!(b, want);
    }

    #[test]
    fn other_address_kinds_are_read_but_not_represented() {
        // Hardware length 8 and protocol length 16: 8 + 2 * 24 = 56 bytes.
        let mut b = [0u8; 56];
        b[..8].copy_from_slice(&[0x00, 0x06, 0x86, 0xdd, 8, 16, 0, 1]);
        b[16..32].copy_from_slice(&[0xaa; 16]);
        let p = ArpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(p.sender_protocol_addr(), &[0xaa; 16]);
        assert!(matches!(ArpRepr::parse(&p), Err(Error::Unsupported { .. })));
        assert!(matches!(ArpPacket::new_checked(&b[..55]), Err(Error::Truncated { need: 56, have: 55, .. })));
    }

    proptest! {
        #[test]
        fn rejects_every_truncation(cut in 0usize..28) {
            prop_assert!(
                matches!(ArpPacket::new_checked(&REQUEST[..cut]), Err(Error::Truncated { have, .. }) if have == cut),
                "a {}-byte prefix was accepted", cut
            );
        }

        #[test]
        fn repr_round_trips(op: u16, sha: [u8; 6], spa: [u8; 4], tha: [u8; 6], tpa: [u8; 4]) {
            let repr = ArpRepr {
                operation: ArpOperation(op),
                source_hardware_addr: MacAddr(sha),
                source_protocol_addr: spa.into(),
                target_hardware_addr: MacAddr(tha),
                target_protocol_addr: tpa.into(),
            };
            let mut b = vec![0u8; repr.buffer_len()];
            repr.emit(&mut ArpPacket::new_unchecked(&mut b[..]));
            prop_assert_eq!(ArpRepr::parse(&ArpPacket::new_checked(&b[..]).unwrap()), Ok(repr));
        }
    }
}
