//! testpmd-rs as a library: the pieces of the `testpmd-rs` binary (application state, the `testpmd>` command
//! parser, forwarding modes, parameters, packet helpers), so that tests and fuzz targets can drive them without a
//! process. The binary (`src/main.rs`) is a thin shell over these.

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod app;
pub mod cli;
pub mod dump;
pub mod fwd;
pub mod noisy;
pub mod params;
pub mod pkt;
pub mod port_cmds;
pub mod settings;
pub mod show;
