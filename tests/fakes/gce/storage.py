# SPDX-License-Identifier: Apache-2.0
"""Cloud Storage JSON API v1, the part protokube's store uses: simple (uploadType=media) uploads with
ifGenerationMatch, object get (metadata or alt=media), list with prefix/delimiter paging, delete, bucket get.
Objects live in memory, one generation each (no versioning). Preconditions are checked and the object written
under the state's one lock, so of concurrent ifGenerationMatch=0 uploads of one name exactly one wins. Public
ACLs are refused on a bucket with public access prevention, as Google refuses them, and recorded otherwise."""
import base64
import hashlib
import re
import time
import urllib.parse

from common import STATE, GoogleError, page, page_size, params, route, salt_of, utc_time


def _crc_table():
    out = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        out.append(c)
    return out


CRC_TABLE = _crc_table()
PREDEFINED = {"authenticatedRead", "bucketOwnerFullControl", "bucketOwnerRead", "private", "projectPrivate",
              "publicRead", "publicReadWrite"}
PUBLIC = {"authenticatedRead", "publicRead", "publicReadWrite"}  # grants to allUsers or allAuthenticatedUsers
_last_generation = [0]


class Raw:
    """An answer that is not a JSON object: media bytes, or a 204."""

    def __init__(self, status, ctype, data, headers=None):
        self.status, self.ctype, self.data, self.headers = status, ctype, data, headers or {}


def crc32c(data):
    """CRC-32C (Castagnoli), which Cloud Storage reports as base64 of its four big-endian bytes."""
    c, t = 0xFFFFFFFF, CRC_TABLE
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def add_bucket(name, cfg):
    with STATE.lock:
        b = STATE.buckets.setdefault(name, {"objects": {}, "created": time.time(), "pap": "inherited", "kms": None})
        b["pap"] = cfg.get("public_access_prevention", b["pap"])
        b["kms"] = cfg.get("default_kms_key", b["kms"])


def the_bucket(raw):
    b = STATE.buckets.get(urllib.parse.unquote(raw))
    if b is None:
        raise GoogleError(404, "The specified bucket does not exist.")
    return urllib.parse.unquote(raw), b


def object_name(raw):
    try:
        return urllib.parse.unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise GoogleError(400, "The specified object name is not valid UTF-8.")


def object_resource(bname, name, o):
    q = urllib.parse.quote(name, safe="")
    g = str(o["generation"])
    r = {"kind": "storage#object", "id": f"{bname}/{name}/{g}",
         "selfLink": f"https://www.googleapis.com/storage/v1/b/{bname}/o/{q}",
         "mediaLink": f"https://storage.googleapis.com/download/storage/v1/b/{bname}/o/{q}?generation={g}&alt=media",
         "name": name, "bucket": bname, "generation": g, "metageneration": "1", "contentType": o["content_type"],
         "storageClass": "STANDARD", "size": str(len(o["data"])), "md5Hash": o["md5"], "crc32c": o["crc32c"],
         "etag": base64.b64encode(o["generation"].to_bytes(8, "little")).decode().rstrip("="),
         "timeCreated": utc_time(o["created"]), "updated": utc_time(o["created"]),
         "timeStorageClassUpdated": utc_time(o["created"])}
    if o["kms"]:
        r["kmsKeyName"] = o["kms"]
    return r


def precondition(q, o):
    """ifGenerationMatch: 0 means "no live object", G "the live object is generation G"."""
    raw = q.get("ifGenerationMatch")
    if raw is None:
        return
    if not raw.isdigit():
        raise GoogleError(400, f"Invalid argument: ifGenerationMatch '{raw}'.")
    if int(raw) != (o["generation"] if o else 0):
        raise GoogleError(412, "At least one of the pre-conditions you specified did not hold.")


def upload(req, braw):
    q = params(req.query, {"uploadType", "name", "ifGenerationMatch", "predefinedAcl", "kmsKeyName",
                           "contentEncoding", "projection"})
    if q.get("uploadType") != "media":
        raise GoogleError(400, f"Upload type '{q.get('uploadType', '')}' is not served by the double (media only).")
    name = q.get("name")
    if not name:
        raise GoogleError(400, "Required parameter: name", "required")
    if len(name.encode()) > 1024 or "\r" in name or "\n" in name or name in (".", "..") \
            or name.startswith(".well-known/acme-challenge/"):
        raise GoogleError(400, "The specified object name is not valid.")
    acl = q.get("predefinedAcl")
    if acl is not None and acl not in PREDEFINED:
        raise GoogleError(400, f"Invalid argument: predefinedAcl '{acl}'.")
    digests = (base64.b64encode(hashlib.md5(req.body).digest()).decode(),
               base64.b64encode(crc32c(req.body).to_bytes(4, "big")).decode())  # outside the lock: slow
    with STATE.lock:
        bname, b = the_bucket(braw)
        if acl in PUBLIC and b["pap"] == "enforced":
            raise GoogleError(412, f"Request violates public access prevention: bucket '{bname}' has public access "
                                   "prevention enforced, so its objects cannot be made public.")
        precondition(q, b["objects"].get(name))
        now = time.time()
        _last_generation[0] = max(_last_generation[0] + 1, int(now * 1e6))
        kms = q.get("kmsKeyName") or b["kms"]
        o = b["objects"][name] = {
            "data": req.body, "generation": _last_generation[0], "created": now, "md5": digests[0],
            "crc32c": digests[1], "content_type": req.headers.get("Content-Type") or "application/octet-stream",
            "kms": kms + "/cryptoKeyVersions/1" if kms else None}
        if acl in PUBLIC:
            STATE.public_objects.append(f"{bname}/{name}")
        return object_resource(bname, name, o)


def the_object(req, braw, oraw, allowed):
    q = params(req.query, allowed | {"ifGenerationMatch", "generation"})
    bname, b = the_bucket(braw)
    name = object_name(oraw)
    o = b["objects"].get(name)
    if o is None or q.get("generation") not in (None, str(o["generation"])):
        raise GoogleError(404, f"No such object: {bname}/{name}")
    precondition(q, o)
    return q, bname, b, name, o


def get_object(req, braw, oraw):
    with STATE.lock:
        q, bname, _, name, o = the_object(req, braw, oraw, {"projection"})
        if q.get("alt") == "media":
            return Raw(200, o["content_type"], o["data"],
                       {"x-goog-generation": str(o["generation"]), "x-goog-metageneration": "1",
                        "x-goog-hash": f"crc32c={o['crc32c']},md5={o['md5']}",
                        "x-goog-stored-content-length": str(len(o["data"]))})
        return object_resource(bname, name, o)


def delete_object(req, braw, oraw):
    with STATE.lock:
        _, _, b, name, _ = the_object(req, braw, oraw, set())
        del b["objects"][name]
    return Raw(204, None, b"")


def list_objects(req, braw):
    q = params(req.query, {"prefix", "delimiter", "maxResults", "pageToken", "projection", "versions"})
    prefix, delim = q.get("prefix", ""), q.get("delimiter", "")
    size = min(page_size(q.get("maxResults"), 1000, None), 1000)
    with STATE.lock:
        if STATE.settings["object_page_size"]:
            size = min(size, STATE.settings["object_page_size"])
        bname, b = the_bucket(braw)
        entries, seen = [], set()
        for n in sorted(o for o in b["objects"] if o.startswith(prefix)):
            cut = n.find(delim, len(prefix)) if delim else -1
            if cut < 0:
                entries.append(("o", n))
            elif n[:cut + len(delim)] not in seen:
                seen.add(n[:cut + len(delim)])
                entries.append(("p", n[:cut + len(delim)]))
        chunk, nxt = page(entries, size, q.get("pageToken"), salt_of("objects", bname, prefix, delim))
        out = {"kind": "storage#objects"}
        items = [object_resource(bname, n, b["objects"][n]) for k, n in chunk if k == "o"]
        if items:
            out["items"] = items
        if any(k == "p" for k, _ in chunk):
            out["prefixes"] = [n for k, n in chunk if k == "p"]
        if nxt:
            out["nextPageToken"] = nxt
        return out


def get_bucket(req, braw):
    params(req.query, {"projection"})
    with STATE.lock:
        bname, b = the_bucket(braw)
        r = {"kind": "storage#bucket", "id": bname, "selfLink": f"https://www.googleapis.com/storage/v1/b/{bname}",
             "projectNumber": STATE.project_number, "name": bname, "timeCreated": utc_time(b["created"]),
             "updated": utc_time(b["created"]), "metageneration": "1", "location": "EUROPE-WEST1",
             "locationType": "region", "storageClass": "STANDARD", "etag": "CAE=",
             "iamConfiguration": {"bucketPolicyOnly": {"enabled": False},
                                  "uniformBucketLevelAccess": {"enabled": False},
                                  "publicAccessPrevention": b["pap"]}}
        if b["kms"]:
            r["encryption"] = {"defaultKmsKeyName": b["kms"]}
        return r


ROUTES = [(m, re.compile(rx), perm, fn) for m, rx, perm, fn in [
    ("POST", r"/upload/storage/v1/b/([^/]+)/o", "storage.objects.create", upload),
    ("GET", r"/storage/v1/b/([^/]+)", "storage.buckets.get", get_bucket),
    ("GET", r"/storage/v1/b/([^/]+)/o", "storage.objects.list", list_objects),
    ("GET", r"/storage/v1/b/([^/]+)/o/(.+)", "storage.objects.get", get_object),
    ("DELETE", r"/storage/v1/b/([^/]+)/o/(.+)", "storage.objects.delete", delete_object)]]


def dispatch(req):
    """The storage paths, matched percent-encoded (an object name's '/' is %2F there). Handlers lock."""
    fn, groups = route(ROUTES, req, req.path)
    return fn(req, *groups)


def state():
    return {"buckets": {bname: {n: {"generation": str(o["generation"]), "size": len(o["data"])}
                                for n, o in sorted(b["objects"].items())} for bname, b in STATE.buckets.items()},
            "public_objects": list(STATE.public_objects)}
