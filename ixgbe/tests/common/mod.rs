//! Helpers shared by the driver-against-model tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hugepage::Allocator;
use ixgbe::{Ixgbe, MacType, Media, Options, Timing};
use mempool::{Mempool, PoolConfig};
use nicsim::{Chip, SimBar, X540Config, X540Port, X540};
use pktio::{EthDev, PortConfig};

/// A fresh, unique mempool of `n` buffers with `data_room` bytes each.
pub fn pool(n: u32, data_room: u16) -> Mempool {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = format!("ixgbe-test-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let config = PoolConfig { size: n, cache_size: 0, data_room, ..Default::default() };
    Mempool::new(&name, &config, &Allocator::no_huge()).expect("mempool")
}

/// Timing for the model: no settle waits, short budgets.
pub fn fast_timing() -> Timing {
    Timing {
        reset_done: Duration::from_millis(200),
        reset_settle: Duration::ZERO,
        gio_disable: Duration::from_millis(10),
        eeprom: Duration::from_millis(200),
        dma_init: Duration::from_millis(200),
        queue_enable: Duration::from_millis(100),
        mdio: Duration::from_millis(10),
        semaphore: Duration::from_millis(10),
        security_block: Duration::from_millis(100),
        laser_on: Duration::ZERO,
    }
}

/// Opens the driver on a model port.
pub fn open(bar: SimBar, port: &X540Port, name: &str) -> pktio::Result<Ixgbe<SimBar>> {
    let (mac_type, media) = match port.config().chip {
        Chip::X540 => (MacType::X540, Media::Copper),
        Chip::X82599 => (MacType::X82599, Media::Sfp),
    };
    let options = Options { name: name.to_string(), mac_type, timing: fast_timing(), media };
    Ixgbe::new(Arc::new(bar), port.dma_mapper(), Allocator::no_huge(), options)
}

/// One model port and the driver on it.
pub fn single(config: X540Config) -> (Ixgbe<SimBar>, X540Port) {
    let (bar, port) = X540::new(config);
    let dev = open(bar, &port, "sim0").expect("bring-up");
    (dev, port)
}

/// Two model ports wired back to back, with the driver on each.
pub fn pair(config: X540Config) -> ((Ixgbe<SimBar>, X540Port), (Ixgbe<SimBar>, X540Port)) {
    let ((bar0, p0), (bar1, p1)) = X540::pair(config);
    let d0 = open(bar0, &p0, "sim0").expect("bring-up port 0");
    let d1 = open(bar1, &p1, "sim1").expect("bring-up port 1");
    ((d0, p0), (d1, p1))
}

/// Configures and starts a port.
pub fn start(dev: &mut Ixgbe<SimBar>, config: &PortConfig, pool: &Mempool) {
    dev.configure(config).expect("configure");
    dev.start(pool).expect("start");
}

/// Waits (bounded) for `cond`.
pub fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// An Ethernet + IPv4 + UDP frame of `len` bytes (no FCS) from `src` to `dst` MAC, with the given addresses and
/// ports; checksums correct.
pub fn udp_frame(dst: [u8; 6], src: [u8; 6], ips: ([u8; 4], [u8; 4]), ports: (u16, u16), len: usize) -> Vec<u8> {
    ip_frame(dst, src, ips, 17, ports, len)
}

/// Like [`udp_frame`] for TCP (20-byte header, no options).
pub fn tcp_frame(dst: [u8; 6], src: [u8; 6], ips: ([u8; 4], [u8; 4]), ports: (u16, u16), len: usize) -> Vec<u8> {
    ip_frame(dst, src, ips, 6, ports, len)
}

fn ip_frame(dst: [u8; 6], src: [u8; 6], ips: ([u8; 4], [u8; 4]), proto: u8, ports: (u16, u16), len: usize) -> Vec<u8> {
    let l4_hdr = if proto == 6 { 20 } else { 8 };
    assert!(len >= 14 + 20 + l4_hdr);
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip_len = (len - 14) as u16;
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[8] = 64;
    ip[9] = proto;
    ip[12..16].copy_from_slice(&ips.0);
    ip[16..20].copy_from_slice(&ips.1);
    let c = checksum(&f[14..34], 0);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    for (i, b) in f[34 + l4_hdr..].iter_mut().enumerate() {
        *b = (i * 7 + 3) as u8;
    }
    let l4_len = len - 34;
    {
        let l4 = &mut f[34..];
        l4[0..2].copy_from_slice(&ports.0.to_be_bytes());
        l4[2..4].copy_from_slice(&ports.1.to_be_bytes());
        if proto == 17 {
            l4[4..6].copy_from_slice(&(l4_len as u16).to_be_bytes());
        } else {
            l4[12] = 5 << 4;
        }
    }
    let ck = checksum(&f[34..], pseudo(&ips, proto, l4_len));
    let off = if proto == 17 { 34 + 6 } else { 34 + 16 };
    f[off..off + 2].copy_from_slice(&ck.to_be_bytes());
    f
}

/// Pseudo-header sum (not folded, not inverted).
pub fn pseudo(ips: &([u8; 4], [u8; 4]), proto: u8, l4_len: usize) -> u32 {
    let mut s = 0u32;
    for w in ips.0.chunks(2).chain(ips.1.chunks(2)) {
        s += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    s + proto as u32 + l4_len as u32
}

/// Internet checksum of `data` starting from `initial`.
pub fn checksum(data: &[u8], initial: u32) -> u16 {
    let mut s = initial as u64;
    for c in data.chunks(2) {
        s += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u64;
    }
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}
