//! RX queue interrupts (docs/hw/hinic3.md §5.5) of the driver on the independent SP670 model, the model's vectors
//! delivered to real eventfds as VFIO's MSI-X delivers them: an armed queue wakes its descriptor when a frame comes
//! (after the model's coalescing timer), a disarmed one does not, a frame that came just before arming still wakes.
//! Link changes come on AEQ 0, which the driver polls: no link interrupt (refused with NotSupported).

mod common;

use std::os::fd::RawFd;
use std::time::Duration;

use common::*;
use drvkit::irq::poll_readable;
use mempool::PacketBatch;
use nicsim::Sp670Config;
use pktio::{EthDev, IntrConf, PortConfig, RxQueue};

const WAKE: Duration = Duration::from_secs(5);
const QUIET: Duration = Duration::from_millis(100);

fn started(pool: &mempool::Mempool) -> Port {
    let mut port = open_one(Sp670Config::default());
    port.dev.set_irq_source(port.model.irq_source());
    let conf =
        PortConfig { rx_desc: 128, tx_desc: 128, intr_conf: IntrConf { rxq: true, lsc: false }, ..Default::default() };
    port.dev.configure(&conf).unwrap();
    port.dev.start(pool).unwrap();
    wait_for(5, "link up", || port.dev.link().up);
    port
}

fn readable(fd: RawFd, within: Duration) -> bool {
    poll_readable(fd, within).unwrap()
}

fn frame(port: &Port, n: u16) -> Vec<u8> {
    let mac = port.model.config().mac;
    udp_frame(mac, [2, 0, 0, 0, 0, 9], ([10, 0, 0, 9], [10, 0, 0, 1]), (n, 7), 64)
}

/// Waits until the model has written `n` frames in all.
fn delivered(port: &Port, n: u64) {
    wait_for(5, "the model's RX write-back", || port.model.frame_counts().rx_delivered >= n);
}

#[test]
fn an_armed_queue_wakes_on_a_frame_a_disarmed_one_does_not_and_arming_catches_a_frame_just_before() {
    let pool = pool("rxintr", 1024);
    let mut port = started(&pool);
    let mut rx = port.dev.rx_queue(0).unwrap();
    let fd = rx.wait_fd().expect("an interrupt descriptor with intr_conf.rxq");
    let mut got = PacketBatch::with_capacity(32);
    // Armed, nothing comes: quiet. Then a frame: awake within the deadline, the frame in the ring.
    rx.intr_enable().unwrap();
    assert!(!readable(fd, QUIET), "armed without a frame");
    let f = frame(&port, 1);
    port.model.inject(&f);
    assert!(readable(fd, WAKE), "an armed queue's frame wakes its descriptor");
    let b = receive(&mut *rx, 1);
    assert_eq!(bytes(&b.as_slice()[0]), f);
    drop(b);
    // Disarmed: the frame arrives, the descriptor stays quiet.
    rx.intr_disable().unwrap();
    rx.intr_enable().unwrap();
    rx.intr_disable().unwrap();
    port.model.inject(&frame(&port, 2));
    let _ = receive(&mut *rx, 1);
    // The enable above drained the earlier wake; nothing may have signalled since.
    assert!(!readable(fd, QUIET), "a disarmed queue must not wake");
    // Re-arming now wakes at once for the frame that came while disarmed (the latched cause); then quiet.
    rx.intr_enable().unwrap();
    let _ = readable(fd, QUIET);
    rx.intr_enable().unwrap();
    assert!(!readable(fd, QUIET), "armed again after draining: quiet");
    // The race: an empty burst, then a frame reaches the ring, then the arm: it must still wake.
    rx.intr_disable().unwrap();
    assert_eq!(rx.rx_burst(&mut got), 0);
    let before = port.model.frame_counts().rx_delivered;
    let g = frame(&port, 3);
    port.model.inject(&g);
    delivered(&port, before + 1);
    rx.intr_enable().unwrap();
    assert!(readable(fd, WAKE), "a frame that arrived just before arming wakes the waiter");
    let b = receive(&mut *rx, 1);
    assert_eq!(bytes(&b.as_slice()[0]), g);
    drop(b);
    drop(got);
    drop(rx);
    port.dev.stop().unwrap();
    close(port);
    assert!(pool.is_full());
}

#[test]
fn link_interrupts_are_refused_naming_them() {
    let mut port = open_one(Sp670Config::default());
    port.dev.set_irq_source(port.model.irq_source());
    let conf = PortConfig { intr_conf: IntrConf { rxq: false, lsc: true }, ..Default::default() };
    let e = port.dev.configure(&conf).unwrap_err();
    assert!(matches!(e, pktio::Error::NotSupported { .. }), "{e}");
    close(port);
}
