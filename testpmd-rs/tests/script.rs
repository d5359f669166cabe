//! testpmd-rs driven by a script on stdin: forwarding on a ring pair, the statistics it reports, bad input, and
//! the pool being full after quit.

mod common;

use std::time::Duration;

use common::*;

const RING_PAIR: &[&str] = &["--vdev", "net_ring0,link=w", "--vdev", "net_ring1,link=w"];

#[test]
fn ring_pair_tx_first_forwards_and_stop_reports_matching_counts() {
    let mut s = Session::spawn(command(RING_PAIR, &["-i"]));
    s.wait_for("testpmd> ", Duration::from_secs(20));
    let fwd = s.cmd("show config fwd");
    assert!(fwd.contains("io packet forwarding - ports=2 - cores=1 - streams=2"), "{fwd}");
    assert!(fwd.contains("RX P=0/Q=0 (socket 0) -> TX P=1/Q=0 (socket 0) peer=02:00:00:00:00:01"), "{fwd}");
    assert!(fwd.contains("RX P=1/Q=0 (socket 0) -> TX P=0/Q=0 (socket 0) peer=02:00:00:00:00:00"), "{fwd}");

    s.cmd("start tx_first");
    // Let the 64 packets go round many times, looking at the counters as a user would.
    let (forwarded, _) = wait_port_rx(&mut s, 0, 5000);
    let stop = s.cmd("stop");
    assert!(stop.contains("Telling cores to stop..."), "{stop}");
    assert!(stop.trim_end().ends_with("Done."), "{stop}");
    let p0 = fwd_port_block(&stop, 0).expect("port 0 block");
    let p1 = fwd_port_block(&stop, 1).expect("port 1 block");
    let total = fwd_total_block(&stop).expect("accumulated block");
    // Real forwarding: at least what the port counters showed while running (tx = rx + 64 alone also holds when
    // nothing moves at all).
    assert!(p0.rx_packets >= forwarded, "{p0:?} after {forwarded} seen running");
    assert_eq!(total.rx_packets, p0.rx_packets + p1.rx_packets);
    assert_eq!(total.tx_packets, p0.tx_packets + p1.tx_packets);
    assert_eq!(total.tx_dropped, 0);
    assert_eq!(total.rx_dropped, 0);
    // Every packet sent was either received or is still in flight in a ring: the 2 x 32 of tx_first.
    assert_eq!(total.tx_packets, total.rx_packets + 64, "{stop}");
    // What port 0 received, port 1 sent (less what was in flight on that wire at the stop), and vice versa.
    assert!(p1.tx_packets >= p0.rx_packets && p1.tx_packets - p0.rx_packets <= 64, "{p0:?} {p1:?}");
    assert!(p0.tx_packets >= p1.rx_packets && p0.tx_packets - p1.rx_packets <= 64, "{p0:?} {p1:?}");

    // The same figures again on demand.
    let again = s.cmd("show fwd stats all");
    assert_eq!(fwd_total_block(&again), Some(total));

    // After stop the 64 packets still wait in the rings; a second run forwards them again.
    let mp = s.cmd("show mempool");
    assert!(mp.contains("64 in use"), "{mp}");
    let (before, _) = wait_port_rx(&mut s, 0, 0);
    // A start empties the RX queues first (as dpdk-testpmd does): keep them to forward them again.
    s.cmd("set flush_rx off");
    s.cmd("start");
    wait_port_rx(&mut s, 0, before + 1000);
    let stop2 = s.cmd("stop");
    let t2 = fwd_total_block(&stop2).unwrap();
    assert!(t2.rx_packets >= 1000 && t2.tx_packets == t2.rx_packets, "no tx_first: sent == received: {t2:?}");

    s.send("quit");
    let (status, out) = s.finish();
    assert!(status.success(), "{out}");
    assert!(out.contains("Bye..."), "{out}");
    assert_pool_full(&out);
}

#[test]
fn bad_commands_get_errors_and_the_prompt_survives() {
    let mut s = Session::spawn(command(RING_PAIR, &["-i"]));
    s.wait_for("testpmd> ", Duration::from_secs(20));
    for (cmd, needle) in [
        ("frobnicate", "Command not found"),
        ("show port stats 7", "Invalid port 7"),
        ("show port stats x", "Invalid port"),
        ("set burst 0", "burst must be >= 1 && <= 512"),
        ("set burst 513", "burst must be"),
        ("set burst many", "Bad arguments"),
        ("set fwd warp", "unknown forwarding mode"),
        ("set eth-peer 0 zz:zz", "Invalid ethernet address"),
        ("set eth-peer 9 02:00:00:00:00:01", "Invalid port 9"),
        ("set nbcore 0", "must be between 1 and"),
        ("set nbcore 64", "must be between 1 and"),
        ("set txpkts 5", "below 42"),
        ("set promisc 0 maybe", "on or off"),
        ("stop", "Packet forwarding not started"),
        ("port config all rxq 2", "Please stop all ports first"),
        ("port config mtu 0 10", "Set MTU failed"),
        ("show config nothing", "Bad arguments"),
    ] {
        let out = s.cmd(cmd);
        assert!(out.contains(needle), "{cmd}: {out}");
    }
    assert!(s.cmd("start").contains("io packet forwarding"));
    assert!(s.cmd("start").contains("Packet forwarding already started"));
    assert!(s.cmd("set fwd mac").contains("Please stop forwarding first"));
    assert!(s.cmd("port stop all").contains("Please stop forwarding first"));
    assert!(s.cmd("stop").contains("Done."));
    assert!(s.cmd("set fwd macswap").contains("Set macswap packet forwarding mode"));
    assert!(s.cmd("set nbcore 1").contains("Number of forwarding cores set to 1"));
    assert!(s.cmd("show config cores").contains("List of forwarding lcores:  1"));
    let help = s.cmd("help");
    assert!(help.contains("help control") && help.contains("help all"), "{help}");
    let help = s.cmd("help all");
    assert!(help.contains("start tx_first") && help.contains("show port stats"), "{help}");
    assert!(s.cmd("help display").contains("show port summary"));
    assert!(s.cmd("help nonsense").contains("Bad arguments"));
    // Reconfiguring queues: stop the ports, change, restart.
    assert!(s.cmd("port stop all").contains("Done"));
    assert!(s.cmd("port config all rxd 512").is_empty());
    assert!(s.cmd("start").contains("Port 0 is not started"));
    let started = s.cmd("port start all");
    assert!(started.contains("Port 0: ") && started.contains("Port 1: "), "{started}");
    assert!(s.cmd("show config rxtx").contains("RX desc=512"));
    let info = s.cmd("show port info 1");
    assert!(info.contains("Infos for port 1") && info.contains("Driver name: net_ring"), "{info}");
    assert!(s.cmd("set promisc all off").is_empty());
    assert!(s.cmd("show port info 0").contains("Promiscuous mode: disabled"));
    let x = s.cmd("show port xstats 0");
    assert!(x.contains("NIC extended statistics for port 0") && x.contains("rx_good_packets: 0"), "{x}");
    assert!(s.cmd("clear port stats all").contains("NIC statistics for port 1 cleared"));
    s.send("quit");
    let (status, out) = s.finish();
    assert!(status.success(), "{out}");
    assert!(!out.contains("panicked"), "{out}");
    assert_pool_full(&out);
}

#[test]
fn end_of_input_quits_cleanly() {
    let mut s = Session::spawn(command(RING_PAIR, &["-i", "--auto-start", "--tx-first"]));
    s.wait_for("Start automatic packet forwarding", Duration::from_secs(20));
    s.wait_for("testpmd> ", Duration::from_secs(20));
    wait_port_rx(&mut s, 0, 1000);
    let (status, out) = s.finish();
    assert!(status.success(), "{out}");
    let total = fwd_total_block(&out).expect("stop statistics printed on the way out");
    assert!(total.rx_packets >= 1000, "{total:?}");
    assert_eq!(total.tx_packets, total.rx_packets + 64, "{out}");
    assert_pool_full(&out);
}

#[test]
fn bad_command_lines_exit_with_an_error() {
    for (app, needle) in [
        (&["--rxq", "0"][..], "--rxq=0: must be between 1"),
        (&["--burst=0"][..], "--burst=0: must be between 1"),
        (&["--eth-peer=0,02:00:00:00:00"][..], "not a MAC address"),
        (&["--eth-peer=0-02:00:00:00:00:01"][..], "PORT,MAC"),
        (&["--eth-peer=5,02:00:00:00:00:01"][..], "port 5 does not exist"),
        (&["--forward-mode=teleport"][..], "unknown forwarding mode"),
        (&["--nb-cores=4"][..], "only 1 forwarding lcores"),
        (&["--port-topology=mesh"][..], "paired, chained or loop"),
        (&["--mbuf-size=100"][..], "must be between"),
        (&["--txpkts=4000"][..], "larger than the mbuf data room"),
        (&["--what"][..], "unknown option"),
    ] {
        let out = command(RING_PAIR, app).stdin(std::process::Stdio::null()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{app:?} should fail");
        assert!(err.contains(needle), "{app:?}: {err}");
        assert!(!err.contains("panicked"), "{app:?}: {err}");
    }
    let out = command(&[], &[]).stdin(std::process::Stdio::null()).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("No probed ethernet devices"));
    let help = command(&[], &["--help"]).output().unwrap();
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("--forward-mode=MODE"));
}

#[test]
fn non_interactive_stats_period_until_sigint() {
    let s = Session::spawn(command(
        &["--vdev", "net_null0", "--vdev", "net_null1"],
        &["--stats-period", "1", "--forward-mode=macswap"],
    ));
    s.wait_for("NIC statistics for port 1", Duration::from_secs(20));
    let o = s.wait_for("Port statistics ====", Duration::from_secs(20));
    assert!(o.contains("Rx-pps:"), "{o}");
    // SAFETY: kill() with a pid of our own child and SIGINT has no memory effects.
    unsafe { libc::kill(s.pid() as i32, libc::SIGINT) };
    let (status, out) = s.finish();
    assert!(status.success(), "{out}");
    let total = fwd_total_block(&out).expect("forward statistics on the way out");
    assert!(total.rx_packets > 0 && total.tx_packets + total.tx_dropped == total.rx_packets, "{total:?}");
    assert_pool_full(&out);
}

#[test]
fn non_interactive_stops_at_end_of_input() {
    // A pcap port shows the sending from outside: its capture grows once the writer's buffer fills.
    let dir = TempDir::new("eof");
    let cap = dir.path("out.pcap");
    let vdev = format!("net_pcap0,tx_pcap={cap}");
    let s = Session::spawn(command(&["--vdev", &vdev], &["--forward-mode=txonly"]));
    s.wait_for("Press enter to exit", Duration::from_secs(20));
    let end = std::time::Instant::now() + FWD_DEADLINE;
    while std::fs::metadata(&cap).map_or(0, |m| m.len()) == 0 {
        assert!(std::time::Instant::now() < end, "nothing written to {cap}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let (status, out) = s.finish();
    assert!(status.success(), "{out}");
    let total = fwd_total_block(&out).unwrap();
    assert!(total.tx_packets > 0 && total.rx_packets == 0, "{total:?}");
    let written = swports::pcap_file::read_all(&cap).unwrap().len() as u64;
    assert_eq!(written, total.tx_packets, "every packet counted as sent is in the capture");
    assert_pool_full(&out);
}

#[test]
fn streams_spread_over_queues_and_cores_like_testpmd() {
    let mut s = Session::spawn(command(
        &["--vdev", "net_ring0,link=a,queues=2", "--vdev", "net_ring1,link=a,queues=2"],
        &["-i", "--rxq=2", "--txq=2", "--port-topology=paired"],
    ));
    s.wait_for("testpmd> ", Duration::from_secs(20));
    let fwd = s.cmd("show config fwd");
    assert!(fwd.contains("ports=2 - cores=1 - streams=4"), "{fwd}");
    assert!(fwd.contains("RX P=0/Q=1 (socket 0) -> TX P=1/Q=1"), "{fwd}");
    s.cmd("start tx_first");
    wait_port_rx(&mut s, 0, 1000);
    let stop = s.cmd("stop");
    // More streams than ports: the per-stream blocks come first.
    assert!(stop.contains("Forward Stats for RX Port= 1/Queue= 1 -> TX Port= 0/Queue= 1"), "{stop}");
    let total = fwd_total_block(&stop).unwrap();
    assert!(total.rx_packets >= 1000, "{total:?}");
    assert_eq!(total.tx_packets, total.rx_packets + 4 * 32, "{stop}");
    s.send("quit");
    let (status, out) = s.finish();
    assert!(status.success());
    assert_pool_full(&out);
}

#[test]
fn sigint_at_a_scripted_prompt_stops_and_quits() {
    let mut s = Session::spawn(command(RING_PAIR, &["-i"]));
    s.wait_for("testpmd> ", Duration::from_secs(20));
    s.cmd("start tx_first");
    wait_port_rx(&mut s, 0, 1000);
    // SAFETY: kill() with a pid of our own child and SIGINT has no memory effects.
    unsafe { libc::kill(s.pid() as i32, libc::SIGINT) };
    let out = s.wait_for("Bye...", Duration::from_secs(20));
    assert!(out.contains("Signal received"), "{out}");
    let total = fwd_total_block(&out).expect("forward statistics on the way out");
    assert!(total.rx_packets >= 1000, "{total:?}");
    assert_eq!(total.tx_packets, total.rx_packets + 64, "{out}");
    let (status, out) = s.finish();
    assert!(status.success(), "{out}");
    assert_pool_full(&out);
}

#[test]
fn a_single_lcore_still_forwards() {
    let mut c = std::process::Command::new(BIN);
    c.args(["-l", "0", "--no-huge"]).args(RING_PAIR).args(["--", "-i"]);
    let mut s = Session::spawn(c);
    s.wait_for("testpmd> ", Duration::from_secs(20));
    let start = s.cmd("start tx_first");
    assert!(start.contains("Warning: no worker lcore"), "{start}");
    assert!(start.contains("Logical Core 0 (socket 0) forwards packets on 2 streams"), "{start}");
    wait_port_rx(&mut s, 0, 1000);
    let stop = s.cmd("stop");
    let total = fwd_total_block(&stop).unwrap();
    assert!(total.rx_packets >= 1000 && total.tx_packets == total.rx_packets + 64, "{stop}");
    s.send("quit");
    let (status, out) = s.finish();
    assert!(status.success(), "{out}");
    assert_pool_full(&out);
}
