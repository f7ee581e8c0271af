# SPDX-License-Identifier: Apache-2.0
"""kubeadm 1.20.2 on this machine's simulated nodes, the peer protokube is compared with (bench/README.md,
"kubeadm beside protokube"). Each node is a NodeWorld (tests/k8s/node.py) in a network namespace of
198.18.49.0/24 (PROTOKUBE_KUBEADM_NET), with its own containerd and images, as protokube's test nodes have.
kubeadm's fixed paths (/etc/kubernetes, /var/lib/kubelet) are bound to the node's own directories in its world
(KubeadmWorld). kubeadm starts the kubelet only by `systemctl restart kubelet` and PID 1 is not systemd here:
tests/kubeadm/bin/systemctl hands that to the node's unit (KubeadmNode: kubelet.service + 10-kubeadm.conf of
kubernetes/release, Restart=always, RestartSec=10); tests/kubeadm/bin/crictl answers its image checks through
ctr (Debian has no cri-tools). kubeadm prints no times: KubeadmRun stamps its lines as they arrive.
KubeadmCluster: setup(), add_node() (boot + prepare), init(), join() (control plane or worker), power_cut(),
reboot(), probes, close() (by PID, mount and namespace; the empty /etc/kubernetes mount point it made)."""

import hashlib
import json
import os
import secrets
import shlex
import shutil
import socket
import string
import subprocess
import tempfile
import threading
import time

from cluster import Bind, run
from netlab import NetLab
from node import Node, NodeWorld, k8s_bin, mounts_under, stop_pid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHIMS = os.path.join(ROOT, "tests", "kubeadm", "bin")
NET = os.environ.get("PROTOKUBE_KUBEADM_NET", "198.18.49")
TAG = "pkka"
NS_DIR = f"/run/pk-worlds-{TAG}"
ADDRS = {"a": f"{NET}.11", "b": f"{NET}.12", "c": f"{NET}.13", "w1": f"{NET}.21", "w2": f"{NET}.22"}
DNS_ADDR, PROBE_ADDR = f"{NET}.53", f"{NET}.60"
CLUSTER_NAME = "kadm"
ENDPOINT = f"api.internal.{CLUSTER_NAME}.k8s.test"  # in cluster.Bind's zone k8s.test
K8S_VERSION = "v1.20.2"
ETCD_IMAGE = "registry.k8s.io/etcd:3.4.13-0"  # kubeadm 1.20's DefaultEtcdVersion, built by scripts/k8s-images.sh
KUBE_DIR, KUBELET_DIR = "/etc/kubernetes", "/var/lib/kubelet"  # kubeadm's fixed paths
RESTART_SEC = 10  # kubelet.service of kubernetes/release
UNIT_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root"}


def read_env_file(path):
    """KEY=VALUE lines of a systemd EnvironmentFile; a missing file is empty (EnvironmentFile=-)."""
    try:
        with open(path) as f:
            words = [shlex.split(line, comments=True) for line in f]  # KEY="a b" -> ['KEY=a b']
    except FileNotFoundError:
        return {}
    return dict(w[0].split("=", 1) for w in words if w and "=" in w[0])


class KubeadmWorld(NodeWorld):
    """A NodeWorld plus kubeadm's fixed directories bound to the node's own (H/etc-kubernetes on /etc/kubernetes,
    the Node's kubelet_root H/node/kubelet on /var/lib/kubelet), in the namespace NodeWorld.boot() made, each on a
    mount made a slave first so nothing reaches the machine. A mount point the machine lacks (/etc/kubernetes) is
    created and listed in `created`, for the cluster's close() to remove when empty."""

    def __init__(self, name, host_dir, resolv_conf, ns_dir):
        super().__init__(name, host_dir, resolv_conf, ns_dir)
        self.extra_binds = [(os.path.join(host_dir, "etc-kubernetes"), KUBE_DIR),
                            (os.path.join(host_dir, "node", "kubelet"), KUBELET_DIR)]
        self.created = []

    def boot(self):
        for src, dst in self.extra_binds:
            os.makedirs(src, exist_ok=True)
            try:  # machines booting together: one of them makes it
                os.makedirs(dst)
                self.created.append(dst)
            except FileExistsError:
                pass
        super().boot()
        script = "set -e\n" + "".join(
            f'mount --make-slave "$(findmnt -n -o TARGET -T {shlex.quote(dst)})"\n'
            f"mount --bind {shlex.quote(src)} {shlex.quote(dst)}\n" for src, dst in self.extra_binds)
        run(["nsenter", f"--mount={self.file}", "--", "sh", "-c", script])


class UnitServer:
    """The node's init system as kubeadm sees it: one JSON argv line per connection on an AF_UNIX socket
    (tests/kubeadm/bin/systemctl), answered by handler(argv) -> (rc, out). Serial, as systemd's jobs are;
    bounded in requests and lifetime."""

    def __init__(self, path, handler, max_requests=10000, max_seconds=4 * 3600):
        self.path, self.handler, self.max_requests, self.max_seconds = path, handler, max_requests, max_seconds
        self.stop_event, self.sock, self.thread = threading.Event(), None, None

    def start(self):
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(8)
        self.sock.settimeout(0.5)
        self.thread = threading.Thread(target=self.loop, name=f"unit-{self.path}", daemon=True)
        self.thread.start()

    def loop(self):
        t0 = time.monotonic()
        for _ in range(self.max_requests):
            conn = None
            while conn is None and not self.stop_event.is_set() and time.monotonic() - t0 < self.max_seconds:
                try:
                    conn, _ = self.sock.accept()
                except socket.timeout:
                    continue
                except OSError:
                    return  # closed by stop()
            if conn is None:
                return
            with conn:
                try:
                    conn.settimeout(30)
                    rc, out = self.handler(json.loads(conn.makefile("rb").readline(65536)))
                except Exception as e:  # the caller gets a failed systemctl; the node keeps serving
                    rc, out = 1, f"unit server: {type(e).__name__}: {e}"
                try:
                    conn.sendall(json.dumps({"rc": rc, "out": out}).encode() + b"\n")
                except OSError:
                    pass

    def stop(self):
        self.stop_event.set()
        if self.sock:
            self.sock.close()
        if self.thread:
            self.thread.join(timeout=60)
        if os.path.exists(self.path):
            os.unlink(self.path)


class KubeadmNode(Node):
    """A machine kubeadm sets up: tests/k8s/node.py's Node (containerd, images, cgroups, teardown) in a
    KubeadmWorld, and a kubelet unit. boot() the machine, prepare() its runtime, then kubeadm starts the
    kubelet through the unit (or unit_start() does it, as an enabled unit after a reboot)."""

    def __init__(self, cluster, name):
        self.cluster, self.host_dir = cluster, os.path.join(cluster.workdir, "nodes", name)
        ns = cluster.lab.ns(name)
        world = KubeadmWorld(name, self.host_dir, f"/etc/netns/{ns}/resolv.conf", NS_DIR)
        super().__init__(name, os.path.join(self.host_dir, "etc-kubernetes", "manifests"), None, None,
                         ADDRS[name], netns=ns, resolv_conf=f"/etc/netns/{ns}/resolv.conf", etcd_images=(ETCD_IMAGE,),
                         base=os.path.join(self.host_dir, "node"), cni=True, world=world)
        self.kube_dir = os.path.join(self.host_dir, "etc-kubernetes")  # /etc/kubernetes as the machine names it
        self.unit_lock, self.unit_active = threading.Lock(), False
        self.kubelet_starts = []  # monotonic time of every kubelet the unit started
        self.unit = UnitServer(os.path.join(self.host_dir, "unit.sock"), self.systemctl)

    # --- the machine
    def boot(self):
        """Power on: the world's namespace and binds; IPv4 forwarding on in the node's network namespace (0 in
        a fresh one; kubeadm's preflight requires 1, as a real machine's sysctl setup gives)."""
        os.makedirs(self.host_dir, exist_ok=True)
        self.world.boot()
        run(["nsenter", f"--net=/run/netns/{self.netns}", "--", "sh", "-c",
             "echo 1 > /proc/sys/net/ipv4/ip_forward"])

    def machine_kubelet_flags(self):
        """/etc/default/kubelet's KUBELET_EXTRA_ARGS: what differs per node on one shared machine (cgroup root,
        address: no default route) and a volume plugin directory of the node's (else the kubelet makes
        /usr/libexec/kubernetes on the machine)."""
        return [f"--cgroup-root={self.cgroup_root}", f"--node-ip={self.node_ip}",
                f"--volume-plugin-dir={KUBELET_DIR}/volume-plugins", "--v=2"]

    def prepare(self):
        """What the machine has before kubeadm: the kubelet's flags file, cgroups, containerd with every image
        imported (no registry), the init system listening."""
        self.world.set_kubelet_flags(self.machine_kubelet_flags())
        self.make_cgroups()
        self.start_containerd()
        self.import_images()
        self.unit.start()
        return self

    # --- the kubelet unit (kubelet.service + 10-kubeadm.conf)
    def unit_argv(self):
        env = read_env_file(os.path.join(self.kubelet_root, "kubeadm-flags.env"))
        env.update(read_env_file(os.path.join(self.world.defaults, "kubelet")))
        argv = [os.path.join(self.cluster.bin, "kubelet"),
                f"--bootstrap-kubeconfig={KUBE_DIR}/bootstrap-kubelet.conf", f"--kubeconfig={KUBE_DIR}/kubelet.conf",
                f"--config={KUBELET_DIR}/config.yaml"]
        for var in ("KUBELET_KUBEADM_ARGS", "KUBELET_EXTRA_ARGS"):
            argv += shlex.split(env.get(var, ""))
        return self.world.argv(argv, self.netns)

    def spawn_kubelet(self):
        with self.log("kubelet") as log:
            self.kubelet = subprocess.Popen(self.unit_argv(), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=UNIT_ENV)
        self.kubelet_starts.append(time.monotonic())

    def unit_start(self, restart=True):
        """systemctl start (restart=False: nothing if running) or restart kubelet."""
        with self.unit_lock:
            if self.supervisor_stop.is_set():
                raise RuntimeError(f"node {self.name} is shut down")
            if restart or self.kubelet is None or self.kubelet.poll() is not None:
                stop_pid(self.kubelet)
                self.spawn_kubelet()
            self.unit_active = True
        if self.supervisor is None:
            self.supervisor = threading.Thread(target=self.supervise, name=f"kubelet-{self.name}", daemon=True)
            self.supervisor.start()

    def unit_stop(self):
        with self.unit_lock:
            self.unit_active = False
            stop_pid(self.kubelet)

    def unit_state(self):
        with self.unit_lock:
            if not self.unit_active:
                return "inactive"
            return "active" if self.kubelet is not None and self.kubelet.poll() is None else "activating"

    def supervise(self, max_seconds=4 * 3600):
        """Restart=always, RestartSec=10: an exit of the kubelet while the unit is active is followed by a new
        start 10 s later, with the files re-read; polls every 0.5 s, bounded in time."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < max_seconds:
            if self.supervisor_stop.wait(0.5):
                return
            with self.unit_lock:
                p = self.kubelet
                exited = self.unit_active and p is not None and p.poll() is not None
            if not exited:
                continue
            self.kubelet_exits.append((time.monotonic(), p.returncode))
            if self.supervisor_stop.wait(RESTART_SEC):
                return
            with self.unit_lock:
                if self.unit_active and self.kubelet is p and not self.supervisor_stop.is_set():
                    self.spawn_kubelet()

    def systemctl(self, argv):
        """One systemctl call of kubeadm (cmd/kubeadm/app/util/initsystem/initsystem_unix.go) -> (exit status,
        stdout)."""
        args = [a for a in argv if not a.startswith("-")]
        verb = args[0] if args else ""
        unit = args[1].removesuffix(".service") if len(args) > 1 else ""
        if verb == "daemon-reload":
            return 0, ""
        if not unit:
            return 1, f"systemctl shim: {verb!r} needs a unit"
        if unit != "kubelet":  # firewalld, systemd-resolved: not on this machine
            return {"status": (4, f"Unit {unit}.service could not be found.\n   Loaded: not-found"),
                    "is-active": (3, "inactive"), "is-enabled": (1, "not-found")}.get(
                verb, (5, f"Failed to {verb} {unit}.service: Unit {unit}.service not found."))
        if verb == "stop":
            self.unit_stop()
            return 0, ""
        if verb in ("start", "restart"):
            self.unit_start(restart=verb == "restart")
            return 0, ""
        if verb in ("enable", "is-enabled"):
            return 0, "enabled"
        state = self.unit_state()
        if verb in ("is-active", "status"):
            return (0 if state == "active" else 3), state if verb == "is-active" else (
                "* kubelet.service - kubelet: The Kubernetes Node Agent\n   Loaded: loaded "
                f"(/lib/systemd/system/kubelet.service; enabled; vendor preset: enabled)\n   Active: {state}")
        return 1, f"systemctl shim: unsupported command {verb!r}"

    # --- shutdown
    def stop_kubelet(self):
        """For good (Node.close() calls this): the supervisor first, so nothing starts it again."""
        self.supervisor_stop.set()
        if self.supervisor:
            self.supervisor.join(timeout=30)
        self.unit_stop()

    def power_cut(self):
        """The machine loses power: its init system first (no more starts), then tests/k8s/node.py's cut
        (SIGKILL of kubelet, containerd, containers, shims; runtime state, cgroups, mounts gone), then the
        world's namespace. H (containerd's root, /var/lib/kubelet, /etc/kubernetes, the etcd data) stays."""
        self.unit.stop()
        return super().power_cut()  # its close() is this class's: the world halts there

    def close(self):
        self.unit.stop()
        errors = super().close()
        self.world.halt()
        return errors


class KubeadmRun:
    """One kubeadm process in a node's namespaces. Its stdout and stderr (one pipe) are read by a thread that
    stamps each line with time.monotonic() as it arrives and copies it to log_path."""

    def __init__(self, node, argv, log_path):
        self.node, self.log_path, self.lines, self.lock = node, log_path, [], threading.Lock()
        self.t_start, self.t_exit = time.monotonic(), None
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.reader = threading.Thread(target=self.read, name=f"kubeadm-{node.name}", daemon=True)
        self.reader.start()

    def read(self):
        with open(self.log_path, "a") as log:
            for raw in self.proc.stdout:  # ends at EOF, when kubeadm exits (wait() bounds that)
                t = time.monotonic()
                line = raw.decode(errors="replace").rstrip("\n")
                with self.lock:
                    self.lines.append((t, line))
                log.write(f"{t - self.t_start:9.3f} {line}\n")
                log.flush()

    def wait(self, timeout):
        """kubeadm's exit status; killed (by PID) and TimeoutError after timeout seconds."""
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise TimeoutError(f"kubeadm on {self.node.name} still running after {timeout} s; killed") from None
        self.t_exit = time.monotonic()
        self.reader.join(timeout=10)
        return rc

    def kill(self):
        stop_pid(self.proc, timeout=10)
        self.reader.join(timeout=10)

    def first(self, needle):
        """(monotonic time, line) of the first line containing needle, or (None, None)."""
        with self.lock:
            return next(((t, ln) for t, ln in self.lines if needle in ln), (None, None))

    def tail(self, n=40):
        with self.lock:
            return "\n".join(ln for _, ln in self.lines[-n:])


class KubeadmCluster:
    """The kubeadm side of the comparison: a test network, a DNS server serving ENDPOINT with every
    control-plane address (the operator's round-robin DNS in place of a load balancer), and KubeadmNodes."""

    def __init__(self, workdir=None):
        self.bin = k8s_bin()  # first: a failure here leaves nothing behind
        # built by scripts/k8s-binaries.sh from the same source and Go as the rest (with reflect2 1.0.2)
        self.kubeadm_bin = os.path.join(self.bin, "kubeadm")
        self.workdir = workdir or tempfile.mkdtemp(prefix="protokube-kubeadm-")
        os.chmod(self.workdir, 0o755)  # named reads its config after dropping to nobody
        self.lab = NetLab(TAG, bridge_addr=f"{NET}.1")
        self.bind = Bind(self.workdir, self.lab, addr=DNS_ADDR)
        self.nodes, self.runs, self.created = {}, [], []
        self.shared, self.named = False, None
        self.token = ".".join("".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(n))
                              for n in (6, 16))  # kubeadm's [a-z0-9]{6}.[a-z0-9]{16}
        self.certificate_key = secrets.token_hex(32)
        self.first_master = self.endpoint = None  # init's node (its admin.conf, CA); where joins go (host:port)
        # Preflight errors ignored, each for a reason of this machine (the figures' notes list them): ImagePull,
        # no registry (coredns:1.7.0, always listed, is not built; its addon is skipped); conntrack is not
        # installed unless scripts/install-deps.sh added it; the binaries are built from a source tarball with
        # no version stamp (scripts/k8s-binaries.sh): the kubelet says v0.0.0-master, which kubeadm's
        # KubeletVersion check refuses (its KubernetesVersion check skips such builds)
        self.ignored = ["ImagePull"] + ([] if shutil.which("conntrack") else ["FileExisting-conntrack"])
        if "v0.0.0" in run([os.path.join(self.bin, "kubelet"), "--version"], check=False).stdout:
            self.ignored.append("KubeletVersion")

    def setup(self, hosts=tuple(ADDRS)):
        """The network with every host of hosts (a master not up refuses at once instead of an ARP timeout),
        the DNS server with ENDPOINT's records, the probe host."""
        if os.path.isdir(NS_DIR):
            NodeWorld.close_all(NS_DIR)  # a killed run's (its netns go in lab.start())
        run(["mount", "--bind", self.workdir, self.workdir])  # shared: what a node mounts reaches the harness
        self.shared = True
        run(["mount", "--make-rshared", self.workdir])
        self.lab.start(dns_server=DNS_ADDR)
        self.lab.add_host("dns", DNS_ADDR)
        self.bind.setup()
        with open(os.path.join(self.bind.dir, "k8s.test.db"), "a") as f:
            label = ENDPOINT.removesuffix(".k8s.test")
            f.write("".join(f"{label} IN A {ADDRS[n]}\n" for n in ("a", "b", "c")))
        self.bind.start()
        self.named = self.bind.proc  # Bind.stop() forgets it; leftovers() checks it
        for n in hosts:
            self.lab.add_host(n, ADDRS[n])
        self.lab.add_host("probe", PROBE_ADDR)

    def add_node(self, name):
        """A machine powered on and prepared (containerd and images): kubeadm init or join comes next."""
        if name not in self.lab.hosts:
            self.lab.add_host(name, ADDRS[name])
        node = KubeadmNode(self, name)
        self.nodes[name] = node
        node.boot()
        self.created += [d for d in node.world.created if d not in self.created]
        node.prepare()
        return node

    # --- kubeadm
    def node_registration(self, node):
        return (f"  name: {node.name}\n  criSocket: unix://{node.sock}\n"
                f"  ignorePreflightErrors: [{', '.join(self.ignored)}]\n")

    def write_init_config(self, node, endpoint):
        text = (f"apiVersion: kubeadm.k8s.io/v1beta2\nkind: InitConfiguration\n"
                f"bootstrapTokens:\n- token: \"{self.token}\"\n  ttl: 2h0m0s\n"
                f"localAPIEndpoint:\n  advertiseAddress: {node.node_ip}\n  bindPort: 6443\n"
                f"nodeRegistration:\n{self.node_registration(node)}"
                f"certificateKey: \"{self.certificate_key}\"\n---\n"
                f"apiVersion: kubeadm.k8s.io/v1beta2\nkind: ClusterConfiguration\nclusterName: {CLUSTER_NAME}\n"
                f"kubernetesVersion: {K8S_VERSION}\nimageRepository: registry.k8s.io\n"
                + (f"controlPlaneEndpoint: {ENDPOINT}:6443\n" if endpoint else "") +
                f"etcd:\n  local:\n    dataDir: {node.world.root}/etcd\n"
                "networking:\n  serviceSubnet: 10.96.0.0/12\n  dnsDomain: cluster.local\n"
                "apiServer:\n  timeoutForControlPlane: 4m0s\n"
                f"controllerManager:\n  extraArgs:\n    flex-volume-plugin-dir: {node.world.root}/flexvolume\n---\n"
                # the machine settings protokube's kubelets get (tests/k8s/node.py kubelet_spec)
                "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: cgroupfs\n"
                "failSwapOn: false\nfileCheckFrequency: 1s\nsyncFrequency: 10s\n"
                "imageGCHighThresholdPercent: 100\nimageGCLowThresholdPercent: 99\n"
                "evictionHard:\n  memory.available: 1Mi\n  nodefs.available: 1%\n  imagefs.available: 1%\n---\n"
                # kube-proxy in a network namespace, as protokube's (conntrackMaxPerCore: 0)
                "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n"
                "conntrack:\n  maxPerCore: 0\n")
        return self.write_config(node, text)

    def write_join_config(self, node, control_plane):
        text = (f"apiVersion: kubeadm.k8s.io/v1beta2\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n"
                f"    apiServerEndpoint: {self.endpoint}\n    token: \"{self.token}\"\n"
                f"    caCertHashes: [\"sha256:{self.ca_pin()}\"]\n"
                f"nodeRegistration:\n{self.node_registration(node)}")
        if control_plane:
            text += (f"controlPlane:\n  localAPIEndpoint:\n    advertiseAddress: {node.node_ip}\n    bindPort: 6443\n"
                     f"  certificateKey: \"{self.certificate_key}\"\n")
        return self.write_config(node, text)

    @staticmethod
    def write_config(node, text):
        path = os.path.join(node.host_dir, "kubeadm.yaml")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(text)  # holds the token and the certificate key
        return path

    def kubeadm(self, node, *args):
        env = ["env", "-i", "HOME=/root", f"PATH={SHIMS}:{self.bin}:/usr/sbin:/usr/bin:/sbin:/bin",
               f"PK_UNIT_SOCK={node.unit.path}"]
        argv = node.world.argv([*env, self.kubeadm_bin, *args, "--v=1"], node.netns)
        r = KubeadmRun(node, argv, os.path.join(node.host_dir, "kubeadm.log"))
        self.runs.append(r)
        return r

    def init(self, node, endpoint=False, upload_certs=False):
        """`kubeadm init` on a prepared node (started, not waited for: KubeadmRun.wait()). endpoint: the
        control plane reached through ENDPOINT (for joins of more masters); upload_certs: their certificates
        in the cluster, encrypted with the certificate key."""
        self.first_master = node
        self.endpoint = f"{ENDPOINT}:6443" if endpoint else f"{node.node_ip}:6443"
        cfg = self.write_init_config(node, endpoint)
        return self.kubeadm(node, "init", "--config", cfg, "--skip-phases=addon/coredns",
                            *(["--upload-certs"] if upload_certs else []))

    def join(self, node, control_plane=False):
        """`kubeadm join` of a prepared node through self.endpoint, with the token and the CA's pin (after
        init has exited; control_plane needs init's endpoint and upload_certs)."""
        return self.kubeadm(node, "join", "--config", self.write_join_config(node, control_plane))

    def ca_pin(self):
        """kubeadm's CA pin: SHA-256 of the CA certificate's SubjectPublicKeyInfo (DER), in hex."""
        ca = os.path.join(self.first_master.kube_dir, "pki", "ca.crt")
        pem = run(["openssl", "x509", "-in", ca, "-noout", "-pubkey"]).stdout
        der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "DER"], input=pem.encode(),
                             capture_output=True, timeout=30, check=True).stdout
        return hashlib.sha256(der).hexdigest()

    def power_cut(self, name):
        return self.nodes[name].power_cut()

    def reboot(self, name):
        """A cut machine powered on again: the same directories, a new namespace, containerd, and the kubelet
        started at once (the unit is enabled); no kubeadm."""
        node = KubeadmNode(self, name)
        self.nodes[name] = node
        node.boot()
        node.prepare()
        node.unit_start()
        return node

    # --- probes (each bounded by its own timeout)
    def etcd_local_health(self, name):
        """etcd's /health on the node's metrics port (what the kubelet's probe asks), capped at 250 ms."""
        p = run(["nsenter", f"--net=/run/netns/{self.lab.ns(name)}", "--", "curl", "-s", "-m", "0.25",
                 "http://127.0.0.1:2381/health"], check=False, timeout=10)
        return '"health":"true"' in p.stdout

    def etcd_health(self, via, names):
        """etcdctl endpoint health on names' client URLs, from via's namespace, with via's apiserver-etcd-client."""
        pki = os.path.join(self.nodes[via].kube_dir, "pki")
        eps = ",".join(f"https://{ADDRS[n]}:2379" for n in names)
        p = run(self.lab.exec_argv(via, [
            "etcdctl", f"--endpoints={eps}", "--dial-timeout=2s", "--command-timeout=4s",
            f"--cacert={pki}/etcd/ca.crt", f"--cert={pki}/apiserver-etcd-client.crt",
            f"--key={pki}/apiserver-etcd-client.key", "endpoint", "health"]),
            check=False, timeout=15, env=dict(os.environ, ETCDCTL_API="3"))
        return p.returncode == 0 and "unhealthy" not in p.stdout + p.stderr

    def kubectl(self, *args, timeout=20):
        """kubectl on the probe host (its resolver is the test's DNS server) with init's admin.conf (its
        certificates are embedded: the machine's path serves as is)."""
        kc = os.path.join(self.first_master.kube_dir, "admin.conf")
        argv = [os.path.join(self.bin, "kubectl"), "--kubeconfig", kc, "--request-timeout=5s", *args]
        if not os.path.exists(kc):  # before kubeadm's kubeconfig phase
            return subprocess.CompletedProcess(argv, 1, "", f"no {kc} yet")
        return run(self.lab.exec_argv("probe", argv), check=False, timeout=timeout)

    def api_ready(self):
        return self.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"

    def nodes_ready(self, names):
        p = self.kubectl("get", "nodes", "-o", "json")
        if p.returncode != 0:
            return False
        ready = {i["metadata"]["name"] for i in json.loads(p.stdout).get("items", [])
                 if any(c["type"] == "Ready" and c["status"] == "True" for c in i["status"].get("conditions", []))}
        return set(names) <= ready

    # --- teardown
    def save_logs(self, dest):
        """kubeadm's, kubelet's and containerd's logs and the pod logs of every node, into dest."""
        for n, node in self.nodes.items():
            d = os.path.join(dest, n)
            os.makedirs(d, exist_ok=True)
            for src in ("kubeadm.log", "kubeadm.yaml", "node/kubelet.log", "node/containerd.log"):
                p = os.path.join(node.host_dir, src)
                if os.path.exists(p):
                    shutil.copy(p, os.path.join(d, os.path.basename(src)))
            if os.path.isdir(node.world.pod_logs):
                shutil.copytree(node.world.pod_logs, os.path.join(d, "pod-logs"), dirs_exist_ok=True)

    def close(self, logs_to=None):
        """Stops every process it started (by PID), unmounts, removes the namespaces, the mount points it
        created (if empty) and the work directory; returns what could not be cleaned."""
        errors = []
        for r in self.runs:
            r.kill()
        for node in self.nodes.values():
            errors += node.close()
        self.bind.stop()
        if logs_to:
            self.save_logs(logs_to)
        self.lab.close()
        NodeWorld.close_all(NS_DIR)
        if self.shared:
            run(["umount", "-R", self.workdir], check=False)
            self.shared = False
        for d in self.created:
            try:
                os.rmdir(d)
            except OSError as e:
                errors.append(f"{d} not removed: {e.strerror}")
        self.created = []
        shutil.rmtree(self.workdir, ignore_errors=True)
        return errors + self.leftovers()

    def leftovers(self):
        """What of this run is still there after close(): processes, shims, cgroups, mounts, namespaces."""
        out = [f"pid {p.pid} alive" for p in self.processes() if p.poll() is None]
        for node in self.nodes.values():
            out += [f"{node.name}: shim {pid}" for pid in node.shim_pids()]
            out += [f"{node.name}: cgroup {d}" for d in node.cgroup_dirs() if os.path.exists(d)]
        out += [f"mount {m}" for m in mounts_under(self.workdir) + mounts_under(NS_DIR)]
        out += [f"netns {ln.split()[0]}" for ln in run(["ip", "netns", "list"]).stdout.splitlines()
                if ln.startswith(f"{TAG}-")]
        return out + [f"{d} still exists" for d in (NS_DIR, self.workdir) if os.path.exists(d)]

    def processes(self):
        procs = [r.proc for r in self.runs] + ([self.named] if self.named else [])
        for node in self.nodes.values():
            procs += [p for p in (node.containerd, node.kubelet) if p is not None]
        return procs
