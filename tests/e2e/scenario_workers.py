#!/usr/bin/python3
"""make demo-workers: a whole cluster (docs/workers.md): three real masters (kubelet 1.20.2 + containerd each,
tests/e2e/cluster.py real=True, static pods, tainted node-role.kubernetes.io/master:NoSchedule by their kubelets'
flags as kops' nodeup gives them) and two workers that join with a bootstrap token and the CA's pin:

1. cold start of the masters (scenario.py's step 1: etcd, DNS, the API through api.internal);
2. a token from `protokube token create` on a master; a bad token and a wrong pin refused by `protokube join
   plan` on a new machine, at the stage that blocks;
3. workers w1 and w2: `protokube run --role worker` on each (its kubelet's files from the token and the pin),
   the kubelet started from them as an init system would; the masters' protokube approve and sign their CSRs;
   the time from a worker's first protokube pass to its Node Ready printed; five Ready nodes;
4. a Deployment of 4 replicas of a locally built image lands on the workers only (the masters keep their taint);
   a pod on w1 reaches a pod on w2 by its pod address (kubenet: protokube's CNI networks and routes) and the
   Service's IP through kube-proxy (protokube's static pod on each node); `kubectl logs` and `kubectl exec`
   reach a worker's pod through its kubelet's serving certificate, which kube-apiserver verifies by the
   cluster CA (kubeletCertificateAuthority);
5. w2 is terminated; a new machine joins as w3; another machine asking for the name w2 is refused while the
   Node w2 exists (the name is bound to the machine that first joined with it);
6. w1's client certificate, issued for 5 minutes (kubeletCertificateLifetime), renewed through its own CSR.

A network of its own (198.18.46.0/24, PROTOKUBE_WORKERS_NET to change). Run as root: /usr/bin/python3
tests/e2e/scenario_workers.py (make demo-workers)."""

import base64
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402
import scenario  # noqa: E402
from cluster import SUFFIX, protokube_bin, stop_process  # noqa: E402
from node import PODNET_IMAGE, Node, NodeWorld, k8s_bin, kubelet_spec  # noqa: E402
from scenario import ADDRS, Scenario, ScenarioError, wait_for  # noqa: E402

NET = os.environ.get("PROTOKUBE_WORKERS_NET", "198.18.46")
cluster.DNS_ADDR = f"{NET}.53"
ADDRS.update({n: f"{NET}.{11 + i}" for i, n in enumerate("abcd")})
scenario.PROBE_ADDR = f"{NET}.60"
WORKER_ADDRS = {f"w{i}": f"{NET}.{20 + i}" for i in range(1, 6)}
MASTER_TAINT = "node-role.kubernetes.io/master=:NoSchedule"
CLIENT = "kubernetes.io/kube-apiserver-client-kubelet"
# the kubelets' certificates live 5 minutes (the shortest allowed): a client certificate is renewed within the demo
LIFETIME = "5m"


class WorkersMaster(cluster.Master):
    """A master of this demo: its spec copy names its own CNI directory and its own CA file for the apiserver's
    verification of kubelets (one machine plays every master: each keeps its files apart)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        with open(self.spec) as f:
            text = f.read()
        text = text.replace("@CNI@", os.path.join(self.node_base(), "containerd", "net.d")).replace("@PKI@", self.pki)
        text = text.replace(f"  pki:\n    dir: {self.pki}\n",
                            f"  pki:\n    dir: {self.pki}\n    kubeletCertificateLifetime: {LIFETIME}\n")
        with open(self.spec, "w") as f:
            f.write(text)


class WorkersCluster(cluster.Cluster):
    def __init__(self, *a, **kw):
        super().__init__(*a, tag="pkwk", real=True, **kw)
        self.lab.bridge_addr = f"{NET}.1"
        self.kubenet = True
        self.master_taints = (MASTER_TAINT,)
        # kubectl logs reads a pod's log through its node's kubelet: no other kubelet of this machine may
        # collect it
        self.own_pod_logs = True

    @staticmethod
    def real_spec():
        # kube-proxy in a network namespace: conntrack's table size is the machine's, not the namespace's
        return ("  networking:\n    provider: kubenet\n    cniConfDir: @CNI@\n"
                "  kubeProxy:\n    conntrackMaxPerCore: 0\n"
                "  kubeAPIServer:\n    kubeletCertificateAuthority: @PKI@/kube-apiserver/ca.crt\n")

    master_class = WorkersMaster


class Worker:
    """A worker machine: its network namespace, `protokube run --role worker` (the spec without a state store or
    a pki section: it holds no key of the cluster), and containerd + kubelet from the files protokube wrote."""

    def __init__(self, c, name, token, pin, node_name=None):
        self.c, self.name, self.addr = c, name, WORKER_ADDRS[name]
        self.node_name = node_name or name  # the name it joins as (an impostor's is another's)
        self.dir = os.path.join(c.workdir, "workers", name)
        os.makedirs(self.dir)
        self.ns = c.lab.add_host(name, self.addr)
        self.kubelet_dir = os.path.join(self.dir, "kubelet")
        self.config_dir = os.path.join(self.dir, "lib")
        self.manifests = os.path.join(self.dir, "manifests")
        os.makedirs(self.manifests)
        self.token_file = self.secret_file("token", token)
        self.pin = pin
        resolv_conf = f"/etc/netns/{self.ns}/resolv.conf"
        # c.worlds: the worker's processes in a NodeWorld of its own (tests/k8s/node.py, cluster.py's Master)
        self.world = NodeWorld(name, self.dir, resolv_conf, c.worlds) if c.worlds else None
        self.node = self.new_node()
        self.spec = self.write_spec()
        self.run_proc = None
        self.t_first_pass = None

    def new_node(self):
        """Its containerd and kubelet (a new machine's after a power cut)."""
        return Node(self.name, self.manifests, None, None, self.addr, netns=self.ns,
                    resolv_conf=f"/etc/netns/{self.ns}/resolv.conf", keep_server=True,
                    base=os.path.join(self.dir, "node"), kubelet_files=self.kubelet_dir, cni=not self.c.kubenet,
                    own_pod_logs=True, handoff=self.c.handoff, world=self.world)

    def at(self, path):
        """path (under the worker's directory) as its own processes name it."""
        return self.world.path(path) if self.world else path

    def secret_file(self, name, text):
        path = os.path.join(self.dir, name)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(text + "\n")
        return path

    def write_spec(self):
        """The cluster's spec as a worker has it: no state store, no pki section; this node's CNI directory; the
        kubelet's settings for this test machine (cgroupfs under a root of its own, no swap check, images never
        collected: they cannot be pulled again)."""
        with open(self.c.spec) as f:
            text = f.read()
        text = re.sub(r"(?m)^  stateStore: .*\n", "", text)
        text = text.replace("@CNI@", self.at(self.node.cni_conf_dir()))
        # the worker's apiserver flags are not its business; the CA file named there is a master's
        text = re.sub(r"(?m)^  kubeAPIServer:\n    kubeletCertificateAuthority: .*\n", "", text)
        assert "stateStore" not in text and "pki:" not in text and "@" not in text, text
        # the node's resolver (the test's DNS server): host-network pods (kube-proxy) resolve api.internal
        # through it, as the kubelet does
        kubelet = kubelet_spec(self.name, "/etc/resolv.conf" if self.world else f"/etc/netns/{self.ns}/resolv.conf")
        if self.c.handoff:
            kubelet += self.node.machine_spec() + self.c.handoff_spec
        path = os.path.join(self.dir, "cluster.yaml")
        with open(path, "w") as f:
            f.write(text.replace("  kubernetesVersion:", kubelet + "  kubernetesVersion:"))
        return path

    def argv(self, *verb, token_file=None, pin=None):
        argv = [protokube_bin(), "-c", self.spec, *verb,
                "--role", "worker", "--node-name", self.node_name, "--zone", "zone-a", "--internal-ip", self.addr,
                "--pool", self.c.pool, "--mount-root", self.at(os.path.join(self.dir, "mnt")),
                "--manifest-dir", self.at(self.manifests), "--kubelet-dir", self.at(self.kubelet_dir),
                "--config-dir", self.at(self.config_dir),
                "--token-file", token_file or self.token_file, "--ca-pin", pin or self.pin]
        if self.world:
            return self.world.argv(argv, self.ns)
        return ["nsenter", f"--net=/run/netns/{self.ns}", "--", *argv]

    def join_plan(self, **kw):
        return subprocess.run([*self.argv("join", "plan", **kw)], capture_output=True, text=True, timeout=120)

    def start(self):
        """The machine boots: protokube's first pass writes the kubelet's files, then the init system starts
        containerd and the kubelet from them, and protokube keeps the node from then on."""
        self.t_first_pass = time.monotonic()
        if self.world:
            self.world.boot()
        self.run_proc = subprocess.Popen(
            [*self.argv("run"), "--interval", "2s", "--listen", "127.0.0.1:9797"], stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.dir, "protokube.log"), "ab"), start_new_session=True)
        env = os.path.join(self.kubelet_dir, "kubelet.env")

        def files_written():
            if self.run_proc.poll() is not None:
                raise ScenarioError(f"protokube run on {self.name} exited {self.run_proc.returncode}; see "
                                    f"{self.dir}/protokube.log")
            return os.path.exists(env)
        wait_for(f"{self.name}: the kubelet's files from protokube", files_written, 120, 0.2)
        self.node.start()

    def stop(self):
        stop_process(self.run_proc, grace=10)
        self.run_proc = None
        errors = self.node.close() if self.node else []
        self.node = None
        if self.world:
            self.world.halt()
        return errors

    def power_cut(self):
        """protokube, kubelet, containerd, the containers: SIGKILL at once; then what a reboot clears (the
        runtime's state, cgroups, mounts). start() boots it again."""
        os.killpg(self.run_proc.pid, signal.SIGKILL)
        errors = self.node.power_cut()
        self.run_proc.wait(timeout=10)
        if self.world:
            self.world.halt()
        self.run_proc, self.node = None, self.new_node()
        return errors


class WorkersScenario(Scenario):
    def __init__(self, out=sys.stdout, keep_workdir=False):
        super().__init__(out=out, keep_workdir=keep_workdir, real=True, cluster=WorkersCluster())
        self.workers = {}
        self.ready_after = {}

    # --- helpers
    def kubectl_json(self, *args):
        p = self.kubectl(*args, "-o", "json")
        if p.returncode != 0:
            return None
        return json.loads(p.stdout)

    def kubectl_ok(self, *args, stdin=None):
        argv = [os.path.join(k8s_bin(), "kubectl"), "--kubeconfig", self.admin_kubeconfig(), "--server",
                f"https://api.{SUFFIX}", "--request-timeout=20s", *args]
        p = subprocess.run(self.c.lab.exec_argv("probe", argv), input=stdin, capture_output=True, text=True,
                           timeout=60)
        if p.returncode != 0:
            raise ScenarioError(f"kubectl {' '.join(args)}: {p.stderr.strip()}")
        return p.stdout

    def admin_kubeconfig(self):
        return os.path.join(self.c.masters["a"].pki, "admin", "kubeconfig")

    def master_pk(self, *args):
        m = self.c.masters["a"]
        argv = ["nsenter", f"--net=/run/netns/{self.c.lab.ns('a')}", "--", protokube_bin(), "-c", m.spec, *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, PROTOKUBE_STATE_DIR=m.state))

    def kubelet_configz_body(self, node):
        """Here the apiserver verifies kubelets' serving certificates (kubeletCertificateAuthority), which only
        the workers have from the cluster CA (their CSRs); a master's kubelet serves a self-signed one
        (docs/workers.md, "Left to do"), so the API's node proxy refuses it. A master's kubelet is asked
        directly, on its own loopback, with the apiserver's kubelet client certificate (authorized by the
        kubelet's webhook like the API's own requests); -k because of that self-signed certificate."""
        if node not in self.c.masters:
            return super().kubelet_configz_body(node)
        d = os.path.join(self.c.masters[node].pki, "kube-apiserver")
        p = self.c.run_in(node, ["curl", "-s", "-m", "2", "-k", "--cert", os.path.join(d, "kubelet-client.crt"),
                                 "--key", os.path.join(d, "kubelet-client.key"), "https://127.0.0.1:10250/configz"])
        return p.stdout if p.returncode == 0 and p.stdout.startswith("{") else None

    def node_ready(self, name):
        n = self.kubectl_json("get", "node", name)
        conds = {c["type"]: c["status"] for c in (n or {}).get("status", {}).get("conditions", [])}
        return conds.get("Ready") == "True"

    def pods(self, selector):
        got = self.kubectl_json("get", "pods", "-n", "default", "-l", selector)
        return (got or {}).get("items", [])

    @staticmethod
    def running(pod):
        st = pod.get("status", {})
        return st.get("phase") == "Running" and st.get("podIP")

    def alive(self, fn):
        def check():
            for w in self.workers.values():
                if w.run_proc is not None and w.run_proc.poll() is not None:
                    raise ScenarioError(f"protokube run on {w.name} exited {w.run_proc.returncode}")
            return fn()
        return check

    # --- the steps
    def step2_token(self):
        self.say("\n2. A bootstrap token; a bad token and a wrong pin refused")
        kubeconfig = os.path.join(self.c.masters["a"].pki, "protokube", "kubeconfig")
        p = self.master_pk("token", "create", "--ttl", "2h", "--description", "make demo-workers",
                           "--kubeconfig", kubeconfig)
        if p.returncode != 0:
            raise ScenarioError(f"protokube token create: {p.returncode}\n{p.stderr}")
        self.token = re.search(r"^token: ([a-z0-9]{6}\.[a-z0-9]{16})$", p.stdout, re.M).group(1)
        self.pin = re.search(r"^ca-pin: (sha256:[0-9a-f]{64})$", p.stdout, re.M).group(1)
        self.tl.mark(f"token created on a (its id {self.token.split('.')[0]}); the CA's pin {self.pin[:19]}...")
        # a worker's DNS view waits until api.internal lists every master (a master joins the API's names once
        # its apiserver answers)
        want = [ADDRS[n] for n in "abc"]
        wait_for(f"api.{SUFFIX} lists a, b, c", lambda: scenario.dns_is(self.c, f"api.{SUFFIX}", want), 180, 1)
        # a machine that is not a worker yet: with a wrong pin it takes no CA; with a token the cluster never
        # issued, the API (asked through the CA taken with the pin) refuses the token; a plan writes nothing
        w = Worker(self.c, "w4", self.token, self.pin)
        p = w.join_plan(pin="sha256:" + "0" * 64)
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith("pin: refused")), "")
        if p.returncode != 1 or not line or not p.stdout.endswith("join: blocked at pin\n"):
            raise ScenarioError(f"join plan with a wrong pin: exit {p.returncode}\n{p.stdout}{p.stderr}")
        self.tl.mark(f"wrong pin refused (join plan exit 1): {line[:160]}")
        bad_token = w.secret_file("bad-token", self.token.split(".")[0] + ".0123456789abcdef")
        p = w.join_plan(token_file=bad_token)
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith("token: refused")), "")
        if p.returncode != 1 or not line or not p.stdout.endswith("join: blocked at token\n"):
            raise ScenarioError(f"join plan with a bad token: exit {p.returncode}\n{p.stdout}{p.stderr}")
        if os.path.exists(w.kubelet_dir):
            raise ScenarioError(f"join plan wrote {w.kubelet_dir}: a plan writes nothing")
        self.tl.mark(f"bad token refused (join plan exit 1): {line}")
        self.c.lab.remove_host("w4")

    def join(self, name):
        w = Worker(self.c, name, self.token, self.pin)
        self.workers[name] = w
        w.start()
        return w

    def wait_ready(self, w):
        wait_for(f"node {w.name} Ready", self.alive(lambda: self.node_ready(w.name)), 300, 1)
        self.ready_after[w.name] = time.monotonic() - w.t_first_pass
        self.tl.mark(f"node {w.name} Ready {self.ready_after[w.name]:.1f} s after its first protokube pass")

    def step3_workers(self):
        self.say("\n3. Workers w1 and w2 join")
        ws = [self.join(n) for n in ("w1", "w2")]
        for w in ws:
            self.wait_ready(w)
        for w in ws:
            p = w.join_plan()
            if p.returncode != 0 or not p.stdout.endswith("join: done\n"):
                raise ScenarioError(f"join plan on {w.name}: exit {p.returncode}\n{p.stdout}{p.stderr}")
        nodes = self.kubectl_json("get", "nodes")["items"]
        ready = sorted(n["metadata"]["name"] for n in nodes if any(
            c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", [])))
        if ready != ["a", "b", "c", "w1", "w2"]:
            raise ScenarioError(f"Ready nodes: {ready}")
        self.tl.mark("5 Ready nodes: " + ", ".join(ready) + "; `join plan` on each worker: done")
        bad = []
        for w in ws:
            bad += self.kubelet_configz(w.name, w.kubelet_dir)
            with open(os.path.join(w.config_dir, "kube-proxy", "config.yaml")) as f:
                bad += self.served_configz(w.name, "kube-proxy", f.read(), "127.0.0.1:10249")
        if bad:
            raise ScenarioError("a worker's component does not run its rendered file:\n" + "\n".join(bad))
        self.tl.mark("/configz of the kubelet and kube-proxy on w1, w2: every field of their rendered files")

    def step4_workloads(self):
        self.say("\n4. A Deployment on the workers; pod to pod, a Service, logs and exec")
        wait_for("ServiceAccount default/default", lambda: self.kubectl_json("get", "serviceaccount", "default"),
                 180, 1)
        deploy = {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "podnet", "namespace": "default"},
            "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "podnet"}}, "template": {
                "metadata": {"labels": {"app": "podnet"}},
                "spec": {"automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
                         # spread over the workers, softly: in 1.20 the tainted masters count as domains of
                         # the hostname key, so a hard constraint would allow one replica per worker
                         "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                                        "whenUnsatisfiable": "ScheduleAnyway",
                                                        "labelSelector": {"matchLabels": {"app": "podnet"}}}],
                         "containers": [{"name": "podnet", "image": PODNET_IMAGE, "imagePullPolicy": "Never",
                                         "command": ["/podnet", "serve", "8080"],
                                         "env": [{"name": "POD_NAME", "valueFrom": {
                                             "fieldRef": {"fieldPath": "metadata.name"}}}]}]}}}}
        self.kubectl_ok("create", "-f", "-", stdin=json.dumps(deploy))
        t0 = time.monotonic()
        wait_for("4 replicas Running", lambda: len([p for p in self.pods("app=podnet") if self.running(p)]) == 4,
                 300, 1)
        placed = sorted((p["spec"]["nodeName"], p["metadata"]["name"], p["status"]["podIP"])
                        for p in self.pods("app=podnet"))
        on = sorted({n for n, _, _ in placed})
        if not set(on) <= {"w1", "w2"}:
            raise ScenarioError(f"replicas landed on {on}, not on the workers alone: {placed}")
        self.tl.mark(f"Deployment podnet: 4 replicas Running in {time.monotonic() - t0:.1f} s, on "
                     + ", ".join(f"{n} ({ip})" for n, _, ip in placed) + "; none on a master")
        # a replica on one worker, the client on the other
        peer_node, peer_name, peer_ip = next(x for x in placed if x[0] == "w2") if "w2" in on else placed[0]
        peer = (peer_name, peer_ip)
        self.client_node = "w1" if peer_node == "w2" else "w2"
        self.kubectl_ok("expose", "deployment", "podnet", "--port", "80", "--target-port", "8080")
        cluster_ip = self.kubectl_json("get", "service", "podnet")["spec"]["clusterIP"]
        self.client("client-pod", peer[1], "8080")
        got = self.client_answer("client-pod")
        self.tl.mark(f"a pod on {self.client_node} reached {peer[0]} on {peer_node} by its address {peer[1]}: "
                     f"'{got}'")
        self.client("client-service", cluster_ip, "80")
        got = self.client_answer("client-service")
        self.tl.mark(f"a pod on {self.client_node} reached the Service's IP {cluster_ip} through kube-proxy: "
                     f"'{got}'")
        # logs and exec go through kube-apiserver to the worker's kubelet, whose serving certificate (from its
        # own CSR, signed by the masters' protokube) the apiserver verifies with the cluster CA
        exec_out = self.kubectl_ok("exec", peer[0], "--", "/podnet", "ask", "127.0.0.1", "8080").strip()
        if exec_out != f"got: podnet {peer[0]}":
            raise ScenarioError(f"kubectl exec {peer[0]}: '{exec_out}'")
        self.tl.mark(f"kubectl exec into {peer[0]} on {peer_node} (its serving certificate verified): '{exec_out}'")

    def client(self, name, addr, port):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
               "spec": {"nodeName": self.client_node, "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
                        "restartPolicy": "Never",
                        "containers": [{"name": "podnet", "image": PODNET_IMAGE, "imagePullPolicy": "Never",
                                        "command": ["/podnet", "get", addr, port]}]}}
        self.kubectl_ok("create", "-f", "-", stdin=json.dumps(pod))

    def client_answer(self, name):
        """The client pod's log, read through the API from its worker's kubelet: the answer it got."""
        def answered():
            p = self.kubectl("logs", name, timeout=40)
            m = re.search(r"^got: podnet (\S+)$", p.stdout, re.M)
            return m.group(0) if m else None
        return wait_for(f"{name}'s answer in its log", answered, 180, 2)

    def step5_replace(self):
        self.say("\n5. w2 is terminated; a new machine joins as w3; another machine asking for w2 is refused")
        errors = self.workers.pop("w2").stop()
        if errors:
            raise ScenarioError(f"w2's teardown: {errors}")
        self.c.lab.remove_host("w2")
        self.tl.mark("w2 terminated (protokube, kubelet, containerd stopped; its network gone); Node w2 stays")
        w3 = self.join("w3")
        self.wait_ready(w3)
        # another machine asks for the name w2 with a valid token and a key of its own, as a new kubelet would
        # (its CSR made here, with the token in a kubeconfig of mode 0600)
        imp = Worker(self.c, "w5", self.token, self.pin, node_name="w2")
        key = os.path.join(imp.dir, "key.pem")
        subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
                        key], check=True, capture_output=True, timeout=30)
        pem = subprocess.run(["openssl", "req", "-new", "-key", key, "-subj", "/O=system:nodes/CN=system:node:w2"],
                             check=True, capture_output=True, timeout=30).stdout
        csr = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
               "metadata": {"name": "impostor-w2"},
               "spec": {"request": base64.b64encode(pem).decode(), "signerName": CLIENT,
                        "usages": ["digital signature", "key encipherment", "client auth"]}}
        ca = os.path.join(self.c.masters["a"].pki, "kube-apiserver", "ca.crt")
        kubeconfig = imp.secret_file("bootstrap-kubeconfig", json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "join",
            "clusters": [{"name": "c", "cluster": {"server": f"https://api.{SUFFIX}", "certificate-authority": ca}}],
            "users": [{"name": "u", "user": {"token": self.token}}],
            "contexts": [{"name": "join", "context": {"cluster": "c", "user": "u"}}]}))
        argv = [os.path.join(k8s_bin(), "kubectl"), "--kubeconfig", kubeconfig, "--request-timeout=20s", "create",
                "-f", "-"]
        p = subprocess.run(self.c.lab.exec_argv("w5", argv), input=json.dumps(csr), capture_output=True,
                           text=True, timeout=60)
        if p.returncode != 0:
            raise ScenarioError(f"the impostor's CSR: {p.stderr.strip()}")

        def refused():
            out = self.master_pk("csr", "--kubeconfig",
                                 os.path.join(self.c.masters["a"].pki, "protokube", "kubeconfig")).stdout
            return next((ln.strip() for ln in out.splitlines() if "impostor-w2" in ln and "refuse" in ln), None)
        line = wait_for("the impostor's CSR refused", refused, 60, 2)
        csr = self.kubectl_json("get", "csr", "impostor-w2")
        if csr.get("status", {}).get("certificate") or csr.get("status", {}).get("conditions"):
            raise ScenarioError(f"the impostor's CSR is not left pending: {csr.get('status')}")
        self.tl.mark(f"the name w2 refused to another machine (left pending), `protokube csr` on a: {line[:160]}")

        # the impostor's own `join plan` shows the masters' reason, noted on its CSR
        said = []

        def plan_refused():
            p = imp.join_plan()
            said[:] = [f"exit {p.returncode}\n{p.stdout}{p.stderr[-1000:]}"]
            ln = next((x for x in p.stdout.splitlines() if x.startswith("csr: refused: CSR impostor-w2")), None)
            return ln if p.returncode == 1 and p.stdout.endswith("join: blocked at csr\n") else None
        try:
            line = wait_for("the impostor's join plan refused at the CSR", plan_refused, 60, 2)
        except ScenarioError as e:
            raise ScenarioError(f"{e}; join plan said: {said[0] if said else 'nothing'}") from None
        self.tl.mark(f"on that machine, `join plan` (exit 1): {line[:200]}")
        self.c.lab.remove_host("w5")

    def step6_renewal(self):
        self.say("\n6. w1's client certificate renewed through its own CSR")
        w1 = self.workers["w1"]
        current = os.path.join(w1.kubelet_dir, "pki", "kubelet-client-current.pem")
        first = self.first_cert

        def renewed():
            csrs = self.kubectl_json("get", "csr") or {"items": []}
            own = [x for x in csrs["items"] if x["spec"]["signerName"] == CLIENT
                   and x["spec"].get("username") == "system:node:w1" and x.get("status", {}).get("certificate")]
            return bool(own) and os.path.realpath(current) != first
        wait_for("w1's client certificate renewed", self.alive(renewed), 420, 5)
        wait_for("node w1 Ready after the renewal", lambda: self.node_ready("w1"), 60, 1)
        self.tl.mark(f"w1's client certificate renewed through a CSR of system:node:w1 "
                     f"({time.monotonic() - self.workers['w1'].t_first_pass:.0f} s after its first pass); "
                     "Node w1 Ready")

    def run(self):
        ok = False
        try:
            self.step1_cold_start()
            self.step2_token()
            self.step3_workers()
            self.first_cert = os.path.realpath(os.path.join(self.workers["w1"].kubelet_dir, "pki",
                                                            "kubelet-client-current.pem"))
            self.step4_workloads()
            self.step5_replace()
            self.step6_renewal()
            ok = True
        finally:
            self.say("\ncleaning up (pods, workers, masters, namespaces, loop devices, mounts) ...")
            if self.workers:
                self.kubectl("delete", "deployment", "--all", "-n", "default", timeout=60)
                # the pods' sandboxes go through the kubelets (CNI DEL removes their network namespaces)
                self.kubectl("delete", "pod", "--all", "-n", "default", "--wait=true", "--timeout=60s", timeout=90)
            for w in self.workers.values():
                errors = w.stop()
                if errors:
                    self.say(f"{w.name}: teardown: {errors}")
            self.c.close(keep=self.keep_workdir or not ok)
            if not ok:
                self.say(f"logs kept in {self.c.workdir}")
        self.say("\nTimeline:\n" + self.tl.table())
        self.say("\nTime from a worker's first `protokube run` pass to its Node Ready: "
                 + ", ".join(f"{n} {t:.1f} s" for n, t in self.ready_after.items()))
        self.say("\nSUCCESS: two workers joined with a token and the CA's pin, ran a Deployment, reached each "
                 "other's pods and a Service, served logs and exec through verified kubelet certificates, a "
                 "replaced worker joined under a new name while the old name stayed bound, and a client "
                 "certificate was renewed, with no human step but the token.")


if __name__ == "__main__":
    sys.exit(scenario.main(WorkersScenario))
