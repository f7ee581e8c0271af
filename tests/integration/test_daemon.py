"""protokube run on its own: passes, signals, SIGHUP reload (an invalid spec keeps the old one), /healthz and
/metrics (checked by Prometheus' promtool), sd_notify, clean exit within a second of SIGTERM."""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest

from conftest import need_root, protokube_bin

SPEC = """apiVersion: protokube/v1alpha1
kind: Cluster
metadata: {{name: demo.k8s.test}}
spec:
  cloud: local
  dns: {{provider: hosts, ttl: {ttl}, hosts: {{file: {hosts}}}}}
  etcdClusters:
    - {{name: main, image: registry.k8s.io/etcd:3.5.16-0}}
    - {{name: events, image: registry.k8s.io/etcd:3.5.16-0}}
  kubernetesVersion: 1.31.2
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=3) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:  # not listening yet
        return 0, str(e)


def wait_until(fn, timeout=20, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError("condition not met in time")


class Node:
    def __init__(self, tmp):
        self.tmp = tmp
        self.pool = os.path.join(tmp, "pool")
        self.hosts = os.path.join(tmp, "hosts")
        self.spec = os.path.join(tmp, "cluster.yaml")
        self.manifests = os.path.join(tmp, "manifests")
        self.mnt = os.path.join(tmp, "mnt")
        for d in (self.manifests, self.mnt):
            os.makedirs(d)
        with open(self.hosts, "w") as f:
            f.write("127.0.0.1 localhost\n")
        self.write_spec(60)
        self.port = free_port()
        self.proc = None

    def write_spec(self, ttl, text=None):
        with open(self.spec, "w") as f:
            f.write(text if text is not None else SPEC.format(ttl=ttl, hosts=self.hosts))

    def pool_create(self, cl, member):
        subprocess.run([protokube_bin(), "pool", "create", "--pool", self.pool, "--id", f"vol-{cl}-{member}",
                        "--size", "16M", "--zone", "z1", "--tag", "KubernetesCluster=demo.k8s.test",
                        "--tag", "k8s.io/role/master=1", "--tag", f"k8s.io/etcd/{cl}={member}/a,b,c"],
                       check=True, capture_output=True)

    def start(self, extra_env=None):
        env = dict(os.environ, **(extra_env or {}))
        self.log = open(os.path.join(self.tmp, "run.log"), "w+")
        self.proc = subprocess.Popen(
            [protokube_bin(), "-c", self.spec, "--log-format", "json", "run", "--node-name", "a", "--zone", "z1",
             "--internal-ip", "192.0.2.11", "--pool", self.pool, "--manifest-dir", self.manifests,
             "--config-dir", os.path.join(self.tmp, "lib"), "--kubelet-dir", os.path.join(self.tmp, "kubelet"),
             "--mount-root", self.mnt, "--listen", f"127.0.0.1:{self.port}", "--interval", "30s"],
            stdout=subprocess.DEVNULL, stderr=self.log, env=env)

    def logs(self):
        self.log.flush()
        out = []
        with open(self.log.name) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:  # the daemon is still writing this line
                    pass
        return out

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for line in reversed(open("/proc/self/mountinfo").read().splitlines()):
            mp = line.split()[4]
            if mp.startswith(self.mnt + "/"):
                subprocess.run(["umount", mp], check=False)
        p = subprocess.run(["losetup", "-J"], capture_output=True, text=True)
        for d in json.loads(p.stdout or "{}").get("loopdevices", []):
            if (d.get("back-file") or "").startswith(self.pool):
                subprocess.run(["losetup", "-d", d["name"]], check=False)


@pytest.fixture
def node():
    need_root()
    tmp = tempfile.mkdtemp(prefix="pk-daemon-")
    n = Node(tmp)
    yield n
    n.stop()
    shutil.rmtree(tmp, ignore_errors=True)


def test_health_metrics_and_clean_stop(node):
    node.pool_create("main", "a")
    node.pool_create("events", "a")
    node.start()
    # 200 "converging: ..." while the first pass runs, then "ok" once it converged
    wait_until(lambda: get(node.url("/healthz")) == (200, "ok\n"))
    status, body = get(node.url("/metrics"))
    assert status == 200
    assert "protokube_passes_total 1" in body or "protokube_passes_total 2" in body
    assert "protokube_volumes_held 2" in body
    assert "protokube_dns_records_published" in body
    with tempfile.NamedTemporaryFile("w", suffix=".prom") as f:
        f.write(body)
        f.flush()
        p = subprocess.run(["promtool", "check", "metrics"], stdin=open(f.name), capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert get(node.url("/nope"))[0] == 404
    assert os.path.islink(os.path.join(node.manifests, "etcd.manifest"))
    assert "etcd-a.internal.demo.k8s.test" in open(node.hosts).read()
    t = time.monotonic()
    node.proc.send_signal(signal.SIGTERM)
    assert node.proc.wait(timeout=5) == 0
    assert time.monotonic() - t < 1.0, "SIGTERM must end the daemon within a second"


def test_sighup_reload_keeps_old_spec_when_invalid(node):
    node.pool_create("main", "a")
    node.start()
    wait_until(lambda: (lambda st, body: st == 200 and "protokube_passes_total 0\n" not in body)(
        *get(node.url("/metrics"))))
    hosts_before = open(node.hosts).read()
    node.write_spec(0, text="apiVersion: protokube/v1alpha1\nkind: Cluster\nmetadata: {name: demo.k8s.test}\n"
                               "spec:\n  clowd: local\n")
    node.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: any("Keeping the previous spec" in l.get("msg", "") for l in node.logs()))
    msgs = [l.get("msg", "") for l in node.logs()]
    assert any("cluster.yaml:5:3" in m and "clowd" in m for m in msgs), msgs
    assert node.proc.poll() is None, "an invalid spec on reload must not stop the daemon"
    assert get(node.url("/healthz"))[0] == 200
    assert open(node.hosts).read() == hosts_before
    # A valid new spec is taken: the TTL change reaches the records' provider on the reload pass.
    node.write_spec(30)
    node.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: any("Reloaded the cluster spec" in l.get("msg", "") for l in node.logs()))
    wait_until(lambda: get(node.url("/metrics"))[1].count("protokube_passes_total") and
               "protokube_passes_total 1\n" not in get(node.url("/metrics"))[1])


def test_waiting_is_healthy_converging_and_wakes_on_pool_change(node):
    # No volume in the pool yet: the node waits (converging), then a volume appears and wakes the loop
    # long before the 30 s interval.
    os.makedirs(node.pool)
    node.start()
    status, body = wait_until(lambda: (lambda s: s if s[0] == 200 else None)(get(node.url("/healthz"))))
    assert body.startswith("converging"), body
    t = time.monotonic()
    node.pool_create("main", "a")
    wait_until(lambda: os.path.islink(os.path.join(node.manifests, "etcd.manifest")), timeout=10)
    assert time.monotonic() - t < 10


def test_sd_notify(node):
    node.pool_create("main", "a")
    sock_path = os.path.join(node.tmp, "notify.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock_path)
    s.settimeout(20)
    node.start(extra_env={"NOTIFY_SOCKET": sock_path})
    got = []  # one sd_notify assignment per element (a datagram may carry several, one per line)
    deadline = time.monotonic() + 20
    while "READY=1" not in got and time.monotonic() < deadline:
        got += s.recv(4096).decode().splitlines()
    assert "READY=1" in got
    assert any(m.startswith("STATUS=") for m in got)
    # the pass's outcome follows readiness as STATUS= (events has no volume here: waiting)
    outcome = "STATUS=converging: 1 etcd cluster(s) have no volume for this node yet"
    while outcome not in got and time.monotonic() < deadline:
        got += s.recv(4096).decode().splitlines()
    assert got.index("READY=1") < got.index(outcome), got
    node.proc.send_signal(signal.SIGTERM)
    node.proc.wait(timeout=5)
    while "STOPPING=1" not in got:
        try:
            got += s.recv(4096).decode().splitlines()
        except socket.timeout:
            break
    assert "STOPPING=1" in got
    s.close()


def test_bad_listen_address_is_an_error(node):
    os.makedirs(node.pool)
    p = subprocess.run([protokube_bin(), "-c", node.spec, "run", "--pool", node.pool, "--listen", "localhost",
                        "--node-name", "a", "--zone", "z1", "--internal-ip", "192.0.2.11",
                        "--manifest-dir", node.manifests, "--mount-root", node.mnt,
                        "--config-dir", os.path.join(node.tmp, "lib"), "--kubelet-dir", os.path.join(node.tmp, "kubelet")],
                       capture_output=True, text=True, timeout=10)
    assert p.returncode == 1
    assert "'localhost'" in p.stderr


def slow_tool_path(node, tool, seconds):
    """A PATH whose `tool` is the real one, started after `seconds`: a long e2fsck or mkfs, for real."""
    d = os.path.join(node.tmp, "bin-" + tool)
    os.makedirs(d, exist_ok=True)
    real = shutil.which(tool)
    assert real, tool
    w = os.path.join(d, tool)
    with open(w, "w") as f:
        f.write(f"#!/bin/sh\necho started > {d}/started\nsleep {seconds}\nexec \"{real}\" \"$@\"\n")
    os.chmod(w, 0o755)
    return d, d + ":" + os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")


def test_answers_while_a_long_fsck_runs(node):
    # Review item 6: a pass no longer blocks the loop. While e2fsck runs for seconds, /healthz names the step,
    # /metrics answers, READY=1 was sent at start-up, and SIGTERM is taken at once (the fsck runs to its end).
    node.pool_create("main", "a")
    node.start()
    wait_until(lambda: os.path.islink(os.path.join(node.manifests, "etcd.manifest")))
    node.stop()  # unmounts: the next start checks the filesystem again
    d, path = slow_tool_path(node, "e2fsck", 4)
    sock_path = os.path.join(node.tmp, "notify.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock_path)
    s.settimeout(10)
    node.start(extra_env={"PATH": path, "NOTIFY_SOCKET": sock_path})
    got = []
    while "READY=1" not in got:
        got += s.recv(4096).decode().splitlines()
    wait_until(lambda: os.path.exists(os.path.join(d, "started")), timeout=20)
    latencies = []
    for _ in range(10):
        t = time.monotonic()
        status, body = get(node.url("/healthz"))
        latencies.append(time.monotonic() - t)
        assert status == 200 and body.startswith("converging: e2fsck vol-main-a ("), (status, body)
        status, metrics = get(node.url("/metrics"))
        assert status == 200 and "protokube_pass_running 1" in metrics
        time.sleep(0.1)
    print("healthz latency during e2fsck: max %.1f ms" % (max(latencies) * 1000))
    assert not any(m.startswith("STATUS=converged") for m in got)
    # SIGTERM mid-fsck: the daemon keeps answering and ends once the fsck is done, never interrupting it
    node.proc.send_signal(signal.SIGTERM)
    status, body = get(node.url("/healthz"))
    assert status == 200, body
    assert node.proc.wait(timeout=30) == 0
    msgs = [l.get("msg", "") for l in node.logs()]
    assert any("stopping after the step the pass is in" in m for m in msgs), msgs
    assert any("Checked '/dev/loop" in m for m in msgs), msgs  # e2fsck ran to its end
    s.close()


def test_sigterm_never_interrupts_mkfs(node):
    node.pool_create("main", "a")
    d, path = slow_tool_path(node, "mkfs.ext4", 2)
    node.start(extra_env={"PATH": path})
    wait_until(lambda: os.path.exists(os.path.join(d, "started")), timeout=20)
    node.proc.send_signal(signal.SIGTERM)
    assert node.proc.wait(timeout=30) == 0
    img = os.path.join(node.pool, "vol-main-a.img")
    assert subprocess.run(["blkid", "-p", "-s", "TYPE", "-o", "value", img], capture_output=True,
                          text=True).stdout.strip() == "ext4"
    fsck = subprocess.run(["e2fsck", "-n", "-f", img], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    # the stop came at the next step: the mount that completes the format's action, then nothing more
    assert not os.path.lexists(os.path.join(node.manifests, "etcd.manifest"))
