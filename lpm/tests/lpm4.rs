//! Lpm4 against hand-checked edge cases and against a naive longest-prefix match over the same rules.

use lpm::{Error, Lpm4, Lpm4Config};
use proptest::prelude::*;

fn table(groups: u32) -> Lpm4 {
    Lpm4::new(Lpm4Config { max_rules: 1 << 16, tbl8_groups: groups }).unwrap()
}

fn ip(a: u8, b: u8, c: u8, d: u8) -> u32 {
    u32::from_be_bytes([a, b, c, d])
}

#[test]
fn default_route_and_host_route() {
    let mut lpm = table(4);
    assert_eq!(lpm.lookup(ip(1, 2, 3, 4)), None);
    lpm.add(0, 0, 9).unwrap();
    assert_eq!(lpm.lookup(ip(1, 2, 3, 4)), Some(9));
    assert_eq!(lpm.lookup(u32::MAX), Some(9));
    lpm.add(ip(1, 2, 3, 4), 32, 5).unwrap();
    assert_eq!(lpm.lookup(ip(1, 2, 3, 4)), Some(5));
    assert_eq!(lpm.lookup(ip(1, 2, 3, 5)), Some(9));
    assert_eq!(lpm.tbl8_groups_used(), 1);
    assert_eq!(lpm.delete(ip(1, 2, 3, 4), 32), Ok(5));
    assert_eq!(lpm.lookup(ip(1, 2, 3, 4)), Some(9));
    assert_eq!(lpm.tbl8_groups_used(), 0, "the group collapses once the /32 is gone");
    assert_eq!(lpm.delete(0, 0), Ok(9));
    assert_eq!(lpm.lookup(ip(1, 2, 3, 4)), None);
    assert!(lpm.is_empty());
}

#[test]
fn the_24_boundary() {
    let mut lpm = table(4);
    lpm.add(ip(10, 0, 0, 0), 24, 1).unwrap();
    assert_eq!(lpm.lookup(ip(10, 0, 0, 255)), Some(1));
    assert_eq!(lpm.lookup(ip(10, 0, 1, 0)), None);
    assert_eq!(lpm.lookup(ip(9, 255, 255, 255)), None);
    assert_eq!(lpm.tbl8_groups_used(), 0, "a /24 stays in tbl24");
    lpm.add(ip(10, 0, 0, 128), 25, 2).unwrap();
    assert_eq!(lpm.tbl8_groups_used(), 1);
    assert_eq!(lpm.lookup(ip(10, 0, 0, 127)), Some(1));
    assert_eq!(lpm.lookup(ip(10, 0, 0, 128)), Some(2));
    assert_eq!(lpm.lookup(ip(10, 0, 0, 255)), Some(2));
    // A /23 over an extended /24 must reach into the group without overwriting the /25.
    lpm.add(ip(10, 0, 0, 0), 23, 3).unwrap();
    assert_eq!(lpm.lookup(ip(10, 0, 1, 7)), Some(3));
    assert_eq!(lpm.lookup(ip(10, 0, 0, 1)), Some(1));
    assert_eq!(lpm.lookup(ip(10, 0, 0, 200)), Some(2));
    lpm.delete(ip(10, 0, 0, 0), 24).unwrap();
    assert_eq!(lpm.lookup(ip(10, 0, 0, 1)), Some(3), "the /23 takes over inside the group");
    assert_eq!(lpm.lookup(ip(10, 0, 0, 200)), Some(2));
}

#[test]
fn overlapping_8_16_24_25_32_and_deletes_restore_the_shorter_route() {
    let mut lpm = table(4);
    let a = ip(10, 1, 2, 3);
    let routes = [(8u8, 8u32), (16, 16), (24, 24), (25, 25), (32, 32)];
    // Add in a scrambled order: the result must not depend on it.
    for &(d, nh) in &[routes[2], routes[4], routes[0], routes[3], routes[1]] {
        lpm.add(a, d, nh).unwrap();
    }
    assert_eq!(lpm.len(), 5);
    assert_eq!(lpm.lookup(a), Some(32));
    assert_eq!(lpm.lookup(ip(10, 1, 2, 4)), Some(25));
    assert_eq!(lpm.lookup(ip(10, 1, 2, 200)), Some(24));
    assert_eq!(lpm.lookup(ip(10, 1, 3, 0)), Some(16));
    assert_eq!(lpm.lookup(ip(10, 2, 0, 0)), Some(8));
    assert_eq!(lpm.lookup(ip(11, 0, 0, 0)), None);
    // Delete longest first: each step restores the next shorter one for the host.
    for (i, &(d, nh)) in routes.iter().enumerate().rev() {
        assert_eq!(lpm.delete(a, d), Ok(nh));
        let expect = i.checked_sub(1).map(|j| routes[j].1);
        assert_eq!(lpm.lookup(a), expect, "after deleting /{d}");
    }
    assert_eq!(lpm.tbl8_groups_used(), 0);
    // Delete a middle one: only its own range changes.
    for &(d, nh) in &routes {
        lpm.add(a, d, nh).unwrap();
    }
    lpm.delete(a, 24).unwrap();
    assert_eq!(lpm.lookup(ip(10, 1, 2, 200)), Some(16));
    assert_eq!(lpm.lookup(ip(10, 1, 2, 4)), Some(25));
    assert_eq!(lpm.lookup(a), Some(32));
}

#[test]
fn replace_next_hop_and_host_bits_ignored() {
    let mut lpm = table(4);
    lpm.add(ip(192, 168, 1, 77), 24, 1).unwrap();
    assert_eq!(lpm.route(ip(192, 168, 1, 0), 24), Some(1));
    lpm.add(ip(192, 168, 1, 0), 24, 2).unwrap();
    assert_eq!(lpm.len(), 1);
    assert_eq!(lpm.lookup(ip(192, 168, 1, 5)), Some(2));
    assert_eq!(lpm.delete(ip(192, 168, 1, 99), 24), Ok(2));
}

#[test]
fn errors_are_typed_and_leave_the_table_unchanged() {
    let mut lpm = Lpm4::new(Lpm4Config { max_rules: 3, tbl8_groups: 2 }).unwrap();
    assert_eq!(lpm.add(0, 33, 1), Err(Error::InvalidDepth { depth: 33, max: 32 }));
    assert_eq!(
        lpm.add(0, 8, Lpm4::MAX_NEXT_HOP + 1),
        Err(Error::NextHopTooLarge { next_hop: Lpm4::MAX_NEXT_HOP + 1, max: Lpm4::MAX_NEXT_HOP })
    );
    lpm.add(ip(1, 0, 0, 1), 32, Lpm4::MAX_NEXT_HOP).unwrap();
    lpm.add(ip(2, 0, 0, 1), 32, 2).unwrap();
    assert_eq!(lpm.add(ip(3, 0, 0, 1), 32, 3), Err(Error::GroupsExhausted { needed: 1, free: 0, total: 2 }));
    assert_eq!(lpm.lookup(ip(3, 0, 0, 1)), None);
    assert_eq!(lpm.len(), 2);
    // A longer prefix in an already extended /24 needs no new group.
    lpm.add(ip(1, 0, 0, 128), 25, 4).unwrap();
    assert_eq!(lpm.add(ip(4, 0, 0, 0), 8, 5), Err(Error::RulesFull { max: 3 }));
    assert_eq!(lpm.lookup(ip(1, 0, 0, 1)), Some(Lpm4::MAX_NEXT_HOP));
    let missing = lpm.delete(ip(9, 9, 9, 9), 16).unwrap_err();
    assert_eq!(missing.to_string(), "no route 9.9.0.0/16 to delete");
    // Freeing a group makes room again.
    lpm.delete(ip(2, 0, 0, 1), 32).unwrap();
    lpm.add(ip(3, 0, 0, 1), 32, 3).unwrap();
    assert_eq!(lpm.lookup(ip(3, 0, 0, 1)), Some(3));
}

#[test]
fn bulk_matches_single_lookups() {
    let mut lpm = table(16);
    lpm.add(ip(10, 0, 0, 0), 8, 1).unwrap();
    lpm.add(ip(10, 1, 0, 0), 16, 2).unwrap();
    lpm.add(ip(10, 1, 1, 64), 26, 3).unwrap();
    let ips: Vec<u32> = (0..37u32).map(|i| ip(10, (i % 3) as u8, 1, (i * 7) as u8) ^ (i / 30) << 28).collect();
    let mut hops = vec![0; ips.len()];
    lpm.lookup_bulk(&ips, &mut hops, u32::MAX);
    for (&a, &h) in ips.iter().zip(&hops) {
        assert_eq!(lpm.lookup(a).unwrap_or(u32::MAX), h, "{a:#x}");
    }
    assert!(hops.contains(&3) && hops.contains(&u32::MAX));
    let x4: [u32; 4] = ips[..4].try_into().unwrap();
    assert_eq!(lpm.lookup_x4(&x4, 0)[..], hops[..4]);
}

/// The independent reference: every rule in a list, the longest match wins.
#[derive(Default)]
struct Naive(Vec<(u32, u8, u32)>);

fn net(a: u32, d: u8) -> u32 {
    if d == 0 {
        0
    } else {
        a & (u32::MAX << (32 - d))
    }
}

impl Naive {
    fn add(&mut self, p: u32, d: u8, nh: u32) {
        let p = net(p, d);
        match self.0.iter_mut().find(|r| r.0 == p && r.1 == d) {
            Some(r) => r.2 = nh,
            None => self.0.push((p, d, nh)),
        }
    }
    fn delete(&mut self, p: u32, d: u8) -> Option<u32> {
        let p = net(p, d);
        let i = self.0.iter().position(|r| r.0 == p && r.1 == d)?;
        Some(self.0.swap_remove(i).2)
    }
    fn lookup(&self, a: u32) -> Option<u32> {
        self.0.iter().filter(|r| net(a, r.1) == r.0).max_by_key(|r| r.1).map(|r| r.2)
    }
}

#[derive(Debug, Clone)]
enum Op {
    Add(u32, u8, u32),
    Delete(u32, u8),
}

/// Prefixes drawn around a few bases so routes nest and overlap; lengths weighted towards 16..32.
fn prefix() -> impl Strategy<Value = (u32, u8)> {
    let base = prop_oneof![Just(0x0a01_0200u32), Just(0xc0a8_0000), Just(0x0a01_0000), any::<u32>()];
    let depth = prop_oneof![1 => 0u8..=8, 6 => 9u8..=32];
    (base, any::<u32>(), depth).prop_map(|(b, noise, d)| (b ^ (noise & 0x0000_03ff), d))
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => (prefix(), 0u32..1000).prop_map(|((p, d), nh)| Op::Add(p, d, nh)),
        1 => prefix().prop_map(|(p, d)| Op::Delete(p, d)),
    ];
    prop::collection::vec(op, 1..60)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn matches_naive_reference(ops in ops(), probes in prop::collection::vec(any::<u32>(), 64), deletes_first in any::<bool>()) {
        // Few groups so exhaustion (and the table staying unchanged after it) is exercised too.
        let mut lpm = table(6);
        let mut naive = Naive::default();
        for op in &ops {
            match *op {
                Op::Add(p, d, nh) => match lpm.add(p, d, nh) {
                    Ok(()) => naive.add(p, d, nh),
                    Err(Error::GroupsExhausted { .. }) => prop_assert!(d > 24),
                    Err(e) => prop_assert!(false, "add {p:#x}/{d}: {e}"),
                },
                Op::Delete(p, d) => prop_assert_eq!(lpm.delete(p, d).ok(), naive.delete(p, d)),
            }
        }
        // Probe random addresses and the neighbourhood of every rule (first, last, just outside).
        let mut addrs = probes.clone();
        for &(p, d, _) in &naive.0 {
            let span = if d == 0 { u32::MAX } else { (1u32 << (32 - d)).wrapping_sub(1) };
            addrs.extend([p, p | span, p.wrapping_sub(1), (p | span).wrapping_add(1), p | (span & probes[0])]);
        }
        for &a in &addrs {
            prop_assert_eq!(lpm.lookup(a), naive.lookup(a), "address {:#x}", a);
        }
        let mut hops = vec![0; addrs.len()];
        lpm.lookup_bulk(&addrs, &mut hops, u32::MAX);
        for (&a, &h) in addrs.iter().zip(&hops) {
            prop_assert_eq!(naive.lookup(a).unwrap_or(u32::MAX), h);
        }
        // The 4-wide lookup (SSE2 select on x86_64, tbl8 per entry when one is extended), with another miss value.
        for a4 in addrs.chunks_exact(4) {
            let want = a4.iter().map(|&a| naive.lookup(a).unwrap_or(7777)).collect::<Vec<_>>();
            prop_assert_eq!(&lpm.lookup_x4(a4.try_into().unwrap(), 7777)[..], &want[..]);
        }
        // Tear down in either order: every group comes back.
        let mut rules = naive.0.clone();
        if deletes_first { rules.reverse(); }
        for (p, d, nh) in rules {
            prop_assert_eq!(lpm.delete(p, d), Ok(nh));
            naive.delete(p, d);
            prop_assert_eq!(lpm.lookup(p), naive.lookup(p));
        }
        prop_assert_eq!(lpm.tbl8_groups_used(), 0);
        prop_assert!(lpm.is_empty());
    }
}
