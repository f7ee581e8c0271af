# SPDX-License-Identifier: Apache-2.0
"""The checkpoint (docs/pivot.md, "The checkpoint") against a real kubelet and kube-apiserver 1.20.2: one master
(as test_k8s_master.py) starts protokube's static pods, is made self-hosted by hand (render --self-hosted, `protokube
kube apply`, the Node labelled master, the DaemonSet and Deployment pods Ready, the three bootstrap manifests
removed), then `protokube checkpoint` writes the checkpoint (files and modes checked). Then three times in a row a
power cut: kubelet, containerd, the containers and their shims killed at once, what a reboot clears cleared; containerd
and kubelet start again with only etcd's static pods in the manifest directory, and `protokube checkpoint` alone
brings the API back (activate), then removes the checkpoint manifests once the self-hosted pods run again
(deactivate) and refreshes the checkpoint.

containerd and kubelet share one mount namespace here (tests/k8s/node.py gives kubelet one of its own, to show
the test's hosts file as /etc/hosts): a self-hosted pod mounts Secrets, which kubelet mounts as tmpfs, and
containerd must see those mounts to hand them to the container. The namespace dies with its last process, which is
what a reboot does to mounts."""
import json
import os
import shutil
import stat
import subprocess
import sys
import time

import pytest
import yaml

from conftest import ROOT, need_root, protokube_bin
from loopdev import MIB, VolEnv
from test_k8s_master import ETCD_IMAGE, HOST_LOGS, kubernetes_bin, open_elsewhere

sys.path.insert(0, os.path.join(ROOT, "tests", "k8s"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from netlab import NetLab  # noqa: E402
from node import Node, mounts_under, run, stop_pid, wait_for  # noqa: E402

# A /24 of its own: the 3-master simulation has 198.18.42.0/24, test_k8s_master.py 198.18.43.0/24.
BRIDGE = "198.18.47.1"
NODE_IP = "198.18.47.10"
BOOTSTRAP = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
REBOOTS = 3


class SharedMountNode(Node):
    """A Node whose containerd and kubelet run in one mount namespace, held by a process of the test, in which the
    test's hosts file is /etc/hosts."""

    def __init__(self, *a, pod_hosts=None, **kw):
        super().__init__(*a, **kw)
        self.pod_hosts, self.holder = pod_hosts, None

    def start_holder(self):
        ours = os.readlink("/proc/self/ns/mnt")
        self.holder = subprocess.Popen(["unshare", "--mount", "--propagation", "slave", "--", "sh", "-c",
                                        'mount --bind "$0" /etc/hosts && exec sleep 3600', self.pod_hosts],
                                       stdin=subprocess.DEVNULL)

        def ready():
            if self.holder.poll() is not None:
                raise RuntimeError(f"the mount namespace holder exited {self.holder.returncode}")
            try:
                with open(f"/proc/{self.holder.pid}/cmdline", "rb") as f:
                    sleeping = f.read().startswith(b"sleep")
                return sleeping and os.readlink(f"/proc/{self.holder.pid}/ns/mnt") != ours
            except OSError:
                return False
        wait_for("the mount namespace", ready, 10, interval=0.1)

    def in_netns(self, argv):
        argv = super().in_netns(argv)
        if self.holder is None:
            return argv
        if argv[0] == "nsenter":
            return ["nsenter", f"--mount=/proc/{self.holder.pid}/ns/mnt", *argv[1:]]
        return ["nsenter", f"--mount=/proc/{self.holder.pid}/ns/mnt", *argv]

    def start(self):
        self.start_holder()
        return super().start()

    def power_cut(self):
        """Everything at once, SIGKILL: kubelet, containerd, the containers, their shims, the namespace holder.
        Returns what could not be stopped."""
        for p in (self.kubelet, self.containerd, self.holder):
            if p is not None and p.poll() is None:
                p.kill()
        errors = self.kill_pids("containers", self.cgroup_pids) + self.kill_pids("shims", self.shim_pids)
        for p in (self.kubelet, self.containerd, self.holder):
            if p is not None:
                p.wait(timeout=10)
        return errors

    def boot(self):
        """What a reboot clears goes (the runtime's state under /run, cgroups; the mounts went with their
        namespace), what a disk keeps stays (kubelet's root, containerd's images, manifests, etcd's volume);
        then containerd and kubelet start."""
        cd = self.path("containerd")
        for d in ("state", "runc"):
            shutil.rmtree(os.path.join(cd, d), ignore_errors=True)
        left = self.remove_cgroups()
        assert not left, left
        self.make_cgroups()
        self.start_holder()
        self.start_containerd()
        self.start_kubelet()

    def close(self):
        errors = super().close()
        stop_pid(self.holder, timeout=5)
        return errors


@pytest.fixture
def master():
    need_root()
    kbin = kubernetes_bin()
    logs_before = {p for p in HOST_LOGS if os.path.exists(p)}
    env = VolEnv(protokube_bin())
    lab = NetLab(tag="pkck", bridge_addr=BRIDGE)
    node = None
    try:
        lab.start()
        ns = lab.add_host("a", NODE_IP)
        store, pki, hosts = (os.path.join(env.base, d) for d in ("store", "pki-a", "hosts"))
        os.makedirs(store)
        with open(hosts, "w") as f:
            f.write("127.0.0.1 localhost\n::1 localhost\n")
        with open(env.spec) as f:
            spec = f.read()
        spec = spec.replace("registry.k8s.io/etcd:3.5.16-0", ETCD_IMAGE)
        spec = spec.replace("    provider: none", f"    provider: hosts\n    hosts:\n      file: {hosts}")
        spec = spec.replace("  kubernetesVersion: 1.31.2", f"  stateStore: file://{store}\n  pki:\n    dir: {pki}\n"
                            "  selfHosted: true\n  kubernetesVersion: 1.20.2")
        spec = spec.replace("  kubeAPIServer: {}", f"  kubeAPIServer:\n    advertiseAddress: {NODE_IP}")
        with open(env.spec, "w") as f:
            f.write(spec)
        for c in ("main", "events"):
            env.create(f"{c}-a", c, "a", ["a"], size=256 * MIB)
        argv = env.argv("once", "a")
        argv[argv.index("--internal-ip") + 1] = NODE_IP
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        # 3: converging, its pivot stage waits for the API that kubelet has not started yet
        assert p.returncode in (0, 3), f"protokube once: {p.returncode}\n{p.stderr}"
        node = SharedMountNode("a", env.manifest_dir("a"), os.path.join(pki, "kube-apiserver", "ca.crt"),
                               os.path.join(pki, "admin", "kubeconfig"), NODE_IP, netns=ns,
                               etcd_images=[ETCD_IMAGE], base=os.path.join(env.base, "node-a"), pod_hosts=hosts)
        yield Cluster(env, node, pki, kbin)
    finally:
        errors = node.close() if node else []
        lab.close()
        errors += env.cleanup()
        for path in set(HOST_LOGS) - logs_before:
            if os.path.exists(path) and not open_elsewhere(path):
                os.unlink(path)
    assert not errors, errors


class Cluster:
    def __init__(self, env, node, pki, kbin):
        self.env, self.node, self.pki = env, node, pki
        self.kubeconfig = os.path.join(pki, "protokube", "kubeconfig")
        self.state = os.path.join(env.base, "state-a")
        self.manifests = env.manifest_dir("a")

    def pk(self, *args, timeout=120):
        argv = ["nsenter", f"--net=/run/netns/{self.node.netns}", protokube_bin(), *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)

    def kube(self, *args, check=True, timeout=60):
        p = self.pk("kube", *args, "--kubeconfig", self.kubeconfig, "--timeout", "20s", timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError(f"protokube kube {' '.join(args)}: {p.returncode}\n{p.stderr}")
        return p

    def readyz(self):
        return self.kube("readyz", check=False).returncode == 0

    def checkpoint(self, *args, timeout=120):
        return self.pk("checkpoint", "--state-dir", self.state, "--manifest-dir", self.manifests,
                       "--node-name", "a", "--kubeconfig", self.kubeconfig, *args, timeout=timeout)

    def pods(self):
        """kube-system's pods on node a by name, through kubectl (a list by label is not a verb of `protokube
        kube`)."""
        kubectl = os.path.join(kubernetes_bin(), "kubectl")
        p = run(self.node.in_netns([kubectl, "--kubeconfig", self.kubeconfig, "--request-timeout=10s", "get",
                                    "pods", "-n", "kube-system", "-o", "json"]), check=False, timeout=30)
        if p.returncode != 0:
            return {}
        return {x["metadata"]["name"]: x for x in json.loads(p.stdout)["items"]
                if x.get("spec", {}).get("nodeName") == "a"}


def ready(pod):
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", []))


def self_hosted_ready(c):
    """{component: pod name} of the Ready self-hosted (controller-owned) pods on a, when all three are."""
    got = {}
    for name, pod in c.pods().items():
        md = pod["metadata"]
        app = md.get("labels", {}).get("k8s-app")
        owned = any(o.get("controller") for o in md.get("ownerReferences", [])
                    if o.get("kind") in ("DaemonSet", "ReplicaSet"))
        if app in BOOTSTRAP and owned and ready(pod):
            got[app] = name
    return got if len(got) == len(BOOTSTRAP) else None


def diagnostics(c):
    n = c.node
    out = ["--- kubelet log (tail)", n.tail("kubelet", 60), "--- containerd log (tail)", n.tail("containerd", 20)]
    for pod, text in n.pod_logs().items():
        out += [f"--- pod {pod}", text[-2000:]]
    return "\n".join(out)


def wait(c, what, pred, timeout, interval=2):
    try:
        return wait_for(what, pred, timeout, interval=interval)
    except TimeoutError as e:
        raise AssertionError(f"{e}\n{diagnostics(c)}") from None


def bootstrap_beside_self_hosted(manifests):
    """Written before the assets lost their ports and their anti-affinity learned to skip the bootstrap mirror
    pods (docs/pivot.md): the bootstrap pods (which go away) lose their declared ports and k8s-app label
    before kubelet starts. Kept: it makes this test independent of the bootstrap pods' shape; the self-hosted
    workloads are applied as rendered, so that their checkpoints are made of what the API really runs."""
    for name in BOOTSTRAP:
        path = os.path.join(manifests, f"{name}.manifest")
        with open(path) as f:
            pod = yaml.safe_load(f)
        pod["metadata"].get("labels", {}).pop("k8s-app", None)
        for ctr in pod["spec"]["containers"]:
            ctr.pop("ports", None)
        with open(path + ".tmp", "w") as f:
            json.dump(pod, f)  # JSON is YAML
        os.replace(path + ".tmp", path)


def make_self_hosted(c):
    out = os.path.join(c.env.base, "self-hosted")
    p = c.pk("-c", c.env.spec, "render", "--self-hosted", "--etcd-member", "main=a/a", "--out", out)
    assert p.returncode == 0, p.stderr
    node_patch = os.path.join(c.env.base, "node-a.yaml")
    with open(node_patch, "w") as f:
        f.write("apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n  labels:\n"
                "    node-role.kubernetes.io/master: \"\"\n")
    c.kube("apply", node_patch)
    c.kube("apply", *[os.path.join(out, f) for f in sorted(os.listdir(out))])
    wait(c, "the self-hosted pods Ready beside the bootstrap ones", lambda: self_hosted_ready(c), 300)
    for name in BOOTSTRAP:
        os.unlink(os.path.join(c.manifests, f"{name}.manifest"))

    def bootstrap_gone():
        pods = c.pods()
        return pods and not any(n == f"{b}-a" for b in BOOTSTRAP for n in pods) and self_hosted_ready(c)
    wait(c, "the bootstrap mirror pods gone, the self-hosted pods serving", bootstrap_gone, 180)


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def check_checkpoint(c, pods):
    link = os.path.join(c.state, "checkpoint")
    assert os.path.islink(link)
    gen = os.path.realpath(link)
    assert mode(gen) == 0o700
    manifests = sorted(os.listdir(os.path.join(link, "manifests")))
    assert manifests == [f"{b}-checkpoint.json" for b in BOOTSTRAP], manifests
    for m in manifests:
        path = os.path.join(link, "manifests", m)
        assert mode(path) == 0o644, (m, oct(mode(path)))
        with open(path) as f:
            pod = json.load(f)
        # its own label only: its mirror pod matches no workload's selector or anti-affinity
        assert pod["metadata"]["labels"] == {"protokube.io/checkpoint": "true"}, pod["metadata"]
        app = pod["metadata"]["annotations"]["protokube.io/checkpoint-of"].split("/")[1]
        assert pod["metadata"]["annotations"]["protokube.io/checkpoint-uid"] == pods[app]["metadata"]["uid"]
        for v in pod["spec"]["volumes"]:
            assert "secret" not in v and "configMap" not in v, v
        # no declared host port: kubelet would refuse the self-hosted pod's beside it
        assert not any("ports" in ctr for ctr in pod["spec"]["containers"]), m
    secrets = os.listdir(os.path.join(link, "secrets"))
    assert set(secrets) == {f"{b}-pki" for b in BOOTSTRAP}, secrets
    assert mode(os.path.join(link, "secrets")) == 0o700
    for s in secrets:
        d = os.path.join(link, "secrets", s)
        assert mode(d) == 0o700, d
        files = os.listdir(d)
        assert files, d
        for f in files:
            assert mode(os.path.join(d, f)) == 0o600, (d, f)
        # the data is the node's pki files, byte for byte (the render read them from there)
        for f in files:
            with open(os.path.join(d, f), "rb") as a, open(os.path.join(c.pki, s[:-len("-pki")], f), "rb") as b:
                assert a.read() == b.read(), (s, f)
    for cm in os.listdir(os.path.join(link, "configmaps")) if os.path.isdir(os.path.join(link, "configmaps")) else []:
        for f in os.listdir(os.path.join(link, "configmaps", cm)):
            assert mode(os.path.join(link, "configmaps", cm, f)) == 0o644
    # one generation only
    gens = [e for e in os.listdir(c.state) if e.startswith(".checkpoint.")]
    assert gens == [os.path.basename(gen)], gens


def test_checkpoint_brings_the_api_back_after_three_power_cuts(master):
    c = master
    t0 = time.monotonic()
    bootstrap_beside_self_hosted(c.manifests)
    c.node.start()
    wait(c, "the bootstrap API /readyz", c.readyz, 300)
    make_self_hosted(c)
    t_pivot = time.monotonic()

    pods = {p["metadata"]["labels"]["k8s-app"]: p for p in c.pods().values()
            if p["metadata"]["labels"].get("k8s-app") in BOOTSTRAP}
    # what the API runs declares no ports, as rendered (with hostNetwork they would be host ports that the
    # scheduler and kubelet refuse beside the bootstrap pods: docs/pivot.md)
    assert "ports" not in pods["kube-apiserver"]["spec"]["containers"][0]
    p = c.checkpoint("--once")
    assert p.returncode == 0 and p.stdout.startswith("refresh: checkpoint of 3 pods written"), (p.stdout, p.stderr)
    check_checkpoint(c, pods)
    # a second refresh changes nothing (the same generation)
    gen = os.path.realpath(os.path.join(c.state, "checkpoint"))
    p = c.checkpoint("--once")
    assert p.returncode == 0 and p.stdout.startswith("refresh: checkpoint of 3 pods unchanged"), p.stdout
    assert os.path.realpath(os.path.join(c.state, "checkpoint")) == gen
    for m in os.listdir(c.manifests):
        assert not m.endswith("-checkpoint.json"), m
    # no Secret's data on the terminal
    with open(os.path.join(c.pki, "kube-apiserver", "apiserver.key")) as f:
        key_line = f.read().splitlines()[1]
    assert key_line not in p.stdout + p.stderr

    timings = []
    for i in range(REBOOTS):
        t = time.monotonic()
        errors = c.node.power_cut()
        assert not errors, errors
        assert not c.readyz()
        c.node.boot()
        # nothing but the checkpoint brings the API back: no bootstrap manifest is left
        assert not any(f"{b}.manifest" in os.listdir(c.manifests) for b in BOOTSTRAP)
        p = c.checkpoint("--interval", "3s", "--timeout", "8m", timeout=600)
        steps = [line.split(":", 1)[0] for line in p.stdout.splitlines()]
        assert p.returncode == 0, f"reboot {i + 1}: {p.returncode}\n{p.stdout}\n{p.stderr}\n{diagnostics(c)}"
        assert "activate" in steps and "deactivate" in steps, p.stdout
        assert steps.index("activate") < steps.index("deactivate") and steps[-1] == "refresh", p.stdout
        assert set(steps) <= {"wait", "activate", "deactivate", "refresh"}, p.stdout
        assert c.readyz()
        assert not any(m.endswith("-checkpoint.json") for m in os.listdir(c.manifests))
        assert not os.path.exists(os.path.join(c.state, "checkpoint-activated"))
        back = wait(c, "the self-hosted pods Ready", lambda: self_hosted_ready(c), 60)
        pods = {app: c.pods()[name] for app, name in back.items()}
        check_checkpoint(c, pods)
        timings.append(time.monotonic() - t)
    print(f"\nstart and pivot by hand {t_pivot - t0:.0f} s; power cut to API back and checkpoint retired: "
          + ", ".join(f"{x:.0f} s" for x in timings))
