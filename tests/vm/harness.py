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
import fcntl
import glob
import json
import lzma
import os
import re
import select
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostchecks import MODEL_STATS, model_cable, model_fault, model_mark, model_stats  # noqa: E402
from hostside import (GNU, HERE, MODEL_IDS, MODULES, MQ_QUEUES, MUSL, NICS, REPO, SKIP, VENDOR,  # noqa: E402
                      VENDOR_MODULES, Peer, Skip, enter_private_netns, log, make_tap, out, run, set_pdeathsig)

EXCERPT_LINES = 80  # console lines of a failed test repeated in the summary
DEFAULT_TESTS = "vfio-probe,virtio-exchange,virtio-fwd,virtio-mq,virtio-rx-intr,virtio-unmapped,testpmd-fwd,igb-exchange,testpmd-igb,testpmd-noargs"


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
