//! IPv6 longest-prefix match: a multibit trie, 24 bits then 8 per level.

use crate::entry::Entry;
use crate::error::Result;
use crate::trie::{Trie, GROUP_LEN, ROOT_BITS};

/// Sizes of an [`Lpm6`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lpm6Config {
    /// Most rules (prefixes) the table holds.
    pub max_rules: u32,
    /// 256-entry groups for the levels past the first 24 bits (1 KiB each, reserved up front, touched on use); a
    /// /48 needs up to 3, a /64 up to 5, a /128 up to 13. At most 2^22.
    pub groups: u32,
}

impl Default for Lpm6Config {
    /// 1M rules and 256K groups (256 MiB reserved).
    fn default() -> Self {
        Lpm6Config { max_rules: 1 << 20, groups: 1 << 18 }
    }
}

/// An IPv6 route table: a 2^24-entry first level (as DPDK's rte_lpm6) then 8-bit levels, one memory access per
/// level the longest matching prefix reaches past bit 24 (a /48 is resolved in 4 accesses, a /64 in 6).
///
/// Addresses are host-order `u128` (`u128::from(Ipv6Addr)`, or `u128::from_be_bytes` of the header field).
///
/// ```
/// use lpm::{Lpm6, Lpm6Config};
/// let mut lpm = Lpm6::new(Lpm6Config { max_rules: 16, groups: 64 })?;
/// let net: u128 = "2001:db8::".parse::<std::net::Ipv6Addr>().unwrap().into();
/// lpm.add(net, 32, 1)?;
/// lpm.add(net, 64, 2)?;
/// assert_eq!(lpm.lookup(net | 5), Some(2));
/// assert_eq!(lpm.lookup(net | (1 << 64)), Some(1));
/// # Ok::<(), lpm::Error>(())
/// ```
pub struct Lpm6 {
    trie: Trie,
}

impl Lpm6 {
    /// The largest next hop an entry stores (2^22 - 1).
    pub const MAX_NEXT_HOP: u32 = Entry::MAX_NEXT_HOP;

    /// An empty table. Reserves the first level (64 MiB) and the groups; pages are touched only as routes fill them.
    pub fn new(config: Lpm6Config) -> Result<Lpm6> {
        Ok(Lpm6 { trie: Trie::new(128, config.max_rules, config.groups)? })
    }

    /// Adds `prefix/depth -> next_hop`, or changes the next hop of that route if present. On error (depth over
    /// 128, next hop too large, rules or groups exhausted) the table is unchanged.
    pub fn add(&mut self, prefix: u128, depth: u8, next_hop: u32) -> Result<()> {
        self.trie.add(prefix, depth, next_hop)
    }

    /// Deletes `prefix/depth` and returns its next hop; its addresses fall back to the next-longest covering
    /// route, and groups left without longer routes are freed.
    pub fn delete(&mut self, prefix: u128, depth: u8) -> Result<u32> {
        self.trie.delete(prefix, depth)
    }

    /// The next hop of exactly `prefix/depth`, if that route is in the table.
    pub fn route(&self, prefix: u128, depth: u8) -> Option<u32> {
        self.trie.rule(prefix, depth)
    }

    /// All routes as (prefix, depth, next hop), shortest depth first.
    pub fn routes(&self) -> impl Iterator<Item = (u128, u8, u32)> + '_ {
        self.trie.rules()
    }

    /// Routes in the table.
    pub fn len(&self) -> usize {
        self.trie.rule_count() as usize
    }

    /// No routes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Groups in use.
    pub fn groups_used(&self) -> u32 {
        self.trie.groups_used()
    }

    /// The next hop for `addr`: the longest matching prefix's.
    #[inline]
    pub fn lookup(&self, addr: u128) -> Option<u32> {
        self.trie.lookup(addr)
    }

    /// Looks up `N` addresses at once, `miss` for those without a route; each level's loads for all `N` issue
    /// together so their cache misses overlap.
    #[inline]
    pub fn lookup_n<const N: usize>(&self, addrs: &[u128; N], miss: u32) -> [u32; N] {
        let root = &self.trie.root;
        let groups = &self.trie.groups;
        let mut e = [Entry::INVALID; N];
        for i in 0..N {
            e[i] = Entry::from_raw(root[(addrs[i] >> (128 - ROOT_BITS)) as usize]);
        }
        // Bits of the address not yet consumed; each level consumes the top 8 of them.
        let mut rest = 128 - ROOT_BITS;
        while rest > 0 && e.iter().any(|e| e.is_ext()) {
            rest -= 8;
            for i in 0..N {
                if e[i].is_ext() {
                    let byte = ((addrs[i] >> rest) & 0xff) as usize;
                    e[i] = Entry::from_raw(groups[e[i].next_hop() as usize * GROUP_LEN + byte]);
                }
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

    /// [`Lpm6::lookup_n`] for 4 addresses.
    #[inline]
    pub fn lookup_x4(&self, addrs: &[u128; 4], miss: u32) -> [u32; 4] {
        self.lookup_n(addrs, miss)
    }

    /// [`Lpm6::lookup_n`] for 8 addresses.
    #[inline]
    pub fn lookup_x8(&self, addrs: &[u128; 8], miss: u32) -> [u32; 8] {
        self.lookup_n(addrs, miss)
    }

    /// Looks up a burst: `hops[i]` gets the next hop of `addrs[i]`, or `miss`. Runs 8 at a time.
    ///
    /// # Panics
    /// If the slices differ in length.
    #[inline]
    pub fn lookup_bulk(&self, addrs: &[u128], hops: &mut [u32], miss: u32) {
        assert_eq!(addrs.len(), hops.len(), "lookup_bulk: one next-hop slot per address");
        let mut addr_chunks = addrs.chunks_exact(8);
        let mut hop_chunks = hops.chunks_exact_mut(8);
        for (a8, hop8) in (&mut addr_chunks).zip(&mut hop_chunks) {
            let a8: &[u128; 8] = a8.try_into().expect("chunks of 8");
            hop8.copy_from_slice(&self.lookup_x8(a8, miss));
        }
        for (&a, hop) in addr_chunks.remainder().iter().zip(hop_chunks.into_remainder()) {
            *hop = self.lookup(a).unwrap_or(miss);
        }
    }
}
