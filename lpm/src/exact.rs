//! Exact match on 5-tuples: a fixed-capacity open-addressing hash table with linear probing and bulk lookup.

use crate::error::{Error, Result};
use crate::hash::HashKind;

/// A key the exact-match table can hash: `Copy`, comparable, and readable as a few 64-bit words.
pub trait FlowKey: Copy + Eq + Default {
    /// The words hashed (e.g. `[u64; 2]`).
    type Words: AsRef<[u64]>;
    /// The key as words; equal keys give equal words.
    fn words(&self) -> Self::Words;
}

/// An IPv4 5-tuple (addresses and ports in host order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ipv4Tuple {
    /// Source address.
    pub src_ip: u32,
    /// Destination address.
    pub dst_ip: u32,
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// IP protocol number.
    pub proto: u8,
}

impl FlowKey for Ipv4Tuple {
    type Words = [u64; 2];
    #[inline(always)]
    fn words(&self) -> [u64; 2] {
        let addrs = u64::from(self.src_ip) << 32 | u64::from(self.dst_ip);
        let ports = u64::from(self.src_port) << 24 | u64::from(self.dst_port) << 8 | u64::from(self.proto);
        [addrs, ports]
    }
}

/// An IPv6 5-tuple (addresses and ports in host order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ipv6Tuple {
    /// Source address.
    pub src_ip: u128,
    /// Destination address.
    pub dst_ip: u128,
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// IP protocol number.
    pub proto: u8,
}

impl FlowKey for Ipv6Tuple {
    type Words = [u64; 5];
    #[inline(always)]
    fn words(&self) -> [u64; 5] {
        let ports = u64::from(self.src_port) << 24 | u64::from(self.dst_port) << 8 | u64::from(self.proto);
        [(self.src_ip >> 64) as u64, self.src_ip as u64, (self.dst_ip >> 64) as u64, self.dst_ip as u64, ports]
    }
}

/// One table slot; `sig == 0` means empty.
#[derive(Clone, Copy, Default)]
struct Slot<K> {
    sig: u32,
    value: u32,
    key: K,
}

/// Marks a used slot's signature (so a zero signature means an empty slot); the bits below it are the hash.
const USED: u32 = 1 << 31;

/// A fixed-capacity exact-match table from `K` to `u32` (a next hop, a port, a flow id).
///
/// Slots are twice the capacity rounded up to a power of two, so probes stay short. A slot holds a 32-bit
/// signature (the hash with its top bit set to mark the slot used), the value and the key side by side, so a
/// lookup is usually one cache miss, and keys are compared only on a signature hit. Deletion shifts later entries
/// back (no tombstones), so lookups never slow down with churn.
///
/// ```
/// use lpm::{ExactMatch, Ipv4Tuple};
/// let mut em = ExactMatch::with_capacity(1024)?;
/// let flow = Ipv4Tuple { src_ip: 0x0a00_0001, dst_ip: 0x0a00_0002, src_port: 1234, dst_port: 80, proto: 6 };
/// em.add(flow, 7)?;
/// assert_eq!(em.lookup(&flow), Some(7));
/// let mut out = [0; 2];
/// assert_eq!(em.lookup_bulk(&[flow, Ipv4Tuple::default()], &mut out, u32::MAX), 1);
/// assert_eq!(out, [7, u32::MAX]);
/// # Ok::<(), lpm::Error>(())
/// ```
pub struct ExactMatch<K: FlowKey> {
    slots: Box<[Slot<K>]>,
    mask: usize,
    len: usize,
    capacity: usize,
    hash: HashKind,
}

impl<K: FlowKey> ExactMatch<K> {
    /// A table for up to `capacity` keys (at most 2^30).
    pub fn with_capacity(capacity: usize) -> Result<Self> {
        if capacity == 0 || capacity > 1 << 30 {
            return Err(Error::InvalidConfig("exact-match capacity must be 1 to 2^30 keys"));
        }
        let slots = (capacity * 2).next_power_of_two().max(8);
        Ok(ExactMatch {
            slots: vec![Slot::default(); slots].into_boxed_slice(),
            mask: slots - 1,
            len: 0,
            capacity,
            hash: HashKind::detect(),
        })
    }

    /// Keys in the table.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No keys.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Most keys the table holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    #[inline(always)]
    fn sig(&self, key: &K) -> u32 {
        self.hash.hash(key.words().as_ref()) | USED
    }

    /// The slot holding `key` (its signature `sig`), if any.
    #[inline(always)]
    fn find(&self, key: &K, sig: u32) -> Option<usize> {
        let mut i = sig as usize & self.mask;
        loop {
            let s = self.slots[i].sig;
            if s == sig && self.slots[i].key == *key {
                return Some(i);
            }
            if s == 0 {
                return None;
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Maps `key` to `value`, returning the value it replaced.
    pub fn add(&mut self, key: K, value: u32) -> Result<Option<u32>> {
        let sig = self.sig(&key);
        if let Some(i) = self.find(&key, sig) {
            return Ok(Some(std::mem::replace(&mut self.slots[i].value, value)));
        }
        if self.len == self.capacity {
            return Err(Error::TableFull { capacity: self.capacity });
        }
        let mut i = sig as usize & self.mask;
        while self.slots[i].sig != 0 {
            i = (i + 1) & self.mask;
        }
        self.slots[i] = Slot { sig, value, key };
        self.len += 1;
        Ok(None)
    }

    /// Removes `key`, returning its value.
    pub fn delete(&mut self, key: &K) -> Result<u32> {
        let mut hole = self.find(key, self.sig(key)).ok_or(Error::KeyNotFound)?;
        let value = self.slots[hole].value;
        // Backward-shift: pull later entries of the probe run into the hole unless that would move one before
        // its home slot, so every key stays reachable from its home without tombstones.
        let mut i = hole;
        loop {
            i = (i + 1) & self.mask;
            let s = self.slots[i].sig;
            if s == 0 {
                break;
            }
            let home = s as usize & self.mask;
            // Distance from home to i vs from home to the hole, both along the probe direction.
            if (i.wrapping_sub(home) & self.mask) >= (i.wrapping_sub(hole) & self.mask) {
                self.slots[hole] = self.slots[i];
                hole = i;
            }
        }
        self.slots[hole].sig = 0;
        self.len -= 1;
        Ok(value)
    }

    /// The value of `key`.
    #[inline]
    pub fn lookup(&self, key: &K) -> Option<u32> {
        self.find(key, self.sig(key)).map(|i| self.slots[i].value)
    }

    /// Looks up 8 keys: all hashes first, then the probes, so the 8 first-slot cache misses overlap.
    #[inline]
    pub fn lookup_x8(&self, keys: &[K; 8], miss: u32) -> [u32; 8] {
        let mut out = [miss; 8];
        self.lookup_bulk(keys, &mut out, miss);
        out
    }

    /// Looks up a burst: `values[i]` gets the value of `keys[i]`, or `miss`; returns the number of hits.
    ///
    /// # Panics
    /// If the slices differ in length.
    #[inline]
    pub fn lookup_bulk(&self, keys: &[K], values: &mut [u32], miss: u32) -> usize {
        assert_eq!(keys.len(), values.len(), "lookup_bulk: one value slot per key");
        #[cfg(target_arch = "x86_64")]
        if self.hash == HashKind::Crc32c {
            // SAFETY: `Crc32c` is only chosen by `HashKind::detect` after the CPU reported SSE4.2.
            return unsafe { self.lookup_bulk_sse42(keys, values, miss) };
        }
        // Any other table hashes with the portable mix (a constant here, so the loop has no per-key match).
        debug_assert_eq!(self.hash, HashKind::Mix);
        self.lookup_bulk_with(HashKind::Mix, keys, values, miss)
    }

    /// [`ExactMatch::lookup_bulk`] compiled with SSE4.2, so the CRC32-C hash is inlined into the loop rather than
    /// called per key.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "sse4.2")]
    fn lookup_bulk_sse42(&self, keys: &[K], values: &mut [u32], miss: u32) -> usize {
        self.lookup_bulk_with(HashKind::Crc32c, keys, values, miss)
    }

    /// The bulk lookup with the hash `kind` (a constant at each call, so the match on it folds away): per chunk
    /// of [`BULK_CHUNK`] keys, every signature first, then the probes, so the first-slot cache misses overlap.
    #[inline(always)]
    fn lookup_bulk_with(&self, kind: HashKind, keys: &[K], values: &mut [u32], miss: u32) -> usize {
        let mut hits = 0;
        let mut sigs = [0u32; BULK_CHUNK];
        for (kc, vc) in keys.chunks(BULK_CHUNK).zip(values.chunks_mut(BULK_CHUNK)) {
            for (s, k) in sigs.iter_mut().zip(kc) {
                *s = kind.hash(k.words().as_ref()) | USED;
            }
            for ((k, &sig), v) in kc.iter().zip(&sigs).zip(vc.iter_mut()) {
                let found = self.find(k, sig);
                hits += found.is_some() as usize;
                *v = found.map_or(miss, |i| self.slots[i].value);
            }
        }
        hits
    }
}

/// Keys per round of [`ExactMatch::lookup_bulk`]: a burst's worth (DPDK's MAX_PKT_BURST).
const BULK_CHUNK: usize = 32;

/// A key that is already its hashed words: what a caller that reads its 5-tuple straight from a packet header
/// (fixed offsets, one load and a mask) stores, so that building, hashing and comparing it are a few word
/// operations. `WordKey::from(tuple)` gives the words [`FlowKey::words`] of that tuple gives.
///
/// ```
/// use lpm::{ExactMatch, Ipv4Tuple, WordKey};
/// let flow = Ipv4Tuple { src_ip: 0x0a00_0001, dst_ip: 0x0a00_0002, src_port: 1234, dst_port: 80, proto: 6 };
/// let mut em = ExactMatch::with_capacity(16)?;
/// em.add(WordKey::from(flow), 7)?;
/// assert_eq!(em.lookup(&WordKey([0x0a00_0001_0a00_0002, 1234 << 24 | 80 << 8 | 6])), Some(7));
/// # Ok::<(), lpm::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WordKey<const N: usize>(pub [u64; N]);

impl<const N: usize> Default for WordKey<N> {
    fn default() -> Self {
        WordKey([0; N])
    }
}

impl<const N: usize> FlowKey for WordKey<N> {
    type Words = [u64; N];
    #[inline(always)]
    fn words(&self) -> [u64; N] {
        self.0
    }
}

impl From<Ipv4Tuple> for WordKey<2> {
    fn from(t: Ipv4Tuple) -> Self {
        WordKey(t.words())
    }
}

impl From<Ipv6Tuple> for WordKey<5> {
    fn from(t: Ipv6Tuple) -> Self {
        WordKey(t.words())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The portable hash's bulk lookup (what CPUs without SSE4.2 and aarch64 run; an x86-64 host with SSE4.2 never
    /// takes it otherwise) finds exactly what the single lookup finds, across bursts and their remainder.
    #[test]
    fn bulk_lookup_with_the_portable_hash_agrees_with_single_lookups() {
        let mut em = ExactMatch::<WordKey<2>>::with_capacity(64).unwrap();
        em.hash = HashKind::Mix;
        for i in 0..64u64 {
            em.add(WordKey([i * 0x9e37_79b9, i]), i as u32 * 3).unwrap();
        }
        let keys: Vec<WordKey<2>> = (0..100u64).map(|i| WordKey([i * 0x9e37_79b9, i + (i / 64) * 1000])).collect();
        let mut values = vec![0; keys.len()];
        let hits = em.lookup_bulk(&keys, &mut values, u32::MAX);
        assert_eq!(hits, 64);
        for (k, &v) in keys.iter().zip(&values) {
            assert_eq!(Some(v).filter(|&v| v != u32::MAX), em.lookup(k), "{k:?}");
        }
        assert_eq!(values[..64], (0..64).map(|i| i * 3).collect::<Vec<u32>>()[..]);
    }
}
