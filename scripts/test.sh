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
# the Debian packages built, checked by lintian, installed into a scratch root and run (tests/tests/package.rs).
export PACKAGE_TESTS_REQUIRED=${PACKAGE_TESTS_REQUIRED:-1}
export RUST_BACKTRACE=1
bash scripts/check-setup.sh
bash scripts/check-citations.sh
cargo build --workspace --all-targets
# The output is kept (target/test.log) for the totals printed at the end.
LOG=${CARGO_TARGET_DIR:-target}/test.log
rc=0
cargo test --workspace --no-fail-fast 2>&1 | tee "$LOG" || rc=1
# The drivers and their foundations built for aarch64 (SP670 hosts are often Kunpeng), unit tests under qemu-user.
bash scripts/aarch64.sh 2>&1 | tee -a "$LOG" || rc=1
(grep -E '^test result:' "$LOG" || true) | awk -v s=$(($(date +%s) - T0)) \
  '{ p += $4; f += $6; i += $8 } END { printf "test.sh: %d passed, %d failed, %d ignored in %d s\n", p, f, i, s }'
exit $rc
