"""The simulated cluster of the end-to-end scenario: a BIND server on the test network serving the cluster
zone with a TSIG key, one local volume pool, and masters. Each master is a network namespace (netlab) with
`protokube run` and a static-pod runner (podrunner.py). protokube itself runs in the machine's mount
namespace, so the volumes it mounts are visible to the pods the runner starts inside the namespace.

Everything started here is tracked and stopped by PID in close(), mounts under the work directory are
unmounted, and loop devices attached from the pool's images are detached."""

import json
import os
import shutil
import signal
import sys
import subprocess
import tempfile
import threading
import time

from netlab import NetLab

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "k8s"))
sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration"))
from node import Node, NodeWorld, kubelet_spec  # noqa: E402  (tests/k8s/node.py: containerd + kubelet)
from loopdev import loops_backed_by_files_under  # noqa: E402  (tests/integration/loopdev.py)

# This machine's sandbox rejects traffic from its own (root) network namespace to the test network, while
# traffic between namespaces on the bridge passes. So every party of the simulation lives in a namespace of
# its own: the DNS server in host "dns", and each master's protokube joins its node's network namespace
# (nsenter --net) while staying in the machine's mount namespace, where its mounts must be.
DNS_ADDR = "198.18.42.53"

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLUSTER = "demo.k8s.test"
K8S_VERSION_REAL = "1.20.2"  # the version scripts/k8s-binaries.sh builds: real kubelets run it
# Debian's etcd (3.4) runs every member, real (scripts/k8s-images.sh builds the image from it) or simulated (the
# pod runner starts the binary): the tag says so, since the manifest and a restore's tool follow the version
ETCD_IMAGE_REAL = "registry.k8s.io/etcd:3.4.13-0"
ZONE = "k8s.test"
SUFFIX = f"internal.{CLUSTER}"


def protokube_bin():
    return os.environ.get("PROTOKUBE_BIN", os.path.join(ROOT, "build", "src", "cli", "protokube"))


def run(argv, check=True, timeout=60, **kw):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def in_parallel(fns, timeout=900):
    """Each of fns in a thread of its own, as machines power on together; the first exception is raised
    again once every thread ended (or timeout s passed)."""
    errors = []

    def run_one(fn):
        try:
            fn()
        except Exception as e:  # kept for the caller: a machine that did not start
            errors.append(e)
    threads = [threading.Thread(target=run_one, args=(fn,)) for fn in fns]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout)
    if errors:
        raise errors[0]


def stop_process(proc, grace=3.0):
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


class Bind:
    """named serving ZONE on DNS_ADDR:53 in the test network's host "dns", dynamic updates allowed with the
    TSIG key."""

    def __init__(self, workdir, lab, addr=None):
        self.dir = os.path.join(workdir, "bind")
        self.lab = lab
        # a test network on another /24 has its own: cluster_aws.py passes it, scenario_selfhosted.py sets the
        # module's DNS_ADDR (read here, when the server is made, not when this module was loaded)
        self.addr = addr or DNS_ADDR
        self.proc = None

    def setup(self):
        os.makedirs(self.dir, exist_ok=True)
        key = run(["tsig-keygen", "-a", "hmac-sha256", "protokube-key"]).stdout
        self.key_file = os.path.join(self.dir, "tsig.key")
        with open(self.key_file, "w") as f:
            f.write(key)
        os.chmod(self.key_file, 0o640)  # named (as nobody) reads it through the group below
        # protokube insists on a key only its owner can read: give it its own copy.
        self.client_key_file = os.path.join(os.path.dirname(self.dir), "protokube-tsig.key")
        with open(self.client_key_file, "w") as f:
            f.write(key)
        os.chmod(self.client_key_file, 0o600)
        with open(os.path.join(self.dir, f"{ZONE}.db"), "w") as f:
            f.write(f"$TTL 60\n@ IN SOA ns1.{ZONE}. hostmaster.{ZONE}. (1 3600 600 86400 60)\n"
                    f"  IN NS ns1.{ZONE}.\nns1 IN A {self.addr}\n"
                    f"www IN A 198.18.42.200\n")  # a record we do not own: must survive every pass
        with open(os.path.join(self.dir, "named.conf"), "w") as f:
            f.write(f'''options {{ directory "{self.dir}"; pid-file "{self.dir}/named.pid";
  session-keyfile "{self.dir}/session.key"; managed-keys-directory "{self.dir}";
  listen-on port 53 {{ {self.addr}; }}; listen-on-v6 {{ none; }};
  recursion no; dnssec-validation no; notify no; }};
controls {{ }};
include "{self.key_file}";
zone "{ZONE}" {{ type primary; file "{self.dir}/{ZONE}.db";
  update-policy {{ grant protokube-key zonesub ANY; }}; }};
''')
        shutil.chown(self.dir, "nobody", "nogroup")
        for n in os.listdir(self.dir):
            shutil.chown(os.path.join(self.dir, n), "nobody", "nogroup")

    def start(self):
        # As root so it can bind port 53; it drops to nobody itself.
        self.proc = subprocess.Popen(self.lab.exec_argv("dns", ["/usr/sbin/named", "-g", "-u", "nobody", "-c",
                                                                os.path.join(self.dir, "named.conf")]),
                                     stdout=open(os.path.join(self.dir, "named.log"), "ab"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        for _ in range(100):
            if self.proc.poll() is not None:
                raise RuntimeError("named exited; see " + os.path.join(self.dir, "named.log"))
            p = run(self.lab.exec_argv("dns", ["dig", f"@{self.addr}", ZONE, "SOA", "+short", "+time=1",
                                               "+tries=1"]), check=False)
            if p.returncode == 0 and p.stdout.strip():
                return
            time.sleep(0.05)
        raise RuntimeError("named did not answer within 5 s")

    def stop(self):
        stop_process(self.proc)
        self.proc = None

    def lookup(self, name, rtype="A"):
        p = run(self.lab.exec_argv("dns", ["dig", f"@{self.addr}", name, rtype, "+short", "+time=1",
                                           "+tries=1"]), check=False)
        return sorted(p.stdout.split())


class Master:
    def __init__(self, cluster, name, addr, external, zone):
        self.cluster, self.name, self.addr, self.external, self.zone = cluster, name, addr, external, zone
        self.dir = os.path.join(cluster.workdir, "nodes", name)
        self.manifests = os.path.join(self.dir, "manifests")
        self.config_dir = os.path.join(self.dir, "lib")
        self.kubelet_dir = os.path.join(self.dir, "kubelet")
        self.mnt = os.path.join(self.dir, "mnt")
        self.logs = os.path.join(self.dir, "logs")
        for d in (self.manifests, self.mnt, self.logs):
            os.makedirs(d, exist_ok=True)
        self.protokube = None
        self.runner = None
        self.node = None  # real mode: tests/k8s/node.py
        self.port_file = os.path.join(self.dir, "listen")
        # One machine plays every master: each keeps its certificates in a directory of its own, so each has
        # its own copy of the spec with pki.dir set (a real master has /srv/kubernetes on its own disk).
        self.pki = os.path.join(self.dir, "pki")
        # and its own state directory: a real master's /var/lib/protokube is its own, with the node's lock in
        # it (one writer of the node's state at a time, docs/pki.md); shared, it would serialize the masters
        self.state = os.path.join(self.dir, "state")
        self.spec = os.path.join(self.dir, "cluster.yaml")
        resolv_conf = f"/etc/netns/{cluster.lab.ns(name)}/resolv.conf"
        # cluster.worlds: the master's processes run in a NodeWorld of its own (tests/k8s/node.py), where its
        # directory is the same path as every other node's: its paths as protokube and kubelet see them are
        # self.at()'s
        self.world = NodeWorld(name, self.dir, resolv_conf, cluster.worlds) if cluster.worlds else None
        # real mode: protokube renders the kubelet's files (docs/components.md), from the settings this machine
        # needs
        kubelet = kubelet_spec(name, "/etc/resolv.conf" if self.world else resolv_conf) if cluster.real else ""
        with open(cluster.spec) as src, open(self.spec, "w") as dst:
            dst.write(src.read().replace("  kubernetesVersion:",
                                         f"  pki:\n    dir: {self.at(self.pki)}\n{kubelet}{self.kubelet_extra()}"
                                         "  kubernetesVersion:"))

    def at(self, path):
        """path (under this master's directory) as the master's own processes name it."""
        return self.world.path(path) if self.world else path

    def host_kubeconfig(self, user):
        """<pki>/<user>/kubeconfig for the harness: with a NodeWorld, a copy (0600, replaced whole) whose files
        are named by their paths on the machine."""
        path = os.path.join(self.pki, user, "kubeconfig")
        if not self.world:
            return path
        with open(path) as f:
            text = f.read().replace(self.world.root + "/", self.dir + "/")
        copy = os.path.join(self.dir, f"{user}.kubeconfig")
        tmp = f"{copy}.{os.getpid()}.{threading.get_ident()}"
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(text)
        os.rename(tmp, copy)
        return copy

    def kubelet_extra(self):
        """More of spec.kubelet (a scenario's)."""
        return ""

    etcd_images = (ETCD_IMAGE_REAL,)  # what its containerd gets (a scenario's master may want more)

    def node_args(self):
        return ["--node-name", self.name, "--zone", self.zone, "--internal-ip", self.addr, "--external-ip",
                self.external, "--pool", self.cluster.pool, *self.file_args()]

    def file_args(self):
        """Where this master's files go: a real master's /etc/kubernetes/manifests, /var/lib/<component>,
        /var/lib/kubelet and /mnt, each a directory of its own here (one machine plays every master)."""
        return ["--manifest-dir", self.at(self.manifests), "--config-dir", self.at(self.config_dir),
                "--kubelet-dir", self.at(self.kubelet_dir), "--mount-root", self.at(self.mnt)]

    def start(self, port):
        self.port = port
        if self.world:
            self.world.boot()
        if not self.cluster.real:
            self.runner = subprocess.Popen(
                ["/usr/bin/python3", os.path.join(HERE, "podrunner.py"), "--manifest-dir", self.manifests,
                 "--netns", self.cluster.lab.ns(self.name), "--log-dir", self.logs,
                 "--substitute", "/usr/local/bin/etcd=/usr/bin/etcd", "--max-seconds", "1800"],
                start_new_session=True)
        self.start_protokube()
        if self.cluster.real:
            self.start_node()

    def start_protokube(self):
        """The daemon, in the master's network namespace (again after a kill: a master's init system)."""
        ns = self.cluster.lab.ns(self.name)
        argv = [protokube_bin(), "-c", self.spec, "--log-format", "json", "run", *self.node_args(), "--listen",
                f"127.0.0.1:{self.port}", "--interval", "5s"]
        self.protokube = subprocess.Popen(
            self.world.argv(argv, ns) if self.world else ["nsenter", f"--net=/run/netns/{ns}", "--", *argv],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.logs, "protokube.log"), "ab"),
            start_new_session=True, env=dict(os.environ, PROTOKUBE_STATE_DIR=self.state))

    def start_node(self):
        """containerd and kubelet in the master's namespace, once protokube has issued the node's kubelet
        client certificate and written the kubelet's files (its first pass): the kubelet starts from those
        (config.yaml, kubelet.env), as its init system would start it."""
        need = [os.path.join(self.pki, "kubelet", "kubeconfig"), os.path.join(self.kubelet_dir, "kubelet.env")]
        deadline = time.monotonic() + 60
        while not all(os.path.exists(p) for p in need):
            if self.protokube.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"master {self.name}: no kubelet kubeconfig or kubelet.env from protokube; "
                                   f"see {self.logs}")
            time.sleep(0.1)
        ns = self.cluster.lab.ns(self.name)
        self.node = Node(self.name, self.manifests, None, None, self.addr, netns=ns,
                         resolv_conf=f"/etc/netns/{ns}/resolv.conf", keep_server=True, etcd_images=self.etcd_images,
                         base=self.node_base(), kubelet_files=self.kubelet_dir, cni=not self.cluster.kubenet,
                         taints=self.cluster.master_taints, own_pod_logs=self.cluster.own_pod_logs,
                         handoff=self.cluster.handoff, world=self.world)
        self.node.start()

    def node_base(self):
        return os.path.join(self.dir, "node")

    def power_cut(self):
        """protokube, kubelet, containerd, the containers and their shims: SIGKILL, all at once; then what a
        reboot clears (the runtime's state, cgroups, mounts)."""
        os.killpg(self.protokube.pid, signal.SIGKILL)
        errors = self.node.power_cut()
        self.protokube.wait(timeout=10)
        self.unmount_all()
        if self.world:
            self.world.halt()
        self.protokube = self.node = None
        return errors

    def stop(self):
        stop_process(self.protokube)
        stop_process(self.runner, grace=15)
        if self.node:
            errors = self.node.close()
            if errors:
                print(f"master {self.name}: node teardown: {errors}", file=sys.stderr)
        if self.world:
            self.world.halt()
        self.protokube = self.runner = self.node = None

    def unmount_all(self):
        """What a reboot or a terminated machine does to this node's mounts."""
        for line in reversed(open("/proc/self/mountinfo").read().splitlines()):
            mp = line.split()[4]
            if mp.startswith(self.mnt + "/"):
                run(["umount", mp], check=False)

    def http_get(self, path):
        """GETs from protokube's health server, which listens on the node's own loopback."""
        p = run(self.cluster.lab.exec_argv(self.name, ["curl", "-s", "-m", "2", "-w", "\n%{http_code}",
                                                       f"http://127.0.0.1:{self.port}{path}"]), check=False)
        body, _, code = p.stdout.rpartition("\n")
        return int(code or 0), body

    def health(self):
        return self.http_get("/healthz")

    def metrics(self):
        return self.http_get("/metrics")[1]

    def etcd_client_files(self):
        """kube-apiserver's etcd client certificate on this master, which every etcd member accepts."""
        d = os.path.join(self.pki, "kube-apiserver")
        return [f"--cacert={d}/etcd-ca.crt", f"--cert={d}/etcd-client.crt", f"--key={d}/etcd-client.key"]

    def etcd_logs(self):
        """The text of every etcd pod log of this master (real mode: the container logs kubelet keeps)."""
        out = []
        if self.node:
            return [(k, v) for k, v in sorted(self.node.pod_logs().items()) if "etcd" in k]
        for n in sorted(os.listdir(self.logs)):
            if n.startswith("etcd-server") and n.endswith(".log"):
                with open(os.path.join(self.logs, n), errors="replace") as f:
                    out.append((n, f.read()))
        return out

    def log_lines(self):
        out = []
        try:
            with open(os.path.join(self.logs, "protokube.log")) as f:
                for line in f:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
        except FileNotFoundError:
            pass
        return out

    def runner_events(self):
        try:
            with open(os.path.join(self.logs, "podrunner-events.jsonl")) as f:
                return [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []


class Cluster:
    def __init__(self, workdir=None, tag="pke", real=False):
        # real: every master runs containerd + kubelet 1.20.2 (tests/k8s/node.py) and the whole control
        # plane as containers; else the pod runner runs etcd alone as a process
        self.real = real
        self.workdir = workdir or tempfile.mkdtemp(prefix="protokube-e2e-")
        os.chmod(self.workdir, 0o755)  # named reads its config after dropping to nobody
        self.pool = os.path.join(self.workdir, "pool")
        self.spec = os.path.join(self.workdir, "cluster.yaml")
        self.state = os.path.join(self.workdir, "state")  # the state store every master shares
        self.lab = NetLab(tag)
        self.bind = Bind(self.workdir, self.lab)
        self.masters = {}
        self.next_port = 19700
        self.shared = False
        # kubenet: protokube writes each node's CNI network (spec.networking), not the harness
        self.kubenet = False
        self.master_taints = ()  # what the masters' kubelets register their Nodes with
        self.own_pod_logs = False  # each node's /var/log/pods its own (tests/k8s/node.py)
        # worlds: the directory of the run's NodeWorlds (each node's processes in a mount namespace of its
        # own, tests/k8s/node.py); handoff: spec.kubelet.selfHosted, each node's kubelet a bootstrap kubelet
        self.worlds = None
        self.handoff = False
        self.handoff_spec = ""  # spec.kubelet's lines of a handoff cluster (selfHosted, rolloutDeadline)

    def share_mounts(self):
        """A real master's root is a shared mount (systemd makes it so; kubelet relies on it): what protokube
        mounts or unmounts reaches the pods' mount namespaces. This machine's root is private, so the work
        directory is made a shared mount of its own for the run."""
        run(["mount", "--bind", self.workdir, self.workdir])
        self.shared = True
        run(["mount", "--make-rshared", self.workdir])

    # 512 MiB (sparse: only what is written takes room): etcd preallocates its WAL in 64 MiB segments, and a
    # restore keeps the old data moved aside on the volume (docs/etcd-restore.md). With 256 MiB, a member that
    # etcd recreated after its data was destroyed (two 64 MiB segments) moved aside, plus the restored member's
    # own two, filled the volume: etcd then crash-looped on "read wal error (no space left on device)".
    def setup(self, members=("a", "b", "c"), size="512M"):
        self.share_mounts()
        self.lab.start(dns_server=DNS_ADDR)
        self.lab.add_host("dns", DNS_ADDR)
        self.bind.setup()
        self.bind.start()
        os.makedirs(self.state, mode=0o700, exist_ok=True)
        with open(self.spec, "w") as f:
            f.write(f"""apiVersion: protokube/v1alpha1
kind: Cluster
metadata:
  name: {CLUSTER}
spec:
  cloud: local
  dns:
    provider: rfc2136
    zone: {ZONE}.
    ttl: 10
    rfc2136:
      server: "{DNS_ADDR}:53"
      tsigKeyFile: {self.bind.client_key_file}
  stateStore: file://{self.state}
  etcdClusters:
    - name: main
      image: {ETCD_IMAGE_REAL}
    - name: events
      image: {ETCD_IMAGE_REAL}
  kubernetesVersion: {K8S_VERSION_REAL if self.real else "1.31.2"}
{self.real_spec() if self.real else ""}""")
        allm = ",".join(members)
        for cl in ("main", "events"):
            for m in members:
                run([protokube_bin(), "pool", "create", "--pool", self.pool, "--id", f"vol-{cl}-{m}",
                     "--size", size, "--zone", f"zone-{m}", "--tag", f"KubernetesCluster={CLUSTER}",
                     "--tag", "k8s.io/role/master=1", "--tag", f"k8s.io/etcd/{cl}={m}/{allm}",
                     "--tag", f"kubernetes.io/cluster/{CLUSTER}=owned"])

    @staticmethod
    def real_spec():
        # kube-proxy in a network namespace: conntrack's table size is the machine's, not the namespace's
        return "  kubeProxy:\n    conntrackMaxPerCore: 0\n"

    master_class = Master  # a scenario's own kind of master (scenario_selfhosted.py, cluster_aws.py...)

    def add_master(self, name, addr, external, zone):
        m, port = self.new_master(name, addr, external, zone)
        m.start(port)
        return m

    def new_master(self, name, addr, external, zone):
        """A master's host on the network and its directories, not started; (master, its port)."""
        self.lab.add_host(name, addr)
        m = self.master_class(self, name, addr, external, zone)
        self.masters[name] = m
        self.next_port += 1
        return m, self.next_port - 1

    def add_masters(self, rows):
        """Masters that power on together, rows of (name, addr, external, zone): each set up in turn, then
        all started at once, each in a thread (one machine's boot does not wait for another's kubelet)."""
        ms = [self.new_master(*row) for row in rows]
        in_parallel([lambda m=m, port=port: m.start(port) for m, port in ms])
        return [m for m, _ in ms]

    def run_in(self, host, argv, timeout=10, input=None):
        return run(self.lab.exec_argv(host, argv), check=False, timeout=timeout, input=input)

    def run_pool(self, *args):
        return run([protokube_bin(), "pool", *args, "--pool", self.pool])

    def etcdctl(self, via, endpoints, *args, timeout=10):
        """etcdctl in master via's network namespace, with that master's etcd client certificate."""
        env = dict(os.environ, ETCDCTL_API="3")
        argv = self.lab.exec_argv(via, ["etcdctl", f"--endpoints={endpoints}", "--dial-timeout=2s",
                                        "--command-timeout=4s", *self.masters[via].etcd_client_files(), *args])
        return run(argv, check=False, timeout=timeout, env=env)

    def tls_rejections(self):
        """Lines of the etcd logs where a peer or client was refused for its certificate. (etcd also logs
        "rejected connection ... EOF" or "connection reset" when a client goes away mid-handshake, as
        etcdctl does with the endpoints it did not need: those are not rejections.)"""
        bad = ("bad certificate", "x509:", "unknown certificate", "certificate required", "tls: ")
        out = []
        for m in self.masters.values():
            for name, text in m.etcd_logs():
                out += [f"{m.name}/{name}: {l}" for l in text.splitlines() if any(b in l for b in bad)]
        return out

    def close(self, keep=False):
        """Stops and removes everything the run made; keep leaves the work directory (logs) for a look."""
        for m in self.masters.values():
            m.stop()
        for m in self.masters.values():
            m.unmount_all()
        self.bind.stop()
        # Detach loop devices backed by this run's pool images, found by the images' device and inode: the
        # backing path losetup shows is formed through the mount namespace of the daemon that bound the device,
        # and once that is gone it reads "/pool/<id>.img" (docs/volumes.md); by path, these leaked.
        for dev in loops_backed_by_files_under(self.pool):
            run(["losetup", "-d", dev], check=False)
        self.lab.close()
        if self.worlds:
            NodeWorld.close_all(self.worlds)
        if self.shared:
            run(["umount", "-R", self.workdir], check=False)
        if not keep:
            shutil.rmtree(self.workdir, ignore_errors=True)
