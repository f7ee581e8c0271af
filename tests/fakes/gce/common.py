# SPDX-License-Identifier: Apache-2.0
"""What every part of the Google Cloud double shares: its one state (one lock, so every compare-and-set of the
APIs is atomic), Google's error shape, the JSON and query checks Google's front end (ESF) makes on every call,
timestamps as each API writes them, and opaque page tokens bound to the query that made them."""
import base64
import fnmatch
import hashlib
import json
import threading
import time
import urllib.parse

COMPUTE_URL = "https://www.googleapis.com/compute/v1/"
# HTTP status -> (google.rpc status, the reason Google's v1 "errors" list gives)
STATUS = {400: ("INVALID_ARGUMENT", "invalid"), 401: ("UNAUTHENTICATED", "authError"),
          403: ("PERMISSION_DENIED", "forbidden"), 404: ("NOT_FOUND", "notFound"),
          409: ("ALREADY_EXISTS", "alreadyExists"), 411: ("INVALID_ARGUMENT", "badRequest"),
          412: ("FAILED_PRECONDITION", "conditionNotMet"), 413: ("INVALID_ARGUMENT", "uploadTooLarge"),
          429: ("RESOURCE_EXHAUSTED", "rateLimitExceeded"), 500: ("INTERNAL", "backendError"),
          503: ("UNAVAILABLE", "backendError")}
# Query parameters every Google JSON API binds besides a method's own ("system parameters").
SYSTEM_PARAMS = {"alt", "fields", "prettyPrint", "quotaUser", "userIp", "$.xgafv", "userProject"}
SETTINGS = {"token_ttl": 3599, "metadata_token_ttl": None, "op_polls": 1, "op_delay_seconds": 0,
            "wait_max_seconds": 10, "page_size": None, "rrset_page_size": None, "object_page_size": None,
            "change_polls": 1, "change_delay_seconds": 0}


class GoogleError(Exception):
    def __init__(self, code, message, reason=None, headers=None):
        super().__init__(message)
        self.code, self.message = code, message
        self.reason = reason or STATUS.get(code, ("UNKNOWN", "backendError"))[1]
        self.headers = headers or {}

    def body(self):
        return json.dumps({"error": {"code": self.code, "message": self.message,
                                     "errors": [{"message": self.message, "domain": "global",
                                                 "reason": self.reason}],
                                     "status": STATUS.get(self.code, ("UNKNOWN",))[0]}}, indent=2)


class State:
    """All the double knows. Every handler holds `lock` while it reads or changes any of it."""

    def __init__(self):
        self.lock = threading.RLock()
        self.project, self.project_number = "p1", "123456789012"
        self.settings = dict(SETTINGS)
        self.faults = {"throttle": 0, "error500": 0, "error503": 0, "garbage": 0, "op_error": {}}
        self.deny = []
        self.accounts = {}  # email -> {"scopes", "key", "key_id", "client_id", "pem"}
        self.tokens = {}  # access token -> {"email", "scopes", "expires"}
        self.instances, self.disks, self.ops = {}, {}, {}
        self.zones, self.buckets = {}, {}
        self.metadata_ports = {}
        self.loops = []  # (disk, instance, loop device, by-id link)
        self.log = []
        self.public_objects = []
        self.counters = {k: 0 for k in (
            "requests", "token_grants", "token_refusals", "metadata_token_fetches", "metadata_requests",
            "compute_requests", "dns_requests", "storage_requests", "auth_failures", "throttled", "errors500",
            "errors503", "garbage", "op_errors")}

    def record(self, entry):
        with self.lock:
            self.log.append(entry)
            if len(self.log) > 100000:
                del self.log[:50000]


STATE = State()


def check_deny(method, path, permission):
    """The config's "deny" patterns ("METHOD /path", fnmatch) stand for an IAM policy that lacks a
    permission: 403 naming the permission the route needs, as Google does."""
    with STATE.lock:
        patterns, project = list(STATE.deny), STATE.project
    if any(fnmatch.fnmatchcase(f"{method} {path}", p) for p in patterns):
        raise GoogleError(403, f"Required '{permission}' permission for 'projects/{project}'")


def route(routes, req, path):
    """(handler, groups) of the first route whose method and path regex match path (the request's path or
    its tail); 404 otherwise. Runs the deny check of the request's whole path with the route's permission."""
    for m, rx, permission, fn in routes:
        mt = rx.fullmatch(path)
        if mt and m == req.method:
            check_deny(req.method, req.path, permission)
            return fn, mt.groups()
    raise GoogleError(404, f"The requested URL {req.path} was not found on this server.")


def params(raw_query, allowed):
    """The query as a dict. Like ESF: a parameter the method does not bind is a 400, and so is a repeated
    one (none of the parameters this double serves is repeated)."""
    try:
        pairs = urllib.parse.parse_qsl(raw_query, keep_blank_values=True, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise GoogleError(400, "Invalid query string: not valid UTF-8 after percent-decoding.")
    out = {}
    for k, v in pairs:
        if k not in allowed and k not in SYSTEM_PARAMS:
            raise GoogleError(400, f'Invalid JSON payload received. Unknown name "{k}": Cannot bind query '
                                   f"parameter. Field '{k}' could not be found in request message.")
        if k in out:
            raise GoogleError(400, f"Invalid value for field '{k}': repeated, but the field is not repeated.")
        out[k] = v
    return out


def json_body(req, allowed, where=""):
    """The request's JSON object, refused as ESF refuses it: another content type, bytes that do not parse,
    a field the message does not have."""
    ctype = req.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise GoogleError(400, f"Invalid Content-Type '{ctype}': this method takes application/json.",
                          "badRequest")
    try:
        obj = json.loads(req.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise GoogleError(400, "Invalid JSON payload received. Unexpected token.", "badRequest")
    if not isinstance(obj, dict):
        raise GoogleError(400, "Invalid JSON payload received. Expected an object.", "badRequest")
    check_fields(obj, allowed, where)
    return obj


def check_fields(obj, allowed, where=""):
    for k in obj:
        if k not in allowed:
            at = f" at '{where}'" if where else ""
            raise GoogleError(400, f'Invalid JSON payload received. Unknown name "{k}"{at}: Cannot find field.')


def no_body(req):
    if req.body:
        raise GoogleError(400, "Invalid JSON payload received. This method takes no request body.", "badRequest")


def uint64_id(*parts):
    """A stable uint64 id (as Google's resource ids: decimal, often 19 digits)."""
    return str(int.from_bytes(hashlib.sha256("/".join(parts).encode()).digest()[:8], "big") | (1 << 62))


def fingerprint(obj):
    """Compute's fingerprints: 8 bytes, base64."""
    return base64.b64encode(hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).digest()[:8]).decode()


def pacific_time(t):
    """Compute's timestamps: RFC 3339 with milliseconds in Pacific time, written with its offset (always
    -08:00 here: the double does not follow daylight saving time)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t - 8 * 3600)) + ".%03d-08:00" % (int(t * 1000) % 1000)


def utc_time(t):
    """Cloud DNS's and Cloud Storage's timestamps: RFC 3339 UTC with milliseconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % (int(t * 1000) % 1000)


def page_size(raw, default, cap, field="maxResults"):
    """maxResults: 0 or absent is the default (proto3 cannot tell them apart), above cap a 400."""
    if raw is None or raw == "":
        return default
    if not raw.isdigit():
        raise GoogleError(400, f"Invalid value for field '{field}': '{raw}'. Must be a non-negative integer.")
    n = int(raw)
    if cap is not None and n > cap:
        raise GoogleError(400, f"Invalid value for field '{field}': '{raw}'. Must be less than or equal to {cap}")
    return n or default


def page(items, size, token, salt):
    """One page of items and the token of the next (None on the last). Tokens hold the offset and a salt
    naming the query; a token of another query is a 400. They carry '+', '/' and '=' on purpose: a client
    must percent-encode them."""
    offset = 0
    if token:
        try:
            assert token.startswith("Cg+/")
            offset, s = json.loads(base64.b64decode(token[4:], validate=True))
            assert s == salt and isinstance(offset, int) and offset >= 0
        except Exception:
            raise GoogleError(400, f"Invalid value for field 'pageToken': '{token}'. Invalid page token.")
    chunk = items[offset:offset + size]
    nxt = None
    if offset + size < len(items):
        nxt = "Cg+/" + base64.b64encode(json.dumps([offset + size, salt]).encode()).decode()
    return chunk, nxt


def salt_of(*parts):
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]
