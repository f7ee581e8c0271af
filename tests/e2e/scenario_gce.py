#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Steps 1-2 of the no-ops etcd scenario (scenario.py) with `cloud: gce`, `dns: clouddns` and a gs:// state
store against the Google Cloud double (cluster_gce.py; the steps are scenario_double.py's, as on AWS): three
masters, each a GCE instance of the double with its own metadata server, claim their persistent disks and
publish their records in the Cloud DNS zone, and etcd's backups land in gs://; then master b is terminated
(the double detaches its disks) and a standby master d in b's zone takes over its disks, and etcd member b
comes back on d with its data. Prints the timeline, the failover by stage and the requests the double served.
Run as root:

    /usr/bin/python3 tests/e2e/scenario_gce.py          (make demo-gce does this)

It cleans up everything it created (namespaces, loop devices, mounts, processes, the Cloud DNS mirror) even on
failure or Ctrl-C."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenario  # noqa: E402
from cluster_gce import CLUSTER, STATE_BUCKET, WWW, ClusterGce  # noqa: E402
from scenario import ScenarioError, wait_for  # noqa: E402
from scenario_double import ScenarioDouble  # noqa: E402

# One master per zone, as kops lays them out; d, the replacement, comes up in b's zone.
ZONES = {"a": "europe-west1-b", "b": "europe-west1-c", "c": "europe-west1-d", "d": "europe-west1-c"}
# Seconds until the double reports a Cloud DNS change "done": real Cloud DNS takes tens of seconds to serve a
# change on every name server, and a pass must not wait for it.
CHANGE_DELAY = float(os.environ.get("PROTOKUBE_GCE_CHANGE_DELAY", "30"))
COUNTERS = ("requests", "compute_requests", "dns_requests", "storage_requests", "metadata_requests",
            "metadata_token_fetches", "token_grants", "auth_failures", "throttled", "errors500", "errors503")


class ScenarioGce(ScenarioDouble):
    cloud, disks, dns, store, metadata = "GCE", "persistent disks", "Cloud DNS", "gs://", "the metadata servers"
    stage, done = "clouddns", "done"
    zones = ZONES
    www = WWW

    def __init__(self, out=sys.stdout, change_delay=CHANGE_DELAY, tag="pkg"):
        super().__init__(ClusterGce(tag=tag, change_delay=change_delay), out)
        self.counters = {}  # step -> the double's counters at its end
        self.backup_names = {}

    def complete_backups(self):
        """{etcd cluster: [timestamps of its backups with a manifest]} in the bucket, or None if one has none."""
        got = {cl: sorted(n.split("/")[2] for n in self.c.backups() if n.startswith(f"backups/{cl}/")
                          and n.endswith("/manifest.json")) for cl in ("main", "events")}
        return got if all(got.values()) else None

    def on_cold_start(self):
        # With a stateStore every etcd cluster is backed up (docs/etcd-backups.md): the master of the leader
        # takes the first slot's backup as soon as its member answers.
        self.backup_names = wait_for("a backup of etcd main and events in gs://", self.complete_backups, 60, 0.5)
        self.tl.mark(f"backups in gs://{STATE_BUCKET}/{CLUSTER}/backups/: " +
                     ", ".join(f"{cl} {ts[0]}" for cl, ts in self.backup_names.items()))
        self.counters["1 cold start"] = self.c.counters()

    def summary(self):
        objs = self.c.backups()
        for cl, ts in self.backup_names.items():
            if f"backups/{cl}/{ts[0]}/manifest.json" not in objs:
                raise ScenarioError(f"backup {cl}/{ts[0]} gone from gs://: {sorted(objs)}")
        self.counters["2 replace b"] = end = self.c.counters()
        if end["token_grants"] or not end["metadata_token_fetches"]:
            raise ScenarioError(f"tokens not from the metadata servers alone: {end}")
        # No pass waited for Cloud DNS to serve its changes: b's member was back on d well before they were done
        if self.c.dns_delay and not self.failover["total"] < self.c.dns_delay:
            raise ScenarioError(f"failover {self.failover['total']:.1f} s, not under the Cloud DNS delay "
                                f"({self.c.dns_delay:g} s)")
        changes = self.c.dns_changes()
        raced = [e for e in self.c.double_call("/_double/log") if e["method"] == "POST"
                 and e["path"].endswith("/changes") and e["status"] in (409, 412)]
        first = self.counters["1 cold start"]
        lines = [f"\nCloud DNS: {len(changes) - 1} changes made by the masters, "
                 f"{sum(1 for s in changes.values() if s == 'pending')} of them still pending at the end; "
                 f"{len(raced)} refused (409/412: raced another master's change; read again and sent again in the same pass)",
                 f"Backups in gs://{STATE_BUCKET}/{CLUSTER}/backups/: {len(objs)} objects, "
                 f"{sum(objs.values())} bytes ({', '.join(f'{cl} {ts}' for cl, ts in self.backup_names.items())})",
                 "Requests the double served (/_double/state counters):",
                 f"  {'':24s} {'step 1':>8s} {'step 2':>8s} {'total':>8s}"]
        for k in COUNTERS:
            lines.append(f"  {k:24s} {first[k]:8d} {end[k] - first[k]:8d} {end[k]:8d}")
        return lines


if __name__ == "__main__":
    sys.exit(scenario.main(ScenarioGce))
