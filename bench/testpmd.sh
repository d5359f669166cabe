#!/usr/bin/env bash
# testpmd-rs against two dpdk-testpmds side by side, Debian's 22.11 package and DPDK 25.11 (the newest LTS; sid's
# build, bench/lib.sh dpdk25_env): one forwarding core (lcore 1), two net_null ports (64-byte packets), burst 32,
# every forwarding mode; then the start-up time (launch to first forwarded packet). Prints one table per part:
# testpmd-rs Mpps, each dpdk-testpmd's Mpps and the ratio to it (> 1.0 means testpmd-rs is faster).
#
# Usage (as root, on a Debian machine): bash bench/testpmd.sh   (or BENCH_ONLY=testpmd bash bench/run.sh; run.sh
# runs it at its end unless BENCH_SKIP_TESTPMD=1)
#
# Environment knobs (shared with run.sh):
#   BENCH_SECONDS=5          measurement window of each run (after BENCH_WARMUP=1 s of warm-up)
#   BENCH_ROUNDS=3           runs per program and mode, the three programs' order rotating each round; the table
#                            shows the medians
#   BENCH_TESTPMD_MODES      the cases to run (default: io mac macswap rxonly txonly 5tswap csum flowgen
#                            5tswap-udp csum-udp)
#   BENCH_STARTUP_ROUNDS=5   start-up measurements per configuration (median shown)
#   BENCH_HUGEPAGES=1024     as run.sh; BENCH_MEM=nohuge runs both sides on ordinary pages (--no-huge -m 1024)
#   BENCH_LOG_DIR            where raw outputs go (default: target/bench-logs)
set -eu

cd "$(dirname "$0")/.."
ROOT=$PWD
CASES=${BENCH_TESTPMD_MODES:-io mac macswap rxonly txonly 5tswap csum flowgen 5tswap-udp csum-udp}
SU_ROUNDS=${BENCH_STARTUP_ROUNDS:-5}
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

[ "$(id -u)" = 0 ] || die "run as root (hugepages, scripts/setup.sh)"

bench_setup
DPDK_VERSION=$(dpkg-query -W -f='${Version}' dpdk 2>/dev/null || echo unknown)
dpdk25_env
bench_setup_memory
# DPDK 25.11's dpdk-testpmd with the plugins a net_null run needs.
read -r -a D25_PMDS <<<"$(dpdk25_pmds bus_vdev mempool_ring net_null)"
DPDK25=("${D25_RUN[@]}" "$D25_BIN/dpdk-testpmd" "${D25_PMDS[@]}")

say "building testpmd-rs and the start-up probe (release)"
cargo build --release -p testpmd-rs -p bench --quiet
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release

# Both programs get the same EAL and testpmd arguments; only the binary differs.
VDEVS=(--vdev net_null0,size=64 --vdev net_null1,size=64)
tp_args() { # $1: forwarding mode
  echo -l 0,1 --no-pci "${EAL_MEM[@]}" --file-prefix "$PREFIX" "${VDEVS[@]}" -- -i --forward-mode="$1" --burst=32 \
    --txpkts=64
}
# The issue's dpdk-testpmd 22.11 figures for this machine class (quiet machine), Mpps.
anchor() {
  case $1 in
    io) echo 159 ;; mac) echo 126 ;; macswap) echo 133 ;; rxonly) echo 242 ;; txonly) echo 87 ;; 5tswap) echo 111 ;;
    csum) echo 81 ;; flowgen) echo 49 ;; *) echo "" ;;
  esac
}

rows=()
row() { rows+=("$(printf '%-10s | %-6s | %10s | %10s | %6s | %10s | %6s | %6s | %11s | %s' "$@")"); }

# Bytes per packet over the measured window of a log: the second show's bps / pps / 8, both ports ($1: log,
# $2: Rx or Tx), so that the table shows both programs moved packets of the same length.
pkt_bytes() {
  grep "$2-pps:" "$1" | sed -n '3,4p' | awk '{p += $2; b += $4} END {if (p > 0) printf "%.0f\n", b / p / 8; else print "?"}'
}

# --- 1. throughput per mode ----------------------------------------------------------------------------------------
# A case is a forwarding mode, or MODE-udp: MODE on buffers that hold UDP/IPv4 frames (a 0.5 s txonly run in the
# same process first writes them; net_null RX hands the same buffers out again without touching their data), so
# that 5tswap and csum parse down to UDP instead of stopping at EtherType 0.
say "modes: $CASES; $ROUNDS rounds x (testpmd-rs, dpdk-testpmd $DPDK_VERSION, $D25_VERSION) each, ${SECS} s after" \
  "${WARMUP} s warm-up"
for c in $CASES; do
  mode=$c
  hook=
  if [ "${c%-udp}" != "$c" ]; then
    mode=${c%-udp}
    hook="echo 'set fwd txonly' >&9; echo start >&9; sleep 0.5; echo stop >&9; echo 'set fwd $mode' >&9"
  fi
  field_=Rx-pps
  case $mode in txonly | flowgen) field_=Tx-pps ;; esac
  read -r -a args <<<"$(tp_args "$mode")"
  ours=()
  dpdk=()
  d25=()
  for r in $(seq 1 "$ROUNDS"); do
    # Rotate the order, so that no program always follows the same one.
    case $((r % 3)) in 1) order="rs dpdk d25" ;; 2) order="dpdk d25 rs" ;; *) order="d25 rs dpdk" ;; esac
    for who in $order; do
      log=$LOG/testpmd_${c}_${who}_$r.txt
      case $who in
        rs) cmd=("$BIN/testpmd-rs") ;;
        dpdk) cmd=(dpdk-testpmd) ;;
        d25) cmd=("${DPDK25[@]}") ;;
      esac
      pps=$(PPS_FIELD=$field_ testpmd_run "$log" "$hook" "${cmd[@]}" "${args[@]}")
      case $who in
        rs) ours+=("$(mpps "$pps")") ;;
        dpdk) dpdk+=("$(mpps "$pps")") ;;
        d25) d25+=("$(mpps "$pps")") ;;
      esac
    done
    say "  $c round $r: testpmd-rs ${ours[-1]}, dpdk-testpmd 22.11 ${dpdk[-1]}, 25.11 ${d25[-1]} Mpps"
  done
  o=$(echo "${ours[*]}" | median)
  d=$(echo "${dpdk[*]}" | median)
  e=$(echo "${d25[*]}" | median)
  f=${field_%-pps}
  len="$(pkt_bytes "$LOG/testpmd_${c}_rs_1.txt" "$f")/$(pkt_bytes "$LOG/testpmd_${c}_dpdk_1.txt" "$f")/$(pkt_bytes \
    "$LOG/testpmd_${c}_d25_1.txt" "$f")"
  row "$c" "$field_" "$(fmt "$o" 1)" "$(fmt "$d" 1)" "$(ratio "$o" "$d")" "$(fmt "$e" 1)" "$(ratio "$o" "$e")" \
    "$(anchor "$c")" "$len" "${ours[*]} / ${dpdk[*]} / ${d25[*]}"
done

# --- 2. start-up: launch to first forwarded packet (io mode), through the prompt -----------------------------------
# bench/src/bin/startup.rs: spawn, send `start` at the first prompt, then `show port stats all` back to back until
# TX-packets > 0. dpdk-testpmd's stdout is made line-buffered with stdbuf (it is a pipe here).
say "start-up: $SU_ROUNDS runs per configuration"
su_rows=()
su_case() { # $1: label, rest: command line
  local label=$1 prompt=() first=() done_=() r line
  shift
  for r in $(seq 1 "$SU_ROUNDS"); do
    line=$("$BIN/startup" -- "$@" 2>>"$LOG/startup_stderr.txt" | grep RESULT || true)
    echo "$label: $line" >>"$LOG/startup.txt"
    prompt+=("$(echo "$line" | field prompt_s)")
    done_+=("$(echo "$line" | field start_done_s)")
    first+=("$(echo "$line" | field first_tx_s)")
  done
  su_rows+=("$(printf '%-40s | %9s | %9s | %11s' "$label" "$(echo "${prompt[*]}" | median)" \
    "$(echo "${done_[*]}" | median)" "$(echo "${first[*]}" | median)")")
}
: >"$LOG/startup.txt"
SU_TAIL=(--no-pci "${VDEVS[@]}" -- -i --forward-mode=io --burst=32)
su_case "testpmd-rs --no-huge" "$BIN/testpmd-rs" -l 0,1 --no-huge -m 1024 --file-prefix "${PREFIX}s" "${SU_TAIL[@]}"
su_case "dpdk-testpmd 22.11 --no-huge -m 1024" stdbuf -oL dpdk-testpmd -l 0,1 --no-huge -m 1024 \
  --file-prefix "${PREFIX}s" "${SU_TAIL[@]}"
su_case "dpdk-testpmd 25.11 --no-huge -m 1024" stdbuf -oL "${DPDK25[@]}" -l 0,1 --no-huge -m 1024 \
  --file-prefix "${PREFIX}s" "${SU_TAIL[@]}"
if [ "$MEM" != nohuge ]; then
  su_case "testpmd-rs (2 MiB hugepages)" "$BIN/testpmd-rs" -l 0,1 --file-prefix "${PREFIX}s" "${SU_TAIL[@]}"
  su_case "dpdk-testpmd 22.11 (2 MiB hugepages)" stdbuf -oL dpdk-testpmd -l 0,1 --file-prefix "${PREFIX}s" \
    "${SU_TAIL[@]}"
  su_case "dpdk-testpmd 25.11 (2 MiB hugepages)" stdbuf -oL "${DPDK25[@]}" -l 0,1 --file-prefix "${PREFIX}s" \
    "${SU_TAIL[@]}"
fi

# --- 3. the tables -------------------------------------------------------------------------------------------------
echo
echo "testpmd-rs vs dpdk-testpmd $DPDK_VERSION (Debian 12) and $D25_VERSION (sid's build) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')," \
  "$(nproc) CPUs, memory: $([ "$MEM" = nohuge ] && echo 4K pages || echo 2M hugepages)); 2 x net_null size=64," \
  "1 forwarding lcore, burst 32, median of $ROUNDS x ${SECS} s"
printf '%-10s | %-6s | %10s | %10s | %6s | %10s | %6s | %6s | %11s | %s\n' mode pps "testpmd-rs" "dpdk 22.11" ratio \
  "dpdk 25.11" ratio anchor "bytes" "rounds (Mpps): testpmd-rs / 22.11 / 25.11"
echo "-----------+--------+------------+------------+--------+------------+--------+--------+-------------+-----------"
printf '%s\n' "${rows[@]}"
echo "Mpps: the 'pps' field of both ports' 'Throughput (since last show)' summed; ratio = testpmd-rs / the dpdk-testpmd on its left;" \
  "anchor: the issue's dpdk-testpmd 22.11 figure (quiet machine, not this run); bytes: bytes per packet measured" \
  "(bps / pps / 8, testpmd-rs/22.11/25.11, round 1)."
echo
echo "start-up, seconds from launch (median of $SU_ROUNDS; io mode, 2 net_null ports, driven through stdin)"
printf '%-40s | %9s | %9s | %11s\n' "program" "prompt" "start done" "first fwd"
echo "-----------------------------------------+-----------+-----------+------------"
printf '%s\n' "${su_rows[@]}"
echo "first fwd: output time of the first 'show port stats all' with TX-packets > 0 (an upper bound). Raw: $LOG"
