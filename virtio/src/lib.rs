//! virtio-net poll-mode driver (virtio 1.x, modern PCI) over VFIO, in the spirit of DPDK's virtio PMD.
//!
//! - [`regs`]: the vendor capabilities of a modern virtio PCI function, the common configuration, notifications
//!   and the virtio-net configuration, behind sized volatile accessors ([`regs::RegisterSpace`]).
//! - [`desc`]: split-virtqueue descriptors, ring layouts and the 12-byte `virtio_net_hdr_v1`, size-checked.
//! - [`virtqueue`]: the driver side of a split virtqueue (and a device side for tests and models).
//! - [`PCI_DRIVERS`]: `net_virtio`, for an application's [`pktio::driver::Registry`].
//!
//! Not supported: legacy (0.9.5) and transitional I/O-port devices, packed virtqueues, interrupts (the driver
//! polls), TSO/GSO, RSS (VIRTIO_NET_F_RSS), VLAN filtering.

#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

pub mod desc;
pub mod dev;
mod error;
pub mod regs;
pub mod rxtx;
pub mod virtqueue;

pub use dev::{open_vfio, probe, Transport, VirtioNet, DRIVER_NAME};
pub use error::{Error, Result};
pub use rxtx::{VirtioRxQueue, VirtioTxQueue};

use drvkit::pci::PciId;
use pktio::driver::{PciDriver, PciProbe};
use pktio::EthDev;

/// The PCI driver of this crate: modern virtio-net (`1af4:1041`).
pub static PCI_DRIVERS: &[PciDriver] = &[PciDriver {
    name: DRIVER_NAME,
    ids: &[PciId::new(dev::VENDOR_ID, dev::DEVICE_ID_NET_MODERN)],
    probe: probe_virtio,
}];

/// virtio-net through the application's VFIO container and DMA memory. Device arguments: none (DPDK's `vdpa`,
/// `speed` and `vectorized` select features this driver does not have), so any key is refused before the device is
/// touched.
fn probe_virtio(ctx: &PciProbe<'_>) -> pktio::Result<Box<dyn EthDev>> {
    ctx.devargs().clone().for_driver(DRIVER_NAME).check_keys(&[])?;
    Ok(Box::new(open_vfio(ctx.vfio(), ctx.address(), ctx.allocator().clone())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `-a ADDRESS,key=value` reaches the probe, which refuses a key it does not know before opening anything.
    #[test]
    fn the_probe_rejects_unknown_devargs_before_touching_the_device() {
        use drvkit::pci::fake::{FakeDevice, FakeSysfs};
        use drvkit::vfio::{Vfio, VfioConfig};
        let fake = FakeSysfs::new("virtio-devargs");
        fake.add_device(
            &FakeDevice::net("0000:00:04.0", dev::VENDOR_ID, dev::DEVICE_ID_NET_MODERN)
                .driver("vfio-pci")
                .iommu_group(4),
        );
        let sysfs = fake.sysfs();
        let device = sysfs.device("00:04.0".parse().unwrap()).unwrap();
        let fake_vfio = std::sync::Arc::new(drvkit::vfio::fake::FakeVfio::new());
        let vfio = Vfio::with_parts(fake_vfio.clone(), sysfs, VfioConfig::default());
        let allocator = hugepage::Allocator::no_huge();
        let driver = pktio::driver::Registry::new()
            .with_pci(PCI_DRIVERS)
            .pci_driver_for(PciId::new(dev::VENDOR_ID, dev::DEVICE_ID_NET_MODERN))
            .unwrap();
        let (_, devargs) = pktio::devargs::Devargs::parse_pci("0000:00:04.0,fiber_sdp3_no_tx_disable=1").unwrap();
        let ctx = PciProbe::new(device, &allocator, &vfio).with_devargs(devargs.for_driver(driver.name));
        let err = (driver.probe)(&ctx).err().unwrap().to_string();
        assert!(
            err.contains(&format!(
                "unknown argument \"fiber_sdp3_no_tx_disable\"; {} takes no device arguments",
                driver.name
            )),
            "{err}"
        );
        assert!(err.starts_with("-a \"0000:00:04.0,fiber_sdp3_no_tx_disable=1\": "), "{err}");
        assert_eq!(fake_vfio.state().open_fds(), 0, "nothing was opened");
        assert!(fake_vfio.state().ioctls.is_empty(), "no VFIO call was made");
    }
}
