#!/usr/bin/python3
"""The no-ops etcd cluster, end to end: three masters come up, one is terminated and replaced, one reboots,
the DNS server goes away for a while, a member's volume loses its contents, then every member's data is lost
and the cluster is restored from a backup. Each step is asserted; a timeline is printed. Run as root:

    /usr/bin/python3 tests/e2e/scenario.py          (make demo does this)

It cleans up everything it created (namespaces, loop devices, mounts, processes) even on failure or Ctrl-C."""

import calendar
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import CLUSTER, HERE, SUFFIX, Cluster, protokube_bin, run, stop_process  # noqa: E402
from node import k8s_bin  # noqa: E402  (tests/k8s, on the path through cluster)
import configz  # noqa: E402  (tests/k8s: a rendered file against /configz)
import yaml  # noqa: E402

# One master per zone, as kops lays them out: the volumes of member m live in zone-m, and the master that
# replaces b comes up in b's zone. Addresses: the test network's range (netlab.py); the "external" ones are
# only published in DNS, never dialled.
ADDRS = {"a": "198.18.42.11", "b": "198.18.42.12", "c": "198.18.42.13", "d": "198.18.42.14"}
EXTERNAL = {n: "198.19.42." + a.rsplit(".", 1)[1] for n, a in ADDRS.items()}
ZONES = {"a": "zone-a", "b": "zone-b", "c": "zone-c", "d": "zone-b"}
PORTS = {"main": 4001, "events": 4002}


class ScenarioError(AssertionError):
    pass


class Timeline:
    def __init__(self, out):
        self.t0 = time.monotonic()
        self.rows = []
        self.out = out

    def mark(self, what):
        t = time.monotonic() - self.t0
        self.rows.append((t, what))
        print(f"  [{t:7.2f}s] {what}", file=self.out, flush=True)

    def table(self):
        return "\n".join(f"  {t:7.2f}s  {w}" for t, w in self.rows)


def wait_for(what, fn, timeout, interval=0.02):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise ScenarioError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def endpoints(cluster_name, members, by="name"):
    port = PORTS[cluster_name]
    pre = "etcd" if cluster_name == "main" else f"etcd-{cluster_name}"
    if by == "name":
        return ",".join(f"https://{pre}-{m}.{SUFFIX}:{port}" for m in members)
    return ",".join(f"https://{ADDRS[m]}:{port}" for m in members)


def health_endpoint(c, via, url):
    """etcd's own /health (what kubelet probes), each probe capped at 250 ms so that a probe issued while
    the member is still joining does not hide the moment it becomes healthy."""
    p = c.run_in(via, ["curl", "-s", "-m", "0.25", url + "/health"])
    return '"health":"true"' in p.stdout


def healthy(c, via, ep):
    p = c.etcdctl(via, ep, "endpoint", "health")
    return p.returncode == 0 and "unhealthy" not in (p.stdout + p.stderr)


def member_list(c, via, cluster_name, node_names):
    p = c.etcdctl(via, endpoints(cluster_name, node_names, by="ip"), "member", "list", "-w", "json")
    if p.returncode != 0:
        return None
    return {m.get("name"): m["ID"] for m in json.loads(p.stdout)["members"]}


def members_full(c, via, cluster_name, node_names):
    """etcd's member list as etcdctl prints it (name, ID, isLearner, clientURLs), or None."""
    p = c.etcdctl(via, endpoints(cluster_name, node_names, by="ip"), "member", "list", "-w", "json")
    return json.loads(p.stdout)["members"] if p.returncode == 0 else None


def dns_is(c, name, want):
    return c.bind.lookup(name) == sorted(want)


def wait_each_listed(c, name, want, timeout):
    """Every address of want served for name at some poll, and no other address at any poll."""
    allowed, seen = set(want), set()

    def each_seen():
        got = set(c.bind.lookup(name))
        if got - allowed:
            raise ScenarioError(f"{name} serves {sorted(got - allowed)}, which is none of {sorted(allowed)}")
        seen.update(got)
        return seen >= allowed
    wait_for(f"{name} to list each of {sorted(allowed)}", each_seen, timeout, 0.1)


PROBE_ADDR = "198.18.42.60"  # a client of the cluster: its namespace resolves through the test's DNS server


# The kubelet's own lines (klog, 1.20) that mark a static pod's way from its manifest to a running container
KUBELET_STAGES = (("kubelet sees manifest", 'SyncLoop (ADD, "file"): "{pod}'),
                  ("sandbox start", 'No sandbox for pod "{pod}'),
                  ("etcd container started (PLEG, 1 s relist)", 'SyncLoop (PLEG): "{pod}'))


def kubelet_stages(log_path, pod, wall0):
    """{stage: seconds after wall0} of the first kubelet line of each KUBELET_STAGES for pod after wall0. klog's
    header has the month, day and time of day in UTC here (the machine's zone), no year: the year is now's."""
    year = time.gmtime().tm_year
    out = {}
    with open(log_path, errors="replace") as f:
        for line in f:
            m = re.match(r"[IWE](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+)", line)
            if not m:
                continue
            mo, dd, hh, mi, ss, frac = m.groups()
            t = calendar.timegm((year, int(mo), int(dd), int(hh), int(mi), int(ss))) + float("0." + frac)
            if t < wall0:
                continue
            for stage, needle in KUBELET_STAGES:
                if stage not in out and needle.format(pod=pod) in line:
                    out[stage] = t - wall0
    return out


class Scenario:
    def __init__(self, out=sys.stdout, keep_workdir=False, real=False, cluster=None):
        self.real = real
        # a caller's own cluster (the bench's network tags) replaces the default one before it is made: its
        # work directory would otherwise be left behind, empty
        self.c = cluster or Cluster(real=real)
        self.api = {}  # real mode: the API availability figures
        self.keep_workdir = keep_workdir  # the logs stay for a caller that reads them afterwards (bench)
        self.tl = Timeline(out)
        self.out = out
        self.failover = {}
        self.backup = None  # (timestamp, taker) of the backup step 1 found

    def say(self, s):
        print(s, file=self.out, flush=True)

    def step1_cold_start(self):
        self.say("\n1. Cold start: three masters, pool with etcd main+events volumes for members a, b, c")
        self.c.setup()
        self.tl.mark("pool and DNS server ready")
        for n in "abc":
            self.c.add_master(n, ADDRS[n], EXTERNAL[n], ZONES[n])
        self.tl.mark("masters a, b, c started (protokube run + pod runner)")
        for cl in ("main", "events"):
            wait_for(f"etcd {cl} healthy on a, b, c",
                     lambda cl=cl: healthy(self.c, "a", endpoints(cl, "abc")), 90, 0.1)
            ml = wait_for(f"etcd {cl} with 3 members",
                          lambda cl=cl: (lambda m: m if m and len(m) == 3 else None)(
                              member_list(self.c, "a", cl, "abc")), 30)
            self.tl.mark(f"etcd {cl}: 3 healthy members {sorted(ml)}")
        for n in "abc":
            wait_for(f"etcd-{n} -> {ADDRS[n]}", lambda n=n: dns_is(self.c, f"etcd-{n}.{SUFFIX}", [ADDRS[n]]), 20)
            wait_for(f"etcd-events-{n} -> {ADDRS[n]}",
                     lambda n=n: dns_is(self.c, f"etcd-events-{n}.{SUFFIX}", [ADDRS[n]]), 20)
        for name, want in ((f"api.{SUFFIX}", [ADDRS[n] for n in "abc"]),
                           (f"api.{CLUSTER}", [EXTERNAL[n] for n in "abc"])):
            if self.real:
                # A real master joins the API's names once its apiserver answers, and the self-hosted daemons
                # start the pivot (a master leaving them for its turn) as soon as all three do: the three need
                # not be listed at one instant, only each of them at some point, and never another address.
                wait_each_listed(self.c, name, want, 120)
            else:
                wait_for(f"{name} lists a, b, c", lambda name=name, want=want: dns_is(self.c, name, want), 20)
        if self.c.bind.lookup(f"www.{CLUSTER.split('.', 1)[1]}") != ["198.18.42.200"]:
            raise ScenarioError("a record protokube does not own was changed")
        self.tl.mark("DNS: etcd-{a,b,c}, etcd-events-{a,b,c}, api.internal, api resolve to the right nodes")
        p = self.c.etcdctl("a", endpoints("main", "abc"), "put", "/protokube/e2e", "written-at-step-1")
        if p.returncode != 0:
            raise ScenarioError(f"etcdctl put failed: {p.stderr}")
        self.member_ids = {cl: member_list(self.c, "a", cl, "abc") for cl in ("main", "events")}
        # A marker on b's data volume proves later that d got the same disk, not a fresh one.
        b_mnt = os.path.join(self.c.masters["b"].mnt, "master-vol-main-b")
        with open(os.path.join(b_mnt, "e2e-marker"), "w") as f:
            f.write("b")
        self.tl.mark("key written; member IDs recorded")
        if self.real:
            self.api_cold_start()

    # --- the API (real mode)
    def kubectl(self, *args, timeout=20, stdin=None):
        m = self.c.masters["a"] if "a" in self.c.masters else self.c.masters["c"]
        argv = [os.path.join(k8s_bin(), "kubectl"), "--kubeconfig", m.host_kubeconfig("admin"),
                "--server", f"https://api.{SUFFIX}", "--request-timeout=5s", *args]
        return self.c.run_in("probe", argv, timeout=timeout, input=stdin)

    def api_cold_start(self):
        self.c.lab.add_host("probe", PROBE_ADDR)
        wait_for("the API ready through api.internal",
                 lambda: self.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok", 240, 1)
        self.tl.mark(f"API ready through https://api.{SUFFIX} (kubectl, admin kubeconfig, cluster CA)")
        wait_for("nodes a, b, c registered",
                 lambda: sorted(self.kubectl("get", "nodes", "-o", "name").stdout.split()) ==
                 ["node/a", "node/b", "node/c"], 120, 1)
        want = {f"pod/{c}-{n}" for c in ("kube-apiserver", "kube-controller-manager", "kube-scheduler",
                                          "etcd-server", "etcd-server-events") for n in "abc"}
        wait_for("the mirror pods of every static pod",
                 lambda: want <= set(self.kubectl("get", "pods", "-n", "kube-system", "-o", "name").stdout.split()),
                 120, 1)
        self.tl.mark("nodes a, b, c registered; mirror pods of all 15 static pods in kube-system")
        p = self.kubectl("create", "configmap", "e2e", "-n", "default", "--from-literal=step=1")
        if p.returncode != 0:
            raise ScenarioError(f"kubectl create configmap: {p.stderr}")
        self.tl.mark("ConfigMap default/e2e written")
        self.check_configz(self.c.masters.values())

    # --- the components' configuration files (docs/components.md)
    def scheduler_file(self, m):
        """The KubeSchedulerConfiguration master m's kube-scheduler runs: its static pod's, from the pass."""
        with open(os.path.join(m.config_dir, "kube-scheduler", "config.yaml")) as f:
            return f.read()

    def proxy_file(self, m):
        """The KubeProxyConfiguration master m's kube-proxy runs: its static pod's, from the pass."""
        with open(os.path.join(m.config_dir, "kube-proxy", "config.yaml")) as f:
            return f.read()

    def configz_mismatches(self, component, file_text, body, where):
        if not body or not body.startswith("{"):
            return [f"{where}: {component} serves no /configz: {body[:200]!r}"]
        return [f"{where}: {component}: {x}" for x in configz.mismatches(
            file_text, configz.section(body, component), omits_zero=component in configz.OMITS_ZERO)]

    def kubelet_configz_body(self, node):
        """node's kubelet /configz, through the API's node proxy (None: no answer yet)."""
        p = self.kubectl("get", "--raw", f"/api/v1/nodes/{node}/proxy/configz")
        return p.stdout if p.returncode == 0 else None

    def kubelet_configz(self, node, kubelet_dir):
        """Mismatches between node's kubelet /configz and the config.yaml protokube wrote in its --kubelet-dir."""
        with open(os.path.join(kubelet_dir, "config.yaml")) as f:
            text = f.read()
        body = wait_for(f"{node}'s kubelet /configz", lambda: self.kubelet_configz_body(node), 60, 1)
        return self.configz_mismatches("kubelet", text, body, node)

    def served_configz(self, host, component, text, addr):
        """Mismatches between what component serves on /configz at addr (plain HTTP on the node's loopback:
        kube-proxy's metrics address, the 1.20 scheduler's insecure one), asked in host's network namespace, and
        its file's text."""
        body = wait_for(f"{host}'s {component} /configz on {addr}", lambda: (
            lambda p: p.stdout if p.returncode == 0 and p.stdout.startswith("{") else None)(
            self.c.run_in(host, ["curl", "-s", "-m", "2", f"http://{addr}/configz"])), 60, 1)
        return self.configz_mismatches(component, text, body, host)

    def check_configz(self, masters):
        """Every master's kubelet, kube-scheduler and kube-proxy run what the files protokube rendered say, field
        by field."""
        bad = []
        for m in masters:
            bad += self.kubelet_configz(m.name, m.kubelet_dir)
            sched = self.scheduler_file(m)
            addr = yaml.safe_load(sched).get("healthzBindAddress")
            if not addr:
                raise ScenarioError(f"{m.name}: the scheduler's file has no healthzBindAddress (1.20 to 1.22 do)")
            bad += self.served_configz(m.name, "kube-scheduler", sched, addr)
            bad += self.served_configz(m.name, "kube-proxy", self.proxy_file(m), "127.0.0.1:10249")
        if bad:
            raise ScenarioError("a component does not run its rendered file:\n" + "\n".join(bad))
        self.tl.mark(f"/configz of kubelet, kube-proxy, kube-scheduler on {', '.join(m.name for m in masters)}: "
                     "every field of their rendered files")

    def lease_holder(self):
        """The master whose kube-controller-manager holds the leader lease: the lease names the holder by
        hostname (each master's containers have the master's name: tests/k8s/node.py) and a random id."""
        p = self.kubectl("get", "lease", "-n", "kube-system", "kube-controller-manager", "-o",
                         "jsonpath={.spec.holderIdentity}")
        return p.stdout.strip().split("_")[0] if p.returncode == 0 and p.stdout.strip() else None

    def start_api_probe(self):
        """Two clients probe /readyz through api.internal every 50 ms (apiprobe.py): "first" takes the first
        address the resolver returns and waits for it; "any" moves on to the next address after 250 ms."""
        admin = os.path.join(self.c.masters["a"].pki, "admin")
        self.probes = {}
        # a file per session: apiprobe.py appends, and one session's figures must not span the time between two
        self.probe_sessions = getattr(self, "probe_sessions", 0) + 1
        for mode in ("first", "any"):
            out = os.path.join(self.c.workdir, f"apiprobe-{self.probe_sessions}-{mode}.jsonl")
            proc = subprocess.Popen(self.c.lab.exec_argv("probe", [
                "/usr/bin/python3", os.path.join(HERE, "apiprobe.py"), "--name", f"api.{SUFFIX}", "--ca",
                os.path.join(admin, "ca.crt"), "--cert", os.path.join(admin, "client.crt"), "--key",
                os.path.join(admin, "client.key"), "--out", out, "--mode", mode, "--max-seconds", "600"]),
                start_new_session=True)
            self.probes[mode] = (proc, out)

    @staticmethod
    def probe_figures(rows):
        failed = [r for r in rows if not r["ok"]]
        gap, last_ok = 0.0, rows[0]["t"] if rows else 0
        for r in rows:
            if r["ok"]:
                gap = max(gap, r["t"] - last_ok)
                last_ok = r["t"]
        return {"probes": len(rows), "failed": len(failed), "longest gap": gap}

    def stop_api_probe(self):
        """self.api: the "first" client's figures, and the "any" client's under "any"."""
        figures = {}
        for mode, (proc, out) in self.probes.items():
            stop_process(proc)
            figures[mode] = self.probe_figures([json.loads(ln) for ln in open(out) if ln.strip()])
        self.api = dict(figures["first"], any=figures["any"])
        return self.api

    def api_since(self, t):
        """The two clients' figures of the probe session just stopped, from wall-clock time t on."""
        figures = {}
        for mode, (_, out) in self.probes.items():
            rows = [r for r in (json.loads(ln) for ln in open(out) if ln.strip()) if r["t"] >= t]
            figures[mode] = self.probe_figures(rows)
        return dict(figures["first"], any=figures["any"])

    def api_text(self):
        return self.probe_summary(self.api)

    @staticmethod
    def probe_summary(a):
        """The two clients' figures of one stop_api_probe() (the "any" one says whether every server was lost)."""
        y = a["any"]
        return (f"a client of the first address: {a['probes']} probes, {a['failed']} failed, longest gap "
                f"{1000 * a['longest gap']:.0f} ms; a client moving on after 250 ms: {y['probes']} probes, "
                f"{y['failed']} failed, longest gap {1000 * y['longest gap']:.0f} ms")

    def api_after_replacement(self, holder_before):
        wait_for("node d registered", lambda: "node/d" in self.kubectl("get", "nodes", "-o", "name").stdout.split(),
                 120, 1)
        p = self.kubectl("get", "configmap", "e2e", "-n", "default", "-o", "jsonpath={.data.step}")
        if p.stdout.strip() != "1":
            raise ScenarioError(f"ConfigMap default/e2e did not read back: {p.stdout!r} {p.stderr!r}")
        self.tl.mark("node d registered; ConfigMap default/e2e reads back")
        if holder_before == "b":
            holder = wait_for("the controller-manager's lease to leave b",
                              lambda: (lambda h: h if h and h != "b" else None)(self.lease_holder()), 120, 1)
            self.tl.mark(f"kube-controller-manager leader lease moved from b to {holder}")
        else:
            self.tl.mark(f"kube-controller-manager leader lease held by {holder_before} (not b): stays")

    def step2_replace_b(self):
        self.say("\n2. Terminate master b; master d takes over its volumes")
        d = self.c.add_master("d", ADDRS["d"], EXTERNAL["d"], ZONES["d"])
        wait_for("d's protokube serving /healthz", lambda: d.health()[0] in (200, 503), 20)
        self.tl.mark("standby master d started (no volume free yet)")
        holder_before = None
        if self.real:
            holder_before = wait_for("a controller-manager leader", self.lease_holder, 120, 1)
            self.tl.mark(f"kube-controller-manager leader: {holder_before}")
            self.start_api_probe()
        b = self.c.masters["b"]
        b.stop()
        b.unmount_all()
        self.c.lab.remove_host("b")
        self.tl.mark("master b terminated (processes killed, mounts gone, host removed)")
        t0 = time.monotonic()
        self.c.run_pool("release-node", "b")
        self.tl.mark("pool release-node b: b's volumes detached")
        wait_for("etcd-b healthy on d", lambda: health_endpoint(self.c, "d", "http://127.0.0.1:8081"), 60, 0.005)
        t1 = time.monotonic()
        self.failover["total"] = t1 - t0
        self.tl.mark(f"etcd-b healthy on d: failover {1000 * (t1 - t0):.0f} ms")
        wait_for("etcd-events-b healthy on d",
                 lambda: healthy(self.c, "d", f"https://{ADDRS['d']}:4002"), 60, 0.02)
        self.tl.mark("etcd-events-b healthy on d")
        for cl in ("main", "events"):
            ml = wait_for(f"{cl} member list via a, c, d",
                          lambda cl=cl: member_list(self.c, "a", cl, "acd"), 20)
            if ml != self.member_ids[cl]:
                raise ScenarioError(f"etcd {cl} membership changed: before {self.member_ids[cl]}, after {ml}")
        p = self.c.etcdctl("d", f"https://{ADDRS['d']}:4001", "get", "/protokube/e2e", "--print-value-only")
        if p.stdout.strip() != "written-at-step-1":
            raise ScenarioError(f"key not readable from etcd-b on d: {p.stdout!r} {p.stderr!r}")
        marker = os.path.join(d.mnt, "master-vol-main-b", "e2e-marker")
        if not os.path.exists(marker):
            raise ScenarioError("d mounted b's volume but the marker is gone: reformatted?")
        wait_for("etcd-b -> d", lambda: dns_is(self.c, f"etcd-b.{SUFFIX}", [ADDRS["d"]]), 20)
        # d joins the API's names once its apiserver answers (docs/dns.md): in real mode after it started
        wait_for("api.internal lists a, c, d",
                 lambda: dns_is(self.c, f"api.{SUFFIX}", [ADDRS[n] for n in "acd"]), 120 if self.real else 30)
        self.tl.mark("etcd-b rejoined with its data: same member IDs, key readable, no reformat; "
                     "api.internal = a, c, d")
        if self.real:
            self.api_after_replacement(holder_before)
            self.stop_api_probe()
            self.tl.mark(f"API probes through api.internal every 50 ms across the replacement: "
                         f"{self.api_text()}")
        self.failover.update(self.breakdown(d, t0))

    def breakdown(self, d, t0_mono):
        """Stage times of the failover (ms after the release) from the masters' JSON logs and the pod
        runner's events: d's claim, mount and manifest; the first master to repoint etcd-b to d; etcd-b's
        process start."""
        wall0 = time.time() - (time.monotonic() - t0_mono)

        def when(line):
            t = line.get("time", "")
            return calendar.timegm(time.strptime(t[:19], "%Y-%m-%dT%H:%M:%S")) + float(t[19:-1] or 0)

        stages = {}
        for line in d.log_lines():
            msg, ts = line.get("msg", ""), when(line)
            if ts < wall0:
                continue
            for stage, needle in (("claim", "Claimed volume 'vol-main-b'"), ("fsck", "(volume 'vol-main-b'): clean"),
                                  ("mount", "Mounted volume 'vol-main-b'"),
                                  ("manifest", "master-vol-main-b/k8s.io/manifests/etcd.manifest")):
                if needle in msg and stage not in stages:
                    stages[stage] = ts - wall0
        for m in self.c.masters.values():
            for line in m.log_lines():
                if f"etcd-b.{SUFFIX}. A -> {ADDRS['d']}" in line.get("msg", "") and when(line) >= wall0:
                    stages["dns repoint"] = min(stages.get("dns repoint", 1e9), when(line) - wall0)
        if self.real:
            stages.update(kubelet_stages(d.node.path("kubelet.log"), "etcd-server-d_kube-system", wall0))
        else:
            for ev in d.runner_events():
                if ev["what"] == "started" and ev.get("pod") == "etcd-server" and ev["time"] >= wall0:
                    stages.setdefault("etcd start", ev["time"] - wall0)
        return dict(sorted(stages.items(), key=lambda kv: kv[1]))

    def step3_reboot_a(self):
        self.say("\n3. Reboot master a")
        a = self.c.masters["a"]
        a.stop()
        a.unmount_all()
        self.tl.mark("master a down (processes stopped, volumes unmounted)")
        if not healthy(self.c, "c", f"https://{ADDRS['c']}:4001,https://{ADDRS['d']}:4001"):
            raise ScenarioError("etcd main lost quorum with a down")
        a.start(a.port)
        wait_for("etcd-a healthy again", lambda: healthy(self.c, "a", f"https://{ADDRS['a']}:4001"), 60, 0.05)
        wait_for("etcd-events-a healthy again",
                 lambda: healthy(self.c, "a", f"https://{ADDRS['a']}:4002"), 60, 0.05)
        for cl in ("main", "events"):
            ml = member_list(self.c, "c", cl, "acd")
            if ml != self.member_ids[cl]:
                raise ScenarioError(f"etcd {cl} membership changed after reboot: {ml}")
        formats = [l for l in a.log_lines() if "format" in l.get("msg", "").lower() and
                   "not" not in l.get("msg", "").lower() and "mkfs" in l.get("msg", "").lower()]
        if len(formats) > 2:  # the two formats of the cold start only
            raise ScenarioError(f"a formatted again after reboot: {formats}")
        self.tl.mark("master a back: same volumes, no reformat, cluster healthy")

    def step4_dns_outage(self):
        self.say("\n4. The DNS server goes away for a while")
        cnode = self.c.masters["c"]
        self.c.bind.stop()
        self.tl.mark("DNS server stopped")
        os.kill(cnode.protokube.pid, signal.SIGHUP)  # a pass now, rather than at the next tick
        status, body = wait_for("c reports the DNS failure on /healthz",
                                lambda: (lambda s: s if s[0] == 503 else None)(cnode.health()), 30, 0.1)
        self.tl.mark(f"c: /healthz {status}: {body.strip()}")
        if not healthy(self.c, "c", endpoints("main", "acd", by="ip")):
            raise ScenarioError("etcd unhealthy while only DNS is down")
        self.tl.mark("etcd still healthy without DNS")
        self.c.bind.start()
        self.tl.mark("DNS server started again")
        os.kill(cnode.protokube.pid, signal.SIGHUP)
        wait_for("c healthy again", lambda: cnode.health()[0] == 200, 30, 0.1)
        wait_for("records still right", lambda: dns_is(self.c, f"etcd-b.{SUFFIX}", [ADDRS["d"]]), 20)
        self.tl.mark("c recovered: /healthz 200, records right")

    def step5_blank_b(self):
        """docs/etcd-members.md: the member's volume loses everything while the cluster runs; d's passes
        remove the old etcd-b, add a learner, start it with state existing and promote it."""
        self.say("\n5. The contents of member b's volume are destroyed while the cluster runs")
        d = self.c.masters["d"]
        vol = os.path.join(d.mnt, "master-vol-main-b")
        old = member_list(self.c, "a", "main", "acd")
        t0 = time.monotonic()
        for name in os.listdir(vol):
            path = os.path.join(vol, name)
            if os.path.isdir(path) and not os.path.islink(path):
                subprocess.run(["rm", "-rf", "--one-file-system", path], check=True, timeout=60)
            else:
                os.unlink(path)
        self.tl.mark("b's main volume (on d) emptied: etcd data, manifest, everything")

        def voting_again():
            ms = members_full(self.c, "a", "main", "acd")
            if not ms or len(ms) != 3 or any(m.get("isLearner") or not m.get("clientURLs") for m in ms):
                return None
            ids = {m.get("name"): m["ID"] for m in ms}
            return ids if set(ids) == set(old) and ids["etcd-b"] != old["etcd-b"] else None
        ids = wait_for("a new etcd-b voting (removed, added as a learner, promoted)", voting_again, 180, 0.5)
        wait_for("etcd main healthy on a, c, d", lambda: healthy(self.c, "a", endpoints("main", "acd", by="ip")),
                 60, 0.2)
        t1 = time.monotonic()
        p = self.c.etcdctl("d", f"https://{ADDRS['d']}:4001", "get", "/protokube/e2e", "--print-value-only",
                           "--consistency=s")
        if p.stdout.strip() != "written-at-step-1":
            raise ScenarioError(f"key not on the new etcd-b: {p.stdout!r} {p.stderr!r}")
        self.member_ids["main"] = ids
        self.failover["blank member"] = t1 - t0
        self.tl.mark(f"etcd main: three healthy voting members again, etcd-b {old['etcd-b']} -> {ids['etcd-b']}, "
                     f"key intact: {t1 - t0:.1f} s after the volume was emptied, no human step")

    def backups(self, via):
        """The complete backups of etcd main in the state store, as master via's `protokube etcd backups`
        lists them: [(timestamp, taker)]."""
        m = self.c.masters[via]
        p = run([protokube_bin(), "-c", m.spec, "etcd", "backups", "main"], check=False, timeout=30)
        if p.returncode != 0:
            raise ScenarioError(f"protokube etcd backups: {p.stderr}")
        rows = [line.split() for line in p.stdout.splitlines() if line.strip()]
        return [(r[1], r[4]) for r in rows if r[3] != "incomplete"]

    def step0_backup(self):
        """docs/etcd-backups.md: the master holding the leader of etcd main takes the slot's backup."""
        got = wait_for("a backup of etcd main in the state store", lambda: self.backups("a"), 60, 0.5)
        self.backup = got[0]
        self.tl.mark(f"etcd main backup {got[0][0]} taken on schedule by master {got[0][1]} (the leader's)")

    def check_backup_survives(self):
        """After b was terminated and a rebooted, the backup is still there and restorable by d."""
        got = self.backups("d")
        if self.backup not in got:
            raise ScenarioError(f"backup {self.backup} gone from the store: {got}")
        out = os.path.join(self.c.workdir, "backup-check.db")
        p = run([protokube_bin(), "-c", self.c.masters["d"].spec, "etcd", "download", "main", self.backup[0],
                 "--out", out], check=False, timeout=60)
        if p.returncode != 0:
            raise ScenarioError(f"protokube etcd download: {p.stderr}")
        os.unlink(out)
        gone = "terminated in step 2" if self.backup[1] == "b" else (
            "rebooted in step 3" if self.backup[1] == "a" else "still running")
        self.tl.mark(f"backup {self.backup[0]} by {self.backup[1]} ({gone}) still in the store, downloaded and "
                     f"checked through d")

    def main_volumes(self):
        """{member: mount path} of etcd main's volumes, on the masters that hold them now."""
        vols = {}
        for m in self.c.masters.values():
            for name in (os.listdir(m.mnt) if os.path.isdir(m.mnt) else []):
                path = os.path.join(m.mnt, name)
                if name.startswith("master-vol-main-") and os.path.ismount(path):
                    vols[name[len("master-vol-main-"):]] = path
        return vols

    def step6_restore(self):
        """docs/etcd-restore.md: every member volume's etcd data is destroyed; `protokube etcd restore main`
        brings the cluster back from a backup: the snapshot's keys, not the ones written after it."""
        self.say("\n6. Every etcd main volume's data is destroyed; `protokube etcd restore main`")
        holders = "acd"  # b's member runs on d since step 2
        eps = endpoints("main", holders, by="ip")
        p = self.c.etcdctl("a", eps, "put", "/protokube/restore", "in-the-snapshot")
        if p.returncode != 0:
            raise ScenarioError(f"etcdctl put: {p.stderr}")
        a = self.c.masters["a"]
        p = self.c.run_in("a", [protokube_bin(), "-c", a.spec, "etcd", "backup", "main", "--internal-ip",
                                ADDRS["a"], "--tmp-dir", self.c.workdir], timeout=120)
        if p.returncode != 0:
            raise ScenarioError(f"protokube etcd backup: {p.stderr}")
        snapshot = p.stdout.split()[1]
        p = self.c.etcdctl("a", eps, "put", "/protokube/after-snapshot", "lost")
        if p.returncode != 0:
            raise ScenarioError(f"etcdctl put: {p.stderr}")
        vols = self.main_volumes()
        if sorted(vols) != ["a", "b", "c"]:
            raise ScenarioError(f"etcd main volumes mounted: {vols}")
        t0 = time.monotonic()
        for path in vols.values():
            subprocess.run(["rm", "-rf", "--one-file-system", os.path.join(path, "var", "etcd", "data")],
                           check=True, timeout=60)
        self.tl.mark(f"etcd main data destroyed on all three volumes (backup {snapshot} taken just before)")
        p = run([protokube_bin(), "-c", a.spec, "etcd", "restore", "main", snapshot, "--wait", "300s"],
                check=False, timeout=330)
        if p.returncode != 0:
            raise ScenarioError(f"protokube etcd restore: {p.stdout} {p.stderr}")
        rid = p.stdout.split()[0]
        wait_for("etcd main healthy on a, c, d", lambda: healthy(self.c, "a", eps), 120, 0.2)
        t1 = time.monotonic()
        for via in holders:
            ep = f"https://{ADDRS[via]}:4001"
            got = {k: self.c.etcdctl(via, ep, "get", k, "--print-value-only", "--consistency=s").stdout.strip()
                   for k in ("/protokube/restore", "/protokube/after-snapshot")}
            if got != {"/protokube/restore": "in-the-snapshot", "/protokube/after-snapshot": ""}:
                raise ScenarioError(f"after the restore, {via} serves {got}")
        for m, path in vols.items():  # (nothing to move aside: the data was destroyed)
            with open(os.path.join(path, "k8s.io", "restore-main.json")) as f:
                st = json.load(f)
            if st != {"id": rid, "step": "done"} or not os.path.isdir(os.path.join(path, "var", "etcd", "data",
                                                                                   "member")):
                raise ScenarioError(f"member {m}: restore state {st}, or no restored data on its volume")
        self.failover["restore"] = t1 - t0
        self.tl.mark(f"etcd main restored from {snapshot} (restore {rid}): three healthy members, the snapshot's "
                     f"key there, the later one not: {t1 - t0:.1f} s after the data was destroyed, one command")

    def check_tls(self):
        """Every etcd member ran with peer and client TLS on certificates its master issued; no peer or
        client was refused (the replacement d presented etcd-b's certificate and the peers accepted it)."""
        bad = self.c.tls_rejections()
        if bad:
            raise ScenarioError("TLS rejections in etcd's logs:\n  " + "\n  ".join(bad[:20]))
        self.tl.mark("etcd peers and clients over TLS, certificates issued by protokube: no rejection")

    def run(self):
        ok = False
        try:
            self.step1_cold_start()
            self.step0_backup()
            self.step2_replace_b()
            self.step3_reboot_a()
            self.step4_dns_outage()
            self.step5_blank_b()
            self.check_backup_survives()
            self.check_tls()
            self.step6_restore()
            ok = True
        finally:
            self.say("\ncleaning up (namespaces, loop devices, mounts, processes) ...")
            self.c.close(keep=self.keep_workdir or not ok)
            if not ok:
                self.say(f"logs kept in {self.c.workdir}")
        self.say("\nTimeline:\n" + self.tl.table())
        self.say("\nFailover (b released -> etcd-b healthy on d): "
                 f"{1000 * self.failover['total']:.0f} ms; by stage (ms after release):")
        for k, v in self.failover.items():
            if k not in ("total", "blank member", "restore"):
                self.say(f"  {k:12s} {1000 * v:7.0f}")
        if "blank member" in self.failover:
            self.say(f"\nBlank member replaced (volume emptied -> three healthy voting members): "
                     f"{self.failover['blank member']:.1f} s")
        if "restore" in self.failover:
            self.say(f"\nWhole cluster restored (data destroyed on every volume -> three healthy members on the "
                     f"snapshot): {self.failover['restore']:.1f} s")
        if self.api:
            self.say(f"\nAPI availability across the replacement (probes of /readyz through api.{SUFFIX} every "
                     f"50 ms): {self.api_text()}")
        self.say("\nSUCCESS: etcd healed itself: replaced, rebooted and DNS-outage masters converged through DNS, "
                 "and a member whose volume lost its contents was replaced through the etcd API, with no human "
                 "step.")
        return self.failover


def main(make_scenario=Scenario, failures=(ScenarioError,)):
    """Runs a scenario from the command line (also tests/e2e/scenario_aws.py): exit 0 on success, 1 on a
    failed step (an exception of failures: printed, no traceback), 130 when interrupted; everything is
    cleaned up in every case."""
    if os.geteuid() != 0:
        print("the scenario needs root (namespaces, loop devices, mounts)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        real = os.environ.get("PROTOKUBE_DEMO_REAL", "1") != "0"
        (make_scenario(real=real) if make_scenario is Scenario else make_scenario()).run()
    except failures as e:
        print(f"\nFAILED: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted; cleaned up", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
