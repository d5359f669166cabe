//! `net_sim_x540` (feature `sim`): this driver on behavioural X540 models ([`nicsim`]), so users can run it without hardware:
//! `testpmd-rs --vdev net_sim_x540,ports=2 -- -i` forwards between two simulated ports wired back to back.
//!
//! Devargs: `ports=N` (even, default 2: N/2 dual-port X540s, each pair wired back to back),
//! `speed=100|1000|10000` (link partner speed, default 10000), `mac=x540|82599` (which model; default x540).
//! Each model port runs in its own thread, like hardware, for as long as the port lives.
//!
//! `tap=NAME` wires one port to a TAP interface instead of a twin (`ports=1`, the default then, and the only count
//! allowed with it; `%d` in NAME lets the kernel number it): the kernel is the link partner, so ping or curl talk
//! through the real driver and the model, e.g. `testpmd-rs --vdev net_sim_x540,tap=simtap0 --
//! --forward-mode=icmpecho`, then `ip addr add 10.0.0.1/24 dev simtap0; ping 10.0.0.2`. The interface is created
//! (and brought up) when the vdev opens, in the caller's network namespace, and disappears with the port; it needs
//! CAP_NET_ADMIN and /dev/net/tun.
//!
//! `net_sim_82599` is the same with `mac=82599`: the driver's 82599 path (SFP+ link through AUTOC and the laser,
//! LNK_RST, the RX security-block sequence) on the model's 82599 variant, e.g.
//! `testpmd-rs --vdev net_sim_82599,ports=2 -- -i`. Its SFP+ link runs at 10G only.

use std::sync::Arc;
use std::time::Duration;

use hugepage::Allocator;
use nicsim::vdev::{with_card_byte, SimDriver, SimNic};
use nicsim::{Chip, LinkSpeed, SimBar, X540Config, X540Port};
use pktio::devargs::Devargs;
use pktio::driver::VdevDriver;
use pktio::{EthDev, Result};

use crate::{Ixgbe, MacType, Media, Options, Timing};

/// This driver's simulated NICs, for simports' model list: each vdev, and the devargs and link speed of its
/// forwarding runs.
pub const SIM_NICS: &[SimNic] = &[
    SimNic::new(VDEV, "net_ixgbe", &[("net_sim_x540,ports=2", 10_000)]),
    SimNic::new(VDEV_82599, "net_ixgbe", &[("net_sim_82599,ports=2", 10_000)]),
];

/// The driver name users type.
pub const VDEV_DRIVER: &str = "net_sim_x540";
/// The driver name users type for simulated 82599 (SFP+) ports.
pub const VDEV_DRIVER_82599: &str = "net_sim_82599";

/// `net_sim_x540`.
pub const VDEV: VdevDriver = VdevDriver { name: VDEV_DRIVER, devargs: IxgbeSim::<false>::KEYS, open: open_vdev };
/// `net_sim_82599`.
pub const VDEV_82599: VdevDriver =
    VdevDriver { name: VDEV_DRIVER_82599, devargs: IxgbeSim::<true>::KEYS, open: open_vdev_82599 };

/// Timing for a model: no settle waits (the model has none unless a test injects them).
pub fn model_timing() -> Timing {
    Timing {
        reset_done: Duration::from_millis(500),
        reset_settle: Duration::ZERO,
        gio_disable: Duration::from_millis(10),
        eeprom: Duration::from_millis(500),
        dma_init: Duration::from_millis(500),
        queue_enable: Duration::from_millis(100),
        mdio: Duration::from_millis(10),
        semaphore: Duration::from_millis(10),
        security_block: Duration::from_millis(100),
        laser_on: Duration::ZERO,
        // The hardware's (ringkit::DEFAULT_TX_HANG_TIMEOUT): a model serves its queues unless a fault stops them.
        tx_hang: Duration::from_secs(5),
    }
}

/// One simulated port: the ixgbe driver, and the X540 (or 82599) model (with its thread) behind it.
pub type SimPort = nicsim::vdev::SimPort<Ixgbe<SimBar>, nicsim::X540State>;

/// The ixgbe driver on the X540 model (`X82599`: on its 82599 variant by default).
#[derive(Debug)]
pub struct IxgbeSim<const X82599: bool>;

impl<const X82599: bool> SimDriver for IxgbeSim<X82599> {
    type Model = nicsim::X540State;
    type Driver = Ixgbe<SimBar>;
    const DRIVER: &'static str = if X82599 { VDEV_DRIVER_82599 } else { VDEV_DRIVER };
    const KEYS: &'static [&'static str] = &["ports", "speed", "mac", "tap"];

    fn model_config(args: &Devargs) -> Result<X540Config> {
        let base = match args.get("mac").unwrap_or(if X82599 { "82599" } else { "x540" }) {
            "x540" | "X540" => X540Config::default(),
            "82599" => X540Config::x82599(),
            m => return Err(args.error(format!("mac={m}: use x540 or 82599"))),
        };
        let partner_speed = match args.parse_or("speed", 10_000u32)? {
            100 => LinkSpeed::M100,
            1_000 => LinkSpeed::G1,
            10_000 => LinkSpeed::G10,
            s => return Err(args.error(format!("speed={s}: use 100, 1000 or 10000"))),
        };
        if base.chip == Chip::X82599 && partner_speed != LinkSpeed::G10 {
            return Err(args.error("the simulated 82599 is an SFP+ port running 10G SFI: speed=10000 only"));
        }
        Ok(X540Config { partner_speed, ..base })
    }

    /// The model's pair differs in the last MAC byte, the card index goes in byte 4.
    fn card_config(config: &X540Config, card: u16) -> X540Config {
        X540Config { mac: with_card_byte(config.mac, card), ..config.clone() }
    }

    fn open_driver(name: String, model: &X540Port, allocator: &Allocator) -> Result<Ixgbe<SimBar>> {
        let (mac_type, media) = match model.config().chip {
            Chip::X540 => (MacType::X540, Media::Copper),
            Chip::X82599 => (MacType::X82599, Media::Sfp),
        };
        let options = Options { name, mac_type, timing: model_timing(), media };
        let mut dev = Ixgbe::new(Arc::new(model.bar()), model.dma_mapper(), allocator.clone(), options)?;
        // The model's MSI-X vectors as real eventfds, as VFIO gives them on a PCI device.
        dev.set_irq_source(model.irq_source());
        Ok(dev)
    }
}

/// Opens the ports of a `net_sim_x540` vdev.
pub fn open_vdev(args: &Devargs, allocator: &Allocator) -> Result<Vec<Box<dyn EthDev>>> {
    nicsim::vdev::open_vdev::<IxgbeSim<false>>(args, allocator)
}

/// Opens the ports of a `net_sim_82599` vdev.
pub fn open_vdev_82599(args: &Devargs, allocator: &Allocator) -> Result<Vec<Box<dyn EthDev>>> {
    nicsim::vdev::open_vdev::<IxgbeSim<true>>(args, allocator)
}

#[cfg(test)]
mod tests {
    use super::*;

    type VdevOpen = fn(&Devargs, &Allocator) -> Result<Vec<Box<dyn EthDev>>>;

    fn open_on(devargs: &str, open: VdevOpen) -> Result<Vec<Box<dyn EthDev>>> {
        open(&Devargs::parse(devargs).unwrap(), &Allocator::no_huge())
    }

    #[test]
    fn vdev_makes_wired_pairs_that_forward() {
        forward_on("net_sim_x540,ports=2", open_vdev);
        assert!(open_on("net_sim_x540,ports=3", open_vdev).is_err());
        assert!(open_on("net_sim_x540,bogus=1", open_vdev).is_err());
    }

    #[test]
    fn the_82599_vdev_makes_wired_pairs_that_forward() {
        forward_on("net_sim_82599,ports=2", open_vdev_82599);
        forward_on("net_sim_x540,ports=2,mac=82599", open_vdev);
        assert!(open_on("net_sim_82599,speed=1000", open_vdev_82599).is_err());
        assert!(open_on("net_sim_x540,mac=82598", open_vdev).is_err());
    }

    #[test]
    fn a_tap_vdev_has_one_port() {
        // Rejected before any TAP is made (the ping through one is in testpmd-rs/tests/netns.rs).
        for bad in ["net_sim_x540,tap=simtap0,ports=2", "net_sim_x540,tap=", "net_sim_82599,tap=t0,ports=0"] {
            let err = open_on(bad, open_vdev).err().expect(bad).to_string();
            assert!(err.contains("tap") || err.contains("ports"), "{bad}: {err}");
        }
    }

    fn forward_on(devargs: &str, open: VdevOpen) {
        let device = format!("{}_p0", devargs.split(',').next().unwrap());
        testkit::sim::forward_pair(open_on(devargs, open).unwrap(), devargs, 10_000, "net_ixgbe", &device);
    }
}
