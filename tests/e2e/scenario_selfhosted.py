#!/usr/bin/python3
"""make demo-selfhosted: the self-hosted control plane (docs/pivot.md) on three real masters (kubelet
1.20.2 + containerd each, tests/e2e/cluster.py real=True), with spec selfHosted: true and nothing but the daemons:

1. cold start with static pods (scenario.py's step 1: etcd, DNS, the API through api.internal);
2. the daemons pivot, one master at a time: the pivot's duration and, from a /readyz probe through api.internal
   every 50 ms, the failed probes and the longest gap;
3. a ConfigMap written and read through the self-hosted API; an upgrade through the API (kubectl patch adds a
   flag to the apiserver DaemonSet), rolled one master at a time under the same probe; then a's serving
   certificate issued again by a's daemon: it applies the renewed Secrets and every self-hosted pod rolls onto
   them, the upgrade's flag kept;
4. b terminated, d takes its volumes (scenario.py's step 2), b's Node deleted (what a cloud's node controller
   does for a terminated instance), d pivots and the apiserver DaemonSet's pod lands on d;
5. all masters stopped at once (protokube, kubelet, containerd, containers: SIGKILL) and started again, three
   times; each time the API comes back through the checkpoint with no human step, its time printed.

A network of its own (198.18.48.0/24, PROTOKUBE_SELFHOSTED_NET to change), so it can run beside the other tests.
Each daemon runs in its master's network namespace and in a mount namespace of its own where /etc/resolv.conf
is the namespace's (the test DNS server: api.internal resolves as on a real master); the work directory is a
shared mount, so what protokube mounts still reaches kubelet. Run as root: /usr/bin/python3
tests/e2e/scenario_selfhosted.py (make demo-selfhosted)."""

import base64
import datetime
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402
import scenario  # noqa: E402
import scenario_workers  # noqa: E402  (its Worker: a machine that joins with a token)
from cluster import SUFFIX, protokube_bin  # noqa: E402
from kubelets import KubeletSteps  # noqa: E402
from node import Node  # noqa: E402
from scenario import ADDRS, Scenario, ScenarioError, wait_for  # noqa: E402

NET = os.environ.get("PROTOKUBE_SELFHOSTED_NET", "198.18.48")
cluster.DNS_ADDR = f"{NET}.53"
ADDRS.update({n: f"{NET}.{11 + i}" for i, n in enumerate("abcd")})
scenario.PROBE_ADDR = f"{NET}.60"
scenario_workers.WORKER_ADDRS.update({f"w{i}": f"{NET}.{20 + i}" for i in range(1, 6)})
REBOOTS = 3
ROLLOUT_DEADLINE = 90  # spec.kubelet.rolloutDeadline: a node's new kubelet not Ready this long is rolled back
BOOTSTRAP = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")


class SelfHostedMaster(cluster.Master):
    def argv(self, *verb):
        """protokube VERB for this master, in its network namespace and its NodeWorld (tests/k8s/node.py: its
        own /etc/resolv.conf, the namespace's, and its directory at the path every node has)."""
        return self.pk_argv(*verb, *self.node_args())

    def pk_argv(self, *args):
        return self.world.argv([protokube_bin(), "-c", self.spec, "--log-format", "json", *args],
                               self.cluster.lab.ns(self.name))

    def kubelet_extra(self):
        """A bootstrap kubelet (spec.kubelet.selfHosted) with the machine's runtime and directories."""
        node = Node(self.name, self.manifests, None, None, self.addr, base=self.node_base(), world=self.world)
        return node.machine_spec() + self.cluster.handoff_spec

    def env(self):
        return dict(os.environ, PROTOKUBE_STATE_DIR=self.state)

    def start(self, port):
        self.port = port
        self.world.boot()
        self.start_daemon()
        self.start_node()

    def start_daemon(self):
        argv = self.argv("run") + ["--listen", f"127.0.0.1:{self.port}", "--interval", "5s"]
        self.protokube = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.logs, "protokube.log"), "ab"),
            start_new_session=True, env=self.env())


class SelfHostedCluster(cluster.Cluster):
    def __init__(self, *a, **kw):
        super().__init__(*a, tag="pksh", **kw)
        self.lab.bridge_addr = f"{NET}.1"
        # every node's kubelet handed to the managed kubelet DaemonSet: each node in a NodeWorld, so that the
        # DaemonSet's host paths are each node's own
        self.worlds = f"/run/pk-worlds-{self.lab.tag}"
        self.handoff = True
        self.handoff_spec = f"    selfHosted: true\n    rolloutDeadline: {ROLLOUT_DEADLINE}s\n"

    @staticmethod
    def real_spec():
        return "  selfHosted: true\n" + cluster.Cluster.real_spec()

    master_class = SelfHostedMaster


scenario.Cluster = SelfHostedCluster


class SelfHostedScenario(KubeletSteps, Scenario):
    def __init__(self, out=sys.stdout, keep_workdir=False):
        super().__init__(out=out, keep_workdir=keep_workdir, real=True)
        self.pivot, self.upgrade, self.renewal = {}, {}, {}
        self.kubelet_upgrade, self.kubelet_rollback = {}, {}
        self.rollout_deadline = ROLLOUT_DEADLINE
        self.workers = {}  # scenario_workers.Worker by name
        self.reboots = []

    def master_pk(self, *args):
        """protokube ARGS on master a (in its world, with its spec and state)."""
        m = self.c.masters["a"]
        return subprocess.run(m.pk_argv(*args), capture_output=True, text=True, timeout=120, env=m.env())

    def api_cold_start(self):
        """The API through api.internal (the bootstrap pods), the nodes; the probe starts here: the daemons
        pivot as soon as the API answers."""
        self.c.lab.add_host("probe", scenario.PROBE_ADDR)
        wait_for("the API ready through api.internal",
                 lambda: self.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok", 300, 1)
        self.t_api = time.monotonic()
        self.start_api_probe()
        self.tl.mark(f"API ready through https://api.{SUFFIX} (bootstrap static pods); probe every 50 ms started")

    def alive(self, fn):
        """fn, after checking that every master's daemon still runs: nothing else moves the pivot on, so a daemon
        that exited fails the step at once, with its last lines."""
        def check():
            for m in self.c.masters.values():
                if m.protokube is not None and m.protokube.poll() is not None:
                    with open(os.path.join(m.logs, "protokube.log"), errors="replace") as f:
                        tail = "\n".join(f.read().splitlines()[-30:])
                    raise ScenarioError(f"protokube run on {m.name} exited {m.protokube.returncode}:\n{tail}")
            for w in self.workers.values():
                if w.run_proc is not None and w.run_proc.poll() is not None:
                    raise ScenarioError(f"protokube run on {w.name} exited {w.run_proc.returncode}; see "
                                        f"{w.dir}/protokube.log")
            return fn()
        return check

    def pods(self):
        p = self.kubectl("get", "pods", "-n", "kube-system", "-o", "json")
        return json.loads(p.stdout)["items"] if p.returncode == 0 else []

    def self_hosted_on(self, nodes):
        """Every self-hosted control-plane pod Ready on each of nodes and no bootstrap mirror pod left there."""
        have = set()
        for pod in self.pods():
            md, st = pod["metadata"], pod.get("status", {})
            node = pod["spec"].get("nodeName")  # none while the pod is not scheduled
            if node is None or node not in set(nodes):
                continue
            if "kubernetes.io/config.mirror" in md.get("annotations", {}) and md["name"].rsplit("-", 1)[0] in BOOTSTRAP:
                return None
            ready = any(c["type"] == "Ready" and c["status"] == "True" for c in st.get("conditions", []))
            owned = any(o.get("controller") for o in md.get("ownerReferences", []))
            if owned and ready:
                have.add((node, md.get("labels", {}).get("k8s-app")))
        return have >= {(n, b) for n in nodes for b in BOOTSTRAP}

    def pivot_complete(self):
        p = self.kubectl("get", "configmap", "-n", "kube-system", "protokube-pivot", "-o",
                         "jsonpath={.data.complete}")
        return p.returncode == 0 and p.stdout.strip() == "true"

    def step_pivot(self):
        self.say("\n2. The daemons pivot to the self-hosted control plane, one master at a time")
        wait_for("the pivot complete (kube-system/protokube-pivot)", self.alive(self.pivot_complete), 1200, 2)
        took = time.monotonic() - self.t_api
        wait_for("the self-hosted pods Ready on a, b, c, no bootstrap pod", lambda: self.self_hosted_on("abc"),
                 300, 2)
        for m in self.c.masters.values():
            left = [f for f in os.listdir(m.manifests) if f.split(".")[0] in BOOTSTRAP]
            if left:
                raise ScenarioError(f"master {m.name} still has bootstrap manifests {left}")
        self.stop_api_probe()
        self.pivot = dict(self.api, took=took)
        self.tl.mark(f"pivot complete {took:.1f} s after the API answered; /readyz through api.internal every "
                     f"50 ms: {self.api_text()}")
        # the turns alone: from the first master leaving the API's names (the cold start's tail before it,
        # a master listed while its bootstrap apiserver still starts, is not the pivot's)
        first_turn = self.first_log_time("Pivot: leave-api-names:")
        if first_turn is not None:
            self.pivot["turns"] = self.api_since(first_turn)
            self.tl.mark(f"from the first master's turn on: {self.probe_summary(self.pivot['turns'])}")
        self.check_configz(self.c.masters.values())

    def scheduler_file(self, m):
        """The self-hosted scheduler's file: its ConfigMap's config.yaml (its own port, 10261: the checkpoint's
        copy beside it has another)."""
        p = self.kubectl("get", "configmap", "-n", "kube-system", "kube-scheduler-kube-scheduler", "-o", "json")
        if p.returncode != 0:
            raise ScenarioError(f"kubectl get configmap kube-scheduler-kube-scheduler: {p.stderr}")
        data = json.loads(p.stdout)["data"]
        if "127.0.0.1:10261" not in data["config.yaml"] or "127.0.0.1:10271" not in data["checkpoint.config.yaml"]:
            raise ScenarioError(f"the scheduler's ConfigMap does not give each instance its port: {data}")
        return data["config.yaml"]

    def proxy_file(self, m):
        """The self-hosted kube-proxy's file: its ConfigMap's config.yaml (the static pod's is retired)."""
        p = self.kubectl("get", "configmap", "-n", "kube-system", "kube-proxy-kube-proxy", "-o",
                         "jsonpath={.data.config\\.yaml}")
        if p.returncode != 0 or not p.stdout.strip():
            raise ScenarioError(f"kubectl get configmap kube-proxy-kube-proxy: {p.stderr or 'no config.yaml'}")
        return p.stdout

    def first_log_time(self, prefix):
        """The wall-clock time of the first line of any master's protokube log whose message starts with prefix."""
        first = None
        for m in self.c.masters.values():
            with open(os.path.join(m.logs, "protokube.log"), errors="replace") as f:
                for ln in f:
                    try:
                        rec = json.loads(ln)
                    except ValueError:
                        continue
                    if rec.get("msg", "").startswith(prefix):
                        t = datetime.datetime.fromisoformat(rec["time"].replace("Z", "+00:00")).timestamp()
                        first = t if first is None else min(first, t)
                        break
        return first

    def step_configmap(self):
        self.say("\n3. A ConfigMap written and read through the self-hosted API")
        p = self.kubectl("create", "configmap", "e2e", "-n", "default", "--from-literal=step=1")
        if p.returncode != 0:
            raise ScenarioError(f"kubectl create configmap: {p.stderr}")
        p = self.kubectl("get", "configmap", "e2e", "-n", "default", "-o", "jsonpath={.data.step}")
        if p.stdout.strip() != "1":
            raise ScenarioError(f"ConfigMap default/e2e did not read back: {p.stdout!r} {p.stderr!r}")
        self.tl.mark("ConfigMap default/e2e written and read back")

    def step_upgrade(self):
        """kubectl adds a flag to the apiserver DaemonSet: it rolls one master at a time (maxUnavailable 1) and
        the 50 ms probe through api.internal says whether the API ever lost all its servers."""
        self.say("\n3b. An upgrade through the API: kubectl changes a flag of the apiserver DaemonSet")
        flag = "--default-not-ready-toleration-seconds=299"
        patch = json.dumps([{"op": "add", "path": "/spec/template/spec/containers/0/command/-", "value": flag}])
        self.start_api_probe()
        t = time.monotonic()
        p = self.kubectl("patch", "daemonset", "-n", "kube-system", "kube-apiserver", "--type=json", "-p", patch)
        if p.returncode != 0:
            raise ScenarioError(f"kubectl patch: {p.stderr}")

        def rolled():
            pods = [x for x in self.pods() if x["metadata"].get("labels", {}).get("k8s-app") == "kube-apiserver"
                    and any(o.get("kind") == "DaemonSet" for o in x["metadata"].get("ownerReferences", []))]
            ready = [x for x in pods if flag in x["spec"]["containers"][0]["command"] and
                     any(c["type"] == "Ready" and c["status"] == "True" for c in x["status"].get("conditions", []))]
            return len(ready) == 3 and len(pods) == 3
        wait_for("the apiserver DaemonSet rolled on a, b, c", self.alive(rolled), 900, 2)
        self.stop_api_probe()
        self.upgrade = dict(self.api, took=time.monotonic() - t)
        self.tl.mark(f"upgrade rolled on three masters in {self.upgrade['took']:.0f} s; /readyz through "
                     f"api.internal every 50 ms: {self.api_text()}")

    def step_renewal(self):
        """A certificate of a, the first master by name and so the writer of the Secrets, issued again by a's daemon
        (docs/pivot.md, "Renewing the certificates after the pivot"): the daemon applies the renewed Secrets and
        patches the certificates annotation into the workloads, which roll one master at a time under the same
        probe; the flag of the upgrade stays."""
        self.say("\n3c. The certificates renewed on a (the writer of the Secrets): the workloads roll")

        def template_digest():
            return self.kubectl("get", "daemonset", "-n", "kube-system", "kube-apiserver", "-o",
                                "jsonpath={.spec.template.metadata.annotations.protokube\\.io/certificates}"
                                ).stdout.strip() or None
        before = template_digest()
        a = self.c.masters["a"]
        crt = os.path.join(a.pki, "kube-apiserver", "apiserver.crt")
        with open(crt, "rb") as f:
            old = f.read()
        self.start_api_probe()
        t = time.monotonic()
        # The pass's own renewal path, while a's daemon runs: a leaf that must be issued again (here: its pair
        # gone; in a cluster's life: near its end, or its names changed) is issued by the next pass.
        for ext in ("crt", "key"):
            os.unlink(os.path.join(a.pki, "kube-apiserver", f"apiserver.{ext}"))
        self.tl.mark("a's serving pair removed: a's daemon issues a new one")

        def secret_renewed():
            try:
                with open(crt, "rb") as f:
                    renewed = f.read()
            except FileNotFoundError:
                return False
            p = self.kubectl("get", "secret", "-n", "kube-system", "kube-apiserver-pki", "-o",
                             "jsonpath={.data.apiserver\\.crt}")
            return renewed != old and p.returncode == 0 and p.stdout.strip() == base64.b64encode(renewed).decode()
        wait_for("the renewed certificate in Secret kube-apiserver-pki", self.alive(secret_renewed), 300, 2)
        self.tl.mark(f"Secret kube-apiserver-pki holds the renewed certificate after {time.monotonic() - t:.0f} s")
        digest = wait_for("the new certificates digest in the apiserver DaemonSet",
                          self.alive(lambda: (lambda d: d if d != before else None)(template_digest())), 120, 2)

        def rolled():
            want = {"kube-apiserver": 3, "kube-controller-manager": 3, "kube-scheduler": 3}
            have = {}
            for x in self.pods():
                md = x["metadata"]
                app = md.get("labels", {}).get("k8s-app")
                if app in want and any(o.get("controller") for o in md.get("ownerReferences", [])) and \
                        md.get("annotations", {}).get("protokube.io/certificates") == digest and \
                        any(c["type"] == "Ready" and c["status"] == "True" for c in x["status"].get("conditions", [])):
                    have[app] = have.get(app, 0) + 1
            return have == want
        wait_for("every self-hosted pod rolled onto the renewed certificates", self.alive(rolled), 900, 2)
        self.stop_api_probe()
        flag = "--default-not-ready-toleration-seconds=299"
        command = json.loads(self.kubectl("get", "daemonset", "-n", "kube-system", "kube-apiserver", "-o",
                                          "json").stdout)["spec"]["template"]["spec"]["containers"][0]["command"]
        if flag not in command:
            raise ScenarioError(f"the renewal lost the upgrade's flag: {command}")
        self.renewal = dict(self.api, took=time.monotonic() - t)
        self.tl.mark(f"renewal rolled on three masters in {self.renewal['took']:.0f} s (the upgrade's flag kept); "
                     f"/readyz through api.internal every 50 ms: {self.api_text()}")

    def step_replace_b(self):
        self.step2_replace_b()
        # the cloud's node controller deletes the Node of a terminated instance; here the demo does
        p = self.kubectl("delete", "node", "b", "--wait=false")
        if p.returncode != 0:
            raise ScenarioError(f"kubectl delete node b: {p.stderr}")
        self.tl.mark("Node b deleted (as a cloud's node controller does for a terminated instance)")
        t = time.monotonic()
        wait_for("d pivoted: the self-hosted pods Ready on d", self.alive(lambda: self.self_hosted_on("acd")), 900, 2)
        d_pods = [p["metadata"]["name"] for p in self.pods() if p["spec"].get("nodeName") == "d" and
                  p["metadata"].get("labels", {}).get("k8s-app") == "kube-apiserver"]
        self.tl.mark(f"d pivoted in {time.monotonic() - t:.0f} s: the apiserver DaemonSet's pod {d_pods} runs on d")
        every = sorted(self.nodes())
        wait_for("d handed to its managed kubelet", self.alive(lambda: self.handed_off(every)), 600, 2)
        self.tl.mark(f"d held by its managed kubelet ({', '.join(every)}: every node managed)")

    def step_power_cuts(self, times=REBOOTS):
        """Every running node (masters a, c, d once b is gone; workers w1, w2) loses power at once, times times
        in a row."""
        live = [m for m in self.c.masters.values() if m.protokube is not None]
        workers = list(self.workers.values())
        here = "".join(m.name for m in live)
        names = ", ".join([m.name for m in live] + [w.name for w in workers])
        self.say(f"\n5. Every node ({names}) stopped at once and started again, {times} times")
        for i in range(times):
            t = time.monotonic()
            errors = []
            for x in live + workers:
                errors += x.power_cut()
            if errors:
                raise ScenarioError(f"power cut {i + 1}: {errors}")
            self.tl.mark(f"power cut {i + 1}: protokube, kubelet, containerd and the containers of {names} killed")
            for m in live:
                m.start(m.port)
            for w in workers:
                w.start()
            self.tl.mark(f"power cut {i + 1}: {names} started again (protokube, containerd, the bootstrap kubelet)")
            wait_for(f"the API back after power cut {i + 1}",
                     self.alive(lambda: self.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"), 900, 2)
            back = time.monotonic() - t
            wait_for(f"the self-hosted pods back on {names}", self.alive(lambda: self.self_hosted_on(here)), 900, 2)
            settled = time.monotonic() - t
            for m in live:
                wait_for(f"{m.name}'s checkpoint retired",
                         self.alive(lambda m=m: not any(f.endswith("-checkpoint.json") for f in os.listdir(m.manifests))),
                         300, 2)
            p = self.kubectl("get", "configmap", "e2e", "-n", "default", "-o", "jsonpath={.data.step}")
            if p.stdout.strip() != "1":
                raise ScenarioError(f"ConfigMap default/e2e did not read back: {p.stdout!r} {p.stderr!r}")
            self.wait_handoff_after_boot(f"after power cut {i + 1}")
            managed = time.monotonic() - t
            self.reboots.append((back, settled, managed))
            self.tl.mark(f"power cut {i + 1}: API back after {back:.0f} s, self-hosted pods back after {settled:.0f} s, "
                         f"checkpoints retired, ConfigMap reads back; every node held by its managed kubelet "
                         f"again and the workload running after {managed:.0f} s")

    def run(self):
        ok = False
        try:
            self.step1_cold_start()
            self.step_pivot()
            self.step_workers_join()
            self.step_configmap()
            self.step_upgrade()
            self.step_renewal()
            self.step_kubelet_upgrade()
            self.step_kubelet_rollback()
            self.say("\n4. Terminate master b; master d takes over its volumes and pivots")
            self.step_replace_b()
            self.step_power_cuts()
            ok = True
        finally:
            self.say("\ncleaning up (namespaces, loop devices, mounts, processes) ...")
            for w in self.workers.values():
                errors = w.stop()
                if errors:
                    self.say(f"worker {w.name}: teardown: {errors}")
            self.c.close(keep=not ok)
            if not ok:
                self.say(f"logs kept in {self.c.workdir}")
        self.say("\nTimeline:\n" + self.tl.table())
        self.say(f"\nPivot: {self.pivot['took']:.1f} s from the API's first answer to complete; /readyz through "
                 f"api.{SUFFIX} every 50 ms: {self.probe_summary(self.pivot)}")
        self.say(f"Upgrade (a flag added to the apiserver DaemonSet): rolled in {self.upgrade['took']:.0f} s; "
                 f"{self.probe_summary(self.upgrade)}")
        self.say(f"Certificates renewed on a: every self-hosted pod rolled in {self.renewal['took']:.0f} s; "
                 f"{self.probe_summary(self.renewal)}")
        u, b = self.kubelet_upgrade, self.kubelet_rollback
        self.say(f"Kubelet upgrade (a flag in the kubelet DaemonSet's args): rolled node by node ({u['order']}) in "
                 f"{u['took']:.0f} s, longest NotReady {u['not_ready']:.0f} s, no workload container restarted; "
                 f"{self.probe_summary(u)}")
        self.say(f"Broken kubelet image: rolled back by the masters {b['took']:.0f} s after the change (deadline "
                 f"{self.rollout_deadline} s), every node managed again after {b['back']:.0f} s, longest NotReady "
                 f"{b['not_ready']:.0f} s, no workload container restarted")
        self.say("Power cuts (every node at once), API back / self-hosted pods back / every node managed again: " +
                 ", ".join(f"{a:.0f} s / {b:.0f} s / {c:.0f} s" for a, b, c in self.reboots))
        self.say("\nSUCCESS: the control plane pivoted to the cluster, every node's kubelet handed to the managed "
                 "kubelet DaemonSet, upgraded and rolled back through the API, a master's replacement and three "
                 "power cuts of every node, with no human step.")


if __name__ == "__main__":
    sys.exit(scenario.main(SelfHostedScenario))
