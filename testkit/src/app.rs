//! Driving an application binary from its tests (l2fwd, l3fwd, testpmd-rs, netstack): spawn it with its output
//! collected, poll for text with a deadline, stop it with SIGINT, read numbers and addresses from what it prints,
//! and capture a running application's ports with `pktio-dumpcap`.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::pcap::read_frames;

/// How long a test waits for the application: generous, the machine may be loaded.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// A running application with its stdout and stderr collected (merged, in arrival order per stream), and its stdin
/// open for [`App::send`] when started with [`App::spawn_interactive`].
pub struct App {
    child: Child,
    stdin: Option<ChildStdin>,
    out: Arc<Mutex<String>>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

fn collect(mut r: impl Read + Send + 'static, out: Arc<Mutex<String>>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n])),
            }
        }
    })
}

impl App {
    /// Starts `bin` with `args`, stdin closed.
    pub fn spawn(bin: &str, args: &[String]) -> App {
        let mut cmd = Command::new(bin);
        cmd.args(args).stdin(Stdio::null());
        App::start(cmd)
    }

    /// Starts `cmd` with its stdin piped, for [`App::send`].
    pub fn spawn_interactive(mut cmd: Command) -> App {
        cmd.stdin(Stdio::piped());
        App::start(cmd)
    }

    fn start(mut cmd: Command) -> App {
        let mut child =
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap_or_else(|e| panic!("{cmd:?} starts: {e}"));
        let out = Arc::new(Mutex::new(String::new()));
        let readers = vec![
            collect(child.stdout.take().unwrap(), out.clone()),
            collect(child.stderr.take().unwrap(), out.clone()),
        ];
        let stdin = child.stdin.take();
        App { child, stdin, out, readers }
    }

    /// Writes `line` and a newline to the application's stdin.
    pub fn send(&mut self, line: &str) {
        self.send_bytes(format!("{line}\n").as_bytes());
    }

    /// Writes raw bytes (input that need not be UTF-8) to the application's stdin.
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open (App::spawn_interactive)");
        stdin.write_all(bytes).expect("write to the application");
        stdin.flush().unwrap();
    }

    /// Closes the application's stdin (an interactive program's end of input).
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the output after byte `from` contains `needle`; returns the whole output. Panics with the output
    /// after `timeout`.
    pub fn wait_for_from(&self, from: usize, needle: &str, timeout: Duration) -> String {
        let end = Instant::now() + timeout;
        loop {
            let o = self.output();
            if o.get(from..).is_some_and(|t| t.contains(needle)) {
                return o;
            }
            assert!(Instant::now() < end, "timed out waiting for {needle:?}; output so far:\n{o}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Everything printed so far.
    pub fn output(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    /// Polls the output until `done` holds; panics with the output after the deadline or if the process exits.
    pub fn wait_until(&mut self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + DEADLINE;
        loop {
            let o = self.output();
            if done(&o) {
                return o;
            }
            if let Some(s) = self.child.try_wait().unwrap() {
                panic!("exited ({s}) while waiting for {what}; output:\n{}", self.output());
            }
            assert!(Instant::now() < end, "timed out waiting for {what}; output:\n{o}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGINT and waits for the exit; returns the status and the whole output.
    pub fn interrupt(self) -> (ExitStatus, String) {
        // SAFETY: kill(2) on the pid of a child we spawned and have not reaped; no memory is involved.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        self.wait()
    }

    /// Waits for the exit; returns the status and the whole output.
    pub fn wait(self) -> (ExitStatus, String) {
        self.wait_within(DEADLINE)
    }

    /// Waits at most `deadline` for the exit (then kills it and panics); returns the status and the whole output.
    pub fn wait_within(mut self, deadline: Duration) -> (ExitStatus, String) {
        drop(self.stdin.take());
        let end = Instant::now() + deadline;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                panic!("did not exit; output:\n{}", self.output());
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        (status, self.output())
    }
}

impl Drop for App {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs `bin` with `args` to its exit (for argument errors).
pub fn run_to_exit(bin: &str, args: &[&str]) -> (ExitStatus, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    App::spawn(bin, &args).wait()
}

/// A scratch directory removed on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("pktio-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    pub fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }

    /// The path of `name` in the directory.
    pub fn file(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The number after `label` on the last line that holds it.
pub fn last_number(text: &str, label: &str) -> Option<u64> {
    let at = text.rfind(label)? + label.len();
    text[at..].split_whitespace().next()?.parse().ok()
}

/// The MAC address printed on a line starting with `prefix`.
pub fn mac_after(text: &str, prefix: &str) -> [u8; 6] {
    let line = text.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no {prefix:?} in:\n{text}"));
    let m: pktio::MacAddr = line[prefix.len()..].trim().parse().unwrap();
    m.0
}

/// The `pktio-dumpcap` binary (built by the testpmd-rs package) of the target directory this test runs from;
/// built there first when a narrower `cargo test -p` did not build it.
pub fn dumpcap() -> std::path::PathBuf {
    static PATH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        // target/PROFILE/deps/TEST -> target/PROFILE
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(|d| d.parent()).unwrap().to_path_buf();
        let bin = profile_dir.join("pktio-dumpcap");
        if !bin.exists() {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut cmd = Command::new(cargo);
            cmd.args(["build", "--quiet", "-p", "testpmd-rs", "--bin", "pktio-dumpcap"]);
            if profile_dir.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            let target = profile_dir.parent().unwrap();
            let out = cmd.env("CARGO_TARGET_DIR", target).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap();
            assert!(out.status.success(), "building pktio-dumpcap: {}", String::from_utf8_lossy(&out.stderr));
        }
        assert!(bin.exists(), "no {} after building it", bin.display());
        bin
    })
    .clone()
}

/// True when tcpdump is installed; without it a capture test says so and passes, unless DPDK_TESTS_REQUIRED=1
/// (scripts/test.sh) makes it fail.
pub fn have_tcpdump() -> bool {
    crate::require(
        "DPDK_TESTS_REQUIRED",
        Command::new("tcpdump").arg("--version").output().is_ok(),
        "needs tcpdump (apt-get install tcpdump)",
    )
}

/// Captures from the application running with EAL `--file-prefix prefix` with `pktio-dumpcap` (`args`: which
/// ports and directions, the count) into `dir`, requires it to write `count` packets, and returns the frames as
/// tcpdump reads them back from the pcapng file.
pub fn dumpcap_frames(dir: &TempDir, prefix: &str, args: &[&str], count: usize) -> Vec<Vec<u8>> {
    let name = format!("cap-{}.pcapng", args.join("").replace([' ', ','], "_"));
    let out = dir.path(&name);
    let n = count.to_string();
    let res = Command::new(dumpcap())
        // A capture that never reaches its count ends (and fails the check below) instead of hanging the test.
        .args(["--file-prefix", prefix, "-s", "65535", "-c", &n, "-a", "duration:60", "-w", &out])
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&res.stdout).into_owned() + &String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "pktio-dumpcap {args:?}: {text}");
    assert!(text.contains(&format!("Packets written: {count}")), "{text}");
    let copy = dir.path(&format!("{name}.pcap"));
    let td = Command::new("tcpdump").args(["-r", &out, "-w", &copy]).output().unwrap();
    assert!(td.status.success(), "tcpdump: {}", String::from_utf8_lossy(&td.stderr));
    read_frames(&copy)
}
