//! The one `open_vdev` of every `net_sim_*` vdev: devargs checked, `ports=N` models made in wired pairs (or one
//! wired to a TAP with `tap=NAME`), each model's thread started, the driver brought up on it. A simulated NIC
//! says only what is its own ([`SimDriver`]): its keys, how they configure the model, and how its driver opens
//! on a model port.

use hugepage::Allocator;
use nicsim::{Model, ModelPort};
use pktio::devargs::Devargs;
use pktio::{EthDev, Result};

use crate::port::SimPort;

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
