//! The servers' command lines: values that cannot work are refused with the option and the range, and no value
//! makes a server ignore Ctrl-C. Runs the binaries on a `net_null` port (no namespace or privilege needed).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("servers-cli-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    /// A configuration on a `net_null` port that receives nothing (so an idle loop sleeps).
    fn config(&self) -> PathBuf {
        let path = self.0.join("null.toml");
        let text = format!(
            "[port]\ndevice = \"net_null0,no-rx=1\"\n[ipv4]\naddress = \"10.0.0.2/24\"\n[memory]\npool_size = 1024\n\
             [control]\nname = \"cli\"\ndir = \"{}\"\n",
            self.0.display()
        );
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `exe --config FILE args --no-telemetry` to its end (bounded), returning its exit success and stderr.
fn run(exe: &str, config: &PathBuf, args: &[&str]) -> (bool, String) {
    let mut child = Command::new(exe)
        .arg("--config")
        .arg(config)
        .args(args)
        .arg("--no-telemetry")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{exe} {args:?} did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn option_values_that_cannot_work_are_refused_with_their_range() {
    let dir = Dir::new("bad");
    let config = dir.config();
    let kv = env!("CARGO_BIN_EXE_kv-server");
    let http = env!("CARGO_BIN_EXE_http-server");
    let cases: &[(&str, &[&str], &str)] = &[
        (kv, &["--port", "0"], "--port: `0`: expected a TCP port from 1 to 65535"),
        (kv, &["--port", "65536"], "from 1 to 65535"),
        (http, &["--page-bytes", "99999999999"], "--page-bytes: `99999999999`: expected 0 to 67108864 bytes"),
        (kv, &["--idle-sleep-us", "99999999999999"], "--idle-sleep-us: 99999999999999 microseconds: expected 0 to"),
        (kv, &["--idle-spin-us", "-1"], "--idle-spin-us"),
        (kv, &["--idle-timeout-s", "99999999"], "--idle-timeout-s: `99999999`: expected 0 to 86400 seconds"),
        (http, &["--request-timeout-s", "x"], "--request-timeout-s: `x`"),
        (kv, &["--max-unsent-kb", "0"], "--max-unsent-kb: 0: expected 1 to"),
        (http, &["--max-pending-mb", "9999999"], "--max-pending-mb"),
    ];
    for (exe, args, want) in cases {
        let (ok, stderr) = run(exe, &config, args);
        assert!(!ok, "{exe} {args:?} was accepted");
        assert!(stderr.contains(want), "{exe} {args:?}: `{stderr}` lacks `{want}`");
    }
}

#[test]
fn the_longest_idle_sleep_still_sees_ctrl_c() {
    let dir = Dir::new("sigint");
    let config = dir.config();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kv-server"))
        .arg("--config")
        .arg(&config)
        .args(["--idle-sleep-us", "1000000", "--no-telemetry"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Up once its control socket is there.
    let socket = dir.0.join("netstack-cli.0.sock");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "kv-server did not come up");
        assert!(child.try_wait().unwrap().is_none(), "kv-server exited");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill has no memory preconditions; the pid is our own child's.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("kv-server --idle-sleep-us 1000000 ignored SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(child.wait().unwrap().success());
}
