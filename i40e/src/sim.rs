//! `net_sim_x710` (feature `sim`): this driver on behavioural 700-series models ([`nicsim::X710`]), so users can run it
//! without hardware: `testpmd-rs --vdev net_sim_x710,ports=2 -- -i` forwards between two simulated X710 ports wired
//! back to back.
//!
//! Devargs: `ports=N` (even, default 2: N/2 two-port adapters, each pair of PFs wired back to back),
//! `part=x710|xl710|xl710b|xxv710` (the model's part: X710 10G 8086:1572, XL710 40G 8086:1583 or 8086:1584, XXV710
//! 25G 8086:158B; default x710). Each model port runs in its own thread, like the firmware and the hardware, for as
//! long as the port lives.
//!
//! `tap=NAME` wires one port to a TAP interface instead of a twin (`ports=1`, the default then and the only count
//! allowed with it; `%d` in NAME lets the kernel number it): the kernel is the link partner, e.g.
//! `testpmd-rs --vdev net_sim_x710,tap=simtap0 -- --forward-mode=icmpecho`, then
//! `ip addr add 10.0.0.1/24 dev simtap0; ping 10.0.0.2`. The interface is created (and brought up) when the vdev
//! opens, in the caller's network namespace, and disappears with the port; it needs CAP_NET_ADMIN and /dev/net/tun.

use std::sync::Arc;

use hugepage::Allocator;
use nicsim::vdev::{with_card_byte, SimDriver, SimNic};
use nicsim::{X710Bar, X710Config, X710Part, X710Port};
use pktio::devargs::Devargs;
use pktio::driver::VdevDriver;
use pktio::{EthDev, Result};

use crate::{max_speed_of, I40e, Options, Timing};

/// This driver's simulated NIC, for simports' model list: the vdev, and the devargs and link speed of its
/// forwarding runs.
pub const SIM_NICS: &[SimNic] =
    &[SimNic::new(VDEV, "net_i40e", &[("net_sim_x710,ports=2", 10_000), ("net_sim_x710,ports=2,part=xl710", 40_000)])];

/// The driver name users type.
pub const VDEV_DRIVER: &str = "net_sim_x710";

/// `net_sim_x710`.
pub const VDEV: VdevDriver = VdevDriver { name: VDEV_DRIVER, devargs: I40eSim::KEYS, open: open_vdev };

/// One simulated 700-series port: the i40e driver, and the X710 model (with its thread) behind it.
pub type SimPort = nicsim::vdev::SimPort<I40e<X710Bar>, nicsim::X710State>;

/// The part a `part=` devarg names.
fn part_of(name: &str) -> Option<X710Part> {
    Some(match name {
        "x710" | "X710" => X710Part::X710Sfp,
        "xl710" | "XL710" => X710Part::Xl710QsfpA,
        "xl710b" | "XL710B" => X710Part::Xl710QsfpB,
        "xxv710" | "XXV710" => X710Part::Xxv710Sfp28,
        _ => return None,
    })
}

/// The i40e driver on the X710 model.
#[derive(Debug)]
pub struct I40eSim;

impl SimDriver for I40eSim {
    type Model = nicsim::X710State;
    type Driver = I40e<X710Bar>;
    const DRIVER: &'static str = VDEV_DRIVER;
    const KEYS: &'static [&'static str] = &["ports", "part", "tap"];

    fn model_config(args: &Devargs) -> Result<X710Config> {
        let part_name = args.get("part").unwrap_or("x710");
        let part = part_of(part_name)
            .ok_or_else(|| args.error(format!("part={part_name}: use x710, xl710, xl710b or xxv710")))?;
        Ok(X710Config::part(part))
    }

    /// The model's pair differs in the last MAC byte, the adapter index goes in byte 4.
    fn card_config(config: &X710Config, card: u16) -> X710Config {
        X710Config { mac: with_card_byte(config.mac, card), ..config.clone() }
    }

    fn open_driver(name: String, model: &X710Port, allocator: &Allocator) -> Result<I40e<X710Bar>> {
        let device = model.config().part.device_id();
        let max_speed = max_speed_of(0x8086, device).unwrap_or(10_000);
        let options = Options { timing: Timing::fast(), max_speed, ..Options::new(name) };
        let mut dev = I40e::new(Arc::new(model.bar()), model.dma_mapper(), allocator.clone(), options)?;
        // The model's vectors as eventfds, as VFIO's MSI-X on a PCI device.
        dev.set_irq_source(model.irq_source());
        Ok(dev)
    }
}

/// Opens the ports of a `net_sim_x710` vdev.
pub fn open_vdev(args: &Devargs, allocator: &Allocator) -> Result<Vec<Box<dyn EthDev>>> {
    nicsim::vdev::open_vdev::<I40eSim>(args, allocator)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(devargs: &str) -> Result<Vec<Box<dyn EthDev>>> {
        open_vdev(&Devargs::parse(devargs).unwrap(), &Allocator::no_huge())
    }

    #[test]
    fn every_part_makes_wired_pairs_that_forward() {
        for (part, speed) in [("x710", 10_000), ("xl710", 40_000), ("xl710b", 40_000), ("xxv710", 25_000)] {
            forward_on(&format!("net_sim_x710,ports=2,part={part}"), speed);
        }
    }

    #[test]
    fn bad_devargs_are_refused_before_any_port_opens() {
        for bad in [
            "net_sim_x710,ports=3",
            "net_sim_x710,ports=0",
            "net_sim_x710,bogus=1",
            "net_sim_x710,part=x722",
            "net_sim_x710,tap=simtap0,ports=2",
            "net_sim_x710,tap=",
        ] {
            let err = open(bad).err().expect(bad).to_string();
            assert!(
                err.contains("ports") || err.contains("part") || err.contains("tap") || err.contains("bogus"),
                "{bad}: {err}"
            );
        }
    }

    fn forward_on(devargs: &str, speed: u32) {
        testkit::sim::forward_pair(open(devargs).unwrap(), devargs, speed, "net_i40e", "net_sim_x710_p0");
    }
}
