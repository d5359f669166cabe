//! l3fwd: DPDK's l3fwd sample on this project's ports. Each RX queue named in `--config` is polled by its lcore;
//! every IPv4/IPv6 packet is validated (RFC 1812), looked up (LPM, exact match or FIB), its TTL decremented with an
//! incremental checksum update and its MAC addresses rewritten (destination `--eth-dest` of the output port,
//! default 02:00:00:00:00:PORT; source the output port's MAC), and sent by this lcore's TX queue of the output
//! port. Users run DPDK's command lines unchanged but for the binary's name:
//!
//! ```text
//! l3fwd -l 0,1 -n4 -- -p1 -P --config="(0,0,0)(0,1,1)"
//! l3fwd -l 0,1,2,3 -n4 -- -p0xf -P --config="(0,0,0),(0,1,1),(1,0,2),(1,1,3)" --lookup=em
//! ```
//!
//! As DPDK 22.11's l3fwd does: a packet without a route, and a frame that is neither IPv4 nor IPv6, goes back out of
//! the port it came in by (with the MAC rewrite); the built-in tables (198.18.P.0/24 and 2001:200:0:P::/64 to
//! port P; the matching UDP 9->9 flows for EM) are used unless both `--rule_ipv4` and `--rule_ipv6` are given;
//! routes to ports outside the mask are skipped; EM holds the IPv4 flows, or the IPv6 ones with `--ipv6`; IPv6
//! hop limits are not decremented; the IPv4 checksum is adjusted as DPDK adjusts it (+0x0100 with end-around carry,
//! so outputs compare byte for byte). Unlike DPDK's vector path, malformed packets (bad checksum, version, header
//! length or total length, TTL/hop limit <= 1, truncated) are counted per reason and dropped, never forwarded. The IP
//! lengths are checked against the whole packet, as DPDK checks them against `m->pkt_len`: a jumbo frame that the
//! port delivers as a chain of buffers is forwarded whole (which frames a port delivers is its own business: its
//! MTU, `--max-pkt-len`). Route files are read with bounds (LINE_MAX lines, 4M rules) and bad lines are reported
//! with their number and a short quote.
//! Routes are looked up a burst at a time (the `lpm` crate's bulk lookups); plain 20-byte IPv4 headers take a
//! straight-line fast path, and a burst whose packets all go to one port is handed to that port whole (as DPDK's
//! send_packets_multi groups them); each port's RX/TX burst modes (the driver's answer) are printed at start-up.
//! With telemetry on (the default), a running l3fwd's ports can be captured live with `pktio-dumpcap` (its queues
//! are tapped; `--no-telemetry` runs the loop without taps).
//!
//! `l3fwd-power` is the same program whose lcores sleep when idle ([`power`], DPDK's l3fwd-power with its
//! interrupt modes): by default an lcore polls while busy and, after an idle spell, arms its RX queues' interrupts
//! (the ports are configured with `intr_conf.rxq` where they have them; software ports sleep on their own
//! descriptors) and sleeps until a frame arrives; `--interrupt-only` sleeps at the first empty round. A queue with
//! neither is refused at start-up. DPDK's frequency-scaling modes (`--empty-poll`, `--pmd-mgmt`, ...) are refused.
//!
//! Not supported: ACL lookup, event mode, `--hash-entry-num` flow generation (the option is accepted and sizes the
//! EM table only), FIB's own table layout (FIB mode uses the LPM tables: DPDK's rte_fib is a different DIR-24-8 variant with the same results).

#![deny(clippy::undocumented_unsafe_blocks)]

pub mod app;
pub mod config;
pub mod fwd;
pub mod lookup;
pub mod params;
pub mod power;
pub mod routes;

/// What can go wrong before forwarding starts. Each is reported with exit status 1.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An application argument (after `--`) is unknown or malformed.
    #[error("{0}\nRun with -- -h for l3fwd's options.")]
    Usage(String),
    /// `--config` is malformed or does not fit the ports and lcores.
    #[error("invalid config: {0}")]
    Config(String),
    /// A route file cannot be read or has a bad line (line 0: the file as a whole).
    #[error("{path}:{line}: {reason}")]
    RouteFile {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A route table could not be built.
    #[error("route table: {0}")]
    Table(#[from] lpm::Error),
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
    /// The ports, mask and options do not fit together.
    #[error("{0}")]
    Setup(String),
}

/// The crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
