//! Setting l3fwd up (routes, ports, queues, lcores), running it, and the statistics printed on exit.

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use eal::{Eal, Port};
use pktio::{MacAddr, PortConfig, RssConfig, RssHashFunctions};

use crate::config::{self, RxQueueParam};
use crate::fwd::{self, Drop, Lcore, LcoreCounters, RxUnit, TxPort};
use crate::lookup::{EmRouter, LpmRouter, Router};
use crate::params::{LookupMode, Params};
use crate::routes::{self, EmRoute};
use crate::{Error, Result};
use pktio::capture::{Direction, QueueTap};

/// Per-lcore mempool cache (DPDK's l3fwd MEMPOOL_CACHE_SIZE).
pub const MEMPOOL_CACHE_SIZE: u32 = 256;
/// EM table size when `--hash-entry-num` is not given (DPDK sizes its hash for 4M entries; a table for the
/// routes' flows stays in cache, and EM's capacity grows to the number of routes when they are more).
pub const HASH_ENTRIES: u32 = 1024;

/// The route tables of the chosen lookup mode.
pub enum Tables {
    /// LPM or FIB.
    Lpm(Arc<LpmRouter>),
    /// Exact match.
    Em(Arc<EmRouter>),
}

fn enabled(portmask: u64, port: u16) -> bool {
    port < 64 && portmask & (1 << port) != 0
}

/// Builds the tables: both route files, or (as DPDK's l3fwd, if either is missing) the built-in routes; routes to
/// ports outside the mask are skipped. Prints each route added, as DPDK's l3fwd does.
pub fn build_tables(p: &Params, port_names: &[String]) -> Result<Tables> {
    let both = p.rule_ipv4.is_some() && p.rule_ipv6.is_some();
    if !both {
        println!("L3FWD: Missing 1 or more rule files, using default instead");
    }
    let name = |port: u16| port_names.get(port as usize).map(String::as_str).unwrap_or("?");
    let keep = |port: u16| enabled(p.portmask, port) && (port as usize) < port_names.len();
    match p.lookup {
        LookupMode::Lpm | LookupMode::Fib => {
            let tag = if p.lookup == LookupMode::Lpm { "LPM" } else { "FIB" };
            let (mut v4, mut v6) = (routes::default_lpm4(), routes::default_lpm6());
            if both {
                v4 = routes::read_file(p.rule_ipv4.as_deref().unwrap_or_default(), routes::parse_lpm_rule::<u32>)?;
                v6 = routes::read_file(p.rule_ipv6.as_deref().unwrap_or_default(), routes::parse_lpm_rule::<u128>)?;
            }
            v4.retain(|r| keep(r.port));
            v6.retain(|r| keep(r.port));
            for r in &v4 {
                println!(
                    "{tag}: Adding route {} / {} ({}) [{}]",
                    Ipv4Addr::from(r.prefix),
                    r.depth,
                    r.port,
                    name(r.port)
                );
            }
            for r in &v6 {
                println!(
                    "{tag}: Adding route {} / {} ({}) [{}]",
                    Ipv6Addr::from(r.prefix),
                    r.depth,
                    r.port,
                    name(r.port)
                );
            }
            Ok(Tables::Lpm(Arc::new(LpmRouter::new(&v4, &v6)?)))
        }
        LookupMode::Em => {
            let (mut v4, mut v6): (Vec<EmRoute<u32>>, Vec<EmRoute<u128>>) =
                (routes::default_em4(), routes::default_em6());
            if both {
                v4 = routes::read_file(p.rule_ipv4.as_deref().unwrap_or_default(), routes::parse_em_rule::<u32>)?;
                v6 = routes::read_file(p.rule_ipv6.as_deref().unwrap_or_default(), routes::parse_em_rule::<u128>)?;
            }
            v4.retain(|r| keep(r.port));
            v6.retain(|r| keep(r.port));
            // As DPDK's l3fwd: the IPv4 flows, or with --ipv6 the IPv6 ones.
            if p.ipv6 {
                v4.clear();
            } else {
                v6.clear();
            }
            println!("Hash: Adding 0x{:x} keys", v4.len() + v6.len());
            // Sized for the flows (a small table stays in cache), or as --hash-entry-num asks.
            let cap = p.hash_entry_num.map_or(HASH_ENTRIES as usize, |n| n as usize);
            Ok(Tables::Em(Arc::new(EmRouter::new(&v4, &v6, cap)?)))
        }
    }
}

/// The checked plan: RX queues per port, the lcores in TX-queue order.
#[derive(Debug)]
pub struct Plan {
    /// RX queues per port (index: port id; 0 for ports not enabled).
    pub nb_rxq: Vec<u16>,
    /// EAL lcores, ascending: lcore `lcores[k]` sends by TX queue `k` of every port.
    pub lcores: Vec<u32>,
    /// The `--config` tuples.
    pub rx: Vec<RxQueueParam>,
}

struct PortSlot {
    port: Port,
    enabled: bool,
}

/// The running application.
pub struct App {
    eal: Eal,
    _pool: mempool::Mempool,
    ports: Vec<PortSlot>,
    plan: Plan,
    tables: Tables,
    params: Params,
    eth_dest: Vec<MacAddr>,
}

impl App {
    /// Checks the options against the ports and lcores, builds the tables, configures and starts the ports.
    pub fn new(mut eal: Eal, params: Params) -> Result<App> {
        let nb_ports = eal.nb_ports();
        if nb_ports == 0 {
            return Err(Error::Setup("No Ethernet ports - bye (add ports with --vdev or -a)".into()));
        }
        let possible = if nb_ports >= 64 { u64::MAX } else { (1u64 << nb_ports) - 1 };
        if params.portmask & !possible != 0 {
            return Err(Error::Setup(format!(
                "Invalid portmask {:#x}: it names ports that do not exist; possible ({possible:#x}, {nb_ports} ports)",
                params.portmask
            )));
        }
        for &(port, _) in &params.eth_dest {
            if port >= nb_ports {
                return Err(Error::Setup(format!("--eth-dest: port {port} does not exist ({nb_ports} ports)")));
            }
        }
        let ports: Vec<Port> = eal.take_ports();
        let infos: Vec<_> = ports.iter().map(|p| p.dev.info()).collect();
        let lcores = eal.lcores().to_vec();
        let nb_rxq =
            config::check(&params.config, &lcores, nb_ports, params.portmask, |p| infos[p as usize].max_rx_queues)?;
        let names: Vec<String> = ports.iter().map(|p| p.name.clone()).collect();
        let tables = build_tables(&params, &names)?;
        let nb_lcores = lcores.len() as u32;
        let en: Vec<u16> = (0..nb_ports).filter(|&p| enabled(params.portmask, p)).collect();
        let (rxd, txd) = (params.rx_queue_size as u32, params.tx_queue_size as u32);
        let total_rxq: u32 = en.iter().map(|&p| nb_rxq[p as usize].max(1) as u32).sum();
        let n = (en.len() as u32 * nb_lcores * fwd::MAX_PKT_BURST as u32
            + en.len() as u32 * nb_lcores * txd
            + total_rxq * rxd
            + nb_lcores * MEMPOOL_CACHE_SIZE)
            .max(8192);
        let data_room =
            params.max_pkt_len.map_or(mempool::DEFAULT_DATA_ROOM, |l| (l as u16).max(mempool::DEFAULT_DATA_ROOM));
        let pool = eal.pktmbuf_pool("mbuf_pool_0", n, MEMPOOL_CACHE_SIZE, data_room)?;
        let mut eth_dest: Vec<MacAddr> = (0..nb_ports).map(|p| MacAddr([2, 0, 0, 0, 0, p as u8])).collect();
        for &(port, mac) in &params.eth_dest {
            eth_dest[port as usize] = mac;
        }
        let mut slots: Vec<PortSlot> = ports
            .into_iter()
            .enumerate()
            .map(|(i, port)| PortSlot { port, enabled: enabled(params.portmask, i as u16) })
            .collect();
        for &p in &en {
            let rxq = nb_rxq[p as usize].max(1);
            let txq = nb_lcores as u16;
            let info = &infos[p as usize];
            print!("Initializing port {p} ... Creating queues: nb_rxq={rxq} nb_txq={txq}... ");
            if txq > info.max_tx_queues {
                return Err(Error::Setup(format!(
                    "port {p} ({}) has at most {} TX queues; l3fwd needs one per lcore ({txq}): give fewer lcores",
                    names[p as usize], info.max_tx_queues
                )));
            }
            let rss = (rxq > 1 && info.flow_type_rss_offloads.0 != 0).then_some(RssConfig {
                key: None,
                functions: RssHashFunctions(RssHashFunctions::IP.0 & info.flow_type_rss_offloads.0),
            });
            let mtu = params.max_pkt_len.map_or(1500, |l| (l - 18) as u16);
            let cfg = PortConfig {
                rx_queues: rxq,
                tx_queues: txq,
                rx_desc: params.rx_queue_size,
                tx_desc: params.tx_queue_size,
                mtu,
                rss,
                // l3fwd-power: the RX queues' interrupts where the port has them (a software port sleeps on its
                // own descriptors).
                intr_conf: pktio::IntrConf {
                    rxq: params.power.is_some() && slots[p as usize].port.dev.state().intr_capa.rxq,
                    lsc: false,
                },
                ..Default::default()
            };
            let dev = &mut slots[p as usize].port.dev;
            let err = |source| Error::Port { port: p, source };
            dev.configure(&cfg).map_err(err)?;
            dev.start(&pool).map_err(err)?;
            if params.promiscuous {
                dev.set_promiscuous(true).map_err(err)?;
            }
            eal.publish_port(p, &**dev, &pool);
            println!("Address:{}, Destination:{}", dev.mac_addr(), eth_dest[p as usize]);
            let mode = dev.burst_mode();
            println!("Port {p}: driver {}, RX burst mode: {}, TX burst mode: {}", info.driver_name, mode.rx, mode.tx);
        }
        check_link_status(&slots);
        let plan = Plan { nb_rxq, lcores, rx: params.config.clone() };
        Ok(App { eal, _pool: pool, ports: slots, plan, tables, params, eth_dest })
    }

    /// Forwards until Ctrl-C (or SIGTERM), then prints the statistics and closes the ports.
    pub fn run(self) -> Result<()> {
        match &self.tables {
            Tables::Lpm(r) => {
                let r = r.clone();
                self.run_with(r)
            }
            Tables::Em(r) => {
                let r = r.clone();
                self.run_with(r)
            }
        }
    }

    fn run_with<R: Router>(mut self, router: Arc<R>) -> Result<()> {
        let nb_ports = self.ports.len();
        // With telemetry on, the queues are tapped so that a running l3fwd can be captured (pktio-dumpcap).
        let tapped = self.eal.telemetry().is_some();
        let tap = |port: u16, dir| if tapped { QueueTap::new(port, dir) } else { QueueTap::detached() };
        let mut lcores = Vec::new();
        for (k, &lcore) in self.plan.lcores.iter().enumerate() {
            let mut out: Vec<Option<TxPort>> = Vec::with_capacity(nb_ports);
            for (p, slot) in self.ports.iter_mut().enumerate() {
                if !slot.enabled {
                    out.push(None);
                    continue;
                }
                let tx = slot.port.dev.tx_queue(k as u16).map_err(|source| Error::Port { port: p as u16, source })?;
                let mut addrs = [0u8; 12];
                addrs[..6].copy_from_slice(&self.eth_dest[p].0);
                addrs[6..].copy_from_slice(&slot.port.dev.mac_addr().0);
                out.push(Some(TxPort::new(tx, addrs, tap(p as u16, Direction::Tx))));
            }
            let mut units = Vec::new();
            for t in self.plan.rx.iter().filter(|t| t.lcore == lcore) {
                let rx = self.ports[t.port as usize]
                    .port
                    .dev
                    .rx_queue(t.queue)
                    .map_err(|source| Error::Port { port: t.port, source })?;
                if self.params.power.is_some() && rx.wait_fd().is_none() {
                    return Err(Error::Setup(format!(
                        "port {} ({}) queue {}: no RX interrupt and no descriptor to sleep on; l3fwd-power needs \
                         a port with RX interrupts (a PCI port whose driver has them) or one with a descriptor \
                         (af_packet, af_xdp, tap); use l3fwd for this port",
                        t.port, self.ports[t.port as usize].port.name, t.queue
                    )));
                }
                units.push(RxUnit { port: t.port, queue: t.queue, rx, tap: tap(t.port, Direction::Rx) });
            }
            let counters = Arc::new(LcoreCounters::new(nb_ports));
            lcores.push((lcore, Lcore { units, out, counters, tapped, power: self.params.power }));
        }
        let counters: Vec<Arc<LcoreCounters>> = lcores.iter().map(|(_, l)| l.counters.clone()).collect();
        println!();
        let stop = Arc::new(AtomicBool::new(false));
        let main = self.eal.main_lcore();
        let mut main_work = None;
        let mut workers = Vec::new();
        let mut idle = Vec::new();
        for (lcore, l) in lcores {
            if l.units.is_empty() {
                println!("L3FWD: lcore {lcore} has nothing to do");
                idle.push(l);
                continue;
            }
            println!("L3FWD: entering main loop on lcore {lcore}");
            for u in &l.units {
                println!("L3FWD:  -- lcoreid={lcore} portid={} rxqueueid={}", u.port, u.queue);
            }
            if lcore == main {
                main_work = Some(l);
                continue;
            }
            let (r, st) = (router.clone(), stop.clone());
            match self.eal.launch_with(lcore, l, move |l| fwd::lcore_main(l, r, st, || {})) {
                Ok(t) => workers.push(t),
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    for w in workers {
                        let _ = w.join();
                    }
                    return Err(e.error.into());
                }
            }
        }
        let period = Duration::from_secs(self.params.stats_period);
        let mut next = Instant::now() + period;
        let mut rounds = 0u32;
        let main_idle = main_work.is_none();
        let tick = || {
            rounds = rounds.wrapping_add(1);
            if main_idle {
                std::thread::sleep(Duration::from_millis(1));
            } else if rounds & 63 != 0 {
                return;
            }
            if eal::stop_requested() {
                stop.store(true, Ordering::Relaxed);
                return;
            }
            if !period.is_zero() && Instant::now() >= next {
                next = Instant::now() + period;
                print!("{}", statistics(&counters, nb_ports));
                let _ = std::io::stdout().flush();
            }
        };
        let main_l = Lcore {
            units: Vec::new(),
            out: Vec::new(),
            counters: Arc::new(LcoreCounters::new(0)),
            tapped: false,
            power: None,
        };
        let done = fwd::lcore_main(main_work.unwrap_or(main_l), router.clone(), stop.clone(), tick);
        println!("\nSignal received, preparing to exit...");
        let mut all = vec![done];
        for w in workers {
            all.push(w.join()?);
        }
        print!("{}", statistics(&counters, nb_ports));
        drop(all);
        drop(idle);
        for (p, slot) in self.ports.iter_mut().enumerate() {
            if !slot.enabled {
                continue;
            }
            print!("Closing port {p}...");
            match slot.port.dev.stop() {
                Ok(()) => println!(" Done"),
                Err(e) => println!(" failed: {e}"),
            }
        }
        println!("Bye...");
        Ok(())
    }
}

/// The statistics block: per port RX/TX, then the drops by reason.
/// Waits (up to 9 s, polling every 100 ms) for the enabled ports' links, then reports each, as DPDK's l3fwd does
/// before it starts forwarding: a frame that arrives while a link is still down is lost.
fn check_link_status(slots: &[PortSlot]) {
    const CHECK_INTERVAL: Duration = Duration::from_millis(100);
    const MAX_CHECKS: u32 = 90;
    print!("\nChecking link status");
    let _ = std::io::stdout().flush();
    let all_up = || slots.iter().filter(|s| s.enabled).all(|s| s.port.dev.link().up);
    let mut checks = 0;
    while !all_up() && checks < MAX_CHECKS {
        print!(".");
        let _ = std::io::stdout().flush();
        std::thread::sleep(CHECK_INTERVAL);
        checks += 1;
    }
    println!("done");
    for (p, slot) in slots.iter().enumerate().filter(|(_, s)| s.enabled) {
        let link = slot.port.dev.link();
        if link.up {
            let duplex = if link.full_duplex { "FDX" } else { "HDX" };
            println!("Port {p} Link up at {} Mbps {duplex}", link.speed_mbps);
        } else {
            println!("Port {p} Link down");
        }
    }
}

pub fn statistics(counters: &[Arc<LcoreCounters>], nb_ports: usize) -> String {
    let mut s = String::from("\nl3fwd statistics ===================================\n");
    let (mut trx, mut ttx) = (0u64, 0u64);
    for p in 0..nb_ports {
        let rx: u64 = counters.iter().filter_map(|c| c.rx.get(p)).map(|c| c.get()).sum();
        let tx: u64 = counters.iter().filter_map(|c| c.tx.get(p)).map(|c| c.get()).sum();
        let _ = writeln!(s, "Port {p:<2} RX-packets: {rx:<14} TX-packets: {tx:<14}");
        trx += rx;
        ttx += tx;
    }
    let _ = writeln!(s, "Total   RX-packets: {trx:<14} TX-packets: {ttx:<14}");
    let mut total = 0;
    s.push_str("Dropped:");
    for d in Drop::ALL {
        let n: u64 = counters.iter().map(|c| c.dropped[d as usize].get()).sum();
        total += n;
        let _ = write!(s, " {}: {n}", d.name());
    }
    let _ = writeln!(s, "; total: {total}");
    let sleeps: u64 = counters.iter().map(|c| c.sleeps.get()).sum();
    if sleeps > 0 {
        let wakeups: u64 = counters.iter().map(|c| c.wakeups.get()).sum();
        let _ = writeln!(s, "Slept on RX interrupts: {sleeps} times, woken by a queue {wakeups} times");
    }
    s.push_str("====================================================\n");
    s
}

/// The whole of a binary's `main` (l3fwd, l3fwd-power): EAL arguments, then the application's, parsed by `parse`;
/// errors printed as DPDK's samples print them (`Invalid WHAT parameters`), exit status 1.
pub fn main_of(default_name: &str, parse: fn(&[String]) -> crate::Result<crate::params::Parsed>, what: &str) {
    use crate::params::{self, Parsed};
    let mut args: Vec<String> = std::env::args().collect();
    let program = if args.is_empty() { default_name.to_string() } else { args.remove(0) };
    let (eal, app_args) = eal::init_with_or_exit(&program, &pmds::registry(), args);
    let params = match parse(&app_args) {
        Ok(Parsed::Run(p)) => *p,
        Ok(Parsed::Help) => {
            println!("{}", params::usage(&program));
            std::process::exit(0);
        }
        Err(e) => {
            eprintln!(
                "{}\nEAL: Error - exiting with code: 1\n  Cause: Invalid {what} parameters: {e}",
                params::usage(&program)
            );
            std::process::exit(1);
        }
    };
    if let Err(e) = App::new(eal, params).and_then(App::run) {
        eprintln!("EAL: Error - exiting with code: 1\n  Cause: {e}");
        std::process::exit(1);
    }
}
