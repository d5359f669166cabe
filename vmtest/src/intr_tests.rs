//! RX interrupts (DPDK's RX-interrupt API) of our drivers on the vfio-user models through the guest's vfio-pci and
//! vIOMMU: the driver's queue vector is a VFIO MSI-X eventfd of the guest's kernel (VFIO_DEVICE_SET_IRQS), which
//! QEMU's vfio-user client signals when the model server writes the model's MSI-X message. So a wake-up here is
//! the whole chain: the model's cause and mask logic, the server, QEMU's MSI-X table, the guest's vfio-pci.
//!
//! `virtio-rx-intr` runs the same sequence on QEMU's own virtio-net-pci (vnet0, frames from the host peer on its
//! TAP): the vector is mapped through `queue_msix_vector`, the suppression is the available ring's (NO_INTERRUPT or
//! `used_event`), and QEMU's virtio-pci sends the MSI-X message.

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use drvkit::irq::poll_readable;
use mempool::{PacketBatch, DEFAULT_DATA_ROOM};
use pktio::{IntrConf, MacAddr, PortConfig, RxQueue};

use crate::frames::{self, PEER_MAC};
use crate::igb_tests::wait_link;
use crate::sys;
use crate::virtio_tests::{check_pool_full, host};

type R<T = ()> = Result<T, String>;

/// How long a wake-up may take: the host's injection, the model, QEMU and the guest's kernel on a loaded TCG host.
const WAKE: Duration = Duration::from_secs(20);
/// How long a descriptor is watched for a wake-up that must not come.
const QUIET: Duration = Duration::from_millis(500);

/// One model under test: its PCI IDs, its NIC name for the host peer, the PMD that must probe it, whether the host
/// can pull its cable (the models' `model-cable`; QEMU's virtio-net has no such marker), and whether the device may
/// interrupt for its first used entry whatever the suppression says (QEMU's virtio-pci with EVENT_IDX notifies the
/// first used-ring update after a reset unconditionally, a spurious interrupt the spec allows), so that a frame is
/// taken, polled, before the first arm: else that spurious interrupt, not the arming, would wake the armed queue.
struct Model {
    id: (u16, u16),
    nic: &'static str,
    driver: &'static str,
    cable: bool,
    first_used_interrupts: bool,
}

const X540: Model =
    Model { id: (0x8086, 0x1528), nic: "x540", driver: "net_ixgbe", cable: true, first_used_interrupts: false };
const X710: Model =
    Model { id: (0x8086, 0x1572), nic: "x710", driver: "net_i40e", cable: true, first_used_interrupts: false };
const SP670: Model =
    Model { id: (0x19e5, 0x0222), nic: "sp670", driver: "net_hinic3", cable: true, first_used_interrupts: false };
/// QEMU's virtio-net-pci vnet0 (the first virtio-net function); `intr_conf.lsc` on the configuration vector.
const VNET0: Model = Model {
    id: crate::probe::VIRTIO_NET,
    nic: "vnet0",
    driver: "net_virtio",
    cable: false,
    first_used_interrupts: true,
};

/// `x540-rx-intr`: ixgbe's RX interrupt on the X540 model (EIMS/EIAM, IVAR, the MSI-X vector of queue 0).
pub fn x540() -> R {
    rx_intr(&X540)
}

/// `x710-rx-intr`: i40e's RX interrupt on the X710 model (PFINT_DYN_CTLN, QINT_RQCTL).
pub fn x710() -> R {
    rx_intr(&X710)
}

/// `sp670-rx-intr`: hinic3's RX interrupt on the SP670 model (its MSI-X table in BAR2).
pub fn sp670() -> R {
    rx_intr(&SP670)
}

/// The host pulls the cable: the link-event descriptor wakes, `link()` reads the link down and the descriptor is
/// quiet again; the cable back in wakes it and the link comes up.
fn cable_out_and_in(dev: &mut dyn pktio::EthDev, lfd: RawFd, nic: &str) -> R {
    host(&format!("model-cable {nic} 0"));
    let t = Instant::now();
    if !readable(lfd, WAKE)? {
        return Err(format!("cable out: the link-event descriptor did not wake within {WAKE:?}"));
    }
    println!("cable out: link-event descriptor {lfd} woke after {:?}", t.elapsed());
    let t = Instant::now();
    while dev.link().up {
        if t.elapsed() > WAKE {
            return Err("cable out: link() still says up".into());
        }
        std::thread::yield_now();
    }
    if readable(lfd, QUIET)? {
        return Err("the link-event descriptor stays readable after link() read the change".into());
    }
    host(&format!("model-cable {nic} 1"));
    let t = Instant::now();
    if !readable(lfd, WAKE)? {
        return Err(format!("cable in: the link-event descriptor did not wake within {WAKE:?}"));
    }
    let up = wait_link(dev)?;
    println!("cable in: woke after {:?}, link up after {up:?}", t.elapsed());
    Ok(())
}

/// `virtio-rx-intr`: our virtio PMD's RX interrupt on QEMU's virtio-net-pci (queue 0 on MSI-X vector 1).
pub fn virtio() -> R {
    rx_intr(&VNET0)
}

fn readable(fd: RawFd, within: Duration) -> R<bool> {
    poll_readable(fd, within).map_err(|e| format!("poll({fd}): {e}"))
}

/// Polls the queue until one frame tagged `tag` arrived (bounded); checks it byte for byte against what the host
/// injected (seq 0, 60 bytes, to `mac`). Frames with other tags are counted and refused: only the host talks.
fn receive_one(rx: &mut dyn RxQueue, mac: MacAddr, tag: &str) -> R {
    let mut batch = PacketBatch::new();
    let deadline = Instant::now() + WAKE;
    let mut got: Vec<Vec<u8>> = Vec::new();
    while got.is_empty() {
        if rx.rx_burst(&mut batch) == 0 {
            if Instant::now() > deadline {
                return Err(format!("no frame tagged {tag} on rx_burst within {WAKE:?}"));
            }
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        for m in batch.iter() {
            let mut buf = vec![0u8; m.pkt_len() as usize];
            m.copy_to(&mut buf);
            got.push(buf);
        }
        batch.clear();
    }
    if got.len() != 1 {
        return Err(format!("{} frames on rx_burst, one ({tag}) expected", got.len()));
    }
    if let Some(why) = frames::mismatch(&got[0], mac, PEER_MAC, tag, 0, 60) {
        return Err(format!("host frame {why}"));
    }
    Ok(())
}

/// The test for one model: EAL probe by `-a BDF`, configure with `intr_conf.rxq` and `intr_conf.lsc`, start, link
/// up. The link-event descriptor is quiet after `link()`; where the host can pull the cable it does: the descriptor
/// wakes, `link()` reads the link down and it is quiet again; the cable back in wakes it again and the link comes
/// up. Armed with nothing sent, queue 0's descriptor stays quiet; a frame the host injects makes
/// it readable (within a deadline) and rx_burst returns it byte for byte. Re-arming drains the signal; disarmed, a
/// second injected frame arrives on rx_burst while the descriptor stays quiet. The pool is full after stop.
fn rx_intr(model: &Model) -> R {
    let fns = sys::pci_functions().map_err(|e| format!("sysfs: {e}"))?;
    let f = fns
        .iter()
        .find(|f| (f.vendor, f.device) == model.id)
        .ok_or_else(|| format!("no {} model ({:04x}:{:04x}) in the guest", model.nic, model.id.0, model.id.1))?;
    let bdf = f.bdf.clone();
    let t0 = Instant::now();
    let (mut eal, _) = eal::init_with(&pmds::registry(), ["-l", "0", "-a", bdf.as_str()])
        .map_err(|e| format!("EAL init -a {bdf}: {e}"))?;
    let name = format!("{}-intr", model.nic);
    let pool = eal.pktmbuf_pool(&name, 1023, 0, DEFAULT_DATA_ROOM).map_err(|e| format!("mempool: {e}"))?;
    let mut ports = eal.take_ports();
    let mut port = ports.pop().ok_or("the EAL opened no port")?;
    let dev = &mut *port.dev;
    let driver = dev.info().driver_name;
    let mac = dev.mac_addr();
    println!("{}: driver {driver} MAC {mac}, probed in {:?}", port.name, t0.elapsed());
    if driver != model.driver {
        return Err(format!("{bdf} was probed by {driver}, not {}", model.driver));
    }
    let intr_conf = IntrConf { rxq: true, lsc: true };
    let cfg = PortConfig { rx_desc: 256, tx_desc: 256, intr_conf, ..Default::default() };
    dev.configure(&cfg).map_err(|e| format!("configure with {intr_conf:?}: {e}"))?;
    dev.start(&pool).map_err(|e| format!("start: {e}"))?;
    let up = wait_link(dev)?;
    println!("link up after {up:?}");
    let lfd = dev.link_event_fd().map_err(|e| format!("link_event_fd with intr_conf.lsc: {e}"))?;
    let _ = dev.link(); // acknowledges the bring-up's change
    if readable(lfd, QUIET)? {
        return Err("the link-event descriptor is readable with no change since the last link()".into());
    }
    if model.cable {
        let flap = cable_out_and_in(dev, lfd, model.nic);
        host(&format!("model-cable {} 1", model.nic)); // in again whatever happened, for the tests after this one
        flap?;
    } else {
        println!("link-event descriptor {lfd}: quiet after link() (the host has no marker to flap this link)");
    }

    let mut rx = dev.rx_queue(0).map_err(|e| format!("rx queue: {e}"))?;
    let fd = rx.wait_fd().ok_or("queue 0 has no wait_fd with intr_conf.rxq")?;
    if model.first_used_interrupts {
        let tag = format!("{}-first", model.nic);
        host(&format!("inject {} 1 {tag}", model.nic));
        receive_one(&mut *rx, mac, &tag)?;
        println!("first frame taken polled (its spurious interrupt, if any, is drained by the arm)");
    }
    rx.intr_enable().map_err(|e| format!("intr_enable: {e}"))?;
    if readable(fd, QUIET)? {
        return Err(format!("armed, nothing injected: queue 0's descriptor became readable within {QUIET:?}"));
    }
    let tag = format!("{}-wake", model.nic);
    host(&format!("inject {} 1 {tag}", model.nic));
    let t = Instant::now();
    if !readable(fd, WAKE)? {
        return Err(format!("armed, a frame injected: queue 0's descriptor not readable within {WAKE:?}"));
    }
    println!("woken {:?} after asking the host to inject", t.elapsed());
    rx.intr_disable().map_err(|e| format!("intr_disable: {e}"))?;
    receive_one(&mut *rx, mac, &tag)?;

    // Armed again (drains the old signal), then disarmed: the next frame must not signal.
    rx.intr_enable().map_err(|e| format!("intr_enable again: {e}"))?;
    rx.intr_disable().map_err(|e| format!("intr_disable again: {e}"))?;
    if readable(fd, Duration::ZERO)? {
        return Err("intr_enable did not drain the descriptor's old signal".into());
    }
    let tag = format!("{}-quiet", model.nic);
    host(&format!("inject {} 1 {tag}", model.nic));
    receive_one(&mut *rx, mac, &tag)?;
    if readable(fd, QUIET)? {
        return Err("disarmed, a frame arrived: queue 0's descriptor became readable".into());
    }
    println!("disarmed: the frame was on rx_burst, the descriptor stayed quiet for {QUIET:?}");

    drop(rx);
    dev.stop().map_err(|e| format!("stop: {e}"))?;
    println!("{}-rx-intr took {:?}", model.nic, t0.elapsed());
    check_pool_full(&pool)
}
