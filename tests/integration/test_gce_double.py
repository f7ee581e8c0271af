# SPDX-License-Identifier: Apache-2.0
"""The Google Cloud double itself (tests/fakes/gce/): it answers as Google documents, and it refuses what Google
refuses, so that protokube's GCE client is held to the real services' rules: OAuth (JWT grant, bearer tokens,
scopes), the metadata server, Compute's disks, instances, filters, paging and operations (attach is a
compare-and-set), Cloud DNS changes (412, 409, atomicity), Cloud Storage preconditions, faults and the log."""
import base64
import datetime
import http.client
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse

import pytest

from conftest import need_root
from gcedouble import (CLOUD_PLATFORM, DOUBLE, double_call, double_state, fetch_token, running_double, signed_jwt,
                       token_request)

AUTH = "https://www.googleapis.com/auth/"
SA = "protokube@p1.iam.gserviceaccount.com"
NARROW = "narrow@p1.iam.gserviceaccount.com"
Z = "europe-west1-b"
CP = "/compute/v1/projects/p1"
DNS = "/dns/v1/projects/p1"
CONFIG = {
    "project": "p1", "project_number": "123456789012",
    "service_accounts": {SA: {"scopes": [CLOUD_PLATFORM, AUTH + "compute", AUTH + "devstorage.read_write"]},
                         NARROW: {"scopes": [AUTH + "devstorage.read_write"]}},
    "instances": {"m1": {"zone": Z, "internal_ip": "10.0.0.5", "external_ip": "35.1.2.3",
                         "labels": {"cluster": "test"}, "attributes": {"cluster-name": "test.example.com"}},
                  "m2": {"zone": Z, "internal_ip": "10.0.0.6", "labels": {"cluster": "test"}}},
    "disks": {"etcd-a": {"zone": Z, "size_gb": 20, "labels": {"cluster": "test", "etcd-main": "a"}},
              "etcd-b": {"zone": Z, "size_gb": 20, "labels": {"cluster": "test", "etcd-main": "b"}},
              "held": {"zone": Z, "labels": {"cluster": "test"}, "users": ["m2"]},
              "far": {"zone": "europe-west1-c", "labels": {"cluster": "test"}}},
    "managed_zones": {"example": {"dns_name": "example.com.", "rrsets": [
        {"name": "api.example.com.", "type": "A", "ttl": 60, "rrdatas": ["10.0.0.5", "10.0.0.6"]}]},
        "inner": {"dns_name": "internal.example.com.", "visibility": "private"}},
    "buckets": {"state": {"public_access_prevention": "enforced",
                          "default_kms_key": "projects/p1/locations/europe-west1/keyRings/r/cryptoKeys/k"},
                "open": {}},
}
GOOGLE_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}-08:00")


class Gce:
    """One running double and the requests a Google API client makes of it."""

    def __init__(self, url):
        self.url = url
        self.port = int(url.rsplit(":", 1)[1])
        self.tokens = {}

    def token(self, email=SA, scope=CLOUD_PLATFORM):
        if (email, scope) not in self.tokens:
            self.tokens[(email, scope)] = fetch_token(self.url, email, scope)
        return self.tokens[(email, scope)]

    def raw(self, method, path, body=None, headers=None, port=None):
        """(status, headers, body bytes) of one request on its own connection."""
        c = http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=30)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, r.headers, r.read()
        finally:
            c.close()

    def call(self, method, path, body=None, token=None, ctype="application/json", headers=None):
        """(status, JSON answer) of an API call with a bearer token (the default account's unless given)."""
        h = {"Authorization": "Bearer " + (token or self.token())}
        if body is not None:
            h["Content-Type"] = ctype
            body = body if isinstance(body, (bytes, str)) else json.dumps(body)
        h.update(headers or {})
        status, hdrs, data = self.raw(method, path, body, h)
        if status == 204:
            return status, None
        assert hdrs["Content-Type"].startswith("application/json"), (status, hdrs["Content-Type"], data[:200])
        return status, json.loads(data)

    def ok(self, method, path, body=None, **kw):
        status, doc = self.call(method, path, body, **kw)
        assert status == 200, doc
        return doc

    def configure(self, cfg):
        double_call(self.url, "/_double/config", cfg)

    def metadata(self, instance, key, headers=None):
        port = double_state(self.url)["metadata_ports"][instance]
        h = {"Metadata-Flavor": "Google"} if headers is None else headers
        return self.raw("GET", "/computeMetadata/v1/" + key, headers=h, port=port)


@pytest.fixture
def gce():
    with running_double(CONFIG) as (url, _):
        yield Gce(url)


def error_of(doc, code, reason):
    """Google's error shape, with the code, its status name and the reason."""
    e = doc["error"]
    assert e["code"] == code and e["errors"][0]["reason"] == reason and e["errors"][0]["domain"] == "global", doc
    assert e["status"] == {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                           404: "NOT_FOUND", 409: "ALREADY_EXISTS", 412: "FAILED_PRECONDITION",
                           429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}[code], doc
    return e["message"]


# ---------------------------------------------------------------- OAuth

def test_key_file_and_token_grant_as_google(gce):
    key = double_call(gce.url, "/_double/service-account-key", {"email": SA})
    assert key["type"] == "service_account" and key["project_id"] == "p1" and key["client_email"] == SA
    assert re.fullmatch(r"[0-9a-f]{40}", key["private_key_id"]) and re.fullmatch(r"\d{21}", key["client_id"])
    assert key["private_key"].startswith("-----BEGIN PRIVATE KEY-----\n")
    assert key["token_uri"] == gce.url + "/token"
    assert key["auth_uri"] == "https://accounts.google.com/o/oauth2/auth"
    status, doc = token_request(key["token_uri"], signed_jwt(key, CLOUD_PLATFORM + " " + AUTH + "compute"))
    assert status == 200 and doc["token_type"] == "Bearer" and doc["expires_in"] == 3599, doc
    assert doc["access_token"].startswith("ya29.")
    assert double_call(gce.url, "/_double/service-account-key", {"email": SA}) == key  # the same current key
    assert double_state(gce.url)["counters"]["token_grants"] == 1


def jwt_cases():
    now = int(time.time())
    return {
        "bad signature": ({}, {}, None, 400, "invalid_grant", "Invalid JWT Signature."),
        "wrong aud": ({"aud": "https://oauth2.googleapis.com/token"}, {}, None, 400, "invalid_grant", None),
        "wrong iss": ({"iss": "other@p1.iam.gserviceaccount.com"}, {}, None, 401, "invalid_client",
                      "The OAuth client was not found."),
        "wrong kid": ({}, {"kid": "0" * 40}, None, 401, "invalid_client", None),
        "expired": ({"iat": now - 7200, "exp": now - 3600}, {}, None, 400, "invalid_grant", None),
        "too long": ({"exp": now + 7200}, {}, None, 400, "invalid_grant", None),
        "iat in future": ({"iat": now + 900, "exp": now + 1800}, {}, None, 400, "invalid_grant", None),
        "no exp": ({"exp": None}, {}, None, 400, "invalid_grant", None),
        "scope not allowed": ({"scope": AUTH + "ndev.clouddns.readwrite"}, {}, None, 400, "invalid_scope", None),
        "HS256": ({}, {"alg": "HS256"}, None, 400, "invalid_grant", None),
        "grant type": ({}, {}, "client_credentials", 400, "unsupported_grant_type", None),
    }


@pytest.mark.parametrize("case", list(jwt_cases()))
def test_token_endpoint_refuses_bad_jwts(gce, case):
    claims, header, grant, status, error, description = jwt_cases()[case]
    key = double_call(gce.url, "/_double/service-account-key", {"email": SA})
    jwt = signed_jwt(key, claims=claims, header=header)
    if case == "bad signature":
        head, body, sig = jwt.split(".")
        jwt = ".".join([head, body, ("A" if sig[0] != "A" else "B") + sig[1:]])
    got, doc = token_request(key["token_uri"], jwt, **({"grant_type": grant} if grant else {}))
    assert (got, doc["error"]) == (status, error), doc
    if description:
        assert doc["error_description"] == description
    if case in ("expired", "too long", "iat in future"):
        assert doc["error_description"].startswith("Invalid JWT: Token must be a short-lived token (60 minutes)")
    assert double_state(gce.url)["counters"]["token_grants"] == 0


def test_token_endpoint_refuses_padding_rotated_keys_and_forms(gce):
    key = double_call(gce.url, "/_double/service-account-key", {"email": SA})
    jwt = signed_jwt(key)
    head, body, sig = jwt.split(".")
    assert token_request(key["token_uri"], ".".join([head + "=" * (-len(head) % 4 or 4), body, sig]))[0] == 400
    status, _, data = gce.raw("POST", "/token", json.dumps({"assertion": jwt}), {"Content-Type": "application/json"})
    assert status == 400 and json.loads(data)["error"] == "invalid_request"
    new = double_call(gce.url, "/_double/service-account-key", {"email": SA, "rotate": True})
    assert new["private_key_id"] != key["private_key_id"]
    assert token_request(key["token_uri"], jwt)[1]["error"] == "invalid_client"  # the old key is gone
    assert token_request(new["token_uri"], signed_jwt(new))[0] == 200


def test_api_calls_need_a_valid_unexpired_bearer_token(gce):
    path = f"{CP}/zones/{Z}/disks/etcd-a"
    for headers in ({}, {"Authorization": "Bearer ya29.made-up"}, {"Authorization": "Basic dXNlcjpwYXNz"}):
        status, hdrs, data = gce.raw("GET", path, headers=headers)
        assert status == 401 and hdrs["WWW-Authenticate"].startswith("Bearer"), data
        assert error_of(json.loads(data), 401, "authError").startswith("Request had invalid authentication")
    assert gce.call("GET", path)[0] == 200
    double_call(gce.url, "/_double/expire-tokens")
    status, doc = gce.call("GET", path)
    assert status == 401 and error_of(doc, 401, "authError")
    gce.configure({"token_ttl": 1})
    tok = fetch_token(gce.url, SA)
    assert gce.call("GET", path, token=tok)[0] == 200
    time.sleep(1.2)
    assert gce.call("GET", path, token=tok)[0] == 401


def test_token_scopes_must_cover_the_api(gce):
    tok = gce.token(NARROW, AUTH + "devstorage.read_write")
    status, doc = gce.call("GET", f"{CP}/zones/{Z}/disks", token=tok)
    assert status == 403
    assert error_of(doc, 403, "insufficientPermissions") == "Request had insufficient authentication scopes."
    assert gce.call("GET", f"{DNS}/managedZones", token=tok)[0] == 403
    assert gce.call("GET", "/storage/v1/b/state", token=tok)[0] == 200
    compute = gce.token(SA, AUTH + "compute")
    assert gce.call("GET", f"{CP}/zones/{Z}/disks", token=compute)[0] == 200
    assert gce.call("GET", "/storage/v1/b/state", token=compute)[0] == 403


def test_deny_pattern_is_a_missing_permission(gce):
    gce.configure({"deny": ["GET /compute/v1/projects/p1/zones/*/disks"]})
    status, doc = gce.call("GET", f"{CP}/zones/{Z}/disks")
    assert status == 403 and error_of(doc, 403, "forbidden") == "Required 'compute.disks.list' permission for " \
                                                                 "'projects/p1'"
    assert gce.call("GET", f"{CP}/zones/{Z}/disks/etcd-a")[0] == 200


# ---------------------------------------------------------------- metadata server

def test_metadata_server_answers_as_gce(gce):
    status, hdrs, data = gce.metadata("m1", "instance/zone")
    assert (status, data) == (200, b"projects/123456789012/zones/europe-west1-b")
    assert hdrs["Metadata-Flavor"] == "Google" and hdrs["Content-Type"] == "application/text"
    want = {"project/project-id": b"p1", "project/numeric-project-id": b"123456789012", "instance/name": b"m1",
            "instance/hostname": b"m1.europe-west1-b.c.p1.internal", "instance/network-interfaces/0/ip": b"10.0.0.5",
            "instance/network-interfaces/0/access-configs/0/external-ip": b"35.1.2.3",
            "instance/attributes/cluster-name": b"test.example.com",
            "instance/service-accounts/default/email": b"123456789012-compute@developer.gserviceaccount.com",
            "instance/service-accounts/default/scopes": (CLOUD_PLATFORM + "\n").encode()}
    for key, value in want.items():
        assert gce.metadata("m1", key)[::2] == (200, value), key
    assert gce.metadata("m1", "instance/id")[2].isdigit()
    for key in ("instance/attributes/absent", "instance/nothing"):
        assert gce.metadata("m1", key)[0] == 404
    assert gce.metadata("m2", "instance/network-interfaces/0/access-configs/0/external-ip")[0] == 404
    status, hdrs, data = gce.metadata("m1", "instance/name", headers={})
    assert (status, data) == (403, b"Missing required header: Metadata-Flavor")
    assert hdrs["Content-Type"].startswith("text/html")
    assert gce.metadata("m1", "instance/name", {"Metadata-Flavor": "Google", "X-Forwarded-For": "1.2.3.4"})[0] == 403


def test_metadata_token_works_on_the_api_and_expires(gce):
    gce.configure({"metadata_token_ttl": 1})
    status, hdrs, data = gce.metadata("m1", "instance/service-accounts/default/token")
    doc = json.loads(data)
    assert status == 200 and hdrs["Content-Type"] == "application/json"
    assert doc["access_token"].startswith("ya29.m-") and doc["expires_in"] == 1 and doc["token_type"] == "Bearer"
    assert gce.call("GET", f"{CP}/zones/{Z}/instances/m1", token=doc["access_token"])[0] == 200
    time.sleep(1.2)
    assert gce.call("GET", f"{CP}/zones/{Z}/instances/m1", token=doc["access_token"])[0] == 401
    assert double_state(gce.url)["counters"]["metadata_token_fetches"] == 1


def test_terminated_instance_metadata_503_and_disks_let_go(gce):
    double_call(gce.url, "/_double/terminate", {"instance": "m2"})
    assert gce.metadata("m2", "instance/name")[0] == 503
    assert gce.ok("GET", f"{CP}/zones/{Z}/instances/m2")["status"] == "TERMINATED"
    assert "users" not in gce.ok("GET", f"{CP}/zones/{Z}/disks/held")
    added = double_call(gce.url, "/_double/add-instance", {"name": "m3", "zone": Z, "internal_ip": "10.0.0.7"})
    assert added["metadata_port"] == double_state(gce.url)["metadata_ports"]["m3"]
    assert gce.metadata("m3", "instance/network-interfaces/0/ip")[::2] == (200, b"10.0.0.7")


# ---------------------------------------------------------------- Compute: resources, filters, paging

def test_disk_and_lists_as_google_documents(gce):
    d = gce.ok("GET", f"{CP}/zones/{Z}/disks/held")
    assert d["kind"] == "compute#disk" and d["sizeGb"] == "10" and d["status"] == "READY"
    assert d["selfLink"] == f"https://www.googleapis.com/compute/v1/projects/p1/zones/{Z}/disks/held"
    assert d["users"] == [f"https://www.googleapis.com/compute/v1/projects/p1/zones/{Z}/instances/m2"]
    assert GOOGLE_TIME.fullmatch(d["creationTimestamp"]) and GOOGLE_TIME.fullmatch(d["lastAttachTimestamp"])
    created = datetime.datetime.fromisoformat(d["creationTimestamp"]).timestamp()
    assert abs(created - time.time()) < 60
    assert re.fullmatch(r"\d+", d["id"]) and d["type"].endswith("/diskTypes/pd-standard")
    lst = gce.ok("GET", f"{CP}/zones/{Z}/disks")
    assert lst["kind"] == "compute#diskList" and lst["id"] == f"projects/p1/zones/{Z}/disks"
    assert sorted(x["name"] for x in lst["items"]) == ["etcd-a", "etcd-b", "held", "m1", "m2"]  # boot disks too
    assert "items" not in gce.ok("GET", f"{CP}/zones/europe-west1-d/disks")
    assert "nextPageToken" not in lst
    status, doc = gce.call("GET", f"{CP}/zones/{Z}/disks/far")
    assert status == 404 and error_of(doc, 404, "notFound") == \
        f"The resource 'projects/p1/zones/{Z}/disks/far' was not found"
    assert gce.call("GET", f"/compute/v1/projects/p2/zones/{Z}/disks")[0] == 404
    i = gce.ok("GET", f"{CP}/zones/{Z}/instances/m1")
    assert i["networkInterfaces"][0]["accessConfigs"][0]["natIP"] == "35.1.2.3"
    assert i["disks"][0]["boot"] and i["disks"][0]["deviceName"] == "persistent-disk-0"
    assert {"key": "cluster-name", "value": "test.example.com"} in i["metadata"]["items"]
    assert "accessConfigs" not in gce.ok("GET", f"{CP}/zones/{Z}/instances/m2")["networkInterfaces"][0]


def names(gce, kind, flt):
    doc = gce.ok("GET", f"{CP}/zones/{Z}/{kind}?filter=" + urllib.parse.quote(flt, safe=""))
    return sorted(x["name"] for x in doc.get("items", []))


def test_compute_list_filter(gce):
    assert names(gce, "disks", 'labels.etcd-main = "a"') == ["etcd-a"]
    assert names(gce, "disks", "labels.etcd-main=b") == ["etcd-b"]
    assert names(gce, "disks", '(labels.cluster = "test") (labels.etcd-main != "a")') == ["etcd-b", "held"]
    assert names(gce, "disks", '(labels.cluster = test) AND (name = "held")') == ["held"]
    assert names(gce, "disks", 'name = "with \\"quote"') == []
    assert names(gce, "instances", '(labels.cluster = "test") (status = "RUNNING")') == ["m1", "m2"]
    for bad in ("labels.cluster:test", "labels.cluster ~ test", "(name = a) OR (name = b)", "name = ",
                "(name = a", "size = 10", "name = a AND name = b", "(name = a) (", "name eq a"):
        status, doc = gce.call("GET", f"{CP}/zones/{Z}/disks?filter=" + urllib.parse.quote(bad, safe=""))
        assert status == 400, bad
        assert error_of(doc, 400, "invalid") == f"Invalid value for field 'filter': '{bad}'. Invalid list filter " \
                                                "expression."


def test_max_results_and_query_parameters(gce):
    status, doc = gce.call("GET", f"{CP}/zones/{Z}/disks?maxResults=501")
    assert status == 400 and error_of(doc, 400, "invalid") == \
        "Invalid value for field 'maxResults': '501'. Must be less than or equal to 500"
    assert gce.call("GET", f"{CP}/zones/{Z}/disks?maxResults=500")[0] == 200
    status, doc = gce.call("GET", f"{CP}/zones/{Z}/disks?max_results=5")
    assert status == 400 and 'Unknown name "max_results"' in doc["error"]["message"]


def test_paging_across_pages_with_tokens_bound_to_the_filter(gce):
    gce.configure({"disks": {f"gen-{i}": {"zone": Z, "labels": {"gen": "1"}} for i in range(7)}})
    flt = urllib.parse.quote('labels.gen = "1"', safe="")
    seen, tokens = [], [None]
    for _ in range(10):
        q = f"filter={flt}&maxResults=3"
        if tokens[-1]:
            q += f"&pageToken={urllib.parse.quote(tokens[-1], safe='')}"
        doc = gce.ok("GET", f"{CP}/zones/{Z}/disks?{q}")
        seen += [x["name"] for x in doc["items"]]
        tokens.append(doc.get("nextPageToken"))
        if not tokens[-1]:
            break
    assert len(tokens) == 4 and sorted(seen) == [f"gen-{i}" for i in range(7)]
    assert all(t.startswith("Cg+/") for t in tokens[1:3])  # '+' and '/': the client must encode them
    other = urllib.parse.quote('labels.gen = "2"', safe="")
    status, doc = gce.call("GET", f"{CP}/zones/{Z}/disks?filter={other}&pageToken="
                                  + urllib.parse.quote(tokens[1], safe=""))
    assert status == 400 and error_of(doc, 400, "invalid").startswith("Invalid value for field 'pageToken'")
    agg = gce.ok("GET", f"{CP}/aggregated/disks?filter=" + urllib.parse.quote('labels.cluster = "test"', safe=""))
    assert agg["kind"] == "compute#diskAggregatedList"
    assert {z: sorted(d["name"] for d in v.get("disks", [])) for z, v in agg["items"].items()} == \
        {"zones/europe-west1-b": ["etcd-a", "etcd-b", "held"], "zones/europe-west1-c": ["far"]}
    agg = gce.ok("GET", f"{CP}/aggregated/instances?filter=" + urllib.parse.quote('name = "m1"', safe=""))
    assert agg["items"]["zones/europe-west1-c"]["warning"]["code"] == "NO_RESULTS_ON_PAGE"
    gce.configure({"page_size": 2})  # caps every page, whatever maxResults asks
    doc = gce.ok("GET", f"{CP}/zones/{Z}/disks?maxResults=500")
    assert len(doc["items"]) == 2 and doc["nextPageToken"]


# ---------------------------------------------------------------- Compute: attach, detach, operations

def attach(gce, instance, body, **kw):
    return gce.call("POST", f"{CP}/zones/{Z}/instances/{instance}/attachDisk", body, **kw)


def poll(gce, op):
    return gce.ok("GET", f"{CP}/zones/{Z}/operations/{op['name']}")


def disk_source(name):
    return f"https://www.googleapis.com/compute/v1/projects/p1/zones/{Z}/disks/{name}"


def test_attach_and_detach_are_operations(gce):
    status, op = attach(gce, "m1", {"source": disk_source("etcd-a"), "deviceName": "etcd-main", "mode": "READ_WRITE"})
    assert status == 200 and op["kind"] == "compute#operation" and op["status"] == "PENDING", op
    assert op["operationType"] == "attachDisk" and op["user"] == SA and op["progress"] == 0
    assert re.fullmatch(r"operation-\d{13}-[0-9a-f]{13}-[0-9a-f]{8}", op["name"])
    assert op["targetLink"].endswith(f"/zones/{Z}/instances/m1") and op["selfLink"].endswith("/" + op["name"])
    assert "users" not in gce.ok("GET", f"{CP}/zones/{Z}/disks/etcd-a")  # decided when the operation runs
    done = poll(gce, op)
    assert done["status"] == "DONE" and "error" not in done and done["progress"] == 100
    d = gce.ok("GET", f"{CP}/zones/{Z}/disks/etcd-a")
    assert d["users"] == [disk_source("m1").replace("/disks/", "/instances/")]
    entry = [x for x in gce.ok("GET", f"{CP}/zones/{Z}/instances/m1")["disks"] if x["deviceName"] == "etcd-main"]
    assert entry and entry[0]["source"] == disk_source("etcd-a") and entry[0]["index"] == 1
    status, op = gce.call("POST", f"{CP}/zones/{Z}/instances/m1/detachDisk?deviceName=etcd-main")
    assert status == 200 and op["operationType"] == "detachDisk"
    done = gce.ok("POST", f"{CP}/zones/{Z}/operations/{op['name']}/wait")
    assert done["status"] == "DONE" and "error" not in done
    d = gce.ok("GET", f"{CP}/zones/{Z}/disks/etcd-a")
    assert "users" not in d and GOOGLE_TIME.fullmatch(d["lastDetachTimestamp"])


def test_attach_of_a_disk_in_use_elsewhere_ends_in_an_operation_error(gce):
    status, op = attach(gce, "m1", {"source": f"projects/p1/zones/{Z}/disks/held"})
    assert status == 200 and op["status"] == "PENDING"
    done = poll(gce, op)
    assert done["status"] == "DONE" and done["httpErrorStatusCode"] == 400 and done["httpErrorMessage"] == "BAD REQUEST"
    assert done["error"]["errors"] == [{"code": "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE",
                                        "message": f"The disk resource 'projects/p1/zones/{Z}/disks/held' is already "
                                                   f"being used by 'projects/p1/zones/{Z}/instances/m2'"}]
    again = poll(gce, attach(gce, "m2", {"source": disk_source("held"), "deviceName": "again"})[1])
    assert again["error"]["errors"][0]["code"] == "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE"  # a second attach
    assert double_state(gce.url)["disks"]["held"]["users"] == ["m2"]


def test_attach_race_has_exactly_one_winner(gce):
    ops = [attach(gce, i, {"source": disk_source("etcd-b")})[1] for i in ("m1", "m2")]
    results = [None, None]

    def run(k):
        results[k] = poll(gce, ops[k])
    threads = [threading.Thread(target=run, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted("error" in r for r in results) == [False, True], results
    assert len(double_state(gce.url)["disks"]["etcd-b"]["users"]) == 1


def test_attach_request_checks(gce):
    cases = [({"source": disk_source("etcd-a"), "interface": "NVME"}, 400,
              'Invalid JSON payload received. Unknown name "interface": Cannot find field.'),
             ({"deviceName": "x"}, 400, "Required field 'resource.source' not specified"),
             ({"source": disk_source("etcd-a"), "deviceName": "Bad_Name"}, 400, None),
             ({"source": disk_source("etcd-a"), "mode": "RW"}, 400, None),
             ({"source": disk_source("etcd-a"), "boot": True}, 400, None),
             ({"source": disk_source("etcd-a"), "autoDelete": "yes"}, 400, None),
             ({"source": "disks/etcd-a"}, 400, None),
             ({"source": disk_source("absent")}, 404, None),
             ({"source": "projects/p1/zones/europe-west1-c/disks/far"}, 404, None)]
    for body, code, message in cases:
        status, doc = attach(gce, "m1", body)
        assert status == code, (body, doc)
        got = error_of(doc, code, "invalid" if code == 400 else "notFound")
        assert message is None or got == message
    status, doc = attach(gce, "m1", {"source": disk_source("etcd-a")}, ctype="text/plain")
    assert status == 400 and error_of(doc, 400, "badRequest")
    status, doc = attach(gce, "m1", b"{not json")
    assert status == 400
    assert attach(gce, "m9", {"source": disk_source("etcd-a")})[0] == 404
    op = poll(gce, attach(gce, "m1", {"source": disk_source("etcd-a"), "deviceName": "persistent-disk-0"})[1])
    assert op["error"]["errors"][0]["code"] == "INVALID_USAGE"  # a device name in use on the instance


def test_detach_checks(gce):
    status, doc = gce.call("POST", f"{CP}/zones/{Z}/instances/m1/detachDisk?deviceName=nope")
    assert status == 400 and error_of(doc, 400, "invalid") == "No attached disk found with device name 'nope'"
    status, doc = gce.call("POST", f"{CP}/zones/{Z}/instances/m2/detachDisk?deviceName=held", {"x": 1})
    assert status == 400
    assert gce.call("POST", f"{CP}/zones/{Z}/instances/m2/detachDisk")[0] == 400
    assert gce.call("POST", f"{CP}/zones/{Z}/instances/m2/detachDisk?deviceName=persistent-disk-0")[0] == 400


def test_operation_progress_by_polls_and_by_time(gce):
    gce.configure({"op_polls": 3})
    op = attach(gce, "m1", {"source": disk_source("etcd-a")})[1]
    assert [poll(gce, op)["status"] for _ in range(4)] == ["RUNNING", "RUNNING", "DONE", "DONE"]
    gce.configure({"op_delay_seconds": 0.6, "faults": {"op_error": {"etcd-b": {"code": "QUOTA_EXCEEDED",
                                                                               "message": "no"}}}})
    op = attach(gce, "m1", {"source": disk_source("etcd-b")})[1]
    assert poll(gce, op)["status"] == "RUNNING"
    t0 = time.monotonic()
    done = gce.ok("POST", f"{CP}/zones/{Z}/operations/{op['name']}/wait")
    assert done["status"] == "DONE" and time.monotonic() - t0 < 5
    assert done["error"]["errors"] == [{"code": "QUOTA_EXCEEDED", "message": "no"}]
    assert gce.call("GET", f"{CP}/zones/{Z}/operations/operation-1-2-3")[0] == 404


def test_image_backed_attach_is_a_loop_device_with_a_by_id_link(gce):
    need_root()
    base = tempfile.mkdtemp(prefix="pk-gcedouble-img-")
    image, byid = os.path.join(base, "disk.img"), os.path.join(base, "by-id")
    with open(image, "wb") as f:
        f.truncate(8 << 20)
    try:
        gce.configure({"disks": {"img": {"zone": Z, "image": image}}, "instances": {"m1": {"byid_dir": byid}}})
        op = poll(gce, attach(gce, "m1", {"source": disk_source("img"), "deviceName": "etcd-x"})[1])
        assert "error" not in op, op
        link = os.path.join(byid, "google-etcd-x")
        dev = os.readlink(link)
        assert re.fullmatch(r"/dev/loop\d+", dev)
        backing = subprocess.run(["losetup", "-n", "-O", "BACK-FILE", dev], capture_output=True, text=True)
        assert backing.stdout.strip() == image
        double_call(gce.url, "/_double/terminate", {"instance": "m1"})
        assert not os.path.lexists(link) and double_state(gce.url)["loops"] == []
    finally:
        double_call(gce.url, "/_double/cleanup")
        left = subprocess.run(["losetup", "-j", image], capture_output=True, text=True).stdout
        for line in left.splitlines():
            subprocess.run(["losetup", "-d", line.split(":")[0]], capture_output=True)
        assert not left, left
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------- Cloud DNS

def change(gce, body, zone="example"):
    return gce.call("POST", f"{DNS}/managedZones/{zone}/changes", body)


def rrsets(gce, zone="example"):
    return {(r["name"], r["type"]): (r["ttl"], sorted(r["rrdatas"]))
            for r in double_state(gce.url)["zones"][zone]["rrsets"]}


def test_managed_zones_and_rrsets_as_google_documents(gce):
    doc = gce.ok("GET", f"{DNS}/managedZones?dnsName=example.com.")
    assert doc["kind"] == "dns#managedZonesListResponse" and [z["name"] for z in doc["managedZones"]] == ["example"]
    z = doc["managedZones"][0]
    assert z["kind"] == "dns#managedZone" and z["visibility"] == "public" and len(z["nameServers"]) == 4
    doc = gce.ok("GET", f"{DNS}/managedZones/example/rrsets")
    assert doc["kind"] == "dns#resourceRecordSetsListResponse"
    assert [(r["name"], r["type"]) for r in doc["rrsets"]] == [("api.example.com.", "A"), ("example.com.", "NS"),
                                                               ("example.com.", "SOA")]
    one = gce.ok("GET", f"{DNS}/managedZones/example/rrsets?name=api.example.com.&type=A")["rrsets"]
    assert one == [{"kind": "dns#resourceRecordSet", "name": "api.example.com.", "type": "A", "ttl": 60,
                    "rrdatas": ["10.0.0.5", "10.0.0.6"]}]
    status, doc = gce.call("GET", f"{DNS}/managedZones/example/rrsets?type=A")
    assert status == 400 and error_of(doc, 400, "invalid")
    status, doc = gce.call("GET", f"{DNS}/managedZones/nope/rrsets")
    assert status == 404 and error_of(doc, 404, "notFound")
    gce.configure({"rrset_page_size": 2})
    first = gce.ok("GET", f"{DNS}/managedZones/example/rrsets")
    rest = gce.ok("GET", f"{DNS}/managedZones/example/rrsets?pageToken="
                         + urllib.parse.quote(first["nextPageToken"], safe=""))
    assert len(first["rrsets"]) == 2 and len(rest["rrsets"]) == 1 and "nextPageToken" not in rest


def test_change_applies_at_once_and_is_done_after_a_poll(gce):
    add = {"name": "etcd-a.example.com.", "type": "A", "ttl": 30, "rrdatas": ["10.0.0.5"]}
    status, doc = change(gce, {"kind": "dns#change", "additions": [add],
                               "deletions": [{"name": "api.example.com.", "type": "A", "ttl": 60,
                                              "rrdatas": ["10.0.0.6", "10.0.0.5"]}]})
    assert status == 200 and doc["kind"] == "dns#change" and doc["status"] == "pending" and doc["id"] == "1", doc
    sets = rrsets(gce)
    assert sets[("etcd-a.example.com.", "A")] == (30, ["10.0.0.5"]) and ("api.example.com.", "A") not in sets
    assert gce.ok("GET", f"{DNS}/managedZones/example/changes/1")["status"] == "done"
    assert gce.call("GET", f"{DNS}/managedZones/example/changes/9")[0] == 404


def test_change_preconditions_and_atomicity(gce):
    before = rrsets(gce)
    new = {"name": "new.example.com.", "type": "A", "ttl": 30, "rrdatas": ["10.0.0.9"]}
    stale = {"name": "api.example.com.", "type": "A", "ttl": 60, "rrdatas": ["10.0.0.5"]}
    status, doc = change(gce, {"additions": [new], "deletions": [stale]})
    assert status == 412 and error_of(doc, 412, "conditionNotMet") == \
        "Precondition not met for 'entity.change.deletions[0]'"
    existing = {"name": "api.example.com.", "type": "A", "ttl": 300, "rrdatas": ["10.0.0.7"]}
    status, doc = change(gce, {"additions": [new, existing]})
    assert status == 409 and error_of(doc, 409, "alreadyExists") == \
        "The resource 'entity.change.additions[1]' named 'api.example.com. (A)' already exists"
    status, doc = change(gce, {"deletions": [{**new}]})
    assert status == 404 and error_of(doc, 404, "notFound")
    assert rrsets(gce) == before  # nothing of a refused change applied
    for bad in ({"additions": [{**new, "rrdatas": ["10.0.0"]}]}, {"additions": [{**new, "name": "x.other.com."}]},
                {"additions": [{**new, "name": "new.example.com"}]}, {"additions": [{**new, "ttl": "30"}]},
                {"additions": [{**new, "rrdatas": []}]}, {"additions": [{**new, "weight": 1}]},
                {"additions": [new], "extra": True}, {},
                {"additions": [{**new, "type": "AAAA", "rrdatas": ["10.0.0.1"]}]}):
        assert change(gce, bad)[0] == 400, bad
    status, doc = gce.call("POST", f"{DNS}/managedZones/example/changes", json.dumps({"additions": [new]}),
                           ctype="text/plain")
    assert status == 400
    assert rrsets(gce) == before


# ---------------------------------------------------------------- Cloud Storage

def upload(gce, bucket, name, data, query=""):
    return gce.call("POST", f"/upload/storage/v1/b/{bucket}/o?uploadType=media&name="
                            f"{urllib.parse.quote(name, safe='')}{query}", data, ctype="application/octet-stream")


def object_path(bucket, name):
    return f"/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='')}"


def test_object_upload_get_list_delete(gce):
    status, o = upload(gce, "state", "backups/a+b c.txt", b"123456789")
    assert status == 200 and o["kind"] == "storage#object" and o["name"] == "backups/a+b c.txt", o
    assert o["size"] == "9" and o["crc32c"] == base64.b64encode(bytes.fromhex("e3069283")).decode()
    assert o["md5Hash"] == "JfnnlDI7RTiF9RgfG2JNCw==" and re.fullmatch(r"\d{16}", o["generation"])
    assert o["id"] == f"state/backups/a+b c.txt/{o['generation']}" and o["kmsKeyName"].startswith("projects/p1/")
    status, hdrs, data = gce.raw("GET", object_path("state", "backups/a+b c.txt") + "?alt=media",
                                 headers={"Authorization": "Bearer " + gce.token()})
    assert (status, data, hdrs["x-goog-generation"]) == (200, b"123456789", o["generation"])
    assert gce.ok("GET", object_path("state", "backups/a+b c.txt"))["generation"] == o["generation"]
    status, doc = gce.call("GET", object_path("state", "absent"))
    assert status == 404 and error_of(doc, 404, "notFound") == "No such object: state/absent"
    status, doc = gce.call("GET", "/storage/v1/b/nope/o")
    assert status == 404 and error_of(doc, 404, "notFound") == "The specified bucket does not exist."
    for n in ("backups/b", "backups/c", "backups/sub/d", "other"):
        upload(gce, "state", n, b"x")
    gce.configure({"object_page_size": 2})
    seen, prefixes, token = [], [], None
    for _ in range(10):
        q = "prefix=backups%2F&delimiter=%2F" + (f"&pageToken={urllib.parse.quote(token, safe='')}" if token else "")
        doc = gce.ok("GET", f"/storage/v1/b/state/o?{q}")
        assert doc["kind"] == "storage#objects"
        seen += [x["name"] for x in doc.get("items", [])]
        prefixes += doc.get("prefixes", [])
        token = doc.get("nextPageToken")
        if not token:
            break
    assert seen == ["backups/a+b c.txt", "backups/b", "backups/c"] and prefixes == ["backups/sub/"]
    assert gce.call("DELETE", object_path("state", "other"))[0] == 204
    assert gce.call("DELETE", object_path("state", "other"))[0] == 404
    b = gce.ok("GET", "/storage/v1/b/state")
    assert b["iamConfiguration"]["publicAccessPrevention"] == "enforced" and b["encryption"]["defaultKmsKeyName"]


def test_generation_preconditions(gce):
    status, o = upload(gce, "state", "lock", b"one", "&ifGenerationMatch=0")
    assert status == 200
    status, doc = upload(gce, "state", "lock", b"two", "&ifGenerationMatch=0")
    assert status == 412 and error_of(doc, 412, "conditionNotMet") == \
        "At least one of the pre-conditions you specified did not hold."
    assert upload(gce, "state", "lock", b"two", "&ifGenerationMatch=1")[0] == 412
    status, o2 = upload(gce, "state", "lock", b"two", f"&ifGenerationMatch={o['generation']}")
    assert status == 200 and int(o2["generation"]) > int(o["generation"])
    assert gce.call("DELETE", object_path("state", "lock") + f"?ifGenerationMatch={o['generation']}")[0] == 412
    assert gce.call("DELETE", object_path("state", "lock") + f"?ifGenerationMatch={o2['generation']}")[0] == 204


def test_concurrent_create_only_uploads_have_one_winner(gce):
    results = []

    def put(k):
        results.append(upload(gce, "state", "member", f"writer {k}".encode(), "&ifGenerationMatch=0")[0])
    threads = [threading.Thread(target=put, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(results) == [200] + [412] * 7


def test_public_acls_and_object_names(gce):
    status, doc = upload(gce, "state", "pub", b"x", "&predefinedAcl=publicRead")
    assert status == 412 and "public access prevention" in error_of(doc, 412, "conditionNotMet")
    assert upload(gce, "open", "pub", b"x", "&predefinedAcl=publicRead")[0] == 200
    assert double_state(gce.url)["public_objects"] == ["open/pub"]
    for bad in ("a\nb", "x" * 1025, "."):
        assert upload(gce, "state", bad, b"x")[0] == 400, bad
    assert gce.call("POST", "/upload/storage/v1/b/state/o?uploadType=media", b"x",
                    ctype="application/octet-stream")[0] == 400
    assert gce.call("POST", "/upload/storage/v1/b/state/o?uploadType=resumable&name=a", b"x",
                    ctype="application/octet-stream")[0] == 400


# ---------------------------------------------------------------- faults, caps, log, TLS

def test_faults(gce):
    gce.configure({"faults": {"throttle": 1, "error503": 1, "error500": 1, "garbage": 1}})
    path = f"{CP}/zones/{Z}/disks/etcd-a"
    status, doc = gce.call("GET", path)
    assert status == 429 and error_of(doc, 429, "rateLimitExceeded")
    assert gce.call("GET", path)[0] == 503
    assert gce.call("GET", path)[0] == 500
    status, _, data = gce.raw("GET", path, headers={"Authorization": "Bearer " + gce.token()})
    assert status == 200
    with pytest.raises(ValueError):
        json.loads(data)
    assert gce.call("GET", path)[0] == 200
    c = double_state(gce.url)["counters"]
    assert (c["throttled"], c["errors503"], c["errors500"], c["garbage"]) == (1, 1, 1, 1)


def test_request_size_and_framing_caps(gce):
    c = http.client.HTTPConnection("127.0.0.1", gce.port, timeout=30)
    c.putrequest("POST", "/upload/storage/v1/b/state/o?uploadType=media&name=big")
    c.putheader("Authorization", "Bearer " + gce.token())
    c.putheader("Content-Length", str(17 << 20 | 1))
    c.endheaders()
    assert c.getresponse().status == 413
    c.close()
    c = http.client.HTTPConnection("127.0.0.1", gce.port, timeout=30)
    c.request("POST", "/upload/storage/v1/b/state/o?uploadType=media&name=chunked", body=iter([b"abc"]),
              headers={"Authorization": "Bearer " + gce.token(), "Transfer-Encoding": "chunked"})
    assert c.getresponse().status == 411
    c.close()


def test_log_has_no_secrets(gce):
    gce.ok("GET", f"{CP}/zones/{Z}/disks")
    gce.metadata("m1", "instance/service-accounts/default/token")
    upload(gce, "state", "secret-object", b"the object contents")
    log = gce.raw("GET", "/_double/log")[2].decode()
    entries = json.loads(log)
    assert {"token", "compute", "metadata", "storage"} <= {e["api"] for e in entries}
    assert any(e.get("authorization") == "Bearer <redacted>" for e in entries)
    secrets = double_state(gce.url)["secrets"]
    assert len(secrets) >= 3
    for s in secrets:
        assert (s.splitlines()[1] if s.startswith("-----") else s) not in log  # a private key: one line of it
    assert "the object contents" not in log


def test_tls_listener_gives_an_https_token_uri():
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    import ipaddress
    import ssl
    base = tempfile.mkdtemp(prefix="pk-gcedouble-tls-")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "gce double")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .sign(key, hashes.SHA256()))
    paths = {k: os.path.join(base, k) for k in ("cert.pem", "key.pem", "config.json", "port", "tls-port")}
    with open(paths["cert.pem"], "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(paths["key.pem"], "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    with open(paths["config.json"], "w") as f:
        json.dump({"service_accounts": {SA: {}}}, f)
    proc = subprocess.Popen(["/usr/bin/python3", DOUBLE, "--port-file", paths["port"], "--config", paths["config.json"],
                             "--tls-cert", paths["cert.pem"], "--tls-key", paths["key.pem"],
                             "--tls-port-file", paths["tls-port"]])
    try:
        for _ in range(300):
            if os.path.exists(paths["port"]):
                break
            time.sleep(0.05)
        with open(paths["tls-port"]) as f:
            tls_port = int(f.read())
        ctx = ssl.create_default_context(cafile=paths["cert.pem"])
        c = http.client.HTTPSConnection("127.0.0.1", tls_port, context=ctx, timeout=30)
        c.request("POST", "/_double/service-account-key", json.dumps({"email": SA}))
        k = json.loads(c.getresponse().read())
        assert k["token_uri"] == f"https://127.0.0.1:{tls_port}/token"
        form = urllib.parse.urlencode({"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                                       "assertion": signed_jwt(k)})
        c.request("POST", "/token", form, {"Content-Type": "application/x-www-form-urlencoded"})
        r = c.getresponse()
        assert r.status == 200 and json.loads(r.read())["access_token"]
        c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(base, ignore_errors=True)
