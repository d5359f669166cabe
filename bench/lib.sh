# Settings and shell functions shared by bench/run.sh and bench/testpmd.sh (sourced, not run). Expects ROOT (the
# repository root) to be set by the caller; set -eu friendly.

SECS=${BENCH_SECONDS:-5}
WARMUP=${BENCH_WARMUP:-1}
ROUNDS=${BENCH_ROUNDS:-3}
HUGEPAGES=${BENCH_HUGEPAGES:-1024}
MEM=${BENCH_MEM:-huge}
LOG=${BENCH_LOG_DIR:-$ROOT/target/bench-logs}
PREFIX=pktbench$$
mkdir -p "$LOG"

say() { echo "bench: $*" >&2; }
die() {
  say "$*"
  exit 1
}

# Everything the benchmarks run beside ours (Debian's dpdk, redis-server, nginx, wrk, valgrind, ...) comes from the
# one prepare step, scripts/setup.sh: quick when it is all there, and it waits for a set-up already running.
# --bench adds DPDK 25.11 (sid's build in a root of its own) for the second reference column.
bench_setup() {
  bash "$ROOT/scripts/setup.sh" --bench >&2 || die "scripts/setup.sh failed: the benchmarks need what it installs"
}

# DPDK 25.11, the newest LTS, beside Debian's 22.11 package: sid's build (its source is not served here; see
# scripts/lib/setup-lib.sh, setup_dpdk_bench_root) in a root of its own, run outside it through the root's loader
# and libraries. dpdk25_env sets D25_VERSION, D25_RUN (the loader command to put before a program of the root)
# and D25_BIN (the root's /usr/bin); dpdk25_pmds NAME... prints the EAL arguments loading those plugins (its
# dpdk-testpmd and dpdk-test are shared builds; only the PMDs a run needs are loaded, which only shortens DPDK's
# start-up).
dpdk25_env() {
  D25_ROOT=${PKTIO_CACHE:-/var/cache/pktio}/dpdk-25.11-root
  [ -f "$D25_ROOT/.complete" ] || die "DPDK 25.11 is not set up in $D25_ROOT: run bash scripts/setup.sh --bench"
  D25_VERSION=$(cat "$D25_ROOT/.version")
  D25_LIB=$D25_ROOT/usr/lib/x86_64-linux-gnu
  D25_RUN=("$D25_ROOT/lib64/ld-linux-x86-64.so.2" --library-path "$D25_LIB:$D25_ROOT/lib/x86_64-linux-gnu")
  D25_BIN=$D25_ROOT/usr/bin
}
dpdk25_pmds() {
  local p
  for p; do printf -- '-d %s ' "$D25_LIB/dpdk/pmds-26.0/librte_$p.so.26.0"; done
}

# The one line the benchmarks change in a DPDK l3fwd's main.c ($1): no RX checksum offload request, which a pcap
# port cannot honour (l3fwd would refuse to start).
l3fwd_without_rx_csum() {
  sed -i 's/\.offloads = RTE_ETH_RX_OFFLOAD_CHECKSUM,/.offloads = 0,/' "$1"
  grep -q '\.offloads = 0,' "$1" || die "could not remove the checksum offload request from $1"
}

# Copies DPDK 25.11's example $1 into the root's /tmp/pktbench-ref/${2:-$1} (fresh) and prints that directory as
# seen from outside, for the caller's one-line changes before dpdk25_make.
dpdk25_example() {
  local dir=${2:-$1}
  rm -rf "$D25_ROOT/tmp/pktbench-ref/$dir"
  mkdir -p "$D25_ROOT/tmp/pktbench-ref"
  cp -r "$D25_ROOT/usr/share/dpdk/examples/$1" "$D25_ROOT/tmp/pktbench-ref/$dir"
  echo "$D25_ROOT/tmp/pktbench-ref/$dir"
}
# Builds the example $1 copied by dpdk25_example (into ${2:-$1}) as DPDK's Makefile does for `make static` (DPDK's
# static libraries linked in), its own code compiled for ${3:-native}: libdpdk-libs.pc's -march=corei7 (Debian's
# baseline, placed after any CFLAGS of ours) is replaced in a copy the build's pkg-config reads first (corei7 keeps
# the baseline: valgrind cannot run this CPU's AVX-512). The libraries themselves are Debian's baseline build.
# Prints the binary; the log is beside it.
dpdk25_make() {
  local app=$1 dir=${2:-$1} march=${3:-native} pc
  pc=$D25_ROOT/tmp/pktbench-ref/pc-$march
  mkdir -p "$pc"
  sed "s/-march=corei7/-march=$march/" "$D25_LIB/pkgconfig/libdpdk-libs.pc" >"$pc/libdpdk-libs.pc"
  grep -q -- "-march=$march" "$pc/libdpdk-libs.pc" || die "libdpdk-libs.pc of DPDK 25.11 names no -march=corei7"
  chroot "$D25_ROOT" env PKG_CONFIG_PATH="/tmp/pktbench-ref/pc-$march" CFLAGS="-I/usr/share/dpdk/examples/common" \
    make -C "/tmp/pktbench-ref/$dir" static -j"$(nproc)" >"$D25_ROOT/tmp/pktbench-ref/$dir.build.log" 2>&1 ||
    die "building DPDK 25.11's $app failed; see $D25_ROOT/tmp/pktbench-ref/$dir.build.log"
  echo "$D25_ROOT/tmp/pktbench-ref/$dir/build/$app-static"
}

# Memory for both sides: sets EAL_MEM (extra EAL arguments) from MEM (huge | nohuge); for hugepages, reserves
# HUGEPAGES x 2 MiB (left reserved) and mounts a hugetlbfs on /dev/hugepages if none is mounted.
bench_setup_memory() {
  EAL_MEM=()
  if [ "$MEM" = nohuge ]; then
    EAL_MEM=(--no-huge -m 1024)
    export BENCH_MEM=nohuge
  else
    local nr=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
    if [ "$(cat $nr)" -lt "$HUGEPAGES" ]; then
      echo "$HUGEPAGES" >"$nr" || true
    fi
    if ! awk '$3 == "hugetlbfs"' /proc/mounts | grep -q .; then
      mkdir -p /dev/hugepages
      mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages
    fi
    say "$(cat $nr) x 2 MiB hugepages reserved (left reserved), $(grep HugePages_Free /proc/meminfo | awk '{print $2}') free"
  fi
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print a[int((NR + 1) / 2)]}'; }
field() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" | head -1; } # value of key=value in a RESULT line
fmt() { awk -v x="$1" -v d="${2:-2}" 'BEGIN { if (x == "" || x == "nan") print "n/a"; else printf "%.*f\n", d, x }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "nan" || b == "nan" || a + 0 == 0 || b + 0 == 0) print "n/a"; else printf "%.2f\n", a / b }'; }
mpps() { awk -v p="$1" 'BEGIN { if (p == "" || p == "nan") print "nan"; else printf "%.3f\n", p / 1e6 }'; }

# A testpmd (dpdk-testpmd or testpmd-rs, same prompt and stats blocks) driven through its prompt: start, warm up,
# show stats twice SECS apart (the program's own "Throughput (since last show)" over that window), stop, quit.
# $1: log file, $2: command run right before "start" (or ""; it may write more commands to fd 9), rest: the
# command line. Prints the second show's PPS_FIELD (Rx-pps unless set, e.g. PPS_FIELD=Tx-pps) summed over the two
# ports, or nan.
testpmd_run() {
  local log=$1 hook=$2 pps_field=${PPS_FIELD:-Rx-pps}
  shift 2
  local fifo
  fifo=$(mktemp -u /tmp/pktbench-fifo.XXXXXX)
  mkfifo "$fifo"
  "$@" <"$fifo" >"$log" 2>&1 &
  local pid=$!
  exec 9>"$fifo"
  local waited=0
  until grep -q 'testpmd> ' "$log" 2>/dev/null; do
    sleep 0.2
    waited=$((waited + 1))
    if [ $waited -gt 300 ] || ! kill -0 $pid 2>/dev/null; then
      exec 9>&-
      rm -f "$fifo"
      kill $pid 2>/dev/null || true
      wait $pid 2>/dev/null || true
      say "testpmd did not reach its prompt; see $log"
      echo nan
      return
    fi
  done
  [ -n "$hook" ] && eval "$hook"
  echo "start" >&9
  sleep "$WARMUP"
  echo "show port stats all" >&9
  sleep "$SECS"
  echo "show port stats all" >&9
  sleep 0.5
  echo "stop" >&9
  echo "quit" >&9
  exec 9>&-
  wait $pid 2>/dev/null || true
  rm -f "$fifo"
  wait 2>/dev/null || true # a traffic generator the hook started
  # pps lines: first show (ports 0, 1), second show (ports 0, 1): sum the second show's.
  grep "$pps_field:" "$log" | awk '{print $2}' | sed -n '3,4p' | awk '{s += $1} END {if (NR == 2) print s; else print "nan"}'
}
