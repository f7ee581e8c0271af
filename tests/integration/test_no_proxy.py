# SPDX-License-Identifier: Apache-2.0
"""Traffic inside the cluster never goes through a proxy (docs/aws.md, "Proxies"): with https_proxy set, as
an operator sets it for the AWS APIs, and a no_proxy that does not name the cluster's addresses, the etcd
snapshot of a backup is still read from etcd directly. The proxy here refuses every connection (port 1 on
loopback), so a snapshot sent through it fails. The API client's side of it is in test_kube_client.py
(test_readyz_never_through_a_proxy)."""
from test_etcd_backups import listing, with_backups
from test_etcd_members import NODES, etcdctl, start_cluster, stop_cluster

PROXY_ENV = {"https_proxy": "http://127.0.0.1:1", "HTTPS_PROXY": "http://127.0.0.1:1",
             "all_proxy": "http://127.0.0.1:1", "no_proxy": "example.invalid", "NO_PROXY": "example.invalid"}


def test_backup_snapshot_never_through_a_proxy(tmp_path, monkeypatch):
    env, etcds = start_cluster(tmp_path, before=lambda e: with_backups(e, "24h"))
    try:
        assert etcdctl(env, "a", "put", "/k", "v").returncode == 0
        for k, v in PROXY_ENV.items():
            monkeypatch.setenv(k, v)
        for m in NODES:  # the leader's master takes the slot's backup, from its member's client URL
            p = env.once(m)
            assert p.returncode == 0, p.stderr
            assert "127.0.0.1:1" not in p.stderr, p.stderr
        rows = listing(env)
        assert len(rows) == 1, rows
    finally:
        stop_cluster(env, etcds)
