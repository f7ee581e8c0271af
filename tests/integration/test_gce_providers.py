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
import time
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
# Another owner's record at one of our names: never touched, and with ours it makes that name's listing longer
# than one page when pages are small.
NOT_OURS = {"name": f"api.{CLUSTER}.", "type": "TXT", "ttl": 300, "rrdatas": ['"owner=someone-else"']}

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
        for name, cfg in (extra_disks or {}).items():  # new disks, or settings of the ones above
            disks[name] = {**disks.get(name, {}), **cfg}
        self.call("/_double/config", {"project": PROJECT, "instances": instances, "disks": disks,
                                      "managed_zones": {DNS_ZONE: {"dns_name": "k8s.test.", "rrsets": [NOT_OURS]}}})

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
        deadline = time.monotonic() + 10
        while loops_backed_by_files_under(self.base) and time.monotonic() < deadline:
            time.sleep(0.1)  # detached by the double (autoclear), still open somewhere for a moment
        for dev in loops_backed_by_files_under(self.base):
            run("losetup", "-d", dev, check=False)
            errors.append(f"loop device {dev} was left behind (still mounted in the mount namespaces of "
                          f"{namespaces_mounting(dev)})")
        return errors


def namespaces_mounting(dev):
    """{mount namespace: a process in it} of the namespaces where dev is mounted: a namespace made while our
    disk was mounted (another test's, unshare) keeps a copy of that mount, and so the loop device."""
    rdev = os.stat(dev).st_rdev
    needle = f" {os.major(rdev)}:{os.minor(rdev)} "
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/mountinfo") as f:
                if needle in f.read():
                    found.setdefault(os.readlink(f"/proc/{pid}/ns/mnt"), pid)
        except OSError:
            continue
    return found


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


def test_three_instances_race_for_their_disks_over_pages(env3):
    """Three masters start at once, every list one item per page (disks, instances, record sets): each member's
    disk ends up with exactly one instance, each instance with one member's main and events disks, each disk
    formatted once, and Cloud DNS names each member's holder."""
    env = env3
    env.call("/_double/config", {"page_size": 1, "rrset_page_size": 1})
    procs = [subprocess.Popen(env_argv(env, "once", k), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env.env(k)) for k in range(3)]
    outs = []
    for p in procs:
        _, err = p.communicate(timeout=300)
        outs.append(err)
    # a master that lost a race may stop its pass with the conflict; the next pass settles it
    for k in range(3):
        outs.append(env.pk("once", k, check=0).stderr)
    holders = env.holders()
    by_instance = {}
    for d, h in holders.items():
        assert h, f"{d} is held by nobody: {holders}"
        by_instance.setdefault(h, []).append(d)
    assert sorted(by_instance) == [instance(k) for k in range(3)], holders
    for h, disks in by_instance.items():
        members = {d.split("-")[0] for d in disks}
        assert len(disks) == 2 and len(members) == 1, (h, disks)
    formats = sum(err.count("blank: creating an ext4 filesystem") for err in outs)
    assert formats == 6, outs  # each disk once, by its one holder
    log = env.log()
    assert any("pageToken=" in e["query"] for e in log if "/disks" in e["path"]), "disks were not paged"
    assert any("pageToken=" in e["query"] for e in log if e["path"].endswith("/rrsets")), "rrsets were not paged"
    sets = env.state()["zones"][DNS_ZONE]["rrsets"]
    assert [(r["name"], r["rrdatas"]) for r in sets if r["type"] == "TXT"] == [(NOT_OURS["name"], NOT_OURS["rrdatas"])]
    recs = env.records()
    for h, disks in by_instance.items():
        m = disks[0].split("-")[0]
        k = [k for k in range(3) if instance(k) == h][0]
        assert recs[(f"etcd-{m}.internal.{CLUSTER}.", "A")] == (30, [instance_ips(k)[0]]), recs


def env_argv(env, verb, k):
    return [protokube_bin(), "-c", env.spec, verb, "--mount-root", env.mount_root(k),
            "--manifest-dir", os.path.join(env.base, f"manifests-{k}"),
            "--config-dir", os.path.join(env.base, f"lib-{k}"), "--kubelet-dir", os.path.join(env.base, f"kubelet-{k}")]


def test_errors_are_named_and_throttling_is_retried(env1):
    env = env1
    # 403: the permission named, the pass fails, nothing attached
    env.call("/_double/config", {"deny": ["GET /compute/v1/projects/*/aggregated/disks*"]})
    p = env.pk("once", 0)
    assert p.returncode != 0, p.stderr
    assert "disks.aggregatedList: HTTP 403 PERMISSION_DENIED" in p.stderr, p.stderr
    assert not any(env.holders().values())
    env.call("/_double/config", {"deny": []})

    # an attach whose operation ends in an error: the disk and the operation's error named, nothing mounted
    first = disk_name("main", "a")
    env.call("/_double/config", {"faults": {"op_error": {first: {"code": "QUOTA_EXCEEDED",
                                                                 "message": "Quota 'DISKS_TOTAL_GB' exceeded."}}}})
    p = env.pk("once", 0)
    assert f"attach disk {first} to {instance(0)}" in p.stderr and "QUOTA_EXCEEDED" in p.stderr, p.stderr
    assert env.holders()[first] is None

    # 429 and 503 answers: retried with backoff, the pass succeeds
    env.call("/_double/config", {"faults": {"throttle": 3, "error503": 2}})
    env.pk("once", 0, check=0)
    counters = env.state()["counters"]
    assert counters["throttled"] == 3 and counters["errors503"] == 2, counters
    assert sum(1 for h in env.holders().values() if h) == 2

    # an answer that is not JSON: named, not a crash, and the next pass is fine again
    env.call("/_double/config", {"faults": {"garbage": 1}})
    p = env.pk("once", 0)
    assert p.returncode != 0 and "unparsable response (HTTP 200" in p.stderr, p.stderr
    env.pk("once", 0, check=0)


def test_short_lived_tokens_are_renewed(env1):
    """Metadata tokens that live 4 s: a daemon's passes over 10 s fetch new ones before the old expire (after 3
    s, three quarters of their life), and no call is refused for an expired token."""
    env = env1
    env.call("/_double/config", {"metadata_token_ttl": 4})
    env.pk("once", 0, check=0)
    before = env.state()["counters"]
    argv = env_argv(env, "run", 0) + ["--listen", "127.0.0.1:0", "--interval", "1s"]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env.env(0))
    try:
        time.sleep(10)
    finally:
        p.terminate()
        _, err = p.communicate(timeout=30)
    after = env.state()["counters"]
    assert after["metadata_token_fetches"] - before["metadata_token_fetches"] >= 3, (before, after)
    assert after["auth_failures"] == before["auth_failures"], (before, after, err[-2000:])


def test_from_an_operators_machine_with_a_key(env1):
    """Off GCE (no metadata server): `protokube volumes` lists the cluster's disks with a service-account key,
    whose JWT the double verifies; the key's secrets never reach the output."""
    env = env1
    account = "operator@protokube-test.iam.gserviceaccount.com"
    env.call("/_double/config", {"service_accounts": {account: {"scopes": [
        "https://www.googleapis.com/auth/cloud-platform"]}}})
    key = env.call("/_double/service-account-key", {"email": account})
    path = os.path.join(env.base, "key.json")
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        json.dump(key, f)
    e = env.env(0)
    e.update({"GOOGLE_APPLICATION_CREDENTIALS": path, "GCE_METADATA_HOST": "127.0.0.1:9"})
    argv = [protokube_bin(), "-c", env.spec, "volumes", "--node-name", "laptop", "--zone", ZONE,
            "--internal-ip", "192.0.2.1"]
    p = subprocess.run(argv, capture_output=True, text=True, env=e, timeout=60)
    assert p.returncode == 0, p.stderr
    for c in ("main", "events"):
        for m in MEMBERS:
            assert disk_name(c, m) in p.stdout, p.stdout
    assert "a-etcd-main-other" not in p.stdout  # another cluster's
    assert env.state()["counters"]["token_grants"] >= 1
    secret_parts = [key["private_key"].splitlines()[1], key["private_key_id"]]
    assert not any(s in p.stdout + p.stderr for s in secret_parts)

    # a key whose account the double does not know: the token endpoint's error, named
    env.call("/_double/service-account-key", {"email": account, "rotate": True})
    p = subprocess.run(argv, capture_output=True, text=True, env=e, timeout=60)
    assert p.returncode != 0 and "token request to" in p.stderr and "invalid_client" in p.stderr, p.stderr


def test_a_second_disk_of_a_held_member_is_released():
    """Two disks name etcd main's member a (a disk restored from a snapshot with its labels): master-b claimed
    the first one earlier, master-a holds the other. master-a's pass gives its copy back (detachDisk with the
    device name master-a has for it) and never formats or mounts it; the member stays master-b's."""
    labels = {"k8s-io-cluster-name": SAFE, "k8s-io-role-master": "master",
              "k8s-io-etcd-main": kops_label("a/a,b,c")}
    first = disk_name("main", "a")
    extra = {first: {"users": [instance(1)]},
             "a-etcd-main-restored": {"zone": ZONE, "size_gb": 1, "labels": labels, "users": [instance(0)],
                                      "source_snapshot": "projects/p/global/snapshots/main-a"}}
    for env in gce_env(2, extra):
        st = env.state()["disks"]
        assert st["a-etcd-main-restored"]["users"] == [instance(0)], st["a-etcd-main-restored"]
        p = env.pk("once", 0)
        assert "Released volume 'a-etcd-main-restored'" in p.stderr, p.stderr
        st = env.state()["disks"]
        assert not st["a-etcd-main-restored"]["users"], st["a-etcd-main-restored"]
        assert st[first]["users"] == [instance(1)], st[first]
        assert not [ln for ln in p.stderr.splitlines() if "ext4 filesystem" in ln and "restored" in ln], p.stderr
        assert not [m for m in mounts_under(env.mount_root(0)) if "restored" in m]
        detaches = [e for e in env.log() if e["path"].endswith("/detachDisk")]
        assert len(detaches) == 1 and "deviceName=a-etcd-main-restored" in detaches[0]["query"], detaches
