//! Route lookup tables for dataplanes: what a forwarding loop asks for each packet.
//!
//! - [`Lpm4`]: IPv4 longest-prefix match as DIR-24-8. A 2^24-entry first table (tbl24) resolves every prefix up
//!   to /24 in one memory access; a /24 holding longer prefixes points to a 256-entry tbl8 group (second
//!   access). Add and delete keep a rule table per prefix length, so a delete falls back to the next-shorter
//!   covering route, and a tbl8 group is freed once no longer-than-/24 route is left in it.
//! - [`Lpm6`]: IPv6 longest-prefix match with the same machinery: a 24-bit first level, then 8-bit levels.
//! - [`ExactMatch`]: 5-tuple ([`Ipv4Tuple`], [`Ipv6Tuple`]) to value, fixed capacity, open addressing, CRC32-C
//!   hash through SSE4.2 when present.
//!
//! Every table has single-lookup and bulk APIs (`lookup_x4`, `lookup_x8`, `lookup_bulk`): a burst issues all its
//! first-level loads before any second-level one, so cache misses overlap; `Lpm4::lookup_bulk` also prefetches
//! the tbl24 lines of the next 32 addresses, and [`Lpm4::prefetch`] lets a forwarding loop do the same for packets
//! further along its burst. `Lpm4::lookup_x4`/`lookup_x8` resolve four tbl24 entries at once in an SSE2 register on
//! x86_64 (one test for "any extended", then a branch-free select), per entry elsewhere. Lookups take `&self`,
//! allocate nothing and take no lock.
//!
//! An entry is one `u32` (next hop, valid, extended, prefix length; see `entry.rs`), so next hops are 0 to 2^22 - 1
//! and tbl24 is 64 MiB. Tables are plain heap memory (a `Vec`, not the `hugepage` crate's DMA memory), advised
//! onto transparent hugepages (`MADV_HUGEPAGE`) to spare the TLB.
//!
//! Not supported: concurrent update and lookup (updates take `&mut self`; share a table between cores read-only,
//! or rebuild and swap — there is no RCU), IPv6 tables smaller than the 64 MiB first level, per-route metadata
//! wider than 22 bits, exact-match values other than `u32`, and growing an exact-match table.

#![warn(missing_docs)]

mod entry;
mod error;
mod exact;
mod hash;
mod lpm4;
mod lpm6;
mod mem;
mod trie;

pub use error::{Error, Result};
pub use exact::{ExactMatch, FlowKey, Ipv4Tuple, Ipv6Tuple, WordKey};
pub use lpm4::{Lpm4, Lpm4Config};
pub use lpm6::{Lpm6, Lpm6Config};
