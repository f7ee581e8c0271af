# SPDX-License-Identifier: Apache-2.0
"""make demo-etcd-upgrade: the masters move etcd from 3.4 to 3.5 and back with no human step
(docs/etcd-versions.md), on three real masters (containerd, kubelet, the 1.20.2 control plane):

1. cold start on registry.k8s.io/etcd:3.4.13-0 (Debian's 3.4), a ConfigMap written through the API;
2. the spec changed to registry.k8s.io/etcd:3.5.16-0 (trixie's 3.5.16) for main and events on every master
   at once (the file rewritten, SIGHUP): main and events upgraded member by member, watched every second
   (never two members of one cluster changing at once), under a 50 ms /readyz probe through api.internal,
   whose failures and longest gap are printed; the master whose member is changing is killed in the middle
   (every process of it, SIGKILL; its mounts gone) and started again, and the upgrade resumes; at the end `etcdctl endpoint
   status` shows 3.5.16 on every member, the cluster version is 3.5.0, the ConfigMap reads back;
3. the spec back at 3.4.13 for main: refused (below the cluster version), /healthz names it, no manifest
   changes;
4. the same with allowDowngrade: the masters restore the pre-upgrade backup at 3.4 (docs/etcd-restore.md):
   every member runs 3.4 again, the cluster version is 3.4.0, the key written before the backup is there and
   the one written after it is not."""
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402
import scenario  # noqa: E402
from cluster import protokube_bin, run  # noqa: E402
from scenario import ADDRS, Scenario, ScenarioError, endpoints, wait_for  # noqa: E402

# a network of its own (PROTOKUBE_UPGRADE_NET to change), so it can run beside the other tests
NET = os.environ.get("PROTOKUBE_UPGRADE_NET", "198.18.50")
cluster.DNS_ADDR = f"{NET}.53"
ADDRS.update({n: f"{NET}.{11 + i}" for i, n in enumerate("abcd")})
scenario.PROBE_ADDR = f"{NET}.60"

IMAGES = {"3.4": "registry.k8s.io/etcd:3.4.13-0", "3.5": "registry.k8s.io/etcd:3.5.16-0"}
CLUSTERS = {"main": 4001, "events": 4002}
UPGRADE_SECONDS = 900  # both clusters, three members each: a bound, not a target


class UpgradeMaster(cluster.Master):
    etcd_images = (IMAGES["3.4"], IMAGES["3.5"])

    def set_spec(self, fn):
        """Rewrites this master's spec (fn: text -> text) and tells the daemon (SIGHUP: it reloads)."""
        with open(self.spec) as f:
            text = fn(f.read())
        with open(self.spec + ".new", "w") as f:
            f.write(text)
        os.replace(self.spec + ".new", self.spec)
        os.kill(self.protokube.pid, signal.SIGHUP)

    def manifest_image(self, cl, member):
        name = "etcd.manifest" if cl == "main" else f"etcd-{cl}.manifest"
        path = os.path.join(self.mnt, f"master-vol-{cl}-{member}", "k8s.io", "manifests", name)
        try:
            with open(path) as f:
                m = re.search(r"^    image: (\S+)$", f.read(), re.M)
            return m.group(1) if m else None
        except FileNotFoundError:
            return None


class UpgradeCluster(cluster.Cluster):
    def __init__(self, *a, **kw):
        super().__init__(*a, tag="pkeu", real=True, **kw)
        self.lab.bridge_addr = f"{NET}.1"

    master_class = UpgradeMaster


class UpgradeScenario(Scenario):
    def __init__(self, out=sys.stdout, keep_workdir=False, real=True):
        super().__init__(out=out, keep_workdir=keep_workdir, real=True, cluster=UpgradeCluster())
        self.figures = {}

    def status(self, cl, member):
        """(version, healthy) of one member as `etcdctl endpoint status` says it; None: no answer."""
        p = self.c.etcdctl("a", f"https://{ADDRS[member]}:{CLIENT_PORT(cl)}", "endpoint", "status", "-w", "json")
        if p.returncode != 0:
            return None
        s = json.loads(p.stdout)[0]["Status"]
        return s["version"], s["leader"] != 0

    def cluster_version(self, cl):
        """etcd's cluster version (GET /version of the first member that answers); None: none did."""
        d = os.path.join(self.c.masters["a"].pki, "kube-apiserver")
        for member in "abc":
            p = self.c.run_in("a", ["curl", "-s", "-m", "3", "--cacert", os.path.join(d, "etcd-ca.crt"), "--cert",
                                    os.path.join(d, "etcd-client.crt"), "--key", os.path.join(d, "etcd-client.key"),
                                    f"https://{ADDRS[member]}:{CLIENT_PORT(cl)}/version"])
            if p.returncode == 0 and p.stdout.startswith("{"):
                return json.loads(p.stdout).get("etcdcluster")
        return None

    def images(self):
        return {(cl, mb): self.c.masters[mb].manifest_image(cl, mb) for cl in CLUSTERS for mb in "abc"}

    def set_all_specs(self, fn):
        for m in self.c.masters.values():
            m.set_spec(fn)

    # --- 2. the upgrade
    def watch_upgrade(self, kill_b=True):
        """Every second until both clusters run 3.5.16 everywhere: at most one member of a cluster changing
        (its manifest at 3.5, it not running 3.5 healthy); with kill_b, master b, once its main manifest
        changed, killed (every process, SIGKILL) and started again (the benchmark's upgrade is left alone)."""
        changes, killed, t0 = [], None, time.monotonic()
        deadline = t0 + UPGRADE_SECONDS
        while time.monotonic() < deadline:
            imgs, done = self.images(), True
            for cl in CLUSTERS:
                changing = []
                for mb in "abc":
                    st = self.status(cl, mb)
                    at35 = imgs[(cl, mb)] == IMAGES["3.5"]
                    runs35 = st is not None and st[0] == "3.5.16" and st[1]
                    if at35 and (cl, mb) not in [c[:2] for c in changes]:
                        changes.append((cl, mb, time.monotonic() - t0))
                        self.tl.mark(f"etcd {cl}: member {mb}'s manifest goes to 3.5.16")
                    if at35 and not runs35:
                        changing.append(mb)
                    done = done and runs35
                if len(changing) > 1:
                    raise ScenarioError(f"etcd {cl}: members {changing} change at once")
                # as soon as b's main manifest changed (a 1 s look may miss the restart itself): c still waits
                if kill_b and cl == "main" and imgs[(cl, "b")] == IMAGES["3.5"] and not killed:
                    b = self.c.masters["b"]
                    errors = b.power_cut()
                    if errors:
                        raise ScenarioError(f"b's power cut: {errors}")
                    killed = time.monotonic()
                    self.tl.mark("master b killed while its member changes (protokube, kubelet, containerd, the "
                                 "containers: SIGKILL; its mounts gone)")
            if killed and self.c.masters["b"].protokube is None and time.monotonic() - killed > 5:
                self.c.masters["b"].start(self.c.masters["b"].port)
                self.tl.mark("master b started again (protokube, containerd, kubelet)")
            if done and kill_b and not killed:
                raise ScenarioError("the upgrade ended before master b could be killed in its middle")
            if done:
                return changes, time.monotonic() - t0
            time.sleep(1)
        raise ScenarioError(f"etcd not upgraded after {UPGRADE_SECONDS} s: {self.images()}; changes {changes}")

    def step_upgrade(self, kill_b=True):
        self.say("\n2. The spec wants etcd 3.5.16 on every master at once: main and events upgraded member by member")
        self.start_api_probe()
        self.set_all_specs(lambda t: t.replace(IMAGES["3.4"], IMAGES["3.5"]))
        self.tl.mark("spec changed to registry.k8s.io/etcd:3.5.16-0 on a, b, c (SIGHUP)")
        changes, took = self.watch_upgrade(kill_b)
        order = {cl: [mb for c, mb, _ in changes if c == cl] for cl in CLUSTERS}
        for cl in CLUSTERS:
            if order[cl] != ["a", "b", "c"]:
                raise ScenarioError(f"etcd {cl} changed in the order {order[cl]}, not the tags' a, b, c")
            wait_for(f"etcd {cl}'s cluster version 3.5.0", lambda cl=cl: self.cluster_version(cl) == "3.5.0", 120, 1)
        self.figures["upgrade"] = dict(self.stop_api_probe(), took=took)
        self.tl.mark(f"main and events on 3.5.16, cluster version 3.5.0, {took:.0f} s after the spec changed; "
                     f"/readyz through api.internal every 50 ms: {self.api_text()}")
        for cl in CLUSTERS:
            p = self.c.etcdctl("a", endpoints(cl, "abc", by="ip"), "endpoint", "status", "-w", "table")
            self.say(p.stdout)
        self.configmap_reads_back("e2e", "1")
        self.backup_is_35()

    def backup_is_35(self):
        """A backup taken now is a 3.5 snapshot (the cluster version it records is 3.5.0: bbolt keeps the key
        and its value side by side), which 3.5's etcdutl reads and restores."""
        a = self.c.masters["a"]
        p = self.c.run_in("a", [protokube_bin(), "-c", a.spec, "etcd", "backup", "main", "--internal-ip",
                                ADDRS["a"], "--tmp-dir", self.c.workdir], timeout=120)
        if p.returncode != 0:
            raise ScenarioError(f"protokube etcd backup: {p.stderr}")
        ts, out = p.stdout.split()[1], os.path.join(self.c.workdir, "after-upgrade.db")
        p = run([protokube_bin(), "-c", a.spec, "etcd", "download", "main", ts, "--out", out], check=False,
                timeout=60)
        if p.returncode != 0:
            raise ScenarioError(f"protokube etcd download: {p.stderr}")
        etcdutl = os.path.join(subprocess.run([os.path.join(cluster.ROOT, "scripts", "etcd-binaries.sh"), "--dir"],
                                              capture_output=True, text=True, check=True,
                                              timeout=30).stdout.strip(), "etcdutl")
        st = run([etcdutl, "snapshot", "status", out, "-w", "json"], check=False, timeout=30)
        restored = os.path.join(self.c.workdir, "after-upgrade-restored")
        rs = run([etcdutl, "snapshot", "restore", out, "--data-dir", restored], check=False, timeout=60)
        with open(out, "rb") as f:
            v35 = b"clusterVersion3.5.0" in f.read()
        os.unlink(out)
        subprocess.run(["rm", "-rf", restored], check=False)
        if st.returncode != 0 or rs.returncode != 0 or not v35:
            raise ScenarioError(f"backup {ts}: etcdutl status {st.stdout} {st.stderr}; restore {rs.stderr}; "
                                f"records cluster version 3.5.0: {v35}")
        self.tl.mark(f"backup {ts} taken after the upgrade: a 3.5 snapshot (cluster version 3.5.0, "
                     f"{json.loads(st.stdout)['totalKey']} keys), restored by etcdutl 3.5.16")

    def configmap_reads_back(self, name, want):
        p = self.kubectl("get", "configmap", name, "-n", "default", "-o", "jsonpath={.data.step}")
        if p.returncode != 0 or p.stdout.strip() != want:
            raise ScenarioError(f"ConfigMap default/{name} did not read back: {p.stdout!r} {p.stderr}")
        self.tl.mark(f"ConfigMap default/{name} reads back")

    # --- 3. the refused downgrade
    def step_refused_downgrade(self):
        self.say("\n3. The spec back at 3.4.13 for main: refused below the cluster version")
        self.set_all_specs(lambda t: t.replace(IMAGES["3.5"], IMAGES["3.4"], 1))
        before = self.images()

        def refused():
            code, body = self.c.masters["a"].health()
            return body if code == 503 and "downgrade" in body else None
        body = wait_for("a's /healthz names the refused downgrade", refused, 60, 1)
        time.sleep(10)  # two passes more: nothing changes
        if self.images() != before:
            raise ScenarioError(f"a manifest changed on a refused downgrade: {self.images()}")
        self.tl.mark(f"refused: /healthz 503 '{body.strip()[:160]}'; no manifest changed")

    # --- 4. the explicit downgrade
    def step_downgrade(self):
        self.say("\n4. allowDowngrade: the masters restore the pre-upgrade backup at 3.4")
        eps = endpoints("main", "abc", by="ip")
        p = self.c.etcdctl("a", eps, "put", "/protokube/after-upgrade", "lost")
        if p.returncode != 0:
            raise ScenarioError(f"etcdctl put: {p.stderr}")
        t0 = time.monotonic()
        self.set_all_specs(lambda t: t.replace(f"image: {IMAGES['3.4']}\n",
                                               f"image: {IMAGES['3.4']}\n      allowDowngrade: true\n", 1))
        self.tl.mark("spec: main at 3.4.13 with allowDowngrade: true")

        def on34():
            sts = [self.status("main", mb) for mb in "abc"]
            return all(s and s[0].startswith("3.4.") and s[1] for s in sts)
        wait_for("every main member on 3.4 again", on34, 600, 2)
        wait_for("main's cluster version 3.4.0", lambda: self.cluster_version("main") == "3.4.0", 120, 1)
        took = time.monotonic() - t0
        got = {k: self.c.etcdctl("a", eps, "get", k, "--print-value-only").stdout.strip()
               for k in ("/protokube/e2e", "/protokube/after-upgrade")}
        if got != {"/protokube/e2e": "written-at-step-1", "/protokube/after-upgrade": ""}:
            raise ScenarioError(f"after the downgrade, main serves {got}")
        self.figures["downgrade"] = took
        self.tl.mark(f"main back on 3.4 from the pre-upgrade backup in {took:.0f} s: the key written before it "
                     "is there, the one written after it is not")
        wait_for("the ConfigMap through the API after the restore",
                 lambda: self.kubectl("get", "configmap", "e2e", "-n", "default", "-o",
                                      "jsonpath={.data.step}").stdout.strip() == "1", 120, 2)
        self.tl.mark("ConfigMap default/e2e (written before the backup) reads back through the API")

    def run(self):
        ok = False
        try:
            self.step1_cold_start()
            self.step_upgrade()
            self.step_refused_downgrade()
            self.step_downgrade()
            ok = True
        finally:
            self.say("\ncleaning up (namespaces, loop devices, mounts, processes) ...")
            self.c.close(keep=self.keep_workdir or not ok)
            if not ok:
                self.say(f"logs kept in {self.c.workdir}")
        self.say("\nTimeline:\n" + self.tl.table())
        u = self.figures["upgrade"]
        self.say(f"\nUpgrade 3.4 -> 3.5 (main and events, member by member): {u['took']:.0f} s; "
                 f"{self.probe_summary(u)}")
        self.say(f"Downgrade through the pre-upgrade backup: {self.figures['downgrade']:.0f} s")
        self.say("\nSUCCESS: etcd upgraded from 3.4 to 3.5 one member at a time, through a killed master, and "
                 "back through its backup, with no human step.")


def CLIENT_PORT(cl):
    return CLUSTERS[cl]


scenario.Cluster = UpgradeCluster

if __name__ == "__main__":
    sys.exit(scenario.main(UpgradeScenario))
