//! The TX hang watchdog (ringkit's, as Linux's drivers look for hung queues) on the SP670: an SQ whose consumer index
//! stops is found within the watchdog's timeout once the ring is full and reported (xstats, a typed error, a log
//! line); the recovery is a port restart, which re-creates the SQ without waiting for the hung one to drain, and
//! then only new traffic flows. A stalled SQ whose ring never fills is found from the control plane's reads (stats,
//! xstats, link, `check_tx_hangs`), counted once, and the same restart recovers it.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use hinic3::{Bars, Hinic3, Options, Timing};
use hugepage::Allocator;
use mempool::PacketBatch;
use nicsim::{Sp670, Sp670Config};
use pktio::TypedQueues;
use pktio::{EthDev, PortConfig, TxQueue};

fn xstat(dev: &impl EthDev, name: &str) -> u64 {
    dev.xstats().into_iter().find(|x| x.name == name).map(|x| x.value).unwrap_or_else(|| panic!("no xstat {name}"))
}

/// The watchdog's timeout in these tests.
const WATCHDOG: Duration = Duration::from_millis(200);

/// A started port on an unwired SP670 model with the watchdog at [`WATCHDOG`], and two distinct frames to it
/// (the ones sent before the hang, and after).
fn started_unwired(pool: &mempool::Mempool) -> (Port, Vec<u8>, Vec<u8>) {
    let model = Sp670::new(Sp670Config::default());
    let thread = model.start_thread();
    let (cfg, mgmt, db) = model.bars();
    let bars = Bars { cfg: Arc::new(cfg), mgmt: Some(Arc::new(mgmt)), db: Arc::new(db) };
    let timing = Timing { tx_hang: WATCHDOG, drain: Duration::from_secs(3), ..Timing::fast() };
    let options = Options { timing, ..Options::new("model0") };
    let dev = Hinic3::new(bars, model.dma_mapper(), Allocator::no_huge(), options).expect("bring-up");
    let mut port = Port { dev, thread, model };
    port.dev.configure(&PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }).unwrap();
    port.dev.start(pool).unwrap();
    wait_for(5, "link up", || port.dev.link().up);
    port.model.unwire();
    let mac = port.dev.mac_addr().0;
    let old = udp_frame([2, 0, 0, 0, 0, 9], mac, ([1, 1, 1, 1], [2, 2, 2, 2]), (1, 2), 64);
    let new = udp_frame([2, 0, 0, 0, 0, 9], mac, ([1, 1, 1, 1], [2, 2, 2, 2]), (3, 4), 64);
    (port, old, new)
}

/// Sends `n` copies of `frame`; returns how many the queue took.
fn send(pool: &mempool::Mempool, tx: &mut dyn TxQueue, frame: &[u8], n: usize) -> usize {
    let mut b = PacketBatch::new();
    for _ in 0..n {
        b.push(mbuf_from(pool, frame)).unwrap();
    }
    tx.tx_burst(&mut b)
}

#[test]
fn a_hung_sq_is_detected_within_the_timeout_and_a_port_restart_recovers_without_the_drain_wait() {
    let pool = pool("tx-hang", 1023);
    let (mut port, old, new) = started_unwired(&pool);
    let burst = |tx: &mut dyn TxQueue, f: &[u8], n: usize| send(&pool, tx, f, n);
    let mut tx = port.dev.tx_queue_typed(0).unwrap();
    port.model.tx_hang(Some(0), true);
    let mut accepted = 0;
    for _ in 0..6 {
        accepted += burst(&mut tx, &old, 32);
    }
    assert!(accepted > 0 && accepted < 128, "a hung SQ holds at most one ring: {accepted}");
    assert_eq!(xstat(&port.dev, "tx_hangs"), 0, "a full ring is not yet a hang");
    assert!(port.dev.check_tx_hangs().is_ok());
    wait_for(10, "the watchdog to find the hang", || {
        burst(&mut tx, &old, 8);
        xstat(&port.dev, "tx_hangs") >= 1
    });
    assert_eq!(xstat(&port.dev, "tx_hangs"), 1, "reported once");
    assert!(port.model.take_tx().is_empty(), "nothing left the hung SQ");
    let err = port.dev.check_tx_hangs().expect_err("the hang is reported");
    match err.driver_error::<hinic3::Error>() {
        Some(hinic3::Error::TxHang { hang }) => {
            assert_eq!(hang.queue, 0);
            assert!(hang.pending > 0 && hang.stalled_for >= Duration::from_millis(200), "{hang}");
        }
        other => panic!("{err}: {other:?}"),
    }
    // Recovery: a port restart. The stop does not wait out the 3 s drain for an SQ known to be hung.
    drop(tx);
    let t = Instant::now();
    port.dev.stop().unwrap();
    assert!(t.elapsed() < Duration::from_secs(2), "the stop waited {:?} for a hung SQ", t.elapsed());
    assert!(pool.is_full(), "{} buffers held by a stopped port", pool.in_use());
    port.model.tx_hang(Some(0), false);
    port.dev.start(&pool).unwrap();
    wait_for(5, "link up after the restart", || port.dev.link().up);
    assert!(port.dev.check_tx_hangs().is_ok(), "a new start, a new watch");
    let mut tx = port.dev.tx_queue_typed(0).unwrap();
    assert_eq!(burst(&mut tx, &new, 4), 4);
    let mut out = Vec::new();
    wait_for(5, "the new frames", || {
        out.extend(port.model.take_tx());
        out.len() >= 4
    });
    assert_eq!(out, vec![new.clone(); 4], "only what was sent after the restart");
    drop(tx);
    port.dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers held", pool.in_use());
    close(port);
}

#[test]
fn a_stall_with_a_partly_filled_sq_is_found_by_polling_stats_counted_once_and_a_port_restart_recovers() {
    let pool = pool("tx-hang-partial", 1023);
    let timeout = WATCHDOG;
    let (mut port, old, new) = started_unwired(&pool);
    let burst = |tx: &mut dyn TxQueue, f: &[u8], n: usize| send(&pool, tx, f, n);
    let mut tx = port.dev.tx_queue_typed(0).unwrap();
    port.model.tx_hang(Some(0), true);
    // Ten frames, then nothing: the SQ never fills, so the TX path never looks.
    let hung_at = Instant::now();
    assert_eq!(burst(&mut tx, &old, 10), 10);
    assert_eq!(xstat(&port.dev, "tx_hangs"), 0, "not before the timeout");
    wait_for(10, "a stats read to find the hang", || {
        port.dev.stats();
        xstat(&port.dev, "tx_hangs") >= 1
    });
    assert!(hung_at.elapsed() >= timeout, "found after {:?}, before the timeout", hung_at.elapsed());
    assert!(port.model.take_tx().is_empty(), "nothing left the hung SQ");
    let err = port.dev.check_tx_hangs().expect_err("the hang is reported");
    match err.driver_error::<hinic3::Error>() {
        Some(hinic3::Error::TxHang { hang }) => {
            assert_eq!((hang.queue, hang.pending), (0, 10), "{hang}");
            assert!(hang.stalled_for >= timeout, "{hang}");
        }
        other => panic!("{err}: {other:?}"),
    }
    // More reads (the link query too) and the owner's own slow path see the same stall: counted once.
    for _ in 0..3 {
        port.dev.link();
        port.dev.stats();
    }
    let mut accepted = 10;
    for _ in 0..6 {
        accepted += burst(&mut tx, &old, 32);
    }
    assert!(accepted < 128, "{accepted}");
    assert_eq!(xstat(&port.dev, "tx_hangs"), 1, "one stall, one hang, whoever saw it");
    // Recovery: a port restart, which does not wait out the 3 s drain for an SQ known to be hung.
    drop(tx);
    let t = Instant::now();
    port.dev.stop().unwrap();
    assert!(t.elapsed() < Duration::from_secs(2), "the stop waited {:?} for a hung SQ", t.elapsed());
    assert!(pool.is_full(), "{} buffers held by a stopped port", pool.in_use());
    port.model.tx_hang(Some(0), false);
    port.dev.start(&pool).unwrap();
    wait_for(5, "link up after the restart", || port.dev.link().up);
    let mut tx = port.dev.tx_queue_typed(0).unwrap();
    assert_eq!(burst(&mut tx, &new, 4), 4);
    let mut out = Vec::new();
    wait_for(5, "the new frames", || {
        out.extend(port.model.take_tx());
        out.len() >= 4
    });
    assert_eq!(out, vec![new.clone(); 4], "only what was sent after the restart");
    port.dev.stats();
    assert!(port.dev.check_tx_hangs().is_ok(), "a new start, a new watch");
    drop(tx);
    port.dev.stop().unwrap();
    assert!(pool.is_full(), "{} buffers held", pool.in_use());
    close(port);
}
