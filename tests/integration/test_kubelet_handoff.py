# SPDX-License-Identifier: Apache-2.0
"""The kubelet handoff on one real master (docs/kubelet-handoff.md): spec.kubelet.selfHosted, the bootstrap
kubelet started from protokube's kubelet.env with --lock-file and --exit-on-lock-contention and restarted
whenever it exits (the unit's Restart=always, played by tests/k8s/node.py), the managed kubelet's ConfigMap
and DaemonSet from `protokube render --self-hosted` applied through the API, and then, on the real kubelet
v1.20.2, containerd and kube-apiserver of test_k8s_master.py's node:

- the managed kubelet's pod starts, opens the lock: the bootstrap kubelet exits with status 0, the managed
  one holds the lock (a process in the pod's cgroup, found through /proc/locks, never by opening the file);
  its pod becomes Ready (its probe: this container's kubelet holds a flock);
- under the bootstrap kubelet, a pass taints Node a (protokube.io/bootstrap-kubelet) and reports the holder
  on it (protokube.io/kubelet-holder); the workload tolerates the taint, having started before the handoff;
- `protokube plan` says which kubelet holds the node and since when; the bootstrap taint is off;
- the managed kubelet killed: the waiting bootstrap kubelet takes the node back (the taint is back), starts
  the container again, and the managed kubelet takes over once more;
- an upgrade through the API (a flag in the DaemonSet's args) rolls the node: the new managed kubelet holds it;
- a broken template (a flag the kubelet refuses): the bootstrap kubelet holds the node, a master's pass past
  spec.kubelet.rolloutDeadline (40 s here) rolls the DaemonSet back (its annotations say so), the managed
  kubelet of the good template holds the node again, and node a is never NotReady longer than the deadline;
- a workload container runs through every handoff without a restart (same container, same start time).
"""
import json
import os
import signal
import subprocess
import time

import pytest

from test_k8s_master import one_master, wait
from node import lock_holder  # noqa: E402  (tests/k8s/node.py: test_k8s_master puts it on the path)

LOCK = "kubelet.lock"
BOOTSTRAP_TAINT = "protokube.io/bootstrap-kubelet"
HOLDER_ANNOTATION = "protokube.io/kubelet-holder"
WORKLOAD = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "web", "image": "protokube.test/podnet:1",
                                     "command": ["/podnet", "serve", "8080"]}]}}


@pytest.fixture
def handoff_master():
    yield from one_master(handoff=True)


def workload_state(m):
    pod, err = m.kubectl_json("get", "pod", "web", "-n", "default")
    for s in (pod or {}).get("status", {}).get("containerStatuses", []):
        running = s.get("state", {}).get("running")
        if running:
            return (s["containerID"], running["startedAt"], s.get("restartCount")), ""
    return None, err or "not running"


def node_taints(m):
    """(the taints' keys, the holder the Node reports) of Node a."""
    n, err = m.kubectl_json("get", "node", "a")
    assert n, err
    holder = n["metadata"].get("annotations", {}).get(HOLDER_ANNOTATION)
    return [t["key"] for t in n.get("spec", {}).get("taints", []) or []], holder


def plan_kubelet_line(env):
    argv = env.argv("plan", "a")
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    lines = [line for line in p.stdout.splitlines() if line.startswith("kubelet-holder")]
    return lines[0] if lines else f"(none; rc {p.returncode}: {p.stderr[-500:]})"


def set_args(m, args):
    patch = [{"op": "add", "path": "/spec/template/spec/containers/0/args", "value": args}]
    m.kubectl_ok("patch", "daemonset", "kubelet", "-n", "kube-system", "--type=json", "-p", json.dumps(patch))


def managed_with(lock, flag):
    """(pid, pod) when a managed kubelet whose command line has flag holds lock."""
    pid, pod = lock_holder(lock)
    if not pod:
        return None, f"holder {pid} (not in a pod)"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().decode(errors="replace").split("\0")
    except OSError as e:
        return None, str(e)
    return ((pid, pod) if flag in argv else None), f"holder {pid} runs without {flag}"


def rollout_complete(m):
    ds, err = m.kubectl_json("get", "daemonset", "kubelet", "-n", "kube-system")
    st = (ds or {}).get("status", {})
    done = (st.get("observedGeneration") == (ds or {}).get("metadata", {}).get("generation")
            and st.get("updatedNumberScheduled") == st.get("desiredNumberScheduled") == st.get("numberAvailable"))
    return done, err or st


def watch_ready_until_rolled_back(m, env, node, deadline, timeout):
    """Runs a master's pass every 5 s until one rolls the DaemonSet back (bounded); returns the longest
    time node a was not Ready meanwhile."""
    t0, longest, down_since = time.monotonic(), 0.0, None
    while time.monotonic() - t0 < timeout:
        n, _ = m.kubectl_json("get", "node", "a")
        conds = {c["type"]: c["status"] for c in (n or {}).get("status", {}).get("conditions", [])}
        now = time.monotonic()
        if conds.get("Ready") != "True":
            down_since = down_since or now
            longest = max(longest, now - down_since)
        else:
            down_since = None
        rc, err = pass_once(env)
        assert rc == 0, err
        ds, _ = m.kubectl_json("get", "daemonset", "kubelet", "-n", "kube-system")
        if "protokube.io/rolled-back" in ds["metadata"].get("annotations", {}):
            return longest
        time.sleep(5)
    raise AssertionError(f"no rollback within {timeout} s (deadline {deadline} s)\n{plan_text(env)}")


def plan_text(env):
    p = subprocess.run(env.argv("plan", "a"), capture_output=True, text=True, timeout=120)
    return p.stdout + p.stderr[-1000:]


def pass_once(env):
    argv = env.argv("once", "a")
    argv[argv.index("--internal-ip") + 1] = "198.18.43.10"
    p = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    return p.returncode, p.stderr[-2000:]


def test_the_managed_kubelet_takes_the_node_and_gives_it_back(handoff_master, tmp_path):
    env, node, m = handoff_master
    lock = os.path.join(env.kubelet_dir("a"), LOCK)
    node.start()
    wait("kube-apiserver /readyz", lambda: (m.readyz(), "not ready"), 300, node, interval=2)

    def node_ready():
        n, err = m.kubectl_json("get", "node", "a")
        conds = {c["type"]: c["status"] for c in (n or {}).get("status", {}).get("conditions", [])}
        return conds.get("Ready") == "True", err or conds
    wait("node a Ready under the bootstrap kubelet", node_ready, 180, node)
    pid, pod = lock_holder(lock)
    assert pid == node.kubelet.pid and not pod, f"the bootstrap kubelet holds {lock}: {pid} {pod}"

    rc, err = pass_once(env)
    assert rc == 0, err
    assert "kubelet-holder bootstrap pid=" in plan_kubelet_line(env)
    taints, holder = node_taints(m)
    assert BOOTSTRAP_TAINT in taints and holder == "bootstrap", (taints, holder)

    m.wait_default_service_account()
    WORKLOAD["spec"]["tolerations"] = [{"key": BOOTSTRAP_TAINT, "operator": "Exists"}]
    m.kubectl_ok("apply", "-f", "-", stdin=json.dumps(WORKLOAD))
    before = wait("the workload Running", lambda: workload_state(m), 180, node)

    out = tmp_path / "assets"
    p = subprocess.run([env.bin, "-c", env.spec, "render", "--manifest-dir", env.manifest_dir("a"), "--kubelet-dir",
                        env.kubelet_dir("a"), "--mount-root", env.mount_root("a"), "--config-dir", env.config_dir("a"),
                        "--self-hosted", "--etcd-member", "main=a/a", "--out", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    for f in ("30-configmap-kubelet-config.yaml", "40-daemonset-kubelet.yaml"):
        m.kubectl_ok("apply", "-f", str(out / f))
    t0 = time.monotonic()

    def managed():
        pid, pod = lock_holder(lock)
        return (pid, pod) if pod else None, f"holder {pid}"
    pid, pod = wait("the managed kubelet holds the lock", managed, 240, node)
    taken = time.monotonic() - t0
    assert any(status == 0 for _, status in node.kubelet_exits), \
        f"the bootstrap kubelet exits 0 on contention: {node.kubelet_exits}"

    def ds_ready():
        ds, err = m.kubectl_json("get", "daemonset", "kubelet", "-n", "kube-system")
        st = (ds or {}).get("status", {})
        return st.get("numberReady") == 1, err or st
    wait("the kubelet DaemonSet's pod Ready", ds_ready, 120, node)

    rc, err = pass_once(env)
    assert rc == 0, err
    line = plan_kubelet_line(env)
    assert f"managed pod={pod} pid={pid}" in line, line
    taints, holder = node_taints(m)
    assert BOOTSTRAP_TAINT not in taints and holder == "managed", (taints, holder)

    os.kill(pid, signal.SIGKILL)
    t1 = time.monotonic()

    def bootstrap_back():
        got, pod_now = lock_holder(lock)
        return got if got and not pod_now else None, f"holder {got} {pod_now}"
    back = wait("the bootstrap kubelet takes the node back", bootstrap_back, 60, node)
    took_back = time.monotonic() - t1
    rc, err = pass_once(env)
    assert rc == 0, err
    assert "bootstrap" in plan_kubelet_line(env)
    taints, holder = node_taints(m)
    assert BOOTSTRAP_TAINT in taints and holder == "bootstrap", f"the bootstrap kubelet holds a: {taints} {holder}"

    def managed_again():
        got, pod_now = lock_holder(lock)
        return (got, pod_now) if pod_now and got != pid else None, f"holder {got} {pod_now}"
    wait("the managed kubelet takes the node again", managed_again, 180, node)
    rc, err = pass_once(env)
    assert rc == 0, err
    taints, holder = node_taints(m)
    assert BOOTSTRAP_TAINT not in taints and holder == "managed", (taints, holder)

    after = wait("the workload still Running", lambda: workload_state(m), 60, node)
    assert after == before, f"the workload's container was restarted by a handoff: {before} -> {after}"
    print(f"\nhandoff: managed kubelet held the lock {taken:.1f} s after the apply; bootstrap back "
          f"{took_back:.1f} s after the kill (pid {back}); exits of the bootstrap kubelet: "
          f"{[s for _, s in node.kubelet_exits]}")

    # an upgrade through the API: a flag of the managed kubelet's; the DaemonSet rolls the node
    t2 = time.monotonic()
    set_args(m, ["--v=3"])
    wait("the upgraded managed kubelet holds the node", lambda: managed_with(lock, "--v=3"), 180, node)
    wait("the rollout complete", lambda: rollout_complete(m), 120, node)
    upgraded = time.monotonic() - t2
    assert wait("the workload still Running", lambda: workload_state(m), 60, node) == before

    # a broken one (a flag the kubelet refuses: it exits before it takes the lock): the bootstrap kubelet
    # holds the node, and a master's pass past spec.kubelet.rolloutDeadline (40 s) puts --v=3 back
    set_args(m, ["--v=3", "--no-such-flag"])
    wait("the bootstrap kubelet holds the node under the broken template", bootstrap_back, 120, node)
    t3 = time.monotonic()
    not_ready = watch_ready_until_rolled_back(m, env, node, deadline=40, timeout=180)
    wait("the managed kubelet of the template rolled back to holds the node",
         lambda: managed_with(lock, "--v=3"), 180, node)
    wait("the rollout complete", lambda: rollout_complete(m), 120, node)
    ds, _ = m.kubectl_json("get", "daemonset", "kubelet", "-n", "kube-system")
    ann = ds["metadata"]["annotations"]
    assert "protokube.io/rolled-back" in ann and "not rolled out within 40s" in ann["protokube.io/rolled-back"], ann
    assert ds["spec"]["template"]["spec"]["containers"][0].get("args") == ["--v=3"]
    assert not_ready <= 40, f"node a NotReady for {not_ready:.0f} s, more than the deadline"
    assert wait("the workload still Running", lambda: workload_state(m), 60, node) == before
    print(f"upgrade through the API rolled in {upgraded:.1f} s; a broken template rolled back "
          f"{time.monotonic() - t3:.1f} s after the bootstrap kubelet took the node, longest NotReady "
          f"{not_ready:.0f} s; rollback: {ann['protokube.io/rolled-back']}")
