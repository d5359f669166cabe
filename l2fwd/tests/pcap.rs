//! l2fwd through the real binary: pcap in, pcap out, compared frame by frame with what l2fwd must send; the
//! statistics screen; bad input; and simulated X540 ports.

mod common;

use common::*;

const BIN: &str = env!("CARGO_BIN_EXE_l2fwd");

fn eal(extra: &[String]) -> Vec<String> {
    let mut v: Vec<String> = ["-l", "0-1", "--no-huge"].iter().map(|s| s.to_string()).collect();
    v.extend(extra.iter().cloned());
    v
}

/// Runs l2fwd on two pcap ports until every input frame was received and sent, then Ctrl-C.
fn run_pcap(tag: &str, in0: &[Vec<u8>], in1: &[Vec<u8>], app: &[&str]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>, String) {
    let dir = TempDir::new(tag);
    let (i0, i1, o0, o1) = (dir.path("in0.pcap"), dir.path("in1.pcap"), dir.path("out0.pcap"), dir.path("out1.pcap"));
    write_pcap(&i0, in0);
    write_pcap(&i1, in1);
    let mut args = eal(&[
        "--vdev".into(),
        format!("net_pcap0,rx_pcap={i0},tx_pcap={o0}"),
        "--vdev".into(),
        format!("net_pcap1,rx_pcap={i1},tx_pcap={o1}"),
        "--".into(),
    ]);
    args.extend(app.iter().map(|s| s.to_string()));
    let mut p = App::spawn(BIN, &args);
    let want = (in0.len() + in1.len()) as u64;
    p.wait_until("every frame forwarded", |o| {
        last_number(o, "Total packets received:") == Some(want) && last_number(o, "Total packets sent:") == Some(want)
    });
    let (status, out) = p.interrupt();
    assert!(status.success(), "{out}");
    assert!(out.contains("Bye..."), "{out}");
    (read_frames(&o0), read_frames(&o1), out)
}

fn rewrite(frames: &[Vec<u8>], tx_port: u8, tx_mac: [u8; 6]) -> Vec<Vec<u8>> {
    frames
        .iter()
        .map(|f| {
            let mut g = f.clone();
            g[0..6].copy_from_slice(&[2, 0, 0, 0, 0, tx_port]);
            g[6..12].copy_from_slice(&tx_mac);
            g
        })
        .collect()
}

#[test]
fn mac_updating_rewrites_both_addresses_and_pairs_ports() {
    let in0 = udp_frames(1, 40, |i| [10, 1, 0, i as u8]);
    let in1 = udp_frames(2, 25, |i| [10, 2, 0, i as u8]);
    let (out0, out1, out) = run_pcap("l2mac", &in0, &in1, &["-p", "0x3", "-T", "1"]);
    let mac0 = mac_after(&out, "Port 0, MAC address: ");
    let mac1 = mac_after(&out, "Port 1, MAC address: ");
    assert_frames_eq(&out1, &rewrite(&in0, 1, mac1));
    assert_frames_eq(&out0, &rewrite(&in1, 0, mac0));
    assert!(out.contains("Lcore 0: RX port 0 TX port 1") && out.contains("Lcore 1: RX port 1 TX port 0"), "{out}");
    for p in 0..2 {
        let line = format!("Port {p}: RX burst mode: Scalar, streamed from file, TX burst mode: Scalar\n");
        assert_eq!(out.matches(&line).count(), 1, "{line:?} in:\n{out}");
    }
    // The screen, in l2fwd's layout: port 1 sent port 0's 40 frames and received 25.
    assert!(out.contains("Statistics for port 1 ------------------------------\nPackets sent:                       40\nPackets received:                   25\nPackets dropped:                     0"), "{out}");
}

#[test]
fn no_mac_updating_forwards_frames_unchanged() {
    let in0 = udp_frames(3, 30, |i| [10, 3, 0, i as u8]);
    let in1 = vec![vec![0x5a; 60]];
    let (out0, out1, _) = run_pcap("l2nomac", &in0, &in1, &["-p", "3", "-T", "1", "--no-mac-updating"]);
    assert_frames_eq(&out1, &in0);
    assert_frames_eq(&out0, &in1);
}

#[test]
fn portmap_and_queues_per_lcore() {
    // (0,1) mapped explicitly, both ports on lcore 0 (-q 2): lcore 1 idles.
    let in0 = udp_frames(4, 12, |i| [10, 4, 0, i as u8]);
    let in1 = udp_frames(5, 7, |i| [10, 5, 0, i as u8]);
    let (out0, out1, out) = run_pcap("l2map", &in0, &in1, &["-p", "0x3", "-q", "2", "-T", "1", "--portmap=(1,0)"]);
    assert!(out.contains("Lcore 0: RX port 0 TX port 1") && out.contains("Lcore 0: RX port 1 TX port 0"), "{out}");
    let mac0 = mac_after(&out, "Port 0, MAC address: ");
    let mac1 = mac_after(&out, "Port 1, MAC address: ");
    assert_frames_eq(&out1, &rewrite(&in0, 1, mac1));
    assert_frames_eq(&out0, &rewrite(&in1, 0, mac0));
}

#[test]
fn several_rx_queues_per_port_each_forwarded_once() {
    // --rxq 2 on pcap ports: queue q replays the q-th rx_pcap file and sends through TX queue q (file q) of the
    // partner. Two lcores, -q 2: lcore 0 polls port 0's queues, lcore 1 port 1's.
    let dir = TempDir::new("l2rxq");
    let ins: Vec<Vec<Vec<u8>>> =
        (0..4).map(|k| udp_frames(10 + k as u8, 9 + k, |i| [10, k as u8, 0, i as u8])).collect();
    let mut vdevs = Vec::new();
    for p in 0..2 {
        let (a, b) = (dir.path(&format!("in{p}a.pcap")), dir.path(&format!("in{p}b.pcap")));
        write_pcap(&a, &ins[p * 2]);
        write_pcap(&b, &ins[p * 2 + 1]);
        let (oa, ob) = (dir.path(&format!("out{p}a.pcap")), dir.path(&format!("out{p}b.pcap")));
        vdevs.push("--vdev".to_string());
        vdevs.push(format!("net_pcap{p},rx_pcap={a},rx_pcap={b},tx_pcap={oa},tx_pcap={ob}"));
    }
    let mut args = eal(&vdevs);
    args.extend(["--", "-p", "3", "-q", "2", "-T", "1", "--rxq", "2"].iter().map(|s| s.to_string()));
    let mut p = App::spawn(BIN, &args);
    let want: u64 = ins.iter().map(|v| v.len() as u64).sum();
    p.wait_until("every frame forwarded", |o| last_number(o, "Total packets sent:") == Some(want));
    let (status, out) = p.interrupt();
    assert!(status.success(), "{out}");
    assert!(out.contains("Lcore 1: RX port 1 queue 1 TX port 0 queue 1"), "{out}");
    let mac = [mac_after(&out, "Port 0, MAC address: "), mac_after(&out, "Port 1, MAC address: ")];
    assert_frames_eq(&read_frames(&dir.path("out1a.pcap")), &rewrite(&ins[0], 1, mac[1]));
    assert_frames_eq(&read_frames(&dir.path("out1b.pcap")), &rewrite(&ins[1], 1, mac[1]));
    assert_frames_eq(&read_frames(&dir.path("out0a.pcap")), &rewrite(&ins[2], 0, mac[0]));
    assert_frames_eq(&read_frames(&dir.path("out0b.pcap")), &rewrite(&ins[3], 0, mac[0]));
}

#[test]
fn bad_input_exits_1_with_a_reason() {
    let ring = ["--vdev", "net_ring0,link=r"];
    for (args, needle) in [
        (&["-p", "0x6"][..], "do not exist"),
        (&["-p", "zz"], "invalid portmask"),
        (&["-p", "1", "--portmap=(0,1"], "not closed"),
        (&["-p", "1", "--portmap=(0,1)"], "not in the portmask"),
        (&["-p", "1", "-q", "99"], "invalid -q"),
        (&["-p", "1", "--frobnicate"], "unknown option"),
    ] {
        let mut all: Vec<&str> = vec!["-l", "0-1", "--no-huge"];
        all.extend(ring);
        all.push("--");
        all.extend(args);
        let (status, out) = run_to_exit(BIN, &all);
        assert_eq!(status.code(), Some(1), "{args:?}: {out}");
        assert!(out.contains(needle), "{args:?}: expected {needle:?} in:\n{out}");
        assert!(!out.contains("panicked"), "{out}");
    }
}

#[test]
fn forwards_through_simulated_x540_ports() {
    forwards_through_simulated_ports("net_sim_x540,ports=2", "l2sim");
}

#[test]
fn forwards_through_simulated_x710_ports() {
    forwards_through_simulated_ports("net_sim_x710,ports=2", "l2sim710");
}

#[test]
fn forwards_through_simulated_sp670_ports() {
    forwards_through_simulated_ports("net_sim_sp670,ports=2", "l2sim670");
}

fn forwards_through_simulated_ports(vdev: &str, tmp: &str) {
    // Ports 0, 1: two simulated NICs wired back to back (the real ixgbe or i40e driver on its model); ports 2, 3: pcap.
    // --portmap pairs 2 with 0 and 1 with 3: frames replayed on port 2 leave by sim port 0, cross the wire, arrive
    // on sim port 1 and leave by pcap port 3, rewritten by l2fwd on both hops.
    let dir = TempDir::new(tmp);
    let (i2, o2, i3, o3) = (dir.path("in2.pcap"), dir.path("out2.pcap"), dir.path("in3.pcap"), dir.path("out3.pcap"));
    let frames = udp_frames(7, 20, |i| [10, 7, 0, i as u8]);
    write_pcap(&i2, &frames);
    write_pcap(&i3, &[]);
    let args = eal(&[
        "--vdev".into(),
        vdev.into(),
        "--vdev".into(),
        format!("net_pcap0,rx_pcap={i2},tx_pcap={o2}"),
        "--vdev".into(),
        format!("net_pcap1,rx_pcap={i3},tx_pcap={o3}"),
        "--".into(),
        "-p".into(),
        "0xf".into(),
        "-q".into(),
        "2".into(),
        "-T".into(),
        "1".into(),
        "--portmap=(2,0),(1,3)".into(),
    ]);
    let mut p = App::spawn(BIN, &args);
    p.wait_until("every frame through both hops", |o| last_number(o, "Total packets sent:") == Some(40));
    let (status, out) = p.interrupt();
    assert!(status.success(), "{out}");
    assert!(out.contains("Lcore 0: RX port 0 TX port 2") && out.contains("Lcore 1: RX port 3 TX port 1"), "{out}");
    assert!(out.contains("Port 0 Link up"), "{out}");
    let mac3 = mac_after(&out, "Port 3, MAC address: ");
    assert_frames_eq(&read_frames(&o3), &rewrite(&frames, 3, mac3));
    assert!(read_frames(&o2).is_empty());
}

#[test]
fn rss_spreads_a_simulated_port_over_its_rx_queues() {
    // --rxq 2 on every port: frames of many flows replayed on pcap port 2 leave by sim port 0, cross the wire, and
    // sim port 1's RSS spreads them over its two RX queues (-q 4: lcore 0 polls the sim ports' queues, lcore 1 the
    // pcap ports'); queue q leaves by pcap port 3's TX queue q. Every frame must come out exactly once, rewritten,
    // and both queues must have carried some.
    let dir = TempDir::new("l2rss");
    let frames = udp_frames(9, 64, |i| [10, 100, (i >> 4) as u8, i as u8]);
    let mut vdevs = vec!["--vdev".to_string(), "net_sim_x540,ports=2".to_string()];
    for p in 2..4 {
        let (a, b) = (dir.path(&format!("in{p}a.pcap")), dir.path(&format!("in{p}b.pcap")));
        write_pcap(&a, if p == 2 { &frames } else { &[] });
        write_pcap(&b, &[]);
        let (oa, ob) = (dir.path(&format!("out{p}a.pcap")), dir.path(&format!("out{p}b.pcap")));
        vdevs.push("--vdev".into());
        vdevs.push(format!("net_pcap{p},rx_pcap={a},rx_pcap={b},tx_pcap={oa},tx_pcap={ob}"));
    }
    let mut args = eal(&vdevs);
    args.extend(
        ["--", "-p", "0xf", "-q", "4", "-T", "1", "--rxq", "2", "--portmap=(2,0),(1,3)"].iter().map(|s| s.to_string()),
    );
    let mut p = App::spawn(BIN, &args);
    p.wait_until("every frame through both hops", |o| last_number(o, "Total packets sent:") == Some(128));
    let (status, out) = p.interrupt();
    assert!(status.success(), "{out}");
    let mac3 = mac_after(&out, "Port 3, MAC address: ");
    let (qa, qb) = (read_frames(&dir.path("out3a.pcap")), read_frames(&dir.path("out3b.pcap")));
    assert!(!qa.is_empty() && !qb.is_empty(), "RSS used one queue only: {} / {}", qa.len(), qb.len());
    let mut got: Vec<Vec<u8>> = qa.into_iter().chain(qb).collect();
    let mut want = rewrite(&frames, 3, mac3);
    got.sort();
    want.sort();
    assert_frames_eq(&got, &want);
}
