//! The crate's one error type.

use std::net::IpAddr;

/// What went wrong in a table operation; every variant says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A prefix length longer than the address.
    #[error("prefix length /{depth} is longer than the {max}-bit address: use /0 to /{max}")]
    InvalidDepth {
        /// The length given.
        depth: u8,
        /// The address width.
        max: u8,
    },
    /// A next hop that does not fit the entry's next-hop field.
    #[error("next hop {next_hop} does not fit the table's next-hop field: use 0 to {max}")]
    NextHopTooLarge {
        /// The value given.
        next_hop: u32,
        /// The largest next hop the table stores.
        max: u32,
    },
    /// The rule table holds `max_rules` rules already.
    #[error("rule table full ({max} rules): delete rules or create the table with a larger max_rules")]
    RulesFull {
        /// The configured limit.
        max: u32,
    },
    /// Not enough free second-level groups (tbl8) for a longer-than-/24 prefix (IPv4) or a deep IPv6 prefix.
    #[error(
        "out of tbl8 groups: the route needs {needed}, {free} of {total} are free; create the table with more groups"
    )]
    GroupsExhausted {
        /// Groups the route needs.
        needed: u32,
        /// Groups free.
        free: u32,
        /// Groups configured.
        total: u32,
    },
    /// Delete of a prefix that was never added (or was deleted already).
    #[error("no route {prefix}/{depth} to delete")]
    RouteNotFound {
        /// The prefix (host bits cleared).
        prefix: IpAddr,
        /// Its length.
        depth: u8,
    },
    /// A configuration value out of range.
    #[error("invalid table configuration: {0}")]
    InvalidConfig(&'static str),
    /// The exact-match table holds its capacity already.
    #[error("exact-match table full ({capacity} keys): delete keys or create it with a larger capacity")]
    TableFull {
        /// The configured capacity.
        capacity: usize,
    },
    /// Delete of a key that is not in the exact-match table.
    #[error("key not in the exact-match table")]
    KeyNotFound,
}

/// This crate's result.
pub type Result<T> = std::result::Result<T, Error>;
