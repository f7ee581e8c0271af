# SPDX-License-Identifier: Apache-2.0
"""Shared helpers of the benchmarks: the binary under test, medians, a local pool on loop devices, a BIND
server on loopback (tests/integration/dnsservers.py), JSON log parsing, and cleanup by PID / by path.

Every benchmark cleans up what it created (mounts under its work directory, loop devices backed by its pool
images, processes it started) even when it fails. Nothing here is a test: figures are printed, never
asserted against a target."""
import calendar
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import urllib.request
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import dnsservers  # noqa: E402

CLUSTER_ZONE = "k8s.test."


def protokube_bin():
    return os.environ.get("PROTOKUBE_BIN", os.path.join(ROOT, "build", "src", "cli", "protokube"))


def env_int(name, default):
    v = os.environ.get(name)
    return int(v) if v and v.strip().isdigit() else default


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread(vals, fmt):
    """'median (min-max)' of vals, each formatted by fmt; 'n/a' for none."""
    vals = [v for v in vals if v is not None]
    if not vals:
        return "n/a"
    return f"{fmt(median(vals))} ({fmt(min(vals))}-{fmt(max(vals))})"


def probe_rows(runs):
    """The rows of the two /readyz probe clients (tests/e2e/apiprobe.py: the client of the first address and
    the one that moves on after 250 ms), from runs [{"first": {...}, "any": {...}}] each with "longest gap"
    (seconds), "failed" and "probes": the gap median (min-max), and the medians of failed / probes."""
    rows = []
    for client, label in (("first", "a client of the first address"), ("any", "a client moving on after 250 ms")):
        rs = [r[client] for r in runs]
        rows += [(f"   {label}: longest gap", spread([r["longest gap"] for r in rs], fmt_ms), "", ""),
                 (f"   {label}: failed / probes",
                  f"{median([r['failed'] for r in rs]):.0f} / {median([r['probes'] for r in rs]):.0f}", "", "")]
    return rows


def repeat_runs(n, one_run):
    """one_run() n times; a failed run is reported, not fatal: the others still count. Returns (results,
    errors); raises only when every run failed."""
    runs, errors = [], []
    for i in range(n):
        try:
            runs.append(one_run())
        except Exception as e:
            errors.append(f"run {i + 1}: {e} ({e.__cause__ or e.__context__})")
    if not runs:
        raise RuntimeError("; ".join(errors))
    return runs, errors


def fmt_ms(s):
    return "n/a" if s is None else f"{1000 * s:.1f} ms"


def fmt_mib(b):
    return "n/a" if b is None else f"{b / (1 << 20):.2f} MiB"


def run(argv, check=True, timeout=120, **kw):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def log_time(line):
    """Seconds since the epoch of a JSON log line's "time" (RFC 3339, milliseconds, UTC)."""
    t = line.get("time", "")
    return calendar.timegm(time.strptime(t[:19], "%Y-%m-%dT%H:%M:%S")) + float(t[19:-1] or 0)


def json_lines(text):
    out = []
    for ln in text.splitlines():
        try:
            out.append(json.loads(ln))
        except ValueError:
            pass
    return out


def stop_pid(proc, grace=5.0):
    """SIGTERM, then SIGKILL after grace seconds; by the PID we started, never by name."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def mounts_under(path):
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].replace("\\040", " ")
            if mp.startswith(path.rstrip("/") + "/"):
                out.append(mp)
    return list(reversed(out))


def unmount_under(path):
    for mp in mounts_under(path):
        if run(["umount", mp], check=False).returncode != 0:
            run(["umount", "-l", mp], check=False)


def detach_loops_under(path):
    p = run(["losetup", "-J"], check=False)
    try:
        for d in json.loads(p.stdout or "{}").get("loopdevices", []):
            if (d.get("back-file") or "").startswith(path.rstrip("/") + "/"):
                run(["losetup", "-d", d["name"]], check=False)
    except ValueError:
        pass


class Workdir:
    """A temporary directory whose mounts and loop devices are undone on exit."""

    def __init__(self, prefix):
        self.path = tempfile.mkdtemp(prefix=f"protokube-bench-{prefix}-")
        os.chmod(self.path, 0o755)  # named reads its files after dropping to nobody

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def sub(self, *names):
        p = os.path.join(self.path, *names)
        os.makedirs(p, exist_ok=True)
        return p

    def close(self):
        unmount_under(self.path)
        detach_loops_under(self.path)
        shutil.rmtree(self.path, ignore_errors=True)


class Bind:
    """named on 127.0.0.1, a high port, zone k8s.test. with dynamic updates for the test key (the set-up of
    tests/integration/dnsservers.py, plus `options`: extra named.conf options), and a client copy of the key
    (mode 0600, as protokube insists) in BIND key-file syntax, for protokube and nsupdate alike."""

    def __init__(self, workdir, options="", zone_options=""):
        self.port = dnsservers.free_port()
        self.srv = start_bind(workdir, self.port, options, zone_options)
        self.key_file = dnsservers.write_key_file(os.path.join(workdir, "client-tsig.key"))

    def stop(self):
        self.srv.stop()

    def nsupdate(self, script_lines, timeout=60):
        script = f"server 127.0.0.1 {self.port}\nzone {CLUSTER_ZONE}\n" + "\n".join(script_lines) + "\nsend\n"
        p = subprocess.run(["nsupdate", "-k", self.key_file], input=script, capture_output=True, text=True,
                           timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"nsupdate failed: {p.stdout}{p.stderr}")

    def lookup(self, name, rtype="A"):
        """Record data served for name (over TCP: a 1000-record RRset does not fit UDP)."""
        p = run(["dig", "@127.0.0.1", "-p", str(self.port), name, rtype, "+short", "+tcp", "+norec", "+time=5",
                 "+tries=1"], check=False)
        return sorted(ln for ln in p.stdout.split() if ln and not ln.startswith(";"))


def start_bind(workdir, port, options="", zone_options=""):
    """named in the foreground as nobody (dnsservers.start_bind with extra options, and zone_options in the
    zone statement)."""
    d = os.path.join(workdir, f"bind-{port}")
    os.makedirs(d, exist_ok=True)
    zone = CLUSTER_ZONE.rstrip(".")
    with open(os.path.join(d, f"{zone}.db"), "w") as f:
        f.write(dnsservers._zone_file(CLUSTER_ZONE, ()))
    dnsservers.write_key_file(os.path.join(d, "tsig.key"), mode=0o640)
    with open(os.path.join(d, "named.conf"), "w") as f:
        f.write(f"""options {{ directory "{d}"; pid-file "{d}/named.pid"; session-keyfile "{d}/session.key";
  managed-keys-directory "{d}"; listen-on port {port} {{ 127.0.0.1; }}; listen-on-v6 {{ none; }};
  recursion no; dnssec-validation no; notify no; {options} }};
controls {{ }};
include "{d}/tsig.key";
zone "{zone}" {{ type primary; file "{d}/{zone}.db";
  update-policy {{ grant {dnsservers.DEFAULT_KEY_NAME} zonesub ANY; }}; {zone_options} }};
""")
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            shutil.chown(os.path.join(root, n), "nobody", "nogroup")
    shutil.chown(d, "nobody", "nogroup")
    log_path = os.path.join(workdir, f"named-{port}.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
                                 "/usr/sbin/named", "-g", "-c", os.path.join(d, "named.conf")],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    srv = dnsservers.DnsTestServer("named", proc, "127.0.0.1", port, CLUSTER_ZONE, dnsservers.DEFAULT_KEY_NAME,
                                   "hmac-sha256", dnsservers.DEFAULT_SECRET, d, log_path, "dig")
    return dnsservers._wait_until_serving(srv)


def spec_text(name, dns_block, clusters=("main", "events")):
    ec = "".join(f"    - {{name: {c}, image: registry.k8s.io/etcd:3.5.16-0}}\n" for c in clusters)
    return (f"apiVersion: protokube/v1alpha1\nkind: Cluster\nmetadata:\n  name: {name}\nspec:\n  cloud: local\n"
            f"  dns:\n{dns_block}  etcdClusters:\n{ec}  kubernetesVersion: 1.31.2\n")


def rfc2136_block(bind, ttl=60):
    return (f"    provider: rfc2136\n    zone: {CLUSTER_ZONE}\n    ttl: {ttl}\n    rfc2136:\n"
            f"      server: \"127.0.0.1:{bind.port}\"\n      tsigKeyFile: {bind.key_file}\n")


def create_pool(pool, cluster, members=("a",), node_members=("a",), size="256M", zone="z1",
                clusters=("main", "events")):
    allm = ",".join(members)
    for cl in clusters:
        for m in node_members:
            run([protokube_bin(), "pool", "create", "--pool", pool, "--id", f"vol-{cl}-{m}", "--size", size,
                 "--zone", zone, "--tag", f"KubernetesCluster={cluster}", "--tag", "k8s.io/role/master=1",
                 "--tag", f"k8s.io/etcd/{cl}={m}/{allm}"])


def prepare_real_masters():
    """What a real-master figure needs before its runs: the Kubernetes binaries and the images (built into their
    caches when absent), the binary under test where tests/e2e/cluster.py reads it, tests/e2e importable."""
    if os.geteuid() != 0:
        raise RuntimeError("needs root (namespaces, loop devices, containerd)")
    os.environ["PROTOKUBE_BIN"] = protokube_bin()
    run([os.path.join(ROOT, "scripts", "k8s-binaries.sh")], timeout=3600)
    run([os.path.join(ROOT, "scripts", "k8s-images.sh"), "registry.k8s.io/etcd:3.4.13-0"], timeout=3600)
    sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))


def child_json(script, args, timeout):
    """`/usr/bin/python3 script args...` in a child process (a scenario whose import moves the test network
    gets a process of its own), whose last line of output is JSON: that, decoded."""
    p = subprocess.run(["/usr/bin/python3", script, *args], capture_output=True, text=True, timeout=timeout)
    lines = p.stdout.strip().splitlines()
    if p.returncode != 0 or not lines:
        name = os.path.basename(script)
        raise RuntimeError(f"{name} {' '.join(args)} exited {p.returncode}: {p.stderr.strip()[-400:]}")
    return json.loads(lines[-1])


def watched(watches, act, t0, timeout):
    """act() while the watches (tests/e2e/scenario_kubeadm.py's Watch: a probe polled in a thread) run, then
    each watch's first success in seconds after t0 (time.monotonic()); stopped in any case; a watch never
    seen raises, with its probe's last error."""
    try:
        act()
        for w in watches:
            w.thread.join(timeout)
    finally:
        for w in watches:
            w.stop()
    out = {}
    for w in watches:
        if w.t is None:
            raise RuntimeError(f"{w.name}: never seen (last probe error: {w.error})")
        out[w.name] = w.t - t0
    return out


def keep_console(console, prefix):
    """The text of the StringIO console in a new file (named prefix...log), for a failed run; its path."""
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=".log")
    with os.fdopen(fd, "w") as f:
        f.write(console.getvalue())
    return path


@contextlib.contextmanager
def scenario_kept_on_failure(s, console, prefix):
    """Around one run of a tests/e2e scenario s writing to the StringIO console: a failure keeps the console in a
    file and the work directory (both named in the error); a success removes the work directory, unless
    BENCH_KEEP_WORKDIR=1 (then its path is printed on stderr: the components' logs, for a breakdown)."""
    ok = False
    try:
        yield
        ok = True
    except Exception as e:
        # the error first: the figure keeps only the end of a child's stderr, and the console ends before it
        console.write(f"\n{type(e).__name__}: {e}\n")
        path = keep_console(console, prefix)
        raise RuntimeError(f"scenario failed: {str(e)[:300]} (console: {path}, work directory {s.c.workdir})")
    finally:
        keep = not ok or os.environ.get("BENCH_KEEP_WORKDIR") == "1"
        s.c.close(keep=keep)
        if keep:
            print(f"bench: work directory kept: {s.c.workdir}", file=sys.stderr)
        elif not mounts_under(s.c.workdir) and os.path.isdir(s.c.workdir):
            detach_loops_under(s.c.workdir)
            shutil.rmtree(s.c.workdir, ignore_errors=True)


class AwsDouble:
    """An AWS double (its script started with --port-file, and args) on loopback: started, asked, stopped. The
    figures subclass it for what they configure and read; one serving HTTPS sets scheme and ssl_context."""
    post_timeout = 120
    scheme = "http"
    ssl_context = None

    def __init__(self, wd, script, log, args=(), port_file="port"):
        port_file = os.path.join(wd, port_file)
        self.log_file = open(log, "w")
        self.proc = subprocess.Popen(["/usr/bin/python3", script, "--port-file", port_file, *args],
                                     stdout=subprocess.DEVNULL, stderr=self.log_file)
        deadline = time.monotonic() + 15
        while not os.path.exists(port_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the AWS double did not start")
            time.sleep(0.05)
        with open(port_file) as f:
            self.port = int(f.read().strip())
        self.url = f"{self.scheme}://127.0.0.1:{self.port}"

    def post(self, path, body):
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=self.post_timeout, context=self.ssl_context) as r:
            return r.read()

    def get_json(self, path, timeout=30):
        with urllib.request.urlopen(self.url + path, timeout=timeout, context=self.ssl_context) as r:
            return json.load(r)

    def stop(self):
        stop_pid(self.proc, grace=15)
        self.log_file.close()


def figure_main(measure, children=None):
    """A figure's module run alone (`/usr/bin/python3 bench/MODULE.py`): its rows and note printed. With the
    arguments of one of its children ({("--run",): fn}), that child instead: fn() in this process, on the
    real masters' test network, its result printed as the one JSON line child_json() reads."""
    child = (children or {}).get(tuple(sys.argv[1:]))
    if child:
        prepare_real_masters()
        print(json.dumps(child()))
        return
    rows, note = measure()
    for row in rows:
        print(" | ".join(row))
    print(note)
