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

use crate::lookup::{Router, FIXED_LEN, NO_ROUTE};

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
    match frame.first_chunk_mut::<{ IP_AT + V4_HEADER_LEN }>() {
        Some(h) => fast_v4_header(h, len),
        None => false,
    }
}

/// [`fast_v4`] on the frame's first 34 bytes, `len` the packet's whole length (at least 34: the caller has the
/// header). Three 8-byte loads cover the EtherType and the IP header; one 8-byte store writes TTL and checksum.
#[inline(always)]
fn fast_v4_header(h: &mut [u8; IP_AT + V4_HEADER_LEN], len: usize) -> bool {
    // Little-endian words of bytes 12..20 (EtherType, version/IHL, DSCP, total length, id), 20..28 (fragment,
    // TTL, protocol, checksum, source address's first half) and 26..34 (source and destination addresses).
    let x = u64::from_le_bytes(*h[12..].first_chunk().expect("in header"));
    let y = u64::from_le_bytes(*h[v4_word::Y_AT..].first_chunk().expect("in header"));
    let z = u64::from_le_bytes(*h[26..].first_chunk().expect("in header"));
    let total = u16::from_be_bytes([h[IP_AT + v4_at::TOTAL_LEN], h[IP_AT + v4_at::TOTAL_LEN + 1]]) as usize;
    let ttl = h[IP_AT + v4_at::TTL];
    // The checksum field's little-endian view: its 0xffff is the same in either order.
    let c = (y >> v4_word::CHECKSUM_SHIFT) as u16;
    // The one's complement sum of the ten header words (14..34): x without the EtherType, y's first six bytes,
    // all of z, each a run of whole 16-bit words (in swapped byte order, which the sum's 0xffff test ignores).
    let sum = ones_complement_add((x >> 16) + (y & 0xffff_ffff_ffff), z);
    let sum = ones_complement_fold16(sum);
    let ok = (x & 0xff_ffff == v4_word::ETHERTYPE_VERSION)
        & (total >= V4_HEADER_LEN)
        & (total <= len - IP_AT)
        & (ttl > 1)
        & (sum == 0xffff)
        & (c != 0xffff);
    if !ok {
        return false;
    }
    // One TTL less and one more on the checksum's little-endian view: that is `checksum_after_ttl_decrement` on
    // the big-endian field (its 0x0100 carries into the low byte exactly when the LE view's +1 carries into the
    // high byte), with no end-around carry to fold because the field is not 0xffff. The TTL is above 1, so the
    // decrement borrows nothing either.
    let y = y.wrapping_add(v4_word::TTL_DECREMENT);
    h[v4_word::Y_AT..v4_word::Y_AT + 8].copy_from_slice(&y.to_le_bytes());
    true
}

/// The fast path's 8-byte words of a frame (little-endian loads).
mod v4_word {
    /// The word with fragment, TTL, protocol and checksum starts at frame byte 20.
    pub const Y_AT: usize = 20;
    /// Bytes 12, 13, 14 of the first word (from frame byte 12): EtherType 0x0800, then version/IHL 0x45.
    pub const ETHERTYPE_VERSION: u64 = 0x45_00_08;
    /// The checksum field's place in word y.
    pub const CHECKSUM_SHIFT: u32 = 32;
    /// Added to word y: TTL (bits 16..24) minus one, the checksum's little-endian view (bits 32..48) plus one.
    pub const TTL_DECREMENT: u64 = (1 << CHECKSUM_SHIFT) - (1 << 16);
}

/// `a + b` in 64-bit one's complement (the carry out comes back in at the bottom).
#[inline(always)]
fn ones_complement_add(a: u64, b: u64) -> u64 {
    let (s, carry) = a.overflowing_add(b);
    s + carry as u64
}

/// A 64-bit one's complement sum folded to 16 bits, each fold an add with end-around carry.
#[inline(always)]
fn ones_complement_fold16(s: u64) -> u16 {
    let (s, c) = (s as u32).overflowing_add((s >> 32) as u32);
    let s = s + c as u32;
    let (s, c) = (s as u16).overflowing_add((s >> 16) as u16);
    s + c as u16
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
                    // Fixed offsets when the frame holds the key's bytes: no per-field length checks.
                    self.keys4[n4] = match frame.first_chunk::<FIXED_LEN>() {
                        Some(f) => router.key4_fixed(f),
                        None => router.key4(&frame[IP_AT..]),
                    };
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
    /// l3fwd-power: times the lcore slept on its RX queues' interrupts.
    pub sleeps: Counter,
    /// l3fwd-power: wake-ups by a queue's descriptor (the rest were the stop check's timeout).
    pub wakeups: Counter,
}

impl LcoreCounters {
    /// Zeroed counters for `nb_ports` ports.
    pub fn new(nb_ports: usize) -> LcoreCounters {
        LcoreCounters {
            rx: (0..nb_ports).map(|_| Counter::default()).collect(),
            tx: (0..nb_ports).map(|_| Counter::default()).collect(),
            dropped: Default::default(),
            sleeps: Counter::default(),
            wakeups: Counter::default(),
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
    /// l3fwd-power: sleep on the RX queues' interrupts when idle (`None`: l3fwd, always polling).
    pub power: Option<crate::params::PowerMode>,
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

/// One round over the lcore's RX queues: each burst routed and sent. Returns the packets received.
#[inline(always)]
fn round<R: Router, const TAP: bool>(l: &mut Lcore, router: &R, b: &mut PacketBatch, br: &mut BurstRouter<R>) -> usize {
    let c = &*l.counters;
    let mut got = 0;
    for u in l.units.iter_mut() {
        let n = u.rx.rx_burst(b);
        if TAP {
            u.tap.observe(b.as_slice());
        }
        if n == 0 {
            continue;
        }
        c.rx[u.port as usize].add(n as u64);
        got += n;
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
            let sent = t.tx.tx_burst(b);
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
    got
}

#[inline(never)]
fn run<R: Router, const TAP: bool>(l: &mut Lcore, router: &R, stop: &AtomicBool, mut tick: impl FnMut()) {
    let mut b = PacketBatch::with_capacity(MAX_PKT_BURST);
    let mut br = BurstRouter::<R>::default();
    match l.power {
        None => {
            while !stop.load(Ordering::Relaxed) {
                round::<R, TAP>(l, router, &mut b, &mut br);
                tick();
            }
        }
        Some(mode) => {
            let mut idle = crate::power::Idle::new(mode);
            while !stop.load(Ordering::Relaxed) {
                let n = round::<R, TAP>(l, router, &mut b, &mut br);
                if idle.after_round(n) {
                    crate::power::sleep_until_rx(&mut l.units, &l.counters);
                }
                tick();
            }
        }
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
mod tests;
