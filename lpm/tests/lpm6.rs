//! Lpm6 against edge cases and against a naive longest-prefix match over the same rules.

use lpm::{Error, Lpm6, Lpm6Config};
use proptest::prelude::*;
use std::net::Ipv6Addr;

fn table(groups: u32) -> Lpm6 {
    Lpm6::new(Lpm6Config { max_rules: 1 << 12, groups }).unwrap()
}

fn a(s: &str) -> u128 {
    s.parse::<Ipv6Addr>().unwrap().into()
}

#[test]
fn nested_prefixes_at_every_level_boundary() {
    let mut lpm = table(64);
    let host = a("2001:db8:1:2:3:4:5:6");
    let depths = [0u8, 16, 24, 25, 32, 48, 64, 100, 127, 128];
    for &d in depths.iter().rev() {
        lpm.add(host, d, u32::from(d)).unwrap();
    }
    assert_eq!(lpm.lookup(host), Some(128));
    assert_eq!(lpm.lookup(host ^ 1), Some(127));
    assert_eq!(lpm.lookup(host ^ (1 << 20)), Some(100));
    assert_eq!(lpm.lookup(host ^ (1 << 40)), Some(64));
    assert_eq!(lpm.lookup(host ^ (1 << 70)), Some(48));
    assert_eq!(lpm.lookup(host ^ (1 << 90)), Some(32));
    assert_eq!(lpm.lookup(host ^ (1 << 100)), Some(25));
    assert_eq!(lpm.lookup(host ^ (1 << 103)), Some(24));
    assert_eq!(lpm.lookup(host ^ (1 << 110)), Some(16));
    assert_eq!(lpm.lookup(!host), Some(0));
    // Delete from the longest: each restores the next shorter one, and every group comes back.
    for (i, &d) in depths.iter().enumerate().rev() {
        assert_eq!(lpm.delete(host, d), Ok(u32::from(d)));
        assert_eq!(lpm.lookup(host), i.checked_sub(1).map(|j| u32::from(depths[j])), "after /{d}");
    }
    assert_eq!(lpm.groups_used(), 0);
    assert!(lpm.is_empty());
}

#[test]
fn group_exhaustion_is_checked_before_any_change() {
    let mut lpm = table(4);
    // A /128 under an empty root needs 13 groups.
    let err = lpm.add(a("2001:db8::1"), 128, 1).unwrap_err();
    assert_eq!(err, Error::GroupsExhausted { needed: 13, free: 4, total: 4 });
    assert_eq!(lpm.groups_used(), 0);
    assert_eq!(lpm.lookup(a("2001:db8::1")), None);
    lpm.add(a("2001:db8::"), 48, 2).unwrap();
    assert_eq!(lpm.groups_used(), 3);
    assert_eq!(lpm.add(a("::"), 129, 1), Err(Error::InvalidDepth { depth: 129, max: 128 }));
    assert_eq!(lpm.delete(a("2001:db8::"), 47).unwrap_err().to_string(), "no route 2001:db8::/47 to delete");
}

#[derive(Default)]
struct Naive(Vec<(u128, u8, u32)>);

fn net(x: u128, d: u8) -> u128 {
    if d == 0 {
        0
    } else {
        x & (u128::MAX << (128 - u32::from(d)))
    }
}

impl Naive {
    fn add(&mut self, p: u128, d: u8, nh: u32) {
        let p = net(p, d);
        match self.0.iter_mut().find(|r| r.0 == p && r.1 == d) {
            Some(r) => r.2 = nh,
            None => self.0.push((p, d, nh)),
        }
    }
    fn delete(&mut self, p: u128, d: u8) -> Option<u32> {
        let p = net(p, d);
        let i = self.0.iter().position(|r| r.0 == p && r.1 == d)?;
        Some(self.0.swap_remove(i).2)
    }
    fn lookup(&self, x: u128) -> Option<u32> {
        self.0.iter().filter(|r| net(x, r.1) == r.0).max_by_key(|r| r.1).map(|r| r.2)
    }
}

/// Prefixes around a few bases, noise in scattered bit ranges, so routes nest across levels.
fn prefix() -> impl Strategy<Value = (u128, u8)> {
    let base = prop_oneof![Just(a("2001:db8::")), Just(a("fe80::")), any::<u128>()];
    let noise_at = prop_oneof![Just(0u32), Just(20), Just(60), Just(100)];
    let depth = prop_oneof![1 => 0u8..=24, 4 => 25u8..=128];
    (base, any::<u16>(), noise_at, depth).prop_map(|(b, n, at, d)| (b ^ (u128::from(n & 0x3ff) << at), d))
}

#[derive(Debug, Clone)]
enum Op {
    Add(u128, u8, u32),
    Delete(u128, u8),
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn matches_naive_reference(
        ops in prop::collection::vec(prop_oneof![
            3 => (prefix(), 0u32..1000).prop_map(|((p, d), nh)| Op::Add(p, d, nh)),
            1 => prefix().prop_map(|(p, d)| Op::Delete(p, d)),
        ], 1..50),
        probes in prop::collection::vec(any::<u128>(), 32),
    ) {
        let mut lpm = table(200);
        let mut naive = Naive::default();
        for op in &ops {
            match *op {
                Op::Add(p, d, nh) => match lpm.add(p, d, nh) {
                    Ok(()) => naive.add(p, d, nh),
                    Err(Error::GroupsExhausted { .. }) => {}
                    Err(e) => prop_assert!(false, "add {:x}/{}: {}", p, d, e),
                },
                Op::Delete(p, d) => prop_assert_eq!(lpm.delete(p, d).ok(), naive.delete(p, d)),
            }
        }
        let mut addrs = probes.clone();
        for &(p, d, _) in &naive.0 {
            let span = if d == 0 { u128::MAX } else { (1u128 << (128 - u32::from(d))).wrapping_sub(1) };
            addrs.extend([p, p | span, p.wrapping_sub(1), (p | span).wrapping_add(1), p | (span & probes[0])]);
        }
        for &x in &addrs {
            prop_assert_eq!(lpm.lookup(x), naive.lookup(x), "address {:x}", x);
        }
        let mut hops = vec![0; addrs.len()];
        lpm.lookup_bulk(&addrs, &mut hops, u32::MAX);
        for (&x, &h) in addrs.iter().zip(&hops) {
            prop_assert_eq!(naive.lookup(x).unwrap_or(u32::MAX), h);
        }
        for (p, d, nh) in naive.0.clone() {
            prop_assert_eq!(lpm.delete(p, d), Ok(nh));
        }
        prop_assert_eq!(lpm.groups_used(), 0);
    }
}
