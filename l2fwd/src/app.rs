//! Setting l2fwd up (ports, pairs, lcores), running it, the statistics screen, and closing down.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use eal::{Eal, Port};
use mempool::Mempool;
use pktio::{PortConfig, RssConfig, RssHashFunctions};

use crate::fwd::{self, Unit, UnitCounters};
use crate::params::Params;
use crate::{Error, Result};

/// RX descriptors per queue (DPDK's l2fwd default).
pub const RX_DESC: u16 = 1024;
/// TX descriptors per queue.
pub const TX_DESC: u16 = 1024;
/// Per-lcore mempool cache.
pub const MEMPOOL_CACHE_SIZE: u32 = 256;

/// The destination port of each port (index: port id; `None`: not forwarded).
pub fn pair_ports(portmask: u64, nb_ports: u16, portmap: &[(u16, u16)]) -> Result<Vec<Option<u16>>> {
    let possible = if nb_ports >= 64 { u64::MAX } else { (1u64 << nb_ports) - 1 };
    if portmask & !possible != 0 {
        return Err(Error::Setup(format!(
            "Invalid portmask {portmask:#x}: it names ports that do not exist; possible ({possible:#x}, {nb_ports} ports)"
        )));
    }
    let enabled: Vec<u16> = (0..nb_ports.min(64)).filter(|&p| portmask & (1 << p) != 0).collect();
    let mut dst = vec![None; nb_ports as usize];
    if portmap.is_empty() {
        for pair in enabled.chunks(2) {
            match *pair {
                [a, b] => {
                    dst[a as usize] = Some(b);
                    dst[b as usize] = Some(a);
                }
                [a] => {
                    println!("Notice: odd number of ports in portmask.");
                    dst[a as usize] = Some(a);
                }
                _ => unreachable!("chunks of two"),
            }
        }
        return Ok(dst);
    }
    for &(a, b) in portmap {
        for p in [a, b] {
            if !enabled.contains(&p) {
                return Err(Error::Setup(format!(
                    "--portmap: port {p} is not in the portmask {portmask:#x} (or does not exist)"
                )));
            }
            if dst[p as usize].is_some() {
                return Err(Error::Setup(format!("--portmap: port {p} is used in more than one pair")));
            }
        }
        dst[a as usize] = Some(b);
        dst[b as usize] = Some(a);
    }
    if let Some(p) = enabled.iter().find(|&&p| dst[p as usize].is_none()) {
        return Err(Error::Setup(format!("--portmap: port {p} is in the portmask but in no pair")));
    }
    Ok(dst)
}

/// Per lcore, the (port, RX queue) pairs it polls.
pub type LcorePlan = Vec<(u32, Vec<(u16, u16)>)>;

/// Which lcore polls which (port, RX queue): in port then queue order, `per_lcore` per lcore, lcores ascending
/// (the main one included), as DPDK's l2fwd hands out ports.
pub fn assign_lcores(lcores: &[u32], rx: &[(u16, u16)], per_lcore: u32) -> Result<LcorePlan> {
    let mut out: Vec<(u32, Vec<(u16, u16)>)> = Vec::new();
    let mut next = lcores.iter();
    for &q in rx {
        let need_new = out.last().is_none_or(|(_, v)| v.len() as u32 == per_lcore);
        if need_new {
            let Some(&l) = next.next() else {
                return Err(Error::Setup(format!(
                    "Not enough cores: {} RX queues at {per_lcore} per lcore need {} lcores, -l gives {}",
                    rx.len(),
                    rx.len().div_ceil(per_lcore as usize),
                    lcores.len()
                )));
            };
            out.push((l, Vec::new()));
        }
        out.last_mut().expect("pushed").1.push(q);
    }
    Ok(out)
}

struct PortInfo {
    id: u16,
    port: Port,
}

/// The running application.
pub struct App {
    eal: Eal,
    _pool: Mempool,
    ports: Vec<PortInfo>,
    enabled: Vec<u16>,
    plan: LcorePlan,
    dst: Vec<Option<u16>>,
    params: Params,
}

impl App {
    /// Checks the options against the ports and lcores, configures and starts the enabled ports.
    pub fn new(mut eal: Eal, params: Params) -> Result<App> {
        let nb_ports = eal.nb_ports();
        if nb_ports == 0 {
            return Err(Error::Setup("No Ethernet ports - bye (add ports with --vdev or -a)".into()));
        }
        let dst = pair_ports(params.portmask, nb_ports, &params.portmap)?;
        let enabled: Vec<u16> = (0..nb_ports).filter(|&p| dst[p as usize].is_some()).collect();
        let rx: Vec<(u16, u16)> = enabled.iter().flat_map(|&p| (0..params.rxq).map(move |q| (p, q))).collect();
        let plan = assign_lcores(eal.lcores(), &rx, params.queues_per_lcore)?;
        for (lcore, qs) in &plan {
            for &(p, q) in qs {
                let d = dst[p as usize].expect("enabled");
                if params.rxq > 1 {
                    println!("Lcore {lcore}: RX port {p} queue {q} TX port {d} queue {q}");
                } else {
                    println!("Lcore {lcore}: RX port {p} TX port {d}");
                }
            }
        }
        let nb_lcores = eal.lcores().len() as u32;
        let per_port = params.rxq as u32 * (RX_DESC as u32 + TX_DESC as u32 + fwd::MAX_PKT_BURST as u32);
        let n = (enabled.len() as u32 * per_port + nb_lcores * MEMPOOL_CACHE_SIZE).max(8192);
        let pool = eal.pktmbuf_pool("mbuf_pool", n, MEMPOOL_CACHE_SIZE, mempool::DEFAULT_DATA_ROOM)?;
        let ports: Vec<PortInfo> =
            eal.take_ports().into_iter().enumerate().map(|(i, port)| PortInfo { id: i as u16, port }).collect();
        let mut app = App { eal, _pool: pool.clone(), ports, enabled, plan, dst, params };
        for &p in &app.enabled.clone() {
            app.init_port(p, &pool)?;
        }
        Ok(app)
    }

    fn init_port(&mut self, id: u16, pool: &Mempool) -> Result<()> {
        print!("Initializing port {id}... ");
        let rxq = self.params.rxq;
        let dev = &mut self.ports[id as usize].port.dev;
        let info = dev.info();
        let rss = (rxq > 1 && info.flow_type_rss_offloads.0 != 0).then_some(RssConfig {
            key: None,
            functions: RssHashFunctions(RssHashFunctions::ALL.0 & info.flow_type_rss_offloads.0),
        });
        let cfg = PortConfig {
            rx_queues: rxq,
            tx_queues: rxq,
            rx_desc: RX_DESC,
            tx_desc: TX_DESC,
            rss,
            ..Default::default()
        };
        let err = |source| Error::Port { port: id, source };
        dev.configure(&cfg).map_err(err)?;
        dev.start(pool).map_err(err)?;
        dev.set_promiscuous(true).map_err(err)?;
        self.eal.publish_port(id, &**dev, pool);
        println!("done: \nPort {id}, MAC address: {}\n", dev.mac_addr());
        let mode = dev.burst_mode();
        println!("Port {id}: RX burst mode: {}, TX burst mode: {}", mode.rx, mode.tx);
        Ok(())
    }

    /// Forwards until Ctrl-C (or SIGTERM), printing the statistics screen every `-T` seconds; then stops the
    /// lcores, prints the statistics once more and closes the ports.
    pub fn run(mut self) -> Result<()> {
        let mut units_by_lcore = Vec::new();
        // With telemetry on, the queues are tapped so that a running l2fwd can be captured (pktio-dumpcap).
        let tapped = self.eal.telemetry().is_some();
        for (lcore, qs) in &self.plan {
            let mut units = Vec::new();
            for &(p, q) in qs {
                let d = self.dst[p as usize].expect("enabled");
                let tx_mac = self.ports[d as usize].port.dev.mac_addr();
                let err = |port, source| Error::Port { port, source };
                let rx = self.ports[p as usize].port.dev.rx_queue(q).map_err(|e| err(p, e))?;
                let tx = self.ports[d as usize].port.dev.tx_queue(q).map_err(|e| err(d, e))?;
                let unit = Unit::new(p, q, d, rx, tx, tx_mac);
                units.push(if tapped { unit.tapped() } else { unit });
            }
            units_by_lcore.push((*lcore, units));
        }
        let counters: Vec<(u16, u16, Arc<UnitCounters>)> = units_by_lcore
            .iter()
            .flat_map(|(_, us)| us.iter().map(|u| (u.rx_port, u.tx_port, u.counters.clone())))
            .collect();
        println!("Checking link status...done");
        for &p in &self.enabled {
            let l = self.ports[p as usize].port.dev.link();
            if l.up {
                println!("Port {p} Link up at {} Mbps {}", l.speed_mbps, if l.full_duplex { "FDX" } else { "HDX" });
            } else {
                println!("Port {p} Link down");
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let main_lcore = self.eal.main_lcore();
        let mut main_units = Vec::new();
        let mut workers = Vec::new();
        for (lcore, units) in units_by_lcore {
            println!("entering main loop on lcore {lcore}");
            if lcore == main_lcore {
                main_units = units;
                continue;
            }
            let (mac, st) = (self.params.mac_updating, stop.clone());
            match self.eal.launch_with(lcore, units, move |u| fwd::lcore_main(u, mac, st, || {})) {
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
        let clear = std::io::stdout().is_terminal();
        let mut next = Instant::now() + period;
        let mut rounds = 0u32;
        let idle = main_units.is_empty();
        let enabled = self.enabled.clone();
        let tick = || {
            rounds = rounds.wrapping_add(1);
            if idle {
                std::thread::sleep(Duration::from_millis(1));
            } else if rounds & 63 != 0 {
                return;
            }
            if eal::stop_requested() {
                stop.store(true, Ordering::Relaxed);
                return;
            }
            if period.is_zero() {
                return;
            }
            let now = Instant::now();
            if now >= next {
                next = now + period;
                print!("{}", stats_screen(&enabled, &counters, clear));
                let _ = std::io::stdout().flush();
            }
        };
        let main_units = fwd::lcore_main(main_units, self.params.mac_updating, stop.clone(), tick);
        println!("\nSignal received, preparing to exit...");
        let mut all = vec![main_units];
        for w in workers {
            all.push(w.join()?);
        }
        let counters: Vec<_> = all.iter().flatten().map(|u| (u.rx_port, u.tx_port, u.counters.clone())).collect();
        print!("{}", stats_screen(&self.enabled, &counters, false));
        drop(all);
        for &p in &self.enabled {
            print!("Closing port {p}...");
            let port = &mut self.ports[p as usize];
            if let Err(e) = port.port.dev.stop() {
                println!(" failed: {e}");
            } else {
                println!(" Done");
            }
            let _ = port.id;
        }
        println!("Bye...");
        Ok(())
    }
}

/// DPDK's l2fwd statistics screen: per enabled port sent/received/dropped, then the totals.
pub fn stats_screen(enabled: &[u16], counters: &[(u16, u16, Arc<UnitCounters>)], clear: bool) -> String {
    let mut s = String::new();
    if clear {
        s.push_str("\x1b[2J\x1b[1;1H");
    }
    s.push_str("\nPort statistics ====================================");
    let (mut tt, mut tr, mut td) = (0u64, 0u64, 0u64);
    for &p in enabled {
        let tx: u64 = counters.iter().filter(|c| c.1 == p).map(|c| c.2.tx.get()).sum();
        let dropped: u64 = counters.iter().filter(|c| c.1 == p).map(|c| c.2.dropped.get()).sum();
        let rx: u64 = counters.iter().filter(|c| c.0 == p).map(|c| c.2.rx.get()).sum();
        let _ = write!(
            s,
            "\nStatistics for port {p} ------------------------------\nPackets sent: {tx:>24}\nPackets received: \
             {rx:>20}\nPackets dropped: {dropped:>21}"
        );
        tt += tx;
        tr += rx;
        td += dropped;
    }
    let _ = write!(
        s,
        "\nAggregate statistics ===============================\nTotal packets sent: {tt:>18}\nTotal packets \
         received: {tr:>14}\nTotal packets dropped: {td:>15}\n====================================================\n"
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_in_order_and_odd_last_with_itself() {
        assert_eq!(pair_ports(0xf, 4, &[]).unwrap(), vec![Some(1), Some(0), Some(3), Some(2)]);
        assert_eq!(pair_ports(0x5, 3, &[]).unwrap(), vec![Some(2), None, Some(0)]);
        assert_eq!(pair_ports(0x1, 1, &[]).unwrap(), vec![Some(0)]);
        assert_eq!(pair_ports(0x7, 3, &[]).unwrap(), vec![Some(1), Some(0), Some(2)]);
    }

    #[test]
    fn portmap_pairs_and_its_errors() {
        assert_eq!(pair_ports(0xf, 4, &[(0, 3), (1, 2)]).unwrap(), vec![Some(3), Some(2), Some(1), Some(0)]);
        assert!(pair_ports(0x3, 4, &[(0, 2)]).is_err(), "port 2 not in mask");
        assert!(pair_ports(0xf, 4, &[(0, 1), (1, 2)]).is_err(), "port used twice");
        assert!(pair_ports(0xf, 4, &[(0, 1)]).is_err(), "ports 2, 3 unpaired");
    }

    #[test]
    fn absent_ports_in_the_mask_are_an_error() {
        let e = pair_ports(0x4, 2, &[]).unwrap_err().to_string();
        assert!(e.contains("possible (0x3"), "{e}");
    }

    #[test]
    fn lcores_get_queues_in_order() {
        let rx = [(0, 0), (1, 0), (2, 0)];
        let plan = assign_lcores(&[0, 1, 2, 3], &rx, 1).unwrap();
        assert_eq!(plan, vec![(0, vec![(0, 0)]), (1, vec![(1, 0)]), (2, vec![(2, 0)])]);
        let plan = assign_lcores(&[0, 3], &rx, 2).unwrap();
        assert_eq!(plan, vec![(0, vec![(0, 0), (1, 0)]), (3, vec![(2, 0)])]);
        assert!(assign_lcores(&[0, 1], &rx, 1).unwrap_err().to_string().contains("Not enough cores"));
    }

    #[test]
    fn statistics_screen_has_dpdk_layout() {
        let c = Arc::new(UnitCounters::default());
        c.rx.add(5);
        c.tx.add(4);
        c.dropped.add(1);
        let s = stats_screen(&[0, 1], &[(0, 1, c)], false);
        assert!(s.contains(
            "\nStatistics for port 1 ------------------------------\nPackets sent:                        4\n"
        ));
        assert!(s.contains("Packets received:                    0\nPackets dropped:                     1"));
        assert!(s.contains("Total packets sent:                  4\nTotal packets received:              5\n"));
    }
}
