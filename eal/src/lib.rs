//! The environment a DPDK application expects before it touches a port: EAL arguments parsed as DPDK users type
//! them (`-l 0-3 -a 0000:01:00.0 --vdev net_null0 --no-huge -- app args`), DMA memory set up, ports probed and
//! numbered (PCI devices first, then virtual devices, as DPDK does), pinned worker threads per lcore, and Ctrl-C
//! turned into a stop request so applications can print their statistics on the way out.
//!
//! ```no_run
//! let (mut eal, app_args) = eal::init(["-l", "0-1", "--no-huge", "--vdev", "net_null0", "--vdev", "net_null1"])?;
//! let pool = eal.pktmbuf_pool("mbufs", 8191, 256, mempool::DEFAULT_DATA_ROOM)?;
//! let mut ports = eal.take_ports();
//! # Ok::<(), eal::Error>(())
//! ```
//!
//! The EAL links no driver. [`init`] knows the software ports of `swports` only; [`init_with`] takes a
//! [`pktio::driver::Registry`] of the drivers the application wants: `pmds::registry()` for every driver of the
//! build, or one the application assembles, e.g. for the ixgbe driver alone
//! `Registry::new().with_pci(ixgbe::PCI_DRIVERS)` (see the `pmds` crate for that recipe).
//!
//! PCI devices: those given with `-a` (with their `key=value` device arguments, which reach the driver), or with no
//! `-a` every device bound to vfio-pci whose ID a registered driver supports, minus `-b`, as DPDK scans. DPDK
//! options that mean nothing here (`-n`, `-d`, `--legacy-mem`, ...) are accepted and each says so
//! once on stderr.
//!
//! Unless `--no-telemetry` is given, the EAL serves DPDK's telemetry socket for its file prefix ([`telemetry`]):
//! ports and pools are published at init; an application that configures its ports afterwards republishes them
//! with [`Eal::publish_port`] once they are started.
//!
//! Not supported: hot-plug (devices are probed once, at init), devices bound to uio drivers, multi-process
//! (primary/secondary), interrupts, loading drivers at run time (`-d`).

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod args;
mod cores;
pub mod cpu;
mod error;
pub mod pci;
pub mod signal;
pub mod telemetry;
pub mod vdev;

use std::sync::mpsc;
use std::thread::JoinHandle;

use hugepage::{Allocator, DmaConfig, IovaMode};
use mempool::lcore::{self, LcoreGuard};
use mempool::{Mempool, PoolConfig};
use pktio::EthDev;

pub use args::{AllowedDevice, EalConfig, LogLevel, LogRule};
pub use error::{Error, Result};
pub use pktio::driver::Registry;
pub use signal::{clear_stop, request_stop, stop_requested};

/// A port the EAL opened, with the name it was opened by.
pub struct Port {
    /// Device name (`net_null0`, `0000:01:00.0`).
    pub name: String,
    /// The device.
    pub dev: Box<dyn EthDev>,
    /// The arguments it was opened with, as given after the name (`-a ADDR,ARGS` or `--vdev NAME,ARGS`); empty
    /// for none (what dpdk-testpmd prints after `Devargs:`).
    pub devargs: String,
}

impl std::fmt::Debug for Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Port").field("name", &self.name).finish()
    }
}

/// The initialised environment. Owns the main lcore binding of the thread that called [`init`].
pub struct Eal {
    config: EalConfig,
    allocator: Allocator,
    ports: Vec<Option<Port>>,
    memory_used: usize,
    telemetry: Option<telemetry::Telemetry>,
    // Dropped before the lcore guard: the socket goes away with the environment.
    _telemetry_server: Option<telemetry::Server>,
    _main_lcore: LcoreGuard,
}

impl std::fmt::Debug for Eal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Eal").field("config", &self.config).field("ports", &self.ports.len()).finish()
    }
}

/// [`init_with`] and no driver: the software ports of `swports` only (`--vdev net_null0`); `-a` finds no driver.
pub fn init<I, S>(args: I) -> Result<(Eal, Vec<String>)>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    init_with(&Registry::new(), args)
}

/// Parses the EAL arguments (without the program name), sets up memory, opens the devices with the drivers in
/// `registry` (swports' software ports are always there) and binds the calling thread to the main lcore. Returns the
/// environment and the application's arguments (those after `--`).
pub fn init_with<I, S>(registry: &Registry, args: I) -> Result<(Eal, Vec<String>)>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let args: Vec<String> = args.into_iter().map(Into::into).collect();
    let available = cpu::available_cpus();
    let (config, app_args) = args::parse(&args, &available).map_err(|e| match e {
        Error::Help(_) => Error::Help(args::usage("app", registry)),
        e => e,
    })?;
    for &lcore in &config.lcores {
        if config.cpus_of(lcore).iter().any(|c| !available.contains(c)) {
            return Err(Error::CpuUnavailable { lcore, available: cpu::format_list(&available) });
        }
    }
    if config.print_version {
        eprintln!("EAL: pktio-rs EAL {} (DPDK 22.11 command line)", env!("CARGO_PKG_VERSION"));
    }
    for note in &config.notes {
        eprintln!("EAL: {note}");
    }

    let dma = DmaConfig {
        page_size: config.page_size.unwrap_or_else(hugepage::sysfs::default_page_size),
        no_huge: config.no_huge,
        huge_dir: config.huge_dir.clone(),
        iova_mode: config.iova_mode.unwrap_or(IovaMode::Va),
        file_prefix: config.file_prefix.clone(),
    };
    let allocator = if config.no_huge {
        Allocator::new(DmaConfig { page_size: hugepage::PageSize::Small4K, ..dma })?
    } else {
        Allocator::new(dma)?
    };

    let mut ports = Vec::new();
    if !config.no_pci {
        let vfio = pci::vfio_for(allocator.config().iova_mode);
        let opened = pci::open_ports(&drvkit::pci::Sysfs::system(), &vfio, &allocator, registry, &config)?;
        for (addr, e) in &opened.skipped {
            eprintln!("EAL: {addr}: skipped (found without -a, cannot be used): {e}");
        }
        ports.extend(opened.ports.into_iter().map(|(addr, dev)| {
            let devargs = config.allow.iter().find(|a| a.address == addr).map(|a| args_text(&a.devargs.raw));
            Some(Port { name: addr.to_string(), dev, devargs: devargs.unwrap_or_default() })
        }));
    }
    for devargs in &config.vdevs {
        // Registered vdevs first (they may yield several ports), then swports' software ports.
        let devs = match vdev::find(registry, devargs)? {
            Some((driver, args)) => driver.open_device(&args, &allocator)?,
            None => match swports::open_vdev(devargs) {
                Ok(dev) => vec![dev],
                // List the registered vdevs too: pktio only knows its own.
                Err(pktio::Error::UnknownDriver { name, .. }) => {
                    let known = vdev::known_names(registry).join(", ");
                    return Err(pktio::Error::UnknownDriver { name, known }.into());
                }
                Err(e) => return Err(e.into()),
            },
        };
        for dev in devs {
            let name = dev.info().device_name;
            if ports.iter().flatten().any(|p: &Port| p.name == name) {
                return Err(Error::BadArgument(format!("--vdev {devargs}: a device named {name} already exists")));
            }
            ports.push(Some(Port { name, dev, devargs: args_text(devargs) }));
        }
    }
    for (id, port) in ports.iter_mut().enumerate() {
        if let Some(p) = port {
            p.dev.set_port_id(id as u16);
        }
    }

    let main = lcore::bind_current_thread(config.main_lcore)
        .map_err(|e| Error::Lcore { lcore: config.main_lcore, reason: e.to_string() })?;
    cpu::pin_current_thread_to(config.main_lcore, &config.cpus_of(config.main_lcore))?;
    signal::install_handlers();
    let (telemetry, server) = start_telemetry(&config, &args, &ports, &allocator);
    let eal = Eal { config, allocator, ports, memory_used: 0, telemetry, _telemetry_server: server, _main_lcore: main };
    Ok((eal, app_args))
}

/// The telemetry state and its socket, unless `--no-telemetry`. A socket that cannot be made is a warning, not a
/// failure: the application runs without it.
fn start_telemetry(
    config: &EalConfig,
    args: &[String],
    ports: &[Option<Port>],
    allocator: &Allocator,
) -> (Option<telemetry::Telemetry>, Option<telemetry::Server>) {
    if !config.telemetry {
        return (None, None);
    }
    let program = std::env::args().next().unwrap_or_else(|| "app".into());
    let params = std::iter::once(program).chain(args.iter().take_while(|a| *a != "--").cloned()).collect();
    let t = telemetry::Telemetry::new(params, config.lcores.clone());
    t.publish_lcores(
        config
            .lcores
            .iter()
            .map(|&lcore| {
                let cpuset = config.cpus_of(lcore);
                let socket = cpuset.first().map_or(0, |&c| telemetry::eal_info::numa_node_of(c));
                telemetry::LcoreView { lcore, socket, cpuset }
            })
            .collect(),
    );
    t.publish_heap(allocator);
    for (id, port) in ports.iter().enumerate() {
        if let Some(p) = port {
            t.publish_port(id as u16, &*p.dev, 0);
        }
    }
    match telemetry::Server::start(t.clone(), &config.file_prefix) {
        Ok(server) => (Some(t), Some(server)),
        Err(e) => {
            let path = telemetry::socket_path(&config.file_prefix);
            eprintln!("EAL: telemetry: cannot listen on {}: {e}; running without it", path.display());
            (Some(t), None)
        }
    }
}

/// The arguments part of a device string (after the name and its comma).
fn args_text(devargs: &str) -> String {
    devargs.split_once(',').map(|(_, a)| a.to_string()).unwrap_or_default()
}

/// [`init`] for a `main`: on `-h` prints the usage and exits 0; on an error prints it and exits 1.
pub fn init_or_exit<I, S>(program: &str, args: I) -> (Eal, Vec<String>)
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    init_with_or_exit(program, &Registry::new(), args)
}

/// [`init_with`] for a `main`: on `-h` prints the usage (with the registry's vdevs) and exits 0; on an error prints
/// it and exits 1.
pub fn init_with_or_exit<I, S>(program: &str, registry: &Registry, args: I) -> (Eal, Vec<String>)
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    match init_with(registry, args) {
        Ok(v) => v,
        Err(Error::Help(_)) => {
            println!("{}", args::usage(program, registry));
            std::process::exit(0);
        }
        Err(e) => {
            eprintln!("EAL: {e}");
            std::process::exit(1);
        }
    }
}

impl Eal {
    /// What the arguments said.
    pub fn config(&self) -> &EalConfig {
        &self.config
    }

    /// The DMA memory allocator (for driver rings).
    pub fn allocator(&self) -> &Allocator {
        &self.allocator
    }

    /// All lcores, ascending.
    pub fn lcores(&self) -> &[u32] {
        &self.config.lcores
    }

    /// The main lcore (the thread that called [`init`]).
    pub fn main_lcore(&self) -> u32 {
        self.config.main_lcore
    }

    /// The lcores other than the main one, ascending.
    pub fn worker_lcores(&self) -> Vec<u32> {
        self.config.lcores.iter().copied().filter(|&l| l != self.config.main_lcore).collect()
    }

    /// Number of ports opened (taken ones included).
    pub fn nb_ports(&self) -> u16 {
        self.ports.len() as u16
    }

    /// Port `id`, if it is still here (not taken).
    pub fn port(&mut self, id: u16) -> Option<&mut Port> {
        self.ports.get_mut(id as usize)?.as_mut()
    }

    /// The telemetry state (`None` with `--no-telemetry`), to register commands of the application's own.
    pub fn telemetry(&self) -> Option<&telemetry::Telemetry> {
        self.telemetry.as_ref()
    }

    /// Tells telemetry about port `id` as it is now: call it after (re)configuring and starting a port taken with
    /// [`Eal::take_ports`], with the pool its RX queues take buffers from.
    pub fn publish_port(&self, id: u16, dev: &dyn EthDev, rx_pool: &Mempool) {
        if let Some(t) = &self.telemetry {
            t.publish_port(id, dev, u32::from(rx_pool.headroom()) + u32::from(rx_pool.data_room()));
        }
    }

    /// Takes every port still here, in port-id order (apps that own their ports).
    pub fn take_ports(&mut self) -> Vec<Port> {
        self.ports.iter_mut().filter_map(Option::take).collect()
    }

    /// A pool of packet buffers in this environment's memory (like `rte_pktmbuf_pool_create`): `n` buffers,
    /// `cache_size` per lcore, `data_room` bytes after the default headroom.
    pub fn pktmbuf_pool(&mut self, name: &str, n: u32, cache_size: u32, data_room: u16) -> Result<Mempool> {
        let config = PoolConfig { size: n, cache_size, data_room, ..Default::default() };
        let pool = Mempool::new(name, &config, &self.allocator)?;
        let bytes = pool.memory().len();
        if let Some(budget_mb) = self.config.memory_mb {
            let budget = budget_mb << 20;
            if self.memory_used + bytes > budget {
                return Err(Error::OutOfBudget {
                    asked: bytes.div_ceil(1 << 20),
                    left: (budget - self.memory_used) >> 20,
                    total: budget_mb,
                });
            }
        }
        self.memory_used += bytes;
        if let Some(t) = &self.telemetry {
            t.publish_pool(&pool);
        }
        Ok(pool)
    }

    /// Runs `work` on a new thread pinned to worker `lcore` and bound to its lcore id (so mempool caches work).
    /// Fails at once if the lcore is not a worker of this environment or is busy, handing `work` back (with what
    /// it owns, e.g. queues) in the error.
    pub fn launch<F, R>(&self, lcore: u32, work: F) -> Result<LcoreThread<R>, LaunchError<F>>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        if !self.config.lcores.contains(&lcore) || lcore == self.config.main_lcore {
            let reason = format!("not a worker lcore (workers: {})", cpu::format_list(&self.worker_lcores()));
            return Err(LaunchError { error: Error::Lcore { lcore, reason }, work });
        }
        launch_pinned(lcore, self.config.cpus_of(lcore), work, |work| work())
    }

    /// [`Eal::launch`] for work that takes `state` (queues, streams) by value: a failed launch hands `state` back in
    /// the error, so nothing it owns is lost.
    pub fn launch_with<S, W, R>(&self, lcore: u32, state: S, work: W) -> Result<LcoreThread<R>, LaunchError<S>>
    where
        S: Send + 'static,
        W: FnOnce(S) -> R + Send + 'static,
        R: Send + 'static,
    {
        if !self.config.lcores.contains(&lcore) || lcore == self.config.main_lcore {
            let reason = format!("not a worker lcore (workers: {})", cpu::format_list(&self.worker_lcores()));
            return Err(LaunchError { error: Error::Lcore { lcore, reason }, work: state });
        }
        launch_pinned(lcore, self.config.cpus_of(lcore), state, work)
    }
}

/// A launch that did not happen: why, and the work (or the state it would have taken), still unrun.
pub struct LaunchError<F> {
    /// Why the lcore could not run it.
    pub error: Error,
    /// The work, or its state for [`Eal::launch_with`], never started.
    pub work: F,
}

impl<F> std::fmt::Debug for LaunchError<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaunchError").field("error", &self.error).finish_non_exhaustive()
    }
}

impl<F> std::fmt::Display for LaunchError<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.error, f)
    }
}

impl<F> std::error::Error for LaunchError<F> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Runs `work` on a new thread pinned to CPU `lcore` and bound to that lcore id, without an [`Eal`] (tests,
/// embedders with their own set-up). A failed launch hands `work` back unrun.
pub fn launch_on<F, R>(lcore: u32, work: F) -> Result<LcoreThread<R>, LaunchError<F>>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    launch_on_with(lcore, work, |work| work())
}

/// [`launch_on`] for work that takes `state` by value. The thread claims the lcore first and only then receives
/// `state`, so a failed launch hands `state` back (as [`LaunchError::work`]) untouched.
pub fn launch_on_with<S, W, R>(lcore: u32, state: S, work: W) -> Result<LcoreThread<R>, LaunchError<S>>
where
    S: Send + 'static,
    W: FnOnce(S) -> R + Send + 'static,
    R: Send + 'static,
{
    launch_pinned(lcore, vec![lcore], state, work)
}

/// [`launch_on_with`] on a thread pinned to `cpus` (an `--lcores` mapping) rather than CPU `lcore`.
fn launch_pinned<S, W, R>(lcore: u32, cpus: Vec<u32>, state: S, work: W) -> Result<LcoreThread<R>, LaunchError<S>>
where
    S: Send + 'static,
    W: FnOnce(S) -> R + Send + 'static,
    R: Send + 'static,
{
    let (ready_tx, ready_rx) = mpsc::channel::<Result<()>>();
    let (state_tx, state_rx) = mpsc::channel::<S>();
    let spawned = std::thread::Builder::new().name(format!("lcore-{lcore}")).spawn(move || {
        let bound = lcore::bind_current_thread(lcore).map_err(|e| Error::Lcore { lcore, reason: e.to_string() });
        let guard = match bound.and_then(|g| cpu::pin_current_thread_to(lcore, &cpus).map(|_| g)) {
            Ok(g) => g,
            Err(e) => {
                let _ = ready_tx.send(Err(e));
                return None;
            }
        };
        let _ = ready_tx.send(Ok(()));
        let state = state_rx.recv().ok()?;
        let out = work(state);
        drop(guard);
        Some(out)
    });
    let died = || Error::Lcore { lcore, reason: "thread died before starting".into() };
    let handle = match spawned {
        Ok(h) => h,
        Err(e) => {
            let error = Error::Lcore { lcore, reason: format!("cannot start a thread: {e}") };
            return Err(LaunchError { error, work: state });
        }
    };
    let error = match ready_rx.recv() {
        Ok(Ok(())) => match state_tx.send(state) {
            Ok(()) => return Ok(LcoreThread { lcore, handle }),
            Err(mpsc::SendError(state)) => {
                let _ = handle.join();
                return Err(LaunchError { error: died(), work: state });
            }
        },
        Ok(Err(e)) => e,
        Err(_) => died(),
    };
    let _ = handle.join();
    Err(LaunchError { error, work: state })
}

/// A running lcore thread.
#[derive(Debug)]
pub struct LcoreThread<R> {
    lcore: u32,
    handle: JoinHandle<Option<R>>,
}

impl<R> LcoreThread<R> {
    /// The lcore it runs on.
    pub fn lcore(&self) -> u32 {
        self.lcore
    }

    /// True once the work returned.
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Waits for the work's result.
    pub fn join(self) -> Result<R> {
        match self.handle.join() {
            Ok(Some(r)) => Ok(r),
            Ok(None) => Err(Error::Lcore { lcore: self.lcore, reason: "did not start".into() }),
            Err(_) => Err(Error::Lcore { lcore: self.lcore, reason: "the work panicked".into() }),
        }
    }
}

/// The README's code blocks (the embedding example), compiled and run as doc-tests so that they follow the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
