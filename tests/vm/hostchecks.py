"""Host-side checks of the VM harness (tests/vm/harness.py) that concern the vfio-user model servers and the
routed IPv4 frames: the `model-stats`, `model-mark`, `model-fault` and `model-cable` markers, and the frames of `inject-ip` /
`expect-routed`. Kept apart so that the harness stays readable; the harness imports it."""

import re
import socket
import struct
import time

# The model servers' stats files (name -> path), read by the `model-stats` marker.
MODEL_STATS = {}
# name -> (rx_delivered, tx_sent) at the guest's last `model-mark NAME`: model-stats counts from there.
MODEL_BASE = {}


def ip_checksum(hdr):
    words = struct.unpack(f"!{len(hdr) // 2}H", hdr)
    total = sum(words)
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


IP_PROTO_TEST = 253  # RFC 3692's experimental protocol number: no stack on the way answers it
IP_SRC = bytes([198, 18, 0, 2])


def ip_frame(dst_mac, src_mac, dst_ip, tag, seq, size=64, ttl=64):
    """An IPv4 frame for the routers under test: the tagged payload (b"VMT1", tag, seq, padding) of `frame` in
    an IPv4 packet to `dst_ip` (dotted), TTL `ttl`, header checksum filled in."""
    t = tag.encode()[:16].ljust(16, b"\0")
    payload = b"VMT1" + t + struct.pack("!I", seq)
    payload += bytes((7 * i + 13 * seq) & 0xFF for i in range(34 + len(payload), max(size, 34 + len(payload))))
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), seq & 0xFFFF, 0, ttl, IP_PROTO_TEST, 0, IP_SRC,
                      socket.inet_aton(dst_ip))
    hdr = hdr[:10] + struct.pack("!H", ip_checksum(hdr)) + hdr[12:]
    return dst_mac + src_mac + struct.pack("!H", 0x0800) + hdr + payload


def read_model_stats(name):
    """The model's stats file as (counters, faults)."""
    with open(MODEL_STATS[name]) as f:
        pairs = [line.rstrip("\n").split("=", 1) for line in f if "=" in line]
    return dict(p for p in pairs if p[0] != "fault"), [v for k, v in pairs if k == "fault"]


def model_mark(name):
    """`@@vmtest model-mark NAME`: the model's counters now are the base of the next `model-stats NAME` (the
    counters run over the whole boot; a test counts its own frames)."""
    if name not in MODEL_STATS:
        return False, f"model-mark {name}: no such model server"
    st, _ = read_model_stats(name)
    MODEL_BASE[name] = (int(st.get("rx_delivered", 0)), int(st.get("tx_sent", 0)))
    return True, f"model {name}: counters marked at rx_delivered={MODEL_BASE[name][0]} tx_sent={MODEL_BASE[name][1]}"


def model_stats(name, rx, tx, polled=False):
    """Host check of `@@vmtest model-stats NAME RX TX [polled]`: the model behind NAME delivered RX frames and sent
    TX (what the guest's interface counters say; since the last `model-mark NAME`, if any), signalled MSI-X
    messages (not required of a `polled` driver, the project's own PMDs) and recorded no fault. The server rewrites its stats file every
    100 ms: waits up to 5 s for the counts to agree."""
    path = MODEL_STATS.get(name)
    if path is None:
        return False, f"model-stats {name}: no such model server"
    deadline = time.time() + 5
    while True:
        try:
            with open(path) as f:
                pairs = [line.rstrip("\n").split("=", 1) for line in f if "=" in line]
            st = dict(p for p in pairs if p[0] != "fault")
            faults = [v for k, v in pairs if k == "fault"]
        except OSError as e:
            st, faults = {"error": str(e)}, []
        base = MODEL_BASE.get(name, (0, 0))
        got = (int(st.get("rx_delivered", -1)) - base[0], int(st.get("tx_sent", -1)) - base[1],
               int(st.get("faults", -1)))
        if got == (rx, tx, 0) or time.time() > deadline:
            break
        time.sleep(0.1)
    # Linux's ixgbe cleans its rings from NAPI, scheduled by the queue vector: traffic without messages is a bug.
    ok = got == (rx, tx, 0) and (polled or int(st.get("irq_msix", 0)) > 0)
    since = f" since the mark at {base}" if name in MODEL_BASE else ""
    msg = (f"model {name}: rx_delivered={got[0]} tx_sent={got[1]}{since} faults={got[2]} (guest: rx_packets={rx} "
           f"tx_packets={tx}); irq_msix={st.get('irq_msix')} link_up={st.get('link_up')}")
    # What the driver did that the model rejects, register named: the reason a test fails.
    return ok, msg + "".join(f"; model fault: {f}" for f in faults[:5])


def model_fault(name, kind, lo, hi):
    """Host check of `@@vmtest model-fault NAME KIND LO HI`: the model behind NAME recorded a fault of KIND (the
    variant of nicsim's Fault, e.g. Dma) whose `iova` lies in [LO, HI) (the access the guest provoked). Waits up to
    10 s for it: the guest asks right after handing the model the work."""
    path = MODEL_STATS.get(name)
    if path is None:
        return False, f"model-fault {name}: no such model server"
    deadline = time.time() + 10
    while True:
        try:
            with open(path) as f:
                faults = [line.rstrip("\n").split("=", 1)[1] for line in f if line.startswith("fault=")]
        except OSError:
            faults = []
        hits = []
        for f in faults:
            m = re.match(r"(\w+) \{.*\biova: (\d+)", f)
            if m and m.group(1) == kind and lo <= int(m.group(2)) < hi:
                hits.append(f)
        if hits or time.time() > deadline:
            break
        time.sleep(0.1)
    msg = (f"model {name}: {'recorded' if hits else 'no'} {kind} fault in [{lo:#x}, {hi:#x})"
           + (f": {hits[0]}" if hits else f" (its faults: {faults[:5]})"))
    return bool(hits), msg


def model_cable(name, plugged):
    """Host action of `@@vmtest model-cable NAME 0|1`: pulls (0) or plugs in (1) the cable of the model behind NAME
    through its server's control file (nicsim-vfio-user --control: the stats path with .control), then waits up to
    10 s for its stats to show the link that way; the guest's driver sees the change as the card would."""
    path = MODEL_STATS.get(name)
    if path is None:
        return False, f"model-cable {name}: no such model server"
    with open(path[: -len(".stats")] + ".control", "w") as f:
        f.write(f"cable {int(plugged)}\n")
    want = "1" if plugged else "0"
    deadline = time.time() + 10
    while True:
        try:
            st, _ = read_model_stats(name)
        except OSError:
            st = {}
        if st.get("link_up") == want or time.time() > deadline:
            break
        time.sleep(0.1)
    ok = st.get("link_up") == want
    return ok, f"model {name}: cable {'in' if plugged else 'out'}, link_up={st.get('link_up')} (want {want})"
