//! Forwarding: modes, streams, and the per-lcore loop.
//!
//! A [`Stream`] owns one RX queue and one TX queue (moved in from the ports when forwarding starts and handed back
//! when it stops). Each forwarding lcore runs [`lcore_main`] over its streams: one monomorphised loop per mode
//! (the mode is matched once, outside the loop), one dynamic call per burst for RX and one for TX, no allocation
//! and no lock per packet or per burst. With telemetry on, each stream also holds a live-capture tap per queue
//! ([`pktio::capture::QueueTap`]), checked inline once per burst each way; the loop without taps is a separate
//! monomorphisation (`TAP = false`) that does not check anything.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mempool::{Mempool, PacketBatch};
use pkthdr::EthernetFrame;
use pktio::capture::QueueTap;
use pktio::stats::Counter;
use pktio::{MacAddr, RxQueue, TxQueue};
use swports::pcap_file::PcapWriter;

mod engines;

pub use engines::*;

use crate::noisy::NoisyState;
use crate::params::NoisyParams;
use crate::pkt;

/// A forwarding mode (`--forward-mode`, `set fwd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FwdMode {
    /// Forward as received.
    #[default]
    Io,
    /// Set the source MAC to the TX port's and the destination to the peer's.
    Mac,
    /// Swap source and destination MAC.
    MacSwap,
    /// Receive and drop.
    RxOnly,
    /// Send generated UDP/IPv4 packets.
    TxOnly,
    /// Send generated packets of many flows; receive and drop.
    FlowGen,
    /// Check and fix IPv4/TCP/UDP checksums in software, then forward as `mac`.
    Csum,
    /// Answer ARP requests and ICMP echo requests; drop the rest.
    IcmpEcho,
    /// Swap L2, L3 and L4 source and destination.
    FiveTupleSwap,
    /// Forward as io through a software FIFO, touching memory per packet (`--noisy-*`).
    Noisy,
}

impl FwdMode {
    /// Every mode, in the order `help` lists them.
    pub const ALL: [FwdMode; 10] = [
        FwdMode::Io,
        FwdMode::Mac,
        FwdMode::MacSwap,
        FwdMode::FlowGen,
        FwdMode::RxOnly,
        FwdMode::TxOnly,
        FwdMode::Csum,
        FwdMode::IcmpEcho,
        FwdMode::FiveTupleSwap,
        FwdMode::Noisy,
    ];

    /// testpmd's name.
    pub fn name(self) -> &'static str {
        match self {
            FwdMode::Io => "io",
            FwdMode::Mac => "mac",
            FwdMode::MacSwap => "macswap",
            FwdMode::RxOnly => "rxonly",
            FwdMode::TxOnly => "txonly",
            FwdMode::FlowGen => "flowgen",
            FwdMode::Csum => "csum",
            FwdMode::IcmpEcho => "icmpecho",
            FwdMode::FiveTupleSwap => "5tswap",
            FwdMode::Noisy => "noisy",
        }
    }

    /// The names, space separated.
    pub fn names() -> String {
        FwdMode::ALL.iter().map(|m| m.name()).collect::<Vec<_>>().join(" ")
    }

    /// Modes that generate packets from the pool.
    pub fn generates(self) -> bool {
        matches!(self, FwdMode::TxOnly | FwdMode::FlowGen)
    }
}

impl fmt::Display for FwdMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FwdMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        FwdMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown forwarding mode {s:?}; available: {}", FwdMode::names()))
    }
}

/// Where a stream receives and where it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamSpec {
    /// RX port id.
    pub rx_port: u16,
    /// RX queue.
    pub rx_queue: u16,
    /// TX port id.
    pub tx_port: u16,
    /// TX queue.
    pub tx_queue: u16,
}

/// Counters of one stream: written by its lcore only (plain loads and stores), read by the prompt at any time.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct StreamCounters {
    /// Packets received.
    pub rx_packets: Counter,
    /// Packets sent.
    pub tx_packets: Counter,
    /// Packets the TX queue did not take (freed).
    pub fwd_dropped: Counter,
    /// csum mode: IPv4 header checksums found wrong.
    pub bad_ip_csum: Counter,
    /// csum mode: TCP/UDP checksums found wrong.
    pub bad_l4_csum: Counter,
    /// `--record-burst-stats`: RX bursts by size (index: packets in the burst, 0 included); empty when off.
    pub rx_bursts: Box<[Counter]>,
    /// `--record-burst-stats`: TX bursts by packets sent; empty when off.
    pub tx_bursts: Box<[Counter]>,
    /// `--record-core-cycles`: counter ticks ([`crate::cycles`]) spent in bursts that moved packets.
    pub core_cycles: Counter,
}

impl StreamCounters {
    /// Counters, with burst-size histograms when `burst_stats`.
    pub fn new(burst_stats: bool) -> StreamCounters {
        let spread = || -> Box<[Counter]> {
            let n = if burst_stats { mempool::MAX_BURST + 1 } else { 0 };
            (0..n).map(|_| Counter::default()).collect()
        };
        StreamCounters { rx_bursts: spread(), tx_bursts: spread(), ..Default::default() }
    }
}

/// The burst-size line dpdk-testpmd prints with `--record-burst-stats`: the total, then the share of empty
/// bursts and of the two most frequent sizes, the rest as "other". None when there were no bursts.
pub fn burst_stats_line(rx_tx: &str, spread: &[Counter]) -> Option<String> {
    if spread.is_empty() {
        return None;
    }
    let zero = spread[0].get();
    let mut total = zero;
    // (count, size) of the two most frequent non-empty sizes.
    let (mut first, mut second) = ((0u64, 0usize), (0u64, 0usize));
    for (size, c) in spread.iter().enumerate().skip(1) {
        let n = c.get();
        if n == 0 {
            continue;
        }
        total += n;
        if n > first.0 {
            second = first;
            first = (n, size);
        } else if n > second.0 {
            second = (n, size);
        }
    }
    if total == 0 {
        return None;
    }
    let mut line = format!("  {rx_tx}-bursts : {total} [");
    let (mut seen, mut pct_sum) = (0u64, 0i64);
    for (count, size) in [(zero, 0usize), first, second] {
        seen += count;
        if seen == total {
            let _ = std::fmt::Write::write_fmt(&mut line, format_args!("{}% of {size} pkts]", 100 - pct_sum));
            return Some(line);
        }
        let pct = (count as f64 / total as f64 * 100.0) as i64;
        let _ = std::fmt::Write::write_fmt(&mut line, format_args!("{pct}% of {size} pkts + "));
        pct_sum += pct;
    }
    let _ = std::fmt::Write::write_fmt(&mut line, format_args!("{}% of other]", 100 - pct_sum));
    Some(line)
}

/// A capture shared by the streams (`set record FILE`).
pub type Recorder = Arc<Mutex<PcapWriter<std::io::BufWriter<std::fs::File>>>>;

/// What packet generation needs (txonly, flowgen, tx_first), and the capture, if any.
#[derive(Debug, Clone)]
pub struct GenConfig {
    /// Pool to allocate from.
    pub pool: Mempool,
    /// Segment lengths of each generated txonly packet (`--txpkts`).
    pub txpkts: Vec<u16>,
    /// Number of flows flowgen cycles through.
    pub flowgen_flows: u32,
    /// Where every packet offered to a TX queue is also written.
    pub record: Option<Recorder>,
    /// The noisy mode's settings, when that is the mode.
    pub noisy: Option<NoisyParams>,
    /// `--txonly-multi-flow`: vary the IPv4 source per generated packet.
    pub multi_flow: bool,
    /// `--record-burst-stats`: count bursts by size.
    pub burst_stats: bool,
    /// `--record-core-cycles`: time each burst.
    pub core_cycles: bool,
    /// `set txsplit rand`: each txonly packet takes a random number of the `txpkts` segments.
    pub txsplit_rand: bool,
    /// Tap the streams' queues for live capture (`/pktio/capture`, pktio-dumpcap): on with telemetry.
    pub capture: bool,
    /// `set fwd MODE retry`: when a TX queue takes only part of a burst, try again this many times, this long
    /// apart, before dropping the rest (`set burst tx delay D retry N`; DPDK's defaults 1 us and 64).
    pub retry: Option<(u32, std::time::Duration)>,
}

/// One stream: the queues it owns and what its engine needs.
pub struct Stream {
    /// Ports and queues.
    pub spec: StreamSpec,
    /// The RX queue.
    pub rx: Box<dyn RxQueue>,
    /// The TX queue.
    pub tx: Box<dyn TxQueue>,
    /// Its counters.
    pub counters: Arc<StreamCounters>,
    /// Live-capture taps of the RX and TX queue (detached ones when capture is off).
    rx_tap: QueueTap,
    tx_tap: QueueTap,
    /// The taps are real: the loop checks them.
    tapped: bool,
    /// Destination (peer) and source (TX port) MAC, as written by mac and csum modes.
    eth_addrs: [u8; 12],
    /// MAC of the TX port (icmpecho answers ARP with it).
    tx_mac: MacAddr,
    /// txonly frame (all segments back to back).
    tx_template: Box<[u8]>,
    /// txonly segment lengths.
    tx_segs: Box<[u16]>,
    /// flowgen frames.
    flow_template: pkt::FlowgenTemplate,
    nb_flows: u32,
    next_flow: u32,
    pool: Mempool,
    record: Option<Recorder>,
    noisy: Option<Box<NoisyState>>,
    /// `--txonly-multi-flow`: the lcore this stream runs on (set at launch) and the per-packet counter.
    multi_flow: Option<(u32, u8)>,
    retry: Option<(u32, std::time::Duration)>,
    core_cycles: bool,
    /// `set txsplit rand`: frame `k` is the txonly packet of the first `k + 1` segments (headers sized for it);
    /// empty otherwise.
    rand_templates: Box<[Box<[u8]>]>,
    /// Fewest segments a random split takes: the first that hold the 42 header bytes.
    rand_min_segs: usize,
    rng: u64,
}

impl Stream {
    /// A stream over `rx`/`tx`; `tx_mac` is the TX port's address, `peer` where mac mode sends.
    pub fn new(
        spec: StreamSpec,
        rx: Box<dyn RxQueue>,
        tx: Box<dyn TxQueue>,
        tx_mac: MacAddr,
        peer: MacAddr,
        gen: &GenConfig,
    ) -> Stream {
        let mut eth_addrs = [0u8; 12];
        eth_addrs[..6].copy_from_slice(&peer.0);
        eth_addrs[6..].copy_from_slice(&tx_mac.0);
        let total: usize = gen.txpkts.iter().map(|&l| l as usize).sum();
        let tx_template = pkt::udp_frame(
            &pkt::UdpFlow {
                dst_mac: peer,
                src_mac: tx_mac,
                src_ip: pkt::TXONLY_SRC_IP,
                dst_ip: pkt::TXONLY_DST_IP,
                src_port: pkt::TXONLY_UDP_PORT,
                dst_port: pkt::TXONLY_UDP_PORT,
            },
            total,
        );
        // flowgen sends tx_pkt_length - 4 bytes (testpmd leaves room for the FCS).
        let flow_template = pkt::FlowgenTemplate::new(total.saturating_sub(4));
        let mut tx_segs: Box<[u16]> = gen.txpkts.clone().into_boxed_slice();
        if tx_segs.is_empty() || tx_template.len() != total {
            tx_segs = vec![tx_template.len() as u16].into_boxed_slice();
        }
        let (mut rand_templates, mut rand_min_segs) = (Vec::new(), tx_segs.len());
        if gen.txsplit_rand && tx_segs.len() > 1 {
            let mut len = 0usize;
            for (k, &l) in tx_segs.iter().enumerate() {
                len += l as usize;
                if len >= pkt::UDP_FRAME_MIN && rand_min_segs == tx_segs.len() {
                    rand_min_segs = k + 1;
                }
                rand_templates.push(
                    pkt::udp_frame(
                        &pkt::UdpFlow {
                            dst_mac: peer,
                            src_mac: tx_mac,
                            src_ip: pkt::TXONLY_SRC_IP,
                            dst_ip: pkt::TXONLY_DST_IP,
                            src_port: pkt::TXONLY_UDP_PORT,
                            dst_port: pkt::TXONLY_UDP_PORT,
                        },
                        len.max(pkt::UDP_FRAME_MIN),
                    )
                    .into_boxed_slice(),
                );
            }
        }
        Stream {
            spec,
            rx,
            tx,
            counters: Arc::new(StreamCounters::new(gen.burst_stats)),
            rx_tap: if gen.capture { QueueTap::rx(spec.rx_port) } else { QueueTap::detached() },
            tx_tap: if gen.capture { QueueTap::tx(spec.tx_port) } else { QueueTap::detached() },
            tapped: gen.capture,
            eth_addrs,
            tx_mac,
            tx_template: tx_template.into_boxed_slice(),
            tx_segs,
            flow_template,
            nb_flows: gen.flowgen_flows.max(1),
            next_flow: 0,
            pool: gen.pool.clone(),
            record: gen.record.clone(),
            noisy: gen.noisy.map(|p| {
                let seed = ((spec.rx_port as u64) << 32) | ((spec.rx_queue as u64) << 16) | spec.tx_port as u64;
                Box::new(NoisyState::new(&p, seed))
            }),
            multi_flow: gen.multi_flow.then_some((0, 0)),
            retry: gen.retry,
            core_cycles: gen.core_cycles,
            rand_templates: rand_templates.into_boxed_slice(),
            rand_min_segs,
            // Any non-zero seed; streams differ so that they do not split in step.
            rng: 0x9E37_79B9_7F4A_7C15 ^ ((spec.tx_port as u64) << 16 | spec.tx_queue as u64),
        }
    }

    /// Records the lcore that runs this stream (`--txonly-multi-flow` adds its id to the source address).
    pub fn set_lcore(&mut self, lcore: u32) {
        if let Some((l, _)) = &mut self.multi_flow {
            *l = lcore;
        }
    }

    /// Gives the queues back.
    pub fn into_queues(self) -> (StreamSpec, Box<dyn RxQueue>, Box<dyn TxQueue>) {
        (self.spec, self.rx, self.tx)
    }

    /// Sends the batch; what the queue does not take is counted as dropped and freed. `TAP`: show it to the TX
    /// capture tap first.
    #[inline(always)]
    fn send<const TAP: bool>(&mut self, b: &mut PacketBatch) {
        if TAP {
            self.tx_tap.observe(b.as_slice());
        }
        if let Some(r) = &self.record {
            record(r, b);
        }
        if crate::dump::tx_on() && !b.is_empty() {
            crate::dump::burst(b, self.pool.name(), self.spec.tx_port, self.spec.tx_queue, false);
        }
        let mut sent = self.tx.tx_burst(b);
        if !b.is_empty() {
            if let Some((n, delay)) = self.retry {
                sent += retry_tx(&mut *self.tx, b, n, delay);
            }
        }
        self.counters.tx_packets.add(sent as u64);
        if let Some(c) = self.counters.tx_bursts.get(sent) {
            c.add(1);
        }
        if !b.is_empty() {
            self.counters.fwd_dropped.add(b.len() as u64);
            b.clear();
        }
    }

    #[inline(always)]
    fn receive<const TAP: bool>(&mut self, b: &mut PacketBatch) -> usize {
        let n = self.rx.rx_burst(b);
        if TAP {
            self.rx_tap.observe(b.as_slice());
        }
        self.counters.rx_packets.add(n as u64);
        // Empty bursts count too, as in DPDK (an empty slice when --record-burst-stats is off).
        if let Some(c) = self.counters.rx_bursts.get(n) {
            c.add(1);
        }
        if n > 0 && crate::dump::rx_on() {
            crate::dump::burst(b, self.pool.name(), self.spec.rx_port, self.spec.rx_queue, true);
        }
        n
    }
}

/// `set fwd MODE retry`: offers the rest of `b` again up to `n` times, `delay` apart (a busy wait, as DPDK's
/// rte_delay_us). Returns how many more were taken.
#[cold]
#[inline(never)]
fn retry_tx(tx: &mut dyn TxQueue, b: &mut PacketBatch, n: u32, delay: std::time::Duration) -> usize {
    let mut sent = 0;
    for _ in 0..n {
        let until = std::time::Instant::now() + delay;
        while std::time::Instant::now() < until {
            std::hint::spin_loop();
        }
        sent += tx.tx_burst(b);
        if b.is_empty() {
            break;
        }
    }
    sent
}

/// Writes the packets of `b` into the capture (errors end up as a short capture, reported at stop).
#[cold]
#[inline(never)]
fn record(r: &Recorder, b: &PacketBatch) {
    let now = swports::pcap_file::now_ns();
    let mut w = r.lock().unwrap_or_else(|e| e.into_inner());
    for m in b.iter() {
        let _ = w.write_segments(now, m.pkt_len(), m.segments().map(|s| s.data));
    }
}

#[inline(never)]
fn run<E: Engine, const TAP: bool>(streams: &mut [Stream], b: &mut PacketBatch, stop: &AtomicBool) {
    if let [s] = streams {
        while !stop.load(Ordering::Relaxed) {
            E::burst::<TAP>(s, b);
        }
    } else {
        while !stop.load(Ordering::Relaxed) {
            for s in streams.iter_mut() {
                E::burst::<TAP>(s, b);
            }
        }
    }
}

/// [`run`] timing each burst, for `--record-core-cycles`: as DPDK, a burst that moved no packet (an empty poll)
/// is not counted.
#[inline(never)]
fn run_timed<E: Engine, const TAP: bool>(streams: &mut [Stream], b: &mut PacketBatch, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        for s in streams.iter_mut() {
            let moved = s.counters.rx_packets.get() + s.counters.tx_packets.get();
            let t0 = crate::cycles::now();
            E::burst::<TAP>(s, b);
            if s.counters.rx_packets.get() + s.counters.tx_packets.get() != moved {
                s.counters.core_cycles.add(crate::cycles::now().wrapping_sub(t0));
            }
        }
    }
}

/// Runs engine `E` until `stop`, timed when the streams record cycles, checking the capture taps when they are
/// real.
fn run_mode<E: Engine>(streams: &mut [Stream], b: &mut PacketBatch, stop: &AtomicBool) {
    let timed = streams.iter().any(|s| s.core_cycles);
    match (timed, streams.iter().any(|s| s.tapped)) {
        (true, true) => run_timed::<E, true>(streams, b, stop),
        (true, false) => run_timed::<E, false>(streams, b, stop),
        (false, true) => run::<E, true>(streams, b, stop),
        (false, false) => run::<E, false>(streams, b, stop),
    }
}

/// What one forwarding lcore does: `tx_first` txonly bursts on every stream, then `mode` until `stop` is set.
/// `stop` ends the tx_first rounds too (a `start tx_first 4294967295` is ended by `stop`, `quit` or a signal
/// like any run). Returns the streams (and so the queues).
pub fn lcore_main(
    mode: FwdMode,
    mut streams: Vec<Stream>,
    burst: usize,
    tx_first: u32,
    stop: Arc<AtomicBool>,
) -> Vec<Stream> {
    let mut b = PacketBatch::with_capacity(burst);
    for _ in 0..tx_first {
        if stop.load(Ordering::Relaxed) {
            return streams;
        }
        for s in streams.iter_mut() {
            TxOnly::burst::<true>(s, &mut b);
        }
    }
    let (st, b) = (&mut streams[..], &mut b);
    match mode {
        FwdMode::Io => run_mode::<Io>(st, b, &stop),
        FwdMode::Mac => run_mode::<Mac>(st, b, &stop),
        FwdMode::MacSwap => run_mode::<MacSwap>(st, b, &stop),
        FwdMode::RxOnly => run_mode::<RxOnly>(st, b, &stop),
        FwdMode::TxOnly => run_mode::<TxOnly>(st, b, &stop),
        FwdMode::FlowGen => run_mode::<FlowGen>(st, b, &stop),
        FwdMode::Csum => run_mode::<Csum>(st, b, &stop),
        FwdMode::IcmpEcho => run_mode::<IcmpEcho>(st, b, &stop),
        FwdMode::FiveTupleSwap => run_mode::<FiveTupleSwap>(st, b, &stop),
        FwdMode::Noisy => {
            run_mode::<Noisy>(st, b, &stop);
            flush_noisy(st, b);
        }
    }
    streams
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TX queue that takes at most `per_call` packets a call (freeing them), like a ring that drains slowly.
    struct Slow {
        per_call: usize,
        calls: usize,
    }

    impl TxQueue for Slow {
        fn tx_burst(&mut self, b: &mut PacketBatch) -> usize {
            self.calls += 1;
            let n = self.per_call.min(b.len());
            b.drain_front(n, drop);
            n
        }
    }

    fn pool() -> Mempool {
        let cfg = mempool::PoolConfig { size: 255, cache_size: 0, ..Default::default() };
        Mempool::new("fwd-retry-test", &cfg, &hugepage::Allocator::no_huge()).unwrap()
    }

    #[test]
    fn burst_stats_lines_as_dpdk_prints_them() {
        let spread = |pairs: &[(usize, u64)]| -> Box<[Counter]> {
            let c: Box<[Counter]> = (0..=mempool::MAX_BURST).map(|_| Counter::default()).collect();
            for &(size, n) in pairs {
                c[size].add(n);
            }
            c
        };
        assert_eq!(burst_stats_line("RX", &spread(&[])), None);
        assert_eq!(
            burst_stats_line("RX", &spread(&[(32, 10)])).unwrap(),
            "  RX-bursts : 10 [0% of 0 pkts + 100% of 32 pkts]"
        );
        assert_eq!(
            burst_stats_line("RX", &spread(&[(0, 3), (32, 6), (5, 1)])).unwrap(),
            "  RX-bursts : 10 [30% of 0 pkts + 60% of 32 pkts + 10% of 5 pkts]"
        );
        assert_eq!(
            burst_stats_line("TX", &spread(&[(0, 1), (32, 5), (7, 2), (3, 2)])).unwrap(),
            "  TX-bursts : 10 [10% of 0 pkts + 50% of 32 pkts + 20% of 3 pkts + 20% of other]"
        );
        assert_eq!(burst_stats_line("TX", &[]), None);
    }

    #[test]
    fn retry_offers_the_rest_again_until_taken_or_out_of_tries() {
        let pool = pool();
        let mut b = PacketBatch::with_capacity(32);
        assert!(b.alloc_from(&pool, 32));
        let mut tx = Slow { per_call: 5, calls: 0 };
        let first = tx.tx_burst(&mut b);
        let more = retry_tx(&mut tx, &mut b, 64, std::time::Duration::from_micros(1));
        assert_eq!(first + more, 32, "every packet taken");
        assert_eq!(tx.calls, 7, "5 per call: 6 retries after the first");
        assert!(b.alloc_from(&pool, 32));
        let mut tx = Slow { per_call: 5, calls: 0 };
        let first = tx.tx_burst(&mut b);
        let more = retry_tx(&mut tx, &mut b, 2, std::time::Duration::from_micros(1));
        assert_eq!((first + more, b.len()), (15, 17), "two retries, the rest left to drop");
        b.clear();
        assert_eq!(pool.available(), 255);
    }
}
