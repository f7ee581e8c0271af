# SPDX-License-Identifier: Apache-2.0
"""SigV4 computed by Debian's python3-botocore: the independent implementation the tests compare ours with and
the AWS double verifies every request with. Import only under /usr/bin/python3."""
import datetime

from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def _sign(auth, req, amz_date):
    # add_auth() reads the wall clock; do its steps with the given time instead.
    datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")  # validates the format
    req.context["timestamp"] = amz_date
    creq = auth.canonical_request(req)
    sts = auth.string_to_sign(req, creq)
    return auth.signature(sts, req), creq


def authorization(method, url, headers, body, region, service, access_key, secret_key, token, amz_date,
                  params=None):
    """The Authorization value botocore computes for this request at amz_date ("20150830T123600Z").
    headers: list of (name, value) to sign besides host, x-amz-date and the token."""
    creds = Credentials(access_key, secret_key, token)
    auth = SigV4Auth(creds, service, region)
    req = AWSRequest(method=method, url=url, data=body, params=params or {})
    for k, v in headers:
        req.headers[k] = v
    req.context["timestamp"] = amz_date
    auth._modify_request_before_signing(req)
    sig, creq = _sign(auth, req, amz_date)
    auth._inject_signature_to_request(req, sig)
    return req.headers["Authorization"], creq


def expected_signature(method, url, signed_headers, body, region, service, access_key, secret_key, amz_date):
    """The signature botocore computes over exactly the headers a request says it signed (server side).
    signed_headers: list of (name, value) as received, including Host and X-Amz-Date."""
    creds = Credentials(access_key, secret_key, None)
    # S3 signs the path as sent (no normalisation) and the payload hash from x-amz-content-sha256.
    auth = (S3SigV4Auth if service == "s3" else SigV4Auth)(creds, service, region)
    req = AWSRequest(method=method, url=url, data=body)
    for k, v in signed_headers:
        req.headers[k] = v
    sig, creq = _sign(auth, req, amz_date)
    return sig, creq
