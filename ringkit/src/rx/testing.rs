//! Test support for the drivers' RX formats (cargo feature `testing`, which the drivers take as a dev-dependency
//! feature; not part of a production build): the fast run of every build this CPU runs ([`IsaLevel::supported`])
//! against the reference, the format's one-at-a-time test and fields alone ([`RxFormat::fast_one`], which the fast
//! run falls back to), over the same buffers, compared byte for byte in their headers. A driver's test brings what
//! is its own: its completions (a write-back builder and its proptest's inputs) and the memo an earlier burst leaves.

use std::fmt::Debug;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

use mempool::{Mbuf, MbufHeader, Mempool, TxOffload};
use proptest::prelude::{prop_assert_eq, TestCaseError};

use super::{fast_run, Base, IsaLevel, RxFormat, RxRun};

/// The port the buffers are posted for (their rearm word).
pub const PORT: u16 = 3;

/// A buffer header's bytes.
pub type Header = [u8; size_of::<MbufHeader>()];

/// Buffers a test owns, posted with their pool's rearm word as a ring's slots are, and freed when it drops (also when
/// an assertion returns early: the pool then drops full, and the assertion's message is the failure). Their RX
/// fields (and the TX offload word the RX path must zero) hold values no decode gives, so that a field a build
/// forgets to write shows; [`Posted::reset`] puts them back before each run.
pub struct Posted {
    bufs: Vec<NonNull<MbufHeader>>,
    /// Every header as [`Posted::new`] left it.
    fresh: Vec<Header>,
    /// The buffers' data room.
    room: u16,
}

impl Posted {
    /// `n` buffers of `pool`.
    ///
    /// # Panics
    /// When the pool has fewer than `n` free.
    pub fn new(pool: &Mempool, n: usize) -> Posted {
        let mut bufs = vec![NonNull::dangling(); n];
        assert!(pool.alloc_raw_bulk(&mut bufs), "{n} buffers from the pool");
        let rearm = pool.rx_rearm(PORT);
        for &h in &bufs {
            // SAFETY: fresh buffers of this pool that `bufs` owns.
            unsafe { rearm.apply(h) };
            // SAFETY: as above (a view: `bufs` keeps it).
            let mut m = ManuallyDrop::new(unsafe { Mbuf::from_raw(h) });
            // SAFETY: one segment; a length of 1 fits any buffer.
            unsafe { m.set_rx_unchecked(1, 0xdead_beef_0bad_f00d, 0x5a5a_5a5a, 0xa5a5_a5a5) };
            m.set_vlan_tci(0x0fff);
            m.set_tx_offload(TxOffload { l2_len: 14, l3_len: 20, l4_len: 8, tso_segsz: 1000 });
        }
        let fresh = bufs.iter().map(|&p| header(p)).collect();
        Posted { bufs, fresh, room: pool.data_room() }
    }

    /// Puts every header back as [`Posted::new`] left it (a run writes the headers of the frames it takes).
    pub fn reset(&self) {
        for (&p, h) in self.bufs.iter().zip(&self.fresh) {
            // SAFETY: the bytes of this same header taken by `header` (an untyped copy), written back into a buffer
            // `self` owns, with nothing borrowed from it.
            unsafe { std::ptr::copy_nonoverlapping(h.as_ptr(), p.as_ptr().cast::<u8>(), h.len()) };
        }
    }

    /// Every buffer's header now.
    pub fn headers(&self) -> Vec<Header> {
        self.bufs.iter().map(|&p| header(p)).collect()
    }

    /// A run over the buffers, reset first, of the completions `wb` (a copy of the test's) into `out`: checks what
    /// the fast run's contract asks of them.
    fn run<W>(&self, wb: &mut [W], out: &mut [NonNull<MbufHeader>], max_len: u16) -> RxRun<W> {
        self.reset();
        assert_eq!(wb.len(), self.len(), "one buffer per completion");
        assert_eq!(out.len(), self.len());
        assert!(max_len <= self.room, "max_len {max_len} past the data room {}", self.room);
        RxRun { wb: wb.as_mut_ptr(), shadow: self.bufs.as_ptr(), out: out.as_mut_ptr(), n: wb.len(), max_len }
    }
}

impl std::ops::Deref for Posted {
    type Target = [NonNull<MbufHeader>];
    fn deref(&self) -> &Self::Target {
        &self.bufs
    }
}

impl Drop for Posted {
    fn drop(&mut self) {
        // SAFETY: every buffer is still the test's (the runs only copy pointers into their output).
        unsafe { mempool::free_raw_bulk(&self.bufs) };
    }
}

/// The header of `p`, as bytes (copied untyped, so that its pointers can be written back as they were).
fn header(p: NonNull<MbufHeader>) -> Header {
    let mut h = [0u8; size_of::<MbufHeader>()];
    // SAFETY: a header of a buffer a `Posted` owns, initialised (every field written at pool creation, no padding:
    // 128 bytes of integers and pointers); copied into a local array of its size.
    unsafe { std::ptr::copy_nonoverlapping(p.as_ptr().cast::<u8>(), h.as_mut_ptr(), h.len()) };
    h
}

/// What a run did: frames taken, their bytes, where they went (the output slots, in order), every slot's buffer
/// header afterwards, the completions afterwards (a format may clear a done bit) and the memo.
#[derive(Debug, PartialEq)]
pub struct Outcome<W, M> {
    /// Frames taken.
    pub taken: usize,
    /// Their bytes.
    pub bytes: u64,
    /// The output slots of the frames taken.
    pub out: Vec<NonNull<MbufHeader>>,
    /// Every slot's buffer header.
    pub headers: Vec<Header>,
    /// The completions.
    pub ring: Vec<W>,
    /// The memo.
    pub memo: M,
}

/// The fast run of build `isa` over a copy of `ring` with `posted`'s buffers in its slots (reset first) and the
/// memo `memo` (as an earlier burst leaves it); with `None` the reference instead: [`RxFormat::fast_one`] entry by
/// entry up to the first it declines, each frame's buffer given its fields as the fast run gives them.
///
/// # Panics
/// When `ring` and `posted` differ in length, `max_len` exceeds the buffers' data room, or the CPU does not run `isa`.
pub fn run<F: RxFormat>(
    fmt: &F,
    posted: &Posted,
    ring: &[F::Wb],
    memo: F::Memo,
    max_len: u16,
    isa: Option<IsaLevel>,
) -> Outcome<F::Wb, F::Memo>
where
    F::Wb: Clone,
{
    let mut ring = ring.to_vec();
    let mut out = vec![NonNull::dangling(); ring.len()];
    let run = posted.run(&mut ring, &mut out, max_len);
    let mut memo = memo;
    let (taken, bytes) = match isa {
        Some(isa) => {
            assert!(IsaLevel::supported().contains(&isa), "build {isa:?} on a CPU that does not run it");
            // SAFETY: n completions in local memory, buffers and output slots (Posted::run checked them); the buffers
            // are posted with the rearm word, their data room at least max_len; a build the CPU runs.
            unsafe { fast_run(fmt, isa, run, &mut memo) }
        }
        None => {
            let (mut k, mut bytes) = (0, 0);
            while k < run.n {
                // SAFETY: k < n: a completion of the local copy.
                let Some(f) = (unsafe { fmt.fast_one(run.wb.add(k), max_len, &mut memo) }) else { break };
                // SAFETY: the buffer of slot k, owned, posted with the rearm word (a view: `posted` keeps it).
                let mut m = ManuallyDrop::new(unsafe { Mbuf::from_raw(posted[k]) });
                // SAFETY: one segment; f.len <= max_len (the format's contract), within its data room.
                unsafe { m.set_rx_unchecked(f.len, f.flags, f.ptype, f.rss) };
                out[k] = posted[k];
                bytes += f.len as u64;
                k += 1;
            }
            (k, bytes)
        }
    };
    out.truncate(taken);
    Outcome { taken, bytes, out, headers: posted.headers(), ring, memo }
}

/// Every build this CPU runs takes exactly what the reference ([`run`] with `None`) takes from `ring`, into the same
/// output slots, with the same bytes, and leaves every buffer header byte for byte (the taken ones written alike,
/// the others untouched), the completions and the memo as the reference does. The body of each driver's proptest
/// over its own completions.
///
/// # Panics
/// As [`run`].
pub fn every_build_matches_the_reference<F: RxFormat>(
    fmt: &F,
    posted: &Posted,
    ring: &[F::Wb],
    memo: F::Memo,
    max_len: u16,
) -> Result<(), TestCaseError>
where
    F::Wb: Clone + PartialEq + Debug,
    F::Memo: PartialEq + Debug,
{
    let reference = run(fmt, posted, ring, memo, max_len, None);
    for isa in IsaLevel::supported() {
        prop_assert_eq!(&run(fmt, posted, ring, memo, max_len, Some(isa)), &reference, "build {:?}", isa);
    }
    Ok(())
}

/// The format's groups alone ([`RxFormat::groups`]), of the base build (SSE2 on x86-64, NEON on aarch64), over a
/// copy of `ring` with `posted`'s buffers (reset first): how many they take. Shows that the groups themselves take a
/// run they should, not only the one-at-a-time path behind them.
///
/// # Panics
/// As [`run`].
pub fn base_groups<F: RxFormat>(fmt: &F, posted: &Posted, ring: &[F::Wb], memo: F::Memo, max_len: u16) -> usize
where
    F::Wb: Clone,
{
    let mut ring = ring.to_vec();
    let mut out = vec![NonNull::dangling(); ring.len()];
    let run = posted.run(&mut ring, &mut out, max_len);
    // SAFETY: n completions in local memory, buffers and output slots (Posted::run checked them); the buffers are
    // posted with the rearm word, their data room at least max_len; the base build runs on every CPU of the target.
    unsafe { fmt.groups::<Base>(run, &memo) }.0
}

#[cfg(test)]
mod tests {
    //! The comparison on a toy format with groups (scalar, as a format writes them with SIMD), faithful and with a
    //! slip of the kinds a SIMD group makes: the comparison must pass the first and fail every other.

    use drvkit::reg::Field64;
    use hugepage::Allocator;
    use mempool::PoolConfig;

    use super::super::tests::{Toy, BAD, DONE, LAST, LEN};
    use super::super::{FastFrame, Isa, RxEntry, RxMeta};
    use super::*;

    /// The toy write-back's traffic class (what the memo remembers) and RSS hash.
    const CLASS: Field64 = Field64::new(15, 8);
    const HASH: Field64 = Field64::new(63, 32);

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Slip {
        None,
        /// The groups write a length one short.
        Len,
        /// The groups take a group with an entry not done.
        Pending,
    }

    /// The toy format whose fast path takes done, last, good frames of the memo's class, groups of four at a time.
    struct Grouped(Slip);

    impl Grouped {
        /// The frame at `d` if its group may take it.
        ///
        /// # Safety
        /// `d` a completion of the run.
        unsafe fn common(&self, d: *const Toy, max_len: u16, memo: u8) -> Option<FastFrame> {
            // SAFETY: the caller's contract.
            let wb = unsafe { std::ptr::addr_of!((*d).wb).read_volatile() };
            let done = if self.0 == Slip::Pending { 0 } else { DONE };
            let len = LEN.get(wb) as u16;
            let class = CLASS.get(wb) as u8;
            (wb & (done | LAST | BAD) == done | LAST && len <= max_len && class == memo).then_some(FastFrame {
                len,
                flags: class as u64,
                ptype: class as u32,
                rss: HASH.get(wb) as u32,
            })
        }
    }

    // SAFETY: fast_one takes only done, last, good write-backs of at most max_len bytes; so do the faithful groups
    // (the slipped ones break the contract only in ways the buffers survive: a length one short, or a length of an
    // entry not done, which the test writes within max_len).
    unsafe impl RxFormat for Grouped {
        type Desc = Toy;
        type Wb = Toy;
        type Memo = u8;

        unsafe fn groups<I: Isa>(&self, run: RxRun<Toy>, memo: &u8) -> (usize, u64) {
            let (mut k, mut bytes) = (0, 0);
            while k + 4 <= run.n {
                // SAFETY: k + j < n: completions of the run.
                let g: Option<Vec<FastFrame>> =
                    (0..4).map(|j| unsafe { self.common(run.wb.add(k + j), run.max_len, *memo) }).collect();
                let Some(g) = g else { break };
                for (j, f) in g.into_iter().enumerate() {
                    let len = f.len - (self.0 == Slip::Len) as u16;
                    // SAFETY: k + j < n: an owned buffer posted with the rearm word, moving to out[k + j]; len at
                    // most max_len, within its data room.
                    unsafe {
                        let p = *run.shadow.add(k + j);
                        ManuallyDrop::new(Mbuf::from_raw(p)).set_rx_unchecked(len, f.flags, f.ptype, f.rss);
                        run.out.add(k + j).write(p);
                    }
                    bytes += len as u64;
                }
                k += 4;
            }
            (k, bytes)
        }

        unsafe fn fast_one(&self, d: *mut Toy, max_len: u16, memo: &mut u8) -> Option<FastFrame> {
            // SAFETY: a completion (the trait's contract).
            let wb = unsafe { std::ptr::addr_of!((*d).wb).read_volatile() };
            let class = CLASS.get(wb) as u8;
            // SAFETY: as above; the one-at-a-time path takes any class, and remembers it.
            let f = unsafe { Grouped(Slip::None).common(d, max_len, class) }?;
            *memo = class;
            Some(f)
        }

        unsafe fn decode(&mut self, _d: *mut Toy, _memo: &mut u8) -> RxEntry {
            RxEntry::Buf { len: 0, last: true, bad: true, meta: RxMeta::default() }
        }
    }

    /// A toy completion: done, last, of `len` bytes, class `class`.
    fn frame(len: u16, class: u8, hash: u32) -> Toy {
        Toy { addr: 0, wb: DONE | LAST | LEN.val(len as u64) | CLASS.val(class as u64) | HASH.val(hash as u64) }
    }

    /// Two groups of class 1, one broken by a class-2 frame, one-at-a-time frames to it, then an entry not done and
    /// common frames after it.
    fn ring() -> Vec<Toy> {
        let mut ring: Vec<Toy> =
            (0..16).map(|i| frame(60 + i, if i == 10 { 2 } else { 1 }, 0x100 + i as u32)).collect();
        ring[13].wb &= !DONE;
        ring
    }

    #[test]
    fn a_faithful_format_passes_and_every_slip_of_its_groups_fails() {
        let pool =
            Mempool::new("ringkit-testing", &PoolConfig { size: 63, ..Default::default() }, &Allocator::no_huge())
                .unwrap();
        let ring = ring();
        let posted = Posted::new(&pool, ring.len());
        let max_len = pool.data_room();
        let reference = run(&Grouped(Slip::None), &posted, &ring, 1, max_len, None);
        assert_eq!((reference.taken, reference.memo), (13, 1), "the reference stops at the entry not done");
        assert_eq!(base_groups(&Grouped(Slip::None), &posted, &ring, 1, max_len), 8, "the groups take two of four");
        assert!(every_build_matches_the_reference(&Grouped(Slip::None), &posted, &ring, 1, max_len).is_ok());
        for slip in [Slip::Len, Slip::Pending] {
            let mut ring = ring.clone();
            if slip == Slip::Pending {
                ring[2].wb &= !DONE;
            }
            let got = every_build_matches_the_reference(&Grouped(slip), &posted, &ring, 1, max_len);
            assert!(got.is_err(), "{slip:?} passed");
        }
        drop(posted);
        assert!(pool.is_full());
    }
}
