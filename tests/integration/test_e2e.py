"""The no-ops etcd cluster end to end (tests/e2e/scenario.py): three masters on real etcd in network
namespaces, a master replaced, one rebooted, the DNS server stopped for a while, a member's volume emptied.
Each step asserts; the failover must keep the member (same ID, data readable, no reformat); the emptied
member is replaced (a new ID under the same name, the data back from the others)."""

import io
import os
import sys

from conftest import need_root

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))


def test_noops_etcd_cluster():
    need_root()
    import scenario

    out = io.StringIO()
    s = scenario.Scenario(out=out)
    try:
        failover = s.run()
    finally:
        print(out.getvalue())
    assert failover["total"] > 0
    assert failover["blank member"] > 0
    assert failover["restore"] > 0
    assert "SUCCESS" in out.getvalue()
