//! Guest-side tests run by tests/vm/init.sh inside the QEMU guest: `vmtest NAME`.
//!
//! Exit status 0 is a pass; anything else (including a panic) is a failure. Lines starting with `@@vmtest `
//! ask the host peer to do something (see tests/vm/harness.py).

mod frames;
mod igb_tests;
mod intr_tests;
mod model_tests;
mod probe;
mod sys;
mod virtio_tests;

use std::process::ExitCode;

type TestFn = fn() -> Result<(), String>;

const TESTS: &[(&str, &str, TestFn)] = &[
    (
        "vfio-probe",
        "open /dev/vfio/vfio, find the IOMMU group of every NIC under test, check viability and the container",
        probe::vfio_probe,
    ),
    ("virtio-exchange", "virtio-net bring-up, frames both ways with the host peer, counters", virtio_tests::exchange),
    ("virtio-fwd", "io forwarding vnet0 -> vnet1 of frames the host injects, counters agree", virtio_tests::forward),
    ("virtio-mq", "two queue pairs through the control queue, TX on each queue, RX on both", virtio_tests::multiqueue),
    (
        "virtio-unmapped",
        "TX from memory the IOMMU does not map never leaves; recovery by reset",
        virtio_tests::unmapped,
    ),
    (
        "virtio-rx-intr",
        "virtio-net vnet0: queue 0's RX interrupt through VFIO MSI-X wakes when armed, not when disarmed",
        intr_tests::virtio,
    ),
    (
        "igb-exchange",
        "igb (net_igb via the EAL PCI probe): link, MAC, frames both ways checked byte for byte, counters",
        igb_tests::exchange,
    ),
    (
        "x540-unmapped",
        "ixgbe on the vfio-user X540 model: a never-mapped TX buffer is a model DMA fault, nothing on the wire",
        model_tests::x540_unmapped,
    ),
    (
        "x540-rx-intr",
        "ixgbe on the X540 model: queue 0's RX interrupt through VFIO MSI-X wakes when armed, not when disarmed",
        intr_tests::x540,
    ),
    (
        "x710-rx-intr",
        "i40e on the X710 model: queue 0's RX interrupt through VFIO MSI-X wakes when armed, not when disarmed",
        intr_tests::x710,
    ),
    (
        "sp670-rx-intr",
        "hinic3 on the SP670 model: queue 0's RX interrupt through VFIO MSI-X wakes when armed, not when disarmed",
        intr_tests::sp670,
    ),
];

fn main() -> ExitCode {
    let name = std::env::args().nth(1).unwrap_or_default();
    let Some((_, _, f)) = TESTS.iter().find(|(n, _, _)| *n == name) else {
        eprintln!("usage: vmtest TEST\ntests:");
        for (n, d, _) in TESTS {
            eprintln!("  {n:20} {d}");
        }
        return ExitCode::from(2);
    };
    match f() {
        Ok(()) => {
            println!("vmtest {name}: ok");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("vmtest {name}: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
