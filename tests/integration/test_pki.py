# `protokube pki demo-issue` with the real binary, checked by the real openssl tool: the chain verifies, the
# SANs match host names and addresses (and another name does not), the files have their modes, the key is
# the certificate's, a leaf from another CA does not verify, the renewal rules keep or reissue, and the
# kubeconfig carries the same credentials.
import base64
import os
import stat
import subprocess

import pytest

DNS = ["etcd-a.internal.k8s.test", "localhost"]
IPS = ["10.0.0.1", "fd00::1", "127.0.0.1"]


def openssl(*args):
    return subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=30)


def issue(pk, out, *extra, dns=DNS, ips=IPS, cn="etcd-a", check=0):
    args = ["pki", "demo-issue", "--out", str(out), "--cn", cn]
    for d in dns:
        args += ["--dns", d]
    for ip in ips:
        args += ["--ip", ip]
    return pk(*args, *extra, check=check)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def pubkey_of_cert(crt):
    p = openssl("x509", "-in", crt, "-noout", "-pubkey")
    assert p.returncode == 0, p.stderr
    return p.stdout


def pubkey_of_key(key):
    p = openssl("pkey", "-in", key, "-pubout")
    assert p.returncode == 0, p.stderr
    return p.stdout


def matches(crt, *, host=None, ip=None):
    args = ["x509", "-in", crt, "-noout"]
    args += ["-checkhost", host] if host else ["-checkip", ip]
    p = openssl(*args)
    assert p.returncode == 0, p.stderr
    assert "match certificate" in p.stdout, p.stdout
    return "does NOT match" not in p.stdout


@pytest.mark.parametrize("key_type", ["ecdsa-p256", "rsa-2048"])
def test_issued_leaf_verifies_and_matches(pk, tmp_path, key_type):
    out = tmp_path / "pki"
    p = issue(pk, out, "--key-type", key_type)
    assert "ca: created" in p.stdout and "leaf: issued" in p.stdout, p.stdout
    ca, crt, key = str(out / "ca.crt"), str(out / "leaf.crt"), str(out / "leaf.key")
    v = openssl("verify", "-CAfile", ca, crt)
    assert v.returncode == 0 and v.stdout.strip() == f"{crt}: OK", v.stdout + v.stderr
    for d in DNS:
        assert matches(crt, host=d), d
    for ip in IPS:
        assert matches(crt, ip=ip), ip
    assert matches(crt, ip="fd00:0:0::1")  # the literal was parsed, not stored as text
    assert not matches(crt, host="etcd-b.internal.k8s.test")
    assert not matches(crt, ip="10.0.0.2")
    assert pubkey_of_cert(crt) == pubkey_of_key(key)
    key_text = openssl("pkey", "-in", key, "-noout", "-text").stdout
    assert ("modulus:" if key_type == "rsa-2048" else "NIST CURVE: P-256") in key_text, key_text
    assert mode(out) == 0o700
    assert mode(key) == 0o600 and mode(str(out / "ca.key")) == 0o600
    assert mode(crt) == 0o644 and mode(ca) == 0o644
    assert open(key).read().startswith("-----BEGIN PRIVATE KEY-----\n")  # PKCS#8, unencrypted
    text = openssl("x509", "-in", crt, "-noout", "-text").stdout
    assert "TLS Web Server Authentication, TLS Web Client Authentication" in text
    assert ("Key Encipherment" in text) == (key_type == "rsa-2048")
    ca_text = openssl("x509", "-in", ca, "-noout", "-text").stdout
    assert "CA:TRUE" in ca_text and "Certificate Sign, CRL Sign" in ca_text


def test_leaf_of_another_ca_fails_verification(pk, tmp_path):
    issue(pk, tmp_path / "one")
    issue(pk, tmp_path / "two")  # its own CA, with the same CN: only the signature differs
    v = openssl("verify", "-CAfile", str(tmp_path / "one" / "ca.crt"), str(tmp_path / "two" / "leaf.crt"))
    assert v.returncode != 0, v.stdout
    assert "error" in (v.stdout + v.stderr)


def test_renewal_keeps_then_reissues_on_new_sans(pk, tmp_path):
    out = tmp_path / "pki"
    issue(pk, out)
    first = open(out / "leaf.crt").read()
    p = issue(pk, out, dns=list(reversed(DNS)), ips=list(reversed(IPS)))  # same set, other order
    assert "ca: kept" in p.stdout and "leaf: kept" in p.stdout, p.stdout
    assert open(out / "leaf.crt").read() == first
    p = issue(pk, out, ips=IPS + ["10.0.0.9"])
    assert "reason: sans" in p.stdout, p.stdout
    crt = str(out / "leaf.crt")
    assert open(crt).read() != first
    assert matches(crt, ip="10.0.0.9")
    assert openssl("verify", "-CAfile", str(out / "ca.crt"), crt).returncode == 0
    assert pubkey_of_cert(crt) == pubkey_of_key(str(out / "leaf.key"))
    generations = [n for n in os.listdir(out) if n.startswith(".leaf.") and n != ".leaf.current"]
    assert len(generations) == 1, generations


def test_kubeconfig_carries_the_pair(pk, tmp_path):
    out = tmp_path / "pki"
    issue(pk, out, "--name", "admin", "--org", "system:masters", "--server", "https://127.0.0.1:6443",
          cn="kubernetes-admin", dns=[], ips=[])
    path = out / "admin.kubeconfig"
    assert mode(path) == 0o600
    fields = {}
    for line in open(path).read().splitlines():
        k, _, v = line.strip().partition(": ")
        fields[k] = v
    assert fields["server"] == "https://127.0.0.1:6443"
    assert fields["current-context"] == "kubernetes-admin@protokube-demo"
    assert base64.b64decode(fields["certificate-authority-data"]).decode() == open(out / "ca.crt").read()
    assert base64.b64decode(fields["client-certificate-data"]).decode() == open(out / "admin.crt").read()
    assert base64.b64decode(fields["client-key-data"]).decode() == open(out / "admin.key").read()
    subject = openssl("x509", "-in", str(out / "admin.crt"), "-noout", "-subject").stdout
    assert "O = system:masters" in subject and "CN = kubernetes-admin" in subject


@pytest.mark.parametrize("args,message", [
    (["--ip", "10.0.0.256"], "invalid --ip '10.0.0.256'"),
    (["--dns", "Bad_Name.test"], "invalid dns 'Bad_Name.test'"),
    (["--key-type", "dsa"], "invalid --key-type 'dsa'"),
    (["--name", "../x"], "invalid --name '../x'"),
])
def test_bad_input_is_a_usage_error_and_writes_nothing(pk, tmp_path, args, message):
    out = tmp_path / "pki"
    p = pk("pki", "demo-issue", "--out", str(out), "--cn", "x", *args)
    assert p.returncode == 2, p.stdout + p.stderr
    assert message in p.stderr, p.stderr
    assert not out.exists()
