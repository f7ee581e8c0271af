# SPDX-License-Identifier: Apache-2.0
"""One master end to end with real Kubernetes (docs/components.md): `protokube once` on real loop devices claims the etcd
main and events volumes of member a, issues the PKI from a file:// state store, publishes the names in a hosts
file and writes the static pod manifests; then a real kubelet v1.20.2 with its own containerd (tests/k8s/node.py)
in a network namespace runs them as containers from images built on this machine (scripts/k8s-images.sh):
etcd main and events, kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy. The test waits
(bounded) for the apiserver's /readyz over TLS with the admin client certificate and the cluster CA, then
kubectl (the cache's, same version) with protokube's admin kubeconfig lists the node, the mirror pods of the
static pods appear in kube-system, and the controller-manager and the scheduler hold their leader leases.

The kubelet starts from the files protokube's pass wrote (its KubeletConfiguration and kubelet.env in
--kubelet-dir, with the kubelet client certificate protokube issued), and the kubelet, kube-scheduler and
kube-proxy report on /configz every field of the files protokube rendered for them (docs/components.md).

kube-proxy's mirror pod must appear too: in iptables mode (the default) its pod mounts no /lib/modules, so a
machine without kernel modules (this one) no longer keeps it Pending on a hostPath check. The test prints
every phase.

The Kubernetes binaries come from scripts/k8s-binaries.sh (a cold build is ~16 min; CI builds it once). Without
the cache the test builds it; it skips only if that build cannot run here (and fails in CI)."""
import json
import os
import shutil
import ssl
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import IN_CI, ROOT, need_root, protokube_bin
from loopdev import CLUSTER, MIB, VolEnv

sys.path.insert(0, os.path.join(ROOT, "tests", "k8s"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from netlab import NetLab  # noqa: E402
from node import Node, k8s_bin, kubelet_spec  # noqa: E402
import configz  # noqa: E402  (tests/k8s)
import yaml  # noqa: E402

# A /24 of RFC 2544's range of its own: the 3-master simulation uses 198.18.42.0/24.
BRIDGE = "198.18.43.1"
NODE_IP = "198.18.43.10"
N2_IP = "198.18.43.11"  # a second master's address: no host holds it until the test gives it to a's namespace
ETCD_IMAGE = "registry.k8s.io/etcd:3.4.13-0"  # the tag names upstream's 3.4 image; Debian's etcd is 3.4 too
STATIC_PODS = ("etcd-server", "etcd-server-events", "kube-apiserver", "kube-controller-manager",
               "kube-scheduler", "kube-proxy")
CONTROL_PLANE = STATIC_PODS[:5]
PHASES = []  # (what, when it held): printed with the timings
HOST_LOGS = [f"/var/log/{c}.log" for c in ("kube-apiserver", "kube-controller-manager", "kube-scheduler",
                                             "kube-proxy")]


def kubernetes_bin():
    try:
        return k8s_bin()
    except Exception as e:  # noqa: BLE001 (the build's own error is the reason)
        if IN_CI:
            pytest.fail(f"scripts/k8s-binaries.sh failed: {e}")
        pytest.skip(f"no Kubernetes 1.20.2 binaries and scripts/k8s-binaries.sh cannot build them here: {e}")


def host_logs_before():
    """The host log files that exist before a test's pods start (the test removes only those it made).
    An empty directory at one of these paths is removed first: containerd makes a missing hostPath source a
    directory, so when a file vanished between kubelet's FileOrCreate and a container's start (two runs of
    these tests at once on one machine), the directory stays, and every later kube-apiserver pod fails with
    "hostPath type check failed: ... is not a file"."""
    for path in HOST_LOGS:
        if os.path.isdir(path) and not os.path.islink(path) and not os.listdir(path):
            os.rmdir(path)
    return {p for p in HOST_LOGS if os.path.exists(p)}


def open_elsewhere(path):
    """Whether a process still has path open: another kubelet's pods on this machine share the host's
    /var/log/<component>.log (the manifests' hostPath), and their file must not vanish under them."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == path:
                    return True
            except OSError:
                pass
    return False


class Master:
    def __init__(self, env, pki, hosts):
        self.env, self.pki, self.hosts = env, pki, hosts
        self.kubectl = os.path.join(kubernetes_bin(), "kubectl")
        # protokube's admin kubeconfig names https://api.<cluster>, which the machine does not resolve (the
        # hosts provider writes the test's file): the same file with the server set to the node's address.
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

    def kubectl_ok(self, *args, stdin=None):
        """kubectl ARGS, retried: a loaded machine's apiserver can miss one 10 s request. Its stdout."""
        errors = []
        for _ in range(3):
            p = subprocess.run([self.kubectl, "--kubeconfig", self.kubeconfig, "--request-timeout=10s", *args],
                               input=stdin, capture_output=True, text=True, timeout=30)
            if p.returncode == 0:
                return p.stdout
            errors.append(p.stderr.strip())
            time.sleep(2)
        raise AssertionError(f"kubectl {' '.join(args)}: {errors}")

    def wait_default_service_account(self, timeout=180):
        """The ServiceAccount admission refuses every pod of kube-system until the controller-manager's
        serviceaccount controller made kube-system/default (seen in CI: a pod created right after /readyz)."""
        deadline, why = time.monotonic() + timeout, ""
        while time.monotonic() < deadline:
            got, why = self.kubectl_json("get", "serviceaccount", "default", "-n", "kube-system")
            if got:
                return
            time.sleep(1)
        raise AssertionError(f"no ServiceAccount kube-system/default after {timeout} s: {why}")

    def apiserver_pod_for(self, node):
        """What the API says of a master whose apiserver kubelet runs: a Ready kube-apiserver pod bound to
        node. n2 has no kubelet (its address is a's namespace's), so the test writes that pod itself: the
        object, then its status (Ready) through the status subresource. A new name each time: the pod GC
        takes pods of a node that does not exist after its 40 s quarantine."""
        self.wait_default_service_account()
        self.stand_ins = getattr(self, "stand_ins", 0) + 1
        name = f"kube-apiserver-{node}-{self.stand_ins}"
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "kube-system", "labels": {"k8s-app": "kube-apiserver"}},
               "spec": {"nodeName": node, "automountServiceAccountToken": False,
                        "containers": [{"name": "kube-apiserver", "image": "registry.k8s.io/none"}]}}
        created = json.loads(self.kubectl_ok("create", "-o", "json", "-f", "-", stdin=json.dumps(pod)))
        created["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        self.kubectl_ok("replace", "--raw", f"/api/v1/namespaces/kube-system/pods/{name}/status", "-f", "-",
                        stdin=json.dumps(created))

    def readyz(self):
        ctx = ssl.create_default_context(cafile=os.path.join(self.pki, "admin", "ca.crt"))
        ctx.load_cert_chain(os.path.join(self.pki, "admin", "client.crt"),
                            os.path.join(self.pki, "admin", "client.key"))
        try:
            with urllib.request.urlopen(f"https://{NODE_IP}:443/readyz", context=ctx, timeout=5) as r:
                return r.status == 200 and r.read().strip() == b"ok"
        except OSError:
            return False


def wait(what, pred, timeout, node, interval=1.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last and last[0]:
            PHASES.append((what, time.monotonic()))
            return last[0]
        time.sleep(interval)
    raise AssertionError(f"{what}: not within {timeout} s (last: {last and last[1]})\n{diagnostics(node)}")


def diagnostics(node):
    out = ["--- kubelet log (tail)", node.tail("kubelet", 60), "--- containerd log (tail)", node.tail("containerd", 20)]
    for pod, text in node.pod_logs().items():
        out += [f"--- pod {pod}", text[-3000:]]
    return "\n".join(out)


@pytest.fixture
def master():
    yield from one_master()


def one_master(handoff=False):
    """The node a and its Master, torn down after the yield. handoff: spec.kubelet.selfHosted (the test
    applies the managed kubelet's objects: no pivot), the node's runtime and directories in its spec
    (Node.machine_spec()), the bootstrap kubelet restarted whenever it exits (docs/kubelet-handoff.md)."""
    need_root()
    kubernetes_bin()
    logs_before = host_logs_before()
    env = VolEnv(protokube_bin())
    lab = NetLab(tag="pkn", bridge_addr=BRIDGE)
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
        resolv = os.path.join(env.base, "resolv.conf")  # no resolver is reachable: names come from hosts
        with open(resolv, "w") as f:
            f.write("options ndots:1 timeout:1 attempts:1\n")
        node = Node("a", env.manifest_dir("a"), None, None, NODE_IP, netns=ns, hosts_file=hosts,
                    etcd_images=[ETCD_IMAGE], base=os.path.join(env.base, "node-a"),
                    kubelet_files=env.kubelet_dir("a"), handoff=handoff)
        kubelet = kubelet_spec('a', resolv)
        if handoff:  # the test applies the managed kubelet's objects: no pivot (spec.selfHosted) here
            kubelet += node.machine_spec() + "    selfHosted: true\n    rolloutDeadline: 40s\n"
        spec = spec.replace("  kubernetesVersion: 1.31.2", f"  stateStore: file://{store}\n  pki:\n    dir: {pki}\n"
                            f"{kubelet}  kubernetesVersion: 1.20.2")
        # kube-apiserver advertises the address of the default route unless told: the namespace has none
        # ("Unable to find suitable network address ... no default routes found").
        spec = spec.replace("  kubeAPIServer: {}", f"  kubeAPIServer:\n    advertiseAddress: {NODE_IP}")
        with open(env.spec, "w") as f:
            f.write(spec)
        if handoff:
            # The managed kubelet's pod sees the etcd volumes' mounts come and go (HostToContainer), which
            # needs a shared (or slave) mount at the root: systemd makes / shared, this machine's is private.
            root = env.mount_root("a")
            os.makedirs(root, exist_ok=True)
            subprocess.run(["mount", "--bind", root, root], check=True, timeout=30)
            subprocess.run(["mount", "--make-shared", root], check=True, timeout=30)
        for c in ("main", "events"):
            env.create(f"{c}-a", c, "a", ["a"], size=256 * MIB)  # etcd preallocates a 64 MiB WAL
        argv = env.argv("once", "a")
        argv[argv.index("--internal-ip") + 1] = NODE_IP
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, f"protokube once: {p.returncode}\n{p.stderr}"
        # the kubelet as its init system starts it (node.start()): from the files protokube wrote
        m = Master(env, pki, hosts)
        m.netns, m.netif = ns, f"{lab.tag}pa"
        m.lab = lab  # a test may add a worker to the lab
        yield env, node, m
    finally:
        errors = node.close() if node else []
        lab.close()
        errors += env.cleanup()
        for path in set(HOST_LOGS) - logs_before:  # made by the pods' FileOrCreate hostPath volumes
            if os.path.exists(path) and not open_elsewhere(path):
                os.unlink(path)
    assert not errors, errors


def test_one_master_runs_protokubes_static_pods(master):
    env, node, m = master
    node.start()
    t_kubelet = node.kubelet_started

    PHASES.clear()
    wait("kube-apiserver /readyz", lambda: (m.readyz(), "not ready"), 300, node, interval=2)

    def node_listed():
        nodes, err = m.kubectl_json("get", "nodes")
        names = [n["metadata"]["name"] for n in (nodes or {}).get("items", [])]
        return "a" in names, err or names
    wait("kubectl get nodes lists a", node_listed, 120, node)

    def node_ready():
        n, err = m.kubectl_json("get", "node", "a")
        conds = {c["type"]: c["status"] for c in (n or {}).get("status", {}).get("conditions", [])}
        return conds.get("Ready") == "True", err or conds
    wait("node a Ready", node_ready, 120, node)

    expected = STATIC_PODS

    def mirror_pods():
        pods, err = m.kubectl_json("get", "pods", "-n", "kube-system")
        if pods is None:
            return False, err
        seen = {}
        for p in pods["items"]:
            md = p["metadata"]
            if "kubernetes.io/config.mirror" in md.get("annotations", {}) and md["name"].endswith("-a"):
                seen[md["name"][:-2]] = p["status"].get("phase")
        running = all(seen.get(c) == "Running" for c in CONTROL_PLANE) and all(s in seen for s in expected)
        return (seen if running else False), seen
    seen = wait("mirror pods of every static pod, the control plane Running", mirror_pods, 180, node)

    # hostNetwork pods share the UTS namespace of the node's containerd, named after the node
    # (tests/k8s/node.py): the holder is "<node name>_<uuid>".
    holder = node.name + "_"

    def leases():
        held = {}
        for name in ("kube-controller-manager", "kube-scheduler"):
            lease, err = m.kubectl_json("get", "lease", "-n", "kube-system", name)
            held[name] = (lease or {}).get("spec", {}).get("holderIdentity", err)
        return all(str(h).startswith(holder) for h in held.values()), held
    wait("controller-manager and scheduler leader leases held", leases, 120, node)

    # Every pod ran from the images imported into this node's containerd: nothing was pulled.
    refs = {r for r in node.ctr("images", "ls", "-q").stdout.split() if not r.startswith("sha256:")}
    assert refs == set(node.images), refs
    phases = ", ".join(f"{w} +{t - t_kubelet:.1f} s" for w, t in PHASES)
    print(f"\ntimings: {node.timings}; after kubelet started: {phases}; mirror pods {seen}")

    components_run_their_files(env, m, node)
    api_names_follow_readiness(env, m)
    api_names_follow_the_pivot_turns(env, m, node)


def components_run_their_files(env, m, node):
    """The kubelet (its /configz through the API's node proxy), kube-scheduler (on its file's loopback address)
    and kube-proxy (on its metrics address) run every field of the files protokube wrote for them."""
    def served(addr):
        p = subprocess.run(node.in_netns(["curl", "-s", "-m", "2", f"http://{addr}/configz"]), capture_output=True,
                           text=True, timeout=10)
        return p.stdout if p.returncode == 0 and p.stdout.startswith("{") else None

    def read(*p):
        with open(os.path.join(*p)) as f:
            return f.read()
    sched = read(env.config_dir("a"), "kube-scheduler", "config.yaml")
    addr = yaml.safe_load(sched)["healthzBindAddress"]
    assert addr == "127.0.0.1:10251"
    checks = [("kubelet", read(env.kubelet_dir("a"), "config.yaml"),
               lambda: (lambda p: p.stdout if p.returncode == 0 else None)(subprocess.run(
                   [m.kubectl, "--kubeconfig", m.kubeconfig, "--request-timeout=10s", "get", "--raw",
                    "/api/v1/nodes/a/proxy/configz"], capture_output=True, text=True, timeout=30))),
              ("kube-scheduler", sched, lambda: served(addr)),
              ("kube-proxy", read(env.config_dir("a"), "kube-proxy", "config.yaml"), lambda: served("127.0.0.1:10249"))]
    for component, text, fetch in checks:
        body = wait(f"{component} /configz", lambda fetch=fetch: (fetch(), "no answer"), 60, node)
        bad = configz.mismatches(text, configz.section(body, component), omits_zero=component in configz.OMITS_ZERO)
        assert bad == [], (component, bad)


def api_addresses(hosts):
    """The addresses the hosts file gives api.internal.<cluster>."""
    name = f"api.internal.{CLUSTER}"
    with open(hosts) as f:
        return sorted(ln.split()[0] for ln in f if name in ln.split()[1:])


def api_names_follow_readiness(env, m):
    """A master joins api.internal when its apiserver answers /readyz (docs/dns.md), against a's real apiserver.
    n2 claims a main volume of its own at N2_IP, where nothing answers yet (member b of a one-member list, so
    a's etcd is untouched; no kubelet runs n2's pods): n2 leaves itself out (a is listed); a's pass asks n2's
    /readyz (no answer), asks its own (200) and leaves n2 out, saying why; once N2_IP is an address of a's
    namespace, the apiserver there answers for n2, but the API (a's real kubelet reports a's mirror pod Ready)
    shows no apiserver pod on n2, so a's pass still leaves it out, saying so; with a Ready apiserver pod on n2
    in the API (written by the test: n2 has no kubelet), a's pass puts n2 in, and n2's pass keeps it."""
    env.create("main-n2", "main", "b", ["b"], size=64 * MIB)
    # n2's pki dir starts with protokube's client (the same identity on every master, as if n2's
    # certificates step had run before): its first pass asks apiservers, which a pass without it does not
    shutil.copytree(os.path.join(env.base, "pki-a", "protokube"), os.path.join(env.base, "pki-n2", "protokube"),
                    symlinks=True)  # the pair is a link to its generation (docs/pki.md)

    def once(node, ip):
        argv = env.argv("once", node)
        argv[argv.index("--internal-ip") + 1] = ip
        argv[argv.index("-c") + 1] = node_spec(env, node)
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert p.returncode in (0, 3), f"protokube once --node-name {node}: {p.returncode}\n{p.stderr}"
        return p

    p = once("n2", N2_IP)
    assert api_addresses(m.hosts) == [NODE_IP], (api_addresses(m.hosts), p.stderr)
    assert "leaves out n2 (this master" in p.stderr, p.stderr
    assert p.returncode == 3, p.stderr  # not converged: the names are not final
    with open(m.hosts) as f:
        assert any(ln.split()[0] == N2_IP and f"etcd-b.internal.{CLUSTER}" in ln.split() for ln in f)

    p = once("a", NODE_IP)
    assert api_addresses(m.hosts) == [NODE_IP], (api_addresses(m.hosts), p.stderr)
    assert f"leaves out n2 ({N2_IP}: " in p.stderr, p.stderr
    assert p.returncode == 3, p.stderr

    subprocess.run(["ip", "-n", m.netns, "addr", "add", f"{N2_IP}/24", "dev", m.netif], check=True)
    # n2 answers now, but the API shows no Ready apiserver pod on it, and one on a (a's kubelet reports its
    # mirror pod): n2 stays out until it has one (docs/dns.md, "While the apiservers come up")
    p = once("a", NODE_IP)
    assert api_addresses(m.hosts) == [NODE_IP], (api_addresses(m.hosts), p.stderr)
    assert "leaves out n2 (the API shows no Ready apiserver pod on it" in p.stderr, p.stderr
    m.apiserver_pod_for("n2")
    p = once("a", NODE_IP)
    assert api_addresses(m.hosts) == sorted([NODE_IP, N2_IP]), (api_addresses(m.hosts), p.stderr)
    assert "leaves out" not in p.stderr, p.stderr
    p = once("n2", N2_IP)
    assert api_addresses(m.hosts) == sorted([NODE_IP, N2_IP]), (api_addresses(m.hosts), p.stderr)
    assert "leaves out" not in p.stderr, p.stderr
    PHASES.append(("api.internal follows the apiservers' readiness", time.monotonic()))


def node_spec(env, node, self_hosted=False):
    """The spec as node runs it: its own pki dir (a second master on the same machine must not share a's: its
    certificates step keeps its own layout there, and took a's etcd-events pairs away from under a's etcd),
    and selfHosted: true when asked."""
    with open(env.spec) as f:
        text = f.read()
    if node != "a":
        text = text.replace(os.path.join(env.base, "pki-a"), os.path.join(env.base, f"pki-{node}"))
    if self_hosted:
        text = text.replace("  kubernetesVersion: 1.20.2", "  selfHosted: true\n  kubernetesVersion: 1.20.2")
    path = os.path.join(env.base, f"cluster-{node}{'-selfhosted' if self_hosted else ''}.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def plan_self_hosted(env, m, node, ip):
    """`protokube plan` (observes and plans, changes nothing) of node with selfHosted: true and a state
    directory of its own (no pivot record: the pivot is under way), resolving the API's name through the
    test's hosts file as the daemon's resolver would (/etc/hosts bound over in a mount namespace)."""
    argv = env.argv("plan", node)
    argv[argv.index("--internal-ip") + 1] = ip
    argv[argv.index("-c") + 1] = node_spec(env, node, self_hosted=True)
    p = subprocess.run(["unshare", "--mount", "--propagation", "slave", "--", "sh", "-c",
                        'mount --bind "$0" /etc/hosts && exec "$@"', m.hosts, *argv], capture_output=True,
                       text=True, timeout=120,
                       env=dict(os.environ, PROTOKUBE_STATE_DIR=os.path.join(env.base, f"state-{node}")))
    assert p.returncode == 0, f"protokube plan --node-name {node}: {p.returncode}\n{p.stderr}"
    return p


def api_names_follow_the_pivot_turns(env, m, node):
    """The pivot's turns in the API's names (docs/pivot.md, "One apiserver starting at a time"), against the
    real apiserver: with a and n2 listed and a's Node labelled a master, a's Node annotated
    protokube.io/api-names=out (what the step leave-api-names applies) makes n2's plan and a's leave a out,
    read from the Nodes through api.internal; without the annotation, a stays. Read through a's apiserver,
    which answers for both addresses here."""
    kubectl = m.kubectl_ok

    def annotate(value):
        kubectl("annotate", "--overwrite", "node", "a", f"protokube.io/api-names{'=' + value if value else '-'}")

    def api_replaced(out):
        """The addresses the plan writes to api.internal's A RRset; None: left as served."""
        for ln in out.splitlines():
            w = ln.split()
            if len(w) == 4 and w[0] == "dns-replace" and w[2] == "A" and \
                    w[1].rstrip(".") == f"api.internal.{CLUSTER}":
                return w[3]
        return None

    # n2's passes (its own pki dir) leave a's control plane as it was: a's apiserver answers
    deadline = time.monotonic() + 60
    while not m.readyz() and time.monotonic() < deadline:
        time.sleep(1)
    assert m.readyz(), f"a's apiserver does not answer /readyz after n2's passes\n{diagnostics(node)}"
    # the turns are read from the masters' Nodes, which the pivot labels first (kubelet 1.20 cannot)
    kubectl("label", "--overwrite", "node", "a", "node-role.kubernetes.io/master=")
    m.apiserver_pod_for("n2")  # each plan reads the apiserver pods (a new process has not seen them yet)
    p = plan_self_hosted(env, m, "n2", N2_IP)
    assert "leaves out" not in p.stdout and api_replaced(p.stdout) is None, p.stdout
    annotate("out")
    try:
        p = plan_self_hosted(env, m, "n2", N2_IP)
        assert "leaves out a (its pivot turn: its self-hosted apiserver starts)" in p.stdout, p.stdout + p.stderr
        assert api_replaced(p.stdout) == N2_IP, p.stdout
        p = plan_self_hosted(env, m, "a", NODE_IP)  # a takes itself out alike
        assert api_replaced(p.stdout) == N2_IP, p.stdout
    finally:
        annotate("")
    m.apiserver_pod_for("n2")
    p = plan_self_hosted(env, m, "n2", N2_IP)
    assert "leaves out" not in p.stdout and api_replaced(p.stdout) is None, p.stdout
    PHASES.append(("api.internal follows the pivot's turns", time.monotonic()))
