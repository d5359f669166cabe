//! The poll-mode drivers (PMDs) of this build, in one list. Each driver crate is an optional dependency and a default
//! cargo feature of the same name (`ixgbe`: net_ixgbe and net_igb; `i40e`: net_i40e; `hinic3`: net_hinic3; `virtio`:
//! net_virtio), `sim` an opt-in one (the net_sim_* vdevs on the behavioural models: the applications turn it on for
//! their tests and for users without a NIC, production builds leave it off), and [`registry()`] gathers the enabled
//! ones for the EAL:
//!
//! ```no_run
//! let (mut eal, app_args) = eal::init_with(&pmds::registry(), ["-l", "0-1", "-a", "0000:01:00.0"])?;
//! # Ok::<(), eal::Error>(())
//! ```
//!
//! Adding a driver: write its crate (exporting `PCI_DRIVERS`), add it to pmds/Cargo.toml as an optional dependency
//! (its feature) and to `default`; `registry()` is written from the enabled features by build.rs, and the scripts
//! that list drivers read pmds/Cargo.toml through cargo metadata. Neither the EAL nor any application changes
//! (docs/writing-a-driver.md).
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

/// The drivers enabled in this build: the PCI drivers in the alphabetical order of their features, then the vdevs.
pub fn registry() -> Registry {
    #[allow(unused_mut)]
    let mut registry = Registry::new();
    // One `add_pci` per enabled driver feature, one `add_vdevs` with `sim` (build.rs).
    include!(concat!(env!("OUT_DIR"), "/registry.rs"));
    registry
}

#[cfg(test)]
mod tests {
    use super::*;
    use drvkit::pci::PciId;

    /// The drivers of this workspace are in the registry exactly when their feature is on, once each; PCI drivers in
    /// the alphabetical order of their features (a driver added to the list needs nothing here).
    #[test]
    fn the_registry_holds_exactly_the_enabled_drivers() {
        let r = registry();
        let pci: Vec<&str> = r.pci_drivers().iter().map(|d| d.name).collect();
        let known: [(bool, &[&str]); 4] = [
            (cfg!(feature = "hinic3"), &["net_hinic3"]),
            (cfg!(feature = "i40e"), &["net_i40e"]),
            (cfg!(feature = "ixgbe"), &["net_ixgbe", "net_igb"]),
            (cfg!(feature = "virtio"), &["net_virtio"]),
        ];
        for (on, names) in known {
            for name in names {
                assert_eq!(pci.iter().filter(|&&n| n == *name).count(), on as usize, "{name} in {pci:?}");
            }
        }
        let enabled: Vec<&str> = known.iter().filter(|(on, _)| *on).flat_map(|(_, n)| n.iter().copied()).collect();
        let positions: Vec<usize> = enabled.iter().map(|n| pci.iter().position(|p| p == n).unwrap()).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "alphabetical order of the features: {pci:?}");
        // With `sim`, the vdevs are simports' model list (a model added there needs nothing here), which holds
        // at least the models of this workspace.
        #[cfg(feature = "sim")]
        {
            let list: Vec<&str> = simports::VDEV_DRIVERS.iter().map(|d| d.name).collect();
            assert_eq!(r.vdev_names(), list);
            for vdev in ["net_sim_x540", "net_sim_82599", "net_sim_x710", "net_sim_sp670"] {
                assert!(list.contains(&vdev), "{vdev} not in {list:?}");
            }
        }
        #[cfg(not(feature = "sim"))]
        assert!(r.vdev_names().is_empty(), "{:?}", r.vdev_names());
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
