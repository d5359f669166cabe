#!/usr/bin/env bash
# Instructions per packet of l3fwd's forwarding loop, ours against DPDK 22.11's and 25.11's l3fwd (the binaries
# bench/l3fwd.sh builds: 22.11 shared; 25.11 static, built here with the example's code at the libraries'
# baseline, since valgrind cannot run this CPU's AVX-512), counted by callgrind inside
# the loop only (`--toggle-collect`: ours `l3fwd::fwd::run`, DPDK's `lpm_main_loop` / `fib_main_loop` /
# `em_main_loop`), so start-up is excluded and the figure does not depend on host load. Both loops include the
# pcap PMD's RX and TX (the same input as bench/l3fwd.sh: one replaying net_pcap port, 64-byte IPv4/UDP frames).
#
# Usage (as root): bash bench/l3fwd-callgrind.sh        (after bench/l3fwd.sh, which builds the reference binary)
#
# Packets: ours from the statistics printed on exit; DPDK's from callgrind's count of its --parse-ptype RX callback
# (once per burst) times 32 (the pcap port fills every burst), checked against its telemetry socket read right
# before SIGINT (a lower bound: see dpdk_cg).
# Knobs: L2L3_CG_SECONDS=20 (run time under valgrind), L2L3_MODES="lpm fib em", BENCH_LOG_DIR.
set -eu
cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
CG_SECS=${L2L3_CG_SECONDS:-20}
MODES=${L2L3_MODES:-lpm fib em}
REF=$LOG/dpdk-ref/l3fwd/build/l3fwd
PCAP=$LOG/l2l3-flows.pcap
[ -x "$REF" ] && [ -f "$PCAP" ] || die "run bench/l3fwd.sh first (it builds $REF and writes $PCAP)"
bench_setup
DPDK_VERSION=$(pkg-config --modversion libdpdk)
dpdk25_env
# 25.11's l3fwd as bench/l3fwd.sh builds it (the same one-line change), but its own code at Debian's baseline
# (-march=corei7) like the libraries: valgrind cannot decode the AVX-512 that -march=native emits here.
D25_L3=$(dpdk25_example l3fwd l3fwd-baseline)
l3fwd_without_rx_csum "$D25_L3/main.c"
say "building DPDK $D25_VERSION's l3fwd (static, baseline)"
REF25=$(dpdk25_make l3fwd l3fwd-baseline corei7)
cargo build --release -p l3fwd --quiet
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release
EAL=(-l 1 -n 4 --no-pci --no-huge -m 1024 --vdev "net_pcap0,rx_pcap=$PCAP,infinite_rx=1")

totals() { grep -E '^totals:' "$1" | awk '{print $2}'; }

per_packet() { awk -v i="$1" -v p="$2" 'BEGIN { if (p > 0) printf "%.0f", i / p; else print "n/a" }'; }

# One DPDK l3fwd under callgrind, collecting inside MODE_main_loop only. $1: mode, $2: a tag for the files, the
# rest: the command (loader and binary). Sets cg_pk (packets, from the telemetry socket right before SIGINT) and
# cg_ir.
dpdk_cg() {
  local m=$1 tag=$2 out pid waited
  shift 2
  out=$LOG/cg_${tag}_$m.out
  valgrind --tool=callgrind --toggle-collect="${m}_main_loop" --callgrind-out-file="$out" \
    "$@" "${EAL[@]}" --file-prefix "${PREFIX}cg" -- -p 1 --config="(0,0,1)" --parse-ptype --lookup="$m" \
    >"$LOG/cg_${tag}_$m.log" 2>&1 &
  pid=$!
  # Start-up under valgrind takes long (EM builds a 4M-entry hash): measure from the telemetry socket's appearance.
  waited=0
  until [ -S "/var/run/dpdk/${PREFIX}cg/dpdk_telemetry.v2" ] && grep -q 'entering main loop' "$LOG/cg_${tag}_$m.log"; do
    sleep 1
    waited=$((waited + 1))
    if [ $waited -ge 600 ] || ! kill -0 $pid 2>/dev/null; then
      kill -INT $pid 2>/dev/null || true
      die "DPDK's l3fwd ($tag) did not start under valgrind; see $LOG/cg_${tag}_$m.log"
    fi
  done
  sleep "$CG_SECS"
  cg_pk=$(python3 - "/var/run/dpdk/${PREFIX}cg/dpdk_telemetry.v2" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.recv(16384)
s.send(b'/ethdev/stats,0')
print(json.loads(s.recv(65536).decode())['/ethdev/stats']['ipackets'])
PY
  )
  kill -INT $pid
  wait $pid || true
  cg_ir=$(totals "$out")
  # The telemetry count is only a lower bound: under valgrind the main thread, which handles SIGINT, can wait
  # seconds for the polling lcore to yield, and the loop runs on uncounted (35% more packets than telemetry said
  # in one run). So the packets are the --parse-ptype RX callback's calls (one per burst) times MAX_PKT_BURST (32):
  # the replaying pcap port fills every burst (its pool never runs dry here).
  local bursts
  bursts=$(callgrind_annotate --tree=caller "$out" 2>/dev/null |
    awk '/< .*rte_eth_call_rx_callbacks/ { l = $0 } /\* +\?\?\?:[a-z]+_cb_parse_ptype/ { print l; exit }' |
    sed -n 's/.*(\([0-9,]*\)x).*/\1/p' | tr -d ,)
  [ -n "$bursts" ] || die "no --parse-ptype callback calls in $out (DPDK's l3fwd changed its callback names?)"
  [ $((bursts * 32)) -ge "$cg_pk" ] || die "$out: $bursts bursts x 32 < the $cg_pk packets telemetry counted"
  say "  $tag $m: $bursts bursts x 32 = $((bursts * 32)) packets (telemetry before SIGINT: $cg_pk)"
  cg_pk=$((bursts * 32))
}

rows=()
for m in $MODES; do
  out=$LOG/cg_ours_$m.out
  timeout -s INT "$CG_SECS" valgrind --tool=callgrind --toggle-collect='l3fwd::fwd::run*' --callgrind-out-file="$out" \
    "$BIN/l3fwd" "${EAL[@]}" -- -p 1 --config="(0,0,1)" --parse-ptype --lookup="$m" >"$LOG/cg_ours_$m.log" 2>&1 || true
  ours_pk=$(grep -a 'Total   RX-packets:' "$LOG/cg_ours_$m.log" | tail -1 | awk '{print $3}')
  ours_ir=$(totals "$out")

  dpdk_cg "$m" dpdk "$REF"
  dpdk_pk=$cg_pk dpdk_ir=$cg_ir
  dpdk_cg "$m" d25 "${D25_RUN[@]}" "$REF25"
  d25_pk=$cg_pk d25_ir=$cg_ir
  o=$(per_packet "$ours_ir" "$ours_pk")
  d=$(per_packet "$dpdk_ir" "$dpdk_pk")
  d25=$(per_packet "$d25_ir" "$d25_pk")
  say "$m: ours $ours_ir Ir / $ours_pk packets, DPDK $DPDK_VERSION $dpdk_ir / $dpdk_pk, DPDK $D25_VERSION $d25_ir / $d25_pk"
  rows+=("$(printf '%-4s | %9s | %9s | %6s | %9s | %6s' "$m" "$o" "$d" "$(ratio "$d" "$o")" "$d25" "$(ratio "$d25" "$o")")")
done
echo
echo "Instructions per packet in the forwarding loop (pcap RX and TX included), ours vs DPDK $DPDK_VERSION's and $D25_VERSION's l3fwd"
printf '%-4s | %9s | %9s | %6s | %9s | %6s\n' mode ours "$DPDK_VERSION" ratio "$D25_VERSION" ratio
echo "-----+-----------+-----------+--------+-----------+-------"
printf '%s\n' "${rows[@]}"
