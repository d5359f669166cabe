//! Driving the testpmd-rs binary from tests: a session over pipes, output collection, and parsers for the
//! statistics blocks.

#![allow(dead_code)]

use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use testkit::App;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_testpmd-rs");

/// A command running testpmd-rs with `-l 0-1 --no-huge`, the given EAL extras (vdevs) and app arguments.
pub fn command(eal: &[&str], app: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(["-l", "0-1", "--no-huge"]).args(eal).arg("--").args(app);
    c
}

/// A running testpmd-rs whose stdin we write and whose stdout and stderr we collect: the test kit's [`testkit::App`]
/// (through `Deref`: `send`, `send_bytes`, `output`, `wait_for_from`, `pid`) plus testpmd's prompt.
pub struct Session(App);

impl std::ops::Deref for Session {
    type Target = App;
    fn deref(&self) -> &App {
        &self.0
    }
}

impl std::ops::DerefMut for Session {
    fn deref_mut(&mut self) -> &mut App {
        &mut self.0
    }
}

impl Session {
    /// Starts `cmd` with piped stdio.
    pub fn spawn(cmd: Command) -> Session {
        Session(App::spawn_interactive(cmd))
    }

    /// Waits until the output contains `needle`.
    pub fn wait_for(&self, needle: &str, timeout: Duration) -> String {
        self.0.wait_for_from(0, needle, timeout)
    }

    /// Sends `line` and waits for the next prompt after it; returns what the command printed.
    pub fn cmd(&mut self, line: &str) -> String {
        let from = self.output().len();
        self.send(line);
        // The prompt was printed before we wrote; the echo of the line follows it (dpdk-testpmd ends it with
        // "\r\n").
        let echo = format!("{line}\n");
        let echo_cr = format!("{line}\r\n");
        let end = Instant::now() + Duration::from_secs(20);
        let (o, start) = loop {
            let o = self.output();
            let tail = o.get(from..).unwrap_or("");
            if let Some(at) = tail.find(&echo) {
                break (o.clone(), from + at + echo.len());
            }
            if let Some(at) = tail.find(&echo_cr) {
                break (o.clone(), from + at + echo_cr.len());
            }
            if Instant::now() > end {
                panic!("timed out waiting for the echo of {line:?}; output so far:\n{o}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let _ = o;
        let o = self.wait_for_from(start, "testpmd> ", Duration::from_secs(20));
        let end = o[start..].find("testpmd> ").unwrap() + start;
        o[start..end].to_string()
    }

    /// Closes stdin and waits for the exit; returns the status and the whole output.
    pub fn finish(self) -> (ExitStatus, String) {
        self.0.wait_within(Duration::from_secs(30))
    }
}

/// One "Forward statistics for port N" block, or the accumulated one (port `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FwdBlock {
    pub rx_packets: u64,
    pub rx_dropped: u64,
    pub tx_packets: u64,
    pub tx_dropped: u64,
}

fn field(line: &str, name: &str) -> Option<u64> {
    let at = line.find(name)? + name.len();
    line[at..].split_whitespace().next()?.parse().ok()
}

fn block_after(text: &str, header: &str) -> Option<FwdBlock> {
    let at = text.rfind(header)?;
    let mut b = FwdBlock::default();
    for line in text[at..].lines().skip(1).take(8) {
        if line.contains("RX-packets:") {
            b.rx_packets = field(line, "RX-packets:")?;
            b.rx_dropped = field(line, "RX-dropped:")?;
        }
        if line.contains("TX-packets:") {
            b.tx_packets = field(line, "TX-packets:")?;
            b.tx_dropped = field(line, "TX-dropped:")?;
            return Some(b);
        }
    }
    None
}

/// The last forward statistics block of port `port` in `text`.
pub fn fwd_port_block(text: &str, port: u16) -> Option<FwdBlock> {
    block_after(text, &format!("Forward statistics for port {port:<2} "))
}

/// The last accumulated forward statistics block in `text`.
pub fn fwd_total_block(text: &str) -> Option<FwdBlock> {
    block_after(text, "Accumulated forward statistics for all ports")
}

/// (RX-packets, TX-packets) of the last NIC statistics block of `port`.
pub fn nic_stats(text: &str, port: u16) -> Option<(u64, u64)> {
    let at = text.rfind(&format!("NIC statistics for port {port:<2} "))?;
    let mut rx = None;
    for line in text[at..].lines().skip(1).take(6) {
        if line.contains("RX-packets:") {
            rx = field(line, "RX-packets:");
        }
        if line.contains("TX-packets:") {
            return Some((rx?, field(line, "TX-packets:")?));
        }
    }
    None
}

/// How long a test waits for forwarding to reach a count: generous, the machine may be loaded.
pub const FWD_DEADLINE: Duration = Duration::from_secs(30);

/// Polls `show port stats PORT` until its RX-packets reach `at_least`; returns the (RX, TX) seen. Stands in for
/// "let it forward for a while": it waits as long as a slow machine needs and fails if nothing is forwarded.
pub fn wait_port_rx(s: &mut Session, port: u16, at_least: u64) -> (u64, u64) {
    let end = Instant::now() + FWD_DEADLINE;
    loop {
        let st = s.cmd(&format!("show port stats {port}"));
        let seen = nic_stats(&st, port).unwrap_or_else(|| panic!("no NIC statistics for port {port}:\n{st}"));
        if seen.0 >= at_least {
            return seen;
        }
        assert!(Instant::now() < end, "port {port} received only {} of {at_least} packets:\n{st}", seen.0);
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `show fwd stats all` until the accumulated block satisfies `done`; returns that block.
pub fn wait_fwd(s: &mut Session, what: &str, done: impl Fn(&FwdBlock) -> bool) -> FwdBlock {
    let end = Instant::now() + FWD_DEADLINE;
    loop {
        let st = s.cmd("show fwd stats all");
        let total = fwd_total_block(&st).unwrap_or_else(|| panic!("no accumulated forward statistics:\n{st}"));
        if done(&total) {
            return total;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}: {total:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Asserts the quit report says the pool is full.
pub fn assert_pool_full(text: &str) {
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with("mbuf pool mb_pool_0:"))
        .unwrap_or_else(|| panic!("no mempool line in:\n{text}"));
    let counts = line.split_whitespace().nth(3).unwrap();
    let (a, b) = counts.split_once('/').unwrap();
    assert_eq!(a, b, "pool not full after quit: {line}");
}

/// A scratch directory removed on drop.
#[allow(unused_imports)] // each test binary uses a part
pub use testkit::TempDir;

/// Skips the calling test with what it needs (returns false), or fails it when NETNS_TESTS_REQUIRED=1: the project's
/// test command sets it, and there a missing tool or privilege is a broken machine, not a pass.
pub fn skip_netns(reason: &str) -> bool {
    testkit::skip("NETNS_TESTS_REQUIRED", reason)
}

/// Two null ports and two simulated X540 ports: the EAL arguments the stdin-script tests run on.
pub const NULLS: &[&str] = &["--vdev", "net_null0", "--vdev", "net_null1"];
pub const X540: &[&str] = &["--vdev", "net_sim_x540,ports=2"];

/// Starts testpmd-rs interactively and waits for its prompt.
pub fn boot(eal: &[&str], app: &[&str]) -> Session {
    let s = Session::spawn(command(eal, app));
    s.wait_for("testpmd> ", Duration::from_secs(30));
    s
}

/// Quits a session and requires a clean exit: status 0, no panic, every pool full.
pub fn quit(mut s: Session) -> String {
    s.send("quit");
    let (status, out) = s.finish();
    assert!(status.success(), "{out}");
    assert!(!out.contains("panicked"), "{out}");
    assert_pool_full(&out);
    out
}
