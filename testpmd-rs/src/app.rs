//! The application state behind the prompt: ports and their queues, the forwarding configuration, running
//! forwarding lcores, and every command's effect and printed block (in dpdk-testpmd's layout).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use eal::{Eal, LcoreThread};
use mempool::Mempool;
use pktio::{EthDev, MacAddr, PortConfig, PortStats, RssConfig, RssHashFunctions, RxQueue, TxQueue};

use crate::fwd::{self, FwdMode, GenConfig, Stream, StreamCounters, StreamSpec};
use crate::params::{Params, RssMode, Topology};

/// Name of the packet pool (testpmd's name for socket 0).
pub const POOL_NAME: &str = "mb_pool_0";
/// Per-lcore mempool cache (testpmd's default).
pub const POOL_CACHE: u32 = 250;

/// A command's failure: printed, and the prompt goes on.
pub type CmdResult = Result<(), String>;

/// One port with the queues it handed out (kept between forwarding runs, dropped before the port stops).
pub struct PortState {
    /// Port id.
    pub id: u16,
    /// Device name.
    pub name: String,
    /// The device.
    pub dev: Box<dyn EthDev>,
    rxq: Vec<Option<Box<dyn RxQueue>>>,
    txq: Vec<Option<Box<dyn TxQueue>>>,
    /// Counters when forwarding started (the forward statistics are counted from here).
    fwd_base: PortStats,
    /// Counters and time of the last `show port stats` (for the throughput lines).
    show_prev: Option<(Instant, PortStats)>,
    /// The configuration changed since the port was configured.
    need_reconfig: bool,
}

impl PortState {
    fn socket(&self) -> u32 {
        self.dev.info().numa_node.unwrap_or(0)
    }
}

/// The settings that `set ...` and `port config ...` change.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Forwarding mode.
    pub mode: FwdMode,
    /// Forwarding cores wanted.
    pub nb_cores: u16,
    /// Forwarding ports wanted (None: all in the mask).
    pub nb_ports: Option<u16>,
    /// Port mask.
    pub portmask: u64,
    /// Packets per burst.
    pub burst: u16,
    /// Generated packet segment lengths.
    pub txpkts: Vec<u16>,
    /// Port topology.
    pub topology: Topology,
    /// RX queues per port.
    pub rxq: u16,
    /// TX queues per port.
    pub txq: u16,
    /// RX descriptors.
    pub rxd: u16,
    /// TX descriptors.
    pub txd: u16,
    /// RSS.
    pub rss: RssMode,
    /// MTU from --max-pkt-len.
    pub mtu: Option<u16>,
    /// flowgen flows.
    pub flowgen_flows: u32,
}

enum Worker {
    Lcore(LcoreThread<Vec<Stream>>),
    Thread(JoinHandle<Vec<Stream>>),
}

struct Running {
    stop: Arc<AtomicBool>,
    workers: Vec<Worker>,
}

/// The forwarding configuration: streams and which lcore runs which.
#[derive(Debug, Clone)]
pub struct FwdPlan {
    /// Streams in order.
    pub streams: Vec<StreamSpec>,
    /// (lcore id, first stream, number of streams).
    pub lcores: Vec<(u32, usize, usize)>,
    /// Forwarding ports.
    pub ports: Vec<u16>,
}

/// The application.
pub struct App {
    eal: Eal,
    /// The packet pool.
    pub pool: Mempool,
    /// Ports, by id.
    pub ports: Vec<PortState>,
    /// Peer MAC per port.
    pub peers: Vec<MacAddr>,
    /// Settings.
    pub set: Settings,
    running: Option<Running>,
    /// Streams of the current or last run, with their counters.
    streams: Vec<(StreamSpec, Arc<StreamCounters>)>,
    /// Mode of the current or last run.
    run_mode: FwdMode,
    warned_single_lcore: bool,
    /// `set record FILE`: the file, and the capture of the current run.
    record: Option<(String, Option<fwd::Recorder>)>,
}

fn port_list(arg: &str, nb: usize) -> Result<Vec<u16>, String> {
    if arg == "all" {
        return Ok((0..nb as u16).collect());
    }
    let id: u16 = arg.parse().map_err(|_| format!("Invalid port {arg:?}: expected a port number or all"))?;
    if id as usize >= nb {
        return Err(format!("Invalid port {id}: valid ports are 0..{}", nb.saturating_sub(1)));
    }
    Ok(vec![id])
}

fn sub(a: u64, b: u64) -> u64 {
    a.saturating_sub(b)
}

impl App {
    /// Builds the application from the EAL and the parsed options: creates the pool, configures and starts every
    /// port (printing testpmd's start-up lines).
    pub fn new(mut eal: Eal, p: &Params) -> Result<App, String> {
        let ports = eal.take_ports();
        if ports.is_empty() {
            return Err("No probed ethernet devices: add ports with --vdev (e.g. --vdev net_null0) or -a PCI".into());
        }
        let nb = ports.len();
        for &(port, _) in &p.eth_peers {
            if port as usize >= nb {
                return Err(format!("--eth-peer: port {port} does not exist (ports: 0..{})", nb - 1));
            }
        }
        if let Some(n) = p.nb_ports {
            if n as usize > nb {
                return Err(format!("--nb-ports={n}: only {nb} ports exist"));
            }
        }
        let portmask = p.portmask.unwrap_or(u64::MAX);
        if (0..nb.min(64)).all(|i| portmask & (1 << i) == 0) {
            return Err(format!("--portmask={portmask:#x} selects none of the {nb} ports"));
        }
        let workers = eal.worker_lcores().len();
        if workers > 0 && p.nb_cores as usize > workers {
            return Err(format!(
                "--nb-cores={}: only {workers} forwarding lcores (the EAL lcores minus the main one); give more with -l",
                p.nb_cores
            ));
        }
        let data_room = p.mbuf_size.checked_sub(mempool::DEFAULT_HEADROOM as u32).filter(|&d| d >= 64);
        let data_room =
            data_room.ok_or_else(|| format!("--mbuf-size={}: must exceed the 128-byte headroom", p.mbuf_size))?;
        let total: u32 = p.txpkts.iter().map(|&l| l as u32).sum();
        if p.txpkts.iter().any(|&l| l as u32 > data_room) || (p.txpkts.len() == 1 && total > data_room) {
            return Err(format!("--txpkts: a segment is larger than the mbuf data room ({data_room} bytes)"));
        }
        let lcores = eal.lcores().len() as u32;
        let n_mbufs = p.total_num_mbufs.unwrap_or_else(|| {
            let per_port =
                p.rxq as u32 * p.rxd as u32 + p.txq as u32 * p.txd as u32 + 2 * crate::params::MAX_BURST as u32;
            (per_port * nb as u32 + lcores * POOL_CACHE * 2 + 4096).max(8191)
        });
        let pool = eal
            .pktmbuf_pool(POOL_NAME, n_mbufs, POOL_CACHE, data_room as u16)
            .map_err(|e| format!("Creating mbuf pool '{POOL_NAME}' of {n_mbufs} mbufs failed: {e}"))?;
        let mut peers: Vec<MacAddr> = (0..nb).map(|i| MacAddr([2, 0, 0, 0, 0, i as u8])).collect();
        for &(port, mac) in &p.eth_peers {
            peers[port as usize] = mac;
        }
        let set = Settings {
            mode: p.fwd_mode,
            nb_cores: p.nb_cores,
            nb_ports: p.nb_ports,
            portmask,
            burst: p.burst,
            txpkts: p.txpkts.clone(),
            topology: p.topology,
            rxq: p.rxq,
            txq: p.txq,
            rxd: p.rxd,
            txd: p.txd,
            rss: p.rss,
            mtu: p.max_pkt_len.map(|l| l.saturating_sub(18) as u16),
            flowgen_flows: p.flowgen_flows,
        };
        let ports = ports
            .into_iter()
            .enumerate()
            .map(|(i, port)| PortState {
                id: i as u16,
                name: port.name,
                dev: port.dev,
                rxq: Vec::new(),
                txq: Vec::new(),
                fwd_base: PortStats::default(),
                show_prev: None,
                need_reconfig: true,
            })
            .collect();
        let mut app = App {
            eal,
            pool,
            ports,
            peers,
            set,
            running: None,
            streams: Vec::new(),
            run_mode: p.fwd_mode,
            warned_single_lcore: false,
            record: None,
        };
        app.start_ports(&(0..nb as u16).collect::<Vec<_>>())?;
        for port in &mut app.ports {
            if let Err(e) = port.dev.set_promiscuous(p.promisc) {
                println!("Warning: port {}: cannot set promiscuous mode: {e}", port.id);
            }
        }
        Ok(app)
    }

    /// True while forwarding runs.
    pub fn is_forwarding(&self) -> bool {
        self.running.is_some()
    }

    fn port_config(&self) -> PortConfig {
        let rss = (self.set.rxq > 1 && self.set.rss != RssMode::Disabled).then(|| RssConfig {
            key: None,
            functions: if self.set.rss == RssMode::Udp { RssHashFunctions::UDP } else { RssHashFunctions::IP },
        });
        PortConfig {
            rx_queues: self.set.rxq,
            tx_queues: self.set.txq,
            rx_desc: self.set.rxd,
            tx_desc: self.set.txd,
            mtu: self.set.mtu.unwrap_or(1500),
            rss,
            ..PortConfig::default()
        }
    }

    /// `port start`: configures (when needed) and starts the ports, and takes their queues.
    pub fn start_ports(&mut self, ids: &[u16]) -> CmdResult {
        let cfg = self.port_config();
        let mut errors = Vec::new();
        for &id in ids {
            let pool = self.pool.clone();
            let port = &mut self.ports[id as usize];
            if port.dev.is_started() {
                continue;
            }
            let socket = port.socket();
            println!("Configuring Port {id} (socket {socket})");
            if port.need_reconfig || port.dev.config() != &cfg {
                let mut c = cfg.clone();
                // Keep an MTU set with `port config mtu` unless --max-pkt-len fixed one.
                if self.set.mtu.is_none() && !port.need_reconfig {
                    c.mtu = port.dev.mtu();
                }
                if let Err(e) = port.dev.configure(&c) {
                    errors.push(format!("Fail to configure port {id}: {e}"));
                    continue;
                }
                port.need_reconfig = false;
            }
            if let Err(e) = port.dev.start(&pool) {
                errors.push(format!("Fail to start port {id}: {e}"));
                continue;
            }
            let (nrx, ntx) = (port.dev.config().rx_queues, port.dev.config().tx_queues);
            let rx: Result<Vec<_>, _> = (0..nrx).map(|q| port.dev.rx_queue(q).map(Some)).collect();
            let tx: Result<Vec<_>, _> = (0..ntx).map(|q| port.dev.tx_queue(q).map(Some)).collect();
            match (rx, tx) {
                (Ok(rx), Ok(tx)) => {
                    port.rxq = rx;
                    port.txq = tx;
                }
                (Err(e), _) | (_, Err(e)) => {
                    let _ = port.dev.stop();
                    errors.push(format!("Fail to set up the queues of port {id}: {e}"));
                    continue;
                }
            }
            println!("Port {id}: {}", port.dev.mac_addr());
        }
        if ids.len() > 1 || errors.is_empty() {
            println!("Checking link statuses...");
            println!("Done");
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("\n"))
        }
    }

    /// `port stop`: drops the queues and stops the ports.
    pub fn stop_ports(&mut self, ids: &[u16]) -> CmdResult {
        if self.is_forwarding() {
            return Err("Please stop forwarding first (stop)".into());
        }
        println!("Stopping ports...");
        let mut errors = Vec::new();
        for &id in ids {
            let port = &mut self.ports[id as usize];
            port.rxq.clear();
            port.txq.clear();
            if port.dev.is_started() {
                if let Err(e) = port.dev.stop() {
                    errors.push(format!("Fail to stop port {id}: {e}"));
                }
            }
        }
        println!("Done");
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("\n"))
        }
    }

    /// The forwarding ports (mask, count).
    pub fn fwd_ports(&self) -> Vec<u16> {
        let mut v: Vec<u16> =
            (0..self.ports.len() as u16).filter(|&i| i >= 64 || self.set.portmask & (1u64 << i) != 0).collect();
        if let Some(n) = self.set.nb_ports {
            v.truncate(n as usize);
        }
        v
    }

    fn fwd_lcore_ids(&self) -> Vec<u32> {
        let w = self.eal.worker_lcores();
        if w.is_empty() {
            vec![self.eal.main_lcore()]
        } else {
            w
        }
    }

    fn tx_port_of(&self, rxp: usize, nports: usize) -> usize {
        match self.set.topology {
            Topology::Paired => {
                if rxp & 1 == 0 {
                    if rxp + 1 < nports {
                        rxp + 1
                    } else {
                        rxp
                    }
                } else {
                    rxp - 1
                }
            }
            Topology::Chained => (rxp + 1) % nports,
            Topology::Loop => rxp,
        }
    }

    /// Computes the streams and their lcores as testpmd's fwd_config_setup does.
    pub fn plan(&self) -> FwdPlan {
        let ports = self.fwd_ports();
        let np = ports.len();
        let nb_lcores = (self.set.nb_cores as usize).min(self.fwd_lcore_ids().len()).max(1);
        let (rxq, txq) = (self.set.rxq, self.set.txq);
        let mut streams = Vec::new();
        let mut cores;
        if self.set.mode == FwdMode::IcmpEcho {
            for &p in &ports {
                for q in 0..rxq {
                    streams.push(StreamSpec { rx_port: p, rx_queue: q, tx_port: p, tx_queue: q.min(txq - 1) });
                }
            }
            cores = nb_lcores.min(txq as usize * np);
        } else if rxq > 1 && txq > 1 {
            let nq = rxq.min(txq);
            for q in 0..nq {
                for (i, &p) in ports.iter().enumerate() {
                    let t = ports[self.tx_port_of(i, np)];
                    streams.push(StreamSpec { rx_port: p, rx_queue: q, tx_port: t, tx_queue: q });
                }
            }
            cores = nb_lcores;
        } else {
            for (i, &p) in ports.iter().enumerate() {
                let t = ports[self.tx_port_of(i, np)];
                streams.push(StreamSpec { rx_port: p, rx_queue: 0, tx_port: t, tx_queue: 0 });
            }
            cores = nb_lcores.min(np);
        }
        cores = cores.min(streams.len()).max(1);
        let ids = self.fwd_lcore_ids();
        let ns = streams.len();
        let (per, extra) = if ns <= cores { (1, 0) } else { (ns / cores, ns % cores) };
        let mut lcores = Vec::new();
        let mut at = 0;
        for (c, &id) in ids.iter().enumerate().take(cores) {
            let n = if c < cores - extra { per } else { per + 1 };
            let n = n.min(ns - at);
            lcores.push((id, at, n));
            at += n;
        }
        FwdPlan { streams, lcores, ports }
    }

    /// `show config fwd` (also printed by `start`).
    pub fn show_config_fwd(&self) {
        let plan = self.plan();
        println!(
            "{} packet forwarding - ports={} - cores={} - streams={} - NUMA support enabled, MP allocation mode: native",
            self.set.mode,
            plan.ports.len(),
            plan.lcores.len(),
            plan.streams.len()
        );
        for &(lcore, first, n) in &plan.lcores {
            print!("Logical Core {lcore} (socket 0) forwards packets on {n} streams:");
            for s in &plan.streams[first..first + n] {
                let rs = self.ports[s.rx_port as usize].socket();
                let ts = self.ports[s.tx_port as usize].socket();
                print!(
                    "\n  RX P={}/Q={} (socket {rs}) -> TX P={}/Q={} (socket {ts}) peer={}",
                    s.rx_port, s.rx_queue, s.tx_port, s.tx_queue, self.peers[s.tx_port as usize]
                );
            }
            println!();
        }
        println!();
    }

    /// `show config rxtx`.
    pub fn show_config_rxtx(&self) {
        let plan = self.plan();
        println!("  {} packet forwarding packets/burst={}", self.set.mode, self.set.burst);
        if self.set.mode.generates() {
            let len: u32 = self.set.txpkts.iter().map(|&l| l as u32).sum();
            println!("  packet len={len} - nb packet segments={}", self.set.txpkts.len());
        }
        println!("  nb forwarding cores={} - nb forwarding ports={}", plan.lcores.len(), plan.ports.len());
        for port in &self.ports {
            let c = port.dev.config();
            println!("  port {}: RX queue number: {} Tx queue number: {}", port.id, c.rx_queues, c.tx_queues);
            println!("    Rx offloads={:#x} Tx offloads={:#x}", c.rx_offloads, c.tx_offloads);
            println!("    RX queue: 0");
            println!("      RX desc={} - RX free threshold=0", c.rx_desc);
            println!("      RX threshold registers: pthresh=0 hthresh=0  wthresh=0");
            println!("      RX Offloads={:#x}", c.rx_offloads);
            println!("    TX queue: 0");
            println!("      TX desc={} - TX free threshold=0", c.tx_desc);
            println!("      TX threshold registers: pthresh=0 hthresh=0  wthresh=0");
            println!("      TX offloads={:#x} - TX RS bit threshold=0", c.tx_offloads);
        }
    }

    /// `show config cores`.
    pub fn show_config_cores(&self) {
        let ids = self.fwd_lcore_ids();
        let n = (self.set.nb_cores as usize).min(ids.len()).max(1);
        print!("List of forwarding lcores:");
        for id in &ids[..n] {
            print!(" {id:2}");
        }
        println!();
    }

    /// `start` / `start tx_first N`.
    pub fn start(&mut self, tx_first: u32) -> CmdResult {
        if self.is_forwarding() {
            return Err("Packet forwarding already started".into());
        }
        let plan = self.plan();
        for &p in &plan.ports {
            if !self.ports[p as usize].dev.is_started() {
                return Err(format!("Port {p} is not started: run port start {p} (or port start all)"));
            }
        }
        let gen_len: usize = self.set.txpkts.iter().map(|&l| l as usize).sum();
        if (self.set.mode.generates() || tx_first > 0)
            && self.set.txpkts.len() == 1
            && gen_len > self.pool.data_room() as usize
        {
            return Err(format!("txpkts {gen_len} exceeds the mbuf data room {}", self.pool.data_room()));
        }
        let single = self.eal.worker_lcores().is_empty();
        if single && !self.warned_single_lcore {
            println!(
                "Warning: no worker lcore (the EAL has only lcore {}): forwarding runs on an unpinned thread without \
                 a mempool cache; give two lcores or more with -l for speed",
                self.eal.main_lcore()
            );
            self.warned_single_lcore = true;
        }
        self.show_config_fwd();
        if self.set.mode == FwdMode::FlowGen {
            for &p in &plan.ports {
                println!("  number of flows for port {p}: {}", self.set.flowgen_flows);
            }
        }
        self.show_config_rxtx();

        for &p in &plan.ports {
            let port = &mut self.ports[p as usize];
            port.fwd_base = port.dev.stats();
        }
        // Move the queues into streams, grouped by lcore.
        let mut recorder = None;
        if let Some((path, current)) = &mut self.record {
            let w = pktio::pcap_file::PcapWriter::create(path.as_str())
                .map_err(|e| format!("set record: cannot create {path}: {e}"))?;
            let r: fwd::Recorder = Arc::new(std::sync::Mutex::new(w));
            println!("Recording the packets sent into {path}");
            *current = Some(r.clone());
            recorder = Some(r);
        }
        let gen = GenConfig {
            pool: self.pool.clone(),
            txpkts: self.set.txpkts.clone(),
            flowgen_flows: self.set.flowgen_flows,
            record: recorder,
        };
        let mut groups: Vec<(u32, Vec<Stream>)> = Vec::new();
        let mut failure = None;
        'outer: for &(lcore, first, n) in &plan.lcores {
            let mut v = Vec::with_capacity(n);
            for spec in &plan.streams[first..first + n] {
                let rx = self.ports[spec.rx_port as usize].rxq.get_mut(spec.rx_queue as usize).and_then(Option::take);
                let tx = self.ports[spec.tx_port as usize].txq.get_mut(spec.tx_queue as usize).and_then(Option::take);
                match (rx, tx) {
                    (Some(rx), Some(tx)) => {
                        let tx_mac = self.ports[spec.tx_port as usize].dev.mac_addr();
                        v.push(Stream::new(*spec, rx, tx, tx_mac, self.peers[spec.tx_port as usize], &gen));
                    }
                    (rx, tx) => {
                        self.give_back_queues(spec, rx, tx);
                        failure = Some(format!(
                            "stream RX P={}/Q={} -> TX P={}/Q={}: queue not available (port config changed? run port \
                             stop all / port start all)",
                            spec.rx_port, spec.rx_queue, spec.tx_port, spec.tx_queue
                        ));
                        groups.push((lcore, v));
                        break 'outer;
                    }
                }
            }
            groups.push((lcore, v));
        }
        if let Some(e) = failure {
            for (_, v) in groups {
                self.return_streams(v);
            }
            return Err(e);
        }
        self.streams = groups.iter().flat_map(|(_, v)| v.iter().map(|s| (s.spec, s.counters.clone()))).collect();
        self.run_mode = self.set.mode;
        let stop = Arc::new(AtomicBool::new(false));
        let mode = self.set.mode;
        let burst = self.set.burst as usize;
        let mut workers = Vec::new();
        let mut launch_error = None;
        for (lcore, v) in groups {
            let st = stop.clone();
            if single {
                let h = std::thread::Builder::new()
                    .name("fwd".into())
                    .spawn(move || fwd::lcore_main(mode, v, burst, tx_first, st));
                match h {
                    Ok(h) => workers.push(Worker::Thread(h)),
                    Err(e) => {
                        launch_error = Some(format!("cannot start the forwarding thread: {e}"));
                        break;
                    }
                }
            } else {
                match self.eal.launch_with(lcore, v, move |v| fwd::lcore_main(mode, v, burst, tx_first, st)) {
                    Ok(t) => workers.push(Worker::Lcore(t)),
                    Err(e) => {
                        // The lcore never started: its streams come back with the error.
                        self.return_streams(e.work);
                        launch_error = Some(format!("cannot launch lcore {lcore}: {}", e.error));
                        break;
                    }
                }
            }
        }
        self.running = Some(Running { stop, workers });
        if let Some(e) = launch_error {
            self.stop_quiet();
            return Err(e);
        }
        Ok(())
    }

    fn give_back_queues(&mut self, spec: &StreamSpec, rx: Option<Box<dyn RxQueue>>, tx: Option<Box<dyn TxQueue>>) {
        if let Some(rx) = rx {
            if let Some(slot) = self.ports[spec.rx_port as usize].rxq.get_mut(spec.rx_queue as usize) {
                *slot = Some(rx);
            }
        }
        if let Some(tx) = tx {
            if let Some(slot) = self.ports[spec.tx_port as usize].txq.get_mut(spec.tx_queue as usize) {
                *slot = Some(tx);
            }
        }
    }

    fn return_streams(&mut self, v: Vec<Stream>) {
        for s in v {
            let (spec, rx, tx) = s.into_queues();
            self.give_back_queues(&spec, Some(rx), Some(tx));
        }
    }

    /// Stops the lcores and takes the queues back; returns false when nothing ran.
    fn stop_quiet(&mut self) -> bool {
        let Some(run) = self.running.take() else { return false };
        run.stop.store(true, Ordering::SeqCst);
        for w in run.workers {
            let r = match w {
                Worker::Lcore(t) => t.join().map_err(|e| e.to_string()),
                Worker::Thread(h) => h.join().map_err(|_| "the forwarding thread panicked".to_string()),
            };
            match r {
                Ok(v) => self.return_streams(v),
                Err(e) => println!("Error: {e}; its queues are lost until the ports restart"),
            }
        }
        true
    }

    /// `stop`.
    pub fn stop(&mut self) -> CmdResult {
        if !self.is_forwarding() {
            return Err("Packet forwarding not started".into());
        }
        print!("Telling cores to stop...");
        println!("\nWaiting for lcores to finish...");
        self.stop_quiet();
        self.finish_record();
        self.show_fwd_stats();
        println!("\nDone.");
        Ok(())
    }

    fn finish_record(&mut self) {
        let Some((path, current)) = &mut self.record else { return };
        let Some(r) = current.take() else { return };
        let mut w = r.lock().unwrap_or_else(|e| e.into_inner());
        match w.flush() {
            Ok(()) => println!("Recorded {} packets into {path}", w.records_written()),
            Err(e) => println!("Error: recording into {path}: {e}"),
        }
    }

    /// `set record FILE` / `set record off`.
    pub fn set_record(&mut self, what: &str) -> CmdResult {
        if self.is_forwarding() {
            return Err("Please stop forwarding first (stop)".into());
        }
        if what == "off" {
            self.record = None;
            println!("Recording off");
        } else {
            std::fs::File::create(what).map_err(|e| format!("set record: cannot create {what}: {e}"))?;
            self.record = Some((what.to_string(), None));
            println!("Packets sent will be recorded into {what} (pcap) from the next start");
        }
        Ok(())
    }

    /// `show fwd stats all`: the forward statistics since forwarding started.
    pub fn show_fwd_stats(&self) {
        let nports = self.ports.len();
        let mut tx_dropped = vec![0u64; nports];
        let mut bad_ip = vec![0u64; nports];
        let mut bad_l4 = vec![0u64; nports];
        let fwd_ports: Vec<u16> = {
            let mut v: Vec<u16> = self.streams.iter().flat_map(|(s, _)| [s.rx_port, s.tx_port]).collect();
            v.sort_unstable();
            v.dedup();
            if v.is_empty() {
                self.fwd_ports()
            } else {
                v
            }
        };
        let csum = self.run_mode == FwdMode::Csum;
        for (s, c) in &self.streams {
            if self.streams.len() > fwd_ports.len() {
                let (rx, tx, dr) = (c.rx_packets.get(), c.tx_packets.get(), c.fwd_dropped.get());
                if rx != 0 || tx != 0 || dr != 0 {
                    println!(
                        "\n  ------- Forward Stats for RX Port={:2}/Queue={:2} -> TX Port={:2}/Queue={:2} -------",
                        s.rx_port, s.rx_queue, s.tx_port, s.tx_queue
                    );
                    print!("  RX-packets: {rx:<14} TX-packets: {tx:<14} TX-dropped: {dr:<14}");
                    if csum {
                        println!(
                            "  RX- bad IP checksum: {:<14}  Rx- bad L4 checksum: {:<14} Rx- bad outer L4 checksum: {:<14}",
                            c.bad_ip_csum.get(),
                            c.bad_l4_csum.get(),
                            0
                        );
                        println!(" RX- bad outer IP checksum: {:<14}", 0);
                    } else {
                        println!();
                    }
                }
            }
            tx_dropped[s.tx_port as usize] += c.fwd_dropped.get();
            bad_ip[s.rx_port as usize] += c.bad_ip_csum.get();
            bad_l4[s.rx_port as usize] += c.bad_l4_csum.get();
        }
        let (mut total_rx, mut total_tx, mut total_rx_drop, mut total_tx_drop, mut total_nombuf) = (0, 0, 0, 0, 0);
        for &p in &fwd_ports {
            let port = &self.ports[p as usize];
            let now = port.dev.stats();
            let b = &port.fwd_base;
            let (ipk, opk) = (sub(now.ipackets, b.ipackets), sub(now.opackets, b.opackets));
            let (imiss, ierr) = (sub(now.imissed, b.imissed), sub(now.ierrors, b.ierrors));
            let (oerr, nombuf) = (sub(now.oerrors, b.oerrors), sub(now.rx_nombuf, b.rx_nombuf));
            let txd = tx_dropped[p as usize] + oerr;
            total_rx += ipk;
            total_tx += opk;
            total_rx_drop += imiss;
            total_tx_drop += txd;
            total_nombuf += nombuf;
            let border = "----------------------";
            println!("\n  {border} Forward statistics for port {p:<2} {border}");
            println!("  RX-packets: {ipk:<14} RX-dropped: {imiss:<14}RX-total: {}", ipk + imiss);
            if csum {
                println!(
                    "  Bad-ipcsum: {:<14} Bad-l4csum: {:<14}Bad-outer-l4csum: {:<14}",
                    bad_ip[p as usize], bad_l4[p as usize], 0
                );
                println!("  Bad-outer-ipcsum: {:<14}", 0);
            }
            if ierr + nombuf > 0 {
                println!("  RX-error: {ierr}");
                println!("  RX-nombufs: {nombuf:<14}");
            }
            println!("  TX-packets: {opk:<14} TX-dropped: {txd:<14}TX-total: {}", opk + txd);
            println!("  {border}--------------------------------{border}");
        }
        let acc = "+++++++++++++++";
        println!("\n  {acc} Accumulated forward statistics for all ports{acc}");
        println!("  RX-packets: {total_rx:<14} RX-dropped: {total_rx_drop:<14}RX-total: {}", total_rx + total_rx_drop);
        println!("  TX-packets: {total_tx:<14} TX-dropped: {total_tx_drop:<14}TX-total: {}", total_tx + total_tx_drop);
        if total_nombuf > 0 {
            println!("  RX-nombufs: {total_nombuf:<14}");
        }
        println!("  {acc}++++++++++++++++++++++++++++++++++++++++++++++{acc}");
    }

    /// `clear fwd stats all`.
    pub fn clear_fwd_stats(&mut self) {
        for port in &mut self.ports {
            port.fwd_base = port.dev.stats();
        }
        // Counters are single-writer: a running stream keeps its own; start the shown figures afresh by
        // forgetting finished runs only.
        if !self.is_forwarding() {
            self.streams.clear();
        }
    }

    /// `show port stats N`.
    pub fn show_port_stats(&mut self, ids: &[u16]) {
        for &id in ids {
            let port = &mut self.ports[id as usize];
            let s = port.dev.stats();
            let border = "########################";
            println!("\n  {border} NIC statistics for port {id:<2} {border}");
            println!("  RX-packets: {:<10} RX-missed: {:<10} RX-bytes:  {}", s.ipackets, s.imissed, s.ibytes);
            println!("  RX-errors: {}", s.ierrors);
            println!("  RX-nombuf:  {:<10}", s.rx_nombuf);
            println!("  TX-packets: {:<10} TX-errors: {:<10} TX-bytes:  {}", s.opackets, s.oerrors, s.obytes);
            let now = Instant::now();
            let (mut rx_pps, mut rx_bps, mut tx_pps, mut tx_bps) = (0u64, 0u64, 0u64, 0u64);
            if let Some((t, prev)) = &port.show_prev {
                let ns = now.duration_since(*t).as_nanos() as f64;
                if ns > 0.0 {
                    let rate = |a: u64, b: u64| (sub(a, b) as f64 / ns * 1e9) as u64;
                    rx_pps = rate(s.ipackets, prev.ipackets);
                    tx_pps = rate(s.opackets, prev.opackets);
                    rx_bps = rate(s.ibytes, prev.ibytes) * 8;
                    tx_bps = rate(s.obytes, prev.obytes) * 8;
                }
            }
            port.show_prev = Some((now, s));
            println!("\n  Throughput (since last show)");
            println!("  Rx-pps: {rx_pps:>12}          Rx-bps: {rx_bps:>12}");
            println!("  Tx-pps: {tx_pps:>12}          Tx-bps: {tx_bps:>12}");
            println!("  {border}############################{border}");
        }
    }

    /// `clear port stats N`.
    pub fn clear_port_stats(&mut self, ids: &[u16]) {
        for &id in ids {
            let port = &mut self.ports[id as usize];
            port.dev.reset_stats();
            port.show_prev = None;
            port.fwd_base = PortStats::default();
            println!("\n  NIC statistics for port {id} cleared");
        }
    }

    /// `show port xstats N`.
    pub fn show_port_xstats(&self, ids: &[u16]) {
        for &id in ids {
            println!("###### NIC extended statistics for port {id:<2}");
            for x in self.ports[id as usize].dev.xstats() {
                println!("{}: {}", x.name, x.value);
            }
        }
    }

    /// `clear port xstats N`.
    pub fn clear_port_xstats(&mut self, ids: &[u16]) {
        for &id in ids {
            let port = &mut self.ports[id as usize];
            port.dev.reset_stats();
            port.show_prev = None;
            port.fwd_base = PortStats::default();
        }
    }

    /// `show port info N`.
    pub fn show_port_info(&self, ids: &[u16]) {
        for &id in ids {
            let port = &self.ports[id as usize];
            let info = port.dev.info();
            let link = port.dev.link();
            let c = port.dev.config();
            let border = "*********************";
            println!("\n{border} Infos for port {id:<2} {border}");
            print!("MAC address: {}", port.dev.mac_addr());
            print!("\nDevice name: {}", port.name);
            print!("\nDriver name: {}", info.driver_name);
            print!("\nFirmware-version: not available");
            print!("\nConnect to socket: {}", port.socket());
            print!("\nmemory allocation on the socket: {}", port.socket());
            println!("\nLink status: {}", if link.up { "up" } else { "down" });
            let speed = match link.speed_mbps {
                0 => "None".to_string(),
                s if s % 1000 == 0 => format!("{} Gbps", s / 1000),
                s => format!("{s} Mbps"),
            };
            println!("Link speed: {speed}");
            println!("Link duplex: {}", if link.full_duplex { "full-duplex" } else { "half-duplex" });
            println!("Autoneg status: {}", if link.autoneg { "On" } else { "Off" });
            println!("MTU: {}", port.dev.mtu());
            println!("Minimum MTU: {}", info.min_mtu);
            println!("Maximum MTU: {}", info.max_mtu);
            println!("Promiscuous mode: {}", if port.dev.promiscuous() { "enabled" } else { "disabled" });
            println!("Allmulticast mode: {}", if port.dev.allmulticast() { "enabled" } else { "disabled" });
            println!("Maximum number of MAC addresses: 1");
            println!("Maximum number of MAC addresses of hash filtering: 0");
            if info.reta_size > 0 {
                println!("Hash key size in bytes: {}", info.hash_key_size);
                println!("Redirection table size: {}", info.reta_size);
                println!("Supported RSS offload flow types: {:#x}", info.flow_type_rss_offloads.0);
            } else {
                println!("No RSS offload flow type is supported.");
            }
            println!("Maximum configurable length of RX packet: {}", info.max_rx_pktlen);
            println!("Current number of RX queues: {}", c.rx_queues);
            println!("Max possible RX queues: {}", info.max_rx_queues);
            println!("Max possible number of RXDs per queue: {}", info.rx_desc_lim.max);
            println!("Min possible number of RXDs per queue: {}", info.rx_desc_lim.min);
            println!("RXDs number alignment: {}", info.rx_desc_lim.align);
            println!("Current number of TX queues: {}", c.tx_queues);
            println!("Max possible TX queues: {}", info.max_tx_queues);
            println!("Max possible number of TXDs per queue: {}", info.tx_desc_lim.max);
            println!("Min possible number of TXDs per queue: {}", info.tx_desc_lim.min);
            println!("TXDs number alignment: {}", info.tx_desc_lim.align);
            println!("Port started: {}", if port.dev.is_started() { "yes" } else { "no" });
        }
    }

    /// `show mempool`: buffers free in each pool.
    pub fn show_mempool(&self) {
        let p = &self.pool;
        println!("mbuf pool {}: {}/{} available ({} in use)", p.name(), p.available(), p.size(), p.in_use());
    }

    /// Parses `all` or a port id.
    pub fn ports_arg(&self, arg: &str) -> Result<Vec<u16>, String> {
        port_list(arg, self.ports.len())
    }

    /// `set nbcore N`.
    pub fn set_nb_cores(&mut self, n: u16) -> CmdResult {
        let max = self.fwd_lcore_ids().len();
        if n == 0 || n as usize > max {
            return Err(format!("nb fwd cores {n} must be between 1 and {max} (the forwarding lcores)"));
        }
        self.set.nb_cores = n;
        println!("Number of forwarding cores set to {n}");
        Ok(())
    }

    /// `set nbport N`.
    pub fn set_nb_ports(&mut self, n: u16) -> CmdResult {
        let max = self.ports.len();
        if n == 0 || n as usize > max {
            return Err(format!("nb fwd ports {n} must be between 1 and {max}"));
        }
        self.set.nb_ports = Some(n);
        println!("Number of forwarding ports set to {n}");
        Ok(())
    }

    /// `set txpkts ...`.
    pub fn set_txpkts(&mut self, segs: Vec<u16>) -> CmdResult {
        let room = self.pool.data_room();
        if segs.iter().any(|&l| l > room) {
            return Err(format!("a segment is longer than the mbuf data room ({room} bytes)"));
        }
        self.set.txpkts = segs;
        Ok(())
    }

    /// `port config all rxq|txq|rxd|txd N`.
    pub fn port_config_all(&mut self, what: &str, n: u16) -> CmdResult {
        if self.ports.iter().any(|p| p.dev.is_started()) {
            return Err("Please stop all ports first (port stop all)".into());
        }
        if n == 0 {
            return Err(format!("{what} must be at least 1"));
        }
        match what {
            "rxq" | "txq" => {
                let max = self
                    .ports
                    .iter()
                    .map(|p| if what == "rxq" { p.dev.info().max_rx_queues } else { p.dev.info().max_tx_queues })
                    .min()
                    .unwrap_or(1);
                if n > max {
                    return Err(format!("{what} {n} is more than the ports allow ({max})"));
                }
                if what == "rxq" {
                    self.set.rxq = n
                } else {
                    self.set.txq = n
                }
            }
            "rxd" => self.set.rxd = n,
            "txd" => self.set.txd = n,
            _ => return Err(format!("port config all: unknown setting {what:?} (rxq, txq, rxd, txd)")),
        }
        for p in &mut self.ports {
            p.need_reconfig = true;
        }
        Ok(())
    }

    /// `port config mtu N M`.
    pub fn set_mtu(&mut self, id: u16, mtu: u16) -> CmdResult {
        let port = &mut self.ports[id as usize];
        port.dev.set_mtu(mtu).map_err(|e| format!("Set MTU failed: {e}"))
    }

    /// `quit`: stops forwarding and the ports, closes them and reports the pool.
    pub fn quit(mut self) {
        if self.is_forwarding() {
            let _ = self.stop();
        }
        let all: Vec<u16> = (0..self.ports.len() as u16).collect();
        for &id in &all {
            println!("\nStopping port {id}...");
        }
        if let Err(e) = self.stop_ports(&all) {
            println!("{e}");
        }
        for &id in &all {
            println!("\nShutting down port {id}...");
        }
        println!("Closing ports...");
        let ids: Vec<u16> = self.ports.drain(..).map(|p| p.id).collect();
        for id in ids {
            println!("Port {id} is closed");
        }
        println!("Done");
        self.streams.clear();
        self.show_mempool();
        println!("\nBye...");
    }
}
