# protokube render: goldens, byte-stable output, change-only writes, foreign files left alone, and the
# offline Kubernetes checks of TESTING.md (kubernetes-models validate + unknown-field walk) over every
# rendered manifest. Optionally (root) the rendered etcd flags run Debian's etcd 3.4 for real.
import glob
import os
import shutil
import subprocess
import textwrap
import time

import pytest
import yaml

from conftest import IN_CI, ROOT, need_root

GOLDEN = os.path.join(ROOT, "tests", "golden")
K8S = os.path.join(ROOT, "tests", "k8s")
ORDER = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "etcd", "etcd-events"]
# The configuration files render writes beside the manifests, in its order, and where they live on a node.
CONFIG_FILES = {"kube-scheduler.yaml": "/var/lib/kube-scheduler/config.yaml",
                "kube-proxy.yaml": "/var/lib/kube-proxy/config.yaml",
                "kubelet.yaml": "/var/lib/kubelet/config.yaml"}


def specs():
    return sorted(glob.glob(os.path.join(ROOT, "examples", "*.yaml")) +
                  glob.glob(os.path.join(GOLDEN, "manifests", "*.yaml")))


def etcd_args(spec):
    """This node is member b of a,b,c of main and events, as scripts/update-golden-manifests.sh renders."""
    with open(spec) as f:
        doc = yaml.safe_load(f)
    args = []
    for c in doc.get("spec", {}).get("etcdClusters") or []:
        if c.get("name") in ("main", "events"):
            args += [f"--etcd-member={c['name']}=b/a,b,c", f"--etcd-mount={c['name']}=/mnt/master-vol-{c['name']}"]
    return args


def render(pk, spec, out=None, extra=()):
    args = ["--log-level", "error", "render", "-c", spec, *etcd_args(spec), *extra]
    if out:
        args += ["--out", out]
    return pk(*args, check=0)


def read_dir(d):
    return {f: open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))}


def golden_dir(spec):
    return os.path.join(GOLDEN, "manifests", os.path.basename(spec)[:-len(".yaml")])


def manifest_order(name):
    return ORDER.index(name[:-len(".manifest")])


@pytest.mark.parametrize("spec", specs(), ids=os.path.basename)
def test_render_matches_golden(pk, tmp_path, spec):
    """The manifests and, beside them, the configuration files (kubelet.yaml for every spec)."""
    render(pk, spec, out=str(tmp_path))
    want = read_dir(golden_dir(spec))
    assert want, f"no goldens for {spec}: run scripts/update-golden-manifests.sh"
    assert "kubelet.yaml" in want and not [f for f in want if not f.endswith(".manifest") and f not in CONFIG_FILES]
    got = read_dir(tmp_path)
    assert sorted(got) == sorted(want)
    for f in want:
        assert got[f] == want[f], f"{f} differs from its golden (scripts/update-golden-manifests.sh)"


@pytest.mark.parametrize("spec", specs(), ids=os.path.basename)
def test_stdout_is_the_goldens_in_order(pk, spec):
    out1 = render(pk, spec).stdout
    out2 = render(pk, spec).stdout
    assert out1 == out2
    want = read_dir(golden_dir(spec))
    names = sorted((f for f in want if f.endswith(".manifest")), key=manifest_order)
    files = "".join(f"---\n# {path}\n{want[f].decode()}" for f, path in CONFIG_FILES.items() if f in want)
    assert out1 == "---\n".join(want[f].decode() for f in names) + files


def test_flags_golden(pk, tmp_path):
    spec = os.path.join(ROOT, "examples", "cluster.yaml")
    render(pk, spec, out=str(tmp_path))
    flag_files = sorted(glob.glob(os.path.join(GOLDEN, "flags", "*.flags")))
    assert len(flag_files) == 6
    for ff in flag_files:
        name = os.path.basename(ff)[:-len(".flags")]
        with open(tmp_path / f"{name}.manifest") as f:
            cmd = yaml.safe_load(f)["spec"]["containers"][0]["command"]
        i = max(k for k, a in enumerate(cmd) if a.startswith("/usr/local/bin/"))
        with open(ff) as f:
            assert cmd[i + 1:] == f.read().splitlines(), name
        assert cmd[i + 1:] == sorted(cmd[i + 1:])


def command_of(manifest_bytes):
    return yaml.safe_load(manifest_bytes)["spec"]["containers"][0]["command"]


def test_one_spec_per_version_goldens_differ_only_by_version(pk, tmp_path):
    """versions-1.20.yaml and versions-1.31.yaml are one spec with two kubernetesVersions: their goldens (checked
    against the binary by test_render_matches_golden) differ in the image tags and in the flags that only one of
    the versions has, nothing else."""
    specs_by_minor = {m: os.path.join(GOLDEN, "manifests", f"versions-1.{m}.yaml") for m in (20, 31)}
    texts = {m: open(p).read() for m, p in specs_by_minor.items()}
    assert texts[20].replace("kubernetesVersion: 1.20.2", "kubernetesVersion: 1.31.2") == texts[31]
    goldens = {m: read_dir(golden_dir(p)) for m, p in specs_by_minor.items()}
    # both schedulers read a KubeSchedulerConfiguration: 1.20's v1beta1 with its unauthenticated server on
    # loopback (docs/components.md), 1.31's v1 without it
    assert sorted(goldens[20]) == sorted(goldens[31])
    for f in ("kube-proxy.yaml", "kubelet.yaml"):
        assert goldens[20][f] == goldens[31][f], f
    s120, s131 = (yaml.safe_load(goldens[m]["kube-scheduler.yaml"]) for m in (20, 31))
    assert s120.pop("apiVersion") == "kubescheduler.config.k8s.io/v1beta1"
    assert s131.pop("apiVersion") == "kubescheduler.config.k8s.io/v1"
    assert s120.pop("healthzBindAddress") == s120.pop("metricsBindAddress") == "127.0.0.1:10251"
    assert s120 == s131 and s131["leaderElection"] == {"leaderElect": True}
    only_120 = {"kube-controller-manager.manifest": ["--port=0"]}
    only_131 = {}
    for f in (f for f in goldens[20] if f.endswith(".manifest")):
        old, new = command_of(goldens[20][f]), command_of(goldens[31][f])
        assert [a for a in old if a not in new] == only_120.get(f, []), f
        assert [a for a in new if a not in old] == only_131.get(f, []), f
        a, b = yaml.safe_load(goldens[20][f]), yaml.safe_load(goldens[31][f])
        for pod in (a, b):
            pod["spec"]["containers"][0]["command"] = []
        if not f.startswith("etcd"):
            assert a["spec"]["containers"][0]["image"].endswith(":v1.20.2"), f
            assert b["spec"]["containers"][0]["image"].endswith(":v1.31.2"), f
            for pod in (a, b):
                pod["spec"]["containers"][0]["image"] = ""
        assert a == b, f


def test_version_gates_refuse_keys_and_values(pk, tmp_path):
    """A key or value the chosen version lacks is a spec error naming it and the version, at its line."""
    base = open(os.path.join(GOLDEN, "manifests", "versions-1.20.yaml")).read()
    cases = [
        ([("kubernetesVersion: 1.20.2", "kubernetesVersion: 1.19.16")],
         "spec.kubernetesVersion: '1.19.16' is not supported: protokube renders the flags of Kubernetes 1.20 to 1.31"),
        ([("AnyVolumeDataSource: \"false\"", "InPlacePodVerticalScaling: \"true\"")],
         "spec.kubeAPIServer.featureGates: feature gate 'InPlacePodVerticalScaling' is not supported by "
         "Kubernetes 1.20.2 (it exists since 1.27)"),
        ([("kubernetesVersion: 1.20.2", "kubernetesVersion: 1.31.2"),
          ("  kubeScheduler:\n", "  kubeScheduler:\n    insecurePort: 0\n")],
         "spec.kubeScheduler.insecurePort: not supported by Kubernetes 1.31.2 (--port exists in Kubernetes until "
         "1.23)"),
    ]
    for edits, want in cases:
        text = base
        for old, new in edits:
            assert old in text
            text = text.replace(old, new, 1)
        p = tmp_path / "bad.yaml"
        p.write_text(text)
        r = pk("validate", "-c", str(p))
        assert r.returncode != 0, (edits, r.stdout, r.stderr)
        assert want in r.stderr + r.stdout, (want, r.stderr)


def test_second_render_changes_nothing_and_foreign_files_stay(pk, tmp_path):
    spec = os.path.join(ROOT, "examples", "cluster.yaml")
    foreign = {"other.manifest": b"kind: Pod\n", ".hidden": b"x", "notes.txt": b"keep me\n"}
    for f, b in foreign.items():
        (tmp_path / f).write_bytes(b)
    old = time.time() - 3600
    for f in foreign:
        os.utime(tmp_path / f, (old, old))
    render(pk, spec, out=str(tmp_path))
    first = {f: os.stat(tmp_path / f) for f in os.listdir(tmp_path)}
    bytes1 = read_dir(tmp_path)
    # make any rewrite visible in mtime even on coarse clocks
    for f in first:
        os.utime(tmp_path / f, (old, old))
    first = {f: os.stat(tmp_path / f) for f in os.listdir(tmp_path)}
    render(pk, spec, out=str(tmp_path))
    second = {f: os.stat(tmp_path / f) for f in os.listdir(tmp_path)}
    assert sorted(second) == sorted(first), "render left or removed files"
    for f in first:
        assert second[f].st_mtime_ns == first[f].st_mtime_ns, f"{f} was rewritten"
        assert second[f].st_ino == first[f].st_ino, f"{f} was replaced"
    assert read_dir(tmp_path) == bytes1
    for f, b in foreign.items():
        assert (tmp_path / f).read_bytes() == b


def test_changed_spec_rewrites_only_what_changed(pk, tmp_path):
    src = os.path.join(ROOT, "examples", "cluster.yaml")
    spec = tmp_path / "spec.yaml"
    shutil.copy(src, spec)
    out = tmp_path / "out"
    render(pk, str(spec), out=str(out))
    old = time.time() - 3600
    for f in os.listdir(out):
        os.utime(out / f, (old, old))
    before = {f: os.stat(out / f).st_mtime_ns for f in os.listdir(out)}
    text = spec.read_text().replace("kubeScheduler: {}", "kubeScheduler: {logLevel: 5}")
    assert text != spec.read_text()
    spec.write_text(text)
    render(pk, str(spec), out=str(out))
    changed = sorted(f for f in os.listdir(out) if os.stat(out / f).st_mtime_ns != before[f])
    assert changed == ["kube-scheduler.manifest"]
    assert "--v=5" in (out / "kube-scheduler.manifest").read_text()
    assert not [f for f in os.listdir(out) if f.startswith(".")], "temp files left behind"


def test_render_usage_errors(pk, tmp_path):
    spec = os.path.join(ROOT, "examples", "cluster.yaml")
    assert pk("render").returncode == 2
    assert pk("render", "-c", spec, "--etcd-member", "main=a/a,b").returncode == 2  # no mount
    assert pk("render", "-c", spec, "--etcd-member", "main", "--etcd-mount", "main=/m").returncode == 2
    assert pk("render", "-c", spec, "--etcd-mount", "main=relative").returncode == 2
    p = pk("render", "-c", spec, "--etcd-member", "nope=a/a", "--etcd-mount", "nope=/m")
    assert p.returncode == 1 and "not in the spec" in p.stderr
    p = pk("render", "-c", spec, "--etcd-member", "main=d/a,b,c", "--etcd-mount", "main=/m")
    assert p.returncode == 1
    bad = tmp_path / "bad.yaml"
    bad.write_text(open(spec).read().replace("kubeProxy: {}", "kubeProxy: {proxyMode: bogus}"))
    p = pk("render", "-c", str(bad), "--out", str(tmp_path / "o"))
    assert p.returncode == 1 and "proxyMode" in p.stderr
    assert not (tmp_path / "o").exists(), "nothing is written for an invalid spec"


def test_kube_proxy_disabled(pk, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(open(os.path.join(ROOT, "examples", "cluster.yaml")).read()
                    .replace("kubeProxy: {}", "kubeProxy: {enabled: false}"))
    render(pk, str(spec), out=str(tmp_path / "o"))
    assert "kube-proxy.manifest" not in os.listdir(tmp_path / "o")
    assert "kube-proxy.yaml" not in os.listdir(tmp_path / "o")


def node_checker():
    if not os.path.isdir(os.path.join(K8S, "node_modules")) or not shutil.which("node"):
        msg = "tests/k8s/node_modules missing: run scripts/install-deps.sh (npm ci in tests/k8s)"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    return ["node", os.path.join(K8S, "check-manifests.mjs")]


def test_kubernetes_checks_pass_on_every_rendered_manifest(pk, tmp_path):
    checker = node_checker()
    files = []
    for spec in specs():
        out = tmp_path / os.path.basename(spec)
        render(pk, spec, out=str(out))
        # the pods (the configuration files are checked by the binaries: test_k8s_config_files.py)
        files += sorted(str(out / f) for f in os.listdir(out) if f.endswith(".manifest"))
        manifests = render(pk, spec).stdout.split("---\n# /")[0]
        (tmp_path / (os.path.basename(spec) + ".stdout")).write_text(manifests)
        files.append(str(tmp_path / (os.path.basename(spec) + ".stdout")))
    p = subprocess.run(checker + files, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 problems" in p.stdout


def test_kubernetes_checks_catch_broken_manifests(pk, tmp_path):
    checker = node_checker()
    render(pk, os.path.join(ROOT, "examples", "cluster.yaml"), out=str(tmp_path))
    good = (tmp_path / "etcd.manifest").read_text()
    cases = {
        "unknown-field": (good.replace("    livenessProbe:", "    livenessProbes:"), "unknown field"),
        "wrong-type": (good.replace("hostNetwork: true", 'hostNetwork: "true"'), "hostNetwork"),
        "unquoted-number": (good.replace("name: etcd-server\n", "name: 0755\n", 1), "name"),
        "duplicate-key": (good.replace("kind: Pod\n", "kind: Pod\nkind: Pod\n"), "unique"),
        "bad-quantity": (good.replace("cpu: 200m", "cpu: lots"), "quantity"),
    }
    for name, (text, expect) in cases.items():
        assert text != good, name
        f = tmp_path / f"{name}.broken"
        f.write_text(text)
        p = subprocess.run(checker + [str(f)], capture_output=True, text=True, timeout=60)
        assert p.returncode != 0, f"{name}: checker passed a broken manifest"
        assert expect in p.stderr, f"{name}: {p.stderr}"


ETCD_SPEC = """\
apiVersion: protokube/v1alpha1
kind: Cluster
metadata:
  name: etcdtest.k8s.test
spec:
  cloud: local
  dns: {provider: none}
  etcdClusters:
    - {name: main, image: "registry.k8s.io/etcd:3.5.16-0", clientPort: 24701, peerPort: 24702}
  kubernetesVersion: 1.31.2
"""


def test_rendered_etcd_flags_run_debian_etcd(pk, tmp_path):
    """The rendered flags start a real etcd 3.4: in a private network namespace (only lo, so listening on
    0.0.0.0 exposes nothing), mount namespace (the member's DNS name comes from a bind-mounted hosts file)
    and PID namespace, with the data dir in a temp dir."""
    need_root()
    if not shutil.which("etcd") or not shutil.which("etcdctl"):
        pytest.fail("etcd-server/etcd-client are needed (scripts/install-deps.sh)")
    spec = tmp_path / "spec.yaml"
    spec.write_text(ETCD_SPEC)
    out = tmp_path / "out"
    pk("--log-level", "error", "render", "-c", str(spec), "--out", str(out),
       "--etcd-member", "main=a/a", "--etcd-mount", f"main={tmp_path}/vol", check=0)
    pod = yaml.safe_load((out / "etcd.manifest").read_text())
    cmd = pod["spec"]["containers"][0]["command"]
    assert cmd[0] == "/usr/local/bin/etcd"
    data_dir = tmp_path / "data"
    flags = [f"--data-dir={data_dir}" if a.startswith("--data-dir=") else a for a in cmd[1:]]
    assert "--advertise-client-urls=http://etcd-a.internal.etcdtest.k8s.test:24701" in flags
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n127.0.0.1 etcd-a.internal.etcdtest.k8s.test\n")
    script = textwrap.dedent("""\
        set -u
        ip link set lo up
        mount --bind "$HOSTS" /etc/hosts
        etcd "$@" >"$LOG" 2>&1 &
        pid=$!
        ok=1
        for i in $(seq 1 100); do
            if ETCDCTL_API=3 etcdctl --dial-timeout=1s --command-timeout=2s \
                 --endpoints=http://etcd-a.internal.etcdtest.k8s.test:24701 put /protokube ok >/dev/null 2>&1; then
                ok=0; break
            fi
            kill -0 $pid 2>/dev/null || break
            sleep 0.1
        done
        if [ $ok = 0 ]; then
            ETCDCTL_API=3 etcdctl --endpoints=http://127.0.0.1:24701 get /protokube --print-value-only || ok=1
            curl -fsS --max-time 2 http://127.0.0.1:24701/health || ok=1
        fi
        kill $pid 2>/dev/null
        for i in $(seq 1 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
        kill -9 $pid 2>/dev/null
        wait $pid 2>/dev/null
        exit $ok
        """)
    env = dict(os.environ, HOSTS=str(hosts), LOG=str(tmp_path / "etcd.log"))
    # A PID namespace too: if the shell dies (timeout), the kernel kills etcd with it.
    p = subprocess.run(["unshare", "--net", "--mount", "--pid", "--fork", "--kill-child", "--propagation", "private", "--",
                        "/bin/sh", "-c", script, "sh", *flags],
                       capture_output=True, text=True, env=env, timeout=60)
    log = (tmp_path / "etcd.log").read_text() if (tmp_path / "etcd.log").exists() else ""
    assert p.returncode == 0, f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}\netcd log:\n{log[-4000:]}"
    assert "ok" in p.stdout.splitlines()[0]
    assert '"health":"true"' in p.stdout
    assert (data_dir / "member").is_dir()
