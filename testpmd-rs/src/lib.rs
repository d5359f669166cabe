//! testpmd-rs as a library: the pieces of the `testpmd-rs` binary (application state, the `testpmd>` command
//! parser, forwarding modes, parameters, packet helpers), so that tests and fuzz targets can drive them without a
//! process. The binary (`src/main.rs`) is a thin shell over these.
//!
//! It follows dpdk-testpmd 22.11: its options (those that mean nothing here are accepted with a note), the commands
//! DPDK scripts use (`command` parses a line, `cli` runs it), ten forwarding modes, and the printed blocks. Not
//! supported: flow rules, RX buffer split, VLAN filters, extra MAC addresses and queue statistics mapping on ports
//! whose drivers lack them, tunnels and hardware checksum offloads in csum mode, multiple processes (the README
//! lists it all).

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod app;
pub mod cli;
pub mod command;
pub mod cycles;
pub mod dump;
pub mod fwd;
pub mod lines;
pub mod noisy;
pub mod params;
pub mod pkt;
pub mod port_cmds;
pub mod queue_info;
pub mod settings;
pub mod show;
