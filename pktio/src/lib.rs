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
//! driver registry ([`driver`]) through which driver crates make themselves known to the EAL, and live pcapng
//! capture of running queues ([`capture`]: the application wraps the queues it polls; a capture started and stopped
//! at any time copies their packets to a writer thread). What drivers are written against below this API (PCI,
//! VFIO, DMA mapping, registers, barriers) is the `drvkit` crate; packet headers are the `pkthdr` crate's, whose
//! [`MacAddr`] is the port API's MAC address.

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod capture;
mod dev;
pub mod devargs;
pub mod driver;
mod error;
pub mod pcap_file;
mod port_state;
pub mod ports;
pub mod stats;

pub use dev::{
    offload, BurstMode, DescLimits, DevInfo, EthDev, LinkStatus, PortConfig, RssConfig, RssHashFunctions, RxQueue,
    TxQueue,
};
pub use error::{Error, Result};
pub use mempool::{self, Mbuf, Mempool, PacketBatch, PoolConfig};
pub use pkthdr::{MacAddr, MacParseError};
pub use port_state::PortState;
pub use stats::{PortStats, XStat};
