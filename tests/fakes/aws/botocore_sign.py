#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Signs the requests of IN (JSON written by tests/unit/test-aws-sigv4.c) with botocore and writes the
Authorization values to OUT, in order. Also checks that the form bodies our client built are exactly what
botocore's own percent-encoding makes of the same parameters."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from botocore.utils import percent_encode_sequence  # noqa: E402

import sigv4_botocore  # noqa: E402

ACCESS = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"


def main(inp, out):
    cases = json.load(open(inp, encoding="utf-8"))
    result = []
    for i, c in enumerate(cases):
        params = [tuple(p) for p in c["params"]]
        body = c["body"]
        url = "https://" + c["host"] + c["path"]
        req_params = None
        if c["method"] == "POST":
            want = percent_encode_sequence(params)
            if want != body:
                sys.exit(f"case {i}: form body differs from botocore's encoding:\n ours {body!r}\n boto {want!r}")
        else:
            req_params = dict(params)
        authz, _ = sigv4_botocore.authorization(
            c["method"], url, [("Content-Type", c["content_type"])], body.encode(), c["region"], c["service"],
            ACCESS, SECRET, c.get("token"), c["amz_date"], params=req_params)
        result.append(authz)
    json.dump(result, open(out, "w", encoding="utf-8"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
