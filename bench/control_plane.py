#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Figure 8: the real control plane (bench/README.md). Three real masters (containerd + kubelet 1.20.2 and the
control-plane images, tests/k8s/node.py, as `make demo` runs them): the cold start — first `protokube run` on
three fresh masters until `kubectl get nodes` lists three Ready masters — with its stages, then the API's
availability while master b is terminated and d takes over its volumes (probes of /readyz through
api.internal every 50 ms: failed probes, longest gap). Each run is steps 1 and 2 of tests/e2e/scenario.py in
real mode (imported), on a network tag of its own. Run alone: /usr/bin/python3 bench/control_plane.py"""
import io
import time

import common
from cold_start import first_time, nodes_ready

RUNS = common.env_int("BENCH_CP_RUNS", 3)
STAGES = ("certificates", "volumes mounted", "etcd healthy", "apiserver ready", "3 nodes Ready")


def one_run(scenario, cluster):
    buf = io.StringIO()
    s = scenario.Scenario(out=buf, keep_workdir=True, real=True, cluster=cluster.Cluster(tag="pkr", real=True))
    res = {}
    with common.scenario_kept_on_failure(s, buf, "protokube-bench-cp-"):
        s.c.setup()  # the pool and the DNS server: the clock starts when the first master does
        t0 = time.time()
        s.c.setup = lambda: None  # step 1 would set up again
        s.step1_cold_start()
        scenario.wait_for("three Ready nodes", lambda: nodes_ready(s.kubectl, "abc"), 240, 1)
        res["3 nodes Ready"] = time.time() - t0
        masters = [s.c.masters[n] for n in "abc"]
        for stage, needle, last in (("certificates", "Certificates: ", True),
                                    ("volumes mounted", "Mounted volume", True)):
            t = first_time(masters, needle, last)
            if t is not None:
                res[stage] = t - t0
        for t, what in s.tl.rows:
            if what.startswith("etcd events: 3 healthy"):
                res["etcd healthy"] = s.tl.t0 + t - time.monotonic() + time.time() - t0
            if what.startswith("API ready through"):
                res["apiserver ready"] = s.tl.t0 + t - time.monotonic() + time.time() - t0
        s.step2_replace_b()
        res.update({"probes": s.api["probes"], "failed": s.api["failed"], "gap": s.api["longest gap"],
                    "any failed": s.api["any"]["failed"], "any probes": s.api["any"]["probes"],
                    "any gap": s.api["any"]["longest gap"]})
        res["failover"] = dict(s.failover)
        return res


def failover_rows(fos):
    """The failover with three real control planes: release -> etcd-b healthy on d (the scenario's own figure)
    and its stages: protokube's (claim to manifest) from d's log, then the kubelet's and etcd's."""
    total = common.median([f["total"] for f in fos])
    ours = common.median([f.get("manifest") for f in fos])
    rows = [("8. failover, 3 real control planes: release -> etcd-b healthy on d", common.fmt_ms(total),
             "<= 2 s", "met" if total <= 2.0 else "MISSED"),
            ("   of which protokube's: release -> etcd manifest written on d", common.fmt_ms(ours), "", "")]
    stages = sorted({k for f in fos for k in f if k != "total"},
                    key=lambda k: common.median([f.get(k) for f in fos]) or 0)
    for st in stages:
        rows.append((f"   stage '{st}' done at (after release)",
                     common.spread([f.get(st) for f in fos], common.fmt_ms), "", ""))
    return rows


def measure():
    common.prepare_real_masters()
    import cluster  # noqa: E402
    import scenario  # noqa: E402

    runs, errors = common.repeat_runs(RUNS, lambda: one_run(scenario, cluster))
    def med(k):
        return common.median([r[k] for r in runs])

    cold = med("3 nodes Ready")
    rows = [("8. API across a master replacement: longest gap, client of the first address",
             common.fmt_ms(med("gap")), "<= 1 s", "met" if med("gap") <= 1.0 else "MISSED"),
            ("   failed probes / probes", f"{med('failed'):.0f} / {med('probes'):.0f}", "", ""),
            ("8. the same, a client moving on to the next address after 250 ms", common.fmt_ms(med("any gap")),
             "<= 1 s", "met" if med("any gap") <= 1.0 else "MISSED"),
            ("   failed probes / probes", f"{med('any failed'):.0f} / {med('any probes'):.0f}", "", ""),
            ("8. cold start: first run on 3 masters -> 3 Ready nodes", f"{cold:.1f} s", "report", "")]
    rows += failover_rows([r["failover"] for r in runs])
    for st in STAGES[:-1]:
        vals = [r[st] for r in runs if st in r]
        rows.append((f"   stage '{st}' done at", "n/a" if not vals else f"{common.median(vals):.1f} s", "",
                     "" if len(vals) == len(runs) else f"in {len(vals)}/{len(runs)} runs"))
    note = f"{len(runs)} of {RUNS} real-master runs (containerd + kubelet 1.20.2)"
    if errors:
        note += "; failed: " + "; ".join(errors)
    return rows, note


if __name__ == "__main__":
    common.figure_main(measure)
