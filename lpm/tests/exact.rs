//! ExactMatch against std's HashMap over random add/delete/lookup sequences.

use lpm::{Error, ExactMatch, FlowKey, Ipv4Tuple, Ipv6Tuple};
use proptest::prelude::*;
use std::collections::HashMap;

#[test]
fn full_table_and_missing_key_errors() {
    let mut em = ExactMatch::<Ipv4Tuple>::with_capacity(3).unwrap();
    let key = |i: u32| Ipv4Tuple { src_ip: i, dst_ip: !i, src_port: 1, dst_port: 2, proto: 17 };
    for i in 0..3 {
        assert_eq!(em.add(key(i), i), Ok(None));
    }
    assert_eq!(em.add(key(1), 10), Ok(Some(1)), "replacing needs no room");
    assert_eq!(em.add(key(3), 3), Err(Error::TableFull { capacity: 3 }));
    assert_eq!(em.delete(&key(7)), Err(Error::KeyNotFound));
    assert_eq!(em.delete(&key(0)), Ok(0));
    em.add(key(3), 3).unwrap();
    assert_eq!(em.len(), 3);
    assert!(matches!(ExactMatch::<Ipv4Tuple>::with_capacity(0), Err(Error::InvalidConfig(_))));
}

#[test]
fn keys_differing_in_one_field_are_distinct() {
    let mut em = ExactMatch::<Ipv6Tuple>::with_capacity(16).unwrap();
    let k = Ipv6Tuple { src_ip: 1 << 100, dst_ip: 2, src_port: 3, dst_port: 4, proto: 6 };
    em.add(k, 1).unwrap();
    for other in [
        Ipv6Tuple { src_ip: 1 << 101, ..k },
        Ipv6Tuple { dst_ip: 3, ..k },
        Ipv6Tuple { src_port: 4, dst_port: 3, ..k },
        Ipv6Tuple { proto: 17, ..k },
    ] {
        assert_ne!(other.words(), k.words());
        assert_eq!(em.lookup(&other), None);
    }
    assert_eq!(em.lookup(&k), Some(1));
}

#[derive(Debug, Clone)]
enum Op<K> {
    Add(K, u32),
    Delete(K),
}

fn v4_key() -> impl Strategy<Value = Ipv4Tuple> {
    // A small key space so adds, replaces and deletes hit the same keys and probe runs collide.
    (0u32..40, 0u32..4, 0u16..3, any::<bool>()).prop_map(|(s, d, p, tcp)| Ipv4Tuple {
        src_ip: s,
        dst_ip: d,
        src_port: p,
        dst_port: 80,
        proto: if tcp { 6 } else { 17 },
    })
}

fn v6_key() -> impl Strategy<Value = Ipv6Tuple> {
    (0u128..40, 0u16..4).prop_map(|(s, p)| Ipv6Tuple {
        src_ip: s << 64,
        dst_ip: !s,
        src_port: p,
        dst_port: 443,
        proto: 6,
    })
}

fn check<K: FlowKey + std::hash::Hash + std::fmt::Debug>(
    ops: &[Op<K>],
    probes: &[K],
    capacity: usize,
) -> Result<(), TestCaseError> {
    let mut em = ExactMatch::with_capacity(capacity).unwrap();
    let mut map = HashMap::new();
    for op in ops {
        match *op {
            Op::Add(k, v) => match em.add(k, v) {
                Ok(old) => prop_assert_eq!(old, map.insert(k, v)),
                Err(Error::TableFull { .. }) => prop_assert!(map.len() == capacity && !map.contains_key(&k)),
                Err(e) => prop_assert!(false, "{}", e),
            },
            Op::Delete(k) => prop_assert_eq!(em.delete(&k).ok(), map.remove(&k)),
        }
        prop_assert_eq!(em.len(), map.len());
    }
    let keys: Vec<K> = probes.iter().chain(map.keys()).copied().collect();
    let mut vals = vec![0; keys.len()];
    let hits = em.lookup_bulk(&keys, &mut vals, u32::MAX);
    prop_assert_eq!(hits, keys.iter().filter(|k| map.contains_key(k)).count());
    for (k, &v) in keys.iter().zip(&vals) {
        prop_assert_eq!(em.lookup(k), map.get(k).copied());
        prop_assert_eq!(v, map.get(k).copied().unwrap_or(u32::MAX));
    }
    Ok(())
}

proptest! {
    #[test]
    fn v4_matches_hashmap(
        ops in prop::collection::vec(prop_oneof![
            3 => (v4_key(), any::<u32>()).prop_map(|(k, v)| Op::Add(k, v)),
            2 => v4_key().prop_map(Op::Delete),
        ], 1..200),
        probes in prop::collection::vec(v4_key(), 20),
        capacity in 1usize..100,
    ) {
        check(&ops, &probes, capacity)?;
    }

    #[test]
    fn v6_matches_hashmap(
        ops in prop::collection::vec(prop_oneof![
            3 => (v6_key(), any::<u32>()).prop_map(|(k, v)| Op::Add(k, v)),
            2 => v6_key().prop_map(Op::Delete),
        ], 1..200),
        probes in prop::collection::vec(v6_key(), 20),
        capacity in 1usize..100,
    ) {
        check(&ops, &probes, capacity)?;
    }
}
