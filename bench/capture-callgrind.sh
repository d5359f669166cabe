#!/usr/bin/env bash
# What the live-capture taps cost when no capture runs, in instructions, counted by callgrind inside each app's
# forwarding loop only (`--toggle-collect` on its `fwd::run`: driver RX and TX, mempool, counters, taps), so
# start-up, the prompt, the statistics printing thread and the telemetry thread are excluded and the figure does
# not depend on host load. Per app, two cases:
#   plain   --no-telemetry: the loop without taps (its own monomorphisation)
#   idle    telemetry on: every polled RX queue and every TX queue tapped, no capture running
# Apps (CG_APPS):
#   testpmd-rs  io forwarding on two net_null ports (64 bytes, burst 32, one forwarding lcore: two streams)
#   l2fwd       one net_pcap port replaying 256 64-byte frames without end, forwarded to itself (MAC rewrite)
#   l3fwd       the same port and frames (IPv4/UDP to 198.18.1.x), LPM, routed to itself
# Prints instructions per packet and per 32-packet burst of each case and the difference per burst (a burst: one
# RX burst and the TX burst of its packets, so two tap checks).
#
# Usage: bash bench/capture-callgrind.sh      (bench/telemetry-capture.sh runs it after its wall-clock cases)
# Knobs: CG_SECONDS=10 (forwarding time under valgrind per case), CG_APPS="testpmd-rs l2fwd l3fwd",
#        CG_BASELINE_DIR=DIR (also runs DIR/APP, e.g. builds of an older commit, plain and idle, as cases "base"
#        and "base-idle": to check that the plain loop did not change), BENCH_LOG_DIR.
#
# Packets: what each app reports when it stops. The runs are timed, so their packet counts differ (with the load
# of the moment); instructions per packet do not depend on the count, since everything counted is the
# steady-state loop (a few hundred instructions of start and end in billions).
set -eu
cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
CG_SECS=${CG_SECONDS:-10}
APPS=${CG_APPS:-testpmd-rs l2fwd l3fwd}
bench_setup

for a in $APPS; do
  cargo build --release -p "$a" --quiet
done
TARGET=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
PCAP=$LOG/capcg-flows.pcap
python3 - "$PCAP" <<'PY'
import struct, sys
def csum(b):
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b)); s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff
with open(sys.argv[1], 'wb') as out:
    out.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for i in range(256):
        ip = bytearray(struct.pack('!BBHHHBBH4s4s', 0x45, 0, 46, i, 0, 64, 17, 0, bytes([10, 0, 0, i]),
                                   bytes([198, 18, 1, i])))
        ip[10:12] = struct.pack('!H', csum(bytes(ip)))
        f = bytes([2, 0, 0, 0, 0, 9, 2, 0, 0, 0, 0, 8]) + b'\x08\x00' + bytes(ip) + struct.pack('!HHHH', 1000 + i, 9, 26, 0) + bytes(18)
        out.write(struct.pack('<IIII', 0, i, len(f), len(f)) + f)
PY

# testpmd-rs under callgrind, driven through its prompt; prints "Ir packets".
cg_testpmd() { # $1: case name, $2: binary, $3: extra EAL arguments
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
  cg_result "$name" "$(grep -a -A1 'Accumulated forward statistics' "$log" |
    sed -n 's/.*RX-packets: *\([0-9]*\).*/\1/p' | tail -1)"
}

# l2fwd or l3fwd under callgrind for CG_SECS (start-up under valgrind included in the time, not in the count),
# then SIGINT; prints "Ir packets".
cg_sample() { # $1: case name, $2: binary, $3: l2fwd|l3fwd, $4: extra EAL arguments
  local name=$1 bin=$2 app=$3 extra=$4 log=$LOG/capcg_$1.log out=$LOG/capcg_$1.out
  local eal=(-l 1 -n 4 --no-pci --no-huge -m 1024 --file-prefix "${PREFIX}$name")
  local dev=(--vdev "net_pcap0,rx_pcap=$PCAP,infinite_rx=1")
  # shellcheck disable=SC2086
  if [ "$app" = l3fwd ]; then
    timeout -s INT $((CG_SECS + 10)) valgrind --tool=callgrind --toggle-collect='l3fwd::fwd::run' \
      --callgrind-out-file="$out" "$bin" "${eal[@]}" $extra "${dev[@]}" -- -p 1 --config="(0,0,1)" --lookup=lpm \
      >"$log" 2>&1 || true
    cg_result "$name" "$(grep -a 'Total   RX-packets:' "$log" | tail -1 | awk '{print $3}')"
  else
    timeout -s INT $((CG_SECS + 10)) valgrind --tool=callgrind --toggle-collect='l2fwd::fwd::run' \
      --callgrind-out-file="$out" "$bin" "${eal[@]}" $extra "${dev[@]}" -- -p 1 >"$log" 2>&1 || true
    cg_result "$name" "$(grep -a 'Total packets received:' "$log" | tail -1 | awk '{print $4}')"
  fi
}

cg_result() { # $1: case name, $2: packets
  local ir
  ir=$(awk '$1 == "summary:" || $1 == "totals:" { print $2; exit }' "$LOG/capcg_$1.out")
  [ -n "$ir" ] && [ -n "$2" ] && [ "$2" -gt 0 ] || die "$1: no instruction total or packet count; see $LOG/capcg_$1.log"
  echo "$ir $2"
}

diff_line() { # $1: label, $2: minuend per packet, $3: subtrahend per packet
  awk -v l="$1" -v a="$2" -v b="$3" 'BEGIN { printf "  %s: %+.3f Ir/packet, %+.1f Ir/burst\n", l, a - b, (a - b) * 32 }'
}

echo "Instructions in the forwarding loop (callgrind, about ${CG_SECS} s of forwarding per case); a burst: 32 packets"
for a in $APPS; do
  cases="plain idle"
  [ -n "${CG_BASELINE_DIR:-}" ] && cases="base base-idle $cases"
  declare -A per_pkt=()
  echo
  case $a in
    testpmd-rs) echo "testpmd-rs io, 2 x net_null size=64, one forwarding lcore (2 streams)" ;;
    l2fwd) echo "l2fwd, 1 x net_pcap replaying 64-byte frames, forwarded to itself" ;;
    l3fwd) echo "l3fwd lpm, 1 x net_pcap replaying 64-byte IPv4/UDP frames, routed to itself" ;;
    *) die "unknown app $a (testpmd-rs, l2fwd, l3fwd)" ;;
  esac
  printf '%-9s | %9s | %9s | %12s | %s\n' case "Ir/packet" "Ir/burst" packets "Ir total"
  for c in $cases; do
    bin=$TARGET/release/$a
    extra=
    case $c in base | base-idle) bin=$CG_BASELINE_DIR/$a ;; esac
    case $c in base | plain) extra=--no-telemetry ;; esac
    if [ "$a" = testpmd-rs ]; then
      r=$(cg_testpmd "$a-$c" "$bin" "$extra")
    else
      r=$(cg_sample "$a-$c" "$bin" "$a" "$extra")
    fi
    read -r ir pk <<<"$r"
    per_pkt[$c]=$(awk -v i="$ir" -v p="$pk" 'BEGIN { printf "%.3f", i / p }')
    printf '%-9s | %9s | %9s | %12s | %s\n' "$c" "${per_pkt[$c]}" \
      "$(awk -v x="${per_pkt[$c]}" 'BEGIN { printf "%.1f", x * 32 }')" "$pk" "$ir"
  done
  diff_line "idle taps - plain" "${per_pkt[idle]}" "${per_pkt[plain]}"
  if [ -n "${CG_BASELINE_DIR:-}" ]; then
    diff_line "plain - base" "${per_pkt[plain]}" "${per_pkt[base]}"
    diff_line "base-idle - base" "${per_pkt[base-idle]}" "${per_pkt[base]}"
  fi
  unset per_pkt
done
say "callgrind files: $LOG/capcg_*.out (callgrind_annotate FILE)"
