//! RX queue interrupts of `VirtioNet` on the device model (tests/model), its MSI-X vectors delivered to real
//! eventfds as VFIO's MSI-X delivers them: RX queue 0 mapped to vector 1 (read back), TX and configuration changes
//! unmapped; an armed queue wakes on a frame, a disarmed one does not, a frame that came just before arming still
//! wakes (testkit::intr), with and without EVENT_IDX; a device that answers NO_VECTOR, or has too few vectors, is
//! refused with the reason; a polled port takes no interrupt. And link changes (`intr_conf.lsc`) on vector 0.

mod model;

use std::sync::Arc;

use hugepage::Allocator;
use mempool::{Mempool, PacketBatch, PoolConfig};
use model::{bits, ModelConfig, ModelIrqs, VirtioNetModel, NO_VECTOR};
use pktio::{EthDev, IntrConf, PortConfig, RxQueue, TypedQueues};
use testkit::driver::wait_for;
use testkit::intr::{armed_disarmed_and_arrive_before_arm, readable, Wire, QUIET, WAKE};
use virtio::{Transport, VirtioNet};

type Port = VirtioNet<VirtioNetModel>;

/// The driver over `model`, its vectors from the model (as `open_vfio` gives VFIO's).
fn open(model: &Arc<VirtioNetModel>) -> Port {
    let caps = VirtioNetModel::capabilities();
    let t = Transport::new("model0", &caps, |_| Ok(model.clone())).expect("transport");
    let mut dev = VirtioNet::new("model0", t, Allocator::no_huge(), model.iova_map(), None).expect("probe");
    dev.set_irq_source(Arc::new(ModelIrqs(model.clone())));
    dev
}

fn pool(name: &str) -> Mempool {
    let config = PoolConfig { size: 256, cache_size: 0, ..Default::default() };
    Mempool::new(name, &config, &Allocator::no_huge()).expect("mempool")
}

fn rxq_conf() -> PortConfig {
    PortConfig { rx_desc: 64, tx_desc: 64, intr_conf: IntrConf { rxq: true, lsc: false }, ..Default::default() }
}

/// Frame `n`: 60 bytes to the model's MAC.
fn frame(n: u16) -> Vec<u8> {
    let mut f: Vec<u8> = (0..60).map(|k| (k as u8).wrapping_mul(7).wrapping_add(n as u8)).collect();
    f[0..6].copy_from_slice(&ModelConfig::default().mac);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 9]);
    f[12..14].copy_from_slice(&[0x88, 0xb5]);
    f[14..16].copy_from_slice(&n.to_be_bytes());
    f
}

/// The check on a started port over a model offering `features`: vectors as laid out, then testkit's sequence,
/// twice (stop and start between: the vectors are given back and enabled again).
fn armed_disarmed_arrive_before_arm(name: &str, features: u64) {
    let model = VirtioNetModel::new(ModelConfig { features, ..Default::default() });
    let p = pool(name);
    let mut dev = open(&model);
    dev.configure(&rxq_conf()).expect("configure with intr_conf.rxq");
    for round in 0..2 {
        dev.start(&p).expect("start");
        assert_eq!(dev.features() & bits::RING_EVENT_IDX, features & bits::RING_EVENT_IDX, "EVENT_IDX negotiated");
        assert_eq!(model.queue_vector(0), 1, "RX queue 0 on vector 1");
        assert_eq!(model.queue_vector(1), NO_VECTOR, "TX queue 0 without a vector");
        assert_eq!(model.config_vector(), NO_VECTOR, "configuration changes are polled");
        let mut rx = dev.rx_queue_typed(0).unwrap();
        assert_eq!(rx.intr_vector(), Some(1));
        let before = model.interrupts(1);
        let wire = Wire {
            inject: &|f| model.inject(f),
            delivered: &|| model.rx_delivered(),
            frame: &|n| frame(n + 10 * round),
        };
        armed_disarmed_and_arrive_before_arm(&mut rx, &wire);
        // Armed for the first frame only (the third woke through the driver's own re-check).
        assert!(model.interrupts(1) > before, "round {round}: the model never interrupted vector 1");
        drop(rx);
        dev.stop().unwrap();
        assert!(p.is_full(), "round {round}: pool full after stop");
    }
    assert_eq!(model.interrupts(2), 0, "vector 2 is nobody's");
    model.assert_clean();
}

#[test]
fn an_armed_queue_wakes_a_disarmed_one_does_not_and_arming_catches_a_frame_just_before() {
    armed_disarmed_arrive_before_arm("vn-intr", ModelConfig::default().features);
}

#[test]
fn the_same_with_event_idx_through_used_event() {
    armed_disarmed_arrive_before_arm("vn-intr-ev", ModelConfig::default().features | bits::RING_EVENT_IDX);
}

#[test]
fn a_disarmed_queue_takes_no_interrupt_over_many_frames_and_an_armed_one_wakes_after_them() {
    // Past the 16-bit index wrap with EVENT_IDX: `used_event` must follow the polled queue, or the device reaches
    // it after 65536 entries.
    let features = ModelConfig::default().features | bits::RING_EVENT_IDX;
    let model = VirtioNetModel::new(ModelConfig { features, ..Default::default() });
    let p = pool("vn-intr-many");
    let mut dev = open(&model);
    dev.configure(&rxq_conf()).unwrap();
    dev.start(&p).unwrap();
    let mut rx = dev.rx_queue_typed(0).unwrap();
    let fd = rx.wait_fd().unwrap();
    let mut b = PacketBatch::with_capacity(32);
    for i in 0..70_000u32 {
        model.inject(&frame(i as u16));
        assert_eq!(rx.rx_burst(&mut b), 1, "frame {i}");
        b.clear();
    }
    assert_eq!(model.interrupts(1), 0, "a disarmed queue was interrupted");
    rx.intr_enable().unwrap();
    assert!(!readable(fd, QUIET), "armed with nothing pending");
    model.inject(&frame(1));
    assert!(readable(fd, WAKE), "armed after 70000 polled frames: no wake");
    assert_eq!(model.interrupts(1), 1);
    drop(rx);
    dev.stop().unwrap();
    model.assert_clean();
}

#[test]
fn a_device_answering_no_vector_is_refused_naming_it_and_the_port_still_polls() {
    let model = VirtioNetModel::new(ModelConfig { refuse_vectors: true, ..Default::default() });
    let p = pool("vn-novec");
    let mut dev = open(&model);
    dev.configure(&rxq_conf()).unwrap();
    let err = dev.start(&p).expect_err("a queue without its vector must not start");
    match err.driver_error::<virtio::Error>() {
        Some(virtio::Error::Vector { queue, vector, answer, .. }) => {
            assert_eq!((*queue, *vector, *answer), (0, 1, NO_VECTOR))
        }
        other => panic!("not a vector refusal: {other:?} ({err})"),
    }
    let text = err.to_string();
    for part in ["model0", "virtqueue 0", "queue_msix_vector", "0xffff", "NO_VECTOR", "without intr_conf.rxq"] {
        assert!(text.contains(part), "{part:?} missing from: {text}");
    }
    assert_eq!(model.status(), 0, "the failed start reset the device");
    assert!(p.is_full(), "the failed start gave its buffers back");
    // Polled, the same device works.
    dev.configure(&PortConfig { rx_desc: 64, tx_desc: 64, ..Default::default() }).unwrap();
    dev.start(&p).unwrap();
    let mut rx = dev.rx_queue_typed(0).unwrap();
    assert_eq!(rx.wait_fd(), None);
    model.inject(&frame(5));
    let got = testkit::driver::receive(&mut rx, 1);
    assert_eq!(testkit::driver::bytes(&got.as_slice()[0]), frame(5));
    drop((got, rx));
    dev.stop().unwrap();
    model.assert_clean();
}

#[test]
fn too_few_vectors_or_none_at_all_are_refused_at_configure() {
    let model = VirtioNetModel::new(ModelConfig { msix_vectors: 1, ..Default::default() });
    let mut dev = open(&model);
    let err = dev.configure(&rxq_conf()).expect_err("one vector cannot serve config + RX queue 0").to_string();
    assert!(err.contains("need 2 MSI-X vectors") && err.contains("has 1") && err.contains("vectors=2"), "{err}");

    // A port nobody gave vectors (no IrqSource) does not offer RX interrupts.
    let caps = VirtioNetModel::capabilities();
    let t = Transport::new("model1", &caps, |_| Ok(model.clone())).unwrap();
    let mut bare = VirtioNet::new("model1", t, Allocator::no_huge(), model.iova_map(), None).unwrap();
    let err = bare.configure(&rxq_conf()).expect_err("no vectors").to_string();
    assert!(err.contains("intr_conf.rxq"), "{err}");
}

#[test]
fn a_polled_port_has_no_vectors_and_takes_no_interrupt() {
    let model = VirtioNetModel::new(ModelConfig::default());
    let p = pool("vn-polled");
    let mut dev = open(&model);
    dev.configure(&PortConfig { rx_desc: 64, tx_desc: 64, ..Default::default() }).unwrap();
    dev.start(&p).unwrap();
    assert_eq!((model.queue_vector(0), model.queue_vector(1)), (NO_VECTOR, NO_VECTOR));
    let mut rx = dev.rx_queue_typed(0).unwrap();
    assert_eq!(rx.wait_fd(), None);
    let err = rx.intr_enable().expect_err("nothing to arm");
    assert!(err.to_string().contains("intr_conf.rxq"), "{err}");
    for i in 0..100 {
        model.inject(&frame(i));
    }
    let got = testkit::driver::receive(&mut rx, 64);
    drop(got);
    let _ = testkit::driver::receive(&mut rx, 36);
    assert_eq!((0..3).map(|v| model.interrupts(v)).sum::<u64>(), 0);
    drop(rx);
    dev.stop().unwrap();
    model.assert_clean();
}

#[test]
fn a_link_change_wakes_the_link_descriptor_and_link_reads_it() {
    let model = VirtioNetModel::new(ModelConfig::default());
    let p = pool("vn-lsc");
    let mut dev = open(&model);
    assert!(dev.link_event_fd().is_err(), "no descriptor before start");
    let conf = PortConfig { intr_conf: IntrConf { rxq: true, lsc: true }, ..rxq_conf() };
    dev.configure(&conf).unwrap();
    dev.start(&p).unwrap();
    assert_eq!((model.config_vector(), model.queue_vector(0)), (0, 1), "config on vector 0, RX queue 0 on 1");
    let fd = dev.link_event_fd().expect("a link descriptor with intr_conf.lsc");
    assert!(dev.link().up);
    assert!(!readable(fd, QUIET), "no link change yet");
    model.set_link(false);
    assert!(readable(fd, WAKE), "cable out wakes the link descriptor");
    assert!(!dev.link().up, "link() reads the change");
    assert!(!readable(fd, QUIET), "link() drained the descriptor");
    model.set_link(true);
    assert!(readable(fd, WAKE), "cable in wakes it");
    wait_for(5, "link up", || dev.link().up);
    assert_eq!(model.interrupts(0), 2);
    assert_eq!(model.interrupts(1), 0, "no frame, no RX interrupt");
    dev.stop().unwrap();
    assert!(dev.link_event_fd().is_err(), "no descriptor after stop");

    // LSC alone: one vector, RX queues unmapped; a device without STATUS offers no LSC.
    dev.configure(&PortConfig { intr_conf: IntrConf { rxq: false, lsc: true }, ..rxq_conf() }).unwrap();
    dev.start(&p).unwrap();
    assert_eq!((model.config_vector(), model.queue_vector(0)), (0, NO_VECTOR));
    let rx = dev.rx_queue_typed(0).unwrap();
    assert_eq!(rx.wait_fd(), None);
    drop(rx);
    dev.stop().unwrap();
    model.assert_clean();

    let model =
        VirtioNetModel::new(ModelConfig { features: bits::VERSION_1 | bits::ACCESS_PLATFORM, ..Default::default() });
    let mut dev = open(&model);
    let err = dev.configure(&conf).expect_err("no STATUS, no link events").to_string();
    assert!(err.contains("intr_conf.lsc"), "{err}");
}

#[test]
fn a_device_that_cannot_map_the_config_vector_is_refused_for_lsc() {
    let model = VirtioNetModel::new(ModelConfig { refuse_vectors: true, ..Default::default() });
    let p = pool("vn-lsc-novec");
    let mut dev = open(&model);
    dev.configure(&PortConfig { intr_conf: IntrConf { rxq: false, lsc: true }, ..rxq_conf() }).unwrap();
    let err = dev.start(&p).expect_err("no config vector");
    assert!(
        matches!(err.driver_error::<virtio::Error>(), Some(virtio::Error::ConfigVector { answer: NO_VECTOR, .. })),
        "{err}"
    );
    let text = err.to_string();
    assert!(text.contains("config_msix_vector") && text.contains("without intr_conf.lsc"), "{text}");
    assert!(p.is_full());
    model.assert_clean();
}
