//! A pure-Rust poll-mode driver for the physical function of Huawei's hinic3 family (SP6xx / SP670, PCI 19e5:0222;
//! docs/hw/hinic3.md §1), through VFIO with or without an IOMMU, or against a behavioural model's register spaces.
//!
//! hinic3 is configured by asking its management CPU: commands travel through the mailbox and their answers come back
//! on an asynchronous event queue in host memory that the driver polls (no interrupts, every MSI-X vector masked);
//! queue contexts and RSS tables travel through the command queue. Byte order is the trap (docs/hw/hinic3.md §0.1):
//! CSRs, the mailbox window, AEQ elements and command-queue data are big-endian per dword, handled in [`regs::BeRegs`],
//! [`mbox`], [`aeq`] and [`cmdq`] only; descriptors and management structures are little-endian.
//!
//! - [`regs`]: the cfg-BAR CSRs and [`regs::BeRegs`]; [`doorbell`]: the 64-bit doorbells.
//! - [`aeq`]: the polled event queues; [`mbox`]: the mailbox (DMA-mode send, or inline 48-byte segments when the
//!   firmware offers COMM feature bit 3; write-back, answer reassembly, event
//!   acknowledgements, typed [`Error::Mgmt`] / [`Error::MgmtTimeout`]); [`mgmt`]: every management command as a
//!   little-endian byte layout.
//! - [`cmdq`]: the command queue; [`ctx`]: SQ/RQ contexts and the big-endian command buffers (contexts, RSS table).
//! - [`desc`], [`rxtx`]: the hot path: compact and extended SQ WQEs (checksum, VLAN, TSO), normal RQ WQEs with
//!   separate 32-byte CQEs on the shared RX engine, multi-buffer (jumbo) frames, bulk refill, one doorbell per burst.
//! - [`dev`]: bring-up, start/stop/close and [`Hinic3`], which implements [`pktio::EthDev`]; [`stats`]: vport counters.
//! - `testing` (cargo feature `testing`): a fake doorbell BAR and a scripted firmware behind fake BARs, for tests and the benchmark (not a
//!   model).
//! - [`PCI_DRIVERS`]: `net_hinic3`, for an application's [`pktio::driver::Registry`].
//! - `sim` (feature `sim`, off by default): `net_sim_sp670`, this driver on the behavioural SP670 model of
//!   `nicsim`, for simports' model list; a production build carries no model.
//!
//! ```no_run
//! # fn demo(vfio: &drvkit::vfio::Vfio, pool: mempool::Mempool) -> pktio::Result<()> {
//! use pktio::{EthDev, PortConfig, RxQueue, TxQueue, TypedQueues};
//! let addr = "0000:3b:00.0".parse().unwrap();
//! let mut port = hinic3::open_vfio(vfio, addr, hugepage::Allocator::no_huge())?;
//! port.configure(&PortConfig::default())?;
//! port.start(&pool)?;
//! let (mut rx, mut tx) = (port.rx_queue_typed(0)?, port.tx_queue_typed(0)?);
//! let mut batch = mempool::PacketBatch::new();
//! rx.rx_burst(&mut batch);
//! tx.tx_burst(&mut batch);
//! # Ok(()) }
//! ```
//!
//! A device model's glue calls [`Hinic3::new`] with its register spaces ([`Bars`]), a [`drvkit::dma::DmaMapper`], a
//! [`hugepage::Allocator`] and [`Options`] (with [`Timing::fast`] where the model answers at once).
//!
//! Barriers come from [`drvkit::barrier`], which has the aarch64 (Kunpeng) `dmb` forms; nothing here is x86-only.
//!
//! Not supported: VFs (0x375F), the feature-gated formats of docs/hw/hinic3.md §12a (compact CQE, compact-task TX, the
//! enhanced command queue, HTN commands: declined at negotiation or refused), LRO, interrupts, CEQs, direct WQEs.
//! Rings larger than the WQ page ([`Options::wq_page_log2`]) span several pages through a page table ([`wq`]).

#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

pub mod aeq;
pub mod cmdq;
pub mod ctx;
pub mod desc;
pub mod dev;
pub mod doorbell;
mod error;
pub mod mbox;
pub mod mgmt;
pub mod regs;
pub mod rxtx;
#[cfg(any(test, feature = "sim"))]
pub mod sim;
pub mod stats;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod wq;

pub use dev::{open_vfio, Bars, Hinic3, Hinic3RxQueue, Hinic3TxQueue, Identity, Options, QueueHandle, Timing};
pub use error::{module_name, status_name, Error};

use drvkit::pci::PciId;
use pktio::driver::{PciDriver, PciProbe};
use pktio::EthDev;

/// The PCI driver of this crate: `net_hinic3`, IDs from [`PCI_IDS`].
pub static PCI_DRIVERS: &[PciDriver] = &[HINIC3_DRIVER];

/// The hinic3 PF driver. Device arguments: none (DPDK's hinic3 takes none either), so any key is refused before the
/// device is touched rather than silently ignored.
pub const HINIC3_DRIVER: PciDriver =
    PciDriver { name: "net_hinic3", ids: &HINIC3_IDS, devargs: &[], probe: probe_hinic3 };

/// [`PCI_IDS`] as PCI IDs, so there is one table to edit.
const HINIC3_IDS: [PciId; PCI_IDS.len()] = drvkit::pci_ids_of!(PCI_IDS);

/// A hinic3 PF through the application's VFIO container and DMA memory.
fn probe_hinic3(ctx: &PciProbe<'_>) -> pktio::Result<Box<dyn EthDev>> {
    Ok(Box::new(open_vfio(ctx.vfio(), ctx.address(), ctx.allocator().clone())?))
}

/// PCI IDs of the PFs this driver takes (docs/hw/hinic3.md §1): the standard hinic3 PF. Unverified (§17 item 8) that an
/// SP670 reports 0x0222: no source names it; taken as the notes' assumption until `lspci` confirms it.
pub const PCI_IDS: &[(u16, u16)] = &[(0x19E5, 0x0222)];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pci_driver_claims_the_pf_and_not_the_vf() {
        let r = pktio::driver::Registry::new().with_pci(PCI_DRIVERS);
        for &(v, d) in PCI_IDS {
            assert_eq!(r.pci_driver_for(PciId::new(v, d)).map(|d| d.name), Some("net_hinic3"));
        }
        assert!(r.pci_driver_for(PciId::new(0x19E5, 0x375F)).is_none(), "the VF: not this driver");
    }
}
