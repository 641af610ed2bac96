#!/usr/bin/env python3
"""Hostile and slow control-socket clients for test-control-robust.sh.

  control-clients.py SOCKET hostile SECONDS   hold: 10 idle connections, one
                                               that floods 'summary' and never
                                               reads, one that sends a byte
                                               every 4 s
  control-clients.py SOCKET idle SECONDS       connect, stay silent SECONDS,
                                               then 'get size': print reply
  control-clients.py SOCKET stale              leave a socket file nobody
                                               listens on
"""
import os
import socket
import sys
import time


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def hostile(path, seconds):
    held = [connect(path) for _ in range(10)]
    flood = connect(path)
    flood.setblocking(False)
    slow = connect(path)
    sent = 0
    end = time.monotonic() + seconds
    next_byte = 0.0
    while time.monotonic() < end:
        try:
            sent += flood.send(b"summary\n" * 512)
        except BlockingIOError:
            pass
        except OSError:
            pass  # dropped by the server (fine), or it stopped
        if time.monotonic() >= next_byte:
            try:
                slow.send(b"g")
            except OSError:
                pass
            next_byte = time.monotonic() + 4
        time.sleep(0.01)
    print(f"flooded {sent} bytes", flush=True)
    for s in held + [flood, slow]:
        s.close()


def idle(path, seconds):
    s = connect(path)
    time.sleep(seconds)
    s.sendall(b"get size\n")
    s.settimeout(5)
    print(s.recv(4096).decode().strip())


def stale(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()  # the file stays, nobody listens: a dead server's socket


def main():
    path, what = sys.argv[1], sys.argv[2]
    if what == "hostile":
        hostile(path, float(sys.argv[3]))
    elif what == "idle":
        idle(path, float(sys.argv[3]))
    elif what == "stale":
        stale(path)
    else:
        sys.exit("unknown mode " + what)


if __name__ == "__main__":
    main()
