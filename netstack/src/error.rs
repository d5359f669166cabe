//! The crate's one error type.

use std::net::SocketAddrV4;
use std::path::PathBuf;

/// What went wrong in the stack, its configuration or its runtime.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A non-blocking call found nothing to do yet (no data to read, no room to write, no connection to accept);
    /// call again after the next poll.
    #[error("operation would block: try again after the next poll")]
    WouldBlock,
    /// The handle is not (or no longer) a live socket of the kind the call needs.
    #[error("handle {0} is not a live socket of this kind (closed, or from another stack)")]
    BadHandle(u32),
    /// The local port is taken.
    #[error("port {0} is already bound on this stack")]
    PortInUse(u16),
    /// Port 0 was asked for a listener or a UDP socket.
    #[error("port 0 cannot be listened on: give a port from 1 to 65535")]
    PortZero,
    /// No ephemeral port is free for `connect`.
    #[error("no free ephemeral port for a connection to {0}")]
    NoEphemeralPort(SocketAddrV4),
    /// The connection is closed for writing (the application closed it, or it was reset).
    #[error("the connection is closed for writing")]
    NotConnected,
    /// The datagram does not fit into one packet buffer.
    #[error("a {len}-byte datagram does not fit into one packet (at most {max} bytes)")]
    TooLong {
        /// Datagram length asked for.
        len: usize,
        /// Largest length that fits.
        max: usize,
    },
    /// The mempool has no free buffer (raise `memory.pool_size` in the configuration).
    #[error("the packet pool is empty: raise memory.pool_size")]
    NoBuffers,
    /// smoltcp refused a TCP operation.
    #[error("TCP: {0}")]
    Tcp(String),
    /// A configuration field is missing or wrong.
    #[error("{file}:{line}: {field}: {message}")]
    Config {
        /// Configuration file.
        file: PathBuf,
        /// 1-based line of the field (or of the table that lacks it).
        line: usize,
        /// Dotted field name, e.g. `ipv4.address`.
        field: String,
        /// What is wrong and what is expected.
        message: String,
    },
    /// The configuration file could not be read.
    #[error("cannot read configuration {file}: {source}")]
    ConfigRead {
        /// Configuration file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A command-line argument is wrong.
    #[error("{0}")]
    Usage(String),
    /// Bringing up the environment or the port failed.
    #[error("EAL: {0}")]
    Eal(#[from] eal::Error),
    /// The port refused a request.
    #[error("port: {0}")]
    Port(#[from] pktio::Error),
    /// The control socket failed.
    #[error("control socket {path}: {source}")]
    Control {
        /// Socket path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, Error>;
