//! Live capture of a running l2fwd with `pktio-dumpcap`: port 0 replays a pcap of distinct frames without end,
//! l2fwd sends them out of port 1 (MACs rewritten), and captures started while it forwards, one of port 1's TX and
//! then one of port 0's RX, are read back with tcpdump: each holds the frames byte for byte, in order, with the
//! count asked for. l2fwd keeps forwarding across both and exits cleanly.
//!
//! Needs tcpdump. Without it the test says so and passes, unless DPDK_TESTS_REQUIRED=1 (scripts/test.sh).

mod common;

use common::*;

const BIN: &str = env!("CARGO_BIN_EXE_l2fwd");

#[test]
fn capture_while_forwarding_holds_the_forwarded_frames() {
    if !have_tcpdump() {
        return;
    }
    let dir = TempDir::new("l2cap");
    let input = dir.path("in.pcap");
    let frames = udp_frames(5, 30, |i| [10, 5, 0, i as u8]);
    write_pcap(&input, &frames);
    let prefix = format!("l2fwd-cap-{}", std::process::id());
    let args: Vec<String> = [
        "-l",
        "0-1",
        "--no-huge",
        "--file-prefix",
        &prefix,
        "--vdev",
        &format!("net_pcap0,rx_pcap={input},infinite_rx=1"),
        "--vdev",
        "net_null1,no-rx=1",
        "--",
        "-p",
        "0x3",
        "-T",
        "1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut app = App::spawn(BIN, &args);
    let out = app.wait_until("forwarding", |o| last_number(o, "Total packets sent:").is_some_and(|n| n > 0));
    let mac1 = mac_after(&out, "Port 1, MAC address: ");

    let sent = dumpcap_frames(&dir, &prefix, &["-i", "1", "--tx"], 150);
    assert_eq!(sent.len(), 150, "the count limit");
    let rewritten: Vec<Vec<u8>> = frames
        .iter()
        .map(|f| {
            let mut g = f.clone();
            g[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
            g[6..12].copy_from_slice(&mac1);
            g
        })
        .collect();
    assert_cyclic_run(&sent, &rewritten);

    let received = dumpcap_frames(&dir, &prefix, &["-i", "0", "--rx"], 70);
    assert_eq!(received.len(), 70);
    assert_cyclic_run(&received, &frames);

    // Still forwarding after both captures.
    let before = last_number(&app.output(), "Total packets sent:").unwrap();
    app.wait_until("more packets sent", |o| last_number(o, "Total packets sent:").is_some_and(|n| n > before));
    let (status, out) = app.interrupt();
    assert!(status.success(), "{out}");
    assert!(out.contains("Bye..."), "{out}");
}
