#!/usr/bin/env bash
# Instructions per packet of l3fwd's forwarding loop, ours against DPDK 22.11's l3fwd, counted by callgrind inside
# the loop only (`--toggle-collect`: ours `l3fwd::fwd::run`, DPDK's `lpm_main_loop` / `fib_main_loop` /
# `em_main_loop`), so start-up is excluded and the figure does not depend on host load. Both loops include the
# pcap PMD's RX and TX (the same input as bench/l3fwd.sh: one replaying net_pcap port, 64-byte IPv4/UDP frames).
#
# Usage (as root): bash bench/l3fwd-callgrind.sh        (after bench/l3fwd.sh, which builds the reference binary)
#
# Packets: ours from the statistics printed on exit; DPDK's from its telemetry socket read right before SIGINT
# (packets in the few milliseconds between the read and the signal are counted as instructions but not packets,
# well under 1% here). Knobs: L2L3_CG_SECONDS=20 (run time under valgrind), L2L3_MODES="lpm fib em",
# BENCH_LOG_DIR.
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
cargo build --release -p l3fwd --quiet
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release
EAL=(-l 1 -n 4 --no-pci --no-huge -m 1024 --vdev "net_pcap0,rx_pcap=$PCAP,infinite_rx=1")

totals() { grep -E '^totals:' "$1" | awk '{print $2}'; }

rows=()
for m in $MODES; do
  out=$LOG/cg_ours_$m.out
  timeout -s INT "$CG_SECS" valgrind --tool=callgrind --toggle-collect='l3fwd::fwd::run*' --callgrind-out-file="$out" \
    "$BIN/l3fwd" "${EAL[@]}" -- -p 1 --config="(0,0,1)" --parse-ptype --lookup="$m" >"$LOG/cg_ours_$m.log" 2>&1 || true
  ours_pk=$(grep -a 'Total   RX-packets:' "$LOG/cg_ours_$m.log" | tail -1 | awk '{print $3}')
  ours_ir=$(totals "$out")

  out=$LOG/cg_dpdk_$m.out
  valgrind --tool=callgrind --toggle-collect="${m}_main_loop" --callgrind-out-file="$out" \
    "$REF" "${EAL[@]}" --file-prefix "${PREFIX}cg" -- -p 1 --config="(0,0,1)" --parse-ptype --lookup="$m" \
    >"$LOG/cg_dpdk_$m.log" 2>&1 &
  pid=$!
  # Start-up under valgrind takes long (EM builds a 4M-entry hash): measure from the telemetry socket's appearance.
  waited=0
  until [ -S "/var/run/dpdk/${PREFIX}cg/dpdk_telemetry.v2" ] && grep -q 'entering main loop' "$LOG/cg_dpdk_$m.log"; do
    sleep 1
    waited=$((waited + 1))
    if [ $waited -ge 600 ] || ! kill -0 $pid 2>/dev/null; then
      kill -INT $pid 2>/dev/null || true
      die "DPDK's l3fwd did not start under valgrind; see $LOG/cg_dpdk_$m.log"
    fi
  done
  sleep "$CG_SECS"
  dpdk_pk=$(python3 - "/var/run/dpdk/${PREFIX}cg/dpdk_telemetry.v2" <<'PY'
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
  dpdk_ir=$(totals "$out")
  o=$(awk -v i="$ours_ir" -v p="$ours_pk" 'BEGIN { if (p > 0) printf "%.0f", i / p; else print "n/a" }')
  d=$(awk -v i="$dpdk_ir" -v p="$dpdk_pk" 'BEGIN { if (p > 0) printf "%.0f", i / p; else print "n/a" }')
  say "$m: ours $ours_ir Ir / $ours_pk packets, DPDK $dpdk_ir Ir / $dpdk_pk packets"
  rows+=("$(printf '%-4s | %9s | %9s | %6s' "$m" "$o" "$d" "$(ratio "$d" "$o")")")
done
echo
echo "Instructions per packet in the forwarding loop (pcap RX and TX included), ours vs DPDK $(pkg-config --modversion libdpdk) l3fwd"
printf '%-4s | %9s | %9s | %6s\n' mode ours DPDK "DPDK/ours"
echo "-----+-----------+-----------+-------"
printf '%s\n' "${rows[@]}"
