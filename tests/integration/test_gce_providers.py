# SPDX-License-Identifier: Apache-2.0
"""The `gce` volume provider, the `clouddns` DNS provider and the gs:// store (docs/gce.md) with `protokube once`
and `protokube store` against the Google Cloud double (tests/fakes/gce): image-backed persistent disks that
attachDisk turns into loop devices with their google-<device name> by-id links, one metadata server per
simulated instance (tokens from it), Cloud DNS records checked in the double's zone; off GCE, a service-account
key exchanged for a token with a signed JWT. Each disk is labelled exactly as kops labels it."""
import json
import os
import shutil
import subprocess
import tempfile
import urllib.request

import pytest

from conftest import need_root, protokube_bin
from fakeserver import running_fake_server
from gcedouble import DOUBLE
from loopdev import loops_backed_by_files_under, mounts_under, run

CLUSTER = "demo.k8s.test"
SAFE = "demo-k8s-test"  # kops' SafeClusterName
PROJECT = "protokube-test"
ZONE = "europe-west1-b"
DNS_ZONE = "k8s-test"
MEMBERS = ("a", "b", "c")

SPEC = f"""apiVersion: protokube/v1alpha1
kind: Cluster
metadata:
  name: {CLUSTER}
spec:
  cloud: gce
  dns:
    provider: clouddns
    zone: k8s.test.
    ttl: 30
  etcdClusters:
    - name: main
      image: registry.k8s.io/etcd:3.5.16-0
    - name: events
      image: registry.k8s.io/etcd:3.5.16-0
  kubernetesVersion: 1.31.2
  kubeAPIServer: {{}}
  kubeControllerManager: {{}}
  kubeScheduler: {{}}
  kubeProxy: {{}}
"""


def kops_label(s):
    """kops' EncodeGCELabel, written here from its definition (an independent copy for the test)."""
    return "".join(c if c.isdigit() or "a" <= c <= "z" else "-%02x" % ord(c) for c in s)


def disk_name(cluster, member):
    return f"{member}-etcd-{cluster}-{SAFE}"


def instance(k):
    return f"master-{MEMBERS[k]}"


def instance_ips(k):
    return f"10.132.0.{10 + k}", f"35.195.0.{10 + k}"


class GceEnv:
    def __init__(self, n_instances, base, url, extra_disks=None):
        self.base, self.url = base, url
        self.byid = {k: os.path.join(base, f"by-id-{k}") for k in range(n_instances)}
        self.spec = os.path.join(base, "cluster.yaml")
        with open(self.spec, "w") as f:
            f.write(SPEC)
        instances = {}
        for k in range(n_instances):
            ip, pub = instance_ips(k)
            os.makedirs(self.byid[k])
            instances[instance(k)] = {"zone": ZONE, "internal_ip": ip, "external_ip": pub, "byid_dir": self.byid[k],
                                      "labels": {"k8s-io-cluster-name": SAFE},
                                      "attributes": {"cluster-name": CLUSTER}}
        disks = {}
        for c in ("main", "events"):
            for m in MEMBERS:
                image = os.path.join(base, disk_name(c, m) + ".img")
                with open(image, "wb") as f:
                    f.truncate(24 << 20)
                disks[disk_name(c, m)] = {"zone": ZONE, "size_gb": 1, "image": image,
                                          "labels": {"k8s-io-cluster-name": SAFE, "k8s-io-role-master": "master",
                                                     f"k8s-io-etcd-{c}": kops_label(f"{m}/{','.join(MEMBERS)}")}}
        # another cluster's disk and one of ours in another zone: never claimed from here
        disks["a-etcd-main-other"] = {"zone": ZONE, "labels": {"k8s-io-cluster-name": "other-k8s-test",
                                                              "k8s-io-role-master": "master",
                                                              "k8s-io-etcd-main": kops_label("a/a")}}
        disks["d-etcd-main-farzone"] = {"zone": "europe-west1-c",
                                        "labels": {"k8s-io-cluster-name": SAFE, "k8s-io-role-master": "master",
                                                   "k8s-io-etcd-main": kops_label("d/a,b,c,d")}}
        disks.update(extra_disks or {})
        self.call("/_double/config", {"project": PROJECT, "instances": instances, "disks": disks,
                                      "managed_zones": {DNS_ZONE: {"dns_name": "k8s.test."}}})

    def call(self, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method="GET" if body is None else "POST")
        with urllib.request.urlopen(req, timeout=60) as r:
            text = r.read()
        return json.loads(text) if text else None

    def state(self):
        return self.call("/_double/state")

    def log(self):
        return self.call("/_double/log")

    def holders(self):
        disks = self.state()["disks"]
        return {d: (s["users"] or [None])[0] for d, s in disks.items() if d.endswith(SAFE)}

    def records(self):
        sets = self.state()["zones"][DNS_ZONE]["rrsets"]
        return {(r["name"], r["type"]): (r["ttl"], sorted(r["rrdatas"])) for r in sets if r["type"] in ("A", "AAAA")}

    def env(self, k):
        e = {key: val for key, val in os.environ.items()
             if not key.startswith(("GOOGLE_", "GCE_", "PROTOKUBE_GCE_", "AWS_"))}
        port = self.state()["metadata_ports"][instance(k)]
        e.update({"PROTOKUBE_GCE_ENDPOINT": self.url, "GCE_METADATA_HOST": f"127.0.0.1:{port}",
                  "PROTOKUBE_GCE_BYID_DIR": self.byid[k], "HOME": self.base,
                  "PROTOKUBE_STATE_DIR": os.path.join(self.base, f"state-{k}")})
        return e

    def mount_root(self, k):
        return os.path.join(self.base, f"mnt-{k}")

    def pk(self, verb, k, *extra, check=None, timeout=180):
        argv = [protokube_bin(), "-c", self.spec, verb, "--mount-root", self.mount_root(k),
                "--manifest-dir", os.path.join(self.base, f"manifests-{k}"),
                "--config-dir", os.path.join(self.base, f"lib-{k}"),
                "--kubelet-dir", os.path.join(self.base, f"kubelet-{k}"), *extra]
        p = subprocess.run(argv, capture_output=True, text=True, env=self.env(k), timeout=timeout)
        if check is not None and p.returncode != check:
            raise AssertionError(f"protokube {verb} ({instance(k)}) exited {p.returncode}, wanted {check}\n"
                                 f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        return p

    def umount(self, k):
        for m in mounts_under(self.mount_root(k)):
            run("umount", m)

    def cleanup(self):
        errors = []
        for m in mounts_under(self.base):
            if run("umount", m, check=False).returncode != 0:
                run("umount", "-l", m, check=False)
                errors.append(f"had to lazily unmount {m}")
        self.call("/_double/cleanup", {})
        for dev in loops_backed_by_files_under(self.base):
            run("losetup", "-d", dev, check=False)
            errors.append(f"loop device {dev} was left behind")
        return errors


def gce_env(n, extra_disks=None):
    need_root()
    base = tempfile.mkdtemp(prefix="pk-gceprov-")
    try:
        with running_fake_server(DOUBLE, "the GCE double", "pk-gcedouble-") as (url, _):
            env = GceEnv(n, base, url, extra_disks)
            try:
                yield env
            finally:
                errors = env.cleanup()
                assert not errors, errors
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def env1():
    yield from gce_env(1)


@pytest.fixture
def env3():
    yield from gce_env(3)


def byid_device(env, k, disk):
    return os.path.realpath(os.path.join(env.byid[k], "google-" + disk))


def test_one_node_claim_format_mount_and_clouddns(env1):
    env = env1
    p = env.pk("once", 0, check=0)
    assert p.stderr.count("blank: creating an ext4 filesystem") == 2, p.stderr
    holders = env.holders()
    mine = sorted(d for d, h in holders.items() if h == instance(0))
    assert len(mine) == 2 and {d.split("-")[2] for d in mine} == {"main", "events"}, holders
    for d in mine:
        dev = byid_device(env, 0, d)
        assert dev.startswith("/dev/loop"), dev
        assert run("blkid", "-p", "-s", "TYPE", "-o", "value", dev).stdout.strip() == "ext4"
    assert not [h for d, h in holders.items() if d not in mine and h], holders

    ip, pub = instance_ips(0)
    recs = env.records()
    m = mine[0].split("-")[0]
    assert recs[(f"etcd-{m}.internal.{CLUSTER}.", "A")] == (30, [ip]), recs
    assert recs[(f"etcd-events-{m}.internal.{CLUSTER}.", "A")] == (30, [ip]), recs
    assert recs[(f"api.internal.{CLUSTER}.", "A")] == (30, [ip]), recs
    assert recs[(f"api.{CLUSTER}.", "A")] == (30, [pub]), recs
    log = env.log()
    assert len([e for e in log if e["method"] == "POST" and e["path"].endswith("/changes")]) == 1, log
    # only our names were read, never the whole zone
    reads = [e for e in log if e["path"].endswith("/rrsets")]
    assert reads and all("name=" in e["query"] for e in reads), reads

    for d in mine:
        with open(os.path.join(env.mount_root(0), "master-" + d, "marker"), "w") as f:
            f.write("data of " + d)

    # a second pass changes nothing: no attach, no format, no DNS change; a token from the metadata server
    # is reused, not fetched again
    n_log = len(env.log())
    fetches = env.state()["counters"]["metadata_token_fetches"]
    p = env.pk("once", 0, check=0)
    assert "ext4 filesystem" not in p.stderr and "Claimed" not in p.stderr, p.stderr
    new = env.log()[n_log:]
    assert not [e for e in new if e["method"] == "POST"], new
    assert env.state()["counters"]["metadata_token_fetches"] == fetches + 1  # one per process, not per call

    # unmounted (a reboot): the same disks come back, not formatted, data intact
    env.umount(0)
    p = env.pk("once", 0, check=0)
    assert "ext4 filesystem" not in p.stderr, p.stderr
    for d in mine:
        with open(os.path.join(env.mount_root(0), "master-" + d, "marker")) as f:
            assert f.read() == "data of " + d
