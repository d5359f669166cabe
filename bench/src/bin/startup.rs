//! Start-up time of a testpmd-like program: seconds from launch to its first prompt and to its first forwarded
//! packet, driving it through its stdin as a script would.
//!
//! Usage: `startup [--timeout S] -- PROGRAM ARGS...` (PROGRAM must be started with `-i`). The clock starts right
//! before the program is spawned. `start` is sent as soon as the first `testpmd> ` prompt appears, then
//! `show port stats all` again and again, each as soon as the previous one's output has ended (the next prompt),
//! until the summed `TX-packets` of the ports is above zero: the time of that show's output is taken as the time of
//! the first forwarded packet (an upper bound: the packet went out after `start` was sent, `start_sent_s`, and
//! before that output; `start_done_s` is when `start` had returned). It is late by at most one poll round trip
//! (the median round trip, `start` included, is printed as `poll_ms`). Then `stop` and `quit` are sent. The program's stdout must not be block-buffered (wrap a C program in
//! `stdbuf -oL`). Prints one `RESULT test=startup ...` line; exits with status 1 if no packet was forwarded in time.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const PROMPT: &str = "testpmd> ";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut timeout = 30.0f64;
    let mut i = 0;
    while i < args.len() && args[i] != "--" {
        match args[i].as_str() {
            "--timeout" => {
                timeout = args.get(i + 1).and_then(|v| v.parse().ok()).expect("--timeout S");
                i += 1;
            }
            a => panic!("unknown option {a}; usage: startup [--timeout S] -- PROGRAM ARGS..."),
        }
        i += 1;
    }
    let cmd = &args[(i + 1).min(args.len())..];
    assert!(!cmd.is_empty(), "usage: startup [--timeout S] -- PROGRAM ARGS...");

    let t0 = Instant::now();
    let mut child = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", cmd[0]));
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = child.stdout.take().expect("stdout");

    // The reader thread passes on every chunk with the time it arrived; the main thread does the parsing.
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        loop {
            match stdout.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }
        }
    });

    let deadline = t0 + Duration::from_secs_f64(timeout);
    let mut text = String::new(); // output not yet parsed
    let mut prompt_at: Option<Instant> = None;
    let mut started = false;
    let mut tx_sum = 0u64;
    let mut shows = 0u32;
    let mut sent_at = t0;
    let mut rtts: Vec<f64> = Vec::new();
    let mut first_tx: Option<Instant> = None;
    let mut start_sent: Option<Instant> = None;
    let mut start_done: Option<Instant> = None;
    while first_tx.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok((at, chunk)) = rx.recv_timeout(left) else { break };
        text.push_str(&String::from_utf8_lossy(&chunk));
        // Walk the output in order: complete lines (the ports' TX-packets of the show in progress) and prompts
        // (each ends the previous command's output; a program may echo the command after it).
        loop {
            let nl = text.find('\n');
            let pr = text.find(PROMPT);
            match (nl, pr) {
                (_, Some(p)) if nl.is_none_or(|n| p < n) => {
                    text.drain(..p + PROMPT.len());
                    if prompt_at.is_none() {
                        prompt_at = Some(at);
                    }
                    if started && start_done.is_none() {
                        start_done = Some(at);
                    }
                    if started {
                        rtts.push(at.duration_since(sent_at).as_secs_f64());
                        shows += 1;
                        if tx_sum > 0 {
                            first_tx = Some(at);
                            break;
                        }
                    }
                    tx_sum = 0;
                    let cmd: &[u8] = if started { b"show port stats all\n" } else { b"start\n" };
                    sent_at = Instant::now();
                    if !started {
                        start_sent = Some(sent_at);
                        started = true;
                    }
                    let _ = stdin.write_all(cmd);
                }
                (Some(n), _) => {
                    let line: String = text.drain(..=n).collect();
                    if let Some(rest) = line.trim_start().strip_prefix("TX-packets:") {
                        tx_sum += rest.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
                    }
                }
                _ => break,
            }
        }
    }
    let _ = stdin.write_all(b"stop\nquit\n");
    drop(stdin);
    let exit_by = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < exit_by => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
        }
    }
    rtts.sort_by(|a, b| a.total_cmp(b));
    let poll_ms = rtts.get(rtts.len() / 2).map_or(f64::NAN, |r| r * 1e3);
    let secs = |t: Option<Instant>| t.map_or(f64::NAN, |t| t.duration_since(t0).as_secs_f64());
    println!(
        "RESULT test=startup prompt_s={:.4} start_sent_s={:.4} start_done_s={:.4} first_tx_s={:.4} polls={shows} \
         poll_ms={poll_ms:.3}",
        secs(prompt_at),
        secs(start_sent),
        secs(start_done),
        secs(first_tx)
    );
    if first_tx.is_none() {
        std::process::exit(1);
    }
}
