//! nicsim's models served over vfio-user (harness.py --models) behind the guest's vIOMMU and vfio-pci, driven by
//! the project's own drivers. With vfio-user the vIOMMU is QEMU's: it hands the model server only the IOVA ranges
//! the guest mapped (as DMA map messages), so the model's own IOVA map is what refuses a stray buffer.

use std::time::{Duration, Instant};

use mempool::{Mempool, PacketBatch, PoolConfig, DEFAULT_DATA_ROOM};
use pktio::PortConfig;

use crate::frames::{self, PEER_MAC};
use crate::igb_tests::wait_link;
use crate::sys;
use crate::virtio_tests::{check_pool_full, host, send};

type R<T = ()> = Result<T, String>;

/// The X540 model's PCI function (8086:1528) and its NIC name for the host peer.
const X540: (u16, u16) = (0x8086, 0x1528);
const X540_NIC: &str = "x540";

/// `x540-unmapped`: the ixgbe PMD on the X540 model (EAL probe, VFIO, the vIOMMU). A frame from the EAL's pool
/// (mapped by the driver at start) reaches the host; one whose buffer no one mapped does not: the model records
/// a DMA fault at that buffer's IOVA (host check `model-fault`, which waits for it) and nothing reaches the wire
/// (host `expect ... 0`). The driver recovers with a stop/start (the queue re-enabled), and a mapped frame gets
/// through again.
pub fn x540_unmapped() -> R {
    let fns = sys::pci_functions().map_err(|e| format!("sysfs: {e}"))?;
    let f = fns.iter().find(|f| (f.vendor, f.device) == X540).ok_or("no X540 model (8086:1528) in the guest")?;
    let bdf = f.bdf.clone();
    let t0 = Instant::now();
    let (mut eal, _) = eal::init_with(&pmds::registry(), ["-l", "0", "-a", bdf.as_str()])
        .map_err(|e| format!("EAL init -a {bdf}: {e}"))?;
    let pool = eal.pktmbuf_pool("x540-mapped", 1023, 0, DEFAULT_DATA_ROOM).map_err(|e| format!("mempool: {e}"))?;
    // Same allocator, other memory: never handed to the driver, so never mapped for the device.
    let stray = Mempool::new("x540-stray", &PoolConfig { cache_size: 0, ..PoolConfig::with_size(63) }, eal.allocator())
        .map_err(|e| format!("stray mempool: {e}"))?;
    let mut ports = eal.take_ports();
    let mut port = ports.pop().ok_or("the EAL opened no port")?;
    let dev = &mut *port.dev;
    let info = dev.info();
    let mac = dev.mac_addr();
    println!("{}: driver {} MAC {mac}, probed in {:?}", port.name, info.driver_name, t0.elapsed());
    if info.driver_name != "net_ixgbe" {
        return Err(format!("{bdf} was probed by {}, not net_ixgbe", info.driver_name));
    }
    let cfg = PortConfig { rx_desc: 256, tx_desc: 256, ..Default::default() };
    dev.configure(&cfg).map_err(|e| format!("configure: {e}"))?;
    dev.start(&pool).map_err(|e| format!("start: {e}"))?;
    let up = wait_link(dev)?;
    println!("link up after {up:?}");
    let mut tx = dev.tx_queue(0).map_err(|e| format!("tx queue: {e}"))?;
    send(&mut tx, &pool, mac, "x540-mapped", 1, 60)?;
    host(&format!("expect {X540_NIC} 1 x540-mapped 60"));

    let mut m = stray.alloc().ok_or("the stray pool is empty")?;
    let n = frames::build(m.data_room_mut(), PEER_MAC, mac, "x540-stray", 0, 60);
    m.set_len(n as u16);
    let (lo, hi) = (m.data_iova(), m.data_iova() + n as u64);
    println!("stray frame at IOVA {lo:#x}..{hi:#x} (never mapped)");
    let mut batch = PacketBatch::new();
    let _ = batch.push(m);
    let deadline = Instant::now() + Duration::from_secs(10);
    while tx.tx_burst(&mut batch) == 0 {
        if Instant::now() > deadline {
            return Err("the TX ring did not take the stray frame".into());
        }
    }
    // The host waits for the model's fault at that buffer (the proof that it tried), then checks the wire.
    host(&format!("model-fault {X540_NIC} Dma {lo:#x} {hi:#x}"));
    host(&format!("expect {X540_NIC} 0 x540-stray"));

    // Recovery: stop (the stray mbuf comes back with the TX ring) and start again.
    drop(tx);
    dev.stop().map_err(|e| format!("stop: {e}"))?;
    check_pool_full(&stray)?;
    dev.start(&pool).map_err(|e| format!("start again: {e}"))?;
    wait_link(dev)?;
    let mut tx = dev.tx_queue(0).map_err(|e| format!("tx queue: {e}"))?;
    send(&mut tx, &pool, mac, "x540-again", 1, 60)?;
    host(&format!("expect {X540_NIC} 1 x540-again 60"));
    drop(tx);
    dev.stop().map_err(|e| format!("stop: {e}"))?;
    println!("x540-unmapped took {:?}", t0.elapsed());
    check_pool_full(&pool)
}
