//! The TX hang watchdog (ringkit's, as Linux's i40e looks for hung queues): a queue the device stopped serving is
//! found within the watchdog's timeout once the ring is full, reported (xstats, a typed error, a log line) and
//! restarted, dropping and counting what it held; once the device serves it again, new traffic flows and none of
//! the dropped packets comes out. A stalled queue whose ring never fills is found from the control plane's reads
//! (stats, xstats, link, `check_tx_hangs`), counted once, and restarted by the next burst that finds the ring full.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use hugepage::Allocator;
use i40e::{I40e, Timing};
use mempool::PacketBatch;
use nicsim::{X710Bar, X710Config, X710Port, X710Thread, X710};
use pktio::TypedQueues;
use pktio::{EthDev, PortConfig, TxQueue};

fn xstat(dev: &impl EthDev, name: &str) -> u64 {
    dev.xstats().into_iter().find(|x| x.name == name).map(|x| x.value).unwrap_or_else(|| panic!("no xstat {name}"))
}

/// The watchdog's timeout in these tests.
const WATCHDOG: Duration = Duration::from_millis(200);

/// A started port on an unwired X710 model with the watchdog at [`WATCHDOG`], and two distinct frames to it (the
/// ones sent before the hang, and after).
fn started_unwired(pool: &mempool::Mempool) -> (I40e<X710Bar>, X710Thread, X710Port, Vec<u8>, Vec<u8>) {
    let (bar, model) = X710::new(X710Config::default());
    let thread = model.start_thread();
    let options = i40e::Options { timing: Timing { tx_hang: WATCHDOG, ..Timing::fast() }, ..options("model0", &model) };
    let mut dev = I40e::new(Arc::new(bar), model.dma_mapper(), Allocator::no_huge(), options).unwrap();
    dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
    dev.start(pool).unwrap();
    wait_for(5, "link up", || dev.link().up);
    model.unwire();
    let mac = dev.mac_addr().0;
    let old = udp_frame([2, 0, 0, 0, 0, 9], mac, ([1, 1, 1, 1], [2, 2, 2, 2]), (1, 2), 64);
    let new = udp_frame([2, 0, 0, 0, 0, 9], mac, ([1, 1, 1, 1], [2, 2, 2, 2]), (3, 4), 64);
    (dev, thread, model, old, new)
}

/// Sends `n` copies of `frame`; returns how many the queue took.
fn send(pool: &mempool::Mempool, tx: &mut impl TxQueue, frame: &[u8], n: usize) -> usize {
    let mut b = PacketBatch::new();
    for _ in 0..n {
        b.push(mbuf_from(pool, frame)).unwrap();
    }
    tx.tx_burst(&mut b)
}

#[test]
fn a_hung_tx_queue_is_detected_within_the_timeout_restarted_and_sends_again() {
    let pool = pool("tx-hang", 1023);
    let (mut dev, thread, model, old, new) = started_unwired(&pool);
    let burst = |tx: &mut i40e::I40eTxQueue<X710Bar>, f: &[u8], n: usize| send(&pool, tx, f, n);
    let mut tx = dev.tx_queue_typed(0).unwrap();
    model.tx_hang(Some(0), true);
    let mut accepted = 0;
    for _ in 0..6 {
        accepted += burst(&mut tx, &old, 32);
    }
    assert!(accepted > 0 && accepted < 128, "a hung queue holds at most one ring: {accepted}");
    assert!(model.take_tx().is_empty(), "nothing leaves a hung queue");
    assert_eq!(xstat(&dev, "tx_hangs"), 0, "a full ring is not yet a hang");
    assert!(dev.check_tx_hangs().is_ok());
    wait_for(10, "the watchdog to find the hang and restart the queue", || {
        burst(&mut tx, &old, 8);
        xstat(&dev, "tx_hang_restarts") >= 1
    });
    assert_eq!((xstat(&dev, "tx_hangs"), xstat(&dev, "tx_hang_restarts")), (1, 1));
    assert_eq!(xstat(&dev, "tx_hang_dropped"), accepted as u64, "every packet the ring held, dropped");
    let err = dev.check_tx_hangs().expect_err("the hang is reported");
    match err.driver_error::<i40e::Error>() {
        Some(i40e::Error::TxHang { hang, restarts, .. }) => {
            assert_eq!((hang.queue, *restarts), (0, 1));
            assert!(hang.stalled_for >= Duration::from_millis(200), "{hang}");
        }
        other => panic!("{err}: {other:?}"),
    }
    // The device serves the queue again: what is sent now goes out, and nothing of what the restart dropped.
    model.tx_hang(Some(0), false);
    assert_eq!(burst(&mut tx, &new, 4), 4);
    let mut out = Vec::new();
    wait_for(5, "the new frames", || {
        out.extend(model.take_tx());
        out.len() >= 4
    });
    std::thread::sleep(Duration::from_millis(20));
    out.extend(model.take_tx());
    assert_eq!(out, vec![new.clone(); 4]);
    drop(tx);
    dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers held", pool.in_use());
    close(Port { dev, thread, model });
}

#[test]
fn a_stall_with_a_partly_filled_ring_is_found_by_polling_stats_counted_once_and_restarted_on_a_full_ring() {
    let pool = pool("tx-hang-partial", 1023);
    let timeout = WATCHDOG;
    let (mut dev, thread, model, old, new) = started_unwired(&pool);
    let burst = |tx: &mut i40e::I40eTxQueue<X710Bar>, f: &[u8], n: usize| send(&pool, tx, f, n);
    let mut tx = dev.tx_queue_typed(0).unwrap();
    model.tx_hang(Some(0), true);
    // Ten frames, then nothing: the ring never fills, so the TX path never looks.
    let hung_at = Instant::now();
    assert_eq!(burst(&mut tx, &old, 10), 10);
    assert_eq!(xstat(&dev, "tx_hangs"), 0, "not before the timeout");
    wait_for(10, "a stats read to find the hang", || {
        dev.stats();
        xstat(&dev, "tx_hangs") >= 1
    });
    assert!(hung_at.elapsed() >= timeout, "found after {:?}, before the timeout", hung_at.elapsed());
    assert!(model.take_tx().is_empty(), "nothing leaves a hung queue");
    assert_eq!(xstat(&dev, "tx_hang_restarts"), 0, "the control plane only detects");
    let err = dev.check_tx_hangs().expect_err("the hang is reported");
    match err.driver_error::<i40e::Error>() {
        Some(i40e::Error::TxHang { hang, restarts, dropped }) => {
            assert_eq!((hang.queue, hang.pending, *restarts, *dropped), (0, 10, 0, 0), "{hang}");
            assert!(hang.stalled_for >= timeout, "{hang}");
        }
        other => panic!("{err}: {other:?}"),
    }
    // More reads (the link query too) see the same stall: counted once.
    for _ in 0..3 {
        dev.link();
        dev.stats();
    }
    assert_eq!(xstat(&dev, "tx_hangs"), 1);
    // Recovery as on a full ring: the owner's slow path knows the stall was reported and restarts at once.
    // The first burst that finds the ring full restarts it (117 slots left: the fourth burst of 32), no second
    // timeout.
    let mut accepted = 10;
    for _ in 0..4 {
        accepted += burst(&mut tx, &old, 32);
    }
    assert_eq!(xstat(&dev, "tx_hang_restarts"), 1, "{accepted} accepted");
    assert!(accepted < 128, "{accepted}");
    assert_eq!(xstat(&dev, "tx_hangs"), 1, "one stall, one hang, whoever saw it");
    assert_eq!(xstat(&dev, "tx_hang_dropped"), accepted as u64, "every packet the ring held, dropped");
    model.tx_hang(Some(0), false);
    assert_eq!(burst(&mut tx, &new, 4), 4);
    let mut out = Vec::new();
    wait_for(5, "the new frames", || {
        out.extend(model.take_tx());
        out.len() >= 4
    });
    std::thread::sleep(Duration::from_millis(20));
    out.extend(model.take_tx());
    assert_eq!(out, vec![new.clone(); 4], "nothing of what the restart dropped");
    dev.stats();
    assert_eq!(xstat(&dev, "tx_hangs"), 1, "a queue that sends again is not hung");
    drop(tx);
    dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers held", pool.in_use());
    close(Port { dev, thread, model });
}
