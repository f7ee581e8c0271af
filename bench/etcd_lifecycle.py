#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Figure 7: etcd's lifecycle on real etcd with TLS (bench/README.md): a blank member replaced, and snapshot and
restore throughput on a 100 MiB keyspace side by side with `etcdctl snapshot save` / `snapshot restore` on the
same data.

Three masters n1-n3 hold members a, b, c on loop devices, as tests/integration/test_etcd_members.py lays them
out (certificates from protokube's pass, a file:// state store, each etcd run from the manifest on its volume,
the benchmark playing kubelet). Run alone: /usr/bin/python3 bench/etcd_lifecycle.py"""
import json
import os
import shutil
import ssl
import sys
import tempfile
import time
import base64
import http.client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from loopdev import MIB  # noqa: E402
from test_etcd_members import (CLIENT_PORT, NODES, PEER_PORT, EtcdProc, MemberEnv, destroy, etcdctl,  # noqa: E402
                               members, wait_for)
from test_etcd_restore import Kubelet  # noqa: E402

VALUE_BYTES = 256 * 1024  # etcd's default request limit is 1.5 MiB: a quarter MiB a key


def start(base, keyspace_mib):
    """Three masters after their cold-start passes, every member running; volumes big enough for the keyspace
    many times over (the WAL, the bbolt file, a snapshot being sent to a learner, and for each restore the
    downloaded snapshot, the data moved aside and the restored data)."""
    store = os.path.join(base, "store")
    os.mkdir(store)
    env = MemberEnv("file://" + store)
    size = max(384, 12 * keyspace_mib + 512) * MIB
    for m in NODES:
        env.create(f"main-{m}", "main", m, list(NODES), size=size)
    etcds = {}
    try:
        for m in NODES:
            p = env.once(m)
            if p.returncode != 0:
                raise RuntimeError(f"cold-start pass of {m}: {p.stderr[-2000:]}")
        for m in NODES:
            etcds[m] = EtcdProc(env, m)
        wait_for("a quorum", lambda: etcdctl(env, "a", "put", "/before", "kept").returncode == 0, seconds=60)
    except BaseException:
        for e in etcds.values():
            e.stop()
        env.cleanup()
        raise
    return env, etcds


class Gateway:
    """etcd's v3 JSON gateway on member a, with the apiserver's etcd client certificate: the fastest way to
    write the keyspace (one connection, no process per key)."""

    def __init__(self, env):
        d = env.client_dir()
        ctx = ssl.create_default_context(cafile=f"{d}/etcd-ca.crt")
        ctx.load_cert_chain(f"{d}/etcd-client.crt", f"{d}/etcd-client.key")
        ctx.check_hostname = False  # the certificate names etcd-a.internal.<C>; we dial its address
        self.conn = http.client.HTTPSConnection(NODES["a"][1], CLIENT_PORT, context=ctx, timeout=30)

    def put(self, key, value):
        body = json.dumps({"key": base64.b64encode(key.encode()).decode(),
                           "value": base64.b64encode(value).decode()})
        self.conn.request("POST", "/v3/kv/put", body, {"Content-Type": "application/json"})
        r = self.conn.getresponse()
        text = r.read()
        if r.status != 200:
            raise RuntimeError(f"put {key}: HTTP {r.status}: {text[:200]!r}")

    def close(self):
        self.conn.close()


def fill(env, mib):
    g = Gateway(env)
    try:
        for i in range(mib * MIB // VALUE_BYTES):
            g.put(f"/bench/{i:06d}", os.urandom(VALUE_BYTES))  # random: nothing compresses it away
    finally:
        g.close()


def replace_blank_b(env, etcds):
    """b's etcd stopped and its volume emptied -> three healthy voting members again (seconds), with n2's
    passes run back to back and b's etcd started as soon as a manifest is on its volume (kubelet's part)."""
    t0 = time.monotonic()
    etcds["b"].stop()
    destroy(env, "b")
    deadline = t0 + 300
    while time.monotonic() < deadline:
        p = env.once("b")
        if p.returncode not in (0, 3):
            raise RuntimeError(f"pass of n2 exited {p.returncode}: {p.stderr[-2000:]}")
        if env.manifest("b") and etcds["b"].proc.poll() is not None:
            etcds["b"] = EtcdProc(env, "b")
        ms = members(env, "a")
        if "etcd-b" in ms and not ms["etcd-b"].get("isLearner") and ms["etcd-b"].get("clientURLs") \
                and all(etcdctl(env, m, "endpoint", "health").returncode == 0 for m in NODES):
            return time.monotonic() - t0
        time.sleep(0.1)
    raise RuntimeError("blank member b not replaced within 300 s")


def snapshot_pair(env, work, i):
    """One protokube backup and one etcdctl snapshot save of member a, alternating which goes first; both speak
    etcd's gRPC Maintenance.Snapshot over TLS. Returns (protokube seconds, etcdctl seconds, snapshot bytes)."""
    node, ip = NODES["a"]
    d = env.client_dir()
    tmp = os.path.join(work, "stage")
    os.makedirs(tmp, exist_ok=True)
    out = os.path.join(work, f"etcdctl-{i}.db")

    def ours():
        t0 = time.monotonic()
        common.run([env.bin, "-c", env.node_spec(node), "etcd", "backup", "main", "--node-name", node,
                    "--internal-ip", ip, "--tmp-dir", tmp], timeout=600)
        return time.monotonic() - t0

    def theirs():
        argv = ["etcdctl", f"--endpoints=https://{ip}:{CLIENT_PORT}", f"--cacert={d}/etcd-ca.crt",
                f"--cert={d}/etcd-client.crt", f"--key={d}/etcd-client.key", "--insecure-skip-tls-verify",
                "snapshot", "save", out]
        t0 = time.monotonic()
        common.run(argv, timeout=600, env=dict(os.environ, ETCDCTL_API="3"))
        return time.monotonic() - t0

    if i % 2 == 0:
        a, b = ours(), theirs()
    else:
        b, a = theirs(), ours()
    size = os.path.getsize(out)
    os.unlink(out)
    return a, b, size


# Where a whole-cluster restore's time goes: protokube's (the request, the masters' passes: each downloads and
# checks the snapshot, stops its member, then starts it restored) and the harness's (the kubelet stand-in: the
# init container, etcd's own `etcdctl snapshot restore`, and each etcd's stop and start; the check of the keys
# on every member; the 50 ms between rounds).
RESTORE_PARTS = {"request": "protokube: the restore request (`etcd restore --force`)",
                 "passes": "protokube: the three masters' passes, all rounds",
                 "kubelet": "kubelet stand-in: init container (etcdctl snapshot restore), etcd stop / start",
                 "check": "harness: the check of every member's keys",
                 "poll": "harness: 50 ms between rounds"}


def restore_pair(env, etcds, work, timestamp, i):
    """One whole-cluster restore of the backup `timestamp` (request -> every member done and healthy, the
    benchmark playing kubelet: it runs the manifest's init container, etcd's own `etcdctl snapshot restore`,
    with Debian's etcdctl) and one `etcdctl snapshot restore` of the same snapshot into a fresh directory.
    Returns (protokube seconds, etcdctl seconds, {part: seconds} of the first: RESTORE_PARTS)."""
    node, ip = NODES["a"]
    snap = os.path.join(work, f"snap-{i}.db")
    common.run([env.bin, "-c", env.node_spec(node), "etcd", "download", "main", timestamp, "--out", snap])
    out = os.path.join(work, f"restored-{i}")
    t0 = time.monotonic()
    common.run(["etcdctl", "snapshot", "restore", snap, f"--data-dir={out}", "--name=etcd-a",
                f"--initial-cluster=etcd-a=https://{ip}:{PEER_PORT}",
                f"--initial-advertise-peer-urls=https://{ip}:{PEER_PORT}"],
               timeout=600, env=dict(os.environ, ETCDCTL_API="3"))
    theirs = time.monotonic() - t0
    shutil.rmtree(out)
    os.unlink(snap)

    kubelet = Kubelet(env, etcds)
    parts = dict.fromkeys(RESTORE_PARTS, 0.0)

    def timed(part, fn):
        t = time.monotonic()
        try:
            return fn()
        finally:
            parts[part] += time.monotonic() - t
    def restored():
        return all(etcdctl(env, m, "get", "/before", "--print-value-only").stdout.strip() == "kept"
                   for m in NODES) and all("initContainers" not in (env.manifest(m) or "initContainers")
                                           for m in NODES)
    t0 = time.monotonic()
    timed("request", lambda: common.run([env.bin, "-c", env.node_spec(node), "etcd", "restore", "main", timestamp,
                                         "--force"]))
    deadline = t0 + 600
    while time.monotonic() < deadline:
        for m in NODES:
            p = timed("passes", lambda: env.once(m, timeout=600))
            if p.returncode not in (0, 3):
                raise RuntimeError(f"pass of {m} exited {p.returncode}: {p.stderr[-2000:]}")
            timed("kubelet", lambda: kubelet.sync(m))
        if timed("check", restored):
            return time.monotonic() - t0, theirs, parts
        timed("poll", lambda: time.sleep(0.05))
    raise RuntimeError("the restore did not finish within 600 s")


def measure():
    if os.geteuid() != 0:
        raise RuntimeError("needs root (loop devices, mounts)")
    for tool in ("etcd", "etcdctl"):
        if not shutil.which(tool):
            raise RuntimeError(f"{tool} is missing (scripts/install-deps.sh)")
    runs = common.env_int("BENCH_ETCD_RUNS", 3)
    mib = common.env_int("BENCH_ETCD_KEYSPACE_MIB", 100)
    work = tempfile.mkdtemp(prefix="protokube-bench-etcd-")
    env, etcds = start(work, mib)
    try:
        t0 = time.monotonic()
        fill(env, mib)
        fill_s = time.monotonic() - t0
        snaps = [snapshot_pair(env, work, i) for i in range(runs)]
        replaced = [replace_blank_b(env, etcds) for _ in range(runs)]
        rows = common.run([env.bin, "-c", env.node_spec("n1"), "etcd", "backups", "main"]).stdout.splitlines()
        newest = max(r.split()[1] for r in rows if r.strip())
        restores = [restore_pair(env, etcds, work, newest, i) for i in range(runs)]
    finally:
        for e in etcds.values():
            e.stop()
        errors = env.cleanup()
        shutil.rmtree(work, ignore_errors=True)
        if errors:
            print(f"bench: etcd_lifecycle cleanup: {errors}", file=sys.stderr)
    size = common.median([s for *_, s in snaps])
    ours = common.median([size / a / MIB for a, *_ in snaps])
    theirs = common.median([size / b / MIB for _, b, *_ in snaps])
    ratio = common.median([a / b for a, b, *_ in snaps])  # time ratio: < 1 is protokube faster
    whole = common.median([a for a, *_ in restores])
    one = common.median([b for _, b, _ in restores])
    rows = [
        ("7. blank etcd member replaced (destroyed -> 3 healthy voting members)",
         f"{common.median(replaced):.1f} s", "report", f"runs {', '.join(f'{r:.1f}' for r in replaced)} s"),
        (f"7. snapshot of a {mib} MiB keyspace to the store: MiB/s", f"{ours:.0f} MiB/s", "report",
         f"etcdctl snapshot save {theirs:.0f} MiB/s, time ratio {ratio:.2f} (both gRPC over TLS); snapshot "
         f"{size / MIB:.0f} MiB"),
        ("7. restore of the whole cluster (3 members) from that snapshot: MiB/s", f"{size / whole / MIB:.0f} MiB/s",
         "report", f"{whole:.1f} s request -> 3 members serving it; etcdctl snapshot restore of one member "
         f"{size / one / MIB:.0f} MiB/s ({one:.1f} s)"),
    ]
    rows += [(f"   {label}", common.spread([p[key] for *_, p in restores], lambda v: f"{v:.1f} s"), "", "")
             for key, label in RESTORE_PARTS.items()]
    note = (f"{runs} runs, keyspace {mib} MiB in {VALUE_BYTES // 1024} KiB random values written in "
            f"{fill_s:.1f} s; protokube's backup also checks the snapshot (bbolt magic, SHA-256 trailer) and "
            f"writes it to the file:// store in 8 MiB pieces")
    return rows, note


if __name__ == "__main__":
    common.figure_main(measure)
