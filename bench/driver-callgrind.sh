#!/usr/bin/env bash
# Instructions per packet of a driver's rx_burst + tx_burst (bench/src/bin/DRIVER-bench.rs on the shared harness
# bench/src/driver.rs), counted by callgrind inside `burst_pair` only. Repeatable (no timing), so it is the figure
# BENCHMARKS.md quotes.
#
# Usage: bash bench/driver-callgrind.sh DRIVER|all [burst...]   (default bursts: 32 8 1; one line per burst)
#        DRIVER is a driver of pmds' list (pmds/Cargo.toml's features) with a DRIVER-bench binary in the bench
#        package; `all` runs every such driver. Both lists come from cargo metadata, so a new driver's benchmark is
#        its one file in bench/src/bin. (bench/ixgbe-callgrind.sh, i40e-callgrind.sh and hinic3-callgrind.sh are this
#        with DRIVER given.)
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
# Builds `cargo build --release -p bench --bin DRIVER-bench` in the workspace's target dir (CARGO_TARGET_DIR if set,
# as cargo metadata reports it). Needs valgrind (scripts/setup.sh installs it) and python3 (reads cargo metadata).
set -eu

cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

METADATA=$(cargo metadata --format-version 1 --no-deps)
# The drivers with a benchmark: pmds' driver features (the one list of drivers of a build) for which the bench
# package has a DRIVER-bench binary.
DRIVERS=$(python3 -c '
import json, sys
packages = {p["name"]: p for p in json.load(sys.stdin)["packages"]}
bins = {t["name"] for t in packages["bench"]["targets"] if "bin" in t["kind"]}
drivers = [f for f in packages["pmds"]["features"] if f != "default" and f + "-bench" in bins]
print(" ".join(drivers))' <<<"$METADATA")
[ -n "$DRIVERS" ] || die "no driver of pmds/Cargo.toml has a benchmark in bench/src/bin"
[ $# -gt 0 ] || die "usage: bash bench/driver-callgrind.sh DRIVER|all [burst...] (DRIVER: ${DRIVERS// /, })"
if [ "$1" = all ]; then
  shift
  for d in $DRIVERS; do
    echo "$d:"
    bash "$0" "$d" "$@"
  done
  exit 0
fi
DRIVER=$1
shift
case " $DRIVERS " in
*" $DRIVER "*) ;;
*) die "no benchmark for driver $DRIVER (drivers with one: ${DRIVERS// /, })" ;;
esac
OLD_KNOB=$(echo "$DRIVER" | tr '[:lower:]' '[:upper:]')_CG_ITERS
ITERS=${CG_ITERS:-${!OLD_KNOB:-20000}}
BURSTS=("$@")
[ ${#BURSTS[@]} -gt 0 ] || BURSTS=(32 8 1)

bench_setup

cargo build --quiet --release -p bench --bin "$DRIVER-bench"
TARGET=$(sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p' <<<"$METADATA")
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
