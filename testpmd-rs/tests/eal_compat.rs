//! A DPDK 22.11 user's EAL line, options that mean nothing here included, run by the real binary on null ports: it
//! must start, open the `eth_null` aliases, say once per option that it ignores it, and quit cleanly. `--no-pci`
//! keeps it away from the host's PCI devices.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::BIN;

/// The first CPU this process may run on.
fn first_cpu() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim();
    list.split([',', '-']).next().unwrap().parse().unwrap()
}

#[test]
fn a_dpdk_eal_line_with_every_compatibility_option_runs_and_notes_each_once() {
    let cpu = first_cpu();
    let lcores = format!("0@{cpu},1@({cpu})");
    let args = [
        "--lcores",
        &lcores,
        "--no-huge",
        "--no-pci",
        "--vdev",
        "eth_null0",
        "--vdev=eth_null1",
        "-v",
        "-n",
        "4",
        "-d",
        "librte_net_ixgbe.so",
        "-d",
        "/usr/lib/dpdk/pmds",
        "--log-level",
        "pmd.net.*:debug",
        "--log-level",
        "^lib\\.eal$,info",
        "--single-file-segments",
        "--legacy-mem",
        "--base-virtaddr",
        "0x7f0000000000",
        "--vfio-intr",
        "msix",
        "--telemetry",
        "--no-telemetry",
        "--force-max-simd-bitwidth",
        "256",
        "--",
        "-i",
    ];
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("testpmd-rs starts");
    child.stdin.take().unwrap().write_all(b"show port info all\nquit\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}\nstderr:\n{stderr}");
    for port in ["eth_null0", "eth_null1"] {
        assert!(stdout.contains(&format!("Device name: {port}")), "{port} missing:\n{stdout}");
    }
    assert_eq!(stdout.matches("Driver name: net_null").count(), 2, "{stdout}");
    assert!(stderr.contains("EAL: pktio-rs EAL "), "-v prints the version:\n{stderr}");
    for option in [
        "-n",
        "-d",
        "--single-file-segments",
        "--legacy-mem",
        "--base-virtaddr",
        "--vfio-intr",
        "--force-max-simd-bitwidth",
    ] {
        let line = format!("EAL: {option} accepted and ignored: ");
        assert_eq!(stderr.matches(&line).count(), 1, "{option} noted once:\n{stderr}");
    }
    // --telemetry/--no-telemetry are real options now: the last one given (--no-telemetry) holds, no note.
    assert!(!stderr.contains("--telemetry accepted"), "{stderr}");
}
