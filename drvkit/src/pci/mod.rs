//! PCI identity and binding, from sysfs.
//!
//! - [`PciAddress`]: addresses as users type them (`0000:01:00.0`, `01:00.0`).
//! - [`Sysfs`]: devices found under `/sys/bus/pci/devices` (IDs, class, NUMA node, driver, IOMMU group, BARs,
//!   network interfaces) and the binding operations (`unbind`, `driver_override`, `drivers_probe`), always
//!   against a root directory so that tests run against a fake tree ([`fake::FakeSysfs`]).
//! - [`ConfigSpace`]: typed access to a function's configuration space (command register, bus mastering,
//!   capability lists) over any byte-level backend: a VFIO config region, or memory in tests and models.
//!
//! The `devbind` and `pktio-doctor` tools built on these are in the `tools` crate.
//!
//! ```no_run
//! use drvkit::pci::{PciAddress, Sysfs};
//! let sysfs = Sysfs::system();
//! let addr: PciAddress = "0000:01:00.0".parse()?;
//! let dev = sysfs.device(addr)?;
//! println!("{} {} driver={:?} group={:?}", dev.address, dev.id, dev.driver, dev.iommu_group);
//! sysfs.bind(addr, "vfio-pci")?; // driver_override + unbind + drivers_probe
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod address;
pub mod config;
mod error;
pub mod fake;
mod sysfs;

pub use address::{PciAddress, PciAddressError};
pub use config::{Capability, ConfigSpace};
pub use error::PciError;
pub use sysfs::{is_userspace_driver, InterfaceState, PciDevice, PciId, Resource, Sysfs, WriteHook};
