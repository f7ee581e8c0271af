# protokube's routes (shared/netlink-route.h) against the real kernel, through `protokube routes` and
# `protokube routes set PREFIX=GATEWAY...`, in a network namespace of each test's own: a veth pair with an
# address of each family (so gateways are on-link), loopback up, no default route, deleted at the end even
# after a failure. Checked with iproute2: `ip -j route show proto 0xb5` is protokube's, and no route of
# another owner (proto static, blackhole, the kernel's) is ever changed or deleted.
import json
import os
import subprocess

import pytest

from conftest import need_root, protokube_bin

PROTO = "0xb5"


class Netns:
    def __init__(self, name):
        self.name = name

    def ip(self, *args, check=True):
        p = subprocess.run(["ip", "-n", self.name, *args], capture_output=True, text=True, timeout=30)
        if check and p.returncode != 0:
            raise AssertionError(f"ip {' '.join(args)}: {p.stderr}")
        return p

    def routes(self, family, *selector):
        """The main table's routes as iproute2 reports them: [(dst, gateway, protocol, type)]."""
        out = self.ip("-j", family, "route", "show", "table", "main", *selector).stdout
        return sorted((r["dst"], r.get("gateway", ""), r.get("protocol", PROTO if "proto" in selector else ""),
                       r.get("type", "unicast")) for r in json.loads(out or "[]"))

    def ours(self, family="-4"):
        return [(dst, gw) for dst, gw, _, _ in self.routes(family, "proto", PROTO)]

    def pk(self, *args):
        return subprocess.run(["ip", "netns", "exec", self.name, protokube_bin(), *args], capture_output=True,
                              text=True, timeout=60)


@pytest.fixture
def ns():
    need_root()
    n = Netns(f"pk-nlroute-{os.getpid()}")
    subprocess.run(["ip", "netns", "add", n.name], check=True, timeout=30)
    try:
        n.ip("link", "set", "lo", "up")
        n.ip("link", "add", "v0", "type", "veth", "peer", "name", "v1")
        n.ip("link", "set", "v0", "up")
        n.ip("link", "set", "v1", "up")
        n.ip("addr", "add", "10.0.0.1/24", "dev", "v0")
        n.ip("addr", "add", "fd00::1/64", "dev", "v0", "nodad")
        yield n
    finally:
        subprocess.run(["ip", "netns", "del", n.name], timeout=30)


def ok(p):
    assert p.returncode == 0, f"exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    return p


def test_routes_set_adds_replaces_and_deletes_ipv4_and_ipv6(ns):
    p = ok(ns.pk("routes", "set", "10.1.0.0/24=10.0.0.2", "10.2.0.0/24=10.0.0.3", "fd00:1::/64=fd00::2",
                 "fd00:2::/64=fd00::3"))
    assert "replace 10.1.0.0/24 via 10.0.0.2" in p.stdout.splitlines()
    assert ns.ours("-4") == [("10.1.0.0/24", "10.0.0.2"), ("10.2.0.0/24", "10.0.0.3")]
    assert ns.ours("-6") == [("fd00:1::/64", "fd00::2"), ("fd00:2::/64", "fd00::3")]
    listed = ok(ns.pk("routes")).stdout.splitlines()
    assert sorted(listed) == ["10.1.0.0/24 via 10.0.0.2 dev v0", "10.2.0.0/24 via 10.0.0.3 dev v0",
                              "fd00:1::/64 via fd00::2 dev v0", "fd00:2::/64 via fd00::3 dev v0"]

    # the same again: nothing to do, nothing printed
    assert ok(ns.pk("routes", "set", "10.1.0.0/24=10.0.0.2", "10.2.0.0/24=10.0.0.3", "fd00:1::/64=fd00::2",
                    "fd00:2::/64=fd00::3")).stdout == ""

    # a gateway changed (replaced in place), a route no longer wanted (deleted), a new one, both families
    p = ok(ns.pk("routes", "set", "10.1.0.0/24=10.0.0.4", "10.3.0.0/24=10.0.0.5", "fd00:1::/64=fd00::4"))
    assert ns.ours("-4") == [("10.1.0.0/24", "10.0.0.4"), ("10.3.0.0/24", "10.0.0.5")]
    assert ns.ours("-6") == [("fd00:1::/64", "fd00::4")]
    lines = p.stdout.splitlines()
    assert "replace 10.1.0.0/24 via 10.0.0.4" in lines and "delete 10.2.0.0/24 via 10.0.0.3" in lines
    assert "delete fd00:2::/64 via fd00::3" in lines
    assert not any("10.1.0.0/24 via 10.0.0.2" in line for line in lines)  # taken over, not deleted apart

    # a route of ours with no gateway of its own (multipath, made by hand) changed to one gateway in place:
    # the delete of the old one must not take the new one with it
    ns.ip("route", "add", "10.6.0.0/24", "proto", PROTO, "nexthop", "via", "10.0.0.6", "nexthop", "via", "10.0.0.7")
    ns.ip("-6", "route", "add", "fd00:6::/64", "proto", PROTO, "nexthop", "via", "fd00::6", "nexthop", "via",
          "fd00::7")
    ok(ns.pk("routes", "set", "10.6.0.0/24=10.0.0.8", "fd00:6::/64=fd00::8"))
    assert ns.ours("-4") == [("10.6.0.0/24", "10.0.0.8")]
    assert ns.ours("-6") == [("fd00:6::/64", "fd00::8")]

    # nothing wanted: none of ours is left; the kernel's own routes are all there
    ok(ns.pk("routes", "set"))
    assert ns.ours("-4") == [] and ns.ours("-6") == []
    assert ("10.0.0.0/24", "", "kernel", "unicast") in ns.routes("-4")
    assert ok(ns.pk("routes")).stdout == ""


def test_routes_never_change_another_owners_route(ns):
    ns.ip("route", "add", "10.9.0.0/24", "via", "10.0.0.99", "proto", "static")
    ns.ip("-6", "route", "add", "fd00:9::/64", "via", "fd00::99", "proto", "static")
    ns.ip("route", "add", "blackhole", "10.66.0.0/16")
    before4, before6 = ns.routes("-4"), ns.routes("-6")

    # set: a prefix another owner routes is refused by name (a replace would take that route over)
    p = ns.pk("routes", "set", "10.9.0.0/24=10.0.0.9", "fd00:9::/64=fd00::9", "10.66.0.0/16=10.0.0.6",
              "10.1.0.0/24=10.0.0.2")
    assert p.returncode == 1, p
    assert "10.9.0.0/24 via 10.0.0.9: refused: another owner's route has this prefix " \
           "(10.9.0.0/24 via 10.0.0.99 proto static)" in p.stderr, p.stderr
    assert "fd00:9::/64 via fd00::9: refused: another owner's route has this prefix" in p.stderr, p.stderr
    assert "10.66.0.0/16 via 10.0.0.6: refused: another owner's route has this prefix (not unicast: " \
           "10.66.0.0/16 proto boot)" in p.stderr, p.stderr
    assert ns.ours("-4") == [("10.1.0.0/24", "10.0.0.2")]  # the others given are still made
    assert ns.ours("-6") == []
    assert [r for r in ns.routes("-4") if r[0] != "10.1.0.0/24"] == before4
    assert ns.routes("-6") == before6

    # delete: ours and a static route of the same prefix, gateway and metric, told apart by the protocol
    # alone; the kernel deletes the first match unless the request names the protocol
    ns.ip("route", "add", "10.7.0.0/24", "via", "10.0.0.7", "proto", "static")
    ns.ip("route", "append", "10.7.0.0/24", "via", "10.0.0.7", "proto", PROTO)
    # (IPv6 takes no second route of the same prefix, gateway and metric: ours differs in its metric)
    ns.ip("-6", "route", "add", "fd00:9::/64", "via", "fd00::99", "proto", PROTO, "metric", "512")
    assert ("10.7.0.0/24", "10.0.0.7") in ns.ours("-4") and ns.ours("-6") == [("fd00:9::/64", "fd00::99")]
    p = ok(ns.pk("routes", "set"))
    assert "delete 10.7.0.0/24 via 10.0.0.7" in p.stdout.splitlines()
    assert ns.ours("-4") == [] and ns.ours("-6") == []
    assert ns.routes("-4", "10.7.0.0/24") == [("10.7.0.0/24", "10.0.0.7", "static", "unicast")]
    assert ns.routes("-6", "fd00:9::/64") == [("fd00:9::/64", "fd00::99", "static", "unicast")]
    assert [r for r in ns.routes("-4") if r[0] != "10.7.0.0/24"] == before4
    assert ns.routes("-6") == before6


def test_routes_unreachable_gateway_refused_naming_the_route(ns):
    p = ns.pk("routes", "set", "10.3.0.0/24=192.0.2.1", "fd00:2::/64=2001:db8::1", "10.4.0.0/24=10.0.0.4")
    assert p.returncode == 1, p
    assert "10.3.0.0/24 via 192.0.2.1: Network is unreachable (Nexthop has invalid gateway)" in p.stderr, p.stderr
    assert "fd00:2::/64 via 2001:db8::1: No route to host" in p.stderr, p.stderr
    assert "2 of the routes could not be made as given" in p.stderr
    assert ns.ours("-4") == [("10.4.0.0/24", "10.0.0.4")]
    assert ns.ours("-6") == []


@pytest.mark.parametrize("args,message", [
    (["10.1.0.0/24"], "invalid route '10.1.0.0/24' (expected PREFIX=GATEWAY)"),
    (["10.1.0.5/24=10.0.0.2"], "'10.1.0.5/24' has bits set beyond its length"),
    (["10.1.0.0/24=fd00::2"], "the gateway is not of the prefix's family"),
    (["10.1.0.0/24=10.0.0.2", "10.1.0.0/24=10.0.0.3"], "a prefix wanted twice: 10.1.0.0/24 via 10.0.0.2 and "
                                                        "10.1.0.0/24 via 10.0.0.3"),
])
def test_routes_set_usage_errors_change_nothing(ns, args, message):
    ns.ip("route", "add", "10.8.0.0/24", "via", "10.0.0.8", "proto", PROTO)
    p = ns.pk("routes", "set", *args)
    assert p.returncode == 2, p
    assert message in p.stderr, p.stderr
    assert ns.ours("-4") == [("10.8.0.0/24", "10.0.0.8")]
