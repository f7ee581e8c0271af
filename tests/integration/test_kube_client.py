# SPDX-License-Identifier: Apache-2.0
"""The Kubernetes API client (src/kube/, docs/kube-client.md) against a REAL kube-apiserver 1.20.2 (from
scripts/k8s-binaries.sh) on Debian's etcd, both plain processes in a network namespace the test creates (so
the apiserver may take port 443, the port protokube's kubeconfigs name, without touching the host).
The certificates come from a real `protokube once` pass with a state store (as in test_certs.py): the
apiserver serves with the pass's apiserver pair and trusts its cluster CA; the client is `protokube kube`
with protokube's own kubeconfig (<pki>/protokube/kubeconfig). Checked: readyz, server-side apply twice (the
second keeps the resourceVersion), get, a 422 with the API's message, a 404, a 409 on a delete precondition,
an unknown kind, a wrong CA as a clear TLS error, a Secret's value never in an error, and the audit log
showing user `protokube` in group system:masters.

PROTOKUBE_KUBE_RECORD=DIR also records the raw responses the unit tests replay (tests/vectors/kube/)."""
import contextlib
import json
import os
import re
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import need_root, protokube_bin
from test_certs import CertEnv

K8S_SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "k8s-binaries.sh")
ADVERTISE = "10.99.0.1"
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
"""


def k8s_bin():
    d = subprocess.run([K8S_SCRIPT, "--dir"], capture_output=True, text=True, check=True, timeout=30).stdout.strip()
    if not os.access(os.path.join(d, "kube-apiserver"), os.X_OK):
        pytest.skip("no kube-apiserver: run scripts/k8s-binaries.sh")
    return d


class Proc:
    def __init__(self, ns, argv, log):
        self.log = log
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns, *argv], stdout=open(log, "ab"),
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                # kube-apiserver 1.20 outlived SIGTERM by the whole 15 s once waited here (CI's slowest teardown);
                # nothing of it is checked after the module's tests, so it is not waited for longer than this
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


class Api:
    def __init__(self, env, ns, pki, audit):
        self.env, self.ns, self.pki, self.audit = env, ns, pki, audit
        self.kubeconfig = os.path.join(pki, "protokube", "kubeconfig")

    def kube(self, *args, check=None, timeout=90):
        argv = ["ip", "netns", "exec", self.ns, protokube_bin(), "kube", *args]
        if not any(a.startswith("--kubeconfig") for a in args):
            argv += ["--kubeconfig", self.kubeconfig]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if check is not None and p.returncode != check:
            raise AssertionError(f"{' '.join(argv)} exited {p.returncode}, wanted {check}\n"
                                 f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        return p

    def write(self, name, text):
        path = os.path.join(self.env.base, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def curl(self, method, path, body=None, content_type=None, identity="protokube"):
        """The raw answer (status line, headers, body) as curl sees it over HTTP/1.1."""
        d = os.path.join(self.pki, identity)
        # not curl's own User-Agent: the API pretty-prints for curl, and the 1.20.2 build (Go 1.19, old
        # reflect2) dies with a fault in json-iterator's MarshalIndent
        argv = ["ip", "netns", "exec", self.ns, "curl", "-sS", "-i", "--http1.1", "-A", "protokube", "-X", method,
                "--cacert", os.path.join(d, "ca.crt"), "--cert", os.path.join(d, "client.crt"),
                "--key", os.path.join(d, "client.key"), "-H", "Accept: application/json",
                "https://127.0.0.1:443" + path]
        if body is not None:
            argv += ["-H", f"Content-Type: {content_type}", "--data-binary", body]
        p = subprocess.run(argv, capture_output=True, timeout=30)
        assert p.returncode == 0, p.stderr
        return p.stdout

    def get_json(self, path):
        """The body of a GET as protokube, parsed."""
        return json.loads(self.curl("GET", path).partition(b"\r\n\r\n")[2])


def netns(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@contextlib.contextmanager
def running_api(prefix="pk-kube", extra_args=()):
    """etcd and kube-apiserver 1.20.2 in a network namespace of their own, on the certificates of a real
    `protokube once` pass with a file state store; extra_args go to kube-apiserver. Yields the Api."""
    need_root()
    kbin = k8s_bin()
    store = tempfile.mkdtemp(prefix=prefix + "-store-")
    env = CertEnv("file://" + store, {})
    ns = f"{prefix}-{os.getpid()}"
    procs = []
    try:
        env.standard_pool()
        env.pk("once", "n1", check=0)
        pki = env.pki("n1")
        netns("netns", "add", ns)
        netns("-n", ns, "link", "set", "lo", "up")
        # the address kube-apiserver advertises (it needs one that is not loopback's 127/8)
        netns("-n", ns, "addr", "add", ADVERTISE + "/32", "dev", "lo")
        b = env.base
        procs.append(Proc(ns, ["etcd", "--name", "kube-test", "--data-dir", os.path.join(b, "etcd-data"),
                               "--listen-client-urls", "http://127.0.0.1:2379",
                               "--advertise-client-urls", "http://127.0.0.1:2379",
                               "--listen-peer-urls", "http://127.0.0.1:2380",
                               "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
                               "--initial-cluster", "kube-test=http://127.0.0.1:2380"],
                          os.path.join(b, "etcd.log")))
        policy = os.path.join(b, "audit-policy.yaml")
        with open(policy, "w") as f:
            f.write(AUDIT_POLICY)
        audit = os.path.join(b, "audit.log")
        a = os.path.join(pki, "kube-apiserver")
        procs.append(Proc(ns, [os.path.join(kbin, "kube-apiserver"), "--etcd-servers=http://127.0.0.1:2379",
                               "--bind-address=127.0.0.1", "--secure-port=443",
                               f"--advertise-address={ADVERTISE}",
                               f"--tls-cert-file={a}/apiserver.crt", f"--tls-private-key-file={a}/apiserver.key",
                               f"--client-ca-file={a}/ca.crt",
                               f"--service-account-key-file={a}/service-account.pub",
                               f"--service-account-signing-key-file={a}/service-account.key",
                               "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                               "--service-cluster-ip-range=100.64.0.0/13", "--authorization-mode=Node,RBAC",
                               f"--audit-policy-file={policy}", f"--audit-log-path={audit}",
                               "--enable-priority-and-fairness=false", *extra_args],
                          os.path.join(b, "kube-apiserver.log")))
        x = Api(env, ns, pki, audit)
        x.etcd = procs[0]
        x.store = store
        p = x.kube("readyz", "--wait", "180s", timeout=200)
        if p.returncode != 0:
            logs = "".join(open(q.log, errors="replace").read()[-3000:] for q in procs)
            raise AssertionError(f"kube-apiserver not ready: {p.stderr}\n{logs}")
        yield x
    finally:
        for q in reversed(procs):
            q.stop()
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
        errors = env.cleanup()
        subprocess.run(["rm", "-rf", store], timeout=30)
        assert not errors, errors


@pytest.fixture(scope="module")
def api():
    with running_api() as x:
        yield x


CM = """apiVersion: v1
kind: ConfigMap
metadata:
  name: pk-test
  namespace: default
data:
  greeting: hello
"""


def resource_version(stdout):
    m = re.search(r"resourceVersion (\d+)", stdout)
    assert m, stdout
    return m.group(1)


def test_readyz_and_livez(api):
    assert "ok" in api.kube("readyz", check=0).stdout
    api.kube("livez", check=0)


def test_readyz_never_through_a_proxy(api):
    """The API server is inside the cluster: with https_proxy set for the cloud's APIs (a proxy that refuses
    every connection) and a no_proxy that does not name it, the client still dials it directly."""
    proxy = "http://127.0.0.1:1"
    argv = ["ip", "netns", "exec", api.ns, "env", f"https_proxy={proxy}", f"HTTPS_PROXY={proxy}",
            f"all_proxy={proxy}", "no_proxy=example.invalid", "NO_PROXY=example.invalid",
            protokube_bin(), "kube", "readyz", "--kubeconfig", api.kubeconfig]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stderr
    assert "ok" in p.stdout


def test_apply_twice_is_a_noop_and_get_reads_it_back(api):
    f = api.write("cm.yaml", CM)
    first = api.kube("apply", f, check=0).stdout
    assert "ConfigMap default/pk-test applied" in first
    second = api.kube("apply", f, check=0).stdout
    assert resource_version(first) == resource_version(second)
    obj = json.loads(api.kube("get", "v1", "ConfigMap", "default/pk-test", check=0).stdout)
    assert obj["data"] == {"greeting": "hello"}
    fields = obj["metadata"]["managedFields"]
    assert [m["manager"] for m in fields] == ["protokube"] and fields[0]["operation"] == "Apply"
    # a change is applied and moves the resourceVersion; two documents in one file, one with no namespace
    g = api.write("cm2.yaml", CM.replace("hello", "bye") + "---\n# comment only\n---\n" +
                  CM.replace("pk-test", "pk-test-2").replace("  namespace: default\n", ""))
    third = api.kube("apply", g, check=0).stdout
    assert resource_version(third) != resource_version(second)
    assert "ConfigMap default/pk-test-2 applied" in third


def test_422_shows_the_apis_message(api):
    f = api.write("bad.yaml", CM.replace("greeting:", "'bad key!':").replace("pk-test", "pk-bad"))
    p = api.kube("apply", f, check=1)
    assert "ConfigMap default/pk-bad: 422 Invalid:" in p.stderr, p.stderr
    assert "data[bad key!]: Invalid value" in p.stderr and "causes: data[bad key!]" in p.stderr, p.stderr
    assert "document 1" in p.stderr and f in p.stderr


def test_404_is_clear(api):
    p = api.kube("get", "v1", "ConfigMap", "default/pk-missing", check=1)
    assert 'ConfigMap default/pk-missing: 404 NotFound: configmaps "pk-missing" not found' in p.stderr, p.stderr
    p = api.kube("get", "v1", "Node", "nope", check=1)
    assert "Node nope: 404 NotFound" in p.stderr, p.stderr


def test_delete_preconditions(api):
    api.kube("apply", api.write("cm-del.yaml", CM.replace("pk-test", "pk-del")), check=0)
    uid = json.loads(api.kube("get", "v1", "ConfigMap", "default/pk-del", check=0).stdout)["metadata"]["uid"]
    p = api.kube("delete", "v1", "ConfigMap", "default/pk-del", "--uid", "00000000-0000-0000-0000-000000000000",
                 check=1)
    assert ('ConfigMap default/pk-del: 409 Conflict: Operation cannot be fulfilled on ConfigMap "pk-del": the UID '
            'in the precondition (00000000-0000-0000-0000-000000000000) does not match') in p.stderr, p.stderr
    api.kube("delete", "v1", "ConfigMap", "default/pk-del", "--uid", uid, check=0)
    p = api.kube("delete", "v1", "ConfigMap", "default/pk-del", check=1)
    assert "404 NotFound" in p.stderr


def test_unknown_kind_and_bad_input(api):
    p = api.kube("get", "v1", "Frobnicator", "default/x", check=1)
    assert "unknown kind 'Frobnicator'" in p.stderr
    p = api.kube("apply", api.write("nokind.yaml", "apiVersion: v1\nmetadata:\n  name: x\n"), check=1)
    assert "document 1: missing 'kind'" in p.stderr, p.stderr


def test_wrong_ca_is_a_clear_tls_error(api):
    other = os.path.join(api.env.base, "other-ca")
    subprocess.run([protokube_bin(), "pki", "demo-issue", "--out", other, "--cn", "x"], check=True,
                   capture_output=True, timeout=60)
    t0 = time.time()
    p = api.kube("readyz", "--certificate-authority", os.path.join(other, "ca.crt"), check=1)
    assert "https://127.0.0.1:443/readyz" in p.stderr and "SSL certificate problem" in p.stderr, p.stderr
    p = api.kube("get", "v1", "ConfigMap", "default/pk-test", "--certificate-authority",
                 os.path.join(other, "ca.crt"), check=1)
    assert "certificate" in p.stderr, p.stderr
    assert time.time() - t0 < 20  # a refused certificate is not retried until the deadline


def test_secret_value_never_in_an_error(api):
    value = "c3VwZXItc2VjcmV0LXZhbHVl"  # base64 of a marker
    bad = (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: pk-secret\ntype: Opaque\n"
           f"data:\n  'bad key!': {value}\n")
    p = api.kube("apply", api.write("secret.yaml", bad), check=1)
    assert "Secret default/pk-secret: 422 Invalid: (message withheld" in p.stderr, p.stderr
    assert value not in p.stderr and "super-secret" not in p.stderr
    good = bad.replace("'bad key!'", "token")
    assert "Secret default/pk-secret applied" in api.kube("apply", api.write("secret2.yaml", good), check=0).stdout


def test_audit_sees_user_protokube(api):
    api.kube("apply", api.write("cm-audit.yaml", CM.replace("pk-test", "pk-audit")), check=0)
    deadline = time.time() + 30
    while time.time() < deadline:
        for line in open(api.audit, errors="replace"):
            e = json.loads(line)
            ref = e.get("objectRef", {})
            if e.get("verb") == "patch" and ref.get("name") == "pk-audit" and e.get("stage") == "ResponseComplete":
                assert e["user"]["username"] == "protokube", e["user"]
                assert "system:masters" in e["user"]["groups"], e["user"]
                assert e["userAgent"] == "protokube"
                assert "fieldManager=protokube" in e["requestURI"] and "force=true" in e["requestURI"]
                assert e["responseStatus"]["code"] in (200, 201)
                return
        time.sleep(0.5)
    raise AssertionError("no audit event of the apply")


def raw_to_vector(raw):
    """curl -i output -> an HTTP/1.1 response a one-shot server can replay: body length fixed, connection
    closed; the other headers as the server sent them."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = [ln for ln in head.split(b"\r\n") if not re.match(rb"(?i)(content-length|transfer-encoding|connection):",
                                                             ln)]
    lines += [b"Content-Length: %d" % len(body), b"Connection: close"]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def test_record_vectors(api):
    """With PROTOKUBE_KUBE_RECORD=DIR: the real server's answers for tests/vectors/kube/."""
    out = os.environ.get("PROTOKUBE_KUBE_RECORD")
    if not out:
        pytest.skip("PROTOKUBE_KUBE_RECORD not set")
    os.makedirs(out, exist_ok=True)
    cm = "/api/v1/namespaces/default/configmaps"
    apply_q = "?fieldManager=protokube&force=true"
    ct = "application/apply-patch+yaml"
    api.curl("DELETE", cm + "/pk-rec")
    rec = {
        "apply-201.http": api.curl("PATCH", cm + "/pk-rec" + apply_q, CM.replace("pk-test", "pk-rec"), ct),
        "apply-200.http": api.curl("PATCH", cm + "/pk-rec" + apply_q, CM.replace("pk-test", "pk-rec"), ct),
        "get-404.http": api.curl("GET", cm + "/pk-missing"),
        "apply-422.http": api.curl("PATCH", cm + "/pk-bad" + apply_q,
                                   CM.replace("greeting:", "'bad key!':").replace("pk-test", "pk-bad"), ct),
        "create-409-exists.http": api.curl("POST", cm, json.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pk-rec"}}), "application/json"),
        # a replace at a resourceVersion the object has left: the compare-and-set's refusal
        "replace-409-conflict.http": api.curl("PUT", cm + "/pk-rec", json.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pk-rec", "resourceVersion": "1"},
             "data": {"greeting": "hello"}}), "application/json"),
        "delete-409-precondition.http": api.curl("DELETE", cm + "/pk-rec", json.dumps(
            {"kind": "DeleteOptions", "apiVersion": "v1",
             "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}), "application/json"),
        "get-403-node.http": api.curl("GET", cm + "/pk-rec", identity="kubelet"),
        "readyz-200.http": api.curl("GET", "/readyz?verbose"),
    }
    for name, raw in rec.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(raw_to_vector(raw))


BINDINGS = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
# the bindings that give /readyz to every authenticated user (kube-apiserver 1.20's bootstrap policy)
READYZ_BINDINGS = ("system:public-info-viewer", "system:discovery")


def test_readyz_forbidden_is_403(api):
    """A cluster's RBAC may take /readyz away from authenticated users (the bindings system:public-info-viewer
    and system:discovery): then an identity outside system:masters reads 403, which the probe reports as such
    (-EACCES: the daemon's API rule counts that server as serving, src/daemon/step-api-names.c) while protokube's own
    identity still reads 200. The bindings are put back as they were."""
    kept = [api.get_json(f"{BINDINGS}/{b}") for b in READYZ_BINDINGS]
    assert all(k.get("kind") == "ClusterRoleBinding" for k in kept), kept
    kubelet = ["--kubeconfig", os.path.join(api.pki, "kubelet", "kubeconfig")]
    try:
        for b in READYZ_BINDINGS:
            assert b" 200 OK" in api.curl("DELETE", f"{BINDINGS}/{b}").split(b"\r\n", 1)[0]
        deadline = time.monotonic() + 30  # the authorizer sees the deletions through its informer
        p = api.kube("readyz", *kubelet)
        while "403" not in p.stderr and time.monotonic() < deadline:
            time.sleep(0.5)
            p = api.kube("readyz", *kubelet)
        assert p.returncode == 1 and "/readyz: 403 Forbidden: forbidden: User \"system:node:n1\" cannot get path" \
            in p.stderr, (p.returncode, p.stderr)
        assert "ok" in api.kube("readyz", check=0).stdout  # system:masters: no RBAC
        out = os.environ.get("PROTOKUBE_KUBE_RECORD")
        if out:
            with open(os.path.join(out, "readyz-403-node.http"), "wb") as f:
                f.write(raw_to_vector(api.curl("GET", "/readyz?verbose", identity="kubelet")))
    finally:
        for k in kept:
            for f in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
                k["metadata"].pop(f, None)
            api.curl("POST", BINDINGS, json.dumps(k), "application/json")
    for b, k in zip(READYZ_BINDINGS, kept):
        again = api.get_json(f"{BINDINGS}/{b}")
        assert again["subjects"] == k["subjects"] and again["roleRef"] == k["roleRef"], again


def test_readyz_names_the_failing_check(api):
    """Last (it stops etcd): /readyz fails naming etcd, and --wait ends at its deadline with that reason."""
    api.etcd.stop()
    deadline = time.time() + 60
    p = api.kube("readyz")
    while "[-]etcd failed: reason withheld" not in p.stderr and time.time() < deadline:
        time.sleep(1)
        p = api.kube("readyz")
    assert "/readyz: 500: [-]etcd failed: reason withheld" in p.stderr, p.stderr
    t0 = time.time()
    p = api.kube("readyz", "--wait", "3s", check=1)
    assert "not ready by the deadline: /readyz: 500: [-]etcd failed" in p.stderr, p.stderr
    assert time.time() - t0 < 20  # 3 s, and the last probe's time to answer
    out = os.environ.get("PROTOKUBE_KUBE_RECORD")
    if out:
        with open(os.path.join(out, "readyz-500.http"), "wb") as f:
            f.write(raw_to_vector(api.curl("GET", "/readyz?verbose")))
