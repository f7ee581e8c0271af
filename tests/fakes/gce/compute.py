# SPDX-License-Identifier: Apache-2.0
"""Compute Engine v1, the part protokube uses: disks and instances (get, list per zone or aggregated, with
Compute's list filter and paging), attachDisk and detachDisk as zonal operations, operations get and wait. An
attach is decided when its operation runs, under the state's one lock: a compare-and-set, so of two instances
racing for a disk exactly one gets it and the other's operation ends in RESOURCE_IN_USE_BY_ANOTHER_RESOURCE, as on
Google. An image-backed disk attached to a running instance becomes a loop device with the link udev's
google_persistent_disk rule makes (<byid_dir>/google-<deviceName>)."""
import os
import re
import secrets
import subprocess
import time

from common import (COMPUTE_URL, STATE, GoogleError, fingerprint, json_body, no_body, pacific_time, page,
                    page_size, params, route, salt_of, uint64_id)

ZONE_RE = re.compile(r"[a-z]+-[a-z]+[0-9]+-[a-z]")
DEVICE_RE = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
FIELD_RE = re.compile(r'\s*(name|status|zone|labels\.[a-z][a-z0-9_-]*)\s*(!=|=)\s*("(?:[^"\\]|\\.)*"|[^\s()"]+)\s*')
AND_RE = re.compile(r"\s*(?:AND\s+)?")
LIST_PARAMS = {"filter", "maxResults", "pageToken", "orderBy", "returnPartialSuccess"}
ATTACH_FIELDS = {"source": str, "deviceName": str, "mode": str, "type": str, "autoDelete": bool, "boot": bool,
                 "kind": str}
SOURCE_RE = re.compile(r"(?:https://(?:www|compute)\.googleapis\.com/compute/v1/)?projects/([^/]+)/zones/([^/]+)"
                       r"/disks/([^/]+)")


def project_url():
    return COMPUTE_URL + "projects/" + STATE.project


def zone_url(z):
    return f"{project_url()}/zones/{z}"


def disk_path(z, d):
    return f"projects/{STATE.project}/zones/{z}/disks/{d}"


def instance_path(z, i):
    return f"projects/{STATE.project}/zones/{z}/instances/{i}"


# ---------------------------------------------------------------- configuration

def add_instance(name, cfg):
    """A new instance (with its boot disk, named as the instance), or new values for an existing one."""
    zone = cfg.get("zone", STATE.instances.get(name, {}).get("zone", "europe-west1-b"))
    if not ZONE_RE.fullmatch(zone):
        raise ValueError(f"instance {name}: bad zone {zone}")
    with STATE.lock:
        inst = STATE.instances.get(name)
        if inst is None:
            inst = STATE.instances[name] = {
                "zone": "europe-west1-b", "internal_ip": "10.0.0.5", "external_ip": None, "labels": {},
                "attributes": {}, "scopes": ["https://www.googleapis.com/auth/cloud-platform"],
                "service_account": f"{STATE.project_number}-compute@developer.gserviceaccount.com",
                "byid_dir": None, "status": "RUNNING", "machine_type": "e2-medium", "id": uint64_id("i", name),
                "created": time.time(), "disks": []}
        for k in ("zone", "internal_ip", "external_ip", "labels", "attributes", "scopes", "service_account",
                  "byid_dir", "status", "machine_type"):
            if k in cfg:
                inst[k] = cfg[k]
        if name not in STATE.disks:
            add_disk(name, {"zone": inst["zone"], "size_gb": 10, "type": "pd-balanced", "boot": True})
        if not any(e["boot"] for e in inst["disks"]):
            inst["disks"].insert(0, {"disk": name, "deviceName": "persistent-disk-0", "mode": "READ_WRITE",
                                     "boot": True, "autoDelete": True, "index": 0})
            STATE.disks[name]["last_attach"] = inst["created"]


def add_disk(name, cfg):
    with STATE.lock:
        disk = STATE.disks.setdefault(name, {"zone": "europe-west1-b", "size_gb": 10, "labels": {}, "image": None,
                                             "source_snapshot": None, "type": "pd-standard", "boot": False,
                                             "id": uint64_id("d", name), "created": time.time(),
                                             "last_attach": None, "last_detach": None})
        for k in ("zone", "size_gb", "labels", "image", "source_snapshot", "type", "boot"):
            if k in cfg:
                disk[k] = cfg[k]
        for iname in cfg.get("users", []):
            inst = STATE.instances.get(iname)
            if inst is None:
                raise ValueError(f"disk {name}: user {iname} is no instance")
            if name not in [e["disk"] for e in inst["disks"]]:
                attach_backing(name, iname, name)
                inst["disks"].append({"disk": name, "deviceName": name, "mode": "READ_WRITE", "boot": False,
                                      "autoDelete": False, "index": next_index(inst)})
                disk["last_attach"] = time.time()


def next_index(inst):
    return max((e["index"] for e in inst["disks"]), default=-1) + 1


def users_of(dname):
    """[(instance name, attachment)] of a disk: the instances' disks lists are the one record of attachments."""
    return [(iname, e) for iname, inst in STATE.instances.items() for e in inst["disks"] if e["disk"] == dname]


# ---------------------------------------------------------------- loop devices

def attach_backing(dname, iname, device_name):
    """An image-backed disk on a running instance: a loop device and its by-id link. Caller holds the lock."""
    disk, inst = STATE.disks[dname], STATE.instances[iname]
    if not disk.get("image") or inst["status"] != "RUNNING":
        return
    if not inst.get("byid_dir"):
        raise RuntimeError(f"instance {iname} has no byid_dir for the image-backed disk {dname}")
    p = subprocess.run(["losetup", "--find", "--show", disk["image"]], capture_output=True, text=True, timeout=30)
    if p.returncode != 0:
        raise RuntimeError("losetup failed: " + p.stderr.strip())
    dev = p.stdout.strip()
    os.makedirs(inst["byid_dir"], exist_ok=True)
    link = os.path.join(inst["byid_dir"], "google-" + device_name)
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(dev, link)
    STATE.loops.append((dname, iname, dev, link))


def detach_backing(dname, iname):
    """Undoes attach_backing: the link goes, the loop device is detached (lazily by the kernel while it is
    still mounted). Caller holds the lock."""
    keep = []
    for entry in STATE.loops:
        if entry[:2] != (dname, iname):
            keep.append(entry)
            continue
        if os.path.lexists(entry[3]):
            os.unlink(entry[3])
        subprocess.run(["losetup", "-d", entry[2]], capture_output=True, timeout=30)
    STATE.loops = keep


def detach(iname, entry):
    """Removes one attachment and what backs it. Caller holds the lock."""
    STATE.instances[iname]["disks"].remove(entry)
    detach_backing(entry["disk"], iname)
    STATE.disks[entry["disk"]]["last_detach"] = time.time()


def terminate(iname):
    """What the double's terminate control does: the instance stops and every disk but its boot disk is let go
    (as when a dead instance is deleted: another instance may attach them)."""
    with STATE.lock:
        inst = STATE.instances.get(iname)
        if inst is None:
            raise GoogleError(404, f"no instance {iname}")
        inst["status"] = "TERMINATED"
        for e in [e for e in inst["disks"] if not e["boot"]]:
            detach(iname, e)


def cleanup():
    with STATE.lock:
        loops, STATE.loops = STATE.loops, []
    for _, _, dev, link in loops:
        if os.path.lexists(link):
            os.unlink(link)
        subprocess.run(["losetup", "-d", dev], capture_output=True, timeout=30)


# ---------------------------------------------------------------- resources

def disk_resource(name):
    d = STATE.disks[name]
    z = d["zone"]
    r = {"kind": "compute#disk", "id": d["id"], "creationTimestamp": pacific_time(d["created"]), "name": name,
         "sizeGb": str(d["size_gb"]), "zone": zone_url(z), "status": "READY",
         "selfLink": f"{zone_url(z)}/disks/{name}", "type": f"{zone_url(z)}/diskTypes/{d['type']}",
         "labelFingerprint": fingerprint(d["labels"]), "physicalBlockSizeBytes": "4096"}
    if d["labels"]:
        r["labels"] = dict(d["labels"])
    users = [f"{zone_url(STATE.instances[i]['zone'])}/instances/{i}" for i, _ in users_of(name)]
    if users:
        r["users"] = users
    if d["last_attach"]:
        r["lastAttachTimestamp"] = pacific_time(d["last_attach"])
    if d["last_detach"]:
        r["lastDetachTimestamp"] = pacific_time(d["last_detach"])
    if d["source_snapshot"]:
        r["sourceSnapshot"] = f"{project_url()}/global/snapshots/{d['source_snapshot']}"
    if d["boot"]:
        r["sourceImage"] = "https://www.googleapis.com/compute/v1/projects/debian-cloud/global/images/debian-12"
    return r


def instance_resource(name):
    i = STATE.instances[name]
    z = i["zone"]
    nic = {"kind": "compute#networkInterface", "name": "nic0", "network": f"{project_url()}/global/networks/default",
           "subnetwork": f"{project_url()}/regions/{z[:-2]}/subnetworks/default", "networkIP": i["internal_ip"],
           "fingerprint": fingerprint([i["internal_ip"], i["external_ip"]]), "stackType": "IPV4_ONLY"}
    if i["external_ip"]:
        nic["accessConfigs"] = [{"kind": "compute#accessConfig", "type": "ONE_TO_ONE_NAT", "name": "External NAT",
                                 "natIP": i["external_ip"], "networkTier": "PREMIUM"}]
    disks = [{"kind": "compute#attachedDisk", "type": "PERSISTENT", "mode": e["mode"],
              "source": f"{zone_url(z)}/disks/{e['disk']}", "deviceName": e["deviceName"], "index": e["index"],
              "boot": e["boot"], "autoDelete": e["autoDelete"], "interface": "SCSI",
              "diskSizeGb": str(STATE.disks[e["disk"]]["size_gb"])} for e in i["disks"]]
    items = [{"key": k, "value": v} for k, v in i["attributes"].items()]
    r = {"kind": "compute#instance", "id": i["id"], "creationTimestamp": pacific_time(i["created"]), "name": name,
         "machineType": f"{zone_url(z)}/machineTypes/{i['machine_type']}", "status": i["status"], "zone": zone_url(z),
         "canIpForward": False, "networkInterfaces": [nic], "disks": disks,
         "metadata": {"kind": "compute#metadata", "fingerprint": fingerprint(items), **({"items": items} if items
                                                                                          else {})},
         "serviceAccounts": [{"email": i["service_account"], "scopes": list(i["scopes"])}],
         "selfLink": f"{zone_url(z)}/instances/{name}", "labelFingerprint": fingerprint(i["labels"]),
         "startRestricted": False, "deletionProtection": False, "fingerprint": fingerprint([name, i["status"]])}
    if i["labels"]:
        r["labels"] = dict(i["labels"])
    return r


# ---------------------------------------------------------------- list filter

def parse_filter(text):
    """Compute's list filter, the subset served: `FIELD OP VALUE`, or `(E1) (E2) ...` with optional AND
    between them; OP `=` or `!=`; VALUE a double-quoted string (backslash escapes) or a bare word. Returns
    [(field, op, value)]; anything else is Compute's 400."""
    bad = GoogleError(400, f"Invalid value for field 'filter': '{text}'. Invalid list filter expression.")
    s = text.strip()
    if not s:
        return []
    if not s.startswith("("):
        m = FIELD_RE.fullmatch(s)
        if not m:
            raise bad
        return [term(m)]
    out, pos = [], 0
    for _ in range(len(s)):  # each round consumes a "(x=y)" at least
        if out:
            if pos == len(s):
                return out
            pos = AND_RE.match(s, pos).end()
        m = FIELD_RE.match(s, pos + 1)
        if not s.startswith("(", pos) or not m or not s.startswith(")", m.end()):
            raise bad
        out.append(term(m))
        pos = m.end() + 1
    raise bad


def term(m):
    field, op, value = m.groups()
    if value.startswith('"'):
        value = re.sub(r"\\(.)", r"\1", value[1:-1])
    return field, op, value


def matches(res, terms):
    for field, op, value in terms:
        have = res.get("labels", {}).get(field[7:]) if field.startswith("labels.") else res.get(field)
        if (have == value) != (op == "="):
            return False
    return True


def list_of(req, zone, kind, names, resource):
    """One page of a zone's list or, zone None, of the aggregated list: every zone's items, grouped as
    "zones/Z"; a zone the double knows with no items on the page carries Google's NO_RESULTS_ON_PAGE warning."""
    q = params(req.query, LIST_PARAMS | ({"includeAllScopes", "serviceProjectNumber"} if zone is None else set()))
    terms = parse_filter(q.get("filter", ""))
    order = q.get("orderBy", "")
    if order not in ("", "name", "creationTimestamp desc"):
        raise GoogleError(400, f"Invalid value for field 'orderBy': '{order}'. Allowed: name, creationTimestamp desc")
    size = page_size(q.get("maxResults"), 500, 500)
    if STATE.settings["page_size"]:
        size = min(size, STATE.settings["page_size"])
    items = sorted((r for r in map(resource, names) if matches(r, terms)), key=lambda r: (r["zone"], r["name"]))
    if order == "creationTimestamp desc":
        items.sort(key=lambda r: r["creationTimestamp"], reverse=True)
    chunk, nxt = page(items, size, q.get("pageToken"), salt_of(kind, zone, terms, order))
    if zone is None:
        out = {"kind": f"compute#{kind}AggregatedList", "id": f"projects/{STATE.project}/aggregated/{kind}s",
               "selfLink": f"{project_url()}/aggregated/{kind}s", "items": {}}
        for z in sorted({d["zone"] for d in STATE.disks.values()} | {i["zone"] for i in STATE.instances.values()}):
            got = [r for r in chunk if r["zone"] == zone_url(z)]
            out["items"][f"zones/{z}"] = {f"{kind}s": got} if got else {"warning": {
                "code": "NO_RESULTS_ON_PAGE", "message": f"There are no results for scope 'zones/{z}' on this page.",
                "data": [{"key": "scope", "value": f"zones/{z}"}]}}
    else:
        out = {"kind": f"compute#{kind}List", "id": f"projects/{STATE.project}/zones/{zone}/{kind}s",
               "selfLink": f"{zone_url(zone)}/{kind}s"}
        if chunk:
            out["items"] = chunk
    if nxt:
        out["nextPageToken"] = nxt
    return out


# ---------------------------------------------------------------- handlers

def list_disks(req, zone=None):
    return list_of(req, zone, "disk", [n for n, d in STATE.disks.items() if zone in (None, d["zone"])],
                   disk_resource)


def list_instances(req, zone=None):
    return list_of(req, zone, "instance", [n for n, i in STATE.instances.items() if zone in (None, i["zone"])],
                   instance_resource)


def get_disk(req, zone, name):
    params(req.query, set())
    if STATE.disks.get(name, {}).get("zone") != zone:
        raise GoogleError(404, f"The resource '{disk_path(zone, name)}' was not found")
    return disk_resource(name)


def the_instance(zone, name):
    if STATE.instances.get(name, {}).get("zone") != zone:
        raise GoogleError(404, f"The resource '{instance_path(zone, name)}' was not found")
    return STATE.instances[name]


def get_instance(req, zone, name):
    params(req.query, set())
    the_instance(zone, name)
    return instance_resource(name)


def attach_disk(req, zone, iname):
    params(req.query, {"requestId", "forceAttach"})
    inst = the_instance(zone, iname)
    body = json_body(req, ATTACH_FIELDS)
    for k, want in ATTACH_FIELDS.items():
        if k in body and type(body[k]) is not want:
            raise GoogleError(400, f"Invalid value at 'attached_disk_resource.{k}' "
                                   f"({'TYPE_BOOL' if want is bool else 'TYPE_STRING'}), {body[k]!r}")
    if "source" not in body:
        raise GoogleError(400, "Required field 'resource.source' not specified")
    m = SOURCE_RE.fullmatch(body["source"])
    if not m:
        raise GoogleError(400, f"Invalid value for field 'resource.source': '{body['source']}'. The URL is "
                               "malformed.")
    project, dzone, dname = m.groups()
    if project not in (STATE.project, STATE.project_number) or dzone != inst["zone"] \
            or STATE.disks.get(dname, {}).get("zone") != dzone:
        raise GoogleError(404, f"The resource '{disk_path(dzone, dname)}' was not found")
    dev = body.get("deviceName", dname)
    if len(dev) > 63 or not DEVICE_RE.fullmatch(dev):
        raise GoogleError(400, f"Invalid value for field 'resource.deviceName': '{dev}'. Must be a match of regex "
                               f"'{DEVICE_RE.pattern}'")
    checks = [("mode", ("READ_WRITE", "READ_ONLY")), ("type", ("PERSISTENT",)), ("kind", ("compute#attachedDisk",))]
    for k, ok in checks:
        if k in body and body[k] not in ok:
            raise GoogleError(400, f"Invalid value for field 'resource.{k}': '{body[k]}'.")
    if body.get("boot"):
        raise GoogleError(400, "Invalid value for field 'resource.boot': 'true'. Boot disk must be the first disk "
                               "attached to the instance.")
    entry = {"disk": dname, "deviceName": dev, "mode": body.get("mode", "READ_WRITE"), "boot": False,
             "autoDelete": body.get("autoDelete", False)}

    def run():
        if STATE.instances.get(iname) is not inst:
            return "RESOURCE_NOT_FOUND", f"The resource '{instance_path(zone, iname)}' was not found"
        fault = STATE.faults["op_error"].pop(dname, None)
        if fault:
            STATE.counters["op_errors"] += 1
            return fault["code"], fault["message"]
        for other, e in users_of(dname):
            if other == iname or "READ_WRITE" in (e["mode"], entry["mode"]):
                return ("RESOURCE_IN_USE_BY_ANOTHER_RESOURCE", f"The disk resource '{disk_path(zone, dname)}' is "
                        f"already being used by '{instance_path(STATE.instances[other]['zone'], other)}'")
        if any(e["deviceName"] == dev for e in inst["disks"]):
            return "INVALID_USAGE", f"Invalid resource usage: 'Device name '{dev}' is already in use on instance " \
                                    f"'{instance_path(zone, iname)}'.'"
        try:
            attach_backing(dname, iname, dev)
        except (OSError, RuntimeError, subprocess.SubprocessError) as e:
            return "INTERNAL_ERROR", f"the double could not back the disk: {e}"
        inst["disks"].append({**entry, "index": next_index(inst)})
        STATE.disks[dname]["last_attach"] = time.time()
        return None
    return new_op("attachDisk", zone, iname, req.token["email"], run)


def detach_disk(req, zone, iname):
    q = params(req.query, {"deviceName", "requestId"})
    no_body(req)
    inst = the_instance(zone, iname)
    dev = q.get("deviceName")
    if not dev:
        raise GoogleError(400, "Required field 'deviceName' not specified")
    entry = next((e for e in inst["disks"] if e["deviceName"] == dev), None)
    if entry is None:
        raise GoogleError(400, f"No attached disk found with device name '{dev}'")
    if entry["boot"] and inst["status"] == "RUNNING":
        raise GoogleError(400, "Invalid resource usage: 'Cannot detach the boot disk of a running instance.'")

    def run():
        if entry not in STATE.instances.get(iname, {}).get("disks", []):
            return "INVALID_FIELD_VALUE", f"No attached disk found with device name '{dev}'"
        detach(iname, entry)
        return None
    return new_op("detachDisk", zone, iname, req.token["email"], run)


# ---------------------------------------------------------------- operations

def new_op(kind, zone, iname, user, run):
    now = time.time()
    name = f"operation-{int(now * 1000)}-{secrets.token_hex(7)[:13]}-{secrets.token_hex(4)}"
    delay = STATE.settings["op_delay_seconds"]
    op = {"kind": "compute#operation", "id": uint64_id("op", name), "name": name, "zone": zone_url(zone),
          "operationType": kind, "targetLink": f"{zone_url(zone)}/instances/{iname}",
          "targetId": STATE.instances[iname]["id"], "status": "PENDING", "user": user, "progress": 0,
          "insertTime": pacific_time(now), "startTime": pacific_time(now),
          "selfLink": f"{zone_url(zone)}/operations/{name}"}
    STATE.ops[name] = {"op": op, "polls": STATE.settings["op_polls"], "run": run,
                       "done_at": now + delay if delay else None}
    return dict(op)


def finish(rec):
    err = rec["run"]()
    op = rec["op"]
    op.update({"status": "DONE", "progress": 100, "endTime": pacific_time(time.time())})
    if err:
        op["error"] = {"errors": [{"code": err[0], "message": err[1]}]}
        op.update({"httpErrorStatusCode": 400, "httpErrorMessage": "BAD REQUEST"})


def settle():
    """Operations timed by op_delay_seconds run once their time has come, whoever looks (in insert order)."""
    now = time.time()
    for rec in STATE.ops.values():
        if rec["done_at"] is not None and rec["op"]["status"] != "DONE" and now >= rec["done_at"]:
            finish(rec)


def poll(rec):
    """One GET or wait of an operation: counted ones run on their op_polls-th poll, timed ones RUN until due."""
    if rec["op"]["status"] == "DONE":
        return
    if rec["done_at"] is None:
        rec["polls"] -= 1
        if rec["polls"] <= 0:
            return finish(rec)
    rec["op"]["status"] = "RUNNING"


def the_op(zone, name):
    rec = STATE.ops.get(name)
    if rec is None or rec["op"]["zone"] != zone_url(zone):
        raise GoogleError(404, f"The resource 'projects/{STATE.project}/zones/{zone}/operations/{name}' was not "
                               "found")
    return rec


def get_op(req, zone, name):
    params(req.query, set())
    rec = the_op(zone, name)
    poll(rec)
    return dict(rec["op"])


def wait_op(req, zone, name):
    """Returns when the operation is DONE, or when the wait's deadline passed. A counted operation advances
    by polls only: its wait answers at once after its poll, as Google's wait may (it "may return early")."""
    params(req.query, set())
    no_body(req)
    rec = the_op(zone, name)
    poll(rec)
    if rec["op"]["status"] != "DONE" and rec["done_at"] is not None:
        until = min(rec["done_at"], time.time() + min(120, STATE.settings["wait_max_seconds"]))
        STATE.lock.release()
        try:
            time.sleep(max(0.0, until - time.time()))
        finally:
            STATE.lock.acquire()
        settle()
    return dict(rec["op"])


ROUTES = [(m, re.compile(rx), perm, fn) for m, rx, perm, fn in [
    ("GET", r"aggregated/disks", "compute.disks.list", list_disks),
    ("GET", r"aggregated/instances", "compute.instances.list", list_instances),
    ("GET", r"zones/([^/]+)/disks", "compute.disks.list", list_disks),
    ("GET", r"zones/([^/]+)/disks/([^/]+)", "compute.disks.get", get_disk),
    ("GET", r"zones/([^/]+)/instances", "compute.instances.list", list_instances),
    ("GET", r"zones/([^/]+)/instances/([^/]+)", "compute.instances.get", get_instance),
    ("POST", r"zones/([^/]+)/instances/([^/]+)/attachDisk", "compute.instances.attachDisk", attach_disk),
    ("POST", r"zones/([^/]+)/instances/([^/]+)/detachDisk", "compute.instances.detachDisk", detach_disk),
    ("GET", r"zones/([^/]+)/operations/([^/]+)", "compute.zoneOperations.get", get_op),
    ("POST", r"zones/([^/]+)/operations/([^/]+)/wait", "compute.zoneOperations.get", wait_op)]]


def dispatch(req):
    """/compute/v1/projects/{project}/... -> the answer's JSON object, under the lock (which wait_op lets go
    of while it waits: the lock must not be held when this is called)."""
    m = re.fullmatch(r"/compute/v1/projects/([^/]+)/(.+)", req.path)
    if not m:
        raise GoogleError(404, f"The requested URL {req.path} was not found on this server.")
    project, rest = m.groups()
    fn, groups = route(ROUTES, req, rest)
    with STATE.lock:
        if project not in (STATE.project, STATE.project_number):
            raise GoogleError(404, f"The resource 'projects/{project}' was not found")
        if groups and not ZONE_RE.fullmatch(groups[0]):
            raise GoogleError(400, f"Invalid value for field 'zone': '{groups[0]}'. Unknown zone.")
        settle()
        return fn(req, *groups)
