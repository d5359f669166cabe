//! Simulated ports: each `net_sim_*` virtual device opens a real driver on a behavioural NIC model ([`nicsim`]), so
//! the driver runs, and applications such as testpmd-rs forward, with no hardware. This crate is **the model
//! list**: the drivers with a model, one line each in its Cargo.toml (`mynic = { path = "../mynic", features =
//! ["sim"] }`). What is each NIC's own lives in its driver crate, `src/sim.rs` behind the driver's `sim` feature (a
//! `nicsim::vdev::SimDriver`: devargs keys, the model's configuration, how the driver opens on a model port, and
//! its `SIM_NICS`); the machinery every vdev shares (the one generic `open_vdev`, the `SimPort` it hands out) is
//! [`nicsim::vdev`]. So the graph stays acyclic: nicsim → pktio, drivers →(`sim`) nicsim, simports → drivers.
//!
//! - `ixgbe::sim`: `net_sim_x540` and `net_sim_82599`, the ixgbe driver on the X540 model and its 82599 variant.
//! - `i40e::sim`: `net_sim_x710`, the i40e driver on the X710 / XL710 / XXV710 model.
//! - `hinic3::sim`: `net_sim_sp670`, the hinic3 driver on the SP670 model.
//!
//! [`SIM_NICS`] is every simulated NIC of the list (its vdev, the driver that runs on it, the devargs a forwarding
//! test runs it with and the link speed it then reports), gathered by build.rs from Cargo.toml. [`VDEV_DRIVERS`]
//! (for an application's [`pktio::driver::Registry`]) and the tests that walk every simulated NIC
//! (testpmd-rs/tests/sim_nics.rs) derive from it. Not supported: PCI-style probing of a model (models are vdevs
//! only).

#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

use pktio::driver::VdevDriver;

pub use nicsim::vdev::{SimNic, SimPort, MAX_PORTS};

/// Each driver's `sim::SIM_NICS`, in the order of the model list (build.rs, from Cargo.toml).
const LISTS: &[&[SimNic]] = include!(concat!(env!("OUT_DIR"), "/model_list.rs"));
const COUNT: usize = count(LISTS);

/// Every simulated NIC: the model list's drivers' NICs, in its order.
pub static SIM_NICS: &[SimNic] = &flatten::<COUNT>(LISTS);

/// Every simulated port this crate provides, for an application's registry: the vdevs of [`SIM_NICS`].
pub static VDEV_DRIVERS: &[VdevDriver] = &vdevs_of::<COUNT>(&flatten::<COUNT>(LISTS));

const fn count(lists: &[&[SimNic]]) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < lists.len() {
        n += lists[i].len();
        i += 1;
    }
    n
}

const fn flatten<const N: usize>(lists: &[&[SimNic]]) -> [SimNic; N] {
    let mut out = [lists[0][0]; N];
    let (mut k, mut i) = (0, 0);
    while i < lists.len() {
        let mut j = 0;
        while j < lists[i].len() {
            out[k] = lists[i][j];
            k += 1;
            j += 1;
        }
        i += 1;
    }
    out
}

const fn vdevs_of<const N: usize>(nics: &[SimNic; N]) -> [VdevDriver; N] {
    let mut out = [nics[0].vdev; N];
    let mut i = 0;
    while i < N {
        out[i] = nics[i].vdev;
        i += 1;
    }
    out
}

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

    /// An unknown key is named with the driver's whole name, digits included, even when the driver's own open is
    /// called directly (the name used to lose them: "net_sim_x takes: ...").
    #[test]
    fn unknown_keys_name_the_whole_driver() {
        for (devargs, driver) in [
            ("net_sim_x710,bogus=1", "net_sim_x710"),
            ("net_sim_x7101,bogus=1", "net_sim_x710"),
            ("net_sim_sp670,bogus=1", "net_sim_sp670"),
            ("net_sim_sp6702,bogus=1", "net_sim_sp670"),
        ] {
            let e = open(devargs).err().unwrap_or_else(|| panic!("{devargs} accepted")).to_string();
            assert!(e.contains(&format!("unknown argument \"bogus\"; {driver} takes: ports")), "{devargs}: {e}");
        }
    }

    /// build.rs read the model list from Cargo.toml: one list of NICs per dependency line with
    /// `features = ["sim"]`, none empty, and every NIC in `SIM_NICS`.
    #[test]
    fn the_model_list_is_every_sim_driver_of_cargo_toml() {
        let lines = include_str!("../Cargo.toml")
            .lines()
            .filter(|l| !l.trim_start().starts_with('#') && l.contains("features = [\"sim\"]"))
            .count();
        assert!(lines >= 3, "simports/Cargo.toml lost drivers: {lines} sim lines");
        assert_eq!(LISTS.len(), lines, "build.rs read {} of {lines} sim lines", LISTS.len());
        assert!(LISTS.iter().all(|l| !l.is_empty()), "a driver with an empty SIM_NICS");
        assert_eq!(SIM_NICS.len(), LISTS.iter().map(|l| l.len()).sum::<usize>());
        assert!(SIM_NICS.len() >= 4, "the model list lost NICs: {SIM_NICS:?}");
    }

    #[test]
    fn every_nic_of_the_model_list_is_registered_and_forwards_on_each_run() {
        let names: Vec<_> = VDEV_DRIVERS.iter().map(|d| d.name).collect();
        assert_eq!(names, SIM_NICS.iter().map(|n| n.vdev.name).collect::<Vec<_>>());
        for nic in SIM_NICS {
            assert!(nic.vdev.devargs.contains(&"ports") && nic.vdev.devargs.contains(&"tap"), "{}", nic.vdev.name);
            for &(devargs, mbps) in nic.runs {
                let device = format!("{}_p0", nic.vdev.name);
                testkit::sim::forward_pair(open(devargs).unwrap(), devargs, mbps, nic.driver, &device);
            }
        }
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
