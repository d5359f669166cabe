//! What the header's offload fields hold: the flag bits, the packet type bits, the TX offload lengths.

/// Offload and status flags carried in [`Mbuf::ol_flags`](crate::Mbuf::ol_flags) (values are ours; names follow DPDK's RTE_MBUF_F_*).
pub mod ol_flags {
    /// RX: the NIC computed the RSS hash in `rss_hash`.
    pub const RX_RSS_HASH: u64 = 1 << 1;
    /// RX: a VLAN tag was stripped into `vlan_tci`.
    pub const RX_VLAN_STRIPPED: u64 = 1 << 6;
    /// RX: the IPv4 header checksum is good.
    pub const RX_IP_CKSUM_GOOD: u64 = 1 << 7;
    /// RX: the IPv4 header checksum is bad.
    pub const RX_IP_CKSUM_BAD: u64 = 1 << 4;
    /// RX: the L4 (TCP/UDP) checksum is good.
    pub const RX_L4_CKSUM_GOOD: u64 = 1 << 8;
    /// RX: the L4 (TCP/UDP) checksum is bad.
    pub const RX_L4_CKSUM_BAD: u64 = 1 << 3;
    /// TX: insert the VLAN tag from `vlan_tci`.
    pub const TX_VLAN: u64 = 1 << 57;
    /// TX: the packet is IPv4.
    pub const TX_IPV4: u64 = 1 << 55;
    /// TX: the packet is IPv6.
    pub const TX_IPV6: u64 = 1 << 56;
    /// TX: compute the IPv4 header checksum.
    pub const TX_IP_CKSUM: u64 = 1 << 54;
    /// TX: compute the TCP checksum.
    pub const TX_TCP_CKSUM: u64 = 1 << 52;
    /// TX: compute the UDP checksum.
    pub const TX_UDP_CKSUM: u64 = 3 << 52;
    /// TX: TCP segmentation offload (`tso_segsz`).
    pub const TX_TCP_SEG: u64 = 1 << 50;
}

/// Packet type bits in [`Mbuf::packet_type`](crate::Mbuf::packet_type) (layout after DPDK's RTE_PTYPE_*: L2 in bits 0-3, L3 4-7, L4 8-11).
pub mod ptype {
    /// Ethernet.
    pub const L2_ETHER: u32 = 0x1;
    /// IPv4 (any options).
    pub const L3_IPV4: u32 = 0x10;
    /// IPv6.
    pub const L3_IPV6: u32 = 0x40;
    /// TCP.
    pub const L4_TCP: u32 = 0x100;
    /// UDP.
    pub const L4_UDP: u32 = 0x200;
    /// ICMP.
    pub const L4_ICMP: u32 = 0x500;
    /// Mask of the L3 field.
    pub const L3_MASK: u32 = 0xf0;
    /// Mask of the L4 field.
    pub const L4_MASK: u32 = 0xf00;
}

/// Header lengths for TX offloads, packed into one word like DPDK's `tx_offload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TxOffload {
    /// L2 header length (7 bits).
    pub l2_len: u8,
    /// L3 header length (9 bits).
    pub l3_len: u16,
    /// L4 header length (8 bits).
    pub l4_len: u8,
    /// TSO segment size (16 bits).
    pub tso_segsz: u16,
}

impl TxOffload {
    pub(crate) fn to_bits(self) -> u64 {
        (self.l2_len as u64 & 0x7f)
            | ((self.l3_len as u64 & 0x1ff) << 7)
            | ((self.l4_len as u64) << 16)
            | ((self.tso_segsz as u64) << 24)
    }

    pub(crate) fn from_bits(bits: u64) -> Self {
        TxOffload {
            l2_len: (bits & 0x7f) as u8,
            l3_len: ((bits >> 7) & 0x1ff) as u16,
            l4_len: (bits >> 16) as u8,
            tso_segsz: (bits >> 24) as u16,
        }
    }
}
