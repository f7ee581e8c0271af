# SPDX-License-Identifier: Apache-2.0
"""The keystore through the real binary (`protokube pki init`), on every state store provider: a directory
(file://) in a temp dir, S3 (s3://) against the AWS double and Cloud Storage (gs://) against the Google Cloud
double, on loopback. The race of first starts: 5 masters
run `pki init` at once against an empty store, 20 trials; every process prints the same fingerprints and each
CA (and the service-account key) was created by exactly one of them. The stored CAs are checked with the
openssl tool (CA:TRUE, 10 years, the key is the certificate's, the fingerprint printed is openssl's)."""
import calendar
import os
import shutil
import stat
import subprocess
import tempfile
import time

import pytest

from conftest import protokube_bin
from awsdouble import double_state, running_double
import gcedouble
from test_store import BUCKET, aws_double, gce_double, gs_env, s3_env  # noqa: F401 (fixtures)

RACERS = 5
TRIALS = 20
CLUSTERS = ["main", "events"]
NAMES = ["kubernetes-ca", "etcd-main-peer-ca", "etcd-main-client-ca", "etcd-events-peer-ca",
         "etcd-events-client-ca", "front-proxy-ca", "service-account"]
CERT_BEGIN = b"-----BEGIN CERTIFICATE-----"


def store_key(name):
    return f"pki/keys/{name}.pem" if name == "service-account" else f"pki/ca/{name}.pem"


class Store:
    """One empty store: its URL, the environment the binary needs, how to see an object's privacy."""

    def __init__(self, kind, url, env, root=None, double=None, prefix=""):
        self.kind, self.url, self.env, self.root, self.double, self.prefix = kind, url, env, root, double, prefix

    def environ(self):
        e = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GOOGLE_", "GCE_", "PROTOKUBE_GCE_"))}
        e.update(self.env)
        return e

    def popen_init(self):
        args = [protokube_bin(), "pki", "init", "--store", self.url]
        for c in CLUSTERS:
            args += ["--etcd-cluster", c]
        return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.environ())

    def init(self):
        p = self.popen_init()
        out, err = p.communicate(timeout=120)
        return p.returncode, out, err

    def store(self, *args, input=None):
        return subprocess.run([protokube_bin(), "store", *args], capture_output=True, env=self.environ(),
                              input=input, timeout=60)

    def get(self, key):
        p = self.store("get", self.url, key)
        assert p.returncode == 0, p.stderr
        return p.stdout

    def assert_private(self, key):
        if self.kind == "file":
            mode = stat.S_IMODE(os.lstat(os.path.join(self.root, key)).st_mode)
            assert mode == 0o600, (key, oct(mode))
        elif self.kind == "gs":  # no ACL is ever sent: the bucket's uniform access, never a public object
            st = gcedouble.double_state(self.double)
            assert self.prefix + key in st["buckets"][BUCKET] and not st["public_objects"], (key, st)
        else:
            obj = double_state(self.double)["s3"][BUCKET][self.prefix + key]
            assert obj["sse"] == "AES256", (key, obj)


@pytest.fixture(params=["file", "s3", "gs"])
def new_store(request, aws_double, gce_double):  # noqa: F811 (the fixtures imported above)
    """A factory of empty stores of one provider (a temp dir, or a fresh prefix in the double's bucket)."""
    made = []

    def make(tag):
        if request.param == "file":
            d = tempfile.mkdtemp(prefix="pk-keystore-")
            made.append(d)
            return Store("file", "file://" + d, {}, root=d)
        prefix = "ks%d-%s-%s" % (os.getpid(), request.node.name, tag)
        prefix = "".join(c if c.isalnum() or c in "-_." else "-" for c in prefix)
        if request.param == "gs":
            return Store("gs", f"gs://{BUCKET}/{prefix}", gs_env(gce_double), double=gce_double[0],
                         prefix=prefix + "/")
        return Store("s3", f"s3://{BUCKET}/{prefix}", s3_env(aws_double), double=aws_double, prefix=prefix + "/")

    try:
        yield make
    finally:
        for d in made:
            shutil.rmtree(d, ignore_errors=True)


def parse_init(out):
    """{name: (fingerprint, created|read)} in the printed order."""
    lines = out.decode().splitlines()
    got = {}
    for line in lines:
        name, fp, how = line.split(" ")
        assert how in ("created", "read"), line
        assert len(fp) == 95 and fp.count(":") == 31, line
        got[name] = (fp, how)
    assert [line.split(" ")[0] for line in lines] == NAMES, out
    return got


def race_once(s):
    procs = [s.popen_init() for _ in range(RACERS)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(parse_init(out))
    for name in NAMES:
        fps = {r[name][0] for r in results}
        assert len(fps) == 1, (name, results)
        creators = [i for i, r in enumerate(results) if r[name][1] == "created"]
        assert len(creators) == 1, (name, results)
    for name in NAMES:
        s.assert_private(store_key(name))
    if s.kind == "file":  # no temporaries left behind by the losers
        left = [n for _, _, names in os.walk(s.root) for n in names if n.startswith(".")]
        assert left == []
    return results[0]


def test_race_of_first_starts(new_store):
    for trial in range(TRIALS):
        s = new_store(f"race{trial}")
        first = race_once(s)
        # a later start reads the same ones
        rc, out, err = s.init()
        assert rc == 0, err
        again = parse_init(out)
        assert {n: fp for n, (fp, _) in again.items()} == {n: fp for n, (fp, _) in first.items()}
        assert all(how == "read" for _, how in again.values())


IGNORING_TRIALS = 5


def test_race_of_first_starts_on_a_store_ignoring_the_condition():
    """The race of first starts against an S3-compatible gateway that ignores If-None-Match (every PutObject
    overwrites and answers 200): each master either refuses the store with an error naming it, or those that
    go on agree on every CA, created by exactly one of them, and it is the stored one. (protokube refuses:
    the store's probe, a scratch key created twice, finds the condition ignored before any CA is written.)"""
    with running_double({"buckets": [BUCKET], "s3_ignore_if_none_match": True},
                        prefix="pk-keystore-ignore-") as (url, _):
        for trial in range(IGNORING_TRIALS):
            s = Store("s3", f"s3://{BUCKET}/ign{trial}", s3_env(url), double=url, prefix=f"ign{trial}/")
            procs = [s.popen_init() for _ in range(RACERS)]
            done = [(p.returncode, out, err) for p in procs for out, err in [p.communicate(timeout=300)]]
            went_on = [parse_init(out) for rc, out, _ in done if rc == 0]
            for rc, out, err in done:
                if rc != 0:
                    assert rc == 1 and out == b"", (rc, out, err)
                    assert f"state store '{s.url}'".encode() in err, err
                    assert b"does not honour create-if-absent" in err, err
            for name in NAMES:
                fps = {r[name][0] for r in went_on}
                assert len(fps) <= 1, (trial, name, went_on)
                creators = [r for r in went_on if r[name][1] == "created"]
                assert len(creators) <= 1, (trial, name, went_on)
                if len(went_on) == RACERS:  # all went on: one of them created it
                    assert len(creators) == 1, (trial, name, went_on)
            stored = sorted(k for k in double_state(url)["s3"][BUCKET] if k.startswith(s.prefix))
            if not went_on:  # refused before anything was written, scratch keys included
                assert stored == [], stored
            else:
                assert stored == sorted(s.prefix + store_key(n) for n in NAMES), stored
                for name in NAMES:
                    if name != "service-account":
                        crt = s.get(store_key(name))
                        fp = openssl("x509", "-noout", "-fingerprint", "-sha256",
                                     input=crt[crt.index(CERT_BEGIN):]).split("=", 1)[1].strip()
                        assert {r[name][0] for r in went_on} == {fp}, (trial, name)


def openssl(*args, input=None):
    p = subprocess.run(["openssl", *args], capture_output=True, input=input, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout.decode()


def openssl_time(text):
    """'notAfter=Nov 20 18:06:08 2036 GMT' -> seconds since the epoch."""
    return calendar.timegm(time.strptime(text.split("=", 1)[1].strip(), "%b %d %H:%M:%S %Y %Z"))


def test_stored_cas_with_openssl(new_store, tmp_path):
    s = new_store("openssl")
    rc, out, err = s.init()
    assert rc == 0, err
    printed = parse_init(out)
    assert all(how == "created" for _, how in printed.values())
    for name in NAMES:
        obj = s.get(store_key(name))
        if name == "service-account":
            assert CERT_BEGIN not in obj
            text = openssl("pkey", "-noout", "-text", input=obj)
            assert "Private-Key: (2048 bit" in text, text
            der = subprocess.run(["openssl", "pkey", "-pubout", "-outform", "DER"], input=obj,
                                 capture_output=True, timeout=30, check=True).stdout
            dgst = openssl("dgst", "-sha256", "-hex", input=der).split("= ")[-1].strip().upper()
            assert ":".join(dgst[i:i + 2] for i in range(0, 64, 2)) == printed[name][0]
            continue
        # the object: the key's PEM, then the certificate's
        at = obj.index(CERT_BEGIN)
        assert obj.startswith(b"-----BEGIN PRIVATE KEY-----") and at > 0
        crt, key = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
        crt.write_bytes(obj[at:])
        key.write_bytes(obj[:at])
        text = openssl("x509", "-in", str(crt), "-noout", "-text")
        assert "CA:TRUE" in text and "Certificate Sign" in text, text
        assert f"Subject: CN = {name}" in text, text
        assert "id-ecPublicKey" in text and "P-256" in text, text
        start = openssl_time(openssl("x509", "-in", str(crt), "-noout", "-startdate"))
        end = openssl_time(openssl("x509", "-in", str(crt), "-noout", "-enddate"))
        assert end - start == 3650 * 86400 + 300, (name, start, end)  # 10 years, notBefore 5 minutes back
        fp = openssl("x509", "-in", str(crt), "-noout", "-fingerprint", "-sha256").split("=", 1)[1].strip()
        assert fp == printed[name][0]
        assert openssl("x509", "-in", str(crt), "-noout", "-pubkey") == \
            openssl("pkey", "-in", str(key), "-pubout")
        openssl("verify", "-CAfile", str(crt), str(crt))


def test_corrupt_object_is_an_error(new_store):
    s = new_store("corrupt")
    rc, _, err = s.init()
    assert rc == 0, err
    good = s.get("pki/ca/front-proxy-ca.pem")
    half = good[:good.index(CERT_BEGIN)]  # the key without its certificate
    for bad in (b"garbage", half):
        p = s.store("put", s.url, "pki/ca/front-proxy-ca.pem", "--private", input=bad)
        assert p.returncode == 0, p.stderr
        rc, out, err = s.init()
        assert rc == 1, (out, err)
        assert b"'pki/ca/front-proxy-ca.pem'" in err and b"corrupt" in err and s.url.encode() in err, err
        assert s.get("pki/ca/front-proxy-ca.pem") == bad  # never silently replaced


def test_init_usage_and_missing_store(tmp_path):
    p = subprocess.run([protokube_bin(), "pki", "init"], capture_output=True, timeout=30)
    assert p.returncode == 2 and b"--store" in p.stderr, p.stderr
    p = subprocess.run([protokube_bin(), "pki", "init", "--store", "file://" + str(tmp_path),
                        "--etcd-cluster", "Main"], capture_output=True, timeout=30)
    assert p.returncode == 2 and b"'Main'" in p.stderr, p.stderr
    missing = "file://" + str(tmp_path / "missing")
    p = subprocess.run([protokube_bin(), "pki", "init", "--store", missing], capture_output=True, timeout=30)
    assert p.returncode == 1 and f"state store '{missing}'".encode() in p.stderr, p.stderr
    assert not (tmp_path / "missing").exists()
    assert os.listdir(tmp_path) == []
