# SPDX-License-Identifier: Apache-2.0
"""The AWS client (tests/unit/test-aws-client, built by meson) against the AWS double started here: as root,
with image-backed volumes that AttachVolume turns into loop devices and by-id links; and proof that nothing
secret reaches the output (the error messages the daemon would log)."""
import os
import subprocess

import pytest

from awsdouble import double_state, running_double
from conftest import IN_CI, need_root, protokube_bin



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
    with running_double() as (url, d):
        yield {"url": url, "dir": d}


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


ENDPOINT_SPEC = """apiVersion: protokube/v1alpha1
kind: Cluster
metadata: {name: demo.k8s.test}
spec:
  cloud: aws
  dns: {provider: none}
  etcdClusters:
    - {name: main, image: registry.k8s.io/etcd:3.5.16-0}
  kubernetesVersion: 1.31.2
"""


@pytest.mark.parametrize("url,refused", [
    ("http://example.com", True),
    ("http://127.0.0.1.example.com", True),
    ("http://127.0.0.1:9", False),
    ("http://[::1]:80", False),
    ("https://example.com", False),
])
def test_endpoint_scheme_through_the_binary(url, refused, tmp_path):
    """The session token and the signature ride in the headers: an endpoint must be https unless its host is
    loopback. The binary runs in a network namespace of its own with no route anywhere, so whatever it does
    no packet leaves the machine; an accepted endpoint gets past the client's set-up to the next step."""
    need_root()
    spec = tmp_path / "cluster.yaml"
    spec.write_text(ENDPOINT_SPEC)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
           "AWS_SECRET_ACCESS_KEY": "secret-never-printed", "AWS_SESSION_TOKEN": "token-never-printed",
           "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL_EC2": url,
           "HOME": str(tmp_path)}
    p = subprocess.run(["unshare", "--net", protokube_bin(), "-c", str(spec), "volumes", "--node-name",
                        "i-0123456789abcdef0", "--zone", "us-east-1a", "--internal-ip", "10.0.0.5"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 1, p.stderr
    named = f"AWS_ENDPOINT_URL_EC2='{url}': plain http is allowed only for a loopback host"
    if refused:
        assert named in p.stderr, p.stderr
    else:
        assert "AWS_ENDPOINT_URL_EC2" not in p.stderr, p.stderr
        assert "instance metadata is disabled" in p.stderr, p.stderr
    assert "never-printed" not in p.stdout + p.stderr
