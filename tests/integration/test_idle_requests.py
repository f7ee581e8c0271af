# SPDX-License-Identifier: Apache-2.0
"""Issue 19, figure 10: a converged, idle pass asks the cloud for no more than it needs. One master, the real
binary: `protokube run --interval 1s` with `cloud: aws` (image-backed EBS volumes: loop devices, real mkfs),
`dns: route53` and `stateStore: s3://` with the node's certificates, all against the AWS double, which logs
every request it receives.

- an idle pass opens the state store once (one probe LIST, not one per stage; the bucket is in AWS_REGION, so
  no call is refused for its region and no HeadBucket asks for it), writes nothing to it (the store's check
  that create-if-absent is honoured, three requests, runs once per open only before the open's first
  put-if-absent, which an idle pass never makes), does not list the etcd
  backups again while no backup slot can have changed (docs/etcd-backups.md), and reads the keystore with
  one listing of its objects' versions instead of one GET per CA (docs/pki.md), and asks whether a restore
  was requested with one listing, not one GET per etcd cluster: no GET at all;
- the node's certificate pairs are decoded only when they change: a pair edited by hand in place (the
  certificate and key of another CA written over the current generation's files) is still noticed at the
  next pass and reissued."""
import os
import re
import subprocess
import time

import pytest

from conftest import need_root
from loopdev import mounts_under, run
from test_aws_providers import CLUSTER, AwsEnv
from test_route53_nowait import Daemon, wait_until

BUCKET = "pk-idle-state"
PASS_RE = re.compile(r"^Pass (\d+) converged in [0-9.]+ ms \((\d+) changes\)\.$")


class StoreEnv(AwsEnv):
    """AwsEnv (one instance, member a) with a state store in the double's S3 and a pki dir."""

    def __init__(self):
        super().__init__(1, members=("a",))
        self.configure({"buckets": [BUCKET]})
        self.pki_dir = os.path.join(self.base, "pki")
        with open(self.spec) as f:
            text = f.read()
        with open(self.spec, "w") as f:
            f.write(text.replace("  kubernetesVersion:", f"  stateStore: s3://{BUCKET}/{CLUSTER}\n"
                                 f"  pki:\n    dir: {self.pki_dir}\n  kubernetesVersion:"))

    def env(self, k, **kw):
        e = super().env(k, **kw)
        e["AWS_ENDPOINT_URL_S3"] = self.url
        e["AWS_CONFIG_FILE"] = os.path.join(self.base, "no-config")
        return e


@pytest.fixture
def env():
    need_root()
    e = StoreEnv()
    yield e
    try:
        release_devices(e)
    finally:
        errors = e.cleanup()
    assert not errors, errors


def release_devices(env, timeout=30):
    """Unmounts the volumes and waits (bounded) until no one holds their devices, before the double detaches
    them: after umount, udev and other probes of block devices (other tests on this machine scan them) may
    hold a device for a while, and a device detached while held lingers (the double's cleanup would then
    report it left behind)."""
    devs = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4].startswith(env.base + "/"):
                devs.append(fields[fields.index("-") + 2])
    for m in mounts_under(env.base):
        run("umount", m)
    deadline = time.monotonic() + timeout
    for dev in devs:
        while time.monotonic() < deadline:
            try:
                os.close(os.open(dev, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC))
                break
            except OSError:
                time.sleep(0.05)


def passes(d):
    """[(pass number, changes)] of the converged passes logged so far."""
    out = []
    for m in d.msgs():
        r = PASS_RE.match(m)
        if r:
            out.append((int(r.group(1)), int(r.group(2))))
    return out


def idle_window(env, d, n):
    """Waits for 3 idle passes in a row, then counts the double's requests over the next n passes:
    ({(service, action, key): count}, passes counted)."""
    def idle_since():
        p = passes(d)
        return p[-1][0] if len(p) >= 3 and all(c == 0 for _, c in p[-3:]) else None
    start = wait_until("three idle passes in a row", idle_since, 90)
    mark = len(env.log())
    wait_until(f"{n} more passes", lambda: passes(d)[-1][0] >= start + n, 3 * n + 30)
    end = passes(d)[-1][0]
    counts = {}
    for e in env.log()[mark:]:
        k = (e.get("service"), e.get("action"), e.get("key", ""))
        counts[k] = counts.get(k, 0) + 1
    return counts, end - start


def test_idle_pass_requests(env):
    d = Daemon(env)
    try:
        counts, n = idle_window(env, d, 8)
        assert n >= 8
        lists = {k: c for k, c in counts.items() if k[1] == "ListObjectsV2"}
        # One LIST per pass at most: the store is opened once per pass (its probe), and the backups of an
        # etcd cluster are not listed again while the slot's state cannot have changed (relisted after a
        # minute at most, so allow one such in the window). The request log at the double is the truth.
        backups = sum(c for k, c in lists.items() if "/backups/" in k[2])
        probes = lists.get(("s3", "ListObjectsV2", f"prefix={CLUSTER}/"), 0)
        keystore = lists.get(("s3", "ListObjectsV2", f"prefix={CLUSTER}/pki/"), 0)
        assert backups <= 2, (lists, n)
        assert probes <= n + 1, (lists, n)
        # the keystore: one listing per pass shows every CA's version; an unchanged CA is not read again
        assert keystore <= n + 1, (lists, n)
        pki_gets = {k: c for k, c in counts.items() if k[1] == "GetObject" and "/pki/" in k[2]}
        assert not pki_gets, (pki_gets, n)
        # restores: one listing per pass asks whether any was requested, no GET per etcd cluster
        restores = lists.get(("s3", "ListObjectsV2", f"prefix={CLUSTER}/restores/"), 0)
        assert restores <= n + 1, (lists, n)
        gets = {k: c for k, c in counts.items() if k[1] == "GetObject"}
        assert not gets, (gets, n)
        # no write, no create-if-absent probe (PutObject, DeleteObject), no region lookup (HeadBucket)
        writes = {k: c for k, c in counts.items() if k[0] == "s3" and k[1] not in ("ListObjectsV2",)}
        assert not writes, (writes, n)
        # and every pass still reads what it must: EC2 (a volume taken by another master is noticed within
        # one pass) and Route 53
        for action in ("DescribeVolumes", "ListResourceRecordSets"):
            got = sum(c for k, c in counts.items() if k[1] == action)
            assert n <= got <= n + 1, (action, got, n, counts)
        total = sum(counts.values())
        assert total <= 7 * (n + 1), (total, n, counts)
    finally:
        assert d.stop() == 0


def leaf_generation(pki_dir):
    """(directory, pair name, generation directory) of an etcd server pair the daemon issued."""
    for root, _, files in os.walk(pki_dir):
        for f in sorted(os.listdir(root)):
            m = re.fullmatch(r"\.(etcd-[a-z0-9-]*server[a-z0-9-]*)\.current", f) or \
                re.fullmatch(r"\.(server)\.current", f)
            if m and os.path.islink(os.path.join(root, f)):
                return root, m.group(1), os.path.join(root, os.readlink(os.path.join(root, f)))
    names = [os.path.join(r, f) for r, _, fs in os.walk(pki_dir) for f in fs]
    raise AssertionError(f"no etcd server pair under {pki_dir}: {names}")


def serial(path):
    p = subprocess.run(["openssl", "x509", "-in", path, "-noout", "-serial"], capture_output=True, text=True,
                       timeout=30)
    return p.stdout.strip()


def test_pair_edited_in_place_is_noticed(env):
    d = Daemon(env)
    try:
        idle_window(env, d, 3)  # the pairs are a few seconds old: decoded once, then served from the cache
        dirpath, name, gen = leaf_generation(env.pki_dir)
        crt, key = os.path.join(gen, name + ".crt"), os.path.join(gen, name + ".key")
        ours = serial(crt)
        # another CA's certificate and key, written over the current generation's files (same inodes)
        other = os.path.join(env.base, "other")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-subj", "/CN=intruder", "-days", "30", "-keyout", other + ".key", "-out",
                        other + ".crt"], check=True, capture_output=True, timeout=60)
        ino = os.stat(crt).st_ino
        for src, dst in ((other + ".crt", crt), (other + ".key", key)):
            with open(src, "rb") as f:
                data = f.read()
            with open(dst, "r+b") as f:
                f.truncate(0)
                f.write(data)
        assert os.stat(crt).st_ino == ino
        edited = serial(crt)
        assert edited != ours
        n0 = passes(d)[-1][0]
        # the next passes see a certificate of another CA and issue a new one into a new generation
        def reissued():
            path = os.path.join(dirpath, name + ".crt")
            s = serial(path) if os.path.exists(path) else ""
            return s if s and s != edited else None
        wait_until("the edited pair reissued", reissued, 20)
        assert passes(d)[-1][0] <= n0 + 3, passes(d)[-5:]
        assert any(m.startswith("Certificates: ") and "change(s) applied" in m for m in d.msgs())
    finally:
        assert d.stop() == 0
