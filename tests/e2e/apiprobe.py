#!/usr/bin/python3
"""Probes the API's /readyz through a DNS name every --interval, as a client of the cluster would: each
probe resolves the name (the resolver of the namespace it runs in), connects to the first address with TLS
(the cluster CA, the admin client certificate), and records one JSON line {t, ok, addr, error}. Runs until
SIGTERM or --max-seconds. Used by the real-mode scenario across the replacement of a master."""

import argparse
import json
import signal
import socket
import ssl
import sys
import time


def probe(name, port, ctx, timeout):
    try:
        addr = socket.getaddrinfo(name, port, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    except OSError as e:
        return False, None, f"resolve: {e}"
    try:
        with socket.create_connection((addr, port), timeout=timeout) as raw:
            with ctx.wrap_socket(raw, server_hostname=name) as s:
                s.settimeout(timeout)
                s.sendall(f"GET /readyz HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n".encode())
                data = b""
                while len(data) < 65536:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
        status = data.split(b" ", 2)[1] if data.startswith(b"HTTP/") else b"?"
        return status == b"200", addr, None if status == b"200" else f"HTTP {status.decode()}"
    except (OSError, ssl.SSLError) as e:
        return False, addr, str(e)


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
            ok, addr, err = probe(a.name, a.port, ctx, a.timeout)
            out.write(json.dumps({"t": t, "ok": ok, "addr": addr, "error": err}) + "\n")
            time.sleep(max(0.0, a.interval - (time.time() - t)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
