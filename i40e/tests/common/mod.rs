//! Shared by the model tests: the i40e driver opened on the independent X710 model of nicsim.

#![allow(dead_code)] // each test binary uses a part

use std::sync::Arc;
use std::time::{Duration, Instant};

use hugepage::Allocator;
use i40e::{max_speed_of, I40e, Options, Timing};
use mempool::{Mempool, PoolConfig};
use nicsim::{X710Bar, X710Config, X710Port, X710Thread, X710};

/// A driver on a model port whose thread runs for as long as this lives. Field order: the driver drops (and
/// quiesces its rings) before the model thread stops.
pub struct Port {
    pub dev: I40e<X710Bar>,
    pub thread: X710Thread,
    pub model: X710Port,
}

pub fn options(name: &str, model: &X710Port) -> Options {
    let max_speed = max_speed_of(0x8086, model.config().part.device_id()).expect("a part the driver takes");
    Options { timing: Timing::fast(), max_speed, ..Options::new(name) }
}

/// Opens the driver on `bar`/`model` with the model thread running.
pub fn open(name: &str, bar: X710Bar, model: X710Port) -> pktio::Result<Port> {
    let thread = model.start_thread();
    let dev = I40e::new(Arc::new(bar), model.dma_mapper(), Allocator::no_huge(), options(name, &model))?;
    Ok(Port { dev, thread, model })
}

pub fn open_one(config: X710Config) -> Port {
    let (bar, model) = X710::new(config);
    let port = open("model0", bar, model).expect("bring-up against the model");
    port.model.assert_no_faults();
    port
}

pub fn open_pair(config: X710Config) -> (Port, Port) {
    let ((b0, m0), (b1, m1)) = X710::pair(config);
    let p0 = open("model0", b0, m0).expect("bring-up of port 0");
    let p1 = open("model1", b1, m1).expect("bring-up of port 1");
    p0.model.assert_no_faults();
    p1.model.assert_no_faults();
    (p0, p1)
}

pub fn pool(name: &str, size: u32) -> Mempool {
    Mempool::new(name, &PoolConfig { size, cache_size: 0, ..Default::default() }, &Allocator::no_huge()).unwrap()
}

/// Polls `f` until it is true or `secs` pass.
#[track_caller]
pub fn wait_for(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(secs), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_micros(200));
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

/// A packet holding `frame`, chained over data-room-sized segments.
pub fn mbuf_from(pool: &Mempool, frame: &[u8]) -> mempool::Mbuf {
    let room = pool.data_room() as usize;
    let mut head: Option<mempool::Mbuf> = None;
    for part in frame.chunks(room) {
        let mut m = pool.alloc().expect("buffer");
        m.data_room_mut()[..part.len()].copy_from_slice(part);
        assert!(m.set_len(part.len() as u16));
        match &mut head {
            Some(h) => h.chain(m),
            None => head = Some(m),
        }
    }
    head.unwrap()
}

/// Every byte of a (possibly chained) packet.
pub fn bytes(m: &mempool::Mbuf) -> Vec<u8> {
    let mut v = vec![0u8; m.pkt_len() as usize];
    assert_eq!(m.copy_to(&mut v), v.len());
    v
}

/// Closes the driver and checks it left nothing: no DMA mapping in the model's IOVA map, no fault (the close's own
/// admin commands and register writes included).
pub fn close(port: Port) {
    let Port { dev, thread, model } = port;
    let map = model.dma_mapper();
    drop(dev);
    assert_eq!(map.region_count(), 0, "DMA mappings left after close");
    drop(thread);
    model.assert_no_faults();
}
