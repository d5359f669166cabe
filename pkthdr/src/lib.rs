//! Packet headers as zero-copy views over byte buffers, in the spirit of smoltcp's `wire`: what forwarding engines
//! (l3fwd, testpmd-rs) and stacks (netstack) parse and build per packet. Safe code only (`forbid(unsafe_code)`):
//! every access is a bounds-checked slice access that `new_checked` makes unable to fail. [`MacAddr`] is the port
//! API's MAC address type too (`pktio::MacAddr`).
//!
//! Each header has a view `XxxPacket<T: AsRef<[u8]>>` (or [`EthernetFrame`]) over a buffer: `new_checked` checks
//! the lengths (and version and header-length fields) once so that the named getters after it cannot panic,
//! `new_unchecked` skips that for callers that checked already; setters need `T: AsMut<[u8]>`; `payload()` and
//! `payload_mut()` give what follows the header. The common headers also have a small `Repr` (the header's
//! meaning as plain values) with `parse` and `emit`. [`checksum`] holds the Internet checksum, pseudo-header sums
//! and the RFC 1624 incremental update.
//!
//! Everything is `#[inline]` and allocation-free: a view compiles to the loads and stores of the fields touched,
//! so forwarding loops can use it per packet. Errors are the small `Copy` enum [`Error`].
//!
//! An l3fwd-style step: parse, decrement the TTL (incremental checksum update), rewrite the MACs.
//!
//! ```
//! use std::net::Ipv4Addr;
//! use pkthdr::{EtherType, EthernetFrame, EthernetRepr, IpProtocol, Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr};
//! use pkthdr::MacAddr;
//!
//! // A UDP/IPv4 frame with 4 bytes of payload, built from Reprs.
//! let mut buf = vec![0u8; 14 + 20 + 8 + 4];
//! let (a, b) = (MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]));
//! let eth = EthernetRepr { src_addr: a, dst_addr: b, ethertype: EtherType::IPV4 };
//! eth.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
//! let (src_addr, dst_addr) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 1, 0, 1));
//! let ip = Ipv4Repr { src_addr, dst_addr, protocol: IpProtocol::UDP, payload_len: 12, ttl: 64 };
//! let mut ip_packet = Ipv4Packet::new_unchecked(&mut buf[14..]);
//! ip.emit(&mut ip_packet);
//! let pseudo = ip_packet.pseudo_header(12);
//! let mut udp = UdpPacket::new_unchecked(ip_packet.payload_mut());
//! UdpRepr { src_port: 5000, dst_port: 53 }.emit(&mut udp, 4);
//! udp.payload_mut().copy_from_slice(b"ping");
//! udp.fill_checksum(pseudo);
//!
//! // Forwarding it.
//! let mut frame = EthernetFrame::new_checked(&mut buf[..]).unwrap();
//! assert_eq!(frame.ethertype(), EtherType::IPV4);
//! let mut packet = Ipv4Packet::new_checked(frame.payload_mut()).unwrap();
//! assert_eq!(packet.dst_addr(), Ipv4Addr::new(10, 1, 0, 1)); // the route lookup key
//! assert!(packet.decrement_ttl());
//! assert!(packet.verify_checksum());
//! frame.set_dst_addr(MacAddr([2, 0, 0, 0, 0, 3]));
//! frame.set_src_addr(b);
//! assert_eq!(Ipv4Packet::new_checked(&buf[14..]).unwrap().ttl(), 63);
//! ```
//!
//! Not supported: IPv4 options and IPv6 extension headers are skipped, not parsed; TCP options are not parsed;
//! reassembly, ICMP messages other than echo, and ARP for hardware or protocol types other than Ethernet/IPv4.

#![forbid(unsafe_code)]

pub mod arp;
pub mod checksum;
pub mod ethernet;
pub mod icmp;
pub mod ipv4;
pub mod ipv6;
pub mod tcp;
pub mod udp;

pub use arp::{ArpOperation, ArpPacket, ArpRepr};
pub use checksum::Sum;
pub use ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr, MacParseError, VlanTag};
pub use icmp::{IcmpEchoRepr, IcmpPacket, IcmpType};
pub use ipv4::{Ipv4Packet, Ipv4Repr};
pub use ipv6::{Ipv6Packet, Ipv6Repr};
pub use tcp::{TcpFlags, TcpPacket};
pub use udp::{UdpPacket, UdpRepr};

/// Why a buffer is not a valid header of the kind asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The buffer ends before the header (or the length its fields give) does.
    #[error("{header}: truncated, {need} bytes needed but the buffer holds {have}")]
    Truncated {
        /// Which header.
        header: &'static str,
        /// Bytes the header and its length fields need.
        need: usize,
        /// Bytes the buffer holds.
        have: usize,
    },
    /// The version field is not the one of this header.
    #[error("{header}: version field is {found}, expected {expected}")]
    BadVersion {
        /// Which header.
        header: &'static str,
        /// Version found.
        found: u8,
        /// Version this view reads.
        expected: u8,
    },
    /// A header-length field (IPv4 IHL, TCP data offset) or total-length field is below the fixed header size.
    #[error("{header}: length field gives {len} bytes, less than the {min}-byte minimum header")]
    BadLength {
        /// Which header.
        header: &'static str,
        /// Length the field gives, in bytes.
        len: usize,
        /// Smallest valid length.
        min: usize,
    },
    /// The checksum does not match the data.
    #[error("{header}: checksum {found:#06x} is wrong, the data sums to {computed:#06x}")]
    BadChecksum {
        /// Which header.
        header: &'static str,
        /// Checksum in the packet.
        found: u16,
        /// Checksum the data needs.
        computed: u16,
    },
    /// A valid header that this module's `Repr` does not describe (e.g. ARP over non-Ethernet hardware, an IPv4
    /// fragment, an ICMP message other than echo).
    #[error("{header}: {what} is not supported")]
    Unsupported {
        /// Which header.
        header: &'static str,
        /// What it carried.
        what: &'static str,
    },
}

/// The result of parsing a header.
pub type Result<T> = std::result::Result<T, Error>;

/// An IP protocol number (IPv4 protocol, IPv6 next header), as named by IANA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpProtocol(pub u8);

impl IpProtocol {
    /// Internet Control Message Protocol.
    pub const ICMP: IpProtocol = IpProtocol(1);
    /// Transmission Control Protocol.
    pub const TCP: IpProtocol = IpProtocol(6);
    /// User Datagram Protocol.
    pub const UDP: IpProtocol = IpProtocol(17);
    /// ICMP for IPv6.
    pub const ICMPV6: IpProtocol = IpProtocol(58);
}

/// The buffer length check of every `new_checked`: at least `need` bytes.
#[inline(always)]
fn check_len(header: &'static str, have: usize, need: usize) -> Result<()> {
    if have < need {
        Err(Error::Truncated { header, need, have })
    } else {
        Ok(())
    }
}

/// Big-endian field access by byte offset: the one place the views turn bytes into numbers.
mod field {
    #[inline(always)]
    pub(super) fn get16(d: &[u8], at: usize) -> u16 {
        u16::from_be_bytes([d[at], d[at + 1]])
    }

    #[inline(always)]
    pub(super) fn set16(d: &mut [u8], at: usize, v: u16) {
        d[at..at + 2].copy_from_slice(&v.to_be_bytes());
    }

    #[inline(always)]
    pub(super) fn get32(d: &[u8], at: usize) -> u32 {
        u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
    }

    #[inline(always)]
    pub(super) fn set32(d: &mut [u8], at: usize, v: u32) {
        d[at..at + 4].copy_from_slice(&v.to_be_bytes());
    }

    #[inline(always)]
    pub(super) fn array<const N: usize>(d: &[u8], at: usize) -> [u8; N] {
        d[at..at + N].try_into().expect("N bytes")
    }
}
