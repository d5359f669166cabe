//! RX interrupts measured in-process (bench/rx-interrupts.sh; not a timed test): l3fwd's forwarding loop on two
//! X540 model ports wired back to back (`net_sim_x540`: the real ixgbe driver, the model's MSI-X vectors as
//! eventfds), polling (l3fwd) against sleeping on the RX interrupt (l3fwd-power's modes).
//!
//! - idle CPU: the lcore thread's CPU time (getrusage RUSAGE_THREAD) over BENCH_SECONDS with nothing arriving,
//!   and the whole process's (the two model threads included);
//! - wake-up latency: one frame sent by port 1, forwarded by the lcore out of port 0, received back on port 1;
//!   the round trip in the polling loop and in the sleeping one, whose difference is the wake-up's cost;
//! - arrival to wake-up: a frame put on one model port's wire (ixgbe on it, its model thread running) until the
//!   application sees it: the armed queue's descriptor readable (`poll(2)` returns), against a loop spinning on
//!   `rx_burst`; the model's own pick-up of the frame is in both;
//! - under load: frames forwarded per second with port 1 sending bursts as fast as the model takes them.
//!
//! Prints `key=value` lines for the script.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hugepage::Allocator;
use l3fwd::fwd::{self, Lcore, LcoreCounters, RxUnit, TxPort};
use l3fwd::lookup::LpmRouter;
use l3fwd::params::PowerMode;
use l3fwd::routes;
use mempool::{Mempool, PacketBatch, PoolConfig};
use pktio::capture::QueueTap;
use pktio::devargs::Devargs;
use pktio::{EthDev, IntrConf, PortConfig, RxQueue, TxQueue};

struct Rig {
    ports: Vec<Box<dyn EthDev>>,
    pool: Mempool,
    lcore: Option<JoinHandle<(Lcore, Duration)>>,
    stop: Arc<AtomicBool>,
    counters: Arc<LcoreCounters>,
    tx1: Option<Box<dyn TxQueue>>,
    rx1: Option<Box<dyn RxQueue>>,
    frame: Vec<u8>,
}

fn cpu(who: libc::c_int) -> Duration {
    // SAFETY: an all-zero rusage is a valid value for getrusage to overwrite.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid rusage for the call.
    unsafe { libc::getrusage(who, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn rig(name: &str, power: Option<PowerMode>) -> Rig {
    let registry = pmds::registry();
    let args = Devargs::parse("net_sim_x540,ports=2").unwrap();
    let driver = registry.vdev_driver_for(&args).expect("net_sim_x540");
    let mut ports = (driver.open)(&args, &Allocator::no_huge()).expect("model ports");
    let config = PoolConfig { size: 8192, cache_size: 0, ..Default::default() };
    let pool = Mempool::new(name, &config, &Allocator::no_huge()).unwrap();
    let small = PortConfig { rx_desc: 512, tx_desc: 512, ..Default::default() };
    let intr = IntrConf { rxq: power.is_some(), lsc: false };
    ports[0].configure(&PortConfig { intr_conf: intr, ..small.clone() }).unwrap();
    ports[1].configure(&small).unwrap();
    for p in ports.iter_mut() {
        p.start(&pool).unwrap();
    }
    let t = Instant::now();
    while !(ports[0].link().up && ports[1].link().up) {
        assert!(t.elapsed() < Duration::from_secs(10), "links never came up");
        std::thread::sleep(Duration::from_millis(1));
    }
    let (m0, m1) = (ports[0].mac_addr().0, ports[1].mac_addr().0);
    let mut addrs = [0u8; 12];
    addrs[..6].copy_from_slice(&m1);
    addrs[6..].copy_from_slice(&m0);
    let out = vec![Some(TxPort::new(ports[0].tx_queue(0).unwrap(), addrs, QueueTap::detached())), None];
    let units = vec![RxUnit { port: 0, queue: 0, rx: ports[0].rx_queue(0).unwrap(), tap: QueueTap::detached() }];
    let counters = Arc::new(LcoreCounters::new(2));
    let l = Lcore { units, out, counters: counters.clone(), tapped: false, power };
    let router = Arc::new(LpmRouter::new(&routes::default_lpm4(), &routes::default_lpm6()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let lcore = std::thread::spawn(move || {
        let l = fwd::lcore_main(l, router, st, || {});
        (l, cpu(libc::RUSAGE_THREAD))
    });
    let frame = testkit::udp_frame(m0, [2, 0, 0, 0, 0, 0x77], ([10, 0, 0, 1], [198, 18, 0, 9]), (9, 9), 64);
    let (tx1, rx1) = (Some(ports[1].tx_queue(0).unwrap()), Some(ports[1].rx_queue(0).unwrap()));
    Rig { ports, pool, lcore: Some(lcore), stop, counters, tx1, rx1, frame }
}

impl Rig {
    fn send(&mut self, n: usize) -> usize {
        let mut b = PacketBatch::with_capacity(n);
        if !b.alloc_from(&self.pool, n) {
            return 0;
        }
        for m in b.iter_mut() {
            m.data_room_mut()[..self.frame.len()].copy_from_slice(&self.frame);
            m.set_len(self.frame.len() as u16);
        }
        self.tx1.as_mut().unwrap().tx_burst(&mut b)
    }

    fn receive(&mut self) -> usize {
        let mut b = PacketBatch::with_capacity(32);
        self.rx1.as_mut().unwrap().rx_burst(&mut b)
    }

    /// Stops the lcore; its thread's CPU time.
    fn finish(mut self) -> Duration {
        self.stop.store(true, Ordering::Relaxed);
        let (l, cpu) = self.lcore.take().unwrap().join().unwrap();
        drop(l);
        drop((self.tx1.take(), self.rx1.take()));
        for p in self.ports.iter_mut() {
            let _ = p.stop();
        }
        cpu
    }
}

fn label(power: Option<PowerMode>) -> &'static str {
    match power {
        None => "poll",
        Some(PowerMode::Legacy) => "power",
        Some(PowerMode::InterruptOnly) => "intr_only",
    }
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let secs: u64 = std::env::var("BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    let samples: usize = std::env::var("BENCH_SAMPLES").ok().and_then(|s| s.parse().ok()).unwrap_or(300);
    let modes = [None, Some(PowerMode::Legacy), Some(PowerMode::InterruptOnly)];

    for (k, &mode) in modes.iter().enumerate() {
        let r = rig(&format!("idle-{k}"), mode);
        std::thread::sleep(Duration::from_millis(200));
        let proc0 = cpu(libc::RUSAGE_SELF);
        let t = Instant::now();
        std::thread::sleep(Duration::from_secs(secs));
        let wall = t.elapsed();
        let proc = cpu(libc::RUSAGE_SELF) - proc0;
        let sleeps = r.counters.sleeps.get();
        let lcore = r.finish();
        // The lcore's CPU includes its 200 ms start; over the whole run.
        let lcore_pct = 100.0 * lcore.as_secs_f64() / (wall + Duration::from_millis(200)).as_secs_f64();
        println!("idle_{}_lcore_cpu_pct={lcore_pct:.1}", label(mode));
        println!("idle_{}_process_cpu_pct={:.1}", label(mode), 100.0 * proc.as_secs_f64() / wall.as_secs_f64());
        println!("idle_{}_sleeps={sleeps}", label(mode));
    }

    for (k, &mode) in [None, Some(PowerMode::InterruptOnly)].iter().enumerate() {
        let mut r = rig(&format!("lat-{k}"), mode);
        std::thread::sleep(Duration::from_millis(100));
        let mut lat = Vec::with_capacity(samples);
        for _ in 0..samples {
            // Longer than EITR's 500 us interval and time for the lcore to go back to sleep.
            std::thread::sleep(Duration::from_millis(2));
            let t = Instant::now();
            assert_eq!(r.send(1), 1);
            while r.receive() == 0 {
                assert!(t.elapsed() < Duration::from_secs(5), "a frame was lost");
            }
            lat.push(t.elapsed());
        }
        let wakeups = r.counters.wakeups.get();
        r.finish();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!("latency_{}_p50_us={:.1}", label(mode), us(percentile(&mut lat, 0.5)));
        println!("latency_{}_p99_us={:.1}", label(mode), us(percentile(&mut lat, 0.99)));
        println!("latency_{}_wakeups={wakeups}", label(mode));
    }

    for sleeping in [false, true] {
        let mut lat = arrival_to_app(samples, sleeping);
        let name = if sleeping { "intr" } else { "spin" };
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!("wake_{name}_p50_us={:.1}", us(percentile(&mut lat, 0.5)));
        println!("wake_{name}_p99_us={:.1}", us(percentile(&mut lat, 0.99)));
    }

    for (k, &mode) in [None, Some(PowerMode::Legacy)].iter().enumerate() {
        let mut r = rig(&format!("load-{k}"), mode);
        std::thread::sleep(Duration::from_millis(100));
        let t = Instant::now();
        let (mut sent, mut got) = (0usize, 0usize);
        while t.elapsed() < Duration::from_secs(secs) {
            // Keep at most a ring's worth in flight, so the rate is the loop's, not drops.
            if sent - got < 256 {
                sent += r.send(32);
            }
            got += r.receive();
        }
        let wall = t.elapsed();
        let sleeps = r.counters.sleeps.get();
        r.finish();
        println!("load_{}_kpps={:.1}", label(mode), got as f64 / wall.as_secs_f64() / 1e3);
        println!("load_{}_sleeps={sleeps}", label(mode));
    }
}

/// `samples` frames injected on a model port's wire one at a time; for each, the time until the application has
/// it: woken by the armed queue's interrupt (`sleeping`) or spinning on `rx_burst`.
fn arrival_to_app(samples: usize, sleeping: bool) -> Vec<Duration> {
    use drvkit::irq::poll_readable;
    use pktio::TypedQueues;
    let (bar, model) = nicsim::X540::new(nicsim::X540Config::default());
    let options =
        ixgbe::Options { timing: ixgbe::sim::model_timing(), ..ixgbe::Options::new("wake0", ixgbe::MacType::X540) };
    let mut dev = ixgbe::Ixgbe::new(Arc::new(bar), model.dma_mapper(), Allocator::no_huge(), options).unwrap();
    dev.set_irq_source(model.irq_source());
    let config = PoolConfig { size: 2048, cache_size: 0, ..Default::default() };
    let pool = Mempool::new(&format!("wake-{sleeping}"), &config, &Allocator::no_huge()).unwrap();
    let conf =
        PortConfig { rx_desc: 256, tx_desc: 256, intr_conf: IntrConf { rxq: true, lsc: false }, ..Default::default() };
    dev.configure(&conf).unwrap();
    dev.start(&pool).unwrap();
    let _thread = model.start_thread();
    let mut rx = dev.rx_queue_typed(0).unwrap();
    let fd = rx.wait_fd().unwrap();
    let frame = testkit::udp_frame(dev.mac_addr().0, [2, 0, 0, 0, 0, 0x77], ([10, 0, 0, 1], [10, 0, 0, 2]), (9, 9), 64);
    let mut b = PacketBatch::with_capacity(32);
    let mut lat = Vec::with_capacity(samples);
    for _ in 0..samples {
        std::thread::sleep(Duration::from_millis(2));
        if sleeping {
            rx.intr_enable().unwrap();
        }
        let t = Instant::now();
        assert!(model.inject(&frame));
        if sleeping {
            assert!(poll_readable(fd, Duration::from_secs(5)).unwrap(), "no wake-up");
            lat.push(t.elapsed());
            rx.intr_disable().unwrap();
            while rx.rx_burst(&mut b) == 0 {}
        } else {
            while rx.rx_burst(&mut b) == 0 {
                assert!(t.elapsed() < Duration::from_secs(5), "a frame was lost");
            }
            lat.push(t.elapsed());
        }
        b.clear();
    }
    drop(rx);
    dev.stop().unwrap();
    lat
}
