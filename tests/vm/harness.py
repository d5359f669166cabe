#!/usr/bin/env python3
"""VM test harness: real VFIO with an emulated IOMMU and emulated NICs inside a QEMU guest.

Steps (the run's files under target/vm-cache/ of the repository, or $VMTEST_CACHE):
  1. host parts, from scripts/setup.sh (run once when something is missing; it waits for a set-up already
     running): qemu-system-x86 from <codename>-backports, the QEMU with the vfio-user client, and the guest's
     kernel and busybox-static unpacked under $PKTIO_CACHE/vm (default /var/cache/pktio/vm);
  2. the guest binaries: `cargo build --release --target x86_64-unknown-linux-musl -p vmtest ...`;
  3. a busybox initramfs: /init (tests/vm/init.sh), the 5 VFIO modules (decompressed), the binaries,
     tests/vm/guest/*.sh;
  4. a private, anonymous network namespace (gone when this process exits, whatever happens) with one TAP
     per NIC, and the host peer (raw AF_PACKET sockets on the TAPs, driven by the guest's console markers);
  5. qemu-system-x86_64 -machine q35 -device intel-iommu,... with virtio-net-pci and igb NICs, TCG unless KVM
     can really boot a guest; pass/fail read from the serial console, with a timeout.

Guest markers (console lines):
  VMTEST START t / VMTEST PASS t / VMTEST FAIL t ... / VMTEST DONE      (from /init)
  @@vmtest inject NIC COUNT TAG [SIZE]     host sends COUNT frames tagged TAG to the guest on NIC's TAP
  @@vmtest expect NIC COUNT TAG [SIZE [FROM]]  host checks it received exactly COUNT frames tagged TAG from NIC
                                           (with SIZE: each exactly SIZE bytes and byte for byte the frame the guest
                                           built, dst = the peer, src = the NIC's MAC; with FROM: the frame the host
                                           injected on NIC FROM, forwarded unchanged)
  @@vmtest inject-ip NIC COUNT TAG DST_IP SIZE     host sends COUNT IPv4 frames (protocol 253, the tagged payload)
  @@vmtest expect-routed NIC COUNT TAG DST_IP SIZE DST_MAC   host checks COUNT of them came out of NIC routed
  @@vmtest model-mark MODEL                host notes the model's counters: the next model-stats counts from there
  @@vmtest model-stats MODEL RX TX [polled]  host checks the model's own counters and that it recorded no fault
  @@vmtest model-fault MODEL KIND LO HI    host waits for the model's fault KIND (e.g. Dma) at an IOVA in [LO, HI)
  @@vmtest model-cable MODEL 0|1          host pulls (0) or plugs in (1) the model's cable, waits for its link
Frame format (both ways): dst, src, ethertype 0x88b5, b"VMT1", tag (16 bytes, NUL padded), seq (u32 BE), then
padding byte i = (7 i + 13 seq) mod 256 (vmtest/src/frames.rs: pad_byte).

Exit status: 0 all tests passed, 1 a test failed, 77 skipped (qemu cannot be installed / not root).
"""

import argparse
import ctypes
import fcntl
import glob
import json
import lzma
import os
import re
import select
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostchecks import (IP_PROTO_TEST, MODEL_STATS, ip_frame, model_cable, model_fault,  # noqa: E402
                        model_mark, model_stats)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MUSL = "x86_64-unknown-linux-musl"
GNU = "x86_64-unknown-linux-gnu"
SKIP = 77
ETHERTYPE = 0x88B5
PEER_MAC = bytes.fromhex("020000000001")
MODULES = [
    "virt/lib/irqbypass",
    "drivers/vfio/vfio",
    "drivers/vfio/vfio_iommu_type1",
    "drivers/vfio/vfio_virqfd",  # 6.1 kernels only
    "drivers/vfio/pci/vfio-pci-core",
    "drivers/vfio/pci/vfio-pci",
]
# name -> (qemu device, PCI slot, MAC). The guest sees them at 0000:00:SLOT.0. A NIC with mq=on gets a
# multi-queue TAP with MQ_QUEUES queues.
MQ_QUEUES = 2
NICS = {
    "vnet0": ("virtio-net-pci,disable-legacy=on,iommu_platform=on,romfile=", 3, "52:54:00:00:00:10"),
    "vnet1": ("virtio-net-pci,disable-legacy=on,iommu_platform=on,romfile=,mq=on,vectors=6", 4, "52:54:00:00:00:11"),
    "igb0": ("igb,romfile=", 5, "52:54:00:00:00:20"),
}
# Vendor-driver runs (--vendor): nicsim models served over vfio-user by nicsim-vfio-user to a guest whose own
# kernel driver probes them. name -> (nicsim-vfio-user --model, PCI slot, MAC in the model's NVM, host address on
# the model's TAP; the guest takes .2 of the same /24).
VENDOR = {
    "x540": ("x540", 6, "02:00:00:54:05:40", "10.77.1.1"),
    "82599": ("82599", 7, "02:00:00:82:59:40", "10.77.2.1"),
    "x710": ("x710", 8, "02:00:00:71:00:40", "10.77.3.1"),
    "sp670": ("sp670", 9, "02:19:e5:67:00:00", "10.77.4.1"),
}
# The PCI vendor:device each model presents (the guest binds these to vfio-pci in a --models run).
MODEL_IDS = {"x540": "8086:1528", "82599": "8086:10fb", "x710": "8086:1572", "sp670": "19e5:0222"}
# The vendor drivers and what they need, copied into the initramfs' /lib/modules (the guest scripts load them).
VENDOR_MODULES = [
    "drivers/dca/dca",
    "drivers/net/mdio",
    "drivers/net/phy/libphy",
    "drivers/net/phy/mdio_devres",
    "net/xfrm/xfrm_algo",
    "drivers/net/ethernet/intel/ixgbe/ixgbe",
    "drivers/net/ethernet/intel/libie/libie",
    "drivers/net/ethernet/intel/i40e/i40e",
]
EXCERPT_LINES = 80  # console lines of a failed test repeated in the summary
DEFAULT_TESTS = "vfio-probe,virtio-exchange,virtio-fwd,virtio-mq,virtio-unmapped,testpmd-fwd,igb-exchange,testpmd-igb,testpmd-noargs"


class Skip(Exception):
    pass


def log(msg):
    print(f"[vm] {msg}", flush=True)


def run(cmd, check=True, **kw):
    log("$ " + " ".join(cmd))
    return subprocess.run(cmd, check=check, **kw)


def out(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


# ---------------------------------------------------------------------------------------------- packages
# Nothing is installed or downloaded here: scripts/setup.sh (the one prepare step, under its machine-wide lock) installs
# QEMU and its firmware, downloads the guest kernel and busybox into $PKTIO_CACHE/vm and builds the vfio-user QEMU.
# When something is missing the harness runs that set-up once (waiting for one already running) and looks again.

PKTIO_CACHE = os.environ.get("PKTIO_CACHE", "/var/cache/pktio")
GUEST_DOWNLOADS = os.path.join(PKTIO_CACHE, "vm")
FIRMWARE = "/usr/share/seabios/bios-256k.bin"
# The DPDK judge (scripts/setup.sh: DPDK 25.11's dpdk-testpmd, its libraries, PMD plugins and loader), put under
# /dpdk of the initramfs when a test named dpdk-* is asked for.
DPDK_JUDGE = os.path.join(PKTIO_CACHE, "dpdk-judge-25.11")


def needs_dpdk(tests):
    return any(t.startswith("dpdk-") for t in tests.split(","))


def run_setup(what):
    """Runs scripts/setup.sh for `what` is missing; a Skip with its last words when it cannot provide it."""
    if os.geteuid() != 0:
        raise Skip(f"{what} is missing and installing it needs root: run bash scripts/setup.sh as root")
    log(f"{what} is missing: running scripts/setup.sh")
    r = subprocess.run(["bash", os.path.join(REPO, "scripts", "setup.sh")], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    for line in r.stdout.splitlines()[-20:]:
        log(f"setup| {line}")
    if r.returncode != 0:
        raise Skip(f"{what} is missing and scripts/setup.sh failed (exit {r.returncode}; its last lines are above)")


def qemu_binary():
    return shutil.which("qemu-system-x86_64")


def qemu_has_igb(qemu):
    try:
        r = subprocess.run([qemu, "-device", "help"], capture_output=True, text=True, timeout=30)
        return '"igb"' in r.stdout
    except (OSError, subprocess.SubprocessError):
        return False


def given_qemu():
    """The QEMU named by $VMTEST_QEMU (None when unset): used as is, never installed; unusable is a skip with the
    reason (a failure under VM_TESTS_REQUIRED=1)."""
    q = os.environ.get("VMTEST_QEMU")
    if not q:
        return None
    if not (os.path.isfile(q) and os.access(q, os.X_OK)):
        raise Skip(f"VMTEST_QEMU={q} is not an executable file (unset it to use the qemu-system-x86 scripts/setup.sh "
                   "installs, or point it at a qemu-system-x86_64 >= 8 with igb)")
    if not qemu_has_igb(q):
        raise Skip(f"VMTEST_QEMU={q} has no igb device (QEMU >= 8 needed: bash scripts/setup.sh installs one)")
    return q


def have_host_parts(vendor, system_qemu, dpdk=False):
    """What the boot needs from the set-up, missing ones named (empty when all is there)."""
    missing = []
    if dpdk and not os.path.exists(os.path.join(DPDK_JUDGE, ".complete")):
        missing.append(f"the DPDK judge ({DPDK_JUDGE})")
    if system_qemu:
        q = qemu_binary()
        if not (q and qemu_has_igb(q)):
            missing.append("qemu-system-x86_64 with igb (QEMU >= 8)")
    if not os.path.exists(FIRMWARE):
        missing.append(f"QEMU's firmware ({FIRMWARE})")
    if not glob.glob(os.path.join(GUEST_DOWNLOADS, "kernel", "boot", "vmlinuz-*")):
        missing.append(f"the guest kernel ({GUEST_DOWNLOADS}/kernel)")
    if not os.access(os.path.join(GUEST_DOWNLOADS, "busybox", "bin", "busybox"), os.X_OK):
        missing.append(f"the guest busybox ({GUEST_DOWNLOADS}/busybox)")
    if vendor and subprocess.run(["bash", os.path.join(HERE, "qemu-vfio-user.sh"), "--cached"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        missing.append("the QEMU with the vfio-user client (tests/vm/qemu-vfio-user.sh)")
    return missing


def ensure_host_parts(vendor, system_qemu, dpdk=False):
    """(kernel dir, busybox) once everything the boot needs is there, running the set-up when it is not."""
    missing = have_host_parts(vendor, system_qemu, dpdk)
    if missing:
        run_setup(", ".join(missing))
        missing = have_host_parts(vendor, system_qemu, dpdk)
        if missing:
            raise Skip(f"still missing after scripts/setup.sh: {', '.join(missing)}")
    return os.path.join(GUEST_DOWNLOADS, "kernel"), os.path.join(GUEST_DOWNLOADS, "busybox", "bin", "busybox")


# ---------------------------------------------------------------------------------------------- build


def guest_target(choice="auto"):
    """(target triple, extra RUSTFLAGS): musl when rustup has its std (scripts/setup.sh adds it), else glibc with
    +crt-static (also a static binary)."""
    if choice == "gnu-static":
        return GNU, "-C target-feature=+crt-static"
    if choice == "musl":
        return MUSL, ""
    try:
        installed = out(["rustup", "target", "list", "--installed"]).split()
    except (OSError, subprocess.CalledProcessError):
        return MUSL, ""  # no rustup: hope the toolchain has the target
    if MUSL in installed:
        return MUSL, ""
    log(f"rustup has no {MUSL} (bash scripts/setup.sh adds it): building static glibc binaries (+crt-static) instead")
    return GNU, "-C target-feature=+crt-static"


def build_guest(target_dir, packages, offline, choice="auto"):
    """Builds each package as static binaries for the guest; the first is required, the others are optional (a
    failure is logged and their binaries are then missing from the guest, which fails only the tests that need
    them). Returns the directory of the binaries."""
    target, rustflags = guest_target(choice)
    env = dict(os.environ)
    # A leaner release profile than the workspace's (fat LTO, 1 codegen unit): faster builds, same code paths.
    env.update(CARGO_PROFILE_RELEASE_LTO="false", CARGO_PROFILE_RELEASE_CODEGEN_UNITS="16",
               CARGO_PROFILE_RELEASE_DEBUG="0", CARGO_PROFILE_RELEASE_STRIP="debuginfo",
               CARGO_PROFILE_RELEASE_INCREMENTAL="true")
    for k in ("RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET", "CARGO_BUILD_RUSTFLAGS"):
        env.pop(k, None)
    if rustflags:
        env["RUSTFLAGS"] = rustflags  # with --target, applied to the target's crates only
    cmd = [os.environ.get("CARGO", "cargo"), "build", "--release", "--target", target, "--target-dir", target_dir]
    if offline:
        cmd.append("--offline")
    for i, p in enumerate(packages):
        try:
            run(cmd + ["-p", p], cwd=REPO, env=env)
        except subprocess.CalledProcessError:
            if i == 0:
                raise
            log(f"WARNING: {p} did not build for {target}; its binaries will be missing in the guest")
    return os.path.join(target_dir, target, "release")


def cpio_newc(entries):
    """entries: list of (path, mode, data bytes or symlink target). Returns an uncompressed newc archive."""
    buf = bytearray()
    ino = 1

    def add(name, mode, data, rdev=(0, 0)):
        nonlocal ino
        nb = name.encode() + b"\0"
        fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(nb), 0)
        hdr = "070701" + "".join(f"{v:08x}" for v in fields)
        buf.extend(hdr.encode() + nb)
        buf.extend(b"\0" * ((4 - len(buf) % 4) % 4))
        buf.extend(data)
        buf.extend(b"\0" * ((4 - len(buf) % 4) % 4))
        ino += 1

    for e in entries:
        add(*e)
    add("TRAILER!!!", 0, b"")
    return bytes(buf)


def tree_entries(top, prefix):
    """cpio entries of the directory tree `top` under `prefix`: directories, files (modes kept), symlinks."""
    entries = [(prefix, 0o040755, b"")]
    for root, dirs, files in os.walk(top):
        rel = os.path.relpath(root, top)
        base = prefix if rel == "." else f"{prefix}/{rel}"
        for d in sorted(dirs):
            entries.append((f"{base}/{d}", 0o040755, b""))
        for f in sorted(files):
            p = os.path.join(root, f)
            if os.path.islink(p):
                entries.append((f"{base}/{f}", 0o120777, os.readlink(p).encode()))
            else:
                with open(p, "rb") as fh:
                    entries.append((f"{base}/{f}", 0o100000 | (os.stat(p).st_mode & 0o777), fh.read()))
    return entries


def build_initramfs(cache, kdir, busybox, bindir, binaries, dpdk=False):
    kver = os.path.basename(glob.glob(os.path.join(kdir, "lib", "modules", "*"))[0])
    mroot = os.path.join(kdir, "lib", "modules", kver, "kernel")
    d, f, x, ln = 0o040755, 0o100644, 0o100755, 0o120777
    entries = [(p, d, b"") for p in ("bin", "sbin", "dev", "proc", "sys", "tmp", "lib", "lib/modules", "tests")]
    entries.append(("dev/console", 0o020600, b"", (5, 1)))
    with open(busybox, "rb") as fh:
        entries.append(("bin/busybox", x, fh.read()))
    entries.append(("bin/sh", ln, b"busybox"))
    with open(os.path.join(HERE, "init.sh"), "rb") as fh:
        entries.append(("init", x, fh.read()))
    for m in MODULES + VENDOR_MODULES:
        for ext, opener in ((".ko.xz", lzma.open), (".ko", open)):
            p = os.path.join(mroot, m + ext)
            if os.path.exists(p):
                with opener(p, "rb") as fh:
                    entries.append((f"lib/modules/{os.path.basename(m)}.ko", f, fh.read()))
                break
    for b in binaries:
        p = os.path.join(bindir, b)
        if os.path.exists(p):
            with open(p, "rb") as fh:
                entries.append((f"bin/{b}", x, fh.read()))
        else:
            log(f"note: guest binary {b} not built, not in the initramfs")
    if dpdk:
        entries += tree_entries(DPDK_JUDGE, "dpdk")
    for s in sorted(glob.glob(os.path.join(HERE, "guest", "*.sh"))):
        with open(s, "rb") as fh:
            entries.append((f"tests/{os.path.basename(s)}", x, fh.read()))
    path = os.path.join(cache, "initramfs.cpio")
    with open(path + ".tmp", "wb") as fh:
        fh.write(cpio_newc(entries))
    os.replace(path + ".tmp", path)
    vmlinuz = glob.glob(os.path.join(kdir, "boot", "vmlinuz-*"))[0]
    log(f"initramfs {path}: {os.path.getsize(path) // 1024} KiB, kernel {kver}")
    return vmlinuz, path


# ---------------------------------------------------------------------------------------------- netns, TAPs

CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
SOL_PACKET = 263
PACKET_STATISTICS = 6
libc = ctypes.CDLL(None, use_errno=True)


def enter_private_netns():
    """Moves this process into a new, anonymous network namespace. It and its TAPs vanish with the last process
    in it (this harness and its QEMU child, which dies with the harness): nothing to clean up, even on SIGKILL."""
    if libc.unshare(CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise Skip(f"unshare(CLONE_NEWNET) failed: {os.strerror(e)} (the VM test needs root)")
    for p in ("/proc/sys/net/ipv6/conf/all/disable_ipv6", "/proc/sys/net/ipv6/conf/default/disable_ipv6"):
        try:
            with open(p, "w") as f:
                f.write("1")
        except OSError:
            pass
    run(["ip", "link", "set", "lo", "up"])


def make_tap(name, multi_queue=False):
    run(["ip", "tuntap", "add", "dev", name, "mode", "tap"] + (["multi_queue"] if multi_queue else []))
    run(["ip", "link", "set", name, "up"])


# Columns of /proc/net/dev after "name:".
NETDEV_COLUMNS = ["rx_bytes", "rx_packets", "rx_errors", "rx_dropped", "rx_fifo", "rx_frame", "rx_compressed",
                  "rx_multicast", "tx_bytes", "tx_packets", "tx_errors", "tx_dropped"]


def tap_stat(name, stat):
    """A counter of interface `name` in this process's network namespace. From /proc/net/dev, which follows the
    reader's namespace (/sys/class/net shows the namespace sysfs was mounted in: the host's)."""
    try:
        with open("/proc/net/dev") as f:
            for line in f:
                ifname, sep, rest = line.partition(":")
                if sep and ifname.strip() == name:
                    return int(rest.split()[NETDEV_COLUMNS.index(stat)])
    except (OSError, ValueError, IndexError):
        pass
    return -1


def nic_mac(nic):
    """The guest-side MAC of an emulated NIC or of a model (the one in its NVM), as bytes."""
    mac = NICS[nic][2] if nic in NICS else VENDOR[nic][2]
    return bytes.fromhex(mac.replace(":", ""))


def frame(dst, tag, seq, size=60, src=PEER_MAC):
    t = tag.encode()[:16].ljust(16, b"\0")
    body = dst + src + struct.pack("!H", ETHERTYPE) + b"VMT1" + t + struct.pack("!I", seq)
    return body + bytes((7 * i + 13 * seq) & 0xFF for i in range(len(body), max(size, len(body))))


def parse_frame(data):
    if (len(data) >= 14 + 20 + 24 and struct.unpack("!H", data[12:14])[0] == 0x0800 and data[23] == IP_PROTO_TEST
            and data[34:38] == b"VMT1"):
        return data[38:54].rstrip(b"\0").decode(errors="replace"), struct.unpack("!I", data[54:58])[0]
    if len(data) < 14 + 24 or struct.unpack("!H", data[12:14])[0] != ETHERTYPE or data[14:18] != b"VMT1":
        return None
    return data[18:34].rstrip(b"\0").decode(errors="replace"), struct.unpack("!I", data[34:38])[0]


class Peer:
    """The host side of every NIC: one raw socket per TAP; records the guest's tagged frames; injects frames.

    No fixed sleeps: `expect` waits for the frames themselves, and for "nothing (more) arrived" it waits until the
    receiver thread has handled every frame the TAP got from QEMU (its rx_packets counter), so a late frame is seen
    whatever the host's load."""

    EXPECT_TIMEOUT = 20.0  # seconds for frames the guest already handed to its NIC to reach the TAP
    DRAIN_TIMEOUT = 10.0  # seconds for the receiver thread to catch up with the TAP's counter

    def __init__(self, nics):
        self.nics = nics
        self.socks = {}
        self.rx = {n: {} for n in nics}  # nic -> tag -> list of seq
        self.data = {n: {} for n in nics}  # nic -> tag -> list of frames (bytes)
        self.other = {n: 0 for n in nics}
        self.seen = {n: 0 for n in nics}  # frames from the guest the receiver handled (tagged or not)
        self.drops = {n: 0 for n in nics}  # frames the socket dropped (PACKET_STATISTICS tp_drops)
        self.lock = threading.Condition()
        self.stop = False
        for n in nics:
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            except OSError:
                pass
            s.bind((f"tap-{n}", 0))
            self.socks[n] = s
        self.thread = threading.Thread(target=self._recv, daemon=True)
        self.thread.start()

    def _recv(self):
        fds = {s.fileno(): n for n, s in self.socks.items()}
        while not self.stop:
            r, _, _ = select.select(list(self.socks.values()), [], [], 0.1)
            for s in r:
                data, addr = s.recvfrom(65536)
                if addr[2] == socket.PACKET_OUTGOING:
                    continue
                n = fds[s.fileno()]
                p = parse_frame(data)
                with self.lock:
                    if p:
                        self.rx[n].setdefault(p[0], []).append(p[1])
                        self.data[n].setdefault(p[0], []).append(data)
                    else:
                        self.other[n] += 1
                    self.seen[n] += 1
                    self.lock.notify_all()

    def _socket_drops(self, nic):
        """Adds the socket's new drops (PACKET_STATISTICS resets on read) to self.drops[nic]."""
        try:
            st = self.socks[nic].getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
            self.drops[nic] += struct.unpack("II", st)[1]
        except OSError:
            pass
        return self.drops[nic]

    def drained(self, nic):
        """Whether the receiver has handled (or the socket dropped) every frame QEMU wrote to the TAP so far."""
        got = tap_stat(f"tap-{nic}", "rx_packets")
        return got >= 0 and self.seen[nic] + self._socket_drops(nic) >= got

    def counters(self, nic):
        """What the peer saw on `nic`, for failure messages."""
        with self.lock:
            tags = {t: len(v) for t, v in self.rx[nic].items()}
            other, seen = self.other[nic], self.seen[nic]
        tap = f"tap-{nic}"
        return (f"peer on {nic}: {seen} frames from the guest (tags {tags}, {other} untagged, {self.drops[nic]} "
                f"dropped by the socket); {tap} rx_packets {tap_stat(tap, 'rx_packets')} rx_dropped "
                f"{tap_stat(tap, 'rx_dropped')} tx_packets {tap_stat(tap, 'tx_packets')} tx_dropped "
                f"{tap_stat(tap, 'tx_dropped')}")

    def inject(self, nic, count, tag, size=60):
        dst = nic_mac(nic)
        dropped0 = tap_stat(f"tap-{nic}", "tx_dropped")
        s = self.socks[nic]
        for i in range(count):
            s.send(frame(dst, tag, i, size))
            if i % 32 == 31:
                time.sleep(0.002)  # pacing (the TAP's queue holds 1000 frames), not a wait for a condition
        dropped = tap_stat(f"tap-{nic}", "tx_dropped") - dropped0
        return f"injected {count} x {size} B tagged {tag} on {nic}" + (f" ({dropped} dropped by the TAP)" if dropped else "")

    def inject_ip(self, nic, count, tag, dst_ip, size=64):
        s = self.socks[nic]
        for i in range(count):
            s.send(ip_frame(nic_mac(nic), PEER_MAC, dst_ip, tag, i, size))
            if i % 32 == 31:
                time.sleep(0.002)  # pacing, as in inject
        return f"injected {count} x {size} B IPv4 to {dst_ip} tagged {tag} on {nic}"

    def expect_routed(self, nic, count, tag, dst_ip, size, dst_mac):
        """`count` frames of `inject_ip(..., tag, dst_ip, size)` came out of `nic` routed: dst MAC `dst_mac`,
        src MAC the NIC's, TTL one less, the header checksum updated, the rest byte for byte."""
        ok, msg = self.expect(nic, count, tag)
        if not ok:
            return ok, msg
        with self.lock:
            got = list(zip(self.rx[nic].get(tag, []), self.data[nic].get(tag, [])))
        bad = []
        for seq, data in got:
            want = ip_frame(dst_mac, nic_mac(nic), dst_ip, tag, seq, size, ttl=63)
            if data != want:
                at = next((i for i, (a, b) in enumerate(zip(data, want)) if a != b), min(len(data), len(want)))
                bad.append(f"#{seq}: {len(data)} bytes ({len(want)} expected), first difference at byte {at}"
                           + (f" (TTL {data[22]})" if len(data) > 22 else ""))
        return not bad, msg + ", routed (TTL 64 -> 63, MACs rewritten, checksum updated) byte for byte: " + (
            "identical" if not bad else "; ".join(bad[:4]))

    def expect(self, nic, count, tag, wait=None, size=None, origin=None):
        """Checks that exactly `count` frames tagged `tag` came from the guest on `nic` (the guest asks once it
        handed them to its NIC): waits until `count` arrived (at most `wait` s) and until the receiver caught up
        with the TAP, so a frame too many (or one that must not come, count 0) is seen too. With `size`, each is
        compared byte for byte with the frame the guest built (dst = the peer, src = NIC's MAC) or, with
        `origin`, with the frame the peer injected on that NIC (forwarded unchanged: dst = origin's MAC)."""
        wait = self.EXPECT_TIMEOUT if wait is None else wait
        t0 = time.time()
        deadline = t0 + wait
        with self.lock:
            while len(self.rx[nic].get(tag, [])) < count and time.time() < deadline:
                self.lock.wait(0.05)
        drain_deadline = time.time() + self.DRAIN_TIMEOUT
        while True:
            with self.lock:
                if self.drained(nic) or time.time() > drain_deadline:
                    break
                self.lock.wait(0.02)
        drained = self.drained(nic)
        with self.lock:
            seqs = list(self.rx[nic].get(tag, []))
            frames = list(self.data[nic].get(tag, []))
        ok = len(seqs) == count and sorted(seqs) == list(range(count))
        msg = f"{nic}: {len(seqs)} frames tagged {tag} received, {count} expected" + (
            "" if ok or len(seqs) != count else f" (seqs {sorted(seqs)[:8]}...)")
        if ok and size is not None:
            bad = []
            for seq, got in zip(seqs, frames):
                if origin is None:
                    want = frame(PEER_MAC, tag, seq, size, src=nic_mac(nic))
                else:
                    want = frame(nic_mac(origin), tag, seq, size)
                if got != want:
                    at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
                    bad.append(f"#{seq}: {len(got)} bytes ({len(want)} expected), first difference at byte {at}")
            ok = not bad
            msg += f", {size} bytes each, byte for byte: " + ("identical" if ok else "; ".join(bad[:4]))
        if not drained:
            msg += f" (the receiver did not catch up with tap-{nic} within {self.DRAIN_TIMEOUT:.0f} s)"
        if not ok:
            msg += (f" [after {time.time() - t0:.2f} s (timeout {wait:.0f} s), "
                    f"{'receiver caught up' if drained else 'receiver NOT caught up'}; {self.counters(nic)}]")
        return ok, msg

    def close(self):
        self.stop = True
        self.thread.join(1)


# ---------------------------------------------------------------------------------------------- QEMU


def kvm_usable():
    """(bool, reason). /dev/kvm may exist and still be unable to boot a stock guest (e.g. the PVM backend)."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False, "/dev/kvm missing or not accessible"
    if os.path.exists("/sys/module/kvm_pvm"):
        return False, "/dev/kvm is kvm_pvm (no VMX/SVM): it cannot boot a stock kernel"
    with open("/proc/cpuinfo") as f:
        flags = f.read()
    if not re.search(r"\b(vmx|svm)\b", flags):
        return False, "no vmx/svm CPU flag"
    if not (os.path.exists("/sys/module/kvm_intel") or os.path.exists("/sys/module/kvm_amd")):
        return False, "neither kvm_intel nor kvm_amd is loaded"
    return True, "hardware KVM"


# TCG's guest clock: by default the host's wall clock, so on a loaded host the guest's deadlines (the tests' 10-30 s
# waits, /init's per-test timeout) run out while QEMU is not even scheduled. With -icount the guest clock advances
# with the instructions the guest executed (4 ns each at shift=2; in real time while the guest idles, sleep=on, so
# waits for the host peer's frames still last what they say): the guest's deadlines then measure its own progress,
# however busy the host. "off" (--icount off) goes back to the wall clock.
ICOUNT = "shift=2,sleep=on"


def qemu_cmd(qemu, accel, vmlinuz, initrd, nics, tests, hugepages, test_timeout, icount=ICOUNT, vendor=None,
             viommu=True):
    """`vendor`: {name: socket path} of vfio-user model servers; the guest's RAM is then a memfd shared with them.
    Without `viommu` (the vendor-driver run) there is no vIOMMU: the guest's own drivers DMA to guest-physical
    addresses, which the servers map once. With it (a --models run) the models sit behind intel-iommu like the
    emulated NICs, the guest binds them to vfio-pci (vt.vfio_ids) and QEMU sends each IOVA range the guest maps
    as a DMA map message (IOVA -> offset in the memfd)."""
    vendor = vendor or {}
    machine = "q35" + (",memory-backend=ram" if vendor else "")
    if accel == "kvm":
        cmd = [qemu, "-accel", "kvm", "-cpu", "host", "-machine", machine + ",kernel-irqchip=split"]
    else:
        cmd = [qemu, "-accel", "tcg", "-cpu", "max", "-machine", machine]
        if icount != "off":
            cmd += ["-icount", icount]
    cmd += ["-smp", "1", "-m", "256M", "-nographic", "-no-reboot", "-nic", "none", "-vga", "none"]
    # The vIOMMU first: a PCI device finds its DMA address space when it is created. caching-mode=on makes the
    # guest report every mapping it makes, which QEMU needs to pass them on (to vfio-user servers here).
    if viommu:
        cmd += ["-device", "intel-iommu,intremap=on,caching-mode=on"]
    if vendor:
        cmd += ["-object", "memory-backend-memfd,id=ram,size=256M,share=on"]
        for name, sock in vendor.items():
            slot = VENDOR[name][1]
            dev = {"driver": "vfio-user-pci", "socket": {"type": "unix", "path": sock}, "addr": f"{slot:#x}"}
            cmd += ["-device", json.dumps(dev)]
    for n in nics:
        dev, slot, mac = NICS[n]
        queues = f",queues={MQ_QUEUES}" if "mq=on" in dev else ""
        cmd += ["-netdev", f"tap,id={n},ifname=tap-{n},script=no,downscript=no{queues}",
                "-device", f"{dev},netdev={n},mac={mac},addr={slot:#x}"]
    # no_timer_check: on a loaded host the TCG guest's early check that the timer interrupt arrives through the
    # (interrupt-remapped) IO-APIC can time out, and the kernel then panics ("timer doesn't work through
    # Interrupt-remapped IO-APIC") instead of booting.
    append = (f"console=ttyS0 panic=-1 no_timer_check loglevel=4 intel_iommu=on vt.tests={tests} "
              f"vt.hugepages={hugepages} "
              f"vt.timeout={test_timeout} vt.nics={','.join(nics)}")
    if vendor and viommu:
        append += " vt.vfio_ids=" + ",".join(MODEL_IDS[n] for n in vendor)
    cmd += ["-kernel", vmlinuz, "-initrd", initrd, "-append", append]
    return cmd


def set_pdeathsig():
    libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)


class ConsoleLog:
    """The console (and QEMU's own stderr, read apart so its messages never split a guest line): echoed, written
    to last-console.log, and kept per test for the failure excerpts."""

    def __init__(self, logf):
        self.logf = logf
        self.mutex = threading.Lock()

    def line(self, text, prefix="  | ", res=None):
        with self.mutex:
            self.logf.write(("" if prefix == "  | " else prefix) + text + "\n")
            sys.stdout.write(f"{prefix}{text}\n")
            sys.stdout.flush()
            if res is not None:
                res["lines"].append(text)


def new_result():
    return {"guest": None, "host": [], "lines": [], "t0": time.time(), "secs": None}


WALL_FACTOR = 10  # the wall-clock backstop of boot()'s CPU-time limits


def cpu_seconds(pid):
    """CPU time (user + system, all threads) process `pid` has used so far; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def boot(cmd, peer, timeout, results, logf, boot_timeout=None):
    """Runs QEMU, echoes and logs its console, serves the guest's markers. Returns 'done', 'timeout', 'noboot'
    (no /init within boot_timeout), 'noinit' (QEMU ended before /init: a kernel panic, say) or 'exited'.

    `timeout` counts QEMU's own CPU time, not the wall clock: a host busy with other work slows QEMU down but does
    not use up the guest's allowance (a fixed wall-clock limit killed healthy guests on a loaded host). A wall-clock
    limit of WALL_FACTOR times that remains, against a QEMU that hangs without using CPU. `boot_timeout` (KVM's
    "does it boot at all") stays wall-clock."""
    log("$ " + " ".join(cmd))
    t0 = time.time()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=set_pdeathsig)
    console = ConsoleLog(logf)
    state = {"current": None, "cpu": 0.0, "timed_out": False}

    def qemu_stderr():
        for raw in iter(p.stderr.readline, b""):
            cur = state["current"]
            console.line(raw.decode(errors="replace").rstrip(), "  qemu-stderr| ", results.get(cur) if cur else None)

    err_thread = threading.Thread(target=qemu_stderr, daemon=True)
    err_thread.start()
    booted = False
    done = False
    buf = b""
    status = "timeout"
    try:
        while True:
            now = time.time()
            used = state["cpu"] = max(state["cpu"], cpu_seconds(p.pid))
            if used > timeout or now - t0 > timeout * WALL_FACTOR:
                state["timed_out"] = True
                break
            if boot_timeout and not booted and now - t0 > boot_timeout:
                status = "noboot"
                break
            r, _, _ = select.select([p.stdout], [], [], 0.2)
            if not r:
                if p.poll() is not None:
                    break
                continue
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                raw, buf = buf.split(b"\n", 1)
                line = raw.decode(errors="replace").rstrip("\r")
                words = line.split()
                if line.startswith("VMTEST START") and len(words) > 2:
                    state["current"] = words[2]
                    results[words[2]] = new_result()
                current = state["current"]
                console.line(line, res=results.get(current) if current else None)
                if "Kernel panic" in line:
                    results.setdefault("_panic", line.strip())
                if line.startswith("VMTEST BOOTED"):
                    booted = True
                    log(f"guest /init reached after {time.time() - t0:.1f} s")
                elif line.startswith(("VMTEST PASS", "VMTEST FAIL")) and len(words) > 2:
                    res = results.setdefault(words[2], new_result())
                    res["guest"] = line.startswith("VMTEST PASS")
                    res["secs"] = time.time() - res["t0"]
                elif line.startswith("VMTEST DONE"):
                    done = True
                elif "@@vmtest " in line and current:
                    serve(line[line.index("@@vmtest ") :].split()[1:], peer, results[current])
    finally:
        if p.poll() is None:
            try:
                p.wait(5 if done else 0.1)
            except subprocess.TimeoutExpired:
                pass
        if p.poll() is None:
            p.kill()
            p.wait()
        err_thread.join(2)
    wall = time.time() - t0
    log(f"qemu ran {wall:.1f} s ({state['cpu']:.1f} s of CPU), exit {p.returncode}")
    if done:
        return "done"
    if status == "timeout" and not state["timed_out"]:
        return "exited" if booted else "noinit"
    return status


def serve(args, peer, res):
    try:
        if args[0] in ("model-stats", "model-fault", "model-mark", "model-cable"):
            if args[0] == "model-mark":
                ok, msg = model_mark(args[1])
            elif args[0] == "model-cable":
                ok, msg = model_cable(args[1], args[2] == "1")
            elif args[0] == "model-stats":
                ok, msg = model_stats(args[1], int(args[2]), int(args[3]), polled=args[4:5] == ["polled"])
            else:
                ok, msg = model_fault(args[1], args[2], int(args[3], 0), int(args[4], 0))
            res["host"].append((ok, msg))
            res["lines"].append(f"HOST {'PASS' if ok else 'FAIL'} {msg}")
            log(f"HOST {'PASS' if ok else 'FAIL'} {msg}")
            return
        cmd, nic, count, tag = args[0], args[1], int(args[2]), args[3]
        if nic not in peer.socks:
            raise ValueError(f"unknown NIC {nic}")
        if cmd == "inject":
            size = int(args[4]) if len(args) > 4 else 60
            msg = "host: " + peer.inject(nic, count, tag, size)
            res["lines"].append(msg)
            log(msg)
        elif cmd == "inject-ip":
            msg = "host: " + peer.inject_ip(nic, count, tag, args[4], int(args[5]))
            res["lines"].append(msg)
            log(msg)
        elif cmd == "expect-routed":
            ok, msg = peer.expect_routed(nic, count, tag, args[4], int(args[5]), bytes.fromhex(args[6].replace(":", "")))
            res["host"].append((ok, msg))
            res["lines"].append(f"HOST {'PASS' if ok else 'FAIL'} {msg}")
            log(f"HOST {'PASS' if ok else 'FAIL'} {msg}")
        elif cmd == "expect":
            size = int(args[4]) if len(args) > 4 else None
            origin = args[5] if len(args) > 5 else None
            if origin is not None and origin not in peer.socks:
                raise ValueError(f"unknown NIC {origin}")
            ok, msg = peer.expect(nic, count, tag, size=size, origin=origin)
            res["host"].append((ok, msg))
            res["lines"].append(f"HOST {'PASS' if ok else 'FAIL'} {msg}")
            log(f"HOST {'PASS' if ok else 'FAIL'} {msg}")
        else:
            raise ValueError(f"unknown command {cmd}")
    except (ValueError, IndexError, OSError) as e:
        res["host"].append((False, f"bad marker {args}: {e}"))
        log(f"HOST FAIL bad marker {args}: {e}")


# ---------------------------------------------------------------------------------------------- vendor drivers


def vfio_user_qemu():
    """A QEMU with the vfio-user client: $VMTEST_VFIO_USER_QEMU as is, else the build scripts/setup.sh cached
    (tests/vm/qemu-vfio-user.sh --cached)."""
    q = os.environ.get("VMTEST_VFIO_USER_QEMU")
    if not q:
        r = subprocess.run(["bash", os.path.join(HERE, "qemu-vfio-user.sh"), "--cached"], stdout=subprocess.PIPE,
                           text=True)
        if r.returncode != 0:
            raise Skip("no QEMU with the vfio-user client: bash scripts/setup.sh builds it (tests/vm/qemu-vfio-user.sh)")
        q = r.stdout.strip().splitlines()[-1]
        log(f"QEMU with vfio-user: {q}")
    try:
        help_out = subprocess.run([q, "-device", "help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise Skip(f"{q} does not run: {e}")
    if '"vfio-user-pci"' not in help_out:
        raise Skip(f"{q} has no vfio-user-pci device (QEMU >= 10.1 needed)")
    return q


def build_model_server(target_dir, offline):
    """Builds nicsim-vfio-user for the host (its own target dir, so it never waits on the outer cargo's lock)."""
    cmd = [os.environ.get("CARGO", "cargo"), "build", "-p", "vfio-user-model", "--bin", "nicsim-vfio-user",
           "--target-dir", target_dir]
    if offline:
        cmd.append("--offline")
    run(cmd, cwd=REPO)
    return os.path.join(target_dir, "debug", "nicsim-vfio-user")


def start_models(server, names, cache, address=True):
    """In the private namespace: per model a TAP (with the host's address when `address`: the vendor drivers'
    pings; a --models run's host peer sends raw frames and the TAP stays silent) and a nicsim-vfio-user serving
    the model on a socket, wired to that TAP. Returns ({name: socket}, [processes]); each server's stderr goes to
    CACHE/model-NAME.log (faults are printed there as they happen)."""
    socks, procs = {}, []
    for name in names:
        model, _slot, mac, host = VENDOR[name]
        tap = f"tap-{name}"
        make_tap(tap)
        if address:
            run(["ip", "addr", "add", f"{host}/24", "dev", tap])
        sock = os.path.join(cache, f"vfio-user-{name}.sock")
        stats = os.path.join(cache, f"model-{name}.stats")
        control = os.path.join(cache, f"model-{name}.control")
        for f in (sock, stats, control):
            if os.path.exists(f):
                os.unlink(f)
        MODEL_STATS[name] = stats
        logf = open(os.path.join(cache, f"model-{name}.log"), "w")
        procs.append(subprocess.Popen([server, "--model", model, "--socket", sock, "--tap", tap, "--mac", mac,
                                       "--stats", stats, "--control", control], stdin=subprocess.DEVNULL, stdout=logf,
                                      stderr=subprocess.STDOUT, preexec_fn=set_pdeathsig))
        deadline = time.time() + 30
        while not os.path.exists(sock):
            if procs[-1].poll() is not None or time.time() > deadline:
                raise RuntimeError(f"nicsim-vfio-user for {name} did not come up (see {logf.name})")
            time.sleep(0.05)
        socks[name] = sock
    return socks, procs


def stop_models(procs, names, cache):
    for p in procs:
        p.terminate()
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    for name in names:
        try:
            with open(os.path.join(cache, f"model-{name}.log")) as f:
                for line in f:
                    log(f"model-{name}| {line.rstrip()}")
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", default=DEFAULT_TESTS, help="comma-separated guest tests (default %(default)s)")
    ap.add_argument("--nics", default="vnet0,vnet1,igb0", help="NICs to give the guest, from " + ",".join(NICS))
    ap.add_argument("--packages", default="vmtest,testpmd-rs", help="workspace packages built for the guest (musl)")
    ap.add_argument("--binaries", default="vmtest,testpmd-rs", help="binaries copied into the guest's /bin")
    ap.add_argument("--accel", default="auto", choices=["auto", "kvm", "tcg"])
    ap.add_argument("--timeout", type=float, default=150, help="whole-boot timeout, seconds of QEMU's CPU time")
    ap.add_argument("--test-timeout", type=int, default=60, help="per-test timeout inside the guest, seconds")
    ap.add_argument("--icount", default=os.environ.get("VMTEST_ICOUNT", ICOUNT),
                    help="TCG's -icount (default %(default)s, or $VMTEST_ICOUNT): the guest clock follows the guest's "
                         "progress; 'off' for the host's wall clock")
    ap.add_argument("--hugepages", type=int, default=32)
    ap.add_argument("--cache", default=os.environ.get("VMTEST_CACHE", os.path.join(REPO, "target", "vm-cache")))
    ap.add_argument("--target-dir", default=None, help="cargo target dir for the guest build")
    ap.add_argument("--offline", action="store_true", help="cargo --offline for the guest build")
    ap.add_argument("--guest-target", default="auto", choices=["auto", "musl", "gnu-static"],
                    help="static guest binaries: musl, or glibc +crt-static (auto: musl if rustup has or can add it)")
    ap.add_argument("--prepare-only", action="store_true", help="install, build, make the initramfs; no boot")
    ap.add_argument("--vendor", default="", help="nicsim models served over vfio-user for the guest's own drivers, "
                    "from " + ",".join(VENDOR) + " (a QEMU with the vfio-user client, no vIOMMU)")
    ap.add_argument("--models", default="", help="nicsim models served over vfio-user behind the vIOMMU and bound to "
                    "vfio-pci in the guest, for the project's own drivers (guest NIC names for the host peer: the "
                    "model names), from " + ",".join(VENDOR))
    a = ap.parse_args()
    if a.vendor and a.models:
        ap.error("--vendor (the guest's own drivers, no vIOMMU) and --models (vfio-pci behind the vIOMMU) exclude "
                 "each other")
    vendor = [v for v in (a.vendor or a.models).split(",") if v]
    viommu = not a.vendor
    for v in vendor:
        if v not in VENDOR:
            ap.error(f"unknown model {v}")

    nics = [n for n in a.nics.split(",") if n]
    for n in nics:
        if n not in NICS:
            ap.error(f"unknown NIC {n}")
    target_dir = a.target_dir or os.path.join(
        os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target"), "vm-musl")
    os.makedirs(a.cache, exist_ok=True)
    t0 = time.time()
    try:
        if sys.platform != "linux" or os.uname().machine != "x86_64":
            raise Skip("the VM test needs an x86_64 Linux host")
        # Before anything else: a given QEMU that cannot work is known at once.
        qemu = None if vendor else given_qemu()
        if os.geteuid() != 0:
            raise Skip("the VM test needs root (network namespace, TAPs, VFIO in the guest): run it as root")
        dpdk = needs_dpdk(a.tests)
        kdir, busybox = ensure_host_parts(vendor, system_qemu=not vendor and qemu is None, dpdk=dpdk)
        qemu = vfio_user_qemu() if vendor else (qemu or qemu_binary())
        # One harness at a time per cache (cargo, the initramfs file).
        lockf = open(os.path.join(a.cache, ".lock"), "w")
        fcntl.flock(lockf, fcntl.LOCK_EX)
        packages = [p for p in a.packages.split(",") if p]
        bindir = build_guest(target_dir, packages, a.offline, a.guest_target) if packages else target_dir
        server = build_model_server(os.path.join(os.path.dirname(target_dir), "vm-host"), a.offline) if vendor else None
        vmlinuz, initrd = build_initramfs(a.cache, kdir, busybox, bindir, [b for b in a.binaries.split(",") if b],
                                          dpdk)
        log(f"prepared in {time.time() - t0:.1f} s")
        if a.prepare_only:
            return 0
        accel = a.accel
        if accel == "auto":
            ok, why = kvm_usable()
            accel = "kvm" if ok else "tcg"
            log(f"accelerator: {accel} ({why})")
        enter_private_netns()
        for n in nics:
            make_tap(f"tap-{n}", "mq=on" in NICS[n][0])
        # A --models run's models are NICs of the host peer too (their TAPs, made by start_models).
        socks, models = start_models(server, vendor, a.cache, address=not viommu) if vendor else ({}, [])
        peer = Peer(nics + (vendor if viommu else []))
        results = {}
        with open(os.path.join(a.cache, "last-console.log"), "w") as logf:
            cmd = qemu_cmd(qemu, accel, vmlinuz, initrd, nics, a.tests, a.hugepages, a.test_timeout, a.icount, socks,
                           viommu)
            status = boot(cmd, peer, a.timeout, results, logf, boot_timeout=30 if accel == "kvm" else None)
            if status == "noboot" and accel == "kvm":
                log("guest did not reach /init within 30 s under KVM: retrying with TCG")
                results.clear()
                cmd = qemu_cmd(qemu, "tcg", vmlinuz, initrd, nics, a.tests, a.hugepages, a.test_timeout, a.icount,
                               socks, viommu)
                status = boot(cmd, peer, a.timeout, results, logf)
            if status == "noinit":
                # Nothing of the tests ran: a boot-time failure of the guest kernel, worth one more boot.
                log(f"QEMU ended before the guest reached /init ({results.get('_panic', 'no kernel panic seen')}): "
                    "booting once more")
                panic = results.get("_panic")
                results.clear()
                status = boot(cmd, peer, a.timeout, results, logf)
                if panic and "_panic" not in results:
                    log(f"the first boot had failed with: {panic}")
        peer.close()
        stop_models(models, vendor, a.cache)
    except Skip as e:
        print(f"VM TEST SKIPPED: {e}", flush=True)
        return SKIP
    npass = nfail = 0
    for t in [t for t in a.tests.split(",") if t]:
        r = results.get(t)
        ended = {"done": "", "timeout": " (boot timed out)", "noboot": " (the guest did not reach /init)",
                 "noinit": " (QEMU ended before the guest reached /init)",
                 "exited": " (QEMU ended before the guest finished)"}.get(status, f" ({status})")
        if "_panic" in results:
            ended += f" [guest: {results['_panic']}]"
        if r is None:
            verdict, why = "FAIL", "did not run" + ended
        elif r["guest"] is None:
            verdict, why = "FAIL", "no verdict from the guest" + ended
        else:
            bad = [m for ok, m in r["host"] if not ok]
            verdict = "PASS" if r["guest"] and not bad else "FAIL"
            why = "; ".join(bad) if bad else ("guest failed" if not r["guest"] else f"{len(r['host'])} host checks")
        npass += verdict == "PASS"
        nfail += verdict == "FAIL"
        secs = f", {r['secs']:.1f} s" if r and r.get("secs") is not None else ""
        print(f"VM TEST {t}: {verdict} ({why}{secs})", flush=True)
        if verdict == "FAIL" and r is not None:
            # The test's own console lines (guest output, QEMU messages, host checks), so a CI log suffices.
            lines = r["lines"][-EXCERPT_LINES:]
            skipped = len(r["lines"]) - len(lines)
            if skipped:
                print(f"VM EXCERPT {t} | ({skipped} earlier lines in the full output)", flush=True)
            for line in lines:
                print(f"VM EXCERPT {t} | {line}", flush=True)
    print(f"vm summary: {npass} pass, {nfail} fail, {time.time() - t0:.1f} s in all ({status})", flush=True)
    return 0 if nfail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
