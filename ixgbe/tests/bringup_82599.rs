//! The driver's 82599 path against the model's 82599 variant (docs/hw/ixgbe.md §3.2 step 4, §3.7 step 35, §5.6, §15):
//! reset with CTRL.RST or LNK_RST as the link says, the SFP+ link through the laser and AUTOC, the RX
//! security-block sequence (any misuse is a model fault, and every test asserts there is none), and frames both
//! ways on a wired pair.
mod common;

use std::time::{Duration, Instant};

use common::*;
use drvkit::bar::RegisterSpace;
use mempool::PacketBatch;
use nicsim::x540::regs::{AUTOC, AUTOC_LMS_MASK, AUTOC_LMS_SHIFT, ESDP, ESDP_SDP3, LMS_10G_SERIAL};
use nicsim::{Chip, Fault, X540Config};
use pktio::{EthDev, MacAddr, PortConfig, RxQueue, TxQueue};

fn cfg() -> X540Config {
    // The security block takes a while to report ready: the driver must really poll SECRX_RDY.
    X540Config { secrx_ready_delay: Duration::from_millis(5), panic_on_fault: true, ..X540Config::x82599() }
}

#[test]
fn bring_up_link_start_and_restart() {
    let (mut dev, port) = single(cfg());
    assert_eq!(port.config().chip, Chip::X82599);
    assert_eq!(dev.mac_addr(), MacAddr(cfg().mac));
    assert_eq!(dev.info().speed_capa, vec![1_000, 10_000]);
    assert!(dev.phy_note().is_none());
    wait_for("link up", Duration::from_secs(2), || dev.link().up);
    assert_eq!(dev.link().speed_mbps, 10_000);
    let bar = port.bar();
    assert_eq!((bar.read32(AUTOC) >> AUTOC_LMS_SHIFT) & AUTOC_LMS_MASK, LMS_10G_SERIAL);
    assert_eq!(bar.read32(ESDP) & ESDP_SDP3, 0, "laser on");
    let pool = pool(2048, 2048);
    let config = PortConfig { rx_desc: 512, tx_desc: 512, ..Default::default() };
    start(&mut dev, &config, &pool);
    assert_eq!(pool.in_use(), 512);
    dev.stop().unwrap();
    // Restart: the link is up now, so the reset must be CTRL.RST (LNK_RST would be a model fault).
    wait_for("link up", Duration::from_secs(2), || dev.link().up);
    dev.start(&pool).unwrap();
    wait_for("link up after restart", Duration::from_secs(2), || dev.link().up);
    dev.stop().unwrap();
    assert!(pool.is_full());
    port.assert_no_faults();
}

#[test]
fn laser_off_at_power_up_is_turned_on_and_the_link_trains() {
    let (dev, port) = single(X540Config { phy_powered_down: true, ..cfg() });
    wait_for("link up", Duration::from_secs(2), || dev.link().up);
    assert_eq!(dev.link().speed_mbps, 10_000);
    assert_eq!(port.bar().read32(ESDP) & ESDP_SDP3, 0);
    port.assert_no_faults();
}

#[test]
fn administrative_link_state_drives_the_laser() {
    let ((mut d0, p0), (d1, p1)) = pair(cfg());
    wait_for("links", Duration::from_secs(2), || d0.link().up && d1.link().up);
    d0.set_link_up(false).unwrap();
    assert_ne!(p0.bar().read32(ESDP) & ESDP_SDP3, 0, "laser off");
    assert!(!d0.link().up && !d1.link().up, "the partner loses light too");
    d0.set_link_up(true).unwrap();
    wait_for("links back", Duration::from_secs(2), || d0.link().up && d1.link().up);
    p0.assert_no_faults();
    p1.assert_no_faults();
}

#[test]
fn a_security_block_that_never_gets_ready_is_reported_by_the_model() {
    // The driver continues after its budget, as DPDK does; the model then records the errata misuse.
    let (mut dev, port) = single(X540Config {
        secrx_ready_delay: Duration::from_secs(3600),
        panic_on_fault: false,
        ..X540Config::x82599()
    });
    let pool = pool(512, 2048);
    start(&mut dev, &PortConfig { rx_desc: 128, tx_desc: 128, ..Default::default() }, &pool);
    let faults = port.take_faults();
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert!(
        matches!(&faults[0], Fault::Protocol { what } if what.contains("before SECRXSTAT.SECRX_RDY")),
        "{faults:?}"
    );
    dev.stop().unwrap();
    assert!(pool.is_full());
}

/// Sends `n` frames from `tx` and receives them on `rx`, in bursts, with at most one ring's worth in flight.
fn exchange(tx: &mut dyn TxQueue, rx: &mut dyn RxQueue, pool: &mempool::Mempool, frame: &[u8], n: u64) -> u64 {
    let (mut sent, mut got) = (0u64, 0u64);
    let mut out = PacketBatch::with_capacity(32);
    let mut inb = PacketBatch::with_capacity(32);
    let t = Instant::now();
    while got < n {
        assert!(t.elapsed() < Duration::from_secs(20), "stalled: sent {sent}, received {got}");
        let room = (256 - (sent - got)).min(n - sent).min(out.remaining() as u64) as usize;
        if room > 0 && out.alloc_from(pool, room) {
            for m in out.iter_mut() {
                if m.data_len() == 0 {
                    m.data_room_mut()[..frame.len()].copy_from_slice(frame);
                    m.set_len(frame.len() as u16);
                }
            }
        }
        sent += tx.tx_burst(&mut out) as u64;
        let k = rx.rx_burst(&mut inb);
        for m in inb.iter() {
            assert_eq!(m.data(), frame);
        }
        got += k as u64;
        inb.clear();
        if k == 0 {
            std::thread::yield_now();
        }
    }
    assert_eq!(sent, n);
    got
}

#[test]
fn a_wired_82599_pair_exchanges_frames_both_ways() {
    const N: u64 = 20_000;
    let ((mut d0, p0), (mut d1, p1)) = pair(cfg());
    let pool = pool(4096, 2048);
    let config = PortConfig { rx_desc: 512, tx_desc: 512, ..Default::default() };
    start(&mut d0, &config, &pool);
    start(&mut d1, &config, &pool);
    wait_for("links", Duration::from_secs(2), || d0.link().up && d1.link().up);
    let (mac0, mac1) = (d0.mac_addr().0, d1.mac_addr().0);
    let (mut rx0, mut tx0) = (d0.rx_queue(0).unwrap(), d0.tx_queue(0).unwrap());
    let (mut rx1, mut tx1) = (d1.rx_queue(0).unwrap(), d1.tx_queue(0).unwrap());
    let m0 = p0.start_thread();
    let m1 = p1.start_thread();
    let to1 = udp_frame(mac1, mac0, ([10, 0, 0, 1], [10, 0, 0, 2]), (1, 2), 128);
    let to0 = udp_frame(mac0, mac1, ([10, 0, 0, 2], [10, 0, 0, 1]), (2, 1), 300);
    assert_eq!(exchange(&mut *tx0, &mut *rx1, &pool, &to1, N), N);
    assert_eq!(exchange(&mut *tx1, &mut *rx0, &pool, &to0, N), N);
    m0.stop().unwrap();
    m1.stop().unwrap();
    drop((rx0, tx0, rx1, tx1));
    let (s0, s1) = (d0.stats(), d1.stats());
    assert_eq!((s0.opackets, s1.ipackets, s1.opackets, s0.ipackets), (N, N, N, N));
    assert_eq!((s0.obytes, s1.obytes), (N * 128, N * 300));
    assert_eq!((s0.imissed, s1.imissed, s0.ierrors, s1.ierrors), (0, 0, 0, 0));
    assert_eq!((p0.counters().tx_sent, p1.counters().rx_delivered), (N, N));
    assert_eq!((p1.counters().tx_sent, p0.counters().rx_delivered), (N, N));
    d0.stop().unwrap();
    d1.stop().unwrap();
    assert!(pool.is_full(), "{} buffers leaked", pool.in_use());
    p0.assert_no_faults();
    p1.assert_no_faults();
}
