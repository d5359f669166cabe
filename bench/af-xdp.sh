#!/usr/bin/env bash
# AF_XDP io forwarding over veth pairs in a private network namespace, side by side in one run, each round running
# every forwarder once in turn (alternating, so a change in the host's load hits all of them alike):
#   testpmd-rs on our net_af_xdp with umem=pool and with umem=own, each with xdp_mode=drv (native) and skb
#   | dpdk-testpmd on DPDK's net_af_xdp (its defaults) | testpmd-rs on our net_af_packet | dpdk-testpmd on DPDK's
#   net_af_packet
# Two veth pairs (ga-pa, gb-pb) in a namespace the script makes and removes; bench's `pktgen` sends 64-byte frames
# into ga and gb (kernel side, CPU 0); the forwarder owns pa and pb (one forwarding core, lcore 1 = CPU 1, burst
# 32) and forwards io between them. Figure: the forwarder's Rx-pps summed over both ports (testpmd's "Throughput
# (since last show)"), median of the rounds; ratios ours / DPDK. The host's load average is printed before and after.
#
# Usage (as root, on a Debian machine with the dpdk package): bash bench/af-xdp.sh
# Knobs: BENCH_AFXDP_EXTRA (devargs appended to ours, e.g. ",busy_budget=0"), BENCH_AFXDP_ONLY (a subset of the
# forwarders, by name: pool-drv own-drv dpdk-xdp pool-skb own-skb pkt-ours pkt-dpdk), BENCH_SECONDS=5, BENCH_WARMUP=1, BENCH_ROUNDS=3, BENCH_MEM=nohuge (default here: ordinary pages, so it
# runs beside other users of hugepages), BENCH_LOG_DIR (default target/bench-logs).
set -eu

cd "$(dirname "$0")/.."
ROOT=$PWD
BENCH_MEM=${BENCH_MEM:-nohuge}
export BENCH_MEM
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

[ "$(id -u)" = 0 ] || die "run as root (network namespace, veth pairs, XDP programs)"
bench_setup
DPDK_VERSION=$(dpkg-query -W -f='${Version}' dpdk 2>/dev/null || echo unknown)
dpdk25_env
bench_setup_memory
read -r -a D25_PMDS <<<"$(dpdk25_pmds bus_vdev mempool_ring net_af_xdp net_af_packet)"

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

tp() { # $1: binary (d25: DPDK 25.11's dpdk-testpmd), rest: vdevs
  local bin=$1
  shift
  # sid's libxdp cannot load its multi-program dispatcher on this kernel ("Failed to set rodata for object file
  # 'xdp-dispatcher.o'", the port then fails to start): it is told to attach the PMD's program alone, as 22.11's does.
  [ "$bin" = d25 ] && bin="env LIBXDP_SKIP_DISPATCHER=1 ${D25_RUN[*]} $D25_BIN/dpdk-testpmd ${D25_PMDS[*]}"
  echo "$bin" -l 0,1 --no-pci "${EAL_MEM[@]}" --file-prefix "$PREFIX" "$@" -- -i --forward-mode=io --burst=32
}
XDP_ARGS="start_queue=0,queue_count=1"
XDP_VDEVS=(--vdev "net_af_xdp0,iface=pa,$XDP_ARGS" --vdev "net_af_xdp1,iface=pb,$XDP_ARGS")
# Ours: $1 = our extra devargs (umem, xdp_mode), then BENCH_AFXDP_EXTRA; DPDK's PMD gets the common ones only.
our_xdp_vdevs() {
  echo --vdev "net_af_xdp0,iface=pa,$XDP_ARGS,$1${BENCH_AFXDP_EXTRA:-}" \
    --vdev "net_af_xdp1,iface=pb,$XDP_ARGS,$1${BENCH_AFXDP_EXTRA:-}"
}
PKT_ARGS="qpairs=1,blocksz=4096,framesz=2048,framecnt=512,qdisc_bypass=1"
PKT_VDEVS=(--vdev "net_af_packet0,iface=pa,$PKT_ARGS" --vdev "net_af_packet1,iface=pb,$PKT_ARGS")

# The forwarders, in the order each round runs them: name and command line.
# BENCH_AFXDP_ONLY="pool-drv own-drv" runs a subset (the table then shows n/a for the others).
# shellcheck disable=SC2206
NAMES=(${BENCH_AFXDP_ONLY:-pool-drv own-drv dpdk-xdp d25-xdp pool-skb own-skb pkt-ours pkt-dpdk pkt-d25})
# shellcheck disable=SC2046 # word splitting of our_xdp_vdevs is intended (no spaces in devargs)
cmd_of() {
  case $1 in
    pool-drv) tp "$BIN/testpmd-rs" $(our_xdp_vdevs umem=pool,xdp_mode=drv) ;;
    own-drv) tp "$BIN/testpmd-rs" $(our_xdp_vdevs umem=own,xdp_mode=drv) ;;
    pool-skb) tp "$BIN/testpmd-rs" $(our_xdp_vdevs umem=pool,xdp_mode=skb) ;;
    own-skb) tp "$BIN/testpmd-rs" $(our_xdp_vdevs umem=own,xdp_mode=skb) ;;
    dpdk-xdp) tp dpdk-testpmd "${XDP_VDEVS[@]}" ;;
    d25-xdp) tp d25 "${XDP_VDEVS[@]}" ;;
    pkt-ours) tp "$BIN/testpmd-rs" "${PKT_VDEVS[@]}" ;;
    pkt-dpdk) tp dpdk-testpmd "${PKT_VDEVS[@]}" ;;
    pkt-d25) tp d25 "${PKT_VDEVS[@]}" ;;
  esac
}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

LOAD_BEFORE=$(loadavg)
say "AF_XDP / af_packet io forwarding over veth: $ROUNDS rounds x ${#NAMES[@]} forwarders, ${SECS} s after ${WARMUP} s warm-up (load average $LOAD_BEFORE)"
declare -A R
for r in $(seq 1 "$ROUNDS"); do
  line="  round $r:"
  for n in "${NAMES[@]}"; do
    # shellcheck disable=SC2046
    v=$(fwd_run "$n" "afxdp_${n}_$r" $(cmd_of "$n"))
    R[$n]="${R[$n]:-} $v"
    line="$line $n $v"
  done
  say "$line (Mpps; load average $(loadavg))"
done
LOAD_AFTER=$(loadavg)
declare -A M
for n in pool-drv own-drv dpdk-xdp d25-xdp pool-skb own-skb pkt-ours pkt-dpdk pkt-d25; do M[$n]=$(echo "${R[$n]:-}" | median); done

echo
echo "AF_XDP io forwarding over veth, testpmd-rs vs dpdk-testpmd $DPDK_VERSION and $D25_VERSION ($(grep -m1 'model name' /proc/cpuinfo |
  cut -d: -f2 | sed 's/^ *//'), $(nproc) CPUs, kernel $(uname -r)); load average $LOAD_BEFORE before, $LOAD_AFTER after"
row() { # $1 label, $2 ours, $3 reference
  printf '%-40s | %8s | %8s | %6s | %s\n' "$1" "$(fmt "${M[$2]}" 3)" "$(fmt "${M[$3]}" 3)" \
    "$(ratio "${M[$2]}" "${M[$3]}")" "${R[$2]:-} / ${R[$3]:-}"
}
printf '%-40s | %8s | %8s | %6s | %s\n' "2 veth ports, 1 core, Rx Mpps sum" ours ref ratio "rounds ours / ref"
printf '%s\n' "-----------------------------------------+----------+----------+--------+-------------------"
row "net_af_xdp umem=pool, native / DPDK 22.11" pool-drv dpdk-xdp
row "net_af_xdp umem=pool, native / DPDK 25.11" pool-drv d25-xdp
row "net_af_xdp umem=own, native / DPDK 22.11" own-drv dpdk-xdp
row "net_af_xdp umem=own, native / DPDK 25.11" own-drv d25-xdp
row "net_af_xdp umem=pool, skb / DPDK 22.11" pool-skb dpdk-xdp
row "net_af_xdp umem=own, skb / DPDK 22.11" own-skb dpdk-xdp
row "umem=pool / umem=own, native" pool-drv own-drv
row "umem=pool / umem=own, skb" pool-skb own-skb
row "net_af_packet / DPDK 22.11 net_af_packet" pkt-ours pkt-dpdk
row "net_af_packet / DPDK 25.11 net_af_packet" pkt-ours pkt-d25
row "net_af_xdp umem=pool native / our af_packet" pool-drv pkt-ours
row "net_af_xdp umem=pool skb / our af_packet" pool-skb pkt-ours
row "DPDK net_af_xdp / DPDK net_af_packet" dpdk-xdp pkt-dpdk
echo "ratio > 1.0: the first is faster. Raw outputs (testpmd logs, pktgen offered load): $LOG"
