#!/bin/bash
# Builds (once per machine) a QEMU whose x86_64 system emulator has the vfio-user client
# (`-device vfio-user-pci,socket=PATH`, QEMU >= 10.1), from Debian's own source package, and prints the
# path of its qemu-system-x86_64 on stdout (last line). Later runs reuse the cached build.
#
# Where: $QEMU_VFIO_USER_CACHE (default $PKTIO_CACHE, else /var/cache/pktio): src/ (source package),
# qemu-vfio-user-VERSION/ (install prefix; `.complete` marks a finished build). Which: $QEMU_VFIO_USER_VERSION
# (default 10.2.2, the version issue 17 validated) when a source suite carries it, else the newest >= 10.1 there.
#
# A cold build is a step of scripts/setup.sh, under its lock and with its private apt configuration (the deb-src
# entries, the build dependencies in its package table): run by itself without a cached build, this script
# says to run the set-up and exits 77. `--cached`: only print a finished build's path (exit 77 when none).
set -euo pipefail

CACHE=${QEMU_VFIO_USER_CACHE:-${PKTIO_CACHE:-/var/cache/pktio}}
WANT=${QEMU_VFIO_USER_VERSION:-10.2.2}
log() { echo "qemu-vfio-user: $*" >&2; }

# A finished build of the wanted version (or any other one) answers at once.
cached() {
    local d
    for d in "$CACHE/qemu-vfio-user-$WANT" "$CACHE"/qemu-vfio-user-*; do
        if [[ -f "$d/.complete" && -x "$d/bin/qemu-system-x86_64" ]]; then
            echo "$d/bin/qemu-system-x86_64"
            return 0
        fi
    done
    return 1
}
if cached; then exit 0; fi
if [[ ${1:-} == --cached ]]; then exit 77; fi
if [[ ${PKTIO_SETUP_LOCKED:-} != "$CACHE" || -z ${APT_CONFIG:-} ]]; then
    log "no QEMU with the vfio-user client under $CACHE yet: run bash scripts/setup.sh (as root) to build it"
    exit 77
fi
for tool in meson ninja dpkg-source cc pkg-config flex bison; do
    command -v "$tool" >/dev/null || { log "$tool is missing: bash scripts/setup.sh installs it"; exit 1; }
done

# The source versions to try, best first: the wanted upstream version if carried, then the others >= 10.1, newest
# first (a mirror's index can name a version its pool does not hold: then the next one is tried).
mapfile -t VERSIONS < <(apt-cache showsrc qemu 2>/dev/null | awk '/^Package: qemu$/{p=1} p && /^Version:/{print $2; p=0}')
CANDIDATES=()
for v in "${VERSIONS[@]}"; do
    up=${v#*:}; up=${up%%+*}; up=${up%%-*}
    [[ $up == "$WANT" ]] && CANDIDATES+=("$v")
done
while read -r v; do
    [[ -n $v && " ${CANDIDATES[*]} " != *" $v "* ]] && dpkg --compare-versions "$v" ge 1:10.1 && CANDIDATES+=("$v")
done < <(printf '%s\n' "${VERSIONS[@]}" | sort -u | sort -r -V)
[[ ${#CANDIDATES[@]} -gt 0 ]] || { log "no qemu source >= 10.1 in the apt source lists (have: ${VERSIONS[*]:-none})"; exit 1; }

mkdir -p "$CACHE/src"
PICK=""
for v in "${CANDIDATES[@]}"; do
    UP=${v#*:}; UP=${UP%%+*}; UP=${UP%%-*}
    SRCDIR="$CACHE/src/qemu-$UP"
    if [[ -f $SRCDIR/.unpacked ]]; then PICK=$v; break; fi
    rm -rf "$SRCDIR"
    if (cd "$CACHE/src" && apt-get source --download-only "qemu=$v" 9>&- >&2 &&
        dpkg-source --no-check -x "qemu_${v#*:}.dsc" "qemu-$UP" >&2); then
        touch "$SRCDIR/.unpacked"
        PICK=$v
        break
    fi
    log "could not fetch or unpack qemu $v; trying the next version"
done
[[ -n $PICK ]] || { log "none of the qemu sources could be fetched: ${CANDIDATES[*]}"; exit 1; }
PREFIX="$CACHE/qemu-vfio-user-$UP"
log "building QEMU $PICK into $PREFIX"

START=$(date +%s)
BUILD="$SRCDIR/build-x86_64"
rm -rf "$PREFIX"
# The system python3 (the one apt installed meson for), not whatever python3 comes first in PATH. Firmware
# (SeaBIOS, iPXE ROMs) is not in Debian's +ds source: the installed qemu-system-data's is used. A build directory
# left by an interrupted run is resumed.
if [[ ! -f $BUILD/build.ninja ]]; then
    rm -rf "$BUILD"
    mkdir -p "$BUILD"
    (cd "$BUILD" && nice -n 19 ../configure --prefix="$PREFIX" --target-list=x86_64-softmmu --python=/usr/bin/python3 \
        --firmwarepath=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu \
        --disable-install-blobs --disable-docs --disable-slirp --disable-werror --disable-gtk --disable-sdl --disable-vnc \
        --disable-opengl --disable-virglrenderer --disable-spice --disable-user --disable-rust \
        --disable-download --disable-tools --disable-guest-agent >&2)
fi
# Only the emulator: not QEMU's own tests and tools (half of `ninja all`).
(cd "$BUILD" && nice -n 19 ninja -j2 qemu-system-x86_64 >&2)
mkdir -p "$PREFIX/bin"
cp "$BUILD/qemu-system-x86_64" "$PREFIX/bin/"
"$PREFIX/bin/qemu-system-x86_64" -device help 2>/dev/null | grep -q '"vfio-user-pci"' \
    || { log "the built QEMU has no vfio-user-pci device"; exit 1; }
echo "$PICK built in $(( $(date +%s) - START )) s on $(nproc) cores" >"$PREFIX/.complete"
log "$(cat "$PREFIX/.complete")"
echo "$PREFIX/bin/qemu-system-x86_64"
