#!/usr/bin/env bash
# kv-server (servers crate on netstack) against Debian's redis-server on the kernel stack: the K-NET comparison.
# The same client, redis-benchmark, runs in a network namespace and reaches each server over the same veth pair;
# `-t set,get`: one connection (-c 1 -P 1, the latency case: each request waits for the previous answer), then
# `-c 50` with -P 1 and -P 16; requests/s, p50 and p99 (from --csv) per system, and the ratio. Each server's idle
# CPU (its share of a core over the 3 s after it is up, before any request) is printed too.
#
# Usage (as root): bash bench/kv-vs-redis.sh
# Knobs: KV_BENCH_REQUESTS (default 1000000; e.g. 50000 for a quick run), KV_BENCH_REQUESTS_C1 (requests of the
# one-connection run, default 100000), KV_BENCH_CLIENTS ("1 50": the connection counts; 1 runs -P 1 only),
# BENCH_ROUNDS (1: rounds alternate the two systems and each figure is the median over the rounds, for a shared,
# noisy machine), KV_BENCH_PIPELINES ("1 16"), KV_SERVER_ARGS (extra kv-server options, e.g. "--idle-sleep-us 0"), NETSTACK_LCORES
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
N1=${KV_BENCH_REQUESTS_C1:-100000}
CLIENTS=${KV_BENCH_CLIENTS:-"1 50"}
PIPELINES=${KV_BENCH_PIPELINES:-"1 16"}
export BENCH_PORT=${KV_BENCH_PORT:-6379}
bench_setup

# One redis-benchmark run from the namespace: $1 connections, $2 pipeline depth; prints "TEST rps p50 p99" lines.
run_client() {
  local n=$N
  [ "$1" = 1 ] && n=$N1
  ip netns exec "$NS" redis-benchmark -h "$HOST_IP" -p "$BENCH_PORT" -t set,get -c "$1" -n "$n" -P "$2" \
    --csv 2>/dev/null | awk -F, 'NR > 1 { gsub(/"/, ""); print $1, $2, $5, $7 }'
}

# The pipeline depths run at $1 connections: one connection measures latency, at depth 1 only.
depths() { if [ "$1" = 1 ]; then echo 1; else echo "$PIPELINES"; fi; }

# CPU ticks (user + system) process $1 has used.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# Runs every connection count and pipeline depth against one system; appends to "$TMP/<system>.c<n>.P<depth>"
# result files (a line per round), and its idle CPU share (percent of a core) to "$TMP/<system>.idle".
bench_system() {
  local name=$1 mode=$2
  shift 2
  say "$name: $* (load $(cut -d' ' -f1 /proc/loadavg))"
  cut -d' ' -f1 /proc/loadavg >>"$TMP/load"
  SERVER_LABEL=$name
  netns_start_server "$mode" "$@"
  netns_wait_ready redis-cli -h "$HOST_IP" -p "$BENCH_PORT" ping
  local t0 hz
  t0=$(cpu_ticks "$SERVER_PID")
  hz=$(getconf CLK_TCK)
  sleep 3
  awk -v a="$t0" -v b="$(cpu_ticks "$SERVER_PID")" -v hz="$hz" 'BEGIN { printf "%.1f\n", (b - a) * 100 / hz / 3 }' \
    >>"$TMP/$name.idle"
  for c in $CLIENTS; do
    for p in $(depths "$c"); do
      run_client "$c" "$p" >"$TMP/round"
      [ -s "$TMP/round" ] || die "$name -c $c -P $p: redis-benchmark printed no results"
      cat "$TMP/round" >>"$TMP/$name.c$c.P$p"
    done
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
idle() { median <"$TMP/$1.idle" 2>/dev/null; }
for v in "${VARIANTS[@]}"; do
  label=${v%%=*}
  [ ${#VARIANTS[@]} -eq 1 ] || echo "== $label: kv-server ${v#*=}"
  printf '%-5s %-3s %-3s | %10s %8s %8s | %10s %8s %8s | %6s %6s\n' test c P redis-rps p50-ms p99-ms kv-rps p50-ms \
    p99-ms rps p99
  for c in $CLIENTS; do
    for p in $(depths "$c"); do
      for t in SET GET; do
        r="redis-server.c$c.P$p" k="$label.c$c.P$p"
        printf '%-5s %-3s %-3s | %10s %8s %8s | %10s %8s %8s | %6s %6s\n' "$t" "$c" "$p" \
          "$(fmt "$(get "$r" $t 2)" 0)" "$(fmt "$(get "$r" $t 3)" 3)" "$(fmt "$(get "$r" $t 4)" 3)" \
          "$(fmt "$(get "$k" $t 2)" 0)" "$(fmt "$(get "$k" $t 3)" 3)" "$(fmt "$(get "$k" $t 4)" 3)" \
          "$(ratio "$(get "$k" $t 2)" "$(get "$r" $t 2)")" "$(ratio "$(get "$k" $t 4)" "$(get "$r" $t 4)")"
      done
    done
  done
  echo "idle CPU (% of a core, 3 s after start, median): redis-server $(idle redis-server), kv-server $(idle "$label")"
  echo "tcp_retransmissions per server run (median): $(netns_retx "$label")"
done
echo "(requests/s and latency from redis-benchmark -c {$CLIENTS} -n $N (-c 1: -n $N1) in namespace $NS over a" \
  "veth, median of ${BENCH_ROUNDS:-1} alternating rounds; ratios = kv / redis (rps: higher is better for kv," \
  "p99: lower is); load average at the server starts: $(sort -g "$TMP/load" | head -1)-$(sort -g "$TMP/load" | tail -1))"
