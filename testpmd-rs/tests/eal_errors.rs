//! Bad EAL arguments given to the real binary: each must end the process with status 1, without a panic, with a
//! message that names the culprit and says what would be right. Every case fails before any device is touched
//! (parse errors, unknown vdevs, memory budget), so none reaches the host's PCI devices.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::BIN;

/// Runs testpmd-rs with `args` (stdin closed) and returns (exit code, stdout, stderr).
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("testpmd-rs starts");
    let end = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            panic!("testpmd-rs {args:?} did not exit within 30 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts that `args` make testpmd-rs exit 1 with every one of `needles` on stderr and no panic.
fn refused(args: &[&str], needles: &[&str]) {
    let (code, out, err) = run(args);
    assert!(!err.contains("panicked at") && !out.contains("panicked at"), "{args:?} panicked:\n{err}");
    assert_eq!(code, Some(1), "{args:?} must exit with status 1; stdout:\n{out}\nstderr:\n{err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: stderr lacks {n:?}:\n{err}");
    }
    // Nothing started: no port came up, no prompt.
    assert!(!out.contains("testpmd> ") && !out.contains("Port 0: "), "{args:?} got as far as starting:\n{out}");
}

#[test]
fn malformed_lcore_lists_and_masks() {
    refused(&["-l", "99999", "--no-huge", "--vdev", "net_null0"], &["EAL: -l \"99999\"", "over the maximum 127"]);
    refused(&["-l", "3-1", "--no-huge", "--vdev", "net_null0"], &["range 3-1 runs backwards"]);
    refused(&["-l", "a-b", "--no-huge", "--vdev", "net_null0"], &["expected a core list such as 0-3"]);
    refused(&["-c", "0x0", "--no-huge", "--vdev", "net_null0"], &["-c \"0x0\"", "selects no lcore"]);
    refused(&["-c", "zz", "--no-huge", "--vdev", "net_null0"], &["expected a hex mask such as 0x3"]);
    refused(&["--no-huge", "--vdev", "net_null0", "-l"], &["option -l needs a value"]);
    refused(
        &["-l", "0", "--main-lcore", "1", "--no-huge", "--vdev", "net_null0"],
        &["--main-lcore 1 is not in the lcore list"],
    );
}

/// The first lcore id (below the EAL's 128) this process may not run on, if any.
fn unavailable_cpu() -> Option<u32> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is this process; the size and pointer describe `set`.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    assert_eq!(rc, 0, "sched_getaffinity");
    // SAFETY: `set` is initialised and `cpu` < CPU_SETSIZE.
    (0..128u32).find(|&cpu| !unsafe { libc::CPU_ISSET(cpu as usize, &set) })
}

#[test]
fn lcore_that_is_not_an_available_cpu() {
    let Some(cpu) = unavailable_cpu() else {
        eprintln!("every lcore id below 128 is an available CPU here: nothing to test");
        return;
    };
    let l = cpu.to_string();
    refused(
        &["-l", &l, "--no-huge", "--vdev", "net_null0"],
        &[&format!("lcore {cpu} is not a CPU this process may run on"), "pick lcores with -l from that set"],
    );
}

#[test]
fn unknown_vdevs_and_vdev_arguments() {
    refused(
        &["-l", "0-1", "--no-huge", "--vdev", "net_nosuch0"],
        &["no driver for device \"net_nosuch0\"", "known virtual devices: ", "net_null", "net_pcap"],
    );
    refused(
        &["-l", "0-1", "--no-huge", "--vdev", "net_null0,bogus=1"],
        &["--vdev \"net_null0,bogus=1\"", "unknown argument \"bogus\"", "net_null takes: size"],
    );
    refused(&["-l", "0-1", "--no-huge", "--vdev", ",x"], &["expected a device name such as net_null0"]);
    refused(
        &["-l", "0-1", "--no-huge", "--vdev", "net_null0", "--vdev", "net_null0"],
        &["a device named net_null0 already exists"],
    );
    refused(
        &["-l", "0-1", "--no-huge", "--vdev", "net_pcap0,rx_pcap=/nonexistent-testpmd-rs/in.pcap"],
        &["net_pcap0", "/nonexistent-testpmd-rs/in.pcap", "No such file or directory"],
    );
}

#[test]
fn bad_memory_and_iova_options() {
    refused(
        &["-l", "0-1", "--no-huge", "--iova-mode", "xx", "--vdev", "net_null0"],
        &["--iova-mode \"xx\": expected va or pa"],
    );
    refused(
        &["-l", "0-1", "--no-huge", "--iova-mode", "pa", "--vdev", "net_null0"],
        &["--iova-mode pa needs hugepages"],
    );
    refused(&["-l", "0-1", "--no-huge", "-m", "0", "--vdev", "net_null0"], &["-m \"0\": expected a size in MiB"]);
    refused(
        &["-l", "0-1", "--no-huge", "--socket-mem", "abc", "--vdev", "net_null0"],
        &["expected MiB per node, e.g. 1024,1024"],
    );
    refused(&["-l", "0-1", "--no-huge", "--socket-mem", "64,x", "--vdev", "net_null0"], &["--socket-mem \"64,x\""]);
    refused(&["-l", "0-1", "--no-huge", "--huge-pagesize", "3M", "--vdev", "net_null0"], &["expected 2M or 1G"]);
    // A budget the packet pool does not fit in: the message says by how much and what to raise.
    for budget in [["-m", "1"], ["--socket-mem", "1"]] {
        let mut args = vec!["-l", "0-1", "--no-huge", "--vdev", "net_null0"];
        args.extend(budget);
        refused(&args, &["memory budget exceeded", "1 MiB given with -m/--socket-mem", "raise -m"]);
    }
}

#[test]
fn malformed_pci_addresses_unknown_options_and_strays() {
    for bad in ["0000:zz:00.0", "01:00", "0000:01:00.9x"] {
        refused(
            &["-l", "0-1", "--no-huge", "-a", bad],
            &[&format!("-a \"{bad}\""), "is not a PCI address", "such as 0000:01:00.0"],
        );
    }
    refused(&["-l", "0-1", "--no-huge", "-b", "zz"], &["-b \"zz\"", "is not a PCI address"]);
    refused(&["-l", "0-1", "--no-huge", "--frobnicate"], &["unknown EAL option \"--frobnicate\"", "Run with -h"]);
    refused(&["-l", "0-1", "--no-huge", "--no-pci=1"], &["option --no-pci takes no value"]);
    refused(
        &["-l", "0-1", "--no-huge", "stray"],
        &["unexpected argument \"stray\"", "put application options after --"],
    );
    refused(&["-l", "0-1", "--no-huge", "--no-pci", "-a", "0000:01:00.0"], &["--no-pci and -a contradict"]);
}

#[test]
fn no_port_at_all_and_bad_application_options() {
    refused(&["-l", "0-1", "--no-huge", "--no-pci"], &["No probed ethernet devices", "--vdev"]);
    refused(
        &["-l", "0-1", "--no-huge", "--vdev", "net_null0", "--", "--forward-mode=nosuch"],
        &["unknown forwarding mode \"nosuch\"", "available: io mac"],
    );
}

#[test]
fn help_is_not_an_error() {
    let (code, out, err) = run(&["-h"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("EAL options:") && out.contains("net_null"), "{out}");
}
