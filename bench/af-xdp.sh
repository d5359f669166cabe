#!/usr/bin/env bash
# AF_XDP io forwarding over veth pairs in a private network namespace, side by side in one run:
#   testpmd-rs on our net_af_xdp | dpdk-testpmd on DPDK's net_af_xdp | testpmd-rs on our net_af_packet
#   (| dpdk-testpmd on DPDK's net_af_packet, for reference)
# Two veth pairs (ga-pa, gb-pb) in a namespace the script makes and removes; bench's `pktgen` sends 64-byte frames
# into ga and gb (kernel side, CPU 0); the forwarder owns pa and pb (one forwarding core, lcore 1 = CPU 1, burst
# 32) and forwards io between them. Figure: the forwarder's Rx-pps summed over both ports (testpmd's "Throughput
# (since last show)"), median of the rounds; ratios ours / DPDK.
#
# Usage (as root, on a Debian machine with the dpdk package): bash bench/af-xdp.sh
# Knobs: BENCH_AFXDP_EXTRA (devargs appended to ours, e.g. ",xdp_mode=skb"), BENCH_SECONDS=5, BENCH_WARMUP=1, BENCH_ROUNDS=3, BENCH_MEM=nohuge (default here: ordinary pages, so it
# runs beside other users of hugepages), BENCH_LOG_DIR (default target/bench-logs).
set -eu

cd "$(dirname "$0")/.."
ROOT=$PWD
BENCH_MEM=${BENCH_MEM:-nohuge}
export BENCH_MEM
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

[ "$(id -u)" = 0 ] || die "run as root (network namespace, veth pairs, XDP programs)"
command -v dpdk-testpmd >/dev/null || bench_apt_install dpdk
DPDK_VERSION=$(dpkg-query -W -f='${Version}' dpdk 2>/dev/null || echo unknown)
bench_setup_memory

say "building testpmd-rs and pktgen (release)"
cargo build --release -p testpmd-rs -p bench --quiet
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release

NS=$PREFIX
cleanup() { ip netns del "$NS" 2>/dev/null || true; }
trap cleanup EXIT
ip netns add "$NS"
ip -n "$NS" link add ga type veth peer name pa
ip -n "$NS" link add gb type veth peer name pb
for i in lo ga pa gb pb; do ip -n "$NS" link set "$i" up; done
ip netns exec "$NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 || true
GEN_SECS=$(awk -v s="$SECS" -v w="$WARMUP" 'BEGIN { print s + w + 3 }')

# $1: label, $2: log stem, rest: forwarder command line (run inside the namespace). Prints Mpps.
fwd_run() {
  local stem=$2
  shift 2
  local hook="ip netns exec $NS $BIN/pktgen --seconds $GEN_SECS --cpu 0 ga gb >$LOG/${stem}_gen.txt & gpid=\$!"
  local pps
  pps=$(testpmd_run "$LOG/${stem}.txt" "$hook" ip netns exec "$NS" "$@")
  wait 2>/dev/null || true
  # The XDP program of the ports must be gone after the forwarder quit.
  if ip -n "$NS" link show pa | grep -q ' xdp'; then say "  $stem: an XDP program is still attached to pa"; fi
  mpps "$pps"
}

tp() { # $1: binary, rest: vdevs
  local bin=$1
  shift
  echo "$bin" -l 0,1 --no-pci "${EAL_MEM[@]}" --file-prefix "$PREFIX" "$@" -- -i --forward-mode=io --burst=32
}
XDP_ARGS="start_queue=0,queue_count=1"
XDP_VDEVS=(--vdev "net_af_xdp0,iface=pa,$XDP_ARGS" --vdev "net_af_xdp1,iface=pb,$XDP_ARGS")
# Our extra devargs (BENCH_AFXDP_EXTRA, e.g. ",xdp_mode=skb"); DPDK's PMD gets the common ones only.
OUR_XDP_VDEVS=(--vdev "net_af_xdp0,iface=pa,$XDP_ARGS${BENCH_AFXDP_EXTRA:-}"
  --vdev "net_af_xdp1,iface=pb,$XDP_ARGS${BENCH_AFXDP_EXTRA:-}")
PKT_ARGS="qpairs=1,blocksz=4096,framesz=2048,framecnt=512,qdisc_bypass=1"
PKT_VDEVS=(--vdev "net_af_packet0,iface=pa,$PKT_ARGS" --vdev "net_af_packet1,iface=pb,$PKT_ARGS")

say "AF_XDP / af_packet io forwarding over veth: $ROUNDS rounds x 4 forwarders, ${SECS} s after ${WARMUP} s warm-up"
xo=() xd=() po=() pd=()
for r in $(seq 1 "$ROUNDS"); do
  # shellcheck disable=SC2046
  xo+=("$(fwd_run ours-xdp "afxdp_ours_$r" $(tp "$BIN/testpmd-rs" "${OUR_XDP_VDEVS[@]}"))")
  # shellcheck disable=SC2046
  xd+=("$(fwd_run dpdk-xdp "afxdp_dpdk_$r" $(tp dpdk-testpmd "${XDP_VDEVS[@]}"))")
  # shellcheck disable=SC2046
  po+=("$(fwd_run ours-pkt "afxdp_afpkt_ours_$r" $(tp "$BIN/testpmd-rs" "${PKT_VDEVS[@]}"))")
  # shellcheck disable=SC2046
  pd+=("$(fwd_run dpdk-pkt "afxdp_afpkt_dpdk_$r" $(tp dpdk-testpmd "${PKT_VDEVS[@]}"))")
  say "  round $r: af_xdp ours ${xo[-1]} DPDK ${xd[-1]}; af_packet ours ${po[-1]} DPDK ${pd[-1]} (Mpps)"
done
m_xo=$(echo "${xo[*]}" | median)
m_xd=$(echo "${xd[*]}" | median)
m_po=$(echo "${po[*]}" | median)
m_pd=$(echo "${pd[*]}" | median)

echo
echo "AF_XDP io forwarding over veth, testpmd-rs vs dpdk-testpmd $DPDK_VERSION ($(grep -m1 'model name' /proc/cpuinfo |
  cut -d: -f2 | sed 's/^ *//'), $(nproc) CPUs, kernel $(uname -r))"
printf '%-44s | %10s | %10s | %6s | %s\n' "forwarder (2 veth ports, 1 core, Rx Mpps sum)" ours DPDK ratio "rounds ours / DPDK"
printf '%s\n' "---------------------------------------------+------------+------------+--------+-------------------"
printf '%-44s | %10s | %10s | %6s | %s\n' "net_af_xdp" "$(fmt "$m_xo" 3)" "$(fmt "$m_xd" 3)" "$(ratio "$m_xo" "$m_xd")" \
  "${xo[*]} / ${xd[*]}"
printf '%-44s | %10s | %10s | %6s | %s\n' "net_af_packet" "$(fmt "$m_po" 3)" "$(fmt "$m_pd" 3)" "$(ratio "$m_po" "$m_pd")" \
  "${po[*]} / ${pd[*]}"
printf '%-44s | %10s | %10s | %6s |\n' "net_af_xdp / net_af_packet" "$(ratio "$m_xo" "$m_po")" "$(ratio "$m_xd" "$m_pd")" ""
echo "ratio > 1.0: ours is faster. Raw outputs (testpmd logs, pktgen offered load): $LOG"
