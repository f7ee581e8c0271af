#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The AWS double (tests/fakes/aws/server.py, unchanged) with its own time measured: every API and IMDS
request's handler (body read, botocore SigV4 check, dispatch, XML, response write) is timed with
perf_counter and summed. GET /_bench/times returns {"requests": n, "seconds": s, "by_action": {...}};
POST /_bench/reset zeroes it. Control requests (/_double/*, /_bench/*) are not counted. What the handler
does not cover (the HTTP server parsing the request line and headers, thread start) is left in the client's
share, so the client's figure is an upper bound. Run: aws_double_timed.py --port-file F [--config JSON]."""
import json
import os
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "fakes",
                                "aws"))
import server  # noqa: E402

LOCK = threading.Lock()
TIMES = {"requests": 0, "seconds": 0.0, "by_action": {}}
_orig = server.Handler.handle_any


def _timed(self):
    path = urllib.parse.urlsplit(self.path).path
    if path == "/_bench/times":
        with LOCK:
            body = json.dumps(TIMES)
        return self.send(200, "application/json", body)
    if path == "/_bench/reset":
        with LOCK:
            TIMES.update({"requests": 0, "seconds": 0.0, "by_action": {}})
        return self.send(200, "application/json", "{}")
    if path.startswith("/_double/"):
        return _orig(self)
    t0 = time.perf_counter()
    try:
        return _orig(self)
    finally:
        dt = time.perf_counter() - t0
        with LOCK:
            TIMES["requests"] += 1
            TIMES["seconds"] += dt
            key = "imds" if "/latest/" in path else self.command + " " + path
            a = TIMES["by_action"].setdefault(key, [0, 0.0])
            a[0] += 1
            a[1] += dt


server.Handler.do_GET = server.Handler.do_POST = server.Handler.do_PUT = server.Handler.do_DELETE = _timed

if __name__ == "__main__":
    server.main()
