#!/usr/bin/env bash
# http-server (servers crate on netstack) against Debian's nginx on the kernel stack. The same client, wrk, runs in
# a network namespace and reaches each server over the same veth pair, fetching a static page of the same size;
# requests/s, p50 and p99 (wrk --latency) per system, and the ratio.
#
# Usage (as root): bash bench/http-vs-nginx.sh
# Knobs: HTTP_BENCH_SECONDS (10), HTTP_BENCH_CONNECTIONS (50), HTTP_BENCH_THREADS (2), HTTP_BENCH_PAGE_BYTES
# (1024: the page size on both sides), BENCH_ROUNDS (1: rounds alternate the systems, figures are medians),
# HTTP_SERVER_ARGS (extra http-server options), NETSTACK_LCORES (default 1).
# http-server is built in release mode and owns the host-side veth through net_af_packet. HTTP_SERVER_CMD replaces
# it with another command line, run with BENCH_IFACE, BENCH_IP, BENCH_PORT and BENCH_PAGE_BYTES in its
# environment; HTTP_SERVER_MODE=kernel puts HOST_IP on the host veth for a kernel-stack stand-in instead.
# HTTP_SERVER_VARIANTS="busy=--busy-poll;wake=" runs several http-server option sets (LABEL=ARGS, `;`-separated;
# ARGS may start with the absolute path of another build of http-server) in every round after nginx, a line for
# each against the same nginx runs. The load average (1 min) is printed at each server start and its range at the
# end, with each variant's retransmissions.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/lib.sh"
source "$ROOT/bench/netns-lib.sh"

DURATION=${HTTP_BENCH_SECONDS:-10}
CONNS=${HTTP_BENCH_CONNECTIONS:-50}
THREADS=${HTTP_BENCH_THREADS:-2}
export BENCH_PAGE_BYTES=${HTTP_BENCH_PAGE_BYTES:-1024}
export BENCH_PORT=${HTTP_BENCH_PORT:-8080}
bench_setup

# nginx with its own prefix in TMP: one worker (as the single-lcore server), no access log, the page at /.
nginx_conf() {
  mkdir -p "$TMP/www" "$TMP/nginx/logs"
  head -c "$BENCH_PAGE_BYTES" /dev/zero | tr '\0' 'a' >"$TMP/www/index.html"
  chmod -R a+rX "$TMP/www"
  cat >"$TMP/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/logs/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  server {
    listen $HOST_IP:$BENCH_PORT;
    root $TMP/www;
    index index.html;
  }
}
CONF
}

# wrk from the namespace; prints "rps p50_ms p99_ms" (latencies converted from wrk's us/ms/s units).
run_client() {
  ip netns exec "$NS" wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" --latency "http://$HOST_IP:$BENCH_PORT/" |
    tee -a "$TMP/wrk.log" | awk '
      function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
      /^ *50%/ { p50 = ms($2) } /^ *99%/ { p99 = ms($2) } /^Requests\/sec:/ { rps = $2 }
      /Non-2xx|Socket errors/ { bad = 1 }
      END { if (bad) print "nan nan nan"; else print rps, p50, p99 }'
}

bench_system() {
  local name=$1 mode=$2
  shift 2
  say "$name: $* (load $(cut -d' ' -f1 /proc/loadavg))"
  cut -d' ' -f1 /proc/loadavg >>"$TMP/load"
  SERVER_LABEL=$name
  netns_start_server "$mode" "$@"
  netns_wait_ready curl -sf -o /dev/null "http://$HOST_IP:$BENCH_PORT/"
  local got
  got=$(ip netns exec "$NS" curl -sf "http://$HOST_IP:$BENCH_PORT/" | wc -c)
  [ "$got" = "$BENCH_PAGE_BYTES" ] || die "$name serves a $got-byte page, not $BENCH_PAGE_BYTES"
  run_client >>"$TMP/$name.res"
  netns_stop_server
}

netns_setup
nginx_conf
if [ -z "${HTTP_SERVER_CMD:-}" ]; then
  HTTP_SERVER_CMD="$(netstack_server http-server) --config $TMP/http-server.toml --port $BENCH_PORT"
  HTTP_SERVER_CMD="$HTTP_SERVER_CMD --page-bytes $BENCH_PAGE_BYTES ${HTTP_SERVER_ARGS:-}"
fi
IFS=';' read -r -a VARIANTS <<<"${HTTP_SERVER_VARIANTS:-http-server=}"
for round in $(seq "${BENCH_ROUNDS:-1}"); do
  say "round $round of ${BENCH_ROUNDS:-1}"
  bench_system nginx kernel nginx -p "$TMP/nginx" -c "$TMP/nginx.conf" -e "$TMP/nginx/logs/error.log"
  for v in "${VARIANTS[@]}"; do
    # shellcheck disable=SC2086 # the command line is given as one string
    bench_system "${v%%=*}" "${HTTP_SERVER_MODE:-own}" $(variant_cmd "$HTTP_SERVER_CMD" "${v#*=}")
  done
done

# The median over the rounds of column $2 of result file $1.
col() { awk -v c="$2" '{ print $c }' "$TMP/$1.res" 2>/dev/null | median; }
printf '%-12s | %12s %8s %8s | %12s %8s %8s | %6s\n' variant nginx-rps p50-ms p99-ms http-rps p50-ms p99-ms ratio
for v in "${VARIANTS[@]}"; do
  h=${v%%=*}
  printf '%-12s | %12s %8s %8s | %12s %8s %8s | %6s\n' "$h" \
    "$(fmt "$(col nginx 1)" 0)" "$(fmt "$(col nginx 2)" 3)" "$(fmt "$(col nginx 3)" 3)" \
    "$(fmt "$(col "$h" 1)" 0)" "$(fmt "$(col "$h" 2)" 3)" "$(fmt "$(col "$h" 3)" 3)" \
    "$(ratio "$(col "$h" 1)" "$(col nginx 1)")"
done
for v in "${VARIANTS[@]}"; do
  echo "${v%%=*}: tcp_retransmissions per server run (median): $(netns_retx "${v%%=*}")"
done
echo "(wrk -t$THREADS -c$CONNS -d${DURATION}s in namespace $NS over a veth, $BENCH_PAGE_BYTES-byte page, median of" \
  "${BENCH_ROUNDS:-1} alternating rounds; ratio = http-server / nginx; load average at the server starts:" \
  "$(sort -g "$TMP/load" | head -1)-$(sort -g "$TMP/load" | tail -1))"
