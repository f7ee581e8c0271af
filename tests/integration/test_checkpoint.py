# SPDX-License-Identifier: Apache-2.0
"""The checkpoint in the daemon (docs/pivot.md, "The checkpoint") against a real kubelet and kube-apiserver
1.20.2: one master (as test_k8s_master.py) starts protokube's static pods (selfHosted: true), then `protokube run`
alone pivots it (the DaemonSet and Deployment pods Ready, the bootstrap manifests retired) and keeps the checkpoint
of its self-hosted pods (files and modes checked, /metrics). Then a power cut: protokube, kubelet, containerd,
the containers and their shims killed at once, what a reboot clears cleared; containerd, kubelet and protokube
start again with only etcd's static pods in the manifest directory, and the daemon's passes alone bring the API
back (activate), remove the checkpoint manifests once the self-hosted pods run again (deactivate) and refresh the
checkpoint with the new pods. Power cuts in a row, of every node of a cluster at once, are `make
demo-selfhosted`'s (three cuts of five nodes) and the benchmark's power-cut figure (bench/README.md): here one,
with the same checks.

containerd and kubelet share one mount namespace here (tests/k8s/node.py gives kubelet one of its own, to show
the test's hosts file as /etc/hosts): a self-hosted pod mounts Secrets, which kubelet mounts as tmpfs, and
containerd must see those mounts to hand them to the container. The namespace dies with its last process, which is
what a reboot does to mounts. protokube runs on the host in a mount namespace of its own whose /etc/hosts is the
test's hosts file (where its hosts provider publishes api.internal), as in test_pivot.py."""
import base64
import json
import os
import socket
import shutil
import ssl
import stat
import subprocess
import sys
import time
import types
import urllib.request

import pytest

from conftest import ROOT, need_root, protokube_bin
from loopdev import MIB, VolEnv
from test_k8s_master import ETCD_IMAGE, HOST_LOGS, host_logs_before, kubernetes_bin, open_elsewhere

sys.path.insert(0, os.path.join(ROOT, "tests", "k8s"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from netlab import NetLab  # noqa: E402
from node import Node, run, stop_pid, wait_for  # noqa: E402

# A /24 of its own: the 3-master simulation has 198.18.42.0/24, test_k8s_master.py .43, test_pivot.py .47.
BRIDGE = "198.18.49.1"
NODE_IP = "198.18.49.10"
BOOTSTRAP = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
REBOOTS = 1


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
    logs_before = host_logs_before()
    env = VolEnv(protokube_bin())
    lab = NetLab(tag="pkck", bridge_addr=BRIDGE)
    node = cluster = None
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
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PROTOKUBE_STATE_DIR=os.path.join(env.base, "state-a")))
        # 3: converging, its pivot stage waits for the API that kubelet has not started yet
        assert p.returncode == 3 and "pivot: wait-api" in p.stderr, f"protokube once: {p.returncode}\n{p.stderr}"
        node = SharedMountNode("a", env.manifest_dir("a"), os.path.join(pki, "kube-apiserver", "ca.crt"),
                               os.path.join(pki, "admin", "kubeconfig"), NODE_IP, netns=ns,
                               etcd_images=[ETCD_IMAGE], base=os.path.join(env.base, "node-a"), pod_hosts=hosts)
        cluster = Cluster(env, node, pki, kbin, hosts)
        yield cluster
    finally:
        if cluster:
            cluster.daemon.stop()
        errors = node.close() if node else []
        lab.close()
        errors += env.cleanup()
        for path in set(HOST_LOGS) - logs_before:
            if os.path.exists(path) and not open_elsewhere(path):
                os.unlink(path)
    assert not errors, errors


class Daemon:
    """`protokube run` for master a, on the host in a mount namespace whose /etc/hosts is the test's hosts file
    (the API's internal name resolves as on a real master); its log in a file per start."""

    def __init__(self, c):
        self.c, self.proc, self.log_path, self.starts = c, None, None, 0
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()

    def start(self):
        self.starts += 1
        argv = self.c.env.argv("run", "a", "--listen", f"127.0.0.1:{self.port}", "--interval", "5s")
        argv[argv.index("--internal-ip") + 1] = NODE_IP
        self.log_path = os.path.join(self.c.env.base, f"protokube-run-{self.starts}.log")
        with open(self.log_path, "w") as log:
            # `sh -c ... exec`: the PID is protokube's own once it runs
            self.proc = subprocess.Popen(self.wrapped(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=log, env=dict(os.environ, PROTOKUBE_STATE_DIR=self.c.state))

    def wrapped(self, argv):
        """argv in a mount namespace of its own whose /etc/hosts is the test's hosts file."""
        return ["unshare", "--mount", "--propagation", "slave", "--", "sh", "-c",
                'mount --bind "$0" /etc/hosts && exec "$@"', self.c.hosts, *argv]

    def kill(self):
        """The power cut's share: SIGKILL, no goodbye."""
        self.proc.kill()
        self.proc.wait(timeout=10)

    def stop(self):
        stop_pid(self.proc, timeout=15)

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def get(self, path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=3) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError as e:
            return 0, str(e)


class Cluster:
    def __init__(self, env, node, pki, kbin, hosts):
        self.env, self.node, self.pki, self.hosts = env, node, pki, hosts
        self.kubeconfig = os.path.join(pki, "protokube", "kubeconfig")
        self.state = os.path.join(env.base, "state-a")
        self.manifests = env.manifest_dir("a")
        self.daemon = Daemon(self)

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
    """The pods' and kubelet's logs, then the daemon's last lines: last, because a CI log is read from its end
    (the daemon's steps say where the pivot or the checkpoint stopped)."""
    n = c.node
    out = []
    for pod, text in n.pod_logs().items():
        out += [f"--- pod {pod}", text[-2000:]]
    out += ["--- kubelet log (tail)", n.tail("kubelet", 60), "--- containerd log (tail)", n.tail("containerd", 20)]
    if c.daemon.log_path:
        out += ["--- protokube run (tail)", "\n".join(c.daemon.log().splitlines()[-20:])]
    return "\n".join(out + why(c))


def why(c):
    """A short account for the end of a CI log, which shows only its last lines: what the manifest directory
    holds, the kube-apiserver's last words, kubelet's last lines about it, and the daemon's lines that are not
    a repeated waiting pass (what it changed, and when)."""
    out = ["--- why: manifests " + " ".join(f"{m}@{int(os.stat(os.path.join(c.manifests, m)).st_mtime)}"
                                            for m in sorted(os.listdir(c.manifests)))]
    for pod, text in c.node.pod_logs().items():
        if "kube-apiserver" in pod:
            out += [f"--- why: {pod} (last lines)", "\n".join(text.splitlines()[-8:])]
    kubelet = [ln for ln in c.node.tail("kubelet", 4000).splitlines() if "kube-apiserver" in ln]
    out += ["--- why: kubelet on kube-apiserver (last lines)", "\n".join(ln[:300] for ln in kubelet[-8:])]
    if c.daemon.log_path:
        seen, lines = set(), []
        for ln in c.daemon.log().splitlines():
            key = ln.split("Pass ", 1)[0] if " not converged yet" in ln else ln
            if key not in seen:
                seen.add(key)
                lines.append(ln[:300])
        out += ["--- why: protokube run, each line once (first 25)", "\n".join(lines[:25])]
    return out


def wait(c, what, pred, timeout, interval=2):
    """wait_for, failing at once (with the daemon's last lines) when the daemon has exited: nothing else would
    move the cluster on, and a sanitizer's report is in those lines."""
    def alive_and(pred):
        d = c.daemon
        if d.proc is not None and d.proc.poll() is not None:
            tail = "\n".join(d.log().splitlines()[-40:])
            raise AssertionError(f"protokube run exited {d.proc.returncode} while waiting for {what}:\n{tail}")
        return pred()
    try:
        return wait_for(what, lambda: alive_and(pred), timeout, interval=interval)
    except TimeoutError as e:
        raise AssertionError(f"{e}\n{diagnostics(c)}") from None


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


def checkpointed_uids(c):
    """{component: the checkpointed pod's uid} of the current generation; {} when there is none."""
    d = os.path.join(c.state, "checkpoint", "manifests")
    out = {}
    for m in os.listdir(d) if os.path.isdir(d) else []:
        with open(os.path.join(d, m)) as f:
            md = json.load(f)["metadata"]
        out[md["annotations"]["protokube.io/checkpoint-of"].split("/")[1]] = md["annotations"][
            "protokube.io/checkpoint-uid"]
    return out


def checkpoint_active(c):
    return any(m.endswith("-checkpoint.json") for m in os.listdir(c.manifests))


def checkpoint_settled(c):
    """The self-hosted pods Ready on a and the checkpoint of exactly these pods, not active: {app: pod}."""
    back = self_hosted_ready(c)
    if not back or checkpoint_active(c):
        return None
    pods = c.pods()
    pods = {app: pods[name] for app, name in back.items() if name in pods}
    uids = {app: p["metadata"]["uid"] for app, p in pods.items()}
    return pods if len(pods) == len(BOOTSTRAP) and checkpointed_uids(c) == uids else None


def pivot_complete(c):
    p = c.kube("get", "v1", "ConfigMap", "kube-system/protokube-pivot", check=False)
    gone = not any(os.path.exists(os.path.join(c.manifests, f"{b}.manifest")) for b in BOOTSTRAP)
    return gone and p.returncode == 0 and json.loads(p.stdout).get("data", {}).get("complete") == "true"


def steps_logged(log):
    """The checkpoint's steps the daemon logged, in order."""
    return [line.split("Checkpoint: ", 1)[1].split(":", 1)[0] for line in log.splitlines() if "Checkpoint: " in line]


def test_daemon_checkpoint_brings_the_api_back_after_a_power_cut(master):
    c = master
    t0 = time.monotonic()
    c.node.start()
    wait(c, "the bootstrap API /readyz", c.readyz, 300)
    c.daemon.start()
    # the daemon pivots by itself (selfHosted: true), one step per pass
    wait(c, "the daemon's pivot complete, the bootstrap manifests retired", lambda: pivot_complete(c), 600)
    t_pivot = time.monotonic()
    # and keeps the checkpoint of the self-hosted pods it runs now
    pods = wait(c, "the checkpoint of the self-hosted pods", lambda: checkpoint_settled(c), 180)
    # what the API runs declares no ports, as rendered (with hostNetwork they would be host ports that the
    # scheduler and kubelet refuse beside the bootstrap pods: docs/pivot.md)
    assert "ports" not in pods["kube-apiserver"]["spec"]["containers"][0]
    check_checkpoint(c, pods)
    assert "Checkpoint: refresh: checkpoint of 3 pods written" in c.daemon.log()
    # reported: not active, the generation's age
    code, metrics = c.daemon.get("/metrics")
    assert code == 200 and "\nprotokube_checkpoint_active 0\n" in metrics, metrics
    assert "\nprotokube_checkpoint_generation_age_seconds " in metrics, metrics
    # no Secret's data in the log
    with open(os.path.join(c.pki, "kube-apiserver", "apiserver.key")) as f:
        key_line = f.read().splitlines()[1]
    assert key_line not in c.daemon.log()

    timings = []
    for i in range(REBOOTS):
        t = time.monotonic()
        c.daemon.kill()
        errors = c.node.power_cut()
        assert not errors, errors
        assert not c.readyz()
        c.node.boot()
        c.daemon.start()
        # nothing but the daemon's checkpoint brings the API back: no bootstrap manifest is left
        assert not any(f"{b}.manifest" in os.listdir(c.manifests) for b in BOOTSTRAP)
        seen = {"health": None, "active": False}

        def look():
            code, body = c.daemon.get("/healthz")
            if "checkpoint active" in body:
                seen["health"] = (code, body)
            seen["active"] = seen["active"] or checkpoint_active(c)
        wait(c, f"reboot {i + 1}: the API /readyz", lambda: look() or c.readyz(), 480)
        t_api = time.monotonic() - t
        wait(c, f"reboot {i + 1}: the checkpoint retired, the pods back, the checkpoint refreshed",
             lambda: look() or checkpoint_settled(c), 480)
        pods = checkpoint_settled(c)
        log = c.daemon.log()
        steps = steps_logged(log)
        assert seen["active"], f"reboot {i + 1}: no checkpoint manifest seen in kubelet's directory\n{log}"
        assert "activate" in steps and "deactivate" in steps, log
        # activated once, retired once; afterwards only refreshes (logged when the pods changed: a pod kubelet
        # restarted keeps its uid, and its checkpoint is unchanged) and waits
        assert steps.count("activate") == 1 and steps.count("deactivate") == 1, steps
        assert steps.index("activate") < steps.index("deactivate"), steps
        assert set(steps[steps.index("deactivate") + 1:]) <= {"wait", "refresh"}, steps
        assert set(steps) <= {"wait", "activate", "deactivate", "refresh"}, steps
        code, metrics = c.daemon.get("/metrics")
        assert "\nprotokube_checkpoint_active 0\n" in metrics, metrics
        # while active, /healthz said so (200: converging)
        assert seen["health"] and seen["health"][0] == 200, (seen, log[-3000:])
        assert not os.path.exists(os.path.join(c.state, "checkpoint-activated"))
        assert c.readyz()
        check_checkpoint(c, pods)
        timings.append((t_api, time.monotonic() - t))
    c.daemon.stop()
    print(f"\nstart and the daemon's pivot {t_pivot - t0:.0f} s; power cut to API back / checkpoint retired and "
          "refreshed: " + ", ".join(f"{a:.0f} s / {b:.0f} s" for a, b in timings))


def kubectl(c, *args, timeout=60):
    argv = [os.path.join(kubernetes_bin(), "kubectl"), "--kubeconfig", c.kubeconfig, "--request-timeout=20s",
            *args]
    return run(c.node.in_netns(argv), check=False, timeout=timeout)


def apiserver_command(c):
    p = kubectl(c, "get", "daemonset", "-n", "kube-system", "kube-apiserver", "-o", "json")
    assert p.returncode == 0, p.stderr
    ds = json.loads(p.stdout)
    return ds["spec"]["template"]["spec"]["containers"][0]["command"], ds["metadata"]["generation"]


UPGRADE_FLAG = "--default-not-ready-toleration-seconds=299"


def test_upgrade_through_the_api(master):
    """An upgrade after the pivot is a change of the workloads through the API (docs/pivot.md, "Upgrading"):
    kubectl adds a flag to the kube-apiserver DaemonSet, the DaemonSet rolls, the new pod carries the flag;
    protokube's passes do not revert it (after the pivot it applies no workload), and its checkpoint takes the
    new pod, so a power cut brings back the upgraded apiserver. One master: the DaemonSet's one pod is replaced
    (maxUnavailable 1), so the API is away while the new pod starts; the probe measures it. The rolling of
    one master at a time while the others serve is shown by `make demo-selfhosted` on three."""
    from test_pivot import Probe, readyz_why
    c = master
    c.node.start()
    wait(c, "the bootstrap API /readyz", c.readyz, 300)
    c.daemon.start()
    wait(c, "the daemon's pivot complete, the bootstrap manifests retired", lambda: pivot_complete(c), 600)
    old = wait(c, "the checkpoint of the self-hosted pods", lambda: checkpoint_settled(c), 180)["kube-apiserver"]
    command, generation = apiserver_command(c)
    assert UPGRADE_FLAG not in command and not any(a.startswith(UPGRADE_FLAG.split("=")[0]) for a in command)

    def upgraded():
        pods = checkpoint_settled(c)
        new = pods and pods["kube-apiserver"]
        if not new or new["metadata"]["uid"] == old["metadata"]["uid"]:
            return None
        assert UPGRADE_FLAG in new["spec"]["containers"][0]["command"], new["spec"]["containers"][0]["command"]
        return new

    mark = len(c.daemon.log())
    t0 = time.monotonic()
    with Probe(types.SimpleNamespace(readyz_why=lambda timeout: readyz_why(c.pki, timeout))) as probe:
        patch = json.dumps([{"op": "add", "path": "/spec/template/spec/containers/0/command/-",
                             "value": UPGRADE_FLAG}])
        p = kubectl(c, "patch", "daemonset", "-n", "kube-system", "kube-apiserver", "--type=json", "-p", patch)
        assert p.returncode == 0, p.stderr
        wait(c, "the upgraded kube-apiserver Ready, in the checkpoint", upgraded, 420)
        took = time.monotonic() - t0
        tries, fails, gap = probe.summary()
    print(f"\nupgrade rolled in {took:.1f} s; probe: {tries} tries every 50 ms, {fails} failed, longest gap "
          f"{gap:.2f} s\nfailure windows (from the patch):\n{probe.failure_windows(t0)}")
    # the checkpoint runs what the API runs: the upgraded command
    with open(os.path.join(c.state, "checkpoint", "manifests", "kube-apiserver-checkpoint.json")) as f:
        assert UPGRADE_FLAG in json.load(f)["spec"]["containers"][0]["command"]
    # protokube's passes keep the user's change: three more passes (--interval 5s), the template unchanged
    command, gen_after = apiserver_command(c)
    time.sleep(16)
    again, gen_later = apiserver_command(c)
    assert UPGRADE_FLAG in again and again == command and gen_later == gen_after == generation + 1, \
        (generation, gen_after, gen_later)
    since = c.daemon.log()[mark:]
    # no asset applied, no bootstrap manifest back (the pivot is complete: no rollback while the API is away)
    assert "Pivot: apply-assets" not in since and "Wrote manifest" not in since, since
    assert "restore-bootstrap" not in since and not any(
        os.path.exists(os.path.join(c.manifests, f"{b}.manifest")) for b in BOOTSTRAP), since
    print("checkpoint steps during the upgrade: " + ", ".join(steps_logged(since)))
    # a power cut brings back the upgraded apiserver (the checkpoint of the new pod, then the pod itself)
    c.daemon.kill()
    assert not c.node.power_cut()
    c.node.boot()
    c.daemon.start()
    wait(c, "the API back after the power cut", c.readyz, 480)
    pods = wait(c, "the checkpoint retired and refreshed", lambda: checkpoint_settled(c), 480)
    assert UPGRADE_FLAG in pods["kube-apiserver"]["spec"]["containers"][0]["command"]
    assert "Checkpoint: activate" in c.daemon.log()
    check_renewal_reaches_the_pods(c, pods["kube-apiserver"])
    c.daemon.stop()


def served_certificate():
    """The certificate the apiserver on the master's address serves (DER), not verified: it is compared."""
    return ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate((NODE_IP, 443), timeout=5))


def file_certificate(c):
    with open(os.path.join(c.pki, "kube-apiserver", "apiserver.crt")) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def secret_file(c, secret, key):
    p = kubectl(c, "get", "secret", "-n", "kube-system", secret, "-o", "json")
    assert p.returncode == 0, p.stderr
    return base64.b64decode(json.loads(p.stdout)["data"][key])


def check_renewal_reaches_the_pods(c, old_pod):
    """After the pivot the certificates stay protokube's (docs/pivot.md, "Renewing the certificates after the
    pivot"): `protokube pki renew` reissues the node's certificates, and a pass applies the renewed Secrets. One
    master's workloads are not rolled (its only controller-manager could not create its successor): kubelet
    refreshes the pods' Secret volumes and kube-apiserver reloads its serving pair, so the renewed certificate is
    served by the same pod, which keeps the flag the upgrade added through the API."""
    assert served_certificate() == file_certificate(c)
    before = file_certificate(c)
    _, generation = apiserver_command(c)
    c.daemon.stop()
    argv = c.env.argv("once", "a")
    argv[argv.index("--internal-ip") + 1] = NODE_IP
    argv[3:4] = ["pki", "renew"]
    p = subprocess.run(c.daemon.wrapped(argv), capture_output=True, text=True, timeout=180,
                       env=dict(os.environ, PROTOKUBE_STATE_DIR=c.state))
    assert p.returncode in (0, 3), f"protokube pki renew: {p.returncode}\n{p.stderr}"
    renewed = file_certificate(c)
    assert renewed != before
    c.daemon.start()
    t0 = time.monotonic()
    with open(os.path.join(c.pki, "kube-apiserver", "apiserver.crt"), "rb") as f:
        renewed_pem = f.read()
    wait(c, "the renewed serving certificate in the Secret",
         lambda: secret_file(c, "kube-apiserver-pki", "apiserver.crt") == renewed_pem, 300)
    in_secret = time.monotonic() - t0
    wait(c, "the renewed certificate served", lambda: served_certificate() == renewed, 300)
    print(f"\nrenewal: in the Secret {in_secret:.1f} s and served {time.monotonic() - t0:.1f} s after the "
          "daemon started")
    pods = checkpoint_settled(c)
    assert pods and pods["kube-apiserver"]["metadata"]["uid"] == old_pod["metadata"]["uid"], "rolled"
    command, generation_after = apiserver_command(c)
    assert UPGRADE_FLAG in command and generation_after == generation
    # the renewal's pass may apply them itself (the API answers it): the step is in its log or the daemon's
    log = p.stderr + c.daemon.log()
    assert "Pivot: renew-certificates" in log and "Pivot: apply-assets" not in log, log
