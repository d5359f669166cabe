//! PCI probing: find the device named with `-a` in sysfs, the driver for its vendor:device ID, and give the
//! driver what it needs to open the device through VFIO.
//!
//! A driver registers a [`PciDriver`] in [`DRIVERS`]; its `probe` receives a [`PciProbe`]:
//!
//! ```ignore
//! fn probe(ctx: &eal::pci::PciProbe) -> pktio::Result<Box<dyn pktio::EthDev>> {
//!     let dev = ctx.open_vfio()?;            // container + group + device fd, actionable errors
//!     let bar = dev.map_bar(0)?;             // registers
//!     let rings = std::sync::Arc::new(ctx.allocator().allocate(64 << 10)?);
//!     let mapper = dev.container().clone();  // a pktio::dma::DmaMapper for rings and mempools
//!     let ring_map = mapper.map(&rings)?;    // a guard owning `rings`: keep it until the queue is disabled
//!     /* ... */
//! }
//! ```

use std::path::Path;

use hugepage::{Allocator, IovaMode};
use pktio::pci::{PciAddress, PciDevice, Sysfs};
use pktio::vfio::{Vfio, VfioConfig, VfioDevice};
use pktio::EthDev;

use crate::{Error, Result};

pub use pktio::pci::PciId;

/// What a driver's probe function gets: the device as sysfs shows it, the EAL's DMA memory, and VFIO.
pub struct PciProbe<'a> {
    device: PciDevice,
    allocator: &'a Allocator,
    vfio: &'a Vfio,
}

impl std::fmt::Debug for PciProbe<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PciProbe").field("device", &self.device).finish()
    }
}

impl<'a> PciProbe<'a> {
    /// A probe context (the EAL makes these; tests and embedders may too).
    pub fn new(device: PciDevice, allocator: &'a Allocator, vfio: &'a Vfio) -> Self {
        PciProbe { device, allocator, vfio }
    }

    /// The device's address.
    pub fn address(&self) -> PciAddress {
        self.device.address
    }

    /// The device as sysfs shows it (IDs, NUMA node, driver, IOMMU group, BARs).
    pub fn device(&self) -> &PciDevice {
        &self.device
    }

    /// DMA memory for rings (the mode, `--iova-mode`, is that of the VFIO container).
    pub fn allocator(&self) -> &'a Allocator {
        self.allocator
    }

    /// The VFIO entry point (one container for every device of this process).
    pub fn vfio(&self) -> &'a Vfio {
        self.vfio
    }

    /// Opens the device through VFIO.
    pub fn open_vfio(&self) -> pktio::Result<VfioDevice> {
        Ok(self.vfio.open_device(self.device.address)?)
    }
}

/// A PCI poll-mode driver the EAL can probe.
pub struct PciDriver {
    /// Driver name (`net_ixgbe`).
    pub name: &'static str,
    /// IDs it supports.
    pub ids: &'static [PciId],
    /// Opens a device.
    pub probe: fn(&PciProbe<'_>) -> pktio::Result<Box<dyn EthDev>>,
}

impl std::fmt::Debug for PciDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PciDriver").field("name", &self.name).field("ids", &self.ids).finish()
    }
}

/// Every PCI driver in this build.
pub const DRIVERS: &[PciDriver] = &[
    PciDriver {
        name: virtio::DRIVER_NAME,
        ids: &[PciId::new(virtio::dev::VENDOR_ID, virtio::dev::DEVICE_ID_NET_MODERN)],
        probe: probe_virtio,
    },
    PciDriver { name: "net_ixgbe", ids: IXGBE_IDS, probe: probe_ixgbe },
    PciDriver { name: "net_igb", ids: &[PciId::new(ixgbe::igb::PCI_ID.0, ixgbe::igb::PCI_ID.1)], probe: probe_igb },
];

/// 82576 (QEMU's igb) through VFIO, on the ixgbe crate's shared ring code.
fn probe_igb(ctx: &PciProbe<'_>) -> pktio::Result<Box<dyn EthDev>> {
    Ok(Box::new(ixgbe::igb::open_vfio(ctx.vfio(), ctx.address(), ctx.allocator().clone())?))
}

/// X540 and 82599 IDs (kept in step with `ixgbe::PCI_IDS`, checked by a test).
const IXGBE_IDS: &[PciId] = &[
    PciId::new(0x8086, 0x1528),
    PciId::new(0x8086, 0x1560),
    PciId::new(0x8086, 0x10FB),
    PciId::new(0x8086, 0x10F7),
    PciId::new(0x8086, 0x1514),
    PciId::new(0x8086, 0x1517),
    PciId::new(0x8086, 0x10F8),
    PciId::new(0x8086, 0x10F9),
    PciId::new(0x8086, 0x10FC),
    PciId::new(0x8086, 0x151C),
    PciId::new(0x8086, 0x1529),
    PciId::new(0x8086, 0x152A),
    PciId::new(0x8086, 0x1507),
    PciId::new(0x8086, 0x154D),
    PciId::new(0x8086, 0x154A),
    PciId::new(0x8086, 0x1558),
    PciId::new(0x8086, 0x1557),
];

/// X540/82599 through the EAL's VFIO container and DMA memory.
fn probe_ixgbe(ctx: &PciProbe<'_>) -> pktio::Result<Box<dyn EthDev>> {
    Ok(Box::new(ixgbe::open_vfio(ctx.vfio(), ctx.address(), ctx.allocator().clone())?))
}

/// virtio-net (modern, 1af4:1041) through the EAL's VFIO container and DMA memory.
fn probe_virtio(ctx: &PciProbe<'_>) -> pktio::Result<Box<dyn EthDev>> {
    Ok(Box::new(virtio::open_vfio(ctx.vfio(), ctx.address(), ctx.allocator().clone())?))
}

/// Reads a device's IDs from sysfs under `root` (normally `/sys`).
pub fn read_pci_id(root: &Path, addr: PciAddress) -> Result<PciId> {
    let sysfs = Sysfs::new(root, "/proc");
    match sysfs.device(addr) {
        Ok(dev) => Ok(dev.id),
        Err(e) => Err(Error::Pci(e.to_string())),
    }
}

/// Finds the driver for `id` among `drivers`.
pub fn find_driver(drivers: &'static [PciDriver], id: PciId) -> Option<&'static PciDriver> {
    drivers.iter().find(|d| d.ids.contains(&id))
}

/// The "no driver" message: the device, its ID, and what this build supports.
fn unsupported(dev: &PciDevice, drivers: &[PciDriver]) -> Error {
    let supported = if drivers.is_empty() {
        "none yet in this build (virtual devices only: use --vdev)".to_string()
    } else {
        drivers
            .iter()
            .map(|d| format!("{} ({})", d.name, d.ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")))
            .collect::<Vec<_>>()
            .join("; ")
    };
    Error::Pci(format!("no driver for PCI device {} ({}); supported: {supported}", dev.address, dev.id))
}

/// Opens the device at `addr` with the driver in `drivers` registered for its ID, reading sysfs from `sysfs` and
/// opening it through `vfio`.
pub fn probe_with(
    sysfs: &Sysfs,
    vfio: &Vfio,
    allocator: &Allocator,
    drivers: &'static [PciDriver],
    addr: PciAddress,
) -> Result<Box<dyn EthDev>> {
    let device = sysfs.device(addr).map_err(|e| Error::Pci(e.to_string()))?;
    let Some(driver) = find_driver(drivers, device.id) else {
        return Err(unsupported(&device, drivers));
    };
    let ctx = PciProbe::new(device, allocator, vfio);
    Ok((driver.probe)(&ctx)?)
}

/// Opens the device at `addr` with the driver registered for its ID, through VFIO in `iova_mode` (`Pa` accepts
/// VFIO's no-IOMMU mode), from the real `/sys`.
pub fn probe(addr: PciAddress, allocator: &Allocator, vfio: &Vfio) -> Result<Box<dyn EthDev>> {
    probe_with(&Sysfs::system(), vfio, allocator, DRIVERS, addr)
}

/// The VFIO entry point for an IOVA mode (the EAL makes one per process).
pub fn vfio_for(iova_mode: IovaMode) -> Vfio {
    Vfio::new(VfioConfig::with_iova_mode(iova_mode))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pktio::pci::fake::{FakeDevice, FakeSysfs};

    #[test]
    fn reads_ids_from_a_fake_sysfs_and_reports_missing_devices() {
        let fake = FakeSysfs::new("eal-pci");
        fake.add_device(&FakeDevice::net("0000:01:00.0", 0x8086, 0x1528));
        let addr: PciAddress = "0000:01:00.0".parse().unwrap();
        assert_eq!(read_pci_id(&fake.root(), addr).unwrap(), PciId { vendor: 0x8086, device: 0x1528 });
        let missing: PciAddress = "0000:02:00.0".parse().unwrap();
        assert!(read_pci_id(&fake.root(), missing).unwrap_err().to_string().contains("lspci"));
        assert_eq!(find_driver(DRIVERS, PciId { vendor: 0x8086, device: 0x1528 }).unwrap().name, "net_ixgbe");
    }

    #[test]
    fn ixgbe_ids_match_the_driver() {
        let ids: Vec<PciId> = ixgbe::PCI_IDS.iter().map(|&(v, d, _)| PciId::new(v, d)).collect();
        assert_eq!(IXGBE_IDS, ids.as_slice());
    }

    fn fake_probe(ctx: &PciProbe<'_>) -> pktio::Result<Box<dyn EthDev>> {
        ctx.open_vfio()?;
        unreachable!("the fake sysfs device is not bound to vfio-pci")
    }

    static FAKE_DRIVERS: &[PciDriver] =
        &[PciDriver { name: "net_fake", ids: &[PciId::new(0x1af4, 0x1041)], probe: fake_probe }];

    #[test]
    fn probing_finds_the_driver_by_id_and_lists_what_is_supported() {
        let fake = FakeSysfs::new("eal-probe");
        fake.add_device(&FakeDevice::net("0000:00:02.0", 0x8086, 0x10c9));
        fake.add_device(&FakeDevice::net("0000:00:03.0", 0x1af4, 0x1041).driver("virtio-pci").iommu_group(3));
        let sysfs = fake.sysfs();
        let vfio = Vfio::with_parts(
            std::sync::Arc::new(pktio::vfio::fake::FakeVfio::new()),
            sysfs.clone(),
            VfioConfig::default(),
        );
        let allocator = Allocator::no_huge();
        let err = probe_with(&sysfs, &vfio, &allocator, FAKE_DRIVERS, "00:02.0".parse().unwrap()).err().unwrap();
        let msg = err.to_string();
        assert!(msg.contains("no driver for PCI device 0000:00:02.0 (8086:10c9)"), "{msg}");
        assert!(msg.contains("supported: net_fake (1af4:1041)"), "{msg}");
        // The driver is found and its VFIO open fails with the fix.
        let err = probe_with(&sysfs, &vfio, &allocator, FAKE_DRIVERS, "00:03.0".parse().unwrap()).err().unwrap();
        let msg = err.to_string();
        assert!(msg.contains("not bound to vfio-pci (it is bound to virtio-pci)"), "{msg}");
        assert!(msg.contains("devbind -b vfio-pci 0000:00:03.0"), "{msg}");
        let err = probe_with(&sysfs, &vfio, &allocator, FAKE_DRIVERS, "00:09.0".parse().unwrap()).err().unwrap();
        assert!(err.to_string().contains("does not exist"), "{err}");
    }
}
