//! The hot path: the RQ (normal WQEs with separate CQEs) and the SQ (compact and extended WQEs).
//!
//! RX is the shared engine, [`ringkit::RxEngine`] over this completion format ([`Cqe32`]: the common frame one at a
//! time, four at a time with SIMD on x86-64 and aarch64, any completion for the general path, chains over consecutive entries).
//! TX is this driver's own: its completions come from a consumer index the device writes (not a done bit per
//! descriptor) and an extended WQE spans several slots with an owner bit, so [`ringkit::TxCore`]'s RS groups do not
//! fit it. Neither path allocates, locks, or makes a dynamic call per packet.
//!
//! Files: `intr` (an RQ's interrupt: eventfd and arming), `rx` (the RX queue: WQEs, CQE addresses, doorbell, flush
//! reclaim), `rx_decode` (the CQE format: the memo, the common frame, the general decode), `rx_simd` (its groups of
//! four on x86-64), `rx_neon` (its groups of four on aarch64), `tx` (the TX queue).

mod intr;
mod rx;
mod rx_decode;
#[cfg(test)]
mod rx_fast_tests;
#[cfg(target_arch = "aarch64")]
mod rx_neon;
#[cfg(target_arch = "x86_64")]
mod rx_simd;
#[cfg(test)]
mod tests;
mod tx;

pub use intr::RqIntr;
pub use rx::{rx_buf_size_index, RxRing, RxSetup, RX_BUF_SIZES, RX_FREE_THRESH};
pub use rx_decode::{Cqe32, Memo};
pub use tx::{SqProgress, TxRing, TxSetup, CI_SLOT, MAX_SGE, MAX_SGE_TSO, MIN_TX_LEN, TX_FREE_THRESH};
