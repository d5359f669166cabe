//! The hot path: the 32-byte RX descriptor ring and the 16-byte TX descriptor ring.
//!
//! The bursts themselves are the shared ones: RX is [`ringkit::RxEngine`] over this write-back format ([`Desc32`]: the
//! common frame one at a time, four at a time with SSE2 shuffles into the Mbuf fields on x86-64 or with NEON on
//! aarch64, any completion for the general path), TX is [`ringkit::TxCore`] over this data descriptor (with checksum
//! offload in its command and offset fields, TSO context descriptors and the malicious-driver-detection limits).
//! Neither path allocates, locks, or makes a dynamic call per packet.
//!
//! Files: `ring` (ring settings and the sizes the hardware takes), `rx` (the RX queue: set-up, context, enable,
//! doorbell), `intr` (its interrupt: eventfd and arming), `rx_decode` (the write-back format: offload flags and
//! packet type, the memo, the common frame, the general decode), `rx_simd` (its groups of four on x86-64),
//! `rx_neon` (its groups of four on aarch64), `rx_fast_tests` (every build against the one-at-a-time path, and
//! bursts through the engine), `tx` (the TX queue and its descriptors).

mod intr;
pub mod ring;
mod rx;
mod rx_decode;
#[cfg(test)]
mod rx_fast_tests;
#[cfg(target_arch = "aarch64")]
mod rx_neon;
#[cfg(target_arch = "x86_64")]
mod rx_simd;
mod tx;

pub use intr::RxIntr;
pub use ring::{idx, RingConfig, RING_ALIGN, RING_MAX, RING_MIN};
pub use rx::{RxRing, RxSetup, MAX_CHAINED, MAX_FRAME, MAX_RX_BUF};
pub use rx_decode::{Desc32, RxMemo};
pub use tx::{TxRing, TxSetup};
