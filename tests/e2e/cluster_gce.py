# SPDX-License-Identifier: Apache-2.0
"""The simulated cluster of the end-to-end scenario on "GCE": `cloud: gce`, `dns: clouddns` and a gs:// state
store against the Google Cloud double (tests/fakes/gce/server.py); the layout, the Cloud DNS mirror and the
cleanup are cluster_double.py's, on a /24 of its own (198.18.45.0/24, PROTOKUBE_GCE_NET to change: the AWS demo
uses .44, the process simulation .42, demo-workers .46).

- host "gce" (NET.60): the double, Compute Engine + Cloud DNS + Cloud Storage + OAuth, with one metadata
  server per instance (plain http on the double's address, as on GCE; its port in /_double/state's
  "metadata_ports"). Each master is an instance of the double, named as GCE names them ("master-a"), with its
  namespace's address as its internal IP and the cluster label kops puts on it; the master's environment names
  that metadata server (GCE_METADATA_HOST) and no credentials file: its identity (instance name, zone,
  addresses), its project and its access token (the instance's service account, cloud-platform scope) come
  from there, as on a real GCE master. The APIs are reached over https (PROTOKUBE_GCE_ENDPOINT and
  PROTOKUBE_GCE_CA_BUNDLE: protokube refuses plain http to an API endpoint that is not on loopback).
- six persistent disks (etcd main and events of members a, b, c), each in its member's zone, named and labelled
  exactly as kops does (<member>-etcd-<cluster>-<safe cluster name>; k8s-io-cluster-name, k8s-io-role-master,
  k8s-io-etcd-<cluster> = EncodeGCELabel("<member>/a,b,c")), backed by sparse images: the double's attachDisk
  makes a loop device and the link <instance's by-id dir>/google-<device name> (protokube attaches with the
  disk's name as device name, and reads that directory from PROTOKUBE_GCE_BYID_DIR).
- the managed zone of ZONE, with a record that is not ours (www); its changes turn "done" only
  change_delay_seconds after they were made (Cloud DNS takes tens of seconds): no pass may wait for that.
- the state store gs://pk-e2e-state/<cluster>: the CAs every master issues from, and etcd's backups."""

import os

from cluster import CLUSTER, ROOT, ZONE
from cluster_double import ClusterDouble, MasterDouble

NET = os.environ.get("PROTOKUBE_GCE_NET", "198.18.45")
PROJECT = "protokube-e2e"
PROJECT_NUMBER = "424242424242"
SAFE = CLUSTER.replace(".", "-")  # kops' SafeClusterName: the cluster label's value
MANAGED_ZONE = ZONE.replace(".", "-")  # the managed zone's resource name (its DNS name is ZONE)
STATE_BUCKET = "pk-e2e-state"
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
WWW = f"{NET}.200"  # the managed zone's record that is not ours


def kops_label(s):
    """kops' EncodeGCELabel: [a-z0-9] kept, every other byte as '-' and two lowercase hex digits."""
    return "".join(chr(b) if chr(b).isdigit() or "a" <= chr(b) <= "z" else "-%02x" % b for b in s.encode())


def instance_name(name):
    return f"master-{name}"


def disk_name(cluster, member):
    """kops' name of an etcd disk: a-etcd-main-demo-k8s-test."""
    return f"{member}-etcd-{cluster}-{SAFE}"


class MasterGce(MasterDouble):
    def __init__(self, cluster, name, addr, external, zone):
        super().__init__(cluster, name, addr, external, zone)
        self.byid = cluster.byid_dir(name)

    def env(self):
        c = self.cluster
        e = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GCE_", "PROTOKUBE_GCE_", "AWS_"))}
        e.update({"PROTOKUBE_GCE_ENDPOINT": c.api_url, "PROTOKUBE_GCE_CA_BUNDLE": c.tls_cert,
                  # its own metadata server, and no key file: the instance's service account, as on a master
                  "GCE_METADATA_HOST": f"{c.double_addr}:{c.metadata_ports[self.name]}",
                  "PROTOKUBE_GCE_BYID_DIR": self.byid, "HOME": self.dir, "PROTOKUBE_STATE_DIR": self.state})
        return e


class ClusterGce(ClusterDouble):
    double_host = "gce"
    double_script = os.path.join(ROOT, "tests", "fakes", "gce", "server.py")
    cloud, dns_provider, mirror_api = "gce", "clouddns", "clouddns"
    store_url = f"gs://{STATE_BUCKET}/{CLUSTER}"
    master_class = MasterGce

    def __init__(self, workdir=None, tag="pkg", interval="2s", change_delay=0):
        super().__init__(NET, workdir, tag, interval, dns_delay=change_delay)
        self.metadata_ports = {}

    def byid_dir(self, name):
        """The instance's /dev/disk/by-id: one each, since every master runs on this one machine."""
        return os.path.join(self.byid, name)

    def configure_double(self, members, zones):
        allm = ",".join(members)
        disks = {}
        for cl in ("main", "events"):
            for m in members:
                disks[disk_name(cl, m)] = {
                    "zone": zones[m], "size_gb": 1, "type": "pd-ssd", "image": self.make_image(disk_name(cl, m)),
                    "labels": {"k8s-io-cluster-name": SAFE, "k8s-io-role-master": "master",
                               f"k8s-io-etcd-{cl}": kops_label(f"{m}/{allm}")}}
        self.double_call("/_double/config", {
            "project": PROJECT, "project_number": PROJECT_NUMBER, "change_delay_seconds": self.dns_delay,
            "disks": disks, "buckets": {STATE_BUCKET: {"public_access_prevention": "enforced"}},
            "managed_zones": {MANAGED_ZONE: {"dns_name": ZONE + ".", "rrsets": [
                {"name": f"www.{ZONE}.", "type": "A", "ttl": 60, "rrdatas": [WWW]}]}}})
        return MANAGED_ZONE

    def register_instance(self, name, addr, external, zone):
        byid = self.byid_dir(name)
        os.makedirs(byid, exist_ok=True)
        self.double_call("/_double/config", {"instances": {instance_name(name): {
            "zone": zone, "internal_ip": addr, "external_ip": external, "labels": {"k8s-io-cluster-name": SAFE},
            "byid_dir": byid, "scopes": [CLOUD_PLATFORM]}}})
        self.metadata_ports[name] = self.double_state()["metadata_ports"][instance_name(name)]

    def node_name(self, name):
        return instance_name(name)

    def disk_id(self, cluster, member):
        return disk_name(cluster, member)

    def records(self):
        z = self.double_state()["zones"][MANAGED_ZONE]
        return {r["name"].rstrip("."): sorted(r["rrdatas"]) for r in z["rrsets"] if r["type"] == "A"}

    def holders(self):
        return {d: (s["users"] or [None])[0] for d, s in self.double_state()["disks"].items()
                if d.endswith("-" + SAFE)}

    def release_instance(self, name):
        """Compute's part, by the double's terminate control: the instance is TERMINATED (its metadata server
        answers 503) and its disks but the boot disk are detached (their loop devices and links go)."""
        self.double_call("/_double/terminate", {"instance": instance_name(name)})

    def dns_changes(self):
        """{change id: "pending" or "done"} of the managed zone (id 0: its creation)."""
        return self.double_state()["zones"][MANAGED_ZONE]["changes"]

    def backups(self):
        """{object name under the store: size} of etcd's backups in the bucket."""
        objs = self.double_state()["buckets"][STATE_BUCKET]
        return {n[len(CLUSTER) + 1:]: o["size"] for n, o in objs.items() if n.startswith(f"{CLUSTER}/backups/")}

    def counters(self):
        return self.double_state()["counters"]
