# One etcd member, one holder (review item 1), on real loop devices: a second volume naming a member that is
# already held is never claimed, the volume that may hold a member's data is preferred over a blank one, and
# a blank one is never formatted while a sibling may hold data. The published record for a member never has
# two addresses.
import os

import pytest

import loopdev
from loopdev import MIB, loop_of, run


@pytest.fixture
def env(main_volumes):
    return main_volumes


def ip_of(node):
    return loopdev.node_ip(node)


def test_member_held_elsewhere_is_never_claimed(env):
    members = ("a", "b", "c")
    env.create("vol-a1", "main", "a", members)
    env.create("vol-b", "main", "b", members)
    env.create("vol-c", "main", "c", members)
    env.pk("once", "X", check=0)
    assert env.holders()["vol-a1"] == "X"
    # an impostor naming member a, free, whose id sorts before the real one's
    env.create("vol-a0", "main", "a", members)

    p = env.pk("plan", "Y", check=None)
    assert "claim vol-b" in p.stdout, p.stdout
    assert "claim vol-a0" not in p.stdout, p.stdout
    v = env.pk("volumes", "Y", check=None)
    assert "member 'a' is held by node 'X' through volume 'vol-a1'" in v.stdout + v.stderr, v.stdout + v.stderr

    p = env.pk("once", "Y", check=0)
    assert "Volume 'vol-a0' is not eligible: etcd cluster 'main' member 'a' is held by node 'X'" in p.stderr
    holders = env.holders()
    assert holders["vol-a0"] is None and holders["vol-b"] == "Y", holders

    # the member's record has one address: X's
    d = env.pk("dns", "Y", check=0)
    line = [ln for ln in d.stdout.splitlines() if "etcd-a." in ln]
    assert line and ip_of("X") in line[0] and ip_of("Y") not in line[0], d.stdout


def make_ext4_with_file(img, text):
    run("mkfs.ext4", "-q", "-F", img)
    mnt = img + ".mnt"
    os.makedirs(mnt)
    run("mount", "-o", "loop", img, mnt)
    try:
        with open(os.path.join(mnt, "data"), "w") as f:
            f.write(text)
    finally:
        run("umount", mnt)
        os.rmdir(mnt)


def test_volume_with_data_is_preferred_over_blank_sibling(env):
    members = ("a", "b", "c")
    env.create("vol-a1", "main", "a", members)  # blank, and its id sorts first
    env.create("vol-a2", "main", "a", members)
    make_ext4_with_file(env.image("vol-a2"), "member a's data")
    p = env.pk("once", "X", check=0)
    holders = env.holders()
    assert holders["vol-a2"] == "X" and holders["vol-a1"] is None, (holders, p.stderr)
    assert "ext4 filesystem" not in p.stderr
    with open(os.path.join(env.mount_path("X", "vol-a2"), "data")) as f:
        assert f.read() == "member a's data"


def test_blank_volume_never_formatted_while_sibling_may_hold_data(env):
    members = ("a", "b", "c")
    env.create("vol-a1", "main", "a", members)
    env.create("vol-a2", "main", "a", members)
    # vol-a1 was written (all zeros, so it proves blank) and so is no longer provably untouched: both
    # may hold data, vol-a1 goes first by id, and it must not be formatted while vol-a2 holds member a's data
    with open(env.image("vol-a1"), "r+b") as f:
        f.write(b"\0" * MIB)
        f.flush()
        os.fsync(f.fileno())
    make_ext4_with_file(env.image("vol-a2"), "member a's data")
    p = env.pk("once", "X", check=None)
    assert p.returncode != 0
    assert "volume 'vol-a2' names the same etcd member and may hold its data: not formatting 'vol-a1'" in p.stderr, p.stderr
    dev = loop_of(env.image("vol-a1"))
    assert run("blkid", "-p", dev, check=False).returncode != 0  # still nothing on it
    assert env.holders()["vol-a2"] is None
