//! What a stack counts. Plain `u64`s owned by the one thread that polls the stack: no atomics on the fast path;
//! the control socket reads them from that same thread between bursts.

use std::fmt;

/// Packet, drop and connection counters of one [`Stack`](crate::Stack).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames received from the port.
    pub rx_packets: u64,
    /// Bytes received from the port.
    pub rx_bytes: u64,
    /// Frames handed to the port.
    pub tx_packets: u64,
    /// Bytes handed to the port.
    pub tx_bytes: u64,
    /// ARP requests answered.
    pub arp_replies_sent: u64,
    /// ARP requests sent (resolution and gratuitous).
    pub arp_requests_sent: u64,
    /// ICMP echo requests answered.
    pub icmp_echo_replies: u64,
    /// UDP datagrams delivered to a socket.
    pub udp_rx_datagrams: u64,
    /// UDP datagrams sent.
    pub udp_tx_datagrams: u64,
    /// TCP segments handed to smoltcp.
    pub tcp_rx_segments: u64,
    /// TCP segments smoltcp sent.
    pub tcp_tx_segments: u64,
    /// TCP data segments sent again: an outgoing data segment that ends at or below the highest sequence number
    /// already sent on its connection (smoltcp 0.12 does not count retransmissions itself).
    pub tcp_retransmissions: u64,
    /// Connections established (accepted or connected).
    pub connections_opened: u64,
    /// Connections whose socket was released.
    pub connections_closed: u64,
    /// Drops by reason.
    pub drops: Drops,
}

/// Why packets were dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drops {
    /// Frame shorter than an Ethernet header, or a VLAN-tagged frame.
    pub bad_ethernet: u64,
    /// Ethernet destination neither ours nor broadcast.
    pub not_our_mac: u64,
    /// EtherType other than IPv4 and ARP.
    pub unknown_ethertype: u64,
    /// Malformed ARP, or ARP for another address.
    pub bad_arp: u64,
    /// IPv4 header malformed (version, lengths).
    pub bad_ipv4: u64,
    /// IPv4 header checksum wrong.
    pub ipv4_checksum: u64,
    /// IPv4 destination not ours (no forwarding).
    pub not_for_us: u64,
    /// IPv4 fragments (no reassembly).
    pub fragments: u64,
    /// TTL of zero on arrival.
    pub ttl_expired: u64,
    /// IP protocol other than ICMP, UDP, TCP.
    pub unknown_protocol: u64,
    /// Malformed ICMP or ICMP checksum wrong, or a type other than echo request.
    pub bad_icmp: u64,
    /// Malformed UDP or UDP checksum wrong.
    pub bad_udp: u64,
    /// UDP to a port with no socket.
    pub udp_no_socket: u64,
    /// UDP socket receive queue full.
    pub udp_queue_full: u64,
    /// Packets to an address with no route (off-link and no gateway).
    pub no_route: u64,
    /// Packets queued for an unresolved next hop that overflowed its pending queue or whose resolution failed.
    pub arp_unresolved: u64,
    /// No buffer in the pool for a packet to send.
    pub no_mbuf: u64,
    /// The port's transmit queue was full.
    pub tx_full: u64,
}

impl Counters {
    /// Every drop added up.
    pub fn total_drops(&self) -> u64 {
        self.drops.fields().iter().map(|(_, v)| v).sum()
    }

    /// Every counter as (name, value), in a fixed order: the control socket and Ctrl-C print these.
    pub fn fields(&self) -> Vec<(&'static str, u64)> {
        let mut v = vec![
            ("rx_packets", self.rx_packets),
            ("rx_bytes", self.rx_bytes),
            ("tx_packets", self.tx_packets),
            ("tx_bytes", self.tx_bytes),
            ("arp_replies_sent", self.arp_replies_sent),
            ("arp_requests_sent", self.arp_requests_sent),
            ("icmp_echo_replies", self.icmp_echo_replies),
            ("udp_rx_datagrams", self.udp_rx_datagrams),
            ("udp_tx_datagrams", self.udp_tx_datagrams),
            ("tcp_rx_segments", self.tcp_rx_segments),
            ("tcp_tx_segments", self.tcp_tx_segments),
            ("tcp_retransmissions", self.tcp_retransmissions),
            ("connections_opened", self.connections_opened),
            ("connections_closed", self.connections_closed),
        ];
        v.extend(self.drops.fields());
        v
    }

    /// Adds `other` into `self` (summing lcores).
    pub fn add(&mut self, other: &Counters) {
        macro_rules! sum {
            ($($f:ident),*) => { $(self.$f += other.$f;)* };
        }
        sum!(
            rx_packets,
            rx_bytes,
            tx_packets,
            tx_bytes,
            arp_replies_sent,
            arp_requests_sent,
            icmp_echo_replies,
            udp_rx_datagrams,
            udp_tx_datagrams,
            tcp_rx_segments,
            tcp_tx_segments,
            tcp_retransmissions,
            connections_opened,
            connections_closed
        );
        macro_rules! sum_drops {
            ($($f:ident),*) => { $(self.drops.$f += other.drops.$f;)* };
        }
        sum_drops!(
            bad_ethernet,
            not_our_mac,
            unknown_ethertype,
            bad_arp,
            bad_ipv4,
            ipv4_checksum,
            not_for_us,
            fragments,
            ttl_expired,
            unknown_protocol,
            bad_icmp,
            bad_udp,
            udp_no_socket,
            udp_queue_full,
            no_route,
            arp_unresolved,
            no_mbuf,
            tx_full
        );
    }
}

impl Drops {
    /// Every drop reason as (`drop_` name, value).
    pub fn fields(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("drop_bad_ethernet", self.bad_ethernet),
            ("drop_not_our_mac", self.not_our_mac),
            ("drop_unknown_ethertype", self.unknown_ethertype),
            ("drop_bad_arp", self.bad_arp),
            ("drop_bad_ipv4", self.bad_ipv4),
            ("drop_ipv4_checksum", self.ipv4_checksum),
            ("drop_not_for_us", self.not_for_us),
            ("drop_fragments", self.fragments),
            ("drop_ttl_expired", self.ttl_expired),
            ("drop_unknown_protocol", self.unknown_protocol),
            ("drop_bad_icmp", self.bad_icmp),
            ("drop_bad_udp", self.bad_udp),
            ("drop_udp_no_socket", self.udp_no_socket),
            ("drop_udp_queue_full", self.udp_queue_full),
            ("drop_no_route", self.no_route),
            ("drop_arp_unresolved", self.arp_unresolved),
            ("drop_no_mbuf", self.no_mbuf),
            ("drop_tx_full", self.tx_full),
        ]
    }
}

impl fmt::Display for Counters {
    /// One `name value` line per counter; drops that are zero are left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, value) in self.fields() {
            if name.starts_with("drop_") && value == 0 {
                continue;
            }
            writeln!(f, "{name:<24} {value}")?;
        }
        Ok(())
    }
}
