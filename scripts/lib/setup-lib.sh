# The steps of scripts/setup.sh (sourced, not run). Expects ROOT (the repository) and CACHE (PKTIO_CACHE).
# Nothing here changes the machine's apt sources: apt runs with the private configuration apt_prepare writes.

say() { echo "setup: $*" >&2; }

APT_DIR=$CACHE/apt
APT_LOCK_TIMEOUT=${PKTIO_APT_LOCK_TIMEOUT:-600}
CODENAME=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
RUST_TARGETS=(x86_64-unknown-linux-musl aarch64-unknown-linux-gnu)
GUEST_DIR=$CACHE/vm

# One set-up at a time on this machine: the others wait here (a parallel test binary, a benchmark), then find the
# work done. A child of the set-up holding the lock (PKTIO_SETUP_LOCKED) does not take it again.
setup_lock() {
  [ "${PKTIO_SETUP_LOCKED:-}" = "$CACHE" ] && return 0
  mkdir -p "$CACHE"
  exec 9>"$CACHE/setup.lock"
  if ! flock -n 9; then
    say "waiting for the set-up already running (pid $(cat "$CACHE/setup.pid" 2>/dev/null || echo '?')) to finish"
    local wait=${PKTIO_SETUP_LOCK_TIMEOUT:-5400}
    flock -w "$wait" 9 || {
      say "gave up after $wait s: another set-up still holds $CACHE/setup.lock (pid $(cat "$CACHE/setup.pid" 2>/dev/null || echo '?'))"
      exit 1
    }
  fi
  echo $$ >"$CACHE/setup.pid"
  export PKTIO_SETUP_LOCKED=$CACHE
}

# --- what is missing -------------------------------------------------------------------------------------------

# "name suite min" for each package of setup.sh's table.
package_rows() { sed -e 's/#.*//' <<<"$PACKAGES" | awk 'NF >= 3 { print $1, $2, $3 }'; }

# The packages of the table not installed (or older than their minimum), as "name suite" lines.
missing_packages() {
  local rows names
  rows=$(package_rows)
  mapfile -t names < <(echo "$rows" | awk '{ print $1 }')
  declare -A have=()
  local p st v
  while read -r p st v; do
    [ "$st" = installed ] && have[$p]=$v
  done < <(dpkg-query -W -f='${Package} ${db:Status-Status} ${Version}\n' "${names[@]}" 2>/dev/null || true)
  local name suite min
  while read -r name suite min; do
    if [ -z "${have[$name]:-}" ]; then
      echo "$name $suite"
    elif [ "$min" != - ] && ! dpkg --compare-versions "${have[$name]}" ge "$min"; then
      echo "$name $suite"
    fi
  done <<<"$rows"
}

missing_rust_targets() {
  command -v rustup >/dev/null || { echo "rustup (the aarch64 and musl targets come from it: https://rustup.rs)"; return; }
  local installed t
  installed=$(rustup target list --installed 2>/dev/null || true)
  for t in "${RUST_TARGETS[@]}"; do
    grep -qx "$t" <<<"$installed" || echo "$t"
  done
}

guest_kernel_ok() { compgen -G "$GUEST_DIR/kernel/boot/vmlinuz-*" >/dev/null; }
guest_busybox_ok() { [ -x "$GUEST_DIR/busybox/bin/busybox" ]; }

# Everything missing, one line each (nothing when all is there).
setup_missing() {
  local p
  while read -r p; do [ -n "$p" ] && echo "package ${p% *}"; done < <(missing_packages)
  while read -r p; do [ -n "$p" ] && echo "rust target $p"; done < <(missing_rust_targets)
  bash "$ROOT/tests/vm/qemu-vfio-user.sh" --cached >/dev/null 2>&1 ||
    echo "QEMU with the vfio-user client under $CACHE (tests/vm/qemu-vfio-user.sh)"
  guest_kernel_ok || echo "VM guest kernel under $GUEST_DIR/kernel"
  guest_busybox_ok || echo "VM guest busybox under $GUEST_DIR/busybox"
  dpdk_judge_ok || echo "the DPDK $DPDK_SRC_SERIES judge for the VM guest under $DPDK_JUDGE_DIR"
}

# --- apt, privately --------------------------------------------------------------------------------------------

# The machine's Debian archive (URI and keyring): the first stanza or line of the main archive (not -security,
# -updates, -backports). Prints "URI KEYRING" (KEYRING "-" when none is given).
derive_debian_source() {
  local f uri="" key="" suite=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    read -r uri key suite < <(awk 'BEGIN{RS=""; FS="\n"}
        { u=""; k=""; s="";
          for (i=1;i<=NF;i++) { if ($i ~ /^URIs:/) { sub(/^URIs:[ \t]*/,"",$i); split($i,a," "); u=a[1] }
                                if ($i ~ /^Signed-By:/) { sub(/^Signed-By:[ \t]*/,"",$i); k=$i }
                                if ($i ~ /^Suites:/) { sub(/^Suites:[ \t]*/,"",$i); n=split($i,b," ");
                                    for (j=1;j<=n;j++) if (b[j] !~ /-/) s=b[j] } }
          if (u != "" && s != "" && u !~ /security/) { print u, (k==""?"-":k), s; exit } }' "$f") || true
    [ -n "$uri" ] && break
  done
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    read -r uri suite < <(awk '$1=="deb" { i=2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
        if ($(i+1) !~ /-/ && $i !~ /security/) { print $i, $(i+1); exit } }' /etc/apt/sources.list) || true
    key=-
  fi
  [ -n "$uri" ] || return 1
  echo "$uri $key"
}

# Writes $1/apt.conf: an apt configuration whose sources, lists and downloads all live under $1; $2 says what for.
write_apt_conf() {
  cat >"$1/apt.conf" <<EOF
// Written by scripts/setup.sh (pktio): $2
Dir::Etc::SourceList "$1/sources.list";
Dir::Etc::SourceParts "$1/sources.list.d";
Dir::State::Lists "$1/lists";
Dir::Cache::Archives "$1/archives";
Dir::Cache::pkgcache "$1/pkgcache.bin";
Dir::Cache::srcpkgcache "$1/srcpkgcache.bin";
DPkg::Lock::Timeout "$APT_LOCK_TIMEOUT";
APT::Sandbox::User "root";
EOF
}

# Writes the private apt configuration (once per set-up run) and exports APT_CONFIG for apt_get: the machine's own
# source entries (copied), plus <codename>-backports and the deb-src entries QEMU's source comes from (trixie-backports
# and sid), lists and downloaded packages kept under $APT_DIR.
APT_READY=0
apt_prepare() {
  [ $APT_READY = 1 ] && return 0
  [ -n "$CODENAME" ] || { say "no VERSION_CODENAME in /etc/os-release: this set-up needs Debian"; exit 1; }
  local src uri key
  src=$(derive_debian_source) || {
    say "no Debian archive entry in /etc/apt/sources.list(.d) to derive $CODENAME-backports from"
    exit 1
  }
  read -r uri key <<<"$src"
  mkdir -p "$APT_DIR/sources.list.d" "$APT_DIR/lists/partial" "$APT_DIR/archives/partial"
  rm -f "$APT_DIR/sources.list.d/"*
  local f
  for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] && cp "$f" "$APT_DIR/sources.list.d/machine-$(basename "$f")"
  done
  if [ -f /etc/apt/sources.list ]; then cp /etc/apt/sources.list "$APT_DIR/sources.list"; else : >"$APT_DIR/sources.list"; fi
  local signed=""
  [ "$key" != - ] && signed="Signed-By: $key"
  cat >"$APT_DIR/sources.list.d/pktio.sources" <<EOF
# Written by scripts/setup.sh (pktio), derived from the machine's Debian source; used only through APT_CONFIG.
Types: deb
URIs: $uri
Suites: $CODENAME-backports
Components: main
$signed

Types: deb-src
URIs: $uri
Suites: trixie-backports sid
Components: main
$signed
EOF
  write_apt_conf "$APT_DIR" "apt with the machine's sources plus the project's, lists kept apart."
  export APT_CONFIG=$APT_DIR/apt.conf
  say "apt: updating the package lists ($CODENAME, $CODENAME-backports, deb-src trixie-backports and sid)"
  apt_get update -qq || say "apt-get update reported errors; going on with the lists at hand"
  APT_READY=1
}

# apt-get with the private configuration, waiting for a dpkg lock held by someone else. Our lock's descriptor is
# closed for it, so no service a package starts can keep the set-up lock.
apt_get() {
  local err rc=0
  err=$(mktemp)
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$APT_LOCK_TIMEOUT" "$@" 2> >(tee "$err" >&2) 9>&- || rc=$?
  wait
  if [ $rc != 0 ] && grep -q "Could not get lock" "$err"; then
    say "apt waited $APT_LOCK_TIMEOUT s for a lock another program holds (named above: an apt-get, unattended-upgrades);"
    say "let it finish or stop it, then run bash scripts/setup.sh again (PKTIO_APT_LOCK_TIMEOUT=seconds waits longer)"
  fi
  rm -f "$err"
  return $rc
}

setup_apt_packages() {
  local missing base=() bp=() name suite
  missing=$(missing_packages)
  [ -n "$missing" ] || return 0
  while read -r name suite; do
    case $suite in
      backports) bp+=("$name") ;;
      *) base+=("$name") ;;
    esac
  done <<<"$missing"
  apt_prepare
  if [ ${#base[@]} -gt 0 ]; then
    say "installing ${base[*]}"
    apt_get install -y -qq --no-install-recommends "${base[@]}" >/dev/null
  fi
  if [ ${#bp[@]} -gt 0 ]; then
    say "installing from $CODENAME-backports: ${bp[*]}"
    apt_get install -y -qq --no-install-recommends -t "$CODENAME-backports" "${bp[@]}" >/dev/null
  fi
  # redis-server and nginx are run only by bench/ on ports of its own: no service stays running or enabled.
  local svc
  for svc in redis-server nginx; do
    if command -v systemctl >/dev/null; then systemctl disable --now "$svc" >/dev/null 2>&1 || true; fi
    if command -v service >/dev/null; then service "$svc" stop >/dev/null 2>&1 || true; fi
    if command -v update-rc.d >/dev/null; then update-rc.d "$svc" disable >/dev/null 2>&1 || true; fi
  done
}

setup_rust_targets() {
  command -v rustup >/dev/null || { say "no rustup: the aarch64 and musl targets cannot be added (https://rustup.rs)"; return 0; }
  local t
  for t in $(missing_rust_targets); do
    say "rustup target add $t"
    rustup target add "$t" >/dev/null 2>&1 || say "rustup could not add $t (no access to the Rust distribution server?)"
  done
}

# The vendor-driver VM tests' QEMU (>= 10.1, the vfio-user client): built once from Debian's source package, its
# output kept in a log (shown when it fails).
setup_vfio_user_qemu() {
  bash "$ROOT/tests/vm/qemu-vfio-user.sh" --cached >/dev/null 2>&1 && return 0
  apt_prepare
  local log=$CACHE/qemu-vfio-user-build.log t0=$SECONDS
  say "building QEMU with the vfio-user client from Debian's source (once per machine: 4 min on 2 idle cores, 8-25 min on busy ones): $log"
  if ! bash "$ROOT/tests/vm/qemu-vfio-user.sh" >/dev/null 2>"$log"; then
    tail -30 "$log" >&2
    say "the QEMU build failed (whole log: $log)"
    exit 1
  fi
  say "QEMU with the vfio-user client built in $((SECONDS - t0)) s"
}

# apt-get download PACKAGE into $GUEST_DIR/debs unless a .deb matching GLOB is there; prints its path.
fetch_deb() {
  local spec=$1 glob=$2 d=$GUEST_DIR/debs have
  mkdir -p "$d"
  have=$(compgen -G "$d/$glob" | sort | tail -1 || true)
  if [ -z "$have" ]; then
    (cd "$d" && apt_get download -q "$spec" >/dev/null)
    have=$(compgen -G "$d/$glob" | sort | tail -1 || true)
  fi
  [ -n "$have" ] || { say "apt-get download $spec produced no $glob"; return 1; }
  echo "$have"
}

# dpkg -x DEB into DEST (replaced whole, so a half-unpacked tree never counts as done).
unpack_deb() {
  rm -rf "$2.tmp" && mkdir -p "$2.tmp" && dpkg -x "$1" "$2.tmp" && rm -rf "$2" && mv "$2.tmp" "$2"
}

# The VM guest's kernel (the newest <codename>-backports linux-image-amd64 points at) and busybox, unpacked, never
# installed.
setup_guest_downloads() {
  guest_kernel_ok && guest_busybox_ok && return 0
  apt_prepare
  if ! guest_kernel_ok; then
    local meta dep img deb
    meta=$(fetch_deb "linux-image-amd64/$CODENAME-backports" "linux-image-amd64_*.deb")
    dep=$(dpkg-deb -f "$meta" Depends)
    img=$(grep -oE 'linux-image-[0-9][^ ,(]*' <<<"$dep" | head -1)
    [ -n "$img" ] || { say "cannot find the kernel package in linux-image-amd64's Depends: $dep"; exit 1; }
    deb=$(fetch_deb "$img" "${img}_*.deb")
    say "unpacking the guest kernel $(basename "$deb")"
    unpack_deb "$deb" "$GUEST_DIR/kernel"
  fi
  if ! guest_busybox_ok; then
    local bb
    bb=$(fetch_deb busybox-static "busybox-static_*.deb")
    unpack_deb "$bb" "$GUEST_DIR/busybox"
  fi
}

# DPDK's source of the 25.11 series (the newest 25.11.x Debian's deb-src lists carry: sid), unpacked under
# $DPDK_SRC_DIR, for what no Debian package of bookworm/trixie ships: usertools/dpdk-telemetry-exporter.py (DPDK 23.07
# and later) with its telemetry-endpoints/, which testpmd-rs/tests/exporter.rs runs. Only unpacked, never built.
DPDK_SRC_SERIES=25.11
DPDK_SRC_DIR=$CACHE/src/dpdk-$DPDK_SRC_SERIES
# Where the package route below puts the same two usertools when the mirror has the binary package, not the source.
DPDK_TOOLS_DIR=$CACHE/dpdk-$DPDK_SRC_SERIES-usertools
dpdk_usertools_ok() {
  [ -f "$1/dpdk-telemetry-exporter.py" ] && [ -d "$1/telemetry-endpoints" ]
}
dpdk_source_ok() {
  dpdk_usertools_ok "$DPDK_SRC_DIR/usertools" || dpdk_usertools_ok "$DPDK_TOOLS_DIR"
}

# The package route: sid's binary `dpdk` of version $1 ships the exporter (/usr/bin) and its endpoints
# (/usr/share/dpdk/telemetry-endpoints). Fetched with `apt-get download` through an apt configuration of its own
# (sid's binary lists only, kept under $CACHE/apt-sid), so no install ever sees sid; unpacked, never installed.
dpdk_usertools_from_package() {
  local v=$1 dir=$CACHE/apt-sid work=$CACHE/src/dpdk-deb.tmp src uri key signed=""
  src=$(derive_debian_source) || return 1
  read -r uri key <<<"$src"
  [ "$key" != - ] && signed="Signed-By: $key"
  mkdir -p "$dir/sources.list.d" "$dir/lists/partial" "$dir/archives/partial"
  : >"$dir/sources.list"
  printf '%s\n' "# Written by scripts/setup.sh (pktio): sid's binary lists, only to download DPDK's usertools." \
    "Types: deb" "URIs: $uri" "Suites: sid" "Components: main" "$signed" >"$dir/sources.list.d/sid.sources"
  write_apt_conf "$dir" "only apt-get download uses it; nothing is installed from it."
  rm -rf "$work" && mkdir -p "$work"
  if ! (export APT_CONFIG=$dir/apt.conf && apt_get update -qq && cd "$work" &&
    apt_get download -qq "dpdk=$v" >/dev/null && dpkg-deb -x dpdk_*.deb tree); then
    rm -rf "$work"
    return 1
  fi
  local rc=0
  rm -rf "$DPDK_TOOLS_DIR" && mkdir -p "$DPDK_TOOLS_DIR" &&
    cp "$work/tree/usr/bin/dpdk-telemetry-exporter.py" "$DPDK_TOOLS_DIR/" &&
    cp -r "$work/tree/usr/share/dpdk/telemetry-endpoints" "$DPDK_TOOLS_DIR/" || rc=1
  rm -rf "$work"
  return $rc
}

setup_dpdk_source() {
  dpdk_source_ok && return 0
  apt_prepare
  local v picked="" work=$CACHE/src/dpdk-source.tmp versions
  # Every 25.11.x the lists name, newest first: a mirror may already have dropped the one a stale list names.
  versions=$(apt-cache showsrc dpdk 2>/dev/null | awk '/^Package: dpdk$/{p=1} p && /^Version:/{print $2; p=0}' |
    grep -E "^([0-9]+:)?$DPDK_SRC_SERIES(\.|-)" | sort -rV -u || true)
  # Not fatal: only the exporter test needs it, and it fails with this reason under DPDK_TESTS_REQUIRED=1.
  [ -n "$versions" ] || { say "no dpdk $DPDK_SRC_SERIES.x source in the apt source lists (deb-src sid)"; return 0; }
  for v in $versions; do
    say "fetching and unpacking DPDK's source $v (its telemetry exporter) into $DPDK_SRC_DIR"
    rm -rf "$work" && mkdir -p "$work"
    if (cd "$work" && apt_get source -qq --download-only "dpdk=$v" >/dev/null &&
      dpkg-source --no-check -x "dpdk_${v#*:}.dsc" tree >/dev/null); then
      picked=$v
      break
    fi
    say "apt-get source dpdk=$v failed; trying the next version"
  done
  if [ -z "$picked" ]; then
    rm -rf "$work"
    # Seen here: a mirror that serves sid's dpdk packages but answers 404 for the source's files.
    for v in $versions; do
      say "trying sid's dpdk $v package for the exporter instead, into $DPDK_TOOLS_DIR"
      dpdk_usertools_from_package "$v" && return 0
    done
    say "neither DPDK's source nor its package could be fetched ($(echo $versions)): the exporter test will say so"
    return 0
  fi
  rm -rf "$DPDK_SRC_DIR" && mv "$work/tree" "$DPDK_SRC_DIR" && rm -rf "$work"
  dpdk_source_ok || say "DPDK's source $picked has no usertools/dpdk-telemetry-exporter.py"
}

# A fresh Debian sid root $1 by debootstrap (minbase, with the packages $2, log $3) whose dpdk is of the series
# DPDK_SRC_SERIES (its ABI is what the judge and the benchmarks expect); its version goes to $1/.version. The
# root's own sources.list names the machine's archive: apt runs inside it, never with the machine's sources.
sid_dpdk_root() {
  local root=$1 include=$2 log=$3 src uri key keyring=() v
  command -v debootstrap >/dev/null || { say "debootstrap is missing (its package is in the table)"; exit 1; }
  src=$(derive_debian_source) || { say "no Debian archive entry to fetch sid's DPDK from"; exit 1; }
  read -r uri key <<<"$src"
  [ "$key" != - ] && keyring=(--keyring="$key")
  rm -rf "$root"
  if ! debootstrap --variant=minbase --include="$include" "${keyring[@]}" sid "$root" "$uri" >"$log" 2>&1; then
    tail -20 "$log" >&2
    say "debootstrap of sid failed (log: $log)"
    exit 1
  fi
  v=$(chroot "$root" dpkg-query -W -f='${Version}' dpdk)
  case ${v#*:} in
    "$DPDK_SRC_SERIES".*) ;;
    *) say "sid's dpdk is $v, not $DPDK_SRC_SERIES.x: its ABI would not match"; exit 1 ;;
  esac
  echo "$v" >"$root/.version"
}

# The DPDK judge of the VM tests (issue 23): DPDK 25.11's own dpdk-testpmd with the PMDs that judge our models
# (net/hinic3, net/i40e, net/ixgbe; net/virtio, bus/pci, bus/vdev, mempool/ring beside them), run in the busybox
# guest as `lib/ld-linux-x86-64.so.2 --library-path lib bin/dpdk-testpmd -d pmds ...`. Never linked into the
# project. Debian's source package would be built here, but this machine's mirror answers 404 for every file of
# dpdk 25.11.x's source while it serves sid's binaries: so the judge is sid's dpdk-testpmd (package dpdk-dev) with
# exactly the shared objects it and the PMD plugins load (ldd in a sid root, then the root is deleted) and sid's
# dynamic loader. Cold: ~3 min (debootstrap ~110 s, ~100 library packages ~35 s, the copy a few seconds).
DPDK_JUDGE_ABI=26
DPDK_JUDGE_DIR=$CACHE/dpdk-judge-$DPDK_SRC_SERIES
DPDK_JUDGE_PMDS=(net_hinic3 net_i40e net_ixgbe net_virtio bus_pci bus_vdev mempool_ring)
dpdk_judge_ok() {
  [ -f "$DPDK_JUDGE_DIR/.complete" ] && [ -x "$DPDK_JUDGE_DIR/bin/dpdk-testpmd" ] &&
    [ -x "$DPDK_JUDGE_DIR/lib/ld-linux-x86-64.so.2" ]
}

# Copies the judge out of the sid root $1 into $2 (bin/, lib/ with every object ldd names, pmds/ of symlinks into
# lib/, so the EAL's plugin load opens the very files testpmd already links: the loader then maps each once).
dpdk_judge_copy() {
  local root=$1 out=$2 pmddir=usr/lib/x86_64-linux-gnu/dpdk/pmds-$DPDK_JUDGE_ABI.0 objs p f
  mkdir -p "$out/bin" "$out/lib" "$out/pmds"
  cp "$root/usr/bin/dpdk-testpmd" "$out/bin/"
  objs=$( (chroot "$root" ldd /usr/bin/dpdk-testpmd
    for p in "${DPDK_JUDGE_PMDS[@]}"; do chroot "$root" ldd "/$pmddir/librte_$p.so.$DPDK_JUDGE_ABI"; done) |
    awk '/not found/ { print "MISSING " $1 } $2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u)
  if grep -q MISSING <<<"$objs"; then
    say "the DPDK judge's objects are not all in the sid root: $(grep MISSING <<<"$objs" | tr '\n' ' ')"
    return 1
  fi
  for f in $objs; do
    cp -L "$root$f" "$out/lib/$(basename "$f")" || return 1
  done
  for p in "${DPDK_JUDGE_PMDS[@]}"; do
    f=librte_$p.so.$DPDK_JUDGE_ABI
    [ -f "$out/lib/$f" ] || cp -L "$root/$pmddir/$f" "$out/lib/$f" || return 1
    # The EAL's plugin directory scan takes only names ending in .so or .so.ABI_VERSION (26.0).
    ln -s "../lib/$f" "$out/pmds/$f.0"
  done
  cp -L "$root/lib64/ld-linux-x86-64.so.2" "$out/lib/"
  chmod 755 "$out/lib/ld-linux-x86-64.so.2"
  # Every object resolves with sid's loader and these libraries alone (nothing of the host's).
  for f in "$out/bin/dpdk-testpmd" "$out"/pmds/*; do
    if "$out/lib/ld-linux-x86-64.so.2" --library-path "$out/lib" --list "$f" | grep -q "not found"; then
      say "the DPDK judge does not resolve $f from $out/lib alone"
      return 1
    fi
  done
}

setup_dpdk_judge() {
  dpdk_judge_ok && return 0
  local root=$CACHE/dpdk-judge-root t0=$SECONDS v deps
  say "the DPDK $DPDK_SRC_SERIES judge for the VM guest: Debian's source of dpdk $DPDK_SRC_SERIES is not built here" \
    "(this mirror serves none of its files), so sid's binaries: a sid root by debootstrap into $root (~3 min)"
  rm -rf "$DPDK_JUDGE_DIR.tmp"
  sid_dpdk_root "$root" "dpdk,librte-net-hinic3-$DPDK_JUDGE_ABI" "$CACHE/dpdk-judge-build.log"
  v=$(cat "$root/.version")
  # dpdk-testpmd is in dpdk-dev; its libraries (not the -dev packages) are the Depends of that package.
  if ! (chroot "$root" sh -c "cd /tmp && apt-get download -qq dpdk-dev=$v" >/dev/null &&
    deps=$(dpkg-deb -f "$root"/tmp/dpdk-dev_*.deb Depends | tr ',' '\n' | sed 's/(.*//; s/|.*//; s/ //g' |
      grep -vxE 'libdpdk-dev|python3|') &&
    chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $deps \
      "librte-net-virtio$DPDK_JUDGE_ABI" "librte-mempool-ring$DPDK_JUDGE_ABI" >>"$CACHE/dpdk-judge-build.log" 2>&1 &&
    dpkg-deb -x "$root"/tmp/dpdk-dev_*.deb "$root/tmp/dev" && cp "$root/tmp/dev/usr/bin/dpdk-testpmd" "$root/usr/bin/" &&
    dpdk_judge_copy "$root" "$DPDK_JUDGE_DIR.tmp"); then
    say "could not assemble the DPDK judge from sid's dpdk $v (log: $CACHE/dpdk-judge-build.log; the sid root is left in $root)"
    exit 1
  fi
  echo "dpdk-testpmd of Debian sid's dpdk-dev $v (binary packages; the source was not served)" \
    >"$DPDK_JUDGE_DIR.tmp/VERSION"
  touch "$DPDK_JUDGE_DIR.tmp/.complete"
  rm -rf "$DPDK_JUDGE_DIR" && mv "$DPDK_JUDGE_DIR.tmp" "$DPDK_JUDGE_DIR" && rm -rf "$root"
  say "the DPDK judge (sid's $v, $(du -sh "$DPDK_JUDGE_DIR" | cut -f1)) in $DPDK_JUDGE_DIR, in $((SECONDS - t0)) s"
}

# DPDK 25.11 for the benchmarks' second reference column (issue 27), set up only by `scripts/setup.sh --bench`
# (bench/lib.sh's bench_setup asks for it; the test command does not need it). Debian's source of 25.11 is not served
# by this machine's mirror (every file 404s), so it is sid's binary build: a sid root by debootstrap holding dpdk,
# dpdk-dev (dpdk-testpmd, dpdk-test), libdpdk-dev (static libraries) and dpdk-doc (the example sources), with gcc
# and make to build l3fwd and l2fwd in it. Its programs run outside the root through its own loader and libraries
# (bench/lib.sh: dpdk25_env). Kept, not deleted: ~0.9 GB; cold ~1.5-3 min.
DPDK_BENCH_ROOT=$CACHE/dpdk-$DPDK_SRC_SERIES-root
dpdk_bench_root_ok() {
  [ -f "$DPDK_BENCH_ROOT/.complete" ] && [ -x "$DPDK_BENCH_ROOT/usr/bin/dpdk-testpmd" ] &&
    [ -x "$DPDK_BENCH_ROOT/usr/bin/dpdk-test" ] && [ -f "$DPDK_BENCH_ROOT/usr/share/dpdk/examples/l3fwd/main.c" ]
}

setup_dpdk_bench_root() {
  dpdk_bench_root_ok && return 0
  local root=$DPDK_BENCH_ROOT t0=$SECONDS v
  say "DPDK $DPDK_SRC_SERIES for the benchmarks: a sid root with its binaries, static libraries and examples," \
    "by debootstrap into $root (~2 min, ~0.9 GB)"
  sid_dpdk_root "$root" "dpdk,dpdk-dev,libdpdk-dev,dpdk-doc,gcc,make,pkgconf,libc6-dev" "$CACHE/dpdk-bench-root.log"
  v=$(cat "$root/.version")
  touch "$root/.complete"
  say "DPDK $v for the benchmarks in $root ($(du -sh "$root" | cut -f1)), in $((SECONDS - t0)) s"
}

# 2 MiB hugepages for the EAL's default (tests that need more reserve their own; --no-huge runs without).
setup_hugepages() {
  local nr=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
  [ -w $nr ] || return 0
  if [ "$(cat $nr)" -lt 256 ]; then echo 256 >$nr || true; fi
}
