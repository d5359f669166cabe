//! Route lookup for the forwarding loop, on the `lpm` crate's tables: [`LpmRouter`] (LPM and FIB modes) and
//! [`EmRouter`] (exact match on the 5-tuple). Keys are read from the packet as DPDK's l3fwd reads them.

use lpm::{ExactMatch, Ipv4Tuple, Ipv6Tuple, Lpm4, Lpm4Config, Lpm6, Lpm6Config, WordKey};

use crate::routes::{EmRoute, LpmRoute};
use crate::Result;

/// A next hop that [`Router::lookup4_bulk`]/[`Router::lookup6_bulk`] write for a key without a route (above every
/// port number).
pub const NO_ROUTE: u32 = u32::MAX;

/// Finds the output port of a validated IPv4 or IPv6 header (the slice starts at the IP header); `None`: no route.
///
/// The forwarding loop reads each packet's key first ([`Router::key4`], [`Router::key6`]) and then looks a whole
/// burst up at once, so the tables' cache misses overlap; [`Router::route4`]/[`Router::route6`] do one packet.
pub trait Router: Send + Sync + 'static {
    /// What an IPv4 lookup reads from the header.
    type Key4: Copy + Default;
    /// What an IPv6 lookup reads from the header.
    type Key6: Copy + Default;

    /// The lookup key of an IPv4 header (at least 20 bytes, checked).
    fn key4(&self, ip: &[u8]) -> Self::Key4;
    /// [`Router::key4`] of a frame's IPv4 header (at [`FIXED_IP_AT`]) when the frame has a 20-byte header and
    /// at least [`FIXED_LEN`] bytes: the forwarding loop's fast path, reading fixed offsets with no length checks.
    #[inline(always)]
    fn key4_fixed(&self, frame: &[u8; FIXED_LEN]) -> Self::Key4 {
        self.key4(&frame[FIXED_IP_AT..])
    }
    /// The lookup key of an IPv6 header (at least 40 bytes, checked).
    fn key6(&self, ip: &[u8]) -> Self::Key6;
    /// Next hops of a burst of IPv4 keys, [`NO_ROUTE`] where there is none (`hops` as long as `keys`).
    fn lookup4_bulk(&self, keys: &[Self::Key4], hops: &mut [u32]);
    /// Next hops of a burst of IPv6 keys, [`NO_ROUTE`] where there is none (`hops` as long as `keys`).
    fn lookup6_bulk(&self, keys: &[Self::Key6], hops: &mut [u32]);

    /// IPv4 (header at least 20 bytes, checked).
    fn route4(&self, ip: &[u8]) -> Option<u16>;
    /// IPv6 (header at least 40 bytes, checked).
    fn route6(&self, ip: &[u8]) -> Option<u16>;
}

/// Bytes of a frame [`Router::key4_fixed`] reads: Ethernet, a 20-byte IPv4 header and the L4 ports.
pub const FIXED_LEN: usize = FIXED_IP_AT + 20 + 4;

/// Where the IPv4 header starts in [`Router::key4_fixed`]'s frame.
pub const FIXED_IP_AT: usize = 14;

/// A big-endian word at a fixed offset of a fixed-size header: one load (and a byte swap).
#[inline(always)]
fn be32_at<const AT: usize, const N: usize>(h: &[u8; N]) -> u32 {
    u32::from_be_bytes(*h[AT..].first_chunk().expect("offset inside the header"))
}

/// Longest prefix match on the destination address.
pub struct LpmRouter {
    v4: Lpm4,
    v6: Lpm6,
}

impl LpmRouter {
    /// Tables holding `v4` and `v6`.
    pub fn new(v4: &[LpmRoute<u32>], v6: &[LpmRoute<u128>]) -> Result<LpmRouter> {
        let mut t4 = Lpm4::new(Lpm4Config { max_rules: (v4.len() as u32).max(1024), tbl8_groups: 256 })?;
        for r in v4 {
            t4.add(r.prefix, r.depth, r.port as u32)?;
        }
        let mut t6 = Lpm6::new(Lpm6Config { max_rules: (v6.len() as u32).max(1024), groups: 1 << 16 })?;
        for r in v6 {
            t6.add(r.prefix, r.depth, r.port as u32)?;
        }
        Ok(LpmRouter { v4: t4, v6: t6 })
    }
}

/// Big-endian field readers over a checked header.
#[inline(always)]
fn be32(d: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
}

#[inline(always)]
fn be128(d: &[u8], at: usize) -> u128 {
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[at..at + 16]);
    u128::from_be_bytes(b)
}

/// IPv4 header offsets read for lookups.
mod v4_at {
    pub const PROTOCOL: usize = 9;
    pub const SRC_ADDR: usize = 12;
    pub const DST_ADDR: usize = 16;
    /// L4 ports as DPDK's exact match reads them: right after a 20-byte header, whatever the IHL.
    pub const PORTS: usize = 20;
}

/// IPv6 header offsets read for lookups.
mod v6_at {
    pub const NEXT_HEADER: usize = 6;
    pub const SRC_ADDR: usize = 8;
    pub const DST_ADDR: usize = 24;
    /// L4 ports right after the fixed header (extension headers are not walked, as in DPDK's l3fwd).
    pub const PORTS: usize = 40;
}

impl Router for LpmRouter {
    type Key4 = u32;
    type Key6 = u128;

    #[inline(always)]
    fn key4(&self, ip: &[u8]) -> u32 {
        be32(ip, v4_at::DST_ADDR)
    }

    #[inline(always)]
    fn key4_fixed(&self, frame: &[u8; FIXED_LEN]) -> u32 {
        be32_at::<{ FIXED_IP_AT + v4_at::DST_ADDR }, FIXED_LEN>(frame)
    }

    #[inline(always)]
    fn key6(&self, ip: &[u8]) -> u128 {
        be128(ip, v6_at::DST_ADDR)
    }

    #[inline(always)]
    fn lookup4_bulk(&self, keys: &[u32], hops: &mut [u32]) {
        self.v4.lookup_bulk(keys, hops, NO_ROUTE);
    }

    #[inline(always)]
    fn lookup6_bulk(&self, keys: &[u128], hops: &mut [u32]) {
        self.v6.lookup_bulk(keys, hops, NO_ROUTE);
    }

    #[inline(always)]
    fn route4(&self, ip: &[u8]) -> Option<u16> {
        self.v4.lookup(be32(ip, v4_at::DST_ADDR)).map(|h| h as u16)
    }

    #[inline(always)]
    fn route6(&self, ip: &[u8]) -> Option<u16> {
        self.v6.lookup(be128(ip, v6_at::DST_ADDR)).map(|h| h as u16)
    }
}

/// Exact match on (source, destination, source port, destination port, protocol).
///
/// IPv4 keys are stored as the words [`lpm::FlowKey::words`] gives for an [`Ipv4Tuple`] (addresses, then ports
/// and protocol), so the fast path builds one from two byte-swapped loads and a shifted protocol byte.
pub struct EmRouter {
    v4: ExactMatch<WordKey<2>>,
    v6: ExactMatch<Ipv6Tuple>,
}

/// The L4 ports at `at`, or zeros when the packet ends before them.
#[inline(always)]
fn ports(d: &[u8], at: usize) -> (u16, u16) {
    match d.get(at..at + 4) {
        Some(p) => (u16::from_be_bytes([p[0], p[1]]), u16::from_be_bytes([p[2], p[3]])),
        None => (0, 0),
    }
}

impl EmRouter {
    /// Tables holding `v4` and `v6`, each with room for `capacity` flows.
    pub fn new(v4: &[EmRoute<u32>], v6: &[EmRoute<u128>], capacity: usize) -> Result<EmRouter> {
        let mut t4 = ExactMatch::with_capacity(capacity.max(v4.len()))?;
        for r in v4 {
            let key =
                Ipv4Tuple { src_ip: r.src, dst_ip: r.dst, src_port: r.src_port, dst_port: r.dst_port, proto: r.proto };
            t4.add(WordKey::from(key), r.port as u32)?;
        }
        let mut t6 = ExactMatch::with_capacity(capacity.max(v6.len()))?;
        for r in v6 {
            let key =
                Ipv6Tuple { src_ip: r.src, dst_ip: r.dst, src_port: r.src_port, dst_port: r.dst_port, proto: r.proto };
            t6.add(key, r.port as u32)?;
        }
        Ok(EmRouter { v4: t4, v6: t6 })
    }
}

impl Router for EmRouter {
    type Key4 = WordKey<2>;
    type Key6 = Ipv6Tuple;

    #[inline(always)]
    fn key4(&self, ip: &[u8]) -> WordKey<2> {
        let (src_port, dst_port) = ports(ip, v4_at::PORTS);
        WordKey::from(Ipv4Tuple {
            src_ip: be32(ip, v4_at::SRC_ADDR),
            dst_ip: be32(ip, v4_at::DST_ADDR),
            src_port,
            dst_port,
            proto: ip[v4_at::PROTOCOL],
        })
    }

    #[inline(always)]
    fn key4_fixed(&self, frame: &[u8; FIXED_LEN]) -> WordKey<2> {
        // The addresses are adjacent (source first): one 8-byte big-endian load is (source << 32 | destination);
        // the ports likewise, with the protocol below them, as `Ipv4Tuple::words` lays them out.
        let addrs = u64::from_be_bytes(*frame[FIXED_IP_AT + v4_at::SRC_ADDR..].first_chunk().expect("in header"));
        let ports = be32_at::<{ FIXED_IP_AT + v4_at::PORTS }, FIXED_LEN>(frame);
        WordKey([addrs, u64::from(ports) << 8 | u64::from(frame[FIXED_IP_AT + v4_at::PROTOCOL])])
    }

    #[inline(always)]
    fn key6(&self, ip: &[u8]) -> Ipv6Tuple {
        let (src_port, dst_port) = ports(ip, v6_at::PORTS);
        Ipv6Tuple {
            src_ip: be128(ip, v6_at::SRC_ADDR),
            dst_ip: be128(ip, v6_at::DST_ADDR),
            src_port,
            dst_port,
            proto: ip[v6_at::NEXT_HEADER],
        }
    }

    #[inline(always)]
    fn lookup4_bulk(&self, keys: &[WordKey<2>], hops: &mut [u32]) {
        self.v4.lookup_bulk(keys, hops, NO_ROUTE);
    }

    #[inline(always)]
    fn lookup6_bulk(&self, keys: &[Ipv6Tuple], hops: &mut [u32]) {
        self.v6.lookup_bulk(keys, hops, NO_ROUTE);
    }

    #[inline(always)]
    fn route4(&self, ip: &[u8]) -> Option<u16> {
        self.v4.lookup(&self.key4(ip)).map(|h| h as u16)
    }

    #[inline(always)]
    fn route6(&self, ip: &[u8]) -> Option<u16> {
        self.v6.lookup(&self.key6(ip)).map(|h| h as u16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes;

    #[test]
    fn built_in_lpm_routes() {
        let r = LpmRouter::new(&routes::default_lpm4(), &routes::default_lpm6()).unwrap();
        let mut ip = [0u8; 20];
        ip[16..20].copy_from_slice(&[198, 18, 3, 77]);
        assert_eq!(r.route4(&ip), Some(3));
        ip[16..20].copy_from_slice(&[198, 19, 3, 77]);
        assert_eq!(r.route4(&ip), None);
        let mut ip6 = [0u8; 40];
        ip6[24..40].copy_from_slice(&"2001:200:0:5::9".parse::<std::net::Ipv6Addr>().unwrap().octets());
        assert_eq!(r.route6(&ip6), Some(5));
    }

    #[test]
    fn built_in_em_flows() {
        let r = EmRouter::new(&routes::default_em4(), &routes::default_em6(), 1024).unwrap();
        let mut ip = [0u8; 28];
        ip[9] = 17;
        ip[12..16].copy_from_slice(&[198, 18, 2, 1]);
        ip[16..20].copy_from_slice(&[198, 18, 2, 0]);
        ip[20..24].copy_from_slice(&[0, 9, 0, 9]);
        assert_eq!(r.route4(&ip), Some(2));
        ip[21] = 10;
        assert_eq!(r.route4(&ip), None);
        let mut ip6 = [0u8; 44];
        ip6[6] = 17;
        ip6[8..24].copy_from_slice(&"2001:200:0:7::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
        ip6[24..40].copy_from_slice(&"2001:200:0:7::".parse::<std::net::Ipv6Addr>().unwrap().octets());
        ip6[40..44].copy_from_slice(&[0, 9, 0, 9]);
        assert_eq!(r.route6(&ip6), Some(7));
        ip6[6] = 6;
        assert_eq!(r.route6(&ip6), None, "protocol is part of the key");
        // A packet ending before its ports reads them as zeros: no match, no panic.
        assert_eq!(r.route6(&ip6[..40]), None);
    }

    /// The fast path's fixed-offset keys are the checked ones, for any bytes: both routers, many frames.
    #[test]
    fn fixed_offset_keys_equal_the_checked_keys() {
        let lpm = LpmRouter::new(&routes::default_lpm4(), &routes::default_lpm6()).unwrap();
        let em = EmRouter::new(&routes::default_em4(), &routes::default_em6(), 1024).unwrap();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..10_000 {
            let mut frame = [0u8; FIXED_LEN];
            for b in frame.iter_mut() {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *b = seed as u8;
            }
            assert_eq!(lpm.key4_fixed(&frame), lpm.key4(&frame[FIXED_IP_AT..]));
            assert_eq!(em.key4_fixed(&frame), em.key4(&frame[FIXED_IP_AT..]));
        }
        // A flow of the table found through either key.
        let mut frame = [0u8; FIXED_LEN];
        frame[FIXED_IP_AT + 9] = 17;
        frame[FIXED_IP_AT + 12..FIXED_IP_AT + 16].copy_from_slice(&[198, 18, 2, 1]);
        frame[FIXED_IP_AT + 16..FIXED_IP_AT + 20].copy_from_slice(&[198, 18, 2, 0]);
        frame[FIXED_IP_AT + 20..FIXED_IP_AT + 24].copy_from_slice(&[0, 9, 0, 9]);
        let mut hops = [NO_ROUTE; 1];
        em.lookup4_bulk(&[em.key4_fixed(&frame)], &mut hops);
        assert_eq!(hops, [2]);
    }
}
