//! The test kit every crate's tests share (a dev-dependency only, never part of a build that ships):
//!
//! - [`app`]: drive an application binary (spawn, poll its output with a deadline, SIGINT, numbers and addresses
//!   from what it prints, live capture with `pktio-dumpcap`); [`pcap`]: write inputs, compare outputs;
//! - [`driver`], [`frames`], [`rss`], [`forward`]: the drivers' helpers (pools, polling with a deadline, chained
//!   packets, frames with correct checksums, the RSS flow set and an independent Toeplitz hash, the threaded
//!   forwarding run);
//! - [`require`](mod@require): the one required-or-skip switch behind every `*_TESTS_REQUIRED` variable;
//! - [`netns`]: network namespaces (can the machine, `ip`, namespaces removed on drop); [`veth`]: a veth pair across
//!   two namespaces with a raw socket on the kernel side, for the software ports' tests;
//! - [`redis`]: what the tests running Debian's Redis clients share;
//! - [`conformance`]: the suite every driver and model pair runs, over a small trait each driver's test implements.
//! - [`sim`]: the forwarding check of the `net_sim_*` vdevs (a driver on its model, opened from devargs).
//!
//! The items are re-exported at the root (`testkit::udp_frame`, `testkit::App`, ...), but for `netns` and `veth`,
//! `sim`, used by path (`testkit::netns::Netns`). Not for production code: it
//! panics on any mismatch.

pub mod app;
pub mod conformance;
pub mod driver;
pub mod forward;
pub mod frames;
pub mod intr;
pub mod netns;
pub mod pcap;
pub mod redis;
pub mod require;
pub mod rss;
pub mod sim;
pub mod veth;

pub use app::*;
pub use driver::*;
pub use forward::*;
pub use frames::*;
pub use pcap::*;
pub use require::*;
pub use rss::*;
