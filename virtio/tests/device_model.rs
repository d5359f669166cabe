//! `VirtioNet` driven against a device-side model of a virtio-net PCI function (tests/model), outside any VM:
//! bring-up and feature negotiation, TX and RX byte for byte, ring wrap, counters, and buffers returned on stop.

mod model;

use pktio::TypedQueues;
use std::sync::Arc;

use hugepage::Allocator;
use mempool::{Mempool, PacketBatch, PoolConfig};
use model::{bits, dev_status, ModelConfig, VirtioNetModel};
use pktio::{EthDev, PortConfig, RxQueue, TxQueue};
use virtio::{Transport, VirtioNet};

type Port = VirtioNet<VirtioNetModel>;

/// The driver over `model`: capabilities located, device reset and probed.
fn open(model: &Arc<VirtioNetModel>) -> Result<Port, virtio::Error> {
    let caps = VirtioNetModel::capabilities();
    let mut asked = Vec::new();
    let t = Transport::new("model0", &caps, |n| {
        asked.push(n);
        Ok(model.clone())
    })?;
    assert_eq!(asked, [model::bar::NUMBER], "the one BAR is mapped once");
    VirtioNet::new("model0", t, Allocator::no_huge(), model.iova_map(), None)
}

fn pool(name: &str, size: u32) -> Mempool {
    // No per-lcore cache: `available` is then exact.
    let config = PoolConfig { size, cache_size: 0, ..Default::default() };
    Mempool::new(name, &config, &Allocator::no_huge()).expect("mempool")
}

/// Frame `i` of `len` bytes: distinct addresses, EtherType and payload per frame.
fn frame(i: usize, len: usize) -> Vec<u8> {
    let mut f: Vec<u8> = (0..len).map(|k| (k as u8).wrapping_mul(31).wrapping_add(i as u8)).collect();
    f[0..6].copy_from_slice(&[0x02, 0, 0, 0, (i >> 8) as u8, i as u8]);
    f[6..12].copy_from_slice(&[0x02, 1, 0, 0, (i >> 8) as u8, i as u8]);
    f[12..14].copy_from_slice(&[0x88, 0xb5]);
    f
}

fn lengths(i: usize) -> usize {
    [60, 64, 99, 512, 1000, 1514][i % 6]
}

/// Started port with one queue pair of `desc` descriptors.
fn started(model: &Arc<VirtioNetModel>, pool: &Mempool, desc: u16) -> Port {
    let mut dev = open(model).expect("probe");
    dev.configure(&PortConfig { rx_desc: desc, tx_desc: desc, ..Default::default() }).expect("configure");
    dev.start(pool).expect("start");
    dev
}

/// Sends `frames` in bursts of `burst`, offering again what a full ring did not take (as an application does);
/// returns how many were taken. Fails if the queue stops taking frames.
fn send_all(txq: &mut impl TxQueue, pool: &Mempool, frames: &[Vec<u8>], burst: usize) -> usize {
    let mut sent = 0;
    for chunk in frames.chunks(burst) {
        let mut b = PacketBatch::with_capacity(burst);
        for f in chunk {
            let mut m = pool.alloc().expect("pool has room");
            m.append(f.len() as u16).expect("fits the data room").copy_from_slice(f);
            b.push(m).expect("batch has room");
        }
        let mut stuck = 0;
        while !b.is_empty() {
            let n = txq.tx_burst(&mut b);
            sent += n;
            stuck = if n == 0 { stuck + 1 } else { 0 };
            assert!(stuck < 100, "the TX queue stopped taking frames after {sent}");
        }
    }
    sent
}

/// Receives until `want` frames came or the driver returns nothing `idle_limit` times in a row.
fn receive(rxq: &mut impl RxQueue, want: usize) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    let mut idle = 0;
    let mut b = PacketBatch::with_capacity(32);
    while got.len() < want && idle < 100 {
        if rxq.rx_burst(&mut b) == 0 {
            idle += 1;
            continue;
        }
        idle = 0;
        for m in b.iter() {
            assert_eq!(m.nb_segs(), 1, "without MRG_RXBUF every frame is one buffer");
            got.push(m.data().to_vec());
        }
        b.clear();
    }
    got
}

#[test]
fn bring_up_negotiates_version_1_and_programs_the_queues() {
    let model = VirtioNetModel::new(ModelConfig::default());
    let p = pool("vn-up", 512);
    let mut dev = started(&model, &p, 64);
    let accepted = model.driver_features();
    assert_ne!(accepted & bits::VERSION_1, 0, "VERSION_1 accepted");
    assert_ne!(accepted & bits::ACCESS_PLATFORM, 0, "ACCESS_PLATFORM accepted (IOVA = VA behind an IOMMU)");
    assert_eq!(accepted & !ModelConfig::default().features, 0, "nothing accepted that was not offered");
    assert_eq!(dev.features(), accepted);
    assert_eq!(dev.mac_addr().0, ModelConfig::default().mac);
    assert!(dev.link().up);
    // docs/hw/virtio.md §3.1.1: reset, ACKNOWLEDGE, DRIVER, FEATURES_OK, then DRIVER_OK, each adding to the last.
    let (a, d, f, ok) = (dev_status::ACKNOWLEDGE, dev_status::DRIVER, dev_status::FEATURES_OK, dev_status::DRIVER_OK);
    let writes = model.status_writes();
    let start = writes.iter().rposition(|&w| w == 0).expect("a reset before start");
    assert_eq!(writes[start..], [0, a, a | d, a | d | f, a | d | f | ok], "{writes:?}");
    assert_eq!(model.status(), a | d | f | ok);
    for q in 0..2 {
        let (size, enabled, desc, driver, device) = model.queue_setup(q);
        assert_eq!(size, 64, "queue {q} size");
        assert!(enabled, "queue {q} enabled");
        // docs/hw/virtio.md §2.7: descriptor table of 16-byte entries, then the rings; they must not overlap.
        assert!(
            driver >= desc + 16 * 64 && device >= driver + 6 + 2 * 64,
            "queue {q} layout {desc:#x} {driver:#x} {device:#x}"
        );
    }
    // The queues report what they were set up with: the ring size and the pool given at start.
    let q = dev.rx_queue_info(0).unwrap();
    assert_eq!((q.nb_desc, q.pool.map(|p| p.name)), (64, Some("vn-up".to_string())));
    assert_eq!(dev.tx_queue_info(0).unwrap().nb_desc, 64);
    // RX buffers were posted at start: the model can deliver at once.
    model.inject(&frame(1, 60));
    assert_eq!(model.rx_delivered(), 1);
    let mut rxq = dev.rx_queue_typed(0).unwrap();
    assert_eq!(receive(&mut rxq, 1), [frame(1, 60)]);
    drop(rxq);
    dev.stop().unwrap();
    assert_eq!(model.status(), 0, "stop resets the device");
    model.assert_clean();
}

#[test]
fn a_device_without_version_1_is_refused_with_the_reason() {
    let model = VirtioNetModel::new(ModelConfig { features: bits::NET_MAC | bits::NET_STATUS, ..Default::default() });
    let err = open(&model).expect_err("a legacy-only device must be refused").to_string();
    assert!(err.contains("model0") && err.contains("VERSION_1 not offered") && err.contains("legacy"), "{err}");
    assert!(err.contains("MAC|STATUS"), "the message lists what the device offers: {err}");
    assert_eq!(model.status() & dev_status::FEATURES_OK, 0, "features never confirmed");
}

#[test]
fn a_device_refusing_the_features_and_one_bypassing_the_iommu_are_refused() {
    let model = VirtioNetModel::new(ModelConfig { refuse_features: true, ..Default::default() });
    let err = open(&model).expect_err("FEATURES_OK not kept").to_string();
    assert!(err.contains("device refused features") && err.contains("VERSION_1"), "{err}");

    let model = VirtioNetModel::new(ModelConfig {
        features: bits::VERSION_1 | bits::NET_MAC | bits::NET_STATUS,
        ..Default::default()
    });
    let err = open(&model).expect_err("no ACCESS_PLATFORM under IOVA = VA").to_string();
    assert!(err.contains("ACCESS_PLATFORM not offered") && err.contains("iommu_platform=on"), "{err}");
}

#[test]
fn tx_frames_reach_the_device_byte_for_byte_and_are_counted() {
    let model = VirtioNetModel::new(ModelConfig::default());
    let p = pool("vn-tx", 512);
    let mut dev = started(&model, &p, 64);
    let frames: Vec<Vec<u8>> = (0..40).map(|i| frame(i, lengths(i))).collect();
    let mut txq = dev.tx_queue_typed(0).unwrap();
    assert_eq!(send_all(&mut txq, &p, &frames, 8), frames.len());
    assert_eq!(model.take_sent(), frames);
    assert_eq!(model.notifies(1), 5, "one notification per burst");
    assert_eq!(txq.reclaim(), 40, "every chain came back on the used ring");
    assert_eq!(txq.in_flight(), 0);
    assert_eq!(p.available(), 512 - 64, "every sent buffer is free again; only the 64 posted RX buffers are out");
    drop(txq);
    let st = dev.stats();
    assert_eq!(st.opackets, 40);
    assert_eq!(st.obytes, frames.iter().map(|f| f.len() as u64).sum::<u64>());
    assert_eq!((st.ipackets, st.oerrors), (0, 0));
    dev.stop().unwrap();
    assert_eq!(p.available(), 512, "pool full after stop");
    model.assert_clean();
}

#[test]
fn rx_frames_arrive_byte_for_byte_and_are_counted() {
    let model = VirtioNetModel::new(ModelConfig::default());
    let p = pool("vn-rx", 512);
    let mut dev = started(&model, &p, 64);
    let frames: Vec<Vec<u8>> = (0..30).map(|i| frame(100 + i, lengths(i))).collect();
    for f in &frames {
        model.inject(f);
    }
    assert_eq!(model.rx_delivered(), 30, "64 buffers posted: all delivered at once");
    let mut rxq = dev.rx_queue_typed(0).unwrap();
    assert_eq!(receive(&mut rxq, frames.len()), frames);
    drop(rxq);
    let st = dev.stats();
    assert_eq!(st.ipackets, 30);
    assert_eq!(st.ibytes, frames.iter().map(|f| f.len() as u64).sum::<u64>());
    assert_eq!((st.ierrors, st.imissed, st.rx_nombuf), (0, 0, 0));
    dev.stop().unwrap();
    assert_eq!(p.available(), 512, "pool full after stop (the posted RX buffers too)");
    model.assert_clean();
}

#[test]
fn rings_wrap_many_times_in_both_directions() {
    const RING: u16 = 16;
    const N: usize = 1000;
    let model = VirtioNetModel::new(ModelConfig { queue_size: RING, ..Default::default() });
    let p = pool("vn-wrap", 256);
    let mut dev = started(&model, &p, RING);
    assert_eq!(model.queue_setup(0).0, RING);
    let mut txq = dev.tx_queue_typed(0).unwrap();
    let mut rxq = dev.rx_queue_typed(0).unwrap();
    let out: Vec<Vec<u8>> = (0..N).map(|i| frame(i, lengths(i))).collect();
    let inn: Vec<Vec<u8>> = (0..N).map(|i| frame(N + i, lengths(i + 3))).collect();

    // TX: bursts of 6 into a 16-entry ring, reclaimed as the driver runs short.
    assert_eq!(send_all(&mut txq, &p, &out, 6), N);
    assert_eq!(model.take_sent(), out, "every frame, in order, across {} ring wraps", N / RING as usize);

    // RX: more frames than buffers; the rest are delivered as the driver refills and notifies.
    for f in &inn {
        model.inject(f);
    }
    assert_eq!(model.rx_delivered(), RING as u64, "only the posted buffers filled");
    let got = receive(&mut rxq, N);
    assert_eq!(got.len(), N, "{} frames still waiting in the model", model.rx_pending());
    assert_eq!(got, inn);
    assert!(model.notifies(0) >= (N / RING as usize) as u64, "refills notified the device");

    txq.reclaim();
    drop((txq, rxq));
    let st = dev.stats();
    assert_eq!((st.opackets, st.ipackets), (N as u64, N as u64));
    assert_eq!(st.obytes, out.iter().map(|f| f.len() as u64).sum::<u64>());
    assert_eq!(st.ibytes, inn.iter().map(|f| f.len() as u64).sum::<u64>());
    dev.stop().unwrap();
    assert_eq!(p.available(), 256, "pool full after stop");
    model.assert_clean();
}

#[test]
fn free_running_indexes_wrap_past_65535() {
    // Past 2^16 chains the 16-bit ring indexes wrap; both sides must keep agreeing.
    const N: usize = 70_000;
    let model = VirtioNetModel::new(ModelConfig { queue_size: 32, ..Default::default() });
    let p = pool("vn-idx", 256);
    let mut dev = started(&model, &p, 32);
    let mut txq = dev.tx_queue_typed(0).unwrap();
    let mut rxq = dev.rx_queue_typed(0).unwrap();
    let mut b = PacketBatch::with_capacity(16);
    let mut received = 0usize;
    for i in 0..N {
        let f = frame(i, 60);
        let mut m = p.alloc().expect("pool has room");
        m.append(60).unwrap().copy_from_slice(&f);
        b.push(m).unwrap();
        assert_eq!(txq.tx_burst(&mut b), 1, "frame {i}");
        let sent = model.take_sent();
        assert_eq!(sent, std::slice::from_ref(&f), "TX frame {i}");
        model.inject(&f);
        assert_eq!(rxq.rx_burst(&mut b), 1, "RX frame {i}");
        assert_eq!(b.iter().next().unwrap().data(), &f[..], "RX frame {i}");
        b.clear();
        received += 1;
    }
    assert_eq!(received, N);
    drop((txq, rxq));
    let st = dev.stats();
    assert_eq!((st.opackets, st.ipackets), (N as u64, N as u64));
    dev.stop().unwrap();
    assert_eq!(p.available(), 256);
    model.assert_clean();
}

#[test]
fn unmapped_memory_is_a_fault_not_a_silent_write() {
    // The model reaches only what the driver mapped: a frame sent from a pool the port was never given faults,
    // and the device asks for a reset.
    let model = VirtioNetModel::new(ModelConfig::default());
    let p = pool("vn-mapped", 256);
    let other = pool("vn-unmapped", 64);
    let mut dev = started(&model, &p, 32);
    let mut txq = dev.tx_queue_typed(0).unwrap();
    let mut b = PacketBatch::with_capacity(1);
    let mut m = other.alloc().unwrap();
    m.append(60).unwrap().copy_from_slice(&frame(0, 60));
    b.push(m).unwrap();
    assert_eq!(txq.tx_burst(&mut b), 1);
    assert!(model.take_sent().is_empty());
    assert!(!model.faults().is_empty(), "the model read unmapped memory without a fault");
    assert_ne!(dev.device_status() & dev_status::NEEDS_RESET, 0);
    assert!(!dev.link().up, "a device needing a reset has no link");
    drop(txq);
    dev.stop().unwrap();
    assert_eq!(other.available(), 64, "the unsent buffer came back at stop");
    assert_eq!(p.available(), 256);
}
