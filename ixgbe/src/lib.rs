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
//! The behavioural models and the `net_sim_*` vdevs that run this driver on them live elsewhere (`nicsim`,
//! `simports`): this crate needs `nicsim` only for its tests.
//!
//! ```no_run
//! # fn demo(bar: std::sync::Arc<drvkit::bar::MmioBar>, pool: mempool::Mempool) -> pktio::Result<()> {
//! use pktio::{EthDev, PortConfig, RxQueue, TxQueue};
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
//! Not supported (yet): TSO, VLAN stripping, multicast address lists (use all-multicast), flow
//! director, DCB, SR-IOV, interrupts (everything is polled), 82599 SFP+ module handling and its link set-up
//! (AUTOC), the 82599 RX security-block errata sequence, RSC, header split.

#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

pub mod desc;
pub mod dev;
mod error;
pub mod igb;
pub mod regs;
pub mod rxtx;
pub mod stats;
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
pub static PCI_DRIVERS: &[PciDriver] = &[
    PciDriver { name: "net_ixgbe", ids: &IXGBE_IDS, probe: probe_ixgbe },
    PciDriver { name: "net_igb", ids: &[PciId::new(igb::PCI_ID.0, igb::PCI_ID.1)], probe: probe_igb },
];

/// [`PCI_IDS`] without the MAC types, built at compile time so there is one table to edit.
static IXGBE_IDS: [PciId; PCI_IDS.len()] = drvkit::pci_ids_of!(PCI_IDS);

/// Device arguments (`-a ADDRESS,key=value`) these drivers take: none. DPDK's ixgbe and igb keys tune features this
/// driver does not have (SR-IOV, fiber SDP3 handling), so any key is refused before the device is touched rather
/// than silently ignored.
const DEVARGS: &[&str] = &[];

/// X540/82599 through the application's VFIO container and DMA memory.
fn probe_ixgbe(ctx: &PciProbe<'_>) -> pktio::Result<Box<dyn EthDev>> {
    ctx.devargs().clone().for_driver("net_ixgbe").check_keys(DEVARGS)?;
    Ok(Box::new(open_vfio(ctx.vfio(), ctx.address(), ctx.allocator().clone())?))
}

/// 82576 (QEMU's igb) through VFIO, on the shared ring code.
fn probe_igb(ctx: &PciProbe<'_>) -> pktio::Result<Box<dyn EthDev>> {
    ctx.devargs().clone().for_driver("net_igb").check_keys(DEVARGS)?;
    Ok(Box::new(igb::open_vfio(ctx.vfio(), ctx.address(), ctx.allocator().clone())?))
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

    /// `-a ADDRESS,key=value` reaches the probe, which refuses a key it does not know before opening anything.
    #[test]
    fn the_probe_rejects_unknown_devargs_before_touching_the_device() {
        use drvkit::pci::fake::{FakeDevice, FakeSysfs};
        use drvkit::vfio::{Vfio, VfioConfig};
        let fake = FakeSysfs::new("ixgbe-devargs");
        fake.add_device(&FakeDevice::net("0000:00:04.0", 0x8086, 0x1528).driver("vfio-pci").iommu_group(4));
        let sysfs = fake.sysfs();
        let device = sysfs.device("00:04.0".parse().unwrap()).unwrap();
        let fake_vfio = std::sync::Arc::new(drvkit::vfio::fake::FakeVfio::new());
        let vfio = Vfio::with_parts(fake_vfio.clone(), sysfs, VfioConfig::default());
        let allocator = hugepage::Allocator::no_huge();
        let driver =
            pktio::driver::Registry::new().with_pci(PCI_DRIVERS).pci_driver_for(PciId::new(0x8086, 0x1528)).unwrap();
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
