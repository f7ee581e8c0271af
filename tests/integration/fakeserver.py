# SPDX-License-Identifier: Apache-2.0
"""A fake server of tests/fakes/ (a Python program that binds a loopback port 0 and writes the port to its
--port-file once it listens: the AWS double, the Kubernetes API double) for one test or module: started in a
directory of its own, waited for, stopped by PID, its directory removed."""
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time


@contextlib.contextmanager
def running_fake_server(script, what, prefix, config=None):
    """Yields (url, directory). what: the server's name in failures ("the AWS double"). config: its initial
    state, written to a file given as its --config."""
    d = tempfile.mkdtemp(prefix=prefix)
    port_file = os.path.join(d, "port")
    argv = ["/usr/bin/python3", script, "--port-file", port_file]
    if config is not None:
        cfg = os.path.join(d, "config.json")
        with open(cfg, "w", encoding="utf-8") as f:
            json.dump(config, f)
        argv += ["--config", cfg]
    proc = subprocess.Popen(argv)
    try:
        deadline = time.monotonic() + 15
        while not os.path.exists(port_file):
            assert proc.poll() is None, f"{what} exited"
            assert time.monotonic() < deadline, f"{what} did not start"
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
