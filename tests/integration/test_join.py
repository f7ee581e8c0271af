# SPDX-License-Identifier: Apache-2.0
"""Workers joining with TLS bootstrap (src/join/, docs/workers.md) against a REAL kube-apiserver 1.20.2 with
--enable-bootstrap-token-auth (the fixture of test_kube_client.py: etcd and the apiserver in a network
namespace, on the certificates and the file state store of a real `protokube once` pass).

A token made by `protokube token create` authenticates a bootstrap as kubelet does it (a bearer token,
user system:bootstrap:<id>) and lets it create a CSR (the RBAC `token create` applies); `protokube csr
approve` approves and signs it with the cluster CA from the state store: the certificate verifies against
the CA the pin names, with the node's subject, client usage, the request's key and the lifetime asked. The
node then registers its Node with that certificate, renews it, and gets a serving certificate for its own
addresses. Each refusal (a wrong subject, SANs on a client request, a name bound to another machine, a
serving request for a foreign address) leaves the CSR without a condition and says why; a released name
(its Node deleted) passes to the new machine; two rounds at once sign each CSR once; a deleted or expired
token no longer authenticates. No token secret appears in any output but `token create`'s."""
import base64
import json
import os
import re
import signal
import subprocess
import tempfile
import time

import pytest
import yaml

from conftest import protokube_bin
from loopdev import node_ip
from test_kube_client import running_api

CLIENT = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING = "kubernetes.io/kubelet-serving"
CLIENT_USAGES = ["digital signature", "key encipherment", "client auth"]
SERVING_USAGES = ["digital signature", "key encipherment", "server auth"]
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
NODE_IP = "10.99.1.11"


@pytest.fixture(scope="module")
def api():
    # every address of its namespace (not 127.0.0.1 alone): the masters' step asks this master's apiserver
    # at the master's internal address (127.0.10.x, loopback's), as a master's pass does
    with running_api("pk-join", ["--enable-bootstrap-token-auth", "--bind-address=0.0.0.0"]) as x:
        x.work = tempfile.mkdtemp(prefix="pk-join-", dir=x.env.base)
        yield x


def pk(api, *args, check=None, timeout=120):
    """protokube in the apiserver's namespace, as protokube's own identity, with the pass's spec."""
    argv = ["ip", "netns", "exec", api.ns, protokube_bin(), "-c", api.env.node_spec("n1"), *args,
            "--kubeconfig", api.kubeconfig]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check is not None and p.returncode != check:
        raise AssertionError(f"{' '.join(args)} exited {p.returncode}, wanted {check}\n"
                             f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def openssl(*args, data=None):
    p = subprocess.run(["openssl", *args], input=data, capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return p.stdout


class Machine:
    """A would-be node: its key, and the credentials it talks to the API with (a token, or its certificate)."""

    def __init__(self, api, name):
        self.api, self.dir = api, tempfile.mkdtemp(prefix=name + "-", dir=api.work)
        self.key = os.path.join(self.dir, "key.pem")
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", self.key)
        self.cert = None

    def rekey(self):
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", self.key)

    def spki_sha256(self):
        der = openssl("pkey", "-in", self.key, "-pubout", "-outform", "DER")
        return openssl("dgst", "-sha256", "-r", data=der).decode().split()[0]

    def request(self, subject, sans=None):
        argv = ["req", "-new", "-key", self.key, "-subj", subject]
        if sans:
            argv += ["-addext", "subjectAltName=" + sans]
        return openssl(*argv)

    def curl(self, method, path, body=None, token=None):
        """The status and parsed body of a request with the token (a header file: no secret in argv) or the
        machine's certificate."""
        ca = os.path.join(self.api.pki, "protokube", "ca.crt")
        argv = ["ip", "netns", "exec", self.api.ns, "curl", "-sS", "--http1.1", "-A", "protokube", "-X", method,
                "--cacert", ca, "-H", "Accept: application/json", "-o", "-", "-w", "\n%{http_code}"]
        if token:
            hdr = os.path.join(self.dir, "auth")
            with open(os.open(hdr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                f.write(f"Authorization: Bearer {token}\n")
            argv += ["-H", "@" + hdr]
        else:
            argv += ["--cert", self.cert, "--key", self.key]
        if body is not None:
            argv += ["-H", "Content-Type: application/json", "--data-binary", json.dumps(body)]
        p = subprocess.run(argv + ["https://127.0.0.1:443" + path], capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        text, _, code = p.stdout.rpartition("\n")
        return int(code), (json.loads(text) if text.strip() else None)

    def create_csr(self, name, pem, signer=CLIENT, usages=None, token=None, want=201):
        body = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                "metadata": {"name": name},
                "spec": {"request": base64.b64encode(pem).decode(), "signerName": signer,
                         "usages": usages or (SERVING_USAGES if signer == SERVING else CLIENT_USAGES)}}
        code, obj = self.curl("POST", CSRS, body, token=token)
        assert code == want, (code, obj)
        return obj


def new_token(api, *extra):
    out = pk(api, "token", "create", *extra, check=0).stdout
    token = re.search(r"^token: ([a-z0-9]{6}\.[a-z0-9]{16})$", out, re.M).group(1)
    pin = re.search(r"^ca-pin: (sha256:[0-9a-f]{64})$", out, re.M).group(1)
    return token, pin


def get_csr(api, name):
    return json.loads(api.kube("get", "certificates.k8s.io/v1", "CertificateSigningRequest", name, check=0).stdout)


def conditions(csr):
    return [c["type"] for c in csr.get("status", {}).get("conditions", []) or []]


def approve(api, *extra, check=None):
    return pk(api, "csr", "approve", "--lifetime", "10m", *extra, check=check)


def outcome_line(out, name):
    lines = [ln for ln in out.splitlines() if ln.startswith(name + "  ")]
    assert len(lines) == 1, (name, out)
    return lines[0]


def certificate(api, name, path):
    csr = get_csr(api, name)
    assert conditions(csr) == ["Approved"], csr.get("status")
    assert csr["status"]["conditions"][0]["reason"] == "ProtokubeApproved"
    with open(path, "wb") as f:
        f.write(base64.b64decode(csr["status"]["certificate"]))
    return path


def cert_text(path):
    return openssl("x509", "-in", path, "-noout", "-text", "-nameopt", "RFC2253").decode()


def assert_pending(api, name, out, why):
    """Refused: no condition, no certificate, and the round said why, in its output and on the CSR (the
    annotation the worker's `join plan` shows)."""
    csr = get_csr(api, name)
    assert conditions(csr) == [] and not csr.get("status", {}).get("certificate"), csr.get("status")
    line = outcome_line(out, name)
    assert " refused: " in line and why in line, line
    note = csr["metadata"].get("annotations", {}).get("protokube.io/refusal", "")
    assert why in note, csr["metadata"]


@pytest.fixture(scope="module")
def joined(api):
    """w1 joined with a token: its client certificate, and the token and pin it was given."""
    token, pin = new_token(api, "--ttl", "1h", "--description", "workers of the test")
    m = Machine(api, "w1")
    m.create_csr("node-csr-w1", m.request("/O=system:nodes/CN=system:node:w1"), token=token)
    out = approve(api, check=0).stdout
    m.cert = certificate(api, "node-csr-w1", os.path.join(m.dir, "client.crt"))
    return {"machine": m, "token": token, "pin": pin, "out": out}


def test_token_create_prints_the_pin_of_the_cluster_ca(api, joined):
    ca = os.path.join(api.pki, "protokube", "ca.crt")
    der = openssl("x509", "-in", ca, "-noout", "-pubkey")
    der = openssl("pkey", "-pubin", "-outform", "DER", data=der)
    assert joined["pin"] == "sha256:" + openssl("dgst", "-sha256", "-r", data=der).decode().split()[0]
    # the same CA as the keystore's in the state store
    stored = open(os.path.join(api.store, "pki", "ca", "kubernetes-ca.pem"), "rb").read()
    assert openssl("x509", "-noout", "-pubkey", data=stored) == openssl("x509", "-in", ca, "-noout", "-pubkey")
    # the Secret is the API server's format
    tid = joined["token"].split(".")[0]
    s = json.loads(api.kube("get", "v1", "Secret", f"kube-system/bootstrap-token-{tid}", check=0).stdout)
    assert s["type"] == "bootstrap.kubernetes.io/token"
    data = {k: base64.b64decode(v).decode() for k, v in s["data"].items()}
    assert data["token-id"] == tid and data["usage-bootstrap-authentication"] == "true"
    assert data["auth-extra-groups"] == "system:bootstrappers:protokube:default-node-token"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", data["expiration"]), data["expiration"]


def test_token_list_never_shows_a_secret(api, joined):
    p = pk(api, "token", "list", check=0)
    tid, secret = joined["token"].split(".")
    line = [ln for ln in p.stdout.splitlines() if ln.startswith(tid)]
    assert len(line) == 1 and "authentication" in line[0] and "workers of the test" in line[0], p.stdout
    assert secret not in p.stdout + p.stderr


def test_bootstrap_is_approved_and_signed(api, joined):
    m, out = joined["machine"], joined["out"]
    line = outcome_line(out, "node-csr-w1")
    assert "node w1  signed: new node w1 (bootstrap token system:bootstrap:" in line, line
    assert "signed for 10m0s" in line, line
    assert joined["token"].split(".")[1] not in out
    ca = os.path.join(api.pki, "protokube", "ca.crt")
    v = subprocess.run(["openssl", "verify", "-x509_strict", "-CAfile", ca, m.cert], capture_output=True,
                       text=True, timeout=30)
    assert v.returncode == 0 and ": OK" in v.stdout, v.stdout + v.stderr
    t = cert_text(m.cert)
    assert "Subject: CN=system:node:w1,O=system:nodes" in t, t
    assert "TLS Web Client Authentication" in t and "Server Authentication" not in t, t
    assert "Subject Alternative Name" not in t, t
    # the request's own key
    assert openssl("x509", "-in", m.cert, "-noout", "-pubkey") == openssl("pkey", "-in", m.key, "-pubout")
    # --lifetime 10m: valid for 9 more minutes, not for 11
    checkend = [subprocess.run(["openssl", "x509", "-in", m.cert, "-noout", "-checkend", str(s)],
                               capture_output=True, timeout=30).returncode for s in (540, 660)]
    assert checkend == [0, 1], checkend
    # the bootstrap bound the name to the machine (its key)
    cm = json.loads(api.kube("get", "v1", "ConfigMap", "kube-system/protokube-node-w1", check=0).stdout)
    assert cm["data"]["machine"] == "key:sha256:" + m.spki_sha256(), cm["data"]
    assert cm["data"]["csr"] == "node-csr-w1"


def test_certificate_authenticates_the_node(api, joined):
    """The node registers its Node with its new certificate (the Node authorizer takes it as
    system:node:w1); the next round makes the Node own the name's binding."""
    m = joined["machine"]
    code, obj = m.curl("POST", "/api/v1/nodes", {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "w1"},
        "status": {"addresses": [{"type": "InternalIP", "address": NODE_IP}, {"type": "Hostname", "address": "w1"}]}})
    assert code == 201, obj
    out = approve(api, check=0).stdout
    assert "node w1  adopted: binding of w1" in out, out
    cm = json.loads(api.kube("get", "v1", "ConfigMap", "kube-system/protokube-node-w1", check=0).stdout)
    owners = cm["metadata"]["ownerReferences"]
    assert [(o["kind"], o["name"], o["uid"]) for o in owners] == [("Node", "w1", obj["metadata"]["uid"])], owners


def test_renewal_and_serving(api, joined):
    m = joined["machine"]
    m.create_csr("csr-renew-w1", m.request("/O=system:nodes/CN=system:node:w1"))
    m.create_csr("csr-serving-w1", m.request("/O=system:nodes/CN=system:node:w1", f"DNS:w1,IP:{NODE_IP}"),
                 signer=SERVING)
    m.create_csr("csr-serving-foreign", m.request("/O=system:nodes/CN=system:node:w1", "DNS:w1,IP:10.99.1.99"),
                 signer=SERVING)
    out = approve(api, check=0).stdout
    assert "signed: renewal by node w1 itself" in outcome_line(out, "csr-renew-w1")
    assert "signed: serving certificate of node w1 for its own addresses" in outcome_line(out, "csr-serving-w1")
    t = cert_text(certificate(api, "csr-serving-w1", os.path.join(m.dir, "serving.crt")))
    assert "TLS Web Server Authentication" in t and "Client Authentication" not in t, t
    assert f"DNS:w1, IP Address:{NODE_IP}" in t, t
    assert_pending(api, "csr-serving-foreign", out, f"SAN 10.99.1.99 is not one of Node w1's addresses ({NODE_IP}, w1)")


def test_refusals_leave_the_csr_pending(api, joined):
    token = joined["token"]
    other = Machine(api, "other")
    other.create_csr("csr-bad-subject", other.request("/O=system:masters/CN=system:node:w2"), token=token)
    other.create_csr("csr-bad-cn", other.request("/O=system:nodes/CN=w2"), token=token)
    other.create_csr("csr-client-sans", other.request("/O=system:nodes/CN=system:node:w3", "DNS:w3"), token=token)
    other.create_csr("csr-taken-name", other.request("/O=system:nodes/CN=system:node:w1"), token=token)
    other.create_csr("csr-bad-usages", other.request("/O=system:nodes/CN=system:node:w4"), token=token,
                     usages=["digital signature", "key encipherment", "client auth", "server auth"])
    # `csr` says the same and changes nothing
    listing = pk(api, "csr", check=0).stdout
    assert "refuse: node name w1 is bound to machine key:sha256:" in outcome_line(listing, "csr-taken-name")
    out = approve(api, check=0).stdout
    assert_pending(api, "csr-bad-subject", out, "the subject's O must be exactly system:nodes")
    assert_pending(api, "csr-bad-cn", out, "the subject's CN must be system:node:<name>, once (it is 'w2')")
    assert_pending(api, "csr-client-sans", out, "a client certificate names no SAN")
    assert_pending(api, "csr-bad-usages", out, "usage 'server auth' is not one of 'client auth'")
    assert_pending(api, "csr-taken-name", out,
                   f"node name w1 is bound to machine key:sha256:{joined['machine'].spki_sha256()}")
    assert_pending(api, "csr-taken-name", out, "another machine may take it only once Node w1 is deleted")
    # refused again in the next round, still pending
    out = approve(api, check=0).stdout
    assert_pending(api, "csr-taken-name", out, "is bound to machine")


def test_a_released_name_passes_to_the_new_machine(api, joined):
    """Once Node w1 is deleted the name is free again. The other machine's request refused before is still
    pending beside the new machine's: neither gets it while both ask; once the stale one is deleted (as an
    operator would), the new machine's is approved and the binding replaced at its resourceVersion."""
    token = joined["token"]
    api.kube("delete", "v1", "Node", "w1", check=0)
    new = Machine(api, "w1-new")
    new.create_csr("csr-w1-new", new.request("/O=system:nodes/CN=system:node:w1"), token=token)
    out = approve(api, check=0).stdout
    for name in ("csr-w1-new", "csr-taken-name"):
        assert_pending(api, name, out, "several machines ask for the free node name w1 at once (requests ")
    api.kube("delete", "certificates.k8s.io/v1", "CertificateSigningRequest", "csr-taken-name", check=0)
    out = approve(api, check=0).stdout
    line = outcome_line(out, "csr-w1-new")
    assert "signed: node w1: its Node was deleted, the name passes from machine key:sha256:" in line, line
    cm = json.loads(api.kube("get", "v1", "ConfigMap", "kube-system/protokube-node-w1", check=0).stdout)
    assert cm["data"]["machine"] == "key:sha256:" + new.spki_sha256() and "ownerReferences" not in cm["metadata"]
    # the first machine, asking again, is now the other one
    old = joined["machine"]
    old.rekey()
    old.create_csr("csr-w1-old-again", old.request("/O=system:nodes/CN=system:node:w1"), token=token)
    out = approve(api, check=0).stdout
    assert_pending(api, "csr-w1-old-again", out, "has not registered its Node yet")


def test_two_rounds_at_once_sign_each_csr_once(api, joined):
    token = joined["token"]
    names = [f"csr-race-{i}" for i in range(4)]
    for i, n in enumerate(names):
        m = Machine(api, n)
        m.create_csr(n, m.request(f"/O=system:nodes/CN=system:node:race{i}"), token=token)
    argv = ["ip", "netns", "exec", api.ns, protokube_bin(), "-c", api.env.node_spec("n1"), "csr", "approve",
            "--lifetime", "10m", "--kubeconfig", api.kubeconfig]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    both = outs[0][0] + outs[1][0]
    for n in names:
        csr = get_csr(api, n)
        assert conditions(csr) == ["Approved"] and csr["status"].get("certificate"), (n, csr.get("status"), outs)
        signed = [ln for ln in both.splitlines() if ln.startswith(n + "  ") and " signed: " in ln]
        assert len(signed) == 1, (n, both)


def test_deleted_and_expired_tokens_no_longer_authenticate(api, joined):
    m = Machine(api, "late")
    token, _ = new_token(api, "--ttl", "1h")
    tid = token.split(".")[0]
    p = pk(api, "token", "delete", tid, check=0)
    assert f"token {tid} deleted" in p.stdout
    assert tid not in pk(api, "token", "list", check=0).stdout
    m.create_csr("csr-deleted-token", m.request("/O=system:nodes/CN=system:node:late"), token=token, want=401)
    p = pk(api, "token", "delete", tid, check=1)
    assert "404 NotFound" in p.stderr, p.stderr
    # a whole token is not echoed back
    p = pk(api, "token", "delete", token, check=2)
    assert token.split(".")[1] not in p.stderr

    token, _ = new_token(api, "--ttl", "1s")
    time.sleep(2.5)  # the expiration is written to the second; the API server compares it with its clock
    m.create_csr("csr-expired-token", m.request("/O=system:nodes/CN=system:node:late"), token=token, want=401)
    line = [ln for ln in pk(api, "token", "list", check=0).stdout.splitlines() if ln.startswith(token[:6])]
    assert len(line) == 1 and "(expired)" in line[0], line
    # the expired ones are cleaned up; the others stay
    p = pk(api, "token", "delete", "--expired", check=0)
    assert f"token {token[:6]} deleted (expired)" in p.stdout, p.stdout
    assert joined["token"][:6] not in p.stdout
    listed = pk(api, "token", "list", check=0).stdout
    assert token[:6] not in listed and joined["token"][:6] in listed, listed
    assert "no expired token" in pk(api, "token", "delete", "--expired", check=0).stdout


# ---- the masters' step: a master's own pass (protokube once / run) approves, signs and publishes ----

PASS_LINE = re.compile(r"^Pass (\d+) ", re.M)


def logged(text):
    """The log lines without their level ("info: ")."""
    return re.sub(r"^(debug|info|notice|warning|error): ", "", text, flags=re.M)


def master_argv(api, verb, *extra, ns=True):
    """protokube VERB as the master n1 of the fixture's pass, in the apiserver's namespace (ns) or in an empty
    one of its own (no apiserver: loopback up, nothing listening)."""
    argv = api.env.argv(verb, "n1", *extra)
    argv[2] = api.env.node_spec("n1")
    if ns:
        return ["ip", "netns", "exec", api.ns, *argv]
    return ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', *argv]


def master_pass(api, ns=True):
    p = subprocess.run(master_argv(api, "once", ns=ns), capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, f"once exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    p.stderr = logged(p.stderr)
    return p


def anonymous_get(api, path):
    """The status and body of a GET without any credential, over TLS not verified (as a worker that holds
    only a token and a pin reads cluster-info)."""
    argv = ["ip", "netns", "exec", api.ns, "curl", "-sS", "-k", "--http1.1", "-A", "protokube",
            "-H", "Accept: application/json", "-o", "-", "-w", "\n%{http_code}", "https://127.0.0.1:443" + path]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    text, _, code = p.stdout.rpartition("\n")
    return int(code), text


CLUSTER_INFO = "/api/v1/namespaces/kube-public/configmaps/cluster-info"


def test_master_pass_without_api_waits_and_converges(api):
    """No apiserver answers (a namespace of its own): the step says it waits, and the rest of the pass
    (volumes, certificates, manifests) converges as before."""
    p = master_pass(api, ns=False)
    want = f"Join: waiting for the API: this master's apiserver (https://api.internal.demo.k8s.test:443 at " \
        f"{node_ip('n1')}) does not answer: "
    assert want in p.stderr, p.stderr
    assert re.search(r"^Converged in ", p.stderr, re.M), p.stderr


def test_master_pass_approves_signs_and_publishes(api, joined):
    """`protokube once` on the master: the bootstrap RBAC, kube-public/cluster-info readable anonymously (and
    nothing else of kube-public), expired tokens deleted, and a bootstrap CSR made with a token approved and
    signed with the cluster CA, with a line for each."""
    token = joined["token"]
    expired, _ = new_token(api, "--ttl", "1s")
    m = Machine(api, "wp1")
    m.create_csr("csr-pass-wp1", m.request("/O=system:nodes/CN=system:node:wp1"), token=token)
    bad = Machine(api, "wp-bad")
    bad.create_csr("csr-pass-bad", bad.request("/O=system:masters/CN=system:node:wp2"), token=token)
    # nobody else may have deleted it yet: the pass does
    time.sleep(2.5)
    api.kube("delete", "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "protokube:kubelet-bootstrap",
             check=0)

    p = master_pass(api)
    assert re.search(r"^Join: CSR csr-pass-wp1 \(node wp1\): signed: new node wp1 \(bootstrap token "
                     r"system:bootstrap:[a-z0-9]{6}\)", p.stderr, re.M), p.stderr
    assert "Join: CSR csr-pass-bad (node wp2): refused: the subject's O must be exactly system:nodes" in p.stderr
    assert f"Join: deleted the expired bootstrap token {expired[:6]}." in p.stderr, p.stderr
    assert token.split(".")[1] not in p.stdout + p.stderr and expired.split(".")[1] not in p.stderr
    assert re.search(r"^Converged in ", p.stderr, re.M), p.stderr

    # the certificate: the cluster CA's, for the node
    crt = certificate(api, "csr-pass-wp1", os.path.join(m.dir, "client.crt"))
    ca = os.path.join(api.pki, "protokube", "ca.crt")
    assert b": OK" in openssl("verify", "-CAfile", ca, crt)
    assert "Subject: CN=system:node:wp1,O=system:nodes" in cert_text(crt)
    assert conditions(get_csr(api, "csr-pass-bad")) == []
    # the bootstrap RBAC, applied again
    api.kube("get", "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "protokube:kubelet-bootstrap", check=0)
    assert expired[:6] not in pk(api, "token", "list", check=0).stdout

    # cluster-info, anonymously: kubeadm's kubeconfig with the CA the pin names
    code, body = anonymous_get(api, CLUSTER_INFO)
    assert code == 200, body
    cm = json.loads(body)
    kc = yaml.safe_load(cm["data"]["kubeconfig"])
    assert kc["kind"] == "Config" and kc["contexts"] is None and kc["users"] is None, kc
    assert len(kc["clusters"]) == 1 and kc["clusters"][0]["name"] == "", kc
    cluster = kc["clusters"][0]["cluster"]
    assert cluster["server"] == "https://api.internal.demo.k8s.test:443", cluster
    with open(ca, "rb") as f:
        assert base64.b64decode(cluster["certificate-authority-data"]) == f.read()
    der = openssl("pkey", "-pubin", "-outform", "DER",
                  data=openssl("x509", "-noout", "-pubkey", data=base64.b64decode(cluster["certificate-authority-data"])))
    assert joined["pin"] == "sha256:" + openssl("dgst", "-sha256", "-r", data=der).decode().split()[0]
    # nothing else of kube-public
    api.kube("apply", api.write("other-cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                                       "  name: other\n  namespace: kube-public\ndata:\n  a: b\n"),
             check=0)
    for path in ("/api/v1/namespaces/kube-public/configmaps/other", "/api/v1/namespaces/kube-public/configmaps",
                 "/api/v1/namespaces/kube-system/configmaps/cluster-info"):
        code, body = anonymous_get(api, path)
        assert code == 403, (path, code, body)


def test_plan_prints_each_csr_decision(api, joined):
    bad = Machine(api, "wp-plan")
    bad.create_csr("csr-plan-bad", bad.request("/O=system:nodes/CN=wp3"), token=joined["token"])
    p = subprocess.run(master_argv(api, "plan"), capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    assert "join: publish kube-public/cluster-info (server https://api.internal.demo.k8s.test:443) readable " \
           "by system:anonymous" in p.stdout, p.stdout
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("join: csr-plan-bad  ")]
    assert len(line) == 1 and "refuse: the subject's CN must be system:node:<name>" in line[0], p.stdout
    assert conditions(get_csr(api, "csr-plan-bad")) == []  # plan changes nothing


def metrics(api, port):
    p = subprocess.run(["ip", "netns", "exec", api.ns, "curl", "-sS", f"http://127.0.0.1:{port}/metrics"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_daemon_says_a_refusal_once_and_counts_outcomes(api, joined):
    """`protokube run`: a CSR refused in every pass is logged once (its reason does not change), another
    signed once; /metrics counts the outcomes as they were logged."""
    m = Machine(api, "wp-run")
    m.create_csr("csr-run-bad", m.request("/O=system:nodes/CN=system:node:wp4", "DNS:wp4"), token=joined["token"])
    port = 19180 + os.getpid() % 500
    log = os.path.join(api.work, "run.log")

    def passes_after(n):
        deadline = time.monotonic() + 120
        while len(PASS_LINE.findall(logged(open(log).read()))) < n and time.monotonic() < deadline:
            assert proc.poll() is None, open(log).read()
            time.sleep(0.2)
        assert len(PASS_LINE.findall(logged(open(log).read()))) >= n, open(log).read()
        return n

    with open(log, "w") as f:
        proc = subprocess.Popen(master_argv(api, "run", "--listen", f"127.0.0.1:{port}", "--interval", "1s"),
                                stdout=f, stderr=subprocess.STDOUT)
    try:
        n = passes_after(3)
        good = Machine(api, "wp-run-good")
        good.create_csr("csr-run-good", good.request("/O=system:nodes/CN=system:node:wp5"), token=joined["token"])
        deadline = time.monotonic() + 60
        while "csr-run-good" not in open(log).read() and time.monotonic() < deadline:
            time.sleep(0.2)
        # two passes more: the one that signed has reported, and one that found nothing new
        n = passes_after(len(PASS_LINE.findall(logged(open(log).read()))) + 2)
        text = metrics(api, port)
        out = logged(open(log).read())
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert n >= 5
    refused = [ln for ln in out.splitlines() if "Join: CSR csr-run-bad (node wp4): refused: " in ln]
    assert len(refused) == 1 and "a client certificate names no SAN" in refused[0], out
    assert len([ln for ln in out.splitlines() if "Join: CSR csr-run-good (node wp5): signed: " in ln]) == 1, out
    for kind in ("refused", "signed", "approved", "failed"):
        said = len(re.findall(rf"^Join: CSR \S+ \(node \S+\): {kind}: ", out, re.M))
        assert f'protokube_join_csr_outcomes_total{{outcome="{kind}"}} {said}\n' in text, (kind, said, text)
    assert 'protokube_join_csr_outcomes_total{outcome="failed"} 0\n' in text, text
    assert 'protokube_errors_total{stage="join"} 0\n' in text, text
