//! The RX side of a ring, written once for every descriptor format:
//!
//! - [`RxBuffers`] (`buffers`): the mbuf shadow ring, which slots own their buffer, the bulk refill from the pool.
//! - [`RxFormat`] (`format`): what a driver writes for its descriptor format: where the completions are, the
//!   common frame one at a time ([`RxFormat::fast_one`]) and in groups through SIMD ([`RxFormat::groups`], per
//!   instruction-set build [`Isa`]), and any completion for the general path ([`RxFormat::decode`]: chains,
//!   errors, flushed buffers).
//! - [`RxEngine`] (`engine`): the burst itself (the fast run over the common burst, the general path out of line,
//!   chains across bursts, the counters, the refill), monomorphised over the format: no dynamic call per packet.
//! - `fast`: the fast run's skeleton, built once per [`IsaLevel`] and chosen per ring, and the skeleton of the
//!   formats' SIMD groups ([`RxRun::simd_groups`]).
//! - `testing` (cargo feature `testing`): the drivers' test of a format's fast run, every build against the
//!   one-at-a-time reference.

mod buffers;
mod engine;
mod fast;
mod format;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;

pub use buffers::{RxBuffers, RxDescriptor};
pub use engine::RxEngine;
#[cfg(target_arch = "x86_64")]
pub use fast::SimdBlocks;
pub use fast::{fast_run, RxRun};
pub use format::{Avx, Avx2, Base, FastFrame, Isa, IsaLevel, RxEntry, RxFormat, RxMeta};
