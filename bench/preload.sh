#!/usr/bin/env bash
# The same Debian redis-server binary with and without libnetstack_preload.so (K-NET's LD_PRELOAD comparison),
# beside the project's kv-server, and Debian's nginx with and without the library: one run, the same client and the
# same veth path into a namespace for every system. The kernel-stack runs put HOST_IP on the host veth; the
# netstack runs leave it without an address and own it through net_af_packet.
#
# Redis: `redis-benchmark -t set,get -r 100000 -n N` at -c 50 and -c 1000, -P 1 and 16 (K-NET's command shape
# scaled to this machine), and -c 1 -P 1 for latency (p50/p99); requests/s per system and the ratios
# preloaded/kernel and kv-server/kernel. nginx: `wrk -t 2 -c 100 -d D --latency` on a 1 KiB page: requests/s, p99.
# Rounds alternate the systems and each figure is the median over the rounds (a shared, noisy machine); the load
# average (1 min) is printed at each start and its range at the end.
#
# Usage (as root): bash bench/preload.sh
# Knobs: PRELOAD_BENCH_REQUESTS (default 1000000), PRELOAD_BENCH_LATENCY_REQUESTS (100000), BENCH_ROUNDS (3),
# PRELOAD_BENCH_CLIENTS ("50 1000"), PRELOAD_BENCH_PIPELINES ("1 16"), PRELOAD_BENCH_THREADS (redis-benchmark
# --threads, default 1: on 2 cores a second client thread takes the server's core), NGINX_BENCH_SECONDS (5),
# NGINX_BENCH_CONNECTIONS (100), PRELOAD_BENCH_SKIP ("nginx" or "redis" to leave one out).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/lib.sh"
source "$ROOT/bench/netns-lib.sh"

N=${PRELOAD_BENCH_REQUESTS:-1000000}
NLAT=${PRELOAD_BENCH_LATENCY_REQUESTS:-100000}
ROUNDS=${BENCH_ROUNDS:-3}
CLIENTS=${PRELOAD_BENCH_CLIENTS:-"50 1000"}
PIPELINES=${PRELOAD_BENCH_PIPELINES:-"1 16"}
THREADS=${PRELOAD_BENCH_THREADS:-1}
WRK_SECONDS=${NGINX_BENCH_SECONDS:-5}
WRK_CONNS=${NGINX_BENCH_CONNECTIONS:-100}
SKIP=${PRELOAD_BENCH_SKIP:-}
export BENCH_PORT=6379
bench_setup
for tool in redis-server redis-benchmark redis-cli nginx wrk; do
  command -v "$tool" >/dev/null || die "$tool is missing: bash scripts/setup.sh installs it"
done

say "building libnetstack_preload.so and kv-server (release)"
# Two builds: with `--bin` in one command cargo builds only that binary, not netstack-preload's cdylib.
(cd "$ROOT" && cargo build --release -q -p netstack-preload && cargo build --release -q -p servers --bin kv-server) >&2 ||
  die "cargo build --release -p netstack-preload / -p servers --bin kv-server failed"
LIB=$ROOT/target/release/libnetstack_preload.so
[ -f "$LIB" ] || die "$LIB was not built"
netns_setup
KV=$(NETSTACK_NO_BUILD=1 netstack_server kv-server)
# The library reads the same configuration as the servers.
sed 's/bench-kv-server/bench-preload/' "$TMP/kv-server.toml" >"$TMP/preload.toml"
ulimit -n 20000

REDIS_ARGS=(--bind "$HOST_IP" --port "$BENCH_PORT" --save "" --appendonly no --protected-mode no --daemonize no
  --dir "$TMP" --maxclients 10000)

# One redis-benchmark run: $1 clients, $2 pipeline, $3 requests; prints "TEST rps p50 p99" lines.
redis_client() {
  ip netns exec "$NS" redis-benchmark -h "$HOST_IP" -p "$BENCH_PORT" -t set,get -r 100000 -c "$1" -P "$2" -n "$3" \
    --threads "$THREADS" --csv 2>/dev/null | awk -F, 'NR > 1 { gsub(/"/, ""); print $1, $2, $5, $7 }'
}

# Every redis shape against one system: results in "$TMP/<system>.c<clients>.P<depth>", a line per test per round.
redis_system() {
  local name=$1 mode=$2
  shift 2
  say "$name (load $(cut -d' ' -f1 /proc/loadavg))"
  cut -d' ' -f1 /proc/loadavg >>"$TMP/load"
  SERVER_LABEL=$name
  netns_start_server "$mode" "$@"
  netns_wait_ready redis-cli -h "$HOST_IP" -p "$BENCH_PORT" ping
  for c in $CLIENTS; do
    for p in $PIPELINES; do
      redis_client "$c" "$p" "$N" >"$TMP/round"
      [ -s "$TMP/round" ] || die "$name -c $c -P $p: redis-benchmark printed no results ($(tail -3 "$TMP/server.log"))"
      cat "$TMP/round" >>"$TMP/$name.c$c.P$p"
    done
  done
  redis_client 1 1 "$NLAT" >>"$TMP/$name.c1.P1"
  netns_stop_server
}

WWW=$TMP/www
mkdir -p "$WWW"
head -c 1024 /dev/zero | tr '\0' 'x' >"$WWW/index.html"
nginx_conf() {
  cat <<CONF
daemon off;
user root;
master_process off;
worker_processes 1;
pid $TMP/nginx.pid;
error_log stderr notice;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_body_temp_path $TMP/body; proxy_temp_path $TMP/proxy; fastcgi_temp_path $TMP/fcgi;
  uwsgi_temp_path $TMP/uwsgi; scgi_temp_path $TMP/scgi;
  server { listen $HOST_IP:8080; root $WWW; }
}
CONF
}
nginx_conf >"$TMP/nginx.conf"

# wrk against one system: "rps p99-ms" per round in "$TMP/<system>.wrk".
nginx_system() {
  local name=$1 mode=$2
  shift 2
  say "$name (load $(cut -d' ' -f1 /proc/loadavg))"
  cut -d' ' -f1 /proc/loadavg >>"$TMP/load"
  SERVER_LABEL=$name
  netns_start_server "$mode" "$@"
  netns_wait_ready curl -sf -m 1 "http://$HOST_IP:8080/"
  ip netns exec "$NS" wrk -t 2 -c "$WRK_CONNS" -d "${WRK_SECONDS}s" --latency "http://$HOST_IP:8080/" >"$TMP/wrk.out" 2>&1
  grep -q "Non-2xx" "$TMP/wrk.out" && die "$name: wrk saw non-2xx answers: $(cat "$TMP/wrk.out")"
  awk '/^Requests\/sec:/ { rps = $2 }
       $1 == "99%" { v = $2; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) }
                     else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 }; p99 = v }
       END { print rps, p99 }' "$TMP/wrk.out" >>"$TMP/$name.wrk"
  netns_stop_server
}

for round in $(seq "$ROUNDS"); do
  say "round $round of $ROUNDS"
  if [ "$SKIP" != redis ]; then
    redis_system redis-kernel kernel redis-server "${REDIS_ARGS[@]}"
    redis_system redis-preload own env LD_PRELOAD="$LIB" NETSTACK_CONFIG="$TMP/preload.toml" \
      redis-server "${REDIS_ARGS[@]}"
    redis_system kv-server own "$KV" --config "$TMP/kv-server.toml" --port "$BENCH_PORT"
  fi
  if [ "$SKIP" != nginx ]; then
    nginx_system nginx-kernel kernel nginx -c "$TMP/nginx.conf" -e stderr
    nginx_system nginx-preload own env LD_PRELOAD="$LIB" NETSTACK_CONFIG="$TMP/preload.toml" \
      nginx -c "$TMP/nginx.conf" -e stderr
  fi
done

# The median over the rounds of column $3 of test $2's lines in result file $1.
get() { awk -v t="$2" -v c="$3" '$1 == t { print $c }' "$TMP/$1" 2>/dev/null | median; }
if [ "$SKIP" != redis ]; then
  echo "redis-benchmark -t set,get -r 100000 -n $N (-c 1: -n $NLAT), --threads $THREADS; requests/s, median of $ROUNDS rounds"
  printf '%-4s %-5s %-3s | %10s %10s %10s | %8s %8s\n' test c P kernel preload kv-server pre/kern kv/kern
  for c in 1 $CLIENTS; do
    ps=$PIPELINES
    [ "$c" = 1 ] && ps=1
    for p in $ps; do
      for t in SET GET; do
        f=c$c.P$p
        k=$(get "redis-kernel.$f" $t 2) l=$(get "redis-preload.$f" $t 2) v=$(get "kv-server.$f" $t 2)
        printf '%-4s %-5s %-3s | %10s %10s %10s | %8s %8s\n' "$t" "$c" "$p" "$(fmt "$k" 0)" "$(fmt "$l" 0)" \
          "$(fmt "$v" 0)" "$(ratio "$l" "$k")" "$(ratio "$v" "$k")"
      done
    done
  done
  echo "latency at -c 1 -P 1 (ms): p50 and p99"
  printf '%-4s | %8s %8s | %8s %8s | %8s %8s\n' test kern-p50 kern-p99 pre-p50 pre-p99 kv-p50 kv-p99
  for t in SET GET; do
    printf '%-4s | %8s %8s | %8s %8s | %8s %8s\n' "$t" \
      "$(fmt "$(get redis-kernel.c1.P1 $t 3)" 3)" "$(fmt "$(get redis-kernel.c1.P1 $t 4)" 3)" \
      "$(fmt "$(get redis-preload.c1.P1 $t 3)" 3)" "$(fmt "$(get redis-preload.c1.P1 $t 4)" 3)" \
      "$(fmt "$(get kv-server.c1.P1 $t 3)" 3)" "$(fmt "$(get kv-server.c1.P1 $t 4)" 3)"
  done
fi
if [ "$SKIP" != nginx ]; then
  col() { awk -v c="$2" '{ print $c }' "$TMP/$1" | median; }
  echo "wrk -t 2 -c $WRK_CONNS -d ${WRK_SECONDS}s, 1 KiB page, median of $ROUNDS rounds"
  printf '%-14s | %10s %8s\n' system req/s p99-ms
  for s in nginx-kernel nginx-preload; do
    printf '%-14s | %10s %8s\n' "$s" "$(fmt "$(col $s.wrk 1)" 0)" "$(fmt "$(col $s.wrk 2)" 2)"
  done
  echo "ratio preload/kernel: req/s $(ratio "$(col nginx-preload.wrk 1)" "$(col nginx-kernel.wrk 1)")," \
    "p99 $(ratio "$(col nginx-preload.wrk 2)" "$(col nginx-kernel.wrk 2)")"
fi
echo "load average (1 min) during the run: $(sort -g "$TMP/load" | head -1) to $(sort -g "$TMP/load" | tail -1)"
