# SPDX-License-Identifier: Apache-2.0
"""Issue 19: a pass no longer waits for Route 53 to propagate its change (INSYNC, tens of seconds on real Route
53) before it writes the etcd manifest. Against the AWS double (its insync_delay_seconds fault: GetChange says
PENDING until that long after the change was submitted; ListResourceRecordSets shows the records at once, as
Route 53 does), with image-backed EBS volumes (loop devices, real mkfs), the real protokube binary:

- `protokube run` with a 30 s INSYNC delay writes the manifests within seconds, keeps answering /healthz and
  /metrics, shows the change on protokube_dns_changes_pending, asks about it with one GetChange per pass (no
  polling inside a pass) and never resubmits it (its read sees the records already there);
- with a 3 s delay the pending change clears at a later pass and the log says INSYNC;
- `protokube once` waits for INSYNC by default (after the manifests are written), `--no-wait` does not;
- `dns sync` likewise."""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import need_root, protokube_bin
from test_aws_providers import CLUSTER, AwsEnv
from test_daemon import free_port, get

DELAY_REALISTIC = 30  # seconds: what the issue asks the double to model
DELAY_SHORT = 3  # where a test must see the change settle


def wait_until(what, fn, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def count(env, action):
    return len([e for e in env.log() if e.get("action") == action])


def manifests_linked(env, k=0):
    return all(os.path.exists(os.path.join(env.manifest_dir(k), n)) for n in ("etcd.manifest", "etcd-events.manifest"))


@pytest.fixture
def env():
    need_root()
    e = AwsEnv(1)
    yield e
    errors = e.cleanup()
    assert not errors, errors


def set_delay(env, seconds):
    # insync_after_polls 0: only the time counts, as on Route 53
    env.configure({"faults": {"insync_after_polls": 0, "insync_delay_seconds": seconds}})


class Daemon:
    def __init__(self, env, interval="1s"):
        self.env = env
        self.port = free_port()
        self.log_path = os.path.join(env.base, "daemon.log")
        self.proc = subprocess.Popen(
            [protokube_bin(), "-c", env.spec, "--log-format", "json", "run", "--mount-root", env.mount_root(0),
             "--manifest-dir", env.manifest_dir(0), "--config-dir", os.path.join(env.base, "lib"),
             "--kubelet-dir", os.path.join(env.base, "kubelet"), "--listen", f"127.0.0.1:{self.port}", "--interval", interval],
            stdout=subprocess.DEVNULL, stderr=open(self.log_path, "ab"), env=env.env(0))

    def get(self, path):
        return get(f"http://127.0.0.1:{self.port}{path}")

    def metrics(self):
        code, body = self.get("/metrics")
        return body if code == 200 else ""

    def lines(self):
        out = []
        with open(self.log_path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    def msgs(self):
        return [ln.get("msg", "") for ln in self.lines()]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode


def test_daemon_writes_manifests_without_waiting_for_insync(env):
    set_delay(env, DELAY_REALISTIC)
    t0 = time.monotonic()
    d = Daemon(env)
    try:
        # The etcd manifests within seconds, although Route 53 says PENDING for 30 s.
        wait_until("the etcd manifests", lambda: manifests_linked(env), 15)
        took = time.monotonic() - t0
        assert took < 15, took
        # The records are in the zone already (accepted with HTTP 200), the change is PENDING.
        recs = env.records()
        assert (f"api.internal.{CLUSTER}.", "A") in recs, recs
        changes = env.state()["changes"]
        assert len(changes) == 1 and list(changes.values())[0]["status"] == "PENDING", changes
        change_id = list(changes)[0]
        # The daemon answers while the change propagates, says so on /metrics, and passes go on.
        m = wait_until("a pending change on /metrics",
                       lambda: (lambda t: t if metric(t, "protokube_dns_changes_pending") == 1 else None)(d.metrics()),
                       10)
        assert metric(m, "protokube_dns_change_pending_seconds") > 0, m
        code, body = d.get("/healthz")
        assert code == 200 and body.startswith("ok"), (code, body)
        passes = metric(m, "protokube_passes_total")
        wait_until("three more passes",
                   lambda: (metric(d.metrics(), "protokube_passes_total") or 0) >= passes + 3, 20)
        m = d.metrics()
        assert metric(m, "protokube_dns_changes_pending") == 1, m
        assert d.get("/healthz")[0] == 200
        assert time.monotonic() - t0 < DELAY_REALISTIC, "the test outlived the delay: it proves nothing"
        # Never resubmitted (each pass reads the records it wrote), asked about with one GetChange per pass:
        # no polling inside a pass.
        assert count(env, "ChangeResourceRecordSets") == 1, env.log()
        n_passes = metric(d.metrics(), "protokube_passes_total")
        n_get = count(env, "GetChange")
        assert 1 <= n_get <= n_passes, (n_get, n_passes)
        msgs = d.msgs()
        assert any(f"change '{change_id}' accepted" in x for x in msgs), msgs
        # Order kept: the DNS change was accepted before the etcd manifest was written.
        i_dns = next(i for i, x in enumerate(msgs) if f"etcd-a.internal.{CLUSTER}. A ->" in x
                     or f"etcd-b.internal.{CLUSTER}. A ->" in x or f"etcd-c.internal.{CLUSTER}. A ->" in x)
        i_manifest = next(i for i, x in enumerate(msgs) if "k8s.io/manifests/etcd.manifest" in x)
        assert i_dns < i_manifest, msgs
    finally:
        assert d.stop() == 0


def test_daemon_pending_change_clears_after_insync(env):
    set_delay(env, DELAY_SHORT)
    d = Daemon(env)
    try:
        wait_until("a pending change on /metrics",
                   lambda: metric(d.metrics(), "protokube_dns_changes_pending") == 1, 20)
        t_pending = time.monotonic()
        wait_until("the pending change to clear",
                   lambda: metric(d.metrics(), "protokube_dns_changes_pending") == 0, DELAY_SHORT + 15)
        assert time.monotonic() - t_pending < DELAY_SHORT + 15
        m = d.metrics()
        assert metric(m, "protokube_dns_change_pending_seconds") == 0, m
        change_id = list(env.state()["changes"])[0]
        assert any(f"change '{change_id}' INSYNC" in x for x in d.msgs()), d.msgs()
        assert d.get("/healthz") == (200, "ok\n")
        assert count(env, "ChangeResourceRecordSets") == 1
    finally:
        assert d.stop() == 0


def test_once_no_wait_and_default_wait(env):
    set_delay(env, DELAY_REALISTIC)
    t0 = time.monotonic()
    p = env.pk("once", 0, "--no-wait", check=0, timeout=60)
    took = time.monotonic() - t0
    assert took < 15, (took, p.stderr)
    assert manifests_linked(env)
    assert "still propagating (--no-wait)" in p.stderr, p.stderr
    assert count(env, "GetChange") == 0
    # the next pass reads the records the change wrote: nothing is resubmitted while it propagates
    p = env.pk("once", 0, "--no-wait", check=0, timeout=60)
    assert "0 change(s)" in p.stderr, p.stderr
    assert count(env, "ChangeResourceRecordSets") == 1

    # By default `once` waits until INSYNC, after its pass wrote everything: a new change (another TTL), 3 s.
    set_delay(env, DELAY_SHORT)
    with open(env.spec) as f:
        text = f.read()
    with open(env.spec, "w") as f:
        f.write(text.replace("ttl: 30", "ttl: 45"))
    t0 = time.monotonic()
    p = env.pk("once", 0, check=0, timeout=60)
    took = time.monotonic() - t0
    assert DELAY_SHORT - 0.5 <= took < DELAY_SHORT + 15, (took, p.stderr)
    assert count(env, "ChangeResourceRecordSets") == 2
    assert "every change INSYNC" in p.stderr, p.stderr
    assert p.stderr.index("waiting up to 120 s") < p.stderr.index("every change INSYNC")


def write_view(env, internal_ip):
    view = os.path.join(env.base, "view.json")
    with open(view, "w") as f:
        json.dump({"masters": [{"name": "m1", "internalIPs": [internal_ip], "externalIPs": ["203.0.113.1"]}],
                   "members": [{"cluster": "main", "member": "a", "node": "m1"}]}, f)
    return view


def dns_sync(env, *args):
    return subprocess.run([protokube_bin(), "-c", env.spec, "dns", "sync", *args], capture_output=True, text=True,
                          env=env.env(0), timeout=60)


def test_dns_sync_waits_unless_no_wait(env):
    set_delay(env, DELAY_REALISTIC)
    t0 = time.monotonic()
    p = dns_sync(env, "--view", write_view(env, "10.0.0.1"), "--no-wait")
    assert p.returncode == 0, p.stderr
    assert time.monotonic() - t0 < 15
    change_id = list(env.state()["changes"])[0]
    assert f"pending\t{change_id}\t" in p.stdout, p.stdout
    assert count(env, "GetChange") == 0
    # the default waits (bounded) until INSYNC: a new change, 3 s
    set_delay(env, DELAY_SHORT)
    t0 = time.monotonic()
    p = dns_sync(env, "--view", write_view(env, "10.0.0.2"))
    took = time.monotonic() - t0
    assert p.returncode == 0, p.stderr
    assert DELAY_SHORT - 0.5 <= took < DELAY_SHORT + 15, (took, p.stderr)
    assert "replace" in p.stdout and "pending" not in p.stdout, p.stdout
    assert count(env, "ChangeResourceRecordSets") == 2
