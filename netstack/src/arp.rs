//! The ARP cache: resolved neighbours with an expiry, and a bounded queue of packets per next hop still being
//! resolved. Pure bookkeeping: the stack builds and sends the ARP packets; time comes in as an argument (the
//! stack reads the clock once per poll), so expiry is tested without sleeping.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use mempool::Mbuf;
use pktio::MacAddr;

/// ARP timing and sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpConfig {
    /// How long a learned entry is used before it must be learned again.
    pub entry_ttl: Duration,
    /// Packets held per unresolved next hop; more are dropped (counted as `drop_arp_unresolved`).
    pub pending_per_hop: usize,
    /// Time between requests for a next hop still unresolved.
    pub retry_interval: Duration,
    /// Requests sent before the pending packets are dropped.
    pub max_requests: u32,
    /// Entries kept at most; a full cache evicts the entry closest to expiry.
    pub max_entries: usize,
    /// Next hops being resolved at once; a packet for one more is dropped (counted as `drop_arp_unresolved`), so
    /// a flood from spoofed on-link sources cannot park the pool's buffers behind requests nobody answers.
    pub max_unresolved: usize,
}

impl Default for ArpConfig {
    fn default() -> Self {
        ArpConfig {
            entry_ttl: Duration::from_secs(300),
            pending_per_hop: 16,
            retry_interval: Duration::from_secs(1),
            max_requests: 3,
            max_entries: 1024,
            max_unresolved: 256,
        }
    }
}

/// A resolved neighbour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpEntry {
    /// Its IPv4 address.
    pub ip: Ipv4Addr,
    /// Its MAC address.
    pub mac: MacAddr,
    /// When it stops being used.
    pub expires: Instant,
}

struct Pending {
    packets: Vec<Mbuf>,
    last_request: Instant,
    requests: u32,
}

/// What [`ArpCache::queue`] did with a packet for an unresolved next hop.
#[derive(Debug, PartialEq, Eq)]
pub enum Queued {
    /// Held; send an ARP request for the next hop now.
    SendRequest,
    /// Held; a request is already out.
    Held,
    /// The queue for that hop is full: the packet was dropped.
    Dropped,
}

/// The cache of one stack.
pub struct ArpCache {
    config: ArpConfig,
    entries: HashMap<Ipv4Addr, ArpEntry>,
    pending: HashMap<Ipv4Addr, Pending>,
}

impl ArpCache {
    /// An empty cache.
    pub fn new(config: ArpConfig) -> Self {
        ArpCache { config, entries: HashMap::new(), pending: HashMap::new() }
    }

    /// The MAC of `ip` if known and not expired at `now`.
    #[inline]
    pub fn lookup(&self, ip: Ipv4Addr, now: Instant) -> Option<MacAddr> {
        self.entries.get(&ip).filter(|e| e.expires > now).map(|e| e.mac)
    }

    /// Learns (or refreshes) `ip` at `mac`; returns the packets that were waiting for it, to be sent now.
    pub fn insert(&mut self, ip: Ipv4Addr, mac: MacAddr, now: Instant) -> Vec<Mbuf> {
        if self.entries.len() >= self.config.max_entries && !self.entries.contains_key(&ip) {
            if let Some(oldest) = self.entries.values().min_by_key(|e| e.expires).map(|e| e.ip) {
                self.entries.remove(&oldest);
            }
        }
        self.entries.insert(ip, ArpEntry { ip, mac, expires: now + self.config.entry_ttl });
        self.pending.remove(&ip).map(|p| p.packets).unwrap_or_default()
    }

    /// Whether `ip` is in the cache (expired or not): a sender already known is refreshed by any ARP it sends.
    pub fn knows(&self, ip: Ipv4Addr) -> bool {
        self.entries.contains_key(&ip)
    }

    /// Holds `packet` until `next_hop` resolves.
    pub fn queue(&mut self, next_hop: Ipv4Addr, packet: Mbuf, now: Instant) -> Queued {
        let full = self.pending.len() >= self.config.max_unresolved;
        match self.pending.get_mut(&next_hop) {
            Some(p) if p.packets.len() >= self.config.pending_per_hop => Queued::Dropped,
            Some(p) => {
                p.packets.push(packet);
                Queued::Held
            }
            None if full => Queued::Dropped,
            None => {
                let mut packets = Vec::with_capacity(self.config.pending_per_hop.min(4));
                packets.push(packet);
                self.pending.insert(next_hop, Pending { packets, last_request: now, requests: 1 });
                Queued::SendRequest
            }
        }
    }

    /// Drops expired entries; returns the next hops to ask again, and the packets given up on (their hop did
    /// not answer `max_requests` requests), for the caller to count and free.
    pub fn expire(&mut self, now: Instant) -> (Vec<Ipv4Addr>, Vec<Mbuf>) {
        self.entries.retain(|_, e| e.expires > now);
        let (mut retry, mut failed) = (Vec::new(), Vec::new());
        let config = self.config;
        self.pending.retain(|ip, p| {
            if now.duration_since(p.last_request) < config.retry_interval {
                return true;
            }
            if p.requests >= config.max_requests {
                failed.append(&mut p.packets);
                return false;
            }
            p.requests += 1;
            p.last_request = now;
            retry.push(*ip);
            true
        });
        (retry, failed)
    }

    /// Packets waiting, over every hop.
    pub fn pending_packets(&self) -> usize {
        self.pending.values().map(|p| p.packets.len()).sum()
    }

    /// The entries, for display.
    pub fn entries(&self) -> Vec<ArpEntry> {
        let mut v: Vec<_> = self.entries.values().copied().collect();
        v.sort_by_key(|e| e.ip);
        v
    }

    /// Next hops being resolved.
    pub fn unresolved(&self) -> Vec<Ipv4Addr> {
        let mut v: Vec<_> = self.pending.keys().copied().collect();
        v.sort();
        v
    }
}

impl std::fmt::Debug for ArpCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArpCache").field("entries", &self.entries.len()).field("pending", &self.pending.len()).finish()
    }
}
