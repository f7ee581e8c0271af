# SPDX-License-Identifier: Apache-2.0
"""etcd backups (issue 17, docs/etcd-backups.md) through the real binary and real etcd 3.4 with TLS: the three
masters of test_etcd_members (members a, b, c on loop devices, certificates from protokube's pass, each etcd
run from the manifest on its volume) pass once each; only the master holding the leader's member takes the
slot's backup into the file:// state store, exactly one per slot even after leadership moves. The backup is
checked the way a user would restore it: `protokube etcd download`, then etcd's own `etcdctl snapshot
restore`, then a fresh etcd on the restored data that serves the keys written before the backup and not
those written after. It survives the master that took it (its volume destroyed). Retention keeps keepLast."""
import json
import os
import shutil
import subprocess
import time

import pytest

from test_etcd_members import (NODES, EtcdProc, destroy, etcdctl, start_cluster, stop_cluster,
                               wait_for)

RESTORE_CLIENT, RESTORE_PEER = 24791, 24792


def with_backups(env, interval, keep_last=10, keep_daily=7):
    """The spec's etcd cluster gets a backups block (every node's spec is written from spec_text)."""
    env.spec_text = env.spec_text.replace(
        f"      peerPort: ", f"      backups: {{interval: {interval}, keepLast: {keep_last}, "
        f"keepDailyDays: {keep_daily}}}\n      peerPort: ", 1)


def pk(env, member, *args, timeout=120):
    node, ip = NODES[member]
    argv = [env.bin, "-c", env.node_spec(node), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


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


def test_bad_store_is_a_clear_error(tmp_path):
    env, etcds = start_cluster(tmp_path, before=lambda e: with_backups(e, "24h"))
    try:
        shutil.rmtree(env.store_url[len("file://"):])
        p = pk(env, "a", "etcd", "backups")
        assert p.returncode != 0
        assert env.store_url in p.stderr, p.stderr
    finally:
        stop_cluster(env, etcds)
