//! Per burst: validation, TTL and checksum per packet (a straight-line fast path for plain IPv4), then one bulk
//! lookup per IP version, then the MAC rewrite; a burst bound for one port is sent as it is, a mixed one goes
//! through one TX batch per output port. One dynamic call per burst each way, no allocation, no lock. With
//! telemetry on, every RX queue and TX port also has a live-capture tap ([`pktio::capture::QueueTap`]) checked once
//! per burst; without, the loop is a separate monomorphisation that checks nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mempool::{Mbuf, PacketBatch};
use pkthdr::{EtherType, EthernetFrame, Ipv4Packet, Ipv6Packet};
use pktio::capture::QueueTap;
use pktio::stats::Counter;
use pktio::{RxQueue, TxQueue};

use crate::lookup::{Router, NO_ROUTE};

/// Packets per RX burst and per TX batch (DPDK's MAX_PKT_BURST).
pub const MAX_PKT_BURST: usize = 32;

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Drop {
    /// Shorter than an Ethernet header, or than its IP header or IP length says.
    Truncated = 0,
    /// IPv4 header checksum wrong.
    BadChecksum,
    /// IP version field not 4 (IPv4 EtherType) or 6 (IPv6 EtherType).
    BadVersion,
    /// IPv4 header length below 20 bytes or total length below the header length.
    BadHeaderLength,
    /// TTL or hop limit 0 or 1: a router must not forward it (RFC 1812 5.3.1).
    TtlExceeded,
    /// The output port's TX queue did not take it.
    TxFull,
}

impl Drop {
    /// Every reason, in counter order.
    pub const ALL: [Drop; 6] =
        [Drop::Truncated, Drop::BadChecksum, Drop::BadVersion, Drop::BadHeaderLength, Drop::TtlExceeded, Drop::TxFull];

    /// The name in the statistics.
    pub fn name(self) -> &'static str {
        match self {
            Drop::Truncated => "truncated",
            Drop::BadChecksum => "bad-checksum",
            Drop::BadVersion => "bad-version",
            Drop::BadHeaderLength => "bad-header-length",
            Drop::TtlExceeded => "ttl-exceeded",
            Drop::TxFull => "tx-full",
        }
    }
}

fn drop_of(e: pkthdr::Error) -> Drop {
    match e {
        pkthdr::Error::Truncated { .. } => Drop::Truncated,
        pkthdr::Error::BadVersion { .. } => Drop::BadVersion,
        pkthdr::Error::BadChecksum { .. } => Drop::BadChecksum,
        pkthdr::Error::BadLength { .. } | pkthdr::Error::Unsupported { .. } => Drop::BadHeaderLength,
    }
}

/// Offsets in the IPv4 header read by the fast path and written by the rewrite.
mod v4_at {
    pub const TOTAL_LEN: usize = 2;
    pub const TTL: usize = 8;
    pub const CHECKSUM: usize = 10;
}

/// The TTL decrement's checksum change: the TTL is the high byte of a checksummed word, so one less TTL is 0x0100
/// more checksum, added with end-around carry. This is what DPDK's l3fwd does (its `hdr_checksum++` on the
/// little-endian view of the field); RFC 1624's equation 3 gives 0x0000 where this gives 0xffff, so to compare
/// byte for byte with DPDK's output this form is used. Both are valid checksums.
#[inline(always)]
pub fn checksum_after_ttl_decrement(checksum: u16) -> u16 {
    let c = checksum as u32 + 0x0100;
    ((c & 0xffff) + (c >> 16)) as u16
}

/// What a valid frame is, for the lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// IPv4, already given its new TTL and checksum: look up [`Router::key4`] of the IP header.
    V4,
    /// IPv6: look up [`Router::key6`] of the IP header.
    V6,
    /// Neither: back to the input port.
    Other,
}

/// Validates the frame and, for IPv4, decrements the TTL and fixes the checksum (the lookup key reads neither).
/// The lookup and the MAC rewrite are left to the caller.
///
/// `frame` is the packet's first segment and `pkt_len` the whole packet's length (all segments), which is what
/// the IP lengths are checked against, as DPDK's l3fwd checks them against `m->pkt_len`: a jumbo frame received
/// as a chain of buffers is forwarded whole. Its headers must be in the first segment (they are read and
/// rewritten there); a chain whose first segment is shorter than its headers is counted as truncated.
#[inline(always)]
pub fn validate(frame: &mut [u8], pkt_len: usize) -> Result<Class, Drop> {
    if pkt_len > frame.len() {
        return validate_chained(frame, pkt_len);
    }
    let eth = EthernetFrame::new_checked(&mut *frame).map_err(|_| Drop::Truncated)?;
    let ethertype = eth.ethertype();
    let ip = &mut frame[IP_AT..];
    if ethertype == EtherType::IPV4 {
        let p = Ipv4Packet::new_checked(&mut *ip).map_err(drop_of)?;
        if !p.verify_checksum() {
            return Err(Drop::BadChecksum);
        }
        let ttl = p.ttl();
        if ttl <= 1 {
            return Err(Drop::TtlExceeded);
        }
        ip[v4_at::TTL] = ttl - 1;
        let c = u16::from_be_bytes([ip[v4_at::CHECKSUM], ip[v4_at::CHECKSUM + 1]]);
        ip[v4_at::CHECKSUM..v4_at::CHECKSUM + 2].copy_from_slice(&checksum_after_ttl_decrement(c).to_be_bytes());
        Ok(Class::V4)
    } else if ethertype == EtherType::IPV6 {
        let p = Ipv6Packet::new_checked(&*ip).map_err(drop_of)?;
        if p.hop_limit() <= 1 {
            return Err(Drop::TtlExceeded);
        }
        Ok(Class::V6)
    } else {
        Ok(Class::Other)
    }
}

/// [`validate`] for a packet longer than its first segment: the same checks, in the same order, with the headers
/// read from the first segment and the IP lengths compared with the whole packet.
#[cold]
fn validate_chained(frame: &mut [u8], pkt_len: usize) -> Result<Class, Drop> {
    let eth = EthernetFrame::new_checked(&mut *frame).map_err(|_| Drop::Truncated)?;
    let ethertype = eth.ethertype();
    let ip = &mut frame[IP_AT..];
    let ip_len = pkt_len - IP_AT;
    if ethertype == EtherType::IPV4 {
        if ip.len() < V4_HEADER_LEN {
            return Err(Drop::Truncated);
        }
        let p = Ipv4Packet::new_unchecked(&*ip);
        if p.version() != 4 {
            return Err(Drop::BadVersion);
        }
        let header_len = p.header_len();
        if header_len < V4_HEADER_LEN {
            return Err(Drop::BadHeaderLength);
        }
        if header_len > ip.len() {
            return Err(Drop::Truncated);
        }
        let total = p.total_len() as usize;
        if total < header_len {
            return Err(Drop::BadHeaderLength);
        }
        if total > ip_len {
            return Err(Drop::Truncated);
        }
        // The header alone, within the first segment, is what the checksum and the rewrite touch.
        let header = &mut ip[..header_len];
        if !Ipv4Packet::new_unchecked(&*header).verify_checksum() {
            return Err(Drop::BadChecksum);
        }
        let ttl = header[v4_at::TTL];
        if ttl <= 1 {
            return Err(Drop::TtlExceeded);
        }
        header[v4_at::TTL] = ttl - 1;
        let c = u16::from_be_bytes([header[v4_at::CHECKSUM], header[v4_at::CHECKSUM + 1]]);
        header[v4_at::CHECKSUM..v4_at::CHECKSUM + 2].copy_from_slice(&checksum_after_ttl_decrement(c).to_be_bytes());
        Ok(Class::V4)
    } else if ethertype == EtherType::IPV6 {
        if ip.len() < V6_HEADER_LEN {
            return Err(Drop::Truncated);
        }
        let p = Ipv6Packet::new_unchecked(&*ip);
        if p.version() != 6 {
            return Err(Drop::BadVersion);
        }
        if V6_HEADER_LEN + p.payload_len() as usize > ip_len {
            return Err(Drop::Truncated);
        }
        if p.hop_limit() <= 1 {
            return Err(Drop::TtlExceeded);
        }
        Ok(Class::V6)
    } else {
        Ok(Class::Other)
    }
}

/// The IPv4 fast path: a frame with an IPv4 EtherType, version 4 and a 20-byte header (`0x45`), a total length
/// that covers the header and fits the packet (`pkt_len`, every segment of it: `frame` is the first segment), a TTL above 1 and a right checksum gets its TTL decremented and
/// checksum updated, and `true`; for any other frame nothing is written and `false` tells the caller to take
/// [`validate`], which then finds the same class or the drop reason. Straight-line loads and compares: no error
/// values, one test per check.
///
/// The checksum test sums all ten header words, checksum included, and wants negative zero (0xffff); that
/// accepts exactly the headers [`Ipv4Packet::verify_checksum`] accepts once a stored 0xffff is excluded (a
/// header with version 4 never sums to zero, so a right checksum is never 0xffff).
#[inline(always)]
pub fn fast_v4(frame: &mut [u8], pkt_len: usize) -> bool {
    let len = pkt_len.max(frame.len());
    let Some(h) = frame.first_chunk_mut::<{ IP_AT + V4_HEADER_LEN }>() else {
        return false;
    };
    // EtherType 0x0800 then version/IHL 0x45 (the DSCP byte after them is free).
    let type_ver = u32::from_be_bytes([h[12], h[13], h[14], h[15]]) >> 8;
    let total = u16::from_be_bytes([h[IP_AT + v4_at::TOTAL_LEN], h[IP_AT + v4_at::TOTAL_LEN + 1]]) as usize;
    let ttl = h[IP_AT + v4_at::TTL];
    let c = u16::from_be_bytes([h[IP_AT + v4_at::CHECKSUM], h[IP_AT + v4_at::CHECKSUM + 1]]);
    let ip: &[u8; V4_HEADER_LEN] = h[IP_AT..].try_into().expect("34 - 14 bytes");
    // Five 32-bit words summed in 64 bits cannot carry out; folding to 16 bits keeps the one's complement sum.
    let mut sum = 0u64;
    for w in ip.chunks_exact(4) {
        sum += u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as u64;
    }
    let sum = (sum & 0xffff_ffff) + (sum >> 32);
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    let ok = (type_ver == 0x08_0045)
        & (total >= V4_HEADER_LEN)
        & (total <= len - IP_AT)
        & (ttl > 1)
        & (sum == 0xffff)
        & (c != 0xffff);
    if !ok {
        return false;
    }
    h[IP_AT + v4_at::TTL] = ttl - 1;
    h[IP_AT + v4_at::CHECKSUM..IP_AT + v4_at::CHECKSUM + 2]
        .copy_from_slice(&checksum_after_ttl_decrement(c).to_be_bytes());
    true
}

/// An IPv4 header without options.
const V4_HEADER_LEN: usize = Ipv4Packet::<&[u8]>::MIN_HEADER_LEN;

/// The IPv6 fixed header.
const V6_HEADER_LEN: usize = Ipv6Packet::<&[u8]>::HEADER_LEN;

/// Where the IP header starts in a frame.
const IP_AT: usize = EthernetFrame::<&[u8]>::HEADER_LEN;

/// One packet at a time: validates the frame, finds its output port (`in_port` when there is no route or it is
/// not IP, as DPDK's l3fwd does) and, for IPv4, decrements the TTL and fixes the checksum. The forwarding loop does
/// the same a burst at a time ([`BurstRouter`]).
#[inline(always)]
pub fn route<R: Router>(frame: &mut [u8], in_port: u16, router: &R) -> Result<u16, Drop> {
    let len = frame.len();
    Ok(match validate(frame, len)? {
        Class::V4 => router.route4(&frame[IP_AT..]).unwrap_or(in_port),
        Class::V6 => router.route6(&frame[IP_AT..]).unwrap_or(in_port),
        Class::Other => in_port,
    })
}

/// In [`BurstRouter`]'s per-packet outputs: codes from here up are drops ([`Drop`] as `code - DROPPED`); below
/// are output ports.
const DROPPED: u32 = 1 << 16;

/// Routes a burst with one bulk lookup per IP version: validation and keys for every packet first, then the
/// lookups, whose results are scattered back to their packets. Scratch space for [`MAX_PKT_BURST`] packets, reused.
pub struct BurstRouter<R: Router> {
    /// Per packet: output port, or `DROPPED + reason`.
    outputs: [u32; MAX_PKT_BURST],
    keys4: [R::Key4; MAX_PKT_BURST],
    keys6: [R::Key6; MAX_PKT_BURST],
    /// Which packet each key belongs to.
    at4: [u8; MAX_PKT_BURST],
    at6: [u8; MAX_PKT_BURST],
    hops: [u32; MAX_PKT_BURST],
}

impl<R: Router> Default for BurstRouter<R> {
    fn default() -> Self {
        BurstRouter {
            outputs: [0; MAX_PKT_BURST],
            keys4: [R::Key4::default(); MAX_PKT_BURST],
            keys6: [R::Key6::default(); MAX_PKT_BURST],
            at4: [0; MAX_PKT_BURST],
            at6: [0; MAX_PKT_BURST],
            hops: [0; MAX_PKT_BURST],
        }
    }
}

impl<R: Router> BurstRouter<R> {
    /// Validates and rewrites the TTL of each packet of `pkts` (at most [`MAX_PKT_BURST`]) and looks their routes
    /// up; then [`BurstRouter::output`] gives packet i's output port, exactly as [`route`] would. Returns the port
    /// every packet goes to when they all go to the same one (none dropped), so the caller can send the burst as
    /// it is.
    ///
    /// Plain 20-byte IPv4 headers take [`fast_v4`] (no per-field error paths); anything else takes [`validate`].
    /// When every packet is such IPv4 (the usual burst) the keys sit at the packets' own indexes and the next hops
    /// land straight in the outputs, with no scatter.
    #[inline(always)]
    pub fn route_burst(&mut self, pkts: &mut [Mbuf], in_port: u16, router: &R) -> Option<u16> {
        debug_assert!(pkts.len() <= MAX_PKT_BURST);
        let n = pkts.len();
        if n == 0 {
            return None;
        }
        let (mut n4, mut n6) = (0usize, 0usize);
        let mut plain = true;
        for (i, (o, m)) in self.outputs.iter_mut().zip(pkts.iter_mut()).enumerate() {
            let pkt_len = m.pkt_len() as usize;
            let frame = m.data_mut();
            *o = in_port as u32;
            let class = if fast_v4(frame, pkt_len) { Ok(Class::V4) } else { validate(frame, pkt_len) };
            match class {
                Ok(Class::V4) => {
                    self.keys4[n4] = router.key4(&frame[IP_AT..]);
                    self.at4[n4] = i as u8;
                    n4 += 1;
                }
                Ok(Class::V6) => {
                    plain = false;
                    self.keys6[n6] = router.key6(&frame[IP_AT..]);
                    self.at6[n6] = i as u8;
                    n6 += 1;
                }
                Ok(Class::Other) => plain = false,
                Err(reason) => {
                    plain = false;
                    *o = DROPPED + reason as u32;
                }
            }
        }
        if plain {
            // Every packet is IPv4: key i is packet i's. A miss leaves the input port (a select, not a branch).
            let outs = &mut self.outputs[..n];
            router.lookup4_bulk(&self.keys4[..n], outs);
            let miss = in_port as u32;
            let first = if outs[0] == NO_ROUTE { miss } else { outs[0] };
            let mut same = true;
            for o in outs.iter_mut() {
                *o = if *o == NO_ROUTE { miss } else { *o };
                same &= *o == first;
            }
            return same.then_some(first as u16);
        }
        // A miss leaves the input port in place.
        if n4 > 0 {
            router.lookup4_bulk(&self.keys4[..n4], &mut self.hops[..n4]);
            for (&h, &at) in self.hops[..n4].iter().zip(&self.at4[..n4]) {
                if h != NO_ROUTE {
                    self.outputs[at as usize] = h;
                }
            }
        }
        if n6 > 0 {
            router.lookup6_bulk(&self.keys6[..n6], &mut self.hops[..n6]);
            for (&h, &at) in self.hops[..n6].iter().zip(&self.at6[..n6]) {
                if h != NO_ROUTE {
                    self.outputs[at as usize] = h;
                }
            }
        }
        None
    }

    /// Packet `i`'s output port (or why it is dropped) after [`BurstRouter::route_burst`].
    #[inline(always)]
    pub fn output(&self, i: usize) -> Result<u16, Drop> {
        let o = self.outputs[i];
        if o < DROPPED {
            Ok(o as u16)
        } else {
            Err(Drop::ALL[(o - DROPPED) as usize])
        }
    }
}

/// Counters of one lcore, written by it only.
#[derive(Debug)]
#[repr(align(128))]
pub struct LcoreCounters {
    /// Received, per port.
    pub rx: Vec<Counter>,
    /// Sent, per port.
    pub tx: Vec<Counter>,
    /// Dropped, per reason ([`Drop::ALL`] order).
    pub dropped: [Counter; Drop::ALL.len()],
}

impl LcoreCounters {
    /// Zeroed counters for `nb_ports` ports.
    pub fn new(nb_ports: usize) -> LcoreCounters {
        LcoreCounters {
            rx: (0..nb_ports).map(|_| Counter::default()).collect(),
            tx: (0..nb_ports).map(|_| Counter::default()).collect(),
            dropped: Default::default(),
        }
    }
}

/// One RX queue this lcore polls.
pub struct RxUnit {
    /// Port.
    pub port: u16,
    /// Queue.
    pub queue: u16,
    /// The queue.
    pub rx: Box<dyn RxQueue>,
    /// Its live-capture tap ([`QueueTap::detached`] when the lcore is not [`Lcore::tapped`]).
    pub tap: QueueTap,
}

/// One output port of an lcore: its TX queue, the batch being filled and the 12 bytes written into each frame.
pub struct TxPort {
    /// This lcore's TX queue of the port.
    pub tx: Box<dyn TxQueue>,
    /// Destination MAC (`--eth-dest`) then the port's own MAC.
    pub eth_addrs: [u8; 12],
    batch: PacketBatch,
    tap: QueueTap,
}

impl TxPort {
    /// An output port; `tap`: its live-capture tap ([`QueueTap::detached`] when the lcore is not tapped).
    pub fn new(tx: Box<dyn TxQueue>, eth_addrs: [u8; 12], tap: QueueTap) -> TxPort {
        TxPort { tx, eth_addrs, batch: PacketBatch::with_capacity(MAX_PKT_BURST), tap }
    }
}

/// What one lcore owns.
pub struct Lcore {
    /// RX queues, polled in order.
    pub units: Vec<RxUnit>,
    /// Output ports by port id (`None`: not enabled).
    pub out: Vec<Option<TxPort>>,
    /// Counters.
    pub counters: Arc<LcoreCounters>,
    /// The taps of `units` and `out` are real: the loop checks them.
    pub tapped: bool,
}

#[inline(always)]
fn flush<const TAP: bool>(t: &mut TxPort, port: usize, c: &LcoreCounters) {
    if TAP {
        t.tap.observe(t.batch.as_slice());
    }
    let sent = t.tx.tx_burst(&mut t.batch);
    c.tx[port].add(sent as u64);
    if !t.batch.is_empty() {
        c.dropped[Drop::TxFull as usize].add(t.batch.len() as u64);
        t.batch.clear();
    }
}

/// Puts one routed packet into its output batch, or drops it.
#[inline(always)]
fn forward<const TAP: bool>(mut m: Mbuf, verdict: Result<u16, Drop>, out: &mut [Option<TxPort>], c: &LcoreCounters) {
    match verdict {
        Ok(port) => match out.get_mut(port as usize).and_then(Option::as_mut) {
            Some(t) => {
                m.data_mut()[..12].copy_from_slice(&t.eth_addrs);
                if let Err(m) = t.batch.push(m) {
                    flush::<TAP>(t, port as usize, c);
                    let _ = t.batch.push(m);
                }
            }
            // A route to a port this lcore cannot send by (routes are filtered to enabled ports, so only a
            // configuration error gets here): counted as a TX drop.
            None => c.dropped[Drop::TxFull as usize].add(1),
        },
        Err(reason) => c.dropped[reason as usize].add(1),
    }
}

#[inline(never)]
fn run<R: Router, const TAP: bool>(l: &mut Lcore, router: &R, stop: &AtomicBool, mut tick: impl FnMut()) {
    let mut b = PacketBatch::with_capacity(MAX_PKT_BURST);
    let mut br = BurstRouter::<R>::default();
    let c = &*l.counters;
    while !stop.load(Ordering::Relaxed) {
        for u in l.units.iter_mut() {
            let n = u.rx.rx_burst(&mut b);
            if TAP {
                u.tap.observe(b.as_slice());
            }
            if n == 0 {
                continue;
            }
            c.rx[u.port as usize].add(n as u64);
            let out = &mut l.out[..];
            let one_port = br.route_burst(&mut b.as_mut_slice()[..n], u.port, router);
            // The whole burst to one port (the usual case, as DPDK's send_packets_multi finds it): rewrite the
            // MACs in one loop and hand the RX batch itself to that port, with no per-packet moves or branches.
            if let Some((port, t)) = one_port.and_then(|p| Some((p as usize, out.get_mut(p as usize)?.as_mut()?))) {
                for m in b.iter_mut() {
                    m.data_mut()[..12].copy_from_slice(&t.eth_addrs);
                }
                if TAP {
                    t.tap.observe(b.as_slice());
                }
                let sent = t.tx.tx_burst(&mut b);
                c.tx[port].add(sent as u64);
                if !b.is_empty() {
                    c.dropped[Drop::TxFull as usize].add(b.len() as u64);
                    b.clear();
                }
                continue;
            }
            let mut i = 0;
            b.drain_front(n, |m| {
                forward::<TAP>(m, br.output(i), out, c);
                i += 1;
            });
            for (port, t) in out.iter_mut().enumerate() {
                if let Some(t) = t {
                    if !t.batch.is_empty() {
                        flush::<TAP>(t, port, c);
                    }
                }
            }
        }
        tick();
    }
}

/// What one lcore does until `stop`, calling `tick` after each round over its queues (the main lcore prints the
/// statistics from it). Returns what it owns (and so the queues).
pub fn lcore_main<R: Router>(mut l: Lcore, router: Arc<R>, stop: Arc<AtomicBool>, tick: impl FnMut()) -> Lcore {
    if l.tapped {
        run::<R, true>(&mut l, &*router, &stop, tick);
    } else {
        run::<R, false>(&mut l, &*router, &stop, tick);
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lookup::LpmRouter;
    use crate::routes;

    fn ipv4(dst: [u8; 4], ttl: u8) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&[8, 0]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&46u16.to_be_bytes());
        f[22] = ttl;
        f[23] = 17;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&dst);
        let c = !pkthdr::checksum::data(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f
    }

    fn router() -> LpmRouter {
        LpmRouter::new(&routes::default_lpm4(), &routes::default_lpm6()).unwrap()
    }

    #[test]
    fn ttl_and_checksum_rewrite_is_byte_exact() {
        let r = router();
        let mut f = ipv4([198, 18, 1, 9], 64);
        let before = f.clone();
        assert_eq!(route(&mut f, 0, &r), Ok(1));
        assert_eq!(f[22], 63);
        // The header still sums right, and only TTL and checksum changed.
        assert!(Ipv4Packet::new_checked(&f[14..]).unwrap().verify_checksum());
        let changed: Vec<usize> = (0..f.len()).filter(|&i| f[i] != before[i]).collect();
        assert!(changed.iter().all(|i| [22, 24, 25].contains(i)), "{changed:?}");
    }

    #[test]
    fn checksum_update_matches_dpdk_at_the_wrap() {
        // DPDK: 0xfeff -> 0xffff (RFC 1624 eqn 3 would give 0x0000); 0xff12 -> 0x0013 (carry wraps round).
        assert_eq!(checksum_after_ttl_decrement(0xfeff), 0xffff);
        assert_eq!(checksum_after_ttl_decrement(0xff12), 0x0013);
        assert_eq!(checksum_after_ttl_decrement(0x1234), 0x1334);
        // Against a full recomputation over many headers.
        for ttl in 2..=255u8 {
            for id in [0u16, 1, 0x7fff, 0xfffe] {
                let mut f = ipv4([198, 18, 0, ttl], ttl);
                f[18..20].copy_from_slice(&id.to_be_bytes());
                let c = !pkthdr::checksum::data(&{
                    let mut h = f[14..34].to_vec();
                    h[10..12].fill(0);
                    h
                });
                f[24..26].copy_from_slice(&c.to_be_bytes());
                route(&mut f, 0, &router()).unwrap();
                assert!(Ipv4Packet::new_checked(&f[14..]).unwrap().verify_checksum(), "ttl {ttl} id {id}");
            }
        }
    }

    #[test]
    fn no_route_and_non_ip_go_back_to_the_input_port() {
        let r = router();
        assert_eq!(route(&mut ipv4([10, 1, 2, 3], 9), 3, &r), Ok(3));
        let mut arp = vec![0u8; 60];
        arp[12..14].copy_from_slice(&[8, 6]);
        assert_eq!(route(&mut arp, 2, &r), Ok(2));
    }

    /// The burst path gives every packet the output (or drop reason) and the bytes the one-packet path gives, in
    /// a burst mixing hits, misses, drops, IPv6 and ARP, with both kinds of table.
    #[test]
    fn burst_routing_matches_one_packet_routing() {
        use crate::lookup::EmRouter;
        use mempool::{Mempool, PoolConfig};

        fn v6(dst: &str, hops: u8) -> Vec<u8> {
            let mut f = vec![0u8; 14 + 48];
            f[12..14].copy_from_slice(&[0x86, 0xdd]);
            f[14] = 0x60;
            f[18..20].copy_from_slice(&8u16.to_be_bytes());
            f[20] = 17;
            f[21] = hops;
            f[38..54].copy_from_slice(&dst.parse::<std::net::Ipv6Addr>().unwrap().octets());
            f
        }
        let mut frames = Vec::new();
        for i in 0..40u8 {
            frames.push(match i % 8 {
                0 => ipv4([198, 18, i % 8, i], 64),
                1 => ipv4([10, 9, 8, i], 5),
                2 => v6("2001:200:0:3::1", 9),
                3 => v6("2001:db8::1", 9),
                4 => ipv4([198, 18, 2, 0], 1),
                5 => {
                    let mut arp = vec![0u8; 60];
                    arp[12..14].copy_from_slice(&[8, 6]);
                    arp
                }
                6 => {
                    // The built-in EM flow to port 2 (UDP 9 -> 9).
                    let mut f = ipv4([198, 18, 2, 0], 64);
                    f[26..30].copy_from_slice(&[198, 18, 2, 1]);
                    f[34..38].copy_from_slice(&[0, 9, 0, 9]);
                    let c = !pkthdr::checksum::data(&{
                        let mut h = f[14..34].to_vec();
                        h[10..12].fill(0);
                        h
                    });
                    f[24..26].copy_from_slice(&c.to_be_bytes());
                    f
                }
                _ => {
                    let mut f = ipv4([198, 18, 1, i], 64);
                    f[25] ^= 1;
                    f
                }
            });
        }
        let pool = Mempool::new(
            &format!("l3fwd-burst-{}", std::process::id()),
            &PoolConfig::with_size(256),
            &hugepage::Allocator::no_huge(),
        )
        .unwrap();
        fn check<R: Router>(r: &R, frames: &[Vec<u8>], pool: &Mempool) -> Vec<Result<u16, Drop>> {
            let mut br = BurstRouter::<R>::default();
            let mut all = Vec::new();
            for chunk in frames.chunks(MAX_PKT_BURST) {
                let mut pkts: Vec<Mbuf> = chunk
                    .iter()
                    .map(|f| {
                        let mut m = pool.alloc().unwrap();
                        m.append(f.len() as u16).unwrap().copy_from_slice(f);
                        m
                    })
                    .collect();
                let one_port = br.route_burst(&mut pkts, 7, r);
                let outputs: Vec<_> = (0..pkts.len()).map(|i| br.output(i)).collect();
                let same = outputs.iter().all(|o| o.is_ok() && *o == outputs[0]);
                assert_eq!(one_port, same.then(|| outputs[0].unwrap()), "{outputs:?}");
                for (i, (m, f)) in pkts.iter().zip(chunk).enumerate() {
                    let mut one = f.clone();
                    let want = route(&mut one, 7, r);
                    assert_eq!(br.output(i), want, "packet {i}");
                    if want.is_ok() {
                        assert_eq!(m.data(), &one[..], "packet {i}'s bytes");
                    }
                    all.push(want);
                }
            }
            all
        }
        let lpm = check(&router(), &frames, &pool);
        let em = check(&EmRouter::new(&routes::default_em4(), &routes::default_em6(), 1024).unwrap(), &frames, &pool);
        // The mix really has hits, misses and drops.
        for got in [&lpm, &em] {
            assert!(got.contains(&Ok(7)) && got.contains(&Ok(2)), "{got:?}");
            assert!(got.contains(&Err(Drop::TtlExceeded)) && got.contains(&Err(Drop::BadChecksum)), "{got:?}");
        }
        assert!(lpm.contains(&Ok(3)), "{lpm:?}");
        assert!(pool.is_full());
    }

    /// Bursts of plain IPv4 (the fast path's case): all to one port, all missing, and mixed ports.
    #[test]
    fn plain_ipv4_bursts_report_their_one_port() {
        use mempool::{Mempool, PoolConfig};
        let pool = Mempool::new(
            &format!("l3fwd-plain-{}", std::process::id()),
            &PoolConfig::with_size(128),
            &hugepage::Allocator::no_huge(),
        )
        .unwrap();
        let r = router();
        let mut br = BurstRouter::<LpmRouter>::default();
        let mut burst = |dsts: &[[u8; 4]]| {
            let mut pkts: Vec<Mbuf> = dsts
                .iter()
                .map(|&d| {
                    let f = ipv4(d, 64);
                    let mut m = pool.alloc().unwrap();
                    m.append(f.len() as u16).unwrap().copy_from_slice(&f);
                    m
                })
                .collect();
            let one = br.route_burst(&mut pkts, 5, &r);
            let outs: Vec<_> = (0..dsts.len()).map(|i| br.output(i)).collect();
            assert!(pkts.iter().all(|m| m.data()[22] == 63), "TTL rewritten");
            (one, outs)
        };
        let to1 = [[198, 18, 1, 9]; MAX_PKT_BURST];
        assert_eq!(burst(&to1), (Some(1), vec![Ok(1); MAX_PKT_BURST]));
        assert_eq!(burst(&[[10, 0, 0, 1]; 3]), (Some(5), vec![Ok(5); 3]), "misses go back to the input port");
        let (one, outs) = burst(&[[198, 18, 1, 9], [198, 18, 2, 9], [10, 0, 0, 1]]);
        assert_eq!((one, outs), (None, vec![Ok(1), Ok(2), Ok(5)]));
        assert_eq!(burst(&[]), (None, vec![]));
        assert!(pool.is_full());
    }

    /// [`fast_v4`] against [`validate`] on many damaged headers: when the fast path takes a frame, validate finds
    /// it valid IPv4 and writes the same bytes; when it declines, it wrote nothing and (options aside) validate
    /// does not find valid IPv4 either.
    #[test]
    fn fast_path_agrees_with_validate() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let fix_checksum = |f: &mut Vec<u8>| {
            f[24..26].fill(0);
            let c = !pkthdr::checksum::data(&f[14..34]);
            f[24..26].copy_from_slice(&c.to_be_bytes());
        };
        let (mut taken, mut declined) = (0, 0);
        for round in 0..200_000u32 {
            let mut f = ipv4([198, 18, (round >> 8) as u8, round as u8], 2 + (round % 254) as u8);
            let r = next();
            // Damage one byte of the Ethernet type or IP header, or none.
            if r & 3 != 0 {
                let at = 12 + (r >> 8) as usize % 22;
                f[at] = (r >> 32) as u8;
            }
            match (r >> 40) % 4 {
                0 => fix_checksum(&mut f),
                // The one's complement edge: the rest of the header sums to 0xffff, so 0x0000 is the right
                // checksum and 0xffff the other encoding of it, which validate rejects.
                1 => {
                    f[18..20].fill(0);
                    f[24..26].fill(0);
                    let x = pkthdr::checksum::data(&f[14..34]);
                    f[18..20].copy_from_slice(&(0xffff - x).to_be_bytes());
                    let c = if r & (1 << 50) != 0 { 0xffff } else { 0 };
                    f[24..26].copy_from_slice(&u16::to_be_bytes(c));
                }
                _ => {}
            }
            let cut = if (r >> 52) % 8 == 0 { (r >> 56) as usize % f.len() } else { f.len() };
            // One in four: the cut is the first segment of a chain holding the whole frame.
            let pkt_len = if (r >> 44) % 4 == 0 { f.len() } else { cut };
            let mut fast = f[..cut].to_vec();
            let mut slow = fast.clone();
            let before = fast.clone();
            if fast_v4(&mut fast, pkt_len) {
                taken += 1;
                assert_eq!(validate(&mut slow, pkt_len), Ok(Class::V4), "round {round}: {before:02x?}");
                assert_eq!(fast, slow, "round {round}");
            } else {
                declined += 1;
                assert_eq!(fast, before, "round {round}: declined but wrote");
                // Headers with options are validate's alone; a plain valid one must not be left to it.
                if before.get(14) == Some(&0x45) {
                    assert_ne!(validate(&mut slow, pkt_len), Ok(Class::V4), "round {round}: declined {before:02x?}");
                }
            }
        }
        assert!(taken > 50_000 && declined > 50_000, "{taken} taken, {declined} declined");
    }

    #[test]
    fn malformed_packets_are_dropped_by_reason() {
        let r = router();
        let mut f = ipv4([198, 18, 1, 9], 64);
        f[25] ^= 1;
        assert_eq!(route(&mut f, 0, &r), Err(Drop::BadChecksum));
        assert_eq!(route(&mut ipv4([198, 18, 1, 9], 1), 0, &r), Err(Drop::TtlExceeded));
        assert_eq!(route(&mut ipv4([198, 18, 1, 9], 0), 0, &r), Err(Drop::TtlExceeded));
        let mut f = ipv4([198, 18, 1, 9], 64);
        f[14] = 0x55;
        assert_eq!(route(&mut f, 0, &r), Err(Drop::BadVersion));
        let mut f = ipv4([198, 18, 1, 9], 64);
        f[14] = 0x44;
        assert_eq!(route(&mut f, 0, &r), Err(Drop::BadHeaderLength));
        let mut f = ipv4([198, 18, 1, 9], 64);
        f[16..18].copy_from_slice(&200u16.to_be_bytes());
        assert_eq!(route(&mut f, 0, &r), Err(Drop::Truncated));
        assert_eq!(route(&mut ipv4([198, 18, 1, 9], 64)[..30].to_vec(), 0, &r), Err(Drop::Truncated));
        assert_eq!(route(&mut [0u8; 10], 0, &r), Err(Drop::Truncated));
        let mut v6 = vec![0u8; 14 + 40];
        v6[12..14].copy_from_slice(&[0x86, 0xdd]);
        v6[14] = 0x60;
        v6[21] = 1;
        assert_eq!(route(&mut v6, 0, &r), Err(Drop::TtlExceeded));
        v6[21] = 64;
        assert_eq!(route(&mut v6, 4, &r), Ok(4));
        v6[14] = 0x40;
        assert_eq!(route(&mut v6, 0, &r), Err(Drop::BadVersion));
    }

    /// A jumbo IPv4 header (total length `total`) at the start of a first segment of `seg` bytes.
    fn jumbo_v4(dst: [u8; 4], ttl: u8, total: u16, seg: usize) -> Vec<u8> {
        let mut f = ipv4(dst, ttl);
        f.resize(seg, 0x5a);
        f[16..18].copy_from_slice(&total.to_be_bytes());
        f[24..26].fill(0);
        let c = !pkthdr::checksum::data(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f
    }

    /// A chain's IP lengths are checked against the whole packet (DPDK checks `m->pkt_len`), its header in the
    /// first segment: a complete jumbo frame forwards with the same rewrite, a chain shorter than its IP length is
    /// truncated, and the other reasons keep their order.
    #[test]
    fn chained_jumbo_frames_are_checked_against_the_whole_packet() {
        let total = 9000u16 - 14;
        let mut first = jumbo_v4([198, 18, 1, 9], 64, total, 2048);
        let before = first.clone();
        assert!(fast_v4(&mut first, 9000));
        assert_eq!(first[22], 63);
        assert!(Ipv4Packet::new_unchecked(&first[14..34]).verify_checksum());
        let mut slow = before.clone();
        assert_eq!(validate(&mut slow, 9000), Ok(Class::V4));
        assert_eq!(slow, first);
        // Without the rest of the chain the same segment is a truncated packet.
        assert!(!fast_v4(&mut before.clone(), 2048));
        assert_eq!(validate(&mut before.clone(), 2048), Err(Drop::Truncated));
        // A chain shorter than the IP total length.
        assert_eq!(validate(&mut before.clone(), 8999), Err(Drop::Truncated));
        // Options: validate's alone, then the same checks.
        let mut opts = jumbo_v4([198, 18, 1, 9], 64, total, 2048);
        opts[14] = 0x46;
        opts[24..26].fill(0);
        let c = !pkthdr::checksum::data(&opts[14..38]);
        opts[24..26].copy_from_slice(&c.to_be_bytes());
        assert!(!fast_v4(&mut opts.clone(), 9000));
        assert_eq!(validate(&mut opts, 9000), Ok(Class::V4));
        // Headers that do not fit the first segment.
        assert_eq!(validate(&mut before[..20].to_vec(), 9000), Err(Drop::Truncated));
        assert_eq!(validate(&mut before[..30].to_vec(), 9000), Err(Drop::Truncated));
        let mut long_hdr = before.clone();
        long_hdr[14] = 0x4f;
        assert_eq!(validate(&mut long_hdr[..60].to_vec(), 9000), Err(Drop::Truncated));
        // The other reasons, in the single-segment order.
        for (at, value, want) in
            [(14, 0x55, Drop::BadVersion), (14, 0x44, Drop::BadHeaderLength), (25, before[25] ^ 1, Drop::BadChecksum)]
        {
            let mut f = before.clone();
            f[at] = value;
            assert_eq!(validate(&mut f, 9000), Err(want), "byte {at} = {value:#x}");
        }
        let mut small_total = before.clone();
        small_total[16..18].copy_from_slice(&10u16.to_be_bytes());
        assert_eq!(validate(&mut small_total, 9000), Err(Drop::BadHeaderLength));
        assert_eq!(validate(&mut jumbo_v4([198, 18, 1, 9], 1, total, 2048), 9000), Err(Drop::TtlExceeded));
        // IPv6: the payload length against the whole packet.
        let mut v6 = vec![0u8; 2048];
        v6[12..14].copy_from_slice(&[0x86, 0xdd]);
        v6[14] = 0x60;
        v6[18..20].copy_from_slice(&(9000u16 - 54).to_be_bytes());
        v6[21] = 64;
        assert_eq!(validate(&mut v6.clone(), 9000), Ok(Class::V6));
        assert_eq!(validate(&mut v6.clone(), 8000), Err(Drop::Truncated));
        assert_eq!(validate(&mut v6[..40].to_vec(), 9000), Err(Drop::Truncated));
        v6[21] = 1;
        assert_eq!(validate(&mut v6.clone(), 9000), Err(Drop::TtlExceeded));
        v6[14] = 0x40;
        assert_eq!(validate(&mut v6, 9000), Err(Drop::BadVersion));
    }

    /// The burst path reads the packet length from the mbuf: a real chain of two buffers routes to its port.
    #[test]
    fn burst_routing_forwards_a_chain_whole() {
        use mempool::{Mempool, PoolConfig};
        let pool = Mempool::new(
            &format!("l3fwd-chain-{}", std::process::id()),
            &PoolConfig::with_size(64),
            &hugepage::Allocator::no_huge(),
        )
        .unwrap();
        let total = 3000u16 - 14;
        let first = jumbo_v4([198, 18, 2, 9], 64, total, 1500);
        let mut head = pool.alloc().unwrap();
        head.append(1500).unwrap().copy_from_slice(&first);
        let mut tail = pool.alloc().unwrap();
        tail.append(1500).unwrap().fill(0x5a);
        head.chain(tail);
        assert_eq!((head.pkt_len(), head.nb_segs()), (3000, 2));
        let mut short = pool.alloc().unwrap();
        short.append(1500).unwrap().copy_from_slice(&first);
        let mut pkts = vec![head, short];
        let mut br = BurstRouter::<LpmRouter>::default();
        assert_eq!(br.route_burst(&mut pkts, 0, &router()), None);
        assert_eq!(br.output(0), Ok(2));
        assert_eq!(br.output(1), Err(Drop::Truncated));
        assert_eq!(pkts[0].data()[22], 63);
        drop(pkts);
        assert!(pool.is_full());
    }
}
