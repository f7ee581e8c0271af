# SPDX-License-Identifier: Apache-2.0
"""What the simulated clusters on a cloud's API double share (cluster_aws.py: EC2, Route 53, S3;
cluster_gce.py: Compute Engine, Cloud DNS, Cloud Storage): the layout on a test network of their own, the
double, the DNS mirror, the masters that are instances of the double, and the cleanup.

Layout on the test network (netlab.py), on a /24 of its own (NET.0/24) so that it runs next to the 3-master
simulation (198.18.42.0/24), every party in a network namespace of its own since the sandbox drops traffic
from the machine's root namespace to the test network:
- the double's host (NET.60, named after the cloud: "aws", "gce"): it joins the namespace with `nsenter --net`
  only, so it stays in the machine's mount namespace: the loop devices and by-id links its attach calls make
  are the ones protokube sees. It serves plain http (the harness' control calls, the instances' metadata) and,
  on a second port, https with a self-signed certificate for its address: protokube speaks https to any cloud
  endpoint that is not on loopback, and trusts this one through the CA bundle its environment names.
- host "dns" (NET.53): BIND, as in cluster.py, now only the resolver's view of the cloud's zone: etcd resolves
  its peers through the system resolver, and on the cloud its DNS service's name servers answer what protokube
  wrote. dnsmirror.py stands in for that serving side, copying the double's A/AAAA sets into BIND every
  100 ms (nsupdate + TSIG), bounded and stopped in close().
- masters (NET.11-14 for a-d; "external" addresses 198.19.<NET's third byte>.11-14, only published in DNS,
  never dialled): as in cluster.py (protokube in the node's network namespace + the pod runner), each an
  instance of the double, with no identity on the command line: protokube learns it from the instance's own
  metadata endpoint, with the instance's credentials from there.

close() stops everything by PID, unmounts, has the double detach its loop devices (and detaches any left),
removes the namespaces and the work directory's shared bind mount; the work directory (logs) stays."""

import json
import os
import shutil
import subprocess
import time

from cluster import CLUSTER, HERE, ZONE, Bind, Cluster, Master, loops_backed_by_files_under, protokube_bin, stop_process
from netlab import NetLab

VOLUME_SIZE = 256 << 20  # etcd preallocates a 64 MiB WAL
MEMBER_HOSTS = {"a": 11, "b": 12, "c": 13, "d": 14}


def addresses(net):
    """({master: its address on the test network}, {master: its "external" address}) of the /24 net."""
    internal = {n: f"{net}.{h}" for n, h in MEMBER_HOSTS.items()}
    return internal, {n: f"198.19.{net.split('.')[2]}.{h}" for n, h in MEMBER_HOSTS.items()}


class MasterDouble(Master):
    """A master that is an instance of the double: its identity and credentials from the instance's metadata
    endpoint, its cloud's endpoints from env() (the subclass')."""

    def node_args(self):
        # No --node-name/--zone/--internal-ip/--pool: the cloud's provider takes them from the metadata.
        return self.file_args()

    def env(self):
        raise NotImplementedError

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


class ClusterDouble(Cluster):
    # What a subclass names: the double's host and program, the spec's cloud, DNS provider and state store,
    # the DNS mirror's --api and zone id
    double_host = double_script = cloud = dns_provider = store_url = mirror_api = None

    def __init__(self, net, workdir=None, tag="pkd", interval="2s", dns_delay=0):
        super().__init__(workdir, tag)
        self.net = net
        self.bridge_addr, self.dns_addr, self.double_addr = f"{net}.1", f"{net}.53", f"{net}.60"
        self.addrs, self.external = addresses(net)
        self.lab = NetLab(tag, bridge_addr=self.bridge_addr)
        self.bind = Bind(self.workdir, self.lab, addr=self.dns_addr)
        # Seconds until the double reports a DNS change as served everywhere (Route 53's INSYNC, Cloud DNS'
        # "done"; the real services take tens of seconds): no pass may wait for it
        self.dns_delay = dns_delay
        # Cluster.close() detaches loop devices backed by files under self.pool: the disk images.
        self.pool = os.path.join(self.workdir, "images")
        self.byid = os.path.join(self.workdir, "by-id")
        self.interval = interval
        self.double = self.double_url = self.api_url = None
        self.mirror = None
        self.mirror_log = os.path.join(self.workdir, "dnsmirror.jsonl")
        self.members = ()

    # ---- the double, always reached from inside the test network
    def double_call(self, path, body=None, timeout=30):
        argv = ["curl", "-sS", "-f", "-m", str(timeout), self.double_url + path]
        if body is not None:
            argv += ["-X", "POST", "-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
        p = self.run_in(self.double_host, argv, timeout=timeout + 5)
        if p.returncode != 0:
            raise RuntimeError(f"double {path}: curl exited {p.returncode}: {p.stderr.strip()}")
        return json.loads(p.stdout or "{}")

    def double_state(self):
        return self.double_call("/_double/state")

    def make_tls_cert(self):
        """A self-signed certificate for the double's address, for its https listener."""
        self.tls_cert = os.path.join(self.workdir, "double-cert.pem")
        self.tls_key = os.path.join(self.workdir, "double-key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-days", "1", "-subj", f"/CN={self.double_host}-double", "-addext",
                        f"subjectAltName=IP:{self.double_addr}", "-keyout", self.tls_key, "-out", self.tls_cert],
                       check=True, capture_output=True)

    def double_args(self):
        """More of the double's command line (a subclass')."""
        return []

    def start_double(self):
        port_file = os.path.join(self.workdir, "double.port")
        tls_port_file = os.path.join(self.workdir, "double-tls.port")
        log = os.path.join(self.workdir, "double.log")
        self.make_tls_cert()
        self.double = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{self.lab.ns(self.double_host)}", "--", "/usr/bin/python3",
             self.double_script, "--port-file", port_file, "--listen", self.double_addr, "--tls-cert",
             self.tls_cert, "--tls-key", self.tls_key, "--tls-port-file", tls_port_file, *self.double_args()],
            stdout=subprocess.DEVNULL, stderr=open(log, "ab"), start_new_session=True)
        deadline = time.monotonic() + 15
        while not os.path.exists(port_file):
            if self.double.poll() is not None:
                raise RuntimeError(f"the {self.double_host} double exited; see {log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {self.double_host} double did not start within 15 s")
            time.sleep(0.05)
        with open(port_file) as f:
            self.double_url = f"http://{self.double_addr}:{f.read().strip()}"
        with open(tls_port_file) as f:
            self.api_url = f"https://{self.double_addr}:{f.read().strip()}"

    def make_image(self, name):
        """A sparse image of VOLUME_SIZE under the pool, to back a disk of the double."""
        os.makedirs(self.pool, exist_ok=True)
        image = os.path.join(self.pool, name + ".img")
        with open(image, "wb") as f:
            f.truncate(VOLUME_SIZE)
        return image

    def start_mirror(self, zone_id, max_seconds=600):
        self.mirror = subprocess.Popen(
            self.lab.exec_argv("dns", ["/usr/bin/python3", os.path.join(HERE, "dnsmirror.py"), "--url",
                                       self.double_url, "--api", self.mirror_api, "--zone-id", zone_id, "--zone",
                                       ZONE + ".", "--server", f"{self.dns_addr}:53", "--key-file",
                                       self.bind.client_key_file, "--interval", "0.1", "--max-seconds",
                                       str(max_seconds), "--log", self.mirror_log]),
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.workdir, "dnsmirror.err"), "ab"),
            start_new_session=True)

    def mirror_events(self):
        try:
            with open(self.mirror_log) as f:
                return [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []

    def configure_double(self, members, zones):
        """The double's disks, DNS zone and state bucket; returns the DNS zone's id for the mirror."""
        raise NotImplementedError

    def setup(self, members=("a", "b", "c"), zones=None, size=None):
        self.members = members
        self.share_mounts()
        self.lab.start(dns_server=self.dns_addr)
        self.lab.add_host("dns", self.dns_addr)
        self.bind.setup()
        self.bind.start()
        self.lab.add_host(self.double_host, self.double_addr)
        self.start_double()
        self.start_mirror(self.configure_double(members, zones))
        with open(self.spec, "w") as f:
            f.write(f"""apiVersion: protokube/v1alpha1
kind: Cluster
metadata:
  name: {CLUSTER}
spec:
  cloud: {self.cloud}
  dns:
    provider: {self.dns_provider}
    zone: {ZONE}.
    ttl: 10
  stateStore: {self.store_url}
  etcdClusters:
    - name: main
      image: registry.k8s.io/etcd:3.4.13-0
    - name: events
      image: registry.k8s.io/etcd:3.4.13-0
  kubernetesVersion: 1.31.2
""")

    def register_instance(self, name, addr, external, zone):
        """The master's instance in the double, before its processes start."""
        raise NotImplementedError

    def add_master(self, name, addr, external, zone):
        self.register_instance(name, addr, external, zone)
        return super().add_master(name, addr, external, zone)

    # ---- what the scenario asks of the cloud (a subclass')
    def node_name(self, name):
        """The instance's name (or id) for master name: the node protokube says it is."""
        raise NotImplementedError

    def disk_id(self, cluster, member):
        raise NotImplementedError

    def records(self):
        """{name without the final dot: sorted addresses} of the A sets in the double's zone."""
        raise NotImplementedError

    def holders(self):
        """{disk id: node_name() of the instance holding it, or None}."""
        raise NotImplementedError

    def release_instance(self, name):
        """The cloud's part of a termination: the instance is terminated and its disks detached."""
        raise NotImplementedError

    def terminate(self, name):
        """What terminating an instance does: the machine is gone (processes, mounts, its address), the instance
        is terminated and the cloud detaches its (non-boot, not auto-deleted) disks."""
        self.terminate_machine(name)
        self.release_instance(name)

    def terminate_machine(self, name):
        """The machine's part: its processes, mounts and address are gone; the cloud still has its disks
        attached."""
        m = self.masters[name]
        m.stop()
        m.unmount_all()
        self.lab.remove_host(name)

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
        super().close(keep=True)  # the work dir goes only on success (tests/integration/test_e2e_*.py)
        # The images hold etcd's data (sparse, but a WAL each): drop them; the logs stay for a post-mortem.
        shutil.rmtree(self.pool, ignore_errors=True)
        return errors
