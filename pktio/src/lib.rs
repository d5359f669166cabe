//! The port API of a pure-Rust poll-mode packet framework.
//!
//! A port is an [`EthDev`] (control plane: configure, start/stop, link, MAC, promiscuous, MTU, stats, xstats,
//! RSS) that hands out owned [`RxQueue`]/[`TxQueue`] values after start: one thread owns each queue and moves
//! packets in bursts through a fixed-capacity [`PacketBatch`], with at most one dynamic call per burst, or none
//! through the port's own queue types ([`TypedQueues`]).
//!
//! Every port keeps its configuration, started flag, MAC, receive modes, queue hand-out and counter base in one
//! [`PortState`], checked by [`DevInfo::check`]; [`EthDev`] answers its getters from it, so a port implements only
//! what is its own. A device's own failures (a register that never settles) come as [`Error::Driver`] carrying the
//! driver's error type, distinct from the argument errors.
//!
//! Per queue, as DPDK's `rte_eth_rx_queue_info_get` and `rte_eth_rx_burst_mode_get` (and their TX twins): what
//! the queue is set up with ([`EthDev::rx_queue_info`]: descriptors, thresholds, offloads, pool, state) and which
//! burst code it runs ([`EthDev::rx_burst_mode`], flagged when the port's queues may differ).
//!
//! Also here: the driver registry ([`driver`]) through which driver crates make themselves known to the EAL,
//! DPDK-style device arguments ([`devargs`]), port and queue counters with DPDK's names ([`stats`]), and live
//! pcapng capture of running queues ([`capture`]: the application wraps the queues it polls; a capture started and
//! stopped at any time copies their packets to a writer thread).
//!
//! The ports themselves live elsewhere: software ports (null, ring, pcap, af_packet, af_xdp, tap) in `swports`,
//! NIC drivers in their own crates, written against `drvkit` (PCI, VFIO, DMA mapping, registers, barriers, below
//! this crate) and `ringkit` (descriptor rings, above it). Re-exported for embedders, who should not need another
//! crate to move packets: mempool's buffers and pools ([`Mbuf`], [`Mempool`], [`PacketBatch`], [`PoolConfig`]),
//! and [`MacAddr`], which is the `pkthdr` crate's (the packet headers).
//!
//! Interrupts (DPDK's RX-interrupt API): a port configured with [`IntrConf`] arms and disarms each RX queue's
//! interrupt ([`RxQueue::intr_enable`], [`RxQueue::intr_disable`]) and hands out descriptors to sleep on
//! ([`RxQueue::wait_fd`] per queue, [`EthDev::link_event_fd`] for link changes), epoll-able with the
//! application's own. Software ports keep their own descriptors.
//!
//! Not supported: flow rules (`rte_flow`), starting and stopping single queues (deferred start), link-state-change
//! callbacks (a link change is a descriptor to wait on, [`EthDev::link_event_fd`], or polled), VMDq pools, packet timestamps and PTP, traffic
//! management, and ports shared with other processes (DPDK's secondary processes).

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod capture;
mod dev;
pub mod devargs;
pub mod driver;
mod error;
mod port_state;
mod queue_info;
pub mod stats;

pub use dev::{
    offload, BurstMode, DescLimits, DevInfo, EthDev, IntrConf, LinkStatus, PortConfig, RssConfig, RssHashFunctions,
    RxQueue, TxQueue, TypedQueues,
};
pub use error::{Error, Result};
pub use mempool::{self, Mbuf, Mempool, PacketBatch, PoolConfig};
pub use pkthdr::{MacAddr, MacParseError};
pub use port_state::PortState;
pub use queue_info::{PoolInfo, QueueBurstMode, QueueState, QueueThresh, RxQueueInfo, TxQueueInfo};
pub use stats::{PortStats, XStat};
