# Several masters against one pool at the same moment (a claim is compare-and-set: exactly one wins), and
# kill -9 at random moments of a pass (crash safety). Both repeat many times; both check invariants on the real pool, mounts and files.
import os
import random
import signal
import subprocess
import time

import yaml

import pytest

from conftest import need_root, protokube_bin
from loopdev import VolEnv, loop_of, mounts_under

RACE_ROUNDS = 100
KILL_ROUNDS = 50


@pytest.fixture
def env():
    need_root()
    e = VolEnv(protokube_bin())
    yield e
    errors = e.cleanup()
    assert not errors, errors


def cluster_of(vid):
    return vid.split("-")[0]


def check_race_invariants(env, nodes, codes, n_members):
    holders = env.holders()
    per_node = {n: [v for v, h in holders.items() if h == n] for n in nodes}
    for n, vols in per_node.items():
        clusters = [cluster_of(v) for v in vols]
        # no node with two members of one etcd cluster
        assert len(clusters) == len(set(clusters)), f"{n} holds {vols}"
        # exit code agrees with what it holds: both -> converged, else waiting
        want = 0 if len(vols) == 2 else 3
        assert codes[n] == want, f"{n} holds {vols}, exited {codes[n]}"
        for v in vols:
            # mounted at the holder's mount point, by the holder only
            assert env.mount_path(n, v) in mounts_under(env.mount_root(n)), (n, v)
            for other in nodes:
                if other != n:
                    assert env.mount_path(other, v) not in mounts_under(env.mount_root(other))
    for c in ("main", "events"):
        held = [v for v, h in holders.items() if h and cluster_of(v) == c]
        # every volume that can be held is held
        assert len(held) == min(len(nodes), n_members), (c, holders)


def node_env(env, node):
    """Each simulated master with its own state directory, as each machine has: the node's lock is per
    machine, so masters sharing one would take turns instead of racing for the pool."""
    return dict(os.environ, PROTOKUBE_STATE_DIR=os.path.join(env.base, f"state-{node}"))


def test_race_many_masters(env):
    members = ("a", "b", "c")
    env.standard_pool(members)
    rng = random.Random(4242)
    start = time.monotonic()
    for rnd in range(RACE_ROUNDS):
        nodes = [f"m{rnd % 7}x{k}" for k in range(3 + rnd % 3)]  # 3 to 5 nodes, names vary
        rng.shuffle(nodes)
        procs = {}
        for n in nodes:  # started back to back, before any of them got far
            procs[n] = subprocess.Popen(env.argv("once", n), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=node_env(env, n))
        codes, errs = {}, {}
        for n, p in procs.items():
            out, err = p.communicate(timeout=60)
            codes[n], errs[n] = p.returncode, err
        try:
            check_race_invariants(env, nodes, codes, len(members))
        except AssertionError as e:
            raise AssertionError(f"round {rnd}: {e}\n" + "\n".join(f"--- {n}\n{errs[n]}" for n in nodes))
        # the next round starts from a free pool (the filesystems stay: later rounds only mount)
        for n in nodes:
            env.umount_node(n)
            env.pool_cmd("release-node", n)
        assert all(h is None for h in env.holders().values())
    elapsed = time.monotonic() - start
    print(f"{RACE_ROUNDS} race rounds in {elapsed:.1f}s")
    assert elapsed < 180


def holders_of_devices(env):
    """Diagnostics: which processes have the pool's loop devices open, what is mounted."""
    out = []
    devs = {loop_of(env.image(v)): v for v in env.holders() if loop_of(env.image(v))}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                t = os.readlink(f"/proc/{pid}/fd/{fd}")
                if t in devs:
                    with open(f"/proc/{pid}/cmdline") as f:
                        out.append(f"{pid} {f.read().replace(chr(0), ' ')} has {t}")
        except OSError:
            continue
    with open("/proc/self/mountinfo") as f:
        out += [l.strip() for l in f if any(d and d.split("/")[-1] in l for d in devs)]
    return "\n".join(out) + f"\ndevices {devs}"


def reference_manifests(env, node):
    """name -> text of the manifests written by a clean pass."""
    out = {}
    for name in ("etcd.manifest", "etcd-events.manifest"):
        with open(os.path.join(env.manifest_dir(node), name)) as f:
            out[name] = f.read()
    return out


# The pass also writes these into the manifest directory (src/daemon/pass.c).
CONTROL_PLANE = {"kube-apiserver.manifest", "kube-controller-manager.manifest", "kube-scheduler.manifest",
                 "kube-proxy.manifest"}


def test_kill9_mid_pass_converges(env):
    env.standard_pool()
    node = "n1"
    env.pk("once", node, check=0)
    for vol in ("main-a", "events-a"):
        with open(os.path.join(env.mount_path(node, vol), "marker"), "w") as f:
            f.write("survives " + vol)
    ref = reference_manifests(env, node)
    rng = random.Random(777)
    killed_early = 0
    for rnd in range(KILL_ROUNDS):
        # undo part of the state so the killed pass has work to do
        level = rnd % 4
        if level >= 1:
            for name in ref:
                p = os.path.join(env.manifest_dir(node), name)
                if os.path.lexists(p):
                    os.unlink(p)
        if level >= 2:
            env.umount_node(node)
        if level >= 3:
            p = env.pool_cmd("release-node", node, check=None)
            assert p.returncode == 0, f"round {rnd}: {p.stderr}\n{holders_of_devices(env)}"
        # a crash of the node: the whole process group, children (e2fsck) included
        p = subprocess.Popen(env.argv("once", node), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        time.sleep(rng.uniform(0, 0.03))
        if p.poll() is None:
            killed_early += 1
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(timeout=30)
        # a new pass converges
        q = env.pk("once", node)
        assert q.returncode == 0, f"round {rnd} (level {level}): exited {q.returncode}\n{q.stderr}"
        assert "ext4 filesystem" not in q.stderr, f"round {rnd}: reformatted!\n{q.stderr}"
        holders = env.holders()
        assert holders["main-a"] == node and holders["events-a"] == node, holders
        assert sum(1 for h in holders.values() if h) == 2, holders
        for vol in ("main-a", "events-a"):
            with open(os.path.join(env.mount_path(node, vol), "marker")) as f:
                assert f.read() == "survives " + vol, f"round {rnd}: data lost on {vol}"
            assert loop_of(env.image(vol)) is not None
        # complete manifests, through the links, and no temp files kubelet could pick up
        assert reference_manifests(env, node) == ref
        for d in (env.manifest_dir(node),):
            for name in os.listdir(d):
                if name in CONTROL_PLANE:
                    # written by the same pass (atomically): complete YAML, never a torn file
                    with open(os.path.join(d, name)) as f:
                        assert yaml.safe_load(f)["kind"] == "Pod", name
                    continue
                assert name in ref or name.startswith("."), name
        # the pool is consistent: every metadata file parses
        env.pool_cmd("list")
        # only the two volumes' loop devices exist for this pool
        assert len([v for v in env.holders() if loop_of(env.image(v))]) == 2
    print(f"{KILL_ROUNDS} kill rounds, {killed_early} killed while running")
    assert killed_early >= KILL_ROUNDS // 4, "the kills came too late to test anything"


def test_kill9_during_first_format(env):
    """A crash while a blank volume is being claimed and formatted must not leave it unusable."""
    rng = random.Random(99)
    for rnd in range(15):
        vm, ve = f"main-r{rnd}", f"events-r{rnd}"
        env.create(vm, "main", "a", ["a"])
        env.create(ve, "events", "a", ["a"])
        node = f"k{rnd}"
        p = subprocess.Popen(env.argv("once", node), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        time.sleep(rng.uniform(0, 0.05))
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(timeout=30)
        q = env.pk("once", node)
        assert q.returncode == 0, f"round {rnd}: exited {q.returncode}\n{q.stderr}"
        for vol in (vm, ve):
            assert env.mount_path(node, vol) in mounts_under(env.mount_root(node))
        # retire this round's volumes so the next round's are the only free ones
        env.umount_node(node)
        env.pool_cmd("release-node", node)
        for vol in (vm, ve):
            meta = os.path.join(env.pool, vol + ".json")
            os.unlink(meta)
