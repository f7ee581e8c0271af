# SPDX-License-Identifier: Apache-2.0
"""The AWS double (tests/fakes/aws/server.py) on loopback for one test or module: started, waited for, stopped
by PID, its directory removed."""
import json
import os
import urllib.request

from conftest import ROOT
from fakeserver import running_fake_server

DOUBLE = os.path.join(ROOT, "tests", "fakes", "aws", "server.py")


def running_double(config=None, prefix="pk-awsdouble-"):
    """Yields (url, directory). config: the double's initial state (written as its --config)."""
    return running_fake_server(DOUBLE, "the AWS double", prefix, config)


def double_state(url):
    with urllib.request.urlopen(url + "/_double/state", timeout=10) as r:
        return json.load(r)
