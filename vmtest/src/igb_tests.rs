//! igb (QEMU's 82576 model) through real VFIO with the emulated IOMMU: the ixgbe crate's igb variant, opened the
//! way applications open it (the EAL's PCI probe, `-a BDF`), exchanging frames with the host peer on igb0's TAP.

use std::time::{Duration, Instant};

use drvkit::pci::PciAddress;
use mempool::DEFAULT_DATA_ROOM;
use pktio::{EthDev, MacAddr, PortConfig};

use crate::frames::{self, PEER_MAC};
use crate::probe::IGB;
use crate::sys;
use crate::virtio_tests::{check_pool_full, check_seqs, host, recv_frames, send};

type R<T = ()> = Result<T, String>;

/// igb0's MAC as the harness gives it to QEMU (tests/vm/harness.py, NICS).
const IGB0_MAC: MacAddr = MacAddr([0x52, 0x54, 0x00, 0x00, 0x00, 0x20]);

/// QEMU's PHY auto-negotiation takes ~500 ms of virtual time; allow for a slow, loaded TCG host.
const LINK_TIMEOUT: Duration = Duration::from_secs(20);

/// The igb NIC of the harness (igb0).
pub fn igb_nic() -> R<PciAddress> {
    let fns = sys::pci_functions().map_err(|e| format!("sysfs: {e}"))?;
    let f = fns.iter().find(|f| (f.vendor, f.device) == IGB).ok_or("no igb (8086:10c9) in the guest")?;
    f.bdf.parse::<PciAddress>().map_err(|e| format!("{}: {e}", f.bdf))
}

/// Polls the link until it is up; returns how long that took.
pub fn wait_link(dev: &dyn EthDev) -> R<Duration> {
    let t0 = Instant::now();
    loop {
        if dev.link().up {
            return Ok(t0.elapsed());
        }
        if t0.elapsed() > LINK_TIMEOUT {
            return Err(format!("link still down {LINK_TIMEOUT:?} after start"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Checks the frames the host injected (to `mac`, `size` bytes each) byte for byte.
fn check_frames(got: &[(u32, Vec<u8>)], mac: MacAddr, tag: &str, count: u32, size: usize) -> R {
    let seqs: Vec<u32> = got.iter().map(|(s, _)| *s).collect();
    check_seqs(&seqs, count, tag)?;
    for (seq, f) in got {
        if let Some(why) = frames::mismatch(f, mac, PEER_MAC, tag, *seq, size) {
            return Err(format!("host frame {why}"));
        }
    }
    println!("{count} frames tagged {tag} arrived, {size} bytes each, byte for byte as the host sent them");
    Ok(())
}

fn xstat(dev: &dyn EthDev, name: &str) -> Option<u64> {
    dev.xstats().into_iter().find(|x| x.name == name).map(|x| x.value)
}

/// `igb-exchange`: the EAL probes the igb (`-a BDF`, net_igb, VFIO with the vIOMMU); bring-up, link, MAC, one
/// queue pair; 8 small frames and one 1514-byte frame each way with the host peer, checked byte for byte at the
/// far end; port counters (software and the clear-on-read hardware ones) agree; the pool is full after stop.
pub fn exchange() -> R {
    let addr = igb_nic()?;
    let t0 = Instant::now();
    let bdf = addr.to_string();
    let (mut eal, _) = eal::init_with(&pmds::registry(), ["-l", "0", "-a", bdf.as_str()])
        .map_err(|e| format!("EAL init -a {bdf}: {e}"))?;
    let pool = eal.pktmbuf_pool("igb-xchg", 1023, 0, DEFAULT_DATA_ROOM).map_err(|e| format!("mempool: {e}"))?;
    let mut ports = eal.take_ports();
    let mut port = ports.pop().ok_or("the EAL opened no port")?;
    let dev = &mut *port.dev;
    let info = dev.info();
    let mac = dev.mac_addr();
    println!("{}: driver {} MAC {mac}, probed in {:?}", port.name, info.driver_name, t0.elapsed());
    if info.driver_name != "net_igb" {
        return Err(format!("{bdf} was probed by {}, not net_igb", info.driver_name));
    }
    if mac != IGB0_MAC {
        return Err(format!("MAC {mac} read from RAL/RAH(0), the harness gave {IGB0_MAC}"));
    }
    dev.configure(&PortConfig { rx_desc: 256, tx_desc: 256, ..Default::default() })
        .map_err(|e| format!("configure: {e}"))?;
    dev.start(&pool).map_err(|e| format!("start: {e}"))?;
    let up_after = wait_link(dev)?;
    let link = dev.link();
    println!("link up {} Mb/s full duplex {} after {up_after:?}", link.speed_mbps, link.full_duplex);
    let mut rx = dev.rx_queue(0).map_err(|e| format!("rx queue: {e}"))?;
    let mut tx = dev.tx_queue(0).map_err(|e| format!("tx queue: {e}"))?;

    // Guest -> host: the host checks every frame byte for byte.
    send(&mut tx, &pool, mac, "igb-g2h", 8, 60)?;
    send(&mut tx, &pool, mac, "igb-g2h-big", 1, 1514)?;
    host("expect igb0 8 igb-g2h 60");
    host("expect igb0 1 igb-g2h-big 1514");

    // Host -> guest.
    host("inject igb0 8 igb-h2g");
    let got = recv_frames(&mut rx, "igb-h2g", 8, Duration::from_secs(20))?;
    check_frames(&got, mac, "igb-h2g", 8, 60)?;
    host("inject igb0 1 igb-h2g-big 1514");
    let got = recv_frames(&mut rx, "igb-h2g-big", 1, Duration::from_secs(20))?;
    check_frames(&got, mac, "igb-h2g-big", 1, 1514)?;

    let st = dev.stats();
    let (hw_rx, hw_tx) = (xstat(dev, "rx_good_packets_hw"), xstat(dev, "tx_good_packets_hw"));
    println!(
        "stats: ipackets {} ibytes {} opackets {} obytes {} ierrors {} imissed {} rx_nombuf {}; \
         hardware GPRC {hw_rx:?} GPTC {hw_tx:?}",
        st.ipackets, st.ibytes, st.opackets, st.obytes, st.ierrors, st.imissed, st.rx_nombuf
    );
    if st.opackets != 9 || st.obytes != 8 * 60 + 1514 {
        return Err(format!(
            "TX counters: {} packets {} bytes, 9 and {} expected",
            st.opackets,
            st.obytes,
            8 * 60 + 1514
        ));
    }
    // Only the host peer talks on the TAP (IPv6 is off in its namespace): exactly what it injected arrives.
    if st.ipackets != 9 || st.ibytes != 8 * 60 + 1514 || st.ierrors != 0 || st.imissed != 0 {
        return Err(format!("RX counters: {st:?}"));
    }
    if hw_tx != Some(9) || hw_rx != Some(9) {
        return Err(format!("hardware counters: GPRC {hw_rx:?} GPTC {hw_tx:?}, 9 and 9 expected"));
    }
    drop((rx, tx));
    dev.stop().map_err(|e| format!("stop: {e}"))?;
    println!("igb-exchange took {:?}", t0.elapsed());
    check_pool_full(&pool)
}
