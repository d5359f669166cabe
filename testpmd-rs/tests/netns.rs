//! icmpecho against the kernel: a real `ping` from a network namespace is answered by testpmd-rs running in
//! another namespace on a net_af_packet port (a veth pair joins the two), or on a net_tap port in the same
//! namespace. The namespaces are created and removed here; the host's own interfaces are never touched.
//!
//! Needs root, `ip` (iproute2) and `ping` (iputils-ping); without them the tests say why and pass, or fail when
//! NETNS_TESTS_REQUIRED=1 (scripts/test.sh sets it).

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use testkit::netns::{ip, Netns};

/// Whether the tests can run here (root, ip, ping, and /dev/net/tun when `tun`); otherwise skips with the reason
/// (or fails, under NETNS_TESTS_REQUIRED=1).
fn usable(tun: bool) -> bool {
    if !testkit::netns::usable(&["ip", "ping"]) {
        return false;
    }
    testkit::require(
        "NETNS_TESTS_REQUIRED",
        !tun || Path::new("/dev/net/tun").exists(),
        "needs /dev/net/tun (modprobe tun)",
    )
}

fn ping(ns: &str, addr: &str) -> String {
    let out = Command::new("ip")
        // -w: keep asking until 3 replies came or 30 s passed, so a loaded machine (the model threads and the
        // kernel share two cores) delays the test instead of failing it; a dead path still fails.
        .args(["netns", "exec", ns, "ping", "-c", "3", "-i", "0.2", "-w", "30", addr])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "ping {addr} failed:\n{text}");
    text
}

fn testpmd_in(ns: &str, vdev: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, BIN, "-l", "0-1", "--no-huge", "--vdev", vdev, "--"])
        .args(["-i", "--forward-mode=icmpecho"]);
    c
}

fn check_session(mut s: Session, ns: &str, addr: &str) {
    s.wait_for("testpmd> ", Duration::from_secs(20));
    let start = s.cmd("start");
    assert!(start.contains("icmpecho packet forwarding"), "{start}");
    let text = ping(ns, addr);
    // With -w, ping may send more than 3 requests while replies are delayed; it stops once 3 replies came.
    let received = text
        .split(" received")
        .next()
        .and_then(|head| head.rsplit(", ").next())
        .and_then(|n| n.trim().parse::<u32>().ok());
    assert!(received.is_some_and(|n| n >= 3), "{text}");
    let stop = s.cmd("stop");
    let total = fwd_total_block(&stop).expect("forward statistics");
    // At least the ARP request and the three echo requests came in, and their replies went out.
    assert!(total.rx_packets >= 4 && total.tx_packets >= 4, "{stop}");
    s.send("quit");
    let (status, out) = s.finish();
    assert!(status.success(), "{out}");
    assert_pool_full(&out);
}

#[test]
fn icmpecho_answers_ping_through_af_packet() {
    if !usable(false) {
        return;
    }
    let ns = Netns::new(&["tpmd-ping", "tpmd-pmd"]);
    let (a, b) = (&ns.0[0], &ns.0[1]);
    // The veth pair is created inside the namespaces, one end in each.
    ip(&["-n", a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", b]);
    ns.sysctl(0, "net.ipv6.conf.all.disable_ipv6=1");
    ns.sysctl(1, "net.ipv6.conf.all.disable_ipv6=1");
    ip(&["-n", a, "addr", "add", "10.199.0.1/24", "dev", "va"]);
    ip(&["-n", a, "link", "set", "va", "up"]);
    ip(&["-n", b, "link", "set", "vb", "up"]);
    let s = Session::spawn(testpmd_in(b, "net_af_packet0,iface=vb"));
    check_session(s, a, "10.199.0.2");
}

#[test]
fn icmpecho_answers_ping_through_tap() {
    if !usable(true) {
        return;
    }
    let ns = Netns::new(&["tpmd-tap"]);
    let n = &ns.0[0];
    ns.sysctl(0, "net.ipv6.conf.all.disable_ipv6=1");
    ns.sysctl(0, "net.ipv6.conf.default.disable_ipv6=1");
    let mut s = Session::spawn(testpmd_in(n, "net_tap0,iface=tpmdtap0"));
    s.wait_for("testpmd> ", Duration::from_secs(20));
    // The TAP exists once the port is open: give the kernel side an address.
    ip(&["-n", n, "addr", "add", "10.198.0.1/24", "dev", "tpmdtap0"]);
    ip(&["-n", n, "link", "set", "tpmdtap0", "up"]);
    s.cmd("show port info 0");
    check_session(s, n, "10.198.0.2");
}

/// The simulated NIC wired to a TAP: the kernel's ping crosses the TAP, the model's filters and RX ring, the real
/// driver (ixgbe, i40e or hinic3), testpmd-rs's icmpecho, and back out through the driver's TX ring and the model.
fn sim_tap_answers_ping(vdev_driver: &str, ns_name: &str, iface: &str, subnet: &str) {
    if !usable(true) {
        return;
    }
    let ns = Netns::new(&[ns_name]);
    let n = &ns.0[0];
    ns.sysctl(0, "net.ipv6.conf.all.disable_ipv6=1");
    ns.sysctl(0, "net.ipv6.conf.default.disable_ipv6=1");
    let mut s = Session::spawn(testpmd_in(n, &format!("{vdev_driver},tap={iface}")));
    s.wait_for("testpmd> ", Duration::from_secs(20));
    // The TAP exists (and is up) once the port is open: give the kernel side an address.
    ip(&["-n", n, "addr", "add", &format!("{subnet}.1/24"), "dev", iface]);
    ip(&["-n", n, "link", "set", iface, "up"]);
    let info = s.cmd("show port info 0");
    assert!(info.contains(&format!("{vdev_driver}_p0")), "{info}");
    check_session(s, n, &format!("{subnet}.2"));
}

#[test]
fn icmpecho_answers_ping_through_sim_x540_on_a_tap() {
    sim_tap_answers_ping("net_sim_x540", "tpmd-simtap", "simtap0", "10.197.0");
}

#[test]
fn icmpecho_answers_ping_through_sim_82599_on_a_tap() {
    sim_tap_answers_ping("net_sim_82599", "tpmd-simtap82", "simtap1", "10.196.0");
}

#[test]
fn icmpecho_answers_ping_through_sim_x710_on_a_tap() {
    sim_tap_answers_ping("net_sim_x710", "tpmd-simtap710", "simtap2", "10.195.0");
}

#[test]
fn icmpecho_answers_ping_through_sim_sp670_on_a_tap() {
    sim_tap_answers_ping("net_sim_sp670", "tpmd-simtap670", "simtap3", "10.194.0");
}
