# The man pages against what they describe: protokube(8) against every --help the binary prints (verbs,
# commands, options, environment variables, default paths), protokube-cluster(5) against the spec loader's
# own field tables (every key, as its dotted path). The pages are the ones the build made from
# docs/man/*.scd (meson, scdoc), i.e. what `meson install` and the package install.
import os
import re
import subprocess

import pytest

from conftest import ROOT, protokube_bin

SPEC_SOURCES = ("src/spec/spec.c", "src/spec/spec-dns.c", "src/spec/component-config.c")


def build_root():
    if os.environ.get("PROTOKUBE_BUILD"):
        return os.environ["PROTOKUBE_BUILD"]
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(protokube_bin()))))


def man_text(name):
    """The built page as plain text: roff font escapes dropped, escaped characters unescaped."""
    path = os.path.join(build_root(), name)
    if not os.path.exists(path):
        pytest.fail(f"{path} was not built: the man pages need scdoc (scripts/install-deps.sh), "
                    f"then reconfigure the build dir")
    with open(path) as f:
        roff = f.read()
    text = re.sub(r"\\f(\[[^]]*\]|.)", "", roff)
    text = text.replace("\\-", "-").replace("\\&", "").replace("\\(hy", "-").replace("\\e", "\\")
    text = text.replace("\\(aq", "'").replace("\\(dq", '"').replace("\\ ", " ")
    return text


def mentions(text, word):
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text) is not None


def run_help(*args):
    p = subprocess.run([protokube_bin(), *args, "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, f"protokube {' '.join(args)} --help exited {p.returncode}: {p.stderr}"
    return p.stdout


def section(help_text, header):
    """The entries under the header line that starts with `header`, up to the next header."""
    out, inside = [], False
    for line in help_text.splitlines():
        if line and not line.startswith(" "):
            inside = line.startswith(header)
            continue
        if inside and line.strip():
            out.append(line.strip())
    return out


def all_helps():
    """(argv, --help text) of the program, every verb and every command of a verb."""
    top = run_help()
    verbs = [line.split()[0] for line in section(top, "verbs")]
    assert len(verbs) >= 10 and "run" in verbs and "pool" in verbs, top
    helps = [((), top)]
    for v in verbs:
        h = run_help(v)
        helps.append(((v,), h))
        for line in section(h, "commands"):
            helps.append(((v, line.split()[0]), run_help(v, line.split()[0])))
    return helps


def test_man8_names_every_verb_option_and_variable_of_every_help():
    man = man_text("protokube.8")
    missing = []
    helps = all_helps()
    assert len(helps) > 20  # the verbs and the commands of pool, store, pki, dns
    for argv, h in helps:
        words = set(argv)
        for line in section(h, "options") + section(h, "global options"):
            words.update(w.rstrip(",") for w in line.split()[:2] if w.startswith("-"))
        for line in section(h, "environment"):
            words.add(line.split()[0])
        # the defaults the help names (/etc/machine-id, /var/lib/protokube/pool, ...)
        words.update(re.findall(r"default (/[\w./-]+)", h))
        for w in sorted(words):
            if not mentions(man, w):
                missing.append(f"{w} (from 'protokube {' '.join(argv)} --help')")
    assert not missing, "protokube(8) lacks:\n" + "\n".join(missing)


def test_man8_has_exit_statuses_signals_and_files():
    man = man_text("protokube.8")
    for header in ("EXIT STATUS", "SIGNALS", "FILES", "ENVIRONMENT", "SEE ALSO"):
        assert re.search(r"^\.SH " + header + r"\s*$", man, re.M), header
    exit_status = man.split(".SH EXIT STATUS")[1].split(".SH")[0]
    for code in ("0", "1", "2", "3"):
        assert mentions(exit_status, code), f"exit status {code}"
    signals = man.split(".SH SIGNALS")[1].split(".SH")[0]
    for sig in ("SIGHUP", "SIGTERM", "SIGINT"):
        assert mentions(signals, sig), sig
    files = man.split(".SH FILES")[1].split(".SH")[0]
    for path in ("/etc/protokube/cluster.yaml", "/etc/default/protokube", "/var/lib/protokube/",
                 "/etc/kubernetes/manifests/"):
        assert path in files, path


def entries(body):
    """The top-level { ... } entries of a C initializer list (strings and nested braces skipped)."""
    out, depth, start, i = [], 0, None, 0
    while i < len(body):
        c = body[i]
        if c == '"':
            i += 1
            while body[i] != '"':
                i += 2 if body[i] == "\\" else 1
        elif c == "{":
            depth += 1
            if depth == 1:
                start = i
        elif c == "}":
            depth -= 1
            if depth == 0:
                out.append(body[start + 1:i])
        i += 1
    return out


def spec_tables():
    """The field tables of the spec loader, preprocessed (the component tables are macros): name ->
    [(key, type, sub-table)]."""
    inc = ["-I", ROOT, "-I", os.path.join(ROOT, "src"), "-I", build_root()]
    tables = {}
    for src in SPEC_SOURCES:
        p = subprocess.run(["cc", "-E", "-P", "-D_GNU_SOURCE", *inc, os.path.join(ROOT, src)],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        for m in re.finditer(r"\bField (\w+)\[\] = \{(.*?)\n\};", p.stdout, re.S):
            rows = []
            for e in entries(m.group(2)):
                name = re.search(r'\.name = "([^"]+)"', e)
                if not name:
                    continue
                typ = re.search(r"\.type = (\w+)", e).group(1)
                sub = re.search(r"\.sub = (\w+)", e)
                rows.append((name.group(1), typ, sub.group(1) if sub else None))
            tables[m.group(1)] = rows
    return tables


def spec_keys():
    tables = spec_tables()
    keys = []

    def walk(table, prefix):
        for name, typ, sub in tables[table]:
            keys.append(prefix + name)
            if sub:
                walk(sub, prefix + name + ("[]." if typ == "FIELD_STRUCT_LIST" else "."))

    walk("cluster_fields", "")
    return keys


def test_spec_key_extraction_is_sane():
    # the parser of the field tables must see all of them, or the next test checks too little
    keys = spec_keys()
    assert len(keys) > 150, keys
    for k in ("apiVersion", "metadata.name", "spec.dns.rfc2136.tsigKeyFile", "spec.etcdClusters[].tlsDir",
              "spec.pki.certificateLifetime", "spec.kubeAPIServer.featureGates",
              "spec.kubeControllerManager.insecurePort", "spec.kubeProxy.proxyMode"):
        assert k in keys, k


def test_man5_names_every_key_of_the_spec():
    man = man_text("protokube-cluster.5")
    missing = [k for k in spec_keys() if not mentions(man, k)]
    assert not missing, "protokube-cluster(5) lacks:\n" + "\n".join(missing)
