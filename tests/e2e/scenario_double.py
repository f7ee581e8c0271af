# SPDX-License-Identifier: Apache-2.0
"""Steps 1-2 of the no-ops etcd scenario (scenario.py) on a cloud's API double (cluster_double.py), what
scenario_aws.py (EC2, Route 53, S3) and scenario_gce.py (Compute Engine, Cloud DNS, Cloud Storage) share:
three masters, each an instance of the double, claim their disks and publish their records in the cloud's DNS
zone; then master b is terminated and a standby master d in b's zone takes over its disks, and etcd member b
comes back on d with its data. A subclass names the cluster and the words of its cloud, and may add checks
(on_cold_start) and figures (summary)."""

import calendar
import json
import os
import sys
import time

from cluster import CLUSTER, SUFFIX, ZONE
from scenario import PORTS, ScenarioError, Timeline, endpoints, health_endpoint, healthy, wait_for


def member_list(c, via, cluster_name, node_names):
    """{member name: ID} from etcd, asked at the members' addresses on the cluster's network (c.addrs)."""
    ep = ",".join(f"https://{c.addrs[m]}:{PORTS[cluster_name]}" for m in node_names)
    p = c.etcdctl(via, ep, "member", "list", "-w", "json")
    if p.returncode != 0:
        return None
    return {m.get("name"): m["ID"] for m in json.loads(p.stdout)["members"]}


class ScenarioDouble:
    # The words of the cloud in the printed lines (a subclass'), and the prefix of the failover's DNS stages
    # ("<stage> change", "<stage> <done>"): the change accepted, and seen served everywhere
    cloud = "EC2"
    disks = "EBS volumes"
    dns = "Route 53"
    store = "S3"
    metadata = "IMDS"
    stage, done = "route53", "insync"
    zones = {}  # master -> its zone: one per member, d in b's
    www = "198.18.42.200"  # the zone's record that is not ours: it must survive every pass

    def __init__(self, cluster, out=sys.stdout):
        self.c = cluster
        self.tl = Timeline(out)
        self.out = out
        self.failover = {}
        self.steps = {}
        self.cleanup_errors = []

    def say(self, s):
        print(s, file=self.out, flush=True)

    def records_are(self, want):
        """want: {name: [addresses]}. True when the double's zone (what protokube wrote) and BIND (what the
        masters' resolvers answer, through the mirror) both hold exactly these addresses."""
        have = self.c.records()
        for name, addrs in want.items():
            if have.get(name) != sorted(addrs) or self.c.bind.lookup(name) != sorted(addrs):
                return False
        return True

    def wait_records(self, what, want, timeout=30):
        try:
            wait_for(what, lambda: self.records_are(want), timeout, 0.05)
        except ScenarioError:
            have = self.c.records()
            raise ScenarioError(f"{what}: wanted {want}; {self.dns} has "
                                f"{ {n: have.get(n) for n in want} }, BIND has "
                                f"{ {n: self.c.bind.lookup(n) for n in want} }")

    def on_cold_start(self):
        """More checks once the cold start is done (a subclass')."""

    def summary(self):
        """More lines for the summary, read before the cleanup (a subclass')."""
        return []

    def step1_cold_start(self):
        c, t_start = self.c, time.monotonic()
        self.say(f"\n1. Cold start: three {self.cloud} masters, six {self.disks} (etcd main+events for a, b, c), "
                 f"{self.dns}")
        c.setup(zones=self.zones)
        self.tl.mark(f"{c.double_host.upper()} double, BIND and the {self.dns} mirror ready")
        for n in "abc":
            c.add_master(n, c.addrs[n], c.external[n], self.zones[n])
        self.tl.mark(f"masters a, b, c started (protokube run + pod runner; identity from {self.metadata})")
        for cl in ("main", "events"):
            wait_for(f"etcd {cl} healthy on a, b, c",
                     lambda cl=cl: healthy(c, "a", endpoints(cl, "abc")), 60, 0.1)
            ml = wait_for(f"etcd {cl} with 3 members",
                          lambda cl=cl: (lambda m: m if m and len(m) == 3 else None)(
                              member_list(c, "a", cl, "abc")), 30)
            self.tl.mark(f"etcd {cl}: 3 healthy members {sorted(ml)}")
        holders = c.holders()
        for n in "abc":
            for cl in ("main", "events"):
                disk = c.disk_id(cl, n)
                if holders.get(disk) != c.node_name(n):
                    raise ScenarioError(f"{disk} is held by {holders.get(disk)}, not by master {n} "
                                        f"({c.node_name(n)}) in its zone")
        want = {}
        for n in "abc":
            want[f"etcd-{n}.{SUFFIX}"] = [c.addrs[n]]
            want[f"etcd-events-{n}.{SUFFIX}"] = [c.addrs[n]]
        want[f"api.{SUFFIX}"] = [c.addrs[n] for n in "abc"]
        want[f"api.{CLUSTER}"] = [c.external[n] for n in "abc"]
        want[f"www.{ZONE}"] = [self.www]
        self.wait_records(f"records for a, b, c in {self.dns} and resolvable", want)
        self.tl.mark(f"{self.dns} (and the resolver): etcd-{{a,b,c}}, etcd-events-{{a,b,c}}, api.internal, api "
                     f"point to the right nodes; www untouched")
        p = c.etcdctl("a", endpoints("main", "abc"), "put", "/protokube/e2e", "written-at-step-1")
        if p.returncode != 0:
            raise ScenarioError(f"etcdctl put failed: {p.stderr}")
        self.member_ids = {cl: member_list(c, "a", cl, "abc") for cl in ("main", "events")}
        with open(os.path.join(c.masters["b"].mnt, f"master-{c.disk_id('main', 'b')}", "e2e-marker"), "w") as f:
            f.write("b")
        self.tl.mark("key written; member IDs recorded; marker on b's main disk")
        self.on_cold_start()
        self.steps["1 cold start"] = time.monotonic() - t_start

    def step2_replace_b(self):
        c, t_start = self.c, time.monotonic()
        self.say(f"\n2. Terminate master b; standby master d in b's zone takes over its {self.disks}")
        d = c.add_master("d", c.addrs["d"], c.external["d"], self.zones["d"])
        wait_for("d's protokube serving /healthz", lambda: d.health()[0] in (200, 503), 20)
        self.tl.mark("standby master d started (no disk free yet)")
        if any(h == c.node_name("d") for h in c.holders().values()):
            raise ScenarioError("d took a disk while b still held it")
        c.terminate_machine("b")
        self.tl.mark("master b terminated: processes killed, mounts gone, host removed")
        # The failover is timed from the release, as in the process simulation (scenario.py): from the moment
        # the cloud marks the instance terminated and detaches its disks.
        t0 = time.monotonic()
        c.release_instance("b")
        self.tl.mark(f"{self.cloud}: instance {c.node_name('b')} terminated, its {self.disks} detached")
        wait_for("etcd-b healthy on d", lambda: health_endpoint(c, "d", "http://127.0.0.1:8081"), 60, 0.005)
        t1 = time.monotonic()
        self.failover["total"] = t1 - t0
        self.tl.mark(f"etcd-b healthy on d: failover {1000 * (t1 - t0):.0f} ms")
        wait_for("etcd-events-b healthy on d",
                 lambda: healthy(c, "d", f"https://{c.addrs['d']}:{PORTS['events']}"), 60, 0.02)
        self.tl.mark("etcd-events-b healthy on d")
        holders = c.holders()
        for cl in ("main", "events"):
            if holders.get(c.disk_id(cl, "b")) != c.node_name("d"):
                raise ScenarioError(f"{c.disk_id(cl, 'b')} is held by {holders.get(c.disk_id(cl, 'b'))}, not d")
            ml = wait_for(f"{cl} member list via a, c, d", lambda cl=cl: member_list(c, "a", cl, "acd"), 20)
            if ml != self.member_ids[cl]:
                raise ScenarioError(f"etcd {cl} membership changed: before {self.member_ids[cl]}, after {ml}")
        p = c.etcdctl("d", f"https://{c.addrs['d']}:{PORTS['main']}", "get", "/protokube/e2e", "--print-value-only")
        if p.stdout.strip() != "written-at-step-1":
            raise ScenarioError(f"key not readable from etcd-b on d: {p.stdout!r} {p.stderr!r}")
        if not os.path.exists(os.path.join(d.mnt, f"master-{c.disk_id('main', 'b')}", "e2e-marker")):
            raise ScenarioError("d mounted b's disk but the marker is gone: reformatted?")
        mkfs = [line.get("msg") for line in d.log_lines() if "creating an ext4 filesystem" in line.get("msg", "")]
        if mkfs:
            raise ScenarioError(f"d formatted a disk: {mkfs}")
        self.wait_records("records moved to d", {
            f"etcd-b.{SUFFIX}": [c.addrs["d"]], f"etcd-events-b.{SUFFIX}": [c.addrs["d"]],
            f"etcd-a.{SUFFIX}": [c.addrs["a"]], f"etcd-c.{SUFFIX}": [c.addrs["c"]],
            f"api.{SUFFIX}": [c.addrs[n] for n in "acd"], f"api.{CLUSTER}": [c.external[n] for n in "acd"],
            f"www.{ZONE}": [self.www]})
        self.tl.mark("etcd-b rejoined with its data: same member IDs, key readable, no reformat; "
                     "etcd-b -> d, api.internal = a, c, d")
        self.steps["2 replace b"] = time.monotonic() - t_start
        self.failover.update(self.breakdown(d, t0))

    def breakdown(self, d, t0_mono):
        """Stage times of the failover (s after the release) from d's JSON log, the masters' logs (the first
        DNS change of etcd-b -> d, logged once the service accepted it, and the same master's log line seeing
        it served everywhere), the mirror's log (BIND answers it) and the pod runner's events."""
        wall0 = time.time() - (time.monotonic() - t0_mono)

        def when(line):
            t = line.get("time", "")
            return calendar.timegm(time.strptime(t[:19], "%Y-%m-%dT%H:%M:%S")) + float(t[19:-1] or 0)

        stages = {}
        vid = self.c.disk_id("main", "b")
        addr_d = self.c.addrs["d"]
        for line in d.log_lines():
            msg, ts = line.get("msg", ""), when(line)
            if ts < wall0:
                continue
            for stage, needle in (("claim", f"Claimed volume '{vid}'"), ("mount", f"Mounted volume '{vid}'"),
                                  ("manifest", f"master-{vid}/k8s.io/manifests/etcd.manifest")):
                if needle in msg and stage not in stages:
                    stages[stage] = ts - wall0
        first = None
        for m in self.c.masters.values():
            for line in m.log_lines():
                if f"etcd-b.{SUFFIX}. A -> {addr_d}" in line.get("msg", "") and when(line) >= wall0:
                    if first is None or when(line) - wall0 < first[1]:
                        first = (m, when(line) - wall0)
        if first:
            stages[f"{self.stage} change"] = first[1]
            for line in first[0].log_lines():
                if "INSYNC" in line.get("msg", "") and when(line) - wall0 >= first[1]:
                    stages[f"{self.stage} {self.done}"] = when(line) - wall0
                    break
        for ev in self.c.mirror_events():
            if ev.get("name") == f"etcd-b.{SUFFIX}." and ev.get("values") == [addr_d] and ev["time"] >= wall0:
                stages.setdefault("resolvable", ev["time"] - wall0)
        for ev in d.runner_events():
            if ev["what"] == "started" and ev.get("pod") == "etcd-server" and ev["time"] >= wall0:
                stages.setdefault("etcd start", ev["time"] - wall0)
        return dict(sorted(stages.items(), key=lambda kv: kv[1]))

    def run(self):
        lines = []
        try:
            self.step1_cold_start()
            self.step2_replace_b()
            bad = self.c.tls_rejections()
            if bad:
                raise ScenarioError("TLS rejections in etcd's logs:\n  " + "\n  ".join(bad[:20]))
            self.tl.mark(f"etcd over TLS with certificates from the {self.store} state store: no rejection")
            lines = self.summary()
        finally:
            self.say(f"\ncleaning up (namespaces, loop devices, mounts, processes, the {self.dns} mirror) ...")
            self.cleanup_errors = self.c.close()
        if self.cleanup_errors:
            raise ScenarioError(f"cleanup: {self.cleanup_errors}")
        self.say("\nTimeline:\n" + self.tl.table())
        self.say("\nSteps: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.steps.items()))
        self.say(f"Failover ({self.disks} of b released -> etcd-b healthy on d; {self.dns} {self.done.upper()} "
                 f"after {self.c.dns_delay:g} s): {1000 * self.failover['total']:.0f} ms; by stage (ms after the "
                 "release):")
        for k, v in self.failover.items():
            if k != "total":
                self.say(f"  {k:16s} {1000 * v:7.0f}")
        for line in lines:
            self.say(line)
        self.say(f"\nSUCCESS: on the {self.c.double_host.upper()} double, etcd healed itself through {self.dns}: "
                 f"b's {self.disks} moved to d with no human step.")
        return self.failover
