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
//! Both paths have a fast loop for the common packet (one descriptor, no offload, no error) that walks the ring in
//! contiguous runs without per-packet wrap checks, four packets per step with one test per four (`rx_fast_run` with
//! SSE2 shuffles into the Mbuf fields on x86-64, built a second time for AVX and chosen by a flag set at creation,
//! `tx_groups`); a burst that fits one run is one call of each, and anything else continues out of line
//! (`rx_into_general`, `tx_from_general`), falling back to a general path (chains, errors, checksum contexts) per
//! packet. Shadow rings hold owned raw pointers whose ownership follows the ring indices. RX buffers come from the
//! pool's raw allocation (stale metadata, as in DPDK): the ring writes their rearm word when it posts them and every RX
//! field when it receives into them. TX checks at enqueue that a packet is a single segment of the port's pool; RS
//! groups of such packets go back with one bulk put and no per-buffer test (DPDK's fast free), others through
//! `mempool::free_raw_bulk`. Neither path allocates, locks, or makes a dynamic call per packet.
//!
//! Files: `family` (the [`Family`] trait), `ring` (index arithmetic, ring settings and memory), `rx` (the RX
//! ring), `rx_flags` (offload flags and packet type of a write-back), `rx_simd` (the RX fast run), `tx` (the TX
//! ring).

mod family;
mod ring;
mod rx;
mod rx_flags;
mod rx_simd;
mod tx;

pub use family::Family;
pub use ring::{idx, RingConfig};
pub use rx::{burst_mode, RxRing, RxSetup};
pub use tx::{TxRing, TxSetup, MAX_TX_SEGS};
