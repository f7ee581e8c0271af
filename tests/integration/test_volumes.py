# The master-volume pipeline on real loop devices (docs/volumes.md): claim, safe format, mount, manifests;
# idempotence; remount without reformat; release-node handover; signatures that must never be formatted.
import json
import os
import struct
import zlib

import pytest

from conftest import need_root, protokube_bin
from loopdev import MIB, VolEnv, loop_of, loops_of, mounts_under, node_ip, run


@pytest.fixture
def env():
    need_root()
    e = VolEnv(protokube_bin())
    yield e
    errors = e.cleanup()
    assert not errors, errors


def fs_uuid(dev_or_file):
    return run("blkid", "-p", "-s", "UUID", "-o", "value", dev_or_file, check=False).stdout.strip()


def fs_type(dev_or_file):
    return run("blkid", "-p", "-s", "TYPE", "-o", "value", dev_or_file, check=False).stdout.strip()


def check_manifests(env, node, main_vol, events_vol):
    md = env.manifest_dir(node)
    for name, vol, cluster in (("etcd.manifest", main_vol, "main"), ("etcd-events.manifest", events_vol, "events")):
        link = os.path.join(md, name)
        target = os.path.join(env.mount_path(node, vol), "k8s.io", "manifests", name)
        assert os.path.islink(link), link
        assert os.readlink(link) == target
        with open(link) as f:
            text = f.read()
        # the manifest on the volume is the etcd pod for this member, with its data on this volume
        assert "kind: Pod" in text
        assert ("etcd-server-events" if cluster == "events" else "etcd-server") in text
        assert env.mount_path(node, vol) in text


def test_one_node_claim_format_mount(env):
    env.standard_pool()
    p = env.pk("once", "n1", check=0)
    assert "blank: creating an ext4 filesystem" in p.stderr
    # every claim first; main's manifest before the events volume is waited for, checked and mounted
    # (docs/ARCHITECTURE.md: the API's etcd does not wait for the other volume)
    at = p.stderr.index
    assert at("Claimed volume 'events-a'") < at("Mounted volume 'main-a'"), p.stderr
    assert at("/k8s.io/manifests/etcd.manifest'") < at("Mounted volume 'events-a'"), p.stderr
    assert at("Mounted volume 'events-a'") < at("/k8s.io/manifests/etcd-events.manifest'"), p.stderr
    holders = env.holders()
    assert holders == {"main-a": "n1", "events-a": "n1", "main-b": None, "main-c": None,
                       "events-b": None, "events-c": None}
    for vol in ("main-a", "events-a"):
        dev = loop_of(env.image(vol))
        assert dev, f"no loop device for {vol}"
        assert env.meta(vol)["attachment"]["device"] == dev
        assert env.meta(vol)["attachment"]["internalIPs"] == [node_ip("n1")]
        assert fs_type(dev) == "ext4"
        assert env.mount_path("n1", vol) in mounts_under(env.mount_root("n1"))
    check_manifests(env, "n1", "main-a", "events-a")

    # data written now must survive everything below
    for vol in ("main-a", "events-a"):
        with open(os.path.join(env.mount_path("n1", vol), "marker"), "w") as f:
            f.write("data of " + vol)
    uuids = {vol: fs_uuid(loop_of(env.image(vol))) for vol in ("main-a", "events-a")}
    mtime = os.lstat(os.path.join(env.mount_path("n1", "main-a"), "k8s.io/manifests/etcd.manifest")).st_mtime_ns

    # a second pass changes nothing
    p = env.pk("once", "n1", check=0)
    assert "0 change(s)" in p.stderr, p.stderr
    assert "Claimed" not in p.stderr and "Mounted" not in p.stderr and "ext4 filesystem" not in p.stderr
    assert os.lstat(os.path.join(env.mount_path("n1", "main-a"), "k8s.io/manifests/etcd.manifest")).st_mtime_ns == mtime
    p = env.pk("plan", "n1", check=0)
    assert "nothing to do" in p.stdout, p.stdout

    # unmount (a reboot would also drop the loop devices): the same volumes come back, not reformatted
    env.umount_node("n1")
    assert env.pk("plan", "n1", check=0).stdout.count("mount ") >= 2
    p = env.pk("once", "n1", check=0)
    assert "ext4 filesystem" not in p.stderr
    for vol in ("main-a", "events-a"):
        with open(os.path.join(env.mount_path("n1", vol), "marker")) as f:
            assert f.read() == "data of " + vol
        assert fs_uuid(loop_of(env.image(vol))) == uuids[vol]
    check_manifests(env, "n1", "main-a", "events-a")

    # loop devices gone too (as after a reboot): attach again, same data
    env.umount_node("n1")
    for vol in ("main-a", "events-a"):
        run("losetup", "-d", loop_of(env.image(vol)))
    p = env.pk("once", "n1", check=0)
    assert "ext4 filesystem" not in p.stderr
    for vol in ("main-a", "events-a"):
        with open(os.path.join(env.mount_path("n1", vol), "marker")) as f:
            assert f.read() == "data of " + vol


def test_volumes_and_plan_output(env):
    env.standard_pool()
    env.create("main-x", "main", "x", ["x"], zone="z2")
    env.create("main-bad", "main", "a", ["b", "c"])  # member not in its own list: malformed
    p = env.pk("plan", "n1", check=0)
    lines = p.stdout.splitlines()
    assert "1. claim main-a" in lines
    assert any(l.startswith("6. link-manifest main-a ") for l in lines), p.stdout
    assert env.holders()["main-a"] is None, "plan must change nothing"
    assert mounts_under(env.base) == []
    p = env.pk("volumes", "n1", check=0)
    out = p.stdout
    assert "main-x" in out and "in zone 'z2'" in out
    assert "malformed tag 'k8s.io/etcd/main=a/b,c'" in out
    env.pk("once", "n1", check=0)
    out = env.pk("volumes", "n1", check=0).stdout
    row = [l for l in out.splitlines() if l.startswith("main-a ")][0]
    assert " n1 " in row and "/dev/loop" in row and "mounted" in row and row.rstrip().endswith("yes")
    # the warning for the malformed volume names it
    p = env.pk("once", "n1", check=0)
    assert "Volume 'main-bad' is not eligible: malformed tag" in p.stderr


def test_release_node_handover(env):
    env.standard_pool()
    env.pk("once", "n1", check=0)
    for vol in ("main-a", "events-a"):
        with open(os.path.join(env.mount_path("n1", vol), "marker"), "w") as f:
            f.write("kept " + vol)
    # a mounted volume is not detached behind the filesystem's back
    p = env.pool_cmd("detach", "main-a", check=1)
    assert "busy" in p.stderr.lower(), p.stderr
    # n1 dies: its mounts are gone, then the pool releases what it held
    env.umount_node("n1")
    env.pool_cmd("release-node", "n1")
    assert env.holders()["main-a"] is None and env.holders()["events-a"] is None
    assert loop_of(env.image("main-a")) is None
    env.pk("once", "n2", check=0)
    holders = env.holders()
    assert holders["main-a"] == "n2" and holders["events-a"] == "n2"
    for vol in ("main-a", "events-a"):
        with open(os.path.join(env.mount_path("n2", vol), "marker")) as f:
            assert f.read() == "kept " + vol
    check_manifests(env, "n2", "main-a", "events-a")
    # n1 comes back: it must not touch n2's volumes; it takes the next members
    env.pk("once", "n1", check=0)
    holders = env.holders()
    assert holders["main-b"] == "n1" and holders["events-b"] == "n1" and holders["main-a"] == "n2"


def test_waiting_exit_code(env):
    env.create("main-a", "main", "a", ["a"])
    env.create("events-a", "events", "a", ["a"])
    env.pk("once", "n1", check=0)
    p = env.pk("once", "n2", check=3)
    assert "no free volume of etcd cluster 'main'" in p.stderr
    p = env.pk("once", "n3", zone="z9", check=3)


def md_superblock_v12(size_sectors):
    """An md RAID1 v1.2 superblock (at 4 KiB), for kernels without the md driver where mdadm --create
    cannot run. Layout and checksum as the kernel's struct mdp_superblock_1 / calc_sb_1_csum()."""
    max_dev = 2
    sb = bytearray(256 + 2 * max_dev)
    struct.pack_into("<IIII", sb, 0, 0xA92B4EFC, 1, 0, 0)          # magic, major, feature_map, pad0
    sb[16:32] = bytes(range(1, 17))                                  # set_uuid
    sb[32:45] = b"pk-test:0\0\0\0\0"                                 # set_name
    struct.pack_into("<QIIQIIIIII", sb, 64, 1700000000, 1, 0, size_sectors - 2048, 0, 2, 0, 0, 0, 0)
    struct.pack_into("<QQQQI", sb, 128, 2048, size_sectors - 2048, 8, 0, 0)  # data_offset/size, super_offset
    struct.pack_into("<QQ", sb, 192, 1700000000, 1)                  # utime, events
    struct.pack_into("<Q", sb, 208, 0xFFFFFFFFFFFFFFFF)               # resync_offset
    struct.pack_into("<I", sb, 220, max_dev)                         # max_dev
    struct.pack_into("<HH", sb, 256, 0, 1)                           # dev_roles
    csum = sum(struct.unpack_from("<%dI" % (len(sb) // 4), sb))
    csum = (csum & 0xFFFFFFFF) + (csum >> 32)
    struct.pack_into("<I", sb, 216, csum & 0xFFFFFFFF)
    return bytes(sb)


def make_signature(env, kind, dev):
    """Puts a kind of signature on dev with the Debian tool for it. Returns blkid's TYPE (or PTTYPE)."""
    if kind == "ext4":
        run("mkfs.ext4", "-q", dev)
        return "ext4"
    if kind == "xfs":
        run("mkfs.xfs", "-q", dev)
        return "xfs"
    if kind == "gpt":
        run("sfdisk", "-q", dev, input="label: gpt\n,8M,L\n")
        return "gpt"
    if kind == "luks":
        key = os.path.join(env.base, "luks.key")
        with open(key, "w") as f:
            f.write("not-a-secret")
        run("cryptsetup", "luksFormat", "--batch-mode", "--type", "luks2", "--pbkdf", "pbkdf2",
            "--pbkdf-force-iterations", "1000", "--key-file", key, dev)
        return "crypto_LUKS"
    if kind == "lvm":
        # --devices: lvm looks at this device only, never at the host's disks
        run("pvcreate", "-q", "--devices", dev, dev)
        return "LVM2_member"
    if kind == "swap":
        run("mkswap", dev)
        return "swap"
    if kind == "mdadm":
        if os.path.exists("/proc/mdstat"):
            run("mdadm", "--create", "/dev/md/pktest", "--run", "--level=1", "--raid-devices=2",
                "--metadata=1.2", dev, "missing")
            run("mdadm", "--stop", "/dev/md/pktest")
        else:
            size = int(run("blockdev", "--getsz", dev).stdout)
            with open(dev, "r+b") as f:
                f.seek(4096)
                f.write(md_superblock_v12(size))
        return "linux_raid_member"
    raise AssertionError(kind)


def head_hash(dev):
    with open(dev, "rb") as f:
        return zlib.crc32(f.read(4 * MIB))


@pytest.mark.parametrize("kind", ["gpt", "luks", "lvm", "swap", "mdadm"])
def test_signature_never_formatted(env, kind):
    dev = env.new_loop("sig-" + kind)
    want = make_signature(env, kind, dev)
    probe = run("blkid", "-p", "-o", "export", dev, check=False).stdout
    assert f"TYPE={want}" in probe or f"PTTYPE={want}" in probe, probe
    before = head_hash(dev)
    env.pool_cmd("add-device", dev, "--id", "sig", "--zone", "z1", "--tag", "KubernetesCluster=demo.k8s.test",
                 "--tag", "k8s.io/role/master=1", "--tag", "k8s.io/etcd/main=a/a")
    for _ in range(2):  # and again: a later pass does not give in either
        p = env.pk("once", "n1")
        assert p.returncode == 1, p.stderr
        assert "not formatting it" in p.stderr and want in p.stderr, p.stderr
        assert "ext4 filesystem" not in p.stderr
        # the refusal comes back to the pass as the mount action's error and is logged once, with the action
        # (the pass's summary line then repeats it as the reason the pass failed)
        errors = [l for l in p.stderr.splitlines() if l.startswith("error: Volume 'sig'")]
        assert len(errors) == 1 and "mount failed" in errors[0] and "not formatting it" in errors[0], p.stderr
    assert head_hash(dev) == before
    assert mounts_under(env.base) == []
    assert env.holders()["sig"] == "n1"  # claimed, reported, left alone
    probe = run("blkid", "-p", "-o", "export", dev, check=False).stdout
    assert f"TYPE={want}" in probe or f"PTTYPE={want}" in probe, probe


@pytest.mark.parametrize("kind", ["ext4", "xfs"])
def test_existing_filesystem_used_not_formatted(env, kind):
    dev = env.new_loop("fs-" + kind, size=(320 if kind == "xfs" else 32) * MIB)  # xfs: 300 MiB minimum
    make_signature(env, kind, dev)
    mnt = os.path.join(env.base, "prep")
    os.mkdir(mnt)
    run("mount", dev, mnt)
    with open(os.path.join(mnt, "existing"), "w") as f:
        f.write("old data")
    run("umount", mnt)
    uuid = fs_uuid(dev)
    env.pool_cmd("add-device", dev, "--id", "fs", "--zone", "z1", "--tag", "KubernetesCluster=demo.k8s.test",
                 "--tag", "k8s.io/role/master=1", "--tag", "k8s.io/etcd/main=a/a")
    env.create("events-a", "events", "a", ["a"])
    p = env.pk("once", "n1", check=0)
    assert fs_uuid(dev) == uuid and fs_type(dev) == kind
    with open(os.path.join(env.mount_path("n1", "fs"), "existing")) as f:
        assert f.read() == "old data"
    # an ext4 volume goes through e2fsck -p before mounting, its output in the log
    assert (f"e2fsck: {dev}: clean" in p.stderr) == (kind == "ext4"), p.stderr
    env.umount_node("n1")
    env.pk("once", "n1", check=0)
    assert fs_uuid(dev) == uuid


def test_image_with_filesystem_not_reformatted(env):
    env.create("main-a", "main", "a", ["a"])
    env.create("events-a", "events", "a", ["a"])
    run("mkfs.ext4", "-q", "-F", env.image("main-a"))  # -F: a regular file, not a device
    uuid = fs_uuid(env.image("main-a"))
    p = env.pk("once", "n1", check=0)
    assert fs_uuid(env.image("main-a")) == uuid
    assert p.stderr.count("ext4 filesystem") == 1  # only events-a was blank


def test_other_device_on_mount_point(env):
    env.create("main-a", "main", "a", ["a"])
    env.create("events-a", "events", "a", ["a"])
    other = env.new_loop("other")
    run("mkfs.ext4", "-q", other)
    target = env.mount_path("n1", "main-a")
    os.makedirs(target)
    run("mount", other, target)
    p = env.pk("once", "n1", check=1)
    assert "another device is mounted" in p.stderr.lower() or "Another device" in p.stderr, p.stderr
    # events is independent of main's trouble
    assert env.mount_path("n1", "events-a") in mounts_under(env.mount_root("n1"))
    assert not os.path.exists(os.path.join(env.manifest_dir("n1"), "etcd.manifest"))


def test_device_bound_from_a_mount_namespace_that_is_gone(env):
    """A daemon in a mount namespace of its own (the e2e's, a unit with PrivateMounts) binds the loop devices
    through its copy of the pool's mount; when it exits, sysfs names their backing files by a path relative to
    that mount ("/pool/<id>.img") that leads nowhere. The next pass, in another namespace, must still find each
    device by the backing file's device and inode: before, it bound a second loop device to the same image (and a
    second process saw the volume's mount as another device's)."""
    env.create("main-a", "main", "a", ["a"])
    env.create("events-a", "events", "a", ["a"])
    argv = env.argv("once", "n1")
    # base bound onto itself in a private namespace: the files are opened through a mount only it has
    p = run("unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
            'mount --bind "$0" "$0" && exec "$@"', env.base, *argv, check=False, timeout=120)
    assert p.returncode == 0, p.stderr
    for vol in ("main-a", "events-a"):
        [dev] = loops_of(env.image(vol))
        with open(f"/sys/block/{os.path.basename(dev)}/loop/backing_file") as f:
            assert not f.read().strip().startswith(env.base), "the namespace's mount is not gone"
    # its mounts went with the namespace; the next pass mounts the same devices again
    env.pk("once", "n1", check=0)
    for vol in ("main-a", "events-a"):
        loops = loops_of(env.image(vol))
        assert len(loops) == 1, f"{vol}: bound to {loops}"
        assert env.meta(vol)["attachment"]["device"] == loops[0]
        assert env.mount_path("n1", vol) in mounts_under(env.mount_root("n1"))


def test_pool_cli(env):
    p = env.pool_cmd("create", "--size", "8M", "--zone", "z1", "--tag", "a=b")
    vid = p.stdout.strip()
    assert vid.startswith("vol-")
    env.pool_cmd("create", "--id", vid, "--size", "8M", "--zone", "z1", check=1)
    env.pool_cmd("create", "--id", "x", "--size", "8M", check=2)      # no zone
    env.pool_cmd("create", "--id", "x", "--zone", "z", "--tag", "nokey", check=2)
    out = env.pool_cmd("list").stdout
    assert vid in out and "a=b" in out
    with open(os.path.join(env.pool, "broken.json"), "w") as f:
        f.write('{"version":1,"id":"broken","zone":"z1","size":1,"image":"broken.img","bogus":1}')
    p = env.pool_cmd("list")
    assert "broken.json" in p.stderr and "unknown key 'bogus'" in p.stderr
    env.pool_cmd("detach", vid)
    env.pool_cmd("detach", "nope", check=1)
    env.pool_cmd("release-node", "n1")
    env.pool_cmd("frobnicate", check=2)


def test_fsck_failure_stops_only_that_volume(env):
    env.create("main-a", "main", "a", ["a"])
    env.create("events-a", "events", "a", ["a"])
    img = env.image("main-a")
    run("mkfs.ext4", "-q", "-F", img)
    # damage e2fsck -p will not repair on its own (exit 4: "RUN fsck MANUALLY")
    run("debugfs", "-w", "-R", "clri <2>", img)
    run("debugfs", "-w", "-R", "ssv state 0", img)
    uuid = fs_uuid(img)
    p = env.pk("once", "n1", check=1)
    assert "e2fsck -p" in p.stderr and "exited 4" in p.stderr, p.stderr
    assert env.mount_path("n1", "main-a") not in mounts_under(env.mount_root("n1"))
    assert fs_uuid(img) == uuid  # not reformatted
    # the events volume went on regardless
    assert env.mount_path("n1", "events-a") in mounts_under(env.mount_root("n1"))
    assert os.path.islink(os.path.join(env.manifest_dir("n1"), "etcd-events.manifest"))
    assert not os.path.lexists(os.path.join(env.manifest_dir("n1"), "etcd.manifest"))


def pool_rows(env):
    """{id: row} of `pool list` (rows after the header)."""
    out = env.pool_cmd("list").stdout
    return {l.split()[0]: l for l in out.splitlines()[1:] if l.strip()}


def test_bad_internal_ip_never_reaches_the_pool(env):
    env.create("main-a", "main", "a", ["a"])
    env.create("events-a", "events", "a", ["a"])
    argv = env.argv("once", "n1")
    argv[argv.index("--internal-ip") + 1] = "192.0.2.11 "
    p = run(*argv, check=False)
    assert p.returncode == 2, p.stderr
    assert "invalid --internal-ip '192.0.2.11 '" in p.stderr, p.stderr
    assert env.holders() == {"main-a": None, "events-a": None}
    rows = pool_rows(env)
    assert set(rows) == {"main-a", "events-a"} and "DAMAGED" not in "".join(rows.values())


def test_damaged_record_listed_detached_released(env):
    env.create("main-a", "main", "a", ["a"])
    env.create("events-a", "events", "a", ["a"])
    env.pk("once", "n1", check=0)
    env.umount_node("n1")  # n1 is gone; its loop devices stay bound
    dev_main = loop_of(env.image("main-a"))
    assert dev_main and loop_of(env.image("events-a"))
    # events-a: the claim an older protokube wrote for "--internal-ip '192.0.2.11 '"
    m = env.meta("events-a")
    m["attachment"]["internalIPs"] = ["192.0.2.11 "]
    with open(os.path.join(env.pool, "events-a.json"), "w") as f:
        json.dump(m, f)
    # main-a: garbage
    with open(os.path.join(env.pool, "main-a.json"), "w") as f:
        f.write("garbage{")

    rows = pool_rows(env)
    assert "DAMAGED" in rows["main-a"], rows
    assert "DAMAGED" in rows["events-a"] and " n1 " in rows["events-a"], rows
    assert "not an IP address" in rows["events-a"], rows
    out = env.pk("volumes", "n1", check=0).stdout
    vrows = {l.split()[0]: l for l in out.splitlines() if l.strip()}
    assert "damaged record" in vrows["main-a"] and "damaged record" in vrows["events-a"], out
    # n1 (back again) uses neither and claims nothing in their place
    p = env.pk("once", "n1", check=1)
    assert "damaged record" in p.stderr, p.stderr
    assert env.mount_path("n1", "events-a") not in mounts_under(env.mount_root("n1"))

    # release-node: events-a names n1 (released, rewritten); main-a's holder is unreadable (reported)
    p = env.pool_cmd("release-node", "n1")
    assert "main-a" in p.stderr and "cannot be read" in p.stderr, p.stderr
    assert loop_of(env.image("events-a")) is None
    assert "attachment" not in env.meta("events-a")
    assert env.meta("events-a")["tags"]["k8s.io/etcd/events"] == "a/a"
    assert loop_of(env.image("main-a")) == dev_main
    # detach by id: the loop device goes, the record stays (listed, damaged) for a human to mend
    p = env.pool_cmd("detach", "main-a")
    assert "left as it is" in p.stderr, p.stderr
    assert loop_of(env.image("main-a")) is None
    rows = pool_rows(env)
    assert "DAMAGED" in rows["main-a"] and "DAMAGED" not in rows["events-a"], rows
    env.pool_cmd("detach", "main-a")  # again: still works
    # events-a is usable again, with its data; main-a is never taken
    p = env.pk("once", "n2", check=3)
    assert env.meta("events-a")["attachment"]["node"] == "n2"
    assert "DAMAGED" in pool_rows(env)["main-a"]


def machine_id_file(env, name, content):
    path = os.path.join(env.base, name)
    with open(path, "w") as f:
        f.write(content)
    return {"PROTOKUBE_MACHINE_ID_FILE": path}


def test_same_node_name_other_machine_is_not_the_holder(env):
    env.create("main-a", "main", "a", ["a"])
    env.create("events-a", "events", "a", ["a"])
    m1 = machine_id_file(env, "machine-id-1", "1" * 32 + "\n")
    m2 = machine_id_file(env, "machine-id-2", "2" * 32 + "\n")
    env.pk("once", "n1", check=0, env=m1)
    att = env.meta("main-a")["attachment"]
    assert att["node"] == "n1" and att["machineID"] == "1" * 32
    # a second machine calling itself n1 neither claims nor counts as holder
    p = env.pk("once", "n1", check=1, env=m2)
    assert "1" * 32 in p.stderr and "2" * 32 in p.stderr, p.stderr
    assert "same node name" in p.stderr, p.stderr
    assert env.meta("main-a")["attachment"]["machineID"] == "1" * 32
    out = env.pk("volumes", "n1", check=0, env=m2).stdout
    row = [l for l in out.splitlines() if l.startswith("main-a ")][0]
    assert "mounted" not in row, row
    # the first machine still is
    p = env.pk("once", "n1", check=0, env=m1)
    assert "0 change(s)" in p.stderr, p.stderr
    # a machine-id file that is not one is an error naming the file
    bad = machine_id_file(env, "machine-id-bad", "uninitialized\n")
    p = env.pk("once", "n1", check=1, env=bad)
    assert bad["PROTOKUBE_MACHINE_ID_FILE"] in p.stderr and "hexadecimal" in p.stderr, p.stderr
