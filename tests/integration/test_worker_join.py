# SPDX-License-Identifier: Apache-2.0
"""One master and one worker on real kubelets (docs/workers.md): the master of test_k8s_master.py (protokube,
a real kubelet 1.20.2 and containerd running its static pods in a network namespace), with `protokube run` on
it keeping its pass (the join step: the bootstrap RBAC, kube-public/cluster-info, approving and signing the
kubelets' CSRs with the store's CA); a worker in a namespace of its own, whose spec names no state store,
given only a token (`protokube token create` on the master) and the CA's pin.

`protokube once --role worker` on the worker writes api.internal into the worker's hosts file (the masters
from the volume pool), fetches the CA and takes it with the pin, and writes the kubelet's files; its kubelet
then starts from them as an init system would (KUBELET_ARGS of kubelet.env). The kubelet's bootstrap CSR is
approved and signed by the master's protokube, its Node registers and turns Ready, its serving certificate
comes through its own CSR (approved for its addresses only). With spec.networking kubenet, protokube
writes each node's CNI network on its podCIDR and routes each node's podCIDR via its address: a pod on the
worker reaches a pod on the master by its pod address, its log is read and a command run in it (kubectl
exec) through the API and the worker kubelet's verified serving certificate; kube-proxy, a
static pod protokube writes on the worker with the node's own credentials, makes a Service's IP reach it. The worker never holds a private key of the CA. The time from the worker's
first pass to its Node Ready is printed."""
import ipaddress
import json
import os
import re
import subprocess
import time

from conftest import protokube_bin
from loopdev import CLUSTER
from test_k8s_master import NODE_IP, master, wait  # noqa: F401  (master: the fixture)
from node import PODNET_IMAGE, Node, kubelet_spec

WORKER = "w1"
WORKER_IP = "198.18.43.20"
CLIENT = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING = "kubernetes.io/kubelet-serving"


def master_pk(m, env, *args, check=0):
    """protokube as the master, in its namespace (its own kubeconfig names 127.0.0.1)."""
    argv = ["nsenter", f"--net=/run/netns/{m.netns}", protokube_bin(), "-c", env.spec, *args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert check is None or p.returncode == check, f"{args}: {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def worker_spec(env, base, hosts, name, cni_conf_dir):
    """The cluster's spec as a worker has it: no state store, no pki dir; its own hosts file; its kubelet's
    settings for this test machine (tests/k8s/node.py's, in place of the master's: cgroupfs under a root of its
    own, no swap check, images never collected)."""
    with open(env.spec) as f:
        text = f.read()
    text = re.sub(r"(?m)^  stateStore: .*\n  pki:\n(    .*\n)+", "", text)
    text = re.sub(r"(?m)^  kubelet:\n(    .*\n)+", "", text)
    assert "stateStore" not in text and "pki:" not in text, text
    text = re.sub(r"(?m)^      file: .*$", f"      file: {hosts}", text)
    text = re.sub(r"(?m)^    cniConfDir: .*$", f"    cniConfDir: {cni_conf_dir}", text)
    resolv = os.path.join(base, "resolv.conf")
    with open(resolv, "w") as f:
        f.write("options ndots:1 timeout:1 attempts:1\n")
    text = text.replace("  kubernetesVersion:", kubelet_spec(name, resolv) + "  kubernetesVersion:")
    path = os.path.join(base, "cluster.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def pod_spec(name, node, command):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
            "spec": {"nodeName": node, "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "podnet", "image": PODNET_IMAGE, "command": command,
                                     "env": [{"name": "POD_NAME", "value": name}]}]}}


def pod_ip(m, name):
    p, err = m.kubectl_json("get", "pod", name)
    st = (p or {}).get("status", {})
    return (st.get("podIP") if st.get("phase") == "Running" else None), err or st


def csrs_of(m, node):
    """{signer: [(name, approved, issued)]} of node's CSRs."""
    got, err = m.kubectl_json("get", "csr")
    out = {}
    for c in (got or {}).get("items", []):
        spec = c["spec"]
        if spec.get("username") not in (f"system:node:{node}",) and not spec.get("username", "").startswith(
                "system:bootstrap:"):
            continue
        approved = any(x["type"] == "Approved" for x in c.get("status", {}).get("conditions", []))
        out.setdefault(spec["signerName"], []).append((c["metadata"]["name"], approved,
                                                       bool(c.get("status", {}).get("certificate"))))
    return out


def test_a_worker_joins_with_a_token_and_a_pin(master):  # noqa: F811
    env, node, m = master
    # kubenet: protokube writes each node's CNI network where its containerd reads them, and the routes
    node.cni = False
    with open(env.spec) as f:
        text = f.read()
    assert "    conntrackMaxPerCore: 0\n" in text  # kube-proxy in a network namespace (loopdev.SPEC)
    # kube-apiserver verifies the kubelets' serving certificates by the cluster CA (its client CA file, in
    # the pki layout): the worker's kubelet has one from its CSR, signed by the master's protokube
    assert f"  kubeAPIServer:\n    advertiseAddress: {NODE_IP}\n" in text
    # the kubelets' certificates live 5 minutes (the shortest allowed): the worker's kubelet renews its client
    # certificate through its own CSR within the test
    assert f"  pki:\n    dir: {m.pki}\n" in text
    text = text.replace(f"  pki:\n    dir: {m.pki}\n", f"  pki:\n    dir: {m.pki}\n    kubeletCertificateLifetime: 5m\n")
    text = text.replace(f"  kubeAPIServer:\n    advertiseAddress: {NODE_IP}\n",
                        f"  kubeAPIServer:\n    advertiseAddress: {NODE_IP}\n"
                        f"    kubeletCertificateAuthority: {m.pki}/kube-apiserver/ca.crt\n")
    with open(env.spec, "w") as f:
        f.write(text.replace("  kubernetesVersion:", "  networking:\n    provider: kubenet\n"
                             f"    cniConfDir: {node.cni_conf_dir()}\n  kubernetesVersion:"))
    argv = env.argv("once", "a")  # the manifests of this spec before the node starts (no API yet: exit 3)
    argv[argv.index("--internal-ip") + 1] = NODE_IP
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 3) and "kube-apiserver.manifest" in p.stderr, f"once: {p.returncode}\n{p.stderr}"
    node.start()
    wait("kube-apiserver /readyz", lambda: (m.readyz(), "not ready"), 300, node, interval=2)

    # the master's pass, kept running: its join step publishes cluster-info and signs the kubelets' CSRs
    mlog = open(os.path.join(env.base, "master-run.log"), "ab")
    argv = env.argv("run", "a", "--interval", "2s", "--listen", "127.0.0.1:9797")
    argv[argv.index("--internal-ip") + 1] = NODE_IP
    runner = subprocess.Popen(["nsenter", f"--net=/run/netns/{m.netns}", *argv], stdout=subprocess.DEVNULL,
                              stderr=mlog, start_new_session=True)
    wnode = wrun = None
    try:
        out = master_pk(m, env, "token", "create", "--ttl", "1h", "--description", "the test's worker",
                        "--kubeconfig", os.path.join(m.pki, "protokube", "kubeconfig")).stdout
        token = re.search(r"^token: ([a-z0-9]{6}\.[a-z0-9]{16})$", out, re.M).group(1)
        pin = re.search(r"^ca-pin: (sha256:[0-9a-f]{64})$", out, re.M).group(1)

        base = os.path.join(env.base, "worker-" + WORKER)
        os.makedirs(base)
        wns = m.lab.add_host(WORKER, WORKER_IP)
        hosts = os.path.join(base, "hosts")
        with open(hosts, "w") as f:
            f.write("127.0.0.1 localhost\n::1 localhost\n")
        token_file = os.path.join(base, "token")
        fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
        wnode = Node(WORKER, os.path.join(base, "manifests"), None, None, WORKER_IP, netns=wns, hosts_file=hosts,
                     base=os.path.join(base, "node"), kubelet_files=os.path.join(base, "kubelet"), cni=False,
                     own_pod_logs=True)
        spec = worker_spec(env, base, hosts, WORKER, wnode.cni_conf_dir())
        os.makedirs(os.path.join(base, "manifests"))

        t0 = time.monotonic()
        wargv = ["nsenter", f"--net=/run/netns/{wns}", protokube_bin(), "-c", spec, "once", "--role", "worker",
                 "--node-name", WORKER, "--zone", "z1", "--internal-ip", WORKER_IP, "--pool", env.pool,
                 "--mount-root", os.path.join(base, "mnt"), "--manifest-dir", os.path.join(base, "manifests"),
                 "--kubelet-dir", wnode.kubelet_files, "--config-dir", os.path.join(base, "lib"),
                 "--token-file", token_file, "--ca-pin", pin]

        def worker_pass():
            # the pod network waits for the kubelet, which starts from these files: the pass reports that
            # wait (exit 1) until then
            p = subprocess.run(wargv, capture_output=True, text=True, timeout=120)
            done = os.path.exists(os.path.join(wnode.kubelet_files, "kubelet.env"))
            return done, p.stderr[-2000:]
        wait("the worker's pass (its hosts file, the CA with the pin, the kubelet's files)", worker_pass, 120,
             node, interval=2)
        assert re.search(rf"^{re.escape(NODE_IP)}\s+api\.internal\.{re.escape(CLUSTER)}$", open(hosts).read(),
                         re.M), open(hosts).read()
        assert sorted(os.listdir(wnode.kubelet_files)) == ["bootstrap-kubeconfig", "ca.crt", "config.yaml",
                                                               "kubelet.env"]

        # before its kubelet runs, the join waits at the CSR: the token is taken, the pin checked
        jargv = [*wargv[:wargv.index("once")], "join", "plan", *wargv[wargv.index("once") + 1:]]
        j = subprocess.run(jargv, capture_output=True, text=True, timeout=120)
        assert j.returncode == 3 and j.stdout.endswith("join: blocked at csr\n"), (j.stdout, j.stderr)
        assert "csr: waiting: the kubelet has asked for no certificate yet" in j.stdout, j.stdout

        wnode.start()
        # the worker's daemon from now on: its pod network comes once its kubelet joined and its Node has a
        # podCIDR
        wlog = open(os.path.join(base, "protokube-run.log"), "ab")
        wrun = subprocess.Popen([*wargv[:wargv.index("once")], "run", *wargv[wargv.index("once") + 1:],
                                 "--interval", "2s", "--listen", "127.0.0.1:9797"],
                                stdout=subprocess.DEVNULL, stderr=wlog, start_new_session=True)

        def node_ready():
            n, err = m.kubectl_json("get", "node", WORKER)
            conds = {c["type"]: c["status"] for c in (n or {}).get("status", {}).get("conditions", [])}
            return conds.get("Ready") == "True", err or conds
        wait(f"node {WORKER} Ready", node_ready, 240, wnode)
        ready_after = time.monotonic() - t0

        def serving_issued():
            c = csrs_of(m, WORKER)
            return any(a and i for _, a, i in c.get(SERVING, [])), c
        wait("the worker's serving certificate issued", serving_issued, 120, wnode)
        c = csrs_of(m, WORKER)
        assert any(a and i for _, a, i in c.get(CLIENT, [])), c
        # joined: every stage done, the Node Ready (exit 0)
        j = subprocess.run(jargv, capture_output=True, text=True, timeout=120)
        assert j.returncode == 0 and j.stdout.endswith("join: done\n"), (j.stdout, j.stderr)
        assert f"node: ok: Node {WORKER} is Ready\n" in j.stdout, j.stdout
        assert "csr: ok: the kubelet has its client certificate\n" in j.stdout, j.stdout

        # the kubelet runs on what it was given: its client certificate from the CSR, in its cert dir
        pki = os.path.join(wnode.kubelet_files, "pki")
        assert os.path.exists(os.path.join(pki, "kubelet-client-current.pem")), os.listdir(pki)
        assert os.path.exists(os.path.join(wnode.kubelet_files, "kubeconfig"))
        # the worker holds no private key of the CA: none of the cluster's keys is anywhere under its tree
        for root, _, files in os.walk(base):
            for fn in files:
                path = os.path.join(root, fn)
                if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > 1 << 20:
                    continue
                with open(path, "rb") as f:
                    data = f.read()
                if b"PRIVATE KEY" in data:
                    # only the kubelet's own keys: its client and serving pairs
                    assert path.startswith(pki + "/"), path

        # kubenet: each node's CNI network on its podCIDR, and a route to the other's through protokube
        routes = subprocess.run(["ip", "-n", wns, "route", "show", "proto", "0xb5"], capture_output=True,
                                text=True, timeout=10).stdout
        master_cidr = m.kubectl_json("get", "node", "a")[0]["spec"]["podCIDR"]
        assert f"{master_cidr} via {NODE_IP}" in routes, routes

        # a pod on the master answers a pod on the worker across the nodes, by its pod address; the client's
        # log is read through the API from the worker's kubelet
        m.wait_default_service_account()
        server = pod_spec("podnet-server", "a", ["/podnet", "serve", "8080"])
        m.kubectl_ok("create", "-f", "-", stdin=json.dumps(server))
        server_ip = wait("a pod on the master Running with an address", lambda: pod_ip(m, "podnet-server"), 180,
                         node)
        client = pod_spec("podnet-client", WORKER, ["/podnet", "get", server_ip, "8080"])
        m.kubectl_ok("create", "-f", "-", stdin=json.dumps(client))
        client_ip = wait("a pod on the worker Running with an address", lambda: pod_ip(m, "podnet-client"),
                         180, wnode)
        wcidr = m.kubectl_json("get", "node", WORKER)[0]["spec"]["podCIDR"]
        assert ipaddress.ip_address(client_ip) in ipaddress.ip_network(wcidr), (client_ip, wcidr)

        def answered():
            logs = subprocess.run([m.kubectl, "--kubeconfig", m.kubeconfig, "--request-timeout=20s", "logs",
                                   "podnet-client"], capture_output=True, text=True, timeout=60)
            return "got: podnet podnet-server" in logs.stdout, logs.stdout[-500:] + logs.stderr[-500:]
        wait("the worker's pod got the master's pod's answer", answered, 120, wnode)
        # kubectl exec into the worker's pod, through the same verified certificate: a command that ends
        x = subprocess.run([m.kubectl, "--kubeconfig", m.kubeconfig, "--request-timeout=30s", "exec", "podnet-client",
                            "--", "/podnet", "ask", server_ip, "8080"], capture_output=True, text=True, timeout=60)
        assert x.returncode == 0 and x.stdout.strip() == "got: podnet podnet-server", (x.stdout, x.stderr)

        # the client's log above came through the worker kubelet's serving certificate from its CSR, verified
        # by the cluster CA; the master's kubelet still serves a self-signed one (its files are the harness's),
        # and kube-apiserver refuses it: the verification is on
        x = subprocess.run([m.kubectl, "--kubeconfig", m.kubeconfig, "--request-timeout=30s", "logs", "podnet-server"],
                           capture_output=True, text=True, timeout=60)
        assert x.returncode != 0 and "x509" in x.stderr, (x.stdout, x.stderr)

        # kube-proxy on the worker (its static pod from protokube, with the node's credentials) makes a
        # Service's IP reach the master's pod from a pod on the worker
        def proxy_running():
            p, err = m.kubectl_json("get", "pod", "-n", "kube-system", f"kube-proxy-{WORKER}")
            st = (p or {}).get("status", {})
            ready = any(c["type"] == "Ready" and c["status"] == "True" for c in st.get("conditions", []))
            return st.get("phase") == "Running" and ready, err or st.get("containerStatuses")
        wait("kube-proxy on the worker Running and Ready", proxy_running, 180, wnode)
        service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "podnet", "namespace": "default"},
                   "spec": {"selector": {"app": "podnet-server"},
                            "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}}
        m.kubectl_ok("create", "-f", "-", stdin=json.dumps(service))
        cluster_ip = m.kubectl_json("get", "service", "podnet")[0]["spec"]["clusterIP"]
        m.kubectl_ok("create", "-f", "-", stdin=json.dumps(pod_spec("podnet-via-service", WORKER,
                                                                   ["/podnet", "get", cluster_ip, "80"])))

        def answered_via_service():
            logs = subprocess.run([m.kubectl, "--kubeconfig", m.kubeconfig, "--request-timeout=20s", "logs",
                                   "podnet-via-service"], capture_output=True, text=True, timeout=60)
            return "got: podnet podnet-server" in logs.stdout, logs.stdout[-500:] + logs.stderr[-500:]
        wait(f"the worker's pod got the master's pod's answer through the Service {cluster_ip}",
             answered_via_service, 120, wnode)

        # renewal: the kubelet asks for a new client certificate as the node itself (not with the token, gone
        # from its files' use), the master approves and signs it, the kubelet takes it, the Node stays Ready
        first_cert = os.path.realpath(os.path.join(pki, "kubelet-client-current.pem"))

        def renewed():
            lst, err = m.kubectl_json("get", "csr")
            mine = [x for x in (lst or {}).get("items", []) if x["spec"]["signerName"] == CLIENT
                    and x["spec"].get("username") == f"system:node:{WORKER}"]
            issued = [x for x in mine if x.get("status", {}).get("certificate")]
            now = os.path.realpath(os.path.join(pki, "kubelet-client-current.pem"))
            return bool(issued) and now != first_cert, err or [x["metadata"]["name"] for x in mine]
        t_renew = time.monotonic()
        wait("the worker's client certificate renewed through its own CSR", renewed, 330, wnode, interval=5)
        wait(f"node {WORKER} Ready after the renewal", node_ready, 60, wnode)
        print(f"\nworker {WORKER}: Node Ready {ready_after:.1f} s after its first protokube pass; CSRs {c}; "
              f"client certificate renewed {time.monotonic() - t_renew:.0f} s later")
    finally:
        # the pods' sandboxes go through the kubelets (CNI DEL removes their network namespaces): a node
        # stopped under them leaves each pod's /run/netns/cni-* behind
        subprocess.run([m.kubectl, "--kubeconfig", m.kubeconfig, "--request-timeout=20s", "delete", "pod", "--all",
                        "-n", "default", "--wait=true", "--timeout=90s"], capture_output=True, timeout=120)
        if wrun:  # kube-proxy's pod too: its manifest leaves the worker's directory (a host-network pod)
            stop(wrun)
            wrun = None
            wlog.close()
        if wrun:
            stop(wrun)
            wlog.close()
        if wnode:
            errors = wnode.close()
            assert not errors, errors
        stop(runner)
        mlog.close()
