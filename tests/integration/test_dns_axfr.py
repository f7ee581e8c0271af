"""protokube dns sync reading many owned names with one signed zone transfer (AXFR) from a real BIND 9 on
loopback, and falling back to per-name reads where BIND refuses the transfer (docs/dns.md). BIND's own
statistics channel (on loopback) counts the requests it received by opcode and type."""
import json
import os
import shutil
import tempfile
import urllib.request

import pytest

import dnsservers

ZONE = "k8s.test."
CLUSTER = "demo.k8s.test"
SUFFIX = f"internal.{CLUSTER}."
KEY = dnsservers.DEFAULT_KEY_NAME
ALLOW = f"allow-transfer {{ key {KEY}; }};"
DENY = "allow-transfer { none; };"
# Refused to our key, allowed to an unsigned dig (so that the test can still read the whole zone).
DENY_KEY = f"allow-transfer {{ !key {KEY}; 127.0.0.1; }};"


def big_view(n_members=100, first_ip="10.0.0.1"):
    """Three masters and n_members etcd main members: n_members + 2 owned names, above the transfer's
    threshold of 64 names."""
    masters = [{"name": f"m{i}", "internalIPs": [f"10.0.0.{i + 1}"], "externalIPs": [f"203.0.113.{i + 1}"]}
               for i in range(3)]
    masters[0]["internalIPs"] = [first_ip, "fd00::1"]
    members = [{"cluster": "main", "member": f"x{j:03d}", "node": f"m{j % 3}"} for j in range(n_members)]
    return {"masters": masters, "members": members}


# What is in the zone before protokube runs: foreign names, foreign types at owned names, owned names with
# wrong, partial or right data, a TTL that differs, a CNAME at an owned name, and an empty non-terminal.
PRELOAD = [
    "foreign IN A 192.0.2.99",
    f"api.{SUFFIX} IN TXT \"owned name, foreign type\"",
    f"etcd-x000.{SUFFIX} 60 IN A 10.0.0.1",          # right
    f"etcd-x001.{SUFFIX} 60 IN A 192.0.2.1",         # wrong
    f"etcd-x002.{SUFFIX} 60 IN A 10.0.0.3",          # right address
    f"etcd-x002.{SUFFIX} 60 IN A 192.0.2.2",         # ... and one too many
    f"etcd-x003.{SUFFIX} 300 IN A 10.0.0.1",         # right address, other TTL
    f"etcd-x004.{SUFFIX} 60 IN AAAA fd00::99",       # a stale AAAA
    f"a.b.etcd-x006.{SUFFIX} 60 IN TXT \"below an owned name\"",
]
# A CNAME where an A belongs: BIND ignores the A records added there (RFC 2136 §3.4.2.2), so such a zone
# never converges, whichever way it is read; only the comparison of the two ways uses it.
CNAME = f"etcd-x005.{SUFFIX} 60 IN CNAME api.{SUFFIX}"


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="pk-axfr-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


class Bind:
    def __init__(self, workdir, zone_options, records=PRELOAD):
        self.stats_port = dnsservers.free_port()
        self.srv = dnsservers.start_bind(
            workdir, dnsservers.free_port(), records=records, zone_options=zone_options,
            extra_conf=f"statistics-channels {{ inet 127.0.0.1 port {self.stats_port} allow {{ 127.0.0.1; }}; }};")

    def counts(self):
        """{"UPDATE": n, "QUERY": n, "AXFR": n}: the requests BIND received, from its statistics channel."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.stats_port}/json/v1/server", timeout=5) as r:
            s = json.load(r)
        return {"UPDATE": s.get("opcodes", {}).get("UPDATE", 0), "QUERY": s.get("opcodes", {}).get("QUERY", 0),
                "AXFR": s.get("qtypes", {}).get("AXFR", 0)}

    def stop(self):
        self.srv.stop()


def node(pk, workdir, srv, name):
    d = os.path.join(workdir, name)
    os.makedirs(d, exist_ok=True)
    key = dnsservers.write_key_file(os.path.join(d, "tsig.key"), srv.key_name, srv.algorithm, srv.secret)
    spec = os.path.join(d, "cluster.yaml")
    with open(spec, "w") as f:
        f.write(f"""apiVersion: protokube/v1alpha1
kind: Cluster
metadata: {{name: {CLUSTER}}}
spec:
  cloud: local
  dns:
    provider: rfc2136
    zone: {ZONE}
    ttl: 60
    rfc2136: {{server: "{srv.server}", tsigKeyFile: {key}, timeout: 2s}}
  etcdClusters:
    - {{name: main, image: registry.k8s.io/etcd:3.5.16-0}}
  kubernetesVersion: 1.31.2
""")

    def sync(v, dry=False):
        vf = os.path.join(d, "view.json")
        with open(vf, "w") as f:
            json.dump(v, f)
        return pk("-c", spec, "dns", "sync", "--view", vf, check=0, timeout=60)
    return sync


def zone_dump(srv, signed):
    """Every record of the zone but the SOA, by an AXFR with dig (an independent client)."""
    key = ["-y", f"hmac-sha256:{srv.key_name}:{srv.secret}"] if signed else []
    p = dnsservers.subprocess.run(["dig", *key, f"@{srv.addr}", "-p", str(srv.port), ZONE, "AXFR", "+noall",
                                   "+answer", "+time=5", "+tries=1"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return sorted(" ".join(ln.split()) for ln in p.stdout.splitlines() if ln.strip() and "\tSOA\t" not in ln
                  and " SOA " not in " ".join(ln.split()))


def test_many_names_one_transfer_then_no_update(pk, workdir):
    b = Bind(workdir, ALLOW)
    try:
        sync = node(pk, workdir, b.srv, "m1")
        v = big_view()
        before = b.counts()
        p = sync(v)
        after = b.counts()
        assert "replace" in p.stdout
        assert "zone transfer" not in p.stderr, p.stderr
        # One transfer instead of 2 x 102 queries; one UPDATE.
        assert after["AXFR"] - before["AXFR"] == 1, (before, after)
        assert after["QUERY"] - before["QUERY"] == 1, (before, after)  # the AXFR is a QUERY opcode
        assert after["UPDATE"] - before["UPDATE"] == 1, (before, after)
        assert b.srv.query(f"etcd-x001.{SUFFIX}") == ["10.0.0.2"]
        assert b.srv.query(f"etcd-x002.{SUFFIX}") == ["10.0.0.3"]
        assert b.srv.ttl(f"etcd-x003.{SUFFIX}") == 60
        assert b.srv.query(f"etcd-x004.{SUFFIX}", "AAAA") == []
        assert b.srv.query(f"api.{SUFFIX}", "TXT") == ['"owned name, foreign type"']
        assert b.srv.query(f"foreign.{ZONE}") == ["192.0.2.99"]
        serial = b.srv.serial()

        # The converged zone: one transfer, nothing sent.
        before = b.counts()
        p = sync(v)
        after = b.counts()
        assert "no changes" in p.stdout, p.stdout + p.stderr
        assert after["UPDATE"] == before["UPDATE"], (before, after)
        assert after["AXFR"] - before["AXFR"] == 1
        assert b.srv.serial() == serial

        # A change of one address is found and sent.
        p = sync(big_view(first_ip="10.0.0.11"))
        assert f"replace\tetcd-x000.{SUFFIX}\t60\tIN\tA\t10.0.0.11" in p.stdout, p.stdout
        assert b.srv.query(f"etcd-x000.{SUFFIX}") == ["10.0.0.11"]
    finally:
        b.stop()


def test_transfer_refused_falls_back_to_per_name_reads(pk, workdir):
    b = Bind(workdir, DENY)
    try:
        sync = node(pk, workdir, b.srv, "m1")
        v = big_view()
        p = sync(v)
        assert "replace" in p.stdout
        assert "zone transfer of 'k8s.test.'" in p.stderr and "REFUSED" in p.stderr, p.stderr
        assert "allow-transfer" in p.stderr
        serial = b.srv.serial()
        before = b.counts()
        p = sync(v)
        after = b.counts()
        assert "no changes" in p.stdout, p.stdout + p.stderr
        assert after["UPDATE"] == before["UPDATE"]
        assert after["QUERY"] - before["QUERY"] >= 2 * 102  # the refused AXFR and the per-name reads
        assert b.srv.serial() == serial
    finally:
        b.stop()


def test_transfer_and_per_name_reads_decide_the_same(pk, workdir):
    """The same zone content on two servers, one allowing the transfer and one not: the same changes are
    decided and the zones end up the same."""
    for sub in ("a", "d"):
        os.makedirs(os.path.join(workdir, sub))
        os.chmod(os.path.join(workdir, sub), 0o755)
    allow, deny = Bind(os.path.join(workdir, "a"), ALLOW, PRELOAD + [CNAME]), None
    try:
        deny = Bind(os.path.join(workdir, "d"), DENY_KEY, PRELOAD + [CNAME])
        outs = []
        for b in (allow, deny):
            p = node(pk, workdir, b.srv, f"n{b.srv.port}")(big_view())
            outs.append(p.stdout)
        assert outs[0] == outs[1]
        assert "zone transfer" in p.stderr  # the second went by name
        assert "; Transfer failed." not in zone_dump(deny.srv, False)
        assert zone_dump(allow.srv, True) == zone_dump(deny.srv, False)
    finally:
        allow.stop()
        if deny:
            deny.stop()


def test_few_names_read_by_name(pk, workdir):
    """Below the threshold no transfer is asked for, even where it is allowed."""
    b = Bind(workdir, ALLOW)
    try:
        before = b.counts()
        node(pk, workdir, b.srv, "m1")(big_view(n_members=10))
        assert b.counts()["AXFR"] == before["AXFR"]
    finally:
        b.stop()
