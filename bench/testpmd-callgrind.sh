#!/usr/bin/env bash
# Instructions per forwarded packet of testpmd-rs and of both dpdk-testpmds (Debian's 22.11, sid's 25.11; see
# bench/lib.sh dpdk25_env) in one forwarding mode on two net_null ports (64 bytes, burst 32, one forwarding lcore),
# counted by callgrind, which needs no PMU (this machine class has none) and is repeatable whatever the load: where
# the wall-clock ratios of bench/testpmd.sh come from, and where DPDK's newer code saves its instructions.
#
# Method: each program runs non-interactively (forwarding from the start, "Press enter to exit") under callgrind for
# CG_SECONDS and for twice that; the difference of the two totals over the difference of the packets forwarded
# (each program's own end-of-run RX-packets) is the steady-state cost per packet: start-up (the EAL's under
# valgrind is billions of instructions), shut-down and the main thread's wait cancel out. Debian's binaries are
# stripped, but the DPDK libraries' exported functions have names: the per-object and per-function split of the
# longer run (callgrind_annotate, exclusive) is printed for each program, per packet.
#
# Usage (as root): bash bench/testpmd-callgrind.sh [MODE]      (default io; any --forward-mode both programs have)
# Knobs: CG_SECONDS=8, CG_TOP=12 (functions listed per program), BENCH_LOG_DIR.
set -eu
cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
MODE=${1:-io}
CG_SECS=${CG_SECONDS:-8}
TOP=${CG_TOP:-12}
[ "$(id -u)" = 0 ] || die "run as root (hugepages, scripts/setup.sh)"
command -v valgrind >/dev/null || die "valgrind is missing: run bash scripts/setup.sh"
bench_setup
dpdk25_env
MEM=nohuge
bench_setup_memory
say "building testpmd-rs (release)"
cargo build --release -p testpmd-rs --quiet
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release
STDBUF_LIB=$(dpkg -L coreutils | grep '/libstdbuf\.so$' | head -1)
read -r -a D25_PMDS <<<"$(dpdk25_pmds bus_vdev mempool_ring net_null)"

ARGS=(-l 0,1 --no-pci "${EAL_MEM[@]}" --vdev net_null0,size=64 --vdev net_null1,size=64 -- --forward-mode="$MODE"
  --burst=32 --txpkts=64)
# $1: program (rs, d22, d25), $2: seconds, $3: callgrind output. Prints the RX packets both ports counted.
cg_run() {
  local who=$1 secs=$2 out=$3 cmd
  case $who in
    rs) cmd=("$BIN/testpmd-rs") ;;
    d22) cmd=(dpdk-testpmd) ;;
    d25) cmd=("${D25_RUN[@]}" "$D25_BIN/dpdk-testpmd" "${D25_PMDS[@]}") ;;
  esac
  # Under valgrind the EAL's start takes tens of seconds: wait for forwarding to have begun before the clock runs.
  local fifo log=$out.log
  fifo=$(mktemp -u /tmp/pktbench-fifo.XXXXXX)
  mkfifo "$fifo"
  # dpdk-testpmd's stdout to a file is block-buffered: libstdbuf makes it line-buffered (as stdbuf -oL would,
  # without a second program under valgrind).
  env LD_PRELOAD="$STDBUF_LIB" _STDBUF_O=L valgrind --tool=callgrind --callgrind-out-file="$out" "${cmd[@]}" \
    --file-prefix "$PREFIX$who" "${ARGS[@]}" <"$fifo" >"$log" 2>&1 &
  local pid=$!
  exec 7>"$fifo"
  local t=0
  until grep -q "Press enter to exit" "$log" 2>/dev/null; do
    sleep 0.5
    t=$((t + 1))
    if [ $t -gt 600 ] || ! kill -0 $pid 2>/dev/null; then
      exec 7>&-
      rm -f "$fifo"
      kill $pid 2>/dev/null || true
      die "$who did not start forwarding under valgrind; see $log"
    fi
  done
  sleep "$secs"
  echo >&7
  exec 7>&-
  wait $pid || true
  rm -f "$fifo"
  # The end-of-run block: "RX-packets: N ..." per port, then the all-ports sum; take the sum line's.
  grep -a "RX-packets:" "$log" | tail -1 | awk '{print $2}'
}
total_ir() { sed -n 's/^summary: *\([0-9]*\).*/\1/p; s/^totals: *\([0-9]*\).*/\1/p' "$1" | head -1; }

declare -A PER PKTS
for who in rs d22 d25; do
  say "$who: $MODE under callgrind, ${CG_SECS} s and $((2 * CG_SECS)) s (plus the start under valgrind)"
  p1=$(cg_run "$who" "$CG_SECS" "$LOG/tpcg_${who}_1.out")
  p2=$(cg_run "$who" $((2 * CG_SECS)) "$LOG/tpcg_${who}_2.out")
  i1=$(total_ir "$LOG/tpcg_${who}_1.out")
  i2=$(total_ir "$LOG/tpcg_${who}_2.out")
  PER[$who]=$(awk -v a="$i1" -v b="$i2" -v p="$p1" -v q="$p2" \
    'BEGIN { if (q > p && b > a) printf "%.2f", (b - a) / (q - p); else print "nan" }')
  PKTS[$who]="$p1 / $p2"
  say "  $who: ${PER[$who]} instructions per packet ($i1 / $i2 Ir, $p1 / $p2 packets)"
done

echo
echo "testpmd $MODE, 2 x net_null size=64, burst 32: instructions per RX packet (callgrind, difference of a" \
  "${CG_SECS} s and a $((2 * CG_SECS)) s run)"
printf '%-28s | %10s | %s\n' program "Ir/packet" "packets (short / long run)"
echo "-----------------------------+------------+---------------------------"
printf '%-28s | %10s | %s\n' testpmd-rs "${PER[rs]}" "${PKTS[rs]}"
printf '%-28s | %10s | %s\n' "dpdk-testpmd 22.11" "${PER[d22]}" "${PKTS[d22]}"
printf '%-28s | %10s | %s\n' "dpdk-testpmd 25.11" "${PER[d25]}" "${PKTS[d25]}"
echo "ratios: 22.11 / testpmd-rs $(ratio "${PER[d22]}" "${PER[rs]}"), 25.11 / testpmd-rs $(ratio "${PER[d25]}" "${PER[rs]}")"
for who in rs d22 d25; do
  echo
  echo "$who: the top $TOP functions of the long run (exclusive Ir, share of the run):"
  callgrind_annotate --inclusive=no "$LOG/tpcg_${who}_2.out" 2>/dev/null | grep -E '^ *[0-9,]+ \(' | head -"$TOP"
done
