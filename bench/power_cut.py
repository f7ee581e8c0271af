#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Figure 14: every master power-cut at once (bench/README.md): three real masters (containerd + kubelet
1.20.2 each), brought up once per kind of control plane, then cut BENCH_POWER_CUTS (3) times in a row:

  static       protokube's static pods (tests/e2e/scenario.py's cold start)
  self-hosted  protokube after the pivot (tests/e2e/scenario_selfhosted.py): the API comes back through each
               daemon's checkpoint, then the DaemonSets' pods replace it
  kubeadm      kubeadm 1.20.2's static pods: `kubeadm init` + two `kubeadm join --control-plane`
               (tests/e2e/cluster_kubeadm.py)

A cut: every process of every master SIGKILLed at once (protokube, kubelet, containerd, containers and shims),
what a reboot clears cleared; then each machine starts again as its init system would start it (protokube,
containerd, the kubelet; kubeadm's kubelet unit), the three machines at once. From the cut: the API answering `/readyz` through the
cluster's name (every 0.5 s), and every control-plane pod Ready again, seen in the API: on each master an etcd,
kube-apiserver, kube-controller-manager and kube-scheduler pod Ready whose containers all started after the cut
(a pod's status from before the cut does not count; self-hosted: the DaemonSets' pods, not the checkpoint's).
Each kind runs in a process of its own (`power_cut.py --run KIND` prints one JSON line): the scenarios move
the test network at import. Run alone: /usr/bin/python3 bench/power_cut.py"""
import calendar
import io
import json
import os
import sys
import tempfile
import threading
import time

import common

CUTS = common.env_int("BENCH_POWER_CUTS", 3)
KINDS = ("static", "self-hosted", "kubeadm")
TIMEOUT = 900  # each wait after a cut: the slowest cut seen brought every pod back in under 120 s
MASTERS = ("a", "b", "c")
PODS_OF = "pods Ready: "  # the stage of one component's pods, Ready on every master
# self-hosted: every component on every master Ready again, in the checkpoint's pod or the self-hosted one
SERVING = "control plane serving (checkpoint or self-hosted pods)"
# per kind: the control-plane components, each (name of its pods before the node's name or a hash, how the
# pod must be made: by the kubelet from a manifest (a mirror pod) or by a controller)
COMPONENTS = {
    "static": [("etcd-server", "mirror"), ("etcd-server-events", "mirror"), ("kube-apiserver", "mirror"),
               ("kube-controller-manager", "mirror"), ("kube-scheduler", "mirror")],
    "self-hosted": [("etcd-server", "mirror"), ("etcd-server-events", "mirror"), ("kube-apiserver", "owned"),
                    ("kube-controller-manager", "owned"), ("kube-scheduler", "owned")],
    "kubeadm": [("etcd", "mirror"), ("kube-apiserver", "mirror"), ("kube-controller-manager", "mirror"),
                ("kube-scheduler", "mirror")],
}


def rfc3339(t):
    return calendar.timegm(time.strptime(t[:19], "%Y-%m-%dT%H:%M:%S"))


def component_of(pod, components):
    """(component, how) of a kube-system pod by its name (the longest prefix: etcd-server-events before
    etcd-server), or None."""
    name = pod["metadata"]["name"]
    best = None
    for comp, how in components:
        if name.startswith(comp + "-") and (best is None or len(comp) > len(best[0])):
            best = (comp, how)
    return best


def fresh_ready(pods, components, nodes, since, checkpoint_counts=False):
    """The (component, node) pairs that have a pod made the component's way (or, with checkpoint_counts, the
    mirror pod of protokube's checkpoint for it: <component>-checkpoint-<node>), Ready, every container running
    since `since` (seconds since the epoch; the API's times have whole seconds: one second of slack)."""
    have = set()
    for pod in pods:
        md, st, node = pod["metadata"], pod.get("status", {}), pod["spec"].get("nodeName")
        hit = component_of(pod, components)
        if hit is None or node not in nodes:
            continue
        comp, how = hit
        mirror = "kubernetes.io/config.mirror" in md.get("annotations", {})
        owned = any(o.get("controller") for o in md.get("ownerReferences", []))
        checkpoint = mirror and md["name"] == f"{comp}-checkpoint-{node}"
        if ((how == "mirror" and not mirror) or (how == "owned" and not owned)) and not (
                checkpoint_counts and checkpoint):
            continue
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in st.get("conditions", []))
        cs = st.get("containerStatuses", [])
        fresh = cs and all(c.get("ready") and rfc3339(c.get("state", {}).get("running", {}).get(
            "startedAt", "1970-01-01T00:00:00Z")) >= since - 1 for c in cs)
        if ready and fresh:
            have.add((comp, node))
    return have


def pods_ready_watch(pods, components, since, t0, checkpoint_counts=False):
    """The predicate "every control-plane pod Ready since the cut", and {(component, node): seconds from t0
    when it was first seen so} that it fills in: which component came last, and when."""
    want, seen = {(comp, n) for comp, _ in components for n in MASTERS}, {}

    def check():
        have = fresh_ready(pods(), components, MASTERS, since, checkpoint_counts)
        now = time.monotonic() - t0
        for pair in have:
            seen.setdefault(pair, now)
        return have >= want
    return check, seen


def pods_of(kubectl):
    p = kubectl("get", "pods", "-n", "kube-system", "-o", "json")
    return json.loads(p.stdout)["items"] if p.returncode == 0 else []


def shared_listing(fetch, max_age=0.25):
    """fetch(), at most once per max_age seconds: the watches that poll together (in threads of their own)
    read one listing instead of one each."""
    lock, last = threading.Lock(), {"at": None, "value": None}

    def get():
        with lock:
            now = time.monotonic()
            if last["at"] is None or now - last["at"] >= max_age:
                last.update(at=now, value=fetch())
            return last["value"]
    return get


def timed_cuts(kind, cut, start, kubectl, etcd_ok, log_stages=lambda since: {}):
    """CUTS cuts in a row: cut() kills every master, start() starts them again; [{stage: seconds}] from each
    cut: etcd healthy (etcd_ok(), every 0.2 s), the API answering, every control-plane pod Ready again; and
    when start() returned (the harness's share: containerd and the image import on each machine, in turn);
    log_stages(since) adds stages read from the daemons' logs."""
    from scenario_kubeadm import Watch  # noqa: E402

    out = []
    for i in range(CUTS):
        since, t = time.time(), time.monotonic()
        cut()
        pods = shared_listing(lambda: pods_of(kubectl))
        pods_ready, seen = pods_ready_watch(pods, COMPONENTS[kind], since, t)
        watches = [Watch("etcd healthy", etcd_ok, 0.2, TIMEOUT),
                   Watch("API answers", lambda: kubectl("get", "--raw", "/readyz").stdout.strip() == "ok", 0.5,
                         TIMEOUT),
                   Watch("control-plane pods Ready", pods_ready, 0.5, TIMEOUT)]
        if kind == "self-hosted":
            serving, _ = pods_ready_watch(pods, COMPONENTS[kind], since, t, checkpoint_counts=True)
            watches.append(Watch(SERVING, serving, 0.5, TIMEOUT))
        res = {}

        def act():
            start()
            res["machines started"] = time.monotonic() - t
        try:
            res.update(common.watched(watches, act, t, TIMEOUT))
        except RuntimeError as e:
            raise RuntimeError(f"cut {i + 1}: {e}") from e
        res.update(log_stages(since))
        for comp, _ in COMPONENTS[kind]:  # each component's last master
            res[f"{PODS_OF}{comp}"] = max(seen[(comp, n)] for n in MASTERS)
        out.append(res)
    return out


def protokube_cuts(kind):
    """Three protokube masters of kind (static, self-hosted), cold start (and pivot), then the cuts."""
    import scenario  # noqa: E402 (tests/e2e, on the path after common.prepare_real_masters())
    from cluster import in_parallel  # noqa: E402

    buf = io.StringIO()
    if kind == "static":
        import cluster  # noqa: E402
        s = scenario.Scenario(out=buf, keep_workdir=True, real=True, cluster=cluster.Cluster(tag="pkpc", real=True))
    else:
        import scenario_selfhosted  # noqa: E402
        s = scenario_selfhosted.SelfHostedScenario(out=buf, keep_workdir=True)
    with common.scenario_kept_on_failure(s, buf, f"protokube-bench-cut-{kind}-"):
        s.step1_cold_start()
        if kind == "self-hosted":
            s.step_pivot()
        ms = [s.c.masters[n] for n in MASTERS]

        def cut():
            errors = [e for m in ms for e in m.power_cut()]
            if errors:
                raise RuntimeError(f"power cut: {errors}")

        def start():
            in_parallel([lambda m=m: m.start(m.port) for m in ms], TIMEOUT)
        def log_stages(since):
            """The last volume mounted, of any master, after the cut (the etcd manifests on the volumes are
            there from before: nothing is written)."""
            ts = [common.log_time(ln) for m in ms for ln in m.log_lines()
                  if ln.get("msg", "").startswith("Mounted volume")]
            ts = [x for x in ts if x >= since]
            return {"volumes mounted": max(ts) - since} if ts else {}
        eps = scenario.endpoints("main", MASTERS, by="ip")
        return timed_cuts(kind, cut, start, s.kubectl, lambda: scenario.healthy(s.c, "a", eps), log_stages)


def kubeadm_cuts():
    """kubeadm's three masters (scenario_kubeadm.py's `three`), then the cuts."""
    import scenario_kubeadm  # noqa: E402
    from cluster import in_parallel  # noqa: E402

    sc = scenario_kubeadm.KubeadmScenario(out=io.StringIO())
    c = sc.c
    ok = False
    try:
        sc.three_masters()

        def cut():
            errors = [e for n in MASTERS for e in c.power_cut(n)]
            if errors:
                raise RuntimeError(f"power cut: {errors}")

        def start():
            in_parallel([lambda n=n: c.reboot(n) for n in MASTERS], TIMEOUT)
        res = timed_cuts("kubeadm", cut, start, c.kubectl, lambda: c.etcd_health("a", MASTERS))
        ok = True
        return res
    finally:
        for w in sc.watches:
            w.stop()
        logs = None if ok else tempfile.mkdtemp(prefix="protokube-bench-cut-kubeadm-")
        errors = c.close(logs_to=logs)
        if logs:
            print(f"kubeadm's logs kept in {logs}: {sc.out.getvalue()[-2000:]}", file=sys.stderr)
        if errors and ok:
            raise RuntimeError(f"kubeadm teardown left: {errors}")


def run_kind(kind):
    """One kind's cuts in a child process; its [{stage: seconds}]."""
    return common.child_json(os.path.abspath(__file__), ["--run", kind], CUTS * 2 * TIMEOUT + 1800)


def measure():
    common.prepare_real_masters()
    from cold_start import spread  # noqa: E402

    res, errors = {}, []
    for kind in KINDS:
        try:
            res[kind] = run_kind(kind)
        except Exception as e:
            errors.append(f"{kind}: {e}")
    rows = []
    for stage in ("machines started", "volumes mounted", "etcd healthy", "API answers", SERVING,
                  "control-plane pods Ready"):
        for kind in KINDS:
            if kind in res and any(stage in r for r in res[kind]):
                rows.append((f"14. power cut of every master -> {stage}: {kind}", spread(res[kind], stage),
                             "", ""))
    for kind in KINDS:
        for comp, _ in COMPONENTS.get(kind, []):
            if kind in res and all(PODS_OF + comp in r for r in res[kind]):
                rows.append((f"   {kind}: {comp} Ready on every master", spread(res[kind], PODS_OF + comp), "", ""))
    if "static" in res and "self-hosted" in res:
        # the static pods' own stage stands for both of the self-hosted ones
        for ours, label in (("API answers", "API answers"), (SERVING, "control plane serving"),
                            ("control-plane pods Ready", "self-hosted pods Ready (checkpoint retired)")):
            a = common.median([r.get(ours) for r in res["self-hosted"]])
            b = common.median([r[ours if ours != SERVING else "control-plane pods Ready"] for r in res["static"]])
            if a and b:
                rows.append((f"   self-hosted / static, {label}", f"{a / b:.2f}", "<= 1.10",
                             "met" if a <= 1.10 * b else "MISSED"))
    if not rows:
        rows.append(("14. power cut of every master", "ERROR", "", "; ".join(errors)[:120]))
    note = f"{CUTS} cuts in a row per kind; " + ", ".join(f"{k}: {len(v)} cuts" for k, v in res.items()) + (
        f"; failed: {'; '.join(errors)}" if errors else "")
    return rows, note


def one_kind(kind):
    """A child's cuts (`power_cut.py --run KIND`)."""
    return kubeadm_cuts() if kind == "kubeadm" else protokube_cuts(kind)


if __name__ == "__main__":
    common.figure_main(measure, {("--run", kind): lambda kind=kind: one_kind(kind) for kind in KINDS})
