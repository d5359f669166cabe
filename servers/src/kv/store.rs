//! The keyspace: typed values, expiry by a caller-supplied millisecond clock (lazy on access plus a bounded
//! active sweep), and the sorted-set type ZADD/ZPOPMIN need.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

/// A value of one of the Redis types this server implements.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string (also what INCR/DECR read as a decimal integer).
    Str(Vec<u8>),
    /// A list (LPUSH/RPUSH/LPOP/RPOP/LRANGE).
    List(VecDeque<Vec<u8>>),
    /// A set (SADD/SPOP).
    Set(HashSet<Vec<u8>>),
    /// A hash (HSET).
    Hash(HashMap<Vec<u8>, Vec<u8>>),
    /// A sorted set (ZADD/ZPOPMIN).
    ZSet(ZSet),
}

/// A score ordered by `f64::total_cmp`; stored scores are never NaN and never -0.0, so this is numeric order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Score(pub(crate) f64);

impl Eq for Score {}
impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A sorted set: member to score, and (score, member) in order, the order Redis pops in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ZSet {
    scores: HashMap<Vec<u8>, f64>,
    order: BTreeSet<(Score, Vec<u8>)>,
}

impl ZSet {
    /// The member's score.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// Sets `member`'s score (NaN must be refused before); true if the member is new.
    pub fn insert(&mut self, member: &[u8], score: f64) -> bool {
        let score = score + 0.0; // -0.0 becomes 0.0, so equal scores order by member as in Redis
        let old = self.scores.insert(member.to_vec(), score);
        if let Some(old) = old {
            self.order.remove(&(Score(old), member.to_vec()));
        }
        self.order.insert((Score(score), member.to_vec()));
        old.is_none()
    }

    /// Removes and returns the member with the lowest score (lowest member among equal scores).
    pub fn pop_min(&mut self) -> Option<(Vec<u8>, f64)> {
        let (score, member) = self.order.pop_first()?;
        self.scores.remove(&member);
        Some((member, score.0))
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// True if there are no members.
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }
}

#[derive(Debug)]
struct Entry {
    value: Value,
    expires_at: Option<u64>,
}

/// Counters a server prints or shows on its status page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Commands executed (errors included).
    pub commands: u64,
    /// Keys removed because their time ran out (lazily or by the sweep).
    pub expired_keys: u64,
}

/// The keyspace, one per server instance (per lcore when sharded); not thread-safe by design.
#[derive(Debug, Default)]
pub struct Store {
    map: HashMap<Vec<u8>, Entry>,
    /// Every key with a deadline, by deadline, so the sweep finds due keys without scanning the keyspace.
    expiring: BTreeSet<(u64, Vec<u8>)>,
    rng: u64,
    pub(crate) stats: StoreStats,
}

impl Store {
    /// An empty store.
    pub fn new() -> Self {
        Store { rng: 0x9e37_79b9_7f4a_7c15, ..Default::default() }
    }

    /// Number of keys, counting keys whose deadline passed but that no access or sweep has removed yet.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True if the store holds no key.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The counters.
    pub fn stats(&self) -> StoreStats {
        self.stats
    }

    /// Removes up to `max` keys whose deadline is at or before `now_ms`; returns how many it removed.
    /// A server calls this between bursts so expired keys nobody reads do not stay forever.
    pub fn sweep_expired(&mut self, now_ms: u64, max: usize) -> usize {
        let mut removed = 0;
        while removed < max {
            match self.expiring.first() {
                Some((deadline, _)) if *deadline <= now_ms => {}
                _ => break,
            }
            let Some((_, key)) = self.expiring.pop_first() else { break };
            self.map.remove(&key);
            self.stats.expired_keys += 1;
            removed += 1;
        }
        removed
    }

    /// Removes `key` if its deadline has passed.
    fn expire_if_due(&mut self, key: &[u8], now_ms: u64) {
        let due = matches!(self.map.get(key), Some(Entry { expires_at: Some(t), .. }) if *t <= now_ms);
        if due {
            self.remove(key);
            self.stats.expired_keys += 1;
        }
    }

    /// The live value at `key`.
    pub fn get(&mut self, key: &[u8], now_ms: u64) -> Option<&Value> {
        self.expire_if_due(key, now_ms);
        self.map.get(key).map(|e| &e.value)
    }

    /// The live value at `key`, for changing in place (its deadline stays).
    pub fn get_mut(&mut self, key: &[u8], now_ms: u64) -> Option<&mut Value> {
        self.expire_if_due(key, now_ms);
        self.map.get_mut(key).map(|e| &mut e.value)
    }

    /// The key's deadline, if it is live and has one.
    pub fn deadline(&mut self, key: &[u8], now_ms: u64) -> Option<u64> {
        self.expire_if_due(key, now_ms);
        self.map.get(key).and_then(|e| e.expires_at)
    }

    /// Stores `value` at `key`, replacing any value and deadline.
    pub fn set(&mut self, key: &[u8], value: Value, expires_at: Option<u64>) {
        if let Some(old) = self.map.get_mut(key) {
            if let Some(t) = old.expires_at {
                self.expiring.remove(&(t, key.to_vec()));
            }
            old.value = value;
            old.expires_at = expires_at;
        } else {
            self.map.insert(key.to_vec(), Entry { value, expires_at });
        }
        if let Some(t) = expires_at {
            self.expiring.insert((t, key.to_vec()));
        }
    }

    /// Removes `key`; true if it existed (expired or not: callers expire first).
    pub fn remove(&mut self, key: &[u8]) -> bool {
        match self.map.remove(key) {
            Some(e) => {
                if let Some(t) = e.expires_at {
                    self.expiring.remove(&(t, key.to_vec()));
                }
                true
            }
            None => false,
        }
    }

    /// Removes `key` if it holds an empty collection (Redis never keeps an empty list, set, hash or zset).
    pub fn remove_if_empty(&mut self, key: &[u8]) {
        let empty = match self.map.get(key).map(|e| &e.value) {
            Some(Value::List(l)) => l.is_empty(),
            Some(Value::Set(s)) => s.is_empty(),
            Some(Value::Hash(h)) => h.is_empty(),
            Some(Value::ZSet(z)) => z.is_empty(),
            _ => false,
        };
        if empty {
            self.remove(key);
        }
    }

    /// A pseudo-random number (xorshift64*) for SPOP; not for anything that needs unpredictability.
    pub(crate) fn random(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_lazy_and_swept() {
        let mut s = Store::new();
        s.set(b"a", Value::Str(b"1".to_vec()), Some(100));
        s.set(b"b", Value::Str(b"2".to_vec()), Some(200));
        s.set(b"c", Value::Str(b"3".to_vec()), None);
        assert!(s.get(b"a", 99).is_some());
        assert!(s.get(b"a", 100).is_none(), "due at its deadline");
        assert_eq!(s.len(), 2);
        assert_eq!(s.sweep_expired(1000, 10), 1, "only b is left to sweep");
        assert_eq!(s.len(), 1);
        assert_eq!(s.stats().expired_keys, 2);
    }

    #[test]
    fn overwrite_drops_the_old_deadline() {
        let mut s = Store::new();
        s.set(b"a", Value::Str(b"1".to_vec()), Some(100));
        s.set(b"a", Value::Str(b"2".to_vec()), None);
        assert_eq!(s.sweep_expired(1000, 10), 0);
        assert_eq!(s.get(b"a", 1000), Some(&Value::Str(b"2".to_vec())));
        assert!(s.expiring.is_empty(), "no stale deadline left behind");
    }

    #[test]
    fn sweep_is_bounded() {
        let mut s = Store::new();
        for i in 0..10u8 {
            s.set(&[i], Value::Str(vec![i]), Some(5));
        }
        assert_eq!(s.sweep_expired(5, 3), 3);
        assert_eq!(s.len(), 7);
    }

    #[test]
    fn zset_pops_by_score_then_member() {
        let mut z = ZSet::default();
        assert!(z.insert(b"b", 1.0));
        assert!(z.insert(b"a", 1.0));
        assert!(z.insert(b"c", -0.0));
        assert!(!z.insert(b"b", -5.0));
        assert_eq!(z.pop_min(), Some((b"b".to_vec(), -5.0)));
        assert_eq!(z.pop_min().map(|(m, s)| (m, s.to_bits())), Some((b"c".to_vec(), 0.0f64.to_bits())));
        assert_eq!(z.pop_min(), Some((b"a".to_vec(), 1.0)));
        assert!(z.is_empty());
    }
}
