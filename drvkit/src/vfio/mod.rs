//! Devices through VFIO: the kernel's safe way to hand a PCI function to user space, with the IOMMU confining its
//! DMA to memory we map.
//!
//! ```no_run
//! use hugepage::{Allocator, DmaConfig, IovaMode};
//! use drvkit::bar::RegisterSpace;
//! use drvkit::dma::DmaMapper;
//! use drvkit::pci::ConfigSpace;
//! use drvkit::vfio::{Vfio, VfioConfig};
//!
//! let vfio = Vfio::new(VfioConfig::default());                // IOVA = VA, IOMMU required
//! let dev = vfio.open_device("0000:00:02.0".parse()?)?;        // container, group, device fd
//! let _ = dev.reset();                                         // when the device supports it
//! let bar0 = dev.map_bar(0)?;                                  // a RegisterSpace for the driver
//! dev.set_bus_master(true)?;                                   // vfio-pci leaves DMA off
//! let ring = std::sync::Arc::new(Allocator::new(DmaConfig::default())?.allocate(64 << 10)?);
//! let mapping = dev.container().map(&ring)?;                   // the device may use ring.iova_at(..) until
//!                                                              // `mapping` drops; it keeps `ring` alive
//! let ctrl = bar0.read32(0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The pieces, bottom up:
//! - [`sys::VfioSys`]: the syscall seam (open/ioctl/pread/pwrite/mmap/close/eventfd); [`sys::RealSys`] is the
//!   kernel and [`fake::FakeVfio`] a scripted one for tests.
//! - [`Container`]: `/dev/vfio/vfio`, API version, backend (type1v2, type1, or no-IOMMU only when the user opted
//!   in with `--iova-mode pa`), IOMMU info (page sizes, usable IOVA ranges), DMA mapping of
//!   [`hugepage::DmaMemory`] with range checks (never the MSI window 0xfee00000-0xfeefffff) as the
//!   [`crate::dma::DmaMapper`] seam: counted guards that own the memory they map.
//! - [`Group`]: `/dev/vfio/N` (or `noiommu-N`), viability, attachment to the container.
//! - [`VfioDevice`]: device info, regions (sparse mmap capability), BARs as [`VfioBar`] (a
//!   [`crate::bar::RegisterSpace`]), config space ([`crate::pci::ConfigSpace`]), reset, MSI-X eventfds.
//!
//! Every failure says what to do: load vfio-pci, enable the IOMMU on the kernel command line, bind the device
//! (`devbind -b vfio-pci ADDR`), bind the rest of its IOMMU group, close the process holding the group, raise the
//! locked-memory limit. Hugepage shortages come from [`hugepage`] with the command that reserves them.
//!
//! Not supported: IOMMUFD/cdev (`/dev/vfio/devices/*`), hot reset of a group, the VFIO migration and dirty
//! tracking interfaces, SR-IOV VF tokens, platform (non-PCI) devices.

#![warn(missing_docs)]

pub mod bindings;
mod container;
mod device;
mod error;
pub mod fake;
pub mod sys;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use hugepage::IovaMode;

pub use container::{parse_iommu_info, Container, Group, IommuInfo, IommuMode, IovaRange, MSI_WINDOW};
pub use device::{
    parse_region_info, DeviceInfo, EventFd, IrqInfo, RegionInfo, SparseArea, VfioBar, VfioDevice, CONFIG_REGION,
    INTX_IRQ, MSIX_IRQ, MSI_IRQ,
};
pub use error::{Result, VfioError};

use crate::pci::{PciAddress, Sysfs};
use sys::{RealSys, VfioSys};

/// How to reach VFIO.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VfioConfig {
    /// `Va` (default): an IOMMU is required, IOVA = virtual address. `Pa`: the user accepts VFIO's no-IOMMU mode
    /// (`/dev/vfio/noiommu-N`, physical addresses, no protection); with an IOMMU present, IOVA = physical address.
    pub iova_mode: IovaMode,
    /// Where the VFIO nodes are (`/dev/vfio`).
    pub dev_dir: PathBuf,
}

impl Default for VfioConfig {
    fn default() -> Self {
        VfioConfig { iova_mode: IovaMode::Va, dev_dir: PathBuf::from("/dev/vfio") }
    }
}

impl VfioConfig {
    /// The defaults with this IOVA mode.
    pub fn with_iova_mode(iova_mode: IovaMode) -> Self {
        VfioConfig { iova_mode, ..Default::default() }
    }
}

/// The entry point: opens devices, all in one shared [`Container`] (one IOMMU address space per process, as DPDK
/// does), so DMA memory mapped once serves every device.
pub struct Vfio {
    sys: Arc<dyn VfioSys>,
    sysfs: Sysfs,
    config: VfioConfig,
    container: Mutex<Option<Arc<Container>>>,
}

impl std::fmt::Debug for Vfio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vfio").field("config", &self.config).field("sysfs", &self.sysfs).finish()
    }
}

impl Vfio {
    /// The real kernel, `/sys`, and `config`.
    pub fn new(config: VfioConfig) -> Self {
        Vfio::with_parts(RealSys::shared(), Sysfs::system(), config)
    }

    /// Chosen system calls and sysfs (tests: [`fake::FakeVfio`] and [`crate::pci::fake::FakeSysfs`]).
    pub fn with_parts(sys: Arc<dyn VfioSys>, sysfs: Sysfs, config: VfioConfig) -> Self {
        Vfio { sys, sysfs, config, container: Mutex::new(None) }
    }

    /// The configuration.
    pub fn config(&self) -> &VfioConfig {
        &self.config
    }

    /// The sysfs it reads devices from.
    pub fn sysfs(&self) -> &Sysfs {
        &self.sysfs
    }

    /// The shared container, opened on first use.
    pub fn container(&self) -> Result<Arc<Container>> {
        let mut slot = self.container.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let c = Container::open(self.sys.clone(), &self.config.dev_dir)?;
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Opens the device at `addr`: checks it is bound to vfio-pci, finds its IOMMU group in sysfs, opens and
    /// attaches the group (choosing the IOMMU backend with the first one), and gets the device fd.
    pub fn open_device(&self, addr: PciAddress) -> Result<VfioDevice> {
        let dev = self.sysfs.device(addr)?;
        let Some(group) = dev.iommu_group else {
            if dev.driver.as_deref() != Some("vfio-pci") && (self.sysfs.iommu_enabled() || self.sysfs.noiommu_enabled())
            {
                return Err(VfioError::NotBound { addr, driver: dev.driver });
            }
            return Err(VfioError::NoIommuGroup { addr, driver: dev.driver });
        };
        if dev.driver.as_deref() != Some("vfio-pci") {
            return Err(VfioError::NotBound { addr, driver: dev.driver });
        }
        let container = self.container()?;
        let allow_noiommu = self.config.iova_mode == IovaMode::Pa;
        let group = container.group(group, addr, &self.sysfs, allow_noiommu)?;
        VfioDevice::open(group, addr)
    }
}
