#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Figure 13: a worker joins, beside kubeadm (bench/README.md). One master is brought up first and not timed
(protokube's on the network of tests/e2e/scenario_workers.py, kubeadm's by `kubeadm init`); then t0 = the
worker machine powers on: protokube: `protokube run --role worker` with a bootstrap token and the CA's pin (its
first pass writes the kubelet's files; containerd and the kubelet start from them; the masters' protokube
approve and sign its CSRs); kubeadm: containerd and the images, then `kubeadm join` with a token and the CA's
pin. End: the worker's Node Ready (`kubectl get node`, every 0.5 s). BENCH_JOIN_RUNS (3) pairs, alternating
which goes first. Each protokube run is a process of its own (`worker_join.py --protokube-run`), since
scenario_workers.py moves the test network at import. Run alone: /usr/bin/python3 bench/worker_join.py"""
import io
import os
import re
import time

import common

RUNS = common.env_int("BENCH_JOIN_RUNS", 3)
TIMEOUT = 300  # each wait; a worker was Ready within 60 s in every run seen


def protokube_run():
    """One master (untimed), then one worker joins; {stage: seconds after the worker powered on}."""
    import scenario_workers as sw  # noqa: E402 (tests/e2e: on the path after common.prepare_real_masters())
    from scenario import EXTERNAL, ZONES, wait_for  # noqa: E402

    buf = io.StringIO()
    s = sw.WorkersScenario(out=buf)
    c = s.c
    with common.scenario_kept_on_failure(s, buf, "protokube-bench-join-"):
        c.setup(members=("a",))
        c.add_master("a", sw.ADDRS["a"], EXTERNAL["a"], ZONES["a"])
        c.lab.add_host("probe", sw.scenario.PROBE_ADDR)
        wait_for("the API ready", lambda: s.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok", TIMEOUT, 1)
        wait_for("master a Ready", lambda: s.node_ready("a"), TIMEOUT, 1)
        p = s.master_pk("token", "create", "--ttl", "1h", "--description", "bench worker join",
                        "--kubeconfig", os.path.join(c.masters["a"].pki, "protokube", "kubeconfig"))
        if p.returncode != 0:
            raise RuntimeError(f"protokube token create: {p.returncode}\n{p.stderr}")
        s.token = re.search(r"^token: ([a-z0-9]{6}\.[a-z0-9]{16})$", p.stdout, re.M).group(1)
        s.pin = re.search(r"^ca-pin: (sha256:[0-9a-f]{64})$", p.stdout, re.M).group(1)
        t0 = time.monotonic()
        w = s.join("w1")  # returns once the kubelet is started from protokube's files
        res = {"kubelet started": time.monotonic() - t0}
        wait_for("node w1 Ready", s.alive(lambda: s.node_ready("w1")), TIMEOUT, 0.5)
        res["Node Ready"] = time.monotonic() - t0
        tm = w.node.timings  # the harness's share: containerd started, the images imported (no registry)
        res["containerd + images"] = tm.get("containerd", 0) + tm.get("image build", 0) + tm.get("image import", 0)
        w.stop()
    return res


def kubeadm_run():
    import scenario_kubeadm  # noqa: E402

    buf = io.StringIO()
    try:
        st = scenario_kubeadm.KubeadmScenario(out=buf).run("worker")
    except Exception as e:
        path = common.keep_console(buf, "protokube-bench-kubeadm-")
        raise RuntimeError(f"kubeadm worker: {e} (console: {path})") from e
    return {"kubelet started": st.get("kubelet started (w1)"), "join exit": st["join exit (w1)"],
            "Node Ready": st["Node Ready (w1)"], "containerd + images": st["containerd + images (prepare)"]}


def protokube_in_process():
    """protokube_run() in a child process (its import moves the network constants); its result."""
    return common.child_json(os.path.abspath(__file__), ["--protokube-run"], 3 * TIMEOUT + 300)


def measure():
    common.prepare_real_masters()
    from cold_start import spread  # noqa: E402

    ours, theirs, errors = [], [], []
    for i in range(RUNS):
        order = [("protokube", protokube_in_process), ("kubeadm", kubeadm_run)]
        for who, fn in order if i % 2 == 0 else reversed(order):
            try:
                (ours if who == "protokube" else theirs).append(fn())
            except Exception as e:
                errors.append(f"{who} run {i + 1}: {e}")
    note = f"{len(ours)} protokube and {len(theirs)} kubeadm runs of {RUNS}" + (
        f"; failed: {'; '.join(errors)}" if errors else "")
    if not ours or not theirs:
        return [("13. worker join", "ERROR", "", "; ".join(errors)[:120])], note
    a = common.median([r["Node Ready"] for r in ours])
    b = common.median([r["Node Ready"] for r in theirs])
    rows = [("13. worker join -> Node Ready: protokube", spread(ours, "Node Ready"), "report",
             f"time ratio {a / b:.2f}"),
            ("13. worker join -> Node Ready: kubeadm join", spread(theirs, "Node Ready"), "report", ""),
            ("   stage 'kubelet started': protokube / kubeadm",
             f"{spread(ours, 'kubelet started')} / {spread(theirs, 'kubelet started')}", "", ""),
            ("   of which containerd + image import (the harness's): protokube / kubeadm",
             f"{spread(ours, 'containerd + images')} / {spread(theirs, 'containerd + images')}", "", ""),
            ("   kubeadm join's exit", spread(theirs, "join exit"), "", "")]
    return rows, note


if __name__ == "__main__":
    common.figure_main(measure, {("--protokube-run",): protokube_run})
