#!/usr/bin/env bash
# The one prepare step: installs and builds everything a test, a benchmark or a script of this repository needs,
# on a fresh Debian machine (run as root; idempotent, a few seconds when everything is there).
#
#   1. the Debian packages of the table below (some from <codename>-backports);
#   2. rustup's x86_64-unknown-linux-musl (the VM guest's static binaries) and aarch64-unknown-linux-gnu targets;
#   3. the QEMU with the vfio-user client (tests/vm/qemu-vfio-user.sh: built once from Debian's source package);
#   4. the VM guest's kernel and busybox (downloaded from Debian's archive, never installed);
#   5. DPDK's 25.11 source from sid's deb-src (apt-get source, unpacked under PKTIO_CACHE/src/dpdk-25.11; where the
#      mirror lacks the source, the exporter and its endpoints from sid's dpdk package instead; never
#      built), for its telemetry exporter (usertools/dpdk-telemetry-exporter.py) that testpmd-rs's tests run;
#   6. the DPDK judge of the VM tests (DPDK 25.11's dpdk-testpmd and PMDs, sid's binaries out of a debootstrap root:
#      the mirror serves no 25.11 source), under PKTIO_CACHE/dpdk-judge-25.11;
#   7. 2 MiB hugepages reserved.
#
# apt runs with a private configuration (PKTIO_CACHE/apt: the machine's own sources plus <codename>-backports and
# deb-src entries derived from them), so the machine's sources are never changed. Everything runs under one file
# lock: a second setup (a parallel test binary, a benchmark) waits for the first and then finds everything done.
# apt itself waits up to PKTIO_APT_LOCK_TIMEOUT seconds (600) for a dpkg lock held by someone else
# (unattended-upgrades, another apt) instead of failing.
#
# Usage: bash scripts/setup.sh [--check | --list | --bench]
#   --check   install nothing: list what is missing and exit 1 if anything is (no root needed)
#   --list    print the package names of the table (scripts/check-setup.sh compares the tree against it)
#   --bench   also DPDK 25.11 for the benchmarks' second reference (a sid root, ~1 GB; bench/ asks for it)
# Environment: PKTIO_CACHE (default /var/cache/pktio) holds the apt state, the QEMU build and the guest downloads.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${PKTIO_CACHE:-/var/cache/pktio}
export PKTIO_CACHE=$CACHE

# Every Debian package a test, a benchmark or a script of this repository needs, in one place: a package named
# after `apt-get install` anywhere else in the tree must be here (scripts/check-setup.sh, part of the test command,
# fails otherwise). Columns: package, suite (`-`: the machine's own; `backports`: <codename>-backports), the lowest
# version that will do (`-`: any), then who needs it.
PACKAGES=$(
  cat <<'EOF'
# --- the test command's own tools
iproute2               -          -        netns/veth/TAP tests (ip), every netstack and server test
iputils-ping           -          -        netstack and testpmd-rs netns tests (ping through our stack)
ethtool                -          -        netstack netns tests (turn veth offloads off)
tcpdump                -          -        capture tests (pcap files read back), l2fwd/l3fwd pcap checks
tmux                   -          -        testpmd-rs interactive tests
python3                -          -        VM harness, netns test clients, dpdk-telemetry.py
gcc                    -          -        crates that build C (cc), DPDK's l3fwd/l2fwd in bench/l3fwd.sh
make                   -          -        bench/l3fwd.sh builds DPDK's example apps
pkgconf                -          -        bench/l3fwd.sh (libdpdk.pc), QEMU's configure
coreutils              -          -        stdbuf (dpdk-testpmd's output unbuffered)
curl                   -          -        http-server real-client tests
xz-utils               -          -        unpacking the guest kernel's modules
git                    -          -        scripts/check-setup.sh and check-citations.sh (git ls-files)
debootstrap            -          -        scripts/fresh-check.sh (a clean Debian root); the DPDK judge's sid root

# --- references and judges run side by side (never linked)
dpdk                   -          -        testpmd-rs pcap comparison with dpdk-testpmd; bench/ references
dpdk-dev               -          -        dpdk-telemetry.py (telemetry tests), dpdk-test and libdpdk.pc (bench/)
dpdk-doc               -          -        DPDK's l3fwd and l2fwd sources (bench/l3fwd.sh)
redis-server           -          -        bench/kv-vs-redis.sh
redis-tools            -          -        redis-cli, redis-benchmark (servers real-client tests)
nginx                  -          -        bench/http-vs-nginx.sh
wrk                    -          -        servers real-client tests, bench/http-vs-nginx.sh
valgrind               -          -        bench/*-callgrind.sh (instructions per packet)
faketime               -          -        bench/run.sh (DPDK's start-up timing)

# --- aarch64: the drivers built and unit-tested for Kunpeng hosts (scripts/aarch64.sh)
gcc-aarch64-linux-gnu  -          -        the aarch64 linker
libc6-dev-arm64-cross  -          -        the aarch64 C runtime (Scrt1.o, crti.o) the linker needs
qemu-user-static       -          -        runs the aarch64 test binaries

# --- Debian packages of the apps and tools (scripts/package.sh, tests/tests/package.rs)
lintian                -          -        the packages' checks (errors fail the build)
binutils               -          -        readelf (the packages' Depends) and strip

# --- the VM tests (tests/vm): a QEMU guest with an emulated IOMMU
qemu-system-x86        backports  1:8      the guest (igb needs QEMU >= 8); brings its firmware (qemu-system-data)
qemu-system-data       backports  1:8      SeaBIOS/iPXE blobs also used by the vfio-user QEMU built below
seabios                -          -        the BIOS both QEMUs boot
ipxe-qemu              -          -        option ROM files QEMU looks for
# building QEMU >= 10.1 with the vfio-user client (tests/vm/qemu-vfio-user.sh) from Debian's source package
dpkg-dev               -          -        apt-get source / dpkg-source
build-essential        -          -        QEMU build
ninja-build            -          -        QEMU build
meson                  backports  1.5      QEMU 10.x needs meson >= 1.5
python3-venv           -          -        QEMU's configure
python3-distlib        -          -        QEMU's configure
libglib2.0-dev         -          -        QEMU build
libpixman-1-dev        -          -        QEMU build
libfdt-dev             -          -        QEMU build
zlib1g-dev             -          -        QEMU build
flex                   -          -        QEMU build
bison                  -          -        QEMU build
EOF
)

CHECK=0
BENCH=0
for a in "$@"; do
  case $a in
    --check) CHECK=1 ;;
    --bench) BENCH=1 ;;
    --list) sed -e 's/#.*//' <<<"$PACKAGES" | awk 'NF >= 3 { print $1 }'; exit 0 ;;
    *) echo "usage: bash scripts/setup.sh [--check | --list | --bench]" >&2; exit 2 ;;
  esac
done
# shellcheck source=scripts/lib/setup-lib.sh
. "$ROOT/scripts/lib/setup-lib.sh"

if ! command -v cargo >/dev/null; then
  say "cargo not found: install Rust with rustup first (https://rustup.rs), then run this again"
  exit 1
fi

if [ $CHECK = 1 ]; then
  missing=$(setup_missing)
  if [ -n "$missing" ]; then
    say "missing:"
    echo "$missing" | sed 's/^/  /' >&2
    exit 1
  fi
  say "ok: nothing missing"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  missing=$(setup_missing)
  [ -z "$missing" ] && { say "ok (not root; nothing missing)"; exit 0; }
  say "not root, so nothing can be installed; missing:"
  echo "$missing" | sed 's/^/  /' >&2
  say "run as root: sudo bash scripts/setup.sh"
  exit 1
fi

setup_lock
T0=$(date +%s)
setup_apt_packages
setup_rust_targets
setup_vfio_user_qemu
setup_guest_downloads
setup_dpdk_source
setup_dpdk_judge
if [ $BENCH = 1 ]; then setup_dpdk_bench_root; fi
setup_hugepages
missing=$(setup_missing)
if [ -n "$missing" ]; then
  say "still missing after the set-up:"
  echo "$missing" | sed 's/^/  /' >&2
  exit 1
fi
say "ok in $(($(date +%s) - T0)) s ($(cat /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages 2>/dev/null || echo 0) x 2 MiB hugepages reserved)"
