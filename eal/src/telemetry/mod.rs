//! A telemetry socket that DPDK's own client (`dpdk-telemetry.py`) reads: the v2 protocol of DPDK 22.11 on a
//! `SOCK_SEQPACKET` Unix socket at `<runtime dir>/dpdk/<file prefix>/dpdk_telemetry.v2`, the same commands with
//! the same JSON shapes (`/ethdev/stats,0` gives `{"/ethdev/stats":{"ipackets":...}}`).
//!
//! The data path never waits for it: the answers are built from the ports' per-queue counters, which are atomics
//! a queue's own thread writes and anyone may read, and from a description of each port and pool that the control
//! thread publishes ([`Telemetry::publish_port`]). The lock around those descriptions is taken only by the
//! control thread and the telemetry threads, never by a forwarding lcore.
//!
//! Beyond DPDK's commands: `/pktio/capture` ([`capture`]) starts and stops a live pcapng capture.
//!
//! The EAL's lcore, heap and memzone endpoints are in [`eal_info`].
//!
//! Not supported: the legacy v1 socket, driver-specific commands (`/cnxk/...`), and hardware-only counters of PCI
//! ports (their `/ethdev/stats` are the queue counters).

pub mod capture;
pub mod eal_info;
mod json;
mod server;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use mempool::Mempool;
use pktio::stats::{PortStats, RxQueueStats, TxQueueStats};
use pktio::{EthDev, LinkStatus, MacAddr};

pub use eal_info::{LcoreUsage, LcoreUsageFn, LcoreView};
pub use json::Value;
pub use server::{connect, recv, runtime_dir, send, socket_path, Server, SOCKET_NAME};

/// The version string `/info` reports (the client only shows it).
pub const VERSION: &str = concat!("DPDK 22.11 (pktio-rs ", env!("CARGO_PKG_VERSION"), ")");
/// Largest answer, as DPDK's: a longer one is replaced by `{"<command>":null}`.
pub const MAX_OUTPUT_LEN: usize = 16384;
/// Largest command read from a client, as DPDK's.
pub const MAX_CMD_LEN: usize = 1024;

/// A command handler: gets the parameters after the first comma (`None` when there is none).
pub type Handler = Arc<dyn Fn(Option<&str>) -> Value + Send + Sync>;

/// What telemetry knows of a port: its description as last published and its live queue counters.
#[derive(Clone)]
pub struct PortView {
    name: String,
    mac: MacAddr,
    mtu: u16,
    promiscuous: bool,
    allmulticast: bool,
    started: bool,
    link: LinkStatus,
    numa_node: u32,
    rx_offloads: u64,
    tx_offloads: u64,
    rss_hf: u64,
    rx_mbuf_size_min: u32,
    xstats_extra: Vec<String>,
    // Weak: a port tells whether its queues are still handed out by counting the strong references to their
    // counters, so telemetry must not hold one beyond the instant of a read.
    rx: Vec<Weak<RxQueueStats>>,
    tx: Vec<Weak<TxQueueStats>>,
    base: PortStats,
}

impl PortView {
    /// The port as it is now. `rx_mbuf_size_min` is the buffer size of the pool its RX queues take from (0 before
    /// it has one).
    pub fn of(dev: &dyn EthDev, rx_mbuf_size_min: u32) -> PortView {
        let st = dev.state();
        let rx = (0..st.config.rx_queues).filter_map(|q| st.rx_stats(q).map(Arc::downgrade)).collect();
        let tx = (0..st.config.tx_queues).filter_map(|q| st.tx_stats(q).map(Arc::downgrade)).collect();
        // The reset base: raw - (raw - base).
        let raw = st.queue_counters();
        let since = st.since_reset(raw.clone());
        let base = raw.since(&since);
        PortView {
            name: st.info.device_name.clone(),
            mac: dev.mac_addr(),
            mtu: dev.mtu(),
            promiscuous: dev.promiscuous(),
            allmulticast: dev.allmulticast(),
            started: dev.is_started(),
            link: dev.link(),
            numa_node: st.info.numa_node.unwrap_or(0),
            rx_offloads: st.config.rx_offloads,
            tx_offloads: st.config.tx_offloads,
            rss_hf: st.config.rss.as_ref().map_or(0, |r| r.functions.0 as u64),
            rx_mbuf_size_min,
            xstats_extra: Vec::new(),
            rx,
            tx,
            base,
        }
    }

    /// Counters since the last reset, read from the queues' atomics (a port closed since reads as zero).
    pub fn stats(&self) -> PortStats {
        let rx: Vec<_> = self.rx.iter().map(|w| w.upgrade().unwrap_or_default()).collect();
        let tx: Vec<_> = self.tx.iter().map(|w| w.upgrade().unwrap_or_default()).collect();
        PortStats::from_queues(rx.iter().map(|s| &**s), tx.iter().map(|s| &**s)).since(&self.base)
    }
}

/// What telemetry knows of a mempool (fixed once it is built).
#[derive(Debug, Clone)]
pub struct PoolView {
    name: String,
    id: u64,
    size: u32,
    cache_size: u32,
    elt_size: u64,
    mz_len: u64,
    mz_addr: u64,
    page_size: u64,
}

impl PoolView {
    /// The pool's description.
    pub fn of(pool: &Mempool) -> PoolView {
        PoolView {
            name: pool.name().to_string(),
            id: Arc::as_ptr(pool.memory()) as u64,
            size: pool.size(),
            cache_size: pool.cache_size() as u32,
            elt_size: pool.element_size() as u64,
            mz_len: pool.memory().len() as u64,
            mz_addr: pool.memory().as_ptr() as u64,
            page_size: pool.memory().page_size().bytes() as u64,
        }
    }
}

#[derive(Default)]
struct Registry {
    ports: Vec<Option<PortView>>,
    pools: Vec<PoolView>,
}

struct Command {
    help: String,
    handler: Handler,
}

/// The telemetry state shared by the application and the socket threads. Cheap to clone.
#[derive(Clone)]
pub struct Telemetry {
    inner: Arc<Inner>,
}

struct Inner {
    params: Vec<String>,
    lcores: Mutex<Vec<LcoreView>>,
    lcore_usage: Mutex<Option<LcoreUsageFn>>,
    heap: Mutex<Option<hugepage::Allocator>>,
    registry: Mutex<Registry>,
    commands: Mutex<BTreeMap<String, Command>>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry").field("params", &self.inner.params).finish_non_exhaustive()
    }
}

impl Telemetry {
    /// Telemetry for a process started with `params` (program name first, as `/eal/params` shows them) on
    /// `lcores` (each on the CPU of its number until [`Telemetry::publish_lcores`] says otherwise), with DPDK's
    /// commands registered.
    pub fn new(params: Vec<String>, lcores: Vec<u32>) -> Telemetry {
        let lcores = lcores
            .into_iter()
            .map(|l| LcoreView { lcore: l, socket: eal_info::numa_node_of(l), cpuset: vec![l] })
            .collect();
        let t = Telemetry {
            inner: Arc::new(Inner {
                params,
                lcores: Mutex::new(lcores),
                lcore_usage: Mutex::new(None),
                heap: Mutex::new(None),
                registry: Mutex::new(Registry::default()),
                commands: Mutex::new(BTreeMap::new()),
            }),
        };
        t.register_builtin();
        t
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        // A panic while holding it leaves plain data behind: keep serving.
        self.inner.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Describes the lcores (ids, NUMA nodes, CPU sets), replacing those given to [`Telemetry::new`].
    pub fn publish_lcores(&self, lcores: Vec<LcoreView>) {
        *self.inner.lcores.lock().unwrap_or_else(|e| e.into_inner()) = lcores;
    }

    fn lcores(&self) -> Vec<LcoreView> {
        self.inner.lcores.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Sets the application's lcore cycle counts for `/eal/lcore/info` and `/eal/lcore/usage` (DPDK's
    /// `rte_lcore_register_usage_cb`); `None` removes them.
    pub fn register_lcore_usage(&self, usage: Option<LcoreUsageFn>) {
        *self.inner.lcore_usage.lock().unwrap_or_else(|e| e.into_inner()) = usage;
    }

    fn lcore_usage(&self, lcore: u32) -> Option<LcoreUsage> {
        // Cloned out: the application's function runs without the lock.
        let f = self.inner.lcore_usage.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
        f(lcore)
    }

    /// Publishes the allocator whose figures `/eal/heap_info,0` shows (the EAL's).
    pub fn publish_heap(&self, allocator: &hugepage::Allocator) {
        *self.inner.heap.lock().unwrap_or_else(|e| e.into_inner()) = Some(allocator.clone());
    }

    fn heap_usage(&self) -> Option<hugepage::HeapUsage> {
        self.inner.heap.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|a| a.heap().usage())
    }

    fn memzones(&self) -> Vec<eal_info::Memzone> {
        let reg = self.registry();
        reg.pools
            .iter()
            .map(|p| eal_info::Memzone {
                name: format!("MP_{}", p.name),
                addr: p.mz_addr,
                len: p.mz_len,
                page_size: p.page_size,
            })
            .collect()
    }

    /// Publishes (or refreshes) port `id`: call it after the port is configured and started, so that its queue
    /// counters are the ones the lcores use.
    pub fn publish_port(&self, id: u16, dev: &dyn EthDev, rx_mbuf_size_min: u32) {
        let mut view = PortView::of(dev, rx_mbuf_size_min);
        let generic = dev.stats().generic_xstats().len();
        view.xstats_extra = dev.xstats().into_iter().skip(generic).map(|x| x.name).collect();
        let mut reg = self.registry();
        let i = id as usize;
        if reg.ports.len() <= i {
            reg.ports.resize(i + 1, None);
        }
        reg.ports[i] = Some(view);
    }

    /// The device name of port `id`, if published.
    pub fn port_name(&self, id: u16) -> Option<String> {
        self.registry().ports.get(id as usize)?.as_ref().map(|p| p.name.clone())
    }

    /// Forgets port `id` (closed).
    pub fn remove_port(&self, id: u16) {
        if let Some(p) = self.registry().ports.get_mut(id as usize) {
            *p = None;
        }
    }

    /// Publishes a mempool.
    pub fn publish_pool(&self, pool: &Mempool) {
        let view = PoolView::of(pool);
        let mut reg = self.registry();
        reg.pools.retain(|p| p.name != view.name);
        reg.pools.push(view);
    }

    /// Adds command `name` (e.g. `/pktio/capture`) with its help text.
    pub fn register(&self, name: &str, help: &str, handler: Handler) {
        let cmd = Command { help: help.to_string(), handler };
        self.inner.commands.lock().unwrap_or_else(|e| e.into_inner()).insert(name.to_string(), cmd);
    }

    /// The answer to one request line, as the socket sends it: `{"<command>":<value>}`.
    pub fn handle(&self, request: &str) -> String {
        let (cmd, params) = match request.split_once(',') {
            Some((c, p)) => (c, Some(p)),
            None => (request, None),
        };
        let handler = {
            let cmds = self.inner.commands.lock().unwrap_or_else(|e| e.into_inner());
            cmds.get(cmd).map(|c| c.handler.clone())
        };
        let value = handler.map_or(Value::Null, |h| h(params));
        let key = Value::Str(cmd.to_string()).to_json();
        let out = format!("{{{key}:{}}}", value.to_json());
        if out.len() > MAX_OUTPUT_LEN {
            return format!("{{{key}:null}}");
        }
        out
    }

    /// The JSON sent to a client on connect.
    pub fn hello(&self) -> String {
        self.info().to_json()
    }

    fn info(&self) -> Value {
        Value::object([
            ("version", Value::from(VERSION)),
            ("pid", Value::UInt(std::process::id() as u64)),
            ("max_output_len", Value::UInt(MAX_OUTPUT_LEN as u64)),
        ])
    }

    fn add(&self, name: &str, help: &str, f: impl Fn(&Telemetry, Option<&str>) -> Value + Send + Sync + 'static) {
        // A weak handle: the commands live inside the state they read.
        let weak = Arc::downgrade(&self.inner);
        self.register(
            name,
            help,
            Arc::new(move |p| match weak.upgrade() {
                Some(inner) => f(&Telemetry { inner }, p),
                None => Value::Null,
            }),
        );
    }

    fn register_builtin(&self) {
        self.add("/", "Returns list of available commands, Takes no parameters", |t, _| {
            let cmds = t.inner.commands.lock().unwrap_or_else(|e| e.into_inner());
            Value::Array(cmds.keys().map(|k| Value::Str(k.clone())).collect())
        });
        self.add("/info", "Returns DPDK Telemetry information. Takes no parameters", |t, _| t.info());
        self.add("/help", "Returns help text for a command. Parameters: string command", |t, p| {
            let cmds = t.inner.commands.lock().unwrap_or_else(|e| e.into_inner());
            match p {
                None => Value::from(cmds["/help"].help.as_str()),
                Some(name) => match cmds.get(name) {
                    Some(c) => Value::object([(name, Value::from(c.help.as_str()))]),
                    None => Value::Null,
                },
            }
        });
        self.add("/eal/params", "Returns EAL commandline parameters used. Takes no parameters", |t, _| {
            Value::Array(t.inner.params.iter().map(|p| Value::from(p.as_str())).collect())
        });
        eal_info::register(self);
        self.add("/ethdev/list", "Returns list of available ethdev ports. Takes no parameters", |t, _| {
            let reg = t.registry();
            Value::uints(reg.ports.iter().enumerate().filter(|(_, p)| p.is_some()).map(|(i, _)| i as u64))
        });
        self.port_cmd("/ethdev/info", "Returns the device info for a port. Parameters: int port_id", ethdev_info);
        self.port_cmd("/ethdev/stats", "Returns the common stats for a port. Parameters: int port_id", ethdev_stats);
        self.port_cmd(
            "/ethdev/xstats",
            "Returns the extended stats for a port. Parameters: int port_id",
            ethdev_xstats,
        );
        self.port_cmd(
            "/ethdev/link_status",
            "Returns the link status for a port. Parameters: int port_id",
            ethdev_link,
        );
        self.add("/mempool/list", "Returns list of available mempool. Takes no parameters", |t, _| {
            Value::Array(t.registry().pools.iter().map(|p| Value::from(p.name.as_str())).collect())
        });
        capture::register(self);
        self.add("/mempool/info", "Returns mempool info. Parameters: pool_name", |t, p| {
            let reg = t.registry();
            match reg.pools.iter().find(|m| Some(m.name.as_str()) == p) {
                Some(m) => mempool_info(m),
                None => Value::Null,
            }
        });
    }

    fn port_cmd(&self, name: &str, help: &str, f: fn(u16, &PortView) -> Value) {
        self.add(name, help, move |t, p| {
            // DPDK takes a decimal port id and nothing else.
            let Some(id) = p.filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())) else {
                return Value::Null;
            };
            let Ok(id) = id.parse::<u16>() else { return Value::Null };
            let reg = t.registry();
            match reg.ports.get(id as usize).and_then(Option::as_ref) {
                Some(view) => f(id, view),
                None => Value::Null,
            }
        });
    }
}

fn flag(b: bool) -> Value {
    Value::UInt(b as u64)
}

fn ethdev_info(id: u16, p: &PortView) -> Value {
    let states = |n: usize| Value::uints(vec![p.started as u64; n]);
    Value::object([
        ("name", Value::from(p.name.as_str())),
        // RTE_ETH_DEV_ATTACHED.
        ("state", Value::UInt(1)),
        ("nb_rx_queues", Value::UInt(p.rx.len() as u64)),
        ("nb_tx_queues", Value::UInt(p.tx.len() as u64)),
        ("port_id", Value::UInt(id as u64)),
        ("mtu", Value::UInt(p.mtu as u64)),
        ("rx_mbuf_size_min", Value::UInt(p.rx_mbuf_size_min as u64)),
        ("mac_addr", Value::from(p.mac.to_string())),
        ("promiscuous", flag(p.promiscuous)),
        ("scattered_rx", flag(false)),
        ("all_multicast", flag(p.allmulticast)),
        ("dev_started", flag(p.started)),
        ("lro", flag(false)),
        ("dev_configured", flag(true)),
        ("rxq_state", states(p.rx.len())),
        ("txq_state", states(p.tx.len())),
        ("numa_node", Value::UInt(p.numa_node as u64)),
        ("dev_flags", Value::UInt(0)),
        ("rx_offloads", Value::UInt(p.rx_offloads)),
        ("tx_offloads", Value::UInt(p.tx_offloads)),
        ("ethdev_rss_hf", Value::UInt(p.rss_hf)),
    ])
}

/// DPDK's `RTE_ETHDEV_QUEUE_STAT_CNTRS`: the per-queue arrays always have this many entries.
const QUEUE_STAT_CNTRS: usize = 16;

fn ethdev_stats(_: u16, p: &PortView) -> Value {
    let s = p.stats();
    let q = |v: &[u64]| Value::uints((0..QUEUE_STAT_CNTRS).map(|i| v.get(i).copied().unwrap_or(0)));
    Value::object([
        ("ipackets", Value::UInt(s.ipackets)),
        ("opackets", Value::UInt(s.opackets)),
        ("ibytes", Value::UInt(s.ibytes)),
        ("obytes", Value::UInt(s.obytes)),
        ("imissed", Value::UInt(s.imissed)),
        ("ierrors", Value::UInt(s.ierrors)),
        ("oerrors", Value::UInt(s.oerrors)),
        ("rx_nombuf", Value::UInt(s.rx_nombuf)),
        ("q_ipackets", q(&s.q_ipackets)),
        ("q_opackets", q(&s.q_opackets)),
        ("q_ibytes", q(&s.q_ibytes)),
        ("q_obytes", q(&s.q_obytes)),
        ("q_errors", q(&s.q_errors)),
    ])
}

fn ethdev_xstats(_: u16, p: &PortView) -> Value {
    // The generic ones, live; driver-specific ones live in device registers only the control thread may read.
    Value::Object(p.stats().generic_xstats().into_iter().map(|x| (x.name, Value::UInt(x.value))).collect())
}

fn ethdev_link(_: u16, p: &PortView) -> Value {
    if !p.link.up {
        return Value::object([("status", Value::from("DOWN"))]);
    }
    let duplex = if p.link.full_duplex { "full-duplex" } else { "half-duplex" };
    Value::object([
        ("status", Value::from("UP")),
        ("speed", Value::UInt(p.link.speed_mbps as u64)),
        ("duplex", Value::from(duplex)),
    ])
}

fn mempool_info(m: &PoolView) -> Value {
    Value::object([
        ("name", Value::from(m.name.as_str())),
        ("pool_id", Value::UInt(m.id)),
        ("flags", Value::UInt(0)),
        ("socket_id", Value::UInt(0)),
        ("size", Value::UInt(m.size as u64)),
        ("cache_size", Value::UInt(m.cache_size as u64)),
        ("elt_size", Value::UInt(m.elt_size)),
        ("header_size", Value::UInt(0)),
        ("trailer_size", Value::UInt(0)),
        ("private_data_size", Value::UInt(0)),
        ("ops_index", Value::UInt(0)),
        ("populated_size", Value::UInt(m.size as u64)),
        ("mz_name", Value::from(format!("MP_{}", m.name))),
        ("mz_len", Value::UInt(m.mz_len)),
        ("mz_hugepage_sz", Value::UInt(m.page_size)),
        ("mz_socket_id", Value::UInt(0)),
        ("mz_flags", Value::UInt(0)),
    ])
}

#[cfg(test)]
mod tests;
