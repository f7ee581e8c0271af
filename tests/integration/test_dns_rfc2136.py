"""protokube dns sync against real BIND 9 and Knot DNS servers on loopback (the rfc2136 provider)."""
import json
import os
import shutil
import tempfile

import pytest

import dnsservers

ZONE = "k8s.test."
CLUSTER = "demo.k8s.test"
SUFFIX = "internal.demo.k8s.test"


def view(masters, members):
    """masters: {name: (internal_ips, external_ips)}; members: [(cluster, member, node)]."""
    return {"masters": [{"name": n, "internalIPs": i, "externalIPs": e} for n, (i, e) in sorted(masters.items())],
            "members": [{"cluster": c, "member": m, "node": n} for c, m, n in members]}


VIEW1 = view({"m1": (["10.0.0.1"], ["203.0.113.1"]), "m2": (["10.0.0.2", "fd00::2"], []),
              "m3": (["10.0.0.3"], ["203.0.113.3"])},
             [("main", "a", "m1"), ("main", "b", "m2"), ("main", "c", "m3"),
              ("events", "a", "m1"), ("events", "b", "m2"), ("events", "c", "m3")])

# m3 is gone and m4 holds its volumes now.
VIEW2 = view({"m1": (["10.0.0.1"], ["203.0.113.1"]), "m2": (["10.0.0.2", "fd00::2"], []),
              "m4": (["10.0.0.4"], [])},
             [("main", "a", "m1"), ("main", "b", "m2"), ("main", "c", "m4"),
              ("events", "a", "m1"), ("events", "b", "m2"), ("events", "c", "m4")])


def expected(v):
    """The records the view should produce: {(name, type): sorted data}."""
    nodes = {m["name"]: m for m in v["masters"]}
    out = {}

    def add(name, ips):
        for ip in ips:
            t = "AAAA" if ":" in ip else "A"
            out.setdefault((name, t), set()).add(ip)

    for m in v["members"]:
        prefix = "etcd-" if m["cluster"] == "main" else f"etcd-{m['cluster']}-"
        add(f"{prefix}{m['member']}.{SUFFIX}.", nodes[m["node"]]["internalIPs"])
    for m in v["masters"]:
        add(f"api.{SUFFIX}.", m["internalIPs"])
        add(f"api.{CLUSTER}.", m["externalIPs"])
    return {k: sorted(s) for k, s in out.items()}


def owned_names(v):
    names = {f"api.{SUFFIX}.", f"api.{CLUSTER}."}
    for m in v["members"]:
        prefix = "etcd-" if m["cluster"] == "main" else f"etcd-{m['cluster']}-"
        names.add(f"{prefix}{m['member']}.{SUFFIX}.")
    return names


def served(srv, names):
    out = {}
    for n in sorted(names):
        for t in ("A", "AAAA"):
            data = srv.query(n, t)
            if data:
                out[(n, t)] = sorted(data)
    return out


FOREIGN = ["foreign IN A 192.0.2.99",
           f"api.{SUFFIX}. IN TXT \"owned name, foreign type\"",
           f"etcd-z.{SUFFIX}. IN A 192.0.2.50",
           f"api.{CLUSTER}. IN MX 10 mail.{ZONE}"]


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="pk-dns-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(params=["bind", "knot"])
def server(request, workdir):
    srv = dnsservers.start(request.param, workdir, dnsservers.free_port(), records=FOREIGN)
    yield srv
    srv.stop()


class Node:
    """One master's protokube: its own spec, key file and view file."""

    def __init__(self, pk, workdir, srv, name, zone=ZONE, secret=None, key_mode=0o600, timeout="1s",
                 cluster=CLUSTER, suffix=SUFFIX):
        self.pk = pk
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.key = dnsservers.write_key_file(os.path.join(self.dir, "tsig.key"), srv.key_name, srv.algorithm,
                                             secret or srv.secret, mode=key_mode)
        zone_line = f"    zone: {zone}\n" if zone else ""
        self.spec = os.path.join(self.dir, "cluster.yaml")
        with open(self.spec, "w") as f:
            f.write(f"""apiVersion: protokube/v1alpha1
kind: Cluster
metadata: {{name: {cluster}}}
spec:
  cloud: local
  dns:
    provider: rfc2136
{zone_line}    internalSuffix: {suffix}
    ttl: 45
    rfc2136: {{server: "{srv.server}", tsigKeyFile: {self.key}, timeout: {timeout}}}
  etcdClusters:
    - {{name: main, image: registry.k8s.io/etcd:3.5.16-0}}
    - {{name: events, image: registry.k8s.io/etcd:3.5.16-0}}
  kubernetesVersion: 1.31.2
""")
        self.view = os.path.join(self.dir, "view.json")

    def sync(self, v, check=None):
        with open(self.view, "w") as f:
            json.dump(v, f)
        return self.pk("-c", self.spec, "dns", "sync", "--view", self.view, check=check, timeout=60)


@pytest.mark.parametrize("zone", [ZONE, None], ids=["zone-from-spec", "zone-by-soa"])
def test_records_appear_and_second_sync_changes_nothing(pk, workdir, server, zone):
    node = Node(pk, workdir, server, "m1", zone=zone)
    p = node.sync(VIEW1, check=0)
    assert "replace" in p.stdout
    assert served(server, owned_names(VIEW1)) == expected(VIEW1)
    assert server.ttl(f"api.{SUFFIX}.", "A") == 45
    serial = server.serial()

    p = node.sync(VIEW1, check=0)
    assert "no changes" in p.stdout, p.stdout
    assert "replace" not in p.stdout and "delete" not in p.stdout
    assert server.serial() == serial  # no UPDATE reached the zone


def test_changed_ip_replaces_rrset_and_foreign_records_stay(pk, workdir, server):
    node = Node(pk, workdir, server, "m1")
    node.sync(VIEW1, check=0)
    moved = json.loads(json.dumps(VIEW1))
    moved["masters"][0]["internalIPs"] = ["10.0.0.11"]
    node.sync(moved, check=0)
    got = served(server, owned_names(moved))
    assert got == expected(moved)
    assert got[(f"api.{SUFFIX}.", "A")] == ["10.0.0.11", "10.0.0.2", "10.0.0.3"]
    assert got[(f"etcd-a.{SUFFIX}.", "A")] == ["10.0.0.11"]  # replaced, not merged
    # Everything we do not own is untouched: other names, and other types at owned names.
    assert server.query(f"foreign.{ZONE}") == ["192.0.2.99"]
    assert server.query(f"etcd-z.{SUFFIX}.") == ["192.0.2.50"]
    assert server.query(f"api.{SUFFIX}.", "TXT") == ['"owned name, foreign type"']
    assert server.query(f"api.{CLUSTER}.", "MX") == [f"10 mail.{ZONE}"]
    assert server.query(f"ns1.{ZONE}") == ["127.0.0.1"]


def test_external_ips_gone_deletes_only_address_types(pk, workdir, server):
    node = Node(pk, workdir, server, "m1")
    node.sync(VIEW1, check=0)
    assert server.query(f"api.{CLUSTER}.") == ["203.0.113.1", "203.0.113.3"]
    no_ext = json.loads(json.dumps(VIEW1))
    for m in no_ext["masters"]:
        m["externalIPs"] = []
    p = node.sync(no_ext, check=0)
    assert f"delete\tapi.{CLUSTER}.\tA" in p.stdout
    assert server.query(f"api.{CLUSTER}.") == []
    assert server.query(f"api.{CLUSTER}.", "MX") == [f"10 mail.{ZONE}"]


def test_wrong_key_is_badsig_and_changes_nothing(pk, workdir, server):
    good = Node(pk, workdir, server, "good")
    good.sync(VIEW1, check=0)
    serial = server.serial()
    before = served(server, owned_names(VIEW2))
    bad = Node(pk, workdir, server, "bad", secret="d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldC0xMjM0NTY=")
    p = bad.sync(VIEW2, check=1)
    assert "BADSIG" in p.stderr, p.stderr
    assert server.server in p.stderr
    assert "d3Jvbmctc2VjcmV0" not in p.stderr + p.stdout  # the secret never shows
    assert server.serial() == serial
    assert served(server, owned_names(VIEW2)) == before


def test_key_file_readable_by_others_is_refused(pk, workdir, server):
    node = Node(pk, workdir, server, "m1", key_mode=0o644)
    serial = server.serial()
    p = node.sync(VIEW1, check=1)
    assert node.key in p.stderr and "0644" in p.stderr, p.stderr
    assert server.serial() == serial


def test_key_file_owned_by_another_user_is_refused(pk, workdir, server):
    """A 0600 key that another user owns can be replaced by that user: refused, naming file, mode and owner."""
    node = Node(pk, workdir, server, "m1")
    os.chown(node.key, 65534, 65534)
    serial = server.serial()
    p = node.sync(VIEW1, check=1)
    assert node.key in p.stderr and "0600" in p.stderr and "uid 65534" in p.stderr, p.stderr
    assert server.secret not in p.stderr + p.stdout
    assert server.serial() == serial
    os.chown(node.key, 0, 0)  # root's key is fine
    node.sync(VIEW1, check=0)
    assert served(server, owned_names(VIEW1)) == expected(VIEW1)


def test_stopped_server_gives_timeout_error(pk, workdir, server):
    node = Node(pk, workdir, server, "m1", timeout="500ms")
    node.sync(VIEW1, check=0)
    server.stop()
    p = node.sync(VIEW2)
    assert p.returncode == 1, (p.returncode, p.stderr)  # an error, not a crash
    assert "no response" in p.stderr and server.server in p.stderr, p.stderr
    assert f"zone '{ZONE}'" in p.stderr, p.stderr


def test_two_nodes_converge_to_provider_truth(pk, workdir, server):
    a = Node(pk, workdir, server, "a")
    b = Node(pk, workdir, server, "b")
    a.sync(VIEW1, check=0)
    assert "no changes" in b.sync(VIEW1, check=0).stdout
    # m3 goes away. a observes it first; b's observation lags one pass and writes what it saw.
    a.sync(VIEW2, check=0)
    b.sync(VIEW1, check=0)
    # From now on both see the provider's truth: one pass rewrites it, then nothing changes, whoever syncs.
    a.sync(VIEW2, check=0)
    serial = server.serial()
    for i in range(3):
        for node in (b, a):
            p = node.sync(VIEW2, check=0)
            assert "no changes" in p.stdout, (i, p.stdout)
    assert server.serial() == serial
    got = served(server, owned_names(VIEW1) | owned_names(VIEW2))
    assert got == expected(VIEW2)
    assert "10.0.0.3" not in str(got) and "203.0.113.3" not in str(got)


def test_large_rrset_goes_over_tcp(pk, workdir, server):
    # 60 masters: the UPDATE is far over 512 octets (sent over TCP) and the A answer is truncated over UDP
    # (the read falls back to TCP).
    big = view({f"m{i:02d}": ([f"10.1.0.{i}"], []) for i in range(1, 61)}, [("main", "a", "m01")])
    node = Node(pk, workdir, server, "m1")
    node.sync(big, check=0)
    assert server.query(f"api.{SUFFIX}.") == sorted(f"10.1.0.{i}" for i in range(1, 61))
    assert "no changes" in node.sync(big, check=0).stdout


def test_unheld_member_gets_placeholder_then_real_address(pk, workdir, server):
    # Cold start: member c is in the tags but nobody holds its volume yet. Its name must exist (never
    # NXDOMAIN, docs/etcd-dns.md) with the placeholder address and a short TTL, then move to the holder.
    cold = json.loads(json.dumps(VIEW1))
    cold["masters"] = [m for m in cold["masters"] if m["name"] != "m3"]
    for m in cold["members"]:
        if m["node"] == "m3":
            m["node"] = None
    node = Node(pk, workdir, server, "m1")
    node.sync(cold, check=0)
    assert server.query(f"etcd-c.{SUFFIX}.") == ["203.0.113.123"]
    assert server.query(f"etcd-events-c.{SUFFIX}.") == ["203.0.113.123"]
    assert server.ttl(f"etcd-c.{SUFFIX}.") == 10
    node.sync(VIEW1, check=0)
    assert server.query(f"etcd-c.{SUFFIX}.") == ["10.0.0.3"]
    assert server.ttl(f"etcd-c.{SUFFIX}.") == 45


@pytest.mark.parametrize("kind", ["bind", "knot"])
def test_two_zones_found_by_soa_one_update_each(pk, workdir, kind):
    # The internal names live in a zone of their own on the same server: the SOA walk finds it, and each
    # zone gets its own UPDATE holding only its names (the parent would answer NOTZONE for the others).
    child = f"{SUFFIX}."
    srv = dnsservers.start(kind, workdir, dnsservers.free_port(), extra_zones=[child])
    try:
        node = Node(pk, workdir, srv, "m1", zone=None)
        node.sync(VIEW1, check=0)
        assert served(srv, owned_names(VIEW1)) == expected(VIEW1)
        soa = srv.query(child, "SOA")
        assert soa and int(soa[0].split()[2]) > 1  # the child zone took the internal names
        assert "no changes" in node.sync(VIEW1, check=0).stdout
    finally:
        srv.stop()


def test_zone_not_served_is_refused_with_server_and_zone(pk, workdir, server):
    node = Node(pk, workdir, server, "m1", zone="elsewhere.test.", cluster="demo.elsewhere.test",
                suffix="internal.demo.elsewhere.test")
    serial = server.serial()
    p = node.sync(VIEW1, check=1)
    assert server.server in p.stderr and "zone 'elsewhere.test.'" in p.stderr, p.stderr
    assert "REFUSED" in p.stderr, p.stderr
    assert server.serial() == serial
