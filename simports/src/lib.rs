//! Simulated ports: each `net_sim_*` virtual device opens a real driver on a behavioural NIC model ([`nicsim`]), so
//! the driver runs, and applications such as testpmd-rs forward, with no hardware. This is the one crate that
//! depends on both drivers and models; driver crates use the models only in their tests.
//!
//! - [`x540`]: `net_sim_x540` and `net_sim_82599`, the ixgbe driver on the X540 model and its 82599 variant.
//! - [`x710`]: `net_sim_x710`, the i40e driver on the X710 / XL710 / XXV710 model.
//! - [`sp670`]: `net_sim_sp670`, the hinic3 driver on the SP670 model.
//!
//! [`VDEV_DRIVERS`] lists them for an application's [`pktio::driver::Registry`]. Not supported: models of other
//! NICs (one module per model family joins these), PCI-style probing of a model (models are vdevs only).

#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

mod port;
pub mod sp670;
pub mod x540;
pub mod x710;

pub use port::SimPort;

use pktio::driver::VdevDriver;

/// Every simulated port this crate provides.
pub static VDEV_DRIVERS: &[VdevDriver] = &[
    VdevDriver { name: x540::VDEV_DRIVER, open: x540::open_vdev },
    VdevDriver { name: x540::VDEV_DRIVER_82599, open: x540::open_vdev_82599 },
    VdevDriver { name: x710::VDEV_DRIVER, open: x710::open_vdev },
    VdevDriver { name: sp670::VDEV_DRIVER, open: sp670::open_vdev },
];

#[cfg(test)]
mod tests {
    use super::*;
    use hugepage::Allocator;
    use pktio::devargs::Devargs;
    use pktio::driver::Registry;

    /// Opens `devargs` the way the EAL does: look the name up in a registry, then call the driver's `open`.
    fn open(devargs: &str) -> pktio::Result<Vec<Box<dyn pktio::EthDev>>> {
        let registry = Registry::new().with_vdevs(VDEV_DRIVERS);
        let args = Devargs::parse(devargs)?;
        let driver = registry.vdev_driver_for(&args).unwrap_or_else(|| panic!("{devargs}: not registered"));
        (driver.open)(&args, &Allocator::no_huge())
    }

    #[test]
    fn opens_two_wired_simulated_ports_through_a_registry() {
        let ports = open("net_sim_x540,ports=2").unwrap();
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[1].info().driver_name, "net_ixgbe");
        assert_eq!(ports[1].info().device_name, "net_sim_x540_p1");
        assert_eq!(open("net_sim_x5401,ports=4").unwrap().len(), 4);
        let x710 = open("net_sim_x710,ports=2,part=xxv710").unwrap();
        assert_eq!(x710[1].info().driver_name, "net_i40e");
        assert_eq!(x710[1].info().device_name, "net_sim_x710_p1");
        let sp670 = open("net_sim_sp670,ports=2").unwrap();
        assert_eq!(sp670[1].info().driver_name, "net_hinic3");
        assert_eq!(sp670[1].info().device_name, "net_sim_sp670_p1");
    }

    #[test]
    fn finds_and_opens_the_82599_variant() {
        let ports = open("net_sim_82599,ports=2").unwrap();
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[0].info().speed_capa, vec![1_000, 10_000]);
        assert_eq!(open("net_sim_x540,ports=2,mac=82599").unwrap()[0].info().speed_capa, vec![1_000, 10_000]);
        assert_eq!(open("net_sim_x540,ports=2").unwrap()[0].info().speed_capa, vec![100, 1_000, 10_000]);
    }
}
