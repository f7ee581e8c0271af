# SPDX-License-Identifier: Apache-2.0
"""The simulated cluster of the end-to-end scenario on "AWS": `cloud: aws` and `dns: route53` against the AWS
double (tests/fakes/aws/server.py) instead of the local pool and BIND; the layout, the Route 53 mirror and the
cleanup are cluster_double.py's, on 198.18.44.0/24.

- host "aws" (198.18.44.60): the double, EC2 + Route 53 + S3 + IMDSv2. Each master is an instance of the
  double (its private IP is its namespace's address, its zone us-east-1a/b/c); protokube learns who it is
  from its own IMDS endpoint (`/_as/<id>`) and signs with the instance role's credentials from there.
- six EBS volumes (etcd main and events of members a, b, c) with kops' tags, backed by sparse images: the
  double's AttachVolume makes a loop device and its by-id link.
- the state store s3://pk-e2e-state/<cluster>: the CAs every master issues from."""

import os

from cluster import CLUSTER, ROOT, ZONE
from cluster_double import ClusterDouble, MasterDouble, addresses

# Another /24 of 198.18.0.0/15 than the process simulation's (cluster.py, 198.18.42.0/24): the two run side by
# side, each on a bridge of its own.
NET = "198.18.44"
ADDRS, EXTERNAL = addresses(NET)
ZONE_ID = "ZE2EPROTOKUBE"
REGION = "us-east-1"
STATE_BUCKET = "pk-e2e-state"  # the state store: the CAs every master issues from


def instance_id(name):
    """i-0e2e000000000000a for master a: the shape of an EC2 instance id, the master's letter last."""
    return "i-0e2e" + "0" * 12 + name


def volume_id(cluster, member):
    return f"vol-0{cluster}0{member}"


class MasterAws(MasterDouble):
    def env(self):
        c = self.cluster
        e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        e.update({"AWS_ENDPOINT_URL_EC2": c.api_url, "AWS_ENDPOINT_URL_ROUTE_53": c.api_url,
                  "AWS_ENDPOINT_URL_S3": c.api_url,
                  "AWS_CA_BUNDLE": c.tls_cert,
                  "AWS_EC2_METADATA_SERVICE_ENDPOINT": f"{c.double_url}/_as/{instance_id(self.name)}",
                  # no static keys and no credentials file: the instance role through IMDSv2, as on a master
                  "AWS_SHARED_CREDENTIALS_FILE": os.path.join(self.dir, "no-credentials"),
                  "HOME": self.dir, "PROTOKUBE_AWS_BYID_DIR": c.byid, "PROTOKUBE_STATE_DIR": self.state})
        return e


class ClusterAws(ClusterDouble):
    double_host = "aws"
    double_script = os.path.join(ROOT, "tests", "fakes", "aws", "server.py")
    cloud, dns_provider, mirror_api = "aws", "route53", "route53"
    store_url = f"s3://{STATE_BUCKET}/{CLUSTER}"
    master_class = MasterAws

    def __init__(self, workdir=None, tag="pka", interval="2s", insync_delay=0):
        super().__init__(NET, workdir, tag, interval, dns_delay=insync_delay)

    @property
    def insync_delay(self):
        """Seconds until the double reports a Route 53 change INSYNC (real Route 53: tens of seconds)."""
        return self.dns_delay

    def double_args(self):
        return ["--insync-delay", str(self.dns_delay)]

    def instance(self, name, addr, external, zone, state="running"):
        return {instance_id(name): {"az": zone, "private_ip": addr, "public_ip": external, "state": state,
                                    "tags": {"KubernetesCluster": CLUSTER, "k8s.io/role/master": "1"}}}

    def configure_double(self, members, zones):
        allm = ",".join(members)
        volumes = []
        for cl in ("main", "events"):
            for m in members:
                volumes.append({"id": volume_id(cl, m), "az": zones[m], "size": 1,
                                "image": self.make_image(volume_id(cl, m)),
                                "tags": {"KubernetesCluster": CLUSTER, "k8s.io/role/master": "1",
                                         f"k8s.io/etcd/{cl}": f"{m}/{allm}",
                                         f"kubernetes.io/cluster/{CLUSTER}": "owned"}})
        # The zone also holds a record protokube does not own: it must survive every pass.
        self.double_call("/_double/config", {
            "region": REGION, "byid_dir": self.byid, "volumes": volumes, "buckets": [STATE_BUCKET],
            "zones": [{"id": ZONE_ID, "name": ZONE + ".",
                       "records": [{"name": f"www.{ZONE}.", "type": "A", "ttl": 60,
                                    "values": ["198.18.42.200"]}]}]})
        return ZONE_ID

    def register_instance(self, name, addr, external, zone):
        self.double_call("/_double/config", {"instances": self.instance(name, addr, external, zone)})

    def node_name(self, name):
        return instance_id(name)

    def disk_id(self, cluster, member):
        return volume_id(cluster, member)

    def records(self):
        z = self.double_state()["zones"][ZONE_ID]
        return {r["name"].rstrip("."): sorted(r["values"]) for r in z["records"] if r["type"] == "A"}

    def holders(self):
        return {v: (s["attachment"] or {}).get("instance") for v, s in self.double_state()["volumes"].items()}

    def release_instance(self, name):
        """EC2's part: the instance is `terminated` and its volumes are detached (free for another master)."""
        m = self.masters[name]
        self.double_call("/_double/config",
                         {"instances": self.instance(name, m.addr, m.external, m.zone, state="terminated")})
        self.double_call("/_double/detach", {"instances": [instance_id(name)]})
