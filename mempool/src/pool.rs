//! The pool: element layout in DMA memory, the shared ring, per-lcore caches, and the pool's lifetime.

use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use hugepage::{Allocator, DmaMemory, IovaMode};

use crate::free::check_and_mark_free;
use crate::lcore::{self, MAX_LCORES};
use crate::mbuf::{MbufHeader, Rearm, ResetBlock, RxFrame, RxRearm, STATE_FREE, STATE_IN_USE};
use crate::ring::Ring;
use crate::{Error, Mbuf, Result};

/// The largest per-lcore cache (as DPDK's RTE_MEMPOOL_CACHE_MAX_SIZE).
pub const MAX_CACHE_SIZE: u32 = 512;
/// Default headroom before packet data (RTE_PKTMBUF_HEADROOM).
pub const DEFAULT_HEADROOM: u16 = 128;
/// Default data room after the headroom.
pub const DEFAULT_DATA_ROOM: u16 = 2048;
/// Largest bulk request served through the cache; larger ones go to the ring directly.
const MAX_CACHED_BULK: usize = 512;

/// How to build a pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    /// Number of buffers.
    pub size: u32,
    /// Buffers kept per lcore in front of the shared ring (0 disables caches). At most [`MAX_CACHE_SIZE`].
    pub cache_size: u32,
    /// Bytes before the data start, for headers a path prepends.
    pub headroom: u16,
    /// Bytes for packet data after the headroom.
    pub data_room: u16,
    /// Check every free for double frees and foreign pointers (always on in debug builds).
    pub debug: bool,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            size: 8191,
            cache_size: 256,
            headroom: DEFAULT_HEADROOM,
            data_room: DEFAULT_DATA_ROOM,
            debug: false,
        }
    }
}

impl PoolConfig {
    /// `size` buffers, other settings default.
    pub fn with_size(size: u32) -> Self {
        PoolConfig { size, ..Default::default() }
    }
}

/// One lcore's stack of free buffers; touched only by the thread that holds that lcore id. The array is
/// allocated by that thread on first use (`cache_capacity` entries), so pools cost nothing for idle lcores.
#[repr(align(128))]
struct LocalCache {
    /// Entries in use. Only the owner writes it; `available()` reads it from anywhere.
    len: AtomicUsize,
    objs: UnsafeCell<*mut NonNull<MbufHeader>>,
}

pub(crate) struct PoolInner {
    pub(crate) name: String,
    size: u32,
    cache_size: usize,
    flush_threshold: usize,
    headroom: u16,
    data_room: u16,
    elt_size: usize,
    debug: bool,
    /// What `rearm` holds in a freshly allocated buffer.
    rearm: Rearm,
    ring: Ring<NonNull<MbufHeader>>,
    caches: Box<[LocalCache]>,
    /// Shared so a DMA mapping can hold it ([`Mempool::memory`]): a pool dropped while a device may still reach
    /// its memory leaves the memory to the mapping guard, which frees it after unmapping.
    memory: Arc<DmaMemory>,
}

// SAFETY: the ring is thread-safe; each LocalCache is only touched by its lcore's thread (lcore ids are exclusive,
// see `lcore`); the DMA memory holds elements that are owned one at a time through Mbufs or the free structures.
unsafe impl Send for PoolInner {}
// SAFETY: as above.
unsafe impl Sync for PoolInner {}

impl PoolInner {
    /// Entries of each lcore cache array: a full cache plus the largest burst put on top before a flush.
    fn cache_capacity(&self) -> usize {
        self.flush_threshold + MAX_CACHED_BULK
    }

    /// The calling thread's cache, when it has an lcore id and the pool has caches.
    #[inline(always)]
    fn cache(&self) -> Option<&LocalCache> {
        let id = lcore::current()?;
        if self.cache_size == 0 {
            return None;
        }
        // SAFETY: lcore ids are below MAX_LCORES (the lcore module refuses others) and `caches` has MAX_LCORES
        // entries.
        Some(unsafe { self.caches.get_unchecked(id as usize) })
    }

    /// The cache's array, allocating it on first use. Only the cache's owner thread may call this.
    #[inline(always)]
    fn cache_array(&self, cache: &LocalCache) -> *mut NonNull<MbufHeader> {
        // SAFETY: only the owner thread touches `objs`.
        let objs = unsafe { *cache.objs.get() };
        if !objs.is_null() {
            return objs;
        }
        self.allocate_cache_array(cache)
    }

    #[cold]
    fn allocate_cache_array(&self, cache: &LocalCache) -> *mut NonNull<MbufHeader> {
        let mut array = std::mem::ManuallyDrop::new(Vec::<NonNull<MbufHeader>>::with_capacity(self.cache_capacity()));
        let objs = array.as_mut_ptr();
        // SAFETY: only the owner thread touches `objs`; freed in PoolInner's Drop with the same capacity.
        unsafe { *cache.objs.get() = objs };
        objs
    }

    /// Takes exactly `out.len()` free elements, or none. Always inlined: out of line its register saves cost
    /// about a third of the cached path (measured in the ixgbe RX refill).
    #[inline(always)]
    fn get_bulk(&self, out: &mut [NonNull<MbufHeader>]) -> bool {
        let n = out.len();
        let Some(cache) = self.cache().filter(|_| n <= MAX_CACHED_BULK) else {
            return self.ring.dequeue_bulk(out);
        };
        let objs = self.cache_array(cache);
        let len = cache.len.load(Ordering::Relaxed);
        if len < n {
            return self.refill_and_get(cache, objs, out);
        }
        // SAFETY: entries 0..len of the owner's array are initialised; n <= len.
        unsafe { copy_burst(out.as_mut_ptr(), objs.add(len - n), n) };
        cache.len.store(len - n, Ordering::Relaxed);
        true
    }

    #[inline(never)]
    fn refill_and_get(
        &self,
        cache: &LocalCache,
        objs: *mut NonNull<MbufHeader>,
        out: &mut [NonNull<MbufHeader>],
    ) -> bool {
        let n = out.len();
        let mut len = cache.len.load(Ordering::Relaxed);
        // Refill to cache_size beyond this request, taking what the ring has.
        let want = self.cache_size + n - len;
        // SAFETY: len + want = cache_size + n <= cache_capacity; the ring only writes the slots it fills.
        let room = unsafe { std::slice::from_raw_parts_mut(objs.add(len), want) };
        len += self.ring.dequeue_burst(room);
        if len < n {
            cache.len.store(len, Ordering::Relaxed);
            return false;
        }
        // SAFETY: entries 0..len are initialised; n <= len.
        unsafe { copy_burst(out.as_mut_ptr(), objs.add(len - n), n) };
        cache.len.store(len - n, Ordering::Relaxed);
        true
    }

    /// Returns free elements (in the free state: `next` null).
    #[inline(always)]
    pub(crate) fn put_bulk(&self, objs_in: &[NonNull<MbufHeader>]) {
        let n = objs_in.len();
        let Some(cache) = self.cache().filter(|_| n <= MAX_CACHED_BULK) else {
            let ok = self.ring.enqueue_bulk(objs_in);
            debug_assert!(ok, "mempool ring overflow: more buffers freed than the pool holds");
            return;
        };
        let objs = self.cache_array(cache);
        let len = cache.len.load(Ordering::Relaxed);
        // SAFETY: len < flush_threshold between calls and n <= MAX_CACHED_BULK, so len + n <= cache_capacity.
        unsafe { copy_burst(objs.add(len), objs_in.as_ptr(), n) };
        let len = len + n;
        if len < self.flush_threshold {
            cache.len.store(len, Ordering::Relaxed);
        } else {
            self.flush(cache, objs, len);
        }
    }

    #[inline(never)]
    fn flush(&self, cache: &LocalCache, objs: *mut NonNull<MbufHeader>, len: usize) {
        // SAFETY: entries 0..len are initialised.
        let extra = unsafe { std::slice::from_raw_parts(objs.add(self.cache_size), len - self.cache_size) };
        // Lower the count first: `available()` may then read low for a moment, never high (a pool that looked
        // full while buffers were still moving could be freed under this thread).
        cache.len.store(self.cache_size, Ordering::Release);
        let ok = self.ring.enqueue_bulk(extra);
        debug_assert!(ok, "mempool ring overflow");
    }

    fn available(&self) -> usize {
        let cached: usize = self.caches.iter().map(|c| c.len.load(Ordering::Relaxed)).sum();
        (self.ring.len() + cached).min(self.size as usize)
    }

    #[inline(always)]
    pub(crate) fn checks(&self) -> bool {
        cfg!(debug_assertions) || self.debug
    }

    /// Index of the element whose bytes hold `offset` (from the start of the memory): the inverse of
    /// [`element_offset`].
    fn element_index(&self, offset: usize) -> Option<u32> {
        let index = if self.memory.iova_mode() == IovaMode::Pa {
            let page = self.memory.page_size().bytes();
            let per_page = page / self.elt_size;
            let slot = (offset % page) / self.elt_size;
            (slot < per_page).then_some((offset / page) * per_page + slot)?
        } else {
            offset / self.elt_size
        };
        (index < self.size as usize).then_some(index as u32)
    }

    fn element_header(&self, index: u32) -> NonNull<MbufHeader> {
        let offset = element_offset(index as usize, self.elt_size, &self.memory);
        // SAFETY: offset is inside the memory (computed at creation for every index < size).
        unsafe { NonNull::new_unchecked(self.memory.as_ptr().add(offset).cast()) }
    }
}

/// Copies `n` pointers between non-overlapping arrays. The common burst of 32 is 8 AVX moves when the CPU has AVX
/// (checked at run time: the build targets baseline x86-64), else 16 SSE2 moves, written out one by one: a loop,
/// even of vector moves, is turned back into a `memcpy` call, which at this size costs more than the copy. Half
/// the moves is what the cached get + put of a burst is bound by (stores), so the AVX path is worth its call.
///
/// # Safety
/// `src..src+n` must be readable, `dst..dst+n` writable, and the two must not overlap.
#[inline(always)]
pub(crate) unsafe fn copy_burst<T: Copy>(dst: *mut T, src: *const T, n: usize) {
    #[cfg(target_arch = "x86_64")]
    if n == 32 && std::mem::size_of::<T>() == 8 {
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the caller's contract; the CPU has AVX (checked just above).
            unsafe { copy_32_avx(dst.cast(), src.cast()) };
            return;
        }
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_storeu_si128};
        let (d, s) = (dst.cast::<__m128i>(), src.cast::<__m128i>());
        macro_rules! lanes {
            ($($i:literal)*) => {$(
                // SAFETY: 32 eight-byte entries are 16 sixteen-byte lanes, inside both arrays (caller's contract);
                // unaligned loads and stores have no alignment requirement.
                unsafe { _mm_storeu_si128(d.add($i), _mm_loadu_si128(s.add($i))) };
            )*};
        }
        lanes!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
        return;
    }
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
}

/// [`copy_burst`]'s 32 pointers as eight 32-byte moves.
///
/// # Safety
/// As [`copy_burst`] with n = 32 eight-byte entries; the CPU must have AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn copy_32_avx(dst: *mut u64, src: *const u64) {
    use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_storeu_si256};
    let (d, s) = (dst.cast::<__m256i>(), src.cast::<__m256i>());
    macro_rules! lanes {
        ($($i:literal)*) => {$(
            // SAFETY: 32 eight-byte entries are 8 thirty-two-byte lanes, inside both arrays (caller's contract);
            // unaligned loads and stores have no alignment requirement.
            unsafe { _mm256_storeu_si256(d.add($i), _mm256_loadu_si256(s.add($i))) };
        )*};
    }
    lanes!(0 1 2 3 4 5 6 7);
}

/// Where element `index` starts: packed back to back, except that in PA mode an element never crosses a page
/// boundary (its IOVA range must be contiguous).
fn element_offset(index: usize, elt_size: usize, memory: &DmaMemory) -> usize {
    if memory.iova_mode() == IovaMode::Pa {
        let page = memory.page_size().bytes();
        let per_page = page / elt_size;
        (index / per_page) * page + (index % per_page) * elt_size
    } else {
        index * elt_size
    }
}

impl Drop for PoolInner {
    fn drop(&mut self) {
        let capacity = self.cache_capacity();
        for cache in self.caches.iter_mut() {
            let objs = *cache.objs.get_mut();
            if !objs.is_null() {
                // SAFETY: allocated in allocate_cache_array as a Vec of exactly this capacity; no thread can use it
                // now (the pool is being freed because nothing refers to it).
                drop(unsafe { Vec::from_raw_parts(objs, 0, capacity) });
            }
        }
    }
}

fn registry() -> &'static Mutex<HashMap<String, Weak<PoolHandle>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<String, Weak<PoolHandle>>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// Owns the pool's memory; frees it when the last [`Mempool`] goes, if every buffer is back by then.
struct PoolHandle {
    inner: NonNull<PoolInner>,
    /// Set by [`Mempool::allow_leak_on_drop`]: dropping with buffers out is expected, not a failure.
    leak_allowed: AtomicBool,
}

// SAFETY: PoolInner is Send + Sync; the handle only shares it.
unsafe impl Send for PoolHandle {}
// SAFETY: as above.
unsafe impl Sync for PoolHandle {}

impl Drop for PoolHandle {
    fn drop(&mut self) {
        // SAFETY: inner stays valid until we free it below.
        let inner = unsafe { self.inner.as_ref() };
        if let Ok(mut reg) = registry().lock() {
            if reg.get(&inner.name).is_some_and(|w| w.strong_count() == 0) {
                reg.remove(&inner.name);
            }
        }
        let available = inner.available();
        if available == inner.size as usize {
            // SAFETY: no Mbuf and no other handle refers to the pool: every element is in the ring or a cache.
            drop(unsafe { Box::from_raw(self.inner.as_ptr()) });
        } else {
            // Buffers still out point at this memory: keep it (a leak, never a dangling pointer).
            let msg = format!(
                "mempool {}: dropped with {} of {} buffers still in use; its memory is kept",
                inner.name,
                (inner.size as usize).saturating_sub(available),
                inner.size
            );
            // In debug builds (tests) a leak fails whoever leaked: free every buffer, and drop queues and ports
            // before their pool. Not while already unwinding: a second panic would abort and hide the first.
            if cfg!(debug_assertions) && !self.leak_allowed.load(Ordering::Relaxed) && !std::thread::panicking() {
                panic!("{msg}");
            }
            eprintln!("{msg}");
        }
    }
}

/// A pool's identity ([`Mempool::id`]): compared with the pool a buffer belongs to ([`Mbuf::single_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolId(pub(crate) usize);

/// A named pool of packet buffers in DMA memory. Cheap to clone (shared handle).
///
/// Drop it after the ports and queues holding its buffers: dropping the last handle with buffers out keeps the
/// memory (no buffer ever dangles) and, in debug builds, panics naming the pool (see
/// [`Mempool::allow_leak_on_drop`]).
#[derive(Clone)]
pub struct Mempool {
    handle: Arc<PoolHandle>,
}

impl std::fmt::Debug for Mempool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mempool")
            .field("name", &self.name())
            .field("size", &self.size())
            .field("available", &self.available())
            .finish()
    }
}

impl Mempool {
    /// Creates a pool named `name` (unique while it lives) with memory from `allocator`.
    pub fn new(name: &str, config: &PoolConfig, allocator: &Allocator) -> Result<Mempool> {
        if config.size == 0 {
            return Err(Error::InvalidConfig(format!("mempool {name}: size must be at least 1")));
        }
        if config.cache_size > MAX_CACHE_SIZE {
            return Err(Error::InvalidConfig(format!(
                "mempool {name}: cache size {} is over the maximum {MAX_CACHE_SIZE}",
                config.cache_size
            )));
        }
        let buf_len = config.headroom as usize + config.data_room as usize;
        if buf_len > u16::MAX as usize {
            return Err(Error::InvalidConfig(format!(
                "mempool {name}: headroom {} + data room {} exceeds 65535 bytes",
                config.headroom, config.data_room
            )));
        }
        let elt_size = (std::mem::size_of::<MbufHeader>() + buf_len).next_multiple_of(64);
        let page = allocator.config().page_size.bytes();
        let bytes = if allocator.config().iova_mode == IovaMode::Pa {
            if elt_size > page {
                return Err(Error::InvalidConfig(format!(
                    "mempool {name}: {elt_size}-byte elements do not fit in a page in PA mode"
                )));
            }
            (config.size as usize).div_ceil(page / elt_size) * page
        } else {
            config.size as usize * elt_size
        };

        let mut reg = registry().lock().map_err(|_| Error::InvalidConfig("mempool registry poisoned".into()))?;
        if reg.get(name).is_some_and(|w| w.strong_count() > 0) {
            return Err(Error::NameExists(name.to_string()));
        }
        let memory = allocator.allocate(bytes).map_err(|source| Error::Memory { pool: name.to_string(), source })?;
        let memory = Arc::new(memory);
        // DPDK's rule: with a cache of C the flush threshold is 1.5 C; a cache larger than what the pool can spread
        // over the lcores would strand buffers, so keep it below size / 1.5 as well.
        let cache_size = (config.cache_size as usize).min((config.size as usize * 2 / 3).max(1));
        let cache_size = if config.cache_size == 0 { 0 } else { cache_size };
        let inner = Box::new(PoolInner {
            name: name.to_string(),
            size: config.size,
            cache_size,
            flush_threshold: cache_size + cache_size / 2,
            headroom: config.headroom,
            data_room: config.data_room,
            elt_size,
            debug: config.debug,
            rearm: Rearm { data_off: config.headroom, nb_segs: 1, port: crate::NO_PORT, buf_len: buf_len as u16 },
            ring: Ring::new(config.size as usize),
            caches: (0..MAX_LCORES)
                .map(|_| LocalCache { len: AtomicUsize::new(0), objs: UnsafeCell::new(std::ptr::null_mut()) })
                .collect(),
            memory,
        });
        let inner = NonNull::from(Box::leak(inner));
        // SAFETY: freshly leaked, valid; nothing else sees it yet.
        let pool = unsafe { inner.as_ref() };
        let mut headers = Vec::with_capacity(config.size as usize);
        for index in 0..config.size {
            let hdr = pool.element_header(index);
            // SAFETY: the element lies inside our memory; the buffer follows the 128-byte header.
            let buf_addr = unsafe { hdr.as_ptr().cast::<u8>().add(std::mem::size_of::<MbufHeader>()) };
            let buf_iova = pool.memory.iova_of(buf_addr).expect("element inside pool memory");
            // SAFETY: the element is ours and aligned to 64 (elt_size and the page are multiples of 64).
            unsafe { hdr.as_ptr().write(MbufHeader::new(buf_iova, pool.rearm, inner.as_ptr(), index)) };
            headers.push(hdr);
        }
        let ok = pool.ring.enqueue_bulk(&headers);
        debug_assert!(ok);
        let handle = Arc::new(PoolHandle { inner, leak_allowed: AtomicBool::new(false) });
        reg.insert(name.to_string(), Arc::downgrade(&handle));
        Ok(Mempool { handle })
    }

    /// The live pool called `name`, if any.
    pub fn lookup(name: &str) -> Option<Mempool> {
        let reg = registry().lock().ok()?;
        reg.get(name)?.upgrade().map(|handle| Mempool { handle })
    }

    #[inline(always)]
    fn inner(&self) -> &PoolInner {
        // SAFETY: the handle keeps the pool alive.
        unsafe { self.handle.inner.as_ref() }
    }

    /// Marks dropping the last handle with buffers still out as intended (for the few tests that leak on
    /// purpose). Otherwise debug builds panic on that drop, naming the pool and the count; release builds print.
    pub fn allow_leak_on_drop(&self) {
        self.handle.leak_allowed.store(true, Ordering::Relaxed);
    }

    /// The pool's name.
    pub fn name(&self) -> &str {
        &self.inner().name
    }

    /// Number of buffers.
    pub fn size(&self) -> u32 {
        self.inner().size
    }

    /// Buffers free (in the ring or any lcore cache); a snapshot under concurrency.
    pub fn available(&self) -> usize {
        self.inner().available()
    }

    /// Buffers handed out.
    pub fn in_use(&self) -> usize {
        (self.size() as usize).saturating_sub(self.available())
    }

    /// True when every buffer is back.
    pub fn is_full(&self) -> bool {
        self.available() == self.size() as usize
    }

    /// Per-lcore cache size in force (may be lower than asked, see [`PoolConfig::cache_size`]).
    pub fn cache_size(&self) -> usize {
        self.inner().cache_size
    }

    /// Headroom of each buffer.
    pub fn headroom(&self) -> u16 {
        self.inner().headroom
    }

    /// Data room of each buffer (after the headroom).
    pub fn data_room(&self) -> u16 {
        self.inner().data_room
    }

    /// Bytes each element takes in memory (header, headroom, data room).
    pub fn element_size(&self) -> usize {
        self.inner().elt_size
    }

    /// The DMA memory behind the pool (for IOVA checks and DMA mapping). It is shared: a mapping guard
    /// (`drvkit::dma::DmaMapping`) holds a reference, so if the pool is dropped while still mapped, its memory stays
    /// allocated until the guard drops (the device may still write there until then).
    pub fn memory(&self) -> &Arc<DmaMemory> {
        &self.inner().memory
    }

    /// The element whose memory holds `ptr`: its index and header, or `None` for an address outside every
    /// element. For ports that give the pool's memory to the kernel by address (an AF_XDP UMEM) and get addresses
    /// back; making the header an [`Mbuf`] again ([`Mbuf::from_raw`]) is the caller's business.
    #[inline]
    pub fn element_of(&self, ptr: *const u8) -> Option<(u32, NonNull<MbufHeader>)> {
        let pool = self.inner();
        let offset = (ptr as usize).checked_sub(pool.memory.as_ptr() as usize)?;
        let index = pool.element_index(offset)?;
        Some((index, pool.element_header(index)))
    }

    /// One buffer, or `None` when the pool is empty.
    #[inline]
    pub fn alloc(&self) -> Option<Mbuf> {
        let mut one = [NonNull::dangling()];
        // SAFETY: ownership of the taken element moves into the Mbuf.
        unsafe { self.get_raw(&mut one).then(|| self.adopt_raw(one[0])) }
    }

    /// Fills every slot of `out` with a fresh buffer, or changes nothing and returns false when the pool cannot
    /// supply them all. Slots that already held a buffer free it first.
    #[inline]
    pub fn alloc_bulk(&self, out: &mut [Option<Mbuf>]) -> bool {
        const CHUNK: usize = 64;
        if out.len() > CHUNK {
            // All or nothing across chunks: take everything first.
            let mut all: Vec<Option<Mbuf>> = Vec::with_capacity(out.len());
            for chunk in out.chunks(CHUNK) {
                let mut part = [const { None }; CHUNK];
                if !self.alloc_bulk(&mut part[..chunk.len()]) {
                    return false;
                }
                all.extend(part.into_iter().take(chunk.len()));
            }
            for (slot, m) in out.iter_mut().zip(all) {
                *slot = m;
            }
            return true;
        }
        let mut raw = [NonNull::<MbufHeader>::dangling(); CHUNK];
        let raw = &mut raw[..out.len()];
        // SAFETY: the taken elements are adopted into Mbufs right below.
        if !unsafe { self.get_raw(raw) } {
            return false;
        }
        self.prepare_alloc(raw);
        for (slot, hdr) in out.iter_mut().zip(raw.iter()) {
            // SAFETY: each element was just taken from the pool and is owned by nobody else.
            *slot = Some(unsafe { Mbuf::from_raw(*hdr) });
        }
        true
    }

    /// Takes exactly `out.len()` buffers as owned raw pointers, or none and returns false. For drivers that park
    /// buffers in a ring's shadow array: each pointer must later be freed once (e.g. [`crate::free_raw_bulk`]), or
    /// it leaks.
    ///
    /// Unlike the user-facing allocations, nothing is reset (DPDK's raw allocation): a buffer comes in the free
    /// state, which only guarantees `next` null (and the fields fixed at creation: IOVA, pool, index); its other
    /// metadata are stale. Before a buffer is seen as an [`Mbuf`] the driver writes the rearm word
    /// ([`Mempool::rx_rearm`], [`RxRearm::apply`]: data start, one segment, port, buffer length) and the fields it
    /// reports ([`Mbuf::set_rx_unchecked`]); together they set every per-packet field. Freeing a buffer that was
    /// never handed out needs neither.
    #[inline]
    pub fn alloc_raw_bulk(&self, out: &mut [NonNull<MbufHeader>]) -> bool {
        // SAFETY: on success every element is marked allocated and handed to the caller as owned.
        if !unsafe { self.get_raw(out) } {
            return false;
        }
        self.mark_allocated(out);
        true
    }

    /// This pool's identity, for [`Mbuf::single_of`].
    #[inline(always)]
    pub fn id(&self) -> PoolId {
        PoolId(self.handle.inner.as_ptr() as usize)
    }

    /// Frees single-segment buffers of this pool in bulk, with no test per buffer: one put into the calling
    /// lcore's cache (DPDK's `rte_mempool_put_bulk` behind the `MBUF_FAST_FREE` TX offload). For drivers that
    /// checked [`Mbuf::single_of`] when they took the packets. Debug builds (and `debug` pools) verify it.
    ///
    /// # Safety
    /// Every entry must be an owned single segment (`next` null) of this pool, listed once, used no more.
    #[inline]
    pub unsafe fn free_single_bulk(&self, hdrs: &[NonNull<MbufHeader>]) {
        let pool = self.inner();
        if pool.checks() {
            for hdr in hdrs {
                // SAFETY: owned by the caller (contract).
                let h = unsafe { &mut *hdr.as_ptr() };
                assert!(
                    std::ptr::eq(h.pool, pool) && h.next.is_null(),
                    "mempool {}: free_single_bulk given a chain or a foreign buffer",
                    pool.name
                );
                check_and_mark_free(pool, h);
            }
        }
        pool.put_bulk(hdrs);
    }

    /// The rearm word of this pool's buffers received on `port` (see [`Mempool::alloc_raw_bulk`]).
    pub fn rx_rearm(&self, port: u16) -> RxRearm {
        let rearm = Rearm { port, ..self.inner().rearm };
        RxRearm { bits: rearm.to_bits(), pool: self.inner() as *const PoolInner }
    }

    /// Takes exactly `out.len()` buffers (or none, returning false) and sets each as a frame of `len` bytes received
    /// whole on the port `rearm` was made for: one 40-byte block store per buffer ([`crate::PacketBatch::alloc_rx`]).
    ///
    /// # Panics
    /// When `rearm` was made by another pool or `len` exceeds the data room (a caller's bug, checked per call).
    #[inline(always)]
    pub(crate) fn alloc_received(&self, out: &mut [NonNull<MbufHeader>], rearm: RxRearm, len: u16) -> bool {
        let pool = self.inner();
        assert!(
            std::ptr::eq(rearm.pool, pool) && len <= pool.data_room,
            "mempool {}: a received length of {len} needs this pool's rearm word and at most {} bytes",
            pool.name,
            pool.data_room
        );
        if !self.alloc_raw_bulk(out) {
            return false;
        }
        let block = ResetBlock::received(rearm.bits, len);
        // Four at a time: the loop's own count and branch would otherwise be a third of its instructions.
        let mut quads = out.chunks_exact(4);
        for quad in &mut quads {
            for hdr in quad {
                // SAFETY: just taken from this pool; nobody else holds it.
                unsafe { (*hdr.as_ptr()).write_block(block) };
            }
        }
        for hdr in quads.remainder() {
            // SAFETY: as above.
            unsafe { (*hdr.as_ptr()).write_block(block) };
        }
        true
    }

    /// Takes `out.len()` buffers (or none, returning false) and has `fill` write one frame of `items` into each, in
    /// order: `fill` gets the item and the buffer's whole data room (from the headroom on) and returns the frame's
    /// length and receive timestamp, which are written with the rearm word `rearm` as one block per buffer
    /// ([`crate::PacketBatch::alloc_rx_with`]). Returns how many buffers were filled: `items` may yield fewer than
    /// `out.len()` (the rest go back to the pool at once).
    ///
    /// # Panics
    /// When `rearm` was made by another pool, or `fill` returns a length over the data room.
    #[inline(always)]
    pub(crate) fn alloc_received_with<I: Iterator>(
        &self,
        out: &mut [NonNull<MbufHeader>],
        rearm: RxRearm,
        items: I,
        mut fill: impl FnMut(I::Item, &mut [u8]) -> RxFrame,
    ) -> Option<usize> {
        let pool = self.inner();
        assert!(std::ptr::eq(rearm.pool, pool), "mempool {}: a received frame needs this pool's rearm word", pool.name);
        if !self.alloc_raw_bulk(out) {
            return None;
        }
        let room = pool.data_room as usize;
        // The data start of every buffer rearm writes (its data_off is the pool's headroom).
        let start = std::mem::size_of::<MbufHeader>() + pool.headroom as usize;
        let mut filled = 0;
        for (hdr, item) in out.iter().zip(items) {
            let h = hdr.as_ptr();
            // SAFETY: just taken from this pool, nobody else holds it; the data room follows the header and the
            // headroom inside the element.
            let data = unsafe { std::slice::from_raw_parts_mut(h.cast::<u8>().add(start), room) };
            let frame = fill(item, data);
            assert!(
                frame.len as usize <= room,
                "mempool {}: a received frame of {} bytes is over the data room",
                pool.name,
                frame.len
            );
            // SAFETY: as above; every per-packet field is set here (block and timestamp).
            unsafe {
                (*h).write_block(ResetBlock::received(rearm.bits, frame.len));
                (*h).timestamp = frame.timestamp;
            }
            filled += 1;
        }
        if filled < out.len() {
            // SAFETY: ours (taken above), single segments (`next` null), never handed out.
            unsafe { crate::free::free_bulk(&out[filled..]) };
        }
        Some(filled)
    }

    /// Debug bookkeeping and the metadata reset of the user-facing allocations: every per-packet field back to its
    /// allocation state (data start at the headroom, no data, one segment, no port, no flags).
    #[inline(always)]
    pub(crate) fn prepare_alloc(&self, hdrs: &[NonNull<MbufHeader>]) {
        self.mark_allocated(hdrs);
        let rearm = self.inner().rearm;
        for hdr in hdrs {
            // SAFETY: the caller just took these elements from this pool; nobody else holds them.
            unsafe { (*hdr.as_ptr()).reset(rearm) };
        }
    }

    /// Debug bookkeeping for freshly taken elements (a no-op in release builds without `debug`).
    #[inline(always)]
    pub(crate) fn mark_allocated(&self, hdrs: &[NonNull<MbufHeader>]) {
        if self.inner().checks() {
            for hdr in hdrs {
                // SAFETY: the caller just took these elements from this pool; nobody else holds them.
                let h = unsafe { &mut *hdr.as_ptr() };
                assert_eq!(h.state, STATE_FREE, "mempool {}: buffer {} handed out twice", self.name(), h.index);
                h.state = STATE_IN_USE;
            }
        }
    }

    /// Wraps a raw element taken with [`Mempool::get_raw`] into an Mbuf with its metadata reset (as
    /// [`Mempool::alloc`] gives it), checking it in debug mode.
    ///
    /// # Safety
    /// `hdr` was taken from this pool and is owned by nobody else.
    #[inline(always)]
    pub unsafe fn adopt_raw(&self, hdr: NonNull<MbufHeader>) -> Mbuf {
        self.prepare_alloc(std::slice::from_ref(&hdr));
        // SAFETY: the caller guarantees unique ownership.
        unsafe { Mbuf::from_raw(hdr) }
    }

    /// Takes exactly `out.len()` raw elements, or none. For benchmarks and drivers that manage ownership
    /// themselves. The elements are in the free state: `next` null, the other per-packet metadata stale (not
    /// reset); [`Mempool::adopt_raw`] resets one and makes it an [`Mbuf`].
    ///
    /// # Safety
    /// Each element returned must be given back exactly once, through [`Mempool::put_raw`] or by wrapping it with
    /// [`Mempool::adopt_raw`] (or [`Mbuf::from_raw`], without reading its stale metadata) and dropping that.
    #[inline]
    pub unsafe fn get_raw(&self, out: &mut [NonNull<MbufHeader>]) -> bool {
        self.inner().get_bulk(out)
    }

    /// Gives back raw elements taken with [`Mempool::get_raw`], in the free state (`next` null; nothing is reset
    /// or checked).
    ///
    /// # Safety
    /// Each element must come from this pool, be owned by the caller and not be used afterwards.
    #[inline]
    pub unsafe fn put_raw(&self, objs: &[NonNull<MbufHeader>]) {
        self.inner().put_bulk(objs)
    }
}

#[cfg(test)]
mod tests {
    use super::copy_burst;

    /// Every length, the 32-pointer burst (its AVX or SSE2 moves) included, copies exactly its entries and
    /// nothing past them.
    #[test]
    fn copy_burst_copies_exactly_n_entries() {
        for n in 0..=40usize {
            let src: Vec<u64> = (0..n as u64).map(|i| 0x1000 + i * 0x40).collect();
            let mut dst = vec![u64::MAX; n + 4];
            // SAFETY: src holds n entries, dst n + 4; separate vectors.
            unsafe { copy_burst(dst.as_mut_ptr(), src.as_ptr(), n) };
            assert_eq!(&dst[..n], &src[..], "n = {n}");
            assert!(dst[n..].iter().all(|&v| v == u64::MAX), "n = {n}: wrote past the end");
        }
    }
}
