//! Runs `examples/flow_counter` as users do and checks what it prints: every packet sent arrives, the run ends as
//! soon as they have, and the final rate agrees with the per-interval lines (which tile the time the packets took).

use std::path::PathBuf;
use std::process::Command;

/// Builds the example (a no-op when `cargo test` already did) and returns its path.
fn example() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "-p", "pktio", "--example", "flow_counter"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("running cargo build");
    assert!(status.success(), "building the flow_counter example failed");
    // This test runs from target/<profile>/deps/; examples live in target/<profile>/examples/.
    let exe = std::env::current_exe().expect("test path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let path = dir.join("examples").join("flow_counter");
    assert!(path.exists(), "{} missing after the build", path.display());
    path
}

fn run(args: &[&str]) -> String {
    let out = Command::new(example()).args(args).output().expect("running flow_counter");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "flow_counter {args:?} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// The number after `word` in `line` (`"sent 300, ..."` and `"sent" -> 300`).
fn after(line: &str, word: &str) -> f64 {
    let mut it = line.split_whitespace().map(|w| w.trim_matches(|c| c == ',' || c == '(' || c == ')' || c == ':'));
    while let Some(w) = it.next() {
        if w == word {
            return it.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no number after {word}: {line}"));
        }
    }
    panic!("{word:?} not in {line:?}")
}

fn line<'a>(out: &'a str, start: &str) -> &'a str {
    out.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("no line starting {start:?} in\n{out}"))
}

#[test]
fn every_packet_arrives_and_the_run_ends_then_with_a_rate_over_their_time() {
    let packets = 200_000u64;
    let started = std::time::Instant::now();
    // A generous time limit: the run must end long before it, when the last packet arrives.
    let out = run(&["--packets", &packets.to_string(), "--interval-ms", "20", "--seconds", "30"]);
    let wall = started.elapsed().as_secs_f64();
    assert!(!out.contains("time limit reached"), "{out}");

    let traffic = line(&out, "traffic thread:");
    assert_eq!(after(traffic, "generated") as u64, packets, "{traffic}");
    assert_eq!(after(traffic, "sent") as u64, packets, "the last partial burst must be sent too: {traffic}");
    assert_eq!(after(traffic, "unsent") as u64, 0, "{traffic}");

    let summary = line(&out, "received ");
    assert_eq!(after(summary, "received") as u64, packets, "{summary}");
    let took = after(summary, "in");
    let rate = summary.split('(').nth(1).and_then(|r| r.split_whitespace().next()).unwrap().parse::<f64>().unwrap();
    assert!(took > 0.0 && took < wall, "took {took} s in a process that ran {wall} s");
    assert!((rate * took * 1e6 - packets as f64).abs() < packets as f64 * 0.01, "{summary}");

    // The interval lines ("  0.0200 s  rx 1.234 Mpps ..."), times counted from the first packet.
    let intervals: Vec<(f64, f64)> = out
        .lines()
        .filter(|l| l.contains(" s  rx "))
        .map(|l| (l.split_whitespace().next().unwrap().parse().unwrap(), after(l, "rx")))
        .collect();
    assert!(!intervals.is_empty(), "{out}");
    let mut prev = 0.0;
    let mut counted = 0.0;
    for &(t, mpps) in &intervals {
        assert!(t >= prev, "interval times go backwards:\n{out}");
        counted += mpps * 1e6 * (t - prev);
        prev = t;
    }
    // The lines cover the whole time the packets took, and add up to every packet.
    assert!((prev - took).abs() < 0.001, "last interval ends at {prev} s, packets took {took} s:\n{out}");
    let mean = counted / took / 1e6;
    assert!((rate - mean).abs() <= 0.10 * mean, "final rate {rate} Mpps, the intervals say {mean} Mpps:\n{out}");
    assert!((counted - packets as f64).abs() < packets as f64 * 0.03, "intervals count {counted} packets:\n{out}");

    assert!(out.contains("of 8191 buffers free"), "{out}");
}

#[test]
fn a_time_limit_stops_the_run_and_the_accounts_still_balance() {
    let started = std::time::Instant::now();
    let out = run(&["--packets", "1000000000", "--seconds", "1", "--flows", "1000"]);
    assert!(out.contains("time limit reached"), "{out}");
    assert!(started.elapsed().as_secs_f64() < 30.0);
    let traffic = line(&out, "traffic thread:");
    let (generated, sent, unsent) = (after(traffic, "generated"), after(traffic, "sent"), after(traffic, "unsent"));
    assert!(sent > 0.0 && generated == sent + unsent, "{traffic}");
    let summary = line(&out, "received ");
    assert!(after(summary, "received") <= sent, "{summary}");
    assert!(
        out.contains("busiest flows (1000 in all"),
        "each of the 1000 flows has IPv4 packets among the first thousands: {out}"
    );
}
