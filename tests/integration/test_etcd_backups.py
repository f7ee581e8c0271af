# SPDX-License-Identifier: Apache-2.0
"""etcd backups (docs/etcd-backups.md) through the real binary and real etcd 3.4 with TLS: the three
masters of test_etcd_members (members a, b, c on loop devices, certificates from protokube's pass, each etcd
run from the manifest on its volume) pass once each; only the master holding the leader's member takes the
slot's backup into the file:// state store, exactly one per slot even after leadership moves. The backup is
checked the way a user would restore it: `protokube etcd download`, then etcd's own `etcdctl snapshot
restore`, then a fresh etcd on the restored data that serves the keys written before the backup and not
those written after. It survives the master that took it (its volume destroyed). Retention keeps keepLast.

Over both stores (file://, and s3:// against the AWS double): a backup whose manifest cannot be read (a
symlink the directory store never follows, S3's AccessDenied or 500) is never deleted, never passed over for
an older one by `etcd restore` / `etcd download`, and /healthz and /metrics say so; every object of a backup
is private (0600, server-side encryption); the listing takes one entry per backup, past the 100,000 objects
of a listing. A manual `etcd backup` never takes up the daemon's claim of the same second on the same node,
nor the daemon a manual one's."""
import base64
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest

from awsdouble import double_state
from conftest import protokube_bin
from test_daemon import free_port, get as http_get
from test_etcd_members import (NODES, EtcdProc, MemberEnv, destroy, etcdctl, start_cluster, stop_cluster,
                               wait_for)
from test_store import BUCKET, aws_double, s3_env  # noqa: F401 (the module's AWS double)

RESTORE_CLIENT, RESTORE_PEER = 24791, 24792


def with_backups(env, interval, keep_last=10, keep_daily=7):
    """The spec's etcd cluster gets a backups block (every node's spec is written from spec_text)."""
    env.spec_text = env.spec_text.replace(
        f"      peerPort: ", f"      backups: {{interval: {interval}, keepLast: {keep_last}, "
        f"keepDailyDays: {keep_daily}}}\n      peerPort: ", 1)


def pk(env, member, *args, timeout=120):
    node, ip = NODES[member]
    argv = [env.bin, "-c", env.node_spec(node), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env.environ())


def listing(env):
    p = pk(env, "a", "etcd", "backups", "main")
    assert p.returncode == 0, p.stderr
    rows = [line.split() for line in p.stdout.splitlines() if line.strip()]
    return [{"ts": r[1], "size": r[2], "sha": r[3], "node": r[4]} for r in rows]


def leader(env):
    """The member whose etcd leads, from etcd's own status."""
    for m in NODES:
        p = etcdctl(env, m, "endpoint", "status", "-w", "json")
        if p.returncode != 0:
            continue
        st = json.loads(p.stdout)[0]["Status"]
        if st["leader"] == st["header"]["member_id"]:
            return m
    raise AssertionError("no leader")


def restore_and_read(env, snapshot, tmp_path, keys):
    """etcd's own restore of the snapshot, then a single etcd on it: the values of keys (None: absent)."""
    data = tmp_path / "restored"
    p = subprocess.run(["etcdctl", "snapshot", "restore", snapshot, f"--data-dir={data}", "--name=check",
                        f"--initial-cluster=check=http://127.0.0.9:{RESTORE_PEER}",
                        f"--initial-advertise-peer-urls=http://127.0.0.9:{RESTORE_PEER}"],
                       capture_output=True, text=True, timeout=60, env=dict(os.environ, ETCDCTL_API="3"))
    assert p.returncode == 0, p.stdout + p.stderr
    log = open(tmp_path / "restored.log", "wb")
    proc = subprocess.Popen(["etcd", f"--data-dir={data}", "--name=check",
                             f"--listen-client-urls=http://127.0.0.9:{RESTORE_CLIENT}",
                             f"--advertise-client-urls=http://127.0.0.9:{RESTORE_CLIENT}",
                             f"--listen-peer-urls=http://127.0.0.9:{RESTORE_PEER}",
                             f"--initial-advertise-peer-urls=http://127.0.0.9:{RESTORE_PEER}",
                             f"--initial-cluster=check=http://127.0.0.9:{RESTORE_PEER}"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def get(k):
            return subprocess.run(["etcdctl", f"--endpoints=http://127.0.0.9:{RESTORE_CLIENT}",
                                   "--dial-timeout=2s", "get", k, "--print-value-only"],
                                  capture_output=True, text=True, timeout=15,
                                  env=dict(os.environ, ETCDCTL_API="3"))
        wait_for("the restored etcd", lambda: get("/before").returncode == 0, seconds=30)
        return {k: (get(k).stdout.strip() or None) for k in keys}
    finally:
        proc.terminate()
        proc.wait(timeout=15)


@pytest.fixture
def daily(tmp_path):
    """Three masters, backups once a day (one slot for the whole test, unless it crosses midnight UTC)."""
    env, etcds = start_cluster(tmp_path, before=lambda e: with_backups(e, "24h"))
    yield env, etcds
    stop_cluster(env, etcds)


def test_leader_master_takes_one_backup_per_slot(daily, tmp_path):
    env, etcds = daily
    for i in range(200):
        assert etcdctl(env, "a", "put", f"/k/{i:03d}", "x" * 100).returncode == 0
    lead = leader(env)
    day = time.strftime("%Y%m%d", time.gmtime())
    t0 = time.monotonic()
    for m in NODES:  # every master passes; only the leader's takes it
        p = env.once(m)
        assert p.returncode == 0, p.stderr
    took = time.monotonic() - t0
    assert etcdctl(env, "a", "put", "/after", "later").returncode == 0
    rows = listing(env)
    assert len(rows) == 1, rows
    assert rows[0]["node"] == NODES[lead][0], (rows, lead)
    assert rows[0]["ts"] == f"{day}T000000Z" or time.strftime("%Y%m%d", time.gmtime()) != day, rows

    # leadership moves to another member within the slot: its master takes no second backup
    others = [m for m in NODES if m != lead]
    ids = {m: json.loads(etcdctl(env, m, "endpoint", "status", "-w", "json").stdout)[0]["Status"]["header"]
           ["member_id"] for m in NODES}
    p = etcdctl(env, lead, "move-leader", f"{ids[others[0]]:x}")
    assert p.returncode == 0, p.stderr
    wait_for("the new leader", lambda: leader(env) == others[0])
    for m in NODES:
        assert env.once(m).returncode == 0
    assert len(listing(env)) == 1 or time.strftime("%Y%m%d", time.gmtime()) != day

    # restorable: etcd's own restore accepts it; the keys before it are there, the one after is not
    snap = str(tmp_path / "main.db")
    p = pk(env, "a", "etcd", "download", "main", "--out", snap)
    assert p.returncode == 0, p.stderr
    assert os.stat(snap).st_mode & 0o777 == 0o600
    got = restore_and_read(env, snap, tmp_path, ["/before", "/k/199", "/after"])
    assert got == {"/before": "kept", "/k/199": "x" * 100, "/after": None}, got

    # it survives the master that took it
    etcds[lead].stop()
    destroy(env, lead)
    assert [r["ts"] for r in listing(env)] == [rows[0]["ts"]]
    print(f"\nbackup of {rows[0]['size']} bytes taken by {rows[0]['node']} within the passes of the three "
          f"masters ({took:.2f} s)")


def test_retention_keeps_the_newest(tmp_path):
    env, etcds = start_cluster(tmp_path, before=lambda e: with_backups(e, "24h", keep_last=2, keep_daily=0))
    try:
        lead = leader(env)
        for _ in range(3):  # by hand: named by their second
            p = pk(env, lead, "etcd", "backup", "main", "--internal-ip", NODES[lead][1], "--tmp-dir",
                   str(tmp_path))
            assert p.returncode == 0, p.stderr
            time.sleep(1.1)
        assert len(listing(env)) == 3
        p = env.once(lead)  # the slot's backup, then the retention: keepLast 2
        assert p.returncode == 0, p.stderr
        rows = listing(env)
        assert len(rows) == 2, rows
        assert rows[-1]["ts"].endswith("T000000Z") or len(rows) == 2
    finally:
        stop_cluster(env, etcds)


def test_retention_keeps_the_upgrades_way_back(tmp_path):
    """The backup an etcd upgrade recorded as its way back (docs/etcd-versions.md) outlives keepLast."""
    env, etcds = start_cluster(tmp_path, before=lambda e: with_backups(e, "24h", keep_last=2, keep_daily=0))
    try:
        lead = leader(env)
        for _ in range(3):
            p = pk(env, lead, "etcd", "backup", "main", "--internal-ip", NODES[lead][1], "--tmp-dir",
                   str(tmp_path))
            assert p.returncode == 0, p.stderr
            time.sleep(1.1)
        oldest = listing(env)[0]["ts"]
        record = tmp_path / "store" / "restores" / "main" / "upgrade.json"
        record.parent.mkdir(parents=True)
        record.write_text(json.dumps({"backup": oldest, "from": "3.4.23", "to": "3.5.16", "node": "n1"}))
        p = env.once(lead)  # the slot's backup, then the retention: keepLast 2, and the way back
        assert p.returncode == 0, p.stderr
        rows = [r["ts"] for r in listing(env)]
        assert len(rows) == 3 and rows[0] == oldest, rows
        record.write_text("{")  # a record that cannot be read: nothing is deleted, the error names it
        for _ in range(2):
            p = pk(env, lead, "etcd", "backup", "main", "--internal-ip", NODES[lead][1], "--tmp-dir",
                   str(tmp_path))
            assert p.returncode == 0, p.stderr
            time.sleep(1.1)
        before = {r["ts"] for r in listing(env)}
        p = env.once(lead)  # (the slot's backup again: the retention had deleted it)
        assert before <= {r["ts"] for r in listing(env)}, (listing(env), p.stderr)
        assert "restores/main/upgrade.json" in p.stderr, p.stderr
    finally:
        stop_cluster(env, etcds)


def test_bad_store_is_a_clear_error(tmp_path):
    env, etcds = start_cluster(tmp_path, before=lambda e: with_backups(e, "24h"))
    try:
        shutil.rmtree(env.store_url[len("file://"):])
        p = pk(env, "a", "etcd", "backups")
        assert p.returncode != 0
        assert env.store_url in p.stderr, p.stderr
    finally:
        stop_cluster(env, etcds)


# ---------------------------------------------------------------- both stores

class StoreView:
    """The state store as another writer (or a failing backend) sees it: objects through `protokube store`,
    a manifest made unreadable in the store's own way."""

    def __init__(self, kind, url, environ, root=None, double=None, prefix=""):
        self.kind, self.url, self.environ, self.root = kind, url, environ, root
        self.double, self.prefix = double, prefix

    def run(self, *args, input=None):
        e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        e.update(self.environ)
        p = subprocess.run([protokube_bin(), "store", *args], capture_output=True, env=e, input=input,
                           timeout=120)
        assert p.returncode == 0, p.stderr
        return p.stdout

    def keys(self, prefix):
        return self.run("list", self.url, prefix).decode().split()

    def get(self, key):
        return self.run("get", self.url, key)

    def put(self, key, data):
        self.run("put", self.url, key, "--private", input=data)

    def unreadable(self, keys, status=403, code="AccessDenied"):
        """Reads of keys fail, the objects stay: a symlink in a directory store (never followed: ELOOP), an
        error from S3 for every GetObject of them."""
        if self.kind == "file":
            for k in keys:
                path = os.path.join(self.root, k)
                os.unlink(path)
                os.symlink("/nonexistent", path)
        else:
            faults = [{"match": self.prefix + k, "status": status, "code": code} for k in keys]
            configure(self.double, {"faults": {"s3_get_errors": faults}})

    def private(self, key):
        if self.kind == "file":
            return stat.S_IMODE(os.lstat(os.path.join(self.root, key)).st_mode) == 0o600
        return double_state(self.double)["s3"][BUCKET][self.prefix + key]["sse"] == "AES256"


def configure(double, cfg):
    req = urllib.request.Request(double + "/_double/config", data=json.dumps(cfg).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200


@pytest.fixture(params=["file", "s3"])
def store(request, aws_double, tmp_path):  # noqa: F811
    """(URL, environment, StoreView) of an empty store of either kind."""
    if request.param == "file":
        root = tempfile.mkdtemp(prefix="pk-backup-store-")
        url = "file://" + root
        yield url, {}, StoreView("file", url, {}, root=root)
        shutil.rmtree(root, ignore_errors=True)
    else:
        prefix = re.sub(r"[^A-Za-z0-9-]", "-", f"b{os.getpid()}-{request.node.name}")
        url, environ = f"s3://{BUCKET}/{prefix}", s3_env(aws_double)
        yield url, environ, StoreView("s3", url, environ, double=aws_double, prefix=prefix + "/")
        configure(aws_double, {"faults": {"s3_get_errors": []}})


def fake_snapshot(seed):
    """A file etcd's snapshot check accepts: two bbolt pages (the meta page magic at offset 16) and the
    SHA-256 of them."""
    db = bytearray((i * 31 + seed) % 256 for i in range(2 * 4096))
    db[16:20] = bytes([0xED, 0xDA, 0x0C, 0xED])
    return bytes(db) + hashlib.sha256(db).digest()


def seed_backup(st, ts, snapshot, node="n9"):
    """A complete backup as another master stored it."""
    st.put(f"backups/main/{ts}/claim", f"{node} 00000000000000ff".encode())
    st.put(f"backups/main/{ts}/part-00000", snapshot)
    manifest = {"version": 1, "cluster": "main", "timestamp": ts, "node": node, "size": len(snapshot),
                "sha256": hashlib.sha256(snapshot).hexdigest(), "parts": 1, "partSize": 8 << 20}
    st.put(f"backups/main/{ts}/manifest.json", json.dumps(manifest).encode())


def copy_backup(st, src, dst):
    """The backup src again under the timestamp dst (its manifest names dst)."""
    if st.kind == "file":  # directly: many copies
        d = os.path.join(st.root, "backups", "main")
        shutil.copytree(os.path.join(d, src), os.path.join(d, dst), symlinks=True)
        path = os.path.join(d, dst, "manifest.json")
        m = json.load(open(path))
        m["timestamp"] = dst
        with open(path, "w") as f:
            json.dump(m, f)
        return
    for k in st.keys(f"backups/main/{src}/"):
        data = st.get(k)
        if k.endswith("/manifest.json"):
            m = json.loads(data)
            m["timestamp"] = dst
            data = json.dumps(m).encode()
        st.put(k.replace(f"/{src}/", f"/{dst}/"), data)


def file_objects(root):
    """Every file below a directory store, by path, with its bytes and mode."""
    out = {}
    for d, _, files in os.walk(root):
        for name in files:
            path = os.path.join(d, name)
            out[os.path.relpath(path, root)] = (open(path, "rb").read(), os.lstat(path).st_mode)
    return out


def stamp(t):
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(t))


def todays_slot():
    """The daily backups' slot that now falls in: midnight UTC."""
    return stamp(time.time() // 86400 * 86400)


def file_store(env):
    """The cluster's file store, read and written directly."""
    return StoreView("file", env.store_url, {}, root=env.store_url[len("file://"):])


def test_unreadable_backups_are_never_deleted(store, tmp_path):
    """Two old backups whose manifests cannot be read and a newer manual one, keepLast 1: the daemon takes
    the slot's backup and deletes nothing (on 220da71 it took the unreadable ones for incomplete ones past
    their grace and deleted all three); /healthz says why, /metrics counts them."""
    url, environ, st = store
    env, etcds = start_cluster(tmp_path, before=lambda e: with_backups(e, "24h", keep_last=1, keep_daily=0),
                               store=(url, environ))
    daemon = None
    try:
        lead = leader(env)
        p = pk(env, lead, "etcd", "backup", "main", "--internal-ip", NODES[lead][1], "--tmp-dir", str(tmp_path))
        assert p.returncode == 0, p.stderr
        manual = p.stdout.split()[1]
        old = [stamp(time.time() - 3 * 86400), stamp(time.time() - 2 * 86400)]
        for ts in old:
            copy_backup(st, manual, ts)
        st.unreadable([f"backups/main/{ts}/manifest.json" for ts in old])
        before = set(st.keys("backups/main/"))

        port = free_port()
        log = open(tmp_path / "run.log", "w+")
        daemon = subprocess.Popen(env.node_argv("run", lead, "--listen", f"127.0.0.1:{port}", "--interval", "30s"),
                                  stdout=subprocess.DEVNULL, stderr=log, env=env.environ())
        health = {}

        def said_why():
            health["status"], health["body"] = http_get(f"http://127.0.0.1:{port}/healthz")
            return "cannot be read" in health["body"]
        try:
            wait_for("/healthz naming the unreadable backups", said_why, seconds=60)
        except AssertionError:
            log.seek(0)
            raise AssertionError(f"{health}\n{log.read()}")
        assert health["status"] == 503, health
        assert "etcd main: 2 backup(s) cannot be read, so none is deleted" in health["body"] or \
            "retention: backup" in health["body"], health
        status, metrics = http_get(f"http://127.0.0.1:{port}/metrics")
        assert status == 200
        assert 'protokube_etcd_backups_unreadable{cluster="main"} 2\n' in metrics, metrics
        assert re.search(r'protokube_errors_total\{stage="etcd-backups"\} [1-9]', metrics), metrics
        with tempfile.NamedTemporaryFile("w", suffix=".prom") as f:
            f.write(metrics)
            f.flush()
            p = subprocess.run(["promtool", "check", "metrics"], stdin=open(f.name), capture_output=True, text=True)
        assert p.returncode == 0, p.stdout + p.stderr
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=30) == 0

        after = set(st.keys("backups/main/"))
        assert before <= after, sorted(before - after)  # nothing deleted
        slot = todays_slot()
        taken = [k for k in after if k.startswith(f"backups/main/{slot}/")]
        assert f"backups/main/{slot}/manifest.json" in taken or stamp(time.time())[:8] != slot[:8], after
        for k in taken + [k for k in after if f"/{manual}/" in k]:  # written by protokube: private
            assert st.private(k), k
    finally:
        if daemon and daemon.poll() is None:
            daemon.kill()
            daemon.wait(timeout=10)
        stop_cluster(env, etcds)


def test_restore_and_download_never_fall_back(store, tmp_path):
    """Without a timestamp, `etcd restore` and `etcd download` take the newest backup; when its manifest cannot
    be read they fail naming it (220da71 took the day-older one and exited 0). A backup named explicitly is
    restored as before, and the command prints the snapshot it chose."""
    url, environ, st = store
    env = MemberEnv(url, environ)
    try:
        older, newer = "20261120T000000Z", "20261121T000000Z"
        seed_backup(st, older, fake_snapshot(1))
        seed_backup(st, newer, fake_snapshot(2))
        manifest = st.get(f"backups/main/{newer}/manifest.json")
        st.unreadable([f"backups/main/{newer}/manifest.json"])
        reason = "symlink" if st.kind == "file" else "AccessDenied"

        p = pk(env, "a", "etcd", "restore", "main")
        assert p.returncode != 0, f"restored instead: {p.stdout}"
        assert f"backup {newer} cannot be read" in p.stderr and reason in p.stderr, p.stderr
        assert st.keys("restores/") == []  # no request for the older one

        if st.kind == "s3":  # a failing backend (5xx, after the client's retries) likewise
            st.unreadable([f"backups/main/{newer}/manifest.json"], status=500, code="InternalError")
        out = tmp_path / "snap.db"
        p = pk(env, "a", "etcd", "download", "main", "--out", str(out))
        assert p.returncode != 0, f"downloaded instead: {p.stdout}"
        assert f"backup {newer} cannot be read" in p.stderr, p.stderr
        assert not out.exists()
        st.unreadable([f"backups/main/{newer}/manifest.json"])

        p = pk(env, "a", "etcd", "backups", "main")  # every row, and an error naming it
        assert p.returncode != 0, p.stdout
        rows = {r.split()[1]: r.split() for r in p.stdout.splitlines()}
        assert rows[older][3].startswith("sha256:") and rows[newer][3] == "unreadable", p.stdout
        assert f"backup {newer} cannot be read" in p.stderr and reason in p.stderr, p.stderr

        p = pk(env, "a", "etcd", "restore", "main", older)  # named: restored as before, and said which
        assert p.returncode == 0, p.stderr
        rid, chosen = p.stdout.split()
        assert chosen == older
        assert json.loads(st.get("restores/main/request.json")) == {
            "id": rid, "snapshot": older, "requested": rid.split("-")[0]}
        p = pk(env, "a", "etcd", "download", "main", older, "--out", str(out))
        assert p.returncode == 0, p.stderr
        assert out.read_bytes() == fake_snapshot(1)

        # readable again: it is the newest
        if st.kind == "file":
            os.unlink(os.path.join(st.root, "backups", "main", newer, "manifest.json"))
            st.put(f"backups/main/{newer}/manifest.json", manifest)
        else:
            st.unreadable([])
        p = pk(env, "a", "etcd", "restore", "main", "--force")
        assert p.returncode == 0, p.stderr
        assert p.stdout.split()[1:] == [newer], p.stdout
    finally:
        env.cleanup()


def test_listing_is_one_entry_per_backup(store, tmp_path):
    """Two backups of 50,001 parts each: more objects than one listing holds (100,000), two backups listed
    (220da71 listed every part and failed)."""
    url, environ, st = store
    env = MemberEnv(url, environ)
    parts = 50001
    stamps = ["20261120T000000Z", "20261121T000000Z"]
    try:
        for ts in stamps:
            manifest = {"version": 1, "cluster": "main", "timestamp": ts, "node": "n9",
                        "size": parts * (8 << 20), "sha256": "0" * 64, "parts": parts, "partSize": 8 << 20}
            st.put(f"backups/main/{ts}/manifest.json", json.dumps(manifest).encode())
            st.put(f"backups/main/{ts}/claim", b"n9 00000000000000ff")
            if st.kind == "file":  # hard links of one small file: 100,002 directory entries, cheaply
                d = os.path.join(st.root, "backups", "main", ts)
                first = os.path.join(d, "part-00000")
                with open(first, "wb") as f:
                    f.write(b"x")
                for i in range(1, parts):
                    os.link(first, os.path.join(d, f"part-{i:05d}"))
            else:  # seeded in the double directly, in bodies its control path takes
                keys = [f"{st.prefix}backups/main/{ts}/part-{i:05d}" for i in range(parts)]
                for i in range(0, parts, 5000):
                    configure(st.double, {"objects": [{"bucket": BUCKET, "key": k, "data": "x"}
                                                      for k in keys[i:i + 5000]]})
        p = pk(env, "a", "etcd", "backups", "main")
        assert p.returncode == 0, p.stderr
        rows = [r.split() for r in p.stdout.splitlines()]
        assert [r[1] for r in rows] == stamps, p.stdout
        assert all(r[2] == str(parts * (8 << 20)) for r in rows), p.stdout
    finally:
        env.cleanup()


def test_daemon_never_takes_up_a_manual_backups_claim(daily):
    """A manual `etcd backup` of the master that leads holds the claim of the slot's second (its upload under
    way): the daemon's pass of that slot does not take it up (220da71 took a claim naming its own node for its
    own and wrote its parts under it)."""
    env, _ = daily
    st, lead, slot = file_store(env), leader(env), todays_slot()
    node = NODES[lead][0]
    st.put(f"backups/main/{slot}/claim", node.encode())  # as an upload of this node wrote it
    p = env.once(lead)
    assert p.returncode == 0, p.stderr
    assert st.keys(f"backups/main/{slot}/") == [f"backups/main/{slot}/claim"], p.stderr
    assert f"is taken by {node} (another upload from this node)" in p.stderr, p.stderr


def test_manual_backup_never_takes_up_the_daemons_claim(daily, tmp_path):
    """The daemon's backup of the slot, then copies of it (its claim too) under every second of the next two
    minutes: a manual `etcd backup` on the same master now is named by one of those seconds and must not take
    up that claim (220da71 did, and overwrote the backup's parts and manifest)."""
    env, _ = daily
    st, lead, slot = file_store(env), leader(env), todays_slot()
    node = NODES[lead][0]
    p = env.once(lead)
    assert p.returncode == 0, p.stderr
    assert f"backups/main/{slot}/manifest.json" in st.keys(f"backups/main/{slot}/"), p.stderr
    t0 = int(time.time())
    window = [stamp(t) for t in range(t0, t0 + 120)]
    for ts in window:
        copy_backup(st, slot, ts)
    before = file_objects(st.root)
    p = pk(env, lead, "etcd", "backup", "main", "--node-name", node, "--internal-ip", NODES[lead][1],
           "--tmp-dir", str(tmp_path))
    assert p.returncode != 0, f"the manual backup went on under the daemon's claim: {p.stdout}"
    taken = re.search(r"backup main/(\d{8}T\d{6}Z) is taken by", p.stderr)
    assert taken and taken.group(1) in window, p.stderr
    assert f"is taken by {node} (another upload from this node)" in p.stderr, p.stderr
    assert file_objects(st.root) == before  # nothing overwritten
