//! What the RX engine needs from a descriptor format: where its completions are and how to read them, for the
//! fast run (one common frame at a time, or a group through SIMD) and for the general path (any completion, chains
//! and errors included).

use super::RxDescriptor;

/// The instruction-set build of a fast run ([`RxFormat::groups`] is compiled once per build the engine can pick;
/// see [`IsaLevel`]). A format's groups test the constants to choose their instructions: the base build may use
/// only what the target always has (SSE2 on x86-64, NEON on aarch64).
pub trait Isa: 'static {
    /// The CPU has AVX (and so SSE4.1 and SSSE3): VEX three-operand forms, and the SSE4.1/SSSE3 shuffles.
    const AVX: bool;
    /// The CPU has AVX2 (and AVX): 256-bit integer operations, so a format may take two 16-byte entries per
    /// register and groups of eight.
    const AVX2: bool;
}

/// The build for what the target always has.
#[derive(Debug)]
pub enum Base {}

impl Isa for Base {
    const AVX: bool = false;
    const AVX2: bool = false;
}

/// The build for CPUs with AVX (x86-64 only).
#[derive(Debug)]
pub enum Avx {}

impl Isa for Avx {
    const AVX: bool = true;
    const AVX2: bool = false;
}

/// The build for CPUs with AVX2 (x86-64 only).
#[derive(Debug)]
pub enum Avx2 {}

impl Isa for Avx2 {
    const AVX: bool = true;
    const AVX2: bool = true;
}

/// The builds the engine chooses from, once per ring, at its creation ([`IsaLevel::detect`]). A new build (AVX2,
/// AVX-512) is a variant here, an [`Isa`] type, and one more `#[target_feature]` entry in the engine's dispatch.
/// Ordered: a CPU that runs a level runs every level below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum IsaLevel {
    /// [`Base`].
    Base,
    /// [`Avx`].
    Avx,
    /// [`Avx2`].
    Avx2,
}

impl IsaLevel {
    /// The best build this CPU runs (the feature tests run once per call: a ring calls this at its creation).
    pub fn detect() -> IsaLevel {
        if crate::cpu_has_avx2() {
            IsaLevel::Avx2
        } else if crate::cpu_has_avx() {
            IsaLevel::Avx
        } else {
            IsaLevel::Base
        }
    }

    /// Every build this CPU runs, lowest first (tests compare them).
    pub fn supported() -> Vec<IsaLevel> {
        let best = IsaLevel::detect();
        [IsaLevel::Base, IsaLevel::Avx, IsaLevel::Avx2].into_iter().filter(|&l| l <= best).collect()
    }

    /// The RX burst mode's name of this build. Every format of this workspace has SSE2 groups of four on x86-64; in
    /// the AVX2 build the formats of 16-byte write-backs (ixgbe) take groups of eight, two per register, and those
    /// of 32-byte entries (i40e, hinic3) keep their groups of four. On aarch64 every format of this workspace has
    /// NEON groups of four.
    pub fn rx_name(self) -> &'static str {
        match self {
            _ if cfg!(target_arch = "aarch64") => "Vector NEON (4 per step)",
            _ if cfg!(not(target_arch = "x86_64")) => "Scalar",
            IsaLevel::Base => "Vector SSE2",
            IsaLevel::Avx => "Vector SSE2 (AVX build)",
            IsaLevel::Avx2 => "Vector AVX2 (16-byte write-backs 8 per step; else Vector SSE2 4 per step)",
        }
    }
}

/// What one common frame taken by the fast run puts into its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastFrame {
    /// Its length (one buffer).
    pub len: u16,
    /// `ol_flags`.
    pub flags: u64,
    /// Packet type.
    pub ptype: u32,
    /// RSS hash.
    pub rss: u32,
}

/// The metadata of a frame's last buffer in the general path: what goes into the chain's head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RxMeta {
    /// `ol_flags` (with `RX_VLAN_STRIPPED`, [`RxMeta::vlan`] is the tag).
    pub flags: u64,
    /// Packet type.
    pub ptype: u32,
    /// RSS hash.
    pub rss: u32,
    /// The stripped VLAN tag.
    pub vlan: u16,
}

/// One completion as the general path reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxEntry {
    /// The device has not completed this entry yet: the burst ends here.
    Pending,
    /// A completed buffer of `len` bytes. `last`: the frame ends with it, and `meta` describes the frame. `bad`:
    /// the frame is dropped at its end and counted as an error (a MAC error, a flushed buffer).
    Buf {
        /// Bytes in this buffer (more than the engine's `max_len` drops the frame too).
        len: u16,
        /// The frame's last buffer.
        last: bool,
        /// Drop the frame.
        bad: bool,
        /// With `last`: the frame's flags, type, hash and tag.
        meta: RxMeta,
    },
}

/// A descriptor format's RX write-back decode: the part of an RX ring that is the hardware's own. The engine
/// ([`super::RxEngine`]) is monomorphised over it; every function is called on the hot path and should be
/// `#[inline(always)]`.
///
/// The completions (`Wb`) are one per ring slot: the descriptors themselves on Intel rings, a separate array on
/// rings whose device writes completions elsewhere (hinic3's CQEs).
///
/// # Safety
/// A frame [`RxFormat::fast_one`] or [`RxFormat::groups`] takes is a completed frame of one buffer, of at most the
/// `max_len` passed (the engine writes that length into the buffer without checking it again); each reads an entry
/// only after its completion bit was seen with acquire order.
pub unsafe trait RxFormat: Send {
    /// The ring's descriptor, as the buffer core posts it.
    type Desc: RxDescriptor;
    /// One completion entry.
    type Wb;
    /// What the fast run remembers from one frame to the next: typically the last combination of the flag bits
    /// and the `ol_flags` and packet type it gives, since a burst mostly repeats one.
    type Memo: Copy;

    /// Takes groups of common frames at once from the start of `run` (each like [`RxFormat::fast_one`] would take,
    /// with `memo`): writes each buffer's RX fields, moves it from the run's `shadow[k]` to its `out[k]`, and returns
    /// how many it took and their bytes. Stops at the first group it cannot take whole; the engine goes on one at a
    /// time from there. On x86-64 a format writes its test and its shuffles into the skeleton
    /// [`super::RxRun::simd_groups`]. The default takes none: a format without a vector path.
    ///
    /// # Safety
    /// The run's pointers valid for its `n` entries; the shadow entries own buffers posted with the rearm word, whose
    /// data room is at least the run's `max_len`; the entries are memory the device may write; the CPU runs `I`.
    #[inline(always)]
    unsafe fn groups<I: Isa>(&self, run: super::RxRun<Self::Wb>, memo: &Self::Memo) -> (usize, u64) {
        let _ = (run, memo);
        (0, 0)
    }

    /// The entry at `wb` if it is a common frame: completed, one buffer, no error, at most `max_len` bytes, and
    /// whatever else the format leaves to the general path. Updates `memo` when its flags differ. `None` leaves the
    /// entry as it was, for the general path.
    ///
    /// # Safety
    /// `wb` an entry of the ring's completions, memory the device may write.
    unsafe fn fast_one(&self, wb: *mut Self::Wb, max_len: u16, memo: &mut Self::Memo) -> Option<FastFrame>;

    /// The entry at `wb`, whatever it is, for the general path (it may update `memo`, or hold state across a
    /// frame's buffers). Called for each entry of a frame in turn, after the fast run declined the first.
    ///
    /// # Safety
    /// As [`RxFormat::fast_one`]; an entry reported completed is consumed (its buffer taken) by the engine.
    unsafe fn decode(&mut self, wb: *mut Self::Wb, memo: &mut Self::Memo) -> RxEntry;
}
