//! RX and link-state interrupts (DPDK's RX-interrupt API) against the X540 model, its thread running as hardware
//! does: the driver routes the model's MSI-X vectors to real eventfds (the model's glue, as VFIO does on a PCI
//! device), arms a queue, and a frame arriving from the wire makes the queue's descriptor readable.
//!
//! Each interrupt test fails if the driver never arms (no EIMS_EX write in `intr_enable`; for LSC, no EIMS.LSC)
//! or the model never fires (no message from its `evaluate_irq`): both were broken on purpose and every test
//! here but the configuration one failed. The race test also fails without the EICS_EX re-trigger of
//! `intr_enable`, the disarm test without the EIMC_EX write of `intr_disable`.
mod common;

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use common::*;
use drvkit::irq::poll_readable;
use ixgbe::Ixgbe;
use mempool::PacketBatch;
use nicsim::{ModelThread, SimBar, X540Config, X540Port};
use pktio::{EthDev, IntrConf, PortConfig, RxQueue, TypedQueues};

/// How long a wake-up may take on a loaded host.
const WAKE: Duration = Duration::from_secs(5);
/// How long a descriptor is watched for a wake-up that must not come (after the frame was seen delivered).
const QUIET: Duration = Duration::from_millis(50);
/// The RX vector of queue 0 (vector 0 is the other causes').
const RX0_VECTOR: usize = 1;

fn config(rxq: bool, lsc: bool) -> PortConfig {
    PortConfig { rx_desc: 128, tx_desc: 128, intr_conf: IntrConf { rxq, lsc }, ..Default::default() }
}

/// A started port with interrupts, its model's thread running.
fn port(conf: PortConfig) -> (Ixgbe<SimBar>, X540Port, ModelThread, mempool::Mempool) {
    let (mut dev, model) = single(X540Config::default());
    dev.set_irq_source(model.irq_source());
    let pool = pool(1024, 2048);
    start(&mut dev, &conf, &pool);
    let thread = model.start_thread();
    (dev, model, thread, pool)
}

fn frame_to(dev: &Ixgbe<SimBar>, seq: u16) -> Vec<u8> {
    udp_frame(dev.mac_addr().0, [0x02, 0, 0, 0, 0, 0x99], ([10, 0, 0, 1], [10, 0, 0, 2]), (seq, 9), 64)
}

fn readable(fd: RawFd, within: Duration) -> bool {
    poll_readable(fd, within).expect("poll")
}

/// Polls the queue until `n` frames came in (bounded); returns them as bytes.
fn receive(rx: &mut impl RxQueue, n: usize) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    let mut b = PacketBatch::with_capacity(32);
    let t = Instant::now();
    while got.len() < n {
        assert!(t.elapsed() < WAKE, "only {} of {n} frames received", got.len());
        rx.rx_burst(&mut b);
        got.extend(b.iter().map(|m| m.data().to_vec()));
        b.clear();
        std::thread::yield_now();
    }
    got
}

/// Waits until the model has written `n` frames back to RX descriptors in all.
fn delivered(model: &X540Port, n: u64) {
    wait_for("the model to deliver the frame", WAKE, || model.frame_counts().rx_delivered >= n);
}

#[test]
fn an_armed_queue_wakes_on_a_frame_once_then_stays_quiet_until_armed_again() {
    let (mut dev, model, _thread, _pool) = port(config(true, false));
    let mut rx = dev.rx_queue_typed(0).unwrap();
    let fd = rx.wait_fd().expect("a queue with an interrupt has a descriptor");
    rx.intr_enable().unwrap();
    assert!(!readable(fd, QUIET), "armed, nothing arrived: no wake-up");

    let first = frame_to(&dev, 1);
    assert!(model.inject(&first));
    assert!(readable(fd, WAKE), "the armed queue's descriptor did not become readable");
    assert_eq!(model.irq_counts()[RX0_VECTOR], 1, "one MSI-X message on queue 0's vector");
    rx.intr_disable().unwrap();
    assert_eq!(receive(&mut rx, 1), vec![first]);

    // Woken, not re-armed: the vector auto-masked (EIAM), so the next frame sends nothing.
    assert!(model.inject(&frame_to(&dev, 2)));
    delivered(&model, 2);
    assert_eq!(receive(&mut rx, 1).len(), 1);
    assert_eq!(model.irq_counts()[RX0_VECTOR], 1, "no message while disarmed");

    // Armed again: the old signal is drained, and the next frame wakes.
    rx.intr_enable().unwrap();
    assert!(!readable(fd, QUIET), "arming drains the descriptor");
    assert!(model.inject(&frame_to(&dev, 3)));
    assert!(readable(fd, WAKE), "re-armed queue did not wake");
    assert_eq!(model.irq_counts()[RX0_VECTOR], 2);
    rx.intr_disable().unwrap();
    assert_eq!(receive(&mut rx, 1).len(), 1);
}

#[test]
fn a_disarmed_queue_does_not_wake() {
    let (mut dev, model, _thread, _pool) = port(config(true, false));
    let mut rx = dev.rx_queue_typed(0).unwrap();
    let fd = rx.wait_fd().unwrap();
    // First the queue is seen to wake when armed, so the quiet below is the disarm's doing.
    rx.intr_enable().unwrap();
    assert!(model.inject(&frame_to(&dev, 1)));
    assert!(readable(fd, WAKE), "the armed queue did not wake");
    assert_eq!(receive(&mut rx, 1).len(), 1);
    // Armed again (draining the descriptor), then disarmed before the next frame.
    rx.intr_enable().unwrap();
    rx.intr_disable().unwrap();
    assert!(model.inject(&frame_to(&dev, 2)));
    delivered(&model, 2);
    assert!(!readable(fd, QUIET), "a disarmed queue woke");
    assert_eq!(model.irq_counts()[RX0_VECTOR], 1, "no message while disarmed");
    assert_eq!(receive(&mut rx, 1).len(), 1, "the frame is there to poll");
}

#[test]
fn a_frame_that_arrived_just_before_arming_still_wakes() {
    let (mut dev, model, _thread, _pool) = port(config(true, false));
    let mut rx = dev.rx_queue_typed(0).unwrap();
    let fd = rx.wait_fd().unwrap();
    // The application's last burst found nothing; the frame lands before it arms.
    let mut b = PacketBatch::with_capacity(32);
    assert_eq!(rx.rx_burst(&mut b), 0);
    let sent = frame_to(&dev, 7);
    assert!(model.inject(&sent));
    delivered(&model, 1);
    rx.intr_enable().unwrap();
    assert!(readable(fd, WAKE), "the frame written back before arming was slept through");
    rx.intr_disable().unwrap();
    assert_eq!(receive(&mut rx, 1), vec![sent]);
}

#[test]
fn queues_have_their_own_vectors() {
    let (mut dev, model, _thread, _pool) = port(PortConfig {
        rx_queues: 2,
        rss: Some(pktio::RssConfig { key: None, functions: pktio::RssHashFunctions::ALL }),
        ..config(true, false)
    });
    let mut rx0 = dev.rx_queue_typed(0).unwrap();
    let mut rx1 = dev.rx_queue_typed(1).unwrap();
    let (fd0, fd1) = (rx0.wait_fd().unwrap(), rx1.wait_fd().unwrap());
    assert_ne!(fd0, fd1);
    rx0.intr_enable().unwrap();
    rx1.intr_enable().unwrap();
    // Frames of several flows until one lands on each queue: each wakes its own descriptor only.
    let mut woke = [false; 2];
    for seq in 0..64 {
        assert!(model.inject(&frame_to(&dev, seq)));
        delivered(&model, u64::from(seq) + 1);
        for (i, fd) in [fd0, fd1].into_iter().enumerate() {
            woke[i] |= readable(fd, Duration::ZERO);
        }
        if woke == [true, true] {
            break;
        }
    }
    assert_eq!(woke, [true, true], "RSS spread 64 flows without waking both queues");
    let counts = model.irq_counts();
    assert_eq!((counts[1], counts[2]), (1, 1), "one message each on vectors 1 and 2 (auto-masked after)");
    rx0.intr_disable().unwrap();
    rx1.intr_disable().unwrap();
}

#[test]
fn a_link_change_makes_the_link_event_descriptor_readable() {
    let (dev, model, _thread, _pool) = port(config(false, true));
    let fd = dev.link_event_fd().expect("a port configured with intr_conf.lsc has the descriptor");
    wait_for("link up", WAKE, || dev.link().up);
    let _ = dev.link(); // acknowledges the bring-up's change
    assert!(!readable(fd, QUIET), "no change since the last link()");

    model.link_flap(Duration::from_millis(300));
    assert!(readable(fd, WAKE), "the link went down without a link-state event");
    assert!(!dev.link().up, "link() reads the new state");
    assert!(readable(fd, WAKE), "the link came back without a link-state event");
    wait_for("link back up", WAKE, || dev.link().up);
    assert!(model.irq_counts()[0] >= 2, "vector 0 (other causes) carried the changes");
}

#[test]
fn interrupts_need_vectors_and_a_configuration() {
    // No vector source (as the model without its glue): refused, named.
    let (mut dev, _model) = single(X540Config::default());
    let err = dev.configure(&config(true, false)).unwrap_err().to_string();
    assert!(err.contains("intr_conf.rxq"), "{err}");
    assert!(dev.configure(&config(false, true)).unwrap_err().to_string().contains("intr_conf.lsc"));

    // With vectors: 64 of them, one for the other causes, so 63 RX queues at most.
    let (mut dev, model) = single(X540Config::default());
    dev.set_irq_source(model.irq_source());
    let err = dev.configure(&PortConfig { rx_queues: 64, ..config(true, false) }).unwrap_err().to_string();
    assert!(err.contains("63 RX queues"), "{err}");

    // Configured without interrupts: the queue has no descriptor and cannot be armed; no link-event descriptor.
    let pool = pool(512, 2048);
    start(&mut dev, &config(false, false), &pool);
    let mut rx = dev.rx_queue_typed(0).unwrap();
    assert!(rx.wait_fd().is_none());
    assert!(matches!(rx.intr_enable(), Err(pktio::Error::NotSupported { .. })));
    assert!(matches!(dev.link_event_fd(), Err(pktio::Error::NotSupported { .. })));
}
