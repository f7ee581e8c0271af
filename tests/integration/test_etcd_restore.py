# SPDX-License-Identifier: Apache-2.0
"""A whole etcd cluster restored from a backup (docs/etcd-restore.md), through the real binary and
real etcd 3.4 with TLS: the three masters of test_etcd_members (members a, b, c on loop devices, certificates
from protokube's pass, a file:// state store). A backup is taken, keys are written after it, then `protokube
etcd restore main`; each master's passes download the snapshot to its volume, take etcd's manifest away, wait
until etcd has no file open on the volume, move the data aside and write the manifest with the init container
that restores the snapshot. This test plays kubelet: it stops the etcd whose manifest went away, and runs a
manifest's init containers (their command, with Debian's etcdctl and sh, the container paths mapped to the
host paths of their volumes) before it starts etcd. Afterwards the keys of the snapshot are there, the key
written after it is not, every member is healthy in a new cluster (a new cluster ID) with the same names and
peer URLs, and the old data is still aside on every volume. A master killed between a step and its record
resumes; a restore of a cluster not in the spec, or of a snapshot that does not exist, is a clear error."""
import json
import os
import signal
import subprocess
import time

import yaml

from test_etcd_backups import pk
from test_etcd_members import (CLIENT_PORT, NODES, PEER_PORT, EtcdProc, dns, etcdctl, start_cluster,
                               stop_cluster, wait_for)
import pytest


def run_init_containers(env, member):
    """What kubelet does before a pod's containers: each init container to completion, in order."""
    doc = yaml.safe_load(env.manifest(member))
    pod = doc["spec"]
    hosts = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"]}
    for c in pod.get("initContainers", []):
        mounts = sorted(((m["mountPath"], hosts[m["name"]]) for m in c.get("volumeMounts", [])),
                        key=lambda m: -len(m[0]))
        argv = []
        for arg in c["command"]:
            for inside, outside in mounts:
                if arg == inside or arg.startswith(inside + "/"):
                    arg = outside + arg[len(inside):]
                    break
            argv.append(arg)
        for _, outside in mounts:  # kubelet's DirectoryOrCreate
            os.makedirs(outside, exist_ok=True)
        environ = dict(os.environ, **{e["name"]: e["value"] for e in c.get("env", [])})
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=environ)
        assert p.returncode == 0, f"init container {c['name']} of {member}: {p.stdout}{p.stderr}"


class Kubelet:
    """Keeps each member's etcd in line with the manifest on its volume, as kubelet does with its link."""

    def __init__(self, env, etcds):
        self.env, self.etcds = env, etcds
        self.texts = {m: env.manifest(m) for m in etcds}
        self.init_runs = {m: 0 for m in NODES}

    def sync(self, member):
        text = self.env.manifest(member)
        if text == self.texts.get(member) and (text is None or member in self.etcds):
            return
        if member in self.etcds:
            self.etcds.pop(member).stop()
        self.texts[member] = text
        if text is None:
            return
        if "initContainers" in yaml.safe_load(text)["spec"]:
            self.init_runs[member] += 1
        run_init_containers(self.env, member)
        self.etcds[member] = EtcdProc(self.env, member)


def manifest_path(env, member):
    return os.path.join(env.volume_mount(member), "k8s.io", "manifests", "etcd.manifest")


def state(env, member):
    path = os.path.join(env.volume_mount(member), "k8s.io", "restore-main.json")
    return json.load(open(path)) if os.path.exists(path) else None


def rewind(env, member, step):
    """A master that died after a step and before it recorded it: the state file says the step before."""
    path = os.path.join(env.volume_mount(member), "k8s.io", "restore-main.json")
    st = json.load(open(path))
    if step is None:
        os.unlink(path)
    else:
        st["step"] = step
        with open(path, "w") as f:
            json.dump(st, f)


def kill_a_pass(env, member, delay):
    """A pass of member's master, killed with SIGKILL delay seconds after it started (wherever it is then);
    True when it was killed (it had not finished)."""
    node, ip = NODES[member]
    argv = env.argv("once", node)
    argv[2] = env.node_spec(node)
    argv[argv.index("--internal-ip") + 1] = ip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        return True


def cluster_id(env, member):
    p = etcdctl(env, member, "endpoint", "status", "-w", "json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)[0]["Status"]["header"]["cluster_id"]


def get(env, member, key):
    p = etcdctl(env, member, "get", key, "--print-value-only")
    assert p.returncode == 0, p.stderr
    return p.stdout.strip() or None


def store_path(env, *parts):
    return os.path.join(env.store_url[len("file://"):], *parts)


@pytest.fixture
def cluster(tmp_path):
    env, etcds = start_cluster(tmp_path)
    yield env, etcds
    stop_cluster(env, etcds)


def test_whole_cluster_restore(cluster, tmp_path):
    env, etcds = cluster
    for i in range(50):
        assert etcdctl(env, "a", "put", f"/k/{i:02d}", f"v{i}").returncode == 0
    p = pk(env, "a", "etcd", "backup", "main", "--internal-ip", NODES["a"][1], "--tmp-dir", str(tmp_path))
    assert p.returncode == 0, p.stderr
    snapshot = p.stdout.split()[1]
    assert etcdctl(env, "a", "put", "/after", "later").returncode == 0
    old_cluster = cluster_id(env, "a")

    # bad requests: clear errors, nothing written
    p = pk(env, "a", "etcd", "restore", "nope")
    assert p.returncode != 0 and "no etcd cluster 'nope'" in p.stderr, p.stderr
    p = pk(env, "a", "etcd", "restore", "main", "20200101T000000Z")
    assert p.returncode != 0 and "no backup '20200101T000000Z'" in p.stderr, p.stderr
    p = pk(env, "a", "etcd", "restore", "main", "last-tuesday")
    assert p.returncode != 0 and "invalid snapshot 'last-tuesday'" in p.stderr, p.stderr
    assert not os.path.exists(store_path(env, "restores"))

    # a request nobody serves: --wait names that nobody reported; a second one is refused without --force
    p = pk(env, "a", "etcd", "restore", "main", "--wait", "1s")
    assert p.returncode != 0 and "no member reported" in p.stderr, p.stderr
    first = p.stdout.split()[0]
    p = pk(env, "a", "etcd", "restore", "main")
    assert p.returncode != 0 and f"restore {first}" in p.stderr and "--force" in p.stderr, p.stderr
    node, _ = NODES["a"]
    waiter = subprocess.Popen([env.bin, "-c", env.node_spec(node), "etcd", "restore", "main", snapshot,
                               "--force", "--wait", "180s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        wait_for("the forced request", lambda: json.load(open(store_path(env, "restores", "main",
                                                                           "request.json")))["id"] != first)
        req = json.load(open(store_path(env, "restores", "main", "request.json")))
        assert req["snapshot"] == snapshot
        rid = req["id"]

        kubelet = Kubelet(env, etcds)
        t0 = time.monotonic()
        rewound = set()
        killed, planned = 0, None
        for n in range(60):
            for m in NODES:
                if n < 4 and m == "c":  # kill -9 in the middle of c's passes, wherever they are
                    killed += kill_a_pass(env, m, (0.01, 0.03, 0.06, 0.1)[n])
                r = env.once(m)
                assert r.returncode in (0, 3), r.stdout + r.stderr
                st = state(env, m)
                if m == "a" and not planned and st and st["step"] == "stopping":
                    planned = env.plan("a")
                    assert "etcd main member a: a restore is under way" in planned.stdout, planned.stdout
                # a master killed after a step, before its record: once per step, on every member
                if st and st["id"] == rid and (m, st["step"]) not in rewound:
                    if st["step"] == "stopping":  # died after recording it, before the manifest went
                        rewound.add((m, st["step"]))
                        with open(manifest_path(env, m), "w") as f:
                            f.write(kubelet.texts[m])
                        r = env.once(m)
                        assert r.returncode in (0, 3), r.stdout + r.stderr
                        assert env.manifest(m) is None
                    elif st["step"] == "restoring":  # died after the move (a) or the manifest, unrecorded
                        rewound.add((m, st["step"]))
                        rewind(env, m, "stopping" if m == "a" else "moved")
                        r = env.once(m)
                        assert r.returncode in (0, 3), r.stdout + r.stderr
                        assert state(env, m)["step"] == "restoring"
                kubelet.sync(m)
            if all((state(env, m) or {}).get("step") == "done" and (state(env, m) or {}).get("id") == rid
                   for m in NODES):
                break
            time.sleep(0.5)
        elapsed = time.monotonic() - t0
        assert all(state(env, m) == {"id": rid, "step": "done"} for m in NODES), \
            {m: state(env, m) for m in NODES}
        assert rewound, "no step was rewound"
        assert planned, "plan was not asked during the restore"
        assert killed > 0, "no pass was killed before it finished"
        for m in NODES:  # the manifest without the init container runs
            kubelet.sync(m)
            assert "initContainers" not in env.manifest(m)
            assert kubelet.init_runs[m] >= 1

        out, err = waiter.communicate(timeout=60)
        assert waiter.returncode == 0, err
        assert f"main restore {rid} done: a,b,c" in out, out
    finally:
        if waiter.poll() is None:
            waiter.send_signal(signal.SIGTERM)
            waiter.wait(timeout=10)

    # the snapshot's keys, not the later one; a new cluster of the same members; the old data aside
    wait_for("every member healthy", lambda: all(
        etcdctl(env, m, "endpoint", "health").returncode == 0 for m in NODES), seconds=60)
    for m in NODES:
        assert get(env, m, "/k/49") == "v49"
        assert get(env, m, "/before") == "kept"
        assert get(env, m, "/after") is None
        aside = os.path.join(env.volume_mount(m), "var", "etcd", f"data.pre-restore-{rid}", "member")
        assert os.path.isdir(aside), aside
        snap = os.path.join(env.volume_mount(m), "var", "etcd", "restore", f"{rid}.db")
        assert os.stat(snap).st_mode & 0o777 == 0o600
    assert cluster_id(env, "a") != old_cluster
    p = etcdctl(env, "a", "member", "list", "-w", "json")
    ms = {x["name"]: x for x in json.loads(p.stdout)["members"]}
    assert set(ms) == {"etcd-a", "etcd-b", "etcd-c"}
    for m in NODES:
        assert ms[f"etcd-{m}"]["peerURLs"] == [f"https://{dns(m)}:{PEER_PORT}"]
        assert not ms[f"etcd-{m}"].get("isLearner")
    assert etcdctl(env, "b", "put", "/written-after-restore", "ok").returncode == 0

    # a finished restore: later passes change nothing
    for m in NODES:
        r = env.once(m)
        assert r.returncode == 0, r.stdout + r.stderr
        assert state(env, m) == {"id": rid, "step": "done"} and "initContainers" not in env.manifest(m)
    print(f"\nrestore of {snapshot} on 3 members: {elapsed:.1f} s (steps rewound: {len(rewound)}, "
          f"passes killed: {killed})")



def test_unreadable_member_data_holds_the_restore(cluster, tmp_path, monkeypatch):
    """Only absence is absent: while a restore is under way, a data directory that cannot be looked at (EIO
    of a failing volume, through the fault shim) stops the member's restore where it is, held and reported,
    instead of counting as moved aside and going on to restore over it."""
    from test_etcd_members import fault_shim
    env, etcds = cluster
    p = pk(env, "a", "etcd", "backup", "main", "--internal-ip", NODES["a"][1], "--tmp-dir", str(tmp_path))
    assert p.returncode == 0, p.stderr
    p = pk(env, "a", "etcd", "restore", "main", p.stdout.split()[1])
    assert p.returncode == 0, p.stderr
    kubelet = Kubelet(env, etcds)
    for _ in range(20):  # a's passes until its etcd is stopped for the restore
        r = env.once("a")
        assert r.returncode in (0, 3), r.stdout + r.stderr
        kubelet.sync("a")
        if (state(env, "a") or {}).get("step") == "stopping" and "a" not in etcds:
            break
    assert (state(env, "a") or {}).get("step") == "stopping", state(env, "a")
    data = os.path.join(env.volume_mount("a"), "var", "etcd", "data")
    monkeypatch.setenv("LD_PRELOAD", fault_shim())
    monkeypatch.setenv("PK_FAULT_EIO", "/var/etcd/data/member")
    r = env.once("a")
    assert "cannot read" in r.stderr and "Input/output error" in r.stderr, r.stderr
    assert state(env, "a")["step"] == "stopping"
    assert os.path.isdir(os.path.join(data, "member"))  # not moved aside
    assert env.manifest("a") is None  # etcd stays stopped
    monkeypatch.delenv("LD_PRELOAD")
    r = env.once("a")  # readable again: the restore goes on
    assert r.returncode in (0, 3), r.stdout + r.stderr
    assert state(env, "a")["step"] in ("moved", "restoring"), state(env, "a")
