# SPDX-License-Identifier: Apache-2.0
"""The self-hosted pivot (docs/pivot.md) against a real master: `protokube once` writes the static
pods of one master (spec selfHosted: true: --permit-port-sharing), a real kubelet 1.20.2 with its own
containerd (tests/k8s/node.py) runs them, then `protokube pivot` hands the control plane to DaemonSets and
Deployments through the real kube-apiserver.

protokube runs on the host, in a mount namespace of its own where the test's hosts file (which protokube's
hosts provider fills: api.internal.<cluster> -> the master) is /etc/hosts: the pivot reaches the API by its
internal name, as on a real master, and its own apiserver by that name too (connect_to).

- rollback: the spec gives the self-hosted kube-apiserver an image that does not exist; with a short ready
  deadline (PROTOKUBE_PIVOT_READY_DEADLINE) the pivot fails, says which pod and why (the pull error), and the
  bootstrap manifests and pods stay: the API answers all along.

Timing (2 cores, shared): a cold start of the node ~60-90 s, the rollback test ~2-3 min."""
import json
import os
import ssl
import urllib.request
import subprocess
import sys
import time

import pytest

from conftest import ROOT, need_root, protokube_bin
from loopdev import MIB, VolEnv

sys.path.insert(0, os.path.join(ROOT, "tests", "k8s"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from netlab import NetLab  # noqa: E402
from node import Node  # noqa: E402
import configz  # noqa: E402  (tests/k8s)
from test_k8s_master import ETCD_IMAGE, HOST_LOGS, host_logs_before, kubernetes_bin, open_elsewhere  # noqa: E402

# A /24 of its own in 198.18.0.0/15: the simulation has .42, test_k8s_master .43.
BRIDGE = "198.18.47.1"
NODE_IP = "198.18.47.10"
BOOTSTRAP = ("kube-apiserver.manifest", "kube-controller-manager.manifest", "kube-scheduler.manifest")
MISSING_IMAGE = "registry.k8s.io/kube-apiserver:v1.20.2-does-not-exist"


def readyz_why(pki, timeout=5):
    """GET /readyz on the master's address as the admin: (ok, why not: the HTTP status or the connection's
    error)."""
    ctx = ssl.create_default_context(cafile=os.path.join(pki, "admin", "ca.crt"))
    ctx.load_cert_chain(os.path.join(pki, "admin", "client.crt"), os.path.join(pki, "admin", "client.key"))
    try:
        with urllib.request.urlopen(f"https://{NODE_IP}:443/readyz", context=ctx, timeout=timeout) as r:
            return r.status == 200, f"HTTP {r.status}"
    except urllib.error.HTTPError as e:
        return False, f"HTTP {e.code}"
    except OSError as e:
        return False, str(getattr(e, "reason", None) or e)


class PivotMaster:
    """The master as test_k8s_master's (kubectl with the admin kubeconfig at NODE_IP, /readyz), plus
    protokube's pivot."""

    def __init__(self, env, pki, hosts, state):
        self.env, self.pki, self.hosts, self.state = env, pki, hosts, state
        self.kubectl = os.path.join(kubernetes_bin(), "kubectl")
        with open(os.path.join(pki, "admin", "kubeconfig")) as f:
            text = f.read()
        self.kubeconfig = os.path.join(env.base, "admin.kubeconfig")
        fd = os.open(self.kubeconfig, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("".join(f"    server: https://{NODE_IP}:443\n" if line.strip().startswith("server:")
                            else line for line in text.splitlines(keepends=True)))

    def kubectl_json(self, *args):
        p = subprocess.run([self.kubectl, "--kubeconfig", self.kubeconfig, "--request-timeout=10s", *args,
                            "-o", "json"], capture_output=True, text=True, timeout=30)
        if p.returncode != 0:
            return None, p.stderr.strip()
        return json.loads(p.stdout), ""

    def readyz(self, timeout=5):
        return self.readyz_why(timeout)[0]

    def readyz_why(self, timeout=5):
        return readyz_why(self.pki, timeout)

    def pivot_argv(self, *extra, spec=None, node="a"):
        argv = self.env.argv("pivot", node, *extra)
        argv[argv.index("--internal-ip") + 1] = NODE_IP
        if spec:
            argv[argv.index("-c") + 1] = spec
        # the hosts file as /etc/hosts, in a mount namespace of protokube's own
        return ["unshare", "--mount", "--propagation", "slave", "--", "sh", "-c",
                'mount --bind "$0" /etc/hosts && exec "$@"', self.hosts, *argv]

    def pivot(self, *extra, spec=None, env=None, timeout=600, node="a", state=None):
        e = dict(os.environ, PROTOKUBE_STATE_DIR=state or self.state, **(env or {}))
        return subprocess.run(self.pivot_argv(*extra, spec=spec, node=node), capture_output=True, text=True,
                              timeout=timeout, env=e)


def write_spec(env, store, pki, hosts, path, apiserver_image=None):
    with open(env.spec) as f:
        spec = f.read()
    spec = spec.replace("registry.k8s.io/etcd:3.5.16-0", ETCD_IMAGE)
    spec = spec.replace("    provider: none", f"    provider: hosts\n    hosts:\n      file: {hosts}")
    spec = spec.replace("  kubernetesVersion: 1.31.2", f"  stateStore: file://{store}\n  pki:\n    dir: {pki}\n"
                        "  kubernetesVersion: 1.20.2\n  selfHosted: true")
    image = f"\n    image: {apiserver_image}" if apiserver_image else ""
    spec = spec.replace("  kubeAPIServer: {}", f"  kubeAPIServer:\n    advertiseAddress: {NODE_IP}{image}")
    with open(path, "w") as f:
        f.write(spec)


@pytest.fixture
def master():
    need_root()
    kubernetes_bin()
    logs_before = host_logs_before()
    env = VolEnv(protokube_bin())
    lab = NetLab(tag="pkv", bridge_addr=BRIDGE)
    node = None
    try:
        lab.start()
        ns = lab.add_host("a", NODE_IP)
        store, pki, hosts, state = (os.path.join(env.base, d) for d in ("store", "pki-a", "hosts", "state-a"))
        os.makedirs(store)
        with open(hosts, "w") as f:
            f.write("127.0.0.1 localhost\n::1 localhost\n")
        template = env.spec + ".template"
        os.rename(env.spec, template)
        env.spec, spec = template, env.spec
        write_spec(env, store, pki, hosts, spec)
        env.spec = spec
        env.template = template
        for c in ("main", "events"):
            env.create(f"{c}-a", c, "a", ["a"], size=256 * MIB)
        argv = env.argv("once", "a")
        argv[argv.index("--internal-ip") + 1] = NODE_IP
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PROTOKUBE_STATE_DIR=state))
        # selfHosted: the pass takes a pivot step after the manifests; the API is not up yet: not converged
        assert p.returncode == 3 and "pivot: wait-api" in p.stderr, f"protokube once: {p.returncode}\n{p.stderr}"
        node = Node("a", env.manifest_dir("a"), os.path.join(pki, "kube-apiserver", "ca.crt"),
                    os.path.join(pki, "admin", "kubeconfig"), NODE_IP, netns=ns, hosts_file=hosts,
                    etcd_images=[ETCD_IMAGE], base=os.path.join(env.base, "node-a"))
        yield env, node, PivotMaster(env, pki, hosts, state)
    finally:
        errors = node.close() if node else []
        lab.close()
        errors += env.cleanup()
        for path in set(HOST_LOGS) - logs_before:
            if os.path.exists(path) and not open_elsewhere(path):
                os.unlink(path)
    assert not errors, errors


def wait(what, pred, timeout, interval=1.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last and last[0]:
            return last[0]
        time.sleep(interval)
    raise AssertionError(f"{what}: not within {timeout} s (last: {last and last[1]})")


def cold_start(node, m):
    node.start()
    wait("kube-apiserver /readyz", lambda: (m.readyz(), "not ready"), 300, interval=2)

    def node_ready():
        n, err = m.kubectl_json("get", "node", "a")
        conds = {c["type"]: c["status"] for c in (n or {}).get("status", {}).get("conditions", [])}
        return conds.get("Ready") == "True", err or conds
    wait("node a Ready", node_ready, 180)


def mirror_pods(m):
    pods, _ = m.kubectl_json("get", "pods", "-n", "kube-system")
    return {p["metadata"]["name"] for p in (pods or {}).get("items", [])
            if "kubernetes.io/config.mirror" in p["metadata"].get("annotations", {})}


def cluster_state(m):
    out = []
    for what in (["get", "pods", "-n", "kube-system", "-o", "wide"], ["get", "ds,deploy,rs", "-n", "kube-system"],
                 ["get", "events", "-n", "kube-system", "--sort-by=.lastTimestamp"]):
        p = subprocess.run([m.kubectl, "--kubeconfig", m.kubeconfig, "--request-timeout=10s", *what],
                           capture_output=True, text=True, timeout=30)
        out.append(f"--- kubectl {' '.join(what)}\n{p.stdout[-4000:]}{p.stderr[-1000:]}")
    return "\n".join(out)


def test_pivot_rollback_when_self_hosted_apiserver_cannot_start(master):
    env, node, m = master
    bad = os.path.join(env.base, "bad-image.yaml")
    write_spec(type("E", (), {"spec": env.template})(), os.path.join(env.base, "store"), m.pki, m.hosts, bad,
               apiserver_image=MISSING_IMAGE)
    cold_start(node, m)

    t0 = time.monotonic()
    p = m.pivot("--timeout", "240s", spec=bad, env={"PROTOKUBE_PIVOT_READY_DEADLINE": "30s"})
    took = time.monotonic() - t0
    print(f"\npivot (bad image) exited {p.returncode} after {took:.1f} s\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert "failed: self-hosted kube-apiserver on a is not Ready" in p.stdout, p.stdout
    assert "the bootstrap pods stay" in p.stdout
    # why: the image cannot be pulled (kubelet's reason on the container)
    assert any(r in p.stdout for r in ("ErrImagePull", "ImagePullBackOff")), p.stdout + cluster_state(m)
    # the steps before: the assets applied, the Node labelled
    assert "apply-assets:" in p.stdout
    n, err = m.kubectl_json("get", "node", "a")
    assert n["metadata"]["labels"].get("node-role.kubernetes.io/master") == "", n["metadata"]["labels"]
    assert {"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"} in n["spec"].get("taints", [])
    ds, err = m.kubectl_json("get", "daemonset", "-n", "kube-system", "kube-apiserver")
    assert ds, err
    assert ds["metadata"]["annotations"]["protokube.io/asset-digest"]
    # the bootstrap control plane stays: manifests, mirror pods, the API
    for f in BOOTSTRAP:
        assert os.path.exists(os.path.join(env.manifest_dir("a"), f)), f
    assert {"kube-apiserver-a", "kube-controller-manager-a", "kube-scheduler-a"} <= mirror_pods(m)
    assert m.readyz()
    with open(os.path.join(m.state, "pivot")) as f:
        record = dict(line.strip().split("=", 1) for line in f if "=" in line)
    assert int(record["assets_applied_at"]) > 0 and record["removed_at"] == "0", record

    # `pivot plan` says the same and changes nothing
    p = subprocess.run(m.pivot_argv("plan", spec=bad), capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PROTOKUBE_STATE_DIR=m.state, PROTOKUBE_PIVOT_READY_DEADLINE="30s"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("failed: self-hosted kube-apiserver on a"), p.stdout
    # and `plan` (a pass's plan) ends with the pivot's next step
    argv = env.argv("plan", "a")
    argv[argv.index("--internal-ip") + 1] = NODE_IP
    argv[argv.index("-c") + 1] = bad
    p = subprocess.run(["unshare", "--mount", "--propagation", "slave", "--", "sh", "-c",
                        'mount --bind "$0" /etc/hosts && exec "$@"', m.hosts, *argv], capture_output=True,
                       text=True, timeout=120,
                       env=dict(os.environ, PROTOKUBE_STATE_DIR=m.state, PROTOKUBE_PIVOT_READY_DEADLINE="30s"))
    assert p.returncode == 0, p.stderr
    assert "\npivot failed: self-hosted kube-apiserver on a" in p.stdout, p.stdout


class Probe:
    """GET /readyz on the master's address every 50 ms in a thread (each try bounded by 1 s): the
    failures and the longest time without a 200, while the pivot runs."""

    def __init__(self, m):
        import threading
        self.m, self.stop, self.results, self.failures = m, threading.Event(), [], []
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            t = time.monotonic()
            ok, why = self.m.readyz_why(timeout=1)
            self.results.append((t, ok))
            if not ok:
                self.failures.append((t, time.monotonic() - t, why))
            self.stop.wait(max(0.0, 0.05 - (time.monotonic() - t)))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=10)

    def summary(self):
        fails = sum(1 for _, ok in self.results if not ok)
        gap, last_ok = 0.0, self.results[0][0] if self.results else 0.0
        for t, ok in self.results:
            if ok:
                gap, last_ok = max(gap, t - last_ok), t
        if self.results and not self.results[-1][1]:
            gap = max(gap, self.results[-1][0] - last_ok)
        return len(self.results), fails, gap

    def failure_windows(self, t0):
        """The failures grouped into windows (failures less than 0.5 s apart), each with its time from t0,
        its length and the reasons seen: where the API was not answering, and how."""
        out, cur = [], None
        for t, took, why in self.failures:
            if cur and t - cur["end"] < 0.5:
                cur["end"], cur["n"] = t + took, cur["n"] + 1
                cur["why"].setdefault(why, 0)
                cur["why"][why] += 1
            else:
                cur = {"start": t, "end": t + took, "n": 1, "why": {why: 1}}
                out.append(cur)
        return "\n".join(f"  +{w['start'] - t0:6.1f} s  {w['end'] - w['start']:5.2f} s  {w['n']:3d} failed: "
                         + "; ".join(f"{k} x{v}" for k, v in w["why"].items()) for w in out)


def self_hosted_pods(m):
    pods, _ = m.kubectl_json("get", "pods", "-n", "kube-system")
    out = {}
    for p in (pods or {}).get("items", []):
        md = p["metadata"]
        if "kubernetes.io/config.mirror" in md.get("annotations", {}):
            continue
        app = md.get("labels", {}).get("k8s-app")
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
        out.setdefault(app, []).append((p["spec"].get("nodeName"), ready))
    return out


def run_until(m, step, env):
    """protokube pivot until it prints step, then kill -9: the next run must finish from what it observes."""
    proc = subprocess.Popen(m.pivot_argv("--timeout", "600s"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, PROTOKUBE_STATE_DIR=m.state, **env))
    lines, deadline = [], time.monotonic() + 600
    try:
        for line in proc.stdout:  # bounded: protokube ends by its own --timeout
            lines.append(line)
            if f"] {step}:" in line or time.monotonic() > deadline:
                break
    finally:
        # the pivot runs in `sh -c ... exec`: the PID is protokube's own after the exec
        proc.kill()
        proc.wait(timeout=30)
    return "".join(lines)


@pytest.mark.parametrize("kill_at", [None, "apply-assets", "remove-bootstrap"])
def test_pivot_one_master(master, kill_at):
    env, node, m = master
    cold_start(node, m)
    if kill_at is None:
        # a master whose kubelet has not registered its Node yet (its own apiserver slower than the others'):
        # its pivot labels nothing, and above all creates no Node (one without a status makes kubelet 1.20
        # panic when it registers, and the node never joins)
        os.makedirs(env.manifest_dir("z"), exist_ok=True)
        early = m.pivot("--timeout", "15s", node="z", state=os.path.join(env.base, "state-z"), timeout=120)
        ghost, err = m.kubectl_json("get", "node", "z")
        assert ghost is None and "NotFound" in err, (ghost, err, early.stderr[-2000:])
    # what the pass does with selfHosted: the bootstrap manifests only until they are retired
    manifests = env.manifest_dir("a")
    extra = {}
    t0 = time.monotonic()
    with Probe(m) as probe:
        first = run_until(m, kill_at, extra) if kill_at else ""
        if kill_at:
            print(f"\nfirst run, killed (-9) after {kill_at}:\n{first}")
            assert f"] {kill_at}:" in first, first
        p = m.pivot("--timeout", "600s", env=extra)
        took = time.monotonic() - t0
        tries, fails, gap = probe.summary()
    print(f"\npivot exited {p.returncode} after {took:.1f} s (kill at {kill_at})\nstdout:\n{p.stdout}\n"
          f"stderr:\n{p.stderr[-3000:]}\nprobe: {tries} tries every 50 ms, {fails} failed, longest gap "
          f"{gap:.2f} s\nfailure windows (time from the pivot's start):\n{probe.failure_windows(t0)}")
    assert p.returncode == 0, p.stderr + cluster_state(m)
    assert "] done:" in p.stdout
    # the bootstrap control plane is gone: manifests and mirror pods; etcd stays static
    for f in BOOTSTRAP + ("kube-proxy.manifest",):
        assert not os.path.exists(os.path.join(manifests, f)), f
    assert os.path.exists(os.path.join(manifests, "etcd.manifest"))
    mirrors = mirror_pods(m)
    assert not mirrors & {"kube-apiserver-a", "kube-controller-manager-a", "kube-scheduler-a"}, mirrors
    pods = self_hosted_pods(m)
    for app in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        assert ("a", True) in pods.get(app, []), pods
    # the API answers through the self-hosted pods: a ConfigMap written and read
    name = f"pk-pivot-{os.getpid()}"
    out = subprocess.run([m.kubectl, "--kubeconfig", m.kubeconfig, "create", "configmap", name,
                          "--from-literal=greeting=hello"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    cm, err = m.kubectl_json("get", "configmap", name)
    assert cm and cm["data"] == {"greeting": "hello"}, err
    done, err = m.kubectl_json("get", "configmap", "-n", "kube-system", "protokube-pivot")
    assert done and done["data"]["complete"] == "true", err
    # the pass keeps the bootstrap manifests away after the pivot
    argv = env.argv("once", "a")
    argv[argv.index("--internal-ip") + 1] = NODE_IP
    once = subprocess.run(["unshare", "--mount", "--propagation", "slave", "--", "sh", "-c",
                           'mount --bind "$0" /etc/hosts && exec "$@"', m.hosts, *argv],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PROTOKUBE_STATE_DIR=m.state))
    assert once.returncode == 0, once.stderr
    for f in BOOTSTRAP:
        assert not os.path.exists(os.path.join(manifests, f)), f
    if kill_at is None:
        self_hosted_run_their_files(m, node)


def self_hosted_run_their_files(m, node):
    """The self-hosted kube-scheduler and kube-proxy run the files of their ConfigMaps (docs/components.md): their
    /configz, asked on the master's loopback (the scheduler's unauthenticated server on its self-hosted port,
    10261; kube-proxy's metrics address), holds every field of the file."""
    for component, cm_name, addr in (("kube-scheduler", "kube-scheduler-kube-scheduler", "127.0.0.1:10261"),
                                      ("kube-proxy", "kube-proxy-kube-proxy", "127.0.0.1:10249")):
        cm, err = m.kubectl_json("get", "configmap", "-n", "kube-system", cm_name)
        assert cm, err
        text = cm["data"]["config.yaml"]
        if component == "kube-scheduler":
            assert f'healthzBindAddress: "{addr}"' in text, text
            assert "127.0.0.1:10271" in cm["data"]["checkpoint.config.yaml"], cm["data"]
        deadline, body = time.monotonic() + 120, None
        while time.monotonic() < deadline and not body:
            p = subprocess.run(node.in_netns(["curl", "-s", "-m", "2", f"http://{addr}/configz"]),
                               capture_output=True, text=True, timeout=10)
            body = p.stdout if p.returncode == 0 and p.stdout.startswith("{") else None
            if not body:
                time.sleep(2)
        assert body, f"the self-hosted {component} serves no /configz on {addr}\n{cluster_state(m)}"
        assert configz.mismatches(text, configz.section(body, component)) == [], component
