//! The ARP cache's timing, with time passed in: entries expire, unresolved hops are asked again at the retry
//! interval and given up on after the last request, and the pending queue is bounded.

mod common;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use netstack::arp::{ArpCache, ArpConfig, Queued};
use pktio::MacAddr;

const HOP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);

fn config() -> ArpConfig {
    ArpConfig {
        entry_ttl: Duration::from_secs(60),
        pending_per_hop: 2,
        retry_interval: Duration::from_secs(1),
        max_requests: 3,
        max_entries: 2,
        max_unresolved: 2,
    }
}

#[test]
fn entries_expire_after_their_ttl() {
    let t0 = Instant::now();
    let mut c = ArpCache::new(config());
    assert!(c.insert(HOP, MAC, t0).is_empty());
    assert_eq!(c.lookup(HOP, t0 + Duration::from_secs(59)), Some(MAC));
    assert_eq!(c.lookup(HOP, t0 + Duration::from_secs(60)), None, "expired entries are not used");
    c.expire(t0 + Duration::from_secs(61));
    assert!(c.entries().is_empty(), "and are removed by expire");
}

#[test]
fn a_full_cache_evicts_the_entry_closest_to_expiry() {
    let t0 = Instant::now();
    let mut c = ArpCache::new(config());
    c.insert(Ipv4Addr::new(10, 0, 0, 1), MAC, t0);
    c.insert(Ipv4Addr::new(10, 0, 0, 2), MAC, t0 + Duration::from_secs(1));
    c.insert(Ipv4Addr::new(10, 0, 0, 3), MAC, t0 + Duration::from_secs(2));
    let ips: Vec<_> = c.entries().iter().map(|e| e.ip).collect();
    assert_eq!(ips, vec![Ipv4Addr::new(10, 0, 0, 2), Ipv4Addr::new(10, 0, 0, 3)]);
}

#[test]
fn pending_queue_is_bounded_retried_and_given_up() {
    let pool = common::pool("arp-pending", 64);
    let t0 = Instant::now();
    let mut c = ArpCache::new(config());
    assert_eq!(c.queue(HOP, pool.alloc().unwrap(), t0), Queued::SendRequest);
    assert_eq!(c.queue(HOP, pool.alloc().unwrap(), t0), Queued::Held);
    assert_eq!(c.queue(HOP, pool.alloc().unwrap(), t0), Queued::Dropped);
    assert_eq!(pool.in_use(), 2, "the dropped packet went back to the pool");
    assert_eq!(c.pending_packets(), 2);
    // Not yet time to ask again.
    let (retry, failed) = c.expire(t0 + Duration::from_millis(500));
    assert!(retry.is_empty() && failed.is_empty());
    // Second and third requests, one interval apart.
    assert_eq!(c.expire(t0 + Duration::from_secs(1)).0, vec![HOP]);
    assert_eq!(c.expire(t0 + Duration::from_secs(2)).0, vec![HOP]);
    // After the third request went unanswered, the packets are given up.
    let (retry, failed) = c.expire(t0 + Duration::from_secs(3));
    assert!(retry.is_empty());
    assert_eq!(failed.len(), 2);
    drop(failed);
    assert_eq!(pool.in_use(), 0);
    assert!(c.unresolved().is_empty());
}

#[test]
fn next_hops_being_resolved_are_bounded() {
    let pool = common::pool("arp-hops", 64);
    let t0 = Instant::now();
    let mut c = ArpCache::new(config());
    assert_eq!(c.queue(Ipv4Addr::new(10, 0, 0, 1), pool.alloc().unwrap(), t0), Queued::SendRequest);
    assert_eq!(c.queue(Ipv4Addr::new(10, 0, 0, 2), pool.alloc().unwrap(), t0), Queued::SendRequest);
    assert_eq!(c.queue(Ipv4Addr::new(10, 0, 0, 3), pool.alloc().unwrap(), t0), Queued::Dropped, "a third hop");
    assert_eq!(c.queue(Ipv4Addr::new(10, 0, 0, 2), pool.alloc().unwrap(), t0), Queued::Held, "a known hop still");
    assert_eq!((c.unresolved().len(), c.pending_packets(), pool.in_use()), (2, 3, 3));
}

#[test]
fn resolution_hands_back_the_waiting_packets_in_order() {
    let pool = common::pool("arp-resolve", 64);
    let t0 = Instant::now();
    let mut c = ArpCache::new(config());
    for i in 0..2u8 {
        let mut m = pool.alloc().unwrap();
        m.append(1).unwrap()[0] = i;
        c.queue(HOP, m, t0);
    }
    let out = c.insert(HOP, MAC, t0);
    assert_eq!(out.iter().map(|m| m.data()[0]).collect::<Vec<_>>(), vec![0, 1]);
    assert!(c.unresolved().is_empty());
    assert_eq!(c.lookup(HOP, t0), Some(MAC));
}
