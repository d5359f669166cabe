//! The port API of a pure-Rust poll-mode packet framework.
//!
//! A port is an [`EthDev`] (control plane: configure, start/stop, link, MAC, promiscuous, MTU, stats, xstats,
//! RSS) that hands out owned [`RxQueue`]/[`TxQueue`] values after start: one thread owns each queue and moves
//! packets in bursts through a fixed-capacity [`PacketBatch`], with at most one dynamic call per burst.
//!
//! Also here: software ports ([`ports`]: null, ring, pcap, af_packet, tap) opened from DPDK-style devargs, the
//! register and DMA-ordering seams drivers are written against ([`bar`], [`barrier`]), PCI identity
//! ([`pci`]), and packet headers as zero-copy views with checksums ([`wire`]: Ethernet/VLAN, ARP, IPv4, IPv6, UDP,
//! TCP, ICMP) for forwarding engines and stacks.

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod bar;
pub mod barrier;
mod dev;
pub mod devargs;
pub mod dma;
mod error;
pub mod pcap_file;
pub mod pci;
pub mod ports;
pub mod stats;
pub mod vfio;
pub mod wire;

pub use dev::{
    offload, DescLimits, DevInfo, EthDev, LinkStatus, MacAddr, MacParseError, PortConfig, RssConfig, RssHashFunctions,
    RxQueue, TxQueue,
};
pub use error::{Error, Result};
pub use mempool::{self, Mbuf, Mempool, PacketBatch, PoolConfig};
pub use stats::{PortStats, XStat};
