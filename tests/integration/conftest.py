# Shared fixtures for the integration tests: the binary under test, and a helper that runs it.
import os
import subprocess
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IN_CI = os.environ.get("CI") == "true"


def protokube_bin():
    return os.environ.get("PROTOKUBE_BIN", os.path.join(ROOT, "build", "src", "cli", "protokube"))


@pytest.fixture
def pk():
    """Runs protokube with the given arguments; returns CompletedProcess (text)."""
    def run(*args, check=None, env=None, timeout=120, input=None):
        e = dict(os.environ)
        if env:
            e.update(env)
        p = subprocess.run([protokube_bin(), *args], capture_output=True, text=True, env=e,
                           timeout=timeout, input=input)
        if check is not None and p.returncode != check:
            raise AssertionError(f"protokube {' '.join(args)} exited {p.returncode}, wanted {check}\n"
                                 f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        return p
    return run


def need_root():
    """Integration tests need root for loop devices, mounts and namespaces; in CI missing root is a failure."""
    if os.geteuid() != 0:
        if IN_CI:
            pytest.fail("this test needs root and CI runs as root")
        pytest.skip("needs root")


@pytest.fixture
def main_volumes():
    """A local pool for one etcd cluster (main) on real loop devices (loopdev.VolEnv), cleaned up after the
    test; the cleanup must find nothing left mounted."""
    from loopdev import VolEnv
    need_root()
    e = VolEnv(protokube_bin(), clusters=("main",))
    yield e
    errors = e.cleanup()
    assert not errors, errors
