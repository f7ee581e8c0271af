#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""One real Kubernetes master node on this machine: its own containerd (Debian's, with runc) and a kubelet
v1.20.2 (scripts/k8s-binaries.sh) that runs the static pods of a manifest directory as containers, from the
images of scripts/k8s-images.sh imported into that containerd (kubelet never pulls: no registry is reachable).

A node lives in a network namespace (tests/e2e/netlab.py) or in the machine's. Everything it starts it stops
by PID; close() also kills what runs in the node's cgroups, the containerd shims that serve its socket, unmounts
what is left under its directory, removes its cgroup roots depth first and the pod log directories kubelet
made under /var/log/pods. Every wait has a deadline.

Why the details (checked on this machine):
- containerd and kubelet enter the namespace with `nsenter --net`, not `ip netns exec`, which remounts /sys
  in a new mount namespace: the cgroup mounts vanish and kubelet dies ("mountpoint for cpu not found");
- kubelet runs in a mount namespace of its own (`unshare --mount --propagation slave`) only to see the test's
  hosts file as /etc/hosts: kubelet copies /etc/hosts into hostNetwork pods, and that is how etcd resolves the
  peer names protokube publishes with the hosts provider. Its mounts (its root dir) vanish with it. The static
  pods use hostPath volumes only, which need no mount by kubelet, so containerd does not need to see them;
- containerd, not kubelet, picks the sandbox image (sandbox_image), and runc needs restrict_oom_score_adj;
- a cgroup root per node (cgroupRoot) exists in every v1 hierarchy before kubelet starts;
- kubelet's healthz and API ports are per node; --node-ip because the namespaces have no default route.

By hand (as root), after `protokube once` wrote the manifests and the PKI:
    tests/k8s/node.py --name a --manifests DIR --ca PKI/kube-apiserver/ca.crt \\
        --kubeconfig PKI/admin/kubeconfig --node-ip IP [--netns NS] [--hosts FILE] [--etcd-image NAME:TAG]
runs the node until Ctrl-C, then tears it down."""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAUSE_IMAGE = "registry.k8s.io/pause:3.2"
PODNET_IMAGE = "protokube.test/podnet:1"  # the tests' workload (tools/podnet/podnet.c, scripts/k8s-images.sh)
CGROUP = "/sys/fs/cgroup"
CGROUP_V1 = ("cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "systemd")
CNI_BIN = "/usr/lib/cni"
KUBELET_IMAGE_NAME = "registry.k8s.io/kubelet:"  # the managed kubelet's (scripts/k8s-images.py)
POD_LOGS = "/var/log/pods"  # where kubelet 1.20 has the container runtime write the pods' logs (fixed)


def run(argv, timeout=60, check=True, **kw):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    return p


def k8s_bin():
    """The Kubernetes 1.20.2 binaries (built once into the cache by scripts/k8s-binaries.sh)."""
    return run([os.path.join(TOP, "scripts", "k8s-binaries.sh")], timeout=3600).stdout.strip().splitlines()[-1]


def k8s_images(etcd_images=()):
    """(cache dir, [{name, tar}]) of scripts/k8s-images.sh for these etcd image names."""
    d = run([os.path.join(TOP, "scripts", "k8s-images.sh"), *etcd_images], timeout=3600).stdout.strip()
    d = d.splitlines()[-1]
    with open(os.path.join(d, "images.json")) as f:
        return d, json.load(f)


def cgroup_root_of(name):
    """The node's cgroup root: one per node and run, so two runs (or two nodes) never share one."""
    return f"/pk-node-{name}-{os.getpid()}"


def kubelet_spec(name, resolv_conf):
    """spec.kubelet for a node of this machine, for protokube to render its kubelet's files from: cgroupfs under
    the node's own root, no swap check, its resolver; images never collected and the node never evicting for a
    shared machine's busy disk (they cannot be pulled again); static pods seen within a second, and a mirror pod
    whose creation failed while the apiserver was starting retried every 10 s (the 1m default delays a cold
    start's mirror pods by a minute)."""
    return ("  kubelet:\n    cgroupDriver: cgroupfs\n"
            f"    cgroupRoot: {cgroup_root_of(name)}\n    failSwapOn: false\n    resolvConf: {resolv_conf}\n"
            "    fileCheckFrequency: 1s\n    syncFrequency: 10s\n"
            "    imageGCHighThresholdPercent: 100\n    imageGCLowThresholdPercent: 99\n"
            "    evictionHard:\n      memory.available: 1Mi\n      nodefs.available: 1%\n"
            "      imagefs.available: 1%\n")


def lock_holder(lock):
    """(pid, pod uid or "") of the flock on lock, from /proc/locks by device and inode; (0, "") when none."""
    st = os.stat(lock)
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    with open("/proc/locks") as f:
        for line in f:
            w = line.split()
            if len(w) >= 6 and w[1] == "FLOCK" and w[5] == want:
                pid = int(w[4])
                try:
                    with open(f"/proc/{pid}/cgroup") as c:
                        pods = [seg[3:] for seg in c.read().replace("\n", "/").split("/")
                                if seg.startswith("pod") and len(seg) == 39]
                except OSError:
                    return 0, ""
                return pid, pods[0] if pods else ""
    return 0, ""


def mounts_under(prefix):
    """Mount points at or below prefix, deepest first."""
    out = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            target = line.split()[4].replace("\\040", " ")
            if target == prefix or target.startswith(prefix.rstrip("/") + "/"):
                out.add(target)
    return sorted(out, key=len, reverse=True)


def wait_for(what, pred, timeout, interval=0.5):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def stop_pid(proc, timeout=15):
    """SIGTERM, then SIGKILL after timeout; reaps the process."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


class NodeWorld:
    """A machine's own view of this shared file system, for nodes whose kubelet runs from one DaemonSet
    template (docs/kubelet-handoff.md): one template's host paths must name each node's own files on every
    node. A persistent mount namespace (bound to a file under ns_dir, the run's) where the node's directory
    is ns_dir/root (the same path for every node of the run), and /etc/resolv.conf (the node's resolver), /var/log/pods and /etc/default (the machine's
    own kubelet flags) are its own. Every process of the node enters it (protokube, containerd, the
    kubelets and, through containerd, every container), so the node's paths are the same strings on every
    node and its files its own.

    The binds sit on mounts made slaves first, so nothing of a node reaches the machine; the node's directory
    is a bind of a shared mount of the test (cluster.py's work directory), so what the node mounts under it
    (etcd volumes, kubelet's Secret volumes) still reaches the machine, where the harness reads it. boot()
    makes a new namespace: a machine's power cut ends with halt() (its mounts gone with it), then boot()."""

    def __init__(self, name, host_dir, resolv_conf, ns_dir):
        self.name, self.host_dir, self.resolv_conf, self.ns_dir = name, host_dir, resolv_conf, ns_dir
        self.file = os.path.join(ns_dir, name)
        self.root = os.path.join(ns_dir, "root")
        self.pod_logs = os.path.join(host_dir, "pod-logs")
        self.defaults = os.path.join(host_dir, "etc-default")

    def path(self, host_path):
        """The node's name for host_path (a path under its directory)."""
        rel = os.path.relpath(host_path, self.host_dir)
        if rel.startswith(".."):
            raise ValueError(f"{host_path} is not under node {self.name}'s directory {self.host_dir}")
        return os.path.normpath(os.path.join(self.root, rel))

    def set_kubelet_flags(self, flags):
        """The machine's own kubelet flags: /etc/default/kubelet's KUBELET_EXTRA_ARGS in the node."""
        with open(os.path.join(self.defaults, "kubelet"), "w") as f:
            f.write(f'KUBELET_EXTRA_ARGS="{" ".join(flags)}"\n')

    # machines booting together (threads) make their namespaces one at a time: the first one mounts ns_dir
    # on itself, and a namespace made while another thread does so would miss ns_dir's contents
    boot_lock = threading.Lock()

    def boot(self):
        with NodeWorld.boot_lock:
            self.boot_locked()

    def boot_locked(self):
        for d in (self.pod_logs, self.defaults, self.root, POD_LOGS):
            os.makedirs(d, exist_ok=True)
        os.makedirs(self.ns_dir, exist_ok=True)
        if self.ns_dir not in mounts_under(self.ns_dir):  # a namespace file must sit on a private mount
            run(["mount", "--bind", self.ns_dir, self.ns_dir])
            run(["mount", "--make-private", self.ns_dir])
        open(self.file, "a").close()
        binds = ((self.host_dir, self.root), (self.resolv_conf, "/etc/resolv.conf"),
                 (self.pod_logs, POD_LOGS), (self.defaults, "/etc/default"))
        script = "set -e\n" + "".join(
            f'mount --make-slave "$(findmnt -n -o TARGET -T {shlex.quote(dst)})"\n'
            f"mount --bind {shlex.quote(src)} {shlex.quote(dst)}\n" for src, dst in binds)
        run(["unshare", f"--mount={self.file}", "--propagation", "unchanged", "--", "sh", "-c", script])

    def halt(self):
        """The namespace released: it ends with the last of the node's processes (stopped before)."""
        if os.path.exists(self.file):
            run(["umount", self.file], check=False)
            os.unlink(self.file)

    def argv(self, argv, netns=None):
        return ["nsenter", f"--mount={self.file}", *([f"--net=/run/netns/{netns}"] if netns else []), "--", *argv]

    @staticmethod
    def close_all(ns_dir):
        """After every node's halt(): the run's namespace directory gone."""
        if os.path.isdir(ns_dir):
            for m in mounts_under(ns_dir):
                run(["umount", m], check=False)
            shutil.rmtree(ns_dir, ignore_errors=True)


class Node:
    """A master node: containerd + kubelet on a manifest directory. start(), then close() (also on failure)."""

    def __init__(self, name, manifests, ca_file, kubeconfig, node_ip, netns=None, hosts_file=None,
                 etcd_images=(), base=None, kubelet_port=10250, healthz_port=10248, api_port=443,
                 resolv_conf=None, keep_server=False, kubelet_files=None, cni=True, taints=(),
                 own_pod_logs=False, handoff=False, world=None):
        if not re.fullmatch(r"[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?", name):
            raise ValueError(f"node name '{name}' is not a short DNS label")
        self.name, self.manifests, self.ca_file = name, manifests, ca_file
        self.admin_kubeconfig, self.node_ip, self.netns = kubeconfig, node_ip, netns
        self.hosts_file, self.etcd_images = hosts_file, tuple(etcd_images)
        self.resolv_conf = resolv_conf  # the node's resolver (a DNS server of the test); None: hosts only
        # keep_server: kubelet talks to the kubeconfig's server as written (protokube's kubelet kubeconfig:
        # api.internal.<C> on a self-hosted master, docs/pki.md), resolved through resolv_conf; else 127.0.0.1
        self.keep_server = keep_server
        # protokube wrote the kubelet's files there (config.yaml, kubelet.env with KUBELET_ARGS; a worker's
        # bootstrap kubeconfig: docs/workers.md, a master's: docs/components.md); the kubelet starts from them,
        # not from this harness's
        self.kubelet_files = kubelet_files
        # cni: this harness writes the node's CNI network (in a namespace of the test); False: protokube does
        # (spec.networking.provider kubenet, cniConfDir = cni_conf_dir())
        self.cni = cni
        # the taints the kubelet registers its Node with (--register-with-taints): a master's
        # node-role.kubernetes.io/master=:NoSchedule, as kops' nodeup gives its masters' kubelets
        self.taints = tuple(taints)
        # own_pod_logs: this node's /var/log/pods is a directory of its own, bound there for its containerd and
        # kubelet alone. Every kubelet's garbage collector removes the directories of /var/log/pods whose pod
        # it does not know: nodes sharing the machine's delete each other's pod logs (kubectl logs then fails)
        self.own_pod_logs = own_pod_logs
        # handoff: the kubelet is the bootstrap kubelet of spec.kubelet.selfHosted (docs/kubelet-handoff.md):
        # its runtime and directories are in protokube's kubelet.env (machine_spec(): the managed kubelet in
        # its pod reads the same file), this harness restarts it whenever it exits as its unit's
        # Restart=always does, and the node gets the managed kubelet's image
        self.handoff = handoff
        # world: the node's processes run in its NodeWorld (a handoff node of a cluster: one DaemonSet
        # template's paths are each node's own); its paths, as the node names them, are world.path()'s
        self.world = world
        self.kubelet_image = handoff
        self.kubelet_exits = []  # (monotonic time, status) of every exit of the bootstrap kubelet
        self.supervisor = None
        self.supervisor_stop = threading.Event()
        self.kubelet_port, self.healthz_port, self.api_port = kubelet_port, healthz_port, api_port
        self.base = base or tempfile.mkdtemp(prefix=f"pk-node-{name}-")
        self.own_base = base is None
        os.makedirs(self.base, exist_ok=True)
        # One cgroup root per node and run, so two runs (or two nodes) never share one.
        self.cgroup_root = cgroup_root_of(name)
        self.sock = os.path.join(self.base, "containerd", "containerd.sock")
        self.kubelet_root = os.path.join(self.base, "kubelet")
        self.pod_logs_root = world.pod_logs if world else self.path("pod-logs") if own_pod_logs else POD_LOGS
        self.containerd = self.kubelet = None
        self.timings = {}

    def machine_spec(self):
        """spec.kubelet's lines for this machine's runtime and directories (a handoff node's): what
        files_kubelet_argv() adds for any other node."""
        name = self.world.path if self.world else (lambda p: p)
        return (f"    containerRuntime: remote\n    containerRuntimeEndpoint: unix://{name(self.sock)}\n"
                f"    podInfraContainerImage: {PAUSE_IMAGE}\n    rootDir: {name(self.kubelet_root)}\n"
                f"    volumePluginDir: {name(os.path.join(self.kubelet_root, 'volume-plugins'))}\n")

    def machine_kubelet_flags(self):
        """The machine's own kubelet flags (a NodeWorld's /etc/default/kubelet, which both kubelets read):
        its cgroup root, which one cluster-wide KubeletConfiguration cannot give nodes that share the
        machine's cgroups."""
        return [f"--cgroup-root={self.cgroup_root}"] if self.world else []

    # --- paths and argv
    def path(self, *p):
        return os.path.join(self.base, *p)

    def in_netns(self, argv):
        if self.world:
            return self.world.argv(argv, self.netns)
        if self.netns:
            return ["nsenter", f"--net=/run/netns/{self.netns}", *argv]
        return list(argv)

    def log(self, what):
        return open(self.path(f"{what}.log"), "ab")

    def ctr(self, *args, timeout=120, check=True):
        return run(["ctr", "-a", self.sock, "-n", "k8s.io", *args], timeout=timeout, check=check)

    # --- cgroups
    def cgroup_dirs(self):
        out = []
        for h in CGROUP_V1 + ("unified",):
            if os.path.isdir(os.path.join(CGROUP, h)):
                out.append(os.path.join(CGROUP, h) + self.cgroup_root)
        return out

    def make_cgroups(self):
        for h in CGROUP_V1:
            top = os.path.join(CGROUP, h)
            if not os.path.isdir(top):
                continue
            d = top + self.cgroup_root
            os.makedirs(d, exist_ok=True)
            if h == "cpuset":  # an empty cpuset refuses tasks: inherit the parent's
                for f in ("cpuset.cpus", "cpuset.mems"):
                    with open(os.path.join(top, f)) as src, open(os.path.join(d, f), "w") as dst:
                        dst.write(src.read())

    def cgroup_pids(self):
        pids = set()
        for d in self.cgroup_dirs():
            for dirpath, _, files in os.walk(d):
                if "cgroup.procs" in files:
                    try:
                        with open(os.path.join(dirpath, "cgroup.procs")) as f:
                            pids.update(int(x) for x in f.read().split())
                    except OSError:
                        pass
        return pids

    def remove_cgroups(self):
        left = []
        for d in self.cgroup_dirs():
            if not os.path.isdir(d):
                continue
            for dirpath, _, _ in sorted(os.walk(d), key=lambda w: len(w[0]), reverse=True):
                try:
                    os.rmdir(dirpath)
                except OSError as e:
                    left.append(f"{dirpath}: {e.strerror}")
        return left

    # --- containerd
    def write_containerd_config(self):
        cd = self.path("containerd")
        for sub in ("root", "state", "opt", "runc", "net.d"):
            os.makedirs(os.path.join(cd, sub), exist_ok=True)
        cfg = f"""version = 2
root = "{cd}/root"
state = "{cd}/state"
[grpc]
  address = "{self.sock}"
[ttrpc]
  address = "{self.sock}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{cd}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{cd}/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      Root = "{cd}/runc"
      SystemdCgroup = false
"""
        with open(os.path.join(cd, "config.toml"), "w") as f:
            f.write(cfg)
        if self.netns and self.cni:
            # A CNI network makes containerd report NetworkReady, so the node becomes Ready. Only in a namespace
            # of the test: the bridge plugin would create its bridge (on the first pod that is not hostNetwork)
            # wherever the node runs.
            conf = {"cniVersion": "0.4.0", "name": "pk-node", "plugins": [
                {"type": "bridge", "bridge": "pkcni0", "isGateway": True,
                 "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]],
                          "dataDir": os.path.join(cd, "cni-ipam")}},
                {"type": "loopback"}]}
            with open(os.path.join(cd, "net.d", "10-pk-node.conflist"), "w") as f:
                json.dump(conf, f, indent=1)
        return os.path.join(cd, "config.toml")

    def cni_conf_dir(self):
        """Where this node's containerd reads its CNI networks."""
        return self.path("containerd", "net.d")

    def start_containerd(self):
        cfg = self.write_containerd_config()
        t0 = time.monotonic()
        with self.log("containerd") as log:
            # containerd in a UTS namespace of its own named after the node: hostNetwork containers share
            # it, so each master's components see their own hostname (leader election names the holder by it)
            # (and, with own_pod_logs, a mount namespace where its pod log directory is /var/log/pods)
            own_logs = self.own_pod_logs and not self.world  # a world has its own
            unshare = ["unshare", "--uts", *(["--mount", "--propagation", "unchanged"] if own_logs else [])]
            script = 'hostname "$0" && ' + (self.bind_pod_logs() if own_logs else "") + 'exec "$@"'
            argv = [*unshare, "--", "sh", "-c", script, self.name, "containerd", "--config", cfg]
            self.containerd = subprocess.Popen(self.in_netns(argv), stdout=log,
                                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        def up():
            if self.containerd.poll() is not None:
                raise RuntimeError(f"containerd exited {self.containerd.returncode}: {self.tail('containerd')}")
            return os.path.exists(self.sock) and self.ctr("version", timeout=10, check=False).returncode == 0
        wait_for("containerd's socket", up, 30)
        self.timings["containerd"] = time.monotonic() - t0

    def import_images(self):
        t0 = time.monotonic()
        d, images = k8s_images(self.etcd_images)
        # the managed kubelet's image is large (the kubelet binary): only a node that runs one gets it
        images = [i for i in images if self.kubelet_image or not i["name"].startswith(KUBELET_IMAGE_NAME)]
        self.timings["image build"] = time.monotonic() - t0
        t0 = time.monotonic()
        for img in images:
            self.ctr("images", "import", os.path.join(d, img["tar"]), timeout=300)
        have = set(self.ctr("images", "ls", "-q").stdout.split())
        missing = [i["name"] for i in images if i["name"] not in have]
        if missing:
            raise RuntimeError(f"containerd lists no image {missing} after the import")
        self.timings["image import"] = time.monotonic() - t0
        self.images = [i["name"] for i in images]

    # --- kubelet
    def write_kubelet_files(self):
        os.makedirs(self.kubelet_root, exist_ok=True)
        # The admin kubeconfig of protokube's PKI (CN kubernetes-admin, O system:masters) registers the node for
        # now: protokube issues no kubelet client certificate yet. Its server names api.<cluster>, which this
        # machine does not resolve: the copy points at the node's own apiserver, at 127.0.0.1 in the node's
        # network namespace as protokube's own kubelet kubeconfig does. Not the node's address: after the pivot
        # every master's apiserver serves the first master's certificate (docs/pivot.md, "One writer"),
        # which names 127.0.0.1 but no other master's address (the 3-master demo's kubelet on b could not
        # delete its mirror pods).
        with open(self.admin_kubeconfig) as f:
            kc = f.read()
        server = r"\g<0>" if self.keep_server else rf"\g<1>https://127.0.0.1:{self.api_port}"
        kc, n = re.subn(r"(?m)^(\s*server:\s*).*$", server, kc)
        if n != 1:
            raise ValueError(f"{self.admin_kubeconfig}: expected one 'server:' line, found {n}")
        kubeconfig = self.path("kubelet.kubeconfig")
        fd = os.open(kubeconfig, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(kc)
        resolv = self.path("resolv.conf")  # no nameserver is reachable from the node: names come from hosts
        with open(resolv, "w") as f:
            if self.resolv_conf:
                with open(self.resolv_conf) as src:
                    f.write(src.read())
            else:
                f.write("options ndots:1 timeout:1 attempts:1\n")
        cfg = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "staticPodPath": self.manifests, "fileCheckFrequency": "1s",
            # A mirror pod whose creation failed while the apiserver was starting is retried on the pod's next
            # sync, every syncFrequency (1m by default) for a pod with no other event: 10s brings the mirror
            # pods of a cold start from ~90 s after /readyz down to seconds.
            "syncFrequency": "10s",
            "cgroupDriver": "cgroupfs", "cgroupRoot": self.cgroup_root, "failSwapOn": False,
            "address": self.node_ip, "port": self.kubelet_port, "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1", "healthzPort": self.healthz_port,
            "authentication": {"x509": {"clientCAFile": self.ca_file}, "webhook": {"enabled": False},
                               "anonymous": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "resolvConf": resolv,
            # The images cannot be pulled again: never garbage-collect them, never evict the control plane
            # because a shared test machine's disk is busy.
            "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
            "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        }
        path = self.path("kubelet-config.json")  # JSON is YAML: kubelet reads it as its config file
        with open(path, "w") as f:
            json.dump(cfg, f, indent=1)
        return path, kubeconfig

    def kubelet_argv(self, config, kubeconfig):
        argv = [os.path.join(k8s_bin(), "kubelet"), "--config", config, "--kubeconfig", kubeconfig,
                "--hostname-override", self.name, "--node-ip", self.node_ip, "--root-dir", self.kubelet_root,
                "--cert-dir", os.path.join(self.kubelet_root, "pki"),
                "--volume-plugin-dir", os.path.join(self.kubelet_root, "volume-plugins"),
                "--container-runtime=remote", f"--container-runtime-endpoint=unix://{self.sock}",
                f"--pod-infra-container-image={PAUSE_IMAGE}", "--v=2"]
        if self.taints:
            argv.append("--register-with-taints=" + ",".join(self.taints))
        return self.kubelet_namespaces(argv)

    def bind_pod_logs(self):
        """Shell commands (in a mount namespace of their own) that bind this node's pod log directory on
        /var/log/pods; / made a slave first, so the bind stays in the namespace whatever the machine's root
        propagation (the mounts under / keep theirs)."""
        os.makedirs(self.pod_logs_root, exist_ok=True)
        os.makedirs(POD_LOGS, exist_ok=True)
        return f"mount --make-slave / && mount --bind {shlex.quote(self.pod_logs_root)} {POD_LOGS} && "

    def kubelet_namespaces(self, argv):
        """argv run in the node's network namespace, with its hosts file or resolver bound for kubelet alone."""
        if self.world:  # its resolver and pod logs are the world's
            return self.in_netns(argv)
        if self.own_pod_logs:
            binds = 'mount --bind "$0" /etc/hosts && ' if self.hosts_file else (
                'mount --bind "$0" /etc/resolv.conf && ' if self.keep_server and self.resolv_conf else "")
            first = self.hosts_file or (self.resolv_conf if binds else "unused")
            argv = ["unshare", "--mount", "--propagation", "unchanged", "--", "sh", "-c",
                    self.bind_pod_logs() + binds + 'exec "$@"', first, *argv]
        elif self.hosts_file:
            # propagation unchanged: the machine's mounts are private, so the /etc/hosts bind stays in
            # kubelet's namespace, while its root dir (made a shared mount in start_kubelet) stays a peer of
            # the machine's: the tmpfs kubelet mounts there for Secret volumes reach containerd.
            argv = ["unshare", "--mount", "--propagation", "unchanged", "--", "sh", "-c",
                    'mount --bind "$0" /etc/hosts && exec "$@"', self.hosts_file, *argv]
        elif self.keep_server and self.resolv_conf:
            # kubelet resolves the API's name through the node's resolver: its /etc/resolv.conf, bound in a
            # mount namespace of its own whose / is made a slave first, so the bind stays there whatever the
            # machine's root propagation; the root dir (under a shared mount of the test) still propagates.
            argv = ["unshare", "--mount", "--propagation", "unchanged", "--", "sh", "-c",
                    'mount --make-slave / && mount --bind "$0" /etc/resolv.conf && exec "$@"',
                    self.resolv_conf, *argv]
        return self.in_netns(argv)

    def healthz(self):
        p = run(self.in_netns(["curl", "-s", "-m", "2", f"http://127.0.0.1:{self.healthz_port}/healthz"]),
                timeout=10, check=False)
        return p.returncode == 0 and p.stdout.strip() == "ok"

    def share_kubelet_root(self):
        """kubelet's root dir as a shared mount of its own (a bind onto itself), so that what kubelet mounts
        there from its mount namespace (Secret and ConfigMap volumes) is seen by containerd; close()
        unmounts it with the rest under the node's directory."""
        os.makedirs(self.kubelet_root, exist_ok=True)
        if self.kubelet_root not in mounts_under(self.kubelet_root):
            run(["mount", "--bind", self.kubelet_root, self.kubelet_root])
        run(["mount", "--make-shared", self.kubelet_root])

    def files_kubelet_argv(self):
        """The kubelet as its init system would start it: the flags protokube wrote (KUBELET_ARGS of
        kubelet.env, --config among them), and this machine's own (where kubelet keeps its state, the
        container runtime's socket, the pause image, the taints a master's kubelet registers its Node with)."""
        with open(os.path.join(self.kubelet_files, "kubelet.env")) as f:
            m = re.search(r'^KUBELET_ARGS="([^"]*)"$', f.read(), re.M)
        if not m:
            raise ValueError(f"{self.kubelet_files}/kubelet.env: no KUBELET_ARGS line")
        argv = [os.path.join(k8s_bin(), "kubelet"), *m.group(1).split()]
        if not self.handoff:  # a handoff node has them from its spec (machine_spec())
            argv += ["--root-dir", self.kubelet_root,
                     "--volume-plugin-dir", os.path.join(self.kubelet_root, "volume-plugins"),
                     "--container-runtime=remote", f"--container-runtime-endpoint=unix://{self.sock}",
                     f"--pod-infra-container-image={PAUSE_IMAGE}"]
        if self.taints:
            argv.append("--register-with-taints=" + ",".join(self.taints))
        argv += self.machine_kubelet_flags()  # the unit's $KUBELET_EXTRA_ARGS
        return self.kubelet_namespaces(argv)

    def start_kubelet(self):
        if self.kubelet_files:
            os.makedirs(self.kubelet_root, exist_ok=True)
            argv = self.files_kubelet_argv()
        else:
            argv = self.kubelet_argv(*self.write_kubelet_files())
        if self.hosts_file:
            self.share_kubelet_root()
        self.kubelet_started = time.monotonic()
        with self.log("kubelet") as log:
            self.kubelet = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if self.handoff:
            self.supervise_kubelet(argv)
            return

        def up():
            if self.kubelet.poll() is not None:
                raise RuntimeError(f"kubelet exited {self.kubelet.returncode}: {self.tail('kubelet')}")
            return self.healthz()
        wait_for("kubelet's healthz", up, 60, interval=1)
        self.timings["kubelet healthz"] = time.monotonic() - self.kubelet_started

    def supervise_kubelet(self, argv, restart_sec=2, max_restarts=500):
        """The bootstrap kubelet's unit: Restart=always, RestartSec=2 (units/protokube-kubelet.service),
        whatever the exit status (it exits 0 when the managed kubelet opens the lock); bounded in count."""
        def loop():
            for _ in range(max_restarts):
                status = self.kubelet.wait()
                self.kubelet_exits.append((time.monotonic(), status))
                if self.supervisor_stop.wait(restart_sec):
                    return
                with self.log("kubelet") as log:
                    self.kubelet = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                                    stdin=subprocess.DEVNULL)
        self.supervisor = threading.Thread(target=loop, name=f"kubelet-{self.name}", daemon=True)
        self.supervisor.start()

    def stop_kubelet(self):
        """The kubelet stopped for good: its supervisor first, so that it is not started again."""
        self.supervisor_stop.set()
        stop_pid(self.kubelet)
        if self.supervisor:
            self.supervisor.join(timeout=30)
        stop_pid(self.kubelet)  # one the supervisor started just before it saw the stop

    def start(self):
        if self.world:
            self.world.set_kubelet_flags(self.machine_kubelet_flags())
        self.make_cgroups()
        self.start_containerd()
        self.import_images()
        self.start_kubelet()
        return self

    # --- inspection
    def tail(self, what, n=40):
        try:
            with open(self.path(f"{what}.log"), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError as e:
            return f"({e})"

    def containers(self):
        """crictl-like view through ctr: the container ids containerd runs for kubelet."""
        return self.ctr("containers", "ls", "-q", check=False, timeout=30).stdout.split()

    def pod_logs(self):
        """{pod dir under /var/log/pods: text of its newest container logs} for this node's pods."""
        out = {}
        for uid in self.pod_uids():
            for d in self.pod_log_dirs(uid):
                text = []
                for dirpath, _, files in os.walk(d):
                    for fn in sorted(files):
                        try:
                            with open(os.path.join(dirpath, fn), errors="replace") as f:
                                text.append(f"--- {fn}\n" + "".join(f.readlines()[-30:]))
                        except OSError:
                            pass
                out[os.path.basename(d)] = "\n".join(text)
        return out

    def pod_uids(self):
        try:
            return os.listdir(os.path.join(self.kubelet_root, "pods"))
        except OSError:
            return []

    def pod_log_dirs(self, uid):
        try:
            return [os.path.join(self.pod_logs_root, d) for d in os.listdir(self.pod_logs_root)
                    if d.endswith("_" + uid)]
        except OSError:
            return []

    # --- teardown
    def sandbox_netns(self):
        """The network namespaces of this node's pod sandboxes (containerd's bind mounts under /run/netns),
        as containerd names them in its containers' specs. A node stopped under its pods (a terminated
        machine) never runs their CNI DEL: close() removes what is left of these."""
        if self.containerd is None or self.containerd.poll() is not None:
            return []
        out = set()
        for cid in self.ctr("containers", "ls", "-q", check=False, timeout=20).stdout.split():
            info = self.ctr("containers", "info", cid, check=False, timeout=20)
            try:
                namespaces = json.loads(info.stdout).get("Spec", {}).get("linux", {}).get("namespaces", [])
            except ValueError:
                continue
            for ns in namespaces:
                path = ns.get("path") or ""
                if ns.get("type") == "network" and re.fullmatch(r"(/var)?/run/netns/cni-[0-9a-f-]+", path):
                    out.add(path)
        return sorted(out)

    @staticmethod
    def remove_netns(paths):
        errors = []
        for path in paths:
            if not os.path.exists(path):
                continue  # its pod went through the kubelet: CNI DEL removed it
            if os.path.ismount(path) and run(["umount", path], check=False).returncode != 0:
                errors.append(f"umount {path} failed")
                continue
            os.unlink(path)
        return errors

    def shim_pids(self):
        """containerd-shim-runc-v2 processes serving this node's containerd (their -address is our socket)."""
        out = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"containerd-shim-runc-v2") and b"-address" in argv:
                i = argv.index(b"-address")
                if i + 1 < len(argv) and argv[i + 1] == self.sock.encode():
                    out.append(int(pid))
        return out

    def kill_pids(self, what, lister, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pids = lister()
            if not pids:
                return []
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
        return [f"{what} still running: {sorted(lister())}"]

    def power_cut(self):
        """kubelet, containerd, the containers and their shims: SIGKILL, all at once (a handoff node's
        kubelet not started again); then what a reboot clears: the runtime's state, cgroups, the mounts
        under the node's directory. Returns what could not be cleaned."""
        self.supervisor_stop.set()
        for p in (self.kubelet, self.containerd):
            if p is not None and p.poll() is None:
                p.kill()
        errors = self.kill_pids("containers", self.cgroup_pids) + self.kill_pids("shims", self.shim_pids)
        errors += self.close()
        for d in ("state", "runc"):
            shutil.rmtree(self.path("containerd", d), ignore_errors=True)
        return errors

    def close(self):
        """Stops everything the node started; returns a list of what could not be cleaned (empty = clean)."""
        errors = []
        uids = self.pod_uids()
        netns = self.sandbox_netns()
        keep = os.environ.get("PROTOKUBE_NODE_KEEP_LOGS")  # a directory: the logs outlive the teardown
        if keep:
            os.makedirs(keep, exist_ok=True)
            for what in ("kubelet", "containerd"):
                if os.path.exists(self.path(f"{what}.log")):
                    shutil.copy(self.path(f"{what}.log"), os.path.join(keep, f"{self.name}-{what}.log"))
        self.stop_kubelet()
        # The containers run in the node's cgroups; their shims are children of nobody we started.
        errors += self.kill_pids("containers", self.cgroup_pids)
        errors += self.kill_pids("shims", self.shim_pids)
        stop_pid(self.containerd)
        errors += self.remove_netns(netns)
        for m in mounts_under(self.base):
            if run(["umount", m], check=False).returncode != 0:
                p = run(["umount", "-l", m], check=False)
                errors.append(f"umount {m} needed -l: {p.stderr.strip()}")
        errors += self.remove_cgroups()
        for uid in uids if not self.world else ():  # a world's are in the node's own directory
            for d in self.pod_log_dirs(uid):
                shutil.rmtree(d, ignore_errors=True)
        try:
            for link in os.listdir("/var/log/containers"):
                target = os.path.join("/var/log/containers", link)
                if os.path.islink(target) and any(f"_{u}/" in os.readlink(target) for u in uids):
                    os.unlink(target)
        except OSError:
            pass
        if self.own_base:
            shutil.rmtree(self.base, ignore_errors=True)
        return errors


def main():
    import argparse
    ap = argparse.ArgumentParser(description="Runs one master node (containerd + kubelet) until Ctrl-C.")
    ap.add_argument("--name", required=True)
    ap.add_argument("--manifests", required=True)
    ap.add_argument("--ca", required=True, help="the cluster CA (kubelet's clientCAFile)")
    ap.add_argument("--kubeconfig", required=True, help="protokube's <pki>/admin/kubeconfig")
    ap.add_argument("--node-ip", required=True)
    ap.add_argument("--netns")
    ap.add_argument("--hosts", help="the hosts file protokube publishes to, seen by pods as /etc/hosts")
    ap.add_argument("--etcd-image", action="append", default=[])
    a = ap.parse_args()
    node = Node(a.name, a.manifests, a.ca, a.kubeconfig, a.node_ip, netns=a.netns, hosts_file=a.hosts,
                etcd_images=a.etcd_image)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        node.start()
        print(f"node {a.name} up in {node.base}: {node.timings}; Ctrl-C stops it", flush=True)
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        errors = node.close()
        print("teardown:", errors or "clean")


if __name__ == "__main__":
    sys.exit(main())
