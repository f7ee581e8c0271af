"""The kubelet handoff's steps of make demo-selfhosted (docs/kubelet-handoff.md), on every node of the cluster:
three masters and two workers, each in a NodeWorld of its own (tests/k8s/node.py), each with a bootstrap
kubelet that the harness restarts whenever it exits (the unit's Restart=always) and the managed kubelet
DaemonSet the pivot applies.

- workers w1 and w2 join with a token (scenario_workers.py's Worker); every node handed to its managed
  kubelet: the lock held by a process in a pod's cgroup (/proc/locks), the node's report on its Node
  (protokube.io/kubelet-holder: managed) and the bootstrap taint off; a workload DaemonSet on every node;
- an upgrade through the API (a flag in the DaemonSet's args) rolled node by node under the API probe: the
  order and time of each node, the probe's figures, no workload container restarted, no node NotReady;
- a broken image (a tag no node has): its first node held by the bootstrap kubelet, the masters roll the
  DaemonSet back past spec.kubelet.rolloutDeadline, every node managed again; the longest NotReady time of
  any node printed and checked against the deadline, no workload container restarted;
- after each power cut of every node: the bootstrap kubelets bring the nodes back, the managed ones take
  over again."""

import json
import os
import re
import threading
import time

import scenario_workers
from node import lock_holder
from scenario import ScenarioError, wait_for

HOLDER = "protokube.io/kubelet-holder"
TAINT = "protokube.io/bootstrap-kubelet"
ROLLED_BACK = "protokube.io/rolled-back"
UPGRADE_FLAG = "--node-status-update-frequency=10s"  # the default's value: a change of the template only
BROKEN_IMAGE = "registry.k8s.io/kubelet:v1.20.2-no-such-build"
WORKLOAD = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
                         "tolerations": [{"operator": "Exists"}],
                         "containers": [{"name": "web", "image": "protokube.test/podnet:1",
                                         "imagePullPolicy": "Never", "command": ["/podnet", "serve", "8080"]}]}}}}


class ReadyWatch:
    """Every node's Ready condition sampled once a second in a thread of its own (bounded): the longest time
    each node was not Ready while it ran, from its first NotReady sample to its last one of a row, plus the
    sampling's second (a node seen NotReady once counts 1 s); every sample is kept, (time.monotonic(), Ready)
    by node in samples (the bench reads a node's NotReady around a moment of its own: bench/kubelet_upgrade.py)."""

    def __init__(self, sc, max_seconds=1800):
        self.sc, self.max_seconds = sc, max_seconds
        self.longest, self.down_since, self.samples = {}, {}, {}
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        t0 = time.monotonic()
        while not self.stop_event.wait(1) and time.monotonic() - t0 < self.max_seconds:
            nodes = self.sc.kubectl_json("get", "nodes")
            if nodes is None:
                continue
            now = time.monotonic()
            for n in nodes["items"]:
                name = n["metadata"]["name"]
                ready = any(c["type"] == "Ready" and c["status"] == "True"
                            for c in n.get("status", {}).get("conditions", []))
                self.samples.setdefault(name, []).append((now, ready))
                if ready:
                    self.down_since.pop(name, None)
                    continue
                since = self.down_since.setdefault(name, now)
                self.longest[name] = max(self.longest.get(name, 0.0), now - since + 1.0)

    def stop(self):
        self.stop_event.set()
        self.thread.join(timeout=30)
        return max(self.longest.values(), default=0.0), dict(self.longest)


class KubeletSteps:
    """Mixed into SelfHostedScenario: self.c (the cluster, with workers in self.workers), self.kubectl()."""
    workload_made = False  # the workload DaemonSet exists (step_workers_join): later steps check it runs

    # --- reading the cluster
    def kubectl_json(self, *args):
        p = self.kubectl(*args, "-o", "json")
        if p.returncode != 0:
            return None
        try:
            return json.loads(p.stdout)
        except ValueError:
            return None

    def kubectl_ok(self, *args):
        p = self.kubectl(*args)
        if p.returncode != 0:
            raise ScenarioError(f"kubectl {' '.join(args)}: {p.stderr.strip()}")
        return p.stdout

    def nodes(self):
        """{name: the kubelet lock file's host path} of every running node."""
        out = {m.name: os.path.join(m.kubelet_dir, "kubelet.lock") for m in self.c.masters.values()
               if m.protokube is not None}
        out.update({w.name: os.path.join(w.kubelet_dir, "kubelet.lock") for w in self.workers.values()})
        return out

    def kubelet_pods(self):
        """{node: the managed kubelet's pod} (the DaemonSet's)."""
        got = self.kubectl_json("get", "pods", "-n", "kube-system", "-l", "k8s-app=kubelet") or {"items": []}
        return {p["spec"].get("nodeName"): p for p in got["items"] if p["spec"].get("nodeName")}

    @staticmethod
    def pod_ready(pod):
        return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", []))

    def handed_off(self, names, check=None):
        """The nodes of names whose lock a process of their managed kubelet's pod holds (/proc/locks; check(pod):
        that pod's template too), whose Node says managed and has no bootstrap taint; None unless all."""
        locks, pods = self.nodes(), self.kubelet_pods()
        nodes = {n["metadata"]["name"]: n for n in (self.kubectl_json("get", "nodes") or {"items": []})["items"]}
        for name in names:
            pod, node = pods.get(name), nodes.get(name)
            if pod is None or node is None or not self.pod_ready(pod) or (check and not check(pod)):
                return None
            if lock_holder(locks[name])[1] != pod["metadata"]["uid"]:
                return None
            if node["metadata"].get("annotations", {}).get(HOLDER) != "managed" or \
                    any(t["key"] == TAINT for t in node["spec"].get("taints", []) or []):
                return None
        return sorted(names)

    def workload(self, strict=False):
        """{node: (container id, start time, restarts)} of the workload DaemonSet's running containers; strict:
        a failed read is an error, never "none running"."""
        got = self.kubectl_json("get", "pods", "-n", "default", "-l", "app=web")
        if got is None and strict:
            raise ScenarioError("kubectl get pods -l app=web failed: the workload's containers are not known")
        got = got or {"items": []}
        out = {}
        for p in got["items"]:
            for s in p.get("status", {}).get("containerStatuses", []):
                running = s.get("state", {}).get("running")
                if running:
                    out[p["spec"]["nodeName"]] = (s["containerID"], running["startedAt"], s.get("restartCount"))
        return out

    def same_workload(self, before, what):
        after = self.workload(strict=True)
        changed = {n: (before[n], after.get(n)) for n in before if after.get(n) != before[n]}
        if changed:
            raise ScenarioError(f"{what} restarted workload containers: {changed}")
        return len(after)

    # --- the steps
    def step_workers_join(self, names=("w1", "w2")):
        self.say(f"\n2b. Workers {' and '.join(names)} join; every node handed to its managed kubelet; a workload "
                 "on each")
        m = self.c.masters["a"]
        p = self.master_pk("token", "create", "--ttl", "2h", "--description", "make demo-selfhosted",
                           "--kubeconfig", m.at(os.path.join(m.pki, "protokube", "kubeconfig")))
        if p.returncode != 0:
            raise ScenarioError(f"protokube token create: {p.returncode}\n{p.stderr}")
        token = re.search(r"^token: ([a-z0-9]{6}\.[a-z0-9]{16})$", p.stdout, re.M).group(1)
        pin = re.search(r"^ca-pin: (sha256:[0-9a-f]{64})$", p.stdout, re.M).group(1)
        t = time.monotonic()
        for name in names:
            w = scenario_workers.Worker(self.c, name, token, pin)
            self.workers[name] = w
            w.start()
        self.tl.mark(f"{', '.join(names)} started (protokube run --role worker, then containerd and the bootstrap "
                     "kubelet)")
        every = sorted(self.nodes())
        wait_for("every node handed to its managed kubelet", self.alive(lambda: self.handed_off(every)), 900, 2)
        self.tl.mark(f"{', '.join(every)}: each held by its managed kubelet (a process of the DaemonSet's pod holds "
                     f"the lock; the Node says managed; no bootstrap taint), {time.monotonic() - t:.0f} s after "
                     "the workers started")
        for name in every:
            exits = self.node_of(name).kubelet_exits
            if not exits or any(status != 0 for _, status in exits):
                raise ScenarioError(f"{name}'s bootstrap kubelet exits (time, status): {exits}")
        self.tl.mark("every bootstrap kubelet gave way with status 0 when its managed kubelet took the lock")
        self.create(WORKLOAD)
        self.workload_made = True
        wait_for("the workload on every node", lambda: sorted(self.workload()) == every, 300, 2)
        self.tl.mark(f"workload DaemonSet default/web running on {', '.join(every)}")

    def node_of(self, name):
        return (self.c.masters[name] if name in self.c.masters else self.workers[name]).node

    def create(self, obj):
        p = self.kubectl("create", "-f", "-", stdin=json.dumps(obj))
        if p.returncode != 0:
            raise ScenarioError(f"kubectl create {obj['kind']} {obj['metadata']['name']}: {p.stderr.strip()}")

    def set_kubelet(self, patch):
        self.kubectl_ok("patch", "daemonset", "kubelet", "-n", "kube-system", "--type=json", "-p", json.dumps(patch))

    def step_kubelet_upgrade(self):
        """A flag added to the managed kubelet's args through the API: rolled node by node."""
        self.say("\n3d. A kubelet upgrade through the API (a flag in the kubelet DaemonSet's args), node by node")
        before, every = self.workload(strict=True), sorted(self.nodes())
        watch = ReadyWatch(self)
        self.start_api_probe()
        t = time.monotonic()
        self.set_kubelet([{"op": "add", "path": "/spec/template/spec/containers/0/args", "value": [UPGRADE_FLAG]}])
        rolled = {}

        def each_node():
            for name, pod in self.kubelet_pods().items():
                if name not in rolled and UPGRADE_FLAG in pod["spec"]["containers"][0].get("args", []) and \
                        self.handed_off([name], lambda p: UPGRADE_FLAG in p["spec"]["containers"][0].get("args", [])):
                    rolled[name] = time.monotonic() - t
            return len(rolled) == len(every)
        wait_for("the upgrade rolled on every node", self.alive(each_node), 1200, 1)
        self.stop_api_probe()
        longest, by_node = watch.stop()
        n = self.same_workload(before, "the kubelet upgrade")
        order = ", ".join(f"{k} +{v:.0f} s" for k, v in sorted(rolled.items(), key=lambda kv: kv[1]))
        self.kubelet_upgrade = dict(self.api, took=time.monotonic() - t, order=order, not_ready=longest)
        self.tl.mark(f"upgrade rolled one node at a time ({order}) in {self.kubelet_upgrade['took']:.0f} s; "
                     f"longest NotReady {longest:.0f} s (sampled each second) {self.rounded(by_node)}; {n} workload "
                     "containers unchanged; "
                     f"/readyz through api.internal every 50 ms: {self.api_text()}")

    def step_kubelet_rollback(self):
        """A kubelet image no node has: its first node stays with the bootstrap kubelet, the masters roll the
        DaemonSet back once no node progressed for spec.kubelet.rolloutDeadline."""
        deadline = self.rollout_deadline
        self.say(f"\n3e. A broken kubelet image through the API: rolled back past the {deadline} s deadline")
        before, every = self.workload(strict=True), sorted(self.nodes())
        good = self.kubectl_json("get", "daemonset", "kubelet", "-n", "kube-system")
        good_image = good["spec"]["template"]["spec"]["containers"][0]["image"]
        watch = ReadyWatch(self)
        t = time.monotonic()
        self.kubectl_ok("set", "image", "daemonset/kubelet", "-n", "kube-system", f"kubelet={BROKEN_IMAGE}")
        self.tl.mark(f"kubelet image set to {BROKEN_IMAGE}")

        def rolled_back():
            ds = self.kubectl_json("get", "daemonset", "kubelet", "-n", "kube-system") or {}
            note = ds.get("metadata", {}).get("annotations", {}).get(ROLLED_BACK)
            image = ds.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [{}])[0].get("image")
            return note if note and image == good_image else None
        note = wait_for("the masters' rollback", self.alive(rolled_back), deadline + 300, 2)
        took = time.monotonic() - t
        self.tl.mark(f"rolled back {took:.0f} s after the change: {note}")
        wait_for("every node held by its managed kubelet again",
                 self.alive(lambda: self.handed_off(every, lambda p: p["spec"]["containers"][0]["image"] == good_image)),
                 600, 2)
        longest, by_node = watch.stop()
        n = self.same_workload(before, "the broken image and its rollback")
        if longest > deadline:
            raise ScenarioError(f"a node was NotReady {longest:.0f} s, longer than the {deadline} s deadline: "
                                f"{self.rounded(by_node)}")
        self.kubelet_rollback = dict(took=took, back=time.monotonic() - t, not_ready=longest)
        self.tl.mark(f"every node managed again {self.kubelet_rollback['back']:.0f} s after the change; longest "
                     f"NotReady of any node {longest:.0f} s (sampled each second; deadline {deadline} s) "
                     f"{self.rounded(by_node)}; {n} workload containers unchanged")

    @staticmethod
    def rounded(by_node):
        """{node: seconds NotReady} of the nodes seen NotReady, for a line ("none" when no node was)."""
        return {k: round(v, 1) for k, v in sorted(by_node.items())} or "(no node seen NotReady)"

    def wait_handoff_after_boot(self, what):
        every = sorted(self.nodes())
        wait_for(f"every node handed to its managed kubelet {what}", self.alive(lambda: self.handed_off(every)),
                 900, 2)
        if self.workload_made:  # a run without workers (bench figure 11) has none to wait for
            wait_for(f"the workload running on every node {what}", lambda: sorted(self.workload()) == every, 300, 2)
        return every
