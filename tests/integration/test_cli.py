import re


def test_version(pk):
    p = pk("version", check=0)
    assert re.match(r"^protokube \d+\.\d+\.\d+$", p.stdout.strip())


def test_unknown_verb_is_usage_error(pk):
    p = pk("frobnicate")
    assert p.returncode == 2
    assert "unknown verb 'frobnicate'" in p.stderr


def test_bad_log_level_is_usage_error(pk):
    p = pk("--log-level", "loud", "version")
    assert p.returncode == 2
    assert "invalid --log-level 'loud'" in p.stderr
