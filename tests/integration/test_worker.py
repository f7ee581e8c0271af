# SPDX-License-Identifier: Apache-2.0
"""A worker's kubelet bootstrap (src/daemon/step-kubelet-boot.c, docs/workers.md) against a REAL kube-apiserver
1.20.2 with bootstrap-token auth (the fixture of test_kube_client.py, listening on every address of its
namespace so that the master n1's internal address reaches it).

`protokube once --role worker` in that namespace learns the masters from the volume pool as the masters do
(n1 holds main's volume), fetches the cluster CA from kube-public/cluster-info without trusting the server,
takes it only with the pin `token create` printed, and checks the server with it; then writes the kubelet's
files. The bootstrap kubeconfig it writes authenticates to the real API with the token, the server verified
by the pinned CA under the API's internal name. A wrong pin, a missing cluster-info, a token file others can
read: each refused, with its words, and nothing written. The worker's spec names no state store and nothing
it writes holds a private key.

The cluster-info ConfigMap and the Role that lets anyone read it are the masters' to publish; here the test
publishes them as kubeadm does (the masters' step that does it is tested in test_join.py)."""
import base64
import json
import os
import re
import subprocess
import tempfile

import pytest

from conftest import protokube_bin
from loopdev import node_ip
from test_join import Machine, new_token
from test_kube_client import running_api

CLUSTER_INFO = "/api/v1/namespaces/kube-public/configmaps/cluster-info"
WORKER = "w1"
WORKER_IP = "127.0.10.200"


@pytest.fixture(scope="module")
def api():
    # the flag given last wins: every address of the namespace, n1's internal one among them
    with running_api("pk-wkr", ["--enable-bootstrap-token-auth", "--bind-address=0.0.0.0"]) as x:
        x.work = tempfile.mkdtemp(prefix="pk-worker-", dir=x.env.base)
        yield x


def pk_master(api, *args, check=None):
    argv = ["ip", "netns", "exec", api.ns, protokube_bin(), "-c", api.env.node_spec("n1"), *args,
            "--kubeconfig", api.kubeconfig]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert check is None or p.returncode == check, p.stderr
    return p


class Worker:
    def __init__(self, api, name, token, pin):
        self.api, self.name, self.pin = api, name, pin
        self.dir = os.path.join(api.work, name)
        self.kubelet_dir = os.path.join(self.dir, "kubelet")
        os.makedirs(self.dir, exist_ok=True)
        self.token_file = os.path.join(self.dir, "token")
        fd = os.open(self.token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
        with open(api.env.spec) as f:  # the cluster's spec without a state store: a worker never reads it
            spec = f.read()
        assert "stateStore" not in spec
        self.spec = os.path.join(self.dir, "cluster.yaml")
        with open(self.spec, "w") as f:
            f.write(spec)

    def run(self, verb="once", pin=None, check=None):
        env = self.api.env
        argv = ["ip", "netns", "exec", self.api.ns, protokube_bin(), "-c", self.spec, *verb.split(), "--role", "worker",
                "--node-name", self.name, "--zone", "z1", "--internal-ip", WORKER_IP, "--pool", env.pool,
                "--mount-root", os.path.join(self.dir, "mnt"), "--manifest-dir", os.path.join(self.dir, "manifests"),
                "--kubelet-dir", self.kubelet_dir, "--config-dir", os.path.join(self.dir, "lib"), "--token-file", self.token_file, "--ca-pin", pin or self.pin]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if check is not None and p.returncode != check:
            raise AssertionError(f"worker {verb} exited {p.returncode}, wanted {check}\n"
                                 f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        return p

    def files(self):
        if not os.path.isdir(self.kubelet_dir):
            return {}
        return {n: os.stat(os.path.join(self.kubelet_dir, n)) for n in sorted(os.listdir(self.kubelet_dir))}

    def text(self, name):
        with open(os.path.join(self.kubelet_dir, name)) as f:
            return f.read()


def publish_cluster_info(api):
    """kube-public/cluster-info as kubeadm writes it, and the Role that lets system:anonymous get it."""
    with open(os.path.join(api.pki, "protokube", "ca.crt"), "rb") as f:
        ca = base64.b64encode(f.read()).decode()
    kubeconfig = ("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: " + ca +
                  "\n    server: https://api.internal.demo.k8s.test:443\n  name: \"\"\ncontexts: null\n"
                  "current-context: \"\"\nkind: Config\npreferences: {}\nusers: null\n")
    objects = [
        ("/api/v1/namespaces/kube-public/configmaps",
         {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cluster-info", "namespace": "kube-public"},
          "data": {"kubeconfig": kubeconfig}}),
        ("/apis/rbac.authorization.k8s.io/v1/namespaces/kube-public/roles",
         {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
          "metadata": {"name": "test:cluster-info", "namespace": "kube-public"},
          "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cluster-info"],
                     "verbs": ["get"]}]}),
        ("/apis/rbac.authorization.k8s.io/v1/namespaces/kube-public/rolebindings",
         {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
          "metadata": {"name": "test:cluster-info", "namespace": "kube-public"},
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "test:cluster-info"},
          "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:anonymous"}]}),
    ]
    for path, obj in objects:
        out = api.curl("POST", path, json.dumps(obj), "application/json")
        assert re.match(rb"HTTP/1.1 20[01]", out) or b" 409 " in out.split(b"\r\n")[0], out[:300]


def delete_cluster_info(api):
    api.curl("DELETE", CLUSTER_INFO)


@pytest.fixture(scope="module")
def token_pin(api):
    return new_token(api, "--ttl", "1h")


def test_no_cluster_info_yet_writes_nothing(api, token_pin):
    w = Worker(api, "w-early", *token_pin)
    p = w.run(check=1)  # nothing published: anonymous requests may read nothing in kube-public
    assert "HTTP 403: cluster-info must be readable anonymously" in p.stderr, p.stderr
    assert w.files() == {}
    publish_cluster_info(api)
    delete_cluster_info(api)  # readable, but not there
    p = w.run(check=1)
    assert "no cluster-info yet (404)" in p.stderr, p.stderr
    assert w.files() == {}


def test_a_wrong_pin_is_refused_and_nothing_written(api, token_pin):
    publish_cluster_info(api)
    w = Worker(api, "w-pin", *token_pin)
    wrong = "sha256:" + "ab" * 32
    p = w.run(pin=wrong, check=1)
    assert "not the pinned one" in p.stderr and wrong in p.stderr, p.stderr
    assert token_pin[1] in p.stderr  # the pin the CA has, beside the one given
    assert w.files() == {}
    assert token_pin[0].split(".")[1] not in p.stderr + p.stdout


def test_a_token_file_others_read_is_refused(api, token_pin):
    w = Worker(api, "w-mode", *token_pin)
    os.chmod(w.token_file, 0o644)
    p = w.run(check=1)
    assert "lets others read a credential" in p.stderr and w.token_file in p.stderr, p.stderr
    assert w.files() == {}


def bootstrap_fields(text):
    return {k: re.search(rf"^\s*{k}: (\S+)$", text, re.M).group(1)
            for k in ("server", "certificate-authority", "token")}


def test_the_worker_writes_the_kubelets_files(api, token_pin):
    publish_cluster_info(api)
    token, pin = token_pin
    w = Worker(api, WORKER, token, pin)
    # converged but for what waits on the kubelet, which this test does not run (exit 3: not converged yet)
    p = w.run(check=3)
    assert "kube-proxy: the kubelet has not joined yet" in p.stderr, p.stderr
    files = w.files()
    assert sorted(files) == ["bootstrap-kubeconfig", "ca.crt", "config.yaml", "kubelet.env"], files
    with open(os.path.join(api.pki, "protokube", "ca.crt")) as f:
        assert w.text("ca.crt") == f.read()
    assert files["bootstrap-kubeconfig"].st_mode & 0o777 == 0o600
    config = w.text("config.yaml")
    assert f"clientCAFile: {w.kubelet_dir}/ca.crt\n" in config
    assert "rotateCertificates: true\n" in config and "serverTLSBootstrap: true\n" in config
    env = w.text("kubelet.env")
    assert f"--bootstrap-kubeconfig={w.kubelet_dir}/bootstrap-kubeconfig" in env
    assert f"--hostname-override={WORKER}" in env and f"--node-ip={WORKER_IP}" in env
    # the token is in the bootstrap kubeconfig only; no file holds a private key; nothing is logged of it
    secret = token.split(".")[1]
    for name in files:
        text = w.text(name)
        assert (secret in text) == (name == "bootstrap-kubeconfig"), name
        assert "PRIVATE KEY" not in text, name
    assert secret not in p.stdout + p.stderr

    # the bootstrap kubeconfig works against the real API: the token authenticates (the bootstrapper may
    # list CSRs), the server verified by the pinned CA under the API's internal name
    b = bootstrap_fields(w.text("bootstrap-kubeconfig"))
    assert b["server"] == "https://api.internal.demo.k8s.test"
    assert b["token"] == token
    host = "api.internal.demo.k8s.test"
    c = subprocess.run(["ip", "netns", "exec", api.ns, "curl", "-sS", "--http1.1", "-A", "protokube", "-o", "/dev/null",
                        "-w", "%{http_code}", "--cacert", b["certificate-authority"], "--resolve",
                        f"{host}:443:{node_ip('n1')}", "-H", f"Authorization: Bearer {token}",
                        f"https://{host}/apis/certificates.k8s.io/v1/certificatesigningrequests"],
                       capture_output=True, text=True, timeout=30)
    assert c.returncode == 0 and c.stdout == "200", (c.stdout, c.stderr)

    # a second pass changes nothing: every file keeps its inode and mtime
    w.run(check=3)
    again = w.files()
    assert {n: (s.st_ino, s.st_mtime_ns) for n, s in again.items()} == \
        {n: (s.st_ino, s.st_mtime_ns) for n, s in files.items()}


def test_plan_names_what_blocks(api, token_pin):
    w = Worker(api, "w-plan", *token_pin)
    os.remove(w.token_file)
    p = w.run(verb="plan", check=1)
    assert "kubelet: cannot bootstrap: cannot read the bootstrap token file" in p.stdout, p.stdout
    assert w.files() == {}


def join_plan(w, check, token_file=None):
    """`protokube join plan` for worker w (its token file, or another), its exit code checked."""
    saved = w.token_file
    w.token_file = token_file or w.token_file
    try:
        return w.run(verb="join plan", check=check)
    finally:
        w.token_file = saved


def unknown_token_file(w):
    """A token of the right form that the API never issued, in a file of w's (mode 0600)."""
    path = os.path.join(w.dir, "unknown-token")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("zzzzzz.0123456789abcdef\n")
    return path


def stage(p, name):
    line = [x for x in p.stdout.splitlines() if x.startswith(name + ": ")]
    assert len(line) == 1, p.stdout
    return line[0]


def test_join_plan_names_the_stage_that_blocks(api, token_pin):
    """join plan against the real API: a good token waits at the CSR (the kubelet is not running here); a
    token the API does not know is refused at the token stage (its 401), a wrong pin at the pin stage."""
    publish_cluster_info(api)
    token, pin = token_pin
    # a new machine, before any pass wrote anything: a token the API never issued is refused at the token
    # stage already (asked through the CA the pin stage took, held in memory), and nothing is written
    fresh = Worker(api, "w-join-fresh", token, pin)
    p = join_plan(fresh, 1, token_file=unknown_token_file(fresh))
    assert "token: refused: the API refuses the bootstrap token (401)" in p.stdout, p.stdout
    assert stage(p, "pin") == f"pin: ok: the cluster's CA has the pin {pin} (ca.crt is to be written)", p.stdout
    assert p.stdout.endswith("join: blocked at token\n"), p.stdout
    assert fresh.files() == {}
    # the same machine with the good token: it waits at the CSR (no kubelet here), still writing nothing
    p = join_plan(fresh, 3)
    assert stage(p, "csr").startswith("csr: waiting: the kubelet has asked for no certificate yet"), p.stdout
    assert fresh.files() == {}

    w = Worker(api, "w-join", token, pin)
    w.run(check=3)  # the pinned CA and the kubelet's files
    p = join_plan(w, 3)
    assert stage(p, "csr").startswith("csr: waiting: the kubelet has asked for no certificate yet"), p.stdout
    assert stage(p, "dns").startswith("dns: ok: "), p.stdout  # this spec: dns.provider none
    assert stage(p, "token") == f"token: ok: the API takes bootstrap token {token.split('.')[0]}", p.stdout
    assert stage(p, "pin") == f"pin: ok: the cluster's CA has the pin {pin}", p.stdout
    assert stage(p, "csr").startswith("csr: waiting: the kubelet has asked for no certificate yet"), p.stdout
    assert stage(p, "node") == "node: not reached", p.stdout
    assert p.stdout.endswith("join: blocked at csr\n"), p.stdout
    assert token.split(".")[1] not in p.stdout + p.stderr

    # its kubelet's bootstrap CSR (made here with the token, as kubelet does): the API lists it without its
    # kind, and it is the worker's; pending, then with the masters' refusal noted on it
    m = Machine(api, "w-join-kubelet")
    m.create_csr("csr-w-join", m.request("/O=system:nodes/CN=system:node:w-join"), token=token)
    p = join_plan(w, 3)
    assert stage(p, "csr").startswith("csr: waiting: CSR csr-w-join is pending: no master approved it yet"), \
        p.stdout
    # the note as the masters' round writes it (test_join.py checks that they do)
    note = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": "csr-w-join",
                         "annotations": {"protokube.io/refusal": "node name w-join is bound to machine x"}}}
    api.write("csr-note.json", json.dumps(note))
    api.kube("apply", os.path.join(api.env.base, "csr-note.json"), check=0)
    p = join_plan(w, 1)
    assert stage(p, "csr") == ("csr: refused: CSR csr-w-join is refused by the masters (left pending): node name "
                               "w-join is bound to machine x"), p.stdout

    # a token of the right form that the API never issued: the 401, at the token stage
    p = join_plan(w, 1, token_file=unknown_token_file(w))
    assert "token: refused: the API refuses the bootstrap token (401)" in p.stdout, p.stdout
    assert p.stdout.endswith("join: blocked at token\n"), p.stdout
    assert "0123456789abcdef" not in p.stdout + p.stderr

    # a wrong pin: the CA on disk is not taken, the masters' has another pin
    wrong = "sha256:" + "0" * 64
    v = Worker(api, "w-join-pin", token, wrong)
    p = join_plan(v, 1)
    assert stage(p, "pin").startswith(f"pin: refused: no CA with the pin {wrong}"), p.stdout
    assert pin in stage(p, "pin"), p.stdout
    assert p.stdout.endswith("join: blocked at pin\n"), p.stdout
    assert v.files() == {}
