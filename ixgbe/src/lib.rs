//! A pure-Rust poll-mode driver for Intel X540 (and 82599/X520) 10 GbE NICs, and an 82576 (igb) variant that
//! shares its advanced-descriptor ring code.
//!
//! The driver is generic over its register space ([`drvkit::bar::RegisterSpace`]): the same code runs against a
//! VFIO-mapped BAR ([`drvkit::bar::MmioBar`]) or a behavioural model's registers. DMA memory for the rings comes
//! from a [`hugepage::Allocator`] and is made reachable through a [`drvkit::dma::DmaMapper`] (the IOMMU on
//! hardware, the model's IOVA map in tests); the mempool the port is started with is mapped the same way. Each
//! ring keeps its [`drvkit::dma::DmaMapping`] guards (its descriptor memory, the pool) and drops them only after its
//! queue is disabled; the guards own the memory, so nothing the device may reach is freed while mapped.
//!
//! - [`regs`]: typed registers (offsets, per-queue formulas, bits and fields named as in docs/hw/ixgbe.md).
//! - [`desc`]: advanced RX/TX descriptor formats.
//! - [`rxtx`]: the hot path, generic over a [`rxtx::Family`] (register layout and the few bits that differ).
//! - [`dev`]: bring-up, link, filters, MTU, RSS, statistics; [`Ixgbe`] implements [`pktio::EthDev`].
//! - [`igb`]: the 82576 (QEMU's `igb`) on the same rings.
//! - [`Error`]: device failures (a register that never settled, a blank NVM), carried inside
//!   [`pktio::Error::Driver`] so they can be told from bad arguments.
//! - [`PCI_DRIVERS`]: `net_ixgbe` and `net_igb`, for an application's [`pktio::driver::Registry`].
//!
//! - `sim` (feature `sim`, off by default): `net_sim_x540` and `net_sim_82599`, this driver on the behavioural
//!   X540 model of `nicsim`, for simports' model list. Without the feature this crate needs `nicsim` only for its
//!   tests, and a production build carries no model.
//!
//! ```no_run
//! # fn demo(bar: std::sync::Arc<drvkit::bar::MmioBar>, pool: mempool::Mempool) -> pktio::Result<()> {
//! use pktio::{EthDev, PortConfig, RxQueue, TxQueue, TypedQueues};
//! let allocator = hugepage::Allocator::no_huge();
//! let mapper = std::sync::Arc::new(drvkit::dma::IdentityMapper);
//! let mut port = ixgbe::Ixgbe::new(bar, mapper, allocator, ixgbe::Options::new("0000:01:00.0", ixgbe::MacType::X540))?;
//! port.configure(&PortConfig::default())?;
//! port.start(&pool)?;
//! let (mut rx, mut tx) = (port.rx_queue_typed(0)?, port.tx_queue_typed(0)?);
//! let mut batch = mempool::PacketBatch::new();
//! rx.rx_burst(&mut batch);
//! tx.tx_burst(&mut batch);
//! # Ok(()) }
//! ```
//!
//! Receive VLAN filtering (`vlan_filter`) uses the VFTA and VLNCTRL.VFE (docs/hw/ixgbe.md §10.3).
//!
//! RX queue and link-state interrupts (`intr_conf.rxq`/`lsc`, DPDK's RX-interrupt API) come as MSI-X vectors from
//! a [`drvkit::irq::IrqSource`]: the VFIO device in [`open_vfio`], the model's eventfds in `sim`; see
//! docs/hw/ixgbe.md §12.2.
//!
//! Not supported (yet): TSO, VLAN stripping, multicast address lists (use all-multicast), flow
//! director, DCB, SR-IOV, interrupts other than RX queues and LSC (TX completions, the other causes), 82599 SFP+ module handling and its link set-up
//! (AUTOC), the 82599 RX security-block errata sequence, RSC, header split.

#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

pub mod desc;
pub mod dev;
mod error;
pub mod igb;
pub mod regs;
pub mod rxtx;
#[cfg(any(test, feature = "sim"))]
pub mod sim;
pub mod stats;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use dev::{
    mac_type_of, media_of, open_vfio, Ixgbe, IxgbeFamily, IxgbeRxQueue, IxgbeTxQueue, MacType, Media, Options, Timing,
    PCI_IDS,
};
pub use error::Error;

use drvkit::pci::PciId;
use pktio::driver::{PciDriver, PciProbe};
use pktio::EthDev;

/// The PCI drivers of this crate: X540/82599 (`net_ixgbe`, IDs from [`PCI_IDS`]) and the 82576 (`net_igb`).
pub static PCI_DRIVERS: &[PciDriver] = &[IXGBE_DRIVER, igb::IGB_DRIVER];

/// The X540/82599 driver. Device arguments: none. DPDK's ixgbe keys tune features this driver does not have (SR-IOV,
/// fiber SDP3 handling), so any key is refused before the device is touched rather than silently ignored.
pub const IXGBE_DRIVER: PciDriver = PciDriver { name: "net_ixgbe", ids: &IXGBE_IDS, devargs: &[], probe: probe_ixgbe };

/// [`PCI_IDS`] without the MAC types, built at compile time so there is one table to edit.
const IXGBE_IDS: [PciId; PCI_IDS.len()] = drvkit::pci_ids_of!(PCI_IDS);

/// X540/82599 through the application's VFIO container and DMA memory.
fn probe_ixgbe(ctx: &PciProbe<'_>) -> pktio::Result<Box<dyn EthDev>> {
    Ok(Box::new(open_vfio(ctx.vfio(), ctx.address(), ctx.allocator().clone())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pci_drivers_claim_every_id_of_the_id_table() {
        let r = pktio::driver::Registry::new().with_pci(PCI_DRIVERS);
        assert_eq!(IXGBE_IDS.len(), PCI_IDS.len());
        for &(vendor, device, _) in PCI_IDS {
            assert_eq!(r.pci_driver_for(PciId::new(vendor, device)).map(|d| d.name), Some("net_ixgbe"));
        }
        assert_eq!(r.pci_driver_for(PciId::new(0x8086, 0x10c9)).map(|d| d.name), Some("net_igb"));
        assert!(r.pci_driver_for(PciId::new(0x8086, 0x10c8)).is_none());
    }
}
