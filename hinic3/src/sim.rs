//! `net_sim_sp670` (feature `sim`): this driver on the behavioural SP670 model ([`nicsim::Sp670`]), so users can run it
//! without hardware: `testpmd-rs --vdev net_sim_sp670,ports=2 -- -i` forwards between two simulated SP670 ports
//! wired back to back.
//!
//! Devargs: `ports=N` (even, default 2: N/2 pairs of cards wired back to back), `speed=MBPS` (the model's link speed:
//! 10000, 25000, 40000, 100000 or 200000; default 100000), `queues=N` (SQs and RQs per function, 1 to 256, default
//! 64). Each model port runs in its own thread, like the management CPU and the hardware, for as long as the port
//! lives.
//!
//! `tap=NAME` wires one port to a TAP interface instead of a twin (`ports=1`, the default then and the only count
//! allowed with it; `%d` in NAME lets the kernel number it): the kernel is the link partner, e.g.
//! `testpmd-rs --vdev net_sim_sp670,tap=simtap0 -- --forward-mode=icmpecho`, then
//! `ip addr add 10.0.0.1/24 dev simtap0; ping 10.0.0.2`. The interface is created (and brought up) when the vdev
//! opens, in the caller's network namespace, and disappears with the port; it needs CAP_NET_ADMIN and /dev/net/tun.

use std::sync::Arc;

use hugepage::Allocator;
use nicsim::vdev::{with_card_byte, SimDriver, SimNic};
use nicsim::{Sp670Bar, Sp670Config, Sp670Port};
use pktio::devargs::Devargs;
use pktio::driver::VdevDriver;
use pktio::{EthDev, Result};

use crate::{Bars, Hinic3, Options, Timing};

/// This driver's simulated NIC, for simports' model list: the vdev, and the devargs and link speed of its
/// forwarding runs.
pub const SIM_NICS: &[SimNic] = &[SimNic::new(
    VDEV,
    "net_hinic3",
    &[("net_sim_sp670,ports=2", 100_000), ("net_sim_sp670,ports=2,speed=25000", 25_000)],
)];

/// The driver name users type.
pub const VDEV_DRIVER: &str = "net_sim_sp670";
/// Link speeds the model reports (MAG speed codes of docs/hw/hinic3.md §7.3 that an SP670 runs).
const SPEEDS: [u32; 5] = [10_000, 25_000, 40_000, 100_000, 200_000];

/// `net_sim_sp670`.
pub const VDEV: VdevDriver = VdevDriver { name: VDEV_DRIVER, devargs: Hinic3Sim::KEYS, open: open_vdev };

/// One simulated SP670 port: the hinic3 driver, and the SP670 model (with its thread) behind it.
pub type SimPort = nicsim::vdev::SimPort<Hinic3<Sp670Bar>, nicsim::Sp670State>;

/// The hinic3 driver on the SP670 model.
#[derive(Debug)]
pub struct Hinic3Sim;

impl SimDriver for Hinic3Sim {
    type Model = nicsim::Sp670State;
    type Driver = Hinic3<Sp670Bar>;
    const DRIVER: &'static str = VDEV_DRIVER;
    const KEYS: &'static [&'static str] = &["ports", "tap", "speed", "queues"];

    fn model_config(args: &Devargs) -> Result<Sp670Config> {
        let speed: u32 = args.parse_or("speed", 100_000)?;
        if !SPEEDS.contains(&speed) {
            return Err(args.error(format!("speed={speed}: use one of {SPEEDS:?} (Mb/s)")));
        }
        let queues: u16 = args.parse_or("queues", 64)?;
        if !(1..=256).contains(&queues) {
            return Err(args.error(format!("queues={queues}: a function has 1 to 256 queue pairs")));
        }
        Ok(Sp670Config { speed_mbps: speed, max_queues: queues, ..Sp670Config::default() })
    }

    /// The model's pair differs in the last MAC byte, the pair index goes in byte 4.
    fn card_config(config: &Sp670Config, card: u16) -> Sp670Config {
        Sp670Config { mac: with_card_byte(config.mac, card), ..config.clone() }
    }

    fn open_driver(name: String, model: &Sp670Port, allocator: &Allocator) -> Result<Hinic3<Sp670Bar>> {
        let (cfg, mgmt, db) = model.bars();
        let bars = Bars { cfg: Arc::new(cfg), mgmt: Some(Arc::new(mgmt)), db: Arc::new(db) };
        let options = Options { timing: Timing::fast(), ..Options::new(&name) };
        let mut dev = Hinic3::new(bars, model.dma_mapper(), allocator.clone(), options)?;
        // The model's vectors as eventfds, as VFIO's MSI-X on a PCI device.
        dev.set_irq_source(model.irq_source());
        Ok(dev)
    }
}

/// Opens the ports of a `net_sim_sp670` vdev.
pub fn open_vdev(args: &Devargs, allocator: &Allocator) -> Result<Vec<Box<dyn EthDev>>> {
    nicsim::vdev::open_vdev::<Hinic3Sim>(args, allocator)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(devargs: &str) -> Result<Vec<Box<dyn EthDev>>> {
        open_vdev(&Devargs::parse(devargs).unwrap(), &Allocator::no_huge())
    }

    #[test]
    fn wired_pairs_forward_at_each_speed() {
        for speed in [25_000, 100_000] {
            forward_on(&format!("net_sim_sp670,ports=2,speed={speed}"), speed);
        }
    }

    #[test]
    fn bad_devargs_are_refused_before_any_port_opens() {
        for bad in [
            "net_sim_sp670,ports=3",
            "net_sim_sp670,ports=0",
            "net_sim_sp670,bogus=1",
            "net_sim_sp670,speed=1234",
            "net_sim_sp670,queues=0",
            "net_sim_sp670,tap=simtap0,ports=2",
            "net_sim_sp670,tap=",
        ] {
            let err = open(bad).err().expect(bad).to_string();
            assert!(["ports", "speed", "queues", "tap", "bogus"].iter().any(|k| err.contains(k)), "{bad}: {err}");
        }
    }

    fn forward_on(devargs: &str, speed: u32) {
        testkit::sim::forward_pair(open(devargs).unwrap(), devargs, speed, "net_hinic3", "net_sim_sp670_p0");
    }
}
