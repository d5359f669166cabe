#!/usr/bin/env bash
# Builds the Debian packages of the apps and tools, as users install DPDK (`apt install dpdk`): one binary package
# `pktio` per architecture, amd64 and arm64 (cross-built with the aarch64 toolchain scripts/setup.sh installs).
#
#   /usr/bin/                 testpmd-rs l2fwd l3fwd devbind hugepages pktio-doctor pktio-dumpcap kv-server
#                             http-server udp-echo netstack-ctl
#   /usr/lib/<triplet>/pktio/ libnetstack_preload.so (LD_PRELOAD only: no SONAME, so not in the linker's path)
#   /usr/share/man/man1/      one page per program, made from its --help
#   /usr/share/doc/pktio/     copyright, changelog, README, examples/ (netstack, l3fwd routes, hugepages)
#   /etc/pktio/hugepages.conf + /lib/systemd/system/pktio-hugepages.service (reserve and mount hugepages at boot,
#                             like dpdk's; shipped disabled: `systemctl enable --now pktio-hugepages`)
#
# Plain dpkg-deb (no debhelper: the workspace is the source, cargo the build). Depends is derived from what the
# binaries load (readelf: NEEDED and the glibc symbol versions), so it is libc6 (>= the newest GLIBC_ version used)
# and libgcc-s1 when the unwinder is linked; any other library stops the build, naming it. Binaries are stripped.
#
# Usage: bash scripts/package.sh [--arch amd64|arm64|all] [--out DIR] [--profile PROFILE] [--lintian]
#   --profile: cargo profile (default release; the tests use dev for the host, package-check for the other arch)
#   --lintian: run lintian on each package and print its tags (errors fail the build)
# Prints the path of each package built.
set -euo pipefail
cd "$(dirname "$0")/.."

ARCHES=all OUT="${CARGO_TARGET_DIR:-target}/debian" PROFILE=release LINTIAN=0
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) ARCHES=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --profile) PROFILE=$2; shift 2 ;;
    --lintian) LINTIAN=1; shift ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "package.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ "$ARCHES" = all ] && ARCHES="amd64 arm64"

say() { echo "package.sh: $*" >&2; }
die() { say "$*"; exit 1; }

CARGO=${CARGO:-cargo}
PKG=pktio
# The programs, by crate: every binary users were promised, and the preload library.
BIN_CRATES=(testpmd-rs l2fwd l3fwd tools servers netstack)
BINS=(testpmd-rs l2fwd l3fwd devbind hugepages pktio-doctor pktio-dumpcap kv-server http-server udp-echo netstack-ctl)
PRELOAD=libnetstack_preload.so

VERSION=$("$CARGO" metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print({p["name"]: p["version"] for p in json.load(sys.stdin)["packages"]}["testpmd-rs"])')
# Reproducible: file dates and the changelog's date come from the last commit (or now outside a checkout).
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

triple_of() {
  case "$1" in
    amd64) echo x86_64-unknown-linux-gnu ;;
    arm64) echo aarch64-unknown-linux-gnu ;;
    *) die "unknown architecture '$1' (amd64 or arm64)" ;;
  esac
}
multiarch_of() { case "$1" in amd64) echo x86_64-linux-gnu ;; arm64) echo aarch64-linux-gnu ;; esac; }
HOST_TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
# The host's own architecture is built without --target, into the same directory as every other build of the
# workspace (target/PROFILE_DIR): a build that is already there is reused. Others go to target/TRIPLE/PROFILE_DIR.
target_args() { [ "$(triple_of "$1")" = "$HOST_TRIPLE" ] || echo "--target $(triple_of "$1")"; }
out_dir() {
  local sub=$PROFILE
  [ "$PROFILE" = dev ] && sub=debug
  if [ "$(triple_of "$1")" = "$HOST_TRIPLE" ]; then
    echo "${CARGO_TARGET_DIR:-target}/$sub"
  else
    echo "${CARGO_TARGET_DIR:-target}/$(triple_of "$1")/$sub"
  fi
}
strip_of() { case "$1" in amd64) echo strip ;; arm64) echo aarch64-linux-gnu-strip ;; esac; }

# Runs a program of architecture $1 on this host (arm64 through qemu-user with the cross C library).
run_for() {
  local arch=$1; shift
  if [ "$arch" = arm64 ] && [ "$(uname -m)" != aarch64 ]; then
    qemu-aarch64-static -L /usr/aarch64-linux-gnu "$@"
  else
    "$@"
  fi
}

build() {
  local arch=$1 triple
  triple=$(triple_of "$arch")
  if [ "$arch" = arm64 ]; then
    command -v aarch64-linux-gnu-gcc >/dev/null ||
      die "arm64 needs the cross linker: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross (scripts/setup.sh installs it)"
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
  fi
  local crates=()
  for c in "${BIN_CRATES[@]}"; do crates+=(-p "$c"); done
  say "building $arch ($triple, profile $PROFILE)"
  # shellcheck disable=SC2046 # target_args is empty or two words
  "$CARGO" build --quiet --profile "$PROFILE" $(target_args "$arch") "${crates[@]}" --bins
  # shellcheck disable=SC2046
  "$CARGO" build --quiet --profile "$PROFILE" $(target_args "$arch") -p netstack-preload --lib
}

# Depends from the ELF files in $1 (a staging tree): the libraries they load mapped to the packages providing them.
depends_of() {
  local root=$1 needed versions
  needed=$(find "$root" -type f \( -path '*/usr/bin/*' -o -name '*.so' \) -exec readelf -d {} + 2>/dev/null |
    sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u)
  local libc=0 gcc=0
  for lib in $needed; do
    case "$lib" in
      libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | librt.so.1 | libutil.so.1 | ld-linux-*.so.* | ld-linux.so.*) libc=1 ;;
      libgcc_s.so.1) gcc=1 ;;
      *) die "a binary loads $lib, which package.sh does not know how to depend on: add it to depends_of" ;;
    esac
  done
  versions=$(find "$root" -type f \( -path '*/usr/bin/*' -o -name '*.so' \) -exec readelf -V {} + 2>/dev/null |
    grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
  local deps=()
  [ "$libc" = 1 ] && deps+=("libc6 (>= ${versions:-2.17})")
  [ "$gcc" = 1 ] && deps+=("libgcc-s1 (>= 3.0)")
  (IFS=,; echo "${deps[*]}" | sed 's/,/, /g')
}

# Each program's NAME line in its man page.
summary_of() {
  case "$1" in
    testpmd-rs) echo "forward packets between ports, interactively or not, as DPDK's testpmd does" ;;
    l2fwd) echo "layer-2 forwarding between port pairs, as DPDK's l2fwd sample" ;;
    l3fwd) echo "IPv4/IPv6 routing at line rate (LPM, FIB, exact match), as DPDK's l3fwd sample" ;;
    devbind) echo "show and change which kernel driver a PCI NIC is bound to (vfio-pci), as dpdk-devbind.py" ;;
    hugepages) echo "show, reserve, clear and mount hugepages, as dpdk-hugepages.py" ;;
    pktio-doctor) echo "check a machine for what the drivers need (IOMMU, vfio-pci, hugepages, bound NICs)" ;;
    pktio-dumpcap) echo "capture the packets of a running app's ports into a pcapng file, as dpdk-dumpcap" ;;
    kv-server) echo "a Redis-protocol key-value server on the userspace TCP/IP stack" ;;
    http-server) echo "an HTTP/1.1 server on the userspace TCP/IP stack" ;;
    udp-echo) echo "a UDP echo server on the userspace TCP/IP stack" ;;
    netstack-ctl) echo "show a running netstack's addresses, ARP table, sockets and counters" ;;
    *) die "no man page summary for $1" ;;
  esac
}

# A man page from a program's --help (section 1); the EAL apps' application options (after --) too.
man_page() {
  local name=$1 help=$2
  printf '.TH %s 1 "%s" "%s %s" "User Commands"\n' "$(echo "$name" | tr a-z A-Z)" \
    "$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)" "$PKG" "$VERSION"
  printf '.SH NAME\n%s \\- %s\n.SH DESCRIPTION\n.nf\n' "$name" "$(summary_of "$name" | sed 's/-/\\-/g')"
  # Verbatim text: escape backslashes, and lines starting with . or ' that roff would take as requests.
  printf '%s\n' "$help" | sed 's/\\/\\e/g; s/^\([.'"'"']\)/\\\&\1/'
  printf '.fi\n.SH FILES\n/usr/share/doc/%s/examples/\n.SH SEE ALSO\n/usr/share/doc/%s/README.md.gz\n' "$PKG" "$PKG"
}

# The help a program prints, with the staging path it ran from taken out of its usage line.
help_of() {
  local arch=$1 bin=$2 name=$3 out
  out=$(run_for "$arch" "$bin/$name" --help 2>&1) || die "$name --help failed ($arch): $out"
  case "$name" in
    testpmd-rs | l2fwd | l3fwd)
      local app
      app=$(run_for "$arch" "$bin/$name" -- --help 2>&1) || die "$name -- --help failed ($arch): $app"
      out=$(printf '%s\n\nApplication options (after --):\n%s\n' "$out" "$app")
      ;;
  esac
  printf '%s\n' "$out" | sed "s#$bin/##g"
}

stage() {
  local arch=$1 root=$2 multiarch dir
  multiarch=$(multiarch_of "$arch")
  dir=$(out_dir "$arch")
  rm -rf "$root"
  install -d "$root/DEBIAN" "$root/usr/bin" "$root/usr/lib/$multiarch/$PKG" "$root/usr/share/man/man1" \
    "$root/usr/share/doc/$PKG/examples" "$root/etc/$PKG" "$root/lib/systemd/system"
  for b in "${BINS[@]}"; do
    [ -x "$dir/$b" ] || die "$dir/$b was not built"
    install -m 0755 "$dir/$b" "$root/usr/bin/$b"
  done
  install -m 0644 "$dir/$PRELOAD" "$root/usr/lib/$multiarch/$PKG/$PRELOAD"
  "$(strip_of "$arch")" --strip-unneeded --remove-section=.comment --remove-section=.note \
    "$root"/usr/bin/* "$root/usr/lib/$multiarch/$PKG/$PRELOAD"

  for b in "${BINS[@]}"; do
    man_page "$b" "$(help_of "$arch" "$root/usr/bin" "$b")" | gzip -9n >"$root/usr/share/man/man1/$b.1.gz"
  done

  local doc="$root/usr/share/doc/$PKG"
  gzip -9n <README.md >"$doc/README.md.gz"
  cp packaging/copyright "$doc/copyright"
  {
    printf '%s (%s) unstable; urgency=medium\n\n' "$PKG" "$VERSION"
    printf '  * Built from the workspace at %s.\n\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    printf ' -- %s  %s\n' "$(sed -n 's/^Maintainer: //p' packaging/control.in)" \
      "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
  } | gzip -9n >"$doc/changelog.gz"
  install -m 0644 packaging/examples/* "$doc/examples/"
  install -m 0644 packaging/hugepages.conf "$root/etc/$PKG/hugepages.conf"
  install -m 0644 packaging/pktio-hugepages.service "$root/lib/systemd/system/pktio-hugepages.service"

  echo "/etc/$PKG/hugepages.conf" >"$root/DEBIAN/conffiles"
  local depends size
  depends=$(depends_of "$root")
  size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
  sed -e "s/@VERSION@/$VERSION/" -e "s/@ARCH@/$arch/" -e "s/@DEPENDS@/$depends/" -e "s/@SIZE@/$size/" \
    -e "s/@TRIPLET@/$multiarch/" packaging/control.in >"$root/DEBIAN/control"
  (cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
  find "$root" -type d -exec chmod 0755 {} +
  find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
}

mkdir -p "$OUT"
for arch in $ARCHES; do
  triple_of "$arch" >/dev/null
  build "$arch"
  root="$OUT/staging-$arch"
  stage "$arch" "$root"
  deb="$OUT/${PKG}_${VERSION}_$arch.deb"
  dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
  rm -rf "$root"
  say "$deb: $(du -k "$deb" | cut -f1) KiB, Depends: $(dpkg-deb -f "$deb" Depends)"
  if [ "$LINTIAN" = 1 ]; then
    command -v lintian >/dev/null || die "--lintian needs lintian: apt-get install lintian (scripts/setup.sh installs it)"
    tags=$(lintian --tag-display-limit 0 "$deb" 2>&1 || true)
    printf "%s\n" "$tags" | grep -v "running with root privileges" | sed "s/^/lintian($arch): /" >&2 || true
    if printf '%s\n' "$tags" | grep -q '^E: '; then die "lintian found errors in $deb"; fi
  fi
  echo "$deb"
done
