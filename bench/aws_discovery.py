# SPDX-License-Identifier: Apache-2.0
"""Figure 5: EC2 discovery of 10,000 volumes through the AWS double with pagination: `protokube volumes`
with `cloud: aws` (src/volumes/provider-aws.c), credentials from the environment, the instance identity from
the double's IMDS, EC2 at the double. All 10,000 volumes carry the cluster's tags in the instance's zone, so
the server-side filters keep every one and DescribeVolumes pages through all of them (the double caps a page
at MaxResults <= 500). Timed: spawn -> exit of `protokube volumes`; the double's own time (the sum of its
request handlers, mostly botocore's SigV4 check: bench/aws_double_timed.py) is subtracted. The remainder —
the client's own time — includes process start-up, the HTTP server's request parsing outside the handlers,
and loopback transfer, so it is an upper bound on protokube's cost."""
import os
import subprocess
import time

import common

RUNS = common.env_int("BENCH_AWS_RUNS", 5)
COUNT = common.env_int("BENCH_AWS_VOLUMES", 10000)
CLUSTER = "big.k8s.test"
AZ = "us-east-1a"
IID = "i-0bench00000000001"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SPEC = f"""apiVersion: protokube/v1alpha1
kind: Cluster
metadata:
  name: {CLUSTER}
spec:
  cloud: aws
  dns:
    provider: none
  etcdClusters:
    - name: main
      image: registry.k8s.io/etcd:3.5.16-0
  kubernetesVersion: 1.31.2
"""


class Double(common.AwsDouble):
    def __init__(self, wd):
        super().__init__(wd, os.path.join(common.HERE, "aws_double_timed.py"), os.path.join(wd, "double.log"))

    def times(self):
        return self.get_json("/_bench/times", timeout=10)


def measure():
    with common.Workdir("aws") as wd:
        double = Double(wd.path)
        try:
            return run_all(wd, double)
        finally:
            double.stop()


def run_all(wd, double):
    double.post("/_double/config", {
        "instances": {IID: {"az": AZ, "private_ip": "10.9.0.5", "public_ip": "54.9.0.5",
                            "tags": {"KubernetesCluster": CLUSTER}}},
        "generate_volumes": {"count": COUNT, "az": AZ,
                             "tags": {"KubernetesCluster": CLUSTER, "k8s.io/role/master": "1",
                                      "k8s.io/etcd/main": "v{i}/v{i}"}}})
    spec = os.path.join(wd.path, "cluster.yaml")
    with open(spec, "w") as f:
        f.write(SPEC)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "us-east-1",
                "AWS_ENDPOINT_URL_EC2": double.url, "AWS_EC2_METADATA_SERVICE_ENDPOINT": f"{double.url}/_as/{IID}",
                "AWS_SHARED_CREDENTIALS_FILE": os.path.join(wd.path, "none"), "HOME": wd.path,
                "PROTOKUBE_AWS_BYID_DIR": wd.sub("by-id")})
    argv = [common.protokube_bin(), "-c", spec, "volumes", "--mount-root", wd.sub("mnt"), "--manifest-dir",
            wd.sub("manifests"), "--config-dir", wd.sub("lib"), "--kubelet-dir", wd.sub("kubelet")]
    walls, own, client, reqs, pages = [], [], [], [], []
    for _ in range(RUNS):
        double.post("/_bench/reset", {})
        t0 = time.monotonic()
        p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
        wall = time.monotonic() - t0
        if p.returncode != 0:
            raise RuntimeError(f"protokube volumes exited {p.returncode}: {p.stderr[-2000:]}")
        listed = sum(1 for ln in p.stdout.splitlines() if "vol-" in ln)
        if listed < COUNT:
            raise RuntimeError(f"protokube volumes listed {listed} volumes, wanted {COUNT}")
        t = double.times()
        walls.append(wall)
        own.append(t["seconds"])
        client.append(wall - t["seconds"])
        reqs.append(t["requests"])
        pages.append(sum(n for k, (n, _) in t["by_action"].items() if k == "POST /"))
    c = common.median(client)
    rows = [(f"5. EC2 discovery of {COUNT} volumes, client's own time", common.fmt_ms(c), "<= 1 s",
             "met" if c <= 1.0 else "MISSED"),
            ("   wall of `protokube volumes` (cloud: aws)", common.fmt_ms(common.median(walls)), "", ""),
            ("   the double's handler time (SigV4 check, XML)", common.fmt_ms(common.median(own)), "", ""),
            ("   requests (EC2 POSTs) per run", f"{int(common.median(reqs))} ({int(common.median(pages))})",
             "", "")]
    return rows, f"{RUNS} runs"


if __name__ == "__main__":
    common.figure_main(measure)
