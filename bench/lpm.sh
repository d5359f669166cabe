#!/usr/bin/env bash
# The lpm crate's IPv4 route lookup against DPDK 22.11's rte_lpm (Debian's dpdk-test, lpm_perf_autotest), one core
# each (CPU 1). Like for like: lpm-bench repeats the autotest's timed loop (4096 fresh uniformly random addresses
# per batch, TSC around each batch, a miss counted per lookup) for single, bulk (32) and x4 lookups; ratio = rte_lpm
# cycles / ours (> 1.0 means the lpm crate is faster). The tables differ: ours is lpm-bench's 1M prefixes with an
# Internet-like length mix, DPDK's its test's own ~1.07M (of which it adds ~1.04M into 2048 tbl8 groups). Then
# lpm-bench's throughput loops against the memory-access floor (one random 4-byte load per address from a
# tbl24-sized array), and its IPv6 and exact-match figures.
#
# Usage (as root, on a Debian machine): bash bench/lpm.sh
#
# Environment knobs (shared with run.sh):
#   BENCH_ROUNDS=3           lpm-bench runs; the table shows the median
#   BENCH_LPM_DPDK_ROUNDS=1  dpdk-test runs (each builds rte_lpm's table for minutes before its 12M lookups)
#   BENCH_LPM_SECONDS=2      lpm-bench's measurement window per test (DPDK's test has its own fixed 4M lookups)
#   BENCH_LPM_ROUTES=1000000 routes in lpm-bench's IPv4 table
#   BENCH_LPM_DPDK_TIMEOUT=1800  seconds to wait for dpdk-test's lookup figures (its table build is slow)
#   BENCH_LPM_RT=1           run both sides' lookups at SCHED_FIFO priority 50 on CPU 1 (0: normal priority). On a
#                            shared machine the lookup loops are otherwise preempted and both figures measure the
#                            scheduler (6-10x slower on a 2-core box at load 11)
#   BENCH_HUGEPAGES=1024     2 MiB pages reserved for DPDK; BENCH_MEM=nohuge runs it on ordinary pages
#                            (lpm-bench always asks for transparent hugepages)
#   BENCH_LPM_REPORT_ONLY=1  print the tables from the logs of the last run without running anything
#   BENCH_LOG_DIR            where raw outputs go (default: target/bench-logs)
set -eu

cd "$(dirname "$0")/.."
ROOT=$PWD
ROUTES=${BENCH_LPM_ROUTES:-1000000}
DPDK_TIMEOUT=${BENCH_LPM_DPDK_TIMEOUT:-1800}
RT=${BENCH_LPM_RT:-1}
LPM_SECS=${BENCH_LPM_SECONDS:-2}
DPDK_ROUNDS=${BENCH_LPM_DPDK_ROUNDS:-1}
REPORT_ONLY=${BENCH_LPM_REPORT_ONLY:-0}
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

[ "$(id -u)" = 0 ] || die "run as root (hugepages, scripts/setup.sh)"
bench_setup
DPDK_VERSION=$(dpkg-query -W -f='${Version}' dpdk 2>/dev/null || echo unknown)
dpdk25_env
bench_setup_memory
# DPDK 25.11's dpdk-test (shared build; rte_lpm is in its libraries, no plugin needed beyond the mempool's).
read -r -a D25_TEST <<<"$(dpdk25_pmds mempool_ring)"
D25_TEST=("${D25_RUN[@]}" "$D25_BIN/dpdk-test" "${D25_TEST[@]}")

say "building lpm-bench (release)"
cargo build --release -p lpm --bin lpm-bench --quiet
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release

# dpdk-test reads its command from stdin and prints the autotest's report (line-buffered through stdbuf so the
# log fills as it goes). rte_lpm's add and delete scan the rules of the prefix's length linearly, so building (and
# deleting) the 1M-route table takes minutes at normal priority; the lookups come between the two, so the run is
# raised to RT priority once the build is reported ("Unique added entries", a few ms before the first lookup) and
# stopped as soon as the last lookup line is in the log.
run_dpdk() { # $1: log, the rest: the dpdk-test command
  local log=$1
  shift
  : >"$log"
  echo lpm_perf_autotest |
    stdbuf -oL "$@" -l 1 --no-pci "${EAL_MEM[@]}" --file-prefix "$PREFIX" --log-level=lib.eal:error >"$log" 2>&1 &
  local pid=$! # dpdk-test itself: stdbuf execs it
  if [ "$RT" = 1 ]; then
    # tail -f wakes on each write (inotify), so the priority change lands before the lookups start.
    timeout "$DPDK_TIMEOUT" tail -n +1 -f --pid=$pid "$log" | grep -q -m1 '^Unique added entries' || true
    chrt -a -f -p 50 $pid 2>/dev/null || say "could not raise dpdk-test to SCHED_FIFO"
  fi
  timeout "$DPDK_TIMEOUT" tail -n +1 -f --pid=$pid "$log" | grep -q -m1 '^LPM LookupX4' ||
    say "dpdk-test gave no LookupX4 line; see $log"
  kill $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  # Killed, it leaves its hugepage files behind (and the pages taken): remove this run's.
  awk '$3 == "hugetlbfs" { print $2 }' /proc/mounts | while read -r dir; do rm -f "$dir/${PREFIX}"map_*; done
}
run_ours() {
  local rt=()
  [ "$RT" = 1 ] && rt=(chrt -f 50)
  "${rt[@]}" taskset -c 1 "$BIN/lpm-bench" --routes "$ROUTES" --secs "$LPM_SECS" >"$1" 2>&1 || true
}
# DPDK value: "$2: N cycles" from log $1.
dpdk_cycles() { sed -n "s/^$2: \([0-9.]*\) cycles.*/\1/p" "$1" | head -1; }
# Ours: key $3 of the RESULT line of test $2 in log $1.
ours() { grep "RESULT test=$2 " "$1" | field "$3"; }

declare -A D E O
# $1: log, $2: the array (D or E) the figures go to.
dpdk_figures() {
  local -n A=$2
  A[single]+=" $(dpdk_cycles "$1" 'Average LPM Lookup')"
  A[bulk]+=" $(dpdk_cycles "$1" 'BULK LPM Lookup')"
  A[x4]+=" $(dpdk_cycles "$1" 'LPM LookupX4')"
  A[add]+=" $(sed -n 's/^Average LPM Add: \([0-9.e+]*\) cycles.*/\1/p' "$1")"
  A[fails]+=" $(sed -n 's/^BULK LPM Lookup: .*fails = \([0-9.]*\)%.*/\1/p' "$1")"
}
for r in $(seq 1 $((ROUNDS > DPDK_ROUNDS ? ROUNDS : DPDK_ROUNDS))); do
  if [ "$r" -le "$DPDK_ROUNDS" ]; then
    say "round $r: dpdk-test lpm_perf_autotest, 22.11 then 25.11 (building its table takes minutes)"
    [ "$REPORT_ONLY" = 1 ] || run_dpdk "$LOG/lpm-dpdk-$r.log" dpdk-test
    [ "$REPORT_ONLY" = 1 ] || run_dpdk "$LOG/lpm-dpdk25-$r.log" "${D25_TEST[@]}"
    dpdk_figures "$LOG/lpm-dpdk-$r.log" D
    dpdk_figures "$LOG/lpm-dpdk25-$r.log" E
  fi
  [ "$r" -le "$ROUNDS" ] || continue
  say "round $r: lpm-bench"
  [ "$REPORT_ONLY" = 1 ] || run_ours "$LOG/lpm-ours-$r.log"
  O[single]+=" $(ours "$LOG/lpm-ours-$r.log" lpm4_single_dpdkloop cycles_per_lookup)"
  O[bulk]+=" $(ours "$LOG/lpm-ours-$r.log" lpm4_bulk32_dpdkloop cycles_per_lookup)"
  O[x4]+=" $(ours "$LOG/lpm-ours-$r.log" lpm4_x4_dpdkloop cycles_per_lookup)"
  O[fails]+=" $(ours "$LOG/lpm-ours-$r.log" lpm4_single_dpdkloop fails | tr -d %)"
  O[single_mlps]+=" $(ours "$LOG/lpm-ours-$r.log" lpm4_single mlookups_per_s)"
  O[bulk_mlps]+=" $(ours "$LOG/lpm-ours-$r.log" lpm4_bulk32 mlookups_per_s)"
  O[bulk256_mlps]+=" $(ours "$LOG/lpm-ours-$r.log" lpm4_bulk256 mlookups_per_s)"
  O[floor]+=" $(ours "$LOG/lpm-ours-$r.log" floor_tbl24_loads cycles_per_lookup)"
  O[x8_mlps]+=" $(ours "$LOG/lpm-ours-$r.log" lpm4_x8 mlookups_per_s)"
  O[floor_mlps]+=" $(ours "$LOG/lpm-ours-$r.log" floor_tbl24_loads mlookups_per_s)"
  O[v6]+=" $(ours "$LOG/lpm-ours-$r.log" lpm6_x8 mlookups_per_s)"
  O[em]+=" $(ours "$LOG/lpm-ours-$r.log" exact_v4_bulk32 mlookups_per_s)"
  O[tsc]+=" $(awk -v c="$(ours "$LOG/lpm-ours-$r.log" lpm4_x8 cycles_per_lookup)" -v m="$(ours "$LOG/lpm-ours-$r.log" lpm4_x8 mlookups_per_s)" 'BEGIN { if (c != "" && m != "") print c * m / 1e3; }')"
done

med() { echo "$1" | median; }
TSC_GHZ=$(med "${O[tsc]}")

echo
echo "LPM IPv4 lookups, one core, uniformly random addresses (dpdk $DPDK_VERSION and $D25_VERSION, memory: $MEM, medians of $ROUNDS lpm-bench / $DPDK_ROUNDS dpdk-test runs, RT=$RT, TSC $(fmt "$TSC_GHZ" 2) GHz)"
grep "RESULT test=lpm4_build" "$LOG/lpm-ours-$ROUNDS.log" | sed 's/^RESULT test=lpm4_build /lpm-bench table: /'
grep "RESULT test=lpm4_single " "$LOG/lpm-ours-$ROUNDS.log" | sed 's/.*\(addrs=.*\)/lpm-bench lookups: \1/'
echo "dpdk-test table: $(sed -n 's/^No. routes = //p' "$LOG/lpm-dpdk-$DPDK_ROUNDS.log") routes, $(sed -n 's/^Unique added entries = //p' "$LOG/lpm-dpdk-$DPDK_ROUNDS.log") added (2048 tbl8 groups), lookups miss $(med "${D[fails]}")%"
echo "like for like: lpm_perf_autotest's loop (4096 fresh random addresses per timed batch, a miss counted per lookup)"
printf '%-20s %12s %12s %8s %12s %8s\n' "lookup" "lpm cyc" "22.11 cyc" "ratio" "25.11 cyc" "ratio"
for k in single bulk x4; do
  o=$(med "${O[$k]}") d=$(med "${D[$k]}") e=$(med "${E[$k]}")
  printf '%-20s %12s %12s %8s %12s %8s\n' "$k$([ $k = bulk ] && echo ' (32)')" "$(fmt "$o")" "$(fmt "$d")" \
    "$(ratio "$d" "$o")" "$(fmt "$e")" "$(ratio "$e" "$o")"
done
echo "misses: lpm $(med "${O[fails]}")% of uniformly random addresses, rte_lpm $(med "${D[fails]}")% (different tables)"
echo
echo "lpm throughput (16M random addresses streamed per pass) vs the floor (one random load each from a tbl24-sized array)"
printf '%-20s %12s %12s\n' "loop" "Mlookup/s" "of floor"
f=$(med "${O[floor_mlps]}")
for k in single x8 bulk32 bulk256; do
  case $k in single) v=$(med "${O[single_mlps]}") ;; x8) v=$(med "${O[x8_mlps]}") ;; bulk32) v=$(med "${O[bulk_mlps]}") ;;
    bulk256) v=$(med "${O[bulk256_mlps]}") ;; esac
  printf '%-20s %12s %12s\n' "$k" "$(fmt "$v" 1)" "$(ratio "$v" "$f")"
done
printf '%-20s %12s\n' "floor" "$(fmt "$f" 1)"
echo "rte_lpm add: $(fmt "$(med "${D[add]}")" 0) cycles/route (22.11), $(fmt "$(med "${E[add]}")" 0) (25.11)"
echo "lpm6 x8 (100k routes, routed addresses): $(fmt "$(med "${O[v6]}")") Mlookup/s; exact match v4 bulk32 (1M flows): $(fmt "$(med "${O[em]}")") Mlookup/s"
