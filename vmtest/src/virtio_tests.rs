//! virtio-net through real VFIO with the emulated IOMMU: the project's driver ([`virtio`]) against QEMU's
//! virtio-net-pci, frames exchanged with the host peer on the TAPs.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use drvkit::pci::PciAddress;
use drvkit::vfio::{Vfio, VfioBar, VfioConfig};
use hugepage::{Allocator, DmaConfig};
use mempool::{Mempool, PacketBatch, PoolConfig};
use pktio::{EthDev, MacAddr, PortConfig, RxQueue, TxQueue};
use virtio::{VirtioNet, VirtioRxQueue, VirtioTxQueue};

use crate::frames::{self, PEER_MAC};
use crate::probe::VIRTIO_NET;
use crate::sys;

type R<T = ()> = Result<T, String>;

/// How long the guest waits for what the device does on its own (complete a descriptor, send what it was given):
/// generous, since a loaded host can stall QEMU's I/O thread for a long time; a passing test never waits it out.
pub(crate) const DEVICE_TIMEOUT: Duration = Duration::from_secs(10);

/// Polls `cond` until it holds (returns how long that took) or `timeout` passed (None). No fixed sleeps: the
/// tests wait for the state they need, however slow the host.
pub(crate) fn wait_for(timeout: Duration, mut cond: impl FnMut() -> bool) -> Option<Duration> {
    let t0 = Instant::now();
    loop {
        if cond() {
            return Some(t0.elapsed());
        }
        if t0.elapsed() > timeout {
            return None;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// Waits until the device completed every descriptor of `tx` (reclaiming them); the error says how many remain.
fn drain_tx(tx: &mut VirtioTxQueue<VfioBar>, what: &str) -> R<Duration> {
    wait_for(DEVICE_TIMEOUT, || {
        tx.reclaim();
        tx.in_flight() == 0
    })
    .ok_or_else(|| format!("{what}: {} TX descriptors still in flight after {DEVICE_TIMEOUT:?}", tx.in_flight()))
}

pub(crate) fn host(cmd: &str) {
    println!("@@vmtest {cmd}");
}

/// The virtio-net NICs in address order: vnet0, vnet1 of the harness.
fn virtio_nics() -> R<Vec<PciAddress>> {
    let fns = sys::pci_functions().map_err(|e| format!("sysfs: {e}"))?;
    fns.iter()
        .filter(|f| (f.vendor, f.device) == VIRTIO_NET)
        .map(|f| f.bdf.parse::<PciAddress>().map_err(|e| format!("{}: {e}", f.bdf)))
        .collect()
}

struct Env {
    vfio: Vfio,
    alloc: Allocator,
    nics: Vec<PciAddress>,
}

impl Env {
    fn new() -> R<Env> {
        let alloc = Allocator::new(DmaConfig::default()).map_err(|e| format!("hugepage allocator: {e}"))?;
        Ok(Env { vfio: Vfio::new(VfioConfig::default()), alloc, nics: virtio_nics()? })
    }

    fn pool(&self, name: &str, size: u32) -> R<Mempool> {
        Mempool::new(name, &PoolConfig { cache_size: 0, ..PoolConfig::with_size(size) }, &self.alloc)
            .map_err(|e| format!("mempool {name}: {e}"))
    }

    fn open(&self, i: usize) -> R<VirtioNet<VfioBar>> {
        let addr = *self.nics.get(i).ok_or_else(|| format!("no virtio-net NIC #{i} (found {:?})", self.nics))?;
        let t0 = Instant::now();
        let dev = virtio::open_vfio(&self.vfio, addr, self.alloc.clone()).map_err(|e| format!("open {addr}: {e}"))?;
        println!(
            "{addr}: virtio-net MAC {} device features {} -> negotiated {} (opened in {:?})",
            dev.mac_addr(),
            virtio::regs::feature::names(dev.device_features()).join("|"),
            virtio::regs::feature::names(dev.features()).join("|"),
            t0.elapsed()
        );
        Ok(dev)
    }
}

fn start(dev: &mut VirtioNet<VfioBar>, pool: &Mempool) -> R<(VirtioRxQueue<VfioBar>, VirtioTxQueue<VfioBar>)> {
    let info = dev.info();
    let cfg = PortConfig { rx_desc: 256, tx_desc: 256, ..Default::default() };
    dev.configure(&cfg).map_err(|e| format!("configure: {e}"))?;
    dev.start(pool).map_err(|e| format!("start: {e}"))?;
    let link = dev.link();
    println!(
        "{}: started, link {} {} Mb/s, queue sizes rx {} tx {} (device max {})",
        info.device_name,
        if link.up { "up" } else { "down" },
        link.speed_mbps,
        dev.config().rx_desc,
        dev.config().tx_desc,
        info.rx_desc_lim.max
    );
    if !link.up {
        return Err("link down after start".into());
    }
    let rx = dev.rx_queue_typed(0).map_err(|e| format!("rx queue: {e}"))?;
    let tx = dev.tx_queue_typed(0).map_err(|e| format!("tx queue: {e}"))?;
    Ok((rx, tx))
}

/// Sends `count` tagged frames of `size` bytes from `pool`.
pub(crate) fn send(tx: &mut impl TxQueue, pool: &Mempool, src: MacAddr, tag: &str, count: u32, size: usize) -> R {
    let mut batch = PacketBatch::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seq = 0;
    while seq < count || !batch.is_empty() {
        while seq < count && !batch.is_full() {
            let mut m = pool.alloc().ok_or("pool empty")?;
            let n = frames::build(m.data_room_mut(), PEER_MAC, src, tag, seq, size);
            m.set_len(n as u16);
            let _ = batch.push(m);
            seq += 1;
        }
        tx.tx_burst(&mut batch);
        if Instant::now() > deadline {
            return Err(format!("TX of {count} frames tagged {tag} stuck ({} unsent)", batch.len()));
        }
    }
    Ok(())
}

/// Receives until `count` frames tagged `tag` arrived (others are counted and dropped); returns (seq, frame).
pub(crate) fn recv_frames(rx: &mut impl RxQueue, tag: &str, count: usize, timeout: Duration) -> R<Vec<(u32, Vec<u8>)>> {
    let mut batch = PacketBatch::new();
    let deadline = Instant::now() + timeout;
    let (mut got, mut other) = (Vec::new(), 0);
    while got.len() < count {
        if rx.rx_burst(&mut batch) == 0 {
            if Instant::now() > deadline {
                return Err(format!("received {} of {count} frames tagged {tag} ({other} others)", got.len()));
            }
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        for m in batch.iter() {
            let mut buf = vec![0u8; m.pkt_len() as usize];
            m.copy_to(&mut buf);
            match frames::parse(&buf) {
                Some((t, s)) if t == tag => got.push((s, buf)),
                _ => other += 1,
            }
        }
        batch.clear();
    }
    Ok(got)
}

/// [`recv_frames`], keeping only each frame's sequence number and length.
fn recv(rx: &mut impl RxQueue, tag: &str, count: usize, timeout: Duration) -> R<(Vec<u32>, Vec<usize>)> {
    let frames = recv_frames(rx, tag, count, timeout)?;
    Ok(frames.into_iter().map(|(seq, buf)| (seq, buf.len())).unzip())
}

pub(crate) fn check_seqs(seqs: &[u32], count: u32, what: &str) -> R {
    let set: BTreeSet<u32> = seqs.iter().copied().collect();
    if set.len() != count as usize || set != (0..count).collect() {
        return Err(format!("{what}: sequence numbers {seqs:?}, expected 0..{count}"));
    }
    Ok(())
}

pub(crate) fn check_pool_full(pool: &Mempool) -> R {
    if !pool.is_full() {
        return Err(format!("pool {} leaks: {} of {} buffers available", pool.name(), pool.available(), pool.size()));
    }
    Ok(())
}

/// `virtio-exchange`: bring-up, frames both ways with the host peer on vnet0, a full-size frame each way,
/// counters, and a full pool after stop.
pub fn exchange() -> R {
    let env = Env::new()?;
    let pool = env.pool("xchg", 1023)?;
    let mut dev = env.open(0)?;
    let (mut rx, mut tx) = start(&mut dev, &pool)?;
    let mac = dev.mac_addr();
    send(&mut tx, &pool, mac, "g2h", 8, 60)?;
    send(&mut tx, &pool, mac, "g2h-big", 1, 1514)?;
    drain_tx(&mut tx, "g2h")?;
    host("expect vnet0 8 g2h");
    host("expect vnet0 1 g2h-big");
    host("inject vnet0 8 h2g");
    let (seqs, _) = recv(&mut rx, "h2g", 8, Duration::from_secs(20))?;
    check_seqs(&seqs, 8, "h2g")?;
    host("inject vnet0 1 h2g-big 1514");
    let (_, lens) = recv(&mut rx, "h2g-big", 1, Duration::from_secs(20))?;
    if lens != [1514] {
        return Err(format!("full-size frame arrived with {lens:?} bytes, 1514 expected"));
    }
    tx.reclaim();
    let st = dev.stats();
    println!(
        "stats: ipackets {} ibytes {} opackets {} obytes {} ierrors {}",
        st.ipackets, st.ibytes, st.opackets, st.obytes, st.ierrors
    );
    if st.opackets != 9 || st.obytes != 8 * 60 + 1514 || st.ipackets < 9 || st.ierrors != 0 {
        return Err(format!("counters: {st:?}"));
    }
    drop((rx, tx));
    dev.stop().map_err(|e| format!("stop: {e}"))?;
    check_pool_full(&pool)
}

/// `virtio-fwd`: io forwarding vnet0 -> vnet1 (host injects N on vnet0's TAP, expects N on vnet1's), counters agree.
pub fn forward() -> R {
    const N: u32 = 400;
    let env = Env::new()?;
    let pool = env.pool("fwd", 2047)?;
    let mut d0 = env.open(0)?;
    let mut d1 = env.open(1)?;
    let (mut rx0, tx0) = start(&mut d0, &pool)?;
    let (rx1, mut tx1) = start(&mut d1, &pool)?;
    host(&format!("inject vnet0 {N} fwd"));
    let mut batch = PacketBatch::new();
    let mut fwd = 0u64;
    let mut tagged = 0u32;
    let mut dropped = 0usize;
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(30);
    while tagged < N && Instant::now() < deadline {
        let n = rx0.rx_burst(&mut batch);
        if n == 0 {
            continue;
        }
        tagged += batch.iter().filter(|m| frames::parse(m.data()).is_some_and(|(t, _)| t == "fwd")).count() as u32;
        // A full TX ring only means QEMU's I/O thread has not caught up yet (a loaded host): wait for room, don't
        // count a drop after a fixed number of tries.
        let stuck = Instant::now() + DEVICE_TIMEOUT;
        while !batch.is_empty() && Instant::now() < stuck {
            fwd += tx1.tx_burst(&mut batch) as u64;
        }
        dropped += batch.len();
        batch.clear();
    }
    let el = t0.elapsed();
    println!("forwarded {fwd} frames ({tagged} tagged fwd, {dropped} dropped) in {el:?}");
    // The host counts once the device sent the last ones.
    let drained = drain_tx(&mut tx1, "vnet1 after forwarding");
    host(&format!("expect vnet1 {N} fwd"));
    let (s0, s1) = (d0.stats(), d1.stats());
    println!(
        "port0: ipackets {} opackets {}; port1: ipackets {} opackets {}",
        s0.ipackets, s0.opackets, s1.ipackets, s1.opackets
    );
    if tagged != N || dropped != 0 {
        return Err(format!(
            "{tagged} of {N} frames forwarded, {dropped} dropped; port0 {s0:?}; port1 {s1:?}; {} TX in flight",
            tx1.in_flight()
        ));
    }
    drained?;
    if s0.ipackets != N as u64 || s1.opackets != N as u64 || s0.opackets != 0 {
        return Err(format!(
            "counters disagree: port0 in {} out {}, port1 out {}",
            s0.ipackets, s0.opackets, s1.opackets
        ));
    }
    drop((rx0, tx0, rx1, tx1));
    d0.stop().map_err(|e| format!("stop: {e}"))?;
    d1.stop().map_err(|e| format!("stop: {e}"))?;
    check_pool_full(&pool)
}

/// The guest kernel's report of a blocked DMA: `DMAR: [DMA Read ...] Request device [00:04.0] fault addr 0x...`.
/// Returns the faulting device (`bus:dev.fn`) and the page address.
fn dmar_fault(msg: &str) -> Option<(&str, u64)> {
    let dev = msg.split_once("Request device [")?.1.split_once(']')?.0;
    let addr = msg.split_once("fault addr 0x")?.1.split(|c: char| !c.is_ascii_hexdigit()).next()?;
    Some((dev, u64::from_str_radix(addr, 16).ok()?))
}

/// `virtio-unmapped`: a frame whose buffer the IOMMU does not map must not leave (the host checks), while a
/// mapped one does. The device must have tried: it completes the descriptor (or flags DEVICE_NEEDS_RESET) and the
/// vIOMMU raises a DMA read fault for this NIC at the stray buffer's address. The driver then recovers with a
/// stop/start (device reset).
pub fn unmapped() -> R {
    let env = Env::new()?;
    let pool = env.pool("mapped", 511)?;
    let stray = env.pool("unmapped", 63)?; // never mapped for the device
    let mut dev = env.open(1)?;
    let bdf = env.nics[1].to_string();
    let (rx, mut tx) = start(&mut dev, &pool)?;
    let mac = dev.mac_addr();
    send(&mut tx, &pool, mac, "mapped", 1, 60)?;
    drain_tx(&mut tx, "the mapped frame")?;
    host("expect vnet1 1 mapped");
    let mut klog = sys::KernelLog::from_now().map_err(|e| format!("/dev/kmsg: {e}"))?;
    let mut m = stray.alloc().ok_or("the unmapped pool is empty")?;
    let n = frames::build(m.data_room_mut(), PEER_MAC, mac, "unmapped", 0, 60);
    m.set_len(n as u16);
    // Where the device reads (the header in the headroom, the data). The vIOMMU reports the start of the region
    // whose translation failed: a 4 KiB, 2 MiB or 1 GiB page, by the page-table level that had no entry.
    let reads = [m.buf_iova(), m.data_iova(), m.data_iova() + n as u64 - 1];
    let in_stray = move |a: u64| reads.iter().any(|&r| [12, 21, 30].iter().any(|&b| a == r & !((1u64 << b) - 1)));
    let mut batch = PacketBatch::new();
    let _ = batch.push(m);
    if tx.tx_burst(&mut batch) != 1 {
        return Err("the TX ring did not take the unmapped frame".into());
    }
    // Wait until the device is done with the descriptor: completed (QEMU's behaviour: the translation fails, the
    // frame is dropped, the descriptor is used) or the device flags DEVICE_NEEDS_RESET. Only then does the host's
    // "nothing arrived" mean something (QEMU writes a frame to the TAP before it marks the descriptor used).
    let mut done = 0;
    let needs_reset = |dev: &VirtioNet<VfioBar>| dev.device_status() & virtio::regs::status::DEVICE_NEEDS_RESET != 0;
    let settled = wait_for(DEVICE_TIMEOUT, || {
        done += tx.reclaim();
        tx.in_flight() == 0 || needs_reset(&dev)
    });
    // The proof that the device did attempt the DMA: the vIOMMU's fault for this NIC inside the stray buffer, which
    // the guest kernel logs (the fault interrupt may come after the completion: wait for it).
    let this_nic = bdf.strip_prefix("0000:").unwrap_or(&bdf).to_string();
    let mut dmar = Vec::new();
    let fault = wait_for(DEVICE_TIMEOUT, || {
        dmar.extend(klog.new_messages().into_iter().filter(|m| m.contains("DMAR")));
        dmar.iter().filter_map(|m| dmar_fault(m)).any(|(d, a)| d == this_nic && in_stray(a))
    });
    let status = dev.device_status();
    let state = format!(
        "{done} completions reclaimed, {} descriptors in flight, device status {status:#x}{}",
        tx.in_flight(),
        if needs_reset(&dev) { " (DEVICE_NEEDS_RESET)" } else { "" }
    );
    for m in &dmar {
        println!("kernel: {m}");
    }
    match settled {
        Some(t) => println!("after the unmapped TX ({t:?}): {state}"),
        None => {
            return Err(format!(
                "the device neither completed the unmapped TX nor flagged DEVICE_NEEDS_RESET within \
                 {DEVICE_TIMEOUT:?}: {state}; kernel DMAR messages {dmar:?}"
            ))
        }
    }
    match fault {
        Some(t) => println!("DMA read fault of {this_nic} at the unmapped buffer {reads:x?} reported after {t:?}"),
        None => {
            return Err(format!(
                "no DMAR fault of {this_nic} at the unmapped buffer {reads:x?} within {DEVICE_TIMEOUT:?} (kernel \
                 DMAR messages {dmar:?}): the device did not attempt the DMA, or the IOMMU did not block it"
            ))
        }
    }
    host("expect vnet1 0 unmapped");
    // Recovery: stop (device reset, buffers freed) and start again.
    drop((rx, tx, batch));
    dev.stop().map_err(|e| format!("stop: {e}"))?;
    check_pool_full(&stray)?;
    let (rx, mut tx) = start(&mut dev, &pool)?;
    send(&mut tx, &pool, mac, "recovered", 1, 60)?;
    let sent = drain_tx(&mut tx, "the frame after the reset");
    host("expect vnet1 1 recovered");
    sent?;
    drop((rx, tx));
    dev.stop().map_err(|e| format!("stop: {e}"))?;
    check_pool_full(&pool)
}

/// `virtio-mq`: vnet1 (a 2-queue TAP, `mq=on`) with 2 queue pairs, enabled through the control queue: frames
/// sent on each TX queue reach the host, frames the host injects arrive on the RX queues.
pub fn multiqueue() -> R {
    let env = Env::new()?;
    let pool = env.pool("mq", 1023)?;
    let mut dev = env.open(1)?;
    let info = dev.info();
    println!("max queue pairs {}", info.max_rx_queues);
    if info.max_rx_queues < 2 {
        return Err(format!("the device offers {} queue pairs (MQ not negotiated?)", info.max_rx_queues));
    }
    let cfg = PortConfig { rx_queues: 2, tx_queues: 2, rx_desc: 128, tx_desc: 128, ..Default::default() };
    dev.configure(&cfg).map_err(|e| format!("configure: {e}"))?;
    dev.start(&pool).map_err(|e| format!("start: {e}"))?;
    let mac = dev.mac_addr();
    let mut rxs = Vec::new();
    for q in 0..2 {
        let mut tx = dev.tx_queue_typed(q).map_err(|e| format!("tx queue {q}: {e}"))?;
        send(&mut tx, &pool, mac, &format!("mq-q{q}"), 4, 60)?;
        host(&format!("expect vnet1 4 mq-q{q}"));
        rxs.push(dev.rx_queue_typed(q).map_err(|e| format!("rx queue {q}: {e}"))?);
    }
    host("inject vnet1 8 mq-rx");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut per_queue = [0usize; 2];
    let mut batch = PacketBatch::new();
    while per_queue.iter().sum::<usize>() < 8 && Instant::now() < deadline {
        for (q, rx) in rxs.iter_mut().enumerate() {
            rx.rx_burst(&mut batch);
            per_queue[q] += batch.iter().filter(|m| frames::parse(m.data()).is_some_and(|(t, _)| t == "mq-rx")).count();
            batch.clear();
        }
    }
    println!("received per RX queue: {per_queue:?}");
    if per_queue.iter().sum::<usize>() != 8 {
        return Err(format!("received {per_queue:?} of 8 frames"));
    }
    let st = dev.stats();
    println!("per-queue opackets {:?} ipackets {:?}", st.q_opackets, st.q_ipackets);
    if st.q_opackets.first() != Some(&4) || st.q_opackets.get(1) != Some(&4) {
        return Err(format!("per-queue TX counters {:?}", st.q_opackets));
    }
    drop(rxs);
    dev.stop().map_err(|e| format!("stop: {e}"))?;
    check_pool_full(&pool)
}
