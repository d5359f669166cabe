//! A pure-Rust poll-mode driver for the physical function of Huawei's hinic3 family (SP6xx / SP670, PCI
//! 19e5:0222; docs/hw/hinic3.md §1), through VFIO with or without an IOMMU, or against a behavioural model's
//! register spaces.
//!
//! hinic3 is configured by asking its management CPU: commands travel through the mailbox and their answers come
//! back on an asynchronous event queue in host memory that the driver polls (no interrupts, every MSI-X vector
//! masked); queue contexts and RSS tables travel through the command queue. Byte order is the trap (§0.1): CSRs,
//! the mailbox window, AEQ elements and command-queue data are big-endian per dword, handled in [`regs::BeRegs`],
//! [`mbox`], [`aeq`] and [`cmdq`] only; descriptors and management structures are little-endian.
//!
//! - [`regs`]: the cfg-BAR CSRs and [`regs::BeRegs`]; [`doorbell`]: the 64-bit doorbells.
//! - [`desc`], [`rx`], [`tx`]: the hot path: compact and extended SQ WQEs (checksum, VLAN, TSO), normal RQ WQEs
//!   with separate 32-byte CQEs, bulk refill, one doorbell per burst.
//! - [`testing`]: a fake doorbell BAR for tests and the benchmark (not a model).
//!
//! Barriers come from [`pktio::barrier`], which has the aarch64 (Kunpeng) `dmb` forms; nothing here is x86-only.
//!
//! Not supported: VFs (0x375F), the feature-gated formats of §12a (compact CQE, compact-task TX, the enhanced
//! command queue, HTN commands: declined at negotiation or refused), LRO, interrupts, CEQs, direct WQEs,
//! 1-level CLA rings (a ring must fit one 1 MiB WQ page).

#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

pub mod aeq;
pub mod cmdq;
pub mod ctx;
pub mod desc;
pub mod dev;
mod dma;
pub mod doorbell;
mod error;
pub mod mbox;
pub mod mgmt;
pub mod regs;
pub mod rx;
pub mod stats;
pub mod testing;
pub mod tx;

pub use dev::{Bars, Hinic3, Hinic3RxQueue, Hinic3TxQueue, Identity, Options, Timing};
pub use error::{module_name, status_name, Error};

/// PCI IDs of the PFs this driver takes (docs/hw/hinic3.md §1): the standard hinic3 PF. [UNCERTAIN] that an
/// SP670 reports 0x0222: no source names it; taken as the notes' assumption until `lspci` confirms it.
pub const PCI_IDS: &[(u16, u16)] = &[(0x19E5, 0x0222)];
