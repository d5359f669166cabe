//! What a stack counts. Plain `u64`s owned by the one thread that polls the stack: no atomics on the fast path;
//! the control socket reads them from that same thread between bursts.

use std::fmt;

/// A struct of `u64` counters with its list of (name, value) and its sum, from one list of fields (so a counter
/// cannot be left out of either).
macro_rules! counters {
    ($(#[$meta:meta])* struct $name:ident prefix $prefix:literal {
        $($(#[doc = $doc:literal])* $field:ident,)*
    } $(extra { $(#[doc = $xdoc:literal])* $xfield:ident: $xty:ty })?) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $name {
            $($(#[doc = $doc])* pub $field: u64,)*
            $($(#[doc = $xdoc])* pub $xfield: $xty,)?
        }

        impl $name {
            /// The `u64` fields as (name, value), in declaration order.
            fn own_fields(&self) -> Vec<(&'static str, u64)> {
                vec![$((concat!($prefix, stringify!($field)), self.$field)),*]
            }

            /// Adds the `u64` fields of `other`.
            fn add_own(&mut self, other: &Self) {
                $(self.$field += other.$field;)*
            }
        }
    };
}

counters! {
    /// Packet, drop and connection counters of one [`Stack`](crate::Stack).
    struct Counters prefix "" {
        /// Frames received from the port.
        rx_packets,
        /// Bytes received from the port.
        rx_bytes,
        /// Frames handed to the port.
        tx_packets,
        /// Bytes handed to the port.
        tx_bytes,
        /// ARP requests answered.
        arp_replies_sent,
        /// ARP requests sent (resolution and gratuitous).
        arp_requests_sent,
        /// ICMP echo requests answered.
        icmp_echo_replies,
        /// UDP datagrams delivered to a socket.
        udp_rx_datagrams,
        /// UDP datagrams sent.
        udp_tx_datagrams,
        /// TCP segments received (handed to smoltcp or answered by the SYN admission).
        tcp_rx_segments,
        /// TCP segments smoltcp sent.
        tcp_tx_segments,
        /// TCP data segments sent again: an outgoing data segment that ends at or below the highest sequence number
        /// already sent on its connection (smoltcp 0.12 does not count retransmissions itself); SYN-ACKs sent
        /// again count too, keep-alive probes do not.
        tcp_retransmissions,
        /// Connections established (accepted or connected).
        connections_opened,
        /// Connections whose socket was released.
        connections_closed,
        /// SYNs answered with a SYN cookie (the listener's SYN backlog was full).
        tcp_syn_cookies_sent,
        /// Connections made from a valid cookie in the client's ACK.
        tcp_syn_cookies_accepted,
        /// ACKs to a listener that matched no connection and carried no valid cookie (answered with a reset).
        tcp_syn_cookies_rejected,
        /// Half-open connections dropped because the handshake did not complete in time.
        tcp_handshake_timeouts,
        /// Connections smoltcp gave up on: the peer answered nothing (keep-alive probes, retransmissions, a
        /// connect) for the user timeout.
        tcp_timeouts,
        /// Connections reset because data stayed unacknowledged (or unsent behind a closed window) for the user
        /// timeout.
        tcp_user_timeouts,
        /// Connections the application closed that were reset because input kept arriving that nobody reads.
        tcp_aborts_on_data,
        /// Connections the application closed that were reset because their FIN exchange outlasted the linger time.
        tcp_linger_aborts,
        /// Resets received.
        tcp_resets_received,
        /// Keep-alive probes sent (not counted as retransmissions).
        tcp_keepalive_probes,
    }
    extra {
        /// Drops by reason.
        drops: Drops
    }
}

counters! {
    /// Why packets were dropped.
    struct Drops prefix "drop_" {
        /// Frame shorter than an Ethernet header, or a VLAN-tagged frame.
        bad_ethernet,
        /// Ethernet destination neither ours nor broadcast.
        not_our_mac,
        /// EtherType other than IPv4 and ARP.
        unknown_ethertype,
        /// Malformed ARP, or ARP for another address.
        bad_arp,
        /// IPv4 header malformed (version, lengths).
        bad_ipv4,
        /// IPv4 header checksum wrong.
        ipv4_checksum,
        /// IPv4 destination not ours (no forwarding).
        not_for_us,
        /// IPv4 fragments (no reassembly).
        fragments,
        /// TTL of zero on arrival.
        ttl_expired,
        /// IP protocol other than ICMP, UDP, TCP.
        unknown_protocol,
        /// Malformed ICMP or ICMP checksum wrong, or a type other than echo request.
        bad_icmp,
        /// Malformed UDP or UDP checksum wrong.
        bad_udp,
        /// UDP to a port with no socket.
        udp_no_socket,
        /// UDP socket receive queue full.
        udp_queue_full,
        /// Packets to an address with no route (off-link and no gateway).
        no_route,
        /// Packets queued for an unresolved next hop that overflowed its pending queue or whose resolution failed,
        /// or whose next hop could not be queued at all (too many hops unresolved).
        arp_unresolved,
        /// No buffer in the pool for a packet to send.
        no_mbuf,
        /// The port's transmit queue was full.
        tx_full,
        /// SYNs dropped because the listener's SYN backlog was full and SYN cookies are off.
        tcp_syn_backlog_full,
        /// SYNs (and cookie ACKs) dropped because the stack held `tcp_max_connections` connections: the
        /// connection limit's refusals.
        tcp_connection_limit,
    }
}

impl Counters {
    /// Every drop added up.
    pub fn total_drops(&self) -> u64 {
        self.drops.fields().iter().map(|(_, v)| v).sum()
    }

    /// Every counter as (name, value), in a fixed order: the control socket and Ctrl-C print these.
    pub fn fields(&self) -> Vec<(&'static str, u64)> {
        let mut v = self.own_fields();
        v.extend(self.drops.fields());
        v
    }

    /// Adds `other` into `self` (summing lcores).
    pub fn add(&mut self, other: &Counters) {
        self.add_own(other);
        self.drops.add_own(&other.drops);
    }
}

impl Drops {
    /// Every drop reason as (`drop_` name, value).
    pub fn fields(&self) -> Vec<(&'static str, u64)> {
        self.own_fields()
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
