//! The shutdown before a reset as the reference drivers do it (docs/hw/ixgbe.md §3.1, §3.2, §5.5, §5.6) and the
//! statistics as DPDK reports them (docs/hw/ixgbe.md §13), each checked against what the model saw or counted.
mod common;

use std::time::{Duration, Instant};

use common::*;
use drvkit::bar::RegisterSpace;
use mempool::{Mempool, PacketBatch};
use nicsim::x540::regs::{ESDP, ESDP_SDP3};
use nicsim::X540Config;
use pktio::{EthDev, PortConfig, RxQueue, TxQueue};

fn small() -> PortConfig {
    PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }
}

fn xstat(dev: &impl EthDev, name: &str) -> u64 {
    dev.xstats().iter().find(|x| x.name == name).unwrap_or_else(|| panic!("no xstat {name}")).value
}

#[test]
fn the_reset_follows_the_flush_of_all_128_tx_queues_and_a_2ms_wait() {
    let (dev, port) = single(X540Config::default());
    let resets = port.resets();
    assert_eq!(resets.len(), 1, "one reset when PCIe mastering stops in time: {resets:?}");
    let r = resets[0];
    assert_eq!(r.tx_queues_flushed, 128, "queues 64-127 too");
    assert!(r.gio_disabled);
    let wait = r.flush_to_gio_disable.expect("flush, then GIO_DIS");
    assert!(wait >= Duration::from_millis(2), "GIO_DIS {wait:?} after the last flush");
    assert!(!r.tx_pending_cleared, "nothing to clear without a double reset");
    drop(dev);
    port.assert_no_faults();
}

#[test]
fn a_second_reset_is_preceded_by_clearing_pending_tx() {
    let (dev, port) = single(X540Config { gio_stuck: true, ..Default::default() });
    let resets = port.resets();
    assert_eq!(resets.len(), 2, "master requests never drained: reset twice: {resets:?}");
    assert!(resets[0].tx_pending_cleared, "GCR_EXT.BUFFERS_CLEAR with HLREG0.LPBK before the first reset");
    assert_eq!(resets[0].tx_queues_flushed, 128);
    drop(dev);
    port.assert_no_faults();
}

#[test]
fn the_phy_semaphore_is_waited_for_as_long_as_the_reference_waits() {
    // Busy firmware for 300 ms: longer than the 10 tries the driver used to make, well inside 200 x 5 ms.
    let hold = Duration::from_millis(300);
    let t = Instant::now();
    let (dev, port) = single(X540Config { fw_phy_semaphore_hold: hold, ..Default::default() });
    assert!(t.elapsed() >= hold);
    assert_eq!(dev.phy_note(), None, "the PHY was set up under its semaphore");
    assert_eq!(port.counters().swfw_taken_from_firmware, 0, "taken once the firmware let go, not by force");
    wait_for("link up", Duration::from_secs(2), || dev.link().up);
    port.assert_no_faults();
}

#[test]
fn firmware_that_never_lets_go_loses_the_phy_semaphore_after_200_tries() {
    let t = Instant::now();
    let (dev, port) = single(X540Config { fw_phy_semaphore_hold: Duration::MAX, ..Default::default() });
    // Reset and PHY set-up each wait out the whole budget (200 x 5 ms), then take the semaphore.
    assert!(t.elapsed() >= Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(port.counters().swfw_taken_from_firmware, 2);
    assert_eq!(dev.phy_note(), None);
    port.assert_no_faults();
}

#[test]
fn the_82599_laser_stays_on_while_management_firmware_vetoes() {
    let (mut dev, port) = single(X540Config { mng_veto: true, panic_on_fault: true, ..X540Config::x82599() });
    dev.set_link_up(false).unwrap();
    assert_eq!(port.bar().read32(ESDP) & ESDP_SDP3, 0, "laser still on");
    port.assert_no_faults();
    // Without the veto it goes off.
    let (mut dev, port) = single(X540Config { panic_on_fault: true, ..X540Config::x82599() });
    dev.set_link_up(false).unwrap();
    assert_ne!(port.bar().read32(ESDP) & ESDP_SDP3, 0, "laser off");
}

fn send(pool: &Mempool, tx: &mut impl TxQueue, frame: &[u8], n: usize) {
    let mut b = PacketBatch::with_capacity(n);
    assert!(b.alloc_from(pool, n));
    for m in b.iter_mut() {
        m.data_room_mut()[..frame.len()].copy_from_slice(frame);
        m.set_len(frame.len() as u16);
    }
    assert_eq!(tx.tx_burst(&mut b), n);
}

#[test]
fn statistics_are_reported_as_dpdk_reports_them() {
    let (mut dev, port) = single(X540Config::default());
    let pool = pool(1024, 2048);
    start(&mut dev, &small(), &pool);
    let mac = dev.mac_addr().0;
    let mut rx = dev.rx_queue_typed(0).unwrap();
    let mut tx = dev.tx_queue_typed(0).unwrap();

    // RX: more 1500-byte frames at once than the packet buffer holds; the rest are missed, and the model's GPRC
    // counts them as the hardware does.
    let big = udp_frame(mac, [2, 0, 0, 0, 0, 1], ([1, 1, 1, 1], [2, 2, 2, 2]), (1, 2), 1500);
    let accepted = (0..400).filter(|_| port.inject(&big)).count() as u64;
    assert!(accepted < 400, "the packet buffer should overflow");
    let mut got = 0u64;
    let mut b = PacketBatch::with_capacity(64);
    wait_for("the packet buffer to drain", Duration::from_secs(10), || {
        port.step();
        let n = rx.rx_burst(&mut b) as u64;
        got += n;
        b.clear();
        n == 0 && port.rx_pending() == 0
    });
    // Delivered or missed (the ring can run short while the buffer drains), every frame is accounted for.
    let model = port.counters();
    assert_eq!(model.rx_delivered, got);
    assert_eq!(model.rx_delivered + model.rx_missed, 400);

    // TX: 10 frames of 60 bytes, and 3 PAUSE frames the MAC sends on its own.
    let small_frame = udp_frame([2, 0, 0, 0, 0, 9], mac, ([1, 1, 1, 1], [2, 2, 2, 2]), (1, 2), 60);
    send(&pool, &mut tx, &small_frame, 10);
    wait_for("10 frames on the wire", Duration::from_secs(5), || {
        port.step();
        port.counters().tx_sent == 10
    });
    port.send_pause(true);
    port.send_pause(true);
    port.send_pause(false);

    let missed = 400 - got;
    let s = dev.stats();
    assert_eq!(s.ipackets, got);
    assert_eq!(s.imissed, missed);
    // GPRC alone would say got + missed.
    assert_eq!(xstat(&dev, "rx_good_packets_hw"), got);
    assert_eq!(xstat(&dev, "rx_missed_errors_hw"), missed);
    assert_eq!(s.ibytes, got * 1500);
    // The MAC's byte counts cover every frame that made it into the packet buffer; with the CRC stripped GORC holds
    // frame bytes only, and TOR loses its 4 CRC bytes per frame.
    assert_eq!(xstat(&dev, "rx_good_bytes_hw"), accepted * 1500);
    assert_eq!(xstat(&dev, "rx_total_bytes"), accepted * 1500);
    // PAUSE frames out of packets sent, CRC out of the bytes: exactly the 10 x 60 data bytes sent (DPDK would report
    // 4 bytes fewer per PAUSE frame; see ixgbe/src/stats.rs).
    assert_eq!(xstat(&dev, "tx_good_packets_hw"), 10);
    assert_eq!(xstat(&dev, "tx_xoff_packets"), 2);
    assert_eq!(xstat(&dev, "tx_xon_packets"), 1);
    assert_eq!(xstat(&dev, "tx_size_64_packets"), 10);
    assert_eq!(xstat(&dev, "tx_multicast_packets"), 0);
    assert_eq!(xstat(&dev, "tx_good_bytes_hw"), 10 * 60);

    drop((rx, tx));
    dev.stop().unwrap();
    assert!(pool.is_full());
    port.assert_no_faults();
}
