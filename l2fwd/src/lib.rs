//! l2fwd: DPDK's l2fwd sample on this project's ports. Every packet received on a port leaves through its paired
//! port, with (by default) its MAC addresses rewritten: source = the TX port's address, destination
//! 02:00:00:00:00:TX_PORT. Users run the DPDK command line unchanged but for the binary's name:
//!
//! ```text
//! l2fwd -c0xf -n4 -- -p0x1
//! l2fwd -l 0,1 --vdev net_sim_x540,ports=2 -- -p 0x3 -T 1 --rxq 2
//! ```
//!
//! As DPDK's l2fwd: `-p PORTMASK` (hex), `-q NQ` (ports per lcore), `-T PERIOD` (statistics screen every PERIOD
//! seconds, 0 = off), `--[no-]mac-updating`, `--portmap="(0,1),(2,3)"`; ports in the mask are paired in order
//! (the first with the second, ...; an odd last one with itself) unless `--portmap` pairs them; ports are given to
//! lcores in order, `-q` per lcore, the main lcore included. Beyond DPDK's sample: `--rxq N` gives each port N RX
//! queues (spread by RSS where the port has it), each polled as one more "port" in the lcore assignment; RX queue q
//! of a port sends through TX queue q of its partner, so no queue is shared between lcores.
//!
//! Differences: each received burst is sent at once instead of through DPDK's TX buffer with its 100 µs drain
//! timer (batching differs, what goes out of which port does not); the statistics screen is printed once more on
//! exit. Beyond DPDK's sample: with telemetry on (the default), a running l2fwd's ports can be captured live with
//! `pktio-dumpcap` (its queues are tapped; `--no-telemetry` runs the loop without taps). Not supported: per-queue
//! statistics on the screen (queues of a port are summed).

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod app;
pub mod fwd;
pub mod params;

/// What can go wrong before forwarding starts. Each is reported with exit status 1.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An application argument (after `--`) is unknown or malformed.
    #[error("{0}\nRun with -- -h for l2fwd's options.")]
    Usage(String),
    /// The EAL could not run the application (lcores, memory).
    #[error(transparent)]
    Eal(#[from] eal::Error),
    /// A port could not be set up.
    #[error("port {port}: {source}")]
    Port {
        /// Port id.
        port: u16,
        /// The driver's error.
        source: pktio::Error,
    },
    /// The ports and lcores do not fit together.
    #[error("{0}")]
    Setup(String),
}

/// The crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
