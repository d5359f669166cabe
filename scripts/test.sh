#!/usr/bin/env bash
# Runs every test: the unit, property and integration tests of each crate, the software-port tests against the
# kernel (network namespaces, veth, TAP: created and removed by the tests), the VM tests (a QEMU guest with real
# VFIO), and the drivers built and tested for aarch64.
# Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)
# The one prepare step, before any test starts: every package, the QEMU builds and the guest downloads
# (a cold first run spends most of its set-up time building QEMU; see the README).
bash scripts/setup.sh
# Here a test that cannot run (no hugepages, no QEMU, no root for namespaces/TAPs) fails with its reason instead of
# skipping; a developer running one test by hand still gets the skip.
export HUGEPAGE_TESTS_REQUIRED=${HUGEPAGE_TESTS_REQUIRED:-1}
export VM_TESTS_REQUIRED=${VM_TESTS_REQUIRED:-1}
export NETNS_TESTS_REQUIRED=${NETNS_TESTS_REQUIRED:-1}
# testpmd-rs's side-by-side pcap comparison with dpdk-testpmd (setup.sh installs Debian's dpdk package).
export DPDK_TESTS_REQUIRED=${DPDK_TESTS_REQUIRED:-1}
# servers' redis-cli/redis-benchmark/curl/wrk tests (setup.sh installs the clients).
export REAL_CLIENT_TESTS_REQUIRED=${REAL_CLIENT_TESTS_REQUIRED:-1}
export AARCH64_TESTS_REQUIRED=${AARCH64_TESTS_REQUIRED:-1}
export RUST_BACKTRACE=1
bash scripts/check-setup.sh
bash scripts/check-citations.sh
cargo build --workspace --all-targets
cargo test --workspace --no-fail-fast
# The drivers and their foundations built for aarch64 (SP670 hosts are often Kunpeng), unit tests under qemu-user.
bash scripts/aarch64.sh
echo "test.sh: all passed in $(($(date +%s) - T0)) s"
