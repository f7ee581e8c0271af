# Bash completion (data/completion/protokube, installed by meson) sourced in a real bash against the real
# binary: the completions of a few command lines, as bash would offer them on TAB.
import os
import shlex
import subprocess

import pytest

from conftest import ROOT, protokube_bin

SCRIPT = os.path.join(ROOT, "data", "completion", "protokube")


@pytest.fixture
def complete(tmp_path):
    # the completion runs the command as typed (COMP_WORDS[0]): "protokube" on PATH, as installed
    (tmp_path / "bin").mkdir()
    os.symlink(os.path.abspath(protokube_bin()), tmp_path / "bin" / "protokube")

    def run(line):
        """The completions of `line` with the cursor at its end (a trailing space: a new word)."""
        words = shlex.split(line) + ([""] if line.endswith(" ") else [])
        script = (f"source {shlex.quote(SCRIPT)}\n"
                  f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})\n"
                  f"COMP_CWORD={len(words) - 1}\n"
                  "_protokube\n"
                  "printf '%s\\n' \"${COMPREPLY[@]}\"\n")
        env = dict(os.environ, PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
        p = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True,
                           env=env, cwd=tmp_path, timeout=60)
        assert p.returncode == 0, p.stderr
        assert p.stderr == "", p.stderr
        return sorted(w for w in p.stdout.splitlines() if w)

    return run


def test_is_registered_for_protokube():
    p = subprocess.run(["bash", "--norc", "-c", f"source {shlex.quote(SCRIPT)}; complete -p protokube"],
                       capture_output=True, text=True, timeout=30)
    assert p.stdout.strip() == "complete -F _protokube protokube", p.stdout + p.stderr


def test_verbs(complete):
    assert complete("protokube va") == ["validate"]
    assert complete("protokube p") == ["pivot", "pki", "plan", "pool"]
    assert "run" in complete("protokube ") and "version" in complete("protokube ")


def test_verb_after_global_options_with_values(complete):
    # -c FILE and --log-level LEVEL take the next word: "x.yaml" and "debug" are not the verb
    assert complete("protokube -c x.yaml --log-level debug pl") == ["plan"]


def test_sub_verbs(complete):
    assert complete("protokube pool ") == ["add-device", "create", "detach", "list", "release-node"]
    assert complete("protokube store put") == ["put", "put-if-absent"]
    assert complete("protokube pki r") == ["renew"]
    assert complete("protokube dns s") == ["sync"]


def test_options(complete):
    assert complete("protokube pool create --s") == ["--size"]
    assert complete("protokube once --node") == ["--node-name"]
    assert complete("protokube wipe --yes") == ["--yes-destroy-data"]
    assert complete("protokube --log") == ["--log-format", "--log-level"]
    # an option of another verb is not offered
    assert complete("protokube validate --si") == []


def test_option_values(complete, tmp_path):
    assert complete("protokube --log-level ") == ["debug", "error", "info", "warning"]
    assert complete("protokube --log-format j") == ["json"]
    (tmp_path / "cluster.yaml").write_text("")
    assert complete("protokube validate -c clu") == ["cluster.yaml"]
    assert complete("protokube pool list --pool bi") == ["bin"]  # a directory
