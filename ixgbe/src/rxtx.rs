//! The hot path: Intel advanced-descriptor RX and TX rings, generic over the register space `R` and over the
//! device family `F` (where the queue registers live and the few bits that differ), so that the 82599/X540
//! ([`crate::Ixgbe`]) and the 82576 ([`crate::igb`]) run the same ring code.
//!
//! RX (fact sheet section 8.1): the ring is filled with buffers from the mempool; a burst reads the status dword
//! of the next descriptor, stops at the first without DD, and only after DD (an acquire load and [`dma_rmb`])
//! reads the rest. Consumed slots are refilled in bulk once `free_thresh` of them are held, the read format is
//! rewritten, and RDT moves once per refill, after [`dma_wmb`]. Frames that span several descriptors (EOP = 0)
//! become Mbuf chains, also across bursts.
//!
//! TX (section 8.2): data descriptors (plus a context descriptor when checksum offload parameters change), RS set
//! on the last descriptor of the packet that completes each group of `rs_thresh` descriptors; cleanup checks DD
//! of the oldest RS descriptor only when fewer than `free_thresh` slots are free, and frees in bulk. One TDT write
//! per burst, after [`dma_wmb`].
//!
//! Both paths have a fast loop for the common packet (one descriptor, no offload, no error) that walks the ring in
//! contiguous runs without per-packet wrap checks, four packets per step with one test per four (`rx_fast_run`
//! with SSE2 shuffles into the Mbuf fields on x86-64, built a second time for AVX and chosen by a flag set at
//! creation, `tx_groups`); a burst that fits one run is one call of each, and anything else continues out of line
//! (`rx_into_general`, `tx_from_general`), falling back to a general path (chains, errors, checksum contexts) per
//! packet. Shadow rings hold owned raw pointers whose ownership follows the ring
//! indices. RX buffers come from the pool's raw allocation (stale metadata, as in DPDK): the ring writes their
//! rearm word when it posts them and every RX field when it receives into them. TX checks at enqueue that a packet
//! is a single segment of the port's pool; RS groups of such packets go back with one bulk put and no per-buffer
//! test (DPDK's fast free), others through `mempool::free_raw_bulk`. Neither path allocates, locks, or makes a
//! dynamic call per packet.

use std::marker::PhantomData;
use std::mem::offset_of;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hugepage::Allocator;
use mempool::{ol_flags, ptype, Mbuf, MbufHeader, Mempool, PacketBatch, PoolId, RxRearm};
use pktio::bar::RegisterSpace;
use pktio::barrier::{dma_rmb, dma_wmb};
use pktio::dma::{DmaMapper, DmaMapping};
use pktio::stats::{RxQueueStats, TxQueueStats};
use pktio::{Error, Result, RxQueue, TxQueue};

use crate::desc::{rx, tx, RxDesc, RxWriteback, TxContext, TxContextDesc, TxData, TxDesc};
use crate::regs::{PollTimeout, Reg, Regs};

/// Implements the per-queue register functions of [`Family`] by forwarding to the functions of the same names in
/// the register module `$regs` (each family's module has its own offsets).
#[macro_export]
#[doc(hidden)]
macro_rules! family_queue_regs {
    ($regs:ident) => {
        $crate::family_queue_regs!(@fns $regs; rdbal rdbah rdlen srrctl rdh rdt rxdctl tdbal tdbah tdlen tdh tdt txdctl);
    };
    (@fns $regs:ident; $($name:ident)*) => {
        $(
            fn $name(q: u16) -> Reg {
                $regs::$name(q)
            }
        )*
    };
}

/// Where a device family keeps its queue registers, and the bits that differ between families.
pub trait Family: Send + Sync + 'static {
    /// Driver name, for errors.
    const DRIVER: &'static str;
    /// RX descriptor base low of queue `q`.
    fn rdbal(q: u16) -> Reg;
    /// RX descriptor base high.
    fn rdbah(q: u16) -> Reg;
    /// RX ring length.
    fn rdlen(q: u16) -> Reg;
    /// Split receive control.
    fn srrctl(q: u16) -> Reg;
    /// RX head.
    fn rdh(q: u16) -> Reg;
    /// RX tail.
    fn rdt(q: u16) -> Reg;
    /// RX descriptor control.
    fn rxdctl(q: u16) -> Reg;
    /// TX descriptor base low.
    fn tdbal(q: u16) -> Reg;
    /// TX descriptor base high.
    fn tdbah(q: u16) -> Reg;
    /// TX ring length.
    fn tdlen(q: u16) -> Reg;
    /// TX head.
    fn tdh(q: u16) -> Reg;
    /// TX tail.
    fn tdt(q: u16) -> Reg;
    /// TX descriptor control.
    fn txdctl(q: u16) -> Reg;
    /// SRRCTL value for advanced one-buffer descriptors with `buf_kb` KiB buffers (drop when out of descriptors
    /// when `drop_en`).
    fn srrctl_value(buf_kb: u32, drop_en: bool) -> u32;
    /// RXDCTL/TXDCTL queue enable bit.
    const QUEUE_ENABLE: u32;
    /// TXDCTL value (thresholds) before the enable bit; WTHRESH must be 0 with RS batching.
    const TXDCTL_INIT: u32;
    /// TXDCTL bits written to disable a queue.
    const TXDCTL_DISABLE: u32;
    /// RX extended error: MAC error (CRC, length, symbol...).
    const RX_ERR_RXE: u32;
    /// RX extended error: IPv4 header checksum bad.
    const RX_ERR_IPE: u32;
    /// RX extended error: L4 checksum bad.
    const RX_ERR_L4E: u32;
    /// `(status_error >> RX_CSUM_ERR_SHIFT) & 3` gives (L4E, IPE) in bits (0, 1): the two error bits are adjacent
    /// in both families.
    const RX_CSUM_ERR_SHIFT: u32;
    /// Largest RX buffer SRRCTL can describe, in KiB.
    const MAX_RX_BUF_KB: u32 = 16;
    /// Family-specific per-queue RX set-up (e.g. DCA bits), queue disabled.
    fn rx_queue_extra<R: RegisterSpace>(_regs: &Regs<R>, _q: u16) {}
    /// Family-specific per-queue TX set-up, queue disabled.
    fn tx_queue_extra<R: RegisterSpace>(_regs: &Regs<R>, _q: u16) {}
}

/// Ring index arithmetic. Ring sizes need not be powers of two (DPDK allows any multiple of 8).
pub mod idx {
    /// `i + k` modulo `n` (`i < n`, `k <= n`).
    #[inline(always)]
    pub const fn add(i: usize, k: usize, n: usize) -> usize {
        let j = i + k;
        if j >= n {
            j - n
        } else {
            j
        }
    }

    /// `i - 1` modulo `n`.
    #[inline(always)]
    pub const fn prev(i: usize, n: usize) -> usize {
        if i == 0 {
            n - 1
        } else {
            i - 1
        }
    }

    /// Slots from `from` up to (not including) `to`, going forward around a ring of `n`.
    #[inline(always)]
    pub const fn dist(from: usize, to: usize, n: usize) -> usize {
        if to >= from {
            to - from
        } else {
            to + n - from
        }
    }
}

/// Ring and threshold settings of one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingConfig {
    /// Descriptors.
    pub size: u16,
    /// RX: refill when this many descriptors are held. TX: clean when fewer than this many are free.
    pub free_thresh: u16,
    /// TX: one RS per this many descriptors.
    pub rs_thresh: u16,
    /// RX: drop frames when out of descriptors instead of back-pressuring the packet buffer.
    pub drop_en: bool,
    /// How long to wait for a queue to enable or disable.
    pub enable_timeout: Duration,
}

impl RingConfig {
    /// DPDK's defaults (thresholds 32), scaled down for small rings.
    pub fn new(size: u16) -> RingConfig {
        let thresh = 32.min(size / 4).max(1);
        RingConfig {
            size,
            free_thresh: thresh,
            rs_thresh: thresh,
            drop_en: true,
            enable_timeout: Duration::from_millis(10),
        }
    }
}

/// Ring memory: allocated, zeroed, made reachable by the device. The mapping guard owns the memory, so it is
/// unmapped before it is freed; the ring drops it only after its `Drop` disabled the queue.
struct RingMemory {
    map: DmaMapping,
}

impl RingMemory {
    fn new(allocator: &Allocator, mapper: &Arc<dyn DmaMapper>, bytes: usize, what: &str) -> Result<RingMemory> {
        let mem = allocator.allocate(bytes).map_err(|e| Error::InvalidConfig {
            port: what.to_string(),
            reason: format!("cannot allocate {bytes} bytes of descriptor ring memory: {e}"),
        })?;
        if mem.iova_at(0).is_none() || mem.contiguous_from(0) < bytes {
            return Err(Error::InvalidConfig {
                port: what.to_string(),
                reason: format!("descriptor ring of {bytes} bytes is not IOVA-contiguous; use larger hugepages"),
            });
        }
        Ok(RingMemory { map: mapper.map(&Arc::new(mem))? })
    }

    fn as_ptr(&self) -> *mut u8 {
        self.map.memory().as_ptr()
    }

    fn iova(&self) -> u64 {
        self.map.memory().iova_at(0).unwrap_or(0)
    }
}

fn split_iova(iova: u64) -> (u32, u32) {
    (iova as u32, (iova >> 32) as u32)
}

/// Disables a queue through its control register and waits (bounded) for the enable bit to drop.
fn disable_queue<R: RegisterSpace>(regs: &Regs<R>, ctl: Reg, enable: u32, extra: u32, timeout: Duration) -> bool {
    let v = regs.read(ctl);
    regs.write(ctl, (v & !enable) | extra);
    regs.poll(ctl, enable, 0, timeout).is_ok()
}

// ------------------------------------------------------------------------------------------------------------------
// RX
// ------------------------------------------------------------------------------------------------------------------

/// Packet type from write-back dword 0 bits 9:4 (IPv4, IPv4-ext, IPv6, IPv6-ext, TCP, UDP).
const PTYPE_TABLE: [u32; 64] = {
    let mut t = [0u32; 64];
    let mut i = 0;
    while i < 64 {
        let mut v = ptype::L2_ETHER;
        if i & 0b11 != 0 {
            v |= ptype::L3_IPV4;
        } else if i & 0b1100 != 0 {
            v |= ptype::L3_IPV6;
        }
        if v & ptype::L3_MASK != 0 {
            if i & 0b01_0000 != 0 {
                v |= ptype::L4_TCP;
            } else if i & 0b10_0000 != 0 {
                v |= ptype::L4_UDP;
            }
        }
        t[i] = v;
        i += 1;
    }
    t
};

/// Checksum flags from (L4CS, IPCS, L4E, IPE) in bits 0..3 of the index.
const CSUM_TABLE: [u64; 16] = {
    let mut t = [0u64; 16];
    let mut i = 0;
    while i < 16 {
        let (l4cs, ipcs, l4e, ipe) = (i & 1 != 0, i & 2 != 0, i & 4 != 0, i & 8 != 0);
        let mut f = 0;
        if ipcs {
            f |= if ipe { ol_flags::RX_IP_CKSUM_BAD } else { ol_flags::RX_IP_CKSUM_GOOD };
        }
        if l4cs {
            f |= if l4e { ol_flags::RX_L4_CKSUM_BAD } else { ol_flags::RX_L4_CKSUM_GOOD };
        }
        t[i] = f;
        i += 1;
    }
    t
};

/// Write-back dword 0 bits that [`rx_flags`] reads: RSS type 3:0, packet type 9:4.
const RX_INFO_KEY: u32 = 0x3FF;

/// Status/error bits that [`rx_flags`] reads: L4CS, IPCS, UDPV (for the 82599's UDP zero-checksum errata), and
/// the two checksum error bits.
#[inline(always)]
const fn rx_csum_bits<F: Family>() -> u32 {
    rx::STAT_L4CS | rx::STAT_IPCS | rx::STAT_UDPV | (0b11 << F::RX_CSUM_ERR_SHIFT)
}

/// An L4 checksum error on a UDP frame whose checksum field is 0 (UDPV clear): what the 82599's UDP zero-checksum
/// errata reports (fact sheet §7.2, §15: TCPE/L4E on a UDP frame with checksum 0, "no checksum").
#[inline(always)]
fn udp_zero_csum_error<F: Family>(pkt_info: u32, status_error: u32) -> bool {
    status_error & (F::RX_ERR_L4E | rx::STAT_UDPV) == F::RX_ERR_L4E && pkt_info & rx::PTYPE_UDP != 0
}

/// Offload flags and packet type of a completed descriptor. `udp_csum_zero_err`: the queue's device has the
/// 82599's UDP zero-checksum errata ([`udp_zero_csum_error`]), so such an error is not reported as
/// `RX_L4_CKSUM_BAD` but as unknown (neither flag), as DPDK does (`rx_udp_csum_zero_err`). DPDK masks every UDP
/// L4 error on the 82599; testing UDPV keeps a wrong non-zero checksum reported bad.
#[inline(always)]
fn rx_flags<F: Family>(pkt_info: u32, status_error: u32, udp_csum_zero_err: bool) -> (u64, u32) {
    debug_assert_eq!(F::RX_ERR_L4E, 1 << F::RX_CSUM_ERR_SHIFT);
    debug_assert_eq!(F::RX_ERR_IPE, 2 << F::RX_CSUM_ERR_SHIFT);
    let l4cs_ipcs = (status_error >> 5) & 0b11; // L4CS = bit 5, IPCS = bit 6
    let errs = (status_error >> F::RX_CSUM_ERR_SHIFT) & 0b11;
    let mut csum = CSUM_TABLE[(l4cs_ipcs | errs << 2) as usize];
    if udp_csum_zero_err && udp_zero_csum_error::<F>(pkt_info, status_error) {
        csum &= !ol_flags::RX_L4_CKSUM_BAD;
    }
    // RSS type != 0 -> RX_RSS_HASH, without a branch.
    let rss = (((pkt_info & rx::RSS_TYPE.mask()) + rx::RSS_TYPE.mask()) >> rx::RSS_TYPE.width) as u64;
    let pt = PTYPE_TABLE[((pkt_info >> 4) & 0x3F) as usize];
    (csum | (rss * ol_flags::RX_RSS_HASH), pt)
}

/// One RX queue: its descriptor ring, the buffers posted to it, and its counters. Owned by one thread.
pub struct RxRing<R: RegisterSpace, F: Family> {
    ring: NonNull<RxDesc>,
    size: usize,
    /// Next descriptor to look at.
    next: usize,
    /// Last value written to RDT: that slot holds a buffer the device does not own yet.
    tail: usize,
    /// Consumed slots waiting for a refill: (tail, next) exclusive.
    nb_hold: usize,
    free_thresh: usize,
    /// The buffer posted in each slot, as an owned raw pointer. Ownership follows the indices, not the contents:
    /// the slots from `next` through `tail` (`size - nb_hold` of them) own their buffer; the `nb_hold` consumed
    /// slots after `tail` hold stale pointers that were handed on and are overwritten by the refill.
    shadow: Box<[NonNull<MbufHeader>]>,
    /// Longest frame a fresh buffer of the pool holds (its data room).
    max_len: u16,
    /// Data start within a posted buffer: its IOVA is `buf_iova + headroom`.
    headroom: u64,
    /// The rearm word written into every buffer when it is posted (data start at `headroom`, one segment, our
    /// port, the pool's buffer length): buffers come from the pool's raw allocation with stale metadata.
    rearm: RxRearm,
    memo: RxMemo,
    /// The 82599's UDP zero-checksum errata: see [`rx_flags`].
    udp_csum_zero_err: bool,
    /// The CPU has AVX: the fast run uses [`rx_fast_run_avx`].
    avx: bool,
    /// Head of a frame whose later descriptors have not completed yet.
    pending: Option<Mbuf>,
    /// A segment of the pending frame was bad: drop the frame at its end.
    pending_bad: bool,
    pool: Mempool,
    regs: Regs<R>,
    rdt: usize,
    queue: u16,
    stats: Arc<RxQueueStats>,
    config: RingConfig,
    started: bool,
    // Dropped after `Drop::drop` disabled the queue: the ring's mapping, then the pool's.
    _mem: RingMemory,
    _pool_map: DmaMapping,
    _family: PhantomData<F>,
}

// SAFETY: the ring owns its descriptor memory (RingMemory) and its buffers; the raw pointer is into that memory and
// is only used by the owning thread. Moving the ring to another thread moves all of it.
unsafe impl<R: RegisterSpace, F: Family> Send for RxRing<R, F> {}

/// What an RX ring needs from its device.
pub struct RxSetup<'a, R> {
    /// Register access.
    pub regs: &'a Regs<R>,
    /// Ring memory.
    pub allocator: &'a Allocator,
    /// DMA map of the device.
    pub mapper: &'a Arc<dyn DmaMapper>,
    /// Buffers.
    pub pool: &'a Mempool,
    /// Queue index.
    pub queue: u16,
    /// Port number stamped into packets.
    pub port_id: u16,
    /// Counters (shared with the device).
    pub stats: Arc<RxQueueStats>,
    /// Port name for errors.
    pub port: &'a str,
    /// The device has the 82599's UDP zero-checksum errata (fact sheet §7.2, §15): an L4 error on a UDP frame whose
    /// checksum field is 0 (UDPV clear) is reported as unknown, not bad.
    pub udp_csum_zero_err: bool,
}

impl<R: RegisterSpace, F: Family> RxRing<R, F> {
    /// Allocates and maps the ring, fills it with buffers and programs the queue registers (queue still
    /// disabled; [`RxRing::enable`] starts it). Fact sheet section 6.2 steps 1-8.
    pub fn new(setup: RxSetup<'_, R>, config: RingConfig) -> Result<Self> {
        let size = config.size as usize;
        let bad = |reason: String| Error::InvalidConfig { port: setup.port.to_string(), reason };
        if size < 8 || !size.is_multiple_of(8) {
            return Err(bad(format!("RX ring of {size} descriptors: must be a multiple of 8, at least 8")));
        }
        let buf_kb = (setup.pool.data_room() as u32 >> 10).min(F::MAX_RX_BUF_KB);
        if buf_kb == 0 {
            return Err(bad(format!(
                "mempool {} has a {}-byte data room; RX buffers must hold at least 1 KiB",
                setup.pool.name(),
                setup.pool.data_room()
            )));
        }
        let pool_map = setup.mapper.map(setup.pool.memory())?;
        let mem = RingMemory::new(setup.allocator, setup.mapper, size * size_of::<RxDesc>(), setup.port)?;
        let ring = NonNull::new(mem.as_ptr().cast::<RxDesc>()).ok_or_else(|| bad("null ring".into()))?;
        let q = setup.queue;
        let regs = setup.regs.clone();

        // 1. disable the queue first.
        disable_queue(&regs, F::rxdctl(q), F::QUEUE_ENABLE, 0, config.enable_timeout);

        let mut shadow: Box<[NonNull<MbufHeader>]> = vec![NonNull::dangling(); size].into_boxed_slice();
        if !setup.pool.alloc_raw_bulk(&mut shadow) {
            return Err(bad(format!(
                "mempool {} ran out filling RX queue {q} ({size} descriptors, {} buffers free)",
                setup.pool.name(),
                setup.pool.available()
            )));
        }
        // From here every slot owns its buffer (next = 0, tail = size - 1, nb_hold = 0): Drop frees them.
        let headroom = setup.pool.headroom() as u64;
        let rearm = setup.pool.rx_rearm(setup.port_id);
        for (i, &h) in shadow.iter().enumerate() {
            // SAFETY: a buffer of this pool the slot owns, fresh from its raw allocation.
            unsafe { rearm.apply(h) };
            let iova = rx_buffer_iova(h, headroom);
            // SAFETY: i < size: inside the ring memory, which the device does not own yet (queue disabled).
            unsafe { ring.as_ptr().add(i).write_volatile(RxDesc::read(iova)) };
        }
        let (lo, hi) = split_iova(mem.iova());
        regs.write(F::rdbal(q), lo);
        regs.write(F::rdbah(q), hi);
        regs.write(F::rdlen(q), (size * size_of::<RxDesc>()) as u32);
        regs.write(F::rdh(q), 0);
        regs.write(F::rdt(q), 0);
        regs.write(F::srrctl(q), F::srrctl_value(buf_kb, config.drop_en));
        F::rx_queue_extra(&regs, q);
        Ok(RxRing {
            ring,
            size,
            next: 0,
            tail: size - 1,
            nb_hold: 0,
            free_thresh: (config.free_thresh as usize).clamp(1, size - 1),
            shadow,
            max_len: setup.pool.data_room(),
            headroom,
            rearm,
            memo: RxMemo::new::<F>(),
            udp_csum_zero_err: setup.udp_csum_zero_err,
            #[cfg(target_arch = "x86_64")]
            avx: std::arch::is_x86_feature_detected!("avx"),
            #[cfg(not(target_arch = "x86_64"))]
            avx: false,
            pending: None,
            pending_bad: false,
            pool: setup.pool.clone(),
            rdt: F::rdt(q).0,
            regs,
            queue: q,
            stats: setup.stats,
            config,
            started: false,
            _mem: mem,
            _pool_map: pool_map,
            _family: PhantomData,
        })
    }

    /// Enables the queue and hands N-1 buffers to the device (section 6.2 steps 9-10). A queue that does not
    /// report enabled within the ring's `enable_timeout` is the poll's timeout (RXDCTL), for the caller to report.
    pub fn enable(&mut self) -> std::result::Result<(), PollTimeout> {
        let q = self.queue;
        self.regs.set_bits(F::rxdctl(q), F::QUEUE_ENABLE);
        self.regs.poll(F::rxdctl(q), F::QUEUE_ENABLE, F::QUEUE_ENABLE, self.config.enable_timeout)?;
        self.started = true;
        self.regs.write(F::rdh(q), 0);
        dma_wmb();
        self.regs.write(F::rdt(q), self.tail as u32);
        Ok(())
    }

    /// Queue index.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// Buffers currently owned by the ring (posted or held in a partial chain).
    pub fn buffers_held(&self) -> usize {
        self.size - self.nb_hold + self.pending.as_ref().map_or(0, |m| m.nb_segs() as usize)
    }

    /// Refills every held slot it can (in chunks of at most 64, all-or-nothing per chunk, split at the ring's
    /// end), rewrites their read format and moves RDT once. The common case (one chunk that does not reach the
    /// ring's end) is one allocation and one posting loop, without the chunk loop.
    #[inline]
    fn refill(&mut self) {
        const CHUNK: usize = 64;
        let size = self.size;
        let mut start = self.tail + 1;
        let mut left = self.nb_hold;
        if left <= CHUNK && start + left <= size {
            // SAFETY: start + left <= size. These are consumed slots (after RDT, before `next`): their pointers
            // were handed on, so they own nothing and may be overwritten; the device does not own their
            // descriptors.
            let slots = unsafe { self.shadow.get_unchecked_mut(start..start + left) };
            if !self.pool.alloc_raw_bulk(slots) {
                self.stats.nombuf.add(left as u64);
                return;
            }
            // SAFETY: as above; start + left <= size: inside the ring.
            unsafe { self.post(start, left) };
            self.nb_hold = 0;
            self.tail = start + left - 1;
            dma_wmb();
            self.regs.space().write32(self.rdt, self.tail as u32);
            return;
        }
        if start == size {
            start = 0;
        }
        let mut done = 0;
        while left > 0 {
            let run = left.min(size - start).min(CHUNK);
            // SAFETY: start + run <= size; consumed slots as above.
            let slots = unsafe { self.shadow.get_unchecked_mut(start..start + run) };
            if !self.pool.alloc_raw_bulk(slots) {
                self.stats.nombuf.add(left as u64);
                break;
            }
            // SAFETY: as above.
            unsafe { self.post(start, run) };
            done += run;
            left -= run;
            start = idx::add(start, run, size);
        }
        if done > 0 {
            self.nb_hold -= done;
            self.tail = idx::add(self.tail, done, size);
            dma_wmb();
            self.regs.space().write32(self.rdt, self.tail as u32);
        }
    }

    /// Posts the fresh buffers of shadow slots `start..start + n`: their rearm word, and their descriptors' read
    /// format.
    ///
    /// # Safety
    /// start + n <= size; the slots hold fresh buffers of our pool that they own, and the device does not own
    /// their descriptors.
    #[inline(always)]
    unsafe fn post(&mut self, start: usize, n: usize) {
        let headroom = self.headroom;
        let rearm = self.rearm;
        // SAFETY: the caller's contract: inside the ring and the shadow array.
        let (d, slots) = unsafe { (self.ring.as_ptr().add(start), self.shadow.as_ptr().add(start)) };
        // The IOVA is read from the header (computing it from the pointer saves an instruction but measured
        // slower: the read brings in the header line that the rearm store writes).
        let post = |d: *mut RxDesc, h: NonNull<MbufHeader>| {
            let iova = rx_buffer_iova(h, headroom);
            // SAFETY: `d` is a descriptor the device does not own (caller's contract); `h` is a fresh buffer of our
            // pool that its slot now owns.
            unsafe {
                rearm.apply(h);
                std::ptr::addr_of_mut!((*d).qw0).write_volatile(iova);
                std::ptr::addr_of_mut!((*d).qw1).write_volatile(0);
            }
        };
        let mut k = 0;
        let end = n & !3;
        while k != end {
            for j in 0..4 {
                // SAFETY: k + j < n.
                unsafe { post(d.add(k + j), *slots.add(k + j)) };
            }
            k += 4;
        }
        while k < n {
            // SAFETY: k < n.
            unsafe { post(d.add(k), *slots.add(k)) };
            k += 1;
        }
    }

    /// The general completion path: chains, error write-backs. Returns the finished packet, if any.
    #[cold]
    #[inline(never)]
    fn complete_slow(&mut self, mut m: Mbuf, wb: RxWriteback, errors: &mut u64) -> Option<Mbuf> {
        let st = wb.status_error;
        let seg_ok = wb.length <= self.max_len;
        // SAFETY: a single segment posted with our rearm word (data start at the headroom), so a length up to
        // max_len (the data room) fits; a longer one is recorded as 0 and the frame dropped below.
        unsafe { m.set_rx_unchecked(if seg_ok { wb.length } else { 0 }, 0, 0, 0) };
        let m = match self.pending.take() {
            Some(mut head) => {
                head.chain(m);
                head
            }
            None => m,
        };
        if st & rx::STAT_EOP == 0 {
            // More descriptors follow (a frame larger than one buffer); a bad segment poisons the chain.
            if !seg_ok {
                self.pending_bad = true;
            }
            self.pending = Some(m);
            return None;
        }
        let bad = !seg_ok || std::mem::take(&mut self.pending_bad) || st & F::RX_ERR_RXE != 0;
        if bad {
            // A MAC error (or a length the buffer cannot hold): drop the whole frame.
            *errors += 1;
            return None;
        }
        let mut m = m;
        let (flags, pt) = rx_flags::<F>(wb.pkt_info, st, self.udp_csum_zero_err);
        m.set_ol_flags(flags);
        m.set_packet_type(pt);
        m.set_rss_hash(wb.rss_hash);
        Some(m)
    }
}

impl<R: RegisterSpace, F: Family> RxRing<R, F> {
    /// Receives into `spare` (uninitialised slots of a batch); returns (descriptors consumed, packets written to
    /// `spare`, bytes, errors).
    ///
    /// The common frame (one descriptor, DD and EOP, no MAC error, fits the buffer, no chain pending) is handled
    /// by [`rx_fast_run`]; anything else goes through [`RxRing::complete_slow`] one descriptor at a time. The scan
    /// is bounded by the descriptors the device owns and walks the ring in at most two contiguous runs (no
    /// per-packet wrap check).
    ///
    /// The common burst (no chain pending, the descriptors it may take do not wrap, and all of them are common
    /// frames) is one call of the fast run; anything else continues in [`RxRing::rx_into_general`].
    ///
    /// Returns how many packets it wrote to `spare`; `nb_hold` and the counters move here (each path once), so
    /// that no tuple of results has to be merged between the two.
    #[inline(always)]
    fn rx_into(&mut self, spare: &mut [NonNull<MbufHeader>]) -> usize {
        let size = self.size;
        let i = self.next;
        // Descriptors the device may have completed: from `next` up to (not including) RDT.
        let left = spare.len().min(size - 1 - self.nb_hold);
        if left == 0 || left > size - i || self.pending.is_some() {
            return self.rx_into_general(spare, i, left, 0, 0);
        }
        // SAFETY: i + left <= size: inside the ring and the shadow array, and every slot there is between `next`
        // and RDT, so it owns its buffer; left <= spare.len().
        let (n, b) = unsafe { self.fast_run(i, left, spare.as_mut_ptr()) };
        if n < left {
            return self.rx_into_general(spare, i + n, left - n, n, b);
        }
        self.next = if i + n == size { 0 } else { i + n };
        // n = left > 0 descriptors consumed, all of them packets, no errors.
        self.nb_hold += n;
        self.stats.packets.add(n as u64);
        self.stats.bytes.add(b);
        n
    }

    /// [`rx_fast_run`] (or its AVX build) over the `n` descriptors from slot `i`, into `out`.
    ///
    /// # Safety
    /// As [`rx_fast_run`]: i + n <= size, the slots own their buffers, `out` has room for `n`.
    #[inline(always)]
    unsafe fn fast_run(&mut self, i: usize, n: usize, out: *mut NonNull<MbufHeader>) -> (usize, u64) {
        // SAFETY: the caller's contract.
        let (d, sh) = unsafe { (self.ring.as_ptr().add(i).cast_const(), self.shadow.as_ptr().add(i)) };
        #[cfg(target_arch = "x86_64")]
        if self.avx {
            // SAFETY: the caller's contract; the CPU has AVX (checked at creation).
            return unsafe { rx_fast_run_avx::<F>(d, sh, n, out, self.max_len, &mut self.memo) };
        }
        // SAFETY: the caller's contract.
        unsafe { rx_fast_run::<F>(d, sh, n, out, self.max_len, &mut self.memo) }
    }

    /// The rest of [`RxRing::rx_into`] from slot `i` with `left` descriptors to look at, after `done` were
    /// consumed (and written to `spare`) with `bytes`: runs around the ring's end, chains, errors. Returns the
    /// packets written to `spare` in all; moves `nb_hold` and the counters for all of them.
    #[inline(never)]
    fn rx_into_general(
        &mut self,
        spare: &mut [NonNull<MbufHeader>],
        i: usize,
        left: usize,
        done: usize,
        bytes: u64,
    ) -> usize {
        let size = self.size;
        let ring = self.ring.as_ptr();
        let (mut i, mut left) = (if i == size { 0 } else { i }, left);
        let (mut consumed, mut got, mut bytes, mut errors) = (done, done, bytes, 0u64);
        'runs: while left > 0 {
            let end = i + left.min(size - i);
            let start = i;
            while i < end {
                if self.pending.is_none() {
                    // SAFETY: i..end lies inside the ring and the shadow array, and every slot there is between
                    // `next` and RDT, so it owns its buffer; got + (end - i) <= spare.len() because
                    // got <= consumed + (i - start) and end - start <= left.
                    let (n, b) = unsafe { self.fast_run(i, end - i, spare.as_mut_ptr().add(got)) };
                    i += n;
                    got += n;
                    bytes += b;
                    if i == end {
                        break;
                    }
                }
                // SAFETY: i < size: a descriptor of our ring.
                let d = unsafe { ring.add(i) };
                // SAFETY: an aligned dword of the ring memory, which lives as long as `self`.
                let st = unsafe { AtomicU32::from_ptr(RxDesc::status_ptr(d).cast_mut()).load(Ordering::Acquire) };
                if st & rx::STAT_DD == 0 {
                    consumed += i - start;
                    break 'runs;
                }
                dma_rmb();
                // SAFETY: DD is set, so the device is done with it.
                let wb = unsafe { d.read_volatile() }.as_writeback();
                // SAFETY: i < size, a slot between `next` and RDT: it owns its buffer, which moves into `m` (the
                // slot becomes a consumed one).
                let m = unsafe { Mbuf::from_raw(*self.shadow.get_unchecked(i)) };
                i += 1;
                if let Some(m) = self.complete_slow(m, wb, &mut errors) {
                    bytes += m.pkt_len() as u64;
                    // SAFETY: got <= consumed + (i - start) <= spare.len().
                    unsafe { *spare.get_unchecked_mut(got) = m.into_raw() };
                    got += 1;
                }
            }
            consumed += i - start;
            left -= i - start;
            if i == size {
                i = 0;
            }
        }
        self.next = if i == size { 0 } else { i };
        if consumed != 0 {
            self.nb_hold += consumed;
            self.stats.packets.add(got as u64);
            self.stats.bytes.add(bytes);
            if errors != 0 {
                self.stats.errors.add(errors);
            }
        }
        got
    }
}

/// The last fast-path frame's (key, ol_flags, packet_type): flags and packet type depend only on a few status
/// bits and the packet-info bits, and a burst mostly repeats one combination. Starts as key 0 (no packet-info
/// bits, no checksum bits) with its flags, so it is always a valid entry. Never a key of
/// [`udp_zero_csum_error`]: the fast run leaves those frames to the slow path, whose flags depend on the queue.
#[derive(Debug, Clone, Copy)]
struct RxMemo(u64, u64, u32);

impl RxMemo {
    fn new<F: Family>() -> RxMemo {
        let (f, t) = rx_flags::<F>(0, 0, false);
        RxMemo(0, f, t)
    }
}

/// Reads the status dword of a descriptor the device may be writing (an atomic acquire load: the rest of the
/// descriptor is read only after DD was seen, and [`dma_rmb`]).
///
/// # Safety
/// `d` must point into ring memory that lives as long as the call.
#[inline(always)]
unsafe fn rx_status(d: *const RxDesc) -> u32 {
    // SAFETY: an aligned dword of the ring memory (caller's contract).
    unsafe { AtomicU32::from_ptr(RxDesc::status_ptr(d).cast_mut()).load(Ordering::Acquire) }
}

/// Write-back dword 0-1 (packet info, RSS hash) and the length of a descriptor whose DD was seen.
///
/// # Safety
/// `d` must point into ring memory, and its DD must have been seen (then [`dma_rmb`]).
#[inline(always)]
unsafe fn rx_info_len(d: *const RxDesc) -> (u64, u16) {
    // SAFETY: the caller's contract: the device is done with this descriptor. Fields read one by one.
    unsafe {
        (
            std::ptr::addr_of!((*d).qw0).read_volatile(),
            d.cast::<u8>().add(offset_of!(RxWriteback, length)).cast::<u16>().read_volatile(),
        )
    }
}

/// Receives the leading run of common frames among the `n` descriptors at `d`: each one descriptor with DD and
/// EOP, no MAC error, a length that fits the buffer, and not a UDP zero-checksum error ([`udp_zero_csum_error`],
/// whose flags depend on the queue; checked only on a flag-key miss). Each such frame's buffer (from `shadow`, same index)
/// gets its metadata and is written to `out` (same index). Stops at the first other descriptor; returns how many
/// it took and their bytes.
///
/// Four descriptors at a time ([`rx_groups_sse2`] on x86-64) while they repeat the memo's flag key (the common
/// case: one traffic class per burst); from the first group that does not, one descriptor at a time to the end
/// of the run, which updates the memo for the next burst.
///
/// Kept out of line so that its loop has the registers to itself.
///
/// # Safety
/// `d`, `shadow` and `out` must be valid for `n` entries; the shadow entries must be owned buffers posted with
/// the ring's rearm word, whose data room is at least `max_len` (ownership of those taken moves to `out`); the
/// descriptors must be ring memory the device may write (read here with the DD-then-rest protocol).
#[inline(never)]
unsafe fn rx_fast_run<F: Family>(
    d: *const RxDesc,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    memo: &mut RxMemo,
) -> (usize, u64) {
    // SAFETY: the caller's contract, passed on.
    unsafe { rx_fast_run_body::<F>(d, shadow, n, out, max_len, memo) }
}

/// [`rx_fast_run`] compiled for AVX: the same code, but the SSE2 intrinsics of the groups get the VEX
/// three-operand forms (no register copies before the destructive two-operand ones: about ten per group of four).
/// Called when the CPU has AVX ([`RxRing`] checks once, at creation).
///
/// # Safety
/// As [`rx_fast_run`], and the CPU must support AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
#[inline(never)]
unsafe fn rx_fast_run_avx<F: Family>(
    d: *const RxDesc,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    memo: &mut RxMemo,
) -> (usize, u64) {
    // SAFETY: the caller's contract, passed on.
    unsafe { rx_fast_run_body::<F>(d, shadow, n, out, max_len, memo) }
}

/// The body of [`rx_fast_run`] and [`rx_fast_run_avx`].
///
/// # Safety
/// As [`rx_fast_run`].
#[inline(always)]
unsafe fn rx_fast_run_body<F: Family>(
    d: *const RxDesc,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    memo: &mut RxMemo,
) -> (usize, u64) {
    const FAST: u32 = rx::STAT_DD | rx::STAT_EOP;
    let mask = FAST | F::RX_ERR_RXE;
    let mut m0 = *memo;
    // Groups of four while they repeat the memo (x86-64: SSE2), then one at a time to the end of the run.
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's contract, passed on.
    let (mut k, mut bytes) = unsafe { rx_groups_sse2::<F>(d, shadow, n, out, max_len, &m0) };
    #[cfg(not(target_arch = "x86_64"))]
    let (mut k, mut bytes) = (0usize, 0u64);
    while k < n {
        // SAFETY: k < n: inside the ring.
        let dk = unsafe { d.add(k) };
        // SAFETY: ring memory.
        let st = unsafe { rx_status(dk) };
        if st & mask != FAST {
            break;
        }
        dma_rmb();
        // SAFETY: DD is set: the device is done with this descriptor.
        let (qw0, len) = unsafe { rx_info_len(dk) };
        if len > max_len {
            break;
        }
        let key = (qw0 as u32 & RX_INFO_KEY) as u64 | ((st & rx_csum_bits::<F>()) as u64) << 32;
        if key != m0.0 {
            if udp_zero_csum_error::<F>(qw0 as u32, st) {
                // Its flags depend on the queue (the 82599's errata): the slow path knows it.
                break;
            }
            let (f, t) = rx_flags::<F>(qw0 as u32, st, false);
            m0 = RxMemo(key, f, t);
        }
        // SAFETY: k < n; the caller's contract: an owned buffer posted with the rearm word, whose ownership
        // moves to `out[k]`.
        let mut m = unsafe { Mbuf::from_raw(*shadow.add(k)) };
        // SAFETY: len <= max_len, within the data room of a single segment.
        unsafe { m.set_rx_unchecked(len, m0.1, m0.2, (qw0 >> 32) as u32) };
        // SAFETY: k < n.
        unsafe { out.add(k).write(m.into_raw()) };
        bytes += len as u64;
        k += 1;
    }
    *memo = m0;
    (k, bytes)
}

/// The four-at-a-time part of [`rx_fast_run`]: takes groups of four descriptors while each repeats the memo's
/// flag key, and returns how many descriptors it took (a multiple of four) and their bytes.
///
/// A group's four status dwords are read first (acquire loads) and tested together: DD, EOP, no MAC error, the
/// memo's checksum bits. Only then are the four descriptors read whole (16-byte loads), and their packet info
/// (the memo's key bits) and lengths (their OR bounds each one: at most `max_len`) tested together. The Mbuf
/// fields are then built with SSE2 shuffles, two 16-byte stores per buffer ([`Mbuf::set_rx_blocks`]), as
/// DPDK's vector path does: `[ol_flags, packet_type, pkt_len]` from the memo and the length, `[data_len, vlan_tci
/// = 0, rss_hash, tx_offload = 0]` from the descriptor's length and hash.
///
/// # Safety
/// As [`rx_fast_run`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn rx_groups_sse2<F: Family>(
    d: *const RxDesc,
    shadow: *const NonNull<MbufHeader>,
    n: usize,
    out: *mut NonNull<MbufHeader>,
    max_len: u16,
    m0: &RxMemo,
) -> (usize, u64) {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi32, _mm_and_si128, _mm_cvtsi128_si32, _mm_load_si128, _mm_or_si128, _mm_set_epi32,
        _mm_set_epi64x, _mm_setzero_si128, _mm_shuffle_epi32, _mm_xor_si128,
    };
    const FAST: u32 = rx::STAT_DD | rx::STAT_EOP;
    // The status every descriptor of a group must have in `group_mask`, and the packet info in RX_INFO_KEY.
    let group_status = FAST | (m0.0 >> 32) as u32;
    let group_mask = FAST | F::RX_ERR_RXE | rx_csum_bits::<F>();
    // Value operations on SSE2 (part of x86-64) registers: safe intrinsics on current compilers, `unsafe` on
    // older ones, hence the allowance.
    #[allow(unused_unsafe)]
    // SAFETY: no memory operands.
    let (info, template, m1, m2) = unsafe {
        (
            _mm_set_epi32(0, 0, 0, m0.0 as u32 as i32),
            // ol_flags, then packet_type and a zero pkt_len (filled from the length lane).
            _mm_set_epi64x(m0.2 as i64, m0.1 as i64),
            // Of the shuffled descriptor [len|vlan, rss, info, len|vlan]: the length in the pkt_len lane ...
            _mm_set_epi32(0xFFFF, 0, 0, 0),
            // ... and data_len (vlan cleared), rss_hash, zero tx_offload.
            _mm_set_epi32(0, 0, -1, 0xFFFF),
        )
    };
    // Shuffle: lanes (3, 1, 0, 3) of the write-back [pkt_info, rss_hash, status_error, length|vlan].
    const SHUF: i32 = 3 | 1 << 2 | 3 << 6;
    let mut k = 0;
    let end = n & !3;
    // Lane 0: the lengths of the groups taken (at most 2^16 descriptors of less than 2^16 bytes: no overflow).
    #[allow(unused_unsafe)]
    // SAFETY: no memory operands.
    let mut sum = unsafe { _mm_setzero_si128() };
    while k != end {
        // SAFETY: k + 3 < n: inside the ring.
        let g = unsafe { d.add(k) };
        // SAFETY: as above.
        let (s0, s1, s2, s3) = unsafe { (rx_status(g), rx_status(g.add(1)), rx_status(g.add(2)), rx_status(g.add(3))) };
        if ((s0 ^ group_status) | (s1 ^ group_status) | (s2 ^ group_status) | (s3 ^ group_status)) & group_mask != 0 {
            break;
        }
        dma_rmb();
        // SAFETY: DD was seen on all four (then dma_rmb): the device is done with them; descriptors are 16-byte
        // aligned.
        let dv: [__m128i; 4] = unsafe { std::array::from_fn(|j| _mm_load_si128(g.add(j).cast())) };
        #[allow(unused_unsafe)]
        // SAFETY: no memory operands.
        let (sv, info_diff, lens) = unsafe {
            let sv: [__m128i; 4] = std::array::from_fn(|j| _mm_shuffle_epi32::<SHUF>(dv[j]));
            let x = |j: usize| _mm_xor_si128(dv[j], info);
            let info_diff = _mm_or_si128(_mm_or_si128(x(0), x(1)), _mm_or_si128(x(2), x(3)));
            let lens = _mm_or_si128(_mm_or_si128(sv[0], sv[1]), _mm_or_si128(sv[2], sv[3]));
            (sv, _mm_cvtsi128_si32(info_diff) as u32, _mm_cvtsi128_si32(lens) as u16)
        };
        // The OR of the lengths bounds each of them, so one compare covers four (a false alarm only sends the
        // group down the one-at-a-time path).
        if info_diff & RX_INFO_KEY != 0 || lens > max_len {
            break;
        }
        for (j, &sj) in sv.iter().enumerate() {
            #[allow(unused_unsafe)]
            // SAFETY: no memory operands.
            let (b1, b2) = unsafe { (_mm_or_si128(_mm_and_si128(sj, m1), template), _mm_and_si128(sj, m2)) };
            // SAFETY: no memory operands.
            sum = unsafe { _mm_add_epi32(sum, b2) };
            // SAFETY: k + j < n: an owned buffer posted with the rearm word (caller's contract), whose ownership
            // moves to `out[k + j]`; its length is at most `lens` <= max_len, within its data room; pkt_len and
            // data_len both come from the length lane.
            unsafe {
                let p = *shadow.add(k + j);
                ManuallyDrop::new(Mbuf::from_raw(p)).set_rx_blocks(b1, b2);
                out.add(k + j).write(p);
            }
        }
        k += 4;
    }
    #[allow(unused_unsafe)]
    // SAFETY: no memory operands.
    let bytes = unsafe { _mm_cvtsi128_si32(sum) } as u32 as u64;
    (k, bytes)
}

impl<R: RegisterSpace, F: Family> RxQueue for RxRing<R, F> {
    #[inline]
    fn rx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        // SAFETY: rx_into writes only uniquely owned packets (taken out of the shadow ring) into the first `got`
        // spare slots, and returns `got`. It also moves `nb_hold` and the counters.
        let got = unsafe { batch.fill_raw(|spare| self.rx_into(spare)) };
        if self.nb_hold >= self.free_thresh {
            // Also retries a refill that failed earlier (pool empty) while the ring is idle.
            self.refill();
        }
        got
    }
}

/// IOVA of the data start of a fresh RX buffer (its data offset is the pool's headroom).
#[inline(always)]
fn rx_buffer_iova(h: NonNull<MbufHeader>, headroom: u64) -> u64 {
    // A borrowed view: the buffer stays owned by the ring slot.
    // SAFETY: `h` is a live buffer the caller owns; the view is never dropped.
    let m = ManuallyDrop::new(unsafe { Mbuf::from_raw(h) });
    debug_assert_eq!(m.headroom() as u64, headroom);
    m.buf_iova() + headroom
}

impl<R: RegisterSpace, F: Family> Drop for RxRing<R, F> {
    fn drop(&mut self) {
        // The device must stop writing into our buffers before they go back to the pool.
        disable_queue(&self.regs, F::rxdctl(self.queue), F::QUEUE_ENABLE, 0, self.config.enable_timeout);
        self.regs.write(F::rdt(self.queue), 0);
        // The slots from `next` through `tail` own their buffers (at most two runs around the ring's end).
        let owned = self.size - self.nb_hold;
        let first = owned.min(self.size - self.next);
        // SAFETY: those slots own their buffers, each once; the device no longer writes into them, and the ring
        // is gone after this, so nothing uses them again.
        unsafe {
            mempool::free_raw_bulk(&self.shadow[self.next..self.next + first]);
            mempool::free_raw_bulk(&self.shadow[..owned - first]);
        }
        // pending (buffers), then the ring's and the pool's mappings (unmapped, then freed if last) drop here.
    }
}

// ------------------------------------------------------------------------------------------------------------------
// TX
// ------------------------------------------------------------------------------------------------------------------

/// Most data descriptors per packet (DPDK's limit for ixgbe).
pub const MAX_TX_SEGS: usize = 40;

const TX_CTX_FLAGS: u64 = ol_flags::TX_IP_CKSUM | ol_flags::TX_UDP_CKSUM | ol_flags::TX_VLAN;
const TX_BAD_FLAGS: u64 = ol_flags::TX_TCP_SEG;
/// In an `rs_fifo` entry: the group ending at this RS has slots without a packet.
const RS_HOLES: u32 = 1 << 31;
/// In an `rs_fifo` entry: the group may hold chains or packets of other pools than the port's (freed with a test
/// per packet; without this bit a hole-free group goes back to the port's pool in one put).
const RS_CHECK: u32 = 1 << 30;
const RS_FLAGS: u32 = RS_HOLES | RS_CHECK;
const TX_L4_SHIFT: u32 = 52;
const TX_L4_MASK: u64 = 0b11;
const TX_L4_TCP: u64 = 1;
const TX_L4_UDP: u64 = 3;

/// The context a packet needs: (vlan_macip_lens, type_tucmd_mlhl) as one key, and the data descriptor bits.
#[inline]
fn tx_context(m: &Mbuf) -> (u64, TxContextDesc, u32, u32) {
    let flags = m.ol_flags();
    let o = m.tx_offload();
    let l4 = (flags >> TX_L4_SHIFT) & TX_L4_MASK;
    let (l4t, txsm) = match l4 {
        TX_L4_TCP => (tx::L4T_TCP, tx::POPTS_TXSM),
        TX_L4_UDP => (tx::L4T_UDP, tx::POPTS_TXSM),
        _ => (tx::L4T_RSV, 0),
    };
    let ixsm = if flags & ol_flags::TX_IP_CKSUM != 0 { tx::POPTS_IXSM } else { 0 };
    let ipv4 = flags & ol_flags::TX_IPV4 != 0 || (flags & ol_flags::TX_IPV6 == 0 && ixsm != 0);
    let mut ctx = TxContextDesc::checksum(TxContext { mac_len: o.l2_len, ip_len: o.l3_len, ipv4, l4t, idx: 0 });
    let mut vle = 0;
    if flags & ol_flags::TX_VLAN != 0 {
        ctx.vlan_macip_lens = tx::VLAN.set(ctx.vlan_macip_lens, m.vlan_tci() as u32);
        vle = tx::DCMD_VLE;
    }
    let key = ctx.vlan_macip_lens as u64 | (ctx.type_tucmd_mlhl as u64) << 32;
    (key, ctx, ixsm | txsm, vle)
}

/// One TX queue: its descriptor ring, the packets the device has not confirmed yet, and its counters.
pub struct TxRing<R: RegisterSpace, F: Family> {
    ring: NonNull<TxDesc>,
    size: usize,
    /// Next slot to fill (= TDT).
    tail: usize,
    /// Oldest slot not yet cleaned.
    clean: usize,
    nb_free: usize,
    /// Descriptors written since the last RS.
    since_rs: usize,
    rs_thresh: usize,
    free_thresh: usize,
    /// Slots of the descriptors that carry RS, oldest first; [`RS_HOLES`] marks a group with empty slots,
    /// [`RS_CHECK`] one with packets that are not single segments of `pool`.
    rs_fifo: Box<[u32]>,
    rs_head: usize,
    rs_len: usize,
    /// The `rs_fifo` flags of the group since the last RS: [`RS_HOLES`] when some slot holds no packet (a context
    /// descriptor or a segment before the last), [`RS_CHECK`] when some packet is not a single segment of `pool`.
    rs_flags: u32,
    /// The port's pool (the one its RX rings fill from): groups of its single segments are freed without tests.
    pool: Mempool,
    pool_id: PoolId,
    /// The packet (chain head) whose last descriptor is in this slot. Only the slots from `clean` up to `tail`
    /// are live (each written when its descriptor was, `None` where no packet ends); the others are stale.
    shadow: Box<[Option<NonNull<MbufHeader>>]>,
    /// Context in slot 0 of the device, if any.
    ctx_key: Option<u64>,
    regs: Regs<R>,
    tdt: usize,
    queue: u16,
    stats: Arc<TxQueueStats>,
    config: RingConfig,
    // Dropped after `Drop::drop` disabled the queue.
    _mem: RingMemory,
    _pool_map: DmaMapping,
    _family: PhantomData<F>,
}

// SAFETY: as for RxRing: the ring owns its memory and the packets in `shadow`; one owner thread at a time.
unsafe impl<R: RegisterSpace, F: Family> Send for TxRing<R, F> {}

/// What a TX ring needs from its device.
pub struct TxSetup<'a, R> {
    /// Register access.
    pub regs: &'a Regs<R>,
    /// Ring memory.
    pub allocator: &'a Allocator,
    /// DMA map of the device.
    pub mapper: &'a Arc<dyn DmaMapper>,
    /// The pool the port was started with: mapped for the ring's life, so packets from it (forwarded ones) can be
    /// sent. Packets from other pools need a mapping of their own.
    pub pool: &'a Mempool,
    /// Queue index.
    pub queue: u16,
    /// Counters (shared with the device).
    pub stats: Arc<TxQueueStats>,
    /// Port name for errors.
    pub port: &'a str,
}

impl<R: RegisterSpace, F: Family> TxRing<R, F> {
    /// Allocates and maps the ring and programs the queue registers, queue disabled (section 6.3 steps 1-7).
    pub fn new(setup: TxSetup<'_, R>, config: RingConfig) -> Result<Self> {
        let size = config.size as usize;
        let bad = |reason: String| Error::InvalidConfig { port: setup.port.to_string(), reason };
        if size < 8 || !size.is_multiple_of(8) {
            return Err(bad(format!("TX ring of {size} descriptors: must be a multiple of 8, at least 8")));
        }
        let rs_thresh = config.rs_thresh as usize;
        let free_thresh = config.free_thresh as usize;
        if rs_thresh == 0 || rs_thresh + 2 >= size || free_thresh == 0 || free_thresh + 3 >= size {
            return Err(bad(format!(
                "TX thresholds rs={rs_thresh} free={free_thresh} do not fit a ring of {size} (need 0 < rs < N-2, \
                 0 < free < N-3)"
            )));
        }
        let pool_map = setup.mapper.map(setup.pool.memory())?;
        let mem = RingMemory::new(setup.allocator, setup.mapper, size * size_of::<TxDesc>(), setup.port)?;
        let ring = NonNull::new(mem.as_ptr().cast::<TxDesc>()).ok_or_else(|| bad("null ring".into()))?;
        let q = setup.queue;
        let regs = setup.regs.clone();
        disable_queue(&regs, F::txdctl(q), F::QUEUE_ENABLE, F::TXDCTL_DISABLE, config.enable_timeout);
        let (lo, hi) = split_iova(mem.iova());
        regs.write(F::tdbal(q), lo);
        regs.write(F::tdbah(q), hi);
        regs.write(F::tdlen(q), (size * size_of::<TxDesc>()) as u32);
        regs.write(F::tdh(q), 0);
        regs.write(F::tdt(q), 0);
        F::tx_queue_extra(&regs, q);
        regs.write(F::txdctl(q), F::TXDCTL_INIT);
        Ok(TxRing {
            ring,
            size,
            tail: 0,
            clean: 0,
            nb_free: size - 1,
            since_rs: 0,
            rs_thresh,
            free_thresh,
            rs_fifo: vec![0; size].into_boxed_slice(),
            rs_head: 0,
            rs_len: 0,
            rs_flags: 0,
            pool: setup.pool.clone(),
            pool_id: setup.pool.id(),
            shadow: vec![None; size].into_boxed_slice(),
            ctx_key: None,
            tdt: F::tdt(q).0,
            regs,
            queue: q,
            stats: setup.stats,
            config,
            _mem: mem,
            _pool_map: pool_map,
            _family: PhantomData,
        })
    }

    /// Enables the queue (section 3.7 step 33; after DMATXCTL.TE on ixgbe). A queue that does not report enabled
    /// in time is the poll's timeout (TXDCTL), for the caller to report.
    pub fn enable(&mut self) -> std::result::Result<(), PollTimeout> {
        let q = self.queue;
        self.regs.write(F::tdh(q), 0);
        self.regs.set_bits(F::txdctl(q), F::QUEUE_ENABLE);
        self.regs.poll(F::txdctl(q), F::QUEUE_ENABLE, F::QUEUE_ENABLE, self.config.enable_timeout)?;
        self.regs.write(F::tdt(q), 0);
        Ok(())
    }

    /// Queue index.
    pub fn queue(&self) -> u16 {
        self.queue
    }

    /// Free descriptor slots.
    pub fn free_slots(&self) -> usize {
        self.nb_free
    }

    /// Packets handed to the device and not yet confirmed sent.
    pub fn in_flight(&self) -> usize {
        let live = idx::dist(self.clean, self.tail, self.size);
        (0..live).filter(|&k| self.shadow[idx::add(self.clean, k, self.size)].is_some()).count()
    }

    #[inline(always)]
    fn desc(&self, i: usize) -> *mut TxDesc {
        // SAFETY: callers pass i < size.
        unsafe { self.ring.as_ptr().add(i) }
    }

    /// Frees the packets whose last descriptor lies in `from..from+count` (mod size), in bulk. Without
    /// [`RS_HOLES`] in `flags` every slot there holds a packet and the shadow ring itself is handed to the mempool
    /// (no copy); otherwise the packets are gathered first.
    #[inline]
    fn free_range(&mut self, from: usize, count: usize, flags: u32) {
        let size = self.size;
        let first = count.min(size - from);
        if flags == 0 {
            let fast_free = |at: usize, n: usize| {
                // SAFETY: at + n <= size.
                let slots = unsafe { self.shadow.get_unchecked(at..at + n) };
                debug_assert!(slots.iter().all(Option::is_some));
                // SAFETY: the range is live and without holes, so every entry is `Some` (laid out as the
                // NonNull); without RS_CHECK every packet there was a single segment of `pool` when tx_burst took
                // it (Mbuf::single_of), and the ring has owned it unchanged since. Each is freed once: the caller
                // moves `clean` past the range.
                unsafe { self.pool.free_single_bulk(std::slice::from_raw_parts(slots.as_ptr().cast(), n)) };
            };
            fast_free(from, first);
            if count > first {
                fast_free(0, count - first);
            }
            return;
        }
        if flags & RS_HOLES == 0 {
            let runs = [(from, first), (0, count - first)];
            for (at, n) in runs {
                // SAFETY: at + n <= size.
                let slots = unsafe { self.shadow.get_unchecked(at..at + n) };
                debug_assert!(slots.iter().all(Option::is_some));
                // SAFETY: the range is live and without holes, so every entry is `Some`: an
                // Option<NonNull<_>> that is Some has the layout of the NonNull. Each packet is owned by its slot
                // (moved there by tx_burst) and freed once: the caller moves `clean` past the range.
                unsafe { mempool::free_raw_bulk(std::slice::from_raw_parts(slots.as_ptr().cast(), n)) };
            }
            return;
        }
        let mut gather = [NonNull::<MbufHeader>::dangling(); 64];
        let mut n = 0;
        for k in 0..count {
            // SAFETY: the index is reduced modulo size.
            if let Some(p) = unsafe { *self.shadow.get_unchecked(idx::add(from, k, size)) } {
                gather[n] = p;
                n += 1;
                if n == gather.len() {
                    // SAFETY: owned by their slots, which the caller retires (moves `clean` past): freed once.
                    unsafe { mempool::free_raw_bulk(&gather) };
                    n = 0;
                }
            }
        }
        // SAFETY: as above.
        unsafe { mempool::free_raw_bulk(&gather[..n]) };
    }

    /// Reclaims the oldest group if the device has marked its RS descriptor done. Returns true if it did.
    ///
    /// One group (`rs_thresh` descriptors) at a time, as DPDK does: a forwarding loop then frees about what it
    /// receives per burst, and the buffers cycle through the lcore cache instead of overflowing it into the
    /// pool's shared ring.
    #[inline]
    fn clean_one(&mut self) -> bool {
        if self.rs_len == 0 {
            return false;
        }
        // SAFETY: rs_head < size.
        let entry = *unsafe { self.rs_fifo.get_unchecked(self.rs_head) };
        let rs = (entry & !RS_FLAGS) as usize;
        // SAFETY: rs < size; atomic acquire load of a status dword the device may be writing.
        let st = unsafe { AtomicU32::from_ptr(TxDesc::status_ptr(self.desc(rs)).cast_mut()).load(Ordering::Acquire) };
        if st & tx::STA_DD == 0 {
            return false;
        }
        let clean = self.clean;
        if entry & RS_FLAGS == 0 && clean <= rs {
            // The common group: single segments of `pool` in every slot, not wrapping.
            let count = rs + 1 - clean;
            // SAFETY: clean <= rs < size. The range is live and without holes, so every entry is `Some` (laid
            // out as the NonNull); without RS_CHECK every packet there was a single segment of `pool` when
            // tx_burst took it (Mbuf::single_of), and the ring has owned it unchanged since. Each is freed once:
            // `clean` moves past the range.
            unsafe {
                let slots = self.shadow.get_unchecked(clean..rs + 1);
                debug_assert!(slots.iter().all(Option::is_some));
                self.pool.free_single_bulk(std::slice::from_raw_parts(slots.as_ptr().cast(), count));
            }
            self.clean = if rs + 1 == self.size { 0 } else { rs + 1 };
            self.nb_free += count;
        } else {
            let count = idx::dist(clean, rs, self.size) + 1;
            self.free_range(clean, count, entry & RS_FLAGS);
            self.clean = idx::add(rs, 1, self.size);
            self.nb_free += count;
        }
        let next = self.rs_head + 1;
        self.rs_head = if next == self.size { 0 } else { next };
        self.rs_len -= 1;
        true
    }

    /// Writes a descriptor that ends no packet (its shadow slot becomes a hole); callers put the packet in the
    /// shadow slot of its last descriptor afterwards.
    #[inline(always)]
    fn put(&mut self, d: TxDesc) {
        // SAFETY: tail < size; the slot is free (counted in nb_free), so the device does not read it.
        unsafe {
            self.desc(self.tail).write_volatile(d);
            *self.shadow.get_unchecked_mut(self.tail) = None;
        }
        self.tail = idx::add(self.tail, 1, self.size);
    }

    /// Notes the RS descriptor in `slot` for cleanup, and whether its group has holes.
    #[inline(always)]
    fn push_rs(&mut self, slot: usize) {
        let at = idx::add(self.rs_head, self.rs_len, self.size);
        let flags = std::mem::take(&mut self.rs_flags);
        // SAFETY: at < size; at most one RS per descriptor, so the fifo never holds more than `size`.
        unsafe { *self.rs_fifo.get_unchecked_mut(at) = slot as u32 | flags };
        self.rs_len += 1;
    }

    /// Queues one packet (context, data descriptors); false when it does not fit now. Bad packets are consumed
    /// and counted as errors (`Err`).
    #[inline(never)]
    fn queue_packet(&mut self, m: &Mbuf, p: NonNull<MbufHeader>) -> std::result::Result<bool, ()> {
        let flags = m.ol_flags();
        let segs = m.nb_segs() as usize;
        if segs == 1 && flags & (TX_CTX_FLAGS | TX_BAD_FLAGS) == 0 {
            // Fast path: one data descriptor.
            if self.nb_free == 0 {
                return Ok(false);
            }
            let len = m.data_len();
            if len == 0 {
                return Err(());
            }
            self.since_rs += 1;
            if m.single_of(self.pool_id) != 0 {
                self.rs_flags |= RS_CHECK;
            }
            let rs = self.since_rs >= self.rs_thresh;
            let slot = self.tail;
            self.put(TxDesc::data(TxData {
                addr: m.data_iova(),
                len,
                eop: true,
                rs,
                paylen: len as u32,
                ixsm: false,
                txsm: false,
                idx: 0,
            }));
            if rs {
                self.push_rs(slot);
                self.since_rs = 0;
            }
            self.nb_free -= 1;
            // SAFETY: slot < size; it was free.
            unsafe { *self.shadow.get_unchecked_mut(slot) = Some(p) };
            return Ok(true);
        }
        if flags & TX_BAD_FLAGS != 0 || segs == 0 || segs > MAX_TX_SEGS {
            return Err(());
        }
        let (key, ctx, popts, vle) =
            if flags & TX_CTX_FLAGS != 0 { tx_context(m) } else { (0, TxContextDesc::default(), 0, 0) };
        let need_ctx = flags & TX_CTX_FLAGS != 0 && self.ctx_key != Some(key);
        let need = segs + need_ctx as usize;
        if need > self.nb_free {
            return Ok(false);
        }
        let mut paylen = 0u32;
        for s in m.segments() {
            if s.data.is_empty() {
                return Err(());
            }
            paylen += s.data.len() as u32;
        }
        if need_ctx {
            self.put(TxDesc::context(ctx));
            self.ctx_key = Some(key);
        }
        self.since_rs += need;
        let rs = self.since_rs >= self.rs_thresh;
        let mut last = self.tail;
        for (k, s) in m.segments().enumerate() {
            let eop = k + 1 == segs;
            last = self.tail;
            let mut d = TxDesc::data(TxData {
                addr: s.iova,
                len: s.data.len() as u16,
                eop,
                rs: eop && rs,
                paylen,
                ixsm: false,
                txsm: false,
                idx: 0,
            });
            d.olinfo_status |= popts;
            d.cmd_type_len |= vle;
            self.put(d);
        }
        self.rs_flags |= if need > 1 { RS_HOLES | RS_CHECK } else { RS_CHECK };
        if rs {
            self.push_rs(last);
            self.since_rs = 0;
        }
        self.nb_free -= need;
        // SAFETY: last < size; it was free.
        unsafe { *self.shadow.get_unchecked_mut(last) = Some(p) };
        Ok(true)
    }
}

impl<R: RegisterSpace, F: Family> TxRing<R, F> {
    /// Places packets from the front of `pkts` (owned by the caller's batch) on the ring; returns how many it took
    /// ownership of, with (bytes, sent, errors).
    ///
    /// The common packet (one segment, no offload flags, not empty) is written as one data descriptor without
    /// per-packet ring-wrap or RS checks: packets go in runs that end at the ring's end, at the next RS point, or
    /// when room runs out, and RS is set on the run's last descriptor when the group is complete. Within a run,
    /// four packets at a time are written and then tested together (single segments of the port's pool, no
    /// offload flags, no empty one); a group that fails is redone one packet at a time (its descriptors are not
    /// handed over before TDT moves, and its shadow slots are not live until `tail` passes them). Anything else
    /// goes through [`TxRing::queue_packet`].
    ///
    /// The common burst (it fits before the ring's end, the next RS point and the free room) starts with one
    /// call of [`tx_groups`] over all of it; whatever that leaves continues in [`TxRing::tx_from_general`].
    ///
    /// Returns how many packets it took (sent or dropped as bad); the counters move here (each path once), so
    /// that no tuple of results has to be merged between the two.
    #[inline(always)]
    fn tx_from(&mut self, pkts: &[NonNull<MbufHeader>]) -> usize {
        let len = pkts.len();
        let tail = self.tail;
        let (mut n, mut bytes) = (0, 0);
        if len <= (self.rs_thresh - self.since_rs).min(self.nb_free).min(self.size - tail) {
            // SAFETY: len <= size - tail and len <= nb_free: free slots of the ring and the shadow array.
            let (k, b) = unsafe {
                tx_groups(
                    pkts.as_ptr(),
                    self.ring.as_ptr().add(tail),
                    self.shadow.as_mut_ptr().add(tail),
                    len,
                    self.pool_id,
                )
            };
            if k > 0 {
                self.advance(tail, k);
                if k == len {
                    self.stats.packets.add(k as u64);
                    self.stats.bytes.add(b);
                    return k;
                }
                (n, bytes) = (k, b);
            }
        }
        self.tx_from_general(pkts, n, bytes)
    }

    /// Hands on the `k` descriptors written from slot `tail` (`tail + k <= size`, within the current RS group):
    /// RS on the last when the group is complete, then `tail` and the free count move.
    #[inline(always)]
    fn advance(&mut self, tail: usize, k: usize) {
        let last = tail + k - 1;
        self.since_rs += k;
        if self.since_rs == self.rs_thresh {
            // SAFETY: last < size, written by the caller and not yet handed over.
            unsafe {
                let c = std::ptr::addr_of_mut!((*self.ring.as_ptr().add(last)).cmd_type_len);
                c.write_volatile(c.read_volatile() | tx::DCMD_RS);
            }
            self.push_rs(last);
            self.since_rs = 0;
        }
        self.tail = if tail + k == self.size { 0 } else { tail + k };
        self.nb_free -= k;
    }

    /// The rest of [`TxRing::tx_from`] from packet `n` (those before it placed, with `bytes`): runs bounded by
    /// the ring's end, the RS point and the free room, packets one at a time, the general path. Returns how many
    /// packets were taken in all; moves the counters for all of them.
    #[inline(never)]
    fn tx_from_general(&mut self, pkts: &[NonNull<MbufHeader>], n: usize, bytes: u64) -> usize {
        let ring = self.ring.as_ptr();
        let size = self.size;
        let rs_thresh = self.rs_thresh;
        let pool_id = self.pool_id;
        let (mut bytes, mut errors, mut sent) = (bytes, 0u64, n as u64);
        let mut n = n;
        while n < pkts.len() {
            // Hot state in locals: the descriptor stores go through raw pointers the compiler cannot tell apart
            // from `self`. since_rs < rs_thresh between packets.
            let tail = self.tail;
            let room = (rs_thresh - self.since_rs).min(self.nb_free).min(size - tail).min(pkts.len() - n);
            let shadow = self.shadow.as_mut_ptr();
            let mut k = 0;
            // SAFETY: n + room <= pkts.len(); tail + room <= size (room <= size - tail) and those slots are free
            // (room <= nb_free): see tx_groups.
            let (taken, group_bytes) =
                unsafe { tx_groups(pkts.as_ptr().add(n), ring.add(tail), shadow.add(tail), room, pool_id) };
            k += taken;
            bytes += group_bytes;
            let mut other = 0;
            while k < room {
                // SAFETY: n + k < pkts.len().
                let p = unsafe { *pkts.get_unchecked(n + k) };
                // A borrowed view of a packet still owned by the batch (never dropped through this handle).
                // SAFETY: the batch owns a live packet here.
                let m = ManuallyDrop::new(unsafe { Mbuf::from_raw(p) });
                let len = m.data_len();
                if m.nb_segs() != 1 || m.ol_flags() & (TX_CTX_FLAGS | TX_BAD_FLAGS) != 0 || len == 0 {
                    break;
                }
                other |= m.single_of(pool_id);
                // SAFETY: tail + k < size (room <= size - tail); the slot is free (room <= nb_free), so the device
                // does not read it before the TDT write below. The packet moves into the shadow slot (the batch
                // gives it up: it is among the `n` returned).
                unsafe {
                    write_tx_data(ring.add(tail + k), m.data_iova(), len);
                    *shadow.add(tail + k) = Some(p);
                }
                bytes += len as u64;
                k += 1;
            }
            if other != 0 {
                self.rs_flags |= RS_CHECK;
            }
            if k > 0 {
                self.advance(tail, k);
                sent += k as u64;
                n += k;
                if k == room {
                    continue;
                }
            }
            if n == pkts.len() {
                break;
            }
            // The general path for packet n: offloads, chains, a full ring (cleanup, then retry), bad packets.
            // SAFETY: n < pkts.len(); a borrowed view as above.
            let p = unsafe { *pkts.get_unchecked(n) };
            // SAFETY: as above.
            let m = ManuallyDrop::new(unsafe { Mbuf::from_raw(p) });
            let mut r = self.queue_packet(&m, p);
            // No room: reclaim groups until it fits or the device has completed no more.
            while r == Ok(false) && self.clean_one() {
                r = self.queue_packet(&m, p);
            }
            match r {
                Ok(true) => {
                    bytes += m.pkt_len() as u64;
                    sent += 1;
                }
                Ok(false) => break,
                Err(()) => {
                    errors += 1;
                    drop(ManuallyDrop::into_inner(m));
                }
            }
            n += 1;
        }
        self.stats.packets.add(sent);
        self.stats.bytes.add(bytes);
        if errors != 0 {
            self.stats.errors.add(errors);
        }
        n
    }
}

/// The four-at-a-time part of [`TxRing::tx_from`]: writes the data descriptors and shadow slots of up to `room`
/// packets from `pkts`, four at a time, each group tested after it was written (single segments of the port's
/// pool, no offload flags, none empty); stops at the first group that fails. Returns how many packets it placed
/// (a multiple of four) and their bytes. The descriptors and shadow slots of a failed group are rewritten by
/// whatever places those packets: the device reads nothing before TDT moves, and a shadow slot is live only once
/// `tail` passes it.
///
/// Kept out of line so that its loop has the registers to itself.
///
/// # Safety
/// `pkts` must hold `room` live packets owned by the caller's batch (ownership of those placed moves to the shadow
/// slots); `d` and `shadow` must be `room` free slots of the ring and its shadow array.
#[inline(never)]
unsafe fn tx_groups(
    pkts: *const NonNull<MbufHeader>,
    d: *mut TxDesc,
    shadow: *mut Option<NonNull<MbufHeader>>,
    room: usize,
    pool_id: PoolId,
) -> (usize, u64) {
    let mut k = 0;
    let mut bytes = 0;
    let end = room & !3;
    while k != end {
        let (mut other, mut flags, mut lens_m1, mut group_bytes) = (0usize, 0u64, 0u64, 0u64);
        for j in 0..4 {
            // SAFETY: k + j < room.
            let p = unsafe { *pkts.add(k + j) };
            // A borrowed view of a packet still owned by the batch (never dropped through this handle).
            // SAFETY: the batch owns a live packet here.
            let m = ManuallyDrop::new(unsafe { Mbuf::from_raw(p) });
            let len = m.data_len();
            other |= m.single_of(pool_id);
            flags |= m.ol_flags();
            lens_m1 |= (len as u64).wrapping_sub(1);
            group_bytes += len as u64;
            // SAFETY: k + j < room: a free slot (caller's contract), not read by the device before TDT moves; the
            // shadow slot becomes live (and the batch gives the packet up) only if the group passes.
            unsafe {
                write_tx_data(d.add(k + j), m.data_iova(), len);
                *shadow.add(k + j) = Some(p);
            }
        }
        // lens_m1 >> 16 is non-zero exactly when some length was 0 (1 - 1 ... 65535 - 1 fit in 16 bits).
        if other != 0 || flags & (TX_CTX_FLAGS | TX_BAD_FLAGS) != 0 || lens_m1 >> 16 != 0 {
            break;
        }
        bytes += group_bytes;
        k += 4;
    }
    (k, bytes)
}

/// Writes a one-descriptor packet's data descriptor (EOP, no offload) in two 8-byte stores, the second built from
/// the length alone: cmd_type_len | olinfo_status << 32 with PAYLEN = DTALEN = `len`.
///
/// # Safety
/// `d` must be a free slot of the ring (the device does not read it until TDT passes it).
#[inline(always)]
unsafe fn write_tx_data(d: *mut TxDesc, iova: u64, len: u16) {
    const CMD: u64 = (tx::DATA_FLAGS | tx::DCMD_EOP) as u64;
    // len in DTALEN (bits 15:0) and in PAYLEN (olinfo bits 31:14, i.e. bit 46 of the pair).
    const LEN_TIMES: u64 = 1 | (tx::PAYLEN.val(1) as u64) << 32;
    // SAFETY: the caller's contract.
    unsafe {
        std::ptr::addr_of_mut!((*d).addr).write_volatile(iova);
        std::ptr::addr_of_mut!((*d).cmd_type_len).cast::<u64>().write_volatile(CMD | (len as u64 * LEN_TIMES));
    }
}

impl<R: RegisterSpace, F: Family> TxQueue for TxRing<R, F> {
    #[inline]
    fn tx_burst(&mut self, batch: &mut PacketBatch) -> usize {
        while self.nb_free < self.free_thresh && self.clean_one() {}
        let start_tail = self.tail;
        // SAFETY: tx_from takes ownership of exactly the first `n` chains it reports: queued ones move into the
        // shadow ring, bad ones are freed; it keeps nothing else. It also moves the counters.
        let taken = unsafe { batch.drain_raw(|pkts| self.tx_from(pkts)) };
        if self.tail != start_tail {
            dma_wmb();
            self.regs.space().write32(self.tdt, self.tail as u32);
        }
        taken
    }
}

impl<R: RegisterSpace, F: Family> Drop for TxRing<R, F> {
    fn drop(&mut self) {
        // Stop the device reading our buffers, then free whatever it had not confirmed.
        disable_queue(
            &self.regs,
            F::txdctl(self.queue),
            F::QUEUE_ENABLE,
            F::TXDCTL_DISABLE,
            self.config.enable_timeout,
        );
        let (from, live) = (self.clean, idx::dist(self.clean, self.tail, self.size));
        self.free_range(from, live, RS_FLAGS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn packet_type_and_checksum_tables() {
        assert_eq!(PTYPE_TABLE[0], ptype::L2_ETHER);
        assert_eq!(PTYPE_TABLE[0b01_0001], ptype::L2_ETHER | ptype::L3_IPV4 | ptype::L4_TCP);
        assert_eq!(PTYPE_TABLE[0b10_0100], ptype::L2_ETHER | ptype::L3_IPV6 | ptype::L4_UDP);
        assert_eq!(PTYPE_TABLE[0b01_0000], ptype::L2_ETHER); // TCP without IP: not trusted
        assert_eq!(CSUM_TABLE[0b0011], ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_GOOD);
        assert_eq!(CSUM_TABLE[0b1011], ol_flags::RX_IP_CKSUM_BAD | ol_flags::RX_L4_CKSUM_GOOD);
        assert_eq!(CSUM_TABLE[0b0111], ol_flags::RX_IP_CKSUM_GOOD | ol_flags::RX_L4_CKSUM_BAD);
        assert_eq!(CSUM_TABLE[0b1100], 0); // errors without the "computed" bits mean nothing
    }

    proptest! {
        #[test]
        fn index_arithmetic_wraps(n in 8usize..8192, a in 0usize..8192, k in 0usize..8192) {
            let i = a % n;
            let k = k % (n + 1);
            let j = idx::add(i, k, n);
            prop_assert!(j < n);
            prop_assert_eq!(j, (i + k) % n);
            prop_assert_eq!(idx::dist(i, j, n), k % n);
            prop_assert_eq!(idx::prev(idx::add(i, 1, n), n), i);
        }

        #[test]
        fn stepping_one_at_a_time_visits_every_slot_once(n in (1usize..64).prop_map(|x| x * 8), start in 0usize..512) {
            let mut seen = vec![false; n];
            let mut i = start % n;
            for _ in 0..n {
                prop_assert!(!seen[i]);
                seen[i] = true;
                i = idx::add(i, 1, n);
            }
            prop_assert_eq!(i, start % n);
        }
    }
}
