# "Provably blank" on real loop devices with the real mkfs.ext4/e2fsck: a device with no signature but data
# (an ext4 whose primary superblock is damaged, random bytes) is never formatted; a fresh zero device is;
# `protokube wipe` is the only way to make a device blank, and only when told to destroy data.
import os
import re
import subprocess

import pytest

from conftest import protokube_bin
from loopdev import MIB, mounts_under, run

TAGS = ["--tag", "KubernetesCluster=demo.k8s.test", "--tag", "k8s.io/role/master=1",
        "--tag", "k8s.io/etcd/main=a/a"]


@pytest.fixture
def env(main_volumes):
    return main_volumes


def blkid_probe(dev):
    return run("blkid", "-p", "-o", "export", dev, check=False).stdout


def add_device(env, dev):
    env.pool_cmd("add-device", dev, "--id", "vol", "--zone", "z1", *TAGS)


def read_at(dev, off, n):
    with open(dev, "rb") as f:
        f.seek(off)
        return f.read(n)


def write_at(dev, off, data):
    with open(dev, "r+b") as f:
        f.seek(off)
        f.write(data)
        os.fsync(f.fileno())


def assert_refused(env, dev, offset):
    p = env.pk("once", "n1")
    assert p.returncode == 1, p.stderr
    assert "not blank: has data but no recognised filesystem" in p.stderr, p.stderr
    assert dev in p.stderr, p.stderr
    m = re.search(r"first non-zero byte at offset (\d+)", p.stderr)
    assert m, p.stderr
    assert int(m.group(1)) == offset, p.stderr
    assert "creating an ext4 filesystem" not in p.stderr
    assert mounts_under(env.base) == []


def test_damaged_primary_superblock_not_formatted(env):
    # 4 KiB blocks: the first backup superblock is block 32768 (e2fsck -b 32768), as on a real etcd volume
    dev = env.new_loop("damaged", size=256 * MIB)
    run("mkfs.ext4", "-q", "-b", "4096", dev)
    mnt = os.path.join(env.base, "prep")
    os.mkdir(mnt)
    run("mount", dev, mnt)
    with open(os.path.join(mnt, "member"), "w") as f:
        f.write("etcd data that must survive")
    run("umount", mnt)
    write_at(dev, 1024, bytes(1024))  # the primary superblock
    probe = blkid_probe(dev)
    assert "TYPE=" not in probe, probe  # libblkid alone would call it blank
    add_device(env, dev)
    # the ext4 group descriptors follow the superblock in block 0: the first non-zero byte is at 4096
    for _ in range(2):  # a later pass does not give in either
        assert_refused(env, dev, 4096)
    # nothing was written: the backup superblock still recovers everything
    fsck = run("e2fsck", "-fy", "-b", "32768", "-B", "4096", dev, check=False)
    assert fsck.returncode in (0, 1), fsck.stdout + fsck.stderr
    run("mount", "-o", "ro", dev, mnt)
    try:
        with open(os.path.join(mnt, "member")) as f:
            assert f.read() == "etcd data that must survive"
    finally:
        run("umount", mnt)


@pytest.mark.parametrize("where", ["middle", "last-mib"])
def test_random_bytes_not_formatted(env, where):
    size = 64 * MIB
    dev = env.new_loop("random-" + where, size=size)
    # the middle of the device is always one of the evenly spaced samples (docs/volumes.md)
    off = size // 2 if where == "middle" else size - 3000
    data = os.urandom(512)
    data = b"\x01" + data[1:]  # the first byte is the one reported
    write_at(dev, off, data)
    assert "TYPE=" not in blkid_probe(dev)
    add_device(env, dev)
    assert_refused(env, dev, off)
    assert read_at(dev, off, len(data)) == data


def test_fresh_zero_device_formats(env):
    dev = env.new_loop("fresh", size=64 * MIB)
    add_device(env, dev)
    p = env.pk("once", "n1", check=0)
    assert f"Volume 'vol' ({dev}) is blank: creating an ext4 filesystem" in p.stderr, p.stderr
    assert "TYPE=\"ext4\"" in blkid_probe(dev) or "TYPE=ext4" in blkid_probe(dev)
    assert env.mount_path("n1", "vol") in mounts_under(env.base)


def test_blank_device_not_mounted_before_the_proof(env):
    """With no filesystem signature there is nothing to mount by type, and libmount would try every type the
    kernel has (about 10 ms on a cold pass): the blank proof goes first, one mount follows the mkfs."""
    dev = env.new_loop("fresh", size=64 * MIB)
    add_device(env, dev)
    p = env.pk("once", "n1", check=0)
    assert f"'{dev}' holds no filesystem libblkid knows: checking whether it is blank" in p.stderr, p.stderr
    assert "Mounting '" not in p.stderr, p.stderr  # no failed mount attempt
    assert f"Volume 'vol' ({dev}) is blank: creating an ext4 filesystem" in p.stderr
    assert env.mount_path("n1", "vol") in mounts_under(env.base)


def test_wipe(env, tmp_path):
    dev = env.new_loop("wipe", size=64 * MIB)
    run("mkfs.ext4", "-q", dev)
    write_at(dev, 32 * MIB, b"\x07" * 4096)
    write_at(dev, 1024, bytes(1024))
    head = read_at(dev, 0, 1 * MIB)

    # without the flag: refused, nothing touched
    p = run(protokube_bin(), "wipe", dev, check=False)
    assert p.returncode == 2, p.stderr
    assert "--yes-destroy-data" in p.stderr
    assert read_at(dev, 0, 1 * MIB) == head

    # not a block device
    f = tmp_path / "file"
    f.write_bytes(b"x" * 4096)
    p = run(protokube_bin(), "wipe", str(f), "--yes-destroy-data", check=False)
    assert p.returncode == 1 and "not a block device" in p.stderr, p.stderr
    assert f.read_bytes() == b"x" * 4096
    p = run(protokube_bin(), "wipe", "/dev/pk-does-not-exist", "--yes-destroy-data", check=False)
    assert p.returncode == 1 and "/dev/pk-does-not-exist" in p.stderr, p.stderr

    # held (mounted): refused, nothing touched. Read-only, because a read-write ext4 mount has the kernel's
    # lazy inode-table init write to the group descriptors in the background, which would change the bytes
    # compared here without protokube touching them (seen once in CI).
    other = env.new_loop("wipe-mounted", size=32 * MIB)
    run("mkfs.ext4", "-q", other)
    mnt = os.path.join(env.base, "held")
    os.mkdir(mnt)
    run("mount", "-o", "ro", other, mnt)
    other_head = read_at(other, 0, 64 * 1024)
    p = run(protokube_bin(), "wipe", other, "--yes-destroy-data", check=False)
    assert p.returncode == 1 and "in use" in p.stderr and mnt in p.stderr, p.stderr
    assert read_at(other, 0, 64 * 1024) == other_head
    run("umount", mnt)

    # with the flag: wiped, said at warning level, and then it formats like a fresh device
    p = run(protokube_bin(), "wipe", dev, "--yes-destroy-data", check=False)
    assert p.returncode == 0, p.stderr
    assert "warning:" in p.stderr and "Wiped" in p.stderr and dev in p.stderr, p.stderr
    assert blkid_probe(dev) == ""
    assert read_at(dev, 4096, 4096) == bytes(4096)
    assert read_at(dev, 32 * MIB, 4096) == bytes(4096)
    add_device(env, dev)
    p = env.pk("once", "n1", check=0)
    assert "blank: creating an ext4 filesystem" in p.stderr, p.stderr


# mkfs.ext4 stand-in for the crash test: writes what a real mke2fs of this size writes before its superblock
# (its blocks 1..15, from a real run on a scratch file: group descriptors, bitmaps), then kills protokube
# (its parent) and itself, as a crash in the middle of the first format would.
CRASHING_MKFS = """#!/bin/sh
dev="$(eval echo \\${$#})"
scratch="$PK_SCRATCH/mkfs-scratch.img"
truncate -s "$(blockdev --getsize64 "$dev")" "$scratch"
/usr/sbin/mkfs.ext4 -q -F -b 4096 "$scratch" >/dev/null
dd if="$scratch" of="$dev" bs=4096 skip=1 seek=1 count=15 conv=notrunc,fsync status=none
kill -9 $PPID
kill -9 $$
"""


def test_format_interrupted_by_crash_resumed_by_same_node_only(env):
    dev = env.new_loop("crash", size=64 * MIB)
    add_device(env, dev)
    bindir = os.path.join(env.base, "crashbin")
    os.mkdir(bindir)
    with open(os.path.join(bindir, "mkfs.ext4"), "w") as f:
        f.write(CRASHING_MKFS)
    os.chmod(os.path.join(bindir, "mkfs.ext4"), 0o755)
    crash_env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"], PK_SCRATCH=env.base)
    p = subprocess.run(env.argv("once", "n1"), capture_output=True, text=True, timeout=60, env=crash_env)
    assert p.returncode == -9, (p.returncode, p.stderr)
    assert "blank: creating an ext4 filesystem" in p.stderr
    assert os.path.exists(env.mount_path("n1", "vol") + ".formatting")
    assert read_at(dev, 4096, 4096) != bytes(4096)
    assert "TYPE=" not in blkid_probe(dev)

    # another node that finds this state did not start that format: data, no filesystem, refused
    env.pool_cmd("release-node", "n1")
    p = env.pk("once", "n2")
    assert p.returncode == 1 and "not blank: has data but no recognised filesystem" in p.stderr, p.stderr
    env.pool_cmd("release-node", "n2")

    # the node that began it knows the data is its own format's: formats again, mounts
    p = env.pk("once", "n1", check=0)
    assert "the format this node began did not finish; formatting again" in p.stderr, p.stderr
    assert env.mount_path("n1", "vol") in mounts_under(env.base)
    assert not os.path.exists(env.mount_path("n1", "vol") + ".formatting")
