# SPDX-License-Identifier: Apache-2.0
"""The AWS double (tests/fakes/aws/server.py) on loopback for one test or module: started, waited for, stopped
by PID, its directory removed."""
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

from conftest import ROOT

DOUBLE = os.path.join(ROOT, "tests", "fakes", "aws", "server.py")


@contextlib.contextmanager
def running_double(config=None, prefix="pk-awsdouble-"):
    """Yields (url, directory). config: the double's initial state (written as its --config)."""
    d = tempfile.mkdtemp(prefix=prefix)
    port_file = os.path.join(d, "port")
    argv = ["/usr/bin/python3", DOUBLE, "--port-file", port_file]
    if config is not None:
        cfg = os.path.join(d, "config.json")
        with open(cfg, "w", encoding="utf-8") as f:
            json.dump(config, f)
        argv += ["--config", cfg]
    proc = subprocess.Popen(argv)
    try:
        deadline = time.monotonic() + 15
        while not os.path.exists(port_file):
            assert proc.poll() is None, "the AWS double exited"
            assert time.monotonic() < deadline, "the AWS double did not start"
            time.sleep(0.05)
        with open(port_file, encoding="utf-8") as f:
            yield "http://127.0.0.1:" + f.read().strip(), d
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        shutil.rmtree(d, ignore_errors=True)


def double_state(url):
    with urllib.request.urlopen(url + "/_double/state", timeout=10) as r:
        return json.load(r)
