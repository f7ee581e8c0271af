# Review items 7 and 9 on real loop devices: a symlinked mount root is still recognised as mounted (mounts
# compared by device number on canonical paths), and a volume's contents are never trusted: mounted
# nosuid,nodev, a symlink planted on the volume is never followed, a FIFO there never blocks the daemon.
import os
import stat

import pytest

from loopdev import run


@pytest.fixture
def env(main_volumes):
    return main_volumes


def mount_options(path):
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == path:
                return fields[5].split(",")
    return None


def test_symlinked_mount_root(env):
    env.create("vol-a", "main", "a", ("a",))
    real = os.path.join(env.base, "real-mnt")
    os.makedirs(real)
    os.symlink(real, env.mount_root("n1"))  # the node's --mount-root is a symlink
    p = env.pk("once", "n1", check=0)
    assert "Mounted volume 'vol-a'" in p.stderr
    # the second pass recognises the mount: no fsck of a mounted device, nothing to do
    p = env.pk("once", "n1", check=0)
    assert "0 change(s)" in p.stderr and "in use" not in p.stderr, p.stderr
    assert "nothing to do" in env.pk("plan", "n1", check=0).stdout


def mounted_volume(env):
    env.create("vol-a", "main", "a", ("a",))
    env.pk("once", "n1", check=0)
    path = env.mount_path("n1", "vol-a")
    return path


def test_mounted_nosuid_nodev(env):
    path = mounted_volume(env)
    opts = mount_options(path)
    assert opts and "nosuid" in opts and "nodev" in opts, opts


def test_planted_symlink_never_followed(env):
    path = mounted_volume(env)
    outside = os.path.join(env.base, "outside")
    os.makedirs(os.path.join(outside, "manifests"))
    victim = os.path.join(outside, "manifests", "etcd.manifest")
    with open(victim, "w") as f:
        f.write("precious")
    # whoever had the volume before replaced k8s.io by a symlink out of the volume
    run("rm", "-rf", os.path.join(path, "k8s.io"))
    os.symlink(outside, os.path.join(path, "k8s.io"))
    p = env.pk("once", "n1", check=1)
    assert "cannot write" in p.stderr and "never followed" in p.stderr, p.stderr
    with open(victim) as f:
        assert f.read() == "precious"
    assert os.listdir(os.path.join(outside, "manifests")) == ["etcd.manifest"]


def test_fifo_on_volume_never_blocks(env):
    path = mounted_volume(env)
    manifest = os.path.join(path, "k8s.io", "manifests", "etcd.manifest")
    os.unlink(manifest)
    os.mkfifo(manifest)
    # a blocking open of the FIFO would hang the pass until the timeout
    env.pk("once", "n1", check=0, timeout=30)
    assert stat.S_ISREG(os.lstat(manifest).st_mode)
    assert "kind: Pod" in open(manifest).read()
