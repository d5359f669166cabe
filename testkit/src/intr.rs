//! The RX-interrupt check every driver's model test runs the same way: an armed queue's descriptor wakes on a frame
//! and not before, a disarmed one stays quiet, re-arming drains an old wake, and a frame that reached the ring just
//! before the arm still wakes (the arrive-before-arm race). The driver's test supplies how frames reach the model.

use std::os::fd::RawFd;
use std::time::Duration;

use mempool::PacketBatch;
use pktio::RxQueue;

use crate::driver::{bytes, receive, wait_for};

/// How long an armed queue may take to wake (the models' coalescing timers included).
pub const WAKE: Duration = Duration::from_secs(5);
/// How long a descriptor must stay quiet to count as "no wake".
pub const QUIET: Duration = Duration::from_millis(100);

/// Whether `fd` becomes readable within `within`.
pub fn readable(fd: RawFd, within: Duration) -> bool {
    drvkit::irq::poll_readable(fd, within).expect("poll(2) on the interrupt descriptor")
}

/// The model side of the check: puts a frame on the port's wire, and counts the frames the model wrote back.
pub struct Wire<'a> {
    /// Injects a frame on the model's wire.
    pub inject: &'a dyn Fn(&[u8]),
    /// The model's count of frames written into the RX ring.
    pub delivered: &'a dyn Fn() -> u64,
    /// Frame `n` of the check (addressed to the port).
    pub frame: &'a dyn Fn(u16) -> Vec<u8>,
}

/// Runs the check on queue `rx` of a started port configured with `intr_conf.rxq`.
pub fn armed_disarmed_and_arrive_before_arm<R: RxQueue + ?Sized>(rx: &mut R, wire: &Wire) {
    let fd = rx.wait_fd().expect("an interrupt descriptor with intr_conf.rxq");
    let mut got = PacketBatch::with_capacity(32);
    // Armed, nothing comes: quiet. Then a frame: awake within the deadline, the frame in the ring.
    rx.intr_enable().unwrap();
    assert!(!readable(fd, QUIET), "armed without a frame");
    let f = (wire.frame)(1);
    (wire.inject)(&f);
    assert!(readable(fd, WAKE), "an armed queue's frame wakes its descriptor");
    let b = receive(rx, 1);
    assert_eq!(bytes(&b.as_slice()[0]), f);
    drop(b);
    // Disarmed: the frame arrives, the descriptor stays quiet.
    rx.intr_disable().unwrap();
    rx.intr_enable().unwrap();
    rx.intr_disable().unwrap();
    (wire.inject)(&(wire.frame)(2));
    let _ = receive(rx, 1);
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
    let before = (wire.delivered)();
    let g = (wire.frame)(3);
    (wire.inject)(&g);
    wait_for(5, "the model's RX write-back", || (wire.delivered)() > before);
    rx.intr_enable().unwrap();
    assert!(readable(fd, WAKE), "a frame that arrived just before arming wakes the waiter");
    let b = receive(rx, 1);
    assert_eq!(bytes(&b.as_slice()[0]), g);
}
