# SPDX-License-Identifier: Apache-2.0
"""Steps 1-2 of the no-ops etcd scenario with `cloud: gce`, `dns: clouddns` and a gs:// store against the Google
Cloud double (tests/e2e/scenario_gce.py, docs/gce.md): three GCE masters on real etcd in network namespaces,
each with its own metadata server (identity, project, token), claim their kops-labelled persistent disks and
publish in Cloud DNS; backups land in gs://; master b is terminated (the double detaches its disks) and standby
master d in b's zone takes them over; etcd member b comes back on d with its data. Cloud DNS says "done" only
30 s after each change, and the failover must not wait for it."""

import io
import os
import shutil
import sys

from conftest import need_root
from test_e2e_aws import need_tools

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))


def test_noops_etcd_cluster_on_gce_double():
    need_root()
    need_tools()
    import scenario_gce

    out = io.StringIO()
    s = scenario_gce.ScenarioGce(out=out)
    try:
        failover = s.run()
    finally:
        print(out.getvalue())
    assert "SUCCESS" in out.getvalue()
    assert s.c.dns_delay == scenario_gce.CHANGE_DELAY > 0
    assert 0 < failover["total"] < scenario_gce.CHANGE_DELAY, failover
    assert failover["claim"] <= failover["mount"] <= failover["etcd start"] <= failover["total"], failover
    shutil.rmtree(s.c.workdir, ignore_errors=True)  # only on success: the logs stay for a failed run
