#!/usr/bin/env bash
# Installs what building and testing need on a fresh Debian machine (idempotent; run as root).
# Usage: bash scripts/setup.sh
set -euo pipefail

need_apt=()
command -v ip >/dev/null || need_apt+=(iproute2)
command -v tcpdump >/dev/null || need_apt+=(tcpdump)
command -v tmux >/dev/null || need_apt+=(tmux)
command -v ping >/dev/null || need_apt+=(iputils-ping)
command -v ethtool >/dev/null || need_apt+=(ethtool)
command -v python3 >/dev/null || need_apt+=(python3)
command -v cc >/dev/null || need_apt+=(gcc)
command -v dpdk-testpmd >/dev/null || need_apt+=(dpdk)
[ -x /usr/bin/dpdk-telemetry.py ] || need_apt+=(dpdk-dev)
command -v stdbuf >/dev/null || need_apt+=(coreutils)
# Real clients of the sample servers (servers/tests/real_clients.rs) and the systems bench/ compares against.
command -v redis-cli >/dev/null || need_apt+=(redis-tools)
command -v curl >/dev/null || need_apt+=(curl)
command -v wrk >/dev/null || need_apt+=(wrk)
command -v redis-server >/dev/null || need_apt+=(redis-server)
command -v nginx >/dev/null || need_apt+=(nginx)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${need_apt[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
    # redis-server and nginx are only run by bench/ on their own ports: no service stays running or enabled.
    for svc in redis-server nginx; do
      if command -v systemctl >/dev/null; then systemctl disable --now "$svc" >/dev/null 2>&1 || true; fi
      if command -v service >/dev/null; then service "$svc" stop >/dev/null 2>&1 || true; fi
      if command -v update-rc.d >/dev/null; then update-rc.d "$svc" disable >/dev/null 2>&1 || true; fi
    done
  else
    echo "setup: missing ${need_apt[*]}; run as root or: sudo apt-get install ${need_apt[*]}" >&2
  fi
fi

if ! command -v cargo >/dev/null; then
  echo "setup: cargo not found; install Rust with rustup (https://rustup.rs) first" >&2
  exit 1
fi

# Hugepages: the EAL uses them by default (tests that need them reserve their own; --no-huge runs without).
if [ "$(id -u)" = 0 ] && [ -w /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages ]; then
  cur=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages)
  if [ "$cur" -lt 256 ]; then
    echo 256 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages || true
  fi
fi
echo "setup: ok ($(cat /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages 2>/dev/null || echo 0) x 2 MiB hugepages reserved)"
