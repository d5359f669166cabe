//! The application state behind the prompt: ports and their queues, the forwarding configuration, and every
//! command's effect and printed block (in dpdk-testpmd's layout); the forwarding runs themselves are in `run.rs`.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use eal::{Eal, LcoreThread};
use mempool::Mempool;
use pktio::{offload, EthDev, MacAddr, PortConfig, PortStats, RssConfig, RxQueue, TxQueue};

use crate::fwd::{self, FwdMode, Stream, StreamCounters, StreamSpec};
use crate::params::{Params, RssMode, Topology};

/// Name of the packet pool (testpmd's name for socket 0).
pub const POOL_NAME: &str = "mb_pool_0";

mod run;

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
    /// The arguments the EAL opened it with (`Devargs:` in `show port info`).
    pub devargs: String,
    rxq: Vec<Option<Box<dyn RxQueue>>>,
    txq: Vec<Option<Box<dyn TxQueue>>>,
    /// Counters when forwarding started (the forward statistics are counted from here).
    pub(crate) fwd_base: PortStats,
    /// Counters and time of the last `show port stats` (for the throughput lines).
    pub(crate) show_prev: Option<(Instant, PortStats)>,
    /// The configuration changed since the port was configured.
    pub(crate) need_reconfig: bool,
    /// RX offloads asked for this port alone (`vlan set strip`).
    pub(crate) port_rx_offloads: u64,
    /// The redirection table as last configured (round robin over the RX queues until `port config N rss reta`).
    pub(crate) reta: Vec<u16>,
    /// `port close`: the port takes no part any more.
    pub(crate) closed: bool,
}

impl PortState {
    pub(crate) fn socket(&self) -> u32 {
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
    /// Forwarding lcores as a mask (`--coremask`, `set coremask`); None: every worker lcore.
    pub coremask: Option<u64>,
    /// Empty the RX queues before forwarding starts (`set flush_rx`, `--no-flush-rx`).
    pub flush_rx: bool,
    /// RX offloads requested at configure time.
    pub rx_offloads: u64,
    /// TX offloads requested at configure time.
    pub tx_offloads: u64,
    /// Report link statuses at port start (`--disable-link-check` turns it off).
    pub link_check: bool,
    /// `set verbose N`.
    pub verbose: u32,
    /// `--record-core-cycles` / `set record-core-cycles`: time forwarding bursts (from the next start).
    pub record_core_cycles: bool,
    /// `--record-burst-stats`, `set record-burst-stats`: burst sizes counted and shown in the forward statistics.
    pub record_burst_stats: bool,
    /// `--display-xstats`.
    pub display_xstats: Vec<String>,
    /// noisy mode settings.
    pub noisy: crate::params::NoisyParams,
    /// `--txonly-multi-flow`.
    pub txonly_multi_flow: bool,
    /// `--rxpkts` (shown only).
    pub rxpkts: Vec<u16>,
    /// `--rxoffs` (shown only).
    pub rxoffs: Vec<u16>,
    /// `set txsplit off|on|rand`: txonly packets take all `txpkts` segments (off, on) or a random number (rand).
    pub txsplit: String,
    /// `set fwd MODE retry`: forwarding modes offer what a TX queue did not take again.
    pub retry: bool,
    /// `set burst tx delay D retry N`: (N, D in microseconds), DPDK's defaults (64, 1).
    pub retry_num_delay: (u32, u32),
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
    pub(crate) eal: Eal,
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
    pub(crate) streams: Vec<(StreamSpec, Arc<StreamCounters>)>,
    /// Mode of the current or last run.
    pub(crate) run_mode: FwdMode,
    warned_single_lcore: bool,
    /// `set record FILE`: the file, and the capture of the current run.
    pub(crate) record: Option<(String, Option<fwd::Recorder>)>,
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

pub(crate) fn sub(a: u64, b: u64) -> u64 {
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
        let mut workers = eal.worker_lcores().len();
        if let Some(mask) = p.coremask {
            let w = eal.worker_lcores();
            workers = w.iter().filter(|&&id| id < 64 && mask & (1u64 << id) != 0).count();
            if workers == 0 {
                return Err(format!(
                    "--coremask={mask:#x} selects none of the forwarding lcores {w:?} (the EAL lcores minus the main one)"
                ));
            }
        }
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
            (per_port * nb as u32 + lcores * p.mbcache * 2 + 4096).max(8191)
        });
        let pool = eal
            .pktmbuf_pool(POOL_NAME, n_mbufs, p.mbcache, data_room as u16)
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
            coremask: p.coremask,
            flush_rx: p.flush_rx,
            rx_offloads: p.rx_offloads,
            tx_offloads: p.tx_offloads,
            link_check: p.link_check,
            verbose: 0,
            record_core_cycles: p.record_core_cycles,
            record_burst_stats: p.record_burst_stats,
            display_xstats: p.display_xstats.clone(),
            noisy: p.noisy,
            txonly_multi_flow: p.txonly_multi_flow,
            rxpkts: p.rxpkts.clone(),
            rxoffs: p.rxoffs.clone(),
            txsplit: "off".into(),
            retry: false,
            retry_num_delay: (64, 1),
        };
        let ports = ports
            .into_iter()
            .enumerate()
            .map(|(i, port)| PortState {
                id: i as u16,
                name: port.name,
                dev: port.dev,
                devargs: port.devargs,
                rxq: Vec::new(),
                txq: Vec::new(),
                fwd_base: PortStats::default(),
                show_prev: None,
                need_reconfig: true,
                port_rx_offloads: 0,
                reta: Vec::new(),
                closed: false,
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
        let rss = (self.set.rxq > 1 && self.set.rss != RssMode::Disabled)
            .then(|| RssConfig { key: None, functions: crate::port_cmds::rss_functions(self.set.rss) });
        PortConfig {
            rx_queues: self.set.rxq,
            tx_queues: self.set.txq,
            rx_desc: self.set.rxd,
            tx_desc: self.set.txd,
            mtu: self.set.mtu.unwrap_or(1500),
            rss,
            rx_offloads: self.set.rx_offloads,
            tx_offloads: self.set.tx_offloads,
            intr_conf: Default::default(),
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
            if port.closed {
                errors.push(format!("Port {id} is closed: it cannot be started again"));
                continue;
            }
            let mut want = cfg.clone();
            want.rx_offloads |= port.port_rx_offloads;
            if !port.need_reconfig && self.set.mtu.is_none() {
                want.mtu = port.dev.mtu();
            }
            let capa = port.dev.info().rx_offload_capa;
            if want.rx_offloads & offload::RX_BUFFER_SPLIT & !capa != 0 {
                // rte_eth_dev_configure's refusal, word for word, for the one offload no port here can have.
                errors.push(format!(
                    "Ethdev port_id={id} requested Rx offloads {:#x} doesn't match Rx offloads capabilities {capa:#x} \
                     in rte_eth_dev_configure()\nFail to configure port {id}: the BUFFER_SPLIT RX offload \
                     ({:#x}) is not supported by {}",
                    want.rx_offloads,
                    offload::RX_BUFFER_SPLIT,
                    port.dev.info().driver_name
                ));
                continue;
            }
            if port.need_reconfig || port.dev.config() != &want {
                let mut c = want.clone();
                // Keep an MTU set with `port config mtu` unless --max-pkt-len fixed one.
                if self.set.mtu.is_none() && !port.need_reconfig {
                    c.mtu = port.dev.mtu();
                }
                if let Err(e) = port.dev.configure(&c) {
                    errors.push(format!("Fail to configure port {id}: {e}"));
                    continue;
                }
                port.need_reconfig = false;
                let (n, size) = (c.rx_queues.max(1), port.dev.info().reta_size);
                port.reta = (0..size).map(|i| i % n).collect();
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
            // With telemetry on, the streams tap their queues so that /pktio/capture (pktio-dumpcap) sees them; a
            // capture may start before forwarding does.
            if self.eal.telemetry().is_some() {
                pktio::capture::announce(id);
            }
            println!("Port {id}: {}", port.dev.mac_addr());
            self.eal.publish_port(id, &*port.dev, &pool);
        }
        if self.set.link_check && (ids.len() > 1 || errors.is_empty()) {
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

    /// `clear port xstats N`.
    pub fn clear_port_xstats(&mut self, ids: &[u16]) {
        for &id in ids {
            let port = &mut self.ports[id as usize];
            port.dev.reset_stats();
            port.show_prev = None;
            port.fwd_base = PortStats::default();
        }
    }

    /// Parses `all` or a port id.
    pub fn ports_arg(&self, arg: &str) -> Result<Vec<u16>, String> {
        port_list(arg, self.ports.len())
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
        // A port that fails to stop (a capture file's last write failed) lost data: the exit status says so.
        let stop_failed = self.stop_ports(&all).map_err(|e| println!("{e}")).is_err();
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
        if stop_failed {
            drop(self);
            let _ = std::io::Write::flush(&mut std::io::stdout());
            std::process::exit(1);
        }
    }
}
