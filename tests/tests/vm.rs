//! VFIO for real: boots a QEMU guest (tests/vm/harness.py) with an emulated IOMMU and emulated NICs, runs the
//! guest tests through /dev/vfio there, and checks the verdicts read from the guest's console (and the host
//! peer's checks on the TAPs). One boot serves every test below.
//!
//! Skipped, with the reason printed, only where QEMU cannot be installed (or the harness cannot run as root).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The guest tests run in the one boot, in order.
const GUEST_TESTS: &[&str] = &[
    "vfio-probe",
    "virtio-exchange",
    "virtio-fwd",
    "virtio-mq",
    "virtio-unmapped",
    "testpmd-fwd",
    "igb-exchange",
    "testpmd-igb",
    "testpmd-noargs",
];

struct VmRun {
    skipped: Option<String>,
    verdicts: HashMap<String, (bool, String)>,
    output: String,
}

fn vm_run() -> &'static VmRun {
    static RUN: OnceLock<VmRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let t0 = std::time::Instant::now();
        let out = Command::new("python3")
            .arg(repo.join("tests/vm/harness.py"))
            .arg("--tests")
            .arg(GUEST_TESTS.join(","))
            .current_dir(&repo)
            .output()
            .expect("python3 is needed to run the VM harness (tests/vm/harness.py)");
        let output = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        eprintln!("VM harness: exit {:?} after {:.1} s", out.status.code(), t0.elapsed().as_secs_f64());
        let skipped = (out.status.code() == Some(77)).then(|| {
            output.lines().find_map(|l| l.strip_prefix("VM TEST SKIPPED: ")).unwrap_or("no reason given").to_string()
        });
        let mut verdicts = HashMap::new();
        for line in output.lines() {
            // "VM TEST name: PASS (why)"
            if let Some(rest) = line.strip_prefix("VM TEST ") {
                if let Some((name, v)) = rest.split_once(": ") {
                    verdicts.insert(name.to_string(), (v.starts_with("PASS"), v.to_string()));
                }
            }
        }
        VmRun { skipped, verdicts, output }
    })
}

fn check(test: &str) {
    let run = vm_run();
    if let Some(why) = &run.skipped {
        eprintln!("SKIPPED VM test {test}: {why}");
        return;
    }
    // The failed test's own console lines (the harness repeats them as "VM EXCERPT name | ..."), shown first:
    // the whole output follows, but the excerpt alone should explain a CI failure.
    let prefix = format!("VM EXCERPT {test} | ");
    let excerpt: Vec<&str> = run.output.lines().filter_map(|l| l.strip_prefix(prefix.as_str())).collect();
    let excerpt = if excerpt.is_empty() { "(none)".to_string() } else { excerpt.join("\n") };
    match run.verdicts.get(test) {
        Some((true, _)) => {}
        Some((false, why)) => panic!(
            "VM test {test} failed: {why}\n--- console of {test} ---\n{excerpt}\n--- harness output ---\n{}",
            run.output
        ),
        None => panic!("VM test {test} has no verdict\n--- harness output ---\n{}", run.output),
    }
}

#[test]
fn vm_vfio_probe() {
    check("vfio-probe");
}

#[test]
fn vm_virtio_exchange_with_host_peer() {
    check("virtio-exchange");
}

#[test]
fn vm_virtio_io_forward_between_two_nics() {
    check("virtio-fwd");
}

#[test]
fn vm_virtio_dma_to_unmapped_iova_fails() {
    check("virtio-unmapped");
}

#[test]
fn vm_testpmd_rs_io_forward_over_virtio() {
    check("testpmd-fwd");
}

#[test]
fn vm_virtio_two_queue_pairs() {
    check("virtio-mq");
}

#[test]
fn vm_igb_exchange_with_host_peer() {
    check("igb-exchange");
}

#[test]
fn vm_testpmd_rs_io_forward_between_igb_and_virtio() {
    check("testpmd-igb");
}

#[test]
fn vm_testpmd_rs_without_eal_arguments_probes_the_vfio_devices() {
    check("testpmd-noargs");
}
