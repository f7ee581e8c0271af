# SPDX-License-Identifier: Apache-2.0
"""A rolling etcd upgrade from 3.4 to 3.5 done by hand on a real three-member cluster (docs/etcd-versions.md):
members a, b, c run the flags protokube renders for registry.k8s.io/etcd:3.4.13-0 with Debian's etcd
(/usr/bin/etcd, 3.4), each on its own loopback address; one at a time a member is stopped and started again
with the flags rendered for registry.k8s.io/etcd:3.5.16-0 and Debian trixie's 3.5.16 binary
(scripts/etcd-binaries.sh) on the same data dir, as kubelet does when a manifest's image changes. Between the
steps: every member healthy, every key written so far readable from the member just changed, the cluster version
3.4.0 until the last member runs 3.5 and 3.5.0 after. Afterwards a 3.4 binary cannot start on the data
(etcd refuses a downgrade below the cluster version), and a snapshot taken on 3.5 is one 3.5's etcdutl reads.

At every step the upgrade's decision (etcdapi/upgrade-plan.h) is taken over what the real cluster answers, read
with protokube's own etcd client (tests/unit/test-upgrade-plan's live test): a backup first, then the member
whose turn it is and no other, a wait for a member that is down, the cluster version, the refused downgrade.

etcd's peers find each other by name through a hosts file bind-mounted over /etc/hosts in a private mount
namespace of each member's own. Every process is started and stopped by PID."""
import json
import os
import re
import signal
import subprocess
import time

import pytest
import yaml

from conftest import IN_CI, ROOT, need_root, protokube_bin
from test_etcd_members import stop_etcd

CLUSTER = "upgrade.k8s.test"
CLIENT_PORT, PEER_PORT = 24811, 24812  # not kops' defaults: nothing else on this host uses them
NODES = {"a": "127.0.0.2", "b": "127.0.0.3", "c": "127.0.0.4"}
IMAGES = {"3.4": "registry.k8s.io/etcd:3.4.13-0", "3.5": "registry.k8s.io/etcd:3.5.16-0"}
SYSTEM_ETCD = "/usr/bin/etcd"  # Debian bookworm's etcd-server: 3.4


def need(what, why):
    """A missing prerequisite: a failure in CI, where make check provides it; a skip elsewhere."""
    if IN_CI:
        pytest.fail(f"{what} is missing: {why}")
    pytest.skip(f"{what} is missing: {why}")


def trixie_dir():
    d = subprocess.run([os.path.join(ROOT, "scripts", "etcd-binaries.sh"), "--dir"], capture_output=True,
                       text=True, timeout=30, check=True).stdout.strip()
    for tool in ("etcd", "etcdctl", "etcdutl"):
        if not os.access(os.path.join(d, tool), os.X_OK):
            need(f"etcd 3.5.16's {tool} in {d}",
                 "run scripts/etcd-binaries.sh (Debian trixie's etcd-server and etcd-client; make check does)")
    return d


def plan_bin():
    build = os.environ.get("PROTOKUBE_BUILD") or os.path.dirname(os.path.dirname(os.path.dirname(protokube_bin())))
    path = os.path.join(build, "tests", "unit", "test-upgrade-plan")
    if not os.access(path, os.X_OK):
        need(path, "the unit tests are not built (meson compile)")
    return path


def url(m):
    return f"http://{NODES[m]}:{CLIENT_PORT}"


def dns(m):
    return f"etcd-{m}.internal.{CLUSTER}"


class Env:
    def __init__(self, base, pk):
        self.base, self.pk = base, pk
        self.hosts = os.path.join(base, "hosts")
        with open(self.hosts, "w") as f:
            f.write("127.0.0.1 localhost\n" + "".join(f"{ip} {dns(m)}\n" for m, ip in NODES.items()))
        self.manifests = {minor: self.render(minor) for minor in IMAGES}

    def render(self, minor):
        """{member: manifest} that protokube renders for the image of this minor."""
        spec = os.path.join(self.base, f"spec-{minor}.yaml")
        with open(spec, "w") as f:
            f.write("apiVersion: protokube/v1alpha1\nkind: Cluster\n"
                    f"metadata: {{name: {CLUSTER}}}\nspec:\n  cloud: local\n  dns: {{provider: none}}\n"
                    f"  etcdClusters:\n    - {{name: main, image: \"{IMAGES[minor]}\", "
                    f"clientPort: {CLIENT_PORT}, peerPort: {PEER_PORT}}}\n  kubernetesVersion: 1.20.2\n")
        out = {}
        for m in NODES:
            d = os.path.join(self.base, f"render-{minor}-{m}")
            self.pk("--log-level", "error", "render", "-c", spec, "--out", d, "--etcd-member", f"main={m}/a,b,c",
                    "--etcd-mount", f"main={self.base}/vol-{m}", check=0)
            with open(os.path.join(d, "etcd.manifest")) as f:
                out[m] = yaml.safe_load(f)
        return out

    def in_ns(self, argv):
        """argv in a mount namespace of its own whose /etc/hosts names the members (exec: the same PID); a slave
        of the host's, so that another test's unmount reaches it (a private copy would keep that test's volume
        mounted, and busy, for as long as the member runs)."""
        return ["unshare", "--mount", "--propagation", "slave", "--", "sh", "-c",
                'mount --bind "$0" /etc/hosts && exec "$@"', self.hosts, *argv]


class Member:
    """One member run from its rendered manifest as kubelet would: the image's binary with the container's
    command, the data dir at the volume's host path, listening on its node's loopback address."""

    def __init__(self, env, m, minor, binaries):
        self.m, self.minor = m, minor
        self.log = os.path.join(env.base, f"etcd-{m}.log")
        pod = env.manifests[minor][m]["spec"]
        c = pod["containers"][0]
        assert c["image"] == IMAGES[minor]
        host_data = next(v["hostPath"]["path"] for v in pod["volumes"] if v["name"] == "etcd-data")
        os.makedirs(host_data, mode=0o700, exist_ok=True)
        flags = []
        for a in c["command"][1:]:
            name, _, value = a.partition("=")
            if name == "--data-dir":
                value = host_data
            elif name in ("--listen-client-urls", "--listen-peer-urls"):
                value = value.replace("0.0.0.0", NODES[m])
            flags.append(f"{name}={value}")
        self.flags = flags
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(env.in_ns([binaries[minor], *flags]), stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self, sig=signal.SIGTERM):
        stop_etcd(self.proc, sig)

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()


def etcdctl(tool, m, *args, timeout=15):
    return subprocess.run([tool, f"--endpoints={url(m)}", "--dial-timeout=2s", "--command-timeout=4s", *args],
                          capture_output=True, text=True, timeout=timeout, env=dict(os.environ, ETCDCTL_API="3"))


def version(m):
    """GET /version of the member: {"etcdserver": ..., "etcdcluster": ...}; None when it does not answer."""
    p = subprocess.run(["curl", "-fsS", "--max-time", "2", f"{url(m)}/version"], capture_output=True, text=True,
                       timeout=10)
    return json.loads(p.stdout) if p.returncode == 0 else None


def healthy(m):
    p = subprocess.run(["curl", "-fsS", "--max-time", "2", f"{url(m)}/health"], capture_output=True, text=True,
                       timeout=10)
    return p.returncode == 0 and json.loads(p.stdout).get("health") == "true"


def wait_for(what, fn, seconds=40, step=0.1):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if fn():
            return
        time.sleep(step)
    raise AssertionError(f"timed out after {seconds} s: {what}")


def plans(wanted, backup=None, allow_downgrade=False):
    """{member: (decision, wait, refusal, subject)} of the upgrade plan over the live cluster, and the
    cluster version the plan read."""
    env = dict(os.environ, UPGRADE_LIVE_WANTED=wanted, CMOCKA_MESSAGE_OUTPUT="stdout",
               UPGRADE_LIVE_MEMBERS=",".join(f"etcd-{m}={url(m)}" for m in NODES))
    env.pop("UPGRADE_LIVE_BACKUP", None)
    if backup:
        env["UPGRADE_LIVE_BACKUP"] = backup
    if allow_downgrade:
        env["UPGRADE_LIVE_ALLOW_DOWNGRADE"] = "1"
    p = subprocess.run([plan_bin()], capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    out = {}
    for line in p.stdout.splitlines():
        w = line.split()
        if w[:1] == ["live-plan"]:
            out[w[1].removeprefix("etcd-")] = tuple(w[2:6])
    cluster = re.search(r"live-versions cluster=(\S+)", p.stdout)
    assert len(out) == 3 and cluster, p.stdout
    return out, cluster.group(1)


def keys(m):
    p = etcdctl("etcdctl", m, "get", "--prefix", "/k/", "--print-value-only")
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


def logs(members):
    return "".join(f"--- etcd {m}\n{e.text()[-2500:]}\n" for m, e in members.items())


@pytest.fixture
def cluster(tmp_path, pk):
    """Three members on 3.4, healthy, with a key written."""
    need_root()
    for tool in (SYSTEM_ETCD, "/usr/bin/etcdctl"):
        if not os.access(tool, os.X_OK):
            pytest.fail(f"{tool} is needed (etcd-server, etcd-client: scripts/install-deps.sh)")
    binaries = {"3.4": SYSTEM_ETCD, "3.5": os.path.join(trixie_dir(), "etcd")}
    plan_bin()
    env = Env(str(tmp_path), pk)
    members = {}
    try:
        for m in NODES:
            members[m] = Member(env, m, "3.4", binaries)
        try:
            wait_for("three healthy members on 3.4", lambda: all(healthy(m) for m in NODES))
        except AssertionError as e:
            raise AssertionError(f"{e}\n{logs(members)}")
        yield env, members, binaries
    finally:
        for e in members.values():
            e.stop(signal.SIGKILL)


def test_rolling_upgrade_3_4_to_3_5(cluster):
    env, members, binaries = cluster
    trixie = os.path.dirname(binaries["3.5"])
    # what protokube renders for each version: 3.5's own flags, 3.4's manifest without them
    flags35 = env.manifests["3.5"]["a"]["spec"]["containers"][0]["command"]
    flags34 = env.manifests["3.4"]["a"]["spec"]["containers"][0]["command"]
    for f in ("--logger=zap", "--log-outputs=stderr", "--experimental-initial-corrupt-check=true"):
        assert f in flags35 and f not in flags34, (flags34, flags35)
    for m in NODES:
        assert version(m) == {"etcdserver": "3.4.23", "etcdcluster": "3.4.0"}, version(m)
    written = ["before"]
    assert etcdctl("etcdctl", "a", "put", "/k/0", "before").returncode == 0

    # the plan: a backup before any member changes, taken by a's master; b and c wait for a
    p, cv = plans("3.5.16")
    assert cv == "3.4.0"
    assert p["a"][0] == "backup", p
    assert p["b"][:2] == ("wait", "turn") and p["b"][3] == "etcd-a", p
    backup = os.path.join(env.base, "pre-upgrade.db")
    s = etcdctl("etcdctl", "a", "snapshot", "save", backup, timeout=60)
    assert s.returncode == 0, s.stderr

    timings = {}
    for i, m in enumerate(NODES, start=1):
        p, cv = plans("3.5.16", backup="pre-upgrade")
        order = list(NODES)
        for o in NODES:  # exactly one member changes: those before it have, those after it wait for it
            if order.index(o) < order.index(m):
                assert p[o][0] == "none" and p[o][3] == f"etcd-{m}", p
            elif o == m:
                assert p[o][0] == "upgrade-member" and p[o][3] == f"etcd-{m}", p
            else:
                assert p[o][:2] == ("wait", "turn") and p[o][3] == f"etcd-{m}", p
        t0 = time.monotonic()
        # b, leading or not, is killed outright: 3.5 must recover a 3.4 WAL after a crash too
        members[m].stop(signal.SIGKILL if m == "b" else signal.SIGTERM)
        t1 = time.monotonic()
        # the two left elect a leader if m led; then they wait for m, which does not answer
        wait_for("the others healthy", lambda: all(healthy(o) for o in NODES if o != m))
        down, _ = plans("3.5.16", backup="pre-upgrade")
        for o in NODES:
            if o != m:
                assert down[o][:2] == ("wait", "unhealthy-member") and down[o][3] == f"etcd-{m}", down
        t2 = time.monotonic()
        members[m] = Member(env, m, "3.5", binaries)
        wait_for(f"{m} healthy on 3.5.16", lambda: healthy(m))
        timings[m] = (round(t1 - t0, 2), round(time.monotonic() - t2, 2))
        assert all(healthy(o) for o in NODES), logs(members)
        v = version(m)
        assert v["etcdserver"] == "3.5.16", v
        if i < len(NODES):  # the cluster version stays while any member runs 3.4
            assert v["etcdcluster"] == "3.4.0", v
        value = f"after-{m}"
        assert etcdctl("etcdctl", m, "put", f"/k/{i}", value).returncode == 0, logs(members)
        written.append(value)
        assert keys(m) == written, logs(members)

    # every member on 3.5: etcd's leader moves the cluster version within seconds
    t3 = time.monotonic()
    wait_for("the cluster version 3.5.0", lambda: all((version(m) or {}).get("etcdcluster") == "3.5.0"
                                                       for m in NODES), seconds=30, step=0.2)
    moved = round(time.monotonic() - t3, 2)
    p, cv = plans("3.5.16", backup="pre-upgrade")
    assert cv == "3.5.0" and all(d[0] == "none" for d in p.values()), p
    # each member by its address (--cluster would dial the names, which only the members' namespaces resolve)
    status = subprocess.run([os.path.join(trixie, "etcdctl"), "--endpoints=" + ",".join(url(m) for m in NODES),
                             "--dial-timeout=2s", "--command-timeout=4s", "endpoint", "status", "-w", "json"],
                            capture_output=True, text=True, timeout=30)
    assert status.returncode == 0, status.stderr
    assert sorted(s["Status"]["version"] for s in json.loads(status.stdout)) == ["3.5.16"] * 3, status.stdout
    print(f"upgrade: each member (stop s, healthy on 3.5 s): {timings}; the cluster version moved "
          f"{moved} s after the last member")

    # back to 3.4: the plan refuses unless asked, and asked, restores the pre-upgrade backup
    p, _ = plans("3.4.13", backup="pre-upgrade")
    assert all(d[0] == "refuse" and d[2] == "downgrade" and d[3] == "3.5.0" for d in p.values()), p
    p, _ = plans("3.4.13", backup="pre-upgrade", allow_downgrade=True)
    assert all(d[0] == "restore" and d[3] == "pre-upgrade" for d in p.values()), p
    # why: a 3.4 binary refuses the data once the cluster version is 3.5
    members["c"].stop()
    old = Member(env, "c", "3.4", binaries)
    try:
        assert old.proc.wait(timeout=30) != 0
    finally:
        old.stop(signal.SIGKILL)
    assert "cluster cannot be downgraded" in old.text(), old.text()[-2000:]
    members["c"] = Member(env, "c", "3.5", binaries)
    wait_for("c healthy on 3.5.16 again", lambda: healthy("c"))
    assert keys("c") == written

    # a backup taken now is a 3.5 snapshot that 3.5's etcdutl reads
    snap = os.path.join(env.base, "after.db")
    assert etcdctl(os.path.join(trixie, "etcdctl"), "a", "snapshot", "save", snap, timeout=60).returncode == 0
    st = subprocess.run([os.path.join(trixie, "etcdutl"), "snapshot", "status", snap, "-w", "json"],
                        capture_output=True, text=True, timeout=30)
    assert st.returncode == 0 and json.loads(st.stdout)["totalKey"] >= len(written), st.stdout + st.stderr
