# SPDX-License-Identifier: Apache-2.0
"""Figure 10 (issue 19's "figure 6"): requests per converged idle pass against the AWS double and against the
Google Cloud double, by service and action, and CPU per idle pass. One master: `protokube run --interval 1s`
with `cloud: aws` (two image-backed EBS volumes: loop devices, real mkfs), `dns: route53`, `stateStore:
s3://...` (the keystore, the node's certificates under `pki.dir`, etcd backups) against the AWS double
(tests/fakes/aws/server.py) on loopback; then the same with `cloud: gce` (two image-backed persistent disks
labelled as kops labels them, the instance's metadata server), `dns: clouddns` and `stateStore: gs://...`
against the Google Cloud double (tests/fakes/gce/server.py).
No etcd runs (nothing starts the static pods), so the backup stage finds no leader and takes no backup, as
on a follower: what it still asks the store is what an idle pass costs.

Once the daemon has logged IDLE_BEFORE passes with 0 changes in a row, the window opens at the next "Pass k
converged" line and closes at "Pass k+N converged" (N = BENCH_REQUESTS_PASSES, >= 20): the requests the
double logged in between (GET /_double/log: every request it received, by service and action) are exactly
those of the N passes after k, and utime+stime of the process (/proc/PID/stat) over the same window / N is
the CPU per idle pass.

Before and after: with PROTOKUBE_BIN_BEFORE=/path/to/an/older/protokube the same runs are made with it,
alternating with the binary under test (before first, then after first, ...), and both columns printed.

A worker: `protokube run --role worker` in its steady state, joined, against the same cloud's double and the
Kubernetes API's double (tests/fakes/kube/server.py over HTTPS): the double holds the master's instance with
its two etcd volumes attached (no image: a worker never looks at a device) and api.internal's record as the
masters publish it, the worker's own instance (its IMDS or metadata server), and the API double listens on
the master's internal address in that view (127.0.0.1) with the worker's Node Ready. The worker's kubelet
directory holds what its kubelet leaves there once joined (the pinned CA, its kubeconfig and client pair);
the worker is given the CA's pin and a token file. The window and the division are the master's; the
requests of both doubles are counted (BENCH_REQUESTS_WORKERS, default aws,gce: the clouds of these rows)."""
import datetime
import hashlib
import ipaddress
import json
import os
import re
import ssl
import subprocess
import sys
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

import common

RUNS = common.env_int("BENCH_REQUESTS_RUNS", 3)
PASSES = max(20, common.env_int("BENCH_REQUESTS_PASSES", 20))
IDLE_BEFORE = 3  # idle passes in a row before the window opens: the cold passes are over
CLUSTER = "req.k8s.test"
ZONE_ID = "ZPROTOKUBEBENCH"
BUCKET = "pk-bench-state"
AZ = "us-east-1a"
IID = "i-0bench00000000010"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
DOUBLE = os.path.join(common.ROOT, "tests", "fakes", "aws", "server.py")
GCE_DOUBLE = os.path.join(common.ROOT, "tests", "fakes", "gce", "server.py")
KUBE_DOUBLE = os.path.join(common.ROOT, "tests", "fakes", "kube", "server.py")
GCE_ZONE = "europe-west1-b"
GCE_INSTANCE = "master-bench-a"
# a worker's rows: the master's internal address in its view, where the API double listens
API_IP = "127.0.0.1"
API_NAME = f"api.internal.{CLUSTER}"
WORKER_IID = "i-0bench00000000020"  # the worker's instance, and its node name (the provider's identity)
GCE_WORKER = "worker-bench-w1"
PASS_RE = re.compile(r"^Pass (\d+) converged in [0-9.]+ ms \((\d+) changes\)\.$")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def spec_text(wd, cloud="aws", dns="route53", scheme="s3", api_port=None):
    """A master's spec; with api_port a worker's: no state store and no pki dir (docs/workers.md), the API's
    port the double's."""
    if api_port:
        own = f"  kubeAPIServer:\n    securePort: {api_port}\n"
    else:
        own = f"  stateStore: {scheme}://{BUCKET}/{CLUSTER}\n  pki:\n    dir: {wd}/pki\n"
    return f"""apiVersion: protokube/v1alpha1
kind: Cluster
metadata:
  name: {CLUSTER}
spec:
  cloud: {cloud}
  dns:
    provider: {dns}
    zone: k8s.test.
    ttl: 30
  etcdClusters:
    - name: main
      image: registry.k8s.io/etcd:3.5.16-0
    - name: events
      image: registry.k8s.io/etcd:3.5.16-0
{own}  kubernetesVersion: 1.31.2
"""


class CloudDouble(common.AwsDouble):
    """A cloud's double with its request log; stopping it detaches the loop devices it made."""
    post_timeout = 60

    def log(self):
        return self.get_json("/_double/log")

    def stop(self):
        try:
            if self.proc.poll() is None:
                self.post("/_double/cleanup", {})
        except OSError:
            pass
        super().stop()


class Double(CloudDouble):
    """The AWS double on loopback with one instance, two image-backed volumes, a zone and a bucket. For a
    worker: the master's instance (at API_IP) holding the two volumes, attached and without an image, the
    worker's instance, and api.internal's A record as the masters publish it."""
    post_timeout = 60

    def __init__(self, wd, worker=False):
        super().__init__(wd, DOUBLE, os.path.join(wd, "double.log"))
        self.iid = self.node_name = WORKER_IID if worker else IID
        volumes = []
        for c, dev in (("main", "/dev/xvdu"), ("events", "/dev/xvdv")):
            v = {"id": f"vol-0{c}0a", "az": AZ, "size": 1,
                 "tags": {"KubernetesCluster": CLUSTER, "k8s.io/role/master": "1", f"k8s.io/etcd/{c}": "a/a"}}
            if worker:
                v["attached_to"] = {"instance": IID, "device": dev}
            else:
                v["image"] = os.path.join(wd, f"vol-{c}.img")
                with open(v["image"], "wb") as f:
                    f.truncate(24 << 20)
            volumes.append(v)
        instances = {IID: {"az": AZ, "private_ip": API_IP if worker else "10.45.0.10", "public_ip": "54.45.0.10",
                           "tags": {"KubernetesCluster": CLUSTER}}}
        zone = {"id": ZONE_ID, "name": "k8s.test."}
        if worker:
            instances[WORKER_IID] = {"az": AZ, "private_ip": "10.45.0.20", "tags": {"KubernetesCluster": CLUSTER}}
            zone["records"] = [{"name": API_NAME, "type": "A", "ttl": 30, "values": [API_IP]}]
        self.post("/_double/config", {
            "instances": instances, "volumes": volumes, "byid_dir": os.path.join(wd, "by-id"),
            "buckets": [BUCKET], "zones": [zone]})

    def spec(self, wd, api_port=None):
        return spec_text(wd, api_port=api_port)

    def env(self, wd):
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update({"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": SECRET,
                    "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_EC2": self.url,
                    "AWS_ENDPOINT_URL_ROUTE_53": self.url, "AWS_ENDPOINT_URL_S3": self.url,
                    "AWS_EC2_METADATA_SERVICE_ENDPOINT": f"{self.url}/_as/{self.iid}",
                    "AWS_SHARED_CREDENTIALS_FILE": os.path.join(wd, "none"),
                    "AWS_CONFIG_FILE": os.path.join(wd, "none"), "HOME": wd,
                    "PROTOKUBE_AWS_BYID_DIR": os.path.join(wd, "by-id")})
        return env

    @staticmethod
    def action_key(entry):
        svc = entry.get("service", "?")
        if svc == "imds":
            path = re.sub(r"^/_as/[^/]+", "", entry.get("path", ""))
            return "imds " + path
        return f"{svc} {entry.get('action', '?')}"


# A Google API path as a method name: the project, zone, names and object names become placeholders.
GCE_PATH_NAMES = [(re.compile(r"^/(compute|dns)/v1/projects/[^/]+"), r""),
                  (re.compile(r"^/(upload/)?storage/v1/b/[^/]+"), r"/b/BUCKET"),
                  (re.compile(r"/zones/[^/]+"), r"/zones/ZONE"),
                  (re.compile(r"/(instances|disks|operations|managedZones|changes)/[^/]+"), r"/\1/NAME"),
                  (re.compile(r"/o/[^/]+"), r"/o/OBJECT")]


class GceDouble(CloudDouble):
    """The Google Cloud double on loopback with one instance (its metadata server), two image-backed disks
    labelled as kops labels them, a managed zone and a bucket. For a worker: the master's instance (at API_IP)
    using the two disks, without an image, the worker's instance and api.internal's A record."""
    post_timeout = 60

    def __init__(self, wd, worker=False):
        super().__init__(wd, GCE_DOUBLE, os.path.join(wd, "double.log"))
        self.instance = self.node_name = GCE_WORKER if worker else GCE_INSTANCE
        safe = CLUSTER.replace(".", "-")
        byid = os.path.join(wd, "by-id")
        disks = {}
        for c in ("main", "events"):
            d = {"zone": GCE_ZONE, "size_gb": 1, "labels": {"k8s-io-cluster-name": safe,
                                                            "k8s-io-role-master": "master",
                                                            f"k8s-io-etcd-{c}": "a-2fa"}}
            if worker:
                d["users"] = [GCE_INSTANCE]
            else:
                d["image"] = os.path.join(wd, f"disk-{c}.img")
                with open(d["image"], "wb") as f:
                    f.truncate(24 << 20)
            disks[f"a-etcd-{c}-{safe}"] = d
        instances = {GCE_INSTANCE: {"zone": GCE_ZONE, "internal_ip": API_IP if worker else "10.46.0.10",
                                    "external_ip": "35.46.0.10", "labels": {"k8s-io-cluster-name": safe},
                                    "byid_dir": byid}}
        zone = {"dns_name": "k8s.test."}
        if worker:
            instances[GCE_WORKER] = {"zone": GCE_ZONE, "internal_ip": "10.46.0.20",
                                     "labels": {"k8s-io-cluster-name": safe}, "byid_dir": byid}
            zone["rrsets"] = [{"name": API_NAME + ".", "type": "A", "ttl": 30, "rrdatas": [API_IP]}]
        self.post("/_double/config", {
            "project": "protokube-bench", "disks": disks, "buckets": {BUCKET: {}}, "instances": instances,
            "managed_zones": {"k8s-test": zone}})
        os.makedirs(byid, exist_ok=True)

    def spec(self, wd, api_port=None):
        return spec_text(wd, "gce", "clouddns", "gs", api_port)

    def env(self, wd):
        port = self.get_json("/_double/state")["metadata_ports"][self.instance]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GOOGLE_", "GCE_", "PROTOKUBE_GCE"))}
        env.update({"PROTOKUBE_GCE_ENDPOINT": self.url, "GCE_METADATA_HOST": f"127.0.0.1:{port}", "HOME": wd,
                    "PROTOKUBE_GCE_BYID_DIR": os.path.join(wd, "by-id")})
        return env

    @staticmethod
    def action_key(entry):
        api, path = entry.get("api", "?"), entry.get("path", "")
        if api == "metadata":
            return "metadata " + path.replace("/computeMetadata/v1/", "")
        for rx, repl in GCE_PATH_NAMES:
            path = rx.sub(repl, path)
        return f"{api} {entry.get('method', '?')} {path}"


CLOUDS = {"aws": ("AWS double", Double), "gce": ("GCE double", GceDouble)}


def issue(cn, key, issuer, issuer_key, ca=False, sans=(), usage=None, org=None):
    """A certificate of key's public key for CN=cn (O=org), signed by issuer_key as issuer (a Name)."""
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(x509.Name(attrs)).issuer_name(issuer or x509.Name(attrs))
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    if usage:
        b = b.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def pem(obj):
    if isinstance(obj, x509.Certificate):
        return obj.public_bytes(serialization.Encoding.PEM)
    return obj.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


class ApiDouble(common.AwsDouble):
    """The Kubernetes API's double (tests/fakes/kube/server.py) over HTTPS on API_IP, the master's internal
    address in a worker's view, with the worker's Node (node_name: the cloud's name of its instance) Ready:
    what a joined worker asks each pass. A cluster CA made here signs the API's certificate
    (api.internal.<cluster>) and the kubelet's client pair (system:node:<name>), which go with the CA into the
    worker's kubelet directory as its kubelet leaves them once joined: ca.crt, kubeconfig,
    pki/kubelet-client-current.pem. The worker is given the CA's pin and a bootstrap token in a file, as a
    worker is (worker_args())."""
    post_timeout = 60
    scheme = "https"

    def __init__(self, wd, kubelet_dir, node_name):
        self.node_name = node_name
        d = os.path.join(wd, "api-pki")
        os.makedirs(os.path.join(kubelet_dir, "pki"), exist_ok=True)
        os.makedirs(d, exist_ok=True)
        ca_key, api_key, node_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
        ca = issue("kubernetes", ca_key, None, ca_key, ca=True)
        api = issue("kube-apiserver", api_key, ca.subject, ca_key, usage=ExtendedKeyUsageOID.SERVER_AUTH,
                    sans=[x509.DNSName(API_NAME), x509.IPAddress(ipaddress.ip_address(API_IP))])
        node = issue(f"system:node:{node_name}", node_key, ca.subject, ca_key, org="system:nodes",
                     usage=ExtendedKeyUsageOID.CLIENT_AUTH)
        files = {os.path.join(kubelet_dir, "ca.crt"): pem(ca), os.path.join(d, "api.crt"): pem(api),
                 os.path.join(d, "api.key"): pem(api_key),
                 os.path.join(kubelet_dir, "pki", "kubelet-client-current.pem"): pem(node) + pem(node_key)}
        for path, data in files.items():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        os.chmod(os.path.join(kubelet_dir, "ca.crt"), 0o644)
        spki = ca_key.public_key().public_bytes(serialization.Encoding.DER,
                                                serialization.PublicFormat.SubjectPublicKeyInfo)
        self.pin = "sha256:" + hashlib.sha256(spki).hexdigest()
        self.token_file = os.path.join(wd, "token")
        fd = os.open(self.token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("benchw.0123456789abcdef\n")
        self.ssl_context = ssl.create_default_context(cafile=os.path.join(kubelet_dir, "ca.crt"))
        super().__init__(wd, KUBE_DOUBLE, os.path.join(wd, "api.log"),
                         ("--listen", API_IP, "--tls-cert", os.path.join(d, "api.crt"),
                          "--tls-key", os.path.join(d, "api.key")), "api-port")
        try:
            self.joined(kubelet_dir)
        except Exception:
            self.stop()
            raise

    def joined(self, kubelet_dir):
        """The kubelet's kubeconfig as the kubelet writes it once joined, and its Node, Ready."""
        client = os.path.join(kubelet_dir, "pki", "kubelet-client-current.pem")
        with open(os.path.join(kubelet_dir, "kubeconfig"), "w") as f:
            f.write(f"""apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: {kubelet_dir}/ca.crt
    server: https://{API_NAME}:{self.port}
  name: default-cluster
contexts:
- context:
    cluster: default-cluster
    namespace: default
    user: default-auth
  name: default-context
current-context: default-context
preferences: {{}}
users:
- name: default-auth
  user:
    client-certificate: {client}
    client-key: {client}
""")
        self.post("/_fake/objects", [{
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": self.node_name, "labels": {}},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status"}]}}])

    def worker_args(self):
        return ["--role", "worker", "--node-name", self.node_name, "--ca-pin", self.pin,
                "--token-file", self.token_file]

    def log(self):
        return self.get_json("/_fake/requests")

    def action_key(self, entry):
        path, q = entry.get("path", "").replace(f"/{self.node_name}", "/NAME"), entry.get("query")
        return f"kube-apiserver {entry.get('method', '?')} {path}{'?' + q if q else ''}"


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat(5))


def one_run(binary, cloud="aws", worker=False):
    """One daemon from a blank cluster (a worker: from its joined files) to PASSES idle passes: ({action:
    requests per pass}, CPU ms per pass, passes measured)."""
    with common.Workdir("requests") as wd:
        double = CLOUDS[cloud][1](wd.path, worker)
        proc = api = None
        try:
            api = ApiDouble(wd.path, wd.sub("kubelet"), double.node_name) if worker else None
            spec = os.path.join(wd.path, "cluster.yaml")
            with open(spec, "w") as f:
                f.write(double.spec(wd.path, api.port if api else None))
            log_path = os.path.join(wd.path, "daemon.log")
            with open(log_path, "w") as log:
                proc = subprocess.Popen([binary, "-c", spec, "--log-format", "json", "run", "--mount-root",
                                         wd.sub("mnt"), "--manifest-dir", wd.sub("manifests"),
                                         "--config-dir", wd.sub("lib"), "--kubelet-dir", wd.sub("kubelet"),
                                         "--interval", "1s", *(api.worker_args() if api else [])],
                                        stdout=subprocess.DEVNULL, stderr=log, env=double.env(wd.path))
            return measure_window(proc, log_path, double, *([api] if api else []))
        finally:
            common.stop_pid(proc, grace=20)
            if api:
                api.stop()
            double.stop()


def measure_window(proc, log_path, *doubles):
    """The window over the daemon's log; the requests every double logged in it, by action."""
    seen = 0  # log lines already read
    idle_run, start, opened = 0, None, None
    deadline = time.monotonic() + 120 + 3 * PASSES
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"protokube run exited {proc.returncode}: {tail(log_path)}")
        with open(log_path) as f:
            lines = f.read().splitlines()
        for ln in lines[seen:]:
            try:
                msg = json.loads(ln).get("msg", "")
            except ValueError:
                continue
            m = PASS_RE.match(msg)
            if not m:
                continue
            k, changes = int(m.group(1)), int(m.group(2))
            if start is None:
                idle_run = idle_run + 1 if changes == 0 else 0
                if idle_run > IDLE_BEFORE:
                    # the passes after this one are measured: the doubles' logs and the CPU now
                    start, opened = k, ([len(d.log()) for d in doubles], cpu_ticks(proc.pid))
            elif changes != 0:
                raise RuntimeError(f"pass {k} made {changes} changes inside the idle window: {tail(log_path)}")
            elif k >= start + PASSES:
                ticks = cpu_ticks(proc.pid) - opened[1]
                entries = [(d, e) for d, n0 in zip(doubles, opened[0]) for e in d.log()[n0:]]
                counts = {}
                for d, e in entries:
                    counts[d.action_key(e)] = counts.get(d.action_key(e), 0) + 1
                n = k - start
                if os.environ.get("BENCH_REQUESTS_DETAIL") == "1":  # what was asked, object by object
                    detail = {}
                    for dbl, e in entries:
                        d = f"{dbl.action_key(e)} {e.get('key', '')} {e.get('status')}"
                        detail[d] = detail.get(d, 0) + 1
                    for d, c in sorted(detail.items()):
                        print(f"bench: requests: {c / n:6.2f}/pass {d}", file=sys.stderr)
                return {a: c / n for a, c in counts.items()}, 1000.0 * ticks / CLK_TCK / n, n
        seen = len(lines)
        time.sleep(0.02)
    raise RuntimeError(f"no {PASSES} idle passes within the time limit: {tail(log_path)}")


def tail(path, n=1500):
    try:
        with open(path) as f:
            return f.read()[-n:]
    except OSError:
        return "(no log)"


def summarize(runs):
    actions = sorted({a for r, _, _ in runs for a in r})
    per_action = {a: common.median([r.get(a, 0.0) for r, _, _ in runs]) for a in actions}
    total = common.median([sum(r.values()) for r, _, _ in runs])
    cpu = common.median([c for _, c, _ in runs])
    return per_action, total, cpu


def measure_cloud(cloud, sides, first, worker=False):
    """The rows of one cloud's double (a master's, or a worker's): every side's runs, alternating which side
    runs first."""
    results, notes = {s: [] for s, _ in sides}, []
    what = f"{cloud} worker" if worker else cloud
    for i in range(RUNS):
        order = sides if i % 2 == 0 else list(reversed(sides))  # alternate: neither side always runs first
        for side, binary in order:
            try:
                results[side].append(one_run(binary, cloud, worker))
            except Exception as e:
                notes.append(f"{what} {side} run {i + 1}: {e}")
                print(f"bench: requests: {what} {side} run {i + 1} failed: {e}", file=sys.stderr)
    summ = {s: summarize(r) for s, r in results.items() if r}
    actions = sorted({a for s in summ.values() for a in s[0]})
    before = len(sides) > 1

    def fmt(v, unit=""):
        return "n/a" if v is None else f"{v:.2f}{unit}"

    def val(a_of):
        cells = [fmt(a_of(summ[s]) if s in summ else None) for s, _ in sides]
        return " -> ".join(cells) if before else cells[0]

    name = CLOUDS[cloud][0] + (" and the API double" if worker else "")
    label = f"requests per idle pass ({name}), total"
    label = ("10. " if first else "    ") + ("a worker's " if worker else "") + label
    rows = [(label, val(lambda s: s[1]), "O(1)", "")]
    for a in actions:
        rows.append((f"    {a}", val(lambda s, a=a: s[0].get(a, 0.0)), "", ""))
    rows.append(("    CPU per idle pass (utime+stime)", val(lambda s: s[2]) + " ms", "", ""))
    return rows, results, notes


def measure():
    after_bin = common.protokube_bin()
    before_bin = os.environ.get("PROTOKUBE_BIN_BEFORE")
    if before_bin and not os.access(before_bin, os.X_OK):
        raise RuntimeError(f"PROTOKUBE_BIN_BEFORE: no executable at {before_bin}")
    sides = [("before", before_bin), ("after", after_bin)] if before_bin else [("after", after_bin)]
    rows, notes, counts = [], [], []
    for k, cloud in enumerate(os.environ.get("BENCH_REQUESTS_CLOUDS", "aws,gce").split(",")):
        # a binary from before the cloud existed has no side of it: the after side alone
        cloud_sides = sides if cloud == "aws" else [("after", after_bin)]
        r, results, n = measure_cloud(cloud, cloud_sides, k == 0)
        rows += r
        notes += n
        counts.append(f"{cloud}: " + ", ".join(f"{s} {len(v)}" for s, v in results.items()))
    for cloud in filter(None, os.environ.get("BENCH_REQUESTS_WORKERS", "aws,gce").split(",")):
        # a worker, joined: the after side alone (the before column is the master's comparison)
        r, results, n = measure_cloud(cloud, [("after", after_bin)], not rows, worker=True)
        rows += r
        notes += n
        counts.append(f"{cloud} worker: " + ", ".join(f"{s} {len(v)}" for s, v in results.items()))
    if not rows:
        raise RuntimeError("; ".join(notes))
    note = f"median of runs ({'; '.join(counts)}), {PASSES} idle passes each, --interval 1s"
    if before_bin:
        note += f"; before: {before_bin}"
    if notes:
        note += "; failed: " + "; ".join(notes)
    return rows, note


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("requests: needs root (loop devices, mounts)", file=sys.stderr)
        sys.exit(2)
    common.figure_main(measure)
