#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A loopback double of the Google Cloud APIs protokube uses, answering as Google documents them (JSON bodies,
Google's error shape) and refusing what Google refuses:

- OAuth 2.0: service-account keys (POST /_double/service-account-key {"email", "rotate"?} gives the JSON key file,
  whose token_uri is this listener's /token) and the JWT-bearer grant at POST /token, verified as Google does
  (auth.py). Every API call needs a bearer token the double minted, unexpired, with a scope covering the API.
- A metadata server per instance, each on a listener of its own (ports in the state's "metadata_ports"), under
  /computeMetadata/v1/ with Metadata-Flavor: Google; it answers 503 while its instance is TERMINATED.
- Compute Engine v1 under /compute/v1/projects/P/ (compute.py), Cloud DNS v1 under /dns/v1/projects/P/
  (clouddns.py), Cloud Storage JSON v1 under /storage/v1/b/ and /upload/storage/v1/b/ (storage.py).

Config (--config FILE, or POST /_double/config, merged): project, project_number, service_accounts, instances,
disks, managed_zones, buckets, deny, faults ({"throttle", "error500", "error503", "garbage": counts of next API
requests; "op_error": {DISK: {"code", "message"}}}) and the settings of common.SETTINGS. Control (unsigned, for
the tests): POST /_double/config, GET /_double/state, GET /_double/log (no secrets), POST /_double/cleanup (loop
devices and by-id links it made), POST /_double/terminate {"instance"}, POST /_double/add-instance {"name", ...},
POST /_double/expire-tokens. Run: server.py --port-file F [--config JSON-FILE] [--listen ADDR] (default
127.0.0.1) [--tls-cert CERT --tls-key KEY --tls-port-file F2] (a second listener serving the same with TLS; the
metadata servers stay plain http, as on GCE).

Simpler than Google, on purpose: Compute's list filter takes `=` (exact string match, also for quoted
literals) and `!=` only (`:`, eq/ne, OR and other fields are a 400), ordering is by name (orderBy name or
"creationTimestamp desc"); the zone field compares against the zone's URL; a disk name is unique in the project,
not per zone; zones are any name shaped like one; the terminate control also lets the instance's disks go
(as deleting a dead instance would; a stopped GCE instance keeps them); an operation counted by op_polls only
advances when polled, so its wait returns at once (Google's wait may return early); metadata tokens are minted
anew on each fetch (GCE caches them); query parameters a method does not bind are refused on all three APIs;
`fields` (partial responses) is accepted and ignored; uploads are uploadType=media only; objects keep one
generation; Cloud DNS rrdatas compare as exact strings.
"""
import argparse
import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import auth  # noqa: E402
import clouddns  # noqa: E402
import compute  # noqa: E402
import storage  # noqa: E402
from common import SETTINGS, STATE, GoogleError  # noqa: E402

BODY_MAX = 17 << 20  # protokube's store objects are at most 16 MiB
JSON = "application/json; charset=UTF-8"
CONFIG_KEYS = {"project", "project_number", "service_accounts", "instances", "disks", "managed_zones", "buckets",
               "deny", "faults"} | set(SETTINGS)
DISPATCH = {"compute": compute.dispatch, "dns": clouddns.dispatch, "storage": storage.dispatch}
LISTEN = ["127.0.0.1"]
SERVERS = []  # every listener, for the shutdown
MD_PREFIX = "/computeMetadata/v1/"


def configure(cfg):
    """Merges a config into the state (see the module doc); instances get their metadata servers."""
    unknown = set(cfg) - CONFIG_KEYS
    if unknown:
        raise ValueError(f"unknown config keys {sorted(unknown)}")
    with STATE.lock:
        for k in ("project", "project_number"):
            if k in cfg:
                setattr(STATE, k, str(cfg[k]))
        STATE.settings.update({k: cfg[k] for k in SETTINGS if k in cfg})
        STATE.faults.update(cfg.get("faults", {}))
        STATE.deny = list(cfg.get("deny", STATE.deny))
        for email, c in cfg.get("service_accounts", {}).items():
            auth.add_account(email, c)
        for name, c in cfg.get("instances", {}).items():
            compute.add_instance(name, c)
        for name, c in cfg.get("disks", {}).items():
            compute.add_disk(name, c)
        for name, c in cfg.get("managed_zones", {}).items():
            clouddns.add_zone(name, c)
        for name, c in cfg.get("buckets", {}).items():
            storage.add_bucket(name, c)
        new = [n for n in STATE.instances if n not in STATE.metadata_ports]
    for name in new:
        srv = ThreadingHTTPServer((LISTEN[0], 0), MetadataHandler)
        srv.daemon_threads, srv.instance = True, name
        with STATE.lock:
            STATE.metadata_ports[name] = srv.server_address[1]
        SERVERS.append(srv)
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()


def injected_fault():
    """The configured faults, in order: throttling, 503, 500, then a truncated answer (returns True)."""
    with STATE.lock:
        f = STATE.faults
        for fault, counter, err in (("throttle", "throttled", GoogleError(429, "Rate Limit Exceeded")),
                                    ("error503", "errors503", GoogleError(503, "The service is currently "
                                                                               "unavailable.")),
                                    ("error500", "errors500", GoogleError(500, "Internal error encountered.")),
                                    ("garbage", "garbage", None)):
            if f.get(fault, 0) > 0:
                f[fault] -= 1
                STATE.counters[counter] += 1
                if err:
                    raise err
                return True
    return False


def state_doc():
    with STATE.lock:
        compute.settle()
        insts = {n: {"zone": i["zone"], "status": i["status"], "labels": i["labels"],
                     "disks": [{k: e[k] for k in ("disk", "deviceName", "mode", "boot", "index")} for e in i["disks"]]}
                 for n, i in STATE.instances.items()}
        disks = {n: {"zone": d["zone"], "labels": d["labels"], "users": [i for i, _ in compute.users_of(n)],
                     "attachments": [{"instance": i, "deviceName": e["deviceName"], "mode": e["mode"]}
                                     for i, e in compute.users_of(n)]}
                 for n, d in STATE.disks.items()}
        ops = {n: {"type": r["op"]["operationType"], "status": r["op"]["status"], "target": r["op"]["targetLink"],
                   **({"error": r["op"]["error"]} if "error" in r["op"] else {})} for n, r in STATE.ops.items()}
        # Every secret the double issued, so that tests can show none reached a log.
        secrets = list(STATE.tokens) + [a["pem"] for a in STATE.accounts.values() if a["pem"]]
        return {"project": STATE.project, "project_number": STATE.project_number,
                "metadata_ports": dict(STATE.metadata_ports), "counters": dict(STATE.counters), "instances": insts,
                "disks": disks, "operations": ops, "faults": dict(STATE.faults), "zones": clouddns.state(),
                **storage.state(),
                "loops": [list(x) for x in STATE.loops], "secrets": secrets}


class Req:
    """One API request as the modules see it: method, path (still percent-encoded), raw query, headers, body,
    the listener's base URL, and (once checked) the bearer token's record."""

    def __init__(self, handler, body):
        self.method, self.headers, self.body, self.token = handler.command, handler.headers, body, None
        self.path, _, self.query = handler.path.partition("?")
        host = handler.headers.get("Host") or "%s:%d" % handler.server.server_address[:2]
        self.base_url = f"{handler.server.scheme}://{host}"


class Base(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def version_string(self):
        return self.server_version  # Google's servers name themselves only ("ESF")

    def log_message(self, fmt, *args):
        pass  # requests are logged in the state, without their secrets

    def send(self, status, ctype, data, headers=None):
        # The request is in the log before its answer leaves: a test that reads the log right after the
        # answer must find it there.
        entry, self.log_entry = getattr(self, "log_entry", None), None
        if entry is not None:
            STATE.record({**entry, "status": status})
        data = data.encode() if isinstance(data, str) else data
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        if status != 204:
            self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def read_body(self, cap):
        """The body by Content-Length, as Google's front end takes it; chunked bodies are refused (the C
        client always sends a length), and so is a body above cap."""
        raw = self.headers.get("Content-Length", "0").strip() or "0"
        if self.headers.get("Transfer-Encoding") or not raw.isdigit() or int(raw) > cap:
            self.close_connection = True
            if self.headers.get("Transfer-Encoding"):
                raise GoogleError(411, "Length Required: send the body with a Content-Length.")
            if not raw.isdigit():
                raise GoogleError(400, "Bad Content-Length.", "badRequest")
            raise GoogleError(413, f"The request is too large: {raw} bytes, at most {cap}.")
        return self.rfile.read(int(raw)) if int(raw) else b""


class ApiHandler(Base):
    server_version = "ESF"

    def handle_any(self):
        path = self.path.partition("?")[0]
        api = "token" if path == "/token" else "control" if path.startswith("/_double/") else \
            "compute" if path.startswith("/compute/v1/") else "dns" if path.startswith("/dns/v1/") else \
            "storage" if path.startswith(("/storage/v1/", "/upload/storage/v1/")) else None
        entry = {"method": self.command, "path": path, "query": redact(self.path.partition("?")[2]), "api": api}
        if self.headers.get("Authorization"):
            entry["authorization"] = self.headers["Authorization"].split(" ")[0] + " <redacted>"
        self.log_entry = entry if api != "control" else None
        status = 500
        try:
            body = self.read_body(BODY_MAX)
            if api == "control":
                return self.control(path, Req(self, body))
            if api == "token":
                status = self.token(Req(self, body))
                return
            status = self.api(api, Req(self, body))
        except GoogleError as e:
            status = e.code
            self.send(e.code, JSON, e.body(), e.headers)
        finally:
            if self.log_entry is not None:  # no answer was sent (the handler failed): logged all the same
                STATE.record({**entry, "status": status})
                self.log_entry = None

    def api(self, api, req):
        if api is None:
            raise GoogleError(404, f"The requested URL {req.path} was not found on this server.")
        with STATE.lock:
            STATE.counters["requests"] += 1
            STATE.counters[api + "_requests"] += 1
        req.token = auth.bearer(req, api)
        if injected_fault():
            self.send(200, JSON, '{\n  "kind": "compute#diskList",\n  "items": [\n    {\n      "kind": "comp')
            return 200
        result = DISPATCH[api](req)
        if isinstance(result, storage.Raw):
            self.send(result.status, result.ctype, result.data, result.headers)
            return result.status
        self.send(200, JSON, json.dumps(result, indent=2))
        return 200

    def token(self, req):
        try:
            doc, status = auth.grant(req), 200
        except auth.OAuthError as e:
            doc, status = {"error": e.error, "error_description": e.description}, e.status
            with STATE.lock:
                STATE.counters["token_refusals"] += 1
        self.send(status, "application/json; charset=utf-8", json.dumps(doc, indent=2),
                  {"Cache-Control": "no-cache, no-store, max-age=0, must-revalidate", "Pragma": "no-cache"})
        return status

    def control(self, path, req):
        try:
            arg = json.loads(req.body or b"{}") if req.method == "POST" else {}
            if path == "/_double/state":
                out = state_doc()
            elif path == "/_double/log":
                with STATE.lock:
                    out = list(STATE.log)
            elif req.method != "POST":
                return self.send(404, "text/plain", "")
            elif path == "/_double/config":
                configure(arg)
                out = {}
            elif path == "/_double/service-account-key":
                out = auth.key_json(arg["email"], req.base_url, bool(arg.get("rotate")))
            elif path == "/_double/terminate":
                compute.terminate(arg["instance"])
                out = {}
            elif path == "/_double/add-instance":
                configure({"instances": {arg["name"]: {k: v for k, v in arg.items() if k != "name"}}})
                with STATE.lock:
                    out = {"metadata_port": STATE.metadata_ports[arg["name"]]}
            elif path == "/_double/expire-tokens":
                with STATE.lock:
                    for rec in STATE.tokens.values():
                        rec["expires"] = 0
                out = {}
            elif path == "/_double/cleanup":
                compute.cleanup()
                out = {}
            else:
                return self.send(404, "text/plain", "")
        except (ValueError, KeyError, TypeError, RuntimeError, GoogleError) as e:
            return self.send(400, JSON, json.dumps({"error": f"{type(e).__name__}: {e}"}))
        return self.send(200, JSON, json.dumps(out, indent=2))

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any


def redact(query):
    """A query for the log, with a token given as a parameter (access_token, key) blanked."""
    return "&".join(p.split("=")[0] + "=<redacted>" if p.split("=")[0] in ("access_token", "key") else p
                    for p in query.split("&")) if query else ""


class MetadataHandler(Base):
    """One instance's metadata server (the instance is the listener's `instance`)."""
    server_version = "Metadata Server for VM"

    def handle_any(self):
        name = self.server.instance
        path = self.path.partition("?")[0]
        try:
            self.read_body(1 << 20)
            status, ctype, text = self.answer(name, path)
        except GoogleError as e:
            status, ctype, text = e.code, "text/plain", e.message
        with STATE.lock:
            STATE.counters["metadata_requests"] += 1
        STATE.record({"method": self.command, "path": path, "query": "", "status": status, "api": "metadata",
                      "instance": name})
        self.send(status, ctype, text, {"Metadata-Flavor": "Google", "X-XSS-Protection": "0",
                                        "X-Frame-Options": "SAMEORIGIN"})

    def answer(self, name, path):
        html = "text/html; charset=UTF-8"
        with STATE.lock:
            inst = STATE.instances.get(name)
            if inst is None or inst["status"] != "RUNNING":
                return 503, html, "Service Unavailable"
            inst = dict(inst)
            project, number = STATE.project, STATE.project_number
            ttl = STATE.settings["metadata_token_ttl"] or STATE.settings["token_ttl"]
        if "X-Forwarded-For" in self.headers:
            return 403, html, "Request had an X-Forwarded-For header: refused."
        if self.headers.get("Metadata-Flavor") != "Google":
            return 403, html, "Missing required header: Metadata-Flavor"
        if self.command != "GET":
            return 405, html, "Method Not Allowed"
        key = path[len(MD_PREFIX):] if path.startswith(MD_PREFIX) else None
        sa = inst["service_account"]
        if key and key.startswith(f"instance/service-accounts/{sa}/"):
            key = "instance/service-accounts/default/" + key[len(f"instance/service-accounts/{sa}/"):]
        if key == "instance/service-accounts/default/token":
            with STATE.lock:
                tok = auth.mint(sa, inst["scopes"], ttl, "ya29.m-")
                STATE.counters["metadata_token_fetches"] += 1
            return 200, "application/json", json.dumps({"access_token": tok, "expires_in": ttl,
                                                        "token_type": "Bearer"})
        values = {
            "project/project-id": project, "project/numeric-project-id": number, "instance/name": name,
            "instance/hostname": f"{name}.{inst['zone']}.c.{project}.internal", "instance/id": inst["id"],
            "instance/zone": f"projects/{number}/zones/{inst['zone']}",
            "instance/machine-type": f"projects/{number}/machineTypes/{inst['machine_type']}",
            "instance/network-interfaces/0/ip": inst["internal_ip"],
            "instance/service-accounts/": f"default/\n{sa}/\n",
            "instance/service-accounts/default/email": sa,
            "instance/service-accounts/default/scopes": "".join(s + "\n" for s in inst["scopes"]),
            "instance/attributes/": "".join(k + "\n" for k in inst["attributes"]),
            **{f"instance/attributes/{k}": v for k, v in inst["attributes"].items()}}
        if inst["external_ip"]:
            values["instance/network-interfaces/0/access-configs/0/external-ip"] = inst["external_ip"]
        if key not in values:
            return 404, html, "404 Not Found"
        return 200, "application/text", values[key]

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = handle_any


def listener(scheme):
    srv = ThreadingHTTPServer((LISTEN[0], 0), ApiHandler)
    srv.daemon_threads, srv.scheme = True, scheme
    SERVERS.append(srv)
    return srv


def write_port(path, port):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(str(port))
    os.rename(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--config")
    # Where to listen (default loopback); the e2e harness runs the double in a network namespace of its test
    # network and listens on that host's address. The metadata servers listen there too.
    ap.add_argument("--listen", default="127.0.0.1")
    # A second listener with TLS for the APIs and /token: protokube accepts plain http only on loopback.
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--tls-port-file")
    args = ap.parse_args()
    LISTEN[0] = args.listen
    if args.config:
        with open(args.config, encoding="utf-8") as f:
            configure(json.load(f))
    srv = listener("http")
    if args.tls_cert:
        import ssl
        tls = listener("https")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
        threading.Thread(target=tls.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
        write_port(args.tls_port_file, tls.server_address[1])

    def stop(*_):
        for s in list(SERVERS):
            threading.Thread(target=s.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    write_port(args.port_file, srv.server_address[1])
    try:
        srv.serve_forever(poll_interval=0.2)
    finally:
        compute.cleanup()


if __name__ == "__main__":
    main()
