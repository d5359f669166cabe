#!/usr/bin/env bash
# Instructions per packet of a driver's rx_burst + tx_burst (DRIVER/src/bin/DRIVER-bench.rs: ixgbe, i40e,
# hinic3), counted by callgrind inside `burst_pair` only. Repeatable (no timing), so it is the figure BENCHMARKS.md quotes.
#
# Usage: bash bench/driver-callgrind.sh DRIVER [burst...]   (default bursts: 32 8 1; one line per burst)
#        (bench/ixgbe-callgrind.sh, i40e-callgrind.sh and hinic3-callgrind.sh are this with DRIVER given)
#
# Method: the program runs ITERS and 2 x ITERS burst pairs after the same warm-up; the difference of the two
# callgrind totals over the difference of the packets they report is the steady-state cost per packet (the
# warm-up, ring set-up and start-up cancel out).
#
# Environment knobs:
#   CG_ITERS=20000         burst pairs of the shorter run (the longer one runs twice as many); IXGBE_CG_ITERS /
#                          I40E_CG_ITERS / HINIC3_CG_ITERS are read too, for the driver they name
#   BENCH_LOG_DIR          where the callgrind files go (default: target/bench-logs), for callgrind_annotate
#
# Builds `cargo build --release -p DRIVER --bin DRIVER-bench` in the workspace's target dir (CARGO_TARGET_DIR if
# set, as cargo metadata reports it). Needs valgrind (scripts/setup.sh installs it).
set -eu

cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

[ $# -gt 0 ] || die "usage: bash bench/driver-callgrind.sh DRIVER [burst...] (DRIVER: ixgbe, i40e, hinic3)"
DRIVER=$1
shift
[ -f "$ROOT/$DRIVER/src/bin/$DRIVER-bench.rs" ] || die "no bench program $DRIVER/src/bin/$DRIVER-bench.rs"
OLD_KNOB=$(echo "$DRIVER" | tr '[:lower:]' '[:upper:]')_CG_ITERS
ITERS=${CG_ITERS:-${!OLD_KNOB:-20000}}
BURSTS=("$@")
[ ${#BURSTS[@]} -gt 0 ] || BURSTS=(32 8 1)

bench_setup

cargo build --quiet --release -p "$DRIVER" --bin "$DRIVER-bench"
TARGET=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
BIN=$TARGET/release/$DRIVER-bench
[ -x "$BIN" ] || die "no $BIN after the build"

# Callgrind's total Ir of one run of `DRIVER-bench iters burst`; the program's packet count goes to $LOG/$out.txt.
collected() {
  local iters=$1 burst=$2 out=$DRIVER-cg-b$2-$1
  valgrind --tool=callgrind --callgrind-out-file="$LOG/$out.out" --toggle-collect='*burst_pair*' \
    "$BIN" "$iters" "$burst" >"$LOG/$out.txt" 2>"$LOG/$out.log" || die "valgrind failed: see $LOG/$out.log"
  awk '$1 == "summary:" || $1 == "totals:" { print $2; exit }' "$LOG/$out.out"
}

for burst in "${BURSTS[@]}"; do
  ir1=$(collected "$ITERS" "$burst")
  ir2=$(collected $((2 * ITERS)) "$burst")
  p1=$(field packets <"$LOG/$DRIVER-cg-b$burst-$ITERS.txt")
  p2=$(field packets <"$LOG/$DRIVER-cg-b$burst-$((2 * ITERS)).txt")
  [ -n "$ir1" ] && [ -n "$ir2" ] && [ -n "$p1" ] && [ -n "$p2" ] && [ "$p2" -gt "$p1" ] ||
    die "burst $burst: no totals or packet counts (see $LOG/$DRIVER-cg-b$burst-*)"
  awk -v a="$ir1" -v b="$ir2" -v p="$p1" -v q="$p2" -v burst="$burst" 'BEGIN {
    printf "instructions/packet: %.2f (burst %d: %d - %d Ir over %d packets)\n", (b - a) / (q - p), burst, b, a, q - p
  }'
done
say "callgrind files: $LOG/$DRIVER-cg-b*.out (callgrind_annotate FILE)"
