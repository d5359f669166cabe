//! testpmd-rs forwarding between two simulated NIC ports (`--vdev net_sim_x710,ports=2`, ...) for every simulated NIC
//! of the model list (`simports::SIM_NICS`) and each of its runs: the real driver on the independent model of its
//! NIC, each model port in its own thread. The TAP + ping variants are in netns.rs.

mod common;

use std::time::Duration;

use common::*;

/// Starts testpmd-rs on `vdev` (ports named `<sim>_p0`, ...), waits for the link at `speed`, checks the driver
/// `driver` runs it, and forwards with tx_first.
fn forwards_on(vdev: &str, driver: &str, speed: &str) {
    let sim = vdev.split(',').next().unwrap();
    let mut s = Session::spawn(command(&["--vdev", vdev], &["-i"]));
    s.wait_for("testpmd> ", Duration::from_secs(30));
    // The link comes up through the firmware's (management CPU's) link events: poll, as a user would.
    let end = std::time::Instant::now() + Duration::from_secs(10);
    let info = loop {
        let info = s.cmd("show port info 0");
        if info.contains(speed) || std::time::Instant::now() > end {
            break info;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(info.contains(&format!("{sim}_p0")), "{info}");
    assert!(info.contains(driver), "{info}");
    assert!(info.contains(speed), "{vdev}: {info}");
    let fwd = s.cmd("show config fwd");
    assert!(fwd.contains("io packet forwarding - ports=2"), "{fwd}");
    // The driver records the pool its rings fill from, and the TX queue of a port configured without TX offloads
    // runs the plain path.
    let rxq = s.cmd("show rxq info 0 0");
    assert!(rxq.contains("\nMempool: mb_pool_0\n") && rxq.contains("\nRx queue state: started\n"), "{vdev}: {rxq}");
    let txq = s.cmd("show txq info 1 0");
    assert!(txq.contains("\nBurst mode: Scalar plain (no offloads, by 4)\n"), "{vdev}: {txq}");

    s.cmd("start tx_first");
    let (forwarded, _) = wait_port_rx(&mut s, 0, 5000);
    let stop = s.cmd("stop");
    assert!(stop.trim_end().ends_with("Done."), "{stop}");
    let p0 = fwd_port_block(&stop, 0).expect("port 0 block");
    let p1 = fwd_port_block(&stop, 1).expect("port 1 block");
    let total = fwd_total_block(&stop).expect("accumulated block");
    assert!(p0.rx_packets >= forwarded, "{p0:?} after {forwarded} seen running");
    assert_eq!((total.tx_dropped, total.rx_dropped), (0, 0), "{stop}");
    // The 2 x 32 packets of tx_first go round; at the stop some may still be in the models' rings or wires.
    assert!(total.tx_packets >= total.rx_packets && total.tx_packets - total.rx_packets <= 64, "{stop}");
    assert!(p1.tx_packets >= p0.rx_packets && p1.tx_packets - p0.rx_packets <= 64, "{p0:?} {p1:?}");
    assert!(p0.tx_packets >= p1.rx_packets && p0.tx_packets - p1.rx_packets <= 64, "{p0:?} {p1:?}");

    s.send("quit");
    let (status, out) = s.finish();
    assert!(status.success(), "{out}");
    assert!(out.contains("Bye..."), "{out}");
    assert_pool_full(&out);
}

/// "10 Gbps" for 10000 Mb/s, as `show port info` prints it.
fn gbps(mbps: u32) -> String {
    format!("{} Gbps", mbps / 1000)
}

#[test]
fn tx_first_forwards_between_two_simulated_ports_of_every_sim_nic() {
    assert!(simports::SIM_NICS.len() >= 4, "the model list lost NICs");
    for nic in simports::SIM_NICS {
        assert!(!nic.runs.is_empty(), "{}: no forwarding run in the model list", nic.vdev.name);
        for &(devargs, mbps) in nic.runs {
            forwards_on(devargs, nic.driver, &gbps(mbps));
        }
    }
}
