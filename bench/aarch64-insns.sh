#!/usr/bin/env bash
# Instructions per packet of a driver's benchmark loop on aarch64 (bench/src/bin/DRIVER-bench.rs), counted under
# qemu-aarch64-static with one guest instruction per translation block and every block execution logged
# (`-one-insn-per-tb -d nochain,exec`): one log line per instruction executed. No aarch64 host here, so this is
# the only aarch64 figure: an instruction count (the code's length as run), not a time (LD4, UMAXV, ADDV are
# several cycles on real cores; qemu says nothing about a Kunpeng core's speed).
#
# Usage: bash bench/aarch64-insns.sh DRIVER [burst...]   (default burst: 32; one line per burst)
#
# Method: the whole program runs ITERS and 3 x ITERS burst pairs after the same warm-up; the difference of the two
# counts over the difference of the packets it reports is the steady-state cost per packet of the loop: the burst
# pair (as bench/driver-callgrind.sh counts it) plus the device side and the two clock reads per burst.
#
# Environment knobs:
#   QEMU_ITERS=1000   burst pairs of the shorter run (each run logs some 35 M lines into a pipe; ~40 s)
#
# Needs what scripts/aarch64.sh needs (rustup's aarch64 target, gcc-aarch64-linux-gnu, libc6-dev-arm64-cross,
# qemu-user-static). Builds `cargo build --release --target aarch64-unknown-linux-gnu -p bench --bin DRIVER-bench`.
set -eu

cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

[ $# -gt 0 ] || die "usage: bash bench/aarch64-insns.sh DRIVER [burst...]"
DRIVER=$1
shift
BURSTS=("$@")
[ ${#BURSTS[@]} -gt 0 ] || BURSTS=(32)
ITERS=${QEMU_ITERS:-1000}
TRIPLE=aarch64-unknown-linux-gnu
command -v qemu-aarch64-static >/dev/null || die "no qemu-aarch64-static (scripts/setup.sh installs it)"

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
cargo build --quiet --release --target "$TRIPLE" -p bench --bin "$DRIVER-bench"
TARGET=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
BIN=$TARGET/$TRIPLE/release/$DRIVER-bench
[ -x "$BIN" ] || die "no $BIN after the build"
QEMU=(qemu-aarch64-static -L /usr/aarch64-linux-gnu)

# Instructions executed by one run of `DRIVER-bench iters burst`: the log goes to stderr, counted in the pipe.
insns() { "${QEMU[@]}" -one-insn-per-tb -d nochain,exec -D /dev/stderr "$BIN" "$1" "$2" 2>&1 >/dev/null | wc -l; }
# Its packet count (an uninstrumented run: the program is deterministic).
packets() { "${QEMU[@]}" "$BIN" "$1" "$2" | field packets; }

for burst in "${BURSTS[@]}"; do
  a=$(insns "$ITERS" "$burst")
  b=$(insns $((3 * ITERS)) "$burst")
  p=$(packets "$ITERS" "$burst")
  q=$(packets $((3 * ITERS)) "$burst")
  [ -n "$p" ] && [ -n "$q" ] && [ "$q" -gt "$p" ] && [ "$b" -gt "$a" ] || die "burst $burst: no counts ($a $b, $p $q)"
  awk -v a="$a" -v b="$b" -v p="$p" -v q="$q" -v burst="$burst" 'BEGIN {
    printf "aarch64 instructions/packet: %.2f (burst %d: %d - %d over %d packets)\n", (b - a) / (q - p), burst, b, a, q - p
  }'
done
