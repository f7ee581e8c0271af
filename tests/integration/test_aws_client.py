# SPDX-License-Identifier: Apache-2.0
"""The AWS client (tests/unit/test-aws-client, built by meson) against the AWS double started here: as root,
with image-backed volumes that AttachVolume turns into loop devices and by-id links; and proof that nothing
secret reaches the output (the error messages the daemon would log)."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

import pytest

from conftest import IN_CI, ROOT, need_root, protokube_bin

DOUBLE = os.path.join(ROOT, "tests", "fakes", "aws", "server.py")


def build_dir():
    return os.path.dirname(os.path.dirname(os.path.dirname(protokube_bin())))


def client_test_bin():
    path = os.path.join(build_dir(), "tests", "unit", "test-aws-client")
    if not os.path.exists(path):
        if IN_CI:
            pytest.fail(f"{path} is not built")
        pytest.skip(f"{path} is not built")
    return path


@pytest.fixture
def aws_double():
    d = tempfile.mkdtemp(prefix="pk-awsdouble-")
    port_file = os.path.join(d, "port")
    proc = subprocess.Popen(["/usr/bin/python3", DOUBLE, "--port-file", port_file])
    try:
        deadline = time.monotonic() + 15
        while not os.path.exists(port_file):
            assert proc.poll() is None, "the AWS double exited"
            assert time.monotonic() < deadline, "the AWS double did not start"
            time.sleep(0.05)
        with open(port_file, encoding="utf-8") as f:
            url = "http://127.0.0.1:" + f.read().strip()
        yield {"url": url, "dir": d}
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


def run_client_tests(url, extra_env=None):
    env = dict(os.environ, AWS_DOUBLE_URL=url)
    env.update(extra_env or {})
    p = subprocess.run([client_test_bin()], capture_output=True, text=True, env=env, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    return out


def loops_backed_by(image):
    p = subprocess.run(["losetup", "-j", image], capture_output=True, text=True, timeout=30)
    return [line.split(":")[0] for line in p.stdout.splitlines() if line.strip()]


def test_client_suite_and_nothing_secret_in_output(aws_double):
    out = run_client_tests(aws_double["url"])
    assert "SignatureDoesNotMatch" in out and "ec2 DescribeVolumes" in out
    state = double_state(aws_double["url"])
    secrets = state["secrets"] + ["wrong-secret-0123456789"]
    # the static keys and every role credential the double issued through IMDS
    assert len(secrets) >= 4
    for s in secrets:
        assert s not in out, "a secret reached the output"
    assert state["counters"]["bad_signatures"] >= 1
    assert state["counters"]["throttled"] >= 9


def test_attach_creates_loop_device_and_by_id_link(aws_double):
    need_root()
    d = aws_double["dir"]
    image = os.path.join(d, "vol.img")
    byid = os.path.join(d, "by-id")
    with open(image, "wb") as f:
        f.truncate(16 << 20)
    try:
        out = run_client_tests(aws_double["url"], {"AWS_DOUBLE_BYID_DIR": byid, "AWS_DOUBLE_IMAGE": image})
        # the double attached a loop device backed by our image and linked it, then (on cleanup) let go
        assert "[       OK ] test_attach_loop_device" in out, out
        assert "by-id link -> block device 7:" in out, out
        # the double detached what it set up when the C test finished
        assert loops_backed_by(image) == []
        assert os.listdir(byid) == []
    finally:
        for dev in loops_backed_by(image):
            subprocess.run(["losetup", "-d", dev], timeout=30)
