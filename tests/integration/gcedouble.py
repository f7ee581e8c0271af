# SPDX-License-Identifier: Apache-2.0
"""The Google Cloud double (tests/fakes/gce/server.py) on loopback for one test or module: started, waited for,
stopped by PID, its directory removed; and the calls tests make of it: its control endpoints, and a service
account's token the way a Google client gets one (a JWT signed with the account's key, POSTed to token_uri)."""
import base64
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

from conftest import ROOT
from fakeserver import running_fake_server

DOUBLE = os.path.join(ROOT, "tests", "fakes", "gce", "server.py")
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
JWT_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def running_double(config=None, prefix="pk-gcedouble-"):
    """Yields (url, directory). config: the double's initial state (written as its --config)."""
    return running_fake_server(DOUBLE, "the GCE double", prefix, config)


def double_state(url):
    with urllib.request.urlopen(url + "/_double/state", timeout=10) as r:
        return json.load(r)


def double_call(url, path, body=None):
    """POSTs a control call (JSON body) and returns its JSON answer."""
    req = urllib.request.Request(url + path, data=json.dumps(body or {}).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signed_jwt(key, scope=CLOUD_PLATFORM, claims=None, header=None):
    """A JWT-bearer assertion as Google's client libraries make it from a key file; claims and header
    override or add fields (a value None drops the field)."""
    now = int(time.time())
    h = {"alg": "RS256", "typ": "JWT", "kid": key["private_key_id"], **(header or {})}
    c = {"iss": key["client_email"], "scope": scope, "aud": key["token_uri"], "iat": now, "exp": now + 3600,
         **(claims or {})}
    signing_input = b64url(json.dumps({k: v for k, v in h.items() if v is not None}).encode()) + "." + \
        b64url(json.dumps({k: v for k, v in c.items() if v is not None}).encode())
    pk = serialization.load_pem_private_key(key["private_key"].encode(), password=None)
    return signing_input + "." + b64url(pk.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256()))


def token_request(token_uri, assertion, grant_type=JWT_GRANT):
    """POSTs an assertion to the token endpoint: (status, JSON answer)."""
    data = urllib.parse.urlencode({"grant_type": grant_type, "assertion": assertion}).encode()
    req = urllib.request.Request(token_uri, data=data, method="POST",
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def fetch_token(url, email, scope=CLOUD_PLATFORM):
    """An access token of a service account of the double, got as a client gets it."""
    key = double_call(url, "/_double/service-account-key", {"email": email})
    status, doc = token_request(key["token_uri"], signed_jwt(key, scope))
    assert status == 200, doc
    return doc["access_token"]
