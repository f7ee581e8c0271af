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


# The machine's own directories of a node's files (protokube's defaults for --config-dir and --kubelet-dir):
# every test gives each node directories of its own, so a test that wrote here would share them with every
# other node of the machine, and leave them behind. (The kubelet itself makes /var/lib/kubelet/device-plugins,
# a path compiled into it: the directory is not checked, the files protokube writes there are.)
MACHINE_FILES = ["/var/lib/kube-proxy", "/var/lib/kube-scheduler", "/var/lib/kubelet/config.yaml",
                 "/var/lib/kubelet/kubelet.env"]


@pytest.fixture(autouse=True)
def nothing_written_to_the_machines_node_directories():
    before = {p for p in MACHINE_FILES if os.path.lexists(p)}
    yield
    made = [p for p in MACHINE_FILES if os.path.lexists(p) and p not in before]
    assert not made, f"a test wrote the machine's own node files (give its protokube --config-dir and " \
                     f"--kubelet-dir): {made}"
