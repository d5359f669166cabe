//! Live capture of a forwarding testpmd-rs with `pktio-dumpcap`: port 0 replays a pcap of distinct frames, io
//! forwarding sends them out of port 1, and a capture of port 1's TX started while that runs is read back with
//! tcpdump: it holds the forwarded frames byte for byte, in order, with the count asked for.
//!
//! Needs tcpdump. Without it the test says so and passes, unless DPDK_TESTS_REQUIRED=1 (scripts/test.sh).

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use swports::pcap_file::{read_all, PcapWriter};

const DUMPCAP: &str = env!("CARGO_BIN_EXE_pktio-dumpcap");

/// 40 frames of different lengths, each marked with its index.
fn frames() -> Vec<Vec<u8>> {
    (0..40u8)
        .map(|i| {
            let mut f = vec![0u8; 60 + i as usize * 17];
            f[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0xcc, i]);
            f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0xdd, i]);
            f[12..14].copy_from_slice(&[0x88, 0xb5]);
            for (k, b) in f[14..].iter_mut().enumerate() {
                *b = i.wrapping_mul(31).wrapping_add(k as u8);
            }
            f
        })
        .collect()
}

#[test]
fn capture_while_forwarding_holds_the_forwarded_frames() {
    if !testkit::have_tcpdump() {
        return;
    }
    let dir = TempDir::new("capture");
    let input = dir.path("in.pcap");
    let mut w = PcapWriter::create(&input).unwrap();
    let sent = frames();
    for (i, f) in sent.iter().enumerate() {
        w.write_packet(1_700_000_000_000_000_000 + i as u64 * 1000, f).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let prefix = format!("tpmd-cap-{}", std::process::id());
    let rx = format!("net_pcap0,rx_pcap={input},infinite_rx=1");
    let mut s = boot(&["--file-prefix", &prefix, "--vdev", &rx, "--vdev", "net_null1"], &["-i", "--forward-mode=io"]);
    s.cmd("start");
    wait_port_rx(&mut s, 0, 1000);
    let out = dir.path("cap.pcapng");
    let dump = Command::new(DUMPCAP)
        .args(["--file-prefix", &prefix, "-i", "1", "--tx", "-s", "1500", "-c", "200", "-w", &out])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&dump.stdout).into_owned() + &String::from_utf8_lossy(&dump.stderr);
    assert!(dump.status.success(), "{text}");
    assert!(text.contains("Packets written: 200"), "{text}");
    // Still forwarding after the capture.
    let before = nic_stats(&s.cmd("show port stats 1"), 1).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let after = nic_stats(&s.cmd("show port stats 1"), 1).unwrap();
    assert!(after.1 > before.1, "port 1 still sends: {before:?} -> {after:?}");
    s.cmd("stop");
    quit(s);

    // tcpdump reads the pcapng; its classic-pcap copy is read back here.
    let copy = dir.path("copy.pcap");
    let td = Command::new("tcpdump").args(["-r", &out, "-w", &copy]).output().unwrap();
    assert!(td.status.success(), "tcpdump: {}", String::from_utf8_lossy(&td.stderr));
    let got: Vec<Vec<u8>> = read_all(&copy).unwrap().into_iter().map(|r| r.data).collect();
    assert_eq!(got.len(), 200, "the count limit");
    let first = got[0][5] as usize;
    for (k, f) in got.iter().enumerate() {
        assert_eq!(f, &sent[(first + k) % sent.len()], "captured frame {k} is the forwarded one, in order");
    }
    let summary = Command::new("tcpdump").args(["-r", &out, "-c", "1", "-n", "-e"]).output().unwrap();
    assert!(summary.status.success());
}

#[test]
fn dumpcap_says_why_it_cannot_capture() {
    let prefix = format!("tpmd-cap-none-{}", std::process::id());
    let dump = Command::new(DUMPCAP).args(["--file-prefix", &prefix, "-c", "1"]).output().unwrap();
    assert!(!dump.status.success());
    let err = String::from_utf8_lossy(&dump.stderr);
    assert!(err.contains("cannot connect") && err.contains(&prefix), "{err}");

    let mut s = boot(&["--file-prefix", &prefix, "--vdev", "net_null0"], &["-i"]);
    let dump = Command::new(DUMPCAP).args(["--file-prefix", &prefix, "-i", "5", "-c", "1"]).output().unwrap();
    assert!(!dump.status.success());
    let err = String::from_utf8_lossy(&dump.stderr);
    assert!(err.contains("port 5"), "{err}");
    s.cmd("stop");
    quit(s);
}

/// The capture state testpmd-rs reports on its telemetry socket (`running`, `done`, `none`).
fn capture_status(prefix: &str) -> String {
    use eal::telemetry;
    let fd = telemetry::connect(&telemetry::socket_path(prefix)).expect("testpmd-rs serves telemetry");
    telemetry::recv(&fd, 1024).unwrap();
    telemetry::send(&fd, b"/pktio/capture,status").unwrap();
    let answer = String::from_utf8(telemetry::recv(&fd, telemetry::MAX_OUTPUT_LEN).unwrap()).unwrap();
    let at = answer.find(r#""status":""#).unwrap_or_else(|| panic!("{answer}")) + 10;
    answer[at..].split('"').next().unwrap().to_string()
}

/// Polls testpmd-rs's capture state until it is `want`.
fn wait_capture_status(prefix: &str, want: &str, why: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let st = capture_status(prefix);
        if st == want {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{why}: capture status still {st:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A pktio-dumpcap killed mid-capture (SIGKILL, or SIGHUP as when its terminal closes) takes its capture with it:
/// the application stops writing, and the next pktio-dumpcap is not refused.
#[test]
fn a_killed_dumpcap_ends_its_capture() {
    let dir = TempDir::new("capture-kill");
    let prefix = format!("tpmd-cap-kill-{}", std::process::id());
    let mut s = boot(
        &["--file-prefix", &prefix, "--vdev", "net_ring0,link=w", "--vdev", "net_ring1,link=w"],
        &["-i", "--forward-mode=io"],
    );
    s.cmd("start tx_first");
    wait_port_rx(&mut s, 0, 1000);
    for (k, signal) in [("kill", libc::SIGKILL), ("hup", libc::SIGHUP)] {
        let out = dir.path(&format!("{k}.pcapng"));
        let mut dump = Command::new(DUMPCAP)
            .args(["--file-prefix", &prefix, "-i", "0", "-s", "128", "-q", "-w", &out])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        wait_capture_status(&prefix, "running", "pktio-dumpcap started a capture");
        // SAFETY: kill() takes no pointers; the pid is our own child's, not yet reaped.
        assert_eq!(unsafe { libc::kill(dump.id() as libc::pid_t, signal) }, 0);
        let status = dump.wait().unwrap();
        assert!(!status.success(), "pktio-dumpcap died of signal {signal}");
        wait_capture_status(&prefix, "none", &format!("the capture of a pktio-dumpcap killed by signal {signal}"));
        // The file stops growing once the capture is gone.
        let size = std::fs::metadata(&out).unwrap().len();
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(std::fs::metadata(&out).unwrap().len(), size, "the application still writes {out}");
    }
    // A later pktio-dumpcap captures as usual.
    let out = dir.path("after.pcapng");
    let dump = Command::new(DUMPCAP)
        .args(["--file-prefix", &prefix, "-i", "0", "-s", "128", "-c", "50", "-w", &out])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&dump.stdout).into_owned() + &String::from_utf8_lossy(&dump.stderr);
    assert!(dump.status.success(), "{text}");
    assert!(text.contains("Packets written: 50"), "{text}");
    s.cmd("stop");
    quit(s);
}
