//! Two stacks joined back to back over a net_ring pair, and a pool that must be whole again at the end.
#![allow(dead_code)]

pub mod frames;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use hugepage::Allocator;
use netstack::{Event, Stack, StackConfig};
use pktio::{EthDev, Mempool, PoolConfig, PortConfig};
use swports::ring::RingPort;

pub const A_IP: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
pub const B_IP: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);

pub fn pool(name: &str, size: u32) -> Mempool {
    let name = format!("{name}-{}", std::process::id());
    Mempool::new(&name, &PoolConfig::with_size(size), &Allocator::no_huge()).unwrap()
}

/// Two stacks on the two ends of a ring pair. Fields drop in order: stacks (their queues), ports, pool.
pub struct Pair {
    pub a: Stack,
    pub b: Stack,
    pub ev_a: Vec<Event>,
    pub ev_b: Vec<Event>,
    ports: Option<(RingPort, RingPort)>,
    pub pool: Mempool,
}

impl Pair {
    pub fn new(name: &str, pool_size: u32, tune: impl Fn(&mut StackConfig)) -> Pair {
        let pool = pool(name, pool_size);
        let (mut pa, mut pb) = RingPort::pair(&format!("{name}-a"), &format!("{name}-b"), 1, 4096);
        let mut stacks = Vec::new();
        for (port, ip) in [(&mut pa, A_IP), (&mut pb, B_IP)] {
            port.configure(&PortConfig::default()).unwrap();
            port.start(&pool).unwrap();
            let mut config = StackConfig::new(port.mac_addr(), ip, 24);
            tune(&mut config);
            stacks.push(Stack::new(config, port.rx_queue(0).unwrap(), port.tx_queue(0).unwrap(), pool.clone()));
        }
        let b = stacks.pop().unwrap();
        let a = stacks.pop().unwrap();
        Pair { a, b, ev_a: Vec::new(), ev_b: Vec::new(), ports: Some((pa, pb)), pool }
    }

    /// Polls both stacks once.
    pub fn poll(&mut self) {
        self.a.poll(&mut self.ev_a);
        self.b.poll(&mut self.ev_b);
    }

    /// Polls both until `done` holds, failing after `secs` seconds.
    pub fn poll_until(&mut self, secs: u64, what: &str, mut done: impl FnMut(&mut Pair) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            self.poll();
            if done(self) {
                return;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
        }
    }

    /// Drops the stacks and stops the ports, then checks every buffer is back in the pool.
    pub fn finish(self) {
        let Pair { a, b, ports, pool, .. } = self;
        drop(a);
        drop(b);
        let (mut pa, mut pb) = ports.unwrap();
        pa.stop().unwrap();
        pb.stop().unwrap();
        drop((pa, pb));
        assert_eq!(pool.in_use(), 0, "buffers leaked");
    }
}

/// A stack on one end of a ring pair, and raw frames in and out on the other end.
pub struct Wire {
    pub stack: Stack,
    pub events: Vec<Event>,
    raw_rx: Box<dyn pktio::RxQueue>,
    raw_tx: Box<dyn pktio::TxQueue>,
    ports: Option<(RingPort, RingPort)>,
    pub pool: Mempool,
    pub peer_mac: pktio::MacAddr,
}

impl Wire {
    pub fn new(name: &str, tune: impl Fn(&mut StackConfig)) -> Wire {
        let pool = pool(name, 1024);
        let (mut pa, mut pb) = RingPort::pair(&format!("{name}-s"), &format!("{name}-r"), 1, 1024);
        for p in [&mut pa, &mut pb] {
            p.configure(&PortConfig::default()).unwrap();
            p.start(&pool).unwrap();
        }
        let mut config = StackConfig::new(pa.mac_addr(), A_IP, 24);
        tune(&mut config);
        let stack = Stack::new(config, pa.rx_queue(0).unwrap(), pa.tx_queue(0).unwrap(), pool.clone());
        let (raw_rx, raw_tx) = (pb.rx_queue(0).unwrap(), pb.tx_queue(0).unwrap());
        let peer_mac = pb.mac_addr();
        Wire { stack, events: Vec::new(), raw_rx, raw_tx, ports: Some((pa, pb)), pool, peer_mac }
    }

    /// Sends `frame` to the stack (it is received on the next poll).
    pub fn inject(&mut self, frame: &[u8]) {
        let mut m = self.pool.alloc().expect("pool has room");
        m.append(frame.len() as u16).expect("frame fits a buffer").copy_from_slice(frame);
        let mut b = pktio::PacketBatch::with_capacity(1);
        b.push(m).unwrap();
        assert_eq!(self.raw_tx.tx_burst(&mut b), 1);
    }

    pub fn poll(&mut self) -> usize {
        self.stack.poll(&mut self.events)
    }

    /// Every frame the stack has sent since the last call, in order.
    pub fn sent(&mut self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut b = pktio::PacketBatch::with_capacity(32);
        while self.raw_rx.rx_burst(&mut b) > 0 {
            let n = b.len();
            b.drain_front(n, |m| out.push(m.data().to_vec()));
        }
        out
    }

    pub fn finish(self) {
        let Wire { stack, raw_rx, raw_tx, ports, pool, .. } = self;
        drop((stack, raw_rx, raw_tx));
        let (mut pa, mut pb) = ports.unwrap();
        pa.stop().unwrap();
        pb.stop().unwrap();
        drop((pa, pb));
        assert_eq!(pool.in_use(), 0, "buffers leaked");
    }
}
