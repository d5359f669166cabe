//! testpmd-rs under a hostile user (issue 29): waits a user cannot end, and input that has no end. Each test names
//! the command that hung or ran out of memory before the fix.

mod common;

use std::time::{Duration, Instant};

use common::*;

/// Polls `show port stats PORT` until its TX-packets reach `at_least`: the tx_first rounds are running.
fn wait_port_tx(s: &mut Session, port: u16, at_least: u64) {
    let end = Instant::now() + FWD_DEADLINE;
    loop {
        let st = s.cmd(&format!("show port stats {port}"));
        let (_, tx) = nic_stats(&st, port).unwrap_or_else(|| panic!("no NIC statistics for port {port}:\n{st}"));
        if tx >= at_least {
            return;
        }
        assert!(Instant::now() < end, "port {port} sent only {tx} of {at_least} packets:\n{st}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `start tx_first 4294967295` then `stop`: the txonly rounds check the stop flag, so `stop` returns at once
/// (it blocked for hours; with N = 2,000,000 on pcap ports it took 25 s). Null ports take every burst, so the
/// rounds run at full speed, and every buffer is back at quit.
#[test]
fn stop_ends_a_huge_tx_first_promptly() {
    let mut s = boot(NULLS, &["-i"]);
    s.cmd("start tx_first 4294967295");
    // Let the rounds run a while, so that the stop lands in the middle of them.
    wait_port_tx(&mut s, 0, 10_000);
    let t = Instant::now();
    let stop = s.cmd("stop");
    let took = t.elapsed();
    assert!(took < Duration::from_secs(5), "stop took {took:?}:\n{stop}");
    assert!(stop.trim_end().ends_with("Done."), "{stop}");
    quit(s);
}

/// The same rounds, ended by `quit` and by SIGTERM: the process exits promptly with status 0 and a full pool.
#[test]
fn quit_and_sigterm_end_a_huge_tx_first_promptly() {
    let mut s = boot(NULLS, &["-i"]);
    s.cmd("start tx_first 4294967295");
    wait_port_tx(&mut s, 0, 10_000);
    let t = Instant::now();
    let out = quit(s);
    assert!(t.elapsed() < Duration::from_secs(10), "quit took {:?}", t.elapsed());
    assert!(out.contains("Bye..."), "{out}");

    let mut s = boot(NULLS, &["-i"]);
    s.cmd("start tx_first 4294967295");
    wait_port_tx(&mut s, 0, 10_000);
    let t = Instant::now();
    // SAFETY: kill() with a pid of our own child and SIGTERM has no memory effects.
    unsafe { libc::kill(s.pid() as i32, libc::SIGTERM) };
    // With stdin still open: the signal alone ends the session.
    s.wait_for("Bye...", Duration::from_secs(10));
    assert!(t.elapsed() < Duration::from_secs(10), "SIGTERM took {:?}", t.elapsed());
    let (status, out) = s.finish();
    assert!(status.success(), "{out}");
    assert!(out.contains("Signal received, preparing to exit..."), "{out}");
    assert_pool_full(&out);
}

/// A line longer than the bound at the prompt (here 1 MiB) is dropped with a message, with bounded memory, and
/// the session goes on (before the fix the reader kept every byte: `testpmd-rs -i < /dev/zero` ran out of memory).
#[test]
fn an_endless_line_at_the_prompt_is_dropped_and_the_session_goes_on() {
    let mut s = boot(NULLS, &["-i"]);
    let mut junk = vec![b'x'; 1 << 20];
    junk.push(b'\n');
    s.send_bytes(&junk);
    s.wait_for("Bad input: a line longer than 16384 bytes; ignored", Duration::from_secs(20));
    assert!(s.cmd("show port summary all").contains("net_null1"));
    let out = quit(s);
    assert!(out.len() < 64 * 1024, "the line was echoed: {} bytes of output", out.len());
}

/// `--cmdline-file /dev/zero` with -i: the file is refused at its first line (it read until memory ran out) and
/// the prompt comes, as dpdk-testpmd's does after a file that fails.
#[test]
fn an_endless_cmdline_file_is_refused_and_the_prompt_comes() {
    let mut s = boot(NULLS, &["-i", "--cmdline-file", "/dev/zero"]);
    let o = s.wait_for("/dev/zero:1: line longer than 16384 bytes", Duration::from_secs(20));
    assert!(o.len() < 64 * 1024, "{} bytes of output", o.len());
    assert!(s.cmd("show port summary all").contains("net_null0"));
    quit(s);
}
