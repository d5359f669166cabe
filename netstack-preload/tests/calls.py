"""Every intercepted call on stack sockets, run under LD_PRELOAD=libnetstack_preload.so in the server namespace
against kernel peers in the client namespace (peer.py there, and clients this script starts there). Prints one
line per check and "ALL OK" at the end; any failure raises. Usage: calls.py OUR_ADDR PEER_ADDR PEER_NETNS."""

import errno
import fcntl
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time

OUR, PEER, PEER_NS = sys.argv[1], sys.argv[2], sys.argv[3]
CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "NETSTACK_CONFIG")}


def ok(what):
    print("ok:", what, flush=True)


def expect_errno(code, f, *args):
    try:
        f(*args)
    except OSError as e:
        assert e.errno == code, f"{f.__name__}{args}: errno {e.errno} ({os.strerror(e.errno)}), wanted {errno.errorcode[code]}"
        return
    raise AssertionError(f"{f.__name__}{args}: no error, wanted {errno.errorcode[code]}")


def peer_client(code):
    """Runs `code` with python3 in the peer namespace (a kernel client, without the library)."""
    return subprocess.Popen(
        ["ip", "netns", "exec", PEER_NS, sys.executable, "-c", code],
        env=CLEAN_ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def finish(p, timeout=20):
    out, _ = p.communicate(timeout=timeout)
    assert p.returncode == 0, f"peer client failed ({p.returncode}):\n{out.decode()}"
    return out.decode()


def wait_readable(fd, secs=10):
    r, _, _ = select.select([fd], [], [], secs)
    assert r, f"fd {fd} not readable within {secs} s"


# ---- a kernel socket in the same process stays the kernel's ----
lo = socket.socket()
lo.bind(("127.0.0.1", 0))
lo.listen(4)
lo_port = lo.getsockname()[1]
ok("loopback listener is a kernel socket")

# ---- listen, accept (EAGAIN, then a connection), mixed epoll with a pipe ----
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
assert ls.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR) != 0
ls.bind((OUR, 7100))
assert ls.getsockname() == (OUR, 7100), ls.getsockname()
ls.listen(128)
assert ls.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1
ls.setblocking(False)
expect_errno(errno.EAGAIN, ls.accept)
expect_errno(errno.ENOTCONN, ls.getpeername)
ok("listen on the stack; accept EAGAIN; getpeername ENOTCONN")

dup_bind = socket.socket()
expect_errno(errno.EADDRINUSE, dup_bind.bind, (OUR, 7100))
dup_bind.close()
ok("second bind EADDRINUSE")

ep = select.epoll()
rp, wp = os.pipe()
ep.register(ls.fileno(), select.EPOLLIN)
ep.register(rp, select.EPOLLIN)
ep.register(lo.fileno(), select.EPOLLIN)
assert ep.poll(0.05) == [], "nothing ready yet"
os.write(wp, b"x")
evs = dict(ep.poll(2))
assert evs == {rp: select.EPOLLIN}, evs
os.read(rp, 1)
ok("mixed epoll: the pipe alone")

client = peer_client(f"""
import socket
c = socket.create_connection(("{OUR}", 7100), timeout=10)
c.sendall(b"ping")
assert c.recv(4) == b"pong"
c.shutdown(socket.SHUT_WR)
assert c.recv(10) == b"", "EOF after the server's shutdown"
c.close()
""")
t0 = time.time()
evs = dict(ep.poll(10))
assert evs.get(ls.fileno(), 0) & select.EPOLLIN, evs
conn, addr = ls.accept()
assert addr[0] == PEER, addr
assert conn.getpeername() == addr and conn.getsockname()[0] == OUR
ok(f"mixed epoll: the listener; accept4 from {addr}")

# accept4's SOCK_CLOEXEC (Python asks for it) is the reserved descriptor's.
assert fcntl.fcntl(conn.fileno(), fcntl.F_GETFD) & fcntl.FD_CLOEXEC
fl = fcntl.fcntl(conn.fileno(), fcntl.F_GETFL)
assert not fl & os.O_NONBLOCK
fcntl.fcntl(conn.fileno(), fcntl.F_SETFL, fl | os.O_NONBLOCK)
assert fcntl.fcntl(conn.fileno(), fcntl.F_GETFL) & os.O_NONBLOCK
fcntl.ioctl(conn.fileno(), termios.FIONBIO, struct.pack("i", 0))
assert not fcntl.fcntl(conn.fileno(), fcntl.F_GETFL) & os.O_NONBLOCK
fcntl.ioctl(conn.fileno(), termios.FIONBIO, struct.pack("i", 1))
ok("fcntl F_GETFD/F_SETFL, ioctl FIONBIO")

# a kernel connection on the loopback listener while the stack socket is in the same set
kc = socket.create_connection(("127.0.0.1", lo_port))
evs = dict(ep.poll(2))
assert evs.get(lo.fileno(), 0) & select.EPOLLIN, evs
lo.accept()[0].close()
kc.close()
ok("mixed epoll: kernel loopback listener beside the stack listener")

wait_readable(conn.fileno())
n = struct.unpack("i", fcntl.ioctl(conn.fileno(), termios.FIONREAD, struct.pack("i", 0)))[0]
assert n == 4, n
assert conn.recv(4, socket.MSG_PEEK) == b"ping"
assert conn.recv(16) == b"ping"
expect_errno(errno.EAGAIN, conn.recv, 16)
conn.send(b"pong")
ok("FIONREAD, MSG_PEEK, recv, EAGAIN, send")

ep.register(conn.fileno(), select.EPOLLIN | select.EPOLLRDHUP | select.EPOLLET)
deadline = time.time() + 10
seen = 0
while not seen & select.EPOLLRDHUP and time.time() < deadline:
    for fd, ev in ep.poll(1):
        if fd == conn.fileno():
            seen |= ev
assert seen & select.EPOLLIN and seen & select.EPOLLRDHUP, hex(seen)
assert conn.recv(16) == b"", "EOF"
# edge-triggered: no new event after the end was reported
assert conn.fileno() not in dict(ep.poll(0.1)), "edge-triggered entry reported twice"
conn.shutdown(socket.SHUT_WR)
finish(client)
ep.unregister(conn.fileno())
conn.close()
ok("EPOLLET|EPOLLRDHUP, EOF, shutdown(SHUT_WR)")

# ---- non-blocking connect, poll, select, SO_ERROR; readv/writev/sendmsg/recvmsg; sendfile ----
c = socket.socket()
c.setblocking(False)
expect_errno(errno.EINPROGRESS, c.connect, (PEER, 9000))
expect_errno(errno.EALREADY, c.connect, (PEER, 9000))
p = select.poll()
p.register(c.fileno(), select.POLLOUT)
assert p.poll(5000), "connect completes"
assert c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
expect_errno(errno.EISCONN, c.connect, (PEER, 9000))
assert c.getpeername() == (PEER, 9000)
ok("non-blocking connect: EINPROGRESS, EALREADY, poll POLLOUT, SO_ERROR 0, EISCONN")

c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
assert c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
c.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 300)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 10)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3)
assert c.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
assert c.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 300
c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
assert c.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) > 0
assert c.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE) == socket.SOCK_STREAM
expect_errno(errno.ENOPROTOOPT, c.setsockopt, socket.IPPROTO_IP, socket.IP_TOS, 0x10)
ok("setsockopt/getsockopt: TCP_NODELAY, SO_KEEPALIVE, TCP_KEEP*, SO_SNDBUF/RCVBUF, SO_TYPE; IP_TOS ENOPROTOOPT")

assert os.writev(c.fileno(), [b"ab", b"cd", b"ef"]) == 6
wait_readable(c.fileno())
time.sleep(0.05)
a, b = bytearray(3), bytearray(10)
assert os.readv(c.fileno(), [a, b]) == 6 and bytes(a) == b"abc" and bytes(b[:3]) == b"def"
assert c.sendmsg([b"gh", b"ij"]) == 4
wait_readable(c.fileno())
time.sleep(0.05)
data, anc, flags, addr = c.recvmsg(64)
assert data == b"ghij" and anc == [] and flags == 0, (data, anc, flags)
ok("writev, readv, sendmsg, recvmsg")

r, w, x = select.select([c], [c], [], 1)
assert c in w and c not in r, (r, w)
c.send(b"select")
r, _, _ = select.select([c, rp], [], [], 5)
assert r == [c], r
assert c.recv(64) == b"select"
ok("select: writable, then readable beside a kernel pipe")

path = f"/tmp/netstack-preload-sendfile-{os.getpid()}"
blob = os.urandom(300_000)
with open(path, "wb") as f:
    f.write(blob)
c.setblocking(True)
with open(path, "rb") as f:
    sent = 0
    while sent < len(blob):
        sent += os.sendfile(c.fileno(), f.fileno(), sent, len(blob) - sent)
os.unlink(path)
got = b""
while len(got) < len(blob):
    got += c.recv(65536)
assert got == blob
ok("sendfile of 300 KB, echoed back intact")

# blocking recv with SO_RCVTIMEO
c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, 200_000))
t = time.time()
expect_errno(errno.EAGAIN, c.recv, 10)
assert 0.15 < time.time() - t < 5, time.time() - t
ok("blocking recv times out with EAGAIN after SO_RCVTIMEO")

# ---- dup, dup2 ----
d = os.dup(c.fileno())
assert d != c.fileno()
os.write(d, b"dup")
wait_readable(d)
time.sleep(0.05)
assert os.read(c.fileno(), 10) == b"dup"
d2 = os.dup2(d, 200)
assert d2 == 200
os.close(d)
os.write(200, b"dup2")
wait_readable(c.fileno())
time.sleep(0.05)
assert c.recv(10) == b"dup2"
os.close(200)
assert c.getpeername() == (PEER, 9000), "the socket lives while a descriptor is open"
ok("dup, dup2: the copies share the connection")

# ---- threads: only the thread that polls the stack may use its sockets ----
err = []


def other():
    try:
        c.send(b"x")
    except OSError as e:
        err.append(e.errno)


th = threading.Thread(target=other)
th.start()
th.join()
assert err == [errno.EPERM], err
ok("another thread gets EPERM")

# ---- fork after the stack is up: the child cannot use it, the parent keeps it ----
pid = os.fork()
if pid == 0:
    code = 0
    try:
        c.send(b"child")
        code = 3
    except OSError as e:
        code = 0 if e.errno == errno.EPERM else 4
    os.close(c.fileno())
    os._exit(code)
_, status = os.waitpid(pid, 0)
assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
c.send(b"parent")
wait_readable(c.fileno())
time.sleep(0.05)
assert c.recv(16) == b"parent"
ok("fork: the child gets EPERM and its close leaves the parent's connection")
c.close()

# ---- refused and reset connections, EPIPE and SIGPIPE ----
r = socket.socket()
r.setblocking(False)
expect_errno(errno.EINPROGRESS, r.connect, (PEER, 9002))
p = select.poll()
p.register(r.fileno(), select.POLLOUT)
evs = p.poll(5000)
assert evs and evs[0][1] & select.POLLERR, evs
assert r.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == errno.ECONNREFUSED
r.close()
r = socket.socket()
expect_errno(errno.ECONNREFUSED, r.connect, (PEER, 9002))
r.close()
ok("refused: SO_ERROR ECONNREFUSED (non-blocking), ECONNREFUSED (blocking)")

rs = socket.create_connection((PEER, 9001), timeout=None)
rs.send(b"reset me")
wait_readable(rs.fileno())
expect_errno(errno.ECONNRESET, rs.recv, 10)
expect_errno(errno.EPIPE, rs.send, b"x", socket.MSG_NOSIGNAL)
got_sigpipe = []
old = signal.signal(signal.SIGPIPE, lambda s, f: got_sigpipe.append(s))
expect_errno(errno.EPIPE, rs.send, b"x")
signal.signal(signal.SIGPIPE, old)
assert got_sigpipe == [signal.SIGPIPE], got_sigpipe
rs.close()
ok("reset: ECONNRESET, then EPIPE with SIGPIPE unless MSG_NOSIGNAL")

# ---- bulk receive with MSG_WAITALL ----
bk = socket.create_connection((PEER, 9003))
bk.send(b"1000000")
buf = bytearray(1_000_000)
assert bk.recv_into(buf, len(buf), socket.MSG_WAITALL) == len(buf)
assert buf == bytes(i % 251 for i in range(1_000_000))
assert bk.recv(10) == b""
bk.close()
ok("MSG_WAITALL receives 1 MB intact, then EOF")

# ---- UDP ----
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind((OUR, 7200))
u.sendto(b"hello", (PEER, 9100))
wait_readable(u.fileno())
d, a = u.recvfrom(100)
assert (d, a) == (b"HELLO", (PEER, 9100)), (d, a)
u.connect((PEER, 9100))
u.send(b"again")
wait_readable(u.fileno())
assert u.recv(100) == b"AGAIN"
assert u.getpeername() == (PEER, 9100)
u.close()
ok("UDP: sendto/recvfrom, connect/send/recv")

# ---- many connections at once through one epoll ----
N = 200
clients = peer_client(f"""
import socket
cs = [socket.create_connection(("{OUR}", 7100), timeout=20) for _ in range({N})]
for i, c in enumerate(cs):
    c.sendall(b"%05d" % i)
for i, c in enumerate(cs):
    got = b""
    while len(got) < 5:
        got += c.recv(5 - len(got))
    assert got == b"%05d" % i, (i, got)
    c.close()
print("clients ok")
""")
conns = {}
answered = 0
deadline = time.time() + 60
# An event loop: replies go out on the next wait, so it runs until the clients are done.
while clients.poll() is None and time.time() < deadline:
    for fd, ev in ep.poll(1):
        if fd == ls.fileno():
            while True:
                try:
                    s, _ = ls.accept()
                except BlockingIOError:
                    break
                s.setblocking(False)
                conns[s.fileno()] = s
                ep.register(s.fileno(), select.EPOLLIN)
        elif fd in conns:
            s = conns[fd]
            d = s.recv(64)
            if d:
                s.send(d)
                answered += 1
            else:
                ep.unregister(fd)
                s.close()
                del conns[fd]
assert answered == N, answered
assert "clients ok" in finish(clients)
for s in conns.values():
    s.close()
ok(f"{N} connections answered through one epoll set")

ep.close()
ls.close()
print("ALL OK", flush=True)
