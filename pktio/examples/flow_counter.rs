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
//! Run: `cargo run --release -p pktio --example flow_counter -- [--packets N] [--seconds S] [--flows F]`
//! (defaults: 20000000 packets, at most 10 seconds, 64 flows). It prints packets per second while it runs and the
//! busiest flows, the port counters and the pool's accounting at the end, then exits by itself.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pktio::mempool::lcore;
use pktio::ports::open_vdev;
use pktio::{EthDev, MacAddr, Mbuf, Mempool, PacketBatch, PoolConfig, PortConfig, RxQueue, TxQueue};

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_ARP: u16 = 0x0806;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;

struct Options {
    packets: u64,
    seconds: u64,
    flows: u32,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options { packets: 20_000_000, seconds: 10, flows: 64 };
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
            "--help" | "-h" => {
                println!("usage: flow_counter [--packets N] [--seconds S] [--flows F]");
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct FlowKey {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    proto: u8,
    sport: u16,
    dport: u16,
}

impl std::fmt::Display for FlowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let proto = match self.proto {
            PROTO_TCP => "tcp",
            PROTO_UDP => "udp",
            _ => "ip",
        };
        write!(f, "{proto} {}:{} -> {}:{}", self.src, self.sport, self.dst, self.dport)
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
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let (sport, dport) = match (proto, ip.get(ihl..ihl + 4)) {
        (PROTO_TCP | PROTO_UDP, Some(l4)) => (u16::from_be_bytes([l4[0], l4[1]]), u16::from_be_bytes([l4[2], l4[3]])),
        _ => (0, 0),
    };
    Verdict::Flow(FlowKey { src, dst, proto, sport, dport })
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

    let done = Arc::new(AtomicBool::new(false));
    let traffic = {
        let (pool, done) = (pool.clone(), done.clone());
        let mut tx = gen_tx_port.tx_queue(0).unwrap_or_else(|e| fail(&e.to_string()));
        let mut rx = sink_port.rx_queue(0).unwrap_or_else(|e| fail(&e.to_string()));
        let src_mac = gen_tx_port.mac_addr();
        let (packets, flows) = (opts.packets, opts.flows);
        std::thread::spawn(move || {
            let _lcore = lcore::bind_current_thread(1).ok();
            let mut out = PacketBatch::new();
            let mut sunk = PacketBatch::new();
            let (mut generated, mut swallowed) = (0u64, 0u64);
            loop {
                let stop = done.load(Ordering::Acquire);
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
                    tx.tx_burst(&mut out);
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
            (generated, swallowed)
        })
    };

    // The dataplane.
    let _lcore = lcore::bind_current_thread(0).ok();
    let mut rx = in_port.rx_queue(0).unwrap_or_else(|e| fail(&e.to_string()));
    let mut tx = out_port.tx_queue(0).unwrap_or_else(|e| fail(&e.to_string()));
    let mut flows: HashMap<FlowKey, (u64, u64)> = HashMap::new();
    let mut batch = PacketBatch::new();
    let (mut received, mut forwarded, mut filtered, mut other, mut tx_full) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let start = Instant::now();
    let deadline = start + Duration::from_secs(opts.seconds);
    let mut next_report = start + Duration::from_secs(1);
    let (mut last_rx, mut last_fwd, mut last_t) = (0u64, 0u64, start);
    let mut polls = 0u32;
    while received < opts.packets {
        let n = rx.rx_burst(&mut batch);
        received += n as u64;
        batch.retain(|m| match classify(m.data(), our_mac) {
            Verdict::Drop => {
                filtered += 1;
                false
            }
            Verdict::Flow(key) => {
                let e = flows.entry(key).or_default();
                e.0 += 1;
                e.1 += m.pkt_len() as u64;
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
            std::thread::yield_now();
        }
        polls = polls.wrapping_add(1);
        if polls & 255 == 0 || n == 0 {
            let now = Instant::now();
            if now >= next_report {
                let dt = now.duration_since(last_t).as_secs_f64();
                println!(
                    "  {:5.1} s  rx {:>8.3} Mpps  fwd {:>8.3} Mpps  filtered {filtered}  flows {}",
                    now.duration_since(start).as_secs_f64(),
                    (received - last_rx) as f64 / dt / 1e6,
                    (forwarded - last_fwd) as f64 / dt / 1e6,
                    flows.len()
                );
                (last_rx, last_fwd, last_t) = (received, forwarded, now);
                next_report = now + Duration::from_secs(1);
            }
            if now >= deadline {
                println!("  time limit reached");
                break;
            }
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    done.store(true, Ordering::Release);
    let (generated, swallowed) = traffic.join().expect("traffic thread");
    drop((rx, tx));

    let mut top: Vec<(FlowKey, (u64, u64))> = flows.into_iter().collect();
    top.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(&b.0)));
    println!("\nbusiest flows ({} in all):", top.len());
    for (key, (packets, bytes)) in top.iter().take(8) {
        println!("  {key:<44} {packets:>10} packets {bytes:>12} bytes");
    }
    let in_flows: u64 = top.iter().map(|(_, (p, _))| p).sum();
    println!(
        "\nreceived {received} in {elapsed:.2} s ({:.3} Mpps): {in_flows} IPv4, {other} other, {filtered} filtered; \
         forwarded {forwarded}, {tx_full} dropped on a full ring",
        received as f64 / elapsed / 1e6
    );
    println!("traffic thread: generated {generated}, swallowed {swallowed}");
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
    let consistent = received == in_flows + other + filtered && forwarded + tx_full == in_flows + other;
    for dev in [&mut gen_tx_port, &mut in_port, &mut out_port, &mut sink_port] {
        dev.stop().unwrap_or_else(|e| fail(&e.to_string()));
    }
    drop((gen_tx_port, in_port, out_port, sink_port));
    println!("pool {}: {} of {} buffers free", pool.name(), pool.available(), pool.size());
    if !consistent || !pool.is_full() {
        fail("counts do not add up or buffers were lost");
    }
}
