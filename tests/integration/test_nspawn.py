# The package under a real systemd: a Debian bookworm root made by debootstrap from Debian's archive (cached
# outside the repository, keyed by what goes into it), the .deb of `make deb` installed in it with dpkg,
# booted with systemd-nspawn -b (own network namespace: only its loopback), reached with nsenter. Checks that
# protokube.service starts and reaches READY (Type=notify), serves /healthz, reloads on `systemctl reload`,
# stops within its timeout, and that its sandbox lets it do its job (the manifest directory, its state, a
# local pool volume where the container has loop devices) and nothing more; prints `systemd-analyze
# security protokube.service`.
import glob
import hashlib
import os
import re
import shutil
import signal
import subprocess
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


def loops_backed_under(prefix):
    out = []
    for d in glob.glob("/sys/block/loop*/loop/backing_file"):
        with open(d) as f:
            if f.read().strip().startswith(prefix.rstrip("/") + "/"):
                out.append("/dev/" + d.split("/")[3])
    return out


class Container:
    """A booted copy of the root; run() executes a command inside it (nsenter into its namespaces)."""

    def __init__(self, root, log_path):
        self.root = root
        self.log = open(log_path, "w")
        # --private-network: its own network namespace (only lo), so 127.0.0.1:9797 is the container's.
        # --register=no: there is no systemd-machined on the host (else "Failed to open system bus").
        self.nspawn = subprocess.Popen(
            ["systemd-nspawn", "-q", "-b", "-D", root, "--register=no", "--keep-unit", "--console=pipe",
             "--private-network", "--bind=/dev/loop-control", "-M", "pk-nspawn-test"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not self.pid:
            if self.nspawn.poll() is not None:
                pytest.fail(f"systemd-nspawn exited {self.nspawn.returncode}:\n{self.log_text()}")
            kids = children(self.nspawn.pid)
            self.pid = kids[0] if kids else None
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
        deadline, state = time.monotonic() + 120, ""
        while time.monotonic() < deadline:
            state = self.run("systemctl", "is-system-running", check=False).stdout.strip()
            if state in ("running", "degraded"):
                return state
            time.sleep(0.5)
        pytest.fail(f"the container did not boot (is-system-running: {state}):\n{self.log_text()}")

    def stop(self):
        if self.nspawn.poll() is None:
            self.nspawn.send_signal(signal.SIGTERM)  # halts the container
            try:
                self.nspawn.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.nspawn.pid, signal.SIGKILL)
                self.nspawn.wait(timeout=30)
        self.log.close()


def show(c, *props):
    out = c.run("systemctl", "show", "protokube.service", *[f"-p{p}" for p in props]).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


@pytest.fixture(scope="module")
def container():
    need_root()
    for tool in ("debootstrap", "systemd-nspawn", "nsenter"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is missing: scripts/install-deps.sh installs it")
    deb = the_deb()
    base = base_root(sorted(set(BASE_PACKAGES + deb_depends(deb))))
    work = tempfile.mkdtemp(prefix="pk-nspawn-")
    root = os.path.join(work, "root")
    c = None
    try:
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
        with open(os.path.join(root, "etc", "default", "protokube"), "a") as f:
            f.write(f"PROTOKUBE_NODE_NAME=a\nPROTOKUBE_ZONE=z1\nPROTOKUBE_INTERNAL_IP=192.0.2.11\n"
                    f"PROTOKUBE_LISTEN={LISTEN}\nPROTOKUBE_INTERVAL=2s\n")
        c = Container(root, os.path.join(work, "console.log"))
        c.deb = deb
        c.work = work
        c.state = c.wait_booted()
        yield c
    finally:
        if c:
            c.stop()
        for loop in loops_backed_under(work):  # attached by the daemon in the container
            run("losetup", "-d", loop, check=False)
        shutil.rmtree(work, ignore_errors=True)


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


@pytest.fixture(scope="module")
def started(container):
    c = container
    c.run("sh", "-c", f"cat > /etc/protokube/cluster.yaml <<'EOF'\n{SPEC}EOF")
    # a local pool in the container: image files; loop devices only if the container has them
    for cl in ("main", "events"):
        c.run("protokube", "pool", "create", "--id", f"vol-{cl}-a", "--size", "64M", "--zone", "z1",
              "--tag", "KubernetesCluster=demo.k8s.test", "--tag", "k8s.io/role/master=1",
              "--tag", f"k8s.io/etcd/{cl}=a/a")
    # The container's /dev is a tmpfs without udev: a loop device the pool attaches gets its node in the
    # host's devtmpfs only, and the pass times out waiting for /dev/loopN. Give it the nodes (block major
    # 7), as the administrator of such a container would.
    c.run("sh", "-c", "for i in $(seq 0 255); do [ -e /dev/loop$i ] || mknod /dev/loop$i b 7 $i; done")
    t0 = time.monotonic()
    p = c.run("systemctl", "start", "protokube", check=False, timeout=60)
    c.start_seconds = time.monotonic() - t0
    if p.returncode != 0:
        print(c.run("journalctl", "-u", "protokube", "--no-pager", check=False).stdout)
    assert p.returncode == 0, p.stderr
    return c


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
    # the control-plane manifests are written through the sandbox (ReadWritePaths=/etc/kubernetes)
    assert "kube-apiserver.manifest" in manifests, journal[-3000:]
    assert "Read-only file system" not in journal and "Permission denied" not in journal, journal[-3000:]


def test_sandbox_lets_it_mount_a_pool_volume(started):
    # LOOP_CTL_GET_FREE + LOOP_CONFIGURE through /dev/loop-control (bound into the container), mkfs.ext4 of
    # the blank image, the mount (in the service's namespace), the etcd manifest on the volume and its link:
    # all through the unit's DevicePolicy=closed + DeviceAllow=block-* and ReadWritePaths. (Without the
    # /dev/loopN nodes the fixture makes, the pass fails with "Volume 'vol-main-a': wait-device failed:
    # timed out".)
    c = started
    journal = pass_outcome(c)
    for vol in ("vol-main-a", "vol-events-a"):
        assert re.search(rf"Mounted volume '{vol}' \(/dev/loop\d+\) on '/mnt/master-{vol}'", journal), journal
    assert "Linked '/etc/kubernetes/manifests/etcd.manifest'" in journal, journal
    pid = show(c, "MainPID")["MainPID"]
    assert c.run("nsenter", "-t", pid, "-m", "findmnt", "-n", "-o", "FSTYPE",
                 "/mnt/master-vol-main-a").stdout.strip() == "ext4"


# KNOWN DEFECT of units/protokube.service.in, found by this test: the service's own mount namespace is
# "shared,slave" (findmnt in it), so the volumes it mounts are not seen outside it; the etcd manifest link
# in /etc/kubernetes/manifests then dangles for the kubelet. systemd.exec(5), MountFlags=: the file system
# namespacing options (ProtectSystem=, ProtectHome=, PrivateTmp=, ReadWritePaths=, ...) "downgrade shared
# to slave". Fixing it means giving up those options or mounting outside the namespace: a decision for the
# lead. strict: the test fails as soon as the mounts propagate, so the marker goes with the fix.
@pytest.mark.xfail(strict=True, reason="MountFlags=shared is downgraded to slave by the unit's namespacing")
def test_mounts_are_seen_outside_the_service(started):
    c = started
    pass_outcome(c)
    assert c.run("findmnt", "-n", "-o", "FSTYPE", "/mnt/master-vol-main-a",
                 check=False).stdout.strip() == "ext4"
    assert "etcd" in c.run("cat", "/etc/kubernetes/manifests/etcd.manifest", check=False).stdout


def test_sandbox_allows_nothing_more(started):
    c = started
    pid = show(c, "MainPID")["MainPID"]
    assert pid != "0"

    def write(path):  # as the service sees the file system: its own mount namespace
        return c.run("nsenter", "-t", pid, "-m", "sh", "-c", f"echo x > {path} && rm -f {path}", check=False)

    for ok in ("/etc/kubernetes/manifests/.probe", "/var/lib/protokube/.probe", "/mnt/.probe"):
        p = write(ok)
        assert p.returncode == 0, f"{ok}: {p.stderr}"
    for denied in ("/usr/.probe", "/etc/.probe", "/etc/protokube/.probe", "/boot/.probe", "/root/.probe"):
        p = write(denied)
        assert p.returncode != 0, f"{denied} was writable in the service's namespace"
        assert re.search(r"Read-only file system|Permission denied|No such file", p.stderr), p.stderr
    # what the unit's sandbox says about itself, for the reader of the test log
    print(c.run("systemd-analyze", "security", "--no-pager", "protokube.service", check=False).stdout)


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
