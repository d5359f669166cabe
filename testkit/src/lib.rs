//! The test kit every crate's tests share (a dev-dependency only, never part of a build that ships):
//!
//! - [`app`]: drive an application binary (spawn, poll its output with a deadline, SIGINT, numbers and addresses
//!   from what it prints, live capture with `pktio-dumpcap`); [`pcap`]: write inputs, compare outputs;
//! - [`driver`], [`frames`], [`rss`], [`forward`]: the drivers' helpers (pools, polling with a deadline, chained
//!   packets, frames with correct checksums, the RSS flow set and an independent Toeplitz hash, the threaded
//!   forwarding run);
//! - [`require`]: the one required-or-skip switch behind every `*_TESTS_REQUIRED` variable;
//! - [`conformance`]: the suite every driver and model pair runs, over a small trait each driver's test implements.
//!
//! The items are re-exported at the root (`testkit::udp_frame`, `testkit::App`, ...). Not for production code: it
//! panics on any mismatch.

pub mod app;
pub mod conformance;
pub mod driver;
pub mod forward;
pub mod frames;
pub mod pcap;
pub mod require;
pub mod rss;

pub use app::*;
pub use driver::*;
pub use forward::*;
pub use frames::*;
pub use pcap::*;
pub use require::*;
pub use rss::*;
