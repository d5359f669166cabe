//! The hot path: Intel advanced-descriptor RX and TX rings, generic over the register space `R` and over the
//! device family `F` (where the queue registers live and the few bits that differ), so that the 82599/X540
//! ([`crate::Ixgbe`]) and the 82576 ([`crate::igb`]) run the same ring code.
//!
//! RX (docs/hw/ixgbe.md §8.1): the ring is filled with buffers from the mempool; a burst reads the status dword
//! of the next descriptor, stops at the first without DD, and only after DD (an acquire load and [`dma_rmb`](drvkit::barrier::dma_rmb))
//! reads the rest. Consumed slots are refilled in bulk once `free_thresh` of them are held, the read format is
//! rewritten, and RDT moves once per refill, after [`dma_wmb`](drvkit::barrier::dma_wmb). Frames that span several descriptors (EOP = 0)
//! become Mbuf chains, also across bursts.
//!
//! TX (docs/hw/ixgbe.md §8.2): data descriptors (plus a context descriptor when checksum offload parameters change), RS set
//! on the last descriptor of the packet that completes each group of `rs_thresh` descriptors; cleanup checks DD
//! of the oldest RS descriptor only when fewer than `free_thresh` slots are free, and frees in bulk. One TDT write
//! per burst, after [`dma_wmb`](drvkit::barrier::dma_wmb).
//!
//! The bursts themselves are the shared ones: RX is [`ringkit::RxEngine`] over this write-back format
//! ([`AdvRx`]: the common frame one at a time, four at a time with SSE2 shuffles into the Mbuf fields on x86-64,
//! any completion for the general path), TX is [`ringkit::TxCore`] over this data descriptor. Neither path
//! allocates, locks, or makes a dynamic call per packet.
//!
//! Files: `family` (the [`Family`] trait), `ring` (ring settings, queue disable), `rx` (the RX queue: set-up,
//! enable, doorbell), `rx_decode` (the write-back format: offload flags and packet type, the memo, the common frame,
//! the general decode), `rx_simd` (its groups of four on x86-64), `tx` (the TX queue and data/context descriptors).

mod family;
mod ring;
mod rx;
mod rx_decode;
#[cfg(target_arch = "x86_64")]
mod rx_simd;
mod tx;

pub use rx_decode::{AdvRx, RxMemo};

pub use family::Family;
pub use ring::{idx, RingConfig};
pub use rx::{RxIntr, RxRing, RxSetup};
pub use tx::{TxRing, TxSetup, MAX_TX_SEGS};
