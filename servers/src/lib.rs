//! Protocol logic for the sample servers of netstack (issue 13): a Redis-protocol (RESP2) key-value server and
//! an HTTP/1.1 server, written sans-IO so that any transport (netstack's sockets, std::net in tests) drives them.
//!
//! - [`resp`]: incremental RESP2 parser (multibulk arrays and inline commands, as redis-server accepts them) with
//!   size limits, and reply encoders.
//! - [`kv`]: the store ([`kv::Store`]), command execution with Redis 7.0's reply bytes, and [`kv::Session`], one
//!   per connection.
//! - [`http`]: HTTP/1.1 request parser and [`http::Session`] serving a static page and a status page.
//!
//! A session is fed the bytes a connection received and appends its replies to the caller's buffer; it answers
//! [`SessionAction`] so the caller knows when to close. Time is a millisecond clock the caller passes in.
//!
//! [`serve`] puts the sessions behind netstack's sockets (back-pressure, many connections); the binaries
//! `kv-server` and `http-server` (src/bin/) run it on `netstack::runtime` with `--config FILE`.
//!
//! Not supported: RESP3, persistence, replication, pub/sub, transactions, scripting, databases other than 0;
//! HTTP chunked request bodies, TLS, HTTP/2.

pub mod http;
pub mod kv;
pub mod resp;
pub mod serve;

mod carry;
mod error;
pub use error::ProtocolError;

/// What the transport does after a session consumed its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionAction {
    /// Keep the connection open and feed more input when it arrives.
    Continue,
    /// Send what is in the output buffer, then close; further input is ignored.
    CloseAfterFlush,
}
