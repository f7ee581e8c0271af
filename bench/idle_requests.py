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
alternating with the binary under test (before first, then after first, ...), and both columns printed."""
import json
import os
import re
import subprocess
import sys
import time

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
GCE_ZONE = "europe-west1-b"
GCE_INSTANCE = "master-bench-a"
PASS_RE = re.compile(r"^Pass (\d+) converged in [0-9.]+ ms \((\d+) changes\)\.$")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def spec_text(wd, cloud="aws", dns="route53", scheme="s3"):
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
  stateStore: {scheme}://{BUCKET}/{CLUSTER}
  pki:
    dir: {wd}/pki
  kubernetesVersion: 1.31.2
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
    """The AWS double on loopback with one instance, two image-backed volumes, a zone and a bucket."""
    post_timeout = 60

    def __init__(self, wd):
        super().__init__(wd, DOUBLE, os.path.join(wd, "double.log"))
        volumes = []
        for c in ("main", "events"):
            image = os.path.join(wd, f"vol-{c}.img")
            with open(image, "wb") as f:
                f.truncate(24 << 20)
            volumes.append({"id": f"vol-0{c}0a", "az": AZ, "size": 1, "image": image,
                            "tags": {"KubernetesCluster": CLUSTER, "k8s.io/role/master": "1",
                                     f"k8s.io/etcd/{c}": "a/a"}})
        self.post("/_double/config", {
            "instances": {IID: {"az": AZ, "private_ip": "10.45.0.10", "public_ip": "54.45.0.10",
                                "tags": {"KubernetesCluster": CLUSTER}}},
            "volumes": volumes, "byid_dir": os.path.join(wd, "by-id"), "buckets": [BUCKET],
            "zones": [{"id": ZONE_ID, "name": "k8s.test."}]})

    def spec(self, wd):
        return spec_text(wd)

    def env(self, wd):
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update({"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": SECRET,
                    "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_EC2": self.url,
                    "AWS_ENDPOINT_URL_ROUTE_53": self.url, "AWS_ENDPOINT_URL_S3": self.url,
                    "AWS_EC2_METADATA_SERVICE_ENDPOINT": f"{self.url}/_as/{IID}",
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
    labelled as kops labels them, a managed zone and a bucket."""
    post_timeout = 60

    def __init__(self, wd):
        super().__init__(wd, GCE_DOUBLE, os.path.join(wd, "double.log"))
        safe = CLUSTER.replace(".", "-")
        disks = {}
        for c in ("main", "events"):
            image = os.path.join(wd, f"disk-{c}.img")
            with open(image, "wb") as f:
                f.truncate(24 << 20)
            disks[f"a-etcd-{c}-{safe}"] = {"zone": GCE_ZONE, "size_gb": 1, "image": image,
                                          "labels": {"k8s-io-cluster-name": safe, "k8s-io-role-master": "master",
                                                     f"k8s-io-etcd-{c}": "a-2fa"}}
        self.post("/_double/config", {
            "project": "protokube-bench", "disks": disks, "buckets": {BUCKET: {}},
            "instances": {GCE_INSTANCE: {"zone": GCE_ZONE, "internal_ip": "10.46.0.10", "external_ip": "35.46.0.10",
                                         "labels": {"k8s-io-cluster-name": safe},
                                         "byid_dir": os.path.join(wd, "by-id")}},
            "managed_zones": {"k8s-test": {"dns_name": "k8s.test."}}})
        os.makedirs(os.path.join(wd, "by-id"), exist_ok=True)

    def spec(self, wd):
        return spec_text(wd, "gce", "clouddns", "gs")

    def env(self, wd):
        port = self.get_json("/_double/state")["metadata_ports"][GCE_INSTANCE]
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


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat(5))


def one_run(binary, cloud="aws"):
    """One daemon from a blank cluster to PASSES idle passes: ({action: requests per pass}, CPU ms per pass,
    passes measured)."""
    with common.Workdir("requests") as wd:
        double = CLOUDS[cloud][1](wd.path)
        proc = None
        try:
            spec = os.path.join(wd.path, "cluster.yaml")
            with open(spec, "w") as f:
                f.write(double.spec(wd.path))
            log_path = os.path.join(wd.path, "daemon.log")
            with open(log_path, "w") as log:
                proc = subprocess.Popen([binary, "-c", spec, "--log-format", "json", "run", "--mount-root",
                                         wd.sub("mnt"), "--manifest-dir", wd.sub("manifests"),
                                         "--config-dir", wd.sub("lib"), "--kubelet-dir", wd.sub("kubelet"),
                                         "--interval", "1s"], stdout=subprocess.DEVNULL, stderr=log,
                                        env=double.env(wd.path))
            return measure_window(proc, log_path, double)
        finally:
            common.stop_pid(proc, grace=20)
            double.stop()


def measure_window(proc, log_path, double):
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
                    # the passes after this one are measured: the double's log and the CPU now
                    start, opened = k, (len(double.log()), cpu_ticks(proc.pid))
            elif changes != 0:
                raise RuntimeError(f"pass {k} made {changes} changes inside the idle window: {tail(log_path)}")
            elif k >= start + PASSES:
                ticks = cpu_ticks(proc.pid) - opened[1]
                entries = double.log()[opened[0]:]
                counts = {}
                for e in entries:
                    counts[double.action_key(e)] = counts.get(double.action_key(e), 0) + 1
                n = k - start
                if os.environ.get("BENCH_REQUESTS_DETAIL") == "1":  # what was asked, object by object
                    detail = {}
                    for e in entries:
                        d = f"{double.action_key(e)} {e.get('key', '')} {e.get('status')}"
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


def measure_cloud(cloud, sides, first):
    """The rows of one cloud's double: every side's runs, alternating which side runs first."""
    results, notes = {s: [] for s, _ in sides}, []
    for i in range(RUNS):
        order = sides if i % 2 == 0 else list(reversed(sides))  # alternate: neither side always runs first
        for side, binary in order:
            try:
                results[side].append(one_run(binary, cloud))
            except Exception as e:
                notes.append(f"{cloud} {side} run {i + 1}: {e}")
                print(f"bench: requests: {cloud} {side} run {i + 1} failed: {e}", file=sys.stderr)
    summ = {s: summarize(r) for s, r in results.items() if r}
    actions = sorted({a for s in summ.values() for a in s[0]})
    before = len(sides) > 1

    def fmt(v, unit=""):
        return "n/a" if v is None else f"{v:.2f}{unit}"

    def val(a_of):
        cells = [fmt(a_of(summ[s]) if s in summ else None) for s, _ in sides]
        return " -> ".join(cells) if before else cells[0]

    name = CLOUDS[cloud][0]
    label = f"10. requests per idle pass ({name}), total" if first else f"    requests per idle pass ({name}), total"
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
    r, note = measure()
    for row in r:
        print(" | ".join(row))
    print(note)
