# The package under a real systemd: a Debian bookworm root made by debootstrap from Debian's archive (cached
# outside the repository, keyed by what goes into it), the .deb of `make deb` installed in it with dpkg,
# booted with systemd-nspawn -b (own network namespace: only its loopback), reached with nsenter. Checks that
# protokube.service starts and reaches READY (Type=notify), serves /healthz, reloads on `systemctl reload`,
# stops within its timeout, that its sandbox lets it do its job (the manifest directory, its state, a
# local pool volume where the container has loop devices) and nothing more, that the volumes it mounts are
# seen outside it (no mount namespace of its own); prints `systemd-analyze security protokube.service` and
# requires a reason in the unit for each setting it flags. Checks that the bootstrap kubelet's unit,
# protokube-kubelet.service, is installed disabled and restarts a real kubelet however it ends (its lock
# contention exit 0 included). Each run's loop devices and mounts are released on every way out
# (docs/packaging.md, "What a run leaves behind").
import contextlib
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import ROOT, need_root

SUITE = "bookworm"
BASE_PACKAGES = ["systemd", "systemd-sysv", "dbus"]
CACHE = os.environ.get("PROTOKUBE_NSPAWN_CACHE", "/var/cache/protokube-test/nspawn")
DEB_DIR = os.environ.get("PROTOKUBE_DEB_DIR", os.path.join(ROOT, "build-deb"))
LISTEN = "127.0.0.1:9797"

SPEC = """apiVersion: protokube/v1alpha1
kind: Cluster
metadata:
  name: demo.k8s.test
spec:
  cloud: local
  dns:
    provider: hosts
    hosts: {file: /etc/hosts}
  etcdClusters:
    - {name: main, image: registry.k8s.io/etcd:3.5.16-0}
    - {name: events, image: registry.k8s.io/etcd:3.5.16-0}
  kubernetesVersion: 1.31.2
"""


def run(*argv, check=True, timeout=120, **kw):
    p = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def mirror():
    """The Debian mirror this machine uses (deb822 sources), for debootstrap."""
    with open("/etc/apt/sources.list.d/debian.sources") as f:
        for line in f:
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    pytest.fail("no URIs: line in /etc/apt/sources.list.d/debian.sources")


def the_deb():
    """The package: build-deb/protokube_*.deb, made by `make deb` (scripts/make-deb.sh) when missing or
    older than a file of the source it is built from."""
    for tool in ("dpkg-buildpackage", "dh", "lintian", "scdoc"):
        if not shutil.which(tool):
            pytest.skip(f"the .deb cannot be built here: {tool} is missing (scripts/install-deps.sh)")
    debs = sorted(glob.glob(os.path.join(DEB_DIR, "protokube_*.deb")))
    files = run("git", "-C", ROOT, "ls-files", check=False).stdout.split()
    newest_source = max((os.path.getmtime(os.path.join(ROOT, f)) for f in files
                         if os.path.exists(os.path.join(ROOT, f))), default=float("inf"))
    if not debs or os.path.getmtime(debs[-1]) < newest_source:
        p = run(os.path.join(ROOT, "scripts", "make-deb.sh"), DEB_DIR, check=False, timeout=1800, cwd=ROOT)
        assert p.returncode == 0, f"make deb failed:\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}"
        debs = sorted(glob.glob(os.path.join(DEB_DIR, "protokube_*.deb")))
    assert debs, f"no protokube_*.deb in {DEB_DIR}"
    return debs[-1]


def deb_depends(deb):
    """The package names of the .deb's Depends (first of each alternative), for debootstrap --include:
    dpkg -i in the root has no network and no apt to fetch them."""
    field = run("dpkg-deb", "-f", deb, "Depends").stdout
    return sorted({alt.split("|")[0].split("(")[0].strip() for alt in field.split(",") if alt.strip()})


def base_root(packages):
    """A pristine bookworm minbase root with `packages`, made once per key (suite, mirror, packages,
    debootstrap's version) under CACHE."""
    dv = run("dpkg-query", "-W", "-f=${Version}", "debootstrap").stdout
    key = hashlib.sha256(f"{SUITE} {mirror()} {' '.join(packages)} {dv}".encode()).hexdigest()[:16]
    root = os.path.join(CACHE, f"{SUITE}-{key}")
    if os.path.exists(os.path.join(root, ".complete")):
        return root
    tmp = root + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    p = run("debootstrap", "--variant=minbase", "--include=" + ",".join(packages), SUITE, tmp, mirror(),
            check=False, timeout=1200)
    assert p.returncode == 0, f"debootstrap failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    open(os.path.join(tmp, ".complete"), "w").close()
    shutil.rmtree(root, ignore_errors=True)
    os.rename(tmp, root)
    return root


def children(pid):
    out = []
    for task in glob.glob(f"/proc/{pid}/task/*/children"):
        with open(task) as f:
            out += [int(c) for c in f.read().split()]
    return out


def container_init(nspawn_pid):
    """The container's PID 1 among systemd-nspawn's children: the one in a PID namespace other than nspawn's.
    nspawn's first child (its "outer child", in nspawn's PID namespace) sets the container up and exits once
    the init runs; taken for the init, every later nsenter failed ("cannot open /proc/PID/ns/ipc"), which a
    loaded machine made likely, as the outer child lives longer there."""
    try:
        own = os.readlink(f"/proc/{nspawn_pid}/ns/pid")
    except OSError:
        return None
    for kid in children(nspawn_pid):
        try:
            if os.readlink(f"/proc/{kid}/ns/pid") != own:
                return kid
        except OSError:
            continue  # gone meanwhile: the outer child
    return None


# --- what a run owns, and its teardown
#
# Every run gets a work directory /tmp/pk-nspawn-XXXXXXXX; its name (the token) is also in the path of the
# pool inside the container (/var/lib/protokube/<token>/pool), so the loop devices the daemon attaches
# there are ours by name: no other test's images (tests/integration/loopdev.py, the AWS double's) have it.
# The kernel reports a backing file as the process that attached it saw it, relative to a mount of the
# container's namespace ("/var/lib/protokube/<token>/pool/vol-main-a.img", "(deleted)" once removed), not
# under the work directory; so a loop device is ours when its backing path names the token, lies under the
# work directory, or is the (device, inode) of one of our images.
TOKEN_RE = re.compile(r"/(pk-nspawn-[A-Za-z0-9_]{8})/")
TEARDOWN_SECONDS = 30


def process_start(pid):
    """The start time of pid (field 22 of /proc/PID/stat), or None once it has ended (a zombie has): a PID
    is only the same process with the same start time."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return None if fields[0] in ("Z", "X") else fields[19]
    except (OSError, IndexError):
        return None


def attached_loops():
    """[(device, backing path, (major, minor, inode) or None)] of every loop device: the paths from sysfs
    (always there), the identities from losetup (LOOP_GET_STATUS64) where it can tell."""
    idents = {}
    p = run("losetup", "-J", "-l", "-O", "NAME,BACK-INO,BACK-MAJ:MIN", check=False)
    if p.returncode == 0 and p.stdout.strip():
        for d in json.loads(p.stdout)["loopdevices"]:
            majmin = (d.get("back-maj:min") or "").strip()
            if re.fullmatch(r"\d+:\d+", majmin) and d.get("back-ino") is not None:
                idents[d["name"]] = (*map(int, majmin.split(":")), int(d["back-ino"]))
    out = []
    for path in glob.glob("/sys/block/loop*/loop/backing_file"):
        dev = "/dev/" + path.split("/")[3]
        try:
            with open(path) as f:
                out.append((dev, f.read().strip(), idents.get(dev)))
        except OSError:
            continue  # detached meanwhile
    return out


def our_loops(work, token):
    """The loop devices of the run with this work directory and token (above)."""
    images = set()
    for img in glob.glob(os.path.join(work, "root", "var", "lib", "protokube", token, "pool", "*.img")):
        try:
            st = os.stat(img)
        except OSError:
            continue
        images.add((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino))
    return [dev for dev, back, ident in attached_loops()
            if f"/{token}/" in back or back.startswith(work + "/") or ident in images]


def mounts_under(prefix):
    """Mount points at or below prefix in our (the host's) namespace, deepest first."""
    out = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            target = line.split()[4].replace("\\040", " ")
            if target == prefix or target.startswith(prefix.rstrip("/") + "/"):
                out.add(target)
    return sorted(out, key=len, reverse=True)


def stop_pid(pid, start, timeout=60):
    """SIGTERM to a systemd-nspawn we started (halts its container), SIGKILL after timeout; pid is only
    signalled while it is still the process that started at `start`."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 30)):
        if process_start(pid) != start:
            return True
        os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and process_start(pid) == start:
            time.sleep(0.1)
    return process_start(pid) != start


def release(work, token):
    """Unmounts what is mounted under work and detaches every loop device of the run (retrying while the
    container's namespace lets go of them); returns what is still there."""
    left = []
    for m in mounts_under(work):
        if run("umount", m, check=False, start_new_session=True).returncode != 0:
            run("umount", "-l", m, check=False, start_new_session=True)
    deadline = time.monotonic() + TEARDOWN_SECONDS
    while True:
        loops = our_loops(work, token)
        if not loops or time.monotonic() > deadline:
            break
        for dev in loops:  # a device still open somewhere is detached on its last close (autoclear)
            run("losetup", "-d", dev, check=False, start_new_session=True)
        time.sleep(0.2)
    left += [f"loop device {d} (pool of {token}) is still attached" for d in loops]
    left += [f"{m} is still mounted" for m in mounts_under(work)]
    return left


@contextlib.contextmanager
def signals_deferred():
    """SIGINT/SIGTERM during a teardown are held until it is done, then raised as KeyboardInterrupt."""
    got = []
    previous = {s: signal.signal(s, lambda signum, frame: got.append(signum))
                for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    if got:
        raise KeyboardInterrupt(f"signal {got[0]} came during the teardown")


def sweep_stale():
    """What an earlier run killed with SIGKILL left behind (its owner PID is gone): its container, mounts,
    loop devices and directory; and loop devices naming a token whose directory no longer exists."""
    for work in glob.glob(os.path.join(tempfile.gettempdir(), "pk-nspawn-*")):
        token = os.path.basename(work)
        try:
            with open(os.path.join(work, "owner")) as f:
                owner_pid, owner_start = f.read().split()
        except (OSError, ValueError):
            continue  # not (yet) one of ours: a run writes its owner first
        if process_start(int(owner_pid)) == owner_start:
            continue  # a live run, maybe concurrent
        try:
            with open(os.path.join(work, "nspawn")) as f:
                pid, start = f.read().split()
            stop_pid(int(pid), start)
        except (OSError, ValueError):
            pass
        left = release(work, token)
        shutil.rmtree(work, ignore_errors=True)
        print(f"swept {work} of a killed run", *left, sep="\n  ", file=sys.stderr)
    for dev, back, _ in attached_loops():
        m = TOKEN_RE.search(back)
        if m and not os.path.exists(os.path.join(tempfile.gettempdir(), m.group(1))):
            run("losetup", "-d", dev, check=False)


class Container:
    """A booted copy of the root; run() executes a command inside it (nsenter into its namespaces)."""

    def __init__(self, work, token, name):
        self.work, self.token, self.root = work, token, os.path.join(work, "root")
        self.pool = f"/var/lib/protokube/{token}/pool"
        self.log = open(os.path.join(work, "console.log"), "w")
        # --private-network: its own network namespace (only lo), so 127.0.0.1:9797 is the container's.
        # --register=no: there is no systemd-machined on the host (else "Failed to open system bus").
        # --capability=CAP_SYSLOG: a kubelet (test_bootstrap_kubelet_unit_restarts_always) opens /dev/kmsg for
        # its OOM watcher and dies without it; with kernel.dmesg_restrict=1 that needs CAP_SYSLOG, which
        # nspawn drops by default and a machine's root has. (protokube.service's bounding set drops it again.)
        # A session of its own: a Ctrl-C on the terminal reaches pytest, whose teardown halts it.
        self.nspawn = subprocess.Popen(
            ["systemd-nspawn", "-q", "-b", "-D", self.root, "--register=no", "--keep-unit", "--console=pipe",
             "--private-network", "--bind=/dev/loop-control", "--capability=CAP_SYSLOG", "-M", name],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.start = process_start(self.nspawn.pid)
        with open(os.path.join(work, "nspawn"), "w") as f:  # for sweep_stale() if we get SIGKILLed
            f.write(f"{self.nspawn.pid} {self.start}\n")
        self.pid = None

    def wait_started(self):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not self.pid:
            if self.nspawn.poll() is not None:
                pytest.fail(f"systemd-nspawn exited {self.nspawn.returncode}:\n{self.log_text()}")
            self.pid = container_init(self.nspawn.pid)
            time.sleep(0.1)
        assert self.pid, "systemd-nspawn started no container:\n" + self.log_text()

    def log_text(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()[-6000:]

    def run(self, *argv, check=True, timeout=60):
        return run("nsenter", "-t", str(self.pid), "-m", "-p", "-u", "-i", "-n", *argv, check=check,
                   timeout=timeout)

    def wait_booted(self):
        # 180 s: a boot took over 120 s once on a machine loaded by other work beside the suite
        deadline, state, why = time.monotonic() + 180, "", ""
        while time.monotonic() < deadline:
            if self.nspawn.poll() is not None:
                pytest.fail(f"systemd-nspawn exited {self.nspawn.returncode} before the container booted:\n"
                            f"{self.log_text()}")
            if not os.path.exists(f"/proc/{self.pid}"):  # not the init after all: look again
                self.pid = container_init(self.nspawn.pid) or self.pid
            p = self.run("systemctl", "is-system-running", check=False)
            state, why = p.stdout.strip(), p.stderr.strip()
            if state in ("running", "degraded"):
                return state
            time.sleep(0.5)
        pytest.fail(f"the container did not boot (is-system-running: {state}; {why}):\n{self.log_text()}")

    def stop(self):
        if self.nspawn.poll() is None:
            stop_pid(self.nspawn.pid, self.start)  # SIGTERM halts the container
            self.nspawn.wait(timeout=30)
        self.log.close()


def install(base, deb, root):
    """root: a copy of base with the package installed and the files a real machine would have."""
    run("cp", "-a", "--reflink=auto", base, root, timeout=600)
    # not under /tmp: systemd-nspawn mounts a tmpfs there
    os.makedirs(os.path.join(root, "var", "tmp", "deb"), exist_ok=True)
    shutil.copy(deb, os.path.join(root, "var", "tmp", "deb"))
    p = run("systemd-nspawn", "-q", "-D", root, "--register=no", "--keep-unit", "--private-network",
            "-M", "pk-nspawn-dpkg", "dpkg", "-i", "/var/tmp/deb/" + os.path.basename(deb), check=False,
            timeout=300)
    assert p.returncode == 0, f"dpkg -i failed:\n{p.stdout}\n{p.stderr}"
    # a debootstrap root has no /etc/hosts (an installed machine has): the hosts DNS provider keeps it
    with open(os.path.join(root, "etc", "hosts"), "w") as f:
        f.write("127.0.0.1\tlocalhost\n")


@contextlib.contextmanager
def booted(base, deb, name):
    """A container of its own with the package installed, booted; on every way out (the body done or
    failed, a timeout, Ctrl-C, SIGTERM) the container is halted, its mounts unmounted, its loop devices
    detached and its directory removed. What is then still there fails the run."""
    work = tempfile.mkdtemp(prefix="pk-nspawn-")
    token = os.path.basename(work)
    with open(os.path.join(work, "owner"), "w") as f:
        f.write(f"{os.getpid()} {process_start(os.getpid())}\n")

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)  # a killed CI job still cleans up
    c, done, left = None, False, []
    try:
        install(base, deb, os.path.join(work, "root"))
        c = Container(work, token, name)
        c.deb = deb
        c.wait_started()
        c.state = c.wait_booted()
        yield c
        done = True
    finally:
        try:
            with signals_deferred():
                try:
                    if c:
                        c.stop()
                finally:
                    left = release(work, token)
                    shutil.rmtree(work, ignore_errors=True)
        finally:
            signal.signal(signal.SIGTERM, previous)
        if left and not done:
            print("teardown after a failure:", *left, sep="\n  ", file=sys.stderr)
    assert not left, "the teardown left:\n" + "\n".join(left)


@pytest.fixture(scope="module")
def base_and_deb():
    need_root()
    for tool in ("debootstrap", "systemd-nspawn", "nsenter", "losetup"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is missing: scripts/install-deps.sh installs it")
    sweep_stale()
    deb = the_deb()
    return base_root(sorted(set(BASE_PACKAGES + deb_depends(deb)))), deb


@pytest.fixture(scope="module")
def container(base_and_deb):
    with booted(*base_and_deb, "pk-nspawn-test") as c:
        yield c


def test_package_installed_as_debian_ships_it(container):
    c = container
    version = run("dpkg-deb", "-f", c.deb, "Version").stdout.strip()
    assert c.run("protokube", "version").stdout.strip() == f"protokube {version}"
    # the conffiles, the state directories with their modes, man pages, completion, the unit
    conffiles = c.run("dpkg-query", "-W", "-f=${Conffiles}", "protokube").stdout
    assert "/etc/protokube/cluster.yaml.example" in conffiles and "/etc/default/protokube" in conffiles
    modes = c.run("stat", "-c", "%n %a %U", "/var/lib/protokube", "/var/lib/protokube/pool",
                  "/etc/kubernetes/manifests").stdout.split("\n")
    assert modes[:3] == ["/var/lib/protokube 700 root", "/var/lib/protokube/pool 700 root",
                         "/etc/kubernetes/manifests 755 root"], modes
    for path in ("/usr/share/man/man8/protokube.8.gz", "/usr/share/man/man5/protokube-cluster.5.gz",
                 "/usr/share/bash-completion/completions/protokube", "/lib/systemd/system/protokube.service"):
        c.run("test", "-f", path)
    # enabled by the package, but skipped until the operator writes the spec
    assert c.run("systemctl", "is-enabled", "protokube").stdout.strip() == "enabled"
    s = show(c, "ActiveState", "ConditionResult")
    assert s == {"ActiveState": "inactive", "ConditionResult": "no"}, s


def show(c, *props, unit="protokube.service"):
    out = c.run("systemctl", "show", unit, *[f"-p{p}" for p in props]).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def start_with_pool(c):
    """The spec, the node's environment, a local pool of two volumes in the run's own pool directory, and
    `systemctl start protokube`; returns how long the start took."""
    c.run("sh", "-c", f"cat >> /etc/default/protokube <<'EOF'\nPROTOKUBE_NODE_NAME=a\nPROTOKUBE_ZONE=z1\n"
          f"PROTOKUBE_INTERNAL_IP=192.0.2.11\nPROTOKUBE_LISTEN={LISTEN}\nPROTOKUBE_INTERVAL=2s\n"
          f"PROTOKUBE_POOL={c.pool}\nEOF")
    c.run("sh", "-c", f"cat > /etc/protokube/cluster.yaml <<'EOF'\n{SPEC}EOF")
    for cl in ("main", "events"):
        c.run("protokube", "pool", "create", "--pool", c.pool, "--id", f"vol-{cl}-a", "--size", "64M",
              "--zone", "z1", "--tag", "KubernetesCluster=demo.k8s.test", "--tag", "k8s.io/role/master=1",
              "--tag", f"k8s.io/etcd/{cl}=a/a")
    # The container's /dev is a tmpfs without udev: a loop device the pool attaches gets its node in the
    # host's devtmpfs only, and the pass times out waiting for /dev/loopN. Give it the nodes (block major
    # 7), as the administrator of such a container would.
    c.run("sh", "-c", "for i in $(seq 0 255); do [ -e /dev/loop$i ] || mknod /dev/loop$i b 7 $i; done")
    t0 = time.monotonic()
    p = c.run("systemctl", "start", "protokube", check=False, timeout=60)
    if p.returncode != 0:
        print(c.run("journalctl", "-u", "protokube", "--no-pager", check=False).stdout)
    assert p.returncode == 0, p.stderr
    return time.monotonic() - t0


@pytest.fixture(scope="module")
def started(container):
    container.start_seconds = start_with_pool(container)
    return container


def healthz(c):
    return c.run("bash", "-c", f"exec 3<>/dev/tcp/{LISTEN.replace(':', '/')} && "
                 "printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3", check=False).stdout


def test_starts_ready_and_serves_healthz(started):
    c = started
    # Type=notify: `systemctl start` returns once READY=1 came; active (running) then means READY
    s = show(c, "Type", "ActiveState", "SubState", "StatusText", "MainPID")
    assert s["Type"] == "notify" and s["ActiveState"] == "active" and s["SubState"] == "running", s
    print(f"started in {c.start_seconds:.1f} s; STATUS={s['StatusText']}")
    answer = healthz(c)
    assert re.match(r"HTTP/1\.[01] (200|503)", answer), answer
    print("/healthz:", answer.splitlines()[-1] if answer else answer)


def pass_outcome(c, timeout=180):
    """The journal once the first pass has ended (converged, not yet, failed), or after `timeout` s."""
    deadline, j = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        j = c.run("journalctl", "-u", "protokube", "--no-pager", "-o", "cat", check=False).stdout
        if re.search(r"Pass \d+ (converged|not converged|failed)", j):
            return j
        time.sleep(1)
    return j


def test_sandbox_lets_it_do_its_job(started):
    c = started
    journal = pass_outcome(c)
    print(journal[-5000:])
    manifests = c.run("ls", "-l", "/etc/kubernetes/manifests").stdout
    print(manifests)
    assert "kube-apiserver.manifest" in manifests, journal[-3000:]
    assert "Read-only file system" not in journal and "Permission denied" not in journal, journal[-3000:]


def test_sandbox_lets_it_mount_a_pool_volume(started):
    # LOOP_CTL_GET_FREE + LOOP_CONFIGURE through /dev/loop-control (bound into the container), mkfs.ext4 of
    # the blank image, the mount, the etcd manifest on the volume and its link: all through the unit's
    # seccomp filter, capability bounding set and DevicePolicy=closed + DeviceAllow=block-*. (Without the
    # /dev/loopN nodes start_with_pool makes, the pass fails with "Volume 'vol-main-a': wait-device
    # failed: timed out".)
    c = started
    journal = pass_outcome(c)
    for vol in ("vol-main-a", "vol-events-a"):
        assert re.search(rf"Mounted volume '{vol}' \(/dev/loop\d+\) on '/mnt/master-{vol}'", journal), journal
    assert "Linked '/etc/kubernetes/manifests/etcd.manifest'" in journal, journal
    # the pool is the run's own: its images back the loop devices, under a path no other test uses
    loops = our_loops(c.work, c.token)
    assert len(loops) == 2, (loops, run("losetup", "-a").stdout)


def test_mounts_are_seen_outside_the_service(started):
    # The defect this test found in the first unit: ProtectSystem=, ReadWritePaths=, PrivateTmp= ... gave
    # the service a mount namespace of its own, which systemd makes a slave of the host's
    # (systemd.exec(5), MountFlags=), so the volumes were mounted where the kubelet does not look and
    # /etc/kubernetes/manifests/etcd.manifest dangled. The unit now uses no option implying one.
    c = started
    pass_outcome(c)
    # as the kubelet sees them: from PID 1's namespace, not the service's
    for vol in ("vol-main-a", "vol-events-a"):
        fstype = c.run("findmnt", "-n", "-o", "FSTYPE", f"/mnt/master-{vol}", check=False).stdout.strip()
        assert fstype == "ext4", (vol, c.run("findmnt", "-l", check=False).stdout)
    manifest = c.run("cat", "/etc/kubernetes/manifests/etcd.manifest", check=False)
    assert manifest.returncode == 0 and "etcd" in manifest.stdout, manifest.stderr
    pid = show(c, "MainPID")["MainPID"]
    ns = c.run("readlink", f"/proc/{pid}/ns/mnt", "/proc/1/ns/mnt").stdout.split()
    assert len(ns) == 2 and ns[0] == ns[1], f"the service has a mount namespace of its own: {ns}"


PROBE = r"""#!/bin/sh
# One line per probe: NAME allowed | NAME denied: MESSAGE. Every probe is harmless where it is allowed.
probe() {
        name=$1; shift
        if out=$("$@" 2>&1); then echo "$name allowed"; else echo "$name denied: $out" | head -n 1; fi
}
probe mount-namespace unshare -m true
probe net-namespace unshare -n true
probe loop-control sh -c ': < /dev/loop-control'
probe packet-socket perl -e 'socket(my $s, 17, 3, 0) or die "$!\n"'
probe inet-socket perl -e 'socket(my $s, 2, 1, 0) or die "$!\n"'
probe realtime chrt -f 1 true
f=/run/pk-probe/f-$$
probe suid-bit sh -c "touch $f && chmod u+s $f; r=\$?; rm -f $f; exit \$r"
grep -E '^(CapBnd|NoNewPrivs|Seccomp):' /proc/self/status
echo "mntns $(readlink /proc/self/ns/mnt)"
"""
# Expected of the unit's sandbox; the control (the same script in a unit without sandboxing) must be
# allowed each of them, so that a denial is the unit's doing, not the container's.
DENIED = ("mount-namespace", "net-namespace", "packet-socket", "realtime", "suid-bit")
ALLOWED = ("loop-control", "inet-socket")
CAPS = {"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3, "CAP_KILL": 5,
        "CAP_NET_BIND_SERVICE": 10, "CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13, "CAP_SYS_MODULE": 16,
        "CAP_SYS_RAWIO": 17, "CAP_SYS_PTRACE": 19, "CAP_SYS_ADMIN": 21, "CAP_SYS_BOOT": 22,
        "CAP_SYS_TIME": 25, "CAP_MKNOD": 27, "CAP_SYSLOG": 34, "CAP_BPF": 39}


def probe_in(c, unit, service_lines):
    """Runs PROBE as unit (a oneshot service with service_lines) in the container; {name: line}."""
    out = f"/run/pk-probe/{unit}.out"
    text = "\n".join(["[Service]", "Type=oneshot", "ExecStart=/bin/sh /run/pk-probe/probe.sh",
                      f"StandardOutput=file:{out}", *service_lines]) + "\n"
    c.run("sh", "-c", f"cat > /run/systemd/system/{unit} <<'EOF'\n{text}EOF")
    c.run("systemctl", "daemon-reload")
    p = c.run("systemctl", "start", unit, check=False)
    assert p.returncode == 0, (p.stderr, c.run("journalctl", "-u", unit, "--no-pager", check=False).stdout)
    lines = c.run("cat", out).stdout.splitlines()
    print(f"{unit}:", *lines, sep="\n  ")
    return {line.split()[0].rstrip(":"): line for line in lines if line.strip()}


def test_sandbox_allows_nothing_more(started):
    # The unit's own [Service] sandbox lines, as installed, in a oneshot copy that runs PROBE: the same
    # seccomp filter, capabilities, device policy, namespaces as the daemon, which cannot run probes.
    c = started
    unit = c.run("cat", "/lib/systemd/system/protokube.service").stdout
    body = unit.split("[Service]", 1)[1].split("\n[", 1)[0]
    skip = ("Type", "ExecStart", "ExecReload", "Restart", "RestartSec", "WatchdogSec", "NotifyAccess",
            "TimeoutStartSec", "TimeoutStopSec")
    sandbox = [ln for ln in body.splitlines()
               if ln.strip() and not ln.startswith("#") and ln.split("=", 1)[0] not in skip]
    # Not probed: DevicePolicy=. On this host (cgroup v1) the container's devices hierarchy is read-only,
    # so systemd in it cannot apply a device policy: a closed one lets /dev/kmsg open there.
    c.run("sh", "-c", f"mkdir -p /run/pk-probe && cat > /run/pk-probe/probe.sh <<'EOF'\n{PROBE}EOF")
    control = probe_in(c, "pk-probe-control.service", [])
    boxed = probe_in(c, "pk-probe-sandbox.service", sandbox)
    for name in DENIED + ALLOWED:
        assert control[name] == f"{name} allowed", control[name]
    for name in DENIED:
        assert boxed[name].startswith(f"{name} denied:"), boxed[name]
    for name in ALLOWED:
        assert boxed[name] == f"{name} allowed", boxed[name]
    # the capability bounding set is the unit's, none of the others
    want = re.search(r"^CapabilityBoundingSet=(.*)$", unit, re.M).group(1).split()
    got = int(boxed["CapBnd"].split()[1], 16)
    assert got == sum(1 << CAPS[n] for n in want), (hex(got), want)
    assert boxed["NoNewPrivs"].split()[1] == "1" and boxed["Seccomp"].split()[1] == "2", boxed
    # no mount namespace of its own (the defect above), unlike what the options it gave up would do
    pid1 = c.run("readlink", "/proc/1/ns/mnt").stdout.strip()
    assert boxed["mntns"] == f"mntns {pid1}", (boxed["mntns"], pid1)


def test_every_exposure_is_justified_in_the_unit(started):
    # `systemd-analyze security` of the installed unit, printed for the reader of the log; every setting
    # it flags (✗) must have its "# exposure NAME: reason" line in the unit (and docs/packaging.md).
    c = started
    out = c.run("systemd-analyze", "security", "--no-pager", "protokube.service", check=False).stdout
    print(out)
    flagged = re.findall(r"^✗ (\S+)", out, re.M)
    assert flagged, out
    unit = c.run("cat", "/lib/systemd/system/protokube.service").stdout
    justified = set(re.findall(r"^# exposure (\S+?): ", unit, re.M))
    assert not set(flagged) - justified, f"flagged without a reason in the unit: {set(flagged) - justified}"
    assert not justified - set(flagged), f"a reason for what is not flagged: {justified - set(flagged)}"
    with open(os.path.join(ROOT, "docs", "packaging.md")) as f:
        doc = f.read().replace("\\|", "|")  # a table cell escapes its |
    assert not [n for n in flagged if f"`{n}`" not in doc], "docs/packaging.md lacks some of " + str(flagged)
    level = re.search(r"Overall exposure level for protokube.service: ([\d.]+)", out)
    print("exposure:", level and level.group(1))


def test_reload_and_stop(started):
    c = started
    pid = show(c, "MainPID")["MainPID"]
    c.run("systemctl", "reload", "protokube")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        j = c.run("journalctl", "-u", "protokube", "--no-pager", "-o", "cat", check=False).stdout
        if "SIGHUP: reloading the spec" in j:
            break
        time.sleep(0.5)
    assert "SIGHUP: reloading the spec" in j, j[-3000:]
    s = show(c, "ActiveState", "MainPID")
    assert s == {"ActiveState": "active", "MainPID": pid}, s  # the same process, still running

    t0 = time.monotonic()
    c.run("systemctl", "stop", "protokube", timeout=700)
    took = time.monotonic() - t0
    s = show(c, "ActiveState", "Result", "ExecMainStatus", "TimeoutStopUSec")
    print(f"stopped in {took:.1f} s: {s}")
    assert s["ActiveState"] == "inactive" and s["Result"] == "success" and s["ExecMainStatus"] == "0", s
    assert took < 30, f"stop took {took:.1f} s"


# --- the bootstrap kubelet's unit (protokube-kubelet.service), with a real kubelet and a real runtime

KUBELET_UNIT = "protokube-kubelet.service"
LOCK = "/var/lib/kubelet/kubelet.lock"
# What protokube writes for a self-hosted kubelet (the lock flags; the rest of its KUBELET_ARGS is the
# cluster's and does not matter here).
KUBELET_ENV = f'KUBELET_ARGS="--exit-on-lock-contention --lock-file={LOCK}"\n'
# The machine's own flags, as an operator writes them in /etc/default/kubelet: its runtime, and what this
# container needs. --cgroups-per-qos=false --enforce-node-allocatable=: nspawn gives the container the cgroup
# v1 controller hierarchies read-only, and the kubelet dies creating kubepods there ("mkdir
# /sys/fs/cgroup/cpuset/kubepods: read-only file system"). --fail-swap-on=false: the machine may swap.
KUBELET_MACHINE = ('KUBELET_EXTRA_ARGS="--container-runtime=remote '
                   '--container-runtime-endpoint=unix:///run/containerd/containerd.sock '
                   '--fail-swap-on=false --cgroups-per-qos=false --enforce-node-allocatable="\n')
# The kernel tunables a kubelet sets at start (setupKernelTunables, pkg/kubelet/cm/container_manager_linux.go)
# and dies when it cannot: the container's /proc/sys is read-only, and rightly, for they are the host's.
KUBELET_SYSCTLS = ("vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
                   "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes")
# containerd as the node has it; only its CRI Version/Status calls are used (no image, no container).
CONTAINERD_UNIT = """[Unit]
Description=containerd, the runtime the bootstrap kubelet of the test reaches
[Service]
ExecStart=/usr/local/bin/containerd
"""


@pytest.fixture(scope="module")
def kubelet_binaries():
    """The real kubelet 1.20.2 (scripts/k8s-binaries.sh's cache: never built here, that takes a quarter of an
    hour) and this machine's containerd, to copy into the container; skips without them."""
    d = subprocess.run([os.path.join(ROOT, "scripts", "k8s-binaries.sh"), "--dir"], capture_output=True,
                       text=True, check=True, timeout=30).stdout.strip()
    kubelet = os.path.join(d, "kubelet")
    if not os.access(kubelet, os.X_OK):
        pytest.skip(f"the Kubernetes 1.20.2 kubelet is not built ({kubelet}); run scripts/k8s-binaries.sh")
    containerd = shutil.which("containerd")
    if not containerd:
        pytest.skip("containerd is missing (scripts/install-deps.sh installs it)")
    return kubelet, containerd


def wait_for(what, probe, diagnose, timeout=30):
    """probe()'s first true value within timeout s (every wait of the test is bounded), else fails with
    diagnose()."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout} s: {what}\n{diagnose()}")
        time.sleep(0.25)


def test_bootstrap_kubelet_unit_restarts_always(kubelet_binaries, container):
    """protokube-kubelet.service as the package installs it, under systemd, with the real kubelet 1.20.2 as
    /usr/local/bin/kubelet and containerd as its runtime (kubelet acts on lock contention only once it has
    started, which needs a runtime that answers). Restart=always is checked on each way the kubelet ends:
    the start failing because kubelet.env does not exist yet (result 'resources'); the kubelet exiting 255
    (no runtime flags yet); the kubelet exiting 0 on lock contention, the exit the unit exists for; SIGKILL.
    The managed kubelet's part is played by flock(1), which does what kubelet's flock.Acquire does (open the
    lock file, flock(LOCK_EX), hold it until it dies): its open makes the bootstrap kubelet exit 0, the
    restarted bootstrap kubelet waits in flock() while it holds the lock, and takes it once it is gone."""
    c = container
    kubelet, containerd = kubelet_binaries
    unit = "/lib/systemd/system/" + KUBELET_UNIT
    # the package ships the unit, and neither enables nor starts it (debian/rules)
    assert c.run("dpkg-query", "-S", unit).stdout.startswith("protokube: "), "not the package's file"
    assert c.run("systemctl", "is-enabled", KUBELET_UNIT, check=False).stdout.strip() == "disabled"
    s = show(c, "ActiveState", "NRestarts", unit=KUBELET_UNIT)
    assert s == {"ActiveState": "inactive", "NRestarts": "0"}, s
    # systemd 252 prints a disabled start limit as 0 (StartLimitIntervalSec=0), not infinity
    s = show(c, "Type", "Restart", "RestartUSec", "StartLimitIntervalUSec", "KillMode", "OOMScoreAdjust",
             "Delegate", unit=KUBELET_UNIT)
    assert s == {"Type": "simple", "Restart": "always", "RestartUSec": "2s", "StartLimitIntervalUSec": "0",
                 "KillMode": "control-group", "OOMScoreAdjust": "-999", "Delegate": "no"}, s
    out = c.run("systemd-analyze", "security", "--no-pager", KUBELET_UNIT, check=False).stdout
    print(out.strip().splitlines()[-1])  # unsandboxed on purpose (the unit says why)

    # A real node's parts: the binaries, /dev/kmsg (the kubelet's OOM watcher opens it; the container's
    # /dev is a tmpfs without it) and containerd as containerd.service, which the unit Wants=. protokube is
    # stopped: its pass must not write kubelet.env while the test says when it exists.
    c.run("systemctl", "stop", "protokube")
    for path in (kubelet, containerd):
        shutil.copy(path, os.path.join(c.root, "usr", "local", "bin"))
    c.run("sh", "-c", "[ -e /dev/kmsg ] || mknod /dev/kmsg c 1 11")
    # Each kernel tunable the kubelet sets gets a writable copy, with the host's value, bound over it in the
    # container: the kubelet reads and sets its copy as on a node (whatever this host's values are), and
    # the host's stay as they are.
    c.run("sh", "-c", "mkdir -p /run/pk-kubelet-sysctl && for f in " + " ".join(KUBELET_SYSCTLS) + "; do "
          "copy=/run/pk-kubelet-sysctl/$(echo $f | tr / .); "
          "cat /proc/sys/$f > $copy && mount --bind $copy /proc/sys/$f || exit 1; done")
    c.run("sh", "-c", f"cat > /run/systemd/system/containerd.service <<'EOF'\n{CONTAINERD_UNIT}EOF")
    c.run("systemctl", "daemon-reload")
    c.run("rm", "-f", "/var/lib/kubelet/kubelet.env", "/etc/default/kubelet", LOCK)
    c.run("mkdir", "-p", "/var/lib/kubelet")

    def state():
        return show(c, "ActiveState", "SubState", "MainPID", "NRestarts", unit=KUBELET_UNIT)

    def unit_log():
        return c.run("journalctl", "-u", KUBELET_UNIT, "--no-pager", "-o", "cat", check=False).stdout

    def kubelet_log(pid):
        return c.run("journalctl", f"_PID={pid}", "--no-pager", "-o", "cat", check=False).stdout

    def diagnose():
        # the unit's journal without the goroutine dumps (tab-indented) of a kubelet's fatal exits
        log = "\n".join(line for line in unit_log().splitlines()[-300:] if not line.startswith("\t"))
        return f"{state()}\n/proc/locks:\n{c.run('cat', '/proc/locks').stdout}\n{log[-5000:]}"

    def locks():
        """(holder PID, [waiting PIDs]) of the flock on the lock file, from /proc/locks (PIDs as the
        container sees them): a read, never an open of the lock file."""
        dev, ino = map(int, c.run("stat", "-c", "%d %i", LOCK).stdout.split())
        ident = f"{os.major(dev):02x}:{os.minor(dev):02x}:{ino}"  # as /proc/locks names the file
        holder, waiters = None, []
        for line in c.run("cat", "/proc/locks").stdout.splitlines():
            f = line.split()
            if f[-3] != ident:
                continue
            if f[1] == "->":
                waiters.append(f[5])
            else:
                holder = f[4]
        return holder, waiters

    try:
        # 1. Before protokube's first pass there is no kubelet.env: the start fails, and is retried.
        t0 = time.monotonic()
        p = c.run("systemctl", "start", KUBELET_UNIT, check=False)
        assert p.returncode != 0, "started without kubelet.env"
        wait_for("two restarts without kubelet.env", lambda: int(state()["NRestarts"]) >= 2, diagnose)
        assert "Failed to load environment files: No such file or directory" in unit_log(), diagnose()
        assert show(c, "ActiveState", unit="containerd.service")["ActiveState"] == "active"  # Wants=

        # 2. protokube's kubelet.env, not yet the machine's flags: the next restart runs the kubelet (no
        # `systemctl start`), which finds no runtime (dockershim, no docker) and exits 255; restarted again.
        c.run("sh", "-c", f"cat > /var/lib/kubelet/kubelet.env <<'EOF'\n{KUBELET_ENV}EOF")
        restarts = int(state()["NRestarts"])
        wait_for("the kubelet exiting 255 and restarted",
                 lambda: "status=255/EXCEPTION" in unit_log() and int(state()["NRestarts"]) > restarts + 1,
                 diagnose, timeout=60)
        assert "failed to get docker version" in unit_log(), diagnose()

        # 3. The machine's flags: the next restart's kubelet reaches containerd, starts, holds the lock.
        c.run("sh", "-c", f"cat > /etc/default/kubelet <<'EOF'\n{KUBELET_MACHINE}EOF")
        first = wait_for("a kubelet that started",
                         lambda: (lambda pid: pid != "0" and "Started kubelet" in kubelet_log(pid) and pid)(
                             state()["MainPID"]), diagnose, timeout=60)
        print(f"the kubelet ran after {time.monotonic() - t0:.1f} s, {state()['NRestarts']} restarts")
        argv = c.run("cat", f"/proc/{first}/cmdline").stdout.split("\0")
        # $KUBELET_ARGS and $KUBELET_EXTRA_ARGS, each flag one argument
        assert argv[0] == "/usr/local/bin/kubelet" and f"--lock-file={LOCK}" in argv and \
            "--container-runtime=remote" in argv, argv
        wait_for("the kubelet holding the lock", lambda: locks() == (first, []), diagnose)
        restarts = int(state()["NRestarts"])

        # 4. The managed kubelet comes: its open of the lock file makes the bootstrap kubelet exit 0, and
        # the restarted one waits in flock() while the managed one holds the lock.
        ended = (unit_log().count("Deactivated successfully."), unit_log().count("Main process exited"))
        c.run("systemd-run", "-q", "--unit=pk-managed-kubelet", "flock", LOCK, "sleep", "600")
        managed = show(c, "MainPID", unit="pk-managed-kubelet.service")["MainPID"]
        second = wait_for("the bootstrap kubelet restarted",
                          lambda: (lambda pid: pid not in ("0", first) and pid)(state()["MainPID"]), diagnose)
        wait_for("the kubelet's log of the open", lambda: f'inotify event: "{LOCK}": 0x20 == IN_OPEN' in
                 kubelet_log(first), lambda: kubelet_log(first)[-3000:], timeout=10)
        # exit status 0: systemd says "Deactivated successfully." for it, and "Main process exited" only for
        # a failure (a status other than 0, a signal)
        wait_for("systemd's log of a clean exit",
                 lambda: unit_log().count("Deactivated successfully.") == ended[0] + 1, diagnose, timeout=10)
        assert unit_log().count("Main process exited") == ended[1], diagnose()
        assert int(state()["NRestarts"]) == restarts + 1, diagnose()
        wait_for("the restarted kubelet waiting for the lock",
                 lambda: locks() == (managed, [second]), diagnose)
        time.sleep(5)  # and it keeps waiting: no restart, no lock, no watch
        assert locks() == (managed, [second]), diagnose()
        s = state()
        assert (s["SubState"], s["MainPID"], int(s["NRestarts"])) == ("running", second, restarts + 1), s
        assert "watching for inotify events" not in kubelet_log(second), kubelet_log(second)[-3000:]

        # 5. The managed kubelet dies: the waiting bootstrap kubelet takes the lock, the node is its again.
        c.run("systemctl", "stop", "pk-managed-kubelet")
        wait_for("the bootstrap kubelet taking the lock back", lambda: locks() == (second, []), diagnose)
        wait_for("the bootstrap kubelet watching the lock again",
                 lambda: "watching for inotify events" in kubelet_log(second), diagnose)
        assert state()["MainPID"] == second and int(state()["NRestarts"]) == restarts + 1, diagnose()

        # 6. SIGKILL: restarted too.
        c.run("sh", "-c", f"kill -KILL {second}")  # the shell's: procps' /bin/kill is not in the root
        wait_for("a kubelet after SIGKILL", lambda: state()["MainPID"] not in ("0", second), diagnose)
        wait_for("systemd's log of the SIGKILL", lambda: "code=killed, status=9/KILL" in unit_log(),
                 diagnose, timeout=10)
        assert int(state()["NRestarts"]) == restarts + 2, diagnose()

        print(f"{state()['NRestarts']} restarts in {time.monotonic() - t0:.1f} s")  # a stop resets the count

        # A stop is not a failure: it stays stopped.
        c.run("systemctl", "stop", KUBELET_UNIT)
        s = show(c, "ActiveState", "MainPID", unit=KUBELET_UNIT)
        assert s == {"ActiveState": "inactive", "MainPID": "0"}, s
    finally:
        for u in ("pk-managed-kubelet", KUBELET_UNIT, "containerd"):  # one by one: one may be gone
            c.run("systemctl", "stop", u, check=False)


class InjectedFailure(Exception):
    pass


def test_teardown_after_a_failure_leaves_no_loop_device(base_and_deb):
    # A second container of its own: the daemon attaches and mounts its pool's volumes, then the test
    # fails. The teardown must still halt the container, unmount and detach everything of the run.
    seen = {}
    with pytest.raises(InjectedFailure):
        with booted(*base_and_deb, "pk-nspawn-fail") as c:
            seen["work"], seen["token"] = c.work, c.token
            start_with_pool(c)
            journal = pass_outcome(c)
            assert "Mounted volume 'vol-main-a'" in journal, journal[-3000:]
            seen["loops"] = our_loops(c.work, c.token)
            assert seen["loops"], run("losetup", "-a").stdout
            raise InjectedFailure("after the volumes were mounted")
    attached = run("losetup", "-a").stdout
    print(f"attached during the run: {seen['loops']}; losetup -a after the teardown:\n{attached}")
    assert seen["token"] not in attached, attached
    assert not our_loops(seen["work"], seen["token"]) and not mounts_under(seen["work"])
    assert not os.path.exists(seen["work"])
