//! The TX hang watchdog (ringkit's, as Linux's ixgbe checks for a hung ring): a queue the device stopped serving
//! is found within the watchdog's timeout once the ring is full, reported (xstats, a typed error, a log line) and
//! restarted, dropping and counting what it held; once the device serves it again, new traffic flows and none of
//! the dropped packets comes out. A stalled queue whose ring never fills is found from the control plane's reads
//! (stats, xstats, link, `check_tx_hangs`), counted once, and restarted by the next burst that finds the ring full.
mod common;

use pktio::TypedQueues;
use std::time::{Duration, Instant};

use common::*;
use ixgbe::Timing;
use mempool::{Mempool, PacketBatch};
use nicsim::{X540Config, X540};
use pktio::{EthDev, PortConfig, TxQueue};

fn send(pool: &Mempool, tx: &mut impl TxQueue, frame: &[u8], n: usize) -> usize {
    let mut b = PacketBatch::with_capacity(n.max(1));
    assert!(b.alloc_from(pool, n));
    for m in b.iter_mut() {
        m.data_room_mut()[..frame.len()].copy_from_slice(frame);
        m.set_len(frame.len() as u16);
    }
    tx.tx_burst(&mut b)
}

fn xstat(dev: &impl EthDev, name: &str) -> u64 {
    dev.xstats().into_iter().find(|x| x.name == name).map(|x| x.value).unwrap_or_else(|| panic!("no xstat {name}"))
}

#[test]
fn a_hung_tx_queue_is_detected_within_the_timeout_restarted_and_sends_again() {
    let (bar, port) = X540::new(X540Config::default());
    let timing = Timing { tx_hang: Duration::from_millis(200), ..fast_timing() };
    let mut dev = open_with(bar, &port, "sim0", timing).expect("bring-up");
    let pool = pool(1024, 2048);
    start(&mut dev, &PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }, &pool);
    let old = udp_frame([2, 0, 0, 0, 0, 2], dev.mac_addr().0, ([1, 1, 1, 1], [2, 2, 2, 2]), (1, 2), 64);
    let new = udp_frame([2, 0, 0, 0, 0, 2], dev.mac_addr().0, ([1, 1, 1, 1], [2, 2, 2, 2]), (3, 4), 64);
    let mut tx = dev.tx_queue_typed(0).unwrap();
    port.tx_hang(Some(0));
    let mut accepted = 0;
    for _ in 0..8 {
        accepted += send(&pool, &mut tx, &old, 32);
        port.step();
    }
    assert!(accepted > 0 && accepted < 128, "a hung queue holds at most one ring: {accepted}");
    assert_eq!(xstat(&dev, "tx_hangs"), 0, "a full ring is not yet a hang");
    assert!(dev.check_tx_hangs().is_ok());
    // The application keeps offering packets: the slow path looks, and after the 200 ms timeout calls it hung.
    wait_for("the watchdog to find the hang and restart the queue", Duration::from_secs(10), || {
        send(&pool, &mut tx, &old, 8);
        port.step();
        xstat(&dev, "tx_hang_restarts") >= 1
    });
    assert_eq!(xstat(&dev, "tx_hangs"), 1);
    assert_eq!(xstat(&dev, "tx_hang_restarts"), 1);
    assert_eq!(xstat(&dev, "tx_hang_dropped"), accepted as u64, "every packet the ring held, dropped");
    assert!(dev.stats().oerrors >= accepted as u64, "{:?}", dev.stats());
    let err = dev.check_tx_hangs().expect_err("the hang is reported");
    match err.driver_error::<ixgbe::Error>() {
        Some(ixgbe::Error::TxHang { hang, restarts, .. }) => {
            assert_eq!((hang.queue, *restarts), (0, 1));
            assert!(hang.stalled_for >= Duration::from_millis(200), "{hang}");
        }
        other => panic!("{err}: {other:?}"),
    }
    // The device serves the queue again: what is sent now goes out, and nothing of what the restart dropped.
    port.clear_tx_hang();
    assert_eq!(send(&pool, &mut tx, &new, 4), 4);
    port.step();
    let out = port.take_tx();
    assert_eq!(out, vec![new.clone(); 4]);
    drop(tx);
    dev.stop().unwrap();
    assert!(pool.is_full(), "{} leaked", pool.in_use());
    port.assert_no_faults();
}

#[test]
fn a_stall_with_a_partly_filled_ring_is_found_by_polling_stats_counted_once_and_restarted_on_a_full_ring() {
    let (bar, port) = X540::new(X540Config::default());
    let timeout = Duration::from_millis(200);
    let timing = Timing { tx_hang: timeout, ..fast_timing() };
    let mut dev = open_with(bar, &port, "sim0", timing).expect("bring-up");
    let pool = pool(1024, 2048);
    start(&mut dev, &PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }, &pool);
    let old = udp_frame([2, 0, 0, 0, 0, 2], dev.mac_addr().0, ([1, 1, 1, 1], [2, 2, 2, 2]), (1, 2), 64);
    let new = udp_frame([2, 0, 0, 0, 0, 2], dev.mac_addr().0, ([1, 1, 1, 1], [2, 2, 2, 2]), (3, 4), 64);
    let mut tx = dev.tx_queue_typed(0).unwrap();
    port.tx_hang(Some(0));
    // Ten frames, then nothing: the ring never fills, so the TX path never looks.
    let hung_at = Instant::now();
    assert_eq!(send(&pool, &mut tx, &old, 10), 10);
    port.step();
    assert!(port.take_tx().is_empty(), "a hung queue sends nothing");
    assert_eq!(xstat(&dev, "tx_hangs"), 0, "not before the timeout");
    wait_for("a stats read to find the hang", Duration::from_secs(10), || {
        port.step();
        dev.stats();
        xstat(&dev, "tx_hangs") >= 1
    });
    assert!(hung_at.elapsed() >= timeout, "found after {:?}, before the timeout", hung_at.elapsed());
    assert_eq!(xstat(&dev, "tx_hang_restarts"), 0, "the control plane only detects");
    let err = dev.check_tx_hangs().expect_err("the hang is reported");
    match err.driver_error::<ixgbe::Error>() {
        Some(ixgbe::Error::TxHang { hang, restarts, dropped }) => {
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
        accepted += send(&pool, &mut tx, &old, 32);
        port.step();
    }
    assert_eq!(xstat(&dev, "tx_hang_restarts"), 1, "{accepted} accepted");
    assert!(accepted < 128, "{accepted}");
    assert_eq!(xstat(&dev, "tx_hangs"), 1, "one stall, one hang, whoever saw it");
    assert_eq!(xstat(&dev, "tx_hang_dropped"), accepted as u64, "every packet the ring held, dropped");
    port.clear_tx_hang();
    assert_eq!(send(&pool, &mut tx, &new, 4), 4);
    port.step();
    assert_eq!(port.take_tx(), vec![new.clone(); 4], "nothing of what the restart dropped");
    dev.stats();
    assert_eq!(xstat(&dev, "tx_hangs"), 1, "a queue that sends again is not hung");
    drop(tx);
    dev.stop().unwrap();
    assert!(pool.is_full(), "{} leaked", pool.in_use());
    port.assert_no_faults();
}
