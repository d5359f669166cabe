//! The port API of a pure-Rust poll-mode packet framework.
//!
//! A port is an [`EthDev`] (control plane: configure, start/stop, link, MAC, promiscuous, MTU, stats, xstats,
//! RSS) that hands out owned [`RxQueue`]/[`TxQueue`] values after start: one thread owns each queue and moves
//! packets in bursts through a fixed-capacity [`PacketBatch`], with at most one dynamic call per burst.
//!
//! Every port keeps its configuration, started flag, MAC, receive modes, queue hand-out and counter base in one
//! [`PortState`], checked by [`DevInfo::check`]; [`EthDev`] answers its getters from it, so a port implements only
//! what is its own. A device's own failures (a register that never settles) come as [`Error::Driver`] carrying the
//! driver's error type, distinct from the argument errors.
//!
//! Also here: software ports ([`ports`]: null, ring, pcap, af_packet, tap) opened from DPDK-style devargs, the
//! register and DMA-ordering seams drivers are written against ([`bar`], [`barrier`]), and PCI identity
//! ([`pci`]). Packet headers are the `pkthdr` crate's; its [`MacAddr`] is the port API's MAC address.
//! Live pcapng capture of running queues ([`capture`]: the application wraps the queues it polls; a capture started
//! and stopped at any time copies their packets to a writer thread).
//!
//! The VFIO kernel ABI (structs, flags) comes from `vfio-bindings` and device mappings from `memmap2`;
//! `vfio-ioctls` is not used: its container refuses no-IOMMU mode (which `--iova-mode pa` supports) and it calls
//! the kernel directly, with no syscall seam for the fake kernel the VFIO tests run against.
//! `bitfield` names the PCI command and status bits ([`pci::config::regs::Command`]); hot-path descriptors and
//! single-bit register flags elsewhere stay named `const`s, since they are built or tested whole in one
//! load or store and a generated getter per bit would say no more.

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod bar;
pub mod barrier;
pub mod capture;
mod dev;
pub mod devargs;
pub mod dma;
pub mod driver;
mod error;
pub mod pcap_file;
pub mod pci;
mod port_state;
pub mod ports;
pub mod reg;
pub mod ring;
pub mod stats;
pub mod vfio;

pub use dev::{
    offload, BurstMode, DescLimits, DevInfo, EthDev, LinkStatus, PortConfig, RssConfig, RssHashFunctions, RxQueue,
    TxQueue,
};
pub use error::{Error, Result};
pub use mempool::{self, Mbuf, Mempool, PacketBatch, PoolConfig};
pub use pkthdr::{MacAddr, MacParseError};
pub use port_state::PortState;
pub use stats::{PortStats, XStat};
