# SPDX-License-Identifier: Apache-2.0
"""A master's certificates through the real binary (docs/pki.md): a pass with `stateStore` set on real loop
devices creates the keystore in the store (a directory, and S3 on the AWS double), issues every leaf into the
node's layout, and the next pass changes nothing. Each issued certificate passes `openssl verify` against its
signer and `openssl x509 -checkhost/-checkip` for every name it must carry; keys are 0600. Against real etcd
(Debian's 3.4): etcdctl with kube-apiserver's etcd client certificate reaches members running on the issued
files; a renewal (`protokube pki renew`) is served on the next connection without restarting etcd; and a
member presenting another member's certificate is rejected by its peer."""
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import need_root, protokube_bin
from loopdev import CLUSTER, VolEnv, node_ip, run
from test_store import BUCKET, aws_double, s3_env  # noqa: F401 (aws_double is a fixture)

SUFFIX = f"internal.{CLUSTER}"




class CertEnv(VolEnv):
    """A VolEnv whose spec names a state store and a pki dir per node (one machine plays several masters)."""

    def __init__(self, store_url, store_env):
        super().__init__(protokube_bin())
        self.store_url, self.store_env = store_url, store_env
        self.spec_text = open(self.spec).read()

    def pki(self, node):
        return os.path.join(self.base, "pki-" + node)

    def node_spec(self, node):
        path = os.path.join(self.base, f"cluster-{node}.yaml")
        with open(path, "w") as f:
            f.write(self.spec_text.replace("  kubernetesVersion:", f"  stateStore: {self.store_url}\n"
                                           f"  pki:\n    dir: {self.pki(node)}\n  kubernetesVersion:"))
        return path

    def pk(self, verb, node, *extra, check=None, timeout=120, zone="z1", env=None, ip=None):
        argv = self.argv(verb, node, *extra, zone=zone)
        argv[2] = self.node_spec(node)
        if ip:
            argv[argv.index("--internal-ip") + 1] = ip
        if verb in ("pki renew", "pki show"):
            argv[3:4] = verb.split()
        e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        e.update(self.store_env)
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=e)
        if check is not None and p.returncode != check:
            raise AssertionError(f"protokube {verb} {node} exited {p.returncode}, wanted {check}\n"
                                 f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        return p


@pytest.fixture(params=["file", "s3"])
def cenv(request, aws_double):  # noqa: F811
    need_root()
    made = []
    if request.param == "file":
        d = tempfile.mkdtemp(prefix="pk-certs-store-")
        made.append(d)
        url, env = "file://" + d, {}
    else:
        prefix = "certs%d-%s" % (os.getpid(), re.sub(r"[^A-Za-z0-9-]", "-", request.node.name))
        url, env = f"s3://{BUCKET}/{prefix}", s3_env(aws_double)
    e = CertEnv(url, env)
    e.standard_pool()
    yield e
    errors = e.cleanup()
    for d in made:
        shutil.rmtree(d, ignore_errors=True)
    assert not errors, errors


def openssl(*args):
    return subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=30)


def verify(ca, cert):
    p = openssl("verify", "-x509_strict", "-CAfile", ca, cert)
    assert p.returncode == 0 and ": OK" in p.stdout, (ca, cert, p.stdout, p.stderr)


def check_names(cert, hosts=(), ips=()):
    for h in hosts:
        p = openssl("x509", "-in", cert, "-noout", "-checkhost", h)
        assert "does match certificate" in p.stdout, (cert, h, p.stdout)
    for ip in ips:
        p = openssl("x509", "-in", cert, "-noout", "-checkip", ip)
        assert "does match certificate" in p.stdout, (cert, ip, p.stdout)


def check_refuses(cert, host):
    p = openssl("x509", "-in", cert, "-noout", "-checkhost", host)
    assert "does NOT match certificate" in p.stdout, (cert, host, p.stdout)


def serial_of(path):
    return openssl("x509", "-in", path, "-noout", "-serial").stdout.strip().split("=")[1].lower()


def test_pass_issues_every_certificate(cenv):
    """One pass issues the layout (exactly the issue's SANs), a second is quiet; openssl agrees."""
    p = cenv.pk("once", "n1", check=0)
    # main's member first: its manifest is written before the events member's pairs are issued
    lines = p.stderr.splitlines()
    wrote = [i for i, ln in enumerate(lines) if "Wrote '" in ln and "/etcd.manifest'" in ln]
    issued = [i for i, ln in enumerate(lines) if "Certificates: " in ln and "change(s) applied" in ln]
    assert len(wrote) == 1 and len(issued) == 2 and issued[0] < wrote[0] < issued[1], p.stderr
    k, ip = cenv.pki("n1"), node_ip("n1")
    e, a = os.path.join(k, "etcd-main"), os.path.join(k, "kube-apiserver")
    for cluster in ("main", "events"):
        d = os.path.join(k, f"etcd-{cluster}")
        stem = "etcd" if cluster == "main" else "etcd-events"
        for pair in ("server", "peer"):
            crt = os.path.join(d, pair + ".crt")
            verify(os.path.join(d, "ca.crt" if pair == "server" else "peer-ca.crt"), crt)
            check_names(crt, [f"{stem}-a.{SUFFIX}", "localhost"], [ip, "127.0.0.1"])
            check_refuses(crt, f"{stem}-b.{SUFFIX}")
            assert stat.S_IMODE(os.stat(os.path.join(d, pair + ".key")).st_mode) == 0o600
    verify(os.path.join(a, "ca.crt"), os.path.join(a, "apiserver.crt"))
    check_names(os.path.join(a, "apiserver.crt"),
                [f"api.{CLUSTER}", f"api.{SUFFIX}", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                 "kubernetes.default.svc.cluster.local"], ["100.64.0.1", ip, "127.0.0.1"])
    verify(os.path.join(a, "etcd-ca.crt"), os.path.join(a, "etcd-client.crt"))
    verify(os.path.join(e, "ca.crt"), os.path.join(a, "etcd-client.crt"))  # what etcd checks clients with
    verify(os.path.join(a, "ca.crt"), os.path.join(a, "kubelet-client.crt"))
    verify(os.path.join(a, "front-proxy-ca.crt"), os.path.join(a, "front-proxy-client.crt"))
    # the components that delegate authentication trust the same front proxy, from their own directory
    for comp in ("kube-controller-manager", "kube-scheduler"):
        verify(os.path.join(k, comp, "front-proxy-ca.crt"), os.path.join(a, "front-proxy-client.crt"))
    for comp in ("kube-controller-manager", "kube-scheduler", "kube-proxy", "admin", "protokube"):
        d = os.path.join(k, comp)
        verify(os.path.join(d, "ca.crt"), os.path.join(d, "client.crt"))
        kc = open(os.path.join(d, "kubeconfig")).read()
        assert f"client-certificate: {d}/client.crt" in kc and f"client-key: {d}/client.key" in kc
        assert stat.S_IMODE(os.stat(os.path.join(d, "kubeconfig")).st_mode) == 0o600
    subj = openssl("x509", "-in", os.path.join(k, "admin", "client.crt"), "-noout", "-subject").stdout
    assert "O = system:masters" in subj and "CN = kubernetes-admin" in subj
    # protokube's own client (docs/pki.md): its own CN, the local server as the components' kubeconfigs
    subj = openssl("x509", "-in", os.path.join(k, "protokube", "client.crt"), "-noout", "-subject").stdout
    assert "O = system:masters" in subj and "CN = protokube" in subj
    kc = open(os.path.join(k, "protokube", "kubeconfig")).read()
    assert "server: https://127.0.0.1:443\n" in kc and kc.split("server:")[1].split("\n")[0] == open(
        os.path.join(k, "kube-scheduler", "kubeconfig")).read().split("server:")[1].split("\n")[0]
    assert stat.S_IMODE(os.stat(os.path.join(a, "service-account.key")).st_mode) == 0o600
    # the etcd manifest points at the issued files; the control plane carries the digest
    man = open(os.path.join(cenv.manifest_dir("n1"), "etcd.manifest")).read()
    assert f"--peer-cert-file={e}/peer.crt" in man and "https://" in man
    api = open(os.path.join(cenv.manifest_dir("n1"), "kube-apiserver.manifest")).read()
    assert "protokube.io/certificates:" in api
    # quiet: nothing to do, same bytes
    before = {f: serial_of(os.path.join(a, f)) for f in ("apiserver.crt", "etcd-client.crt")}
    p = cenv.pk("plan", "n1", check=0)
    assert "certificates: nothing to do" in p.stdout, p.stdout
    cenv.pk("once", "n1", check=0)
    assert before == {f: serial_of(os.path.join(a, f)) for f in ("apiserver.crt", "etcd-client.crt")}
    assert open(os.path.join(cenv.manifest_dir("n1"), "kube-apiserver.manifest")).read() == api
    show = cenv.pk("pki show", "n1", check=0).stdout
    assert "kubernetes-ca: sha256" in show and f"DNS: etcd-a.{SUFFIX}, localhost" in show


def test_second_master_shares_the_cas_and_renewal_changes_the_manifest(cenv):
    cenv.pk("once", "n1", check=0)
    cenv.pk("once", "n2", check=0)
    a1, a2 = os.path.join(cenv.pki("n1"), "kube-apiserver"), os.path.join(cenv.pki("n2"), "kube-apiserver")
    assert open(os.path.join(a1, "ca.crt")).read() == open(os.path.join(a2, "ca.crt")).read()
    verify(os.path.join(a1, "ca.crt"), os.path.join(a2, "apiserver.crt"))
    # n2 holds member b: its etcd certificate names etcd-b
    check_names(os.path.join(cenv.pki("n2"), "etcd-main", "peer.crt"), [f"etcd-b.{SUFFIX}"], [node_ip("n2")])
    api = os.path.join(cenv.manifest_dir("n1"), "kube-apiserver.manifest")
    before, serial = open(api).read(), serial_of(os.path.join(a1, "apiserver.crt"))
    p = cenv.pk("plan", "n1", check=0)
    cenv.pk("pki renew", "n1", check=0)
    assert serial_of(os.path.join(a1, "apiserver.crt")) != serial
    after = open(api).read()
    assert after != before
    digest = re.search(r"protokube.io/certificates: \"?([0-9a-f]+)", after).group(1)
    assert digest not in before
    # an address change reissues what names it, and only that
    p = cenv.pk("plan", "n1", ip="10.9.9.9", check=0)
    issued = re.findall(r"issue-certificate (\S+) \((\w+)\)", p.stdout)
    assert sorted(os.path.basename(i[0]) for i in issued) == ["apiserver.crt", "peer.crt", "peer.crt",
                                                              "server.crt", "server.crt"], p.stdout
    assert all(r == "sans" for _, r in issued)


def test_missing_store_is_a_clear_error_and_holds_etcd_back(tmp_path):
    need_root()
    e = CertEnv("file://" + str(tmp_path / "nowhere"), {})
    try:
        e.standard_pool()
        p = e.pk("once", "n1")
        assert p.returncode == 1, p.stderr
        assert "nowhere" in p.stderr and "waiting for its certificates" in p.stderr, p.stderr
        assert not os.path.exists(os.path.join(e.manifest_dir("n1"), "etcd.manifest"))
        assert not os.path.exists(os.path.join(e.pki("n1"), "etcd-main", "server.key"))
    finally:
        assert not e.cleanup()


# --- against real etcd


class Etcd:
    def __init__(self, base, name, ip, d, cluster, peers_ca=None, netns=None):
        self.log = os.path.join(base, f"etcd-{name}.log")
        self.client = f"https://{ip}:23790"
        argv = ["etcd", "--name", name, "--data-dir", os.path.join(base, "data-" + name),
                "--listen-client-urls", self.client, "--advertise-client-urls", self.client,
                "--listen-peer-urls", f"https://{ip}:23800", "--initial-advertise-peer-urls",
                f"https://{ip}:23800", "--initial-cluster", cluster, "--initial-cluster-state", "new",
                "--cert-file", f"{d}/server.crt", "--key-file", f"{d}/server.key",
                "--trusted-ca-file", f"{d}/ca.crt", "--client-cert-auth",
                "--peer-cert-file", f"{d}/peer.crt", "--peer-key-file", f"{d}/peer.key",
                "--peer-trusted-ca-file", peers_ca or f"{d}/peer-ca.crt", "--peer-client-cert-auth"]
        if netns:
            argv = ["ip", "netns", "exec", netns, *argv]
        self.proc = subprocess.Popen(argv, stdout=open(self.log, "ab"), stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)

    def text(self):
        return open(self.log, errors="replace").read()


def etcdctl_argv(endpoint, client_dir, *args):
    return ["etcdctl", f"--endpoints={endpoint}", f"--cacert={client_dir}/etcd-ca.crt",
            f"--cert={client_dir}/etcd-client.crt", f"--key={client_dir}/etcd-client.key", "--dial-timeout=2s",
            "--command-timeout=4s", *args]


def etcdctl(endpoint, client_dir, *args):
    return subprocess.run(etcdctl_argv(endpoint, client_dir, *args), capture_output=True, text=True, timeout=15,
                          env=dict(os.environ, ETCDCTL_API="3"))


def wait_for(what, fn, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if fn():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out: {what}")


@pytest.fixture
def file_env(tmp_path):
    need_root()
    store = tmp_path / "store"
    store.mkdir()
    e = CertEnv("file://" + str(store), {})
    e.standard_pool()
    etcds = []
    yield e, etcds
    for x in etcds:
        x.stop()
    assert not e.cleanup()


def served_serial(host, port, client_dir):
    p = subprocess.run(["openssl", "s_client", "-connect", f"{host}:{port}", "-cert",
                        f"{client_dir}/etcd-client.crt", "-key", f"{client_dir}/etcd-client.key"],
                       input="", capture_output=True, text=True, timeout=15)
    cert = re.search(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", p.stdout, re.S)
    assert cert, p.stdout + p.stderr
    x = subprocess.run(["openssl", "x509", "-noout", "-serial"], input=cert.group(0), capture_output=True,
                       text=True)
    return x.stdout.strip().split("=")[1].lower()


def test_real_etcd_tls_and_live_renewal(file_env):
    """Two members (a on 127.0.0.2, b on 127.0.0.3) on the issued files, peers and clients over TLS."""
    e, etcds = file_env
    e.pk("once", "n1", ip="127.0.0.2", check=0)
    e.pk("once", "n2", ip="127.0.0.3", check=0)
    cluster = "a=https://127.0.0.2:23800,b=https://127.0.0.3:23800"
    for name, node, ip in (("a", "n1", "127.0.0.2"), ("b", "n2", "127.0.0.3")):
        etcds.append(Etcd(e.base, name, ip, os.path.join(e.pki(node), "etcd-main"), cluster))
    client = os.path.join(e.pki("n1"), "kube-apiserver")
    wait_for("etcd healthy", lambda: etcdctl("https://127.0.0.2:23790,https://127.0.0.3:23790", client,
                                             "endpoint", "health").returncode == 0)
    assert etcdctl("https://127.0.0.2:23790", client, "put", "k", "v").returncode == 0
    # the other node's client certificate too, on the other member
    assert etcdctl("https://127.0.0.3:23790", os.path.join(e.pki("n2"), "kube-apiserver"), "get",
                   "k").stdout.split() == ["k", "v"]
    members = etcdctl("https://127.0.0.2:23790", client, "member", "list", "-w", "json")
    assert len(json.loads(members.stdout)["members"]) == 2
    # live renewal: the next connection is served the new certificate, etcd keeps running
    old = served_serial("127.0.0.2", 23790, client)
    assert old == serial_of(os.path.join(e.pki("n1"), "etcd-main", "server.crt"))
    e.pk("pki renew", "n1", ip="127.0.0.2", check=0)
    new = serial_of(os.path.join(e.pki("n1"), "etcd-main", "server.crt"))
    assert new != old
    assert served_serial("127.0.0.2", 23790, client) == new
    assert etcds[0].proc.poll() is None
    assert etcdctl("https://127.0.0.2:23790", client, "get", "k").stdout.split() == ["k", "v"]
    for x in etcds:
        assert "rejected connection" not in x.text()


def test_peer_with_another_members_certificate_is_rejected(file_env):
    """Member b started on member c's certificate: member a refuses it both ways (b's server certificate does
    not name b's address, and b's connections come from an address c's certificate does not name). Each
    member runs in a network namespace of its own, as masters do: on loopback every process dials from
    127.0.0.1, which every member certificate names."""
    e, etcds = file_env
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
    from netlab import NetLab
    lab = NetLab("pkc")
    try:
        lab.start()
        addrs = {"a": "198.18.42.102", "b": "198.18.42.103", "c": "198.18.42.104"}
        for name in ("a", "b"):
            lab.add_host(name, addrs[name])
        e.pk("once", "n1", ip=addrs["a"], check=0)  # holds a
        e.pk("once", "n2", ip=addrs["b"], check=0)  # holds b
        e.pk("once", "n3", ip=addrs["c"], check=0)  # holds c
        check_names(os.path.join(e.pki("n3"), "etcd-main", "peer.crt"), [f"etcd-c.{SUFFIX}"], [addrs["c"]])
        cluster = f"a=https://{addrs['a']}:23800,b=https://{addrs['b']}:23800"
        etcds.append(Etcd(e.base, "a", addrs["a"], os.path.join(e.pki("n1"), "etcd-main"), cluster,
                          netns=lab.ns("a")))
        etcds.append(Etcd(e.base, "b", addrs["b"], os.path.join(e.pki("n3"), "etcd-main"), cluster,
                          netns=lab.ns("b")))
        wait_for("a rejects b", lambda: f'rejected connection from "{addrs["b"]}' in etcds[0].text() and
                 f"certificate is valid for {addrs['c']}" in etcds[0].text(), seconds=30)
        client = os.path.join(e.pki("n1"), "kube-apiserver")
        # no quorum without b: a write cannot commit
        put = subprocess.run(lab.exec_argv("a", etcdctl_argv(f"https://{addrs['a']}:23790", client, "put", "k",
                                                             "v")),
                             capture_output=True, text=True, timeout=15, env=dict(os.environ, ETCDCTL_API="3"))
        assert put.returncode != 0, etcds[0].text()[-3000:]
    finally:
        for x in etcds:
            x.stop()
        lab.close()
