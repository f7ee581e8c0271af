"""PROTOKUBE_TRACE=1: the stage times the benchmarks read (bench/converge.py), one JSON line on stderr at exit;
nothing without it."""
import json
import os
import tempfile

SPEC = """apiVersion: protokube/v1alpha1
kind: Cluster
metadata: {name: demo.k8s.test}
spec:
  cloud: local
  dns: {provider: none}
  etcdClusters:
    - {name: main, image: registry.k8s.io/etcd:3.5.16-0}
  kubernetesVersion: 1.31.2
"""
VIEW = {"masters": [{"name": "m1", "internalIPs": ["10.0.0.1"], "externalIPs": []}], "members": []}


def run_dns(pk, env):
    with tempfile.TemporaryDirectory() as d:
        spec, view = os.path.join(d, "c.yaml"), os.path.join(d, "v.json")
        with open(spec, "w") as f:
            f.write(SPEC)
        with open(view, "w") as f:
            json.dump(VIEW, f)
        return pk("-c", spec, "dns", "--view", view, check=0, env=env)


def test_trace_on(pk):
    p = run_dns(pk, {"PROTOKUBE_TRACE": "1"})
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith('{"trace":')]
    assert len(lines) == 1, p.stderr
    marks = json.loads(lines[0])["trace"]
    names = [n for n, _ in marks]
    assert names[0] == "main" and names[-1] == "exit", names
    times = [t for _, t in marks]
    assert times == sorted(times) and times[0] > 0
    assert "api.internal.demo.k8s.test." in p.stdout  # the verb did its work


def test_trace_off(pk):
    for value in ("", "0", "yes"):  # only "1" turns it on
        p = run_dns(pk, {"PROTOKUBE_TRACE": value})
        assert "trace" not in p.stderr, p.stderr
