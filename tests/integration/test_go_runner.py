# SPDX-License-Identifier: Apache-2.0
"""tools/go-runner/go-runner.c, the /go-runner of the test images (scripts/k8s-images.sh), built static as the
script builds it: the child's stdout and stderr go to the log file (appended) and, with --also-stdout, to its
own stdout; SIGTERM reaches the child (kubelet stops a container with SIGTERM to its first process); the exit
status is the child's (128 + N for a signal); bad flags are usage errors."""
import os
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import ROOT

SRC = os.path.join(ROOT, "tools", "go-runner", "go-runner.c")


@pytest.fixture(scope="module")
def runner():
    d = tempfile.mkdtemp(prefix="pk-go-runner-")
    exe = os.path.join(d, "go-runner")
    p = subprocess.run(["gcc", "-std=gnu11", "-Os", "-static", "-Wall", "-Wextra", "-Werror", "-o", exe, SRC],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    yield exe, d
    subprocess.run(["rm", "-rf", d], timeout=30)


def test_tees_stdout_and_stderr_appending_and_keeps_the_status(runner):
    exe, d = runner
    log = os.path.join(d, "tee.log")
    with open(log, "w") as f:
        f.write("earlier\n")
    p = subprocess.run([exe, f"--log-file={log}", "--also-stdout", "sh", "-c", "echo out; echo err >&2; exit 3"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 3
    assert sorted(p.stdout.split()) == ["err", "out"] and p.stderr == ""
    with open(log) as f:
        lines = f.read().split()
    assert lines[0] == "earlier" and sorted(lines[1:]) == ["err", "out"]


def test_log_file_only_without_also_stdout(runner):
    exe, d = runner
    log = os.path.join(d, "only.log")
    p = subprocess.run([exe, f"-log-file={log}", "echo", "quiet"],  # Go style: one dash
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stdout == ""
    with open(log) as f:
        assert f.read() == "quiet\n"


def test_no_flags_runs_the_command_with_output_on_stdout(runner):
    exe, _ = runner  # kube-controller-manager's manifest: `/go-runner /usr/local/bin/kube-controller-manager ...`
    p = subprocess.run([exe, "sh", "-c", "echo hello; exit 0"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stdout == "hello\n"


def test_sigterm_is_forwarded_and_the_childs_status_returned(runner):
    exe, d = runner
    log = os.path.join(d, "term.log")
    child = "trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.1; done"
    proc = subprocess.Popen([exe, f"--log-file={log}", "sh", "-c", child], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (os.path.exists(log) and "ready" in open(log).read()):
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 7
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    with open(log) as f:
        assert f.read().split() == ["ready", "got-term"]


def test_a_child_killed_by_a_signal_gives_128_plus_n(runner):
    exe, _ = runner
    p = subprocess.run([exe, "sh", "-c", "kill -KILL $$"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 128 + signal.SIGKILL


@pytest.mark.parametrize("argv, code, message", [
    (["--bogus", "true"], 2, "unknown flag '--bogus'"),
    (["--also-stdout"], 2, "usage:"),
    (["/nonexistent/binary"], 127, "cannot run '/nonexistent/binary'"),
    (["--log-file=/nonexistent/dir/x.log", "true"], 1, "cannot open log file '/nonexistent/dir/x.log'"),
])
def test_errors(runner, argv, code, message):
    exe, _ = runner
    p = subprocess.run([exe, *argv], capture_output=True, text=True, timeout=30)
    assert p.returncode == code and message in p.stderr, (p.returncode, p.stderr)
