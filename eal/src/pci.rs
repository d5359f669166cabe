//! PCI probing: find the device named with `-a` in sysfs and the driver for its vendor:device ID.
//!
//! No PCI poll-mode driver is registered yet (ixgbe, i40e, hinic3 and virtio come next); probing says so clearly.

use std::path::Path;

use pktio::pci::PciAddress;
use pktio::EthDev;

use crate::{Error, Result};

/// Vendor and device ID of a PCI function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PciId {
    /// Vendor ID (e.g. 0x8086 Intel).
    pub vendor: u16,
    /// Device ID.
    pub device: u16,
}

/// A PCI poll-mode driver the EAL can probe.
pub struct PciDriver {
    /// Driver name (`net_ixgbe`).
    pub name: &'static str,
    /// IDs it supports.
    pub ids: &'static [PciId],
    /// Opens a device.
    pub probe: fn(PciAddress) -> pktio::Result<Box<dyn EthDev>>,
}

/// Every PCI driver in this build.
pub const DRIVERS: &[PciDriver] = &[];

fn read_id(path: &Path) -> Option<u16> {
    let text = std::fs::read_to_string(path).ok()?;
    u16::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok()
}

/// Reads a device's IDs from sysfs under `root` (normally `/sys`).
pub fn read_pci_id(root: &Path, addr: PciAddress) -> Result<PciId> {
    let dir = root.join("bus/pci/devices").join(addr.to_string());
    if !dir.exists() {
        return Err(Error::Pci(format!("PCI device {addr} does not exist (see `lspci -D` for the addresses here)")));
    }
    match (read_id(&dir.join("vendor")), read_id(&dir.join("device"))) {
        (Some(vendor), Some(device)) => Ok(PciId { vendor, device }),
        _ => Err(Error::Pci(format!("cannot read the vendor/device IDs of {addr} under {}", dir.display()))),
    }
}

/// Finds the driver for `id` among `drivers`.
pub fn find_driver(drivers: &'static [PciDriver], id: PciId) -> Option<&'static PciDriver> {
    drivers.iter().find(|d| d.ids.contains(&id))
}

/// Opens the device at `addr` with the driver registered for its ID.
pub fn probe(addr: PciAddress) -> Result<Box<dyn EthDev>> {
    let id = read_pci_id(Path::new("/sys"), addr)?;
    match find_driver(DRIVERS, id) {
        Some(driver) => Ok((driver.probe)(addr)?),
        None => Err(Error::Pci(format!(
            "no driver for PCI device {addr} ({:04x}:{:04x}); supported: {}",
            id.vendor,
            id.device,
            if DRIVERS.is_empty() {
                "none yet in this build (virtual devices only: use --vdev)".to_string()
            } else {
                DRIVERS
                    .iter()
                    .map(|d| {
                        format!(
                            "{} ({})",
                            d.name,
                            d.ids
                                .iter()
                                .map(|i| format!("{:04x}:{:04x}", i.vendor, i.device))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            }
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ids_from_a_fake_sysfs_and_reports_missing_devices() {
        let root = std::env::temp_dir().join(format!("eal-pci-{}", std::process::id()));
        let dev = root.join("bus/pci/devices/0000:01:00.0");
        std::fs::create_dir_all(&dev).unwrap();
        std::fs::write(dev.join("vendor"), "0x8086\n").unwrap();
        std::fs::write(dev.join("device"), "0x1528\n").unwrap();
        let addr: PciAddress = "0000:01:00.0".parse().unwrap();
        assert_eq!(read_pci_id(&root, addr).unwrap(), PciId { vendor: 0x8086, device: 0x1528 });
        let missing: PciAddress = "0000:02:00.0".parse().unwrap();
        assert!(read_pci_id(&root, missing).unwrap_err().to_string().contains("lspci"));
        assert!(find_driver(DRIVERS, PciId { vendor: 0x8086, device: 0x1528 }).is_none());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
