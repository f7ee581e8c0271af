"""protokube dns / dns sync with the hosts provider, and the dns verb's command line."""
import json
import os
import subprocess

import pytest

from conftest import need_root

CLUSTER = "demo.k8s.test"
HEAD = "127.0.0.1\tlocalhost\n# a comment   with  spacing\n::1 localhost ip6-localhost ip6-loopback\n"
TAIL = "192.0.2.10 after-the-block\n"
BEGIN = "# Begin protokube managed entries\n"
END = "# End protokube managed entries\n"

VIEW = {"masters": [{"name": "m1", "internalIPs": ["10.0.0.1"], "externalIPs": ["203.0.113.1"]},
                    {"name": "m2", "internalIPs": ["10.0.0.2", "fd00::2"], "externalIPs": []}],
        "members": [{"cluster": "main", "member": "a", "node": "m1"},
                    {"cluster": "main", "member": "b", "node": "m2"},
                    {"cluster": "events", "member": "a", "node": "m1"}]}

BLOCK = (BEGIN +
         "10.0.0.1\tapi.internal.demo.k8s.test etcd-a.internal.demo.k8s.test etcd-events-a.internal.demo.k8s.test\n"
         "10.0.0.2\tapi.internal.demo.k8s.test etcd-b.internal.demo.k8s.test\n"
         "203.0.113.1\tapi.demo.k8s.test\n"
         "fd00::2\tapi.internal.demo.k8s.test etcd-b.internal.demo.k8s.test\n" + END)


def write_spec(d, hosts_file, provider="hosts"):
    spec = os.path.join(d, "cluster.yaml")
    with open(spec, "w") as f:
        f.write(f"""apiVersion: protokube/v1alpha1
kind: Cluster
metadata: {{name: {CLUSTER}}}
spec:
  cloud: local
  dns:
    provider: {provider}
    hosts: {{file: {hosts_file}}}
  etcdClusters:
    - {{name: main, image: registry.k8s.io/etcd:3.5.16-0}}
    - {{name: events, image: registry.k8s.io/etcd:3.5.16-0}}
  kubernetesVersion: 1.31.2
""")
    return spec


def write_view(d, v, name="view.json"):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        json.dump(v, f)
    return p


def read(p):
    with open(p) as f:
        return f.read()


def test_dns_prints_desired_records(pk, tmp_path):
    spec = write_spec(str(tmp_path), str(tmp_path / "hosts"))
    p = pk("-c", spec, "dns", "--view", write_view(str(tmp_path), VIEW), check=0)
    assert p.stdout == ("api.demo.k8s.test.\t60\tIN\tA\t203.0.113.1\n"
                        "api.internal.demo.k8s.test.\t60\tIN\tA\t10.0.0.1\n"
                        "api.internal.demo.k8s.test.\t60\tIN\tA\t10.0.0.2\n"
                        "api.internal.demo.k8s.test.\t60\tIN\tAAAA\tfd00::2\n"
                        "etcd-a.internal.demo.k8s.test.\t60\tIN\tA\t10.0.0.1\n"
                        "etcd-b.internal.demo.k8s.test.\t60\tIN\tA\t10.0.0.2\n"
                        "etcd-b.internal.demo.k8s.test.\t60\tIN\tAAAA\tfd00::2\n"
                        "etcd-events-a.internal.demo.k8s.test.\t60\tIN\tA\t10.0.0.1\n")
    assert not (tmp_path / "hosts").exists()  # printing changes nothing


def test_dns_usage_errors(pk, tmp_path):
    spec = write_spec(str(tmp_path), str(tmp_path / "hosts"))
    assert pk("-c", spec, "dns", "publish").returncode == 2
    assert pk("-c", spec, "dns", "sync", "extra").returncode == 2
    assert pk("-c", spec, "dns", "--bogus").returncode == 2
    assert pk("dns", env={"PROTOKUBE_CONFIG": ""}).returncode == 2
    p = pk("-c", spec, "dns", "--view", str(tmp_path / "missing.json"))
    assert p.returncode == 1 and "missing.json" in p.stderr
    bad = write_view(str(tmp_path), {"masters": [{"name": "m1", "internalIPs": ["10.0.0.300"]}]}, "bad.json")
    p = pk("-c", spec, "dns", "--view", bad)
    assert p.returncode == 1 and "10.0.0.300" in p.stderr


def test_hosts_sync_keeps_foreign_text_and_rewrites_only_on_change(pk, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text(HEAD)
    spec = write_spec(str(tmp_path), str(hosts))
    view = write_view(str(tmp_path), VIEW)
    p = pk("-c", spec, "dns", "sync", "--view", view, check=0)
    assert "7 RRset(s) changed" in p.stdout
    assert read(hosts) == HEAD + BLOCK

    # Someone appends after our block; a second sync changes nothing and does not write.
    with open(hosts, "a") as f:
        f.write(TAIL)
    st = os.stat(hosts)
    os.utime(hosts, ns=(st.st_atime_ns, st.st_mtime_ns - 10**9))
    st = os.stat(hosts)
    p = pk("-c", spec, "dns", "sync", "--view", view, check=0)
    assert "no changes" in p.stdout
    st2 = os.stat(hosts)
    assert (st2.st_ino, st2.st_mtime_ns, st2.st_size) == (st.st_ino, st.st_mtime_ns, st.st_size)

    # A changed address replaces the entries; text on both sides stays byte for byte.
    moved = json.loads(json.dumps(VIEW))
    moved["masters"][0]["internalIPs"] = ["10.0.0.11"]
    moved["masters"][0]["externalIPs"] = []
    pk("-c", spec, "dns", "sync", "--view", write_view(str(tmp_path), moved), check=0)
    text = read(hosts)
    assert text.startswith(HEAD) and text.endswith(END + TAIL)
    assert "10.0.0.1\t" not in text and "203.0.113.1" not in text
    assert "10.0.0.11\tapi.internal.demo.k8s.test etcd-a.internal.demo.k8s.test" in text
    assert os.stat(hosts).st_ino == st.st_ino  # written in place


def test_hosts_unbalanced_markers_are_left_alone(pk, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text(HEAD + BEGIN + "10.9.9.9 stale\n")
    spec = write_spec(str(tmp_path), str(hosts))
    p = pk("-c", spec, "dns", "sync", "--view", write_view(str(tmp_path), VIEW))
    assert p.returncode == 1
    assert str(hosts) in p.stderr and "never closed" in p.stderr
    assert read(hosts) == HEAD + BEGIN + "10.9.9.9 stale\n"


def test_empty_view_is_refused(pk, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text(HEAD + BLOCK)
    spec = write_spec(str(tmp_path), str(hosts))
    p = pk("-c", spec, "dns", "sync", "--view", write_view(str(tmp_path), {"masters": [], "members": []}))
    assert p.returncode == 1 and "no masters" in p.stderr
    assert read(hosts) == HEAD + BLOCK


def test_hosts_bind_mounted_file(pk, tmp_path):
    """/etc/hosts in a container is a bind mount: rename() cannot replace it, the write must be in place."""
    need_root()
    source = tmp_path / "hosts.source"
    target = tmp_path / "hosts"
    source.write_text(HEAD)
    target.write_text("")
    subprocess.run(["mount", "--bind", str(source), str(target)], check=True, timeout=30)
    try:
        spec = write_spec(str(tmp_path), str(target))
        pk("-c", spec, "dns", "sync", "--view", write_view(str(tmp_path), VIEW), check=0)
        assert read(target) == HEAD + BLOCK
        assert read(source) == HEAD + BLOCK  # the same file: still mounted, written through
        assert os.stat(source).st_ino == os.stat(target).st_ino
        # No temporary files left next to it.
        assert sorted(os.listdir(tmp_path)) == ["cluster.yaml", "hosts", "hosts.source", "view.json"]
    finally:
        subprocess.run(["umount", str(target)], check=False, timeout=30)
