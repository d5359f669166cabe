//! IPv4 longest-prefix match, DIR-24-8.

use crate::entry::Entry;
use crate::error::Result;
use crate::trie::{Trie, GROUP_LEN};

/// Sizes of an [`Lpm4`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lpm4Config {
    /// Most rules (prefixes) the table holds.
    pub max_rules: u32,
    /// tbl8 groups: one per /24 that holds at least one longer prefix (1 KiB each, reserved up front, touched on
    /// use). At most 2^22.
    pub tbl8_groups: u32,
}

impl Default for Lpm4Config {
    /// 2M rules and 64K tbl8 groups (64 MiB reserved): room for a full Internet table.
    fn default() -> Self {
        Lpm4Config { max_rules: 2 << 20, tbl8_groups: 1 << 16 }
    }
}

/// An IPv4 route table: DIR-24-8 (tbl24 indexed by the top 24 address bits; prefixes longer than /24 in 256-entry
/// tbl8 groups), so a lookup is one memory access for most addresses and two for the rest.
///
/// Addresses and prefixes are host-order `u32` (`u32::from(Ipv4Addr)`, or `u32::from_be_bytes` of the header
/// field). Host bits of a prefix are ignored. Next hops are 0..=[`Lpm4::MAX_NEXT_HOP`].
///
/// ```
/// use lpm::{Lpm4, Lpm4Config};
/// let mut lpm = Lpm4::new(Lpm4Config { max_rules: 16, tbl8_groups: 4 })?;
/// lpm.add(0x0a00_0000, 8, 1)?; // 10.0.0.0/8 -> 1
/// lpm.add(0x0a01_0200, 25, 2)?; // 10.1.2.0/25 -> 2
/// assert_eq!(lpm.lookup(0x0a01_0203), Some(2));
/// assert_eq!(lpm.lookup(0x0a01_0283), Some(1));
/// lpm.delete(0x0a00_0000, 8)?;
/// assert_eq!(lpm.lookup(0x0a01_0283), None);
/// assert_eq!(lpm.lookup_x4(&[0x0a01_0203, 0, 0x0a01_0202, 1], u32::MAX), [2, u32::MAX, 2, u32::MAX]);
/// # Ok::<(), lpm::Error>(())
/// ```
pub struct Lpm4 {
    trie: Trie,
}

/// IPv4 address as a left-aligned trie key.
#[inline]
fn key(ip: u32) -> u128 {
    u128::from(ip) << 96
}

impl Lpm4 {
    /// The largest next hop an entry stores (2^22 - 1).
    pub const MAX_NEXT_HOP: u32 = Entry::MAX_NEXT_HOP;

    /// An empty table. Reserves tbl24 (64 MiB) and the tbl8 groups; pages are touched only as routes fill them.
    pub fn new(config: Lpm4Config) -> Result<Lpm4> {
        Ok(Lpm4 { trie: Trie::new(32, config.max_rules, config.tbl8_groups)? })
    }

    /// Adds `prefix/depth -> next_hop`, or changes the next hop of that route if present.
    ///
    /// Errors: depth over 32, next hop over [`Lpm4::MAX_NEXT_HOP`], the rule table full, or (for depth over 24)
    /// no free tbl8 group; on error the table is unchanged.
    pub fn add(&mut self, prefix: u32, depth: u8, next_hop: u32) -> Result<()> {
        self.trie.add(key(prefix), depth, next_hop)
    }

    /// Deletes `prefix/depth` and returns its next hop; its addresses fall back to the next-longest covering
    /// route. A tbl8 group left without longer-than-/24 routes is freed.
    pub fn delete(&mut self, prefix: u32, depth: u8) -> Result<u32> {
        self.trie.delete(key(prefix), depth)
    }

    /// The next hop of exactly `prefix/depth`, if that route is in the table.
    pub fn route(&self, prefix: u32, depth: u8) -> Option<u32> {
        self.trie.rule(key(prefix), depth)
    }

    /// All routes as (prefix, depth, next hop), in no particular order within a depth, shortest depth first.
    pub fn routes(&self) -> impl Iterator<Item = (u32, u8, u32)> + '_ {
        self.trie.rules().map(|(k, d, nh)| ((k >> 96) as u32, d, nh))
    }

    /// Routes in the table.
    pub fn len(&self) -> usize {
        self.trie.rule_count() as usize
    }

    /// No routes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// tbl8 groups in use.
    pub fn tbl8_groups_used(&self) -> u32 {
        self.trie.groups_used()
    }

    /// tbl24 and tbl8 bytes (what a lookup's working set can reach).
    pub fn table_bytes(&self) -> usize {
        (self.trie.root.len() + self.trie.groups.len()) * size_of::<u32>()
    }

    #[inline(always)]
    fn tbl24(&self, ip: u32) -> Entry {
        // The index is < 2^24 = root.len(), so the bounds check folds away.
        Entry::from_raw(self.trie.root[(ip >> 8) as usize])
    }

    #[inline(always)]
    fn tbl8(&self, group_entry: Entry, ip: u32) -> Entry {
        Entry::from_raw(self.trie.groups[group_entry.next_hop() as usize * GROUP_LEN + (ip & 0xff) as usize])
    }

    /// The next hop for `ip`: the longest matching prefix's.
    #[inline]
    pub fn lookup(&self, ip: u32) -> Option<u32> {
        let mut e = self.tbl24(ip);
        if e.is_ext() {
            e = self.tbl8(e, ip);
        }
        e.is_valid().then_some(e.next_hop())
    }

    /// Looks up `N` addresses at once, `miss` for those without a route. All first-level loads issue before any
    /// second-level one, so the cache misses of the `N` lookups overlap instead of queueing.
    #[inline]
    pub fn lookup_n<const N: usize>(&self, ips: &[u32; N], miss: u32) -> [u32; N] {
        let mut e = [Entry::INVALID; N];
        for i in 0..N {
            e[i] = self.tbl24(ips[i]);
        }
        for i in 0..N {
            if e[i].is_ext() {
                e[i] = self.tbl8(e[i], ips[i]);
            }
        }
        let mut hops = [miss; N];
        for i in 0..N {
            if e[i].is_valid() {
                hops[i] = e[i].next_hop();
            }
        }
        hops
    }

    /// [`Lpm4::lookup_n`] for 4 addresses; on x86_64 the four tbl24 entries are tested and resolved together in
    /// one SSE2 register.
    #[inline]
    pub fn lookup_x4(&self, ips: &[u32; 4], miss: u32) -> [u32; 4] {
        let e = ips.map(|ip| self.tbl24(ip).raw());
        self.resolve_x4(e, ips, miss)
    }

    /// [`Lpm4::lookup_n`] for 8 addresses: all eight tbl24 loads first, then two [`Lpm4::lookup_x4`] resolves.
    #[inline]
    pub fn lookup_x8(&self, ips: &[u32; 8], miss: u32) -> [u32; 8] {
        let e = ips.map(|ip| self.tbl24(ip).raw());
        let (lo_e, hi_e) = e.split_at(4);
        let (lo_ip, hi_ip) = ips.split_at(4);
        let lo = self.resolve_x4(lo_e.try_into().expect("4"), lo_ip.try_into().expect("4"), miss);
        let hi = self.resolve_x4(hi_e.try_into().expect("4"), hi_ip.try_into().expect("4"), miss);
        [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]]
    }

    /// Next hops from four raw tbl24 entries `e` of `ips`: one test for "any extended" (then tbl8 for those, per
    /// entry, rare in real tables), then the valid/next-hop/miss select on all four at once.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn resolve_x4(&self, e: [u32; 4], ips: &[u32; 4], miss: u32) -> [u32; 4] {
        // SAFETY: SSE2 is part of the x86_64 baseline, so every x86_64 CPU has the feature the function enables.
        match unsafe { select_x4_sse2(e, miss) } {
            Some(hops) => hops,
            None => self.resolve_n(e, ips, miss),
        }
    }

    /// The portable form of the above.
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    fn resolve_x4(&self, e: [u32; 4], ips: &[u32; 4], miss: u32) -> [u32; 4] {
        self.resolve_n(e, ips, miss)
    }

    /// Next hops from `N` raw tbl24 entries, one entry at a time.
    #[inline(always)]
    fn resolve_n<const N: usize>(&self, e: [u32; N], ips: &[u32; N], miss: u32) -> [u32; N] {
        let mut hops = [miss; N];
        for i in 0..N {
            let mut en = Entry::from_raw(e[i]);
            if en.is_ext() {
                en = self.tbl8(en, ips[i]);
            }
            if en.is_valid() {
                hops[i] = en.next_hop();
            }
        }
        hops
    }

    /// Asks the CPU to start loading the tbl24 line of `ip`. A prefetch retires without waiting for the data, so a
    /// burst's misses all overlap instead of being limited by how many waiting loads the core can track.
    #[inline(always)]
    pub fn prefetch(&self, ip: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let line: *const u32 = &self.trie.root[(ip >> 8) as usize];
            // SAFETY: a prefetch is only a hint: it never faults and changes no memory (and `line` is in bounds).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line.cast()) };
        }
        // Elsewhere a hint only: nothing to do without an x86 prefetch.
        #[cfg(not(target_arch = "x86_64"))]
        let _ = ip;
    }

    /// Looks up a burst: `hops[i]` gets the next hop of `ips[i]`, or `miss`. Prefetches the tbl24 lines of each
    /// window of [`Lpm4::BULK_WINDOW`] addresses before looking them up 8 at a time, and the next window's while
    /// looking up this one.
    ///
    /// # Panics
    /// If the slices differ in length.
    #[inline]
    pub fn lookup_bulk(&self, ips: &[u32], hops: &mut [u32], miss: u32) {
        assert_eq!(ips.len(), hops.len(), "lookup_bulk: one next-hop slot per address");
        let window = Self::BULK_WINDOW;
        for &ip in &ips[..ips.len().min(window)] {
            self.prefetch(ip);
        }
        for (start, (ipw, hopw)) in ips.chunks(window).zip(hops.chunks_mut(window)).enumerate() {
            let next = (start + 1) * window;
            for &ip in ips.get(next..ips.len().min(next + window)).unwrap_or(&[]) {
                self.prefetch(ip);
            }
            let mut ip8 = ipw.chunks_exact(8);
            let mut hop8 = hopw.chunks_exact_mut(8);
            for (i, h) in (&mut ip8).zip(&mut hop8) {
                h.copy_from_slice(&self.lookup_x8(i.try_into().expect("chunks of 8"), miss));
            }
            for (&ip, hop) in ip8.remainder().iter().zip(hop8.into_remainder()) {
                *hop = self.lookup(ip).unwrap_or(miss);
            }
        }
    }

    /// Addresses [`Lpm4::lookup_bulk`] prefetches ahead: about the misses a core keeps in flight.
    pub const BULK_WINDOW: usize = 32;
}

/// The next hops of four raw tbl24 entries (`miss` where not valid), or `None` when any of them is extended.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
fn select_x4_sse2(e: [u32; 4], miss: u32) -> Option<[u32; 4]> {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_andnot_si128, _mm_castsi128_ps, _mm_cmpeq_epi32, _mm_movemask_ps, _mm_or_si128,
        _mm_set1_epi32, _mm_set_epi32, _mm_slli_epi32, _mm_storeu_si128,
    };
    let v = _mm_set_epi32(e[3] as i32, e[2] as i32, e[1] as i32, e[0] as i32);
    // EXT shifted to the sign bit: movemask gathers it from the four lanes.
    if _mm_movemask_ps(_mm_castsi128_ps(_mm_slli_epi32::<{ 31 - Entry::EXT_BIT }>(v))) != 0 {
        return None;
    }
    let valid = _mm_set1_epi32(Entry::VALID_MASK as i32);
    let is_valid = _mm_cmpeq_epi32(_mm_and_si128(v, valid), valid);
    let hop = _mm_and_si128(v, _mm_set1_epi32(Entry::MAX_NEXT_HOP as i32));
    let out = _mm_or_si128(_mm_and_si128(is_valid, hop), _mm_andnot_si128(is_valid, _mm_set1_epi32(miss as i32)));
    let mut hops = [0u32; 4];
    // SAFETY: `hops` is 16 writable bytes and the store is unaligned, so any address is fine.
    unsafe { _mm_storeu_si128(hops.as_mut_ptr().cast::<__m128i>(), out) };
    Some(hops)
}
