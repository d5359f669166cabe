#!/usr/bin/env bash
# Proves that the set-up is complete on a machine that has none of it: builds a clean Debian root file system from
# Debian's packages (debootstrap --variant=minbase, plus ca-certificates, which rustup's and crates.io's HTTPS need),
# clones this checkout's HEAD into it, and runs there, as a new user would, `bash scripts/setup.sh` and then the
# README's test command (`bash scripts/test.sh`, or only the set-up with --setup-only).
#
# The root runs in a chroot inside private mount and PID namespaces (unshare): its mounts and every process it
# starts end with it. It shares the host's kernel, so what needs the kernel works there as on the host: network
# namespaces, veth pairs and TAPs (the tests make and remove their own), hugepages (reserved through the shared
# /sys), and the VM tests' QEMU under TCG. It shares the host's network namespace, as the test command itself does:
# the tests send traffic only inside namespaces they make. Services a package would start (nginx, redis-server)
# are kept from starting by the root's own policy-rc.d.
#
# Rust: only Debian's and the Rust, Python and npm registries are reachable, so the host's rustup toolchain
# ($RUSTUP_HOME, $CARGO_HOME) is lent to the root read-only through an overlay: the set-up's `rustup target add` and
# cargo's downloads land in the overlay's upper layer, never in the host's directories.
#
# Usage (as root): bash scripts/fresh-check.sh [--setup-only] [--keep] [DIR]
#   DIR           where the root is built (default /var/tmp/pktio-fresh); removed at the end unless --keep
#   --setup-only  run only scripts/setup.sh (then `scripts/setup.sh --check`) inside
# Prints the set-up's and the tests' wall times and the test count; exit status that of the run inside.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=/var/tmp/pktio-fresh
SETUP_ONLY=0
KEEP=0
for a in "$@"; do
  case $a in
    --setup-only) SETUP_ONLY=1 ;;
    --keep) KEEP=1 ;;
    -*) echo "usage: bash scripts/fresh-check.sh [--setup-only] [--keep] [DIR]" >&2; exit 2 ;;
    *) DIR=$a ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "fresh-check: run as root (debootstrap, chroot, namespaces)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "fresh-check: debootstrap is missing: bash scripts/setup.sh installs it" >&2; exit 1; }
RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}
CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
[ -x "$CARGO_HOME/bin/cargo" ] && [ -d "$RUSTUP_HOME/toolchains" ] ||
  { echo "fresh-check: no rustup toolchain at $CARGO_HOME and $RUSTUP_HOME to lend the root (set RUSTUP_HOME, CARGO_HOME)" >&2; exit 1; }

CACHE=${PKTIO_CACHE:-/var/cache/pktio}
# shellcheck source=scripts/lib/setup-lib.sh
. "$ROOT/scripts/lib/setup-lib.sh"
say() { echo "fresh-check: $*" >&2; }
read -r MIRROR _ < <(derive_debian_source) || { say "no Debian archive entry in /etc/apt to debootstrap from"; exit 1; }

LOG=$DIR.log
if [ -e "$DIR" ]; then
  say "removing the previous root $DIR"
  rm -rf "$DIR"
fi
mkdir -p "$DIR"
T0=$(date +%s)
say "debootstrap $CODENAME from $MIRROR into $DIR (log: $LOG)"
debootstrap --variant=minbase --include=ca-certificates "$CODENAME" "$DIR" "$MIRROR" >"$LOG" 2>&1 ||
  { tail -20 "$LOG" >&2; say "debootstrap failed"; exit 1; }
say "root built in $(($(date +%s) - T0)) s"

# The root's own settings: no service starts from a package's postinst; the machine's apt sources and apt
# settings (a fresh machine of this kind has them: the mirror, its keyring, proxy or validity settings), and its
# name resolution.
rm -f "$DIR/etc/apt/sources.list"
cp -a /etc/apt/sources.list.d/. "$DIR/etc/apt/sources.list.d/"
[ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$DIR/etc/apt/sources.list"
cp -a /etc/apt/apt.conf.d/. "$DIR/etc/apt/apt.conf.d/"
cp -an /etc/apt/trusted.gpg.d/. "$DIR/etc/apt/trusted.gpg.d/" 2>/dev/null || true
cp -an /usr/share/keyrings/. "$DIR/usr/share/keyrings/" 2>/dev/null || true
printf '#!/bin/sh\nexit 101\n' >"$DIR/usr/sbin/policy-rc.d"
chmod +x "$DIR/usr/sbin/policy-rc.d"
cp /etc/resolv.conf "$DIR/etc/resolv.conf"
git clone -q --no-hardlinks "$ROOT" "$DIR/src"
git -C "$DIR/src" checkout -q "$(git -C "$ROOT" rev-parse HEAD)"
# The user inside the root is root; its home, as the root's own passwd gives it.
INNER_HOME=$(awk -F: '$1 == "root" { print $6 }' "$DIR/etc/passwd")
mkdir -p "$DIR/overlay"/{rustup,cargo}/{upper,work} "$DIR$INNER_HOME/.rustup" "$DIR$INNER_HOME/.cargo"

if [ $SETUP_ONLY = 1 ]; then
  inner='bash scripts/setup.sh && bash scripts/setup.sh --check'
else
  inner='t=$(date +%s); bash scripts/setup.sh; echo "fresh-check: the set-up inside took $(($(date +%s) - t)) s"; bash scripts/test.sh'
fi
T1=$(date +%s)
rc=0
unshare --mount --pid --fork --propagation private bash -euo pipefail -c '
  d=$1 ru=$2 ch=$3 inner=$4 home=$5
  # The root a mount point of its own, as a real root is (`ip netns exec` remounts / as a slave).
  mount --bind "$d" "$d"
  mount -t proc proc "$d/proc"
  mount --rbind /sys "$d/sys"
  mount --rbind /dev "$d/dev"
  mount -t tmpfs tmpfs "$d/run"
  mount -t tmpfs -o size=8g tmpfs "$d/tmp"
  mount -t overlay overlay -o "lowerdir=$ru,upperdir=$d/overlay/rustup/upper,workdir=$d/overlay/rustup/work" "$d$home/.rustup"
  mount -t overlay overlay -o "lowerdir=$ch,upperdir=$d/overlay/cargo/upper,workdir=$d/overlay/cargo/work" "$d$home/.cargo"
  exec chroot "$d" /usr/bin/env -i HOME="$home" TERM=dumb LANG=C.UTF-8 CI=true \
    PATH="$home/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    /bin/bash -c "cd /src && $inner"
' fresh-check "$DIR" "$RUSTUP_HOME" "$CARGO_HOME" "$inner" "$INNER_HOME" 2>&1 | tee -a "$LOG" || rc=$?
T2=$(date +%s)

count=$( (grep -E '^test result:' "$LOG" || true) | awk '{p+=$4; f+=$6} END {printf "%d passed, %d failed", p, f}')
say "run inside: exit $rc after $((T2 - T1)) s (root built in $((T1 - T0)) s); cargo tests: $count; log: $LOG"
if [ $KEEP = 0 ]; then
  rm -rf "$DIR"
else
  say "kept the root at $DIR"
fi
exit $rc
