//! testpmd-rs at a real terminal: a pseudo-terminal the test opens, with line editing, tab completion and
//! history going through rustyline.

mod common;

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;

struct Pty {
    master: File,
    out: Arc<Mutex<String>>,
    child: std::process::Child,
}

impl Pty {
    fn spawn(eal: &[&str], app: &[&str]) -> Pty {
        let (mut master, mut slave) = (-1, -1);
        let ws = libc::winsize { ws_row: 50, ws_col: 200, ws_xpixel: 0, ws_ypixel: 0 };
        // SAFETY: openpty writes two descriptors into the given ints; name and termios are optional (null).
        let rc = unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), &ws) };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both descriptors were just opened by openpty and are owned by nobody else.
        let (master, slave) = unsafe { (File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let mut cmd = command(eal, app);
        cmd.env("TERM", "xterm")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        let child = cmd.spawn().unwrap();
        let out = Arc::new(Mutex::new(String::new()));
        let (mut reader, mut answer) = (master.try_clone().unwrap(), master.try_clone().unwrap());
        let out2 = out.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                // A terminal answers cursor position requests.
                if text.contains("\x1b[6n") {
                    let _ = answer.write_all(b"\x1b[1;1R");
                }
                out2.lock().unwrap().push_str(&text);
            }
        });
        Pty { master, out, child }
    }

    fn output(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    fn wait_for_from(&self, from: usize, needle: &str) -> String {
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            let o = self.output();
            if o.get(from..).is_some_and(|t| t.contains(needle)) {
                return o;
            }
            assert!(Instant::now() < end, "timed out waiting for {needle:?}; screen so far:\n{o}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn type_keys(&mut self, keys: &str) -> usize {
        let from = self.output().len();
        self.master.write_all(keys.as_bytes()).unwrap();
        self.master.flush().unwrap();
        from
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[test]
fn interactive_session_at_a_terminal() {
    let mut t = Pty::spawn(&["--vdev", "net_ring0,link=w", "--vdev", "net_ring1,link=w"], &["-i"]);
    t.wait_for_from(0, "testpmd> ");
    // Tab completion: "sho<TAB>" becomes "show", then the rest of the command.
    let from = t.type_keys("sho\t");
    t.wait_for_from(from, "show");
    let from = t.type_keys(" config fwd\r");
    t.wait_for_from(from, "streams=2");
    let from = t.type_keys("start tx_first\r");
    t.wait_for_from(from, "TX RS bit threshold");
    // Let the packets go round, watching the port counters from the terminal.
    let end = Instant::now() + FWD_DEADLINE;
    let forwarded = loop {
        let from = t.type_keys("show port stats 0\r");
        let o = t.wait_for_from(from, "TX-packets:");
        // The counters are read once their line is complete.
        let at = o[from..].find("TX-packets:").unwrap() + from;
        let o = t.wait_for_from(at, "\n");
        let rx = nic_stats(&o[from..], 0).map_or(0, |(rx, _)| rx);
        if rx >= 1000 {
            break rx;
        }
        assert!(Instant::now() < end, "port 0 received only {rx} packets");
        std::thread::sleep(Duration::from_millis(10));
    };
    let from = t.type_keys("stop\r");
    let o = t.wait_for_from(from, "Done.");
    let total = fwd_total_block(&o[from..]).expect("accumulated statistics");
    assert!(total.rx_packets >= forwarded, "{total:?} after {forwarded} seen running");
    assert_eq!(total.tx_packets, total.rx_packets + 64, "{o}");
    // History: the up arrow brings "stop" back.
    let from = t.type_keys("\x1b[A\r");
    t.wait_for_from(from, "Packet forwarding not started");
    // A bad command keeps the prompt.
    let from = t.type_keys("show port stats 9\r");
    t.wait_for_from(from, "Invalid port 9");
    let from = t.type_keys("quit\r");
    let o = t.wait_for_from(from, "Bye...");
    let end = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = t.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < end, "did not exit");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success());
    assert_pool_full(&o);
}

#[test]
fn a_byte_that_is_not_utf8_at_the_terminal_does_not_end_the_session() {
    let mut t = Pty::spawn(&["--vdev", "net_null0"], &["-i"]);
    t.wait_for_from(0, "testpmd> ");
    let from = t.output().len();
    t.master.write_all(b"\xff\xfe\r").unwrap();
    t.master.flush().unwrap();
    // rustyline reports the line as not UTF-8: said, and the prompt comes back.
    let o = t.wait_for_from(from, "Bad input");
    t.wait_for_from(o[from..].find("Bad input").unwrap() + from, "testpmd> ");
    let from = t.type_keys("show port summary all\r");
    t.wait_for_from(from, "net_null0");
    let from = t.type_keys("quit\r");
    let o = t.wait_for_from(from, "Bye...");
    assert_pool_full(&o);
}
