#!/usr/bin/env bash
# l3fwd (this project's) against DPDK's l3fwd built from its example sources, side by side, twice: 22.11 (Debian's
# package, shared libraries) and 25.11 (the newest LTS: sid's libraries linked statically, the example's code for
# this CPU; bench/lib.sh dpdk25_make). One lcore,
# one net_pcap port replaying (infinite_rx=1) 64-byte IPv4/UDP frames of many flows, frames sent back out and
# dropped by the port (no tx_pcap), --parse-ptype; one table row per lookup mode (lpm, fib, em).
# Also runs for l2fwd (bench/l2fwd.sh sets L2L3_APPS=l2fwd): both l2fwds on the same pcap port, and on a
# net_null port (size=64), -T 1.
#
# Usage (as root, on a Debian machine): bash bench/l3fwd.sh        (bash bench/l2fwd.sh for l2fwd only)
#
# Method: packets per second over SECS seconds after WARMUP seconds. Ours print cumulative counters every second
# (-T 1; l3fwd's -T is an extension); DPDK's l3fwd prints none, so its port counters are read through DPDK's
# telemetry socket (/var/run/dpdk/PREFIX/dpdk_telemetry.v2) at the same two moments; DPDK's l2fwd prints its
# screen with -T 1 like ours. The reference l3fwd requests RX checksum offload, which pcap ports lack: that one
# line is changed to request none (sed below, in both versions); nothing else is patched. Builds go to $LOG/dpdk-ref
# and the 25.11 root's /tmp, never into the repository. Instructions per packet are not measured here: the VMs this runs on expose no PMU (perf stat shows
# instructions as <not supported>).
#
# Environment knobs (shared with run.sh): BENCH_SECONDS=5, BENCH_WARMUP=2, BENCH_ROUNDS=3, BENCH_MEM=huge|nohuge,
# BENCH_LOG_DIR; L2L3_FLOWS=4096 (flows in the capture), L2L3_MODES="lpm fib em", L2L3_APPS="l3fwd l2fwd",
# L2L3_LCORE=1 (the one lcore both sides run on).
set -eu

cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
WARMUP=${BENCH_WARMUP:-2}
FLOWS=${L2L3_FLOWS:-4096}
MODES=${L2L3_MODES:-lpm fib em}
APPS=${L2L3_APPS:-l3fwd l2fwd}
LCORE=${L2L3_LCORE:-1}

[ "$(id -u)" = 0 ] || die "run as root (hugepages, scripts/setup.sh)"
bench_setup
DPDK_VERSION=$(pkg-config --modversion libdpdk)
dpdk25_env
bench_setup_memory

# --- the reference binaries, out of tree --------------------------------------------------------------------------
REF=$LOG/dpdk-ref
rm -rf "$REF"
mkdir -p "$REF"
cp -r /usr/share/dpdk/examples/l3fwd /usr/share/dpdk/examples/l2fwd "$REF/"
# The one-line change: no RX checksum offload request (software ports cannot honour it).
l3fwd_without_rx_csum "$REF/l3fwd/main.c"
for app in l3fwd l2fwd; do
  say "building DPDK's $app $DPDK_VERSION"
  (cd "$REF/$app" && CFLAGS="-I/usr/share/dpdk/examples/common" make -j"$(nproc)" >"$REF/$app.build.log" 2>&1) ||
    die "building DPDK's $app failed; see $REF/$app.build.log"
done
# DPDK 25.11's, with the same one-line change.
D25_L3=$(dpdk25_example l3fwd)
l3fwd_without_rx_csum "$D25_L3/main.c"
dpdk25_example l2fwd >/dev/null
say "building DPDK's l3fwd and l2fwd $D25_VERSION (static)"
declare -A D25_APP
D25_APP[l3fwd]=$(dpdk25_make l3fwd)
D25_APP[l2fwd]=$(dpdk25_make l2fwd)

say "building l3fwd and l2fwd (release)"
cargo build --release -p l3fwd -p l2fwd --quiet
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release

# --- input: 64-byte frames (60 + FCS) to 198.18.0.0/24 (the built-in route to port 0), FLOWS sources/ports ------
PCAP=$LOG/l2l3-flows.pcap
python3 - "$PCAP" "$FLOWS" <<'PY'
import struct, sys
path, n = sys.argv[1], int(sys.argv[2])
def csum(h):
    s = sum(struct.unpack('!10H', h))
    while s > 0xffff:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff
with open(path, 'wb') as f:
    f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for i in range(n):
        eth = bytes([2, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 1]) + b'\x08\x00'
        src = bytes([10, (i >> 16) & 255, (i >> 8) & 255, i & 255])
        dst = bytes([198, 18, 0, i % 251])
        ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 46, i & 0xffff, 0, 64, 17, 0, src, dst)
        ip = ip[:10] + struct.pack('!H', csum(ip)) + ip[12:]
        frame = eth + ip + struct.pack('!HHHH', 1024 + i % 50000, 9, 26, 0) + bytes(18)
        f.write(struct.pack('<IIII', 0, 0, len(frame), len(frame)) + frame)
PY

EAL=(-l "$LCORE" -n 4 --no-pci "${EAL_MEM[@]}" --file-prefix "$PREFIX" --vdev "net_pcap0,rx_pcap=$PCAP,infinite_rx=1")
# l2fwd also on a null port (size 64): no capture replay, so the row shows the application's own cost.
EAL_NULL=(-l "$LCORE" -n 4 --no-pci "${EAL_MEM[@]}" --file-prefix "$PREFIX" --vdev "net_null0,size=64")

# Counters of a DPDK process through its telemetry socket: "ipackets opackets" of port 0.
telemetry() {
  python3 - "/var/run/dpdk/$PREFIX/dpdk_telemetry.v2" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.recv(16384)
s.send(b'/ethdev/stats,0')
d = json.loads(s.recv(65536).decode())['/ethdev/stats']
print(d['ipackets'], d['opackets'])
PY
}

# Runs "$@" in the background for WARMUP + SECS (+1) seconds, then SIGINT. $1: log, $2: how to read the received
# count (screen LABEL or "telemetry"). Prints Mpps over the SECS window, or nan.
measure() {
  local log=$1 how=$2
  shift 2
  "$@" >"$log" 2>&1 &
  local pid=$! a b
  sleep "$WARMUP"
  if [ "$how" = telemetry ]; then
    a=$(telemetry 2>/dev/null | awk '{print $1}') || a=
    sleep "$SECS"
    b=$(telemetry 2>/dev/null | awk '{print $1}') || b=
  else
    a=$(grep -a "$how" "$log" | tail -1 | awk '{print $NF}')
    sleep "$SECS"
    b=$(grep -a "$how" "$log" | tail -1 | awk '{print $NF}')
  fi
  kill -INT $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  awk -v a="$a" -v b="$b" -v s="$SECS" 'BEGIN { if (a == "" || b == "" || b <= a) print "nan"; else printf "%.3f\n", (b - a) / s / 1e6 }'
}

# l3fwd's cumulative "Total RX-packets: N TX-packets: M" line: print N last for measure().
ours_l3_total="Total   RX-packets:"
rows=()
row() { rows+=("$(printf '%-6s | %-4s | %8s | %10s | %6s | %10s | %6s | %6s | %s' "$@")"); }
anchor() { case $1 in lpm) echo 77.6 ;; fib) echo 70.1 ;; em) echo 41.2 ;; *) echo "" ;; esac; }

for app in $APPS; do
  cases=$MODES
  [ "$app" = l2fwd ] && cases="pcap null"
  for m in $cases; do
    ours=()
    dpdk=()
    d25=()
    for r in $(seq 1 "$ROUNDS"); do
      # Rotate the order, so that no program always follows the same one.
      case $((r % 3)) in 1) order="rs dpdk d25" ;; 2) order="dpdk d25 rs" ;; *) order="d25 rs dpdk" ;; esac
      for who in $order; do
        log=$LOG/${app}_${m}_${who}_$r.txt
        case $who in
          rs) cmd=("$BIN/$app") ;;
          dpdk) cmd=("$REF/$app/build/$app") ;;
          d25) cmd=("${D25_RUN[@]}" "${D25_APP[$app]}") ;;
        esac
        if [ "$app" = l3fwd ]; then
          APPARGS=(-p 1 --config="(0,0,$LCORE)" --parse-ptype --lookup="$m")
          if [ "$who" = rs ]; then
            # measure() reads the last field of our -T line (TX); TX == RX here (nothing dropped).
            v=$(measure "$log" "$ours_l3_total" "${cmd[@]}" "${EAL[@]}" -- "${APPARGS[@]}" -T 1)
          else
            v=$(measure "$log" telemetry "${cmd[@]}" "${EAL[@]}" -- "${APPARGS[@]}")
          fi
        else
          APPARGS=(-p 1 -T 1)
          E=("${EAL[@]}")
          [ "$m" = null ] && E=("${EAL_NULL[@]}")
          v=$(measure "$log" "Total packets received:" "${cmd[@]}" "${E[@]}" -- "${APPARGS[@]}")
        fi
        case $who in rs) ours+=("$v") ;; dpdk) dpdk+=("$v") ;; d25) d25+=("$v") ;; esac
      done
      say "  $app $m round $r: ours ${ours[-1]}, DPDK 22.11 ${dpdk[-1]}, 25.11 ${d25[-1]} Mpps"
    done
    o=$(echo "${ours[*]}" | median)
    d=$(echo "${dpdk[*]}" | median)
    e=$(echo "${d25[*]}" | median)
    row "$app" "$m" "$(fmt "$o" 2)" "$(fmt "$d" 2)" "$(ratio "$o" "$d")" "$(fmt "$e" 2)" "$(ratio "$o" "$e")" \
      "$([ "$app" = l3fwd ] && anchor "$m")" "${ours[*]} / ${dpdk[*]} / ${d25[*]}"
  done
done

echo
echo "l2fwd/l3fwd vs DPDK $DPDK_VERSION's and $D25_VERSION's samples ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')," \
  "$(nproc) CPUs, memory: $([ "$MEM" = nohuge ] && echo 4K pages || echo 2M hugepages)); net_pcap infinite_rx," \
  "64-byte IPv4/UDP, $FLOWS flows, lcore $LCORE, median of $ROUNDS x ${SECS} s"
printf '%-6s | %-4s | %8s | %10s | %6s | %10s | %6s | %6s | %s\n' app mode "ours" "dpdk 22.11" ratio "dpdk 25.11" \
  ratio anchor "rounds (Mpps): ours / 22.11 / 25.11"
echo "-------+------+----------+------------+--------+------------+--------+--------+----------------------------"
printf '%s\n' "${rows[@]}"
echo "Mpps: packets received per second over the window; ratio = ours / the DPDK on its left; anchor: the issue's DPDK 22.11 l3fwd figure" \
  "(quiet machine, not this run)."
