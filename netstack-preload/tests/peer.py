"""The kernel-side peer of calls.py, run in the client namespace: an echo server, a server that resets every
connection, a server that sends a fixed amount and closes, and a UDP echo. Usage: peer.py ADDR; prints
"ready" once listening. Stops after 120 s."""

import socket
import struct
import sys
import threading
import time

ADDR = sys.argv[1]


def serve(port, handle):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((ADDR, port))
    s.listen(64)

    def loop():
        while True:
            c, _ = s.accept()
            threading.Thread(target=handle, args=(c,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()


def echo(c):
    while True:
        try:
            d = c.recv(65536)
        except OSError:
            return
        if not d:
            c.close()
            return
        c.sendall(d)


def reset(c):
    c.recv(16)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()


def bulk(c):
    n = int(c.recv(64).decode())
    c.sendall(bytes(i % 251 for i in range(n)))
    c.close()


def udp_echo():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((ADDR, 9100))
    while True:
        d, a = u.recvfrom(2048)
        u.sendto(d.upper(), a)


serve(9000, echo)
serve(9001, reset)
serve(9003, bulk)
threading.Thread(target=udp_echo, daemon=True).start()
print("ready", flush=True)
time.sleep(120)
