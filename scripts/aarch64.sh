#!/usr/bin/env bash
# Builds the drivers and what they need below them for aarch64 (Kunpeng hosts carry the SP670) and runs their
# unit tests under qemu-user. Part of scripts/test.sh.
#
# Needs rustup's aarch64 standard library, gcc-aarch64-linux-gnu with libc6-dev-arm64-cross (the linker and the
# C runtime) and qemu-user-static: scripts/setup.sh installs them all. When one is missing this says which and
# fails under AARCH64_TESTS_REQUIRED=1 (set by scripts/test.sh), or skips with the reason otherwise.
# Usage: bash scripts/aarch64.sh
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=aarch64-unknown-linux-gnu
# The crates that must build and pass their unit tests on aarch64: the drivers of pmds' list (its features; `sim`,
# the models' vdevs, aside), every workspace crate below them, and the software ports (whose unit tests ran here as
# part of pktio's before they had a crate of their own). Derived from cargo metadata, so a new driver is covered by
# its line in pmds/Cargo.toml. Optional dependencies are not followed: a driver's `sim` (its vdevs on the models)
# is not part of its production build.
crates() {
  cargo metadata --format-version 1 --no-deps | python3 -c '
import json, sys
packages = {p["name"]: p for p in json.load(sys.stdin)["packages"]}
drivers = [d[4:] for f, deps in packages["pmds"]["features"].items() if f not in ("default", "sim")
           for d in deps if d.startswith("dep:")]
below = []
def visit(name):
    if name in below:
        return
    for d in packages[name]["dependencies"]:
        if d["kind"] is None and not d["optional"] and d["name"] in packages:
            visit(d["name"])
    below.append(name)
for name in drivers + ["swports"]:
    visit(name)
print(" ".join(below))'
}

missing=()
command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu)
[ -e /usr/aarch64-linux-gnu/lib/crti.o ] || missing+=(libc6-dev-arm64-cross)
command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static)
if command -v rustup >/dev/null; then
  rustup target list --installed | grep -qx "$TARGET" || missing+=("rustup's $TARGET target")
else
  missing+=("rustup (for the $TARGET target)")
fi
if [ ${#missing[@]} -gt 0 ]; then
  why="missing ${missing[*]}: run bash scripts/setup.sh (as root)"
  if [ "${AARCH64_TESTS_REQUIRED:-0}" = 1 ]; then
    echo "aarch64: FAILED: $why" >&2
    exit 1
  fi
  echo "aarch64: SKIPPED: $why (AARCH64_TESTS_REQUIRED=1 makes this a failure)" >&2
  exit 0
fi
CARGO=cargo
read -r -a CRATES <<<"$(crates)"
[ ${#CRATES[@]} -gt 0 ] || { echo "aarch64: FAILED: no crates from cargo metadata" >&2; exit 1; }

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64-static -L /usr/aarch64-linux-gnu"

pkgs=()
for c in "${CRATES[@]}"; do pkgs+=(-p "$c"); done
echo "aarch64: building and testing ${CRATES[*]} for $TARGET (tests run under qemu-aarch64-static)"
# -D warnings: code configured out on aarch64 (x86 SIMD paths) must leave nothing unused behind.
RUSTFLAGS="${RUSTFLAGS:-} -D warnings" "$CARGO" test --target "$TARGET" "${pkgs[@]}" --lib
# The hinic3 driver against the SP670 model (the acceptance of issue 11 on the SP670's own architecture); a short
# forwarding run, since qemu-user is slow.
if [ -d hinic3/tests ]; then
  HINIC3_FWD_PACKETS="${HINIC3_FWD_PACKETS:-20000}" RUSTFLAGS="${RUSTFLAGS:-} -D warnings" \
    "$CARGO" test --target "$TARGET" -p hinic3 --tests
fi
echo "aarch64: ok"
