# SPDX-License-Identifier: Apache-2.0
"""The simulated cluster of the end-to-end scenario on "AWS": `cloud: aws` and `dns: route53` against the AWS
double (tests/fakes/aws/server.py) instead of the local pool and BIND.

Layout on the test network (netlab.py), on 198.18.44.0/24 of its own so that it runs next to the 3-master
simulation (198.18.42.0/24), every party in a network namespace of its own since
the sandbox drops traffic from the machine's root namespace to the test network:
- host "aws" (AWS_ADDR): the double, EC2 + Route 53 + IMDSv2. It joins the namespace with `nsenter --net`
  only, so it stays in the machine's mount namespace: the loop devices and by-id links AttachVolume makes are
  the ones protokube sees. Each master is an instance of the double (its private IP is its namespace's
  address, its zone us-east-1a/b/c); protokube learns who it is from its own IMDS endpoint (`/_as/<id>`) and
  signs with the instance role's credentials from there.
- host "dns" (DNS_ADDR): BIND, as in cluster.py, now only the resolver's view of the Route 53 zone: etcd
  resolves its peers through the system resolver, and on AWS Route 53's name servers answer what protokube
  wrote. r53mirror.py stands in for that serving side, copying the double's A/AAAA sets into BIND every
  100 ms (nsupdate + TSIG), bounded and stopped in close().
- masters: as in cluster.py (protokube in the node's network namespace + the pod runner), with no identity on
  the command line.

close() stops everything by PID, unmounts, has the double detach its loop devices (and detaches any left),
removes the namespaces and the work directory's shared bind mount."""

import json
import os
import shutil
import subprocess
import time

from cluster import (CLUSTER, HERE, ROOT, ZONE, Bind, Cluster, Master, loops_backed_by_files_under, protokube_bin,
                     stop_process)
from netlab import NetLab

# Another /24 of 198.18.0.0/15 than the process simulation's (cluster.py, 198.18.42.0/24): the two run side by
# side, each on a bridge of its own. The "external" addresses are only published in DNS, never dialled.
NET = "198.18.44"
BRIDGE_ADDR = f"{NET}.1"
DNS_ADDR = f"{NET}.53"
AWS_ADDR = f"{NET}.60"
ADDRS = {"a": f"{NET}.11", "b": f"{NET}.12", "c": f"{NET}.13", "d": f"{NET}.14"}
EXTERNAL = {n: "198.19.44." + a.rsplit(".", 1)[1] for n, a in ADDRS.items()}
DOUBLE = os.path.join(ROOT, "tests", "fakes", "aws", "server.py")
ZONE_ID = "ZE2EPROTOKUBE"
REGION = "us-east-1"
STATE_BUCKET = "pk-e2e-state"  # the state store: the CAs every master issues from
VOLUME_SIZE = 256 << 20  # etcd preallocates a 64 MiB WAL


def instance_id(name):
    """i-0e2e000000000000a for master a: the shape of an EC2 instance id, the master's letter last."""
    return "i-0e2e" + "0" * 12 + name


def volume_id(cluster, member):
    return f"vol-0{cluster}0{member}"


class MasterAws(Master):
    def node_args(self):
        # No --node-name/--zone/--internal-ip/--pool: the aws provider takes them from IMDS.
        return self.file_args()

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

    def start(self, port):
        self.port = port
        self.runner = subprocess.Popen(
            ["/usr/bin/python3", os.path.join(HERE, "podrunner.py"), "--manifest-dir", self.manifests,
             "--netns", self.cluster.lab.ns(self.name), "--log-dir", self.logs,
             "--substitute", "/usr/local/bin/etcd=/usr/bin/etcd", "--max-seconds", "600"],
            start_new_session=True)
        self.protokube = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{self.cluster.lab.ns(self.name)}", "--", protokube_bin(), "-c",
             self.spec, "--log-format", "json", "run", *self.node_args(),
             "--listen", f"127.0.0.1:{port}", "--interval", self.cluster.interval],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.logs, "protokube.log"), "ab"),
            env=self.env(), start_new_session=True)


class ClusterAws(Cluster):
    def __init__(self, workdir=None, tag="pka", interval="2s", insync_delay=0):
        super().__init__(workdir, tag)
        self.lab = NetLab(tag, bridge_addr=BRIDGE_ADDR)
        self.bind = Bind(self.workdir, self.lab, addr=DNS_ADDR)
        # Seconds until the double reports a Route 53 change INSYNC (real Route 53: tens of seconds)
        self.insync_delay = insync_delay
        # Cluster.close() detaches loop devices backed by files under self.pool: the volume images.
        self.pool = os.path.join(self.workdir, "images")
        self.byid = os.path.join(self.workdir, "by-id")
        self.interval = interval
        self.double = None
        self.double_url = None
        self.mirror = None
        self.mirror_log = os.path.join(self.workdir, "r53mirror.jsonl")
        self.members = ()

    # ---- the double, always reached from inside the test network
    def double_call(self, path, body=None, timeout=30):
        argv = ["curl", "-sS", "-f", "-m", str(timeout), self.double_url + path]
        if body is not None:
            argv += ["-X", "POST", "-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
        p = self.run_in("aws", argv, timeout=timeout + 5)
        if p.returncode != 0:
            raise RuntimeError(f"double {path}: curl exited {p.returncode}: {p.stderr.strip()}")
        return json.loads(p.stdout or "{}")

    def double_state(self):
        return self.double_call("/_double/state")

    def route53_records(self):
        """{name without the final dot: sorted values} of the A sets in the double's zone."""
        z = self.double_state()["zones"][ZONE_ID]
        return {r["name"].rstrip("."): sorted(r["values"]) for r in z["records"] if r["type"] == "A"}

    def holders(self):
        """{volume id: instance id or None}."""
        return {v: (s["attachment"] or {}).get("instance") for v, s in self.double_state()["volumes"].items()}

    def make_tls_cert(self):
        """A self-signed certificate for the double's address: protokube speaks https to any AWS endpoint
        that is not on loopback, and trusts this one through AWS_CA_BUNDLE."""
        self.tls_cert = os.path.join(self.workdir, "double-cert.pem")
        self.tls_key = os.path.join(self.workdir, "double-key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-days", "1", "-subj", "/CN=aws-double", "-addext",
                        f"subjectAltName=IP:{AWS_ADDR}", "-keyout", self.tls_key, "-out", self.tls_cert],
                       check=True, capture_output=True)

    def start_double(self):
        port_file = os.path.join(self.workdir, "double.port")
        tls_port_file = os.path.join(self.workdir, "double-tls.port")
        self.make_tls_cert()
        self.double = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{self.lab.ns('aws')}", "--", "/usr/bin/python3", DOUBLE,
             "--port-file", port_file, "--listen", AWS_ADDR, "--tls-cert", self.tls_cert,
             "--tls-key", self.tls_key, "--tls-port-file", tls_port_file,
             "--insync-delay", str(self.insync_delay)],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.workdir, "double.log"), "ab"),
            start_new_session=True)
        deadline = time.monotonic() + 15
        while not os.path.exists(port_file):
            if self.double.poll() is not None:
                raise RuntimeError("the AWS double exited; see " + os.path.join(self.workdir, "double.log"))
            if time.monotonic() > deadline:
                raise RuntimeError("the AWS double did not start within 15 s")
            time.sleep(0.05)
        with open(port_file) as f:
            self.double_url = f"http://{AWS_ADDR}:{f.read().strip()}"
        with open(tls_port_file) as f:
            self.api_url = f"https://{AWS_ADDR}:{f.read().strip()}"

    def instance(self, name, addr, external, zone, state="running"):
        return {instance_id(name): {"az": zone, "private_ip": addr, "public_ip": external, "state": state,
                                    "tags": {"KubernetesCluster": CLUSTER, "k8s.io/role/master": "1"}}}

    def configure_double(self, members, zones):
        os.makedirs(self.pool, exist_ok=True)
        allm = ",".join(members)
        volumes = []
        for cl in ("main", "events"):
            for m in members:
                image = os.path.join(self.pool, volume_id(cl, m) + ".img")
                with open(image, "wb") as f:
                    f.truncate(VOLUME_SIZE)
                volumes.append({"id": volume_id(cl, m), "az": zones[m], "size": 1, "image": image,
                                "tags": {"KubernetesCluster": CLUSTER, "k8s.io/role/master": "1",
                                         f"k8s.io/etcd/{cl}": f"{m}/{allm}",
                                         f"kubernetes.io/cluster/{CLUSTER}": "owned"}})
        # The zone also holds a record protokube does not own: it must survive every pass.
        self.double_call("/_double/config", {
            "region": REGION, "byid_dir": self.byid, "volumes": volumes, "buckets": [STATE_BUCKET],
            "zones": [{"id": ZONE_ID, "name": ZONE + ".",
                       "records": [{"name": f"www.{ZONE}.", "type": "A", "ttl": 60,
                                    "values": ["198.18.42.200"]}]}]})

    def start_mirror(self, max_seconds=600):
        self.mirror = subprocess.Popen(
            self.lab.exec_argv("dns", ["/usr/bin/python3", os.path.join(HERE, "r53mirror.py"), "--url",
                                       self.double_url, "--zone-id", ZONE_ID, "--zone", ZONE + ".", "--server",
                                       f"{DNS_ADDR}:53", "--key-file", self.bind.client_key_file,
                                       "--interval", "0.1", "--max-seconds", str(max_seconds), "--log",
                                       self.mirror_log]),
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.workdir, "r53mirror.err"), "ab"),
            start_new_session=True)

    def mirror_events(self):
        try:
            with open(self.mirror_log) as f:
                return [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []

    def setup(self, members=("a", "b", "c"), zones=None, size=None):
        self.members = members
        self.share_mounts()
        self.lab.start(dns_server=DNS_ADDR)
        self.lab.add_host("dns", DNS_ADDR)
        self.bind.setup()
        self.bind.start()
        self.lab.add_host("aws", AWS_ADDR)
        self.start_double()
        self.configure_double(members, zones)
        self.start_mirror()
        with open(self.spec, "w") as f:
            f.write(f"""apiVersion: protokube/v1alpha1
kind: Cluster
metadata:
  name: {CLUSTER}
spec:
  cloud: aws
  dns:
    provider: route53
    zone: {ZONE}.
    ttl: 10
  stateStore: s3://{STATE_BUCKET}/{CLUSTER}
  etcdClusters:
    - name: main
      image: registry.k8s.io/etcd:3.4.13-0
    - name: events
      image: registry.k8s.io/etcd:3.4.13-0
  kubernetesVersion: 1.31.2
""")

    master_class = MasterAws

    def add_master(self, name, addr, external, zone):
        self.double_call("/_double/config", {"instances": self.instance(name, addr, external, zone)})
        return super().add_master(name, addr, external, zone)

    def terminate(self, name):
        """What terminating an EC2 instance does: the machine is gone (processes, mounts, its address), the
        instance is `terminated` and EC2 detaches its (non-root, not delete-on-termination) volumes."""
        self.terminate_machine(name)
        self.release_instance(name)

    def terminate_machine(self, name):
        """The machine's part: its processes, mounts and address are gone; EC2 still has its volumes attached."""
        m = self.masters[name]
        m.stop()
        m.unmount_all()
        self.lab.remove_host(name)

    def release_instance(self, name):
        """EC2's part: the instance is `terminated` and its volumes are detached (free for another master)."""
        m = self.masters[name]
        self.double_call("/_double/config",
                         {"instances": self.instance(name, m.addr, m.external, m.zone, state="terminated")})
        self.double_call("/_double/detach", {"instances": [instance_id(name)]})

    def loops_of_images(self):
        return loops_backed_by_files_under(self.pool)  # by device and inode, not by path

    def close(self):
        errors = []
        for m in self.masters.values():
            m.stop()
        for m in self.masters.values():
            m.unmount_all()
        stop_process(self.mirror)
        self.mirror = None
        if self.double is not None:
            # SIGTERM: the double detaches the loop devices it made and removes its by-id links on the way out.
            stop_process(self.double, grace=15)
            self.double = None
        # Cluster.close(): BIND, loop devices still backed by our images, namespaces, the shared bind mount.
        # `losetup -d` of a device somebody still has open (a udev or blkid probe elsewhere on the machine) only
        # takes effect at its last close: give that a moment (bounded) before calling a device left behind.
        deadline = time.monotonic() + 10
        while True:
            left = self.loops_of_images()
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if left:
            errors.append(f"loop devices left by the double: {left}")
        super().close(keep=True)  # the work dir goes only on success (tests/integration/test_e2e_aws.py)
        # The images hold etcd's data (sparse, but a WAL each): drop them; the logs stay for a post-mortem.
        shutil.rmtree(self.pool, ignore_errors=True)
        return errors
