# SPDX-License-Identifier: Apache-2.0
"""The masters move etcd from 3.4 to 3.5 with no human step (docs/etcd-versions.md, "The masters' pass"),
through the real binary and real etcd with TLS: three masters n1, n2, n3 hold members a, b, c on loop devices
(the cluster of test_etcd_members.py, with a file:// state store); this test plays kubelet: between passes it
(re)starts a member whose manifest's image changed with the binary of that image (Debian's 3.4 for
3.4.13-0, trixie's 3.5.16 for 3.5.16-0), ending the old one with SIGKILL.

The spec is changed to registry.k8s.io/etcd:3.5.16-0 on every master at once. Then: the first pass of a's
master takes the pre-upgrade backup and records it; exactly one member's manifest changes at a time, in tag
order, each only once the one before runs 3.5.16, healthy and caught up; the lock is held from the change to
then; a master whose pass runs again before its new etcd started (restarted mid-way) writes nothing more and
keeps the lock; a member killed with SIGKILL while b's turn comes holds b; every key written before and
during the upgrade is read back from every member; the cluster version moves to 3.5.0 once all run 3.5; the
lock and the markers are gone at the end. Then the spec back at 3.4.13 is refused (below the cluster
version), nothing is written, and a lock the refused master still held is released."""
import json
import os
import signal
import subprocess
import time

import pytest
import yaml

from test_etcd_members import CLIENT_PORT, NODES, EtcdProc, dns, etcdctl, logs, start_cluster, stop_cluster
from test_etcd_members import wait_for
from test_etcd_upgrade import IMAGES, SYSTEM_ETCD, trixie_dir

LOCK_KEY = "/protokube/etcd-upgrade/main"


def image_of(env, m):
    return yaml.safe_load(env.manifest(m))["spec"]["containers"][0]["image"]


class Kubelet:
    """The members as kubelet runs them: each from its manifest on its volume, with its image's binary."""

    def __init__(self, env, etcds, binaries):
        self.env, self.etcds, self.binaries = env, etcds, binaries
        self.images = {m: IMAGES["3.4"] for m in NODES}  # the cold start's manifests

    def kill(self, m):
        p = self.etcds[m].proc
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            p.wait(timeout=10)

    def sync(self):
        """Restarts every member whose manifest's image changed or whose etcd is not running; the members
        restarted."""
        changed = []
        for m in NODES:
            image = image_of(self.env, m)
            if image == self.images[m] and self.etcds[m].proc.poll() is None:
                continue
            self.kill(m)
            self.etcds[m] = EtcdProc(self.env, m, binary=self.binaries[image])
            self.images[m] = image
            changed.append(m)
        return changed


def status(env, m):
    p = etcdctl(env, m, "endpoint", "status", "-w", "json")
    return json.loads(p.stdout)[0]["Status"] if p.returncode == 0 else None


def cluster_version(env, m):
    d = env.client_dir()
    argv = ["curl", "-s", "-m", "3", "--cacert", f"{d}/etcd-ca.crt", "--cert", f"{d}/etcd-client.crt",
            "--key", f"{d}/etcd-client.key", f"https://{dns(m)}:{CLIENT_PORT}/version"]
    p = subprocess.run(env.in_ns(argv), capture_output=True, text=True, timeout=10)
    return json.loads(p.stdout).get("etcdcluster") if p.returncode == 0 and p.stdout.startswith("{") else None


def lock_holder(env):
    p = etcdctl(env, "a", "get", LOCK_KEY, "--print-value-only")
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def healthy_at(env, m, version=None):
    s = status(env, m)
    return s is not None and (version is None or s["version"] == version) and s["leader"] != 0


def upgrade_pass(env, m, kubelet):
    """One pass of m's master; what it printed, for the assertion messages."""
    p = env.once(m)
    assert p.returncode in (0, 1, 3), p.stderr  # converged, failed (a refusal), waiting
    return p.stderr


def marker(env, m):
    return os.path.join(env.volume_mount(m), "k8s.io", "etcd-upgrade-main")


@pytest.fixture
def cluster34(tmp_path):
    binaries = {IMAGES["3.4"]: SYSTEM_ETCD, IMAGES["3.5"]: os.path.join(trixie_dir(), "etcd")}
    env, etcds = start_cluster(tmp_path)
    yield env, Kubelet(env, etcds, binaries), tmp_path / "store"
    stop_cluster(env, etcds)


def test_rolling_upgrade(cluster34):
    env, kubelet, store = cluster34
    assert etcdctl(env, "a", "put", "/k0", "before").returncode == 0
    env.spec_text = env.spec_text.replace(IMAGES["3.4"], IMAGES["3.5"])

    # a record that cannot be read is not absent: nothing is taken or written over it, the plan says why
    path = store / "restores" / "main" / "upgrade.json"
    path.parent.mkdir(parents=True)
    path.write_text("{")
    upgrade_pass(env, "a", kubelet)
    assert path.read_text() == "{" and image_of(env, "a") == IMAGES["3.4"]
    assert "cannot be read" in env.plan("a").stdout
    path.unlink()

    # a's turn comes first: the backup, recorded; no manifest changes in that pass, nor in b's and c's
    err = upgrade_pass(env, "a", kubelet)
    record = json.loads(path.read_text())
    assert record["from"].startswith("3.4.") and record["to"] == "3.5.16", record
    assert (store / "backups" / "main" / record["backup"] / "manifest.json").exists(), err
    for m in "bc":
        err = upgrade_pass(env, m, kubelet)
        assert "etcd-a" in env.plan(m).stdout, err
    assert set(kubelet.sync()) == set(), "no manifest changes before a's turn"

    def turn(m, down=None):
        """m's master changes its member: the lock is its, no other manifest changed; run again before its
        etcd restarted, it writes nothing more; then its etcd runs 3.5.16 and the lock is released."""
        before = {o: image_of(env, o) for o in NODES}
        err = upgrade_pass(env, m, kubelet)
        assert image_of(env, m) == IMAGES["3.5"], f"{m}: {err}\n{env.plan(m).stdout}"
        assert {o: image_of(env, o) for o in NODES if o != m} == {o: before[o] for o in NODES if o != m}
        assert lock_holder(env) == NODES[m][0]
        assert os.path.exists(marker(env, m))
        for o in NODES:  # the others wait; m's master again (restarted mid-way): nothing more
            upgrade_pass(env, o, kubelet)
        assert {o: image_of(env, o) for o in NODES} == {**before, m: IMAGES["3.5"]}
        assert kubelet.sync() == [m]
        wait_for(f"etcd-{m} runs 3.5.16, healthy", lambda: healthy_at(env, m, "3.5.16"), 60, 0.5)
        assert etcdctl(env, m, "put", f"/after-{m}", m).returncode == 0
        wait_for(f"{m}'s master releases the lock",
                 lambda: (upgrade_pass(env, m, kubelet), not lock_holder(env))[1], 60, 1)
        # the marker goes with the change (for the last member, once etcd moved the cluster version: below)
        assert m == "c" or not os.path.exists(marker(env, m))

    turn("a")
    # b's turn comes while c is down (SIGKILL): b waits, naming c
    kubelet.kill("c")
    err = upgrade_pass(env, "b", kubelet)
    assert image_of(env, "b") == IMAGES["3.4"], err
    assert "etcd-c" in env.plan("b").stdout
    assert kubelet.sync() == ["c"]
    wait_for("etcd-c healthy again", lambda: healthy_at(env, "c"), 60, 0.5)
    assert cluster_version(env, "a") == "3.4.0"
    turn("b")
    assert cluster_version(env, "a") == "3.4.0"
    turn("c")
    wait_for("the cluster version 3.5.0", lambda: cluster_version(env, "a") == "3.5.0", 60, 1)
    for m in NODES:
        assert status(env, m)["version"] == "3.5.16"
        for k, v in (("/k0", "before"), ("/after-a", "a"), ("/after-b", "b"), ("/after-c", "c")):
            p = etcdctl(env, m, "get", k, "--print-value-only")
            assert p.stdout.strip() == v, f"{m} {k}: {p.stdout!r} {p.stderr}\n{logs(kubelet.etcds)}"
    for m in NODES:  # done: nothing left to change, nothing held
        upgrade_pass(env, m, kubelet)
    assert kubelet.sync() == [] and not lock_holder(env)
    assert not any(os.path.exists(marker(env, m)) for m in NODES)

    # the way back below the cluster version is refused unless asked for
    env.spec_text = env.spec_text.replace(IMAGES["3.5"], IMAGES["3.4"])
    for m in NODES:
        err = upgrade_pass(env, m, kubelet)
        out = env.plan(m).stdout
        assert "refuse (downgrade)" in out and "3.5.0" in out, f"{out}\n{err}"
    assert kubelet.sync() == []
    # a lock this master still held when its change was refused (the spec went back before its pass released
    # it) is released by the refusal: a refused change holds nothing
    lease = etcdctl(env, "a", "lease", "grant", "600").stdout.split()[1]
    assert etcdctl(env, "a", "put", LOCK_KEY, NODES["a"][0], f"--lease={lease}").returncode == 0
    assert lock_holder(env) == NODES["a"][0]
    upgrade_pass(env, "a", kubelet)
    assert not lock_holder(env)


def killed_pass(env, m, done, seconds=60):
    """A pass of m's master, SIGKILLed the moment done() holds (what it did by then stays, the rest is the next
    pass's, as when a master dies there). Whether the kill came before the pass ended."""
    p = subprocess.Popen(env.node_argv("once", m), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=env.environ(), start_new_session=True)
    deadline, killed = time.monotonic() + seconds, False
    while p.poll() is None and time.monotonic() < deadline:
        if done():
            os.killpg(p.pid, signal.SIGKILL)
            killed = True
            break
        time.sleep(0.002)
    p.wait(timeout=30)
    return killed and p.returncode == -signal.SIGKILL


def test_a_master_killed_at_each_step_resumes(cluster34):
    """The same upgrade with each master's pass killed (SIGKILL) right after each step it takes: the backup's
    record, the marker (the lock taken, the manifest not yet written), the manifest at 3.5.16, the marker's
    removal (the lock released). The next pass of that master finishes the step and the upgrade goes on: one
    member at a time, in tag order, every key back, cluster version 3.5.0, nothing held at the end."""
    env, kubelet, store = cluster34
    assert etcdctl(env, "a", "put", "/k0", "before").returncode == 0
    env.spec_text = env.spec_text.replace(IMAGES["3.4"], IMAGES["3.5"])
    record = store / "restores" / "main" / "upgrade.json"
    landed = []
    landed.append(killed_pass(env, "a", record.exists))
    for m in NODES:
        others = {o: image_of(env, o) for o in NODES if o != m}
        landed.append(killed_pass(env, m, lambda: os.path.exists(marker(env, m))))
        landed.append(killed_pass(env, m, lambda: image_of(env, m) == IMAGES["3.5"]))
        upgrade_pass(env, m, kubelet)  # whatever the kills left: the manifest at 3.5.16, the lock m's
        assert image_of(env, m) == IMAGES["3.5"] and lock_holder(env) == NODES[m][0]
        assert {o: image_of(env, o) for o in NODES if o != m} == others, "only m's manifest changed"
        assert kubelet.sync() == [m]
        wait_for(f"etcd-{m} runs 3.5.16, healthy", lambda: healthy_at(env, m, "3.5.16"), 60, 0.5)
        assert etcdctl(env, m, "put", f"/after-{m}", m).returncode == 0
        wait_for(f"{m}'s master releases the lock",
                 lambda: (killed_pass(env, m, lambda: not os.path.exists(marker(env, m))), not lock_holder(env))[1],
                 60, 1)
    wait_for("the cluster version 3.5.0", lambda: cluster_version(env, "a") == "3.5.0", 60, 1)
    for m in NODES:
        upgrade_pass(env, m, kubelet)
        assert status(env, m)["version"] == "3.5.16"
        for k, v in (("/k0", "before"), ("/after-a", "a"), ("/after-b", "b"), ("/after-c", "c")):
            assert etcdctl(env, m, "get", k, "--print-value-only").stdout.strip() == v
    assert kubelet.sync() == [] and not lock_holder(env)
    assert not any(os.path.exists(marker(env, m)) for m in NODES)
    print(f"\n{sum(landed)} of {len(landed)} kills landed before their pass ended")
