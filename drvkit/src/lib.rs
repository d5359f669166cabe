//! The driver kit: what a poll-mode driver needs to reach a PCI device from user space, below the port API.
//!
//! - [`pci`]: PCI identity and binding from sysfs ([`pci::PciAddress`], [`pci::PciId`], [`pci::Sysfs`], a fake
//!   tree for tests) and typed configuration-space access ([`pci::ConfigSpace`]); [`pci_ids_of!`] builds a driver's
//!   ID table at compile time.
//! - [`vfio`]: containers, IOMMU groups and devices through VFIO, with a syscall seam and a fake kernel for tests.
//! - [`dma`]: the DMA-mapping seam ([`dma::DmaMapper`]: a VFIO container, a model's IOVA map, or identity) whose
//!   guards own the memory they map, and [`dma::DmaArea`] for control-plane rings and buffers.
//! - [`bar`] and [`reg`]: register access over any [`bar::RegisterSpace`] (a mapped BAR or a model's registers),
//!   registers and fields as named data, polling with a deadline.
//! - [`barrier`]: the CPU-to-device ordering before doorbells and after completion bits.
//! - [`irq`]: interrupt vectors as eventfds ([`irq::IrqSource`]: VFIO's MSI-X, or a model's glue in-process).
//!
//! The port API (`pktio`) builds on this crate (its driver registry hands probes a [`vfio::VfioDevice`]); the
//! descriptor-ring kit that also needs the port API's queue counters is `ringkit`.
//!
//! The VFIO kernel ABI (structs, flags) comes from `vfio-bindings` and device mappings from `memmap2`;
//! `vfio-ioctls` is not used: its container refuses no-IOMMU mode (which `--iova-mode pa` supports) and it calls
//! the kernel directly, with no syscall seam for the fake kernel the VFIO tests run against.
//! `bitfield` names the PCI command and status bits ([`pci::config::regs::Command`]); hot-path descriptors and
//! single-bit register flags elsewhere stay named `const`s, since they are built or tested whole in one
//! load or store and a generated getter per bit would say no more.
//!
//! Not supported: buses other than PCI (VFIO platform devices included), and the VFIO interfaces [`vfio`] lists
//! (IOMMUFD/cdev, hot reset of a group, migration and dirty tracking, SR-IOV VF tokens).

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod bar;
pub mod barrier;
pub mod dma;
pub mod irq;
pub mod pci;
pub mod reg;
pub mod vfio;
