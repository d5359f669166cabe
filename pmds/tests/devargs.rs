//! The driver contract on device arguments, for every driver of this build: `-a ADDRESS,unknown=1` (and `--vdev
//! NAME,unknown=1`) is refused by the EAL with the driver's list of keys, before the driver opens anything.

use drvkit::pci::fake::{FakeDevice, FakeSysfs};
use drvkit::vfio::fake::FakeVfio;
use drvkit::vfio::{Vfio, VfioConfig};
use hugepage::Allocator;
use pktio::devargs::Devargs;
use std::sync::Arc;

/// What `check_keys` says a driver takes.
fn takes(keys: &[&str]) -> String {
    if keys.is_empty() {
        "takes no device arguments".to_string()
    } else {
        format!("takes: {}", keys.join(", "))
    }
}

#[test]
fn every_pci_driver_refuses_an_unknown_key_with_its_list_before_opening_the_device() {
    let registry = pmds::registry();
    let mut refused = Vec::new();
    for (n, driver) in registry.pci_drivers().iter().enumerate() {
        // A device with the driver's first ID, bound to vfio-pci: probing would open it.
        let fake = FakeSysfs::new(&format!("pmds-devargs-{n}"));
        let addr = format!("0000:00:{:02x}.0", n + 3);
        let id = driver.ids[0];
        fake.add_device(&FakeDevice::net(&addr, id.vendor, id.device).driver("vfio-pci").iommu_group(n as u32 + 3));
        let sysfs = fake.sysfs();
        let fake_vfio = Arc::new(FakeVfio::new());
        let vfio = Vfio::with_parts(fake_vfio.clone(), sysfs.clone(), VfioConfig::default());
        let text = format!("{addr},unknown=1");
        let (address, devargs) = Devargs::parse_pci(&text).unwrap();
        let err = eal::pci::probe_with(&sysfs, &vfio, &Allocator::no_huge(), &registry, address, &devargs)
            .err()
            .unwrap_or_else(|| panic!("{}: {text} was accepted", driver.name))
            .to_string();
        let want = format!("unknown argument \"unknown\"; {} {}", driver.name, takes(driver.devargs));
        assert!(err.contains(&want), "{}: {err}", driver.name);
        assert!(err.starts_with(&format!("-a \"{text}\": ")), "{err}");
        assert_eq!(fake_vfio.state().open_fds(), 0, "{}: nothing was opened", driver.name);
        assert!(fake_vfio.state().ioctls.is_empty(), "{}: no VFIO call was made", driver.name);
        refused.push(driver.name);
    }
    // Every PCI driver of the build was tried, this workspace's among them (a driver added to pmds' list is tried
    // with no change here).
    for (on, names) in [
        (cfg!(feature = "hinic3"), &["net_hinic3"][..]),
        (cfg!(feature = "i40e"), &["net_i40e"]),
        (cfg!(feature = "ixgbe"), &["net_ixgbe", "net_igb"]),
        (cfg!(feature = "virtio"), &["net_virtio"]),
    ] {
        for name in names {
            assert_eq!(refused.contains(name), on, "{name} in {refused:?}");
        }
    }
}

#[test]
fn every_vdev_refuses_an_unknown_key_with_its_list() {
    let registry = pmds::registry();
    for driver in registry.vdev_drivers() {
        let text = format!("{},unknown=1", driver.name);
        let (found, args) = eal::vdev::find(&registry, &text).unwrap().expect("registered");
        assert_eq!(found.name, driver.name);
        let err = found.open_device(&args, &Allocator::no_huge()).err().expect("refused").to_string();
        let want = format!("unknown argument \"unknown\"; {} {}", driver.name, takes(driver.devargs));
        assert!(err.contains(&want), "{}: {err}", driver.name);
        assert!(err.starts_with(&format!("--vdev \"{text}\": ")), "{err}");
    }
    if cfg!(feature = "sim") {
        let x540 = registry.vdev_drivers().iter().find(|d| d.name == "net_sim_x540").expect("net_sim_x540");
        assert_eq!(x540.devargs, ["ports", "speed", "mac", "tap"]);
    }
}
