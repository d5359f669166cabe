#!/usr/bin/env bash
# What telemetry and live capture cost the data path: testpmd-rs io forwarding on two net_null ports (64-byte
# packets, burst 32, one forwarding lcore), in one run of this script:
#   plain     --no-telemetry: no socket, queues not tapped for capture (the loop without tap checks)
#   idle      telemetry on (queues tapped: one capture check per burst each way), nobody asking
#   polled    telemetry polled every 10 ms (/ethdev/stats of both ports, one persistent client)
#   capture   a pktio-dumpcap capture of port 0 RX running for the whole window (snap length 128, to /dev/null so
#             the disk does not set the pace; its received/dropped/written counts are printed)
# Prints Mpps per case (median of BENCH_ROUNDS, cases interleaved per round) and the slowdown against plain. Then
# runs bench/capture-callgrind.sh: the idle taps' cost in instructions (repeatable, which the wall clock here is
# not on a shared machine); BENCH_TC_CALLGRIND=0 skips it.
#
# Usage (as root): bash bench/telemetry-capture.sh
# Knobs (bench/lib.sh): BENCH_SECONDS=5, BENCH_WARMUP=1, BENCH_ROUNDS=3, BENCH_MEM=huge|nohuge, BENCH_LOG_DIR;
# BENCH_TC_CASES (default "plain idle polled capture"; plain must be among them).
set -eu

cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

[ "$(id -u)" = 0 ] || die "run as root (hugepages)"
bench_setup_memory

say "building testpmd-rs and pktio-dumpcap (release)"
cargo build --release -p testpmd-rs --quiet
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release
# The poller and the capture run from before "start" to the end of the measured window, and end before testpmd-rs
# quits (testpmd_run quits it 0.5 s after the window).
RUN_FOR=$((WARMUP + SECS))

args() { # $1: extra EAL arguments
  echo -l 0,1 --no-pci "${EAL_MEM[@]}" --file-prefix "$PREFIX" $1 --vdev net_null0,size=64 --vdev net_null1,size=64 \
    -- -i --forward-mode=io --burst=32 --txpkts=64
}

# A client asking for both ports' stats every 10 ms for RUN_FOR seconds; prints how many answers it got.
POLLER='
import socket, sys, time, os
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1]); s.recv(1024)
end = time.time() + float(sys.argv[2]); n = 0
try:
    while time.time() < end:
        for p in (0, 1):
            s.send(b"/ethdev/stats,%d" % p); s.recv(16384); n += 1
        time.sleep(0.01)
except OSError as e:
    print("error=%s" % e)
print("answers=%d" % n)
'
if [ -n "${RUNTIME_DIRECTORY:-}" ]; then SOCK=$RUNTIME_DIRECTORY/dpdk/$PREFIX/dpdk_telemetry.v2
else SOCK=/var/run/dpdk/$PREFIX/dpdk_telemetry.v2; fi

declare -A res
CASES=${BENCH_TC_CASES:-plain idle polled capture}
# The order of the cases rotates from round to round, so that none always runs right after another (on a shared
# machine, the load of the moment moves every figure; medians over rotated rounds cancel an order effect).
ORDER=($CASES)
for r in $(seq 1 "$ROUNDS"); do
  k=$(((r - 1) % ${#ORDER[@]}))
  for c in "${ORDER[@]:$k}" "${ORDER[@]:0:$k}"; do
    hook=
    extra=
    case $c in
      plain) extra=--no-telemetry ;;
      polled) hook="python3 -c '$POLLER' '$SOCK' $RUN_FOR >'$LOG/tc_poll_$r.txt' 2>&1 &" ;;
      capture) hook="'$BIN/pktio-dumpcap' --file-prefix '$PREFIX' -i 0 --rx -s 128 -w /dev/null -a duration:$RUN_FOR \
        >'$LOG/tc_dumpcap_$r.txt' 2>&1 &" ;;
    esac
    read -r -a a <<<"$(args "$extra")"
    pps=$(testpmd_run "$LOG/tc_${c}_$r.txt" "$hook" "$BIN/testpmd-rs" "${a[@]}")
    res[$c]="${res[$c]:-} $(mpps "$pps")"
    say "  round $r $c: $(mpps "$pps") Mpps"
  done
done

plain=$(echo "${res[plain]}" | median)
echo
echo "testpmd-rs io, 2 x net_null size=64, burst 32, 1 forwarding lcore ($(grep -m1 'model name' /proc/cpuinfo |
  cut -d: -f2 | sed 's/^ *//'), $(nproc) CPUs); median of $ROUNDS rounds, ${SECS} s each"
printf '%-8s | %8s | %9s | %s\n' case Mpps "vs plain" "rounds"
for c in $CASES; do
  m=$(echo "${res[$c]}" | median)
  slow=$(awk -v a="$m" -v b="$plain" 'BEGIN { if (b + 0 == 0) print "n/a"; else printf "%+.1f%%\n", (a / b - 1) * 100 }')
  printf '%-8s | %8s | %9s | %s\n' "$c" "$(fmt "$m" 1)" "$slow" "${res[$c]}"
done
[ -n "${res[polled]:-}" ] && echo "polled: $(cat "$LOG"/tc_poll_*.txt | tr '\n' ' ')"
[ -n "${res[capture]:-}" ] && echo "capture: $(grep -h 'Packets' "$LOG"/tc_dumpcap_*.txt | tr '\n' ' ')"
if [ "${BENCH_TC_CALLGRIND:-1}" != 0 ]; then
  echo
  bash "$ROOT/bench/capture-callgrind.sh"
fi
true
