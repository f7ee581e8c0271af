#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The serving side of a cloud's DNS, for the end-to-end scenarios on the API doubles (tests/e2e/scenario_aws.py
with Route 53, tests/e2e/scenario_gce.py with Cloud DNS).

On AWS, what protokube writes with ChangeResourceRecordSets is answered by Route 53's name servers (through
the VPC resolver) moments later; on GCE, what it writes with changes.create is answered by Cloud DNS's name
servers; and etcd finds its peers through the system resolver. The doubles only keep the records; this loop
stands in for the serving side: every --interval it reads the A/AAAA record sets of one zone from the double
(GET /_double/state, unsigned control endpoint; --api names the double's shape: a Route 53 hosted zone's
"records" with "values", a Cloud DNS managed zone's "rrsets" with "rrdatas") and copies what changed into the
test network's BIND server with nsupdate and the TSIG key (RFC 2136 UPDATE, RFC 8945 TSIG). It touches only
names it has itself copied (a record set deleted in the double is deleted in BIND), so the BIND zone's own
records stay. It runs inside a network namespace of the test network, exits after --max-seconds or on
SIGTERM, and logs each applied change as a JSON line (time, name, type, values)."""

import argparse
import json
import signal
import subprocess
import sys
import time
import urllib.request

# --api -> (the zone's list of record sets, a set's list of values) in the double's /_double/state
SHAPES = {"route53": ("records", "values"), "clouddns": ("rrsets", "rrdatas")}


def zone_records(url, zone_id, api):
    sets, values = SHAPES[api]
    with urllib.request.urlopen(url + "/_double/state", timeout=2) as r:
        st = json.load(r)
    z = st["zones"].get(zone_id)
    if z is None:
        return None
    return {(rec["name"], rec["type"]): (rec["ttl"], tuple(sorted(rec[values]))) for rec in z[sets]
            if rec["type"] in ("A", "AAAA")}


def update_script(server, zone, changed, removed):
    lines = [f"server {server[0]} {server[1]}", f"zone {zone}"]
    for (name, typ), (ttl, values) in sorted(changed.items()):
        lines.append(f"update delete {name} {typ}")
        lines += [f"update add {name} {ttl} {typ} {v}" for v in values]
    for name, typ in sorted(removed):
        lines.append(f"update delete {name} {typ}")
    lines.append("send")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True, help="the double's plain http listener")
    ap.add_argument("--api", choices=sorted(SHAPES), default="route53")
    ap.add_argument("--zone-id", required=True, help="the hosted zone's id, or the managed zone's name")
    ap.add_argument("--zone", required=True, help="the zone's DNS name, also BIND's zone")
    ap.add_argument("--server", required=True, help="BIND, ADDR:PORT")
    ap.add_argument("--key-file", required=True)
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--max-seconds", type=float, default=600)
    ap.add_argument("--log", required=True)
    args = ap.parse_args()
    host, _, port = args.server.rpartition(":")
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    applied = {}
    deadline = time.monotonic() + args.max_seconds
    with open(args.log, "a", buffering=1) as log:
        while not stopping and time.monotonic() < deadline:
            time.sleep(args.interval)
            try:
                want = zone_records(args.url, args.zone_id, args.api)
            except (OSError, ValueError) as e:
                log.write(json.dumps({"time": time.time(), "error": f"reading the double: {e}"}) + "\n")
                continue
            if want is None:
                continue
            changed = {k: v for k, v in want.items() if applied.get(k) != v}
            removed = [k for k in applied if k not in want]
            if not changed and not removed:
                continue
            p = subprocess.run(["nsupdate", "-k", args.key_file, "-t", "2"], input=update_script(
                (host, port), args.zone, changed, removed), capture_output=True, text=True, timeout=10)
            if p.returncode != 0:
                log.write(json.dumps({"time": time.time(), "error": "nsupdate: " + p.stderr.strip()}) + "\n")
                continue
            for k, v in changed.items():
                applied[k] = v
                log.write(json.dumps({"time": time.time(), "name": k[0], "type": k[1], "ttl": v[0],
                                      "values": list(v[1])}) + "\n")
            for k in removed:
                del applied[k]
                log.write(json.dumps({"time": time.time(), "name": k[0], "type": k[1], "values": []}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
