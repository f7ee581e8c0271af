# SPDX-License-Identifier: Apache-2.0
"""Cloud DNS v1: managed zones (list by dnsName, get), resource record sets (list by name and type, paged) and
changes. A change is validated and applied as one step under the state's lock, as Cloud DNS applies it: every
deletion must name an existing set (404) equal to it in ttl and rrdatas (412), every addition must not exist once
the deletions are made (409); on any error nothing is applied. Its status turns from pending to done after
change_polls GETs or change_delay_seconds."""
import ipaddress
import re
import time

from common import (STATE, GoogleError, json_body, check_fields, page, page_size, params, route, salt_of,
                    uint64_id, utc_time)

TYPES = {"A", "AAAA", "CAA", "CNAME", "DNSKEY", "DS", "HTTPS", "IPSECKEY", "MX", "NAPTR", "NS", "PTR", "SOA", "SPF",
         "SRV", "SSHFP", "SVCB", "TLSA", "TXT"}
RRSET_FIELDS = {"kind", "name", "type", "ttl", "rrdatas", "signatureRrdatas"}
CHANGE_FIELDS = {"kind", "additions", "deletions", "id", "startTime", "status", "isServing"}
PUBLIC_NS = [f"ns-cloud-a{i}.googledomains.com." for i in range(1, 5)]
PRIVATE_NS = ["ns-gcp-private.googledomains.com."]


def add_zone(name, cfg):
    """A managed zone with its SOA and NS sets and change "0" (its creation), replacing one of that name."""
    dns = cfg["dns_name"].lower()
    private = cfg.get("visibility", "public") == "private"
    ns = PRIVATE_NS if private else PUBLIC_NS
    sets = {(dns, "SOA"): {"ttl": 21600, "rrdatas": [f"{ns[0]} cloud-dns-hostmaster.google.com. 1 21600 3600 "
                                                      "259200 300"]},
            (dns, "NS"): {"ttl": 21600, "rrdatas": list(ns)}}
    for r in cfg.get("rrsets", []):
        sets[(r["name"].lower(), r["type"])] = {"ttl": r.get("ttl", 300), "rrdatas": list(r["rrdatas"])}
    now = time.time()
    created = {"kind": "dns#change", "id": "0", "startTime": utc_time(now), "status": "done",
               "additions": [rrset(k, v) for k, v in sets.items()], "deletions": []}
    with STATE.lock:
        STATE.zones[name] = {"dns_name": dns, "visibility": "private" if private else "public", "created": now,
                             "id": uint64_id("zone", name)[:16], "name_servers": ns, "rrsets": sets,
                             "changes": [{"change": created, "polls": 0, "done_at": None}]}


def rrset(key, v):
    return {"kind": "dns#resourceRecordSet", "name": key[0], "type": key[1], "ttl": v["ttl"],
            "rrdatas": list(v["rrdatas"])}


def zone_resource(name):
    z = STATE.zones[name]
    r = {"kind": "dns#managedZone", "name": name, "dnsName": z["dns_name"], "description": "", "id": z["id"],
         "nameServers": list(z["name_servers"]), "creationTime": utc_time(z["created"]),
         "visibility": z["visibility"]}
    if z["visibility"] == "private":
        r["privateVisibilityConfig"] = {"kind": "dns#managedZonePrivateVisibilityConfig", "networks": []}
    return r


def the_zone(name):
    for zname, z in STATE.zones.items():
        if name in (zname, z["id"]):
            return zname, z
    raise GoogleError(404, f"The 'parameters.managedZone' resource named '{name}' does not exist.")


def list_zones(req):
    q = params(req.query, {"dnsName", "maxResults", "pageToken"})
    names = [n for n in sorted(STATE.zones) if q.get("dnsName") in (None, STATE.zones[n]["dns_name"])]
    chunk, nxt = page(names, page_size(q.get("maxResults"), 1000, None), q.get("pageToken"),
                      salt_of("zones", q.get("dnsName")))
    out = {"kind": "dns#managedZonesListResponse", "managedZones": [zone_resource(n) for n in chunk]}
    if nxt:
        out["nextPageToken"] = nxt
    return out


def get_zone(req, zone):
    params(req.query, set())
    return zone_resource(the_zone(zone)[0])


def list_rrsets(req, zone):
    q = params(req.query, {"name", "type", "maxResults", "pageToken"})
    _, z = the_zone(zone)
    name, rtype = q.get("name"), q.get("type")
    if rtype is not None and name is None:
        raise GoogleError(400, "Invalid value for 'parameters.name': ''. The 'parameters.type' parameter needs "
                               "'parameters.name'.")
    want = name.lower() if name is not None else None
    keys = sorted(k for k in z["rrsets"] if want in (None, k[0]) and rtype in (None, k[1]))
    size = page_size(q.get("maxResults"), 1000, None)
    if STATE.settings["rrset_page_size"]:
        size = min(size, STATE.settings["rrset_page_size"])
    chunk, nxt = page(keys, size, q.get("pageToken"), salt_of("rrsets", zone, name, rtype))
    out = {"kind": "dns#resourceRecordSetsListResponse", "rrsets": [rrset(k, z["rrsets"][k]) for k in chunk]}
    if nxt:
        out["nextPageToken"] = nxt
    return out


def valid_rrset(r, where, dns):
    """((name, type), ttl, rrdatas) of one rrset of a change, or Cloud DNS's 400 naming the bad field."""
    if not isinstance(r, dict):
        raise GoogleError(400, f"Invalid value for '{where}': not an object.")
    check_fields(r, RRSET_FIELDS, where)

    def bad(field, value):
        return GoogleError(400, f"Invalid value for '{where}.{field}': '{value}'")
    name, rtype, ttl, data = r.get("name"), r.get("type"), r.get("ttl"), r.get("rrdatas")
    if r.get("kind", "dns#resourceRecordSet") != "dns#resourceRecordSet":
        raise bad("kind", r.get("kind"))
    if not isinstance(name, str) or not name.endswith(".") or not (name.lower() == dns
                                                                   or name.lower().endswith("." + dns)):
        raise bad("name", name)
    if rtype not in TYPES:
        raise bad("type", rtype)
    if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0:
        raise bad("ttl", ttl)
    if not isinstance(data, list) or not data or not all(isinstance(d, str) and d for d in data) \
            or (rtype == "CNAME" and len(data) != 1):
        raise bad("rrdata", data)
    if r.get("signatureRrdatas"):
        raise bad("signatureRrdatas", r["signatureRrdatas"])
    for i, d in enumerate(data):
        try:
            if rtype == "A":
                ipaddress.IPv4Address(d)
            elif rtype == "AAAA":
                ipaddress.IPv6Address(d)
        except ValueError:
            raise bad(f"rrdata[{i}]", d)
    return (name.lower(), rtype), ttl, list(data)


def create_change(req, zone):
    params(req.query, {"clientOperationId"})
    _, z = the_zone(zone)
    body = json_body(req, CHANGE_FIELDS)
    if body.get("kind", "dns#change") != "dns#change":
        raise GoogleError(400, f"Invalid value for 'entity.change.kind': '{body['kind']}'")
    lists = {}
    for field in ("deletions", "additions"):
        items = body.get(field, [])
        if not isinstance(items, list):
            raise GoogleError(400, f"Invalid value for 'entity.change.{field}': not a list.")
        lists[field] = [valid_rrset(r, f"entity.change.{field}[{i}]", z["dns_name"]) for i, r in enumerate(items)]
    if not lists["deletions"] and not lists["additions"]:
        raise GoogleError(400, "The 'entity.change' resource named 'change' has neither additions nor deletions.",
                          "required")
    sets = dict(z["rrsets"])
    for i, (key, ttl, data) in enumerate(lists["deletions"]):
        cur = sets.get(key)
        if cur is None:
            raise GoogleError(404, f"The 'entity.change.deletions[{i}]' resource named '{key[0]} ({key[1]})' does "
                                   "not exist.")
        if cur["ttl"] != ttl or sorted(set(cur["rrdatas"])) != sorted(set(data)):
            raise GoogleError(412, f"Precondition not met for 'entity.change.deletions[{i}]'")
        del sets[key]
    for i, (key, ttl, data) in enumerate(lists["additions"]):
        if key in sets:
            raise GoogleError(409, f"The resource 'entity.change.additions[{i}]' named '{key[0]} ({key[1]})' already "
                                   "exists")
        other = [k[1] for k in sets if k[0] == key[0] and "CNAME" in (k[1], key[1])]
        if other:
            raise GoogleError(400, f"The resource record set 'entity.change.additions[{i}]' is invalid because the "
                                   f"DNS name '{key[0]}' has a resource record set of the type '{other[0]}'. A DNS "
                                   "name may have either one CNAME resource record set or resource record sets of "
                                   "other types, but not both.", "cnameResourceRecordSetConflict")
        sets[key] = {"ttl": ttl, "rrdatas": data}
    z["rrsets"] = sets
    now = time.time()
    change = {"kind": "dns#change", "id": str(len(z["changes"])), "startTime": utc_time(now), "status": "pending",
              "additions": [rrset(k, {"ttl": t, "rrdatas": d}) for k, t, d in lists["additions"]],
              "deletions": [rrset(k, {"ttl": t, "rrdatas": d}) for k, t, d in lists["deletions"]]}
    delay = STATE.settings["change_delay_seconds"]
    z["changes"].append({"change": change, "polls": STATE.settings["change_polls"],
                         "done_at": now + delay if delay else None})
    return dict(change)


def get_change(req, zone, cid):
    params(req.query, set())
    _, z = the_zone(zone)
    if not cid.isdigit() or int(cid) >= len(z["changes"]):
        raise GoogleError(404, f"The 'parameters.changeId' resource named '{cid}' does not exist.")
    rec = z["changes"][int(cid)]
    if rec["done_at"] is None:
        rec["polls"] -= 1
        done = rec["polls"] <= 0
    else:
        done = time.time() >= rec["done_at"]
    if done:
        rec["change"]["status"] = "done"
    return dict(rec["change"])


ROUTES = [(m, re.compile(rx), perm, fn) for m, rx, perm, fn in [
    ("GET", r"managedZones", "dns.managedZones.list", list_zones),
    ("GET", r"managedZones/([^/]+)", "dns.managedZones.get", get_zone),
    ("GET", r"managedZones/([^/]+)/rrsets", "dns.resourceRecordSets.list", list_rrsets),
    ("POST", r"managedZones/([^/]+)/changes", "dns.changes.create", create_change),
    ("GET", r"managedZones/([^/]+)/changes/([^/]+)", "dns.changes.get", get_change)]]


def dispatch(req):
    """/dns/v1/projects/{project}/... -> the answer's JSON object, under the lock."""
    m = re.fullmatch(r"/dns/v1/projects/([^/]+)/(.+)", req.path)
    if not m:
        raise GoogleError(404, f"The requested URL {req.path} was not found on this server.")
    fn, groups = route(ROUTES, req, m.group(2))
    with STATE.lock:
        if m.group(1) not in (STATE.project, STATE.project_number):
            raise GoogleError(404, f"The 'parameters.project' resource named '{m.group(1)}' does not exist.")
        return fn(req, *groups)


def state():
    return {name: {"dns_name": z["dns_name"], "visibility": z["visibility"],
                   "rrsets": [rrset(k, v) for k, v in sorted(z["rrsets"].items())],
                   "changes": {c["change"]["id"]: c["change"]["status"] for c in z["changes"]}}
            for name, z in STATE.zones.items()}
