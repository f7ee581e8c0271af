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
    assert "needs the cluster spec" in p.stderr, p.stderr
