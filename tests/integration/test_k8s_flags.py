# The flags protokube renders for Kubernetes 1.20.2 against the real 1.20.2 binaries (built from Debian's
# `kubernetes` source package by scripts/k8s-binaries.sh): each of kube-apiserver, kube-controller-manager,
# kube-scheduler and kube-proxy starts with the flags of its rendered manifest, and its output must show the
# flags parsed (klog's "FLAG: --x=..." dump) and no unknown, undefined, removed or deprecated flag, nor an
# unrecognized feature gate. The binaries fail later for other reasons (no etcd, no certificate files): only
# flag parsing is inspected. Each runs in its own network namespace (loopback up, a TEST-NET-1 address and a
# default route on it, so kube-apiserver finds an address to advertise and gets past its option checks) for at
# most a few seconds, then is stopped by its PID.
import os
import re
import signal
import subprocess

import pytest
import yaml

from conftest import ROOT, need_root
from test_render import etcd_args

GOLDEN = os.path.join(ROOT, "tests", "golden", "manifests")
COMPONENTS = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"]
BAD = re.compile(r"unknown (shorthand )?flag|flag provided but not defined|unrecognized feature gate|"
                 r"invalid argument|has been removed|Flag --\S+ has been deprecated", re.I)
RUN_SECONDS = 5
# Deprecated in 1.20 but not removed, and rendered on purpose: kube-controller-manager 1.20 serves
# unauthenticated HTTP on 0.0.0.0:10252 unless --port=0 (the flag is gone in 1.24, and so is the port).
DEPRECATED_ON_PURPOSE = {"kube-controller-manager": ["Flag --port has been deprecated"]}


def k8s_bin_dir():
    """scripts/k8s-binaries.sh's cache directory, without building it (that takes a quarter of an hour)."""
    return subprocess.run([os.path.join(ROOT, "scripts", "k8s-binaries.sh"), "--dir"], capture_output=True,
                          text=True, check=True, timeout=30).stdout.strip()


@pytest.fixture(scope="module")
def k8s_bin():
    d = k8s_bin_dir()
    missing = [c for c in COMPONENTS if not os.access(os.path.join(d, c), os.X_OK)]
    if missing:
        pytest.skip(f"the Kubernetes 1.20.2 binaries are not built ({', '.join(missing)} missing in {d}); "
                    f"run scripts/k8s-binaries.sh")
    out = subprocess.run([os.path.join(d, "kube-apiserver"), "--version"], capture_output=True, text=True,
                         timeout=30).stdout
    assert out.strip() == "Kubernetes v1.20.2", out
    return d


def rendered_flags(pk, spec, out):
    pk("--log-level", "error", "render", "-c", spec, *etcd_args(spec), "--out", str(out), check=0)
    flags = {}
    for c in COMPONENTS:
        with open(out / f"{c}.manifest") as f:
            cmd = yaml.safe_load(f)["spec"]["containers"][0]["command"]
        i = cmd.index(f"/usr/local/bin/{c}")
        flags[c] = cmd[i + 1:]
    return flags


def run_briefly(binary, flags):
    """Output of binary started with flags in a new network namespace; it runs until it exits or for
    RUN_SECONDS, then its process group (it and the shell it was exec'd from) is killed."""
    netns_setup = ("ip link set lo up && ip addr add 192.0.2.1/32 dev lo && ip route add default dev lo && "
                   'exec "$0" "$@"')
    p = subprocess.Popen(["unshare", "--net", "--", "sh", "-c", netns_setup, binary, *flags],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=RUN_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate(timeout=10)
    return out.decode(errors="replace")


def spec_at(tmp_path, source, version):
    """source with kubernetesVersion replaced (the same spec, another version)."""
    text = open(source).read()
    text, n = re.subn(r"^(  kubernetesVersion: ).*$", rf"\g<1>{version}", text, flags=re.M)
    assert n == 1
    p = tmp_path / f"{os.path.basename(source)[:-5]}-{version}.yaml"
    p.write_text(text)
    return str(p)


def check_flags_accepted(binary, flags):
    out = run_briefly(binary, flags)
    allowed = DEPRECATED_ON_PURPOSE.get(os.path.basename(binary), [])
    bad = [line for line in out.splitlines() if BAD.search(line) and not any(a in line for a in allowed)]
    assert not bad, f"{os.path.basename(binary)} refused its flags:\n" + "\n".join(bad[:10])
    # the flags were parsed: klog dumps every flag's value at --v>=1 before anything else can fail
    for flag in flags:
        name = flag.split("=", 1)[0]
        assert f"FLAG: {name}=" in out, f"{os.path.basename(binary)}: no {name} in its flag dump:\n{out[-3000:]}"


@pytest.mark.parametrize("component", COMPONENTS)
def test_pki_spec_flags_run_kubernetes_1_20(pk, k8s_bin, tmp_path, component):
    """tests/golden/manifests/pki.yaml (kubernetesVersion 1.20.2, certificates issued by protokube)."""
    need_root()
    flags = rendered_flags(pk, os.path.join(GOLDEN, "pki.yaml"), tmp_path)
    check_flags_accepted(os.path.join(k8s_bin, component), flags[component])


@pytest.mark.parametrize("source", ["versions-1.20.yaml", "full.yaml"])
def test_every_spec_accepted_for_1_20_runs_kubernetes_1_20(pk, k8s_bin, tmp_path, source):
    """A spec that sets many keys, at 1.20.2: protokube either refuses it (keys or values 1.20 lacks, named
    with their line) or renders flags all four binaries accept. full.yaml sets a 1.27 feature gate and the
    1.22 PodSecurity admission plugin, so it must be refused."""
    need_root()
    spec = spec_at(tmp_path, os.path.join(GOLDEN, source), "1.20.2")
    v = pk("validate", "-c", spec)
    if v.returncode != 0:
        assert source == "full.yaml", v.stderr
        assert "feature gate 'InPlacePodVerticalScaling' is not supported by Kubernetes 1.20.2" in v.stderr
        assert "admission plugin 'PodSecurity' is not supported by Kubernetes 1.20.2" in v.stderr
        return
    out = tmp_path / "out"
    out.mkdir()
    flags = rendered_flags(pk, spec, out)
    for c in COMPONENTS:
        check_flags_accepted(os.path.join(k8s_bin, c), flags[c])
