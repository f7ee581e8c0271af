#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A loopback double of the AWS APIs protokube uses: IMDSv2, an EC2 Query subset (DescribeInstances,
DescribeVolumes, AttachVolume, DetachVolume), a Route 53 REST subset (ListHostedZonesByName, ListResourceRecordSets,
ChangeResourceRecordSets, GetChange) and an S3 subset, path-style only (GetObject, PutObject with If-None-Match: *,
ListObjectsV2 with or without a delimiter, DeleteObject, HeadBucket; objects in memory, buckets from the config's
"buckets", each in the region "bucket_regions" gives it, else the double's). A call signed for another region than
its bucket's is refused as S3 does, naming the bucket's region in x-amz-bucket-region ("s3_wrong_region":
"malformed", 400 AuthorizationHeaderMalformed as from the bucket's own regional endpoint; "redirect", 301
PermanentRedirect as from another region's; "bare", the 400 with the region in its document only, which HeadBucket
then tells). "s3_ignore_if_none_match" (true, or a list of key prefixes) makes PutObject overwrite whatever
If-None-Match says, as a non-conforming S3-compatible gateway does; "s3_replace_after_put" ({"BUCKET/KEY": text},
each once) stores text over an object right after its PutObject answered, as another writer's put landing then;
"s3_require_sse" refuses a PutObject without server-side encryption (AccessDenied), as a bucket policy may. The
fault s3_get_errors, a list of {"match": fnmatch pattern of the key, "status", "code"}, answers every GetObject of a
matching key, present or not, with that error (a bucket policy or KMS key that denies reads, a failing backend).

Every API request is checked with botocore's SigV4 (an implementation independent of ours); failures answer
the way AWS does (SignatureDoesNotMatch, AuthFailure, InvalidClientTokenId...). Volumes may be backed by image
files: AttachVolume then sets up a loop device and the by-id symlink a Nitro instance would have, in a
directory the test gives (never the real /dev/disk/by-id).

Control (unsigned, for the tests): POST /_double/config (JSON, merged), GET /_double/state, GET /_double/log,
POST /_double/cleanup (detaches loop devices it made). IMDS under "/_as/<instance-id>/latest/..." answers as
that instance (one double, several simulated instances). Run: server.py --port-file F [--config JSON-FILE]
[--listen ADDR] (default 127.0.0.1) [--insync-delay SECONDS] (Route 53 changes stay PENDING that long; the
fault insync_delay_seconds sets it at run time).
"""
import argparse
import base64
import calendar
import fnmatch
import hashlib
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sigv4_botocore  # noqa: E402

EC2_NS = "http://ec2.amazonaws.com/doc/2016-11-15/"
R53_NS = "https://route53.amazonaws.com/doc/2013-04-01/"
BODY_MAX = 1 << 20
S3_BODY_MAX = 17 << 20  # protokube's store objects are at most 16 MiB
SKEW = 5 * 60  # AWS refuses requests signed more than 5 minutes off


def esc(s):
    return (str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def reversed_labels(name):
    return ".".join(reversed(name.rstrip(".").lower().split(".")))


def norm_name(name):
    name = name.lower()
    return name if name.endswith(".") else name + "."


class ApiError(Exception):
    def __init__(self, status, code, message, headers=None, extra=None):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = headers or {}  # further response headers (x-amz-bucket-region)
        self.extra = extra or {}  # further elements of an S3 error document (Region, Endpoint, Bucket)


class State:
    def __init__(self):
        self.lock = threading.RLock()
        self.region = "us-east-1"
        self.keys = {"AKIDEXAMPLE": {"secret": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "token": None}}
        self.self_id = "i-0123456789abcdef0"
        self.instances = {
            self.self_id: {"az": "us-east-1a", "private_ip": "10.0.0.5", "public_ip": "54.0.0.5",
                           "tags": {"KubernetesCluster": "test.example.com"}, "root_device": "/dev/xvda",
                           "state": "running"},
        }
        self.volumes = {}
        self.zones = {}
        self.changes = {}
        self.buckets = {}  # name -> {key: {"data": bytes, "sse": str or None}}
        self.bucket_regions = {}  # name -> region (absent: self.region)
        self.s3_wrong_region = "malformed"  # or "redirect": how a call signed for another region is refused
        self.s3_ignore_if_none_match = False  # True, or a list of key prefixes: PutObject overwrites anyway
        self.s3_replace_after_put = {}  # "bucket/key" -> text stored right after the next PutObject of it
        self.s3_require_sse = False  # True: PutObject without server-side encryption is AccessDenied
        self.faults = {"throttle": 0, "error500": 0, "slow_seconds": 0, "slow_count": 0, "attach_stuck_polls": 0,
                       "insync_after_polls": 1, "insync_delay_seconds": 0, "throttle_pattern": None,
                       "garbage": 0, "s3_get_errors": []}
        self.role = {"name": "protokube-master", "ttl": 6 * 3600}
        self.imds_tokens = {}
        self.imds_token_ttl_override = None
        self.byid_dir = None
        self.xvd_dir = None  # set: a Xen instance, /dev/xvdX names in this directory instead of by-id links
        self.log = []
        self.counters = {"requests": 0, "throttled": 0, "errors500": 0, "bad_signatures": 0, "imds_token_puts": 0,
                         "role_fetches": 0, "seq": 0}
        self.loops = []  # (volume id, loop device, symlink)

    def configure(self, cfg):
        with self.lock:
            for k in ("region", "self_id", "byid_dir", "xvd_dir", "imds_token_ttl_override", "s3_wrong_region",
                      "s3_ignore_if_none_match", "s3_require_sse"):
                if k in cfg:
                    setattr(self, k, cfg[k])
            for k, v in cfg.get("keys", {}).items():
                self.keys[k] = v
            for k in cfg.get("remove_keys", []):
                self.keys.pop(k, None)
            self.faults.update(cfg.get("faults", {}))
            self.role.update(cfg.get("role", {}))
            for iid, inst in cfg.get("instances", {}).items():
                inst.setdefault("state", "running")
                inst.setdefault("tags", {})
                inst.setdefault("root_device", "/dev/xvda")
                self.instances[iid] = inst
            for v in cfg.get("volumes", []):
                self.add_volume(v)
            gen = cfg.get("generate_volumes")
            if gen:
                for i in range(gen["count"]):
                    tags = {k: v.replace("{i}", str(i)) for k, v in gen.get("tags", {}).items()}
                    self.add_volume({"id": "vol-%017x" % (0x100000 + i), "az": gen.get("az", "us-east-1a"),
                                     "size": 1, "tags": tags})
            for b in cfg.get("buckets", []):
                self.buckets.setdefault(b, {})
            self.bucket_regions.update(cfg.get("bucket_regions", {}))
            self.s3_replace_after_put.update(cfg.get("s3_replace_after_put", {}))
            for o in cfg.get("objects", []):  # seeded objects: {"bucket", "key", "data"}
                self.buckets.setdefault(o["bucket"], {})[o["key"]] = {"data": o["data"].encode(), "sse": None}
            for z in cfg.get("zones", []):
                zid = z["id"]
                self.zones[zid] = {"name": norm_name(z["name"]), "private": z.get("private", False),
                                   "records": {}}
                for r in z.get("records", []):
                    key = (norm_name(r["name"]), r["type"], r.get("set_identifier"))
                    self.zones[zid]["records"][key] = {"ttl": r.get("ttl", 300), "values": list(r["values"])}
                self.zones[zid]["records"].setdefault(
                    (self.zones[zid]["name"], "SOA", None),
                    {"ttl": 900, "values": ["ns-1.example. hostmaster.example. 1 7200 900 1209600 86400"]})
                self.zones[zid]["records"].setdefault(
                    (self.zones[zid]["name"], "NS", None), {"ttl": 172800, "values": ["ns-1.example."]})

    def add_volume(self, v):
        vid = v["id"]
        self.volumes[vid] = {"az": v.get("az", "us-east-1a"), "size": v.get("size", 1),
                             "type": v.get("type", "gp3"), "tags": dict(v.get("tags", {})),
                             "image": v.get("image"), "attachment": None, "snapshot": v.get("snapshot")}
        att = v.get("attached_to")
        if att:
            self.volumes[vid]["attachment"] = {"instance": att["instance"], "device": att["device"],
                                               "state": "attached", "polls": 0,
                                               "since": att.get("since", 1767225600.0)}

    def record(self, entry):
        with self.lock:
            self.log.append(entry)
            if len(self.log) > 100000:
                del self.log[:50000]


STATE = State()


# ---------------------------------------------------------------- SigV4 verification (botocore)

AUTH_RE = re.compile(r"^AWS4-HMAC-SHA256 Credential=([^/,]+)/(\d{8})/([^/,]+)/([^/,]+)/aws4_request, "
                     r"SignedHeaders=([a-z0-9;\-]+), Signature=([0-9a-f]{64})$")


def verify_sigv4(handler, body, service, region):
    """Raises ApiError unless the request carries a valid signature for service/region."""
    ec2 = service == "ec2"
    authz = handler.headers.get("Authorization")
    if not authz:
        raise ApiError(401 if ec2 else 403, "AuthFailure" if ec2 else "MissingAuthenticationToken",
                       "AWS was not able to validate the provided access credentials")
    m = AUTH_RE.match(authz)
    if not m:
        raise ApiError(400, "IncompleteSignature", "Authorization header is malformed")
    akid, date, sregion, sservice, signed, sig = m.groups()
    with STATE.lock:
        key = STATE.keys.get(akid)
        key = dict(key) if key else None
    if key is None:
        raise ApiError(401 if ec2 else 403, "AuthFailure" if ec2 else "InvalidClientTokenId",
                       "The security token included in the request is invalid.")
    if sservice != service or sregion != region:
        raise ApiError(403, "SignatureDoesNotMatch",
                       f"Credential should be scoped to a valid region and service ({region}/{service}).")
    amz_date = handler.headers.get("X-Amz-Date", "")
    try:
        t = calendar.timegm(time.strptime(amz_date, "%Y%m%dT%H%M%SZ"))
    except ValueError:
        raise ApiError(400, "IncompleteSignature", "X-Amz-Date is missing or malformed")
    if amz_date[:8] != date:
        raise ApiError(403, "SignatureDoesNotMatch", "Credential date does not match X-Amz-Date")
    if abs(time.time() - t) > SKEW:
        raise ApiError(403, "RequestExpired" if ec2 else "SignatureDoesNotMatch",
                       "Request has expired (signed %s)." % amz_date)
    names = signed.split(";")
    if "host" not in names or "x-amz-date" not in names:
        raise ApiError(403, "SignatureDoesNotMatch", "host and x-amz-date must be signed")
    token = handler.headers.get("X-Amz-Security-Token")
    if key.get("token") is not None:
        if token != key["token"] or "x-amz-security-token" not in names:
            raise ApiError(401 if ec2 else 403, "AuthFailure" if ec2 else "InvalidClientTokenId",
                           "The security token included in the request is invalid.")
        if key.get("expires") and time.time() > key["expires"]:
            raise ApiError(400, "ExpiredToken", "The security token included in the request is expired")
    signed_headers = []
    for n in names:
        vals = handler.headers.get_all(n)
        if not vals:
            raise ApiError(403, "SignatureDoesNotMatch", f"signed header '{n}' is missing")
        for v in vals:
            signed_headers.append((n, v))
    url = "http://" + handler.headers.get("Host", "") + handler.path
    want, creq = sigv4_botocore.expected_signature(handler.command, url, signed_headers, body, region, service,
                                                   akid, key["secret"], amz_date)
    if want != sig:
        with STATE.lock:
            STATE.counters["bad_signatures"] += 1
        raise ApiError(403, "SignatureDoesNotMatch",
                       "The request signature we calculated does not match the signature you provided. "
                       "Check your AWS Secret Access Key and signing method. Consult the service documentation "
                       "for details.")


# ---------------------------------------------------------------- EC2

def ec2_filters(params):
    filters = {}
    for k, v in params.items():
        m = re.fullmatch(r"Filter\.(\d+)\.Name", k)
        if m:
            filters.setdefault(int(m.group(1)), [v, []])[0] = v
    for k, v in params.items():
        m = re.fullmatch(r"Filter\.(\d+)\.Value\.(\d+)", k)
        if m:
            n = int(m.group(1))
            if n not in filters:
                raise ApiError(400, "InvalidParameterValue", f"The filter value {k} has no name")
            filters[n][1].append(v)
    return [tuple(f) for _, f in sorted(filters.items())]


def match_any(value, patterns):
    return value is not None and any(fnmatch.fnmatchcase(value, p) for p in patterns)


def volume_matches(vid, v, filters):
    for name, values in filters:
        att = v["attachment"]
        if name.startswith("tag:"):
            ok = match_any(v["tags"].get(name[4:]), values)
        elif name == "tag-key":
            ok = any(match_any(k, values) for k in v["tags"])
        elif name == "availability-zone":
            ok = match_any(v["az"], values)
        elif name == "volume-id":
            ok = match_any(vid, values)
        elif name == "status":
            ok = match_any(volume_status(v), values)
        elif name == "attachment.instance-id":
            ok = att is not None and match_any(att["instance"], values)
        else:
            raise ApiError(400, "InvalidParameterValue", f"The filter '{name}' is invalid")
        if not ok:
            return False
    return True


def volume_status(v):
    return "in-use" if v["attachment"] else "available"


def ids_from(params, prefix):
    out, i = [], 1
    while f"{prefix}.{i}" in params:
        out.append(params[f"{prefix}.{i}"])
        i += 1
    return out


def make_token(offset, salt):
    raw = base64.b64encode(json.dumps([offset, salt]).encode()).decode()
    return "p/+=" + raw  # '/', '+' and '=' on purpose: clients must encode them


def read_token(tok, salt):
    try:
        assert tok.startswith("p/+=")
        offset, s = json.loads(base64.b64decode(tok[4:]))
        assert s == salt and isinstance(offset, int) and offset >= 0
        return offset
    except Exception:
        raise ApiError(400, "InvalidParameterValue", "Invalid value for parameter NextToken")


def page(params, items, lo, hi, salt):
    mr = params.get("MaxResults")
    if mr is None:
        size = len(items) if len(items) <= 1000 else 1000
    else:
        if not mr.isdigit() or not (lo <= int(mr) <= hi):
            raise ApiError(400, "InvalidParameterValue",
                           f"Value ( {mr} ) for parameter maxResults is invalid. Expecting a value between "
                           f"{lo} and {hi}.")
        size = int(mr)
    offset = read_token(params["NextToken"], salt) if params.get("NextToken") else 0
    chunk = items[offset:offset + size]
    nxt = make_token(offset + size, salt) if offset + size < len(items) else None
    return chunk, nxt


def iso_time(t):
    """EC2's timestamps: UTC with milliseconds (attachTime orders two claims of one etcd member)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def volume_xml(vid, v):
    tags = "".join(f"<item><key>{esc(k)}</key><value>{esc(val)}</value></item>" for k, val in v["tags"].items())
    att = ""
    a = v["attachment"]
    if a:
        att = (f"<item><volumeId>{vid}</volumeId><instanceId>{esc(a['instance'])}</instanceId>"
               f"<device>{esc(a['device'])}</device><status>{a['state']}</status>"
               f"<attachTime>{iso_time(a.get('since', 1767225600.0))}</attachTime>"
               f"<deleteOnTermination>false</deleteOnTermination></item>")
    snap = f"<snapshotId>{esc(v['snapshot'])}</snapshotId>" if v.get("snapshot") else "<snapshotId/>"
    return (f"<item><volumeId>{vid}</volumeId><size>{v['size']}</size>{snap}"
            f"<availabilityZone>{esc(v['az'])}</availabilityZone><status>{volume_status(v)}</status>"
            f"<createTime>2026-01-01T00:00:00.000Z</createTime><attachmentSet>{att}</attachmentSet>"
            f"<tagSet>{tags}</tagSet><volumeType>{esc(v['type'])}</volumeType><encrypted>false</encrypted></item>")


def ec2_describe_volumes(params):
    ids = ids_from(params, "VolumeId")
    if ids and "MaxResults" in params:
        raise ApiError(400, "InvalidParameterCombination",
                       "The parameter volumeSet cannot be used with the parameter maxResults")
    filters = ec2_filters(params)
    with STATE.lock:
        for vid in ids:
            if vid not in STATE.volumes:
                raise ApiError(400, "InvalidVolume.NotFound", f"The volume '{vid}' does not exist.")
        chosen = [(vid, v) for vid, v in sorted(STATE.volumes.items())
                  if (not ids or vid in ids) and volume_matches(vid, v, filters)]
        salt = hashlib.sha256(json.dumps([filters, ids]).encode()).hexdigest()[:12]
        chunk, nxt = page(params, chosen, 5, 500, salt)
        # Attachments progress as clients look at them: "attaching" for attach_stuck_polls polls.
        for vid, v in chunk:
            a = v["attachment"]
            if a and a["state"] == "attaching":
                if a["polls"] <= 0:
                    a["state"] = "attached"
                else:
                    a["polls"] -= 1
        body = "".join(volume_xml(vid, v) for vid, v in chunk)
    nt = f"<nextToken>{esc(nxt)}</nextToken>" if nxt else ""
    return f"<DescribeVolumesResponse xmlns=\"{EC2_NS}\"><requestId>{rid()}</requestId>" \
           f"<volumeSet>{body}</volumeSet>{nt}</DescribeVolumesResponse>"


def instance_matches(iid, inst, filters):
    for name, values in filters:
        if name.startswith("tag:"):
            ok = match_any(inst["tags"].get(name[4:]), values)
        elif name == "instance-id":
            ok = match_any(iid, values)
        elif name == "availability-zone":
            ok = match_any(inst["az"], values)
        elif name == "instance-state-name":
            ok = match_any(inst["state"], values)
        else:
            raise ApiError(400, "InvalidParameterValue", f"The filter '{name}' is invalid")
        if not ok:
            return False
    return True


def private_dns_name(inst):
    """As EC2 names it: ip-A-B-C-D.ec2.internal in us-east-1, ip-A-B-C-D.REGION.compute.internal elsewhere;
    empty once terminated (or when the instance says so: "private_dns": "")."""
    if inst["state"] == "terminated" or inst.get("private_dns") == "":
        return ""
    region = STATE.region
    host = "ip-" + inst["private_ip"].replace(".", "-")
    return f"{host}.ec2.internal" if region == "us-east-1" else f"{host}.{region}.compute.internal"


def instance_xml(iid, inst):
    tags = "".join(f"<item><key>{esc(k)}</key><value>{esc(v)}</value></item>" for k, v in inst["tags"].items())
    bdm = f"<item><deviceName>{esc(inst['root_device'])}</deviceName><ebs><volumeId>vol-root{iid[2:]}</volumeId>" \
          f"<status>attached</status></ebs></item>"
    with STATE.lock:
        for vid, v in STATE.volumes.items():
            a = v["attachment"]
            if a and a["instance"] == iid:
                bdm += f"<item><deviceName>{esc(a['device'])}</deviceName><ebs><volumeId>{vid}</volumeId>" \
                       f"<status>{a['state']}</status></ebs></item>"
    pub = f"<ipAddress>{esc(inst['public_ip'])}</ipAddress>" if inst.get("public_ip") else ""
    return (f"<item><instanceId>{iid}</instanceId><imageId>ami-1</imageId><instanceState><code>16</code>"
            f"<name>{esc(inst['state'])}</name></instanceState><placement><availabilityZone>{esc(inst['az'])}"
            f"</availabilityZone><tenancy>default</tenancy></placement>"
            f"<privateDnsName>{esc(private_dns_name(inst))}</privateDnsName>"
            f"<privateIpAddress>{esc(inst['private_ip'])}</privateIpAddress>{pub}"
            f"<rootDeviceType>ebs</rootDeviceType><rootDeviceName>{esc(inst['root_device'])}</rootDeviceName>"
            f"<blockDeviceMapping>{bdm}</blockDeviceMapping><tagSet>{tags}</tagSet></item>")


def ec2_describe_instances(params):
    ids = ids_from(params, "InstanceId")
    filters = ec2_filters(params)
    with STATE.lock:
        for iid in ids:
            if iid not in STATE.instances:
                raise ApiError(400, "InvalidInstanceID.NotFound", f"The instance ID '{iid}' does not exist")
        chosen = [(iid, i) for iid, i in sorted(STATE.instances.items())
                  if (not ids or iid in ids) and instance_matches(iid, i, filters)]
        chunk, nxt = page(params, chosen, 5, 1000, "instances")
        items = "".join(instance_xml(iid, i) for iid, i in chunk)
    res = f"<item><reservationId>r-1</reservationId><ownerId>123456789012</ownerId><groupSet/>" \
          f"<instancesSet>{items}</instancesSet></item>" if items else ""
    nt = f"<nextToken>{esc(nxt)}</nextToken>" if nxt else ""
    return f"<DescribeInstancesResponse xmlns=\"{EC2_NS}\"><requestId>{rid()}</requestId>" \
           f"<reservationSet>{res}</reservationSet>{nt}</DescribeInstancesResponse>"


def byid_name(vid):
    return "nvme-Amazon_Elastic_Block_Store_" + vid.replace("-", "")


def attach_backing(vid, v, device):
    """Sets up the loop device for an image-backed volume and the by-id link a Nitro instance shows, or with
    xvd_dir (a Xen instance) the /dev/xvdX name the kernel gives the device EC2 attached as sdX/xvdX."""
    if not v.get("image"):
        return
    if not STATE.byid_dir:
        raise ApiError(500, "InternalError", "the double has no by-id directory for image-backed volumes")
    loop = subprocess.run(["losetup", "--find", "--show", v["image"]], capture_output=True, text=True,
                          timeout=30)
    if loop.returncode != 0:
        raise ApiError(500, "InternalError", "losetup failed: " + loop.stderr.strip())
    dev = loop.stdout.strip()
    if STATE.xvd_dir:
        os.makedirs(STATE.xvd_dir, exist_ok=True)
        link = os.path.join(STATE.xvd_dir, "xvd" + re.sub(r"^/dev/(xvd|sd)", "", device))
    else:
        os.makedirs(STATE.byid_dir, exist_ok=True)
        link = os.path.join(STATE.byid_dir, byid_name(vid))
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(dev, link)
    STATE.loops.append((vid, dev, link))


def ec2_attach_volume(params):
    vid, iid, dev = params.get("VolumeId"), params.get("InstanceId"), params.get("Device")
    if not vid or not iid or not dev:
        raise ApiError(400, "MissingParameter", "The request must contain the parameters VolumeId, InstanceId "
                       "and Device")
    if not re.fullmatch(r"/dev/(sd[b-z]|xvd[b-z]{1,2})", dev):
        raise ApiError(400, "InvalidParameterValue", f"Value ({dev}) for parameter device is invalid.")
    with STATE.lock:
        v = STATE.volumes.get(vid)
        if not v:
            raise ApiError(400, "InvalidVolume.NotFound", f"The volume '{vid}' does not exist.")
        inst = STATE.instances.get(iid)
        if not inst:
            raise ApiError(400, "InvalidInstanceID.NotFound", f"The instance ID '{iid}' does not exist")
        if v["attachment"]:
            raise ApiError(400, "VolumeInUse", f"{vid} is already attached to an instance")
        if v["az"] != inst["az"]:
            raise ApiError(400, "InvalidVolume.ZoneMismatch",
                           f"The volume '{vid}' is not in the same availability zone as instance '{iid}'")
        for ov in STATE.volumes.values():
            a = ov["attachment"]
            if a and a["instance"] == iid and a["device"] == dev:
                raise ApiError(400, "InvalidParameterValue", f"Attachment point {dev} is already in use")
        if dev == inst["root_device"]:
            raise ApiError(400, "InvalidParameterValue", f"Attachment point {dev} is already in use")
        attach_backing(vid, v, dev)
        v["attachment"] = {"instance": iid, "device": dev, "state": "attaching", "since": time.time(),
                           "polls": int(STATE.faults.get("attach_stuck_polls", 0))}
    return f"<AttachVolumeResponse xmlns=\"{EC2_NS}\"><requestId>{rid()}</requestId><volumeId>{vid}</volumeId>" \
           f"<instanceId>{iid}</instanceId><device>{esc(dev)}</device><status>attaching</status>" \
           f"<attachTime>2026-01-01T00:00:00.000Z</attachTime></AttachVolumeResponse>"


def detach_backing(vid):
    """Undoes attach_backing: removes the by-id link and detaches the loop device (lazily if mounted)."""
    keep = []
    for entry in STATE.loops:
        if entry[0] != vid:
            keep.append(entry)
            continue
        _, dev, link = entry
        if os.path.lexists(link):
            os.unlink(link)
        subprocess.run(["losetup", "-d", dev], capture_output=True, timeout=30)
    STATE.loops = keep


def ec2_detach_volume(params):
    vid, iid = params.get("VolumeId"), params.get("InstanceId")
    if not vid:
        raise ApiError(400, "MissingParameter", "The request must contain the parameter VolumeId")
    with STATE.lock:
        v = STATE.volumes.get(vid)
        if not v:
            raise ApiError(400, "InvalidVolume.NotFound", f"The volume '{vid}' does not exist.")
        a = v["attachment"]
        if not a:
            raise ApiError(400, "IncorrectState", f"Volume '{vid}' is in the 'available' state.")
        if iid and a["instance"] != iid:
            raise ApiError(400, "InvalidAttachment.NotFound",
                           f"Volume '{vid}' is not attached to instance '{iid}'")
        detach_backing(vid)
        holder, dev = a["instance"], a["device"]
        v["attachment"] = None
    return f"<DetachVolumeResponse xmlns=\"{EC2_NS}\"><requestId>{rid()}</requestId><volumeId>{vid}</volumeId>" \
           f"<instanceId>{esc(holder)}</instanceId><device>{esc(dev)}</device><status>detaching</status>" \
           f"<attachTime>2026-01-01T00:00:00.000Z</attachTime></DetachVolumeResponse>"


EC2_ACTIONS = {"DescribeVolumes": ec2_describe_volumes, "DescribeInstances": ec2_describe_instances,
               "AttachVolume": ec2_attach_volume, "DetachVolume": ec2_detach_volume}


def ec2_dispatch(body):
    try:
        params = dict(urllib.parse.parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=True))
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "MalformedQueryString", "The query string is malformed")
    action = params.get("Action")
    if params.get("Version") != "2016-11-15":
        raise ApiError(400, "InvalidParameterValue", "Unsupported Version")
    if action not in EC2_ACTIONS:
        raise ApiError(400, "InvalidAction", f"The action {action} is not valid for this web service.")
    return action, EC2_ACTIONS[action](params)


# ---------------------------------------------------------------- Route 53

def r53_zone(zid):
    z = STATE.zones.get(zid)
    if not z:
        raise ApiError(404, "NoSuchHostedZone", f"No hosted zone found with ID: {zid}")
    return z


def r53_list_zones_by_name(q):
    dnsname = q.get("dnsname", "")
    maxitems = int(q.get("maxitems", "100"))
    with STATE.lock:
        zones = sorted(STATE.zones.items(), key=lambda kv: (reversed_labels(kv[1]["name"]), kv[0]))
        if dnsname:
            zones = [kv for kv in zones if reversed_labels(kv[1]["name"]) >= reversed_labels(dnsname)]
        items = "".join(
            f"<HostedZone><Id>/hostedzone/{zid}</Id><Name>{esc(z['name'])}</Name><CallerReference>x</CallerReference>"
            f"<Config><PrivateZone>{'true' if z['private'] else 'false'}</PrivateZone></Config>"
            f"<ResourceRecordSetCount>{len(z['records'])}</ResourceRecordSetCount></HostedZone>"
            for zid, z in zones[:maxitems])
    trunc = "true" if len(zones) > maxitems else "false"
    return "ListHostedZonesByName", f"<ListHostedZonesByNameResponse xmlns=\"{R53_NS}\"><HostedZones>{items}" \
        f"</HostedZones><DNSName>{esc(dnsname)}</DNSName><IsTruncated>{trunc}</IsTruncated>" \
        f"<MaxItems>{maxitems}</MaxItems></ListHostedZonesByNameResponse>"


def rr_sort_key(key):
    name, typ, ident = key
    return (reversed_labels(name), typ, ident or "")


def r53_list_rrsets(zid, q):
    maxitems = min(int(q.get("maxitems", "300")), 300)
    with STATE.lock:
        z = r53_zone(zid)
        keys = sorted(z["records"], key=rr_sort_key)
        if "name" in q:
            start = (reversed_labels(q["name"]), q.get("type", ""), q.get("identifier", ""))
            keys = [k for k in keys if rr_sort_key(k) >= start]
        chunk, rest = keys[:maxitems], keys[maxitems:]
        items = ""
        for k in chunk:
            rec = z["records"][k]
            vals = "".join(f"<ResourceRecord><Value>{esc(v)}</Value></ResourceRecord>" for v in rec["values"])
            ident = f"<SetIdentifier>{esc(k[2])}</SetIdentifier>" if k[2] else ""
            items += f"<ResourceRecordSet><Name>{esc(k[0])}</Name><Type>{k[1]}</Type>{ident}<TTL>{rec['ttl']}</TTL>" \
                     f"<ResourceRecords>{vals}</ResourceRecords></ResourceRecordSet>"
    nxt = ""
    if rest:
        n = rest[0]
        nxt = f"<NextRecordName>{esc(n[0])}</NextRecordName><NextRecordType>{n[1]}</NextRecordType>"
        if n[2]:
            nxt += f"<NextRecordIdentifier>{esc(n[2])}</NextRecordIdentifier>"
    return "ListResourceRecordSets", f"<ListResourceRecordSetsResponse xmlns=\"{R53_NS}\"><ResourceRecordSets>" \
        f"{items}</ResourceRecordSets><IsTruncated>{'true' if rest else 'false'}</IsTruncated>{nxt}" \
        f"<MaxItems>{maxitems}</MaxItems></ListResourceRecordSetsResponse>"


def r53_change(zid, body):
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        raise ApiError(400, "InvalidInput", "Could not parse the request body")
    ns = {"r": R53_NS}
    changes = root.findall("r:ChangeBatch/r:Changes/r:Change", ns)
    if root.tag != f"{{{R53_NS}}}ChangeResourceRecordSetsRequest" or not changes:
        raise ApiError(400, "InvalidInput", "Invalid request: expected ChangeResourceRecordSetsRequest")
    with STATE.lock:
        z = r53_zone(zid)
        records = {k: dict(v, values=list(v["values"])) for k, v in z["records"].items()}
        errors = []
        for ch in changes:
            action = ch.findtext("r:Action", namespaces=ns)
            rrs = ch.find("r:ResourceRecordSet", ns)
            name = norm_name(rrs.findtext("r:Name", namespaces=ns) or "")
            typ = rrs.findtext("r:Type", namespaces=ns)
            ttl = int(rrs.findtext("r:TTL", namespaces=ns) or "0")
            vals = [e.text or "" for e in rrs.findall("r:ResourceRecords/r:ResourceRecord/r:Value", ns)]
            key = (name, typ, None)
            if not (name == z["name"] or name.endswith("." + z["name"])):
                errors.append(f"RRSet with DNS name {name} is not permitted in zone {z['name']}")
            elif action == "DELETE":
                cur = records.get(key)
                if not cur or cur["ttl"] != ttl or sorted(cur["values"]) != sorted(vals):
                    errors.append(f"Tried to delete resource record set [name='{name}', type='{typ}'] but it was "
                                  f"not found" if not cur else
                                  f"Tried to delete resource record set [name='{name}', type='{typ}'] but the "
                                  f"values provided do not match the current values")
                else:
                    del records[key]
            elif action in ("UPSERT", "CREATE"):
                if action == "CREATE" and key in records:
                    errors.append(f"Tried to create resource record set [name='{name}', type='{typ}'] but it "
                                  f"already exists")
                elif not vals:
                    errors.append("ResourceRecords must not be empty")
                else:
                    records[key] = {"ttl": ttl, "values": vals}
            else:
                errors.append(f"Invalid action {action}")
        if errors:
            raise ApiError(400, "InvalidChangeBatch", "[" + ", ".join(errors) + "]")
        z["records"] = records
        cid = "C" + secrets.token_hex(6).upper()
        # The records change at once (ListResourceRecordSets shows them, as Route 53's API does); the change
        # turns INSYNC (propagated to every Route 53 name server) only after both the polls and the delay:
        # real Route 53 takes tens of seconds, which the insync_delay_seconds fault stands for.
        STATE.changes[cid] = {"polls": int(STATE.faults.get("insync_after_polls", 1)),
                              "insync_at": time.monotonic() + float(STATE.faults.get("insync_delay_seconds", 0)),
                              "submitted": time.time()}
        submitted = STATE.changes[cid]["submitted"]
    return "ChangeResourceRecordSets", f"<ChangeResourceRecordSetsResponse xmlns=\"{R53_NS}\"><ChangeInfo>" \
        f"<Id>/change/{cid}</Id><Status>PENDING</Status><SubmittedAt>{iso_time(submitted)}</SubmittedAt>" \
        f"</ChangeInfo></ChangeResourceRecordSetsResponse>"


def iso_time(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def r53_get_change(cid):
    with STATE.lock:
        ch = STATE.changes.get(cid)
        if ch is None:
            raise ApiError(404, "NoSuchChange", f"A change with the specified change ID does not exist: {cid}")
        insync = ch["polls"] <= 0 and time.monotonic() >= ch["insync_at"]
        ch["polls"] -= 1
    return "GetChange", f"<GetChangeResponse xmlns=\"{R53_NS}\"><ChangeInfo><Id>/change/{cid}</Id>" \
        f"<Status>{'INSYNC' if insync else 'PENDING'}</Status><SubmittedAt>{iso_time(ch['submitted'])}" \
        f"</SubmittedAt></ChangeInfo></GetChangeResponse>"


def r53_dispatch(method, path, query, body):
    q = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
    p = path[len("/2013-04-01"):]
    if method == "GET" and p == "/hostedzonesbyname":
        return r53_list_zones_by_name(q)
    m = re.fullmatch(r"/hostedzone/([A-Z0-9]+)/rrset/?", p)
    if m and method == "GET":
        return r53_list_rrsets(m.group(1), q)
    if m and method == "POST":
        return r53_change(m.group(1), body)
    m = re.fullmatch(r"/change/([A-Z0-9]+)", p)
    if m and method == "GET":
        return r53_get_change(m.group(1))
    raise ApiError(404, "UnknownOperationException", f"no operation {method} {p}")


# ---------------------------------------------------------------- S3 (path-style: /bucket/key)

S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"


def s3_check_payload(handler, body):
    """S3 takes the payload hash from x-amz-content-sha256 and signs that header: it must be signed and match."""
    claimed = handler.headers.get("x-amz-content-sha256")
    if claimed is None:
        raise ApiError(400, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256")
    m = AUTH_RE.match(handler.headers.get("Authorization", ""))
    if not m or "x-amz-content-sha256" not in m.group(5).split(";"):
        raise ApiError(403, "SignatureDoesNotMatch", "x-amz-content-sha256 must be signed")
    if claimed != hashlib.sha256(body).hexdigest():
        raise ApiError(400, "XAmzContentSHA256Mismatch",
                       "The provided 'x-amz-content-sha256' header does not match what was computed.")


def s3_list(bucket, q):
    """ListObjectsV2, with a delimiter as S3 has it: a key with the delimiter after the prefix is rolled up
    into the CommonPrefixes entry of its prefix up to that delimiter, listed once, and counted against
    max-keys like a key; a page that ends on a common prefix continues after every key under it."""
    if q.get("list-type") != "2":
        raise ApiError(400, "InvalidArgument", "only ListObjectsV2 (list-type=2) is implemented")
    mk = q.get("max-keys", "1000")
    if not mk.isdigit():
        raise ApiError(400, "InvalidArgument", "Provided max-keys not an integer or within integer range")
    size = min(int(mk), 1000)
    prefix = q.get("prefix", "")
    delim = q.get("delimiter") or None
    keys = sorted(k for k in bucket if k.startswith(prefix))
    tok = q.get("continuation-token")
    if tok is not None:
        try:
            t = json.loads(base64.b64decode(tok))
            after, skip = t["after"], t.get("skip")
        except Exception:
            raise ApiError(400, "InvalidArgument", "The continuation token provided is incorrect")
        keys = [k for k in keys if k > after and not (skip and k.startswith(skip))]
    entries, truncated = [], False  # ("key", k) or ("prefix", common prefix)
    for k in keys:
        i = k.find(delim, len(prefix)) if delim else -1
        entry = ("prefix", k[:i + len(delim)]) if i >= 0 else ("key", k)
        if entries and entries[-1] == entry:
            continue
        if len(entries) == size:
            truncated = True
            break
        entries.append(entry)
    nxt = ""
    if truncated:
        kind, last = entries[-1]
        t = {"after": last, "skip": last if kind == "prefix" else None}
        nxt = "<NextContinuationToken>%s</NextContinuationToken>" % esc(
            base64.b64encode(json.dumps(t).encode()).decode())
    contents = "".join(f"<Contents><Key>{esc(k)}</Key><Size>{len(bucket[k]['data'])}</Size>"
                       f"<ETag>&quot;{hashlib.md5(bucket[k]['data']).hexdigest()}&quot;</ETag></Contents>"
                       for kind, k in entries if kind == "key")
    common = "".join(f"<CommonPrefixes><Prefix>{esc(p)}</Prefix></CommonPrefixes>"
                     for kind, p in entries if kind == "prefix")
    delimiter = f"<Delimiter>{esc(delim)}</Delimiter>" if delim else ""
    return (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"{S3_NS}\">"
            f"<Prefix>{esc(prefix)}</Prefix>{delimiter}<KeyCount>{len(entries)}</KeyCount><MaxKeys>{size}</MaxKeys>"
            f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>{nxt}{contents}{common}"
            f"</ListBucketResult>")


def s3_bucket_region(bname):
    """The bucket's region, or None for a bucket that does not exist."""
    with STATE.lock:
        if bname not in STATE.buckets:
            return None
        return STATE.bucket_regions.get(bname, STATE.region)


def s3_check_region(handler, bname):
    """S3 refuses a call signed for another region than its bucket's before it looks at the signature, and
    names the bucket's region: 400 AuthorizationHeaderMalformed from the bucket's own regional endpoint, 301
    PermanentRedirect from another region's (the double has one address: "s3_wrong_region" says which it
    plays). Returns the region to verify the signature for."""
    region = s3_bucket_region(bname)
    if region is None:
        return STATE.region
    m = AUTH_RE.match(handler.headers.get("Authorization", ""))
    if not m or m.group(3) == region:
        return region
    with STATE.lock:
        STATE.counters["s3_wrong_region"] = STATE.counters.get("s3_wrong_region", 0) + 1
        mode = STATE.s3_wrong_region
    # "bare": the region only in the error document, as some answers have it; HeadBucket still names it
    hdr = {} if mode == "bare" else {"x-amz-bucket-region": region}
    if mode == "redirect":
        raise ApiError(301, "PermanentRedirect", "The bucket you are attempting to access must be addressed using "
                       "the specified endpoint. Please send all future requests to this endpoint.", hdr,
                       {"Bucket": bname, "Endpoint": f"s3.{region}.amazonaws.com"})
    raise ApiError(400, "AuthorizationHeaderMalformed", f"The authorization header is malformed; the region "
                   f"'{m.group(3)}' is wrong; expecting '{region}'", hdr, {"Region": region})


def s3_condition_ignored(key):
    with STATE.lock:
        ign = STATE.s3_ignore_if_none_match
    return ign is True or (isinstance(ign, list) and any(key.startswith(p) for p in ign))


def s3_is_bucket_call(path):
    """/bucket or /bucket/: a call on the bucket (ListObjectsV2, HeadBucket), not on an object."""
    return not path[1:].partition("/")[2]


def s3_key(path, query=""):
    """The object's key, or for a list the prefix asked for ("prefix=..."): what the log says was read."""
    key = urllib.parse.unquote(path[1:].partition("/")[2])
    if key:
        return key
    return "prefix=" + dict(urllib.parse.parse_qsl(query, keep_blank_values=True)).get("prefix", "")


def s3_action(method, path, action="?"):
    """The S3 action a request asked for, for the log (also when it failed)."""
    if action != "?":
        return action
    if s3_is_bucket_call(path):
        return {"GET": "ListObjectsV2", "HEAD": "HeadBucket"}.get(method, action)
    return {"GET": "GetObject", "HEAD": "HeadObject", "PUT": "PutObject", "DELETE": "DeleteObject"}.get(method,
                                                                                                       action)


def s3_dispatch(handler, method, path, query, body):
    """Returns (action, status, content type, body)."""
    bname, _, key = path[1:].partition("/")
    key = urllib.parse.unquote(key)
    q = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
    with STATE.lock:
        bucket = STATE.buckets.get(bname)
        if bucket is None:
            raise ApiError(404, "NoSuchBucket", "The specified bucket does not exist")
        if not key:
            if method == "HEAD":
                return "HeadBucket", 200, "application/xml", b""
            if method != "GET":
                raise ApiError(405, "MethodNotAllowed", f"{method} on a bucket is not implemented")
            return "ListObjectsV2", 200, "application/xml", s3_list(bucket, q)
        if method == "GET":
            for e in STATE.faults.get("s3_get_errors") or []:
                if fnmatch.fnmatchcase(key, e["match"]):
                    raise ApiError(int(e["status"]), e["code"], "injected: " + e["code"])
            obj = bucket.get(key)
            if obj is None:
                raise ApiError(404, "NoSuchKey", "The specified key does not exist.")
            return "GetObject", 200, "application/octet-stream", obj["data"]
        if method == "PUT":
            inm = handler.headers.get("If-None-Match")
            if inm is not None and inm != "*":
                raise ApiError(501, "NotImplemented", "If-None-Match takes only '*'")
            sse = handler.headers.get("x-amz-server-side-encryption")
            if sse not in (None, "AES256", "aws:kms"):
                raise ApiError(400, "InvalidArgument", "The encryption method specified is not supported")
            if sse is None and STATE.s3_require_sse:  # as a bucket policy that denies unencrypted puts
                raise ApiError(403, "AccessDenied", "Access Denied")
            # Checked and written under the one lock: create-if-absent is atomic, as S3 promises (unless the
            # double plays a gateway that ignores the condition).
            if inm == "*" and key in bucket:
                if s3_condition_ignored(key):
                    STATE.counters["s3_condition_ignored"] = STATE.counters.get("s3_condition_ignored", 0) + 1
                else:
                    STATE.counters["s3_precondition_failed"] = STATE.counters.get("s3_precondition_failed", 0) + 1
                    raise ApiError(412, "PreconditionFailed",
                                   "At least one of the pre-conditions you specified did not hold")
            bucket[key] = {"data": bytes(body), "sse": sse}
            other = STATE.s3_replace_after_put.pop(f"{bname}/{key}", None)
            if other is not None:
                bucket[key] = {"data": other.encode(), "sse": sse}
            return "PutObject", 200, "application/xml", b""
        if method == "DELETE":
            bucket.pop(key, None)
            return "DeleteObject", 204, "application/xml", b""
    raise ApiError(405, "MethodNotAllowed", f"{method} on an object is not implemented")


def rid():
    return secrets.token_hex(4) + "-" + secrets.token_hex(2) + "-" + secrets.token_hex(2) + "-" + \
        secrets.token_hex(2) + "-" + secrets.token_hex(6)


# ---------------------------------------------------------------- IMDSv2

IMDS_AS_RE = re.compile(r"^/_as/(i-[0-9a-z]{1,32})(/latest/.*)$")


def imds(handler, method, path, as_instance=None):
    """IMDSv2; as_instance (from a "/_as/<id>" endpoint prefix) answers as that instance, so that several
    clients of one double each have their own identity."""
    now = time.time()
    if path == "/latest/api/token":
        if method != "PUT":
            return 405, "text/plain", ""
        ttl = handler.headers.get("X-aws-ec2-metadata-token-ttl-seconds", "")
        if not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            return 400, "text/plain", ""
        tok = "AQAE" + secrets.token_urlsafe(30)
        with STATE.lock:
            eff = STATE.imds_token_ttl_override if STATE.imds_token_ttl_override is not None else int(ttl)
            STATE.imds_tokens[tok] = now + eff
            STATE.counters["imds_token_puts"] += 1
        return 200, "text/plain", tok
    if method != "GET":
        return 405, "text/plain", ""
    tok = handler.headers.get("X-aws-ec2-metadata-token")
    with STATE.lock:
        if not tok or STATE.imds_tokens.get(tok, 0) < now:
            return 401, "text/plain", ""
        self_id = as_instance or STATE.self_id
        inst = STATE.instances.get(self_id)
        if inst is None:
            return 404, "text/plain", ""
        md = {
            "/latest/meta-data/instance-id": self_id,
            "/latest/meta-data/placement/availability-zone": inst["az"],
            "/latest/meta-data/placement/region": STATE.region,
            "/latest/meta-data/local-ipv4": inst["private_ip"],
            "/latest/meta-data/iam/security-credentials/": STATE.role["name"],
        }
        if inst.get("public_ip"):
            md["/latest/meta-data/public-ipv4"] = inst["public_ip"]
        if path == "/latest/meta-data/iam/security-credentials/" + STATE.role["name"]:
            akid = "ASIA" + secrets.token_hex(8).upper()
            secret = secrets.token_urlsafe(30)
            token = "IQoJ" + secrets.token_urlsafe(60)
            exp = now + STATE.role["ttl"]
            STATE.keys[akid] = {"secret": secret, "token": token, "expires": exp}
            STATE.counters["role_fetches"] += 1
            doc = {"Code": "Success", "LastUpdated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
                   "Type": "AWS-HMAC", "AccessKeyId": akid, "SecretAccessKey": secret, "Token": token,
                   "Expiration": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(exp))}
            return 200, "text/plain", json.dumps(doc)
    if path in md:
        return 200, "text/plain", md[path]
    return 404, "text/plain", ""


# ---------------------------------------------------------------- HTTP

def error_xml(service, e, request_id):
    if service == "s3":
        extra = "".join(f"<{k}>{esc(v)}</{k}>" for k, v in e.extra.items())
        return f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{esc(e.code)}</Code>" \
               f"<Message>{esc(e.message)}</Message>{extra}<RequestId>{request_id}</RequestId></Error>"
    if service == "ec2":
        return f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>{esc(e.code)}</Code>" \
               f"<Message>{esc(e.message)}</Message></Error></Errors><RequestID>{request_id}</RequestID></Response>"
    return f"<?xml version=\"1.0\"?>\n<ErrorResponse xmlns=\"{R53_NS}\"><Error><Type>Sender</Type>" \
           f"<Code>{esc(e.code)}</Code><Message>{esc(e.message)}</Message></Error>" \
           f"<RequestId>{request_id}</RequestId></ErrorResponse>"


def injected_fault(service):
    """Throttling, 500s and slow answers, in the order the test configured them."""
    with STATE.lock:
        f = STATE.faults
        STATE.counters["seq"] += 1
        seq = STATE.counters["seq"]
        slow = 0
        if f.get("slow_count", 0) > 0:
            f["slow_count"] -= 1
            slow = f.get("slow_seconds", 0)
        pat = f.get("throttle_pattern")  # [m, k]: the first m of every k requests are throttled
        throttle = False
        if f.get("throttle", 0) > 0:
            f["throttle"] -= 1
            throttle = True
        elif pat and (seq % pat[1]) < pat[0]:
            throttle = True
        if throttle:
            STATE.counters["throttled"] += 1
        garbage = False
        if not throttle and f.get("garbage", 0) > 0:
            f["garbage"] -= 1
            garbage = True
        e500 = False
        if not throttle and not garbage and f.get("error500", 0) > 0:
            f["error500"] -= 1
            STATE.counters["errors500"] += 1
            e500 = True
    if slow:
        time.sleep(slow)
    if throttle:
        if service == "ec2":
            raise ApiError(503, "RequestLimitExceeded", "Request limit exceeded.")
        if service == "s3":
            raise ApiError(503, "SlowDown", "Please reduce your request rate.")
        raise ApiError(400, "Throttling", "Rate exceeded")
    if e500:
        raise ApiError(500, "InternalError", "An internal error has occurred")
    return garbage


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "aws-double"

    def log_message(self, fmt, *args):
        pass  # the request log is kept in STATE, without headers

    def send(self, status, ctype, body, request_id=None, headers=None):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if request_id:
            self.send_header("x-amzn-RequestId", request_id)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":  # a HEAD answer has the head of a GET's, never its body
            self.wfile.write(data)

    def read_body(self, cap):
        n = int(self.headers.get("Content-Length", "0") or "0")
        if n > cap:
            raise ApiError(413, "RequestEntityTooLarge", "request too large")
        return self.rfile.read(n) if n else b""

    def handle_any(self):
        parts = urllib.parse.urlsplit(self.path)
        path = parts.path
        try:
            body = self.read_body(BODY_MAX if path == "/" or path.startswith("/_") or path.startswith("/2013-04-01/")
                                  or path.startswith("/latest/") else S3_BODY_MAX)
        except ApiError as e:
            return self.send(e.status, "text/plain", e.message)
        m = IMDS_AS_RE.match(path)
        if path.startswith("/latest/") or m:
            status, ctype, text = imds(self, self.command, m.group(2) if m else path, m.group(1) if m else None)
            STATE.record({"service": "imds", "path": path, "status": status})
            return self.send(status, ctype, text)
        if path.startswith("/_double/"):
            return self.control(path, body)
        # EC2 is form POSTs on "/", Route 53 lives under its version, S3 (path-style) is "/bucket[/key]".
        service = "route53" if path.startswith("/2013-04-01/") else "ec2" if path == "/" else "s3"
        request_id = rid()
        action = "?"
        with STATE.lock:
            STATE.counters["requests"] += 1
            region = "us-east-1" if service == "route53" else STATE.region
        bname = path[1:].partition("/")[0] if service == "s3" else None
        # HeadBucket names the bucket's region whatever it answers (200, 301, 400, 403), as S3 does.
        head_bucket = service == "s3" and self.command == "HEAD" and s3_is_bucket_call(path)
        region_hdr = {"x-amz-bucket-region": s3_bucket_region(bname)} \
            if head_bucket and s3_bucket_region(bname) else {}
        try:
            if service == "ec2" and (self.command != "POST" or path != "/"):
                raise ApiError(400, "InvalidAction", "EC2 takes form POSTs on /")
            if service == "s3":
                region = s3_check_region(self, bname)
            verify_sigv4(self, body, service, region)
            if service == "s3":
                s3_check_payload(self, body)
            if injected_fault(service):
                STATE.record({"service": service, "action": "?", "status": 200, "code": "garbage"})
                return self.send(200, "text/xml", "<DescribeVolumesResponse><volumeSet><item>", request_id)
            if service == "s3":
                action, status, ctype, data = s3_dispatch(self, self.command, path, parts.query, body)
                STATE.record({"service": service, "action": action, "status": status,
                              "key": s3_key(path, parts.query)})
                return self.send(status, ctype, data, request_id, region_hdr)
            if service == "ec2":
                action, text = ec2_dispatch(body)
            else:
                action, text = r53_dispatch(self.command, path, parts.query, body)
            STATE.record({"service": service, "action": action, "status": 200})
            return self.send(200, "text/xml;charset=UTF-8", text, request_id)
        except ApiError as e:
            if action == "?" and service == "ec2":
                try:
                    action = dict(urllib.parse.parse_qsl(body.decode())).get("Action", "?")
                except Exception:
                    pass
            entry = {"service": service, "action": action, "status": e.status, "code": e.code}
            if service == "s3":  # an error is still a request of its kind (GetObject of an absent key...)
                entry.update({"action": s3_action(self.command, path, action),
                              "key": s3_key(path, parts.query)})
            STATE.record(entry)
            return self.send(e.status, "text/xml;charset=UTF-8", error_xml(service, e, request_id), request_id,
                             {**region_hdr, **e.headers})

    def control(self, path, body):
        if path == "/_double/config" and self.command == "POST":
            STATE.configure(json.loads(body or b"{}"))
            return self.send(200, "application/json", "{}")
        if path == "/_double/state":
            with STATE.lock:
                vols = {vid: {"attachment": v["attachment"], "tags": v["tags"], "az": v["az"]}
                        for vid, v in STATE.volumes.items() if v["attachment"] or len(STATE.volumes) < 1000}
                zones = {zid: {"name": z["name"], "records": [
                    {"name": k[0], "type": k[1], "ttl": r["ttl"], "values": r["values"]}
                    for k, r in sorted(z["records"].items(), key=lambda kv: rr_sort_key(kv[0]))]}
                    for zid, z in STATE.zones.items()}
                # Every secret the double knows, so tests can prove none of them reached a log.
                issued = [v for k in STATE.keys.values() for v in (k.get("secret"), k.get("token")) if v]
                # Object metadata only (the bytes may be keys): size, digest and the encryption asked for.
                s3 = {b: {k: {"size": len(o["data"]), "sha256": hashlib.sha256(o["data"]).hexdigest(),
                              "sse": o["sse"]} for k, o in objs.items()} for b, objs in STATE.buckets.items()}
                now = time.monotonic()
                changes = {cid: {"status": "INSYNC" if ch["polls"] <= 0 and now >= ch["insync_at"] else "PENDING",
                                 "submitted": ch["submitted"]} for cid, ch in STATE.changes.items()}
                out = {"counters": STATE.counters, "volumes": vols, "zones": zones, "secrets": issued, "s3": s3,
                       "loops": STATE.loops, "n_volumes": len(STATE.volumes), "changes": changes}
            return self.send(200, "application/json", json.dumps(out))
        if path == "/_double/log":
            with STATE.lock:
                return self.send(200, "application/json", json.dumps(STATE.log))
        if path == "/_double/detach" and self.command == "POST":
            # what a stopped instance does to its volumes: {"instances": [...]} (absent: all)
            which = json.loads(body or b"{}").get("instances")
            with STATE.lock:
                for vid, v in STATE.volumes.items():
                    a = v["attachment"]
                    if a and (which is None or a["instance"] in which):
                        detach_backing(vid)
                        v["attachment"] = None
            return self.send(200, "application/json", "{}")
        if path == "/_double/cleanup" and self.command == "POST":
            cleanup()
            return self.send(200, "application/json", "{}")
        return self.send(404, "text/plain", "")

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = handle_any


def cleanup():
    with STATE.lock:
        loops, STATE.loops = STATE.loops, []
    for _, dev, link in loops:
        if os.path.lexists(link):
            os.unlink(link)
        subprocess.run(["losetup", "-d", dev], capture_output=True, timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--config")
    # Where to listen (default loopback); the e2e harness runs the double in a network namespace of its test
    # network and listens on that host's address.
    ap.add_argument("--listen", default="127.0.0.1")
    # A second listener with TLS for the APIs (EC2, Route 53): protokube accepts plain http only on loopback,
    # so a double on a test network's address serves https with this certificate (AWS_CA_BUNDLE for the
    # client); IMDS stays on the plain port, as on EC2.
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--tls-port-file")
    # Seconds from ChangeResourceRecordSets until GetChange says INSYNC (the insync_delay_seconds fault;
    # real Route 53 typically takes tens of seconds). Default 0: INSYNC after insync_after_polls polls.
    ap.add_argument("--insync-delay", type=float, default=None, metavar="SECONDS")
    args = ap.parse_args()
    if args.config:
        with open(args.config, encoding="utf-8") as f:
            STATE.configure(json.load(f))
    if args.insync_delay is not None:
        STATE.configure({"faults": {"insync_delay_seconds": args.insync_delay}})
    srv = ThreadingHTTPServer((args.listen, 0), Handler)
    srv.daemon_threads = True
    servers = [srv]
    if args.tls_cert:
        import ssl
        tls = ThreadingHTTPServer((args.listen, 0), Handler)
        tls.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
        servers.append(tls)
        threading.Thread(target=tls.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()

    def stop(*_):
        for s_ in servers:
            threading.Thread(target=s_.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.tls_cert:
        tmp = args.tls_port_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(str(servers[1].server_address[1]))
        os.rename(tmp, args.tls_port_file)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, args.port_file)
    try:
        srv.serve_forever(poll_interval=0.2)
    finally:
        cleanup()


if __name__ == "__main__":
    main()
