//! testpmd-style io forwarding between two ports on one forwarding core: stream 0 is port 0 RX -> port 1 TX,
//! stream 1 is port 1 RX -> port 0 TX, both polled in turn by one thread that is bound to lcore 1 and pinned to
//! one CPU (as `dpdk-testpmd -l 0,1 ... --forward-mode=io` runs both streams on lcore 1).
//!
//! Usage: `iofwd [--seconds S] [--warmup W] [--cpu C] [--burst B] VDEV0 VDEV1` with DPDK devargs, e.g.
//! `iofwd net_null0 net_null1` or `iofwd net_af_packet0,iface=veth1 net_af_packet1,iface=veth3`.
//!
//! The figure is testpmd's: packets received per second, summed over both ports (RX-packets of port 0 plus
//! port 1 over the measurement window, taken from the ports' counters by the main thread after a warm-up, as
//! two `show port stats` calls do). Cycles per packet are TSC cycles of the forwarding core (which polls without
//! pause) divided by the packets received in the window. Prints one `RESULT ...` line.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bench::{allocator, pin_to_cpu, rdtsc, tsc_hz};
use mempool::{Mempool, PacketBatch, PoolConfig};
use pktio::devargs::Devargs;
use pktio::{EthDev, PortStats, RxQueue, TxQueue};
use swports::af_packet::AfPacketPort;
use swports::null::NullPort;

struct Args {
    seconds: f64,
    warmup: f64,
    cpu: usize,
    burst: usize,
    vdevs: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { seconds: 5.0, warmup: 1.0, cpu: 1, burst: 32, vdevs: Vec::new() };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--seconds" => args.seconds = value("--seconds")?.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--warmup" => args.warmup = value("--warmup")?.parse().map_err(|e| format!("--warmup: {e}"))?,
            "--cpu" => args.cpu = value("--cpu")?.parse().map_err(|e| format!("--cpu: {e}"))?,
            "--burst" => args.burst = value("--burst")?.parse().map_err(|e| format!("--burst: {e}"))?,
            "-h" | "--help" => {
                println!("usage: iofwd [--seconds S] [--warmup W] [--cpu C] [--burst B] VDEV0 VDEV1");
                std::process::exit(0);
            }
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            s => args.vdevs.push(s.to_string()),
        }
    }
    if args.vdevs.len() != 2 {
        return Err("give exactly two vdevs (e.g. net_null0 net_null1)".into());
    }
    if args.burst == 0 || args.burst > mempool::MAX_BURST {
        return Err(format!("--burst must be 1..={}", mempool::MAX_BURST));
    }
    Ok(args)
}

/// A port whose queues can be had with their concrete types (static dispatch in the loop, as an embedder would).
trait TypedPort: EthDev + Sized + 'static {
    type Rx: RxQueue + 'static;
    type Tx: TxQueue + 'static;
    fn open(args: &Devargs) -> pktio::Result<Self>;
    fn queues(&mut self) -> pktio::Result<(Self::Rx, Self::Tx)>;
}

impl TypedPort for NullPort {
    type Rx = swports::null::NullRxQueue;
    type Tx = swports::null::NullTxQueue;
    fn open(args: &Devargs) -> pktio::Result<Self> {
        NullPort::from_devargs(args)
    }
    fn queues(&mut self) -> pktio::Result<(Self::Rx, Self::Tx)> {
        Ok((self.rx_queue_typed(0)?, self.tx_queue_typed(0)?))
    }
}

impl TypedPort for AfPacketPort {
    type Rx = swports::af_packet::AfPacketRxQueue;
    type Tx = swports::af_packet::AfPacketTxQueue;
    fn open(args: &Devargs) -> pktio::Result<Self> {
        AfPacketPort::from_devargs(args)
    }
    fn queues(&mut self) -> pktio::Result<(Self::Rx, Self::Tx)> {
        Ok((self.rx_queue_typed(0)?, self.tx_queue_typed(0)?))
    }
}

/// What the forwarding thread counts besides the port counters.
#[derive(Default)]
struct FwdCounters {
    dropped: AtomicU64,
}

/// The io forwarding loop: both streams in turn until `stop`; what TX does not take is freed (testpmd io mode
/// without retry).
fn forward<R: RxQueue, T: TxQueue>(streams: &mut [(R, T); 2], burst: usize, stop: &AtomicBool, c: &FwdCounters) {
    let mut batch = PacketBatch::with_capacity(burst);
    let mut dropped = 0u64;
    while !stop.load(Ordering::Relaxed) {
        for (rx, tx) in streams.iter_mut() {
            if rx.rx_burst(&mut batch) == 0 {
                continue;
            }
            tx.tx_burst(&mut batch);
            if !batch.is_empty() {
                dropped += batch.len() as u64;
                batch.clear();
            }
        }
    }
    c.dropped.store(dropped, Ordering::Relaxed);
}

fn sum(stats: &[PortStats], f: impl Fn(&PortStats) -> u64) -> u64 {
    stats.iter().map(f).sum()
}

fn run<P: TypedPort>(args: &Args, parsed: [Devargs; 2]) -> Result<(), String> {
    let (alloc, mem) = allocator(8191 * 2304);
    let pool = Mempool::new("iofwd_pool", &PoolConfig::with_size(8191), &alloc).map_err(|e| e.to_string())?;
    let mut ports = Vec::new();
    for (id, da) in parsed.iter().enumerate() {
        let mut p = P::open(da).map_err(|e| e.to_string())?;
        p.set_port_id(id as u16);
        p.start(&pool).map_err(|e| e.to_string())?;
        ports.push(p);
    }
    let (rx0, tx0) = ports[0].queues().map_err(|e| e.to_string())?;
    let (rx1, tx1) = ports[1].queues().map_err(|e| e.to_string())?;
    let hz = tsc_hz(Duration::from_millis(100));
    let stop = Arc::new(AtomicBool::new(false));
    let counters = Arc::new(FwdCounters::default());
    let (cpu, burst) = (args.cpu, args.burst);
    let worker = {
        let (stop, counters) = (stop.clone(), counters.clone());
        std::thread::Builder::new()
            .name("fwd-lcore1".into())
            .spawn(move || {
                if let Err(e) = pin_to_cpu(cpu) {
                    eprintln!("iofwd: cannot pin the forwarding thread to CPU {cpu}: {e}");
                }
                let _lcore = mempool::lcore::bind_current_thread(1).expect("lcore 1");
                // port 0 RX -> port 1 TX, port 1 RX -> port 0 TX
                let mut streams = [(rx0, tx1), (rx1, tx0)];
                forward(&mut streams, burst, &stop, &counters);
            })
            .map_err(|e| e.to_string())?
    };
    std::thread::sleep(Duration::from_secs_f64(args.warmup));
    let before: Vec<PortStats> = ports.iter().map(|p| p.stats()).collect();
    let (t0, c0) = (Instant::now(), rdtsc());
    std::thread::sleep(Duration::from_secs_f64(args.seconds));
    let after: Vec<PortStats> = ports.iter().map(|p| p.stats()).collect();
    let (c1, t1) = (rdtsc(), Instant::now());
    stop.store(true, Ordering::Relaxed);
    worker.join().map_err(|_| "forwarding thread panicked".to_string())?;
    for p in ports.iter_mut() {
        p.stop().map_err(|e| e.to_string())?;
    }
    let wall = (t1 - t0).as_secs_f64();
    let d = |f: &dyn Fn(&PortStats) -> u64| sum(&after, f) - sum(&before, f);
    let rx = d(&|s| s.ipackets);
    let tx = d(&|s| s.opackets);
    let missed = d(&|s| s.imissed);
    let per_port: Vec<String> = (0..2)
        .map(|i| format!("rx_pps_port{i}={:.0}", (after[i].ipackets - before[i].ipackets) as f64 / wall))
        .collect();
    let mpps = rx as f64 / wall / 1e6;
    let cycles = if rx > 0 { (c1 - c0) as f64 / rx as f64 } else { f64::NAN };
    println!(
        "RESULT test=iofwd rx_mpps={mpps:.3} tx_mpps={:.3} cycles_per_pkt={cycles:.2} {} imissed={missed} \
         fwd_dropped={} seconds={wall:.3} tsc_hz={hz:.0} burst={burst} mem={mem}",
        tx as f64 / wall / 1e6,
        per_port.join(" "),
        counters.dropped.load(Ordering::Relaxed),
    );
    drop(ports);
    if !pool.is_full() {
        eprintln!("iofwd: {} buffers not back in the pool", pool.in_use());
    }
    Ok(())
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("iofwd: {e}");
        std::process::exit(2)
    });
    if let Err(e) = pin_to_cpu(0) {
        eprintln!("iofwd: cannot pin the main thread to CPU 0: {e}");
    }
    let parse = |s: &String| Devargs::parse(s).map_err(|e| e.to_string());
    let result = (|| {
        let parsed = [parse(&args.vdevs[0])?, parse(&args.vdevs[1])?];
        if parsed[0].driver != parsed[1].driver {
            return Err("both ports must use the same driver".to_string());
        }
        match parsed[0].driver.as_str() {
            "net_null" => run::<NullPort>(&args, parsed),
            "net_af_packet" => run::<AfPacketPort>(&args, parsed),
            other => Err(format!("driver {other} not supported here (net_null, net_af_packet)")),
        }
    })();
    if let Err(e) = result {
        eprintln!("iofwd: {e}");
        std::process::exit(1);
    }
}
