//! The poll-mode drivers (PMDs) of this build, in one list. Each driver crate is an optional dependency behind a
//! default cargo feature (`ixgbe`: net_ixgbe and net_igb; `i40e`: net_i40e; `hinic3`: net_hinic3; `virtio`: net_virtio; `sim`: the net_sim_* vdevs on
//! behavioural models), and [`registry()`] gathers the enabled ones for the EAL:
//!
//! ```no_run
//! let (mut eal, app_args) = eal::init_with(&pmds::registry(), ["-l", "0-1", "-a", "0000:01:00.0"])?;
//! # Ok::<(), eal::Error>(())
//! ```
//!
//! Adding a driver: write its crate (exporting `PCI_DRIVERS` and/or `VDEV_DRIVERS`), add it here as an optional
//! dependency with a feature of the same name, and add one line to [`registry()`]. Neither the EAL nor any
//! application changes.
//!
//! # Only ixgbe
//!
//! An embedder who wants the ixgbe driver and nothing else (no other driver, no models) either turns the other
//! features off,
//!
//! ```toml
//! pmds = { path = "../pmds", default-features = false, features = ["ixgbe"] }
//! ```
//!
//! or skips this crate and registers the driver itself, depending on `eal` and `ixgbe` only:
//!
//! ```no_run
//! # #[cfg(feature = "ixgbe")]
//! # fn main() -> Result<(), eal::Error> {
//! let registry = pktio::driver::Registry::new().with_pci(ixgbe::PCI_DRIVERS);
//! let (eal, app_args) = eal::init_with(&registry, ["-l", "0-1", "-a", "0000:01:00.0"])?;
//! # Ok(()) }
//! # #[cfg(not(feature = "ixgbe"))]
//! # fn main() {}
//! ```
//!
//! Either way `cargo tree -e normal` shows no `nicsim`, `simports` or `virtio` (`pmds/tests/only_ixgbe.rs` checks
//! it). Not here: swports' software ports (`net_null`, `net_ring`, ...), which the EAL always has.

use pktio::driver::Registry;

/// The drivers enabled in this build, PCI drivers and vdevs, in the order listed here.
pub fn registry() -> Registry {
    #[allow(unused_mut)]
    let mut registry = Registry::new();
    #[cfg(feature = "ixgbe")]
    registry.add_pci(ixgbe::PCI_DRIVERS);
    #[cfg(feature = "i40e")]
    registry.add_pci(i40e::PCI_DRIVERS);
    #[cfg(feature = "hinic3")]
    registry.add_pci(hinic3::PCI_DRIVERS);
    #[cfg(feature = "virtio")]
    registry.add_pci(virtio::PCI_DRIVERS);
    #[cfg(feature = "sim")]
    registry.add_vdevs(simports::VDEV_DRIVERS);
    registry
}

#[cfg(test)]
mod tests {
    use super::*;
    use drvkit::pci::PciId;

    #[test]
    fn the_registry_holds_exactly_the_enabled_drivers() {
        let r = registry();
        let mut pci = Vec::new();
        if cfg!(feature = "ixgbe") {
            pci.extend(["net_ixgbe", "net_igb"]);
        }
        if cfg!(feature = "i40e") {
            pci.push("net_i40e");
        }
        if cfg!(feature = "hinic3") {
            pci.push("net_hinic3");
        }
        if cfg!(feature = "virtio") {
            pci.push("net_virtio");
        }
        let vdevs: &[&str] = if cfg!(feature = "sim") {
            &["net_sim_x540", "net_sim_82599", "net_sim_x710", "net_sim_sp670"]
        } else {
            &[]
        };
        assert_eq!(r.pci_drivers().iter().map(|d| d.name).collect::<Vec<_>>(), pci);
        assert_eq!(r.vdev_names(), vdevs);
    }

    #[test]
    fn pci_ids_find_their_driver() {
        let r = registry();
        let name = |v, d| r.pci_driver_for(PciId::new(v, d)).map(|d| d.name);
        let on = |feature: bool, n: &'static str| feature.then_some(n);
        assert_eq!(name(0x8086, 0x1528), on(cfg!(feature = "ixgbe"), "net_ixgbe"), "X540-T2");
        assert_eq!(name(0x8086, 0x10fb), on(cfg!(feature = "ixgbe"), "net_ixgbe"), "82599 SFP+");
        assert_eq!(name(0x8086, 0x10c9), on(cfg!(feature = "ixgbe"), "net_igb"), "82576");
        assert_eq!(name(0x1af4, 0x1041), on(cfg!(feature = "virtio"), "net_virtio"), "modern virtio-net");
        assert_eq!(name(0x8086, 0x1572), on(cfg!(feature = "i40e"), "net_i40e"), "X710 SFP+");
        assert_eq!(name(0x8086, 0x158B), on(cfg!(feature = "i40e"), "net_i40e"), "XXV710 SFP28");
        assert_eq!(name(0x19e5, 0x0222), on(cfg!(feature = "hinic3"), "net_hinic3"), "hinic3 PF");
    }
}
