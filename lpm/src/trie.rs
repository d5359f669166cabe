//! The control plane shared by [`crate::Lpm4`] and [`crate::Lpm6`]: a multibit trie with a 24-bit first level
//! (`root`, tbl24) and 8-bit levels below it (`groups`: a pool of 256-entry tbl8 groups), plus the rule table
//! that add and delete consult.
//!
//! Keys are `u128` with the address left-aligned (an IPv4 address sits in the top 32 bits), so one code path
//! serves both families. Invariant after every operation: each entry (or, when extended, each entry of its group)
//! holds the longest rule covering its address range, and a group exists only where some rule is longer than the
//! group's parent boundary.

use crate::entry::Entry;
use crate::error::{Error, Result};
use crate::mem::zeroed_table;
use std::collections::HashMap;

/// Bits resolved by the root table.
pub(crate) const ROOT_BITS: u32 = 24;
/// Entries in the root table.
pub(crate) const ROOT_LEN: usize = 1 << ROOT_BITS;
/// Bits resolved by each group.
pub(crate) const GROUP_BITS: u32 = 8;
/// Entries in a group.
pub(crate) const GROUP_LEN: usize = 1 << GROUP_BITS;

/// Which table an entry lives in.
#[derive(Clone, Copy)]
enum Table {
    Root,
    Group(u32),
}

pub(crate) struct Trie {
    /// tbl24: one entry per 24-bit first-level index. A fixed-size array, so indexing it with a 24-bit value
    /// needs no bounds check.
    pub(crate) root: Box<[u32; ROOT_LEN]>,
    /// tbl8 groups, `GROUP_LEN` entries each, group `g` at `g * GROUP_LEN`.
    pub(crate) groups: Box<[u32]>,
    free_groups: Vec<u32>,
    group_count: u32,
    /// Rules by prefix length: masked prefix -> next hop.
    rules: Vec<HashMap<u128, u32>>,
    rule_count: u32,
    max_rules: u32,
    /// Address width: 32 or 128.
    max_depth: u8,
}

/// `key` with all bits past the first `depth` cleared.
#[inline]
pub(crate) fn mask(key: u128, depth: u8) -> u128 {
    match depth {
        0 => 0,
        d => key & (u128::MAX << (128 - u32::from(d))),
    }
}

/// Last bit (exclusive) resolved at `level`.
#[inline]
const fn level_end(level: u32) -> u32 {
    ROOT_BITS + GROUP_BITS * level
}

/// The level whose table holds the entries of a prefix of length `depth`.
fn level_of(depth: u8) -> u32 {
    u32::from(depth).saturating_sub(ROOT_BITS).div_ceil(GROUP_BITS)
}

/// Index of `key` in a table of `level`.
#[inline]
fn index(key: u128, level: u32) -> usize {
    let end = level_end(level);
    let width = if level == 0 { ROOT_BITS } else { GROUP_BITS };
    ((key >> (128 - end)) & ((1u128 << width) - 1)) as usize
}

impl Trie {
    pub(crate) fn new(max_depth: u8, max_rules: u32, groups: u32) -> Result<Trie> {
        if max_rules == 0 {
            return Err(Error::InvalidConfig("max_rules must be at least 1"));
        }
        if groups > Entry::MAX_NEXT_HOP + 1 {
            return Err(Error::InvalidConfig("tbl8 groups must be at most 2^22 (the group-index field)"));
        }
        Ok(Trie {
            root: zeroed_table(ROOT_LEN).try_into().expect("zeroed_table returns ROOT_LEN entries"),
            groups: zeroed_table(groups as usize * GROUP_LEN),
            free_groups: (0..groups).rev().collect(),
            group_count: groups,
            rules: vec![HashMap::new(); usize::from(max_depth) + 1],
            rule_count: 0,
            max_rules,
            max_depth,
        })
    }

    pub(crate) fn rule_count(&self) -> u32 {
        self.rule_count
    }

    pub(crate) fn groups_used(&self) -> u32 {
        self.group_count - self.free_groups.len() as u32
    }

    pub(crate) fn rule(&self, key: u128, depth: u8) -> Option<u32> {
        self.rules.get(usize::from(depth))?.get(&mask(key, depth)).copied()
    }

    /// All rules as (masked key, depth, next hop), shortest first.
    pub(crate) fn rules(&self) -> impl Iterator<Item = (u128, u8, u32)> + '_ {
        self.rules.iter().enumerate().flat_map(|(d, m)| m.iter().map(move |(&k, &nh)| (k, d as u8, nh)))
    }

    fn check_depth(&self, depth: u8) -> Result<()> {
        if depth > self.max_depth {
            return Err(Error::InvalidDepth { depth, max: self.max_depth });
        }
        Ok(())
    }

    #[inline]
    fn get(&self, table: Table, i: usize) -> Entry {
        Entry::from_raw(match table {
            Table::Root => self.root[i],
            Table::Group(g) => self.groups[g as usize * GROUP_LEN + i],
        })
    }

    #[inline]
    fn put(&mut self, table: Table, i: usize, e: Entry) {
        match table {
            Table::Root => self.root[i] = e.raw(),
            Table::Group(g) => self.groups[g as usize * GROUP_LEN + i] = e.raw(),
        }
    }

    /// Adds or replaces the rule `key/depth -> next_hop`.
    pub(crate) fn add(&mut self, key: u128, depth: u8, next_hop: u32) -> Result<()> {
        self.check_depth(depth)?;
        if next_hop > Entry::MAX_NEXT_HOP {
            return Err(Error::NextHopTooLarge { next_hop, max: Entry::MAX_NEXT_HOP });
        }
        let key = mask(key, depth);
        let exists = self.rules[usize::from(depth)].contains_key(&key);
        if !exists && self.rule_count >= self.max_rules {
            return Err(Error::RulesFull { max: self.max_rules });
        }
        // Check group capacity first so a failed add leaves the table untouched.
        let needed = self.groups_needed(key, depth);
        let free = self.free_groups.len() as u32;
        if needed > free {
            return Err(Error::GroupsExhausted { needed, free, total: self.group_count });
        }
        self.rules[usize::from(depth)].insert(key, next_hop);
        if !exists {
            self.rule_count += 1;
        }
        self.add_at(Table::Root, 0, key, depth, Entry::route(next_hop, depth));
        Ok(())
    }

    /// Groups `add(key, depth)` would allocate: one per level between the first non-extended entry on the
    /// key's path and the level that holds the prefix.
    fn groups_needed(&self, key: u128, depth: u8) -> u32 {
        let target = level_of(depth);
        let mut table = Table::Root;
        for level in 0..target {
            let e = self.get(table, index(key, level));
            if !e.is_ext() {
                return target - level;
            }
            table = Table::Group(e.next_hop());
        }
        0
    }

    fn add_at(&mut self, table: Table, level: u32, key: u128, depth: u8, new: Entry) {
        let end = level_end(level);
        if u32::from(depth) <= end {
            let first = index(key, level);
            self.set_range(table, first, 1 << (end - u32::from(depth)), new);
        } else {
            let i = index(key, level);
            let e = self.get(table, i);
            let g = if e.is_ext() {
                e.next_hop()
            } else {
                // A new group starts as a copy of the entry it replaces: the shorter route still covers it.
                let g = self.free_groups.pop().expect("groups_needed checked capacity");
                let start = g as usize * GROUP_LEN;
                self.groups[start..start + GROUP_LEN].fill(e.raw());
                self.put(table, i, Entry::group(g));
                g
            };
            self.add_at(Table::Group(g), level + 1, key, depth, new);
        }
    }

    /// Writes `new` over every entry in the range owned by a rule no longer than `new`'s (recursing into groups).
    fn set_range(&mut self, table: Table, first: usize, count: usize, new: Entry) {
        for i in first..first + count {
            let e = self.get(table, i);
            if e.is_ext() {
                self.set_range(Table::Group(e.next_hop()), 0, GROUP_LEN, new);
            } else if !e.is_valid() || e.depth() <= new.depth() {
                self.put(table, i, new);
            }
        }
    }

    /// Deletes the rule `key/depth`; its addresses fall back to the longest shorter rule covering them.
    pub(crate) fn delete(&mut self, key: u128, depth: u8) -> Result<u32> {
        self.check_depth(depth)?;
        let key = mask(key, depth);
        let Some(next_hop) = self.rules[usize::from(depth)].remove(&key) else {
            return Err(Error::RouteNotFound { prefix: self.ip_of(key), depth });
        };
        self.rule_count -= 1;
        let replacement = (0..depth)
            .rev()
            .find_map(|d| self.rules[usize::from(d)].get(&mask(key, d)).map(|&nh| Entry::route(nh, d)))
            .unwrap_or(Entry::INVALID);
        self.delete_at(Table::Root, 0, key, depth, replacement);
        Ok(next_hop)
    }

    fn ip_of(&self, key: u128) -> std::net::IpAddr {
        if self.max_depth == 32 {
            std::net::Ipv4Addr::from((key >> 96) as u32).into()
        } else {
            std::net::Ipv6Addr::from(key).into()
        }
    }

    fn delete_at(&mut self, table: Table, level: u32, key: u128, depth: u8, replacement: Entry) {
        let end = level_end(level);
        if u32::from(depth) <= end {
            let first = index(key, level);
            self.replace_range(table, level, first, 1 << (end - u32::from(depth)), depth, replacement);
        } else {
            let i = index(key, level);
            let e = self.get(table, i);
            if e.is_ext() {
                self.delete_at(Table::Group(e.next_hop()), level + 1, key, depth, replacement);
                self.try_collapse(table, level, i);
            }
        }
    }

    /// Writes `replacement` over the entries the deleted rule of length `depth` owned.
    fn replace_range(&mut self, table: Table, level: u32, first: usize, count: usize, depth: u8, replacement: Entry) {
        for i in first..first + count {
            let e = self.get(table, i);
            if e.is_ext() {
                self.replace_range(Table::Group(e.next_hop()), level + 1, 0, GROUP_LEN, depth, replacement);
                self.try_collapse(table, level, i);
            } else if e.is_valid() && e.depth() == depth {
                self.put(table, i, replacement);
            }
        }
    }

    /// Frees the group behind extended entry `i` when no rule longer than its parent boundary is left in it:
    /// then every entry holds the same covering route (or none), which the parent entry takes over.
    fn try_collapse(&mut self, table: Table, level: u32, i: usize) {
        let boundary = level_end(level);
        let g = self.get(table, i).next_hop();
        let start = g as usize * GROUP_LEN;
        let group = &self.groups[start..start + GROUP_LEN];
        let collapsible = group.iter().all(|&raw| {
            let e = Entry::from_raw(raw);
            !e.is_ext() && (!e.is_valid() || u32::from(e.depth()) <= boundary)
        });
        if collapsible {
            let survivor = Entry::from_raw(group[0]);
            debug_assert!(group.iter().all(|&raw| raw == survivor.raw()), "a collapsible group is uniform");
            self.put(table, i, survivor);
            self.free_groups.push(g);
        }
    }

    /// The general walk (any depth); the families have faster specialised versions.
    #[inline]
    pub(crate) fn lookup(&self, key: u128) -> Option<u32> {
        let mut e = Entry::from_raw(self.root[index(key, 0)]);
        let mut level = 1;
        while e.is_ext() {
            e = Entry::from_raw(self.groups[e.next_hop() as usize * GROUP_LEN + index(key, level)]);
            level += 1;
        }
        e.is_valid().then_some(e.next_hop())
    }
}
