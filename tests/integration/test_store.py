# SPDX-License-Identifier: Apache-2.0
"""The state store through the real binary (`protokube store ...`), the same scenarios on both providers: a
directory (file://) in a temp dir and S3 (s3://) against the AWS double on loopback, which checks every
request's SigV4 signature and payload hash. Includes the race of first starts: 5 processes create the same key
at once, 20 trials, exactly one wins and every process reads the winner's bytes."""
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import pytest

from awsdouble import DOUBLE, double_state, running_double
from conftest import protokube_bin

BUCKET = "pk-state"
AKID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
RACERS = 5
TRIALS = 20


@pytest.fixture(scope="module")
def aws_double():
    with running_double({"buckets": [BUCKET]}, prefix="pk-store-double-") as (url, _):
        yield url


def s3_env(url, **extra):
    env = {"AWS_ENDPOINT_URL_S3": url, "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": AKID,
           "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_EC2_METADATA_DISABLED": "true",
           "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_CONFIG_FILE": "/nonexistent"}
    env.update(extra)
    return env


class Provider:
    """One store under test: its URL, the environment the binary needs, and how to see an object's privacy."""

    def __init__(self, kind, url, env, root=None, double=None, prefix=""):
        self.kind, self.url, self.env, self.root, self.double, self.prefix = kind, url, env, root, double, prefix

    def run(self, *args, input=None, timeout=60):
        e = dict(os.environ)
        for k in list(e):
            if k.startswith("AWS_"):
                del e[k]
        e.update(self.env)
        return subprocess.run([protokube_bin(), "store", *args], capture_output=True, env=e, input=input,
                              timeout=timeout)

    def popen(self, *args):
        e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        e.update(self.env)
        return subprocess.Popen([protokube_bin(), "store", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=e)

    def assert_private(self, key, private):
        if self.kind == "file":
            mode = stat.S_IMODE(os.lstat(os.path.join(self.root, key)).st_mode)
            assert mode == (0o600 if private else 0o644), oct(mode)
        else:
            obj = double_state(self.double)["s3"][BUCKET][self.prefix + key]
            assert obj["sse"] == ("AES256" if private else None), obj


@pytest.fixture(params=["file", "s3"])
def provider(request, aws_double):
    if request.param == "file":
        d = tempfile.mkdtemp(prefix="pk-store-")
        try:
            yield Provider("file", "file://" + d, {}, root=d)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    else:
        # each test its own prefix in the bucket, so tests do not see each other's objects
        prefix = "t%d-%s" % (os.getpid(), request.node.name.replace("[", "-").replace("]", ""))
        prefix = "".join(c if c.isalnum() or c in "-_." else "-" for c in prefix)
        yield Provider("s3", f"s3://{BUCKET}/{prefix}", s3_env(aws_double), double=aws_double,
                       prefix=prefix + "/")


def ok(p):
    assert p.returncode == 0, f"exit {p.returncode}\nstdout: {p.stdout!r}\nstderr: {p.stderr!r}"
    return p.stdout


def test_roundtrip(provider, tmp_path):
    s = provider
    p = s.run("get", s.url, "pki/ca/cluster.key")
    assert p.returncode == 1 and s.url.encode() in p.stderr and b"pki/ca/cluster.key" in p.stderr, p.stderr

    assert ok(s.run("put-if-absent", s.url, "pki/ca/cluster.key", "--private", input=b"KEY-1\x00\xff")) == \
        b"created pki/ca/cluster.key\n"
    assert ok(s.run("put-if-absent", s.url, "pki/ca/cluster.key", "--private", input=b"KEY-2")) == \
        b"exists pki/ca/cluster.key\n"
    assert ok(s.run("get", s.url, "pki/ca/cluster.key")) == b"KEY-1\x00\xff"
    s.assert_private("pki/ca/cluster.key", True)

    src = tmp_path / "crt"
    src.write_bytes(b"CERT")
    ok(s.run("put-if-absent", s.url, "pki/ca/cluster.crt", "--file", str(src)))
    s.assert_private("pki/ca/cluster.crt", False)
    ok(s.run("put", s.url, "pki/ca/cluster.crt", input=b"CERT-2"))
    out = tmp_path / "out"
    ok(s.run("get", s.url, "pki/ca/cluster.crt", "--file", str(out)))
    assert out.read_bytes() == b"CERT-2" and stat.S_IMODE(out.stat().st_mode) == 0o600
    ok(s.run("put", s.url, "pki/sa.key", "--private", input=b"SA"))
    s.assert_private("pki/sa.key", True)
    assert ok(s.run("put-if-absent", s.url, "empty", input=b"")) == b"created empty\n"
    assert ok(s.run("get", s.url, "empty")) == b""
    ok(s.run("delete", s.url, "empty"))
    big = os.urandom(3 * 1024 * 1024 + 7)
    ok(s.run("put", s.url, "backups/big.db", input=big))
    assert ok(s.run("get", s.url, "backups/big.db")) == big

    assert ok(s.run("list", s.url)).decode().split() == \
        ["backups/big.db", "pki/ca/cluster.crt", "pki/ca/cluster.key", "pki/sa.key"]
    assert ok(s.run("list", s.url, "pki/ca/")).decode().split() == ["pki/ca/cluster.crt", "pki/ca/cluster.key"]
    assert ok(s.run("list", s.url, "pki/s")).decode().split() == ["pki/sa.key"]
    assert ok(s.run("list", s.url, "none/")) == b""

    ok(s.run("delete", s.url, "pki/ca/cluster.crt"))
    ok(s.run("delete", s.url, "pki/ca/cluster.crt"))
    assert s.run("get", s.url, "pki/ca/cluster.crt").returncode == 1
    assert ok(s.run("list", s.url, "pki/")).decode().split() == ["pki/ca/cluster.key", "pki/sa.key"]

    p = s.run("put", s.url, "../escape", input=b"x")
    assert p.returncode == 1 and b"'../escape'" in p.stderr and s.url.encode() in p.stderr


def test_list_pages(provider):
    """More keys than one ListObjectsV2 page (1000) still list completely and sorted."""
    s = provider
    n = 1005
    if s.kind == "file":
        os.makedirs(os.path.join(s.root, "many"))
        for i in range(n):
            with open(os.path.join(s.root, "many", "k%04d" % i), "w", encoding="utf-8") as f:
                f.write("x")
    else:  # seeded in the double directly: 1005 processes would only slow the test down
        objs = [{"bucket": BUCKET, "key": f"{s.prefix}many/k{i:04d}", "data": "x"} for i in range(n)]
        req = urllib.request.Request(s.double + "/_double/config", data=json.dumps({"objects": objs}).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status == 200
    ok(s.run("put", s.url, "manx", input=b"not under many/"))
    keys = ok(s.run("list", s.url, "many/")).decode().split()
    assert keys == ["many/k%04d" % i for i in range(n)]


def race_once(s, key, trial, tmp_path):
    files = []
    for i in range(RACERS):
        f = tmp_path / f"in-{trial}-{i}"
        f.write_bytes(f"racer {i} of trial {trial} ".encode() * (i + 1))
        files.append(f)
    procs = [s.popen("put-if-absent", s.url, key, "--private", "--file", str(f)) for f in files]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        outs.append(out)
    created = [i for i, o in enumerate(outs) if o == f"created {key}\n".encode()]
    exists = [i for i, o in enumerate(outs) if o == f"exists {key}\n".encode()]
    assert len(created) == 1 and len(exists) == RACERS - 1, outs
    winner = files[created[0]].read_bytes()
    readers = [s.popen("get", s.url, key) for _ in range(RACERS)]
    for p in readers:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert out == winner
    s.assert_private(key, True)


def test_race_of_first_starts(provider, tmp_path):
    for trial in range(TRIALS):
        race_once(provider, f"race/{trial}/ca.key", trial, tmp_path)
    if provider.kind == "file":  # no temporaries left behind by the losers
        left = [n for _, _, names in os.walk(provider.root) for n in names if n.startswith(".")]
        assert left == []


def test_missing_or_unreadable_store(aws_double, tmp_path):
    plain = tmp_path / "plain"
    plain.write_text("not a directory")
    cases = [
        ("file://" + str(tmp_path / "missing"), {}, b"No such file or directory"),
        ("file://" + str(plain), {}, b"Not a directory"),
        ("s3://no-such-bucket/p", s3_env(aws_double), b"NoSuchBucket"),
        (f"s3://{BUCKET}/p", s3_env(aws_double, AWS_ACCESS_KEY_ID="AKIDUNKNOWN"), b"InvalidClientTokenId"),
    ]
    for url, env, why in cases:
        s = Provider("x", url, env)
        for args in (("get", url, "k"), ("put", url, "k"), ("list", url)):
            p = s.run(*args, input=b"x")
            assert p.returncode == 1, (args, p.stdout, p.stderr)
            assert f"state store '{url}'".encode() in p.stderr and why in p.stderr, p.stderr
    assert not (tmp_path / "missing").exists()  # a directory store is never created


def test_double_checks_payload_hash(aws_double):
    """The double refuses an S3 request whose x-amz-content-sha256 does not match the body, even when the
    signature over the headers is right: the payload hash is checked, not only signed."""
    sys.path.insert(0, os.path.dirname(DOUBLE))
    import sigv4_botocore
    amz_date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    url = f"{aws_double}/{BUCKET}/payload-check"
    host = url.split("/")[2]
    signed_body = b"what was signed"
    sha = hashlib.sha256(signed_body).hexdigest()
    headers = [("x-amz-content-sha256", sha)]
    authz, _ = sigv4_botocore.authorization("PUT", url, headers, signed_body, "us-east-1", "s3", AKID, SECRET,
                                            None, amz_date)
    for body, want in ((signed_body, 200), (b"something else", 400)):
        req = urllib.request.Request(url, data=body, method="PUT", headers={
            "Authorization": authz, "X-Amz-Date": amz_date, "x-amz-content-sha256": sha, "Host": host})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                status, text = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read()
        assert status == want, text
        if want == 400:
            assert b"XAmzContentSHA256Mismatch" in text
