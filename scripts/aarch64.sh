#!/usr/bin/env bash
# Builds the drivers and what they need below them for aarch64 (Kunpeng hosts carry the SP670) and runs their
# unit tests under qemu-user. Part of scripts/test.sh.
#
# Toolchain: rustup's aarch64 standard library when rustup is there; otherwise Debian's own route (arm64 as a
# foreign architecture, rustc-web/cargo-web with libstd-rust-web-dev:arm64). Linker: gcc-aarch64-linux-gnu.
# Runner: qemu-user-static. Skipped, with the reason printed, only where none of that can be installed.
# Usage: bash scripts/aarch64.sh
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=aarch64-unknown-linux-gnu
# The crates that must build and pass their unit tests on aarch64: the drivers and their foundations.
CRATES=(hugepage mempool pktio ixgbe i40e)
[ -d hinic3 ] && CRATES+=(hinic3)

skip() {
  echo "aarch64: SKIPPED: $*" >&2
  exit 0
}

apt_install() {
  [ "$(id -u)" = 0 ] || return 1
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64-static >/dev/null; then
  echo "aarch64: installing gcc-aarch64-linux-gnu qemu-user-static"
  apt_install gcc-aarch64-linux-gnu qemu-user-static ||
    { apt-get update -qq && apt_install gcc-aarch64-linux-gnu qemu-user-static; } ||
    skip "cannot install gcc-aarch64-linux-gnu and qemu-user-static (not root, or no Debian archive reachable)"
fi

CARGO=cargo
if command -v rustup >/dev/null; then
  rustup target list --installed | grep -qx "$TARGET" || rustup target add "$TARGET" >/dev/null 2>&1 ||
    skip "rustup cannot add $TARGET (no access to the Rust distribution server)"
else
  if [ ! -x /usr/bin/cargo ] || ! dpkg -s libstd-rust-web-dev:arm64 >/dev/null 2>&1; then
    echo "aarch64: installing Debian's rustc-web/cargo-web and libstd-rust-web-dev:arm64"
    [ "$(id -u)" = 0 ] || skip "not root: cannot add the arm64 architecture"
    dpkg --add-architecture arm64
    apt-get update -qq
    apt_install rustc-web cargo-web libstd-rust-web-dev:arm64 ||
      skip "Debian's rustc-web, cargo-web or libstd-rust-web-dev:arm64 cannot be installed"
  fi
  CARGO=/usr/bin/cargo
  export RUSTC=/usr/bin/rustc
fi

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
