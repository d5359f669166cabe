//! PCI probing: find the devices to use (those named with `-a`, or with no `-a` every device bound to vfio-pci that
//! a registered driver supports, minus `-b`, as DPDK scans), the driver the application registered for each ID, and
//! give that driver what it needs to open the device through VFIO, with the device arguments given after the
//! address ([`PciProbe`], see [`pktio::driver`]).

use std::path::Path;

use drvkit::pci::{PciAddress, PciDevice, Sysfs};
use drvkit::vfio::{Vfio, VfioConfig};
use hugepage::{Allocator, IovaMode};
use pktio::devargs::Devargs;
use pktio::driver::Registry;
use pktio::EthDev;

use crate::{Error, Result};

pub use drvkit::pci::PciId;
pub use pktio::driver::{PciDriver, PciProbe};

/// Reads a device's IDs from sysfs under `root` (normally `/sys`).
pub fn read_pci_id(root: &Path, addr: PciAddress) -> Result<PciId> {
    let sysfs = Sysfs::new(root, "/proc");
    match sysfs.device(addr) {
        Ok(dev) => Ok(dev.id),
        Err(e) => Err(Error::Pci(e.to_string())),
    }
}

/// The "no driver" message: the device, its ID, and what this build supports.
fn unsupported(dev: &PciDevice, registry: &Registry) -> Error {
    let supported = if registry.pci_drivers().is_empty() {
        "no PCI driver is registered in this application (it registers them with eal::init_with, e.g. \
         pmds::registry()); without one, use --vdev"
            .to_string()
    } else {
        registry.describe_pci()
    };
    Error::Pci(format!("no driver for PCI device {} ({}); supported: {supported}", dev.address, dev.id))
}

/// The kernel driver a device must be bound to for this EAL to use it (in IOMMU and no-IOMMU mode alike).
pub const USERSPACE_DRIVER: &str = "vfio-pci";

/// What DPDK probes when no `-a` is given: every PCI device bound to vfio-pci whose ID a driver of `registry`
/// supports, except those in `block`, in address order. Devices bound to a kernel driver are left alone (DPDK
/// skips them too: it cannot map a device the kernel owns).
pub fn scan(sysfs: &Sysfs, registry: &Registry, block: &[PciAddress]) -> Result<Vec<PciAddress>> {
    let dir = sysfs.root().join("bus/pci/devices");
    // No PCI bus (a container without /sys/bus/pci): nothing to probe, as DPDK finds nothing there either.
    let Ok(entries) = std::fs::read_dir(&dir) else { return Ok(Vec::new()) };
    let mut found: Vec<PciAddress> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<PciAddress>().ok())
        .filter(|a| !block.contains(a))
        // A device whose sysfs entry cannot be read is one this EAL could not use: skip it, not the whole scan.
        .filter_map(|a| sysfs.device(a).ok())
        .filter(|d| d.driver.as_deref() == Some(USERSPACE_DRIVER))
        .filter(|d| registry.pci_driver_for(d.id).is_some())
        .map(|d| d.address)
        .collect();
    found.sort();
    Ok(found)
}

/// Opens the device at `addr` with the driver `registry` has for its ID, reading sysfs from `sysfs` and opening it
/// through `vfio`; the driver gets `devargs` (from `-a ADDRESS,key=value`; [`Devargs::empty`] for none).
pub fn probe_with(
    sysfs: &Sysfs,
    vfio: &Vfio,
    allocator: &Allocator,
    registry: &Registry,
    addr: PciAddress,
    devargs: &Devargs,
) -> Result<Box<dyn EthDev>> {
    let device = sysfs.device(addr).map_err(|e| Error::Pci(e.to_string()))?;
    let Some(driver) = registry.pci_driver_for(device.id) else {
        return Err(unsupported(&device, registry));
    };
    let ctx = PciProbe::new(device, allocator, vfio).with_devargs(devargs.clone().for_driver(driver.name));
    Ok((driver.probe)(&ctx)?)
}

/// The PCI ports [`open_ports`] opened, and the scanned devices it had to leave out.
pub struct OpenedPorts {
    /// Opened devices, in probe order.
    pub ports: Vec<(PciAddress, Box<dyn EthDev>)>,
    /// Devices found by scanning (no `-a`) that could not be opened, with why.
    pub skipped: Vec<(PciAddress, Error)>,
}

/// Opens the PCI devices `config` asks for: those given with `-a` (each must open), or with no `-a` those
/// [`scan`] finds, where one that cannot be opened (held by a VM or another process) is left out, as DPDK does.
pub fn open_ports(
    sysfs: &Sysfs,
    vfio: &Vfio,
    allocator: &Allocator,
    registry: &Registry,
    config: &crate::EalConfig,
) -> Result<OpenedPorts> {
    let mut out = OpenedPorts { ports: Vec::new(), skipped: Vec::new() };
    if config.no_pci {
        return Ok(out);
    }
    if !config.allow.is_empty() {
        for d in &config.allow {
            out.ports.push((d.address, probe_with(sysfs, vfio, allocator, registry, d.address, &d.devargs)?));
        }
        return Ok(out);
    }
    // Nothing to scan for without a PCI driver (and no need to read sysfs).
    if registry.pci_drivers().is_empty() {
        return Ok(out);
    }
    for addr in scan(sysfs, registry, &config.block)? {
        let devargs = Devargs::empty(&addr.to_string());
        match probe_with(sysfs, vfio, allocator, registry, addr, &devargs) {
            Ok(dev) => out.ports.push((addr, dev)),
            Err(e) => out.skipped.push((addr, e)),
        }
    }
    Ok(out)
}

/// Opens the device at `addr` with the driver `registry` has for its ID, through `vfio`, from the real `/sys`.
pub fn probe(
    addr: PciAddress,
    devargs: &Devargs,
    allocator: &Allocator,
    vfio: &Vfio,
    registry: &Registry,
) -> Result<Box<dyn EthDev>> {
    probe_with(&Sysfs::system(), vfio, allocator, registry, addr, devargs)
}

/// The VFIO entry point for an IOVA mode (the EAL makes one per process).
pub fn vfio_for(iova_mode: IovaMode) -> Vfio {
    Vfio::new(VfioConfig::with_iova_mode(iova_mode))
}

#[cfg(test)]
mod tests {
    use super::*;
    use drvkit::pci::fake::{FakeDevice, FakeSysfs};

    #[test]
    fn reads_ids_from_a_fake_sysfs_and_reports_missing_devices() {
        let fake = FakeSysfs::new("eal-pci");
        fake.add_device(&FakeDevice::net("0000:01:00.0", 0x8086, 0x1528));
        let addr: PciAddress = "0000:01:00.0".parse().unwrap();
        assert_eq!(read_pci_id(&fake.root(), addr).unwrap(), PciId { vendor: 0x8086, device: 0x1528 });
        let missing: PciAddress = "0000:02:00.0".parse().unwrap();
        assert!(read_pci_id(&fake.root(), missing).unwrap_err().to_string().contains("lspci"));
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
            std::sync::Arc::new(drvkit::vfio::fake::FakeVfio::new()),
            sysfs.clone(),
            VfioConfig::default(),
        );
        let allocator = Allocator::no_huge();
        let registry = Registry::new().with_pci(FAKE_DRIVERS);
        let none = Devargs::empty("test");
        let probe =
            |addr: &str| probe_with(&sysfs, &vfio, &allocator, &registry, addr.parse().unwrap(), &none).err().unwrap();
        let err = probe("00:02.0");
        let msg = err.to_string();
        assert!(msg.contains("no driver for PCI device 0000:00:02.0 (8086:10c9)"), "{msg}");
        assert!(msg.contains("supported: net_fake (1af4:1041)"), "{msg}");
        // The driver is found and its VFIO open fails with the fix.
        let err = probe("00:03.0");
        let msg = err.to_string();
        assert!(msg.contains("not bound to vfio-pci (it is bound to virtio-pci)"), "{msg}");
        assert!(msg.contains("devbind -b vfio-pci 0000:00:03.0"), "{msg}");
        let err = probe("00:09.0");
        assert!(err.to_string().contains("does not exist"), "{err}");
        // With no driver registered, the message says how an application gets one.
        let err =
            probe_with(&sysfs, &vfio, &allocator, &Registry::new(), "00:03.0".parse().unwrap(), &none).err().unwrap();
        let msg = err.to_string();
        assert!(msg.contains("no driver for PCI device 0000:00:03.0 (1af4:1041)"), "{msg}");
        assert!(msg.contains("eal::init_with"), "{msg}");
    }

    /// Records the devargs its probe was given, then fails (the fake device cannot be opened).
    fn devargs_probe(ctx: &PciProbe<'_>) -> pktio::Result<Box<dyn EthDev>> {
        ctx.devargs().check_keys(&["rxq_hint"])?;
        Err(ctx.devargs().error(format!(
            "reached the driver as {:?} with {:?}",
            ctx.devargs().driver,
            ctx.devargs().args
        )))
    }

    static DEVARGS_DRIVERS: &[PciDriver] =
        &[PciDriver { name: "net_fake", ids: &[PciId::new(0x1af4, 0x1041)], probe: devargs_probe }];

    #[test]
    fn devargs_after_the_address_reach_the_driver() {
        let fake = FakeSysfs::new("eal-devargs");
        fake.add_device(&FakeDevice::net("0000:00:03.0", 0x1af4, 0x1041).driver("vfio-pci").iommu_group(3));
        let sysfs = fake.sysfs();
        let vfio = Vfio::with_parts(
            std::sync::Arc::new(drvkit::vfio::fake::FakeVfio::new()),
            sysfs.clone(),
            VfioConfig::default(),
        );
        let registry = Registry::new().with_pci(DEVARGS_DRIVERS);
        let allocator = Allocator::no_huge();
        let open = |text: &str| {
            let (addr, args) = Devargs::parse_pci(text).unwrap();
            probe_with(&sysfs, &vfio, &allocator, &registry, addr, &args).err().unwrap().to_string()
        };
        let msg = open("0000:00:03.0,rxq_hint=4");
        assert!(msg.contains(r#"reached the driver as "net_fake" with [("rxq_hint", "4")]"#), "{msg}");
        let msg = open("00:03.0,bogus=1");
        assert!(msg.contains(r#"unknown argument "bogus"; net_fake takes: rxq_hint"#), "{msg}");
    }

    #[test]
    fn scanning_finds_vfio_bound_supported_devices_minus_the_block_list() {
        let fake = FakeSysfs::new("eal-scan");
        fake.add_device(&FakeDevice::net("0000:00:05.0", 0x1af4, 0x1041).driver("vfio-pci").iommu_group(5));
        fake.add_device(&FakeDevice::net("0000:00:03.0", 0x1af4, 0x1041).driver("vfio-pci").iommu_group(3));
        // Supported but owned by the kernel: left alone.
        fake.add_device(&FakeDevice::net("0000:00:04.0", 0x1af4, 0x1041).driver("virtio-pci").iommu_group(4));
        // Bound to vfio-pci but no registered driver claims it.
        fake.add_device(&FakeDevice::net("0000:00:06.0", 0x8086, 0x10c9).driver("vfio-pci").iommu_group(6));
        // Blocked with -b.
        fake.add_device(&FakeDevice::net("0000:00:07.0", 0x1af4, 0x1041).driver("vfio-pci").iommu_group(7));
        let registry = Registry::new().with_pci(FAKE_DRIVERS);
        let block: Vec<PciAddress> = vec!["00:07.0".parse().unwrap()];
        let found = scan(&fake.sysfs(), &registry, &block).unwrap();
        let found: Vec<String> = found.iter().map(|a| a.to_string()).collect();
        assert_eq!(found, ["0000:00:03.0", "0000:00:05.0"]);
        assert!(scan(&fake.sysfs(), &Registry::new(), &[]).unwrap().is_empty(), "no driver, nothing to probe");
        // A sysfs without a PCI bus: nothing to probe, not an error.
        let empty = drvkit::pci::Sysfs::new(std::env::temp_dir().join("eal-scan-no-such-root"), "/proc");
        assert!(scan(&empty, &registry, &[]).unwrap().is_empty());
    }

    /// Opens a null port for devices on bus 0 slot 3, fails for the others (a device held elsewhere).
    fn picky_probe(ctx: &PciProbe<'_>) -> pktio::Result<Box<dyn EthDev>> {
        if ctx.address().to_string().starts_with("0000:00:03.") {
            swports::open_vdev(&format!("net_null{}", ctx.address().function))
        } else {
            ctx.open_vfio()?;
            unreachable!("the fake VFIO has no group for it")
        }
    }

    static PICKY: &[PciDriver] =
        &[PciDriver { name: "net_picky", ids: &[PciId::new(0x1af4, 0x1041)], probe: picky_probe }];

    #[test]
    fn scanned_devices_that_cannot_open_are_skipped_but_allowed_ones_must_open() {
        let fake = FakeSysfs::new("eal-open-ports");
        fake.add_device(&FakeDevice::net("0000:00:03.0", 0x1af4, 0x1041).driver("vfio-pci").iommu_group(3));
        fake.add_device(&FakeDevice::net("0000:00:04.0", 0x1af4, 0x1041).driver("vfio-pci").iommu_group(4));
        fake.add_device(&FakeDevice::net("0000:00:03.1", 0x1af4, 0x1041).driver("vfio-pci").iommu_group(5));
        let sysfs = fake.sysfs();
        let vfio = Vfio::with_parts(
            std::sync::Arc::new(drvkit::vfio::fake::FakeVfio::new()),
            sysfs.clone(),
            VfioConfig::default(),
        );
        let allocator = Allocator::no_huge();
        let registry = Registry::new().with_pci(PICKY);
        let config = |line: &str| {
            let args: Vec<String> = line.split_whitespace().map(String::from).collect();
            crate::args::parse(&args, &[0]).unwrap().0
        };
        // No -a: both 00:03.x open, in address order; 00:04.0 is skipped with its reason.
        let opened = open_ports(&sysfs, &vfio, &allocator, &registry, &config("-l 0")).unwrap();
        let names: Vec<String> = opened.ports.iter().map(|(a, _)| a.to_string()).collect();
        assert_eq!(names, ["0000:00:03.0", "0000:00:03.1"]);
        assert_eq!(opened.skipped.len(), 1);
        assert_eq!(opened.skipped[0].0.to_string(), "0000:00:04.0");
        // -b leaves a device out of the scan.
        let opened = open_ports(&sysfs, &vfio, &allocator, &registry, &config("-l 0 -b 00:03.1")).unwrap();
        assert_eq!(opened.ports.len(), 1);
        // Asked for with -a, the same device is an error.
        assert!(open_ports(&sysfs, &vfio, &allocator, &registry, &config("-l 0 -a 00:04.0")).is_err());
        let opened = open_ports(&sysfs, &vfio, &allocator, &registry, &config("-l 0 -a 00:03.1")).unwrap();
        assert_eq!(opened.ports.len(), 1);
        // --no-pci: nothing.
        assert!(open_ports(&sysfs, &vfio, &allocator, &registry, &config("-l 0 --no-pci")).unwrap().ports.is_empty());
    }
}
