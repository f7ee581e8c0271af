#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Figure 15: etcd 3.4 -> 3.5 under the API probe (bench/README.md). Three real masters on etcd 3.4.13
(tests/e2e/scenario_etcd_upgrade.py, `make demo-etcd-upgrade`, without the demo's killed master): the spec
changed to 3.5.16 on every master at once, main and events upgraded member by member by the daemons alone;
two clients probe /readyz through api.internal every 50 ms meanwhile (the first-address client and the one that
moves on after 250 ms): failed probes, longest gap, and the upgrade's duration (spec changed -> every member
of both clusters runs 3.5.16 healthy). BENCH_UPGRADE_RUNS (3) runs, each a process of its own
(`upgrades.py --run`: the scenario moves the test network at import). Run alone: /usr/bin/python3
bench/upgrades.py"""
import io
import os

import common

RUNS = common.env_int("BENCH_UPGRADE_RUNS", 3)


def one_run():
    import scenario_etcd_upgrade as su  # noqa: E402 (tests/e2e, on the path after common.prepare_real_masters())

    buf = io.StringIO()
    s = su.UpgradeScenario(out=buf, keep_workdir=True)
    with common.scenario_kept_on_failure(s, buf, "protokube-bench-upgrade-"):
        s.step1_cold_start()
        s.step_upgrade(kill_b=False)
        u = s.figures["upgrade"]
        return {"took": u["took"], "first": {k: u[k] for k in ("probes", "failed", "longest gap")},
                "any": u["any"]}


def measure():
    common.prepare_real_masters()
    runs, errors = common.repeat_runs(
        RUNS, lambda: common.child_json(os.path.abspath(__file__), ["--run"], 3600))
    spread = common.spread
    rows = [("15. etcd 3.4 -> 3.5 (main and events, 6 members) under the probe: duration",
             spread([r["took"] for r in runs], lambda v: f"{v:.0f} s"), "report", "")]
    rows += common.probe_rows(runs)
    note = f"{len(runs)} of {RUNS} runs" + (f"; failed: {'; '.join(errors)}" if errors else "")
    return rows, note


if __name__ == "__main__":
    common.figure_main(measure, {("--run",): one_run})
