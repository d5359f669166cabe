//! A pure-Rust poll-mode driver for Intel X540 (and 82599/X520) 10 GbE NICs, and an 82576 (igb) variant that
//! shares its advanced-descriptor ring code.
//!
//! The driver is generic over its register space ([`pktio::bar::RegisterSpace`]): the same code runs against a
//! VFIO-mapped BAR ([`pktio::bar::MmioBar`]) or a behavioural model's registers. DMA memory for the rings comes
//! from a [`hugepage::Allocator`] and is made reachable through a [`pktio::dma::DmaMapper`] (the IOMMU on
//! hardware, the model's IOVA map in tests); the mempool the port is started with is mapped the same way. Each
//! ring keeps its [`pktio::dma::DmaMapping`] guards (its descriptor memory, the pool) and drops them only after its
//! queue is disabled; the guards own the memory, so nothing the device may reach is freed while mapped.
//!
//! - [`regs`]: typed registers (offsets, per-queue formulas, bits and fields named as in the fact sheet).
//! - [`desc`]: advanced RX/TX descriptor formats.
//! - [`rxtx`]: the hot path, generic over a [`rxtx::Family`] (register layout and the few bits that differ).
//! - [`dev`]: bring-up, link, filters, MTU, RSS, statistics; [`Ixgbe`] implements [`pktio::EthDev`].
//! - [`igb`]: the 82576 (QEMU's `igb`) on the same rings.
//! - [`Error`]: device failures (a register that never settled, a blank NVM), carried inside
//!   [`pktio::Error::Driver`] so they can be told from bad arguments.
//!
//! ```no_run
//! # fn demo(bar: std::sync::Arc<pktio::bar::MmioBar>, pool: mempool::Mempool) -> pktio::Result<()> {
//! use pktio::{EthDev, PortConfig, RxQueue, TxQueue};
//! let allocator = hugepage::Allocator::no_huge();
//! let mapper = std::sync::Arc::new(pktio::dma::IdentityMapper);
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
//! Not supported (yet): TSO, VLAN filtering and stripping, multicast address lists (use all-multicast), flow
//! director, DCB, SR-IOV, interrupts (everything is polled), 82599 SFP+ module handling and its link set-up
//! (AUTOC), the 82599 RX security-block errata sequence, RSC, header split.

#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

pub mod desc;
pub mod dev;
mod error;
pub mod igb;
pub mod regs;
pub mod rxtx;
pub mod sim;
pub mod testing;

pub use dev::{
    mac_type_of, media_of, open_vfio, Ixgbe, IxgbeFamily, IxgbeRxQueue, IxgbeTxQueue, MacType, Media, Options, Timing,
    PCI_IDS,
};
pub use error::Error;
