#!/usr/bin/env bash
# What the live-capture taps cost when no capture runs, in instructions: testpmd-rs io forwarding on two net_null
# ports (64-byte packets, burst 32, one forwarding lcore, two streams) under callgrind, counted inside the
# forwarding loop only (`--toggle-collect` on `testpmd_rs::fwd::run`: null RX and TX, mempool, counters, taps), so
# start-up, the prompt and the telemetry thread are excluded and the figure does not depend on host load:
#   plain   --no-telemetry: the loop without taps (its own monomorphisation)
#   idle    telemetry on: every stream's RX and TX queue tapped, no capture running
# Prints instructions per packet and per burst of each, and the difference per burst (a burst here: one stream's
# rx_burst and tx_burst of 32 packets, so two tap checks).
#
# Usage: bash bench/capture-callgrind.sh      (bench/telemetry-capture.sh runs it after its wall-clock cases)
# Knobs: CG_SECONDS=10 (forwarding time under valgrind per case), CG_CASES="plain idle",
#        CG_BASELINE_BIN=PATH (also runs that testpmd-rs binary plain and with telemetry, as cases "base" and
#        "base-idle": e.g. a build of an older commit, to check that the plain loop did not change), BENCH_LOG_DIR.
#
# Packets: the forwarding statistics testpmd-rs prints at "stop". The runs are timed, so their packet counts
# differ (by the load of the moment); instructions per packet do not depend on the count, since everything counted
# is the steady-state loop (its first and last partial burst are a few hundred instructions in billions).
set -eu
cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
CG_SECS=${CG_SECONDS:-10}
CASES=${CG_CASES:-plain idle}
command -v valgrind >/dev/null || bench_apt_install valgrind

cargo build --release -p testpmd-rs --quiet
TARGET=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
BIN=$TARGET/release/testpmd-rs
[ -x "$BIN" ] || die "no $BIN after the build"
[ -n "${CG_BASELINE_BIN:-}" ] && CASES="base base-idle $CASES"

# One case under callgrind: prints "Ir packets".
cg_run() { # $1: case name, $2: binary, $3: extra EAL arguments
  local name=$1 bin=$2 extra=$3 log=$LOG/capcg_$1.log out=$LOG/capcg_$1.out fifo
  fifo=$(mktemp -u /tmp/capcg-fifo.XXXXXX)
  mkfifo "$fifo"
  # shellcheck disable=SC2086
  valgrind --tool=callgrind --toggle-collect='testpmd_rs::fwd::run' --callgrind-out-file="$out" \
    "$bin" -l 0,1 --no-pci --no-huge -m 1024 --file-prefix "${PREFIX}$name" $extra \
    --vdev net_null0,size=64 --vdev net_null1,size=64 -- -i --forward-mode=io --burst=32 --txpkts=64 \
    <"$fifo" >"$log" 2>&1 &
  local pid=$!
  exec 9>"$fifo"
  local waited=0
  until grep -q 'testpmd> ' "$log" 2>/dev/null; do
    sleep 1
    waited=$((waited + 1))
    if [ $waited -gt 600 ] || ! kill -0 $pid 2>/dev/null; then
      exec 9>&-
      rm -f "$fifo"
      kill $pid 2>/dev/null || true
      die "$name: testpmd-rs did not reach its prompt under valgrind; see $log"
    fi
  done
  echo start >&9
  sleep "$CG_SECS"
  echo stop >&9
  echo quit >&9
  exec 9>&-
  wait $pid || true
  rm -f "$fifo"
  local ir pk
  ir=$(awk '$1 == "summary:" || $1 == "totals:" { print $2; exit }' "$out")
  pk=$(grep -a -A1 'Accumulated forward statistics' "$log" | sed -n 's/.*RX-packets: *\([0-9]*\).*/\1/p' | tail -1)
  [ -n "$ir" ] && [ -n "$pk" ] && [ "$pk" -gt 0 ] || die "$name: no instruction total or packet count; see $log"
  echo "$ir $pk"
}

declare -A per_pkt
rows=()
for c in $CASES; do
  case $c in
    base) r=$(cg_run base "$CG_BASELINE_BIN" --no-telemetry) ;;
    base-idle) r=$(cg_run base-idle "$CG_BASELINE_BIN" "") ;;
    plain) r=$(cg_run plain "$BIN" --no-telemetry) ;;
    idle) r=$(cg_run idle "$BIN" "") ;;
    *) die "unknown case $c (plain, idle)" ;;
  esac
  read -r ir pk <<<"$r"
  per_pkt[$c]=$(awk -v i="$ir" -v p="$pk" 'BEGIN { printf "%.3f", i / p }')
  rows+=("$(printf '%-9s | %9s | %9s | %12s | %s' "$c" "${per_pkt[$c]}" \
    "$(awk -v x="${per_pkt[$c]}" 'BEGIN { printf "%.1f", x * 32 }')" "$pk" "$ir")")
  say "$c: $ir Ir / $pk packets"
done
echo
echo "testpmd-rs io, 2 x net_null size=64, burst 32, instructions in the forwarding loop (callgrind, ${CG_SECS} s each)"
printf '%-9s | %9s | %9s | %12s | %s\n' case "Ir/packet" "Ir/burst" packets "Ir total"
printf '%s\n' "${rows[@]}"
if [ -n "${per_pkt[plain]:-}" ] && [ -n "${per_pkt[idle]:-}" ]; then
  awk -v a="${per_pkt[idle]}" -v b="${per_pkt[plain]}" 'BEGIN {
    printf "idle taps - plain: %+.3f Ir/packet, %+.1f Ir/burst (one burst: RX and TX tap checks of one stream)\n", a - b, (a - b) * 32
  }'
fi
if [ -n "${per_pkt[base]:-}" ] && [ -n "${per_pkt[plain]:-}" ]; then
  awk -v a="${per_pkt[plain]}" -v b="${per_pkt[base]}" 'BEGIN {
    printf "plain - base: %+.3f Ir/packet, %+.1f Ir/burst\n", a - b, (a - b) * 32
  }'
fi
if [ -n "${per_pkt[base-idle]:-}" ] && [ -n "${per_pkt[base]:-}" ]; then
  awk -v a="${per_pkt[base-idle]}" -v b="${per_pkt[base]}" 'BEGIN {
    printf "base-idle - base: %+.3f Ir/packet, %+.1f Ir/burst\n", a - b, (a - b) * 32
  }'
fi
say "callgrind files: $LOG/capcg_*.out (callgrind_annotate FILE)"
