//! `show rxq info` and `show txq info` at the prompt: dpdk-testpmd 22.11's block on null and ring ports (what the
//! configuration in force holds, the pool, the state), its error lines for a bad port or queue, the " (per queue)"
//! flag on a port whose driver reports each queue's path (net_af_xdp), and side by side with Debian's dpdk-testpmd
//! 22.11 on net_null.
//!
//! The side-by-side part needs `dpdk-testpmd` (apt-get install dpdk). Without it the test says so and passes,
//! unless DPDK_TESTS_REQUIRED=1 (set by scripts/test.sh, whose setup installs the package), where it fails. The
//! af_xdp part needs root and `ip` (NETNS_TESTS_REQUIRED likewise).

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

/// The RX block as dpdk-testpmd 22.11 prints it for a queue of our software ports (no thresholds, no drop, no
/// scatter, the port-level burst mode, not flagged per queue).
fn rx_block(port: u16, queue: u16, state: &str, rxd: u16) -> String {
    format!(
        "\n********************* Infos for port {port:<2}, RX queue {queue:<2} *********************\nMempool: \
         mb_pool_0\nRX prefetch threshold: 0\nRX host threshold: 0\nRX writeback threshold: 0\nRX free threshold: \
         0\nRX drop packets: off\nRX deferred start: off\nRX scattered packets: off\nRx queue state: {state}\nNumber \
         of RXDs: {rxd}\nBurst mode: Scalar\n"
    )
}

/// The TX block, as [`rx_block`].
fn tx_block(port: u16, queue: u16, state: &str, txd: u16) -> String {
    format!(
        "\n********************* Infos for port {port:<2}, TX queue {queue:<2} *********************\nTX prefetch \
         threshold: 0\nTX host threshold: 0\nTX writeback threshold: 0\nTX RS threshold: 0\nTX free threshold: \
         0\nTX deferred start: off\nNumber of TXDs: {txd}\nTx queue state: {state}\nBurst mode: Scalar\n"
    )
}

/// rte_eth_*_queue_info_get's failure for a queue past the configured count, with the ethdev log line before it.
fn bad_queue(rx: bool, port: u16, queue: u16) -> String {
    let (kind, log) = if rx { ("RX", "Rx") } else { ("TX", "Tx") };
    format!(
        "Invalid {log} queue_id={queue}\nFailed to retrieve information for port: {port}, {kind} queue: {queue}\nerror \
         desc: Invalid argument(-22)\n"
    )
}

/// The failure for a port id that names no port (or a closed one).
fn bad_port(rx: bool, port: u16, queue: u16) -> String {
    let kind = if rx { "RX" } else { "TX" };
    format!(
        "Invalid port_id={port}\nFailed to retrieve information for port: {port}, {kind} queue: {queue}\nerror desc: \
         No such device(-19)\n"
    )
}

#[test]
fn queue_info_on_null_ports_follows_the_configuration_and_the_port_state() {
    let mut s = boot(NULLS, &["-i", "--rxq=2", "--txq=3", "--rxd=512", "--txd=256"]);
    assert_eq!(s.cmd("show rxq info 1 1"), rx_block(1, 1, "started", 512));
    assert_eq!(s.cmd("show rxq info 0 0"), rx_block(0, 0, "started", 512));
    assert_eq!(s.cmd("show txq info 0 2"), tx_block(0, 2, "started", 256));
    assert_eq!(s.cmd("show rxq info 0 2"), bad_queue(true, 0, 2));
    assert_eq!(s.cmd("show txq info 1 3"), bad_queue(false, 1, 3));
    assert_eq!(s.cmd("show rxq info 2 0"), bad_port(true, 2, 0));
    assert_eq!(s.cmd("show txq info 65535 0"), bad_port(false, 65535, 0));
    for bad in ["show rxq info 0", "show rxq info 0 65536", "show txq info all 0", "show rxq info 0 -1"] {
        let out = s.cmd(bad);
        assert!(out.starts_with("Bad arguments"), "{bad}: {out}");
    }
    // 22.11 prints no burst mode in the port information.
    assert!(!s.cmd("show port info 0").contains("Burst mode"));

    // A stopped port's queues stay set up, stopped; a new configuration shows after the port starts with it.
    s.cmd("port stop 0");
    assert_eq!(s.cmd("show rxq info 0 1"), rx_block(0, 1, "stopped", 512));
    assert_eq!(s.cmd("show txq info 0 0"), tx_block(0, 0, "stopped", 256));
    assert_eq!(s.cmd("show txq info 1 0"), tx_block(1, 0, "started", 256));
    s.cmd("port stop 1");
    assert_eq!(s.cmd("port config all rxd 64"), "");
    assert_eq!(s.cmd("port config all txq 1"), "");
    assert_eq!(s.cmd("show rxq info 0 1"), rx_block(0, 1, "stopped", 512), "not applied before the start");
    s.cmd("port start 0");
    assert_eq!(s.cmd("show rxq info 0 1"), rx_block(0, 1, "started", 64));
    assert_eq!(s.cmd("show txq info 0 0"), tx_block(0, 0, "started", 256));
    assert_eq!(s.cmd("show txq info 0 2"), bad_queue(false, 0, 2));
    assert_eq!(s.cmd("show txq info 1 2"), tx_block(1, 2, "stopped", 256), "port 1 keeps its configuration");

    // A closed port is no port any more, as in DPDK (closing releases the port id).
    assert!(s.cmd("port close 1").contains("Port 1 is closed"));
    assert_eq!(s.cmd("show rxq info 1 0"), bad_port(true, 1, 0));
    assert_eq!(s.cmd("show txq info 1 0"), bad_port(false, 1, 0));
    quit(s);
}

#[test]
fn queue_info_on_ring_ports_while_forwarding() {
    let ring = ["--vdev", "net_ring0,link=q,queues=2", "--vdev", "net_ring1,link=q,queues=2"];
    let mut s = boot(&ring, &["-i", "--rxq=2", "--txq=2", "--rxd=128", "--txd=128"]);
    s.cmd("start");
    assert_eq!(s.cmd("show rxq info 1 1"), rx_block(1, 1, "started", 128));
    assert_eq!(s.cmd("show txq info 0 1"), tx_block(0, 1, "started", 128));
    s.cmd("stop");
    s.cmd("port stop all");
    assert_eq!(s.cmd("show rxq info 1 1"), rx_block(1, 1, "stopped", 128));
    assert_eq!(s.cmd("show rxq info 1 2"), bad_queue(true, 1, 2));
    quit(s);
}

/// A port whose driver reports each queue's own path: net_af_xdp, whose sockets are bound zero-copy or copy each
/// (force_copy: copy), on one end of a veth pair in a namespace made here. Needs root and `ip`; without them the
/// test says so and passes, or fails when NETNS_TESTS_REQUIRED=1.
#[test]
fn the_per_queue_flag_shows_on_an_af_xdp_port() {
    if !testkit::netns::usable(&["ip"]) {
        return;
    }
    let ns = testkit::netns::Netns::new(&["tpmd-qinfo"]);
    let n = ns.name(0);
    testkit::netns::ip(&["-n", n, "link", "add", "qa", "type", "veth", "peer", "name", "qb"]);
    testkit::netns::ip(&["-n", n, "link", "set", "qb", "up"]);
    let mut c = Command::new("ip");
    c.args(["netns", "exec", n, BIN, "-l", "0-1", "--no-huge", "--vdev"]).args([
        "net_af_xdp0,iface=qa,xdp_mode=skb,force_copy=1",
        "--",
        "-i",
    ]);
    let mut s = Session::spawn(c);
    s.wait_for("testpmd> ", Duration::from_secs(30));
    let per_queue = |block: String| block.replace("Burst mode: Scalar\n", "Burst mode: AF_XDP copy (per queue)\n");
    assert_eq!(s.cmd("show rxq info 0 0"), per_queue(rx_block(0, 0, "started", 1024)));
    assert_eq!(s.cmd("show txq info 0 0"), per_queue(tx_block(0, 0, "started", 1024)));
    assert_eq!(s.cmd("show rxq info 0 1"), bad_queue(true, 0, 1));
    quit(s);
}

fn dpdk_testpmd() -> bool {
    let found = Command::new("dpdk-testpmd").arg("--version").output().is_ok();
    let stdbuf = Command::new("stdbuf").arg("--version").output().is_ok();
    testkit::require("DPDK_TESTS_REQUIRED", found && stdbuf, "needs dpdk-testpmd and stdbuf (apt-get install dpdk)")
}

/// What each line of `script` printed, in order.
fn run(mut s: Session, script: &[&str]) -> Vec<String> {
    let out = script.iter().map(|line| s.cmd(line)).collect();
    s.send("quit");
    let (status, all) = s.finish();
    assert!(status.success(), "{all}");
    out
}

#[test]
fn queue_info_errors_are_dpdk_testpmds_on_null_ports() {
    if !dpdk_testpmd() {
        return;
    }
    let script = [
        "show rxq info 0 0",
        "show txq info 0 0",
        "show rxq info 0 1",
        "show txq info 0 1",
        "show rxq info 1 7",
        "show txq info 1 7",
        "show rxq info 2 0",
        "show txq info 9 3",
        "show rxq info 0",
        "show txq info 0 70000",
        "show txq info x 0",
        "port stop 1",
        "port close 1",
        "show rxq info 1 0",
        "show txq info 1 0",
    ];
    let prefix = format!("testpmd-rs-qinfo-{}", std::process::id());
    // One pipe for both streams: DPDK logs the ethdev line on stdout and testpmd's "Failed ..." on stderr, and two
    // pipes would not keep their order.
    let mut d = Command::new("sh");
    d.args([
        "-c",
        &format!(
            "exec stdbuf -oL -eL dpdk-testpmd -l 0,1 --no-huge -m 512 --no-pci --file-prefix {prefix} --vdev \
             net_null0 --vdev net_null1 -- -i --total-num-mbufs=8192 2>&1"
        ),
    ]);
    let d = Session::spawn(d);
    d.wait_for("testpmd> ", Duration::from_secs(60));
    let theirs = run(d, &script);
    // DPDK leaves its runtime directory behind; it is ours to remove.
    let _ = std::fs::remove_dir_all(format!("/var/run/dpdk/{prefix}"));
    let ours = run(boot(NULLS, &["-i"]), &script);

    for (i, line) in script.iter().enumerate() {
        let (a, b) = (&ours[i], &theirs[i]);
        match *line {
            // The one true difference: 22.11's net_null has no rxq_info_get/txq_info_get (nor burst_mode_get), so
            // DPDK says -ENOTSUP for a queue that exists; here every port answers from its configuration.
            "show rxq info 0 0" | "show txq info 0 0" => {
                let kind = if line.contains("rxq") { "RX" } else { "TX" };
                let want = format!(
                    "Failed to retrieve information for port: 0, {kind} queue: 0\nerror desc: Operation not \
                     supported(-95)\n"
                );
                assert_eq!(b, &want, "{line}: dpdk-testpmd");
                assert!(a.contains(&format!("Infos for port 0 , {kind} queue 0 ")), "{line}: ours:\n{a}");
            }
            // Both refuse the line; ours says which argument.
            "show rxq info 0" | "show txq info 0 70000" | "show txq info x 0" => {
                assert_eq!(b, "Bad arguments\n", "{line}: dpdk-testpmd");
                assert!(a.starts_with("Bad arguments"), "{line}: ours: {a}");
            }
            // Stopping and closing print their own (checked elsewhere).
            "port stop 1" | "port close 1" => {}
            _ => assert_eq!(a, b, "{line}: ours, then dpdk-testpmd's"),
        }
    }
    eprintln!("queue info: the error lines of {} commands equal dpdk-testpmd 22.11's", script.len() - 7);
}
