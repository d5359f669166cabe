//! The RX ring engine: a burst hands completed frames to a batch, the common burst in one fast run and anything
//! else out of line (the ring's end, chains, errors), then refills in bulk. Written once for every descriptor
//! format ([`RxFormat`]); the driver around it keeps the queue's registers and rings the doorbell with the tail a
//! burst returns.

use std::ptr::NonNull;
use std::sync::Arc;

use mempool::{ol_flags, Mbuf, MbufHeader, PacketBatch};
use pktio::stats::RxQueueStats;

use super::fast::{fast_run, RxRun};
use super::format::{IsaLevel, RxEntry, RxFormat, RxMeta};
use super::RxBuffers;

/// One RX queue's software side: its buffers ([`RxBuffers`]), the completions the format reads, the chain of a
/// frame whose later buffers have not completed yet, and the queue's counters. Owned by one thread. Dropping it
/// frees every buffer it holds: the driver stops the device writing into them first (a driver's ring type drops
/// its engine after its own `Drop` disabled the queue).
pub struct RxEngine<F: RxFormat> {
    bufs: RxBuffers<F::Desc>,
    /// Completion entry 0 (one per slot).
    wb: NonNull<F::Wb>,
    fmt: F,
    memo: F::Memo,
    /// Longest buffer the device writes (at most the pool's data room).
    max_len: u16,
    /// The fast run's build.
    isa: IsaLevel,
    /// Head of a frame whose later buffers have not completed yet.
    pending: Option<Mbuf>,
    /// A buffer of the pending frame was bad: drop the frame at its end.
    pending_bad: bool,
    stats: Arc<RxQueueStats>,
}

// SAFETY: the engine owns its buffers; `wb` points into completion memory its owner keeps alive and uses from one
// thread at a time. Moving the engine moves all of it.
unsafe impl<F: RxFormat> Send for RxEngine<F> {}

impl<F: RxFormat> RxEngine<F> {
    /// The engine of a ring whose buffers are posted (`bufs`), whose completions start at `wb`, with the format's
    /// state `fmt` and first memo `memo`; the device writes at most `max_len` bytes per buffer. Counts into `stats`.
    ///
    /// # Safety
    /// `wb` must point to one completion per slot of `bufs`' ring, memory the caller keeps alive for the engine's
    /// life; `max_len` must be at most the data room of the pool's buffers.
    pub unsafe fn new(
        bufs: RxBuffers<F::Desc>,
        wb: NonNull<F::Wb>,
        fmt: F,
        memo: F::Memo,
        max_len: u16,
        stats: Arc<RxQueueStats>,
    ) -> Self {
        RxEngine { bufs, wb, fmt, memo, max_len, isa: IsaLevel::detect(), pending: None, pending_bad: false, stats }
    }

    /// The buffers (indices, shadow ring, refill).
    #[inline(always)]
    pub fn bufs(&self) -> &RxBuffers<F::Desc> {
        &self.bufs
    }

    /// The buffers, for a driver that takes them back itself (after a flush).
    pub fn bufs_mut(&mut self) -> &mut RxBuffers<F::Desc> {
        &mut self.bufs
    }

    /// The format's state.
    pub fn format(&self) -> &F {
        &self.fmt
    }

    /// Completion entry `i`.
    ///
    /// # Panics
    /// If `i` is not a slot of the ring.
    pub fn wb(&self, i: usize) -> *mut F::Wb {
        assert!(i < self.bufs.size(), "completion {i} of a ring of {}", self.bufs.size());
        // SAFETY: i < size: inside the completions (one per slot).
        unsafe { self.wb.as_ptr().add(i) }
    }

    /// The fast run's build (for reports and tests).
    pub fn isa(&self) -> IsaLevel {
        self.isa
    }

    /// Runs the fast run with another build (tests compare the builds; `isa` must be one the CPU runs).
    ///
    /// # Panics
    /// If the CPU does not run `isa`.
    pub fn set_isa(&mut self, isa: IsaLevel) {
        assert!(isa <= IsaLevel::detect(), "the CPU does not run {isa:?}");
        self.isa = isa;
    }

    /// The queue's counters.
    pub fn stats(&self) -> &Arc<RxQueueStats> {
        &self.stats
    }

    /// Counts into `stats` from now on (a ring handed back to its port lets go of the port's counters).
    pub fn set_stats(&mut self, stats: Arc<RxQueueStats>) {
        self.stats = stats;
    }

    /// Buffers the ring holds: posted, or in a partial chain.
    pub fn buffers_held(&self) -> usize {
        self.bufs.size() - self.bufs.held() + self.pending.as_ref().map_or(0, |m| m.nb_segs() as usize)
    }

    /// One burst: receives into `batch` and refills once enough slots are held (a refill that failed earlier, the
    /// pool empty, is retried while the ring is idle). Returns the packets received and, when the refill moved the
    /// tail, its new value for the caller's tail register or doorbell (the store fence is done).
    #[inline(always)]
    pub fn rx_burst(&mut self, batch: &mut PacketBatch) -> (usize, Option<u32>) {
        // SAFETY: rx_into writes only uniquely owned packets (taken out of the shadow ring) into the first `got`
        // spare slots and returns `got`; it also moves the held count and the counters.
        let got = unsafe { batch.fill_raw(|spare| self.rx_into(spare)) };
        let tail = if self.bufs.refill_due() { self.bufs.refill(&self.stats.nombuf) } else { None };
        (got, tail)
    }

    /// Receives into `spare` (uninitialised slots of a batch) and returns how many packets it wrote there. The
    /// consumed slots go to the held count (the refill's) and the packet, byte and error counters move here, each
    /// path doing its own share once, so that no tuple of results is merged between the two.
    ///
    /// The scan is bounded by the slots the device owns (those before the tail). The common burst (no chain
    /// pending, the slots it may take do not wrap, all of them common frames) is one fast run; anything else
    /// continues out of line in [`RxEngine::rx_into_general`].
    #[inline(always)]
    fn rx_into(&mut self, spare: &mut [NonNull<MbufHeader>]) -> usize {
        let size = self.bufs.size();
        let i = self.bufs.next();
        // Slots the device may have completed: from `next` up to (not including) the tail.
        let left = spare.len().min(size - 1 - self.bufs.held());
        if left == 0 || left > size - i || self.pending.is_some() {
            return self.rx_into_general(spare, i, left, 0, 0);
        }
        // SAFETY: i + left <= size: inside the ring, the shadow array and the completions, and every slot there is
        // between `next` and the tail, so it owns its buffer; left <= spare.len().
        let (n, b) = unsafe { self.fast_run(i, left, spare.as_mut_ptr()) };
        if n < left {
            return self.rx_into_general(spare, i + n, left - n, n, b);
        }
        // n = left > 0 slots consumed, all of them packets, no errors.
        // SAFETY: the fast run took the buffers of those n slots from `next` on.
        unsafe { self.bufs.consume(if i + n == size { 0 } else { i + n }, n) };
        self.stats.packets.add(n as u64);
        self.stats.bytes.add(b);
        n
    }

    /// The fast run over the `n` slots from `i`, into `out`.
    ///
    /// # Safety
    /// i + n <= size, the slots own their buffers, `out` has room for `n`.
    #[inline(always)]
    unsafe fn fast_run(&mut self, i: usize, n: usize, out: *mut NonNull<MbufHeader>) -> (usize, u64) {
        // SAFETY: the caller's contract: slot i and the n after it are inside the ring, the shadow array and the
        // completions.
        let (wb, shadow) = unsafe { (self.wb.as_ptr().add(i), self.bufs.shadow().add(i)) };
        let run = RxRun { wb, shadow, out, n, max_len: self.max_len };
        // SAFETY: the caller's contract; the buffers' data room is at least max_len (new's contract); the level is
        // one the CPU runs (detected, or checked by set_isa).
        unsafe { fast_run(&self.fmt, self.isa, run, &mut self.memo) }
    }

    /// The rest of [`RxEngine::rx_into`] from slot `i` with `left` slots to look at, after `done` were consumed
    /// (and written to `spare`) with `bytes`: runs around the ring's end, chains, errors. Walks at most two
    /// contiguous runs, the fast run first wherever no chain is pending, and takes the other entries one at a time
    /// through [`RxFormat::decode`]. Returns the packets written to `spare` in all; moves the held count and the
    /// counters for all of them.
    #[inline(never)]
    fn rx_into_general(
        &mut self,
        spare: &mut [NonNull<MbufHeader>],
        i: usize,
        left: usize,
        done: usize,
        bytes: u64,
    ) -> usize {
        let size = self.bufs.size();
        let (mut i, mut left) = (if i == size { 0 } else { i }, left);
        let (mut consumed, mut got, mut bytes, mut errors) = (done, done, bytes, 0u64);
        'runs: while left > 0 {
            let end = i + left.min(size - i);
            let start = i;
            while i < end {
                if self.pending.is_none() {
                    // SAFETY: i..end lies inside the ring, and every slot there is between `next` and the tail, so
                    // it owns its buffer; got + (end - i) <= spare.len() because got <= consumed + (i - start) and
                    // end - start <= left.
                    let (n, b) = unsafe { self.fast_run(i, end - i, spare.as_mut_ptr().add(got)) };
                    i += n;
                    got += n;
                    bytes += b;
                    if i == end {
                        break;
                    }
                }
                // SAFETY: i < size: a completion of our ring.
                let entry = unsafe { self.fmt.decode(self.wb.as_ptr().add(i), &mut self.memo) };
                let RxEntry::Buf { len, last, bad, meta } = entry else {
                    consumed += i - start;
                    break 'runs;
                };
                // SAFETY: i < size, a slot between `next` and the tail whose entry completed: it owns its buffer,
                // which moves into `m` (the slot becomes a consumed one).
                let m = unsafe { self.bufs.take(i) };
                i += 1;
                if let Some(m) = self.complete(m, len, last, bad, &meta, &mut errors) {
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
        // SAFETY: the `consumed` slots from `next` on were taken (into packets, chains or dropped frames).
        unsafe { self.bufs.consume(if i == size { 0 } else { i }, consumed) };
        if consumed != 0 {
            self.stats.packets.add(got as u64);
            self.stats.bytes.add(bytes);
            if errors != 0 {
                self.stats.errors.add(errors);
            }
        }
        got
    }

    /// One buffer of the general path: chained to the pending frame, which ends with `last`; a frame with a bad
    /// buffer (or one longer than `max_len`) is dropped at its end and counted in `errors`. Returns the finished
    /// packet, if any.
    #[inline(always)]
    fn complete(
        &mut self,
        mut m: Mbuf,
        len: u16,
        last: bool,
        bad: bool,
        meta: &RxMeta,
        errors: &mut u64,
    ) -> Option<Mbuf> {
        let seg_ok = len <= self.max_len;
        // SAFETY: a single segment posted with our rearm word (data start at the headroom), so a length up to
        // max_len (at most the data room) fits; a longer one is recorded as 0 and the frame dropped below.
        unsafe { m.set_rx_unchecked(if seg_ok { len } else { 0 }, 0, 0, 0) };
        let mut m = match self.pending.take() {
            Some(mut head) => {
                head.chain(m);
                head
            }
            None => m,
        };
        if !last {
            // More buffers follow (a frame larger than one buffer); a bad one poisons the chain.
            self.pending_bad |= bad || !seg_ok;
            self.pending = Some(m);
            return None;
        }
        let poisoned = std::mem::take(&mut self.pending_bad);
        if bad || !seg_ok || poisoned {
            // A MAC error, a flushed buffer, or a length the buffer cannot hold: drop the whole frame.
            *errors += 1;
            return None;
        }
        m.set_ol_flags(meta.flags);
        m.set_packet_type(meta.ptype);
        m.set_rss_hash(meta.rss);
        if meta.flags & ol_flags::RX_VLAN_STRIPPED != 0 {
            m.set_vlan_tci(meta.vlan);
        }
        Some(m)
    }
}
