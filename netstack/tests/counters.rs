//! Counters add up across lcores and print every counter with nonzero drops only.

use netstack::Counters;

#[test]
fn counters_add_and_print() {
    let mut a = Counters { rx_packets: 3, tcp_retransmissions: 1, ..Counters::default() };
    a.drops.fragments = 2;
    let mut b = Counters { rx_packets: 4, connections_opened: 5, ..Counters::default() };
    b.drops.fragments = 1;
    b.drops.no_route = 7;
    a.add(&b);
    assert_eq!((a.rx_packets, a.tcp_retransmissions, a.connections_opened), (7, 1, 5));
    assert_eq!((a.drops.fragments, a.drops.no_route), (3, 7));
    assert_eq!(a.total_drops(), 10);
    let text = a.to_string();
    assert!(text.lines().any(|l| l.split_whitespace().eq(["rx_packets", "7"])), "{text}");
    assert!(text.lines().any(|l| l.split_whitespace().eq(["drop_fragments", "3"])), "{text}");
    assert!(text.lines().any(|l| l.split_whitespace().eq(["connections_closed", "0"])), "{text}");
    assert!(!text.contains("drop_bad_udp"), "zero drops are left out:\n{text}");
    // Every field is printed or summed: a counter forgotten in `add` or `fields` shows up here.
    let names: Vec<_> = a.fields().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names.len(), 24 + 20);
    let unique: std::collections::HashSet<_> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "names are unique");
    let mut ones = Counters::default();
    for _ in 0..2 {
        let mut all = Counters {
            rx_packets: 1,
            rx_bytes: 1,
            tx_packets: 1,
            tx_bytes: 1,
            arp_replies_sent: 1,
            arp_requests_sent: 1,
            icmp_echo_replies: 1,
            udp_rx_datagrams: 1,
            udp_tx_datagrams: 1,
            tcp_rx_segments: 1,
            tcp_tx_segments: 1,
            tcp_retransmissions: 1,
            connections_opened: 1,
            connections_closed: 1,
            tcp_syn_cookies_sent: 1,
            tcp_syn_cookies_accepted: 1,
            tcp_syn_cookies_rejected: 1,
            tcp_handshake_timeouts: 1,
            tcp_timeouts: 1,
            tcp_user_timeouts: 1,
            tcp_aborts_on_data: 1,
            tcp_linger_aborts: 1,
            tcp_resets_received: 1,
            tcp_keepalive_probes: 1,
            ..Counters::default()
        };
        let d = &mut all.drops;
        for f in [
            &mut d.bad_ethernet,
            &mut d.not_our_mac,
            &mut d.unknown_ethertype,
            &mut d.bad_arp,
            &mut d.bad_ipv4,
            &mut d.ipv4_checksum,
            &mut d.not_for_us,
            &mut d.fragments,
            &mut d.ttl_expired,
            &mut d.unknown_protocol,
            &mut d.bad_icmp,
            &mut d.bad_udp,
            &mut d.udp_no_socket,
            &mut d.udp_queue_full,
            &mut d.no_route,
            &mut d.arp_unresolved,
            &mut d.no_mbuf,
            &mut d.tx_full,
            &mut d.tcp_syn_backlog_full,
            &mut d.tcp_connection_limit,
        ] {
            *f = 1;
        }
        ones.add(&all);
    }
    assert!(ones.fields().iter().all(|(n, v)| *v == 2 || panic!("{n} = {v}")));
}
