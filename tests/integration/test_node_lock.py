# SPDX-License-Identifier: Apache-2.0
"""One writer of a node's state at a time (src/daemon/node-lock.h), through the real binary: two processes
that write the same certificate pairs (`pki renew` twice at once, as the daemon's pass and an operator's
renew would) never leave a pair's current generation removed under it, and a reader of the pairs' public
paths never fails meanwhile; a process that cannot take the lock waits a bounded time and then names the
holder. File store, one master (n1) on loop devices."""
import fcntl
import os
import shutil
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import need_root
from test_certs import CertEnv

ROUNDS = 12


@pytest.fixture
def node():
    need_root()
    store = tempfile.mkdtemp(prefix="pk-lock-store-")
    env = CertEnv("file://" + store, {})
    env.state = os.path.join(env.base, "state-n1")
    env.store_env = {"PROTOKUBE_STATE_DIR": env.state}
    env.standard_pool()
    env.pk("once", "n1", check=0)
    yield env
    errors = env.cleanup()
    shutil.rmtree(store, ignore_errors=True)
    assert not errors, errors


def pairs(pki):
    """(directory, pair name) of every certificate pair under the node's pki dir."""
    out = []
    for d, _, files in os.walk(pki):
        out += [(d, f[:-4]) for f in files if f.endswith(".crt") and os.path.islink(os.path.join(d, f))]
    return out


def broken_pairs(pki):
    bad = []
    for d, name in pairs(pki):
        cur = os.path.join(d, f".{name}.current")
        for ext in (".crt", ".key"):
            if not os.path.isfile(os.path.join(cur, name + ext)):
                bad.append(f"{cur}/{name}{ext} -> {os.readlink(cur) if os.path.islink(cur) else '?'}")
    return bad


def renew_argv(env):
    argv = env.argv("once", "n1")
    argv[2] = env.node_spec("n1")
    argv[3:4] = ["pki", "renew"]
    return argv


def test_two_writers_never_remove_the_current_generation(node):
    env = node
    pki = env.pki("n1")
    assert len(pairs(pki)) >= 4, pairs(pki)
    run_env = dict(os.environ, PROTOKUBE_STATE_DIR=env.state)
    stop, read_errors = threading.Event(), []

    def reader():  # what a component does: open both public paths of every pair
        while not stop.is_set():
            for d, name in pairs(pki):
                for ext in (".crt", ".key"):
                    try:
                        with open(os.path.join(d, name + ext), "rb") as f:
                            f.read()
                    except OSError as e:
                        read_errors.append(f"{name}{ext}: {e}")
            time.sleep(0.001)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    failures, argv = [], renew_argv(env)  # the spec file is written once: not under the processes reading it
    try:
        for i in range(ROUNDS):
            procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      env=run_env) for _ in range(2)]
            for p in procs:
                out, err = p.communicate(timeout=120)
                if p.returncode != 0:
                    failures.append(f"round {i}: exit {p.returncode}: {err[-600:]}")
            bad = broken_pairs(pki)
            if bad:
                failures.append(f"round {i}: {bad[:3]}")
    finally:
        stop.set()
        t.join(timeout=10)
    assert not failures, failures
    assert not read_errors, read_errors[:5]


def hold_lock(path, seconds):
    """Another protokube, as the kernel sees it: a flock on the node's lock file with its pid written."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    os.write(fd, b"%d\n" % os.getpid())
    threading.Timer(seconds, lambda: os.close(fd)).start()


def test_a_second_writer_waits_then_names_the_holder(node):
    env = node
    lock = os.path.join(env.state, "lock")
    hold_lock(lock, 1.5)  # shorter than the wait: the pass goes on once it is released
    t0 = time.monotonic()
    p = env.pk("once", "n1")
    assert p.returncode == 0, p.stderr
    assert time.monotonic() - t0 >= 1.4
    hold_lock(lock, 40)  # longer than the wait (30 s): refused, the holder named, nothing written
    before = sorted(os.listdir(env.pki("n1")))
    p = env.pk("pki renew", "n1", timeout=90)
    assert p.returncode == 1, p.stdout + p.stderr
    assert f"another protokube (pid {os.getpid()}) holds the node's state ('{lock}'); waited 30 s" in p.stderr, \
        p.stderr
    assert sorted(os.listdir(env.pki("n1"))) == before
