#!/usr/bin/env bash
# Side-by-side benchmark of this project against two DPDKs (run beside it, never linked): Debian's 22.11 package and
# 25.11, the newest LTS (sid's build in a root of its own; bench/lib.sh dpdk25_env). Prints one table: our figure,
# each DPDK's figure and the ratio to it (> 1.0 means ours is faster); then runs bench/testpmd.sh, l3fwd.sh, lpm.sh
# and af-xdp.sh, each printing its own table with both references.
#
# Usage (as root, on a Debian machine): bash bench/run.sh
#
# Environment knobs:
#   BENCH_SECONDS=5          measurement window of each forwarding run (after BENCH_WARMUP=1 s of warm-up)
#   BENCH_ROUNDS=3           forwarding runs per program, in turn; the table shows the median
#   BENCH_MEMPOOL_SECONDS=2  measurement time of each of our mempool tests
#   BENCH_MEMPOOL_ROUNDS=3   mempool rounds (ours, DPDK 22.11, DPDK 25.11 in turn); the table shows the medians
#   BENCH_HUGEPAGES=1024     2 MiB hugepages to reserve (left reserved afterwards; a hugetlbfs is mounted on
#                            /dev/hugepages if none is); BENCH_MEM=nohuge runs both sides on ordinary pages
#   BENCH_FAKETIME_SPEED=50  time-scaling factor for the DPDK mempool_perf_autotest subset (see BENCHMARKS.md)
#   BENCH_SKIP_AFPACKET=1    skip the af_packet/veth benchmark
#   BENCH_LOG_DIR            where raw outputs go (default: target/bench-logs)
#   BENCH_ONLY=testpmd       run only the testpmd-rs vs dpdk-testpmd part (bench/testpmd.sh, its own knobs there)
#   BENCH_SKIP_TESTPMD=1     skip that part (about 16 minutes)
#   BENCH_SKIP_L3FWD=1       skip bench/l3fwd.sh (l3fwd lpm/fib/em and l2fwd against both samples; about 8 minutes)
#   BENCH_SKIP_LPM=1         skip bench/lpm.sh (lpm crate against rte_lpm; DPDK's table build takes many minutes)
#   BENCH_SKIP_AF_XDP=1      skip bench/af-xdp.sh (net_af_xdp over veth against DPDK's)
# With nothing skipped, one run prints every table of BENCHMARKS.md's "At a glance" with both references (over an
# hour on 2 vCPUs); the instruction counts are separate (bench/l3fwd-callgrind.sh, bench/driver-callgrind.sh).
set -eu

if [ "${BENCH_ONLY:-}" = testpmd ]; then
  exec bash "$(dirname "$0")/testpmd.sh"
fi

cd "$(dirname "$0")/.."
ROOT=$PWD
MP_SECS=${BENCH_MEMPOOL_SECONDS:-2}
MP_ROUNDS=${BENCH_MEMPOOL_ROUNDS:-3}
SPEED=${BENCH_FAKETIME_SPEED:-50}
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

[ "$(id -u)" = 0 ] || die "run as root (hugepages, network namespaces, scripts/setup.sh)"

# --- 1. what we need (DPDK 22.11 with dpdk-test, faketime, iproute2): scripts/setup.sh ----------------------------
bench_setup
DPDK_VERSION=$(dpkg-query -W -f='${Version}' dpdk 2>/dev/null || echo unknown)
FAKETIME_LIB=$(dpkg -L libfaketime | grep '/libfaketime\.so\.1$' | head -1)
STDBUF_LIB=$(dpkg -L coreutils | grep '/libstdbuf\.so$' | head -1)
dpdk25_env
read -r -a D25_PMDS <<<"$(dpdk25_pmds bus_vdev mempool_ring net_null net_af_packet)"
D25_TESTPMD=("${D25_RUN[@]}" "$D25_BIN/dpdk-testpmd" "${D25_PMDS[@]}")

# --- 2. hugepages (both sides use them unless BENCH_MEM=nohuge) ----------------------------------------------------
bench_setup_memory

# --- 3. build ---------------------------------------------------------------------------------------------------
say "building (release)"
cargo build --release -p bench --quiet
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release

TSC_HZ=
rows=()
row() { # label, ours, DPDK 22.11, ratio, DPDK 25.11, ratio
  rows+=("$(printf '%-58s | %16s | %16s | %7s | %16s | %7s' "$1" "$2" "$3" "$4" "${5:-}" "${6:-}")")
}

# --- 4. mempool -------------------------------------------------------------------------------------------------
# MP_ROUNDS rounds of (ours, DPDK 22.11, DPDK 25.11); the table shows each side's median and every round's figure.
# DPDK: dpdk-test's mempool_perf_autotest, unmodified, but with time scaled by libfaketime so that each of its
# 5-"second" cases lasts 5/SPEED s: the EAL calibrates the TSC against the (faked) clock, so it believes the TSC runs
# at H = tsc_hz/SPEED, and each case runs for 5*H real TSC cycles. Its rate_persec is then objects per 5*H cycles / 5,
# so cycles per object = H / rate_persec exactly, whatever H is. We stop it once the case we compare has printed.
# $1: log, $2 / $3: the lines (grep patterns) of the cached and the uncached case, the rest: the dpdk-test command.
# Sets dpdk_raw and dpdk_ring (cycles/object).
dpdk_mempool() {
  local mp_log=$1 MP_TARGET=$2 mp_ring=$3 mp_fifo mp_pid dpdk_h
  shift 3
  mp_fifo=$(mktemp -u /tmp/pktbench-fifo.XXXXXX)
  mkfifo "$mp_fifo"
  env LD_PRELOAD="$STDBUF_LIB $FAKETIME_LIB" _STDBUF_O=L FAKETIME="+0 x$SPEED" \
    "$@" -l 1 --no-pci "${EAL_MEM[@]}" --file-prefix "${PREFIX}mp" --log-level=lib.eal:debug \
    <"$mp_fifo" >"$mp_log" 2>&1 &
  mp_pid=$!
  exec 8>"$mp_fifo"
  echo "mempool_perf_autotest" >&8
  for _ in $(seq 1 1200); do
    grep -q "$MP_TARGET" "$mp_log" 2>/dev/null && break
    kill -0 $mp_pid 2>/dev/null || break
    sleep 0.5
  done
  kill $mp_pid 2>/dev/null || true
  wait $mp_pid 2>/dev/null || true
  exec 8>&-
  rm -f "$mp_fifo"
  dpdk_h=$(sed -n 's/.*TSC frequency is ~\([0-9]*\) KHz.*/\1/p' "$mp_log" | head -1)
  dpdk_rate() { grep "$1" "$mp_log" | head -1 | sed -n 's/.*rate_persec= *\([0-9]*\).*/\1/p'; }
  cyc_of() { awk -v h="$dpdk_h" -v r="$1" 'BEGIN { if (h == "" || r == "" || r == 0) print "nan"; else printf "%.3f\n", h * 1000 / r }'; }
  dpdk_raw=$(cyc_of "$(dpdk_rate "$MP_TARGET")")
  dpdk_ring=$(cyc_of "$(dpdk_rate "$mp_ring")")
}
# The same cases in both versions' words: 25.11 prints n_keep first and pads the numbers. The first line of each is
# taken: the "with cache" part (not the later "user-owned cache" one).
MP22='cores=1 n_get_bulk=32 n_put_bulk=32 n_keep=32 constant_n=1 '
MP25='cores=1 n_keep= *32 n_get_bulk= *32 n_put_bulk= *32 constant_n=1 '
read -r -a D25_MP_PMDS <<<"$(dpdk25_pmds mempool_ring)"
mp_ours_raw=() mp_ours_ring=() mp_d22_raw=() mp_d22_ring=() mp_d25_raw=() mp_d25_ring=() mp_ours_pkt=()
for r in $(seq 1 "$MP_ROUNDS"); do
  say "mempool round $r/$MP_ROUNDS: ours (${MP_SECS} s per test), then DPDK 22.11's and 25.11's mempool_perf_autotest subset (time scaled x$SPEED; about a minute each)"
  BENCH_MEMPOOL_SECONDS=$MP_SECS "$BIN/mempool_perf" >"$LOG/mempool_ours_$r.txt" || say "mempool_perf failed"
  TSC_HZ=$(grep '^INFO' "$LOG/mempool_ours_$r.txt" | field tsc_hz)
  mp_ours_pkt+=("$(grep 'test=pktmbuf_bulk32' "$LOG/mempool_ours_$r.txt" | field cycles_per_obj)")
  mp_ours_raw+=("$(grep 'test=raw_cache_bulk32' "$LOG/mempool_ours_$r.txt" | field cycles_per_obj)")
  mp_ours_ring+=("$(grep 'test=raw_nocache_bulk32' "$LOG/mempool_ours_$r.txt" | field cycles_per_obj)")
  dpdk_mempool "$LOG/mempool_dpdk_$r.txt" "mempool_autotest cache=512 $MP22" "mempool_autotest cache=0 $MP22" \
    dpdk-test
  mp_d22_raw+=("$dpdk_raw")
  mp_d22_ring+=("$dpdk_ring")
  dpdk_mempool "$LOG/mempool_dpdk25_$r.txt" "mempool_autotest cache=512 $MP25" "mempool_autotest cache=0 $MP25" \
    "${D25_RUN[@]}" "$D25_BIN/dpdk-test" "${D25_MP_PMDS[@]}"
  mp_d25_raw+=("$dpdk_raw")
  mp_d25_ring+=("$dpdk_ring")
  say "  round $r: cache ours ${mp_ours_raw[-1]}, 22.11 ${mp_d22_raw[-1]}, 25.11 ${mp_d25_raw[-1]}; no cache ours ${mp_ours_ring[-1]}, 22.11 ${mp_d22_ring[-1]}, 25.11 ${mp_d25_ring[-1]} cycles/object"
done
ours_pkt=$(echo "${mp_ours_pkt[*]}" | median)
ours_pkt_rate=$(awk -v h="$TSC_HZ" -v c="$ours_pkt" 'BEGIN { if (c > 0) print h / c; else print 0 }')
ours_raw=$(echo "${mp_ours_raw[*]}" | median)
ours_raw_rate=$(awk -v h="$TSC_HZ" -v c="$ours_raw" 'BEGIN { if (c > 0) print h / c; else print 0 }')
ours_ring=$(echo "${mp_ours_ring[*]}" | median)
d22_raw=$(echo "${mp_d22_raw[*]}" | median)
d22_ring=$(echo "${mp_d22_ring[*]}" | median)
d25_raw=$(echo "${mp_d25_raw[*]}" | median)
d25_ring=$(echo "${mp_d25_ring[*]}" | median)
ANCHOR_PKT=7.7
ANCHOR_RAW=0.63

row "mempool: pktmbuf alloc+free bulk 32, cache (cycles/mbuf)" "$(fmt "$ours_pkt")" "$ANCHOR_PKT (anchor)" "$(ratio "$ANCHOR_PKT" "$ours_pkt")"
row "  same, buffers/s (ours; DPDK = anchor at TSC Hz)" "$(fmt "$(awk -v r="$ours_pkt_rate" 'BEGIN{print r/1e6}')" 1)M" \
  "$(fmt "$(awk -v h="$TSC_HZ" -v c=$ANCHOR_PKT 'BEGIN{print h/c/1e6}')" 1)M" ""
row "mempool: raw get+put bulk 32, cache 512 (cyc/obj, median)" "$(fmt "$ours_raw" 3)" "$(fmt "$d22_raw" 3)" \
  "$(ratio "$d22_raw" "$ours_raw")" "$(fmt "$d25_raw" 3)" "$(ratio "$d25_raw" "$ours_raw")"
row "  same vs the issue's anchor" "$(fmt "$ours_raw" 3)" "$ANCHOR_RAW (anchor)" "$(ratio "$ANCHOR_RAW" "$ours_raw")"
row "  same, objects/s (ours)" "$(fmt "$(awk -v r="$ours_raw_rate" 'BEGIN{print r/1e6}')" 1)M" "" ""
row "mempool: raw get+put bulk 32, no cache (cyc/obj, median)" "$(fmt "$ours_ring" 3)" "$(fmt "$d22_ring" 3)" \
  "$(ratio "$d22_ring" "$ours_ring")" "$(fmt "$d25_ring" 3)" "$(ratio "$d25_ring" "$ours_ring")"
row "  rounds, cache 512: ours | 22.11 | 25.11" "${mp_ours_raw[*]}" "${mp_d22_raw[*]}" "" "${mp_d25_raw[*]}" ""
row "  rounds, no cache: ours | 22.11 | 25.11" "${mp_ours_ring[*]}" "${mp_d22_ring[*]}" "" "${mp_d25_ring[*]}" ""

# --- 5. io forwarding between two null ports, one forwarding core (CPU 1), 64 B, burst 32 ------------------------
say "null io forwarding: $ROUNDS rounds x (ours, DPDK 22.11, 25.11), ${SECS} s each after ${WARMUP} s warm-up"
null_ours=()
null_dpdk=()
null_d25=()
for r in $(seq 1 "$ROUNDS"); do
  "$BIN/iofwd" --seconds "$SECS" --warmup "$WARMUP" --cpu 1 --burst 32 net_null0,size=64 net_null1,size=64 \
    >"$LOG/null_ours_$r.txt" || say "iofwd failed"
  null_ours+=("$(grep RESULT "$LOG/null_ours_$r.txt" | field rx_mpps)")
  pps=$(testpmd_run "$LOG/null_dpdk_$r.txt" "" dpdk-testpmd -l 0,1 --no-pci "${EAL_MEM[@]}" --file-prefix "$PREFIX" \
    --vdev net_null0,size=64 --vdev net_null1,size=64 -- -i --forward-mode=io --burst=32)
  null_dpdk+=("$(mpps "$pps")")
  pps=$(testpmd_run "$LOG/null_d25_$r.txt" "" "${D25_TESTPMD[@]}" -l 0,1 --no-pci "${EAL_MEM[@]}" --file-prefix \
    "$PREFIX" --vdev net_null0,size=64 --vdev net_null1,size=64 -- -i --forward-mode=io --burst=32)
  null_d25+=("$(mpps "$pps")")
  say "  round $r: ours ${null_ours[-1]}, DPDK 22.11 ${null_dpdk[-1]}, 25.11 ${null_d25[-1]} Mpps"
done
n_ours=$(echo "${null_ours[*]}" | median)
n_dpdk=$(echo "${null_dpdk[*]}" | median)
n_d25=$(echo "${null_d25[*]}" | median)
cyc() { awk -v h="$TSC_HZ" -v m="$1" 'BEGIN { if (m == "nan" || m + 0 == 0) print "nan"; else printf "%.2f\n", h / (m * 1e6) }'; }
row "null io fwd, 2 ports, 1 core: Rx Mpps (sum of ports)" "$(fmt "$n_ours")" "$(fmt "$n_dpdk")" \
  "$(ratio "$n_ours" "$n_dpdk")" "$(fmt "$n_d25")" "$(ratio "$n_ours" "$n_d25")"
row "  same, TSC cycles/packet on the forwarding core" "$(fmt "$(cyc "$n_ours")")" "$(fmt "$(cyc "$n_dpdk")")" \
  "$(ratio "$(cyc "$n_dpdk")" "$(cyc "$n_ours")")" "$(fmt "$(cyc "$n_d25")")" "$(ratio "$(cyc "$n_d25")" "$(cyc "$n_ours")")"
row "  rounds (Mpps)" "${null_ours[*]}" "${null_dpdk[*]}" "" "${null_d25[*]}" ""

# --- 6. af_packet over veth pairs in a private network namespace ------------------------------------------------
af_note=
if [ "${BENCH_SKIP_AFPACKET:-0}" = 1 ]; then
  af_note="af_packet: skipped (BENCH_SKIP_AFPACKET=1)"
elif ! grep -q '"net_af_packet"' swports/src/lib.rs; then
  af_note="af_packet: not yet available"
else
  NS=$PREFIX
  cleanup_ns() { ip netns del "$NS" 2>/dev/null || true; }
  trap cleanup_ns EXIT
  if ip netns add "$NS" 2>/dev/null &&
    ip -n "$NS" link add ga type veth peer name pa &&
    ip -n "$NS" link add gb type veth peer name pb; then
    for i in lo ga pa gb pb; do ip -n "$NS" link set "$i" up; done
    ip netns exec "$NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 || true
    DEVARGS="qpairs=1,blocksz=4096,framesz=2048,framecnt=512,qdisc_bypass=1"
    GEN_SECS=$(awk -v s="$SECS" -v w="$WARMUP" 'BEGIN { print s + w + 2 }')
    say "af_packet io forwarding (veth, generator on CPU 0): $ROUNDS rounds x (ours, DPDK)"
    af_ours=()
    af_dpdk=()
    af_d25=()
    gen_ours=()
    gen_dpdk=()
    for r in $(seq 1 "$ROUNDS"); do
      ip netns exec "$NS" "$BIN/pktgen" --seconds "$GEN_SECS" --cpu 0 ga gb >"$LOG/af_gen_ours_$r.txt" &
      gpid=$!
      ip netns exec "$NS" "$BIN/iofwd" --seconds "$SECS" --warmup "$WARMUP" --cpu 1 --burst 32 \
        "net_af_packet0,iface=pa,$DEVARGS" "net_af_packet1,iface=pb,$DEVARGS" >"$LOG/af_ours_$r.txt" ||
        say "iofwd (af_packet) failed"
      wait $gpid || true
      af_ours+=("$(grep RESULT "$LOG/af_ours_$r.txt" | field rx_mpps)")
      gen_ours+=("$(grep RESULT "$LOG/af_gen_ours_$r.txt" | field pps)")
      hook="ip netns exec $NS $BIN/pktgen --seconds $GEN_SECS --cpu 0 ga gb >$LOG/af_gen_dpdk_$r.txt & gpid=\$!"
      pps=$(testpmd_run "$LOG/af_dpdk_$r.txt" "$hook" ip netns exec "$NS" dpdk-testpmd -l 0,1 --no-pci \
        "${EAL_MEM[@]}" --file-prefix "$PREFIX" --vdev "net_af_packet0,iface=pa,$DEVARGS" \
        --vdev "net_af_packet1,iface=pb,$DEVARGS" -- -i --forward-mode=io --burst=32)
      wait || true
      af_dpdk+=("$(mpps "$pps")")
      gen_dpdk+=("$(grep RESULT "$LOG/af_gen_dpdk_$r.txt" 2>/dev/null | field pps)")
      hook="ip netns exec $NS $BIN/pktgen --seconds $GEN_SECS --cpu 0 ga gb >$LOG/af_gen_d25_$r.txt & gpid=\$!"
      pps=$(testpmd_run "$LOG/af_d25_$r.txt" "$hook" ip netns exec "$NS" "${D25_TESTPMD[@]}" -l 0,1 --no-pci \
        "${EAL_MEM[@]}" --file-prefix "$PREFIX" --vdev "net_af_packet0,iface=pa,$DEVARGS" \
        --vdev "net_af_packet1,iface=pb,$DEVARGS" -- -i --forward-mode=io --burst=32)
      wait || true
      af_d25+=("$(mpps "$pps")")
      say "  round $r: ours ${af_ours[-1]}, DPDK 22.11 ${af_dpdk[-1]}, 25.11 ${af_d25[-1]} Mpps (offered" \
        "${gen_ours[-1]} / ${gen_dpdk[-1]} pps)"
    done
    a_ours=$(echo "${af_ours[*]}" | median)
    a_dpdk=$(echo "${af_dpdk[*]}" | median)
    a_d25=$(echo "${af_d25[*]}" | median)
    g_ours=$(echo "${gen_ours[*]}" | median)
    g_dpdk=$(echo "${gen_dpdk[*]}" | median)
    row "af_packet io fwd, 2 veth ports, 1 core: Rx Mpps (sum)" "$(fmt "$a_ours" 3)" "$(fmt "$a_dpdk" 3)" \
      "$(ratio "$a_ours" "$a_dpdk")" "$(fmt "$a_d25" 3)" "$(ratio "$a_ours" "$a_d25")"
    row "  offered load from pktgen (Mpps, median)" "$(fmt "$(awk -v p="$g_ours" 'BEGIN{print p/1e6}')" 3)" \
      "$(fmt "$(awk -v p="$g_dpdk" 'BEGIN{print p/1e6}')" 3)" ""
    row "  rounds (Mpps)" "${af_ours[*]}" "${af_dpdk[*]}" "" "${af_d25[*]}" ""
  else
    af_note="af_packet: not available (cannot create a network namespace with veth pairs here)"
  fi
  cleanup_ns
  trap - EXIT
fi

# --- 7. the table -----------------------------------------------------------------------------------------------
echo
echo "pktio/mempool vs DPDK $DPDK_VERSION and $D25_VERSION ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) CPUs," \
  "TSC $(fmt "$(awk -v h="$TSC_HZ" 'BEGIN{print h/1e9}')" 2) GHz, memory: $([ "$MEM" = nohuge ] && echo 4K pages || echo 2M hugepages))"
printf '%-58s | %16s | %16s | %7s | %16s | %7s\n' "benchmark" "ours" "DPDK 22.11" "ratio" "DPDK 25.11" "ratio"
printf '%s\n' "-----------------------------------------------------------+------------------+------------------+---------+------------------+--------"
printf '%s\n' "${rows[@]}"
[ -n "$af_note" ] && echo "$af_note"
echo "ratio > 1.0: ours is faster (DPDK cycles / our cycles, or our Mpps / DPDK Mpps), against the DPDK on its left." \
  "'anchor': DPDK 22.11 figure" \
  "from the issue, measured on this machine class, not in this run. Raw outputs: $LOG"

# --- 8. testpmd-rs vs dpdk-testpmd: every forwarding mode, and the start-up time ----------------------------------
if [ "${BENCH_SKIP_TESTPMD:-0}" != 1 ]; then
  echo
  bash "$ROOT/bench/testpmd.sh" || say "bench/testpmd.sh failed (its log above)"
fi

# --- 9-11. the samples, the LPM lookups and AF_XDP, each with both references (their own scripts and tables) ------
# A part that fails is reported and the next one still runs, so one run prints every table it can.
for part in l3fwd lpm af-xdp; do
  var=BENCH_SKIP_$(echo "$part" | tr 'a-z-' 'A-Z_')
  if [ "${!var:-0}" = 1 ]; then
    say "$part: skipped ($var=1)"
    continue
  fi
  echo
  bash "$ROOT/bench/$part.sh" || say "bench/$part.sh failed (its log above)"
done
