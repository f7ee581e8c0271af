# SPDX-License-Identifier: Apache-2.0
"""`protokube checkpoint --once` against the Kubernetes API double (tests/fakes/kube/server.py, plain http on
loopback, which lists as kube-apiserver does: limit/continue, label and field selectors, a 400 for what it cannot
use): what the API says can never make protokube write outside its state directory, a list that grows with the
cluster stays small, two writers of one checkpoint never leave it pointing at a removed generation, and plain http
goes nowhere but loopback.

The cluster: node m1, protokube's DaemonSet kube-apiserver and Deployment kube-scheduler (with its ReplicaSet),
their pods on m1, the Secret and ConfigMap the apiserver mounts. test_checkpoint.py does the same against a real
kubelet and kube-apiserver."""
import base64
import contextlib
import copy
import json
import os
import shutil
import subprocess
import tempfile
import threading
import urllib.request

import pytest

from conftest import ROOT, protokube_bin
from fakeserver import running_fake_server

FAKE = os.path.join(ROOT, "tests", "fakes", "kube", "server.py")
MANAGED = {"app.kubernetes.io/managed-by": "protokube"}
DS_UID = "0d6f2b7e-2a55-4c1b-8a3e-6c1f0b9d2e44"
DEP_UID = "7a1e9c3b-5d2f-4e8a-b6c0-1f2e3d4c5b6a"
RS_UID = "3c9d8e7f-6a5b-4c3d-2e1f-0a9b8c7d6e5f"
RS_NAME = "kube-scheduler-5d9f7c8b6"
READY = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
         "containerStatuses": [{"name": "c", "ready": True,
                                "state": {"running": {"startedAt": "2026-11-23T22:20:30Z"}}}]}


class Fake:
    def __init__(self, url):
        self.url = url

    def post(self, path, obj):
        req = urllib.request.Request(self.url + path, data=json.dumps(obj).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            assert r.status == 200

    def requests(self):
        with urllib.request.urlopen(self.url + "/_fake/requests", timeout=30) as r:
            return json.load(r)


@contextlib.contextmanager
def running_fake():
    with running_fake_server(FAKE, "the API double", "pk-kubefake-") as (url, _):
        yield Fake(url)


def pod(name, uid, app, owner_kind, owner_name, owner_uid, volumes=(), labels=None):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "kube-system", "uid": uid,
                         "labels": {**MANAGED, "k8s-app": app, **(labels or {})},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": owner_kind, "name": owner_name,
                                              "uid": owner_uid, "controller": True}]},
            "spec": {"nodeName": "m1", "hostNetwork": True,
                     "containers": [{"name": app, "image": f"registry.k8s.io/{app}:v1.20.2",
                                     "volumeMounts": [{"name": v["name"], "mountPath": "/srv/" + v["name"]}
                                                      for v in volumes]}],
                     "volumes": list(volumes)},
            "status": copy.deepcopy(READY)}


def apiserver_pod(owner_name="kube-apiserver"):
    return pod("kube-apiserver-x7k2p", "5b0c2f4e-3f1a-4d0e-9a59-0e0f2b7d9c11", "kube-apiserver", "DaemonSet",
               owner_name, DS_UID,
               volumes=[{"name": "pki", "secret": {"secretName": "kube-apiserver"}},
                        {"name": "config", "configMap": {"name": "kube-apiserver-config"}}])


def cluster(apiserver_owner="kube-apiserver"):
    def meta(name, uid, **kw):
        return {"name": name, "namespace": "kube-system", "uid": uid, "labels": {**MANAGED, "k8s-app": name},
                **kw}
    return [
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": "m1", "labels": {"node-role.kubernetes.io/master": "",
                                               "protokube.io/self-hosted-apiserver": "true"}}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta("kube-apiserver", DS_UID),
         "spec": {"template": {"spec": {"nodeSelector": {"protokube.io/self-hosted-apiserver": "true"}}}}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("kube-scheduler", DEP_UID, generation=1),
         "spec": {"replicas": 1},
         "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet",
         "metadata": {**meta("kube-scheduler", RS_UID), "name": RS_NAME,
                      "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "kube-scheduler",
                                           "uid": DEP_UID, "controller": True}]}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kube-apiserver", "namespace": "kube-system"},
         "data": {"apiserver.key": base64.b64encode(b"key material").decode()}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "kube-apiserver-config", "namespace": "kube-system"},
         "data": {"audit.yaml": "kind: Policy\n"}},
        apiserver_pod(apiserver_owner),
        pod(RS_NAME + "-x2x9q", "9e8d7c6b-5a49-4838-2716-05f4e3d2c1b0", "kube-scheduler", "ReplicaSet", RS_NAME,
            RS_UID, labels={"pod-template-hash": "5d9f7c8b6"}),
    ]


@pytest.fixture
def node():
    """A base directory: base/state (protokube's), base/manifests (kubelet's), base/proc (no processes), a
    kubeconfig naming the double; and the double, loaded with the cluster."""
    base = tempfile.mkdtemp(prefix="pk-ckapi-")
    for d in ("manifests", "proc"):
        os.makedirs(os.path.join(base, d))
    with running_fake() as fake:
        fake.post("/_fake/objects", cluster())
        kubeconfig = os.path.join(base, "kubeconfig")
        with open(kubeconfig, "w", encoding="utf-8") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                    f"clusters:\n- name: k\n  cluster:\n    server: {fake.url}\n"
                    "users:\n- name: u\n  user: {}\n"
                    "contexts:\n- name: c\n  context: {cluster: k, user: u}\n")
        yield base, fake, kubeconfig
    shutil.rmtree(base, ignore_errors=True)


def checkpoint(base, kubeconfig, *extra, timeout=120):
    return subprocess.run([protokube_bin(), "checkpoint", "--once", "--kubeconfig", kubeconfig, "--manifest-dir",
                           os.path.join(base, "manifests"), "--node-name", "m1", "--state-dir",
                           os.path.join(base, "state"), "--proc", os.path.join(base, "proc"), *extra],
                          capture_output=True, text=True, timeout=timeout)


def tree(base):
    out = set()
    for root, dirs, files in os.walk(base):
        for n in dirs + files:
            out.add(os.path.relpath(os.path.join(root, n), base))
    return out


def test_owner_name_that_climbs_is_refused(node):
    """The reproduction: one Running, Ready, protokube-labelled kube-system pod on m1 whose controlling owner is
    a DaemonSet named '../../../manifests/evil' (the API checks an owner's name only for being non-empty).
    protokube, as root, wrote evil-checkpoint.json into kubelet's manifest directory, where kubelet would run it
    as a static pod. Now: refused with a clear error, nothing created outside the state directory."""
    base, fake, kubeconfig = node
    fake.post("/_fake/objects", [apiserver_pod("../../../manifests/evil")])
    before = tree(base)
    p = checkpoint(base, kubeconfig)
    assert p.returncode == 1, p
    assert "DaemonSet '../../../manifests/evil' is not valid" in p.stderr, p.stderr
    assert "pod kube-apiserver-x7k2p cannot be checkpointed" in p.stderr, p.stderr
    assert os.listdir(os.path.join(base, "manifests")) == [], os.listdir(os.path.join(base, "manifests"))
    made = {f for f in tree(base) - before if not f.startswith("state")}
    assert made == set(), made
    state = os.path.join(base, "state")
    assert not [f for f in os.listdir(state) if f.startswith(".checkpoint")] if os.path.isdir(state) else True


def test_refresh_of_protokubes_pods(node):
    base, fake, kubeconfig = node
    p = checkpoint(base, kubeconfig)
    assert p.returncode == 0, p
    assert "refresh: checkpoint of 2 pods written" in p.stdout, p.stdout
    ck = os.path.join(base, "state", "checkpoint")
    assert sorted(os.listdir(os.path.join(ck, "manifests"))) == ["kube-apiserver-checkpoint.json",
                                                                 "kube-scheduler-checkpoint.json"]
    key = os.path.join(ck, "secrets", "kube-apiserver", "apiserver.key")
    assert oct(os.stat(key).st_mode & 0o7777) == "0o600"
    with open(key, "rb") as f:
        assert f.read() == b"key material"


def test_5000_pods_stay_out_of_the_list(node):
    """A cluster of 5,000 nodes: a kube-proxy pod each (protokube's too, managed-by protokube), about 4 KiB of
    JSON apiece, 20 MB in all, past the client's 16 MiB response cap. The checkpoint lists only m1's pods of the
    control plane (a field and a label selector, in pages), so it does not grow with the cluster."""
    base, fake, kubeconfig = node
    fake.post("/_fake/pods", {"count": 5000, "name": "kube-proxy-{i}", "node": "w{i}", "pad": 4000,
                              "labels": {**MANAGED, "k8s-app": "kube-proxy"}})
    p = checkpoint(base, kubeconfig)
    assert p.returncode == 0, p
    assert "refresh: checkpoint of 2 pods written" in p.stdout, p.stdout
    lists = [r for r in fake.requests() if r["path"] == "/api/v1/namespaces/kube-system/pods"]
    assert lists, fake.requests()
    for r in lists:
        assert "fieldSelector=spec.nodeName%3Dm1" in r["query"] and "limit=" in r["query"], r


def test_two_writers_never_leave_a_removed_generation(node):
    """Two `protokube checkpoint --once` loops on one state directory, each refresh writing a new generation (the
    apiserver's Secret changes with every read): at no time does `checkpoint` name a generation that is gone (a
    watcher reads the link, the generation's digest, and the link again: the same target both times and no
    digest is a link to a removed generation), and every refresh succeeds."""
    base, fake, kubeconfig = node
    fake.post("/_fake/config", {"rotate": "kube-system/kube-apiserver"})
    rounds, failures, dangling, stop = 100, [], [], threading.Event()
    state = os.path.join(base, "state")
    link = os.path.join(state, "checkpoint")

    def writer(k):
        for i in range(rounds):
            p = checkpoint(base, kubeconfig)
            if p.returncode != 0 or "refresh:" not in p.stdout:
                failures.append(f"writer {k} round {i}: {p.returncode} {p.stdout} {p.stderr}")

    def watcher():
        for _ in range(2_000_000):
            if stop.is_set():
                return
            try:
                target = os.readlink(link)
            except OSError:
                continue
            if os.path.exists(os.path.join(state, target, "digest")):
                continue
            try:
                again = os.readlink(link)
            except OSError:
                continue
            if again == target:
                dangling.append(target)

    threads = [threading.Thread(target=writer, args=(k,)) for k in (1, 2)]
    w = threading.Thread(target=watcher)
    w.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    stop.set()
    w.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "the writers did not finish"
    assert not failures, failures[:3]
    assert not dangling, dangling[:3]
    assert os.path.exists(os.path.join(link, "digest"))
    assert os.path.exists(os.path.join(link, "manifests", "kube-apiserver-checkpoint.json"))
    # what is left: the current generation, and at most one per writer that lost a sweep to the other
    gens = [f for f in os.listdir(state) if f.startswith(".checkpoint")]
    assert len(gens) <= 3, gens


def test_plain_http_only_on_loopback(node):
    """A kubeconfig naming a plain http server off loopback: refused before any request, as the AWS client
    refuses such endpoints (the answers would carry Secrets in the clear)."""
    base, _fake, kubeconfig = node
    with open(kubeconfig, encoding="utf-8") as f:
        text = f.read()
    with open(kubeconfig, "w", encoding="utf-8") as f:
        f.write("\n".join("    server: http://192.0.2.10:8080" if line.strip().startswith("server:") else line
                          for line in text.splitlines()) + "\n")
    p = checkpoint(base, kubeconfig, timeout=60)
    assert p.returncode == 1, p
    assert "plain http is allowed only for a loopback host" in p.stderr, p.stderr
