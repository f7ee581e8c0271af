#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Figure 16: the kubelet upgrade under the API probe, and a worker's handoff (bench/README.md,
docs/kubelet-handoff.md). Three real masters with selfHosted: true and the kubelet handoff
(tests/e2e/scenario_selfhosted.py, `make demo-selfhosted`), the cold start and the pivot, then one worker w1
joins with a token: its bootstrap kubelet (the init system's) hands the node to the managed kubelet DaemonSet.
Every Node's Ready condition is sampled each second meanwhile (tests/e2e/kubelets.py's ReadyWatch): the
worker's NotReady time from its bootstrap kubelet's exit (the managed kubelet opened the lock) to its Node Ready
again. Then the upgrade of `make demo-selfhosted` (a flag added to the kubelet DaemonSet's args, rolled node by
node) while two clients probe /readyz through api.internal every 50 ms (the first-address client and the one
that moves on after 250 ms): the duration (the change -> every node held by a managed kubelet of the new
template), failed probes, longest gap, and the longest NotReady of any node (sampled each second).
BENCH_KUBELET_RUNS (3) runs, each a process of its own (`kubelet_upgrade.py --run`: the scenario moves the test
network at import). Run alone: /usr/bin/python3 bench/kubelet_upgrade.py"""
import io
import os
import time

import common

RUNS = common.env_int("BENCH_KUBELET_RUNS", 3)
WORKER = "w1"


def handoff_not_ready(samples, exits):
    """The worker's NotReady at its handoff, from ReadyWatch's samples [(monotonic, Ready)] and its bootstrap
    kubelet's exits [(monotonic, status)]: h = the first exit with status 0 (the managed kubelet opened the
    lock); the NotReady samples from h to the first Ready one, counted as ReadyWatch counts (last - first + 1 s;
    none seen: 0); how long after h that Ready sample came (a NotReady shorter than the time to the first sample
    after h is not seen); whether the last sample before h was Ready (the bootstrap kubelet had made the Node
    Ready); None while no Ready sample follows h."""
    h = next((t for t, status in exits if status == 0), None)
    if h is None:
        raise RuntimeError(f"{WORKER}'s bootstrap kubelet never exited 0 (exits: {exits})")
    before = [ready for t, ready in samples if t < h]
    down = []
    for t, ready in samples:
        if t < h:
            continue
        if ready:
            return {"not ready": down[-1] - down[0] + 1.0 if down else 0.0, "ready after": t - h,
                    "first after": (down[0] if down else t) - h, "ready before": bool(before and before[-1])}
        down.append(t)
    return None


def one_run():
    import kubelets  # noqa: E402 (tests/e2e, on the path after common.prepare_real_masters())
    import scenario_selfhosted as sh  # noqa: E402
    from scenario import wait_for  # noqa: E402

    buf = io.StringIO()
    s = sh.SelfHostedScenario(out=buf, keep_workdir=True)
    with common.scenario_kept_on_failure(s, buf, "protokube-bench-kubelet-"):
        try:
            s.step1_cold_start()
            s.step_pivot()
            watch = kubelets.ReadyWatch(s)
            try:
                s.step_workers_join(names=(WORKER,))
                exits = s.workers[WORKER].node.kubelet_exits
                handoff = wait_for(f"{WORKER}'s Node sampled Ready after its handoff",
                                   lambda: handoff_not_ready(list(watch.samples.get(WORKER, [])), exits), 300, 1)
            finally:
                watch.stop()
            s.step_kubelet_upgrade()
            u = s.kubelet_upgrade
            res = {"took": u["took"], "order": u["order"], "not ready": u["not_ready"],
                   "first": {k: u[k] for k in ("probes", "failed", "longest gap")}, "any": u["any"],
                   "handoff": handoff}
        finally:
            errors = [e for w in s.workers.values() for e in w.stop()]
        if errors:
            raise RuntimeError(f"the workers' teardown: {errors}")
    return res


def measure():
    common.prepare_real_masters()
    t0 = time.monotonic()
    runs, errors = common.repeat_runs(
        RUNS, lambda: common.child_json(os.path.abspath(__file__), ["--run"], 3600))
    took = time.monotonic() - t0
    spread = common.spread

    def secs(v):
        return f"{v:.0f} s"
    rows = [("16. kubelet upgrade (flag in the kubelet DaemonSet) under the probe: duration",
             spread([r["took"] for r in runs], secs), "report", "a, b, c, w1 node by node"),
            ("   longest NotReady of any node", spread([r["not ready"] for r in runs], secs), "",
             "Ready sampled each second")]
    rows += common.probe_rows(runs)
    hs = [r["handoff"] for r in runs]
    ready_before = sum(1 for h in hs if h["ready before"])
    rows.append(("   worker handoff: NotReady", spread([h["not ready"] for h in hs], secs), "report",
                 f"w1's Ready sampled each second from its bootstrap kubelet's exit to Ready (first sample "
                 f"{common.median([h['first after'] for h in hs]):.1f} s after the exit); Ready before the exit in "
                 f"{ready_before} of {len(hs)} runs"))
    note = (f"{len(runs)} of {RUNS} runs, {took / 60:.0f} min; upgrade order: "
            + " | ".join(r["order"] for r in runs) + (f"; failed: {'; '.join(errors)}" if errors else ""))
    return rows, note


if __name__ == "__main__":
    common.figure_main(measure, {("--run",): one_run})
