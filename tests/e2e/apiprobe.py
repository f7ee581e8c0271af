#!/usr/bin/python3
"""Probes the API's /readyz through a DNS name every --interval, as a client of the cluster would: each
probe resolves the name (the resolver of the namespace it runs in), connects with TLS (the cluster CA, the
admin client certificate), and records one JSON line {t, ok, addr, error, tried}. Runs until SIGTERM or
--max-seconds. Used by the real-mode scenario across the replacement of a master.

Two kinds of client (--mode):
- first: the first address the resolver returns, --timeout for everything (a client that never moves on);
- any:   the addresses in the resolver's order, each connection given --connect-timeout (RFC 8305's 250 ms
         "Connection Attempt Delay" by default) before the next is tried, as a client with several A
         records to choose from does; the probe fails only when no address answers."""

import argparse
import json
import signal
import socket
import ssl
import sys
import time


def readyz(addr, name, port, ctx, connect_timeout, timeout):
    """(ok, error) of one GET /readyz to addr."""
    try:
        with socket.create_connection((addr, port), timeout=connect_timeout) as raw:
            raw.settimeout(timeout)
            with ctx.wrap_socket(raw, server_hostname=name) as s:
                s.sendall(f"GET /readyz HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n".encode())
                data = b""
                while len(data) < 65536:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
        status = data.split(b" ", 2)[1] if data.startswith(b"HTTP/") else b"?"
        return status == b"200", None if status == b"200" else f"HTTP {status.decode()}"
    except (OSError, ssl.SSLError) as e:
        return False, str(e)


def probe(name, port, ctx, mode, timeout, connect_timeout):
    """(ok, the address that answered or was tried last, error, addresses tried)."""
    try:
        addrs = [ai[4][0] for ai in socket.getaddrinfo(name, port, socket.AF_INET, socket.SOCK_STREAM)]
    except OSError as e:
        return False, None, f"resolve: {e}", 0
    if mode == "first":
        ok, err = readyz(addrs[0], name, port, ctx, timeout, timeout)
        return ok, addrs[0], err, 1
    errors = []
    for i, addr in enumerate(addrs):
        ok, err = readyz(addr, name, port, ctx, connect_timeout, timeout)
        if ok:
            return True, addr, "; ".join(errors) or None, i + 1
        errors.append(f"{addr}: {err}")
    return False, addrs[-1], "; ".join(errors), len(addrs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--port", type=int, default=443)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--interval", type=float, default=0.05)
    ap.add_argument("--timeout", type=float, default=1.0)
    ap.add_argument("--mode", choices=("first", "any"), default="first")
    ap.add_argument("--connect-timeout", type=float, default=0.25)
    ap.add_argument("--max-seconds", type=float, default=600)
    a = ap.parse_args()
    ctx = ssl.create_default_context(cafile=a.ca)
    ctx.load_cert_chain(a.cert, a.key)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    deadline = time.time() + a.max_seconds
    with open(a.out, "a", buffering=1) as out:
        while not stopping and time.time() < deadline:
            t = time.time()
            ok, addr, err, tried = probe(a.name, a.port, ctx, a.mode, a.timeout, a.connect_timeout)
            out.write(json.dumps({"t": t, "ok": ok, "addr": addr, "error": err, "tried": tried}) + "\n")
            time.sleep(max(0.0, a.interval - (time.time() - t)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
