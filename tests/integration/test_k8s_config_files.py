# The configuration files protokube renders (docs/components.md, "Configuration files") against the real
# 1.20.2 binaries (scripts/k8s-binaries.sh): the kubelet, kube-proxy and kube-scheduler start with the files
# rendered from tests/golden/manifests/config-files.yaml and complain about nothing, kube-proxy and kube-scheduler
# report on /configz what their files say, field by field; a file with an unknown field or the wrong kind fails
# these checks (1.20.2 only warns about an unknown field and starts: the check treats the warning as a failure).
# And why each scheduler instance has a port of its own: with a configuration file the 1.20 kube-scheduler
# always serves plain HTTP on the file's healthzBindAddress (loopback here), whatever --port says, with no
# SO_REUSEPORT: a second scheduler on that address does not start.
#
# No cluster is needed. Each binary runs in a network namespace of its own (loopback only) against a
# kubeconfig whose server is 127.0.0.1:1 (refused at once): the kubelet exits by itself right after it has
# loaded and validated its configuration (--exit-on-lock-contention without --lock-file is refused there),
# kube-proxy and kube-scheduler run until they serve (bounded waits), then are stopped by their PID.
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import yaml

from conftest import ROOT, need_root
from test_k8s_flags import k8s_bin_dir

sys.path.insert(0, os.path.join(ROOT, "tests", "k8s"))
import configz  # noqa: E402

SPEC = os.path.join(ROOT, "tests", "golden", "manifests", "config-files.yaml")
PLACEHOLDER = "/srv/protokube-test"  # the spec's paths, moved into the test's directory
BINARIES = ["kubelet", "kube-proxy", "kube-scheduler"]
# Whatever a component says about a configuration it does not take as it is.
COMPLAINT = re.compile(r"lenient decoding|strict decod|unknown field|failed complete|failed validate|"
                       r"failed to load Kubelet config|failed to validate|invalid configuration|"
                       r"is registered for version|couldn't decode|Invalid value|unrecognized feature gate|"
                       r"unknown flag|flag provided but not defined", re.I)
KUBELET_VALIDATED = "cannot exit on lock file contention: no lock file specified"
WAIT_SECONDS = 30
KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: not-a-token}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
"""


@pytest.fixture(scope="module")
def k8s_bin():
    d = k8s_bin_dir()
    missing = [b for b in BINARIES if not os.access(os.path.join(d, b), os.X_OK)]
    if missing:
        pytest.skip(f"the Kubernetes 1.20.2 binaries are not built ({', '.join(missing)} missing in {d}); "
                    f"run scripts/k8s-binaries.sh")
    return d


def openssl_pair(key, crt, cn):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-subj", f"/CN={cn}", "-keyout", key, "-out", crt, "-days", "2"],
                   check=True, capture_output=True, timeout=60)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


@pytest.fixture
def rendered(pk, tmp_path):
    """The spec's files rendered with its paths under tmp_path/node, where the files they name exist: the
    kubeconfigs, the kubelet's CA and serving pair, its resolv.conf and static pod directory."""
    node = tmp_path / "node"
    text = open(SPEC).read().replace(PLACEHOLDER, str(node))
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    for c in ("kubelet", "kube-proxy", "kube-scheduler"):
        write(str(node / c / "kubeconfig"), KUBECONFIG)
    openssl_pair(str(node / "kubelet" / "ca.key"), str(node / "kubelet" / "ca.crt"), "test-ca")
    openssl_pair(str(node / "kubelet" / "kubelet.key"), str(node / "kubelet" / "kubelet.crt"), "node-a")
    write(str(node / "resolv.conf"), "nameserver 127.0.0.1\n")
    os.makedirs(node / "manifests")
    out = tmp_path / "out"
    pk("--log-level", "error", "render", "-c", str(spec), "--out", str(out), check=0)
    return out


def flags_of(manifest):
    with open(manifest) as f:
        cmd = yaml.safe_load(f)["spec"]["containers"][0]["command"]
    i = max(k for k, a in enumerate(cmd) if a.startswith("/usr/local/bin/"))
    return cmd[i + 1:]


def with_config(flags, path):
    """The manifest's flags with its --config pointed at path (the file is not at its node path here)."""
    assert sum(f.startswith("--config=") for f in flags) == 1, flags
    return [f"--config={path}" if f.startswith("--config=") else f for f in flags]


def in_netns(argv):
    return ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', *argv]


def complaints(out):
    return [line for line in out.splitlines() if COMPLAINT.search(line)]


def check_kubelet(binary, config, tmp):
    """The kubelet loads and validates config and complains about nothing; returns its output."""
    need_root()
    argv = [binary, "--config", str(config), "--exit-on-lock-contention", "--v=5",
            "--root-dir", str(tmp / "kubelet-root"), "--cert-dir", str(tmp / "kubelet-root" / "pki")]
    p = subprocess.run(in_netns(argv), capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    bad = complaints(out)
    assert not bad, "the kubelet complained about its file:\n" + "\n".join(bad[:10])
    assert KUBELET_VALIDATED in out, f"the kubelet stopped before it had validated its file:\n{out[-3000:]}"
    return out


class Running:
    """binary with argv, in its own network namespace, its output in a file; stop() kills it by its PID."""

    def __init__(self, argv, log):
        self.log_path = log
        with open(log, "wb") as f:
            self.p = subprocess.Popen(in_netns(argv), stdout=f, stderr=subprocess.STDOUT, start_new_session=True)

    def output(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def netns(self, argv, timeout=10):
        return subprocess.run(["nsenter", f"--net=/proc/{self.p.pid}/ns/net", *argv], capture_output=True,
                              text=True, timeout=timeout)

    def wait(self, ready):
        """Polls ready(self) until it holds, the process exits, or WAIT_SECONDS pass."""
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline and self.p.poll() is None:
            if ready(self):
                return True
            time.sleep(0.2)
        return ready(self)

    def listening(self, port):
        return re.search(rf":{port}\s", self.netns(["ss", "-Hltn"]).stdout) is not None

    def stop(self):
        if self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGKILL)
        self.p.wait(timeout=30)


def configz_of(proc):
    r = proc.netns(["curl", "-s", "-m", "2", "http://127.0.0.1:10249/configz"])
    return r.stdout if r.returncode == 0 and r.stdout.startswith("{") else None


def check_kube_proxy(binary, flags, tmp):
    """kube-proxy starts with flags (its file), complains about nothing and serves /configz; returns that."""
    need_root()
    proc = Running([binary, *flags], tmp / "kube-proxy.log")
    try:
        served = proc.wait(lambda p: configz_of(p) is not None)
        body = configz_of(proc)
    finally:
        proc.stop()
    out = proc.output()
    bad = complaints(out)
    assert not bad, "kube-proxy complained about its file:\n" + "\n".join(bad[:10])
    assert served and body, f"kube-proxy did not serve /configz within {WAIT_SECONDS}s:\n{out[-3000:]}"
    return body


def test_kubelet_starts_with_its_rendered_file(k8s_bin, rendered, tmp_path):
    config = rendered / "kubelet.yaml"
    out = check_kubelet(os.path.join(k8s_bin, "kubelet"), config, tmp_path)
    # what it validated is what the file says (its effective configuration, Go's dump at --v=5)
    node = tmp_path / "node"
    for want in (f'StaticPodPath:"{node}/manifests"', 'ClusterDomain:"files.cluster"', "ReadOnlyPort:0",
                 'CgroupRoot:"/protokube-test"', "MaxPods:50", 'ClientCAFile:"' + str(node / "kubelet" / "ca.crt"),
                 "RotateCertificates:true", 'Mode:"Webhook"', "FailSwapOn:false"):
        assert want in out, f"the kubelet did not take {want} from its file"


def test_kube_proxy_runs_its_rendered_file_and_reports_it(k8s_bin, rendered, tmp_path):
    flags = flags_of(rendered / "kube-proxy.manifest")
    assert flags == ["--config=/var/lib/kube-proxy/config.yaml", "--v=2"]
    file = rendered / "kube-proxy.yaml"
    body = check_kube_proxy(os.path.join(k8s_bin, "kube-proxy"), with_config(flags, file), tmp_path)
    assert configz.mismatches(file.read_text(), configz.section(body, "kube-proxy")) == []


BREAKAGES = {
    "unknown field": lambda text: text + "bogusField: 1\n",
    "wrong kind": lambda text: re.sub(r"(?m)^kind: .*$", "kind: KubeSchedulerConfiguration", text),
}


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
@pytest.mark.parametrize("component", ["kubelet", "kube-proxy"])
def test_a_broken_file_fails_the_check(k8s_bin, rendered, tmp_path, component, breakage):
    """The checks above do fail: the same file with an unknown field (1.20.2 starts anyway, with a warning)
    or the wrong kind (it refuses to start)."""
    broken = tmp_path / f"broken-{component}.yaml"
    broken.write_text(BREAKAGES[breakage]((rendered / f"{component}.yaml").read_text()))
    binary = os.path.join(k8s_bin, component)
    with pytest.raises(AssertionError) as e:
        if component == "kubelet":
            check_kubelet(binary, broken, tmp_path)
        else:
            check_kube_proxy(binary, with_config(flags_of(rendered / "kube-proxy.manifest"), broken), tmp_path)
    want = "lenient decoding" if breakage == "unknown field" else "is registered for version"
    assert want in str(e.value), str(e.value)


def scheduler_configz(proc, port):
    r = proc.netns(["curl", "-s", "-m", "2", f"http://127.0.0.1:{port}/configz"])
    return r.stdout if r.returncode == 0 and r.stdout.startswith("{") else None


def test_kube_scheduler_runs_its_rendered_file_and_reports_it(k8s_bin, rendered, tmp_path):
    """The 1.20 scheduler reads its v1beta1 file (no --port beside it: it would have no effect), serves its
    unauthenticated health and metrics on loopback only, and /configz there holds every field of the file."""
    need_root()
    flags = flags_of(rendered / "kube-scheduler.manifest")
    assert "--config=/var/lib/kube-scheduler/config.yaml" in flags
    assert not [f for f in flags if f.startswith(("--port", "--kubeconfig", "--leader-elect"))], flags
    file = rendered / "kube-scheduler.yaml"
    assert "healthzBindAddress: \"127.0.0.1:10251\"" in file.read_text()
    proc = Running([os.path.join(k8s_bin, "kube-scheduler"), *with_config(flags, file)],
                   tmp_path / "kube-scheduler.log")
    try:
        served = proc.wait(lambda p: scheduler_configz(p, 10251) is not None)
        body = scheduler_configz(proc, 10251)
        sockets = proc.netns(["ss", "-Hltn"]).stdout
    finally:
        proc.stop()
    out = proc.output()
    assert served and body, f"kube-scheduler did not serve /configz within {WAIT_SECONDS}s:\n{out[-3000:]}"
    assert not complaints(out)
    assert re.search(r"127\.0\.0\.1:10251\s", sockets) and not re.search(r"(\*|0\.0\.0\.0|\[::\]):10251\s",
                                                                          sockets), sockets
    assert configz.mismatches(file.read_text(), configz.section(body, "kube-scheduler")) == []


def test_two_schedulers_need_two_insecure_ports(k8s_bin, rendered, tmp_path):
    """Two schedulers of one master (the bootstrap pod and the self-hosted one during the pivot, a checkpoint
    and its successor) share the secure port with --permit-port-sharing, but not the file's insecure server: the
    second one with the same file exits ("address already in use"); with the port + 10 (the self-hosted
    instance's, docs/components.md) both run."""
    need_root()
    flags = [*flags_of(rendered / "kube-scheduler.manifest"), "--permit-port-sharing=true"]
    binary = os.path.join(k8s_bin, "kube-scheduler")
    first = rendered / "kube-scheduler.yaml"
    moved = tmp_path / "self-hosted.yaml"
    moved.write_text(first.read_text().replace("127.0.0.1:10251", "127.0.0.1:10261"))
    for second, runs in ((first, False), (moved, True)):
        a = Running([binary, *with_config(flags, first)], tmp_path / "a.log")
        try:
            assert a.wait(lambda p: p.listening(10251)), a.output()[-3000:]
            b = Running(["nsenter", f"--net=/proc/{a.p.pid}/ns/net", binary, *with_config(flags, second)],
                        tmp_path / "b.log")
            try:
                if runs:
                    assert b.wait(lambda p: scheduler_configz(a, 10261) is not None), b.output()[-3000:]
                else:
                    b.p.wait(timeout=WAIT_SECONDS)
                    assert "address already in use" in b.output(), b.output()[-3000:]
            finally:
                b.stop()
        finally:
            a.stop()


def test_configz_comparison():
    """tests/k8s/configz.py: a field the component runs with another value, or does not report, is named."""
    file = "apiVersion: x/v1\nkind: K\nmode: ipvs\nconntrack:\n  maxPerCore: 0\nfeatureGates:\n  A: true\n" \
           "nodePortAddresses:\n- 127.0.0.0/8\n"
    same = '{"kubeproxy.config.k8s.io": {"Mode": "ipvs", "Conntrack": {"MaxPerCore": 0}, ' \
           '"FeatureGates": {"A": true}, "NodePortAddresses": ["127.0.0.0/8"], "Other": 1}}'
    assert configz.mismatches(file, configz.section(same, "kube-proxy")) == []
    other = {"Mode": "iptables", "Conntrack": {}, "FeatureGates": {"A": False}, "NodePortAddresses": []}
    assert configz.mismatches(file, other) == [
        "mode: the file says 'ipvs', the component runs 'iptables'",
        "conntrack.maxPerCore: not reported",
        "featureGates.A: the file says True, the component runs False",
        "nodePortAddresses: the file says ['127.0.0.0/8'], the component runs []",
    ]
    # the kubelet's section leaves out zero values (omitempty): not reported is that value there only
    kubelet = "apiVersion: x/v1\nkind: K\nreadOnlyPort: 0\nfailSwapOn: false\nmaxPods: 50\n"
    assert configz.mismatches(kubelet, {"maxPods": 50}, omits_zero=True) == []
    assert configz.mismatches(kubelet, {}, omits_zero=True) == ["maxPods: not reported"]
    assert configz.mismatches(kubelet, {"maxPods": 50}) == ["readOnlyPort: not reported", "failSwapOn: not reported"]
