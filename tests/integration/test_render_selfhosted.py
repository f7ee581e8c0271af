# protokube render --self-hosted (docs/self-hosted.md): the goldens, the Secrets' data against the node's
# pki files, the flags against the static pods', modes, order, change-only writes, a renewal rolling the
# pods, the clear errors, no key material on stdout, and the offline Kubernetes checks over every object.
# The pki layout is issued by the test (selfhosted_fixture.py): real certificates with fixed serials, fresh
# keys; the goldens hold the Secrets with their data masked, so no private key is committed.
import base64
import os
import re
import subprocess
import time

import pytest
import yaml

from conftest import ROOT
from selfhosted_fixture import issue_layout, digest
from test_render import node_checker

GOLDEN = os.path.join(ROOT, "tests", "golden", "self-hosted")
SPEC = os.path.join(GOLDEN, "cluster.yaml")
GOLDEN_PKI = "/srv/kubernetes"
KIND_ORDER = ["ServiceAccount", "ClusterRoleBinding", "Secret", "ConfigMap", "DaemonSet", "Deployment"]
MASKED = "<masked>"
DIGEST_KEY = "protokube.io/certificates"


@pytest.fixture
def node(tmp_path):
    """A pki layout under tmp_path/pki and the golden spec pointed at it."""
    pki = str(tmp_path / "pki")
    want_digest = issue_layout(pki)
    spec = tmp_path / "cluster.yaml"
    text = open(SPEC).read()
    assert f"dir: {GOLDEN_PKI}" in text
    spec.write_text(text.replace(f"dir: {GOLDEN_PKI}", f"dir: {pki}"))
    return {"pki": pki, "spec": str(spec), "digest": want_digest, "tmp": tmp_path}


def render(pk, node, out=None, extra=("--etcd-member", "main=b/a,b,c")):
    args = ["--log-level", "error", "render", "-c", node["spec"], "--self-hosted", *extra]
    if out:
        args += ["--out", str(out)]
    return pk(*args)


def read_dir(d):
    return {f: open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))}


def mask_data(text):
    """The Secret's text with every value of its data block replaced by <masked>."""
    lines, in_data = [], False
    for ln in text.decode().split("\n"):
        if ln == "data:":
            in_data = True
        elif not ln.startswith("  "):
            in_data = False
        elif in_data:
            ln = ln.split(": ")[0] + ": " + MASKED
        lines.append(ln)
    return "\n".join(lines).encode()


def normalized(node, name, text):
    """The object as the golden holds it: the pki dir written as /srv/kubernetes, a Secret's data values
    masked (after checking each one is exactly the node's file), the certificates' digest masked (after
    checking it is the one the static pods carry)."""
    obj = yaml.safe_load(text)
    if obj["kind"] == "Secret":
        for key, value in obj["data"].items():
            mount = os.path.join(node["pki"], obj["metadata"]["name"][:-len("-pki")])
            with open(os.path.join(mount, key), "rb") as f:
                assert base64.b64decode(value, validate=True) == f.read(), (name, key)
        text = mask_data(text)
    if obj["kind"] in ("DaemonSet", "Deployment"):
        got = obj["spec"]["template"]["metadata"]["annotations"][DIGEST_KEY]
        assert got == node["digest"], name
        # quoted or not depending on its first character (a digest that reads as a number is quoted)
        text = re.sub(rb'(protokube\.io/certificates: )"?' + node["digest"].encode() + rb'"?',
                      rb"\g<1>" + MASKED.encode(), text)
    return text.replace(node["pki"].encode(), GOLDEN_PKI.encode())


def test_matches_golden(pk, node):
    out = node["tmp"] / "out"
    p = render(pk, node, out)
    assert p.returncode == 0, p.stderr
    got = {f: normalized(node, f, b) for f, b in read_dir(out).items()}
    golden_dir = os.path.join(GOLDEN, "cluster")
    if os.environ.get("PROTOKUBE_UPDATE_GOLDEN") == "1":
        os.makedirs(golden_dir, exist_ok=True)
        for f in os.listdir(golden_dir):
            os.unlink(os.path.join(golden_dir, f))
        for f, b in got.items():
            with open(os.path.join(golden_dir, f), "wb") as fh:
                fh.write(b)
    want = read_dir(golden_dir)
    assert sorted(got) == sorted(want)
    for f in want:
        assert got[f] == want[f], f"{f} differs from its golden (PROTOKUBE_UPDATE_GOLDEN=1 to regenerate)"


def test_objects_order_modes_and_labels(pk, node):
    out = node["tmp"] / "out"
    assert render(pk, node, out).returncode == 0
    files = sorted(os.listdir(out))
    kinds = [yaml.safe_load((out / f).read_text())["kind"] for f in files]
    assert kinds == sorted(kinds, key=KIND_ORDER.index), "files sort in apply order"
    assert kinds.count("Secret") == 4 and kinds.count("DaemonSet") == 2 and kinds.count("Deployment") == 2
    assert os.stat(out).st_mode & 0o777 == 0o700
    for f, kind in zip(files, kinds):
        mode = os.stat(out / f).st_mode & 0o777
        assert mode == (0o600 if kind == "Secret" else 0o644), f
        meta = yaml.safe_load((out / f).read_text())["metadata"]
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "protokube", f
        assert meta["labels"]["tier"] == "control-plane", f
        assert meta["labels"]["k8s-app"] in ("kube-apiserver", "kube-controller-manager", "kube-scheduler",
                                             "kube-proxy"), f


def workloads(out):
    objs = [yaml.safe_load((out / f).read_text()) for f in sorted(os.listdir(out))]
    return {o["metadata"]["name"]: o for o in objs if o["kind"] in ("DaemonSet", "Deployment")}


def test_flags_and_mounts_are_the_static_pods(pk, node):
    """Same command (kube-apiserver: its node's address through the downward API), every credential from a
    Secret mounted at the node's layout directory, the configuration file protokube renders (kube-proxy's)
    from a ConfigMap holding the file render writes beside the static pods, mounted where they mount its
    directory, every other host path as in the static pod."""
    out, static = node["tmp"] / "out", node["tmp"] / "static"
    assert render(pk, node, out).returncode == 0
    assert pk("--log-level", "error", "render", "-c", node["spec"], "--out", str(static)).returncode == 0
    for name, w in workloads(out).items():
        pod = yaml.safe_load((static / f"{name}.manifest").read_text())
        ct, sct = w["spec"]["template"]["spec"]["containers"][0], pod["spec"]["containers"][0]
        extra = [a for a in ct["command"] if a not in sct["command"]]
        assert [a for a in sct["command"] if a not in ct["command"]] == [], name
        assert extra == (["--advertise-address=$(HOST_IP)"] if name == "kube-apiserver" else []), name
        vols = {v["name"]: v for v in w["spec"]["template"]["spec"]["volumes"]}
        svols = {v["name"]: v for v in pod["spec"]["volumes"]}
        secret_paths = set()
        for m in ct["volumeMounts"]:
            v = vols[m["name"]]
            if "secret" in v:
                assert m["mountPath"] == os.path.join(node["pki"], name) and m["readOnly"], name
                secret_paths.add(m["mountPath"])
            elif "configMap" in v:
                assert name in ("kube-proxy", "kube-scheduler"), name
                assert m["mountPath"] == f"/var/lib/{name}" and m["readOnly"], name
                cm = yaml.safe_load((out / f"30-configmap-{v['configMap']['name']}.yaml").read_text())
                static_file = (static / f"{name}.yaml").read_text()
                if name == "kube-proxy":
                    assert cm["data"] == {"config.yaml": static_file}
                else:
                    # 1.20's scheduler: leader election on, and each instance its own unauthenticated port
                    # (the bootstrap pod's 10251, this pod's 10261, its checkpoint's 10271)
                    own = static_file.replace("127.0.0.1:10251", "127.0.0.1:10261")
                    assert cm["data"] == {"config.yaml": own,
                                          "checkpoint.config.yaml": own.replace(":10261", ":10271")}
                    assert cm["metadata"]["annotations"] == {
                        "protokube.io/checkpoint-data": "config.yaml=checkpoint.config.yaml"}
            else:
                assert "hostPath" in v, (name, v)
                assert not v["hostPath"]["path"].startswith(node["pki"]), f"{name}: credentials by hostPath"
                assert v == svols[m["name"]], name
        assert secret_paths == {os.path.join(node["pki"], name)}, name
        static_mounts = {m["mountPath"] for m in sct["volumeMounts"]}
        assert {m["mountPath"] for m in ct["volumeMounts"]} == static_mounts, name


def test_placement(pk, node):
    out = node["tmp"] / "out"
    assert render(pk, node, out, extra=("--etcd-member", "main=a/a,b,c,d,e")).returncode == 0
    w = workloads(out)
    master = {"node-role.kubernetes.io/master": ""}
    api = w["kube-apiserver"]
    assert api["kind"] == "DaemonSet"
    assert api["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    t = api["spec"]["template"]["spec"]
    # one master at a time: the pivot labels a master for its self-hosted apiserver at its turn (docs/pivot.md)
    assert t["nodeSelector"] == dict(master, **{"protokube.io/self-hosted-apiserver": "true"})
    assert t["hostNetwork"] and t["priorityClassName"] == "system-node-critical"
    keys = {(x.get("key"), x.get("effect")) for x in t["tolerations"]}
    assert {("node-role.kubernetes.io/master", "NoSchedule"), ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute")} <= keys
    assert t["containers"][0]["env"] == [{"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}}]
    for name in ("kube-controller-manager", "kube-scheduler"):
        d = w[name]
        assert d["kind"] == "Deployment" and d["spec"]["replicas"] == 5, name
        t = d["spec"]["template"]["spec"]
        assert t["nodeSelector"] == master
        aa = t["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        # only self-hosted pods (managed-by): the bootstrap pod's mirror must not keep its replacement away
        assert aa == [{"labelSelector": {"matchLabels": {"app.kubernetes.io/managed-by": "protokube", "k8s-app": name}},
                       "topologyKey": "kubernetes.io/hostname"}]
        # in the command (the controller-manager) or in the file (the scheduler: test_leader_election_forced_on)
        cmd = t["containers"][0]["command"]
        assert "--leader-elect=true" in cmd or "--config=/var/lib/kube-scheduler/config.yaml" in cmd, name
    proxy = w["kube-proxy"]["spec"]["template"]["spec"]
    assert {"operator": "Exists"} in proxy["tolerations"] and "nodeSelector" not in proxy
    assert proxy["serviceAccountName"] == "kube-proxy"
    crb = yaml.safe_load((out / "11-clusterrolebinding-protokube-node-proxier.yaml").read_text())
    assert crb["roleRef"]["name"] == "system:node-proxier"
    assert crb["subjects"] == [{"kind": "ServiceAccount", "name": "kube-proxy", "namespace": "kube-system"}]


def test_leader_election_forced_on(pk, node):
    spec = node["tmp"] / "cluster.yaml"
    spec.write_text(spec.read_text() + "  kubeScheduler:\n    leaderElect: false\n")
    out = node["tmp"] / "out"
    assert render(pk, node, out).returncode == 0
    cmd = workloads(out)["kube-scheduler"]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert not [a for a in cmd if a.startswith("--leader-elect")]
    cm = yaml.safe_load((out / "30-configmap-kube-scheduler-kube-scheduler.yaml").read_text())
    for key in ("config.yaml", "checkpoint.config.yaml"):
        assert yaml.safe_load(cm["data"][key])["leaderElection"] == {"leaderElect": True}, key


def test_second_render_changes_nothing_and_renewal_rolls_the_pods(pk, node):
    out = node["tmp"] / "out"
    assert render(pk, node, out).returncode == 0
    old = time.time() - 3600
    for f in os.listdir(out):
        os.utime(out / f, (old, old))
    before = {f: (os.stat(out / f).st_mtime_ns, os.stat(out / f).st_ino) for f in os.listdir(out)}
    assert render(pk, node, out).returncode == 0
    assert {f: (os.stat(out / f).st_mtime_ns, os.stat(out / f).st_ino) for f in os.listdir(out)} == before
    # A renewal: new pairs with new serials (as a pass writes them), so a new digest.
    new_digest = issue_layout(node["pki"], serial_offset=0x100)
    assert new_digest == digest(node["pki"], 0x100) != node["digest"]
    assert render(pk, node, out).returncode == 0
    changed = sorted(f for f in os.listdir(out) if os.stat(out / f).st_mtime_ns != before[f][0])
    assert changed == sorted(f for f in before if "-secret-" in f or "-daemonset-" in f or "-deployment-" in f)
    for w in workloads(out).values():
        assert w["spec"]["template"]["metadata"]["annotations"][DIGEST_KEY] == new_digest
    assert not [f for f in os.listdir(out) if f.startswith(".")], "temp files left behind"


def test_missing_file_is_named_and_nothing_is_written(pk, node):
    os.unlink(os.path.join(node["pki"], "kube-scheduler", "kubeconfig"))
    out = node["tmp"] / "out"
    p = render(pk, node, out)
    assert p.returncode == 1
    assert f"'{node['pki']}/kube-scheduler/kubeconfig'" in p.stderr
    assert "Secret kube-system/kube-scheduler-pki" in p.stderr
    assert not out.exists()


def test_stdout_never_holds_key_material(pk, node):
    p = render(pk, node)
    assert p.returncode == 0, p.stderr
    assert "PRIVATE KEY" not in p.stdout and "LS0tLS1CRUdJTi" not in p.stdout
    for d in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"):
        assert f"# Secret kube-system/{d}-pki: not printed" in p.stdout
        for f in os.listdir(os.path.join(node["pki"], d)):
            path = os.path.join(node["pki"], d, f)
            if os.path.isfile(path):
                assert base64.b64encode(open(path, "rb").read()).decode()[:40] not in p.stdout, path
    docs = [d for d in yaml.safe_load_all(p.stdout) if d]
    assert sorted(d["kind"] for d in docs) == sorted(["ServiceAccount", "ClusterRoleBinding"] + ["ConfigMap"] * 2 +
                                                     ["DaemonSet"] * 2 + ["Deployment"] * 2)


def test_errors(pk, node):
    assert render(pk, node, extra=()).returncode == 2  # no masters
    p = pk("render", "-c", os.path.join(ROOT, "examples", "cluster.yaml"), "--self-hosted",
           "--etcd-member", "main=a/a")
    assert p.returncode == 1 and "spec.stateStore" in p.stderr
    spec = node["tmp"] / "cluster.yaml"
    spec.write_text(spec.read_text() + "  kubeAPIServer:\n    tlsCertFile: /etc/elsewhere/api.crt\n")
    p = render(pk, node)
    assert p.returncode == 1
    assert "kube-apiserver's tlsCertFile '/etc/elsewhere/api.crt' is outside the pki layout" in p.stderr


def test_kubernetes_checks_pass_on_every_object(pk, node):
    checker = node_checker()
    out = node["tmp"] / "out"
    assert render(pk, node, out).returncode == 0
    stdout = node["tmp"] / "stdout.yaml"
    stdout.write_text(render(pk, node).stdout)
    files = [str(out / f) for f in sorted(os.listdir(out))] + [str(stdout)]
    p = subprocess.run(checker + files, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    # kube-proxy's and kube-scheduler's configuration files are ConfigMaps too (docs/components.md,
    # "Configuration files")
    assert "13 files, 20 documents, 0 problems" in p.stdout


def test_kubernetes_checks_catch_broken_objects(pk, node):
    checker = node_checker()
    out = node["tmp"] / "out"
    assert render(pk, node, out).returncode == 0
    ds = (out / "40-daemonset-kube-apiserver.yaml").read_text()
    dep = (out / "50-deployment-kube-scheduler.yaml").read_text()
    secret = (out / "20-secret-kube-proxy-pki.yaml").read_text()
    cases = {
        "unknown-template-field": (ds.replace("      hostNetwork: true", "      hostNetwrk: true"), "unknown field"),
        "replicas-string": (dep.replace("replicas: 5", 'replicas: "5"').replace("replicas: 3", 'replicas: "3"'),
                            "replicas"),
        "no-selector": (dep.replace("  selector:", "  selectr:"), "selector"),
        "secret-not-base64": ("\n".join(ln if not ln.startswith("  ca.crt:") else '  ca.crt: "not base64!"'
                                        for ln in secret.split("\n")), "byte"),
    }
    for name, (text, expect) in cases.items():
        f = node["tmp"] / f"{name}.broken"
        f.write_text(text)
        p = subprocess.run(checker + [str(f)], capture_output=True, text=True, timeout=60)
        assert p.returncode != 0, f"{name}: checker passed a broken object"
        assert expect in p.stderr, f"{name}: {p.stderr}"


def test_configuration_files_become_config_maps(pk, node):
    """kubeScheduler.config and kubeAPIServer.auditPolicyFile outside the pki layout: ConfigMaps holding the
    files, mounted at their directories; the offline checks pass on them too."""
    conf = node["tmp"] / "etc" / "scheduler"
    audit = node["tmp"] / "etc" / "audit"
    conf.mkdir(parents=True)
    audit.mkdir(parents=True)
    (conf / "config.yaml").write_text("apiVersion: kubescheduler.config.k8s.io/v1beta1\n"
                                      "kind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: true\n")
    (audit / "policy.yaml").write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    spec = node["tmp"] / "cluster.yaml"
    spec.write_text(spec.read_text() + f"  kubeScheduler:\n    config: {conf}/config.yaml\n"
                    f"  kubeAPIServer:\n    auditPolicyFile: {audit}/policy.yaml\n")
    out = node["tmp"] / "out"
    p = render(pk, node, out)
    assert p.returncode == 0, p.stderr
    for component, d, f in (("kube-scheduler", conf, "config.yaml"), ("kube-apiserver", audit, "policy.yaml")):
        name = f"{component}-{d.name}"
        cm = yaml.safe_load((out / f"30-configmap-{name}.yaml").read_text())
        assert cm["data"] == {f: (d / f).read_text()}
        assert os.stat(out / f"30-configmap-{name}.yaml").st_mode & 0o777 == 0o644
        t = workloads(out)[component]["spec"]["template"]["spec"]
        vol = next(v for v in t["volumes"] if v["name"] == name)
        assert vol["configMap"]["name"] == name and "hostPath" not in vol
        mount = next(m for m in t["containers"][0]["volumeMounts"] if m["name"] == name)
        assert mount["mountPath"] == str(d)
    checker = node_checker()
    files = [str(out / f) for f in sorted(os.listdir(out))]
    c = subprocess.run(checker + files, capture_output=True, text=True, timeout=120)
    assert c.returncode == 0 and "13 files, 13 documents, 0 problems" in c.stdout, c.stdout + c.stderr
