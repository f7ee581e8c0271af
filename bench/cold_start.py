#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Figure 12: cold start beside kubeadm (bench/README.md). The same simulated machines (a network namespace,
containerd and kubelet 1.20.2, the same images imported, no registry), once brought up by protokube and once by
kubeadm 1.20.2 built from the same source (tests/e2e/cluster_kubeadm.py), alternating which goes first:

  one master     first `protokube run` on a fresh master -> Node Ready, vs `kubeadm init` with its local etcd
  three masters  protokube's three daemons vs `kubeadm init --upload-certs` + two `kubeadm join --control-plane`

t0 is the first machine powering on (the test network and the DNS server are already there); containerd and the
image import are inside the window for both. Stages are seen from outside, polled while the run goes: etcd
healthy (etcdctl / etcd's /health every 0.1 s), apiserver ready (`kubectl get --raw /readyz` from a client host,
every 0.5 s), Node Ready (every 0.5 s); certificates from protokube's log and kubeadm's output. Run alone:
/usr/bin/python3 bench/cold_start.py"""
import io
import json
import time

import common

RUNS = common.env_int("BENCH_COLD_RUNS", 3)
TIMEOUT = 600  # each stage's watch; the slowest run seen took under 200 s for three masters


def nodes_ready(kubectl, names):
    """kubectl(*args) -> CompletedProcess; every node of names Ready."""
    p = kubectl("get", "nodes", "-o", "json")
    if p.returncode != 0:
        return False
    ready = {i["metadata"]["name"] for i in json.loads(p.stdout).get("items", [])
             if any(c["type"] == "Ready" and c["status"] == "True" for c in i["status"].get("conditions", []))}
    return set(names) <= ready


def first_time(masters, needle, last=False):
    """The wall time of the first (or, last=True, the latest per master, then the latest of those) log line
    containing needle across masters."""
    per = []
    for m in masters:
        ts = [common.log_time(ln) for ln in m.log_lines() if needle in ln.get("msg", "")]
        if ts:
            per.append(max(ts) if last else min(ts))
    if not per:
        return None
    return max(per) if last else min(per)


def protokube_run(names):
    """One cold start by protokube of the masters names; {stage: seconds after t0}."""
    import cluster  # noqa: E402 (tests/e2e, on the path after common.prepare_real_masters())
    import scenario  # noqa: E402
    from scenario_kubeadm import Watch  # noqa: E402

    buf = io.StringIO()
    c = cluster.Cluster(tag="pkc", real=True)
    s = scenario.Scenario(out=buf, keep_workdir=True, real=True, cluster=c)
    res = {}
    with common.scenario_kept_on_failure(s, buf, "protokube-bench-cold-"):
        c.setup(members=names)
        c.lab.add_host("probe", scenario.PROBE_ADDR)
        eps = scenario.endpoints("main", names, by="ip")
        t0m, t0 = time.monotonic(), time.time()
        watches = [Watch("etcd healthy", lambda: scenario.healthy(c, names[0], eps), 0.1, TIMEOUT),
                   Watch("apiserver ready", lambda: s.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok",
                         0.5, TIMEOUT),
                   Watch("Node Ready", lambda: nodes_ready(s.kubectl, names), 0.5, TIMEOUT)]
        def start():  # the machines power on together
            c.add_masters([(n, scenario.ADDRS[n], scenario.EXTERNAL[n], scenario.ZONES[n]) for n in names])
        res.update(common.watched(watches, start, t0m, TIMEOUT))
        masters = [c.masters[n] for n in names]
        for stage, needle in (("certificates", "Certificates: "), ("volumes mounted", "Mounted volume")):
            t = first_time(masters, needle, last=True)
            if t is not None:
                res[stage] = t - t0
    return res


def kubeadm_run(flow):
    """One cold start by kubeadm (tests/e2e/scenario_kubeadm.py's flow); {stage: seconds after t0}."""
    import scenario_kubeadm  # noqa: E402

    buf = io.StringIO()
    try:
        st = scenario_kubeadm.KubeadmScenario(out=buf).run(flow)
    except Exception as e:
        path = common.keep_console(buf, "protokube-bench-kubeadm-")
        raise RuntimeError(f"kubeadm {flow}: {e} (console: {path})") from e
    out = {"certificates": st.get("certificates"), "etcd healthy": st.get("etcd healthy"),
           "apiserver ready": st.get("apiserver ready")}
    if flow == "one":
        out["init exit"] = st["init exit"]
        out["Node Ready"] = st["Node Ready"]
    else:
        out["init exit"] = st["init exit (a)"]
        out["joins exit"] = st["join --control-plane exit (c)"]
        out["Node Ready"] = st["3 Nodes Ready"]
    return {k: v for k, v in out.items() if v is not None}


def pairs(names, flow):
    """RUNS pairs of runs, alternating which goes first; ([protokube results], [kubeadm results], errors)."""
    ours, theirs, errors = [], [], []
    for i in range(RUNS):
        order = [("protokube", lambda: protokube_run(names)), ("kubeadm", lambda: kubeadm_run(flow))]
        for who, fn in order if i % 2 == 0 else reversed(order):
            try:
                (ours if who == "protokube" else theirs).append(fn())
            except Exception as e:
                errors.append(f"{who} run {i + 1}: {e}")
    return ours, theirs, errors


def spread(runs, key):
    """'median (min-max)' in seconds of key over the runs that have it, or 'n/a'."""
    return common.spread([r.get(key) for r in runs], lambda v: f"{v:.1f} s")


def rows_of(label, ours, theirs, stages):
    med_ours = common.median([r["Node Ready"] for r in ours])
    med_theirs = common.median([r["Node Ready"] for r in theirs])
    ratio = f"time ratio {med_ours / med_theirs:.2f}" if med_ours and med_theirs else ""
    rows = [(f"12. {label}: protokube", spread(ours, "Node Ready"), "report", ratio),
            (f"12. {label}: kubeadm", spread(theirs, "Node Ready"), "report", "")]
    for st in stages:
        rows.append((f"   stage '{st}': protokube / kubeadm", f"{spread(ours, st)} / {spread(theirs, st)}", "", ""))
    return rows


def measure():
    common.prepare_real_masters()
    rows, notes = [], []
    for label, names, flow, stages in (
            ("cold start, one master -> Node Ready", ["a"], "one",
             ("certificates", "etcd healthy", "apiserver ready", "init exit")),
            ("cold start, three masters -> 3 Nodes Ready", ["a", "b", "c"], "three",
             ("certificates", "etcd healthy", "apiserver ready", "init exit", "joins exit"))):
        ours, theirs, errors = pairs(names, flow)
        if ours and theirs:
            rows += rows_of(label, ours, theirs, stages)
        else:
            rows.append((f"12. {label}", "ERROR", "", "; ".join(errors)[:120]))
        notes.append(f"{label}: {len(ours)} protokube and {len(theirs)} kubeadm runs of {RUNS}"
                     + (f"; failed: {'; '.join(errors)}" if errors else ""))
    return rows, "; ".join(notes)


if __name__ == "__main__":
    common.figure_main(measure)
