//! Live capture of a running l3fwd with `pktio-dumpcap`: port 0 replays a pcap of distinct IPv4 frames routed to
//! port 1 without end, and captures started while l3fwd forwards, one of port 1's TX and then one of port 0's RX,
//! are read back with tcpdump: the TX one holds the routed frames (MACs rewritten, TTL - 1, checksum updated) and
//! the RX one the input, byte for byte, in order, with the count asked for. l3fwd keeps forwarding and exits
//! cleanly.
//!
//! Needs tcpdump. Without it the test says so and passes, unless DPDK_TESTS_REQUIRED=1 (scripts/test.sh).

mod common;

use common::*;

const BIN: &str = env!("CARGO_BIN_EXE_l3fwd");

fn tx_packets(out: &str) -> Option<u64> {
    let at = out.rfind("Total   RX-packets:")?;
    last_number(&out[at..], "TX-packets:")
}

#[test]
fn capture_while_forwarding_holds_the_routed_frames() {
    if !have_tcpdump() {
        return;
    }
    let dir = TempDir::new("l3cap");
    let input = dir.path("in.pcap");
    let frames = udp_frames(6, 24, |i| [198, 18, 1, i as u8]);
    write_pcap(&input, &frames);
    let prefix = format!("l3fwd-cap-{}", std::process::id());
    let args: Vec<String> = [
        "-l",
        "0-1",
        "--no-huge",
        "--file-prefix",
        &prefix,
        "--vdev",
        // One TX queue per lcore on each port (nothing goes back out of port 0).
        &format!("net_pcap0,rx_pcap={input},infinite_rx=1,tx_pcap={},tx_pcap={}", dir.path("o0"), dir.path("o1")),
        "--vdev",
        "net_null1,no-rx=1",
        "--",
        "-p",
        "0x3",
        "-P",
        "--config=(0,0,0),(1,0,1)",
        "-T",
        "1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut app = App::spawn(BIN, &args);
    let out = app.wait_until("forwarding", |o| tx_packets(o).is_some_and(|n| n > 0));
    let line = out.lines().find(|l| l.starts_with("Initializing port 1 ")).expect("port 1's line");
    let at = line.find("Address:").unwrap() + "Address:".len();
    let mac1: pktio::MacAddr = line[at..at + 17].parse().unwrap();

    let sent = dumpcap_frames(&dir, &prefix, &["-i", "1", "--tx"], 120);
    assert_eq!(sent.len(), 120, "the count limit");
    let routed: Vec<Vec<u8>> = frames
        .iter()
        .map(|f| {
            let mut g = f.clone();
            g[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
            g[6..12].copy_from_slice(&mac1.0);
            g[22] -= 1;
            set_ipv4_checksum(&mut g[14..34]);
            g
        })
        .collect();
    assert_cyclic_run(&sent, &routed);

    let received = dumpcap_frames(&dir, &prefix, &["-i", "0", "--rx"], 60);
    assert_eq!(received.len(), 60);
    assert_cyclic_run(&received, &frames);

    let before = tx_packets(&app.output()).unwrap();
    app.wait_until("more packets sent", |o| tx_packets(o).is_some_and(|n| n > before));
    let (status, out) = app.interrupt();
    assert!(status.success(), "{out}");
    assert!(out.contains("Bye..."), "{out}");
}
