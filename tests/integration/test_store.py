# SPDX-License-Identifier: Apache-2.0
"""The state store through the real binary (`protokube store ...`), the same scenarios on every provider: a
directory (file://) in a temp dir, S3 (s3://) against the AWS double on loopback, which checks every request's
SigV4 signature and payload hash, and Cloud Storage (gs://) against the Google Cloud double, which checks every
request's bearer token (from a service-account key's signed JWT, as on an operator's machine) and shape. Includes the race of first starts: 5 processes create the same key
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

import gcedouble
from awsdouble import DOUBLE, double_state, running_double
from conftest import protokube_bin

BUCKET = "pk-state"
AKID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
RACERS = 5
TRIALS = 20


GS_ACCOUNT = "protokube@protokube-test.iam.gserviceaccount.com"


@pytest.fixture(scope="module")
def gce_double():
    """The Google Cloud double with the bucket, and a service-account key for it in a 0600 file."""
    config = {"project": "protokube-test", "buckets": {BUCKET: {"public_access_prevention": "enforced"}},
              "service_accounts": {GS_ACCOUNT: {"scopes": [gcedouble.CLOUD_PLATFORM]}}}
    with gcedouble.running_double(config, prefix="pk-store-gce-") as (url, d):
        key = gcedouble.double_call(url, "/_double/service-account-key", {"email": GS_ACCOUNT})
        path = os.path.join(d, "key.json")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(key, f)
        yield url, path


def gs_env(double):
    url, key = double
    return {"PROTOKUBE_GCE_ENDPOINT": url, "GOOGLE_APPLICATION_CREDENTIALS": key, "GCE_METADATA_HOST": "127.0.0.1:9"}


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
            if k.startswith(("AWS_", "GOOGLE_", "GCE_", "PROTOKUBE_GCE_")):
                del e[k]
        e.update(self.env)
        return subprocess.run([protokube_bin(), "store", *args], capture_output=True, env=e, input=input,
                              timeout=timeout)

    def popen(self, *args):
        e = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GOOGLE_", "GCE_", "PROTOKUBE_GCE_"))}
        e.update(self.env)
        return subprocess.Popen([protokube_bin(), "store", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=e)

    def assert_private(self, key, private):
        if self.kind == "file":
            mode = stat.S_IMODE(os.lstat(os.path.join(self.root, key)).st_mode)
            assert mode == (0o600 if private else 0o644), oct(mode)
        elif self.kind == "gs":
            st = gcedouble.double_state(self.double)
            assert self.prefix + key in st["buckets"][BUCKET], st["buckets"][BUCKET]
            assert not st["public_objects"], st["public_objects"]  # no object of ours ever got a public ACL
        else:
            obj = double_state(self.double)["s3"][BUCKET][self.prefix + key]
            assert obj["sse"] == ("AES256" if private else None), obj


@pytest.fixture(params=["file", "s3", "gs"])
def provider(request, aws_double, gce_double):
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
        if request.param == "gs":
            yield Provider("gs", f"gs://{BUCKET}/{prefix}", gs_env(gce_double), double=gce_double[0],
                           prefix=prefix + "/")
        else:
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
    """More keys than one ListObjectsV2 page (1000) still list completely and sorted; on gs, pages of 4 (the
    double's object_page_size) over 25 keys."""
    s = provider
    n = 25 if s.kind == "gs" else 1005
    if s.kind == "gs":
        gcedouble.double_call(s.double, "/_double/config", {"object_page_size": 4})
        try:
            for i in range(n):
                ok(s.run("put", s.url, f"many/k{i:04d}", input=b"x"))
        finally:
            gcedouble.double_call(s.double, "/_double/config", {"object_page_size": None})
    elif s.kind == "file":
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


def test_missing_or_unreadable_store(aws_double, gce_double, tmp_path):
    plain = tmp_path / "plain"
    plain.write_text("not a directory")
    cases = [
        ("file://" + str(tmp_path / "missing"), {}, b"No such file or directory"),
        ("file://" + str(plain), {}, b"Not a directory"),
        ("s3://no-such-bucket/p", s3_env(aws_double), b"NoSuchBucket"),
        (f"s3://{BUCKET}/p", s3_env(aws_double, AWS_ACCESS_KEY_ID="AKIDUNKNOWN"), b"InvalidClientTokenId"),
        ("gs://no-such-bucket/p", gs_env(gce_double), b"objects.list: HTTP 404 NOT_FOUND"),
        (f"gs://{BUCKET}/p", {**gs_env(gce_double), "GOOGLE_APPLICATION_CREDENTIALS": str(plain)},
         b"not a JSON object"),
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


def double_log(url):
    with urllib.request.urlopen(url + "/_double/log", timeout=10) as r:
        return json.load(r)


def double_config(url, cfg):
    req = urllib.request.Request(url + "/_double/config", data=json.dumps(cfg).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200


def probe_requests(log):
    """The requests of create-if-absent probes (their scratch keys), by action."""
    out = {}
    for e in log:
        if "put-if-absent-probe-" in e.get("key", ""):
            out[e["action"]] = out.get(e["action"], 0) + 1
    return out


def test_store_ignoring_the_condition_is_refused():
    """An S3-compatible gateway that ignores If-None-Match: put-if-absent of an existing key would answer 200
    and replace it (a second cluster CA). The probe of the open store (a scratch key created twice) finds it
    out: the store is refused with an error naming it, nothing is written, no scratch key is left."""
    with running_double({"buckets": [BUCKET], "s3_ignore_if_none_match": True,
                         "objects": [{"bucket": BUCKET, "key": "p/pki/ca.pem", "data": "THE CA"}]},
                        prefix="pk-store-ignore-") as (url, _):
        s = Provider("s3", f"s3://{BUCKET}/p", s3_env(url), double=url, prefix="p/")
        for key in ("pki/ca.pem", "pki/new.pem"):
            p = s.run("put-if-absent", s.url, key, input=b"MINE")
            assert p.returncode == 1, (p.stdout, p.stderr)
            assert p.stdout == b"", p.stdout
            err = p.stderr.decode()
            assert f"state store '{s.url}'" in err and f"'{key}'" in err, err
            assert "does not honour create-if-absent" in err and "If-None-Match" in err, err
        assert ok(s.run("get", s.url, "pki/ca.pem")) == b"THE CA"
        assert sorted(double_state(url)["s3"][BUCKET]) == ["p/pki/ca.pem"]  # nothing new, no scratch key
        # the probe's requests, once per process (open): create, create again (not refused), delete
        assert probe_requests(double_log(url)) == {"PutObject": 4, "DeleteObject": 2}


def test_created_object_read_back(provider):
    """A created object is read back: when another writer's object is there instead (a store that did not
    honour the condition for that key, though it did for the probe's), that one is the truth: the binary
    says `exists` and warns that the store did not honour the condition, and `get` gives the other's bytes."""
    s = provider
    assert ok(s.run("put-if-absent", s.url, "pki/ca.pem", input=b"MINE")) == b"created pki/ca.pem\n"
    assert ok(s.run("get", s.url, "pki/ca.pem")) == b"MINE"
    if s.kind != "s3":  # a directory and Cloud Storage honour the condition: nothing more to see
        assert ok(s.run("list", s.url)).decode().split() == ["pki/ca.pem"]
        return
    full = s.prefix + "pki/other.pem"
    double_config(s.double, {"s3_ignore_if_none_match": [full],
                             "s3_replace_after_put": {f"{BUCKET}/{full}": "ANOTHER WRITER"}})
    try:
        p = s.run("put-if-absent", s.url, "pki/other.pem", input=b"MINE")
    finally:
        double_config(s.double, {"s3_ignore_if_none_match": False})
    assert p.returncode == 0 and p.stdout == b"exists pki/other.pem\n", (p.stdout, p.stderr)
    assert b"did not honour create-if-absent" in p.stderr and s.url.encode() in p.stderr, p.stderr
    assert ok(s.run("get", s.url, "pki/other.pem")) == b"ANOTHER WRITER"
    assert ok(s.run("list", s.url)).decode().split() == ["pki/ca.pem", "pki/other.pem"]


def test_probe_once_per_open_and_not_for_reads(aws_double):
    """The probe costs three requests once per opened store that creates-if-absent (`pki init` creates 3
    objects through one open: still one probe), and nothing for an open that only reads."""
    prefix = f"once{os.getpid()}"
    url = f"s3://{BUCKET}/{prefix}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(s3_env(aws_double))
    mark = len(double_log(aws_double))
    p = subprocess.run([protokube_bin(), "pki", "init", "--store", url], capture_output=True, env=env,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    log = double_log(aws_double)[mark:]
    assert probe_requests(log) == {"PutObject": 2, "DeleteObject": 1}, log
    created = [e for e in log if e["action"] == "PutObject" and "/pki/" in e["key"] and e["status"] == 200]
    assert len(created) == 3, log  # kubernetes-ca, front-proxy-ca, service-account
    mark = len(log) + mark
    for args in (("list", url), ("get", url, "pki/ca/kubernetes-ca.pem")):
        ok(Provider("s3", url, s3_env(aws_double)).run(*args))
    assert probe_requests(double_log(aws_double)[mark:]) == {}
    assert not [k for k in double_state(aws_double)["s3"][BUCKET] if "put-if-absent-probe-" in k]


def test_probe_writes_as_the_caller():
    """The probe's scratch key is written with the caller's flags: a bucket whose policy denies unencrypted
    puts refuses the probe only where it would refuse the caller's object (a private object is encrypted)."""
    with running_double({"buckets": [BUCKET], "s3_require_sse": True}, prefix="pk-store-sse-") as (url, _):
        s = Provider("s3", f"s3://{BUCKET}/p", s3_env(url), double=url, prefix="p/")
        assert ok(s.run("put-if-absent", s.url, "k", "--private", input=b"S")) == b"created k\n"
        p = s.run("put-if-absent", s.url, "plain", input=b"P")
        assert p.returncode == 1 and b"AccessDenied" in p.stderr and b"'plain'" in p.stderr, p.stderr
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(s3_env(url))
        p = subprocess.run([protokube_bin(), "pki", "init", "--store", f"s3://{BUCKET}/ks"], capture_output=True,
                           env=env, timeout=120)
        assert p.returncode == 0, p.stderr
        assert sorted(double_state(url)["s3"][BUCKET]) == [
            "ks/pki/ca/front-proxy-ca.pem", "ks/pki/ca/kubernetes-ca.pem", "ks/pki/keys/service-account.pem", "p/k"]


FAR = "pk-far"
DOTTED = "pk.far.example"


@pytest.mark.parametrize("answer", ["malformed", "redirect", "bare"])
def test_bucket_in_another_region(answer):
    """Buckets in other regions than AWS_REGION (us-east-1), one of them with dots in its name: the open's
    first call, signed for us-east-1, is refused as S3 does (400 AuthorizationHeaderMalformed, 301
    PermanentRedirect, or the 400 without x-amz-bucket-region, when a HeadBucket tells the region); every
    later call of the store is addressed and signed for the bucket's region, which the double checks."""
    with running_double({"buckets": [FAR, DOTTED], "bucket_regions": {FAR: "eu-west-1", DOTTED: "ap-south-1"},
                         "s3_wrong_region": answer}, prefix="pk-store-region-") as (url, _):
        for bucket in (FAR, DOTTED):
            s = Provider("s3", f"s3://{bucket}/c", s3_env(url))
            assert ok(s.run("put-if-absent", s.url, "pki/ca.pem", input=b"CA")) == b"created pki/ca.pem\n"
            ok(s.run("put", s.url, "pki/sa.pem", "--private", input=b"SA"))
            assert ok(s.run("get", s.url, "pki/ca.pem")) == b"CA"
            assert ok(s.run("list", s.url)).decode().split() == ["pki/ca.pem", "pki/sa.pem"]
            ok(s.run("delete", s.url, "pki/sa.pem"))
        st = double_state(url)
        assert sorted(st["s3"][FAR]) == ["c/pki/ca.pem"] and sorted(st["s3"][DOTTED]) == ["c/pki/ca.pem"]
        log = double_log(url)
        # one refused call per process (its open's first; with a bare answer also the HeadBucket, which is
        # refused too but names the region), none after
        heads = sum(1 for e in log if e["action"] == "HeadBucket")
        assert heads == (10 if answer == "bare" else 0), log
        refused = 10 + heads
        assert st["counters"]["s3_wrong_region"] == refused, st["counters"]
        assert sum(1 for e in log if e.get("status") in (301, 400)) == refused, log


def test_region_in_the_url():
    """s3://BUCKET/PREFIX?region=REGION: every call in that region from the first on (no refused call), a
    region S3 contradicts is an error naming both, and a malformed one is refused before any request."""
    with running_double({"buckets": [FAR], "bucket_regions": {FAR: "eu-west-1"}},
                        prefix="pk-store-urlregion-") as (url, _):
        s = Provider("s3", f"s3://{FAR}/c?region=eu-west-1", s3_env(url))
        assert ok(s.run("put-if-absent", s.url, "k", input=b"V")) == b"created k\n"
        assert ok(s.run("get", s.url, "k")) == b"V"
        assert ok(s.run("list", s.url)) == b"k\n"
        assert double_state(url)["counters"].get("s3_wrong_region", 0) == 0
        assert sorted(double_state(url)["s3"][FAR]) == ["c/k"]  # the prefix is "c", not "c?region=..."
        wrong = f"s3://{FAR}/c?region=us-west-2"
        p = Provider("s3", wrong, s3_env(url)).run("get", wrong, "k")
        assert p.returncode == 1, p.stdout
        assert f"state store '{wrong}'".encode() in p.stderr, p.stderr
        assert b"the bucket is in region 'eu-west-1', not in the URL's region 'us-west-2'" in p.stderr, p.stderr
        n = double_state(url)["counters"]["requests"]
        for bad, why in ((f"s3://{FAR}/c?region=EU-WEST-1", b"invalid region 'EU-WEST-1'"),
                         (f"s3://{FAR}/c?region=", b"invalid region ''"),
                         (f"s3://{FAR}?region=eu-west-1&x=1", b"invalid region 'eu-west-1&x=1'"),
                         (f"s3://{FAR}/c?endpoint=x", b"unknown parameter 'endpoint=x'")):
            p = Provider("s3", bad, s3_env(url)).run("list", bad)
            assert p.returncode == 1 and f"state store '{bad}'".encode() in p.stderr and why in p.stderr, \
                (bad, p.stderr)
        assert double_state(url)["counters"]["requests"] == n
