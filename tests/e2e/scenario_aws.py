#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Steps 1-2 of the no-ops etcd scenario (scenario.py) with `cloud: aws` and `dns: route53` against the AWS
double (cluster_aws.py; the steps are scenario_double.py's): three masters, each an EC2 instance of the
double, claim their EBS volumes and publish their records in the Route 53 zone; then master b is terminated
and a standby master d in b's zone takes over its volumes, and etcd member b comes back on d with its data.
Run as root:

    /usr/bin/python3 tests/e2e/scenario_aws.py

It cleans up everything it created (namespaces, loop devices, mounts, processes, the Route 53 mirror) even on
failure or Ctrl-C."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenario  # noqa: E402
from cluster_aws import ClusterAws  # noqa: E402
from scenario_double import ScenarioDouble  # noqa: E402

# One master per availability zone, as kops lays them out; d, the replacement, comes up in b's zone.
ZONES = {"a": "us-east-1a", "b": "us-east-1b", "c": "us-east-1c", "d": "us-east-1b"}
PLACEHOLDER = "203.0.113.123"  # what protokube publishes for a member nobody holds (kops' placeholder)
# Seconds until the double reports a Route 53 change INSYNC: real Route 53 typically takes tens of seconds,
# and a pass must not wait for it (docs/aws.md, "Propagation").
INSYNC_DELAY = float(os.environ.get("PROTOKUBE_AWS_INSYNC_DELAY", "30"))


class ScenarioAws(ScenarioDouble):
    zones = ZONES

    def __init__(self, out=sys.stdout, insync_delay=INSYNC_DELAY, tag="pka"):
        super().__init__(ClusterAws(tag=tag, insync_delay=insync_delay), out)


if __name__ == "__main__":
    sys.exit(scenario.main(ScenarioAws))
