#!/usr/bin/env bash
# kv-server (servers crate on netstack) against Debian's redis-server on the kernel stack: the K-NET comparison.
# The same client, redis-benchmark, runs in a network namespace and reaches each server over the same veth pair;
# `-t set,get -c 50 -n N` with -P 1 and -P 16; requests/s, p50 and p99 (from --csv) per system, and the ratio.
#
# Usage (as root): bash bench/kv-vs-redis.sh
# Knobs: KV_BENCH_REQUESTS (default 1000000; e.g. 50000 for a quick run), KV_BENCH_CLIENTS (50), BENCH_ROUNDS (1:
# rounds alternate the two systems and each figure is the median over the rounds, for a shared, noisy machine),
# KV_BENCH_PIPELINES ("1 16"), KV_SERVER_ARGS (extra kv-server options, e.g. "--idle-sleep-us 0"), NETSTACK_LCORES
# (the lcore kv-server polls on, default 1). kv-server is built in release mode and owns the host-side veth through
# net_af_packet (the kernel keeps no address on it). KV_SERVER_CMD replaces it with another command line, run with
# BENCH_IFACE, BENCH_IP and BENCH_PORT in its environment; KV_SERVER_MODE=kernel then puts HOST_IP on the host
# veth for a kernel-stack stand-in. KV_SERVER_VARIANTS="busy=--busy-poll;wake=" runs several kv-server option
# sets (LABEL=ARGS, `;`-separated; ARGS may start with the absolute path of another build of kv-server, e.g. a kept
# copy of an older one) in every round after redis-server, a table for each against the same redis runs. The load
# average (1 min) is printed at each server start and its range at the end, with each variant's retransmissions.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/lib.sh"
source "$ROOT/bench/netns-lib.sh"

N=${KV_BENCH_REQUESTS:-1000000}
CLIENTS=${KV_BENCH_CLIENTS:-50}
PIPELINES=${KV_BENCH_PIPELINES:-"1 16"}
export BENCH_PORT=${KV_BENCH_PORT:-6379}
bench_setup

# One redis-benchmark run from the namespace; prints "TEST rps p50 p99" lines.
run_client() {
  ip netns exec "$NS" redis-benchmark -h "$HOST_IP" -p "$BENCH_PORT" -t set,get -c "$CLIENTS" -n "$N" -P "$1" \
    --csv 2>/dev/null | awk -F, 'NR > 1 { gsub(/"/, ""); print $1, $2, $5, $7 }'
}

# Runs every pipeline depth against one system; appends to "$TMP/<system>.P<depth>" result files (a line per round).
bench_system() {
  local name=$1 mode=$2
  shift 2
  say "$name: $* (load $(cut -d' ' -f1 /proc/loadavg))"
  cut -d' ' -f1 /proc/loadavg >>"$TMP/load"
  SERVER_LABEL=$name
  netns_start_server "$mode" "$@"
  netns_wait_ready redis-cli -h "$HOST_IP" -p "$BENCH_PORT" ping
  for p in $PIPELINES; do
    run_client "$p" >"$TMP/round"
    [ -s "$TMP/round" ] || die "$name -P $p: redis-benchmark printed no results"
    cat "$TMP/round" >>"$TMP/$name.P$p"
  done
  netns_stop_server
}

netns_setup
if [ -z "${KV_SERVER_CMD:-}" ]; then
  KV_SERVER_CMD="$(netstack_server kv-server) --config $TMP/kv-server.toml --port $BENCH_PORT ${KV_SERVER_ARGS:-}"
fi
IFS=';' read -r -a VARIANTS <<<"${KV_SERVER_VARIANTS:-kv-server=}"
for round in $(seq "${BENCH_ROUNDS:-1}"); do
  say "round $round of ${BENCH_ROUNDS:-1}"
  bench_system redis-server kernel redis-server --bind "$HOST_IP" --port "$BENCH_PORT" --save "" --appendonly no \
    --protected-mode no --daemonize no --dir "$TMP"
  for v in "${VARIANTS[@]}"; do
    # shellcheck disable=SC2086 # the command line is given as one string
    bench_system "${v%%=*}" "${KV_SERVER_MODE:-own}" $(variant_cmd "$KV_SERVER_CMD" "${v#*=}")
  done
done

# The median over the rounds of column $3 of test $2's lines in result file $1.
get() { awk -v t="$2" -v c="$3" '$1 == t { print $c }' "$TMP/$1" 2>/dev/null | median; }
for v in "${VARIANTS[@]}"; do
  label=${v%%=*}
  [ ${#VARIANTS[@]} -eq 1 ] || echo "== $label: kv-server ${v#*=}"
  printf '%-5s %-4s | %12s %8s %8s | %12s %8s %8s | %6s\n' test P redis-rps p50-ms p99-ms kv-rps p50-ms p99-ms ratio
  for p in $PIPELINES; do
    for t in SET GET; do
      r="redis-server.P$p" k="$label.P$p"
      printf '%-5s %-4s | %12s %8s %8s | %12s %8s %8s | %6s\n' "$t" "$p" \
        "$(fmt "$(get "$r" $t 2)" 0)" "$(fmt "$(get "$r" $t 3)" 3)" "$(fmt "$(get "$r" $t 4)" 3)" \
        "$(fmt "$(get "$k" $t 2)" 0)" "$(fmt "$(get "$k" $t 3)" 3)" "$(fmt "$(get "$k" $t 4)" 3)" \
        "$(ratio "$(get "$k" $t 2)" "$(get "$r" $t 2)")"
    done
  done
  echo "tcp_retransmissions per server run (median): $(netns_retx "$label")"
done
echo "(requests/s and latency from redis-benchmark -c $CLIENTS -n $N in namespace $NS over a veth, median of" \
  "${BENCH_ROUNDS:-1} alternating rounds; ratio = kv / redis; load average at the server starts:" \
  "$(sort -g "$TMP/load" | head -1)-$(sort -g "$TMP/load" | tail -1))"
