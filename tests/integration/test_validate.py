# `protokube validate`: every golden case under tests/golden/spec (exact stderr, exit code), the example
# clusters, and the CLI contract (-c before or after the verb, usage errors). Runs from the repository root so
# the file names in the messages match the golden files.
import glob
import os
import shutil
import tempfile

import pytest

from conftest import ROOT

GOLDEN_DIR = os.path.join(ROOT, "tests", "golden", "spec")
CASES = sorted(os.path.basename(p)[:-len(".yaml")] for p in glob.glob(os.path.join(GOLDEN_DIR, "*.yaml")))
EXAMPLES = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "examples", "*.yaml")))
NO_ENV = {"PROTOKUBE_CONFIG": ""}


@pytest.fixture
def validate(pk, monkeypatch):
    monkeypatch.chdir(ROOT)

    def run(*args):
        return pk(*args, env=NO_ENV, timeout=60)
    return run


def test_golden_set_is_complete():
    assert len(CASES) >= 15, CASES
    missing = [c for c in CASES if not os.path.exists(os.path.join(GOLDEN_DIR, c + ".expected"))]
    assert not missing, f"no .expected for {missing}: run scripts/update-golden-spec.sh"
    assert any(c.startswith("valid") for c in CASES)


@pytest.mark.parametrize("case", CASES)
def test_golden(validate, case):
    rel = f"tests/golden/spec/{case}.yaml"
    with open(os.path.join(GOLDEN_DIR, case + ".expected"), encoding="utf-8") as f:
        expected = f.read()
    p = validate("validate", "-c", rel)
    assert p.stderr == expected, f"stderr differs for {rel}:\n{p.stderr}"
    if expected:
        assert p.returncode == 1
        assert p.stdout == ""
        for line in expected.splitlines():
            assert line.startswith(rel + ":"), line
    else:
        assert p.returncode == 0
        assert p.stdout == f"{rel}: ok\n"


@pytest.mark.parametrize("example", EXAMPLES)
def test_examples_are_valid(validate, example):
    p = validate("validate", "-c", example)
    assert (p.returncode, p.stdout, p.stderr) == (0, f"{example}: ok\n", "")


def test_examples_exist():
    assert "examples/cluster.yaml" in EXAMPLES


def test_config_before_verb(validate):
    p = validate("-c", "examples/cluster.yaml", "validate")
    assert (p.returncode, p.stdout) == (0, "examples/cluster.yaml: ok\n")


def test_config_from_environment(pk, monkeypatch):
    monkeypatch.chdir(ROOT)
    p = pk("validate", env={"PROTOKUBE_CONFIG": "examples/cluster.yaml"})
    assert (p.returncode, p.stdout) == (0, "examples/cluster.yaml: ok\n")


def test_missing_config_is_usage_error(validate):
    p = validate("validate")
    assert p.returncode == 2
    assert "-c FILE" in p.stderr


def test_extra_argument_is_usage_error(validate):
    p = validate("validate", "-c", "examples/cluster.yaml", "other.yaml")
    assert p.returncode == 2
    assert "unexpected argument 'other.yaml'" in p.stderr


def test_unreadable_file_is_error(validate):
    p = validate("validate", "-c", "tests/golden/spec/does-not-exist.yaml")
    assert p.returncode == 1
    assert "does-not-exist.yaml" in p.stderr
    assert "No such file" in p.stderr


def test_errors_follow_the_file(validate):
    """A broken copy of the example reports its own name and the line of the change."""
    d = tempfile.mkdtemp(prefix="pk-validate-")
    try:
        with open(os.path.join(ROOT, "examples", "cluster.yaml"), encoding="utf-8") as f:
            lines = f.read().splitlines()
        idx = next(i for i, l in enumerate(lines) if l.strip() == "ttl: 60")
        lines[idx] = lines[idx].replace("60", "0")
        path = os.path.join(d, "broken.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        p = validate("validate", "-c", path)
        assert p.returncode == 1
        col = lines[idx].index("0") + 1
        assert p.stderr == f"{path}:{idx + 1}:{col}: spec.dns.ttl: '0' is out of range 1..86400\n"
    finally:
        shutil.rmtree(d)


def test_oversized_file_is_rejected(validate):
    d = tempfile.mkdtemp(prefix="pk-validate-")
    try:
        path = os.path.join(d, "big.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write("# " + "x" * (1024 * 1024) + "\n")
        p = validate("validate", "-c", path)
        assert p.returncode == 1
        assert p.stderr == f"{path}:1:1: file is larger than 1 MiB\n"
    finally:
        shutil.rmtree(d)


def test_alias_bomb_is_refused_quickly(validate):
    d = tempfile.mkdtemp(prefix="pk-validate-")
    try:
        path = os.path.join(d, "bomb.yaml")
        doc = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        for i in range(1, 12):
            doc.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(doc) + "\n")
        p = validate("validate", "-c", path)
        assert p.returncode == 1
        assert "anchors and aliases are not supported" in p.stderr
    finally:
        shutil.rmtree(d)
