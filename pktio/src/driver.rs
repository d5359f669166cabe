//! How driver crates make themselves known: each exports descriptors ([`PciDriver`] for PCI functions,
//! [`VdevDriver`] for virtual devices), and the application gathers the ones it wants in a [`Registry`] that it
//! hands to the EAL. The EAL therefore links no driver by name: a build carries exactly the drivers its registry
//! was given.
//!
//! A PCI driver's probe receives a [`PciProbe`]:
//!
//! ```no_run
//! use drvkit::dma::DmaMapper;
//!
//! fn probe(ctx: &pktio::driver::PciProbe) -> pktio::Result<Box<dyn pktio::EthDev>> {
//!     let dev = ctx.open_vfio()?;            // container + group + device fd, actionable errors
//!     let _bar = dev.map_bar(0)?;            // registers
//!     let rings = std::sync::Arc::new(ctx.allocator().allocate(64 << 10)?);
//!     let mapper = dev.container().clone();  // a drvkit::dma::DmaMapper for rings and mempools
//!     let _ring_map = mapper.map(&rings)?;   // a guard owning `rings`: keep it until the queue is disabled
//!     // ... reset, bring-up, then return the port:
//!     Err(pktio::Error::NotSupported { port: ctx.address().to_string(), driver: "net_mine", what: "this sketch" })
//! }
//! pub static PCI_DRIVERS: &[pktio::driver::PciDriver] =
//!     &[pktio::driver::PciDriver { name: "net_mine", ids: &[drvkit::pci::PciId::new(0x8086, 0x1528)], probe }];
//! ```

use hugepage::Allocator;

use crate::devargs::Devargs;
use crate::{EthDev, Result};
use drvkit::pci::{PciAddress, PciDevice, PciId};
use drvkit::vfio::{Vfio, VfioDevice};

/// What a PCI driver's probe function gets: the device as sysfs shows it, the application's DMA memory, VFIO, and
/// the device arguments given after the address (`-a 0000:01:00.0,key=value`). A driver checks those arguments
/// before it touches the device and rejects keys it does not know ([`Devargs::check_keys`]).
pub struct PciProbe<'a> {
    device: PciDevice,
    allocator: &'a Allocator,
    vfio: &'a Vfio,
    devargs: Devargs,
}

impl std::fmt::Debug for PciProbe<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PciProbe").field("device", &self.device).field("devargs", &self.devargs.raw).finish()
    }
}

impl<'a> PciProbe<'a> {
    /// A probe context without device arguments (the EAL makes these; tests and embedders may too).
    pub fn new(device: PciDevice, allocator: &'a Allocator, vfio: &'a Vfio) -> Self {
        let devargs = Devargs::empty(&device.address.to_string());
        PciProbe { device, allocator, vfio, devargs }
    }

    /// The same context with the device arguments `devargs` (from `-a ADDRESS,key=value`).
    pub fn with_devargs(mut self, devargs: Devargs) -> Self {
        self.devargs = devargs;
        self
    }

    /// The device arguments (none unless given after the address with `-a`).
    pub fn devargs(&self) -> &Devargs {
        &self.devargs
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
    pub fn open_vfio(&self) -> Result<VfioDevice> {
        Ok(self.vfio.open_device(self.device.address)?)
    }
}

/// Opens a PCI device for a driver.
pub type PciProbeFn = fn(&PciProbe<'_>) -> Result<Box<dyn EthDev>>;

/// A PCI poll-mode driver: its name, the IDs it claims, and how it opens a device.
pub struct PciDriver {
    /// Driver name (`net_ixgbe`), as `DevInfo::driver_name` reports it.
    pub name: &'static str,
    /// IDs it supports.
    pub ids: &'static [PciId],
    /// Opens a device.
    pub probe: PciProbeFn,
}

impl std::fmt::Debug for PciDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PciDriver").field("name", &self.name).field("ids", &self.ids).finish()
    }
}

/// Opens a driver-provided vdev: its ports (one `--vdev` may yield several), with DMA memory for rings.
pub type VdevOpen = fn(&Devargs, &Allocator) -> Result<Vec<Box<dyn EthDev>>>;

/// A virtual device provided by a driver crate (swports' software ports need no descriptor).
pub struct VdevDriver {
    /// Device-name prefix users type (`net_sim_x540`); an instance number may follow (`net_sim_x5401`).
    pub name: &'static str,
    /// Opens the device's ports.
    pub open: VdevOpen,
}

impl std::fmt::Debug for VdevDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VdevDriver").field("name", &self.name).finish()
    }
}

impl VdevDriver {
    /// True if `device_name` is this driver's name, optionally followed by an instance number. Matched on the whole
    /// name, since names like `net_sim_x540` end in digits that are not an instance number.
    pub fn matches(&self, device_name: &str) -> bool {
        device_name.strip_prefix(self.name).is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit()))
    }
}

/// The drivers an application was built with, in registration order (the first driver claiming a PCI ID or a
/// vdev name wins). Registering a driver name twice keeps the first registration, so overlapping lists are harmless.
#[derive(Clone, Default)]
pub struct Registry {
    pci: Vec<&'static PciDriver>,
    vdevs: Vec<&'static VdevDriver>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("pci", &self.pci.iter().map(|d| d.name).collect::<Vec<_>>())
            .field("vdevs", &self.vdev_names())
            .finish()
    }
}

impl Registry {
    /// No drivers (software ports only).
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds PCI drivers (a driver crate's `PCI_DRIVERS`).
    pub fn with_pci(mut self, drivers: &'static [PciDriver]) -> Self {
        self.add_pci(drivers);
        self
    }

    /// Adds virtual devices (a crate's `VDEV_DRIVERS`).
    pub fn with_vdevs(mut self, drivers: &'static [VdevDriver]) -> Self {
        self.add_vdevs(drivers);
        self
    }

    /// Adds PCI drivers in place.
    pub fn add_pci(&mut self, drivers: &'static [PciDriver]) {
        for d in drivers {
            if !self.pci.iter().any(|k| k.name == d.name) {
                self.pci.push(d);
            }
        }
    }

    /// Adds virtual devices in place.
    pub fn add_vdevs(&mut self, drivers: &'static [VdevDriver]) {
        for d in drivers {
            if !self.vdevs.iter().any(|k| k.name == d.name) {
                self.vdevs.push(d);
            }
        }
    }

    /// The PCI drivers, in registration order.
    pub fn pci_drivers(&self) -> &[&'static PciDriver] {
        &self.pci
    }

    /// The virtual devices, in registration order.
    pub fn vdev_drivers(&self) -> &[&'static VdevDriver] {
        &self.vdevs
    }

    /// Names of the registered virtual devices.
    pub fn vdev_names(&self) -> Vec<&'static str> {
        self.vdevs.iter().map(|d| d.name).collect()
    }

    /// The driver claiming PCI `id`, if any.
    pub fn pci_driver_for(&self, id: PciId) -> Option<&'static PciDriver> {
        self.pci.iter().copied().find(|d| d.ids.contains(&id))
    }

    /// The virtual device whose name `devargs` starts with, if any.
    pub fn vdev_driver_for(&self, devargs: &Devargs) -> Option<&'static VdevDriver> {
        self.vdevs.iter().copied().find(|d| d.matches(&devargs.name))
    }

    /// What this registry supports, for "no driver" messages: `net_a (8086:1528, ...); net_b (...)`.
    pub fn describe_pci(&self) -> String {
        let ids = |d: &PciDriver| d.ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
        self.pci.iter().map(|d| format!("{} ({})", d.name, ids(d))).collect::<Vec<_>>().join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn never_probe(_: &PciProbe<'_>) -> Result<Box<dyn EthDev>> {
        unreachable!("lookup tests do not probe")
    }

    /// Answers with the device name it was given, so the test sees that the lookup called it with the devargs.
    fn open_named(args: &Devargs, _: &Allocator) -> Result<Vec<Box<dyn EthDev>>> {
        Err(crate::Error::UnknownDriver { name: args.name.clone(), known: "opened".into() })
    }

    static A: &[PciDriver] = &[
        PciDriver { name: "net_a", ids: &[PciId::new(0x8086, 0x1528), PciId::new(0x8086, 0x10fb)], probe: never_probe },
        PciDriver { name: "net_b", ids: &[PciId::new(0x1af4, 0x1041)], probe: never_probe },
    ];
    // Claims an ID net_a already has, and repeats net_b's name.
    static B: &[PciDriver] = &[
        PciDriver { name: "net_c", ids: &[PciId::new(0x8086, 0x1528)], probe: never_probe },
        PciDriver { name: "net_b", ids: &[PciId::new(0x1234, 0x5678)], probe: never_probe },
    ];
    static V: &[VdevDriver] = &[VdevDriver { name: "net_sim_x540", open: open_named }];

    #[test]
    fn finds_pci_drivers_by_id_first_registration_wins() {
        let r = Registry::new().with_pci(A).with_pci(B);
        assert_eq!(r.pci_drivers().iter().map(|d| d.name).collect::<Vec<_>>(), ["net_a", "net_b", "net_c"]);
        assert_eq!(r.pci_driver_for(PciId::new(0x8086, 0x1528)).unwrap().name, "net_a");
        assert_eq!(r.pci_driver_for(PciId::new(0x1af4, 0x1041)).unwrap().name, "net_b");
        // net_b's second registration (with another ID) was dropped.
        assert!(r.pci_driver_for(PciId::new(0x1234, 0x5678)).is_none());
        assert!(Registry::new().pci_driver_for(PciId::new(0x8086, 0x1528)).is_none());
        assert_eq!(r.describe_pci(), "net_a (8086:1528, 8086:10fb); net_b (1af4:1041); net_c (8086:1528)");
    }

    #[test]
    fn finds_vdevs_by_whole_name_with_an_optional_instance_number() {
        let r = Registry::new().with_vdevs(V).with_vdevs(V);
        assert_eq!(r.vdev_names(), ["net_sim_x540"]);
        let find = |s: &str| r.vdev_driver_for(&Devargs::parse(s).unwrap()).map(|d| d.name);
        assert_eq!(find("net_sim_x540,ports=2"), Some("net_sim_x540"));
        assert_eq!(find("net_sim_x5401"), Some("net_sim_x540"));
        assert_eq!(find("net_sim_x540b"), None);
        assert_eq!(find("net_sim_x54"), None);
        assert_eq!(find("net_null0"), None);
        let d = r.vdev_driver_for(&Devargs::parse("net_sim_x5407").unwrap()).unwrap();
        match (d.open)(&Devargs::parse("net_sim_x5407").unwrap(), &Allocator::no_huge()) {
            Err(crate::Error::UnknownDriver { name, known }) => {
                assert_eq!((&*name, &*known), ("net_sim_x5407", "opened"))
            }
            other => panic!("the driver's open was not called with the devargs: {:?}", other.map(|p| p.len())),
        }
    }
}
