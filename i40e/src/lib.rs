//! A pure-Rust poll-mode driver for the physical function (PF) of Intel's 700-series Ethernet controllers: X710
//! (10G), XL710 (40G), XXV710 (25G) and X710-T, every PCI ID of the XL710 MAC type (docs/hw/i40e.md §1).
//!
//! Where ixgbe is configured through registers, the 700 series is configured mostly by asking its firmware through
//! the admin queue, and a queue's state lives in a context object in host memory that the device reads through
//! its Host Memory Cache. The driver reads identity, MAC address, capabilities, queue counts and firmware/API
//! versions from the device and assumes none of them.
//!
//! The driver is generic over its register space ([`drvkit::bar::RegisterSpace`]): the same code runs against a
//! VFIO-mapped BAR (IOMMU or no-IOMMU) or a behavioural model's registers. DMA memory (admin-queue rings and
//! buffers, HMC backing pages, descriptor rings) comes from a [`hugepage::Allocator`] and is made reachable through
//! a [`drvkit::dma::DmaMapper`].
//!
//! - [`regs`]: typed registers, named as in docs/hw/i40e.md.
//! - [`adminq`]: the admin queue (send and receive rings, direct and indirect commands) and, in
//!   [`adminq::cmds`], every command as a typed byte layout.
//! - [`hmc`]: the LAN HMC (FPM layout, direct or paged backing, segment descriptors) and the bit-exact TX and RX
//!   queue contexts.
//! - [`queue`]: queue enable and disable with the pre-disable and request/status handshakes.
//! - [`desc`], [`rxtx`]: the hot path: 32-byte RX descriptors (multi-buffer frames, bulk refill) on the shared RX
//!   engine, 16-byte TX data descriptors with RS batching and the malicious-driver-detection limits on the shared
//!   TX core.
//! - [`stats`]: the 48- and 32-bit port and VSI counters, wrap-safe.
//! - [`dev`]: bring-up and [`I40e`], which implements [`pktio::EthDev`].
//! - `testing` (cargo feature `testing`): a fake register space with a scripted firmware, for tests and the benchmark (not a model).
//! - [`PCI_DRIVERS`]: `net_i40e`, for an application's [`pktio::driver::Registry`].
//! - `sim` (feature `sim`, off by default): `net_sim_x710`, this driver on the behavioural X710 model of `nicsim`,
//!   for simports' model list; a production build carries no model.
//!
//! ```no_run
//! # fn demo(bar: std::sync::Arc<drvkit::bar::MmioBar>, pool: mempool::Mempool) -> pktio::Result<()> {
//! use pktio::{EthDev, PortConfig, RxQueue, TxQueue, TypedQueues};
//! let mapper = std::sync::Arc::new(drvkit::dma::IdentityMapper);
//! let mut port = i40e::I40e::new(bar, mapper, hugepage::Allocator::no_huge(), i40e::Options::new("0000:3b:00.0"))?;
//! port.configure(&PortConfig::default())?;
//! port.start(&pool)?;
//! let (mut rx, mut tx) = (port.rx_queue_typed(0)?, port.tx_queue_typed(0)?);
//! let mut batch = mempool::PacketBatch::new();
//! rx.rx_burst(&mut batch);
//! tx.tx_burst(&mut batch);
//! # Ok(()) }
//! ```
//!
//! TSO takes packets of at most 8 buffers (so that no segment the NIC cuts spans more than the 8 descriptors
//! malicious-driver detection allows); longer chains are dropped as errors rather than linearised.
//!
//! Receive VLAN filtering (`vlan_filter`) uses MAC + VLAN perfect filters (docs/hw/i40e.md §6.7); the VSI VLAN
//! commands 0x0252/0x0253 are not used.
//!
//! Not supported (yet): VLAN stripping, multicast address lists (use all-multicast), the flow director (its queue is
//! left alone when present), DCB and more than one TC, SR-IOV and VFs, the X722, interrupts (everything is polled),
//! the admin-queue RSS commands (the X710/XL710/XXV710 use the registers), NVM access, LLDP agent control.

#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

pub mod adminq;
pub mod desc;
pub mod dev;
mod error;
pub mod hmc;
pub mod queue;
pub mod regs;
pub mod rxtx;
#[cfg(any(test, feature = "sim"))]
pub mod sim;
pub mod stats;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use dev::{
    max_speed_of, open_vfio, I40e, I40eRxQueue, I40eTxQueue, Identity, MainVsi, Options, Timing, PCI_IDS,
    PHY_ABILITIES_ATTEMPTS, RX_CTL_ATTEMPTS,
};
pub use error::Error;

use drvkit::pci::PciId;
use pktio::driver::{PciDriver, PciProbe};
use pktio::EthDev;

/// The PCI driver of this crate: `net_i40e`, IDs from [`PCI_IDS`].
pub static PCI_DRIVERS: &[PciDriver] = &[I40E_DRIVER];

/// The 700-series PF driver. Device arguments: none. DPDK's i40e keys select features this driver does not have
/// (VF queue counts, flow-director and DDP tweaks, the vector-path switch), so any key is refused before the device
/// is touched rather than silently ignored.
pub const I40E_DRIVER: PciDriver = PciDriver { name: "net_i40e", ids: &I40E_IDS, devargs: &[], probe: probe_i40e };

/// [`PCI_IDS`] without the speeds, built at compile time so there is one table to edit.
const I40E_IDS: [PciId; PCI_IDS.len()] = drvkit::pci_ids_of!(PCI_IDS);

/// A 700-series PF through the application's VFIO container and DMA memory.
fn probe_i40e(ctx: &PciProbe<'_>) -> pktio::Result<Box<dyn EthDev>> {
    Ok(Box::new(open_vfio(ctx.vfio(), ctx.address(), ctx.allocator().clone())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pci_driver_claims_every_id_of_the_id_table() {
        let r = pktio::driver::Registry::new().with_pci(PCI_DRIVERS);
        for &(vendor, device, _) in PCI_IDS {
            assert_eq!(r.pci_driver_for(PciId::new(vendor, device)).map(|d| d.name), Some("net_i40e"));
        }
        assert_eq!(r.pci_driver_for(PciId::new(0x8086, 0x1572)).map(|d| d.name), Some("net_i40e"), "X710 SFP+");
        assert!(r.pci_driver_for(PciId::new(0x8086, 0x37D0)).is_none(), "X722: not this driver");
        assert!(r.pci_driver_for(PciId::new(0x8086, 0x154C)).is_none(), "a VF: not this driver");
    }
}
