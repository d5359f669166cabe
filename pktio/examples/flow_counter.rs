//! A small custom dataplane written against pktio's public API: it receives on one port, drops frames not
//! addressed to it (a MAC filter), counts packets and bytes per flow (IPv4 5-tuple), and forwards the rest to a
//! second port. It needs no hardware: the ports are software `net_ring` pairs, with a traffic thread that
//! generates UDP/TCP frames on one side and swallows the forwarded ones on the other.
//!
//! ```text
//!   traffic thread                         dataplane (this example's point)
//!   net_ring0 (tx) ==link "fc_in"==> net_ring1 (rx) -> MAC filter -> flow table -> net_ring2 (tx)
//!   net_ring3 (rx) <==link "fc_out"========================================================'
//! ```
//!
//! Run: `cargo run --release -p pktio --example flow_counter -- [--packets N] [--seconds S] [--flows F]
//! [--interval-ms MS]` (defaults: 20000000 packets, at most 10 seconds, 64 flows, a rate line every 1000 ms).
//!
//! The run ends as soon as every packet the traffic thread managed to send has arrived (or at the time limit). The
//! rates are taken over the time the packets took, from the first to the last arrival, so the final rate is the
//! time-weighted mean of the per-interval lines (the last, partial, interval is printed too).
//!
//! Per-flow state lives in [`FlowTable`]: a fixed-size open-addressing table allocated once, with a
//! multiplicative hash of the 5-tuple. That is the pattern to copy for a hot path: no allocation, no rehashing
//! and no SipHash per packet, as a default `std::collections::HashMap` would cost; when the table is full, new
//! flows are counted as untracked instead of growing it.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pktio::mempool::lcore;
use pktio::{EthDev, MacAddr, Mbuf, Mempool, PacketBatch, PoolConfig, PortConfig, RxQueue, TxQueue};
use swports::open_vdev;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_ARP: u16 = 0x0806;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;

struct Options {
    packets: u64,
    seconds: u64,
    flows: u32,
    interval: Duration,
    table_slots: usize,
}

const USAGE: &str = "usage: flow_counter [--packets N] [--seconds S] [--flows F] [--interval-ms MS] [--table-slots N]";

fn parse_args() -> Result<Options, String> {
    let mut o =
        Options { packets: 20_000_000, seconds: 10, flows: 64, interval: Duration::from_secs(1), table_slots: 1 << 16 };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| -> Result<u64, String> {
            let v = args.next().ok_or(format!("{name} needs a value"))?;
            v.parse().map_err(|_| format!("{name} {v}: not a number"))
        };
        match arg.as_str() {
            "--packets" | "-n" => o.packets = value("--packets")?,
            "--seconds" | "-t" => o.seconds = value("--seconds")?,
            "--flows" | "-f" => o.flows = value("--flows")?.clamp(1, 65_536) as u32,
            "--interval-ms" => o.interval = Duration::from_millis(value("--interval-ms")?.max(1)),
            "--table-slots" => o.table_slots = value("--table-slots")?.clamp(16, 1 << 24) as usize,
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    if o.packets == 0 || o.seconds == 0 {
        return Err("--packets and --seconds must be at least 1".into());
    }
    Ok(o)
}

/// An IPv4 flow: addresses, protocol and ports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
struct FlowKey {
    src: u32,
    dst: u32,
    sport: u16,
    dport: u16,
    proto: u8,
}

impl FlowKey {
    /// A 64-bit hash: the 5-tuple folded into one word and multiplied by a large odd constant (Fibonacci
    /// hashing); the table takes the high bits, which the multiplication mixes best.
    #[inline]
    fn hash(&self) -> u64 {
        let ports = (u64::from(self.sport) << 24) | (u64::from(self.dport) << 8) | u64::from(self.proto);
        let addrs = (u64::from(self.src) << 32) | u64::from(self.dst);
        (addrs ^ ports.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
}

impl std::fmt::Display for FlowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let proto = match self.proto {
            PROTO_TCP => "tcp",
            PROTO_UDP => "udp",
            _ => "ip",
        };
        let (src, dst) = (Ipv4Addr::from(self.src), Ipv4Addr::from(self.dst));
        write!(f, "{proto} {src}:{} -> {dst}:{}", self.sport, self.dport)
    }
}

/// Counters of one flow.
#[derive(Debug, Clone, Copy, Default)]
struct FlowStats {
    packets: u64,
    bytes: u64,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    used: bool,
    key: FlowKey,
    stats: FlowStats,
}

/// Per-flow counters with a fixed capacity: open addressing with linear probing over a power-of-two array
/// allocated up front. Flows are never removed (a real dataplane would age them out with a timestamp per slot).
struct FlowTable {
    slots: Box<[Slot]>,
    shift: u32,
    len: usize,
    /// Packets of flows that found no free slot within [`FlowTable::MAX_PROBE`] probes.
    untracked: u64,
}

impl FlowTable {
    /// Probes before giving up: keeps the worst case bounded when the table fills up.
    const MAX_PROBE: usize = 32;

    /// A table of at least `slots` slots (rounded up to a power of two). Keep it at most half full.
    fn new(slots: usize) -> Self {
        let n = slots.next_power_of_two().max(16);
        FlowTable {
            slots: vec![Slot::default(); n].into_boxed_slice(),
            shift: 64 - n.trailing_zeros(),
            len: 0,
            untracked: 0,
        }
    }

    /// The slot holding `key`, or the free slot where it goes; `None` when the probe sequence is all taken.
    #[inline]
    fn find(&self, key: &FlowKey) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let mut i = (key.hash() >> self.shift) as usize;
        for _ in 0..Self::MAX_PROBE.min(self.slots.len()) {
            let slot = &self.slots[i];
            if !slot.used || slot.key == *key {
                return Some(i);
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// The counters of `key`, inserted at zero if new; `None` when the table is too full to take it.
    #[inline]
    fn entry(&mut self, key: &FlowKey) -> Option<&mut FlowStats> {
        let slot = &mut self.slots[self.find(key)?];
        if !slot.used {
            *slot = Slot { used: true, key: *key, stats: FlowStats::default() };
            self.len += 1;
        }
        Some(&mut slot.stats)
    }

    /// Counts one packet of `bytes` bytes for `key`.
    #[inline]
    fn count(&mut self, key: &FlowKey, bytes: u32) {
        match self.entry(key) {
            Some(s) => {
                s.packets += 1;
                s.bytes += u64::from(bytes);
            }
            None => self.untracked += 1,
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    /// The flows and their counters (not on the hot path).
    fn iter(&self) -> impl Iterator<Item = (FlowKey, FlowStats)> + '_ {
        self.slots.iter().filter(|s| s.used).map(|s| (s.key, s.stats))
    }
}

/// What the dataplane makes of a frame.
enum Verdict {
    /// Not for us (MAC filter).
    Drop,
    /// IPv4 with a 5-tuple.
    Flow(FlowKey),
    /// Anything else we let through (ARP, IPv6, ...).
    Other,
}

fn classify(frame: &[u8], our_mac: MacAddr) -> Verdict {
    if frame.len() < 14 {
        return Verdict::Drop;
    }
    let dst = MacAddr(frame[0..6].try_into().unwrap());
    if dst != our_mac && !dst.is_multicast() {
        return Verdict::Drop;
    }
    if u16::from_be_bytes([frame[12], frame[13]]) != ETHERTYPE_IPV4 || frame.len() < 14 + 20 {
        return Verdict::Other;
    }
    let ip = &frame[14..];
    let ihl = (ip[0] & 0x0f) as usize * 4;
    let proto = ip[9];
    let src = u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]);
    let dst = u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]);
    let (sport, dport) = match (proto, ip.get(ihl..ihl + 4)) {
        (PROTO_TCP | PROTO_UDP, Some(l4)) => (u16::from_be_bytes([l4[0], l4[1]]), u16::from_be_bytes([l4[2], l4[3]])),
        _ => (0, 0),
    };
    Verdict::Flow(FlowKey { src, dst, sport, dport, proto })
}

/// Writes a 64-byte frame (60 without the CRC) of flow `flow` to `dst_mac`; one in 16 is ARP.
fn build_frame(m: &mut Mbuf, flow: u32, seq: u64, src_mac: MacAddr, dst_mac: MacAddr) {
    let frame = m.append(60).expect("60 bytes fit any buffer");
    frame.fill(0);
    frame[0..6].copy_from_slice(&dst_mac.0);
    frame[6..12].copy_from_slice(&src_mac.0);
    if seq % 16 == 15 {
        frame[12..14].copy_from_slice(&ETHERTYPE_ARP.to_be_bytes());
        return;
    }
    frame[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let ip = &mut frame[14..];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&46u16.to_be_bytes());
    ip[8] = 64;
    let proto = if flow % 4 == 3 { PROTO_TCP } else { PROTO_UDP };
    ip[9] = proto;
    ip[12..16].copy_from_slice(&[10, 0, (flow >> 8) as u8, flow as u8]);
    ip[16..20].copy_from_slice(&[192, 168, 0, 1]);
    let l4 = &mut ip[20..];
    l4[0..2].copy_from_slice(&(1024 + (flow % 60_000) as u16).to_be_bytes());
    l4[2..4].copy_from_slice(&(if proto == PROTO_TCP { 80u16 } else { 53 }).to_be_bytes());
}

fn open_port(devargs: &str, port_id: u16, pool: &Mempool) -> Box<dyn EthDev> {
    let mut dev = open_vdev(devargs).unwrap_or_else(|e| fail(&format!("{devargs}: {e}")));
    dev.set_port_id(port_id);
    dev.configure(&PortConfig::default()).unwrap_or_else(|e| fail(&e.to_string()));
    dev.start(pool).unwrap_or_else(|e| fail(&e.to_string()));
    dev
}

fn fail(msg: &str) -> ! {
    eprintln!("flow_counter: {msg}");
    std::process::exit(1);
}

/// What the traffic thread tells the dataplane: how many packets the `net_ring` accepted so far, and whether it
/// has finished (nothing more will be sent).
#[derive(Default)]
struct TrafficState {
    sent: AtomicU64,
    finished: AtomicBool,
    /// Set by the dataplane at its time limit.
    stop: AtomicBool,
}

/// Prints one rate line for the interval `[from, to)` in which `rx` packets were received and `fwd` forwarded. The
/// time printed is the interval's end, counted from the first packet: the lines tile the time the packets took.
fn rate_line(first_rx: Instant, from: Instant, to: Instant, rx: u64, fwd: u64, filtered: u64, flows: usize) {
    let dt = to.duration_since(from).as_secs_f64().max(1e-9);
    println!(
        "  {:8.4} s  rx {:>8.3} Mpps  fwd {:>8.3} Mpps  filtered {filtered}  flows {flows}",
        to.duration_since(first_rx).as_secs_f64(),
        rx as f64 / dt / 1e6,
        fwd as f64 / dt / 1e6,
    );
}

fn main() {
    let opts = parse_args().unwrap_or_else(|e| fail(&e));
    let pool = Mempool::new("flow_counter", &PoolConfig::with_size(8191), &hugepage::Allocator::no_huge())
        .unwrap_or_else(|e| fail(&e.to_string()));

    // Ports 0 and 3 belong to the traffic thread, 1 and 2 to the dataplane.
    let mut gen_tx_port = open_port("net_ring0,link=fc_in", 0, &pool);
    let mut in_port = open_port("net_ring1,link=fc_in", 1, &pool);
    let mut out_port = open_port("net_ring2,link=fc_out", 2, &pool);
    let mut sink_port = open_port("net_ring3,link=fc_out", 3, &pool);
    let our_mac = in_port.mac_addr();
    let other_mac = MacAddr::local_from(0xdead);
    println!(
        "flow_counter: {} packets or {} s, {} flows; in port {} ({our_mac}), out port {}",
        opts.packets,
        opts.seconds,
        opts.flows,
        in_port.info().device_name,
        out_port.info().device_name
    );

    let state = Arc::new(TrafficState::default());
    let traffic = {
        let (pool, state) = (pool.clone(), state.clone());
        let mut tx = gen_tx_port.tx_queue(0).unwrap_or_else(|e| fail(&e.to_string()));
        let mut rx = sink_port.rx_queue(0).unwrap_or_else(|e| fail(&e.to_string()));
        let src_mac = gen_tx_port.mac_addr();
        let (packets, flows) = (opts.packets, opts.flows);
        std::thread::spawn(move || {
            let _lcore = lcore::bind_current_thread(1).ok();
            let mut out = PacketBatch::new();
            let mut sunk = PacketBatch::new();
            let (mut generated, mut sent, mut swallowed) = (0u64, 0u64, 0u64);
            loop {
                let stop = state.stop.load(Ordering::Acquire);
                if !stop && generated < packets {
                    let want = (out.remaining() as u64).min(packets - generated) as usize;
                    if want > 0 && out.alloc_from(&pool, want) {
                        let start = out.len() - want;
                        for m in &mut out.as_mut_slice()[start..] {
                            // One frame in 32 goes to a MAC the dataplane does not own: its filter drops it.
                            let dst = if generated % 32 == 7 { other_mac } else { our_mac };
                            build_frame(m, (generated % flows as u64) as u32, generated, src_mac, dst);
                            generated += 1;
                        }
                    }
                }
                // Keep offering what the ring did not take, the last partial burst included: only what
                // tx_burst accepted counts as sent.
                if !stop && !out.is_empty() {
                    let n = tx.tx_burst(&mut out);
                    if n > 0 {
                        sent += n as u64;
                        state.sent.store(sent, Ordering::Release);
                    }
                }
                if (stop || generated == packets) && out.is_empty() && !state.finished.load(Ordering::Relaxed) {
                    state.finished.store(true, Ordering::Release);
                }
                let n = rx.rx_burst(&mut sunk);
                swallowed += n as u64;
                sunk.clear();
                if stop && n == 0 {
                    break;
                }
                if n == 0 && (generated >= packets || !out.is_empty()) {
                    std::thread::yield_now();
                }
            }
            // Generated but never accepted by the ring (time limit): freed here, reported as not sent.
            let unsent = out.len() as u64;
            drop(out);
            (generated, sent, unsent, swallowed)
        })
    };

    // The dataplane.
    let _lcore = lcore::bind_current_thread(0).ok();
    let mut rx = in_port.rx_queue(0).unwrap_or_else(|e| fail(&e.to_string()));
    let mut tx = out_port.tx_queue(0).unwrap_or_else(|e| fail(&e.to_string()));
    let mut flows = FlowTable::new(opts.table_slots);
    let mut batch = PacketBatch::new();
    let (mut received, mut forwarded, mut filtered, mut other, mut tx_full) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let run_start = Instant::now();
    let deadline = run_start + Duration::from_secs(opts.seconds);
    // The clock of the rates starts with the first packet and stops with the last one.
    let (mut first_rx, mut last_rx_at) = (None::<Instant>, run_start);
    let mut next_report = run_start;
    let (mut last_rx, mut last_fwd, mut last_t) = (0u64, 0u64, run_start);
    let mut polls = 0u32;
    let mut timed_out = false;
    loop {
        let n = rx.rx_burst(&mut batch);
        if n > 0 {
            received += n as u64;
            let now = Instant::now();
            last_rx_at = now;
            if first_rx.is_none() {
                first_rx = Some(now);
                (last_t, next_report) = (now, now + opts.interval);
            }
        }
        batch.retain(|m| match classify(m.data(), our_mac) {
            Verdict::Drop => {
                filtered += 1;
                false
            }
            Verdict::Flow(key) => {
                flows.count(&key, m.pkt_len());
                true
            }
            Verdict::Other => {
                other += 1;
                true
            }
        });
        while !batch.is_empty() {
            let sent = tx.tx_burst(&mut batch);
            forwarded += sent as u64;
            if sent == 0 {
                // The out ring is full: count it and drop the rest, as a real dataplane would.
                tx_full += batch.len() as u64;
                batch.clear();
            }
        }
        if n == 0 {
            // Done when the traffic thread has finished and everything it sent has arrived. `finished` is read
            // before `sent`, so the count is final.
            if state.finished.load(Ordering::Acquire) && received == state.sent.load(Ordering::Acquire) {
                break;
            }
            std::thread::yield_now();
        }
        polls = polls.wrapping_add(1);
        if polls & 255 == 0 || n == 0 {
            let now = Instant::now();
            if let Some(first) = first_rx.filter(|_| now >= next_report) {
                rate_line(first, last_t, now, received - last_rx, forwarded - last_fwd, filtered, flows.len());
                (last_rx, last_fwd, last_t) = (received, forwarded, now);
                next_report = now + opts.interval;
            }
            if now >= deadline {
                timed_out = true;
                break;
            }
        }
    }
    let first_rx = first_rx.unwrap_or(run_start);
    if received > last_rx {
        // The last, partial interval, up to the last arrival.
        rate_line(first_rx, last_t, last_rx_at, received - last_rx, forwarded - last_fwd, filtered, flows.len());
    }
    if timed_out {
        println!("  time limit reached");
    }
    state.stop.store(true, Ordering::Release);
    let (generated, sent, unsent, swallowed) = traffic.join().expect("traffic thread");
    drop((rx, tx));

    let mut top: Vec<(FlowKey, FlowStats)> = flows.iter().collect();
    top.sort_by(|a, b| b.1.packets.cmp(&a.1.packets).then(a.0.cmp(&b.0)));
    println!(
        "\nbusiest flows ({} in all; {} packets of flows the full table could not take):",
        top.len(),
        flows.untracked
    );
    for (key, s) in top.iter().take(8) {
        println!("  {key:<44} {:>10} packets {:>12} bytes", s.packets, s.bytes);
    }
    let in_flows: u64 = top.iter().map(|(_, s)| s.packets).sum::<u64>() + flows.untracked;
    let took = last_rx_at.duration_since(first_rx).as_secs_f64().max(1e-9);
    println!(
        "\nreceived {received} in {took:.4} s ({:.3} Mpps), forwarded {forwarded} ({:.3} Mpps): {in_flows} IPv4, \
         {other} other, {filtered} filtered; {tx_full} dropped on a full ring",
        received as f64 / took / 1e6,
        forwarded as f64 / took / 1e6,
    );
    println!("traffic thread: generated {generated}, sent {sent}, unsent {unsent}, swallowed {swallowed}");
    for dev in [&gen_tx_port, &in_port, &out_port, &sink_port] {
        let s = dev.stats();
        println!(
            "  {:<10} ipackets {:>10} ibytes {:>12} opackets {:>10} obytes {:>12}",
            dev.info().device_name,
            s.ipackets,
            s.ibytes,
            s.opackets,
            s.obytes
        );
    }
    let consistent = received == in_flows + other + filtered
        && forwarded + tx_full == in_flows + other
        && generated == sent + unsent
        && (timed_out || received == sent);
    for dev in [&mut gen_tx_port, &mut in_port, &mut out_port, &mut sink_port] {
        dev.stop().unwrap_or_else(|e| fail(&e.to_string()));
    }
    drop((gen_tx_port, in_port, out_port, sink_port));
    println!("pool {}: {} of {} buffers free", pool.name(), pool.available(), pool.size());
    if !consistent || !pool.is_full() {
        fail("counts do not add up or buffers were lost");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> FlowKey {
        FlowKey { src: 0x0a00_0000 | i, dst: 0xc0a8_0001, sport: 1024 + i as u16, dport: 53, proto: PROTO_UDP }
    }

    #[test]
    fn flow_table_counts_each_flow_apart_and_refuses_when_full() {
        let mut t = FlowTable::new(64);
        for round in 0..3u32 {
            for i in 0..32 {
                t.count(&key(i), 60 + round);
            }
        }
        assert_eq!(t.len(), 32);
        assert_eq!(t.untracked, 0);
        for (k, s) in t.iter() {
            assert_eq!(s.packets, 3, "{k}");
            assert_eq!(s.bytes, 60 + 61 + 62, "{k}");
        }
        for i in 32..200 {
            t.count(&key(i), 60);
        }
        assert_eq!(t.len(), 64, "every slot taken, none twice");
        assert_eq!(t.untracked, 200 - 64);
        assert_eq!(t.iter().map(|(_, s)| s.packets).sum::<u64>() + t.untracked, 96 + 168);
    }
}
