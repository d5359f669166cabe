//! Ring layouts against the independent SP670 model: rings over several WQ pages (1-level CLA,
//! docs/hw/hinic3.md §9.3) with 4 KiB WQ pages and 4096 descriptors.

mod common;

use std::time::{Duration, Instant};

use common::*;
use hinic3::{Options, Timing};
use mempool::PacketBatch;
use nicsim::{Sp670, Sp670Config};
use pktio::{EthDev, PortConfig, RxQueue, TxQueue, TypedQueues};

const IPS: ([u8; 4], [u8; 4]) = ([10, 0, 0, 1], [10, 0, 0, 2]);

/// With 4 KiB WQ pages (COMM 22 code 0) a 4096-descriptor SQ or RQ (64 KiB) spans 16 pages: the driver names them
/// in a page table, the model reads the WQEs through it, and frames cross byte for byte while both rings wrap
/// several times over every page.
#[test]
fn rings_of_4096_descriptors_over_sixteen_4k_wq_pages() {
    let pool = pool("model-rings", 16383);
    let (m0, m1) = Sp670::pair(Sp670Config::default());
    let opts = |name: &str| Options { timing: Timing::fast(), wq_page_log2: 0, ..Options::new(name) };
    let mut a = open_with(m0, opts("model0")).expect("port 0");
    let mut b = open_with(m1, opts("model1")).expect("port 1");
    let config = PortConfig { rx_desc: 4096, tx_desc: 4096, ..Default::default() };
    for p in [&mut a, &mut b] {
        p.dev.configure(&config).unwrap();
        p.dev.start(&pool).unwrap();
    }
    wait_for(5, "both links up", || a.dev.link().up && b.dev.link().up);
    let (mac0, mac1) = (a.dev.mac_addr().0, b.dev.mac_addr().0);
    let mut tx = a.dev.tx_queue_typed(0).unwrap();
    let mut rx = b.dev.rx_queue_typed(0).unwrap();
    let total = 3 * 4096 + 100;
    let frame = |i: usize| udp_frame(mac1, mac0, IPS, (i as u16, 9), 60 + i % 200);
    let (mut sent, mut got) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    while got < total {
        assert!(Instant::now() < deadline, "{got} of {total} frames in time ({sent} sent)");
        let mut out = PacketBatch::new();
        while out.len() < 32 && sent + out.len() < total {
            out.push(mbuf_from(&pool, &frame(sent + out.len()))).unwrap();
        }
        let n = tx.tx_burst(&mut out);
        sent += n;
        drop(out);
        let mut inb = PacketBatch::new();
        if rx.rx_burst(&mut inb) == 0 {
            b.model.assert_no_faults(); // a ring the model cannot read shows here, not at the deadline
            a.model.assert_no_faults();
        }
        for m in inb.iter() {
            assert_eq!(bytes(m), frame(got), "frame {got}");
            got += 1;
        }
    }
    assert_eq!((a.model.sq_pages(0), b.model.rq_pages(0)), (Some(16), Some(16)), "16 WQ pages each");
    assert_eq!(b.dev.stats().ipackets, total as u64);
    drop((tx, rx));
    a.model.assert_no_faults();
    b.model.assert_no_faults();
    close(a);
    close(b);
}

/// With the default 1 MiB WQ pages the same rings fit one page each (0-level CLA).
#[test]
fn with_1m_wq_pages_a_4096_ring_is_one_page() {
    let mut p = open_one(Sp670Config::default());
    let pool = pool("model-rings-1m", 8191);
    p.dev.configure(&PortConfig { rx_desc: 4096, tx_desc: 4096, ..Default::default() }).unwrap();
    p.dev.start(&pool).unwrap();
    wait_for(5, "RQ started", || p.model.rq_pages(0).is_some());
    assert_eq!(p.model.rq_pages(0), Some(1));
    p.model.assert_no_faults();
    close(p);
}
