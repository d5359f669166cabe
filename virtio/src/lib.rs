//! virtio-net poll-mode driver (virtio 1.x, modern PCI) over VFIO, in the spirit of DPDK's virtio PMD.
//!
//! - [`regs`]: the vendor capabilities of a modern virtio PCI function, the common configuration, notifications
//!   and the virtio-net configuration, behind sized volatile accessors ([`regs::RegisterSpace`]).
//! - [`desc`]: split-virtqueue descriptors, ring layouts and the 12-byte `virtio_net_hdr_v1`, size-checked.
//! - [`virtqueue`]: the driver side of a split virtqueue (and a device side for tests and models).
//! - [`PCI_DRIVERS`]: `net_virtio`, for an application's [`pktio::driver::Registry`].
//!
//! Interrupts, vectors from VFIO (`open_vfio`) or [`VirtioNet::set_irq_source`]: RX queue interrupts
//! (`intr_conf.rxq`, DPDK's RX-interrupt API), RX queue q on MSI-X vector 1 + q through `queue_msix_vector`, armed
//! and disarmed through the available ring's suppression ([`rxtx`]); link changes (`intr_conf.lsc`, with
//! VIRTIO_NET_F_STATUS) on vector 0 through `config_msix_vector`. Each mapping is read back: a device answering
//! NO_VECTOR is refused.
//!
//! Not supported: legacy (0.9.5) and transitional I/O-port devices, packed virtqueues, TX and control queue
//! interrupts, INTx, TSO/GSO, RSS (VIRTIO_NET_F_RSS), VLAN filtering.

#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

pub mod desc;
pub mod dev;
mod error;
pub mod regs;
pub mod rxtx;
pub mod virtqueue;

pub use dev::{open_vfio, Transport, VirtioNet, DRIVER_NAME};
pub use error::{Error, Result};
pub use rxtx::{VirtioRxQueue, VirtioTxQueue};

use drvkit::pci::PciId;
use pktio::driver::{PciDriver, PciProbe};
use pktio::EthDev;

/// The PCI driver of this crate: virtio-net (`1af4:1041` modern, and `1af4:1000` transitional through its modern
/// interface, as DPDK's virtio PMD claims both).
pub static PCI_DRIVERS: &[PciDriver] = &[VIRTIO_DRIVER];

/// The virtio-net driver. Device arguments: none (DPDK's `vdpa`, `speed` and `vectorized` select features this driver
/// does not have), so any key is refused before the device is touched.
pub const VIRTIO_DRIVER: PciDriver = PciDriver {
    name: DRIVER_NAME,
    ids: &[
        PciId::new(dev::VENDOR_ID, dev::DEVICE_ID_NET_MODERN),
        PciId::new(dev::VENDOR_ID, dev::DEVICE_ID_NET_TRANSITIONAL),
    ],
    devargs: &[],
    probe: probe_virtio,
};

/// virtio-net through the application's VFIO container and DMA memory.
fn probe_virtio(ctx: &PciProbe<'_>) -> pktio::Result<Box<dyn EthDev>> {
    Ok(Box::new(open_vfio(ctx.vfio(), ctx.address(), ctx.allocator().clone())?))
}
