# Shared by bench/kv-vs-redis.sh and bench/http-vs-nginx.sh (sourced, not run): a network namespace for the
# client and a veth pair into it, each server system started on the host side in turn, cleanup on exit.
# Expects ROOT set and bench/lib.sh sourced; set -eu friendly.

NS=srvb$$
VETH_HOST=srvb$$h
VETH_NS=srvb$$n
HOST_IP=${BENCH_HOST_IP:-10.213.0.1}
NS_IP=${BENCH_NS_IP:-10.213.0.2}
SERVER_PID=
TMP=$(mktemp -d /tmp/srvbench.XXXXXX)
chmod 755 "$TMP"

netns_cleanup() {
  netns_stop_server
  ip netns del "$NS" 2>/dev/null || true # removes the veth pair with it
  ip link del "$VETH_HOST" 2>/dev/null || true
  rm -rf "$TMP"
}

# The client's namespace and the veth pair; the host side gets HOST_IP only while a kernel-stack server runs.
netns_setup() {
  [ "$(id -u)" = 0 ] || die "run as root (creates a network namespace and a veth pair)"
  trap netns_cleanup EXIT
  ip netns add "$NS"
  ip link add "$VETH_HOST" type veth peer name "$VETH_NS"
  ip link set "$VETH_NS" netns "$NS"
  ip -n "$NS" addr add "$NS_IP/24" dev "$VETH_NS"
  ip -n "$NS" link set lo up
  ip -n "$NS" link set "$VETH_NS" up
  ip link set "$VETH_HOST" up
  # veth leaves checksums to "hardware" that is not there; af_packet would hand a userspace stack half-done sums.
  # Off for both systems, so both see the same path.
  ip netns exec "$NS" ethtool -K "$VETH_NS" tx off >/dev/null
}

# Builds the release binary $1 of the servers crate (once) and writes a netstack config for it owning the host
# veth: $TMP/$1.toml. Prints the binary's path. NETSTACK_LCORES (default "1": with 2 cores, the client keeps the
# other) picks the lcore.
netstack_server() {
  local bin=$1
  if [ ! -x "$ROOT/target/release/$bin" ] || [ -z "${NETSTACK_NO_BUILD:-}" ]; then
    (cd "$ROOT" && cargo build --release -q -p servers --bin "$bin") >&2 || die "cargo build --release -p servers --bin $bin failed"
  fi
  cat >"$TMP/$bin.toml" <<CONF
lcores = "${NETSTACK_LCORES:-1}"
[port]
device = "net_af_packet0,iface=$VETH_HOST"
[ipv4]
address = "$HOST_IP/24"
[memory]
pool_size = 16383
[tcp]
backlog = 128
[control]
name = "bench-$bin"
dir = "$TMP"
CONF
  echo "$ROOT/target/release/$bin"
}

# A variant's command line: $1 the server command, $2 the variant's extra arguments; when $2 starts with the
# absolute path of an executable, that binary replaces the command's first word (another build of the server).
variant_cmd() {
  local cmd=$1 first=${2%% *} rest=$2
  if [ "${first#/}" != "$first" ] && [ -x "$first" ]; then
    [ "$first" = "$2" ] && rest= || rest=${2#* }
    cmd="$first ${cmd#* }"
  fi
  echo "$cmd $rest"
}

host_addr_up() { ip addr replace "$HOST_IP/24" dev "$VETH_HOST"; }
host_addr_down() { ip addr flush dev "$VETH_HOST"; }

# Starts a server: $1 = kernel (the host veth carries HOST_IP) or own (the server owns the veth through pktio;
# the kernel keeps no address on it), rest = command line. BENCH_IFACE, BENCH_IP and BENCH_PORT are exported for
# a command that needs them.
netns_start_server() {
  local mode=$1
  shift
  if [ "$mode" = kernel ]; then host_addr_up; else host_addr_down; fi
  export BENCH_IFACE=$VETH_HOST BENCH_IP=$HOST_IP
  "$@" >"$TMP/server.log" 2>&1 &
  SERVER_PID=$!
}

# Stops the server (SIGTERM: a netstack server prints its counters). With SERVER_LABEL set, the last
# tcp_retransmissions counter the server printed goes to $TMP/retx as "LABEL N" (see netns_retx).
netns_stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
    if [ -n "${SERVER_LABEL:-}" ]; then
      awk -v l="$SERVER_LABEL" '$1 == "tcp_retransmissions" { n = $2 } END { if (n != "") print l, n }' \
        "$TMP/server.log" >>"$TMP/retx"
    fi
  fi
}

# The median of the retransmissions label $1's servers counted, one figure per server run ("n/a": none printed).
netns_retx() { awk -v l="$1" '$1 == l { print $2 }' "$TMP/retx" 2>/dev/null | median; }

# Polls (from the namespace) until $@ succeeds, for up to 10 s.
netns_wait_ready() {
  local deadline=$((SECONDS + 10))
  until ip netns exec "$NS" "$@" >/dev/null 2>&1; do
    [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null || die "server exited: $(tail -5 "$TMP/server.log")"
    [ $SECONDS -lt $deadline ] || die "server not reachable after 10 s: $(tail -5 "$TMP/server.log")"
    sleep 0.1
  done
}
