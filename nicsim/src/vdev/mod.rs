//! The `net_sim_*` vdevs' machinery, written once for every driver and model: a real driver opened on model ports,
//! as a `--vdev` device. A driver crate with a model says only what is its own, as a [`SimDriver`] in its
//! `src/sim.rs` behind its `sim` feature (its devargs keys, how they configure the model, how the driver opens on a
//! model port) and lists its vdevs as [`SimNic`]s; simports gathers those lists into the model list.
//!
//! [`open_vdev`] is the one open of every such vdev: devargs checked, `ports=N` models made in wired pairs (or one
//! wired to a TAP with `tap=NAME`), each model's thread started, the driver brought up on it, the pair handed out
//! as [`SimPort`]s. It depends on the port API (`pktio`) and on no driver, so the driver crates can implement it and
//! the dependency graph stays acyclic (drivers → nicsim, simports → drivers).

mod port;

pub use port::SimPort;

use hugepage::Allocator;
use pktio::devargs::Devargs;
use pktio::driver::VdevDriver;
use pktio::{EthDev, Result};

use crate::{Model, ModelPort};

/// Most ports one `--vdev` may create.
pub const MAX_PORTS: u16 = 8;

/// The model configuration type of a simulated NIC.
pub type ConfigOf<N> = <<N as SimDriver>::Model as Model>::Config;

/// What a simulated NIC is: a driver on a model, configured from devargs.
pub trait SimDriver {
    /// The model (its per-port state).
    type Model: Model;
    /// The driver on a port of it.
    type Driver: EthDev + 'static;
    /// The vdev driver's name (`net_sim_x710`): errors name it whole, not the device name with its digits trimmed.
    const DRIVER: &'static str;
    /// Every devargs key the vdev takes (`ports` and `tap` included).
    const KEYS: &'static [&'static str];

    /// The model's configuration from the vdev's other keys (checked: a bad value is refused with what to use).
    fn model_config(args: &Devargs) -> Result<ConfigOf<Self>>;
    /// The configuration of the `card`-th card (or pair of cards) of the vdev: distinct MACs.
    fn card_config(config: &ConfigOf<Self>, card: u16) -> ConfigOf<Self>;
    /// Brings the driver up on `model`, whose thread already runs (firmware answers only while it does).
    fn open_driver(name: String, model: &ModelPort<Self::Model>, allocator: &Allocator) -> Result<Self::Driver>;
}

/// One simulated NIC: its vdev, and what a test that runs every simulated NIC needs to know of it.
#[derive(Debug, Clone, Copy)]
pub struct SimNic {
    /// The vdev (name, devargs keys, open).
    pub vdev: VdevDriver,
    /// The driver that runs on the model (`DevInfo::driver_name`).
    pub driver: &'static str,
    /// Devargs of a forwarding run on two wired ports, and the link speed in Mb/s the ports then report.
    pub runs: &'static [(&'static str, u32)],
}

impl SimNic {
    /// A simulated NIC: its vdev, the driver that runs on it, its forwarding runs.
    pub const fn new(vdev: VdevDriver, driver: &'static str, runs: &'static [(&'static str, u32)]) -> Self {
        SimNic { vdev, driver, runs }
    }
}

/// Opens the ports of a `net_sim_*` vdev of NIC `N`: `ports=N` (even, default 2, at most [`MAX_PORTS`]: pairs
/// wired back to back) or `tap=NAME` (one port wired to a TAP interface the kernel is the partner of).
pub fn open_vdev<N: SimDriver>(args: &Devargs, allocator: &Allocator) -> Result<Vec<Box<dyn EthDev>>> {
    args.clone().for_driver(N::DRIVER).check_keys(N::KEYS)?;
    let base = N::model_config(args)?;
    let tap = args.get("tap");
    if tap == Some("") {
        return Err(args.error("tap= needs an interface name"));
    }
    let ports: u16 = args.parse_or("ports", if tap.is_some() { 1 } else { 2 })?;
    if tap.is_some() && ports != 1 {
        return Err(args.error(format!("ports={ports}: a tap= vdev has one port (wired to the TAP)")));
    }
    if tap.is_none() && (ports == 0 || !ports.is_multiple_of(2) || ports > MAX_PORTS) {
        return Err(
            args.error(format!("ports={ports}: give an even number up to {MAX_PORTS} (ports are wired in pairs)"))
        );
    }
    let mut out: Vec<Box<dyn EthDev>> = Vec::new();
    if let Some(tap) = tap {
        let model = ModelPort::<N::Model>::create(base);
        model.wire_to_tap(tap).map_err(|e| pktio::Error::os(format!("{}: TAP wire {tap:?}", args.name), e))?;
        out.push(Box::new(open_one::<N>(format!("{}_p0", args.name), model, allocator)?));
        return Ok(out);
    }
    for card in 0..ports / 2 {
        let (m0, m1) = ModelPort::<N::Model>::create_pair(N::card_config(&base, card));
        for (k, model) in [m0, m1].into_iter().enumerate() {
            let name = format!("{}_p{}", args.name, card * 2 + k as u16);
            out.push(Box::new(open_one::<N>(name, model, allocator)?));
        }
    }
    Ok(out)
}

fn open_one<N: SimDriver>(
    name: String,
    model: ModelPort<N::Model>,
    allocator: &Allocator,
) -> Result<SimPort<N::Driver, N::Model>> {
    // The model runs before the bring-up, as hardware and firmware do: admin queues and mailboxes are answered
    // by its thread.
    let thread = model.start_thread();
    let dev = N::open_driver(name, &model, allocator)?;
    Ok(SimPort::new(dev, thread, model))
}

/// `mac` with the card index in byte 4 (a model's pair differs in the last byte): distinct MACs for every port of
/// a vdev.
pub fn with_card_byte(mut mac: [u8; 6], card: u16) -> [u8; 6] {
    mac[4] = card as u8;
    mac
}
