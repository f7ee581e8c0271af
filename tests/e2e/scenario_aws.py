#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Steps 1-2 of the no-ops etcd scenario (scenario.py) with `cloud: aws` and `dns: route53` against the AWS
double (cluster_aws.py): three masters, each an EC2 instance of the double, claim their EBS volumes and
publish their records in the Route 53 zone; then master b is terminated and a standby master d in b's zone
takes over its volumes, and etcd member b comes back on d with its data. Run as root:

    /usr/bin/python3 tests/e2e/scenario_aws.py

It cleans up everything it created (namespaces, loop devices, mounts, processes, the Route 53 mirror) even on
failure or Ctrl-C."""

import calendar
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenario  # noqa: E402
from cluster import CLUSTER, SUFFIX, ZONE  # noqa: E402
from cluster_aws import ADDRS, EXTERNAL, ClusterAws, instance_id, volume_id  # noqa: E402
from scenario import PORTS, ScenarioError, Timeline, endpoints, health_endpoint, healthy, wait_for  # noqa: E402

# One master per availability zone, as kops lays them out; d, the replacement, comes up in b's zone.
ZONES = {"a": "us-east-1a", "b": "us-east-1b", "c": "us-east-1c", "d": "us-east-1b"}
PLACEHOLDER = "203.0.113.123"  # what protokube publishes for a member nobody holds (kops' placeholder)
# Seconds until the double reports a Route 53 change INSYNC: real Route 53 typically takes tens of seconds,
# and a pass must not wait for it (docs/aws.md, "Propagation").
INSYNC_DELAY = float(os.environ.get("PROTOKUBE_AWS_INSYNC_DELAY", "30"))


def member_list(c, via, cluster_name, node_names):
    """{member name: ID} from etcd, asked at the members' addresses on this network (cluster_aws.ADDRS)."""
    ep = ",".join(f"https://{ADDRS[m]}:{PORTS[cluster_name]}" for m in node_names)
    p = c.etcdctl(via, ep, "member", "list", "-w", "json")
    if p.returncode != 0:
        return None
    return {m.get("name"): m["ID"] for m in json.loads(p.stdout)["members"]}


class ScenarioAws:
    def __init__(self, out=sys.stdout, insync_delay=INSYNC_DELAY, tag="pka"):
        self.c = ClusterAws(tag=tag, insync_delay=insync_delay)
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
        r53 = self.c.route53_records()
        for name, addrs in want.items():
            if r53.get(name) != sorted(addrs) or self.c.bind.lookup(name) != sorted(addrs):
                return False
        return True

    def wait_records(self, what, want, timeout=30):
        try:
            wait_for(what, lambda: self.records_are(want), timeout, 0.05)
        except ScenarioError:
            r53 = self.c.route53_records()
            raise ScenarioError(f"{what}: wanted {want}; Route 53 has "
                                f"{ {n: r53.get(n) for n in want} }, BIND has "
                                f"{ {n: self.c.bind.lookup(n) for n in want} }")

    def step1_cold_start(self):
        t_start = time.monotonic()
        self.say("\n1. Cold start: three EC2 masters, six EBS volumes (etcd main+events for a, b, c), Route 53")
        self.c.setup(zones=ZONES)
        self.tl.mark("AWS double, BIND and the Route 53 mirror ready")
        for n in "abc":
            self.c.add_master(n, ADDRS[n], EXTERNAL[n], ZONES[n])
        self.tl.mark("masters a, b, c started (protokube run + pod runner; identity from IMDS)")
        for cl in ("main", "events"):
            wait_for(f"etcd {cl} healthy on a, b, c",
                     lambda cl=cl: healthy(self.c, "a", endpoints(cl, "abc")), 60, 0.1)
            ml = wait_for(f"etcd {cl} with 3 members",
                          lambda cl=cl: (lambda m: m if m and len(m) == 3 else None)(
                              member_list(self.c, "a", cl, "abc")), 30)
            self.tl.mark(f"etcd {cl}: 3 healthy members {sorted(ml)}")
        holders = self.c.holders()
        for n in "abc":
            for cl in ("main", "events"):
                if holders.get(volume_id(cl, n)) != instance_id(n):
                    raise ScenarioError(f"{volume_id(cl, n)} is held by {holders.get(volume_id(cl, n))}, "
                                        f"not by master {n} ({instance_id(n)}) in its zone")
        want = {}
        for n in "abc":
            want[f"etcd-{n}.{SUFFIX}"] = [ADDRS[n]]
            want[f"etcd-events-{n}.{SUFFIX}"] = [ADDRS[n]]
        want[f"api.{SUFFIX}"] = [ADDRS[n] for n in "abc"]
        want[f"api.{CLUSTER}"] = [EXTERNAL[n] for n in "abc"]
        want[f"www.{ZONE}"] = ["198.18.42.200"]  # not ours: must survive every pass
        self.wait_records("records for a, b, c in Route 53 and resolvable", want)
        self.tl.mark("Route 53 (and the resolver): etcd-{a,b,c}, etcd-events-{a,b,c}, api.internal, api "
                     "point to the right nodes")
        p = self.c.etcdctl("a", endpoints("main", "abc"), "put", "/protokube/e2e", "written-at-step-1")
        if p.returncode != 0:
            raise ScenarioError(f"etcdctl put failed: {p.stderr}")
        self.member_ids = {cl: member_list(self.c, "a", cl, "abc") for cl in ("main", "events")}
        b_mnt = os.path.join(self.c.masters["b"].mnt, f"master-{volume_id('main', 'b')}")
        with open(os.path.join(b_mnt, "e2e-marker"), "w") as f:
            f.write("b")
        self.tl.mark("key written; member IDs recorded; marker on b's main volume")
        self.steps["1 cold start"] = time.monotonic() - t_start

    def step2_replace_b(self):
        t_start = time.monotonic()
        self.say("\n2. Terminate master b; standby master d in b's zone takes over its volumes")
        d = self.c.add_master("d", ADDRS["d"], EXTERNAL["d"], ZONES["d"])
        wait_for("d's protokube serving /healthz", lambda: d.health()[0] in (200, 503), 20)
        self.tl.mark("standby master d started (no volume free yet)")
        if any(h == instance_id("d") for h in self.c.holders().values()):
            raise ScenarioError("d took a volume while b still held it")
        self.c.terminate_machine("b")
        self.tl.mark("master b terminated: processes killed, mounts gone, host removed")
        # The failover is timed from the release, as in the process simulation (scenario.py): from the moment
        # EC2 marks the instance terminated and detaches its volumes.
        t0 = time.monotonic()
        self.c.release_instance("b")
        self.tl.mark("EC2: instance b terminated, its volumes detached")
        wait_for("etcd-b healthy on d", lambda: health_endpoint(self.c, "d", "http://127.0.0.1:8081"), 60,
                 0.005)
        t1 = time.monotonic()
        self.failover["total"] = t1 - t0
        self.tl.mark(f"etcd-b healthy on d: failover {1000 * (t1 - t0):.0f} ms")
        wait_for("etcd-events-b healthy on d",
                 lambda: healthy(self.c, "d", f"https://{ADDRS['d']}:4002"), 60, 0.02)
        self.tl.mark("etcd-events-b healthy on d")
        holders = self.c.holders()
        for cl in ("main", "events"):
            if holders.get(volume_id(cl, "b")) != instance_id("d"):
                raise ScenarioError(f"{volume_id(cl, 'b')} is held by {holders.get(volume_id(cl, 'b'))}, not d")
            ml = wait_for(f"{cl} member list via a, c, d", lambda cl=cl: member_list(self.c, "a", cl, "acd"), 20)
            if ml != self.member_ids[cl]:
                raise ScenarioError(f"etcd {cl} membership changed: before {self.member_ids[cl]}, after {ml}")
        p = self.c.etcdctl("d", f"https://{ADDRS['d']}:4001", "get", "/protokube/e2e", "--print-value-only")
        if p.stdout.strip() != "written-at-step-1":
            raise ScenarioError(f"key not readable from etcd-b on d: {p.stdout!r} {p.stderr!r}")
        marker = os.path.join(d.mnt, f"master-{volume_id('main', 'b')}", "e2e-marker")
        if not os.path.exists(marker):
            raise ScenarioError("d mounted b's volume but the marker is gone: reformatted?")
        mkfs = [line.get("msg") for line in d.log_lines() if "creating an ext4 filesystem" in line.get("msg", "")]
        if mkfs:
            raise ScenarioError(f"d formatted a volume: {mkfs}")
        self.wait_records("records moved to d", {
            f"etcd-b.{SUFFIX}": [ADDRS["d"]], f"etcd-events-b.{SUFFIX}": [ADDRS["d"]],
            f"etcd-a.{SUFFIX}": [ADDRS["a"]], f"etcd-c.{SUFFIX}": [ADDRS["c"]],
            f"api.{SUFFIX}": [ADDRS[n] for n in "acd"], f"api.{CLUSTER}": [EXTERNAL[n] for n in "acd"],
            f"www.{ZONE}": ["198.18.42.200"]})
        self.tl.mark("etcd-b rejoined with its data: same member IDs, key readable, no reformat; "
                     "etcd-b -> d, api.internal = a, c, d")
        self.steps["2 replace b"] = time.monotonic() - t_start
        self.failover.update(self.breakdown(d, t0))

    def breakdown(self, d, t0_mono):
        """Stage times of the failover (ms after the release) from d's JSON log, the masters' logs (the
        first Route 53 change of etcd-b -> d, logged once INSYNC), the mirror's log (BIND answers it) and the
        pod runner's events."""
        wall0 = time.time() - (time.monotonic() - t0_mono)

        def when(line):
            t = line.get("time", "")
            return calendar.timegm(time.strptime(t[:19], "%Y-%m-%dT%H:%M:%S")) + float(t[19:-1] or 0)

        stages = {}
        vid = volume_id("main", "b")
        for line in d.log_lines():
            msg, ts = line.get("msg", ""), when(line)
            if ts < wall0:
                continue
            for stage, needle in (("claim", f"Claimed volume '{vid}'"), ("mount", f"Mounted volume '{vid}'"),
                                  ("manifest", f"master-{vid}/k8s.io/manifests/etcd.manifest")):
                if needle in msg and stage not in stages:
                    stages[stage] = ts - wall0
        # The first master to submit etcd-b -> d to Route 53 (logged once Route 53 accepted the change), and
        # when that master saw its change INSYNC (checked at its next passes; the pass does not wait for it).
        first = None
        for m in self.c.masters.values():
            for line in m.log_lines():
                if f"etcd-b.{SUFFIX}. A -> {ADDRS['d']}" in line.get("msg", "") and when(line) >= wall0:
                    if first is None or when(line) - wall0 < first[1]:
                        first = (m, when(line) - wall0)
        if first:
            stages["route53 change"] = first[1]
            for line in first[0].log_lines():
                if "INSYNC" in line.get("msg", "") and when(line) - wall0 >= first[1]:
                    stages["route53 insync"] = when(line) - wall0
                    break
        for ev in self.c.mirror_events():
            if ev.get("name") == f"etcd-b.{SUFFIX}." and ev.get("values") == [ADDRS["d"]] and ev["time"] >= wall0:
                stages.setdefault("resolvable", ev["time"] - wall0)
        for ev in d.runner_events():
            if ev["what"] == "started" and ev.get("pod") == "etcd-server" and ev["time"] >= wall0:
                stages.setdefault("etcd start", ev["time"] - wall0)
        return dict(sorted(stages.items(), key=lambda kv: kv[1]))

    def run(self):
        try:
            self.step1_cold_start()
            self.step2_replace_b()
            bad = self.c.tls_rejections()
            if bad:
                raise ScenarioError("TLS rejections in etcd's logs:\n  " + "\n  ".join(bad[:20]))
            self.tl.mark("etcd over TLS with certificates from the S3 state store: no rejection")
        finally:
            self.say("\ncleaning up (namespaces, loop devices, mounts, processes, the Route 53 mirror) ...")
            self.cleanup_errors = self.c.close()
        if self.cleanup_errors:
            raise ScenarioError(f"cleanup: {self.cleanup_errors}")
        self.say("\nTimeline:\n" + self.tl.table())
        self.say("\nSteps: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.steps.items()))
        self.say(f"Failover (b's volumes released -> etcd-b healthy on d; Route 53 INSYNC after "
                 f"{self.c.insync_delay:g} s): {1000 * self.failover['total']:.0f} ms; by stage (ms after the release):")
        for k, v in self.failover.items():
            if k != "total":
                self.say(f"  {k:14s} {1000 * v:7.0f}")
        self.say("\nSUCCESS: on the AWS double, etcd healed itself through Route 53: b's EBS volumes moved to "
                 "d with no human step.")
        return self.failover


if __name__ == "__main__":
    sys.exit(scenario.main(ScenarioAws))
