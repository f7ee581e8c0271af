# Helpers for the volume integration tests: a scratch directory with a pool, per-node mount roots and
# manifest dirs; loop devices the test itself creates; cleanup that touches only what the test made
# (mounts under its directory, loop devices backed by its files), even after a failure.
import fcntl
import os
import shutil
import struct
import subprocess
import tempfile

# kube-proxy's conntrackMaxPerCore 0: the nodes of these tests are network namespaces, where kube-proxy cannot
# size the host's conntrack table ("open /proc/sys/net/netfilter/nf_conntrack_max: permission denied", and it
# exits); 0 leaves the table as it is (kind does the same). docs/workers.md, "kube-proxy on a worker".
SPEC = """apiVersion: protokube/v1alpha1
kind: Cluster
metadata:
  name: demo.k8s.test
spec:
  cloud: local
  dns:
    provider: none
  etcdClusters:
{clusters}
  kubernetesVersion: 1.31.2
  kubeAPIServer: {{}}
  kubeControllerManager: {{}}
  kubeScheduler: {{}}
  kubeProxy:
    conntrackMaxPerCore: 0
"""
CLUSTER = "demo.k8s.test"
MIB = 1024 * 1024


def node_ip(node):
    """A node's internal address: on loopback, because a blank member's pass asks the members other nodes
    hold at these addresses (docs/etcd-members.md); nothing listens there, so nothing leaves the machine."""
    return "127.0.10." + str(sum(map(ord, node)) % 250 + 1)


def run(*argv, check=True, timeout=60, **kw):
    p = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def mounts_under(prefix):
    """Mount points below prefix, deepest first (from /proc/self/mountinfo)."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            target = line.split()[4].replace("\\040", " ")
            if target == prefix or target.startswith(prefix.rstrip("/") + "/"):
                out.append(target)
    return sorted(set(out), key=len, reverse=True)


LOOP_GET_STATUS64 = 0x4C05
LOOP_INFO64_SIZE = 232  # struct loop_info64 (linux/loop.h); lo_device and lo_inode come first


def bound_loops():
    """/dev/loopN that have a backing file (sysfs backing_file exists)."""
    return ["/dev/" + n for n in os.listdir("/sys/block")
            if n.startswith("loop") and os.path.exists(f"/sys/block/{n}/loop/backing_file")]


def loop_backing(dev):
    """(st_dev, st_ino) of dev's backing file as the device reports it (LOOP_GET_STATUS64), or None. Not the
    sysfs path: the kernel forms it in the reader's mount namespace, and for a device bound by a process of a
    mount namespace that is gone it is a path relative to that mount ("/pool/x.img") that leads nowhere."""
    try:
        fd = os.open(dev, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = fcntl.ioctl(fd, LOOP_GET_STATUS64, bytes(LOOP_INFO64_SIZE))
    except OSError:
        return None
    finally:
        os.close(fd)
    return struct.unpack_from("=QQ", info)


def loops_of(image):
    """Every loop device bound to image."""
    st = os.stat(image)
    return [d for d in bound_loops() if loop_backing(d) == (st.st_dev, st.st_ino)]


def loops_backed_by_files_under(prefix):
    """/dev/loopN whose backing file lies below prefix (by device and inode)."""
    files = set()
    for root, _, names in os.walk(prefix):
        for n in names:
            try:
                st = os.stat(os.path.join(root, n), follow_symlinks=False)
            except OSError:
                continue
            files.add((st.st_dev, st.st_ino))
    return [d for d in bound_loops() if loop_backing(d) in files]


def loop_of(image):
    """The loop device bound to image, or None."""
    loops = loops_of(image)
    return loops[0] if loops else None


class VolEnv:
    def __init__(self, pk_bin, clusters=("main", "events")):
        self.bin = pk_bin
        self.base = tempfile.mkdtemp(prefix="pk-vol-")
        self.pool = os.path.join(self.base, "pool")
        self.spec = os.path.join(self.base, "cluster.yaml")
        self.own_loops = []  # created by the test itself (losetup), detached in cleanup
        body = "".join(f"    - name: {c}\n      image: registry.k8s.io/etcd:3.5.16-0\n" for c in clusters)
        with open(self.spec, "w") as f:
            f.write(SPEC.format(clusters=body))

    # --- per node paths
    def mount_root(self, node):
        return os.path.join(self.base, "mnt-" + node)

    def manifest_dir(self, node):
        return os.path.join(self.base, "manifests-" + node)

    def config_dir(self, node):
        """The node's --config-dir: its components' configuration files (never the machine's /var/lib)."""
        return os.path.join(self.base, "lib-" + node)

    def kubelet_dir(self, node):
        """The node's --kubelet-dir: its kubelet's configuration and flags."""
        return os.path.join(self.base, "kubelet-" + node)

    def mount_path(self, node, vol):
        return os.path.join(self.mount_root(node), "master-" + vol)

    # --- protokube
    def argv(self, verb, node, *extra, zone="z1"):
        return [self.bin, "-c", self.spec, verb, "--node-name", node, "--zone", zone,
                "--internal-ip", node_ip(node),
                "--pool", self.pool, "--mount-root", self.mount_root(node),
                "--manifest-dir", self.manifest_dir(node), "--config-dir", self.config_dir(node),
                "--kubelet-dir", self.kubelet_dir(node), *extra]

    def pk(self, verb, node, *extra, check=None, timeout=120, zone="z1", env=None):
        e = dict(os.environ, **env) if env else None
        p = subprocess.run(self.argv(verb, node, *extra, zone=zone), capture_output=True, text=True,
                           timeout=timeout, env=e)
        if check is not None and p.returncode != check:
            raise AssertionError(f"protokube {verb} --node-name {node} exited {p.returncode}, wanted {check}\n"
                                 f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        return p

    def pool_cmd(self, *args, check=0):
        p = subprocess.run([self.bin, "pool", *args, "--pool", self.pool], capture_output=True, text=True,
                           timeout=60)
        if check is not None and p.returncode != check:
            raise AssertionError(f"protokube pool {' '.join(args)} exited {p.returncode}\n{p.stderr}")
        return p

    def create(self, vid, cluster, member, members, size=16 * MIB, zone="z1", extra_tags=()):
        tags = ["--tag", f"KubernetesCluster={CLUSTER}", "--tag", "k8s.io/role/master=1",
                "--tag", f"k8s.io/etcd/{cluster}={member}/{','.join(members)}"]
        for t in extra_tags:
            tags += ["--tag", t]
        self.pool_cmd("create", "--id", vid, "--size", str(size), "--zone", zone, *tags)
        return vid

    def standard_pool(self, members=("a", "b", "c")):
        for c in ("main", "events"):
            for m in members:
                self.create(f"{c}-{m}", c, m, members)

    def image(self, vid):
        return os.path.join(self.pool, vid + ".img")

    def meta(self, vid):
        import json
        with open(os.path.join(self.pool, vid + ".json")) as f:
            return json.load(f)

    def holders(self):
        """{volume id: node or None} from the pool metadata."""
        import json
        out = {}
        for name in os.listdir(self.pool):
            if name.endswith(".json") and not name.startswith("."):
                with open(os.path.join(self.pool, name)) as f:
                    m = json.load(f)
                out[m["id"]] = (m.get("attachment") or {}).get("node")
        return out

    # --- loop devices the test makes itself (signature tests, add-device)
    def new_loop(self, name, size=32 * MIB):
        img = os.path.join(self.base, name + ".raw")
        with open(img, "wb") as f:
            f.truncate(size)
        dev = run("losetup", "--find", "--show", img).stdout.strip()
        self.own_loops.append(dev)
        return dev

    def umount_node(self, node):
        for m in mounts_under(self.mount_root(node)):
            run("umount", m)

    def cleanup(self):
        errors = []
        for m in mounts_under(self.base):
            p = run("umount", m, check=False)
            if p.returncode != 0:
                p = run("umount", "-l", m, check=False)
                errors.append(f"umount {m}: {p.stderr.strip()}")
        for dev in self.own_loops + loops_backed_by_files_under(self.base):
            run("losetup", "-d", dev, check=False)
        shutil.rmtree(self.base, ignore_errors=True)
        return errors
