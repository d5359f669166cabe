//! `umem=pool`: the socket's UMEM is the memory of the port's mempool, so frames are neither copied in nor out.
//!
//! The whole pool region is registered in unaligned-chunk mode (an element is header + headroom + data room, not a
//! power of two). A "chunk" is one buffer (headroom and data room; the 128-byte header before it stays outside
//! every chunk): the fill ring carries free buffers' start addresses, the kernel writes a frame
//! [`XDP_PACKET_HEADROOM`] bytes into its buffer and the RX descriptor points at it, which becomes the mbuf's data
//! offset. TX descriptors point at the mbuf's own data; the completion ring gives the address back and the mbuf is
//! freed. Descriptor addresses are read the unaligned way (low 48 bits: base, high 16: offset added to it), which
//! also reads plain addresses right.
//!
//! Which buffers the kernel holds is kept per side (RX: posted on the fill ring and not yet received; TX: sent and
//! not yet completed), indexed by pool index: an address the kernel returns is only turned into an mbuf if that
//! buffer is one it holds, and what it still holds when the socket closes goes back to the pool then.

use std::cell::UnsafeCell;
use std::ptr::NonNull;

use mempool::{Mbuf, MbufHeader, Mempool};

use super::xsk::{Producer, QueueId, Ring};

/// Descriptor address bits that hold the base (the rest hold the offset, unaligned mode).
const ADDR_MASK: u64 = (1 << 48) - 1;
/// Smallest chunk the kernel accepts (XDP_UMEM_MIN_CHUNK_SIZE).
const MIN_CHUNK: u32 = 2048;
/// Buffers moved per pool call when refilling.
const REFILL_STEP: usize = 64;

/// Buffers of one pool the kernel holds on one side of a socket.
#[derive(Debug)]
struct Held {
    /// By pool index: the buffer's header while the kernel holds it, null otherwise.
    slots: Box<[*mut MbufHeader]>,
    count: u32,
}

impl Held {
    fn new(size: u32) -> Held {
        Held { slots: vec![std::ptr::null_mut(); size as usize].into_boxed_slice(), count: 0 }
    }

    #[inline(always)]
    fn give(&mut self, index: u32, hdr: NonNull<MbufHeader>) {
        self.slots[index as usize] = hdr.as_ptr();
        self.count += 1;
    }

    /// Takes buffer `index` back if the kernel held it (and it is `hdr`).
    #[inline(always)]
    fn take(&mut self, index: u32, hdr: NonNull<MbufHeader>) -> bool {
        let slot = &mut self.slots[index as usize];
        if *slot != hdr.as_ptr() {
            return false;
        }
        *slot = std::ptr::null_mut();
        self.count -= 1;
        true
    }
}

/// Where a descriptor address points: the pool element and the byte's address.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Located {
    index: u32,
    hdr: NonNull<MbufHeader>,
    data: usize,
}

/// Starts loading the cache line at `p` into the cache (a hint: no effect on what the program computes).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults, whatever the address; it only warms the cache.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Why a pool cannot be a UMEM.
pub(crate) fn check(pool: &Mempool) -> Result<(), String> {
    let buf_len = u32::from(pool.headroom()) + u32::from(pool.data_room());
    if buf_len < MIN_CHUNK {
        return Err(format!(
            "mempool {}: buffers of {buf_len} bytes (headroom + data room) are below the {MIN_CHUNK}-byte chunk \
             AF_XDP needs for umem=pool; give the pool a larger data room, or use umem=own",
            pool.name()
        ));
    }
    Ok(())
}

/// The UMEM of a socket in `umem=pool` mode: the pool's memory, and the buffers the kernel holds.
#[derive(Debug)]
pub(crate) struct PoolUmem {
    pool: Mempool,
    base: NonNull<u8>,
    len: usize,
    chunk: u32,
    /// Buffers kept on the fill ring (or in the kernel waiting for frames).
    fill_target: u32,
    rx: UnsafeCell<Held>,
    tx: UnsafeCell<Held>,
    /// The queue the socket was bound to (none if bind failed: the kernel never saw the buffers).
    queue: Option<QueueId>,
}

impl PoolUmem {
    /// The UMEM for `pool` ([`check`]ed by the caller), keeping `fill_target` buffers with the kernel for receiving.
    pub(crate) fn new(pool: &Mempool, fill_target: u32) -> PoolUmem {
        let mem = pool.memory();
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u32;
        let buf_len = u32::from(pool.headroom()) + u32::from(pool.data_room());
        PoolUmem {
            pool: pool.clone(),
            // The region is a live mapping, never null.
            base: NonNull::new(mem.as_ptr()).expect("pool memory is mapped"),
            len: mem.len(),
            // The kernel caps chunks at a page; the buffer's tail beyond it is simply not offered for receiving.
            chunk: buf_len.min(page),
            fill_target,
            rx: UnsafeCell::new(Held::new(pool.size())),
            tx: UnsafeCell::new(Held::new(pool.size())),
            queue: None,
        }
    }

    /// Records that the socket is bound to `queue`: on drop, the buffers wait for the kernel to let go of it.
    pub(crate) fn bound(&mut self, queue: QueueId) {
        self.queue = Some(queue);
    }

    /// The registration: the pool's whole region, unaligned chunks, no headroom of the UMEM's own.
    pub(crate) fn reg(&self) -> libc::xdp_umem_reg {
        libc::xdp_umem_reg {
            addr: self.base.as_ptr() as u64,
            len: self.len as u64,
            chunk_size: self.chunk,
            headroom: 0,
            flags: libc::XDP_UMEM_UNALIGNED_CHUNK_FLAG,
            tx_metadata_len: 0,
        }
    }

    /// Largest frame the kernel takes in one descriptor (TX; received frames also leave it
    /// XDP_PACKET_HEADROOM).
    pub(crate) fn chunk(&self) -> u32 {
        self.chunk
    }

    /// The pool whose memory this is.
    pub(crate) fn pool(&self) -> &Mempool {
        &self.pool
    }

    /// UMEM address of `m`'s buffer start (its data start less its headroom).
    #[inline(always)]
    fn buf_addr(&self, m: &Mbuf) -> u64 {
        (m.data().as_ptr() as usize - m.headroom() as usize - self.base.as_ptr() as usize) as u64
    }

    /// The pool element a descriptor address points into, and that byte's address; starts loading the element's
    /// header, which is written next (a buffer comes back a ring's worth of frames after it was posted, long out
    /// of the cache: measured, that miss was the largest user-space cost of receiving).
    #[inline(always)]
    pub(crate) fn element(&self, addr: u64) -> Option<Located> {
        let off = (addr & ADDR_MASK) + (addr >> 48);
        if off >= self.len as u64 {
            return None;
        }
        let ptr = self.base.as_ptr() as usize + off as usize;
        let (index, hdr) = self.pool.element_of(ptr as *const u8)?;
        prefetch(hdr.as_ptr().cast());
        Some(Located { index, hdr, data: ptr })
    }

    /// Tops the buffers the kernel holds for receiving up to the target: fresh pool buffers onto the fill ring,
    /// published at the end. Returns how many the pool could not supply. RX side only (one caller at a time).
    #[inline]
    pub(crate) fn refill(&self, ring: &Ring, fill: &mut Producer) -> u32 {
        // SAFETY: the RX-side bookkeeping is only touched by the socket's one RX user (the RX queue handle, or
        // `Xsk::open` before any handle exists).
        let held = unsafe { &mut *self.rx.get() };
        let mut want = self.fill_target.saturating_sub(held.count) as usize;
        let mut posted = 0u32;
        while want > 0 {
            let n = want.min(REFILL_STEP);
            let mut bufs = [const { None }; REFILL_STEP];
            if !self.pool.alloc_bulk(&mut bufs[..n]) {
                break;
            }
            for m in bufs[..n].iter_mut().filter_map(Option::take) {
                fill.put_addr(ring, posted, self.buf_addr(&m));
                held.give(m.pool_index(), m.into_raw());
                posted += 1;
            }
            want -= n;
        }
        if posted > 0 {
            fill.submit(ring, posted);
        }
        want as u32
    }

    /// The mbuf of a received frame (its [`PoolUmem::element`] and length), or `None` for a descriptor that does
    /// not point into a buffer the kernel holds for receiving or whose frame does not fit it. RX side only.
    #[inline(always)]
    pub(crate) fn take_rx(&self, at: Located, len: u32) -> Option<Mbuf> {
        let Located { index, hdr, data } = at;
        // SAFETY: RX side only, as in `refill`.
        let held = unsafe { &mut *self.rx.get() };
        if !held.take(index, hdr) {
            return None;
        }
        // SAFETY: the buffer was ours (allocated and posted on the fill ring, recorded in `held`) and the kernel
        // gave it back on the RX ring: nothing else owns it. Its metadata were reset when it was allocated.
        let mut m = unsafe { Mbuf::from_raw(hdr) };
        let start = m.data().as_ptr() as usize - m.headroom() as usize;
        let off = u16::try_from(data.wrapping_sub(start)).ok()?;
        let len = u16::try_from(len).ok()?;
        // A frame that does not fit drops the buffer back into the pool (the `?` on a failed check).
        (m.reset_data(off) && m.set_len(len)).then_some(m)
    }

    /// Records `m` as sent and returns its TX descriptor address (its data start). TX side only.
    #[inline(always)]
    pub(crate) fn give_tx(&self, m: Mbuf) -> u64 {
        let addr = (m.data().as_ptr() as usize - self.base.as_ptr() as usize) as u64;
        // SAFETY: the TX-side bookkeeping is only touched by the socket's one TX queue handle.
        let held = unsafe { &mut *self.tx.get() };
        held.give(m.pool_index(), m.into_raw());
        addr
    }

    /// The mbuf a completion address gives back, or `None` if it is not one sent. TX side only.
    #[inline(always)]
    pub(crate) fn take_tx(&self, addr: u64) -> Option<NonNull<MbufHeader>> {
        let Located { index, hdr, .. } = self.element(addr)?;
        // SAFETY: TX side only, as in `give_tx`.
        let held = unsafe { &mut *self.tx.get() };
        held.take(index, hdr).then_some(hdr)
    }

    /// Whether `m` is a single segment of the registered pool (it can be sent as it is).
    #[inline(always)]
    pub(crate) fn owns(&self, m: &Mbuf) -> bool {
        m.single_of(self.pool.id()) == 0
    }
}

impl Drop for PoolUmem {
    /// Runs after the socket is closed and its rings unmapped ([`super::xsk::Xsk`]'s field order). The socket is
    /// released then, but the kernel detaches its buffer pool from the queue later (deferred work), and until then
    /// a zero-copy driver may still write into the buffers: they go back to the mempool once the queue is seen free,
    /// or stay out (reported) if it is not within the wait.
    fn drop(&mut self) {
        if let Some(queue) = &self.queue {
            if !queue.wait_released() {
                eprintln!(
                    "net_af_xdp: the kernel still held the queue of a closed socket after {:?}; its buffers of mempool \
                     {} are kept out of the pool",
                    super::xsk::BIND_BUSY_WAIT,
                    self.pool.name()
                );
                self.pool.allow_leak_on_drop();
                return;
            }
        }
        let mut back = Vec::new();
        for held in [self.rx.get_mut(), self.tx.get_mut()] {
            back.extend(held.slots.iter().filter_map(|&p| NonNull::new(p)));
        }
        // SAFETY: each of these was an owned buffer handed to the kernel and never taken back; the socket is gone,
        // so nothing else refers to them, and each is listed once (a buffer is held by one side at a time).
        unsafe { mempool::free_raw_bulk(&back) };
    }
}
