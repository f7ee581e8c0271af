#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Figure 11: the pivot to the self-hosted control plane (bench/README.md, docs/pivot.md). Three real masters
(containerd + kubelet 1.20.2, as `make demo-selfhosted` runs them, tests/e2e/scenario_selfhosted.py imported)
with selfHosted: true: the cold start on static pods, then the daemons pivot by themselves; measured from the
API's first answer through api.internal to kube-system/protokube-pivot saying complete (every master's bootstrap
manifests retired), with the API probed through api.internal every 50 ms (failed probes, longest gap); the
same probes again from the first master's turn on (its leave-api-names in the logs): the window before it is
the cold start's tail. Then every
master loses power at once (protokube, kubelet, containerd and the containers SIGKILLed, mounts and runtime state
gone) and starts again: the time until the API answers again (the checkpoints) and until the self-hosted pods run
again on every master. Run alone: /usr/bin/python3 bench/pivot.py"""
import io

import common

RUNS = common.env_int("BENCH_PIVOT_RUNS", 3)


def one_run(selfhosted):
    buf = io.StringIO()
    s = selfhosted.SelfHostedScenario(out=buf, keep_workdir=True)
    with common.scenario_kept_on_failure(s, buf, "protokube-bench-pivot-"):
        s.step1_cold_start()
        s.step_pivot()
        s.step_configmap()  # the power cut's check reads it back
        s.step_power_cuts(times=1)
        back, settled, _ = s.reboots[0]  # (API back, self-hosted pods back, every node managed again)
        any_client = s.pivot["any"]
        turns = s.pivot.get("turns")
        if turns is None:
            raise RuntimeError("no master logged leave-api-names: the turns were not measured")
        return {"pivot": s.pivot["took"], "gap": s.pivot["longest gap"], "failed": s.pivot["failed"],
                "probes": s.pivot["probes"], "any gap": any_client["longest gap"], "any failed": any_client["failed"],
                "turns gap": turns["longest gap"], "turns failed": turns["failed"], "turns probes": turns["probes"],
                "turns any gap": turns["any"]["longest gap"], "back": back, "settled": settled}


def measure():
    common.prepare_real_masters()
    import scenario_selfhosted  # noqa: E402

    runs, errors = common.repeat_runs(RUNS, lambda: one_run(scenario_selfhosted))

    def med(k):
        return common.median([r[k] for r in runs])

    rows = [("11. pivot: the API's first answer -> every master self-hosted", f"{med('pivot'):.1f} s", "report", ""),
            ("    longest API gap during the pivot, client of the first address", common.fmt_ms(med("gap")), "<= 1 s",
             "met" if med("gap") <= 1.0 else "MISSED"),
            ("    failed probes / probes", f"{med('failed'):.0f} / {med('probes'):.0f}", "", ""),
            ("    the same, a client moving on after 250 ms", common.fmt_ms(med("any gap")), "<= 1 s",
             "met" if med("any gap") <= 1.0 else "MISSED"),
            ("    from the first master's turn on: longest gap, client of the first address",
             common.fmt_ms(med("turns gap")), "<= 1 s", "met" if med("turns gap") <= 1.0 else "MISSED"),
            ("    failed probes / probes", f"{med('turns failed'):.0f} / {med('turns probes'):.0f}", "", ""),
            ("    the same, a client moving on after 250 ms", common.fmt_ms(med("turns any gap")), "<= 1 s",
             "met" if med("turns any gap") <= 1.0 else "MISSED"),
            ("11. all masters power-cut at once -> API answers", f"{med('back'):.1f} s", "report", ""),
            ("    -> self-hosted pods run again on every master", f"{med('settled'):.1f} s", "report", "")]
    note = f"{len(runs)} of {RUNS} real-master runs (containerd + kubelet 1.20.2), one power cut each"
    if errors:
        note += "; failed: " + "; ".join(errors)
    return rows, note


if __name__ == "__main__":
    common.figure_main(measure)
