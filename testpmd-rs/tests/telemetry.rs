//! DPDK's own telemetry client against testpmd-rs: `dpdk-telemetry.py -f PREFIX` connects to the socket the EAL
//! serves for the file prefix and reads the port list and live statistics while ports forward.
//!
//! Needs `dpdk-telemetry.py` (Debian's dpdk-dev package). Without it the test says so and passes, unless
//! DPDK_TESTS_REQUIRED=1 (set by scripts/test.sh, whose setup installs the package), where it fails.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn client() -> Option<&'static str> {
    let present =
        Command::new("python3").arg("-c").arg("1").output().is_ok() && Path::new("/usr/bin/dpdk-telemetry.py").exists();
    let why = "needs dpdk-telemetry.py (apt-get install dpdk-dev)";
    testkit::require("DPDK_TESTS_REQUIRED", present, why).then_some("/usr/bin/dpdk-telemetry.py")
}

/// Runs the client with `commands` on stdin (non-interactive: it prints one JSON line per command).
fn query(client: &str, prefix: &str, commands: &[&str]) -> String {
    let mut child = Command::new("python3")
        .args([client, "-f", prefix])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut stdin = child.stdin.take().unwrap();
    for c in commands {
        writeln!(stdin, "{c}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// The number after `"key": ` in the first line mentioning `cmd`.
fn number(out: &str, cmd: &str, key: &str) -> u64 {
    let line = out.lines().find(|l| l.starts_with(&format!("{{\"{cmd}\""))).unwrap_or_else(|| panic!("{cmd}: {out}"));
    let at = line.find(&format!("\"{key}\": ")).unwrap_or_else(|| panic!("{key} in {line}")) + key.len() + 4;
    line[at..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

fn socket(prefix: &str) -> std::path::PathBuf {
    eal::telemetry::socket_path(prefix)
}

#[test]
fn dpdk_telemetry_py_reads_port_list_and_live_stats() {
    let Some(client) = client() else { return };
    let prefix = format!("tpmd-tele-{}", std::process::id());
    let mut s = boot(&["--file-prefix", &prefix, "--vdev", "net_null0", "--vdev", "net_null1"], &["-i"]);
    let path = socket(&prefix);
    assert!(path.exists(), "{} missing: {}", path.display(), s.output());
    s.cmd("start");
    wait_port_rx(&mut s, 0, 1000);
    let out = query(client, &prefix, &["/ethdev/list", "/ethdev/stats,0", "/ethdev/info,1", "/mempool/list"]);
    assert!(out.contains(r#"{"/ethdev/list": [0, 1]}"#), "{out}");
    assert!(out.contains(r#""name": "net_null1""#), "{out}");
    assert!(out.contains(r#"{"/mempool/list": ["mb_pool_0"]}"#), "{out}");
    let first = number(&out, "/ethdev/stats", "ipackets");
    assert!(first >= 1000, "forwarded packets show: {out}");
    // Live: a later read counts more while forwarding goes on.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let again = query(client, &prefix, &["/ethdev/stats,0"]);
        if number(&again, "/ethdev/stats", "ipackets") > first {
            break;
        }
        assert!(Instant::now() < deadline, "stats did not move: {again}");
        std::thread::sleep(Duration::from_millis(50));
    }
    s.cmd("stop");
    quit(s);
    assert!(!path.exists(), "the socket is removed at exit");
}

#[test]
fn no_telemetry_serves_no_socket() {
    let prefix = format!("tpmd-notele-{}", std::process::id());
    let s = boot(&["--file-prefix", &prefix, "--no-telemetry", "--vdev", "net_null0"], &["-i"]);
    assert!(!socket(&prefix).exists());
    quit(s);
}
