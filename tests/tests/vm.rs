//! VFIO for real: boots a QEMU guest (tests/vm/harness.py) with an emulated IOMMU and emulated NICs, runs the
//! guest tests through /dev/vfio there, and checks the verdicts read from the guest's console (and the host
//! peer's checks on the TAPs). One boot serves every test below but the vendor-driver ones, which share a second
//! boot: nicsim's models served over vfio-user (harness.py --vendor, a QEMU with the vfio-user client built by
//! tests/vm/qemu-vfio-user.sh) to the guest kernel's own drivers; and the model tests, a third boot: the same four
//! models behind the vIOMMU, bound to vfio-pci and driven by the project's own PMDs (harness.py --models).
//!
//! Skipped, with the reason printed, only where QEMU cannot be installed (or the harness cannot run as root); with
//! VM_TESTS_REQUIRED=1 (set by scripts/test.sh) such a skip fails every test instead, with the same reason.

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
    "virtio-rx-intr",
    "virtio-unmapped",
    "testpmd-fwd",
    "igb-exchange",
    "testpmd-igb",
    "testpmd-noargs",
];

/// The vendor-driver tests (guest/NAME.sh) and the models their boot serves.
const VENDOR_TESTS: &[&str] = &["ixgbe-x540", "ixgbe-82599", "i40e-x710"];
const VENDOR_MODELS: &str = "x540,82599,x710";

/// The tests of our drivers on the models through the guest's vfio-pci and vIOMMU, in boot order. Each counts the
/// models' frames from its own start (`model-mark`), but the fault logs run over the boot, so the fault test
/// (x540-unmapped) comes last; l3fwd comes before the X710/SP670 restart round (see tests/vm/README.md).
const MODEL_TESTS: &[&str] = &[
    "vfio-probe",
    "models-ixgbe",
    "models-l3fwd",
    "models-noargs",
    "models-i40e-hinic3",
    "x540-rx-intr",
    "x710-rx-intr",
    "sp670-rx-intr",
    "x540-unmapped",
];
const MODELS: &str = "x540,82599,x710,sp670";

/// The DPDK-judge tests (guest/dpdk-*.sh): DPDK 25.11's own dpdk-testpmd and PMDs (scripts/setup.sh's judge) on the
/// models, a boot of their own so each model's counters start at zero for its judge.
const DPDK_TESTS: &[&str] = &["dpdk-hinic3", "dpdk-i40e", "dpdk-ixgbe"];
const DPDK_MODELS: &str = "x540,82599,x710,sp670";

struct VmRun {
    skipped: Option<String>,
    verdicts: HashMap<String, (bool, String)>,
    output: String,
}

/// Whether a skip must fail the run: the project's test command (scripts/test.sh) sets VM_TESTS_REQUIRED=1, so a
/// missing QEMU, a failed install or a missing privilege is reported, not passed over.
fn required() -> bool {
    testkit::required("VM_TESTS_REQUIRED")
}

fn vm_run() -> &'static VmRun {
    static RUN: OnceLock<VmRun> = OnceLock::new();
    RUN.get_or_init(|| harness(&["--tests", &GUEST_TESTS.join(",")]))
}

fn vendor_run() -> &'static VmRun {
    static RUN: OnceLock<VmRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let tests = VENDOR_TESTS.join(",");
        harness(&["--tests", &tests, "--nics", "", "--packages", "", "--binaries", "", "--vendor", VENDOR_MODELS])
    })
}

fn models_run() -> &'static VmRun {
    static RUN: OnceLock<VmRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let tests = MODEL_TESTS.join(",");
        let guest = "vmtest,testpmd-rs,l3fwd";
        // 64 hugepages: testpmd-rs without -a opens all four ports with its default pool.
        let args = ["--tests", &tests, "--nics", "", "--packages", guest, "--binaries", guest, "--hugepages", "64"];
        harness(&[&args[..], &["--timeout", "300", "--models", MODELS]].concat())
    })
}

fn dpdk_run() -> &'static VmRun {
    static RUN: OnceLock<VmRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let tests = DPDK_TESTS.join(",");
        harness(&[
            "--tests",
            &tests,
            "--nics",
            "",
            "--packages",
            "",
            "--binaries",
            "",
            "--models",
            DPDK_MODELS,
            "--test-timeout",
            "120",
        ])
    })
}

fn harness(args: &[&str]) -> VmRun {
    {
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let t0 = std::time::Instant::now();
        let out = match Command::new("python3")
            .arg(repo.join("tests/vm/harness.py"))
            .args(args)
            .current_dir(&repo)
            .output()
        {
            Ok(out) => out,
            Err(e) => {
                let why = format!("python3 could not be run ({e}): apt-get install python3, or bash scripts/setup.sh");
                return VmRun { skipped: Some(why), verdicts: HashMap::new(), output: String::new() };
            }
        };
        let output = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        eprintln!("VM harness: exit {:?} after {:.1} s", out.status.code(), t0.elapsed().as_secs_f64());
        // The timings and verdicts, also for a passing run (with --nocapture): how close a loaded host came.
        let summary = [
            "[vm] prepared",
            "[vm] QEMU with vfio-user",
            "[vm] guest /init",
            "[vm] qemu ran",
            "VM TEST ",
            "vm summary",
        ];
        for line in output.lines().filter(|l| summary.iter().any(|p| l.starts_with(p))) {
            eprintln!("  {line}");
        }
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
    }
}

fn check(test: &str) {
    check_in(vm_run(), test)
}

fn check_in(run: &VmRun, test: &str) {
    if let Some(why) = &run.skipped {
        if required() {
            panic!("VM_TESTS_REQUIRED=1 but VM test {test} cannot run: {why}\n--- harness output ---\n{}", run.output);
        }
        eprintln!("SKIPPED VM test {test}: {why} (VM_TESTS_REQUIRED=1 makes this a failure)");
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

/// RX interrupts of our virtio PMD on QEMU's virtio-net-pci through the guest's VFIO MSI-X: `intr_conf.rxq`
/// and `lsc` (queue 0 on vector 1 through `queue_msix_vector`, configuration changes on vector 0, both read back;
/// the link descriptor quiet after `link()`), armed it stays quiet with nothing sent and wakes
/// on a frame the host injects (the frame byte for byte on rx_burst); disarmed, the next frame is on rx_burst and
/// no wake-up; pool full.
#[test]
fn vm_virtio_rx_interrupt_wakes_through_vfio_msix() {
    check("virtio-rx-intr");
}

#[test]
fn vm_igb_exchange_with_host_peer() {
    check("igb-exchange");
}

#[test]
fn vm_testpmd_rs_io_forward_between_igb_and_virtio() {
    check("testpmd-igb");
}

/// The switch itself: this test binary, run again for one VM test with a QEMU that is not there, must fail under
/// VM_TESTS_REQUIRED=1 with the harness's reason, and skip (pass, saying why) without it. Needs no QEMU: the
/// harness checks $VMTEST_QEMU before anything else (no lock, no install, no build).
#[test]
fn vm_required_switch_fails_the_run_when_qemu_is_missing() {
    let run = |required: &str| {
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "vm_vfio_probe", "--nocapture", "--test-threads=1"])
            .env("VMTEST_QEMU", "/nonexistent/qemu-system-x86_64")
            .env("VM_TESTS_REQUIRED", required)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    let reason = "VMTEST_QEMU=/nonexistent/qemu-system-x86_64 is not an executable file";
    let (ok, text) = run("1");
    assert!(!ok, "VM_TESTS_REQUIRED=1 without QEMU passed:\n{text}");
    assert!(text.contains("VM_TESTS_REQUIRED=1 but VM test vfio-probe cannot run") && text.contains(reason), "{text}");
    assert!(text.contains("1 failed"), "{text}");
    let (ok, text) = run("0");
    assert!(ok, "without VM_TESTS_REQUIRED a missing QEMU is a skip:\n{text}");
    assert!(text.contains("SKIPPED VM test vfio-probe") && text.contains(reason), "{text}");
}

#[test]
fn vm_testpmd_rs_without_eal_arguments_probes_the_vfio_devices() {
    check("testpmd-noargs");
}

/// Linux's ixgbe probes the X540 model over vfio-user: MAC from the model's NVM, link up, ping through the
/// model's wire to a TAP, MSI-X queue vectors, the interface's counters equal to the model's, no model fault.
#[test]
fn vm_linux_ixgbe_drives_the_x540_model() {
    check_in(vendor_run(), "ixgbe-x540");
}

/// Linux's ixgbe probes the 82599 (SFP+) model over vfio-user: the cage reads full, the passive DA cable is
/// identified over the bit-banged I2C bus ("detected SFP+"), MAC from the NVM, link up after the SFP+ set-up's AUTOC
/// pipeline reset, ping through the model's wire to a TAP, counters equal to the model's, no model fault.
#[test]
fn vm_linux_ixgbe_drives_the_82599_model() {
    check_in(vendor_run(), "ixgbe-82599");
}

/// Linux's i40e probes the X710 model over vfio-user: MAC from the model's firmware, link up, ping (also
/// full-size frames) through the model's wire to a TAP, an MSI-X queue vector, counters equal to the model's.
#[test]
fn vm_linux_i40e_drives_the_x710_model() {
    check_in(vendor_run(), "i40e-x710");
}

/// The guest set-up of the models boot: the four vfio-user models bound to vfio-pci, each in its own viable IOMMU
/// group of the vIOMMU.
#[test]
fn vm_models_bound_to_vfio_pci_behind_the_viommu() {
    check_in(models_run(), "vfio-probe");
}

/// Our ixgbe PMD on the X540 and 82599 models through the guest's vfio-pci: `testpmd-rs -a -a -- -i
/// --forward-mode=io`, links up, frames injected on each model's TAP arrive on the other byte for byte, exact port
/// and model counters, stop/port stop/port start/start and the same again, no model fault, the pool full.
#[test]
fn vm_testpmd_rs_forwards_between_the_x540_and_82599_models() {
    check_in(models_run(), "models-ixgbe");
}

/// The same with our i40e PMD on the X710 model and our hinic3 PMD on the SP670 model (its three register BARs and
/// the MSI-X BAR): both rounds, before and after `port stop all` / `port start all`, byte for byte.
#[test]
fn vm_testpmd_rs_forwards_between_the_x710_and_sp670_models() {
    check_in(models_run(), "models-i40e-hinic3");
}

/// `testpmd-rs -- -i` without `-a` finds the four models, each with its driver.
#[test]
fn vm_testpmd_rs_without_eal_arguments_finds_the_four_models() {
    check_in(models_run(), "models-noargs");
}

/// l3fwd (LPM, its built-in routes) routes IPv4 between the X710 and SP670 models: TTL one less, the MACs
/// rewritten, the checksum updated, exact counters.
#[test]
fn vm_l3fwd_routes_between_the_x710_and_sp670_models() {
    check_in(models_run(), "models-l3fwd");
}

/// RX interrupts through the guest's VFIO MSI-X (VFIO_DEVICE_SET_IRQS eventfds, signalled by QEMU's vfio-user
/// client when the model server writes the X540 model's message): our ixgbe PMD configured with `intr_conf.rxq`
/// and `lsc`, queue 0 armed stays quiet with nothing sent and wakes (poll with a deadline) on a frame the host
/// injects, the frame byte for byte on rx_burst; disarmed, the next frame is on rx_burst and no wake-up; pool full.
#[test]
fn vm_ixgbe_rx_interrupt_wakes_through_vfio_msix_on_the_x540_model() {
    check_in(models_run(), "x540-rx-intr");
}

/// The same with our i40e PMD on the X710 model (PFINT_DYN_CTLN, QINT_RQCTL).
#[test]
fn vm_i40e_rx_interrupt_wakes_through_vfio_msix_on_the_x710_model() {
    check_in(models_run(), "x710-rx-intr");
}

/// The same with our hinic3 PMD on the SP670 model (its MSI-X table in BAR2; no LSC in hinic3).
#[test]
fn vm_hinic3_rx_interrupt_wakes_through_vfio_msix_on_the_sp670_model() {
    check_in(models_run(), "sp670-rx-intr");
}

/// A TX buffer our ixgbe driver never mapped: the X540 model (behind QEMU's vIOMMU, which only passes on what the
/// guest mapped) records a DMA fault at its IOVA and nothing reaches the wire; a mapped frame gets through before
/// and after a stop/start.
#[test]
fn vm_x540_model_refuses_a_buffer_never_mapped() {
    check_in(models_run(), "x540-unmapped");
}

/// DPDK's own hinic3 PMD (net_hinic3) brings up our SP670 model through the guest's vfio-pci: `dpdk-testpmd -a
/// 00:09.0 -- -i --forward-mode=io`, link up, frames injected on the model's TAP come back out of it byte for byte,
/// `show port stats` equal to the model's own counters, no model fault, stop/port stop/port start, close.
#[test]
fn vm_dpdk_hinic3_pmd_drives_the_sp670_model() {
    check_in(dpdk_run(), "dpdk-hinic3");
}

/// DPDK's own ixgbe PMD (net_ixgbe) brings up our X540 and 82599 models (`-a 00:06.0 -a 00:07.0`), links up, io
/// forwarding between them: each TAP's frames come out of the other byte for byte, twice (stop, port stop, port start,
/// start between: the 82599's link retrains after the LNK_RST of port start); each port's `show port stats` equal to
/// its model's counters, no model fault. The 82599's first NVM word is read by bit-bang through EEC.
#[test]
fn vm_dpdk_ixgbe_pmd_drives_the_x540_and_82599_models() {
    check_in(dpdk_run(), "dpdk-ixgbe");
}

/// DPDK's own i40e PMD (net_i40e) on our X710 model (00:08.0): the same as for the SP670. Its probe needed the
/// flow-director capability with a filter space and a queue pair beyond the main VSI's 64, its restart a TX tail that
/// restarts at 0 once the queue is disabled (docs/hw/i40e.md §6.2, §9.4).
#[test]
fn vm_dpdk_i40e_pmd_drives_the_x710_model() {
    check_in(dpdk_run(), "dpdk-i40e");
}
