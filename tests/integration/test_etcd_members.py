# SPDX-License-Identifier: Apache-2.0
"""A member whose volume is blank (docs/etcd-members.md), through the real binary and real etcd
(Debian's 3.4) with TLS: three masters n1, n2, n3 hold members a, b, c on loop devices; the certificates come
from protokube's pass with a file:// state store; each etcd runs from the flags of the manifest protokube
wrote on its volume (this test plays kubelet), listening on its own loopback address. The contents of b's
volume are destroyed while a and c run; the next pass on n2 removes the old b, adds a learner under the same
peer URL and writes b's manifest with initial-cluster-state=existing; a later pass promotes the learner once
it caught up. Negative: no replacement while another member is down (quorum), none for a volume with data,
none while another master holds the membership lock.

protokube reaches the other members at the addresses the pool recorded for their holders (127.0.0.2-4), so
it needs no resolver; etcd's peers and etcdctl find each other by name through a hosts file bind-mounted over
/etc/hosts in a private mount namespace of their own. Every process is started and stopped by PID."""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest
import yaml

from conftest import need_root, protokube_bin
from loopdev import CLUSTER, MIB, VolEnv
from test_certs import CertEnv

CLIENT_PORT, PEER_PORT = 24781, 24782  # not kops' defaults: nothing else on this host uses them
NODES = {"a": ("n1", "127.0.0.2"), "b": ("n2", "127.0.0.3"), "c": ("n3", "127.0.0.4")}
SUFFIX = f"internal.{CLUSTER}"
LOCK_KEY = "/protokube/member-change/main"


def dns(m):
    return f"etcd-{m}.{SUFFIX}"


class MemberEnv(CertEnv):
    """CertEnv with one etcd cluster (main) on its own ports, and passes that resolve the member names."""

    def __init__(self, store_url, store_env=None):
        VolEnv.__init__(self, protokube_bin(), clusters=("main",))
        self.store_url, self.store_env = store_url, dict(store_env or {})
        text = open(self.spec).read().replace(
            "image: registry.k8s.io/etcd:3.5.16-0\n",
            # Debian's etcd 3.4 runs the members: the manifest (and a restore's tool) of that version
            f"image: registry.k8s.io/etcd:3.4.13-0\n      clientPort: {CLIENT_PORT}\n"
            f"      peerPort: {PEER_PORT}\n")
        with open(self.spec, "w") as f:
            f.write(text)
        self.spec_text = text
        self.hosts = os.path.join(self.base, "hosts")
        with open(self.hosts, "w") as f:
            f.write("127.0.0.1 localhost\n" + "".join(f"{ip} {dns(m)}\n" for m, (_, ip) in NODES.items()))

    def in_ns(self, argv):
        """argv in a private mount namespace whose /etc/hosts names the members (exec: the same PID)."""
        return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                'mount --bind "$0" /etc/hosts && exec "$@"', self.hosts, *argv]

    def environ(self):
        """The test's environment for protokube: the store's (an s3:// store's AWS settings), nothing else of
        AWS."""
        e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        e.update(self.store_env)
        return e

    def node_argv(self, verb, member, *extra):
        node, ip = NODES[member]
        argv = self.argv(verb, node, *extra)
        argv[2] = self.node_spec(node)
        argv[argv.index("--internal-ip") + 1] = ip
        return argv

    def once(self, member, timeout=120):
        argv = self.node_argv("once", member)
        t0 = time.monotonic()
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=self.environ())
        p.seconds = time.monotonic() - t0
        return p

    def plan(self, member):
        node, ip = NODES[member]
        argv = self.argv("plan", node)
        argv[2] = self.node_spec(node)
        argv[argv.index("--internal-ip") + 1] = ip
        return subprocess.run(argv, capture_output=True, text=True, timeout=60)

    def volume_mount(self, member):
        return self.mount_path(NODES[member][0], f"main-{member}")

    def manifest(self, member):
        path = os.path.join(self.volume_mount(member), "k8s.io", "manifests", "etcd.manifest")
        return open(path).read() if os.path.exists(path) else None

    def client_dir(self):
        return os.path.join(self.pki("n1"), "kube-apiserver")


class EtcdProc:
    """One member run from the manifest on its volume, as kubelet would, on its node's loopback address."""

    def __init__(self, env, member, binary="etcd"):
        self.member, self.log = member, os.path.join(env.base, f"etcd-{member}.log")
        doc = yaml.safe_load(env.manifest(member))
        pod = doc["spec"]
        host_data = next(v["hostPath"]["path"] for v in pod["volumes"] if v["name"] == "etcd-data")
        tls = next(v["hostPath"]["path"] for v in pod["volumes"] if v["name"] == "etcd-tls")
        cmd = pod["containers"][0]["command"]
        ip, flags = NODES[member][1], []
        for f in cmd[1:]:
            name, _, value = f.partition("=")
            if name == "--data-dir":
                value = host_data
            elif name in ("--listen-client-urls", "--listen-peer-urls", "--listen-metrics-urls"):
                value = value.replace("0.0.0.0", ip).replace("127.0.0.1", ip)
            assert not value.startswith("/etc/kubernetes/pki") or os.path.exists(tls)
            flags.append(f"{name}={value}")
        self.flags = flags
        self.proc = subprocess.Popen(env.in_ns([binary, *flags]), stdout=open(self.log, "ab"),
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self):
        stop_etcd(self.proc)

    def text(self):
        return open(self.log, errors="replace").read()


def stop_etcd(proc, sig=signal.SIGTERM):
    """Stops an etcd started by a test (a leader whose peers are gone can take seconds on SIGTERM: SIGKILL
    after 10 s)."""
    if proc.poll() is None:
        os.kill(proc.pid, sig)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def etcdctl(env, member, *args, timeout=15):
    d = env.client_dir()
    argv = ["etcdctl", f"--endpoints=https://{dns(member)}:{CLIENT_PORT}", f"--cacert={d}/etcd-ca.crt",
            f"--cert={d}/etcd-client.crt", f"--key={d}/etcd-client.key", "--dial-timeout=2s",
            "--command-timeout=4s", *args]
    return subprocess.run(env.in_ns(argv), capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, ETCDCTL_API="3"))


def members(env, via):
    p = etcdctl(env, via, "member", "list", "-w", "json")
    assert p.returncode == 0, p.stderr
    return {m.get("name", ""): m for m in json.loads(p.stdout)["members"]}


def wait_for(what, fn, seconds=40, step=0.3):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if fn():
            return
        time.sleep(step)
    raise AssertionError(f"timed out after {seconds} s: {what}")


def destroy(env, member):
    """Everything on the member's volume goes: data, manifest, the lot (the file system stays mounted)."""
    root = env.volume_mount(member)
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def start_cluster(tmp_path, started=tuple(NODES), before=None, store=None):
    """Three masters after their cold-start passes; the members in started run (from their manifests).
    before(env), when given, runs before the first pass (to change the spec). store: (URL, environment) of
    the state store; by default a file:// store in tmp_path."""
    need_root()
    if not shutil.which("etcd") or not shutil.which("etcdctl"):
        pytest.fail("etcd-server and etcd-client are needed (scripts/install-deps.sh)")
    if store is None:
        (tmp_path / "store").mkdir()
        store = ("file://" + str(tmp_path / "store"), {})
    env = MemberEnv(*store)
    if before:
        before(env)
    for m in NODES:  # etcd preallocates a 64 MiB WAL file
        env.create(f"main-{m}", "main", m, list(NODES), size=384 * MIB)
    etcds = {}
    try:
        for m in NODES:  # cold start: nobody answers, every blank member starts a new cluster
            p = env.once(m)
            assert p.returncode == 0, p.stderr
            assert "--initial-cluster-state=new" in env.manifest(m)
        for m in started:
            etcds[m] = EtcdProc(env, m)
        try:
            wait_for("a quorum", lambda: etcdctl(env, "a", "put", "/before", "kept").returncode == 0)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{etcdctl(env, 'a', 'put', '/before', 'kept').stderr}\n{logs(etcds)}")
    except BaseException:
        for e in etcds.values():
            e.stop()
        env.cleanup()
        raise
    return env, etcds


def stop_cluster(env, etcds):
    for e in etcds.values():
        e.stop()
    errors = env.cleanup()
    assert not errors, errors


@pytest.fixture
def cluster(tmp_path):
    """Three masters with a running, healthy, TLS etcd cluster and a key in it."""
    env, etcds = start_cluster(tmp_path)
    yield env, etcds
    stop_cluster(env, etcds)


@pytest.fixture
def bootstrapping(tmp_path):
    """A new cluster that a and c formed; b's master has written its manifest, its etcd has not started."""
    env, etcds = start_cluster(tmp_path, started=("a", "c"))
    yield env, etcds
    stop_cluster(env, etcds)


def logs(etcds):
    return "".join(f"--- etcd {m}\n{e.text()[-2500:]}\n" for m, e in etcds.items())


def test_blank_member_is_replaced(cluster):
    env, etcds = cluster
    old = members(env, "a")
    assert set(old) == {"etcd-a", "etcd-b", "etcd-c"}
    t0 = time.monotonic()
    etcds["b"].stop()
    destroy(env, "b")
    plan = env.plan("b")
    assert plan.returncode == 0, plan.stderr
    assert f"remove-member main {int(old['etcd-b']['ID']):x}" in plan.stdout, plan.stdout
    assert f"add-learner main https://{dns('b')}:{PEER_PORT}" in plan.stdout, plan.stdout

    p = env.once("b")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "removed member" in p.stderr and "added a learner" in p.stderr, p.stderr
    text = env.manifest("b")
    assert "--initial-cluster-state=existing" in text
    after = members(env, "a")
    assert old["etcd-b"]["ID"] not in [m["ID"] for m in after.values()]
    learner = [m for m in after.values() if m.get("isLearner")]
    assert len(learner) == 1 and learner[0]["peerURLs"] == [f"https://{dns('b')}:{PEER_PORT}"], after

    etcds["b"] = EtcdProc(env, "b")  # kubelet starts the new manifest

    def promoted():
        r = env.once("b")
        assert r.returncode in (0, 3), r.stderr  # 3: not converged yet (the learner catches up)
        ms = members(env, "a")
        return "etcd-b" in ms and not ms["etcd-b"].get("isLearner")
    wait_for("b promoted by a later pass", promoted, seconds=60, step=1)
    elapsed = time.monotonic() - t0
    final = members(env, "a")
    assert set(final) == {"etcd-a", "etcd-b", "etcd-c"}, final
    assert not any(m.get("isLearner") for m in final.values())
    assert all(m.get("clientURLs") for m in final.values()), final  # all started
    for m in NODES:  # every member healthy, the key on b's new copy too
        assert etcdctl(env, m, "endpoint", "health").returncode == 0, logs(etcds)
    got = etcdctl(env, "b", "get", "/before", "--print-value-only", "--consistency=s")
    assert got.stdout.strip() == "kept", got.stdout + got.stderr
    # the marker is gone and the next pass is quiet: no change to membership or manifest
    assert not os.path.exists(os.path.join(env.volume_mount("b"), "k8s.io", "member-change-main"))
    p = env.once("b")
    assert p.returncode == 0, p.stderr
    assert env.manifest("b") == text
    assert members(env, "a") == final
    print(f"\nblank member b replaced: three healthy voting members in {elapsed:.1f} s")


def test_a_member_that_never_ran_is_not_replaced(bootstrapping):
    """At a cold start a and c can form the cluster before b's etcd runs: b is blank, the others answer and
    list etcd-b by name (from initial-cluster) but without client URLs. That is a bootstrap, not a lost
    member: b starts as a member of the new cluster, nothing is removed (the 3-master simulation found this)."""
    env, etcds = bootstrapping
    old = members(env, "a")
    assert "etcd-b" in old and not old["etcd-b"].get("clientURLs"), old
    p = env.once("b")
    assert p.returncode == 0, p.stderr
    assert "removed member" not in p.stderr and "learner" not in p.stderr, p.stderr
    assert "--initial-cluster-state=new" in env.manifest("b")
    etcds["b"] = EtcdProc(env, "b")
    wait_for("b started", lambda: bool(members(env, "a")["etcd-b"].get("clientURLs")))
    assert members(env, "a")["etcd-b"]["ID"] == old["etcd-b"]["ID"]
    assert etcdctl(env, "b", "endpoint", "health").returncode == 0


def test_no_replacement_without_quorum(cluster):
    env, etcds = cluster
    old = members(env, "a")
    etcds["b"].stop()
    etcds["c"].stop()  # a alone: removing b would leave no majority of healthy members
    destroy(env, "b")
    p = env.once("b")
    assert "not every other member is healthy" in p.stderr, p.stderr
    assert env.manifest("b") is None  # held back
    etcds["c"] = EtcdProc(env, "c")
    wait_for("a and c again", lambda: etcdctl(env, "a", "put", "/x", "y").returncode == 0)
    assert members(env, "a")["etcd-b"]["ID"] == old["etcd-b"]["ID"]  # nothing was removed


def test_no_replacement_for_a_volume_with_data(cluster):
    env, etcds = cluster
    old = members(env, "a")
    etcds["b"].stop()  # b is down, its data is on its volume
    text = env.manifest("b")
    p = env.once("b")
    assert p.returncode == 0, p.stderr
    assert "removed member" not in p.stderr and "learner" not in p.stderr, p.stderr
    assert env.manifest("b") == text
    assert members(env, "a") == old


def fault_shim():
    """The LD_PRELOAD shim of tests/fault: stat/open of the paths named by PK_FAULT_EIO fail with EIO."""
    build = os.environ.get("PROTOKUBE_BUILD") or os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(protokube_bin()))))
    path = os.path.join(build, "tests", "fault", "libpk-fault-eio.so")
    assert os.path.exists(path), f"{path}: build the tests (meson's tests option)"
    return path


def test_unreadable_data_is_not_blank(cluster, monkeypatch):
    """Only "absent" is blank: a data directory that cannot be looked at (ELOOP here; EIO of a failing disk
    through the fault shim) or a replacement marker that cannot be read holds the member, with the path and
    the cause in the plan and the pass's log. A blank member would be removed and re-added (a and c run)."""
    env, etcds = cluster
    old = members(env, "a")
    etcds["b"].stop()
    data = os.path.join(env.volume_mount("b"), "var", "etcd", "data")
    text = env.manifest("b")

    def held(cause):
        plan = env.plan("b")
        assert "remove-member" not in plan.stdout and "add-learner" not in plan.stdout, plan.stdout
        assert "manifest held back" in plan.stdout and cause in plan.stdout, plan.stdout + plan.stderr
        p = env.once("b")
        assert "removed member" not in p.stderr and "learner" not in p.stderr, p.stderr
        assert cause in p.stderr, p.stderr
        assert members(env, "a") == old

    os.rename(os.path.join(data, "member"), os.path.join(data, "member.kept"))
    os.symlink("member", os.path.join(data, "member"))  # a loop: ELOOP
    try:
        held("Too many levels of symbolic links")
    finally:
        os.unlink(os.path.join(data, "member"))
        os.rename(os.path.join(data, "member.kept"), os.path.join(data, "member"))

    monkeypatch.setenv("LD_PRELOAD", fault_shim())
    monkeypatch.setenv("PK_FAULT_EIO", "/var/etcd/data/member")
    held("Input/output error")
    monkeypatch.setenv("PK_FAULT_EIO", "/k8s.io/member-change-main")
    held("Input/output error")
    monkeypatch.delenv("LD_PRELOAD")
    p = env.once("b")  # readable again: its data, its manifest as before
    assert p.returncode == 0, p.stderr
    assert env.manifest("b") == text


def test_no_replacement_while_another_master_holds_the_lock(cluster):
    env, etcds = cluster
    old = members(env, "a")
    # another master's change in flight: its lock key, on a lease as protokube takes it
    lease = etcdctl(env, "a", "lease", "grant", "60").stdout.split()[1]
    assert etcdctl(env, "a", "put", LOCK_KEY, "n3", f"--lease={lease}").returncode == 0
    etcds["b"].stop()
    destroy(env, "b")
    p = env.once("b")
    assert "holds the membership lock" in p.stderr, p.stderr
    assert env.manifest("b") is None
    assert members(env, "a")["etcd-b"]["ID"] == old["etcd-b"]["ID"]
    # the lock released, the next pass goes ahead
    assert etcdctl(env, "a", "lease", "revoke", lease).returncode == 0
    p = env.once("b")
    assert "added a learner" in p.stderr, p.stderr
    assert etcdctl(env, "a", "get", LOCK_KEY, "--print-value-only").stdout.strip() == ""  # released


def test_concurrent_passes_make_one_change(cluster):
    """Two passes for the blank member at the same moment (a restarted daemon next to a `protokube once`):
    the lock lets one change through; the other is held back or finds the learner added and only writes
    the manifest. Exactly one removal and one learner, never two."""
    env, etcds = cluster
    etcds["b"].stop()
    destroy(env, "b")
    procs = [subprocess.Popen(_argv(env, "b"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert sum("removed member" in err for _, err in outs) == 1, outs
    assert sum("added a learner" in err for _, err in outs) == 1, outs
    after = members(env, "a")
    assert len(after) == 3 and sum(bool(m.get("isLearner")) for m in after.values()) == 1, after


def _argv(env, member):
    node, ip = NODES[member]
    argv = env.argv("once", node)
    argv[2] = env.node_spec(node)
    argv[argv.index("--internal-ip") + 1] = ip
    return argv
