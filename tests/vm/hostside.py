"""The host side of the VM harness (tests/vm/harness.py): its configuration (the guest's NICs and the vendor
models), logging and commands, the private network namespace and its TAPs, and the host peer that injects and
checks the guest's frames. Kept apart so that the harness stays readable; the harness imports it."""

import ctypes
import os
import select
import socket
import struct
import subprocess
import threading
import time

from hostchecks import IP_PROTO_TEST, ip_frame

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

class Skip(Exception):
    pass


def log(msg):
    print(f"[vm] {msg}", flush=True)


def run(cmd, check=True, **kw):
    log("$ " + " ".join(cmd))
    return subprocess.run(cmd, check=check, **kw)


def out(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


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


def set_pdeathsig():
    libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
