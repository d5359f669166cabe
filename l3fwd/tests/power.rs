//! l3fwd-power's loop in-process on two X540 model ports wired back to back (`net_sim_x540`, the real ixgbe driver
//! on the model, its RX-queue interrupts as the model's eventfds): an idle lcore sleeps on the RX interrupt
//! instead of spinning, a frame wakes it, and it forwards the frame byte for byte as l3fwd does.
//!
//! The test fails if the driver never arms the queue or the model never fires (both broken on purpose: the lcore
//! then forwards only after its stop-check timeout, and no wake-up by a queue is counted).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hugepage::Allocator;
use l3fwd::fwd::{self, Lcore, LcoreCounters, RxUnit, TxPort};
use l3fwd::lookup::LpmRouter;
use l3fwd::params::PowerMode;
use l3fwd::routes;
use mempool::{Mempool, PacketBatch, PoolConfig};
use pktio::capture::QueueTap;
use pktio::devargs::Devargs;
use pktio::{IntrConf, PortConfig};

fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn ipv4_to(dst_mac: [u8; 6], dst: [u8; 4]) -> Vec<u8> {
    testkit::udp_frame(dst_mac, [0x02, 0, 0, 0, 0, 0x77], ([10, 0, 0, 1], dst), (9, 9), 64)
}

#[test]
fn an_idle_lcore_sleeps_on_the_rx_interrupt_and_a_frame_wakes_it() {
    let registry = pmds::registry();
    let args = Devargs::parse("net_sim_x540,ports=2").unwrap();
    let driver = registry.vdev_driver_for(&args).expect("net_sim_x540 is registered");
    let mut ports = (driver.open)(&args, &Allocator::no_huge()).expect("two model ports");
    let pool = Mempool::new(
        "l3fwd-power-test",
        &PoolConfig { size: 4096, cache_size: 0, ..Default::default() },
        &Allocator::no_huge(),
    )
    .unwrap();
    let small = PortConfig { rx_desc: 256, tx_desc: 256, ..Default::default() };
    let (p0, rest) = ports.split_at_mut(1);
    let (p0, p1) = (&mut p0[0], &mut rest[0]);
    p0.configure(&PortConfig { intr_conf: IntrConf { rxq: true, lsc: false }, ..small.clone() }).unwrap();
    p1.configure(&small).unwrap();
    p0.start(&pool).unwrap();
    p1.start(&pool).unwrap();
    wait_for("links up", Duration::from_secs(5), || p0.link().up && p1.link().up);

    // The lcore polls port 0's queue and sends by port 0 (198.18.0.0/24 routes to port 0): back to port 1.
    let mut addrs = [0u8; 12];
    addrs[..6].copy_from_slice(&p1.mac_addr().0);
    addrs[6..].copy_from_slice(&p0.mac_addr().0);
    let out = vec![Some(TxPort::new(p0.tx_queue(0).unwrap(), addrs, QueueTap::detached())), None];
    let units = vec![RxUnit { port: 0, queue: 0, rx: p0.rx_queue(0).unwrap(), tap: QueueTap::detached() }];
    let counters = Arc::new(LcoreCounters::new(2));
    let l = Lcore { units, out, counters: counters.clone(), tapped: false, power: Some(PowerMode::InterruptOnly) };
    let router = Arc::new(LpmRouter::new(&routes::default_lpm4(), &routes::default_lpm6()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let lcore = std::thread::spawn(move || fwd::lcore_main(l, router, st, || {}));

    // Idle: it sleeps, and stays asleep (a spinning or always-readable loop would count thousands of sleeps).
    wait_for("the lcore to sleep", Duration::from_secs(5), || counters.sleeps.get() >= 1);
    let before = counters.sleeps.get();
    std::thread::sleep(Duration::from_millis(500));
    let slept = counters.sleeps.get() - before;
    assert!(slept <= 10, "{slept} sleeps in 500 ms of idle: the lcore does not block");
    assert_eq!(counters.wakeups.get(), 0, "nothing arrived, nothing woke it");

    // A frame from port 1 wakes it by the queue's interrupt, well before the stop check's timeout.
    let mut tx1 = p1.tx_queue(0).unwrap();
    let mut rx1 = p1.rx_queue(0).unwrap();
    let frame = ipv4_to(p0.mac_addr().0, [198, 18, 0, 9]);
    let mut b = PacketBatch::with_capacity(1);
    assert!(b.alloc_from(&pool, 1));
    let m = b.iter_mut().next().unwrap();
    m.data_room_mut()[..frame.len()].copy_from_slice(&frame);
    m.set_len(frame.len() as u16);
    let sent_at = Instant::now();
    assert_eq!(tx1.tx_burst(&mut b), 1);
    let mut got = Vec::new();
    wait_for("the forwarded frame", Duration::from_secs(5), || {
        let mut b = PacketBatch::with_capacity(8);
        rx1.rx_burst(&mut b);
        got.extend(b.iter().map(|m| m.data().to_vec()));
        !got.is_empty()
    });
    let latency = sent_at.elapsed();
    assert!(counters.wakeups.get() >= 1, "the frame was forwarded without a wake-up by the queue's interrupt");
    assert_eq!(got.len(), 1);
    // l3fwd's rewrite: MACs, TTL 64 -> 63, checksum adjusted; the rest byte for byte.
    let f = &got[0];
    assert_eq!(&f[..6], &p1.mac_addr().0);
    assert_eq!(&f[6..12], &p0.mac_addr().0);
    assert_eq!(f[22], frame[22] - 1);
    assert_eq!(&f[26..], &frame[26..]);
    eprintln!("wake-up to forwarded frame: {latency:?}");

    stop.store(true, Ordering::Relaxed);
    drop(lcore.join().unwrap());
    drop((tx1, rx1));
    p0.stop().unwrap();
    p1.stop().unwrap();
}
