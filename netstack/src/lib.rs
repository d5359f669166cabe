//! netstack: a thin userspace TCP/IP stack on pktio ports.
//!
//! TODO docs
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod arp;
pub mod config;
pub mod control;
mod counters;
mod device;
mod error;
pub mod runtime;
mod sockets;
mod stack;

pub use arp::{ArpConfig, ArpEntry};
pub use config::Config;
pub use counters::{Counters, Drops};
pub use error::{Error, Result};
pub use sockets::{Datagram, Event, EventKind, Handle, SocketInfo};
pub use stack::{Stack, StackConfig};

/// Packets per receive and transmit burst.
pub const BURST: usize = 32;
