//! Ethernet II frames (without FCS) and IEEE 802.1Q / 802.1ad VLAN tags.

use std::fmt;
use std::str::FromStr;

use super::{check_len, field, Result};

/// An Ethernet MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);
    /// 00:00:00:00:00:00.
    pub const ZERO: MacAddr = MacAddr([0; 6]);

    /// The octets.
    pub fn octets(&self) -> [u8; 6] {
        self.0
    }

    /// Group (multicast or broadcast) bit set.
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 1 != 0
    }

    /// Locally administered bit set.
    pub fn is_local(&self) -> bool {
        self.0[0] & 2 != 0
    }

    /// A locally administered unicast address derived from `seed`, stable across runs (software ports).
    pub fn local_from(seed: u32) -> MacAddr {
        let b = seed.to_be_bytes();
        MacAddr([0x02, 0x70, b[0], b[1], b[2], b[3]])
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(f, "{:02X}:{:02X}:{:02X}:{:02X}:{:02X}:{:02X}", m[0], m[1], m[2], m[3], m[4], m[5])
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Why a MAC address did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a MAC address (expected six hex octets like 02:00:00:00:00:01)")]
pub struct MacParseError(pub String);

impl FromStr for MacAddr {
    type Err = MacParseError;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        let parts: Vec<&str> = s.trim().split([':', '-']).collect();
        if parts.len() != 6 {
            return Err(MacParseError(s.to_string()));
        }
        let mut out = [0u8; 6];
        for (o, p) in out.iter_mut().zip(parts) {
            if p.is_empty() || p.len() > 2 {
                return Err(MacParseError(s.to_string()));
            }
            *o = u8::from_str_radix(p, 16).map_err(|_| MacParseError(s.to_string()))?;
        }
        Ok(MacAddr(out))
    }
}

/// An EtherType, as named by IEEE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EtherType(pub u16);

impl EtherType {
    /// Internet Protocol version 4.
    pub const IPV4: EtherType = EtherType(0x0800);
    /// Address Resolution Protocol.
    pub const ARP: EtherType = EtherType(0x0806);
    /// Internet Protocol version 6.
    pub const IPV6: EtherType = EtherType(0x86dd);
    /// IEEE 802.1Q customer VLAN tag.
    pub const VLAN: EtherType = EtherType(0x8100);
    /// IEEE 802.1ad service VLAN tag (QinQ outer tag).
    pub const QINQ: EtherType = EtherType(0x88a8);

    /// A VLAN tag (802.1Q or 802.1ad) follows instead of the payload.
    #[inline(always)]
    pub fn is_vlan(self) -> bool {
        self == EtherType::VLAN || self == EtherType::QINQ
    }
}

/// Byte offsets of the Ethernet header fields.
mod field_at {
    use std::ops::Range;
    pub const DESTINATION: Range<usize> = 0..6;
    pub const SOURCE: Range<usize> = 6..12;
    pub const ETHERTYPE: usize = 12;
    pub const PAYLOAD: usize = 14;
}

/// A view of an Ethernet II frame: destination, source, EtherType, payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Length of the untagged header.
    pub const HEADER_LEN: usize = field_at::PAYLOAD;

    /// A view without checks; the getters panic if `buffer` is shorter than [`Self::HEADER_LEN`].
    #[inline(always)]
    pub fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }

    /// A view of `buffer` if it holds at least the 14-byte header.
    #[inline(always)]
    pub fn new_checked(buffer: T) -> Result<Self> {
        check_len("Ethernet", buffer.as_ref().len(), Self::HEADER_LEN)?;
        Ok(EthernetFrame { buffer })
    }

    /// The buffer back.
    #[inline(always)]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The buffer length needed for a frame with `payload_len` bytes of payload.
    #[inline(always)]
    pub const fn buffer_len(payload_len: usize) -> usize {
        field_at::PAYLOAD + payload_len
    }

    /// Destination address.
    #[inline(always)]
    pub fn dst_addr(&self) -> MacAddr {
        MacAddr(field::array(self.buffer.as_ref(), field_at::DESTINATION.start))
    }

    /// Source address.
    #[inline(always)]
    pub fn src_addr(&self) -> MacAddr {
        MacAddr(field::array(self.buffer.as_ref(), field_at::SOURCE.start))
    }

    /// The EtherType field (a VLAN TPID if the frame is tagged).
    #[inline(always)]
    pub fn ethertype(&self) -> EtherType {
        EtherType(field::get16(self.buffer.as_ref(), field_at::ETHERTYPE))
    }

    /// The L2 header length and the EtherType of the payload after up to two VLAN tags (802.1Q, or an 802.1ad
    /// outer tag with an inner one). A third tag is returned as the EtherType, not skipped.
    #[inline(always)]
    pub fn untagged(&self) -> Result<(usize, EtherType)> {
        let d = self.buffer.as_ref();
        let mut len = field_at::PAYLOAD;
        let mut ty = self.ethertype();
        for _ in 0..2 {
            if !ty.is_vlan() {
                break;
            }
            check_len("VLAN tag", d.len(), len + VlanTag::<&[u8]>::HEADER_LEN)?;
            ty = VlanTag::new_unchecked(&d[len..]).ethertype();
            len += VlanTag::<&[u8]>::HEADER_LEN;
        }
        Ok((len, ty))
    }

    /// What follows the 14-byte header (a VLAN tag, if tagged).
    #[inline(always)]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field_at::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination address.
    #[inline(always)]
    pub fn set_dst_addr(&mut self, a: MacAddr) {
        self.buffer.as_mut()[field_at::DESTINATION].copy_from_slice(&a.0);
    }

    /// Sets the source address.
    #[inline(always)]
    pub fn set_src_addr(&mut self, a: MacAddr) {
        self.buffer.as_mut()[field_at::SOURCE].copy_from_slice(&a.0);
    }

    /// Sets the EtherType field.
    #[inline(always)]
    pub fn set_ethertype(&mut self, t: EtherType) {
        field::set16(self.buffer.as_mut(), field_at::ETHERTYPE, t.0);
    }

    /// Swaps destination and source. One 8-byte and one 4-byte load and store over the 12 address bytes: no
    /// partial overlapping accesses that would defeat store forwarding.
    #[inline(always)]
    pub fn swap_addrs(&mut self) {
        let h: &mut [u8; 12] = (&mut self.buffer.as_mut()[..field_at::SOURCE.end]).try_into().expect("12 bytes");
        let lo = u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
        let hi = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as u64;
        let dst = lo & 0xffff_ffff_ffff;
        let src = (lo >> 48) | (hi << 16);
        h[..8].copy_from_slice(&(src | (dst << 48)).to_le_bytes());
        h[8..].copy_from_slice(&((dst >> 16) as u32).to_le_bytes());
    }

    /// Sets destination and source at once from the 12 bytes `dst ++ src` (one copy, as a forwarding loop
    /// rewriting every frame wants).
    #[inline(always)]
    pub fn set_addrs(&mut self, dst_then_src: &[u8; 12]) {
        self.buffer.as_mut()[..field_at::SOURCE.end].copy_from_slice(dst_then_src);
    }

    /// What follows the 14-byte header, writable.
    #[inline(always)]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field_at::PAYLOAD..]
    }
}

/// Byte offsets in a VLAN tag (the 4 bytes after the TPID, which is the EtherType field before them).
mod vlan_at {
    pub const TCI: usize = 0;
    pub const ETHERTYPE: usize = 2;
    pub const PAYLOAD: usize = 4;
    /// Priority code point: the top 3 bits of the TCI.
    pub const PCP_SHIFT: u32 = 13;
    /// Drop eligible indicator bit of the TCI.
    pub const DEI: u16 = 1 << 12;
    /// VLAN identifier: the low 12 bits of the TCI.
    pub const VID: u16 = 0x0fff;
}

/// A view of a VLAN tag: the tag control information (priority, drop eligible, VLAN id) and the EtherType of
/// what follows. Its TPID (0x8100 or 0x88a8) is the EtherType field in front of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanTag<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VlanTag<T> {
    /// Length of the tag after the TPID.
    pub const HEADER_LEN: usize = vlan_at::PAYLOAD;

    /// A view without checks.
    #[inline(always)]
    pub fn new_unchecked(buffer: T) -> Self {
        VlanTag { buffer }
    }

    /// A view of `buffer` if it holds the 4 bytes of a tag.
    #[inline(always)]
    pub fn new_checked(buffer: T) -> Result<Self> {
        check_len("VLAN tag", buffer.as_ref().len(), Self::HEADER_LEN)?;
        Ok(VlanTag { buffer })
    }

    /// The buffer back.
    #[inline(always)]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Tag control information (PCP, DEI, VID together).
    #[inline(always)]
    pub fn tci(&self) -> u16 {
        field::get16(self.buffer.as_ref(), vlan_at::TCI)
    }

    /// Priority code point (0..=7).
    #[inline(always)]
    pub fn pcp(&self) -> u8 {
        (self.tci() >> vlan_at::PCP_SHIFT) as u8
    }

    /// Drop eligible indicator.
    #[inline(always)]
    pub fn dei(&self) -> bool {
        self.tci() & vlan_at::DEI != 0
    }

    /// VLAN identifier (0..=4095).
    #[inline(always)]
    pub fn vid(&self) -> u16 {
        self.tci() & vlan_at::VID
    }

    /// EtherType of what follows the tag.
    #[inline(always)]
    pub fn ethertype(&self) -> EtherType {
        EtherType(field::get16(self.buffer.as_ref(), vlan_at::ETHERTYPE))
    }

    /// What follows the tag.
    #[inline(always)]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[vlan_at::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlanTag<T> {
    /// Sets the tag control information from priority, drop eligibility and VLAN id (`pcp` is cut to 3 bits,
    /// `vid` to 12).
    #[inline(always)]
    pub fn set_tci(&mut self, pcp: u8, dei: bool, vid: u16) {
        // Shifting a u16 left by 13 keeps exactly pcp's low 3 bits.
        let tci = ((pcp as u16) << vlan_at::PCP_SHIFT) | if dei { vlan_at::DEI } else { 0 } | (vid & vlan_at::VID);
        field::set16(self.buffer.as_mut(), vlan_at::TCI, tci);
    }

    /// Sets the EtherType of what follows.
    #[inline(always)]
    pub fn set_ethertype(&mut self, t: EtherType) {
        field::set16(self.buffer.as_mut(), vlan_at::ETHERTYPE, t.0);
    }

    /// What follows the tag, writable.
    #[inline(always)]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[vlan_at::PAYLOAD..]
    }
}

/// An untagged Ethernet header as values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetRepr {
    /// Source address.
    pub src_addr: MacAddr,
    /// Destination address.
    pub dst_addr: MacAddr,
    /// EtherType.
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// The header of `frame`.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> Result<Self> {
        check_len("Ethernet", frame.buffer.as_ref().len(), EthernetFrame::<T>::HEADER_LEN)?;
        Ok(EthernetRepr { src_addr: frame.src_addr(), dst_addr: frame.dst_addr(), ethertype: frame.ethertype() })
    }

    /// Length of the header it emits.
    #[inline(always)]
    pub const fn buffer_len(&self) -> usize {
        field_at::PAYLOAD
    }

    /// Writes the header into `frame` (at least 14 bytes), leaving the payload alone.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) {
        frame.set_dst_addr(self.dst_addr);
        frame.set_src_addr(self.src_addr);
        frame.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use proptest::prelude::*;

    /// An ARP request frame's first bytes as a capture shows them: broadcast destination, source 52:54:00:12:34:56,
    /// EtherType 0x0806.
    const ARP_HEAD: [u8; 16] =
        [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x08, 0x06, 0x00, 0x01];

    #[test]
    fn reads_a_captured_header() {
        let f = EthernetFrame::new_checked(&ARP_HEAD[..]).unwrap();
        assert_eq!(f.dst_addr(), MacAddr::BROADCAST);
        assert_eq!(f.src_addr(), MacAddr([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]));
        assert_eq!(f.ethertype(), EtherType::ARP);
        assert_eq!(f.payload(), &[0x00, 0x01]);
        assert_eq!(f.untagged(), Ok((14, EtherType::ARP)));
    }

    #[test]
    fn writes_fields_and_swaps_addresses() {
        let mut b = [0u8; 14];
        let mut f = EthernetFrame::new_unchecked(&mut b[..]);
        f.set_dst_addr(MacAddr([1, 2, 3, 4, 5, 6]));
        f.set_src_addr(MacAddr([7, 8, 9, 10, 11, 12]));
        f.set_ethertype(EtherType::IPV6);
        f.swap_addrs();
        assert_eq!(b, [7, 8, 9, 10, 11, 12, 1, 2, 3, 4, 5, 6, 0x86, 0xdd]);
    }

    #[test]
    fn walks_qinq_tags() {
        // 802.1ad outer tag (PCP 5, VID 100), 802.1Q inner tag (DEI, VID 4095), then IPv4.
        let mut b = [0u8; 22];
        b[12..14].copy_from_slice(&[0x88, 0xa8]);
        b[14..18].copy_from_slice(&[0xa0, 0x64, 0x81, 0x00]);
        b[18..22].copy_from_slice(&[0x1f, 0xff, 0x08, 0x00]);
        let f = EthernetFrame::new_checked(&b[..]).unwrap();
        assert_eq!(f.untagged(), Ok((22, EtherType::IPV4)));
        let outer = VlanTag::new_checked(f.payload()).unwrap();
        assert_eq!((outer.pcp(), outer.dei(), outer.vid(), outer.ethertype()), (5, false, 100, EtherType::VLAN));
        let inner = VlanTag::new_checked(outer.payload()).unwrap();
        assert_eq!((inner.pcp(), inner.dei(), inner.vid(), inner.ethertype()), (0, true, 4095, EtherType::IPV4));
        let mut t = [0u8; 4];
        VlanTag::new_unchecked(&mut t[..]).set_tci(5, false, 100);
        assert_eq!(&t[..2], &[0xa0, 0x64]);
        VlanTag::new_unchecked(&mut t[..]).set_tci(0xff, true, 0xffff);
        assert_eq!(&t[..2], &[0xff, 0xff], "out-of-range values are cut, not spilled");
        VlanTag::new_unchecked(&mut t[..]).set_tci(8, false, 0x1001);
        assert_eq!(&t[..2], &[0x00, 0x01]);
        // A tag cut short is truncation, not a wrong EtherType.
        assert!(matches!(
            EthernetFrame::new_checked(&b[..20]).unwrap().untagged(),
            Err(Error::Truncated { need: 22, have: 20, .. })
        ));
    }

    proptest! {
        #[test]
        fn rejects_every_truncation(len in 0usize..14) {
            let b = [0u8; 14];
            let r = EthernetFrame::new_checked(&b[..len]);
            prop_assert!(
                matches!(r, Err(Error::Truncated { need: 14, have, .. }) if have == len),
                "a truncated header was accepted"
            );
            prop_assert!(VlanTag::new_checked(&b[..len.min(3)]).is_err());
        }

        #[test]
        fn repr_round_trips(
            src: [u8; 6], dst: [u8; 6], ty: u16, payload in proptest::collection::vec(any::<u8>(), 0..32),
        ) {
            let repr = EthernetRepr { src_addr: MacAddr(src), dst_addr: MacAddr(dst), ethertype: EtherType(ty) };
            let mut b = vec![0u8; EthernetFrame::<&[u8]>::buffer_len(payload.len())];
            let mut f = EthernetFrame::new_checked(&mut b[..]).unwrap();
            repr.emit(&mut f);
            f.payload_mut().copy_from_slice(&payload);
            let f = EthernetFrame::new_checked(&b[..]).unwrap();
            prop_assert_eq!(EthernetRepr::parse(&f), Ok(repr));
            prop_assert_eq!(f.payload(), &payload[..]);
        }
    }
}
