# A child killed by a signal is a failure (review item 5): e2fsck ended by SIGSEGV or the OOM killer has said
# nothing about the filesystem, so the volume is not mounted and the error names the signal. The real e2fsck
# runs first (a wrapper found first on PATH, as a crash after its work would look), then the wrapper dies by
# the signal.
import os
import stat
import subprocess

import pytest

from loopdev import mounts_under


@pytest.fixture
def env(main_volumes):
    return main_volumes


def wrapper_path(env, signal):
    d = os.path.join(env.base, "bin-" + signal)
    os.makedirs(d)
    real = subprocess.run(["sh", "-c", "command -v e2fsck"], capture_output=True, text=True).stdout.strip()
    w = os.path.join(d, "e2fsck")
    with open(w, "w") as f:
        f.write(f"#!/bin/sh\n\"{real}\" \"$@\"\nkill -{signal} $$\n")
    os.chmod(w, stat.S_IRWXU)
    return d + ":" + os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")


@pytest.mark.parametrize("signal,name", [("SEGV", "SIGSEGV (Segmentation fault)"), ("KILL", "SIGKILL (Killed)")])
def test_fsck_killed_by_signal_is_an_error(env, signal, name):
    env.create("vol-a", "main", "a", ("a",))
    env.pk("once", "n1", check=0)  # formats and mounts
    env.umount_node("n1")

    p = subprocess.run(env.argv("once", "n1"), capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PATH": wrapper_path(env, signal)})
    assert p.returncode == 1, p.stderr
    assert "e2fsck '/dev/loop" in p.stderr and f"was killed by signal {name}" in p.stderr, p.stderr
    assert "corrected errors" not in p.stderr
    assert not mounts_under(env.mount_root("n1")), "mounted after a crashed fsck"
