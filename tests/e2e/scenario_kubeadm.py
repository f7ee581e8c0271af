#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""kubeadm 1.20.2 on this machine (bench/README.md, "kubeadm beside protokube"): one master, cold.
The machine boots (t0: its NodeWorld), gets containerd and the images (prepare: inside the window, as figure
8 has it for protokube), then `kubeadm init` runs with its local etcd; the kubelet is started by kubeadm's own
`systemctl restart kubelet` through the harness's unit (tests/e2e/cluster_kubeadm.py). Timed from t0, each by
what shows it from outside, polled while kubeadm runs:

  certificates   kubeadm's `[kubeconfig] Using kubeconfig folder` line (its certs phase is over)
  etcd healthy   etcd's /health on 127.0.0.1:2381 in the node's namespace (the kubelet's probe), every 0.1 s
  apiserver      `kubectl get --raw /readyz` = ok from the probe host, with init's admin.conf, every 0.5 s
  init exit      kubeadm's exit (status 0), and kubeadm's own "All control plane components are healthy
                 after X seconds" (counted from its wait's start)
  Node Ready     `kubectl get nodes`: a Ready, every 0.5 s

The same harness brings up three masters (`three`: init with --upload-certs, two `join --control-plane`) and
joins a worker (`worker`: init first, untimed, then `join` with a token); bench/cold_start.py times each beside
protokube. It prints the stages and SUCCESS. Run as root: /usr/bin/python3 tests/e2e/scenario_kubeadm.py
[one|three|worker]. Everything it made is removed at the end, on failure too (the
logs are then copied to a directory it names first); what could not be removed fails the run."""

import os
import re
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_kubeadm  # noqa: E402
from cluster import in_parallel  # noqa: E402
from scenario import ScenarioError, Timeline  # noqa: E402
from scenario import main as scenario_main  # noqa: E402

INIT_TIMEOUT = 600  # kubeadm's own wait for the control plane is 4 min; the rest is bounded by it
READY_TIMEOUT = 180  # Node Ready after init's exit
# kubeadm init's output lines that mark its phases (cmd/kubeadm/app/cmd/init.go; printed with fmt.Printf, no time)
INIT_LINES = (("preflight passed", "[certs] Using certificateDir folder"),
              ("certificates", "[kubeconfig] Using kubeconfig folder"),
              ("kubelet started (kubeadm)", "[kubelet-start] Starting the kubelet"),
              ("manifests written", "[wait-control-plane] Waiting for the kubelet"),
              ("control plane healthy (kubeadm)", "[apiclient] All control plane components are healthy"),
              ("initialized", "Your Kubernetes control-plane has initialized successfully!"))


FLOWS = ("one", "three", "worker")
SUCCESS = {"one": "kubeadm init brought up one master on a simulated node (certificates, etcd, apiserver, Node Ready)",
           "three": "kubeadm init and two kubeadm join --control-plane brought up three masters",
           "worker": "kubeadm join brought a worker in with a token and the CA's pin"}


class Watch:
    """pred() polled in a thread of its own every interval s until it is true (that first time kept), stop(),
    or timeout s: a probe that runs while kubeadm does, so each stage gets its own time."""

    def __init__(self, name, pred, interval, timeout):
        self.name, self.pred, self.interval, self.timeout = name, pred, interval, timeout
        self.t, self.error = None, None
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.loop, name=f"watch-{name}", daemon=True)
        self.thread.start()

    def loop(self):
        deadline = time.monotonic() + self.timeout
        while not self.stop_event.is_set() and time.monotonic() < deadline:
            try:
                ok = self.pred()
            except Exception as e:  # a probe's own failure (a timeout): kept, the next poll may answer
                ok, self.error = False, f"{type(e).__name__}: {e}"
            if ok:
                self.t = time.monotonic()
                return
            self.stop_event.wait(self.interval)

    def stop(self):
        self.stop_event.set()
        self.thread.join(timeout=30)


class KubeadmScenario:
    def __init__(self, out=sys.stdout, flow="one"):
        self.out, self.flow = out, flow
        self.c = cluster_kubeadm.KubeadmCluster()
        self.tl = Timeline(out)
        self.stages = {}  # stage -> seconds after t0
        self.apiclient = None  # kubeadm's own "healthy after X seconds"
        self.watches = []

    def say(self, s):
        print(s, file=self.out, flush=True)

    def watch(self, name, pred, interval, timeout):
        w = Watch(name, pred, interval, timeout)
        self.watches.append(w)
        return w

    def finish(self, run, what, node, timeout=INIT_TIMEOUT):
        """Waits for a kubeadm run; its exit is the stage `what`; a failure raises with its tail and the
        kubelet's."""
        rc = run.wait(timeout)
        self.stages[what] = run.t_exit - self.tl.t0
        self.tl.mark(f"{what}: status {rc}")
        if rc != 0:
            raise ScenarioError(f"{what}: status {rc}:\n{run.tail(30)}\n--- kubelet:\n{node.tail('kubelet', 15)}")

    def boot(self, names):
        """t0: the machines power on together (the network and the DNS server are the room, not the
        machines), each booted and prepared (containerd, the images) in a thread of its own."""
        self.tl, self.stages = Timeline(self.out), {}
        nodes = {}
        for n in names:  # their hosts on the network first, one at a time (setup() adds those it names)
            if n not in self.c.lab.hosts:
                self.c.lab.add_host(n, cluster_kubeadm.ADDRS[n])
        in_parallel([lambda n=n: nodes.__setitem__(n, self.c.add_node(n)) for n in names])
        self.stages["containerd + images (prepare)"] = time.monotonic() - self.tl.t0
        self.tl.mark(f"machines {', '.join(names)} booted and prepared: containerd and "
                     f"{len(nodes[names[0]].images)} images each")
        return nodes

    def wait_watches(self, watches, timeout):
        for w in watches:
            w.thread.join(timeout=timeout)
            w.stop()
            if w.t is None:
                raise ScenarioError(f"{w.name}: never seen (last probe error: {w.error})")
            self.stages[w.name] = w.t - self.tl.t0

    def init_lines(self, run):
        for stage, needle in INIT_LINES:
            t, line = run.first(needle)
            if t is None:
                raise ScenarioError(f"kubeadm init printed no line with {needle!r}:\n{run.tail(30)}")
            self.stages[stage] = t - self.tl.t0
            m = re.search(r"healthy after ([0-9.]+) seconds", line)
            if m:
                self.apiclient = float(m.group(1))

    def one_master(self):
        """Cold start of one master: t0 = the machine boots; prepare; kubeadm init; Node Ready."""
        self.say("\nkubeadm: one master, cold (kubeadm init with its local etcd)")
        c = self.c
        c.setup(hosts=("a",))
        node = self.boot(["a"])["a"]
        etcd = self.watch("etcd healthy", lambda: c.etcd_local_health("a"), 0.1, INIT_TIMEOUT)
        api = self.watch("apiserver ready", c.api_ready, 0.5, INIT_TIMEOUT)
        ready = self.watch("Node Ready", lambda: c.nodes_ready(["a"]), 0.5, INIT_TIMEOUT + READY_TIMEOUT)
        run = c.init(node)
        self.tl.mark("kubeadm init started")
        self.finish(run, "init exit", node)
        self.init_lines(run)
        if not node.kubelet_starts:
            raise ScenarioError("kubeadm never started the kubelet through the unit (systemctl shim)")
        self.stages["kubelet started (unit)"] = node.kubelet_starts[0] - self.tl.t0
        self.wait_watches((etcd, api, ready), READY_TIMEOUT + 30)
        self.tl.mark("node a Ready")
        if not c.etcd_health("a", ["a"]):
            raise ScenarioError("etcdctl endpoint health with kubeadm's apiserver-etcd-client pair failed")
        self.tl.mark("etcd healthy through its TLS client port (etcdctl, kubeadm's apiserver-etcd-client pair)")
        self.kubelet_restarts(node)

    def three_masters(self):
        """Cold start of three masters: the three machines boot and are prepared; `kubeadm init` on a with the
        control-plane endpoint (round-robin DNS) and --upload-certs, then `kubeadm join --control-plane` on b
        and c, one after the other (kubeadm adds one etcd member at a time); three Nodes Ready."""
        self.say("\nkubeadm: three masters, cold (kubeadm init, two kubeadm join --control-plane)")
        c = self.c
        c.setup(hosts=("a", "b", "c"))
        nodes = self.boot(["a", "b", "c"])
        etcd = self.watch("etcd healthy", lambda: c.etcd_local_health("a"), 0.1, INIT_TIMEOUT)
        api = self.watch("apiserver ready", c.api_ready, 0.5, INIT_TIMEOUT)
        ready = self.watch("3 Nodes Ready", lambda: c.nodes_ready(["a", "b", "c"]), 0.5, 3 * INIT_TIMEOUT)
        run = c.init(nodes["a"], endpoint=True, upload_certs=True)
        self.tl.mark("kubeadm init started on a")
        self.finish(run, "init exit (a)", nodes["a"])
        self.init_lines(run)
        for n in "bc":
            run = c.join(nodes[n], control_plane=True)
            self.finish(run, f"join --control-plane exit ({n})", nodes[n])
        self.wait_watches((etcd, api, ready), READY_TIMEOUT + 30)
        self.tl.mark("nodes a, b, c Ready")
        if not c.etcd_health("a", ["a", "b", "c"]):
            raise ScenarioError("etcdctl endpoint health of the three members failed")
        self.tl.mark("etcd: three healthy members")
        for node in nodes.values():
            self.kubelet_restarts(node)

    def worker_join(self):
        """A worker joins: a master from kubeadm init first (not timed); t0 = the worker boots; prepare;
        `kubeadm join` with the token and the CA pin; the worker's Node Ready."""
        self.say("\nkubeadm: a worker joins (kubeadm join with a token)")
        c = self.c
        c.setup(hosts=("a", "w1"))
        a = c.add_node("a")
        self.finish(c.init(a), "init exit (a, before t0)", a)
        master = self.watch("master Ready", lambda: c.nodes_ready(["a"]), 0.5, READY_TIMEOUT)
        self.wait_watches((master,), READY_TIMEOUT + 30)
        w1 = self.boot(["w1"])["w1"]
        ready = self.watch("Node Ready (w1)", lambda: c.nodes_ready(["w1"]), 0.5, INIT_TIMEOUT)
        self.finish(c.join(w1), "join exit (w1)", w1)
        if not w1.kubelet_starts:
            raise ScenarioError("kubeadm join never started the kubelet through the unit (systemctl shim)")
        self.stages["kubelet started (w1)"] = w1.kubelet_starts[0] - self.tl.t0
        self.wait_watches((ready,), READY_TIMEOUT + 30)
        self.tl.mark("node w1 Ready")
        self.kubelet_restarts(w1)

    def kubelet_restarts(self, node):
        if node.kubelet_exits:
            self.say(f"  (the kubelet of {node.name} exited {len(node.kubelet_exits)} time(s) and was restarted "
                     f"by the unit: {node.kubelet_exits})")

    def report(self):
        self.say("\nStages (seconds after the machines boot):")
        for stage, t in sorted(self.stages.items(), key=lambda kv: kv[1]):
            self.say(f"  {t:7.2f} s  {stage}")
        if self.apiclient is not None:
            self.say(f"  kubeadm's own figure: control plane healthy {self.apiclient:.2f} s after its wait began")
        if self.c.ignored:
            self.say(f"  preflight errors ignored: {', '.join(self.c.ignored)}")

    def run(self, flow=None):
        flow = flow or self.flow
        ok = False
        logs = None
        try:
            {"one": self.one_master, "three": self.three_masters, "worker": self.worker_join}[flow]()
            ok = True
        finally:
            for w in self.watches:
                w.stop()
            if not ok:
                logs = tempfile.mkdtemp(prefix="protokube-kubeadm-logs-")
            self.say("\ncleaning up (processes by PID, mounts, namespaces, /etc/kubernetes mount point) ...")
            errors = self.c.close(logs_to=logs)
            if logs:
                self.say(f"logs kept in {logs}")
            self.say("teardown: " + ("clean" if not errors else "; ".join(errors)))
            self.say("\nTimeline:\n" + self.tl.table())
            self.report()
        if errors:
            raise ScenarioError(f"teardown left: {errors}")
        self.say(f"\nSUCCESS: {SUCCESS[flow]}, the kubelets started through the systemctl shim, and everything "
                 "was removed.")
        return self.stages


def main():
    flow = sys.argv[1] if len(sys.argv) > 1 else "one"
    if flow not in FLOWS or len(sys.argv) > 2:
        print(f"usage: {sys.argv[0]} [{'|'.join(FLOWS)}]", file=sys.stderr)
        return 2
    # the harness's own failures (a process that did not start, a wait that timed out) are failed steps too
    return scenario_main(lambda: KubeadmScenario(flow=flow), failures=(ScenarioError, TimeoutError, RuntimeError))


if __name__ == "__main__":
    sys.exit(main())
