#!/bin/bash
# Builds (once per machine) a QEMU whose x86_64 system emulator has the vfio-user client
# (`-device vfio-user-pci,socket=PATH`, QEMU >= 10.1), from Debian's own source package, and prints the
# path of its qemu-system-x86_64 on stdout (last line). Later runs reuse the cached build.
#
# Where: $QEMU_VFIO_USER_CACHE (default /var/cache/pktio): src/ (source package), qemu-vfio-user-VERSION/
# (install prefix; `.complete` marks a finished build). Which: $QEMU_VFIO_USER_VERSION (default 10.2.2, the
# version issue 17 validated) when a source suite carries it, else the newest >= 10.1 there.
# The deb-src entry is derived from the machine's own Debian source (same URI and keyring); no mirror host
# is written here. Needs root (apt) only for a cold build.
set -euo pipefail

CACHE=${QEMU_VFIO_USER_CACHE:-/var/cache/pktio}
WANT=${QEMU_VFIO_USER_VERSION:-10.2.2}
SRC_LIST=/etc/apt/sources.list.d/pktio-qemu-src.sources
log() { echo "qemu-vfio-user: $*" >&2; }

# A finished build of the wanted version (or any, when apt is not reachable) answers at once.
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

[[ $(id -u) == 0 ]] || { log "a cold build needs root (apt-get); none cached under $CACHE"; exit 77; }

# The machine's Debian archive URI and keyring: the first deb822 stanza or one-line entry of the main
# archive (not -security/-updates/-backports), as the VM harness derives its backports entry.
derive_source() {
    local f uri="" key="" suite=""
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f $f && $f != "$SRC_LIST" ]] || continue
        # Stanzas are separated by blank lines; take the first whose Suites has a bare codename.
        read -r uri key suite < <(awk 'BEGIN{RS=""; FS="\n"}
            { u=""; k=""; s="";
              for (i=1;i<=NF;i++) { if ($i ~ /^URIs:/) { sub(/^URIs:[ \t]*/,"",$i); split($i,a," "); u=a[1] }
                                    if ($i ~ /^Signed-By:/) { sub(/^Signed-By:[ \t]*/,"",$i); k=$i }
                                    if ($i ~ /^Suites:/) { sub(/^Suites:[ \t]*/,"",$i); n=split($i,b," ");
                                        for (j=1;j<=n;j++) if (b[j] !~ /-/) s=b[j] } }
              if (u != "" && s != "") { print u, (k==""?"-":k), s; exit } }' "$f") || true
        [[ -n $uri ]] && break
    done
    if [[ -z $uri && -f /etc/apt/sources.list ]]; then
        read -r uri suite < <(awk '$1=="deb" { i=2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
            if ($(i+1) !~ /-/) { print $i, $(i+1); exit } }' /etc/apt/sources.list) || true
        key=-
    fi
    [[ -n $uri ]] || { log "no Debian source entry found in /etc/apt to derive a deb-src entry from"; exit 77; }
    echo "$uri $key"
}

if [[ ! -f $SRC_LIST ]]; then
    read -r URI KEY < <(derive_source)
    log "adding deb-src for trixie-backports and sid from $URI"
    {
        echo "# Added by tests/vm/qemu-vfio-user.sh (pktio): QEMU source with the vfio-user client."
        echo "Types: deb-src"
        echo "URIs: $URI"
        echo "Suites: trixie-backports sid"
        echo "Components: main"
        [[ $KEY != - ]] && echo "Signed-By: $KEY"
    } >"$SRC_LIST"
fi
apt-get update -qq >&2 || log "apt-get update failed; trying with the lists at hand"

# Pick the source version: the wanted upstream version if carried, else the newest >= 10.1.
mapfile -t VERSIONS < <(apt-cache showsrc qemu 2>/dev/null | awk '/^Package: qemu$/{p=1} p && /^Version:/{print $2; p=0}')
PICK=""
for v in "${VERSIONS[@]}"; do
    up=${v#*:}; up=${up%%+*}; up=${up%%-*}
    if [[ $up == "$WANT" ]]; then PICK=$v; break; fi
done
if [[ -z $PICK ]]; then
    for v in "${VERSIONS[@]}"; do
        dpkg --compare-versions "$v" ge 1:10.1 || continue
        if [[ -z $PICK ]] || dpkg --compare-versions "$v" gt "$PICK"; then PICK=$v; fi
    done
fi
[[ -n $PICK ]] || { log "no qemu source >= 10.1 in the apt source lists (have: ${VERSIONS[*]:-none})"; exit 77; }
UP=${PICK#*:}; UP=${UP%%+*}; UP=${UP%%-*}
PREFIX="$CACHE/qemu-vfio-user-$UP"
log "building QEMU $PICK into $PREFIX"

# Only what configure and the x86_64-softmmu build need (meson >= 1.5 comes from the codename's backports
# on bookworm, which the VM harness's entry already provides).
CODENAME=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
DEPS=(dpkg-dev build-essential ninja-build pkgconf python3-venv python3-distlib libglib2.0-dev
      libpixman-1-dev libfdt-dev zlib1g-dev flex bison)
MESON_OK=0
if command -v meson >/dev/null && dpkg --compare-versions "$(meson --version)" ge 1.5; then MESON_OK=1; fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${DEPS[@]}" >&2
if [[ $MESON_OK == 0 ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -t "$CODENAME-backports" meson >&2 \
        || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends meson >&2
fi

mkdir -p "$CACHE/src"
SRCDIR="$CACHE/src/qemu-$UP"
if [[ ! -f $SRCDIR/.unpacked ]]; then
    rm -rf "$SRCDIR"
    (cd "$CACHE/src" && apt-get source --download-only "qemu=$PICK" >&2 &&
        dpkg-source --no-check -x "qemu_${PICK#*:}.dsc" "qemu-$UP" >&2)
    touch "$SRCDIR/.unpacked"
fi

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
