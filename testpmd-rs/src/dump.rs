//! `set verbose N`: the packet dumps dpdk-testpmd prints for each received (level bit 0) and each sent (bit 1)
//! burst, in its layout: a `port P/queue Q: received|sent N packets` line, then per packet the addresses, pool,
//! EtherType, length, segments, the software-parsed packet type with header lengths, the queue, and the offload
//! flags. (dpdk's pcap ports also print an RX timestamp; these ports keep none, so that field is absent.)

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicU32, Ordering};

use mempool::{ol_flags, Mbuf, PacketBatch};

/// The verbosity level, read by the forwarding lcores before each dump (changes apply while forwarding, as in
/// dpdk-testpmd).
pub static VERBOSE: AtomicU32 = AtomicU32::new(0);

/// True when received bursts are dumped.
#[inline(always)]
pub fn rx_on() -> bool {
    VERBOSE.load(Ordering::Relaxed) & 1 != 0
}

/// True when sent bursts are dumped.
#[inline(always)]
pub fn tx_on() -> bool {
    VERBOSE.load(Ordering::Relaxed) & 2 != 0
}

/// Header lengths and packet type names found by parsing the frame in software.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// DPDK's names, in order (`L2_ETHER L3_IPV4 L4_UDP`).
    pub names: Vec<&'static str>,
    /// L2 header length (with VLAN tags).
    pub l2_len: usize,
    /// L3 header length (0: not IP).
    pub l3_len: usize,
    /// L4 header length (0: not TCP/UDP/SCTP).
    pub l4_len: usize,
}

/// Parses `d` as rte_net_get_ptype does for the common cases: Ethernet, one or two VLAN tags, IPv4 (with
/// options), IPv6 (no extension headers), fragments, TCP/UDP/SCTP/ICMP.
pub fn parse(d: &[u8]) -> Parsed {
    let mut p = Parsed::default();
    if d.len() < 14 {
        return p;
    }
    let mut ethertype = u16::from_be_bytes([d[12], d[13]]);
    let mut l2 = 14;
    let mut l2_name = "L2_ETHER";
    while (ethertype == 0x8100 || ethertype == 0x88a8) && d.len() >= l2 + 4 {
        l2_name = if l2_name == "L2_ETHER" && ethertype == 0x8100 { "L2_ETHER_VLAN" } else { "L2_ETHER_QINQ" };
        ethertype = u16::from_be_bytes([d[l2 + 2], d[l2 + 3]]);
        l2 += 4;
    }
    p.names.push(l2_name);
    p.l2_len = l2;
    let ip = &d[l2..];
    let (proto, l3_len) = match ethertype {
        0x0800 if ip.len() >= 20 => {
            let ihl = (ip[0] & 0x0f) as usize * 4;
            p.names.push(if ihl == 20 { "L3_IPV4" } else { "L3_IPV4_EXT" });
            let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
            if frag {
                p.l3_len = ihl;
                p.names.push("L4_FRAG");
                return p;
            }
            (ip[9], ihl)
        }
        0x86dd if ip.len() >= 40 => {
            p.names.push("L3_IPV6");
            (ip[6], 40)
        }
        _ => return p,
    };
    p.l3_len = l3_len;
    let l4 = ip.get(l3_len..).unwrap_or(&[]);
    match proto {
        6 => {
            p.names.push("L4_TCP");
            p.l4_len = l4.get(12).map_or(20, |b| (b >> 4) as usize * 4);
        }
        17 => {
            p.names.push("L4_UDP");
            p.l4_len = 8;
        }
        132 => {
            p.names.push("L4_SCTP");
            p.l4_len = 12;
        }
        1 | 58 => p.names.push("L4_ICMP"),
        _ => p.names.push("L4_NONFRAG"),
    }
    p
}

fn mac(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(":")
}

fn rx_flags(f: u64) -> String {
    let mut s = String::new();
    if f & ol_flags::RX_VLAN_STRIPPED != 0 {
        s.push_str("RTE_MBUF_F_RX_VLAN ");
    }
    if f & ol_flags::RX_RSS_HASH != 0 {
        s.push_str("RTE_MBUF_F_RX_RSS_HASH ");
    }
    s.push_str(match (f & ol_flags::RX_L4_CKSUM_GOOD != 0, f & ol_flags::RX_L4_CKSUM_BAD != 0) {
        (true, false) => "RTE_MBUF_F_RX_L4_CKSUM_GOOD ",
        (false, true) => "RTE_MBUF_F_RX_L4_CKSUM_BAD ",
        _ => "RTE_MBUF_F_RX_L4_CKSUM_UNKNOWN ",
    });
    s.push_str(match (f & ol_flags::RX_IP_CKSUM_GOOD != 0, f & ol_flags::RX_IP_CKSUM_BAD != 0) {
        (true, false) => "RTE_MBUF_F_RX_IP_CKSUM_GOOD ",
        (false, true) => "RTE_MBUF_F_RX_IP_CKSUM_BAD ",
        _ => "RTE_MBUF_F_RX_IP_CKSUM_UNKNOWN ",
    });
    if f & ol_flags::RX_VLAN_STRIPPED != 0 {
        s.push_str("RTE_MBUF_F_RX_VLAN_STRIPPED ");
    }
    s.push_str("RTE_MBUF_F_RX_OUTER_L4_CKSUM_UNKNOWN ");
    s
}

fn tx_flags(f: u64) -> String {
    let mut s = String::new();
    if f & ol_flags::TX_TCP_CKSUM != 0 {
        s.push_str("RTE_MBUF_F_TX_TCP_CKSUM ");
    } else if f & ol_flags::TX_UDP_CKSUM != 0 {
        s.push_str("RTE_MBUF_F_TX_UDP_CKSUM ");
    } else {
        s.push_str("RTE_MBUF_F_TX_L4_NO_CKSUM ");
    }
    for (bit, name) in [
        (ol_flags::TX_IP_CKSUM, "RTE_MBUF_F_TX_IP_CKSUM "),
        (ol_flags::TX_IPV4, "RTE_MBUF_F_TX_IPV4 "),
        (ol_flags::TX_IPV6, "RTE_MBUF_F_TX_IPV6 "),
        (ol_flags::TX_VLAN, "RTE_MBUF_F_TX_VLAN "),
    ] {
        if f & bit != 0 {
            s.push_str(name);
        }
    }
    s
}

/// The dump of one packet (two lines, each ending in a newline).
pub fn packet(m: &Mbuf, pool: &str, rx: bool, queue: u16) -> String {
    let d = m.data();
    let mut s = String::new();
    if d.len() >= 14 {
        let _ = write!(s, "  src={} - dst={}", mac(&d[6..12]), mac(&d[0..6]));
    }
    let ethertype = if d.len() >= 14 { u16::from_be_bytes([d[12], d[13]]) } else { 0 };
    let _ = write!(s, " - pool={pool} - type=0x{ethertype:04x} - length={} - nb_segs={}", m.pkt_len(), m.nb_segs());
    if rx && m.ol_flags() & ol_flags::RX_RSS_HASH != 0 {
        let _ = write!(s, " - RSS hash=0x{:x} - RSS queue=0x{queue:x}", m.rss_hash());
    }
    let p = parse(d);
    let _ = write!(s, " - sw ptype: ");
    for n in &p.names {
        let _ = write!(s, "{n} ");
    }
    for (name, len) in [("l2_len", p.l2_len), ("l3_len", p.l3_len), ("l4_len", p.l4_len)] {
        if len != 0 {
            let _ = write!(s, " - {name}={len}");
        }
    }
    let _ = writeln!(s, " - {} queue=0x{queue:x}", if rx { "Receive" } else { "Send" });
    let flags = if rx { rx_flags(m.ol_flags()) } else { tx_flags(m.ol_flags()) };
    let _ = writeln!(s, "  ol_flags: {flags}");
    s
}

/// Prints the dump of a burst (cold: only with `set verbose`). One write, so bursts of several lcores do not mix.
#[cold]
#[inline(never)]
pub fn burst(b: &PacketBatch, pool: &str, port: u16, queue: u16, rx: bool) {
    let mut s = format!("port {port}/queue {queue}: {} {} packets\n", if rx { "received" } else { "sent" }, b.len());
    for m in b.iter() {
        s.push_str(&packet(m, pool, rx, queue));
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes());
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_types_as_dpdk_names_them() {
        let mut udp = vec![0u8; 64];
        udp[12..14].copy_from_slice(&[8, 0]);
        udp[14] = 0x45;
        udp[23] = 17;
        assert_eq!(
            parse(&udp),
            Parsed { names: vec!["L2_ETHER", "L3_IPV4", "L4_UDP"], l2_len: 14, l3_len: 20, l4_len: 8 }
        );
        let mut tcp = udp.clone();
        tcp[23] = 6;
        tcp[14 + 20 + 12] = 0x80;
        assert_eq!(parse(&tcp).l4_len, 32);
        let mut vlan = vec![0u8; 68];
        vlan[12..14].copy_from_slice(&[0x81, 0]);
        vlan[16..18].copy_from_slice(&[8, 0]);
        vlan[18] = 0x46;
        vlan[27] = 1;
        let p = parse(&vlan);
        assert_eq!(p.names, ["L2_ETHER_VLAN", "L3_IPV4_EXT", "L4_ICMP"]);
        assert_eq!((p.l2_len, p.l3_len, p.l4_len), (18, 24, 0));
        let mut arp = vec![0u8; 60];
        arp[12..14].copy_from_slice(&[8, 6]);
        assert_eq!(parse(&arp), Parsed { names: vec!["L2_ETHER"], l2_len: 14, l3_len: 0, l4_len: 0 });
        let mut frag = udp.clone();
        frag[20] = 0x20;
        assert_eq!(parse(&frag).names, ["L2_ETHER", "L3_IPV4", "L4_FRAG"]);
    }
}
