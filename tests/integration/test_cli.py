import os
import re
import subprocess

import pytest

from conftest import ROOT, need_root, protokube_bin

NO_SPEC = "no cluster spec given: use -c FILE or set PROTOKUBE_CONFIG"


def test_version(pk):
    # in a git checkout the build says which commit it is (scripts/version.sh: git describe, else
    # PROJECT_VERSION-gHASH); from a tarball, the project version of meson.build
    with open(os.path.join(ROOT, "meson.build")) as f:
        project = re.search(r"version : '([^']+)'", f.read()).group(1)
    v = subprocess.run(["sh", os.path.join(ROOT, "scripts", "version.sh"), ROOT, project],
                       capture_output=True, text=True)
    want = v.stdout.strip() if v.returncode == 0 else project
    assert pk("version", check=0).stdout == f"protokube {want}\n"
    assert pk("--version", check=0).stdout == f"protokube {want}\n"


def test_unknown_verb_is_usage_error(pk):
    p = pk("frobnicate")
    assert p.returncode == 2
    assert "unknown verb 'frobnicate'" in p.stderr


def test_bad_log_level_is_usage_error(pk):
    p = pk("--log-level", "loud", "version")
    assert p.returncode == 2
    assert "invalid --log-level 'loud'" in p.stderr


def test_bad_address_is_refused_naming_option_and_value(pk):
    # an address enters as exactly one IP literal, or the verb fails before anything is written
    for value in ("192.0.2.11 ", "192.0.2.11,192.0.2.12", "node1", "10.0.0.1/24"):
        p = pk("plan", "--internal-ip", value, check=2)
        assert f"invalid --internal-ip '{value}'" in p.stderr, p.stderr
    p = pk("plan", "--external-ip", "203.0.113.7 ", check=2)
    assert "invalid --external-ip '203.0.113.7 '" in p.stderr, p.stderr
    p = pk("plan", check=2, env={"PROTOKUBE_INTERNAL_IP": "192.0.2.11 "})
    assert "invalid PROTOKUBE_INTERNAL_IP '192.0.2.11 '" in p.stderr, p.stderr
    # the option wins over the environment, and a good value passes on to the next check
    p = pk("plan", "--internal-ip", "192.0.2.11", check=2, env={"PROTOKUBE_INTERNAL_IP": "bad"})
    assert NO_SPEC in p.stderr, p.stderr


# --help, generated from the option tables the parser uses. The verbs come from `protokube --help` and the
# sub-verbs from each verb's --help, so a new verb or sub-verb is covered without touching this file.

def _help(*path):
    p = subprocess.run([protokube_bin(), *path, "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, f"protokube {' '.join(path)} --help exited {p.returncode}: {p.stderr}"
    return p.stdout


def _section(text, title):
    """The names in the first column of a help section (the lines after TITLE..., up to a blank line)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    names = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        names.append(line.split()[0])
    return names


def _options(text):
    """{"--name": takes_value} for every option the help lists."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^  (?:-\w, |    )(--[a-z][a-z-]*)( \S+)?  ", line)
        if m:
            out[m.group(1)] = m.group(2) is not None
    return out


def _names(text, title):
    """Like _section(), but for collecting the test cases: a help without the section gives none."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(title)), None)
    return [] if start is None else _section(text, title)


def _verb_paths():
    """The verbs listed by `protokube --help` and the commands listed by each one's --help. Lenient: the tests
    below, not the collection, fail on a help that is missing or malformed."""
    run = lambda *path: subprocess.run([protokube_bin(), *path, "--help"], capture_output=True, text=True,
                                       timeout=30).stdout
    paths = []
    for verb in re.findall(r"^  ([a-z][a-z-]*)  +\S", run(), re.M):
        paths.append((verb,))
        paths += [(verb, sub) for sub in _names(run(verb), "commands")]
    return paths

VERB_PATHS = _verb_paths()
ALL_OPTIONS = {}
for _path in VERB_PATHS:
    ALL_OPTIONS.update(_options(subprocess.run([protokube_bin(), *_path, "--help"], capture_output=True,
                                               text=True, timeout=30).stdout))


def test_help_lists_the_verbs_and_sub_verbs():
    names = [" ".join(p) for p in _verb_paths()]
    for expected in ("run", "once", "plan", "render", "validate", "volumes", "dns", "dns sync", "pool",
                     "pool create", "pool add-device", "pool list", "pool detach", "pool release-node",
                     "version"):
        assert expected in names, names
    assert "PROTOKUBE_CONFIG" in _help()


@pytest.mark.parametrize("path", VERB_PATHS, ids=" ".join)
def test_every_verb_answers_help_with_its_usage_and_options(pk, path):
    p = pk(*path, "--help", check=0, env={"PROTOKUBE_CONFIG": ""})
    assert p.stdout.startswith(f"usage: protokube [GLOBAL OPTIONS] {' '.join(path)}"), p.stdout
    options = _options(p.stdout)
    assert "--help" in options and "--config" in options, p.stdout
    assert p.stderr == ""
    # -h is the same
    assert pk(*path, "-h", check=0).stdout == p.stdout


@pytest.mark.parametrize("path", VERB_PATHS, ids=" ".join)
def test_help_lists_exactly_the_options_the_parser_accepts(pk, path):
    listed = _options(_help(*path))
    for opt, takes_value in ALL_OPTIONS.items():
        args = [opt, "x"] if takes_value else [opt]
        p = pk(*path, *args, "--help", env={"PROTOKUBE_CONFIG": ""})
        if opt in listed:
            assert "unknown option" not in p.stderr, (opt, p.stderr)
        else:
            assert p.returncode == 2 and f"unknown option '{opt}'" in p.stderr, (opt, p.returncode, p.stderr)


def test_node_options_are_listed_where_they_are_taken():
    node = {"--node-name", "--zone", "--internal-ip", "--external-ip", "--machine-id-file", "--manifest-dir",
            "--mount-root", "--pool", "--interval", "--listen"}
    for path in [("run",), ("once",), ("plan",), ("volumes",), ("dns",), ("dns", "sync"), ("pool", "list")]:
        assert node <= set(_options(_help(*path))), path
    for path in [("validate",), ("version",)]:
        assert not node & set(_options(_help(*path))), path
    # render --self-hosted takes the nodes' directories the managed kubelet's pod mounts, and no other
    assert node & set(_options(_help("render"))) == {"--manifest-dir", "--mount-root"}
    text = _help("pool", "create")
    assert {"--size", "--id", "--tag", "--zone", "--pool"} <= set(_options(text))
    assert "PROTOKUBE_ZONE" in text and "PROTOKUBE_POOL" in text


@pytest.mark.parametrize("path", VERB_PATHS, ids=" ".join)
def test_one_no_spec_wording_for_every_verb_that_needs_a_spec(pk, path):
    if "needs the cluster spec" not in _help(*path):
        pytest.skip("does not read the spec")
    p = pk(*path, check=2, env={"PROTOKUBE_CONFIG": ""})
    assert p.stderr.strip() == f"protokube {' '.join(path)}: {NO_SPEC}", p.stderr


def test_every_verb_that_reads_a_spec_says_so():
    needing = {" ".join(p) for p in VERB_PATHS if "needs the cluster spec" in _help(*p)}
    assert needing == {"run", "once", "plan", "render", "validate", "volumes", "dns", "dns sync", "pki", "pki show",
                       "pki renew", "etcd backups", "etcd backup", "etcd download", "etcd restore", "pivot",
                       "pivot plan", "csr", "csr approve", "join plan"}, needing


def test_once_and_run_need_root(pk):
    need_root()
    spec = os.path.join(ROOT, "examples", "cluster.yaml")
    for verb in ("once", "run"):
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", protokube_bin(),
                            "-c", spec, verb], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2, p.stderr
        assert f"protokube {verb}: must run as root" in p.stderr, p.stderr


def test_interval_from_environment_is_checked(pk):
    p = pk("plan", check=2, env={"PROTOKUBE_INTERVAL": "soon", "PROTOKUBE_CONFIG": ""})
    assert "invalid PROTOKUBE_INTERVAL 'soon'" in p.stderr, p.stderr
    # an option given on the command line wins over a bad environment value
    p = pk("plan", "--interval", "5s", check=2, env={"PROTOKUBE_INTERVAL": "soon", "PROTOKUBE_CONFIG": ""})
    assert NO_SPEC in p.stderr, p.stderr
