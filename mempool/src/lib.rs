//! Packet buffers for a poll-mode dataplane.
//!
//! A [`Mempool`] carves DMA memory (from [`hugepage`]) into fixed-size elements: a 128-byte [`MbufHeader`] of
//! metadata, then headroom, then data room. Free elements sit in a lock-free bulk [`ring::Ring`] behind a per-lcore
//! cache, so the common alloc/free of a burst touches only thread-local state. An [`Mbuf`] owns one element (or a
//! chain) and returns it on drop; a [`PacketBatch`] carries a burst between `rx_burst` and `tx_burst` without
//! allocating.
//!
//! Threads that want the per-lcore cache claim an lcore id with [`lcore::bind_current_thread`] (the EAL does this
//! for its worker threads); other threads use the shared ring directly.
//!
//! The ring is our own, not `crossbeam-queue`'s `ArrayQueue`: that has no bulk enqueue/dequeue, and the per-lcore
//! cache and `net_ring` move whole bursts (measured: a 32-item burst through [`ring::Ring`] cost 1.1-1.8 ns per item
//! against 22-30 ns per item pushed and popped one by one through `ArrayQueue`, one thread, release build).
//!
//! Not supported: buffers shared by reference (DPDK's mbuf reference count, clones, indirect and external-buffer
//! mbufs: an [`Mbuf`] has exactly one owner), a private area per buffer, pools that grow after creation, pools on a
//! chosen NUMA node (the memory comes from wherever [`hugepage`] finds it), and pools shared between processes.

#![deny(clippy::undocumented_unsafe_blocks)]

mod batch;
mod free;
pub mod lcore;
mod mbuf;
mod offload;
mod pool;
pub mod ring;

pub use batch::{PacketBatch, DEFAULT_BURST, MAX_BURST};
pub use free::free_raw_bulk;
pub use mbuf::{Mbuf, MbufHeader, RxFrame, RxRearm, Segment, NO_PORT};
pub use offload::{ol_flags, ptype, TxOffload};
pub use pool::{Mempool, PoolConfig, PoolId, DEFAULT_DATA_ROOM, DEFAULT_HEADROOM, MAX_CACHE_SIZE};

/// Errors from creating pools.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration cannot be built.
    #[error("{0}")]
    InvalidConfig(String),
    /// A live pool already has this name.
    #[error("a mempool named {0:?} already exists; pick another name or look it up with Mempool::lookup")]
    NameExists(String),
    /// The memory could not be had.
    #[error("mempool {pool}: {source}")]
    Memory {
        /// The pool being created.
        pool: String,
        /// Why memory failed.
        #[source]
        source: hugepage::Error,
    },
}

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
