//! TCP segments (RFC 9293): the fixed header; options are carried (the data offset covers them), not parsed.
//!
//! TCP has no length field: the segment is the view's whole buffer, so give the view the IP payload exactly.

use super::checksum::Sum;
use super::{check_len, field, Error, Result};

/// Byte offsets and bit fields of the TCP header.
mod field_at {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const SEQ_NUM: usize = 4;
    pub const ACK_NUM: usize = 8;
    /// Data offset (high nibble) and reserved bits.
    pub const DATA_OFFSET: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: usize = 14;
    pub const CHECKSUM: usize = 16;
    pub const URGENT: usize = 18;
    pub const OPTIONS: usize = 20;

    pub const DATA_OFFSET_SHIFT: u32 = 4;
}

const NAME: &str = "TCP";

/// The control bits of a TCP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    /// No more data from the sender.
    pub const FIN: TcpFlags = TcpFlags(0x01);
    /// Synchronize sequence numbers.
    pub const SYN: TcpFlags = TcpFlags(0x02);
    /// Reset the connection.
    pub const RST: TcpFlags = TcpFlags(0x04);
    /// Push.
    pub const PSH: TcpFlags = TcpFlags(0x08);
    /// The acknowledgment number is valid.
    pub const ACK: TcpFlags = TcpFlags(0x10);
    /// The urgent pointer is valid.
    pub const URG: TcpFlags = TcpFlags(0x20);
    /// ECN echo.
    pub const ECE: TcpFlags = TcpFlags(0x40);
    /// Congestion window reduced.
    pub const CWR: TcpFlags = TcpFlags(0x80);

    /// Every bit of `other` is set.
    #[inline(always)]
    pub fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Both sets of bits.
    #[inline(always)]
    pub fn union(self, other: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | other.0)
    }
}

/// A view of a TCP segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Length of the header without options.
    pub const MIN_HEADER_LEN: usize = field_at::OPTIONS;

    /// A view without checks.
    #[inline(always)]
    pub fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }

    /// A view of `buffer` if it holds a header whose data offset is at least 20 bytes and within the buffer.
    #[inline(always)]
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = TcpPacket { buffer };
        let have = p.buffer.as_ref().len();
        check_len(NAME, have, field_at::OPTIONS)?;
        let hlen = p.header_len();
        if hlen < field_at::OPTIONS {
            return Err(Error::BadLength { header: NAME, len: hlen, min: field_at::OPTIONS });
        }
        check_len(NAME, have, hlen)?;
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

    /// Sequence number.
    #[inline(always)]
    pub fn seq_number(&self) -> u32 {
        field::get32(self.buffer.as_ref(), field_at::SEQ_NUM)
    }

    /// Acknowledgment number.
    #[inline(always)]
    pub fn ack_number(&self) -> u32 {
        field::get32(self.buffer.as_ref(), field_at::ACK_NUM)
    }

    /// Header length in bytes (data offset x 4), options included.
    #[inline(always)]
    pub fn header_len(&self) -> usize {
        (self.buffer.as_ref()[field_at::DATA_OFFSET] >> field_at::DATA_OFFSET_SHIFT) as usize * 4
    }

    /// Control bits.
    #[inline(always)]
    pub fn flags(&self) -> TcpFlags {
        TcpFlags(self.buffer.as_ref()[field_at::FLAGS])
    }

    /// Receive window.
    #[inline(always)]
    pub fn window_len(&self) -> u16 {
        field::get16(self.buffer.as_ref(), field_at::WINDOW)
    }

    /// Checksum field.
    #[inline(always)]
    pub fn checksum(&self) -> u16 {
        field::get16(self.buffer.as_ref(), field_at::CHECKSUM)
    }

    /// Urgent pointer.
    #[inline(always)]
    pub fn urgent_at(&self) -> u16 {
        field::get16(self.buffer.as_ref(), field_at::URGENT)
    }

    /// The checksum the segment needs with the pseudo-header sum `pseudo` (the field's value is left out).
    #[inline(always)]
    pub fn compute_checksum(&self, pseudo: Sum) -> u16 {
        Sum::of(self.buffer.as_ref()).sub_word(self.checksum()).add(pseudo).checksum()
    }

    /// The checksum field is right for `pseudo`.
    #[inline(always)]
    pub fn verify_checksum(&self, pseudo: Sum) -> bool {
        Sum::of(self.buffer.as_ref()).add(pseudo).folded() == 0xffff
    }

    /// The data after the header (and its options).
    #[inline(always)]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
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

    /// Sets the sequence number.
    #[inline(always)]
    pub fn set_seq_number(&mut self, n: u32) {
        field::set32(self.buffer.as_mut(), field_at::SEQ_NUM, n);
    }

    /// Sets the acknowledgment number.
    #[inline(always)]
    pub fn set_ack_number(&mut self, n: u32) {
        field::set32(self.buffer.as_mut(), field_at::ACK_NUM, n);
    }

    /// Sets the header length in bytes (a multiple of 4, 20..=60); the reserved bits are cleared.
    #[inline(always)]
    pub fn set_header_len(&mut self, len: usize) {
        debug_assert!(len.is_multiple_of(4) && (20..=60).contains(&len), "TCP header length {len}");
        self.buffer.as_mut()[field_at::DATA_OFFSET] = ((len / 4) as u8) << field_at::DATA_OFFSET_SHIFT;
    }

    /// Sets the control bits.
    #[inline(always)]
    pub fn set_flags(&mut self, f: TcpFlags) {
        self.buffer.as_mut()[field_at::FLAGS] = f.0;
    }

    /// Sets the receive window.
    #[inline(always)]
    pub fn set_window_len(&mut self, w: u16) {
        field::set16(self.buffer.as_mut(), field_at::WINDOW, w);
    }

    /// Sets the checksum field.
    #[inline(always)]
    pub fn set_checksum(&mut self, c: u16) {
        field::set16(self.buffer.as_mut(), field_at::CHECKSUM, c);
    }

    /// Sets the urgent pointer.
    #[inline(always)]
    pub fn set_urgent_at(&mut self, u: u16) {
        field::set16(self.buffer.as_mut(), field_at::URGENT, u);
    }

    /// Computes and writes the checksum for `pseudo`.
    #[inline(always)]
    pub fn fill_checksum(&mut self, pseudo: Sum) {
        let c = self.compute_checksum(pseudo);
        self.set_checksum(c);
    }

    /// The data after the header, writable.
    #[inline(always)]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        &mut self.buffer.as_mut()[start..]
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::checksum::{pseudo_header_v4, Sum};
    use crate::IpProtocol;
    use proptest::prelude::*;

    /// A SYN from 192.0.2.1:40000 to 192.0.2.2:80 as captured, with one MSS option (1460), window 64240, and its
    /// checksum worked out by hand: pseudo header (c000+0201+c000+0202+0006+0018 = 0x18421) plus the header
    /// words (9c40+0050+1234+5678+0000+0000+6002+faf0+0000+0000+0204+05b4 = 0x267e6) = 0x3ec07, folded 0xec0a,
    /// complement 0x13f5.
    const SYN: [u8; 24] = [
        0x9c, 0x40, 0x00, 0x50, 0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0, 0x60, 0x02, 0xfa, 0xf0, 0x13, 0xf5, 0, 0, 0x02,
        0x04, 0x05, 0xb4,
    ];

    fn pseudo() -> Sum {
        pseudo_header_v4(Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(192, 0, 2, 2), IpProtocol::TCP, 24)
    }

    #[test]
    fn reads_a_captured_syn() {
        let p = TcpPacket::new_checked(&SYN[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port(), p.seq_number(), p.ack_number()), (40000, 80, 0x1234_5678, 0));
        assert_eq!((p.header_len(), p.flags(), p.window_len(), p.urgent_at()), (24, TcpFlags::SYN, 64240, 0));
        assert!(p.flags().contains(TcpFlags::SYN) && !p.flags().contains(TcpFlags::ACK));
        assert_eq!(p.checksum(), 0x13f5);
        assert!(p.verify_checksum(pseudo()));
        assert_eq!(p.compute_checksum(pseudo()), 0x13f5);
        assert!(p.payload().is_empty());
    }

    #[test]
    fn writes_a_syn_ack() {
        let mut b = [0u8; 20];
        let mut p = TcpPacket::new_unchecked(&mut b[..]);
        p.set_src_port(80);
        p.set_dst_port(40000);
        p.set_seq_number(1);
        p.set_ack_number(0x1234_5679);
        p.set_header_len(20);
        p.set_flags(TcpFlags::SYN.union(TcpFlags::ACK));
        p.set_window_len(65535);
        p.set_urgent_at(0);
        let pseudo = pseudo_header_v4(Ipv4Addr::new(192, 0, 2, 2), Ipv4Addr::new(192, 0, 2, 1), IpProtocol::TCP, 20);
        p.fill_checksum(pseudo);
        assert!(p.verify_checksum(pseudo));
        assert_eq!(&b[12..14], &[0x50, 0x12]);
        p = TcpPacket::new_unchecked(&mut b[..]);
        p.swap_ports();
        assert_eq!((p.src_port(), p.dst_port()), (40000, 80));
        assert!(p.verify_checksum(pseudo), "swapping ports keeps the sum");
    }

    #[test]
    fn rejects_a_short_data_offset() {
        let mut b = SYN;
        b[12] = 0x40;
        assert_eq!(TcpPacket::new_checked(&b[..]), Err(Error::BadLength { header: "TCP", len: 16, min: 20 }));
    }

    proptest! {
        #[test]
        fn rejects_every_truncation(cut in 0usize..24) {
            prop_assert!(
                matches!(TcpPacket::new_checked(&SYN[..cut]), Err(Error::Truncated { have, .. }) if have == cut),
                "a {}-byte prefix was accepted", cut
            );
        }
    }
}
