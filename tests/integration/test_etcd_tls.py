# The rendered etcd TLS flags against Debian's etcd 3.4: two members that speak TLS between peers and to
# clients, with the layout's two CAs (docs/components.md, "etcd"): clients are checked against tlsDir/ca.crt,
# peers against tlsDir/peer-ca.crt. A peer certificate is refused by the client port, and the cluster forms
# only if the peers trust the peer CA. Both members run in private network, mount and PID namespaces (only
# lo: 127.0.0.2 and 127.0.0.3 stand for the two masters).
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import need_root

CLUSTER = "etcdtls.k8s.test"
CLIENT_PORT, PEER_PORT = 24711, 24712
METRICS_PORT = CLIENT_PORT + 4080  # kops' metrics port shift (components/conventions.h)
MEMBERS = {"a": "127.0.0.2", "b": "127.0.0.3"}


def dns_name(m):
    return f"etcd-{m}.internal.{CLUSTER}"


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def make_ca(keys, out, name):
    """A self-signed ECDSA P-256 CA: its certificate at out, its key in keys (never in the tlsDir)."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", str(keys / f"{name}.key"), "-out", str(out), "-subj", f"/CN={name}", "-days", "2")
    os.chmod(keys / f"{name}.key", 0o600)
    return out, keys / f"{name}.key"


def make_leaf(work, ca, crt, key, cn, usage, sans):
    ext = work / f"{cn}.ext"
    ext.write_text("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                   f"extendedKeyUsage={usage}\nsubjectAltName={sans}\n")
    csr = work / f"{cn}.csr"
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={cn}")
    os.chmod(key, 0o600)
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca[0]), "-CAkey", str(ca[1]), "-CAcreateserial",
            "-days", "2", "-extfile", str(ext), "-out", str(crt))


def issue(tls, work):
    """What a user (or protokube's certificate room) puts in tlsDir, plus a client pair for etcdctl."""
    tls.mkdir(parents=True, mode=0o700)
    client_ca = make_ca(work, tls / "ca.crt", "etcd-client-ca")
    peer_ca = make_ca(work, tls / "peer-ca.crt", "etcd-peer-ca")
    sans = ",".join([f"DNS:{dns_name(m)}" for m in MEMBERS] + ["IP:127.0.0.1"] +
                    [f"IP:{ip}" for ip in MEMBERS.values()])
    make_leaf(work, client_ca, tls / "server.crt", tls / "server.key", "etcd-server", "serverAuth", sans)
    make_leaf(work, peer_ca, tls / "peer.crt", tls / "peer.key", "etcd-peer", "serverAuth,clientAuth", sans)
    make_leaf(work, client_ca, work / "client.crt", work / "client.key", "etcd-client", "clientAuth",
              "DNS:etcd-client")


SPEC = """\
apiVersion: protokube/v1alpha1
kind: Cluster
metadata:
  name: {cluster}
spec:
  dns: {{provider: none}}
  etcdClusters:
    - {{name: main, image: "registry.k8s.io/etcd:3.4.13-0", clientPort: {client}, peerPort: {peer}{tls}}}
  kubernetesVersion: 1.20.2
{extra}"""

# Runs inside the namespaces: both members from their rendered flags, then the checks; prints JSON.
DRIVER = r"""
import json, os, subprocess, sys, time, urllib.request
cfg = json.load(open(sys.argv[1]))
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
subprocess.run(["mount", "--bind", cfg["hosts"], "/etc/hosts"], check=True)
env = dict(os.environ, ETCDCTL_API="3")
def ctl(endpoint, cert, key, *args):
    return subprocess.run(["etcdctl", "--dial-timeout=1s", "--command-timeout=2s", "--cacert=" + cfg["ca"],
                           "--cert=" + cert, "--key=" + key, "--endpoints=" + endpoint, *args],
                          capture_output=True, text=True, env=env, timeout=10)
procs, result = [], {}
try:
    for m in cfg["members"]:
        procs.append(subprocess.Popen(["etcd", *m["flags"]], stdout=open(m["log"], "w"), stderr=subprocess.STDOUT))
    a, b = (m["endpoint"] for m in cfg["members"])
    result["put"] = False
    deadline = time.monotonic() + 40
    for _ in range(200):  # a put needs a quorum of both members, so the peers' TLS must work
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            break
        if ctl(a, cfg["cert"], cfg["key"], "put", "/protokube", "ok").returncode == 0:
            result["put"] = True
            break
        time.sleep(0.2)
    if result["put"]:
        result["get_b"] = ctl(b, cfg["cert"], cfg["key"], "get", "/protokube", "--print-value-only").stdout
        result["members"] = ctl(a, cfg["cert"], cfg["key"], "member", "list").stdout
        rogue = ctl(a, cfg["peer_cert"], cfg["peer_key"], "put", "/rogue", "x")
        result["rogue_rc"], result["rogue_err"] = rogue.returncode, rogue.stderr[-300:]
        with urllib.request.urlopen(cfg["health"], timeout=3) as r:
            result["health"] = r.read().decode()
finally:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
print(json.dumps(result))
"""


def member_flags(pk, spec, out, member, tmp_path):
    """The rendered flags of one member, listening on its own loopback address (both run on one lo)."""
    pk("--log-level", "error", "render", "-c", str(spec), "--out", str(out),
       f"--etcd-member=main={member}/{','.join(MEMBERS)}", f"--etcd-mount=main={tmp_path}/vol-{member}", check=0)
    cmd = yaml.safe_load((out / "etcd.manifest").read_text())["spec"]["containers"][0]["command"]
    assert cmd[0] == "/usr/local/bin/etcd"
    ip, flags = MEMBERS[member], []
    for f in cmd[1:]:
        name, _, value = f.partition("=")
        if name == "--data-dir":
            value = str(tmp_path / f"data-{member}")
        elif name in ("--listen-client-urls", "--listen-peer-urls", "--listen-metrics-urls"):
            assert "://0.0.0.0:" in value or "://127.0.0.1:" in value, f
            value = value.replace("0.0.0.0", ip).replace("127.0.0.1", ip)
        flags.append(f"{name}={value}")
    return flags


@pytest.mark.parametrize("how", ["tlsDir", "stateStore"])
def test_etcd_peers_trust_the_peer_ca_and_clients_the_client_ca(pk, tmp_path, how):
    need_root()
    if not shutil.which("etcd") or not shutil.which("etcdctl") or not shutil.which("openssl"):
        pytest.fail("etcd-server, etcd-client and openssl are needed (scripts/install-deps.sh)")
    pki = tmp_path / "pki"
    tls = pki / "etcd-main"  # the layout's directory for etcd cluster main (model/pki-layout.h)
    if how == "tlsDir":  # the user's own certificates
        text = SPEC.format(cluster=CLUSTER, client=CLIENT_PORT, peer=PEER_PORT, tls=f", tlsDir: {tls}", extra="")
    else:  # protokube manages them: tlsDir defaults to <pki.dir>/etcd-main
        text = SPEC.format(cluster=CLUSTER, client=CLIENT_PORT, peer=PEER_PORT, tls="",
                           extra=f"  stateStore: file://{tmp_path}/state\n  pki: {{dir: {pki}}}\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    work = tmp_path / "work"
    work.mkdir()
    issue(tls, work)

    members = []
    for m, ip in MEMBERS.items():
        flags = member_flags(pk, spec, tmp_path / f"out-{m}", m, tmp_path)
        assert f"--trusted-ca-file={tls}/ca.crt" in flags
        assert f"--peer-trusted-ca-file={tls}/peer-ca.crt" in flags
        assert f"--advertise-client-urls=https://{dns_name(m)}:{CLIENT_PORT}" in flags
        members.append({"flags": flags, "log": str(tmp_path / f"etcd-{m}.log"),
                        "endpoint": f"https://{dns_name(m)}:{CLIENT_PORT}"})
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n" + "".join(f"{ip} {dns_name(m)}\n" for m, ip in MEMBERS.items()))
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({
        "hosts": str(hosts), "members": members, "ca": str(tls / "ca.crt"),
        "cert": str(work / "client.crt"), "key": str(work / "client.key"),
        "peer_cert": str(tls / "peer.crt"), "peer_key": str(tls / "peer.key"),
        "health": f"http://{MEMBERS['a']}:{METRICS_PORT}/health",
    }))
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    # The PID namespace kills both members with the driver, whatever happens to it.
    p = subprocess.run(["unshare", "--net", "--mount", "--pid", "--fork", "--kill-child", "--propagation",
                        "private", "--", sys.executable, str(driver), str(cfg)],
                       capture_output=True, text=True, timeout=120)
    logs = "".join(f"--- {m['log']}\n{open(m['log']).read()[-3000:]}" for m in members if os.path.exists(m["log"]))
    assert p.returncode == 0, f"stderr:\n{p.stderr}\n{logs}"
    result = json.loads(p.stdout.splitlines()[-1])
    assert result["put"], f"the two members formed no cluster over peer TLS\n{logs}"
    assert result["get_b"] == "ok\n"
    assert result["members"].count(", started, ") == 2, result["members"]
    # a certificate of the peer CA is not a client certificate
    assert result["rogue_rc"] != 0, "the client port accepted a certificate of the peer CA"
    assert '"health":"true"' in result["health"]
