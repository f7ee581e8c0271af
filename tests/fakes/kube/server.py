#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A loopback double of the Kubernetes API's read side, as protokube's checkpoint and pivot use it: GET of one
object and LIST of a collection (core v1 and apps/v1), /readyz and /livez. Lists behave as kube-apiserver's:

- `limit` and `continue`: pages of at most `limit` objects in key order (namespace, name), each but the last
  with `metadata.continue`, an opaque token bound to the list's selectors and resourceVersion; a token from
  another query, or a `continue` without `limit`, is a 400 BadRequest, as the apiserver answers a token it
  cannot use; with the fault `expire_continue` the next continued page is a 410 Expired;
- `labelSelector`: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, joined by commas
  (k8s.io/apimachinery/pkg/labels); a selector that does not parse is a 400;
- `fieldSelector`: `=`, `==`, `!=` over the fields the apiserver supports for the kind (for pods:
  metadata.name, metadata.namespace, spec.nodeName, spec.restartPolicy, spec.schedulerName,
  spec.serviceAccountName, status.phase, status.podIP, status.nominatedNodeName; for others metadata.name and
  metadata.namespace); another field is a 400 "field label not supported";
- any other query parameter than limit, continue, labelSelector, fieldSelector, resourceVersion is a 400.

Answers are JSON, `Connection: close`. Errors are Status objects. Nothing is written through the API.

Control (for the tests): POST /_fake/objects (a JSON array of objects, stored by apiVersion, kind, namespace,
name; uid and resourceVersion filled in when absent), POST /_fake/pods (generate pods: {"count", "namespace",
"name", "labels", "node", "pad"}: name and node may hold "{i}"), POST /_fake/delete ({"apiVersion", "kind",
"namespace", "name"}), POST /_fake/config (faults, merged: {"expire_continue": true} once; {"down": true}
answers /readyz 500; {"rotate": "NS/NAME"}: each GET of that Secret has a new key "serial"), GET
/_fake/requests (every API request so far: method, path, query), POST /_fake/requests/clear. Run: server.py
--port-file F [--listen ADDR] [--tls-cert FILE --tls-key FILE] (HTTPS with that certificate, for a client that
authenticates the API by its name, as a worker's protokube does: the controls too are then over HTTPS; no
client certificate is asked for)."""
import argparse
import base64
import json
import os
import re
import signal
import ssl
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KINDS = {  # plural -> (apiVersion, kind, namespaced)
    "pods": ("v1", "Pod", True),
    "nodes": ("v1", "Node", False),
    "secrets": ("v1", "Secret", True),
    "configmaps": ("v1", "ConfigMap", True),
    "namespaces": ("v1", "Namespace", False),
    "daemonsets": ("apps/v1", "DaemonSet", True),
    "deployments": ("apps/v1", "Deployment", True),
    "replicasets": ("apps/v1", "ReplicaSet", True),
}
PLURAL = {(v[0], v[1]): k for k, v in KINDS.items()}
POD_FIELDS = ("metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy",
              "spec.schedulerName", "spec.serviceAccountName", "status.phase", "status.podIP",
              "status.nominatedNodeName")
QUERY_KEYS = {"limit", "continue", "labelSelector", "fieldSelector", "resourceVersion"}
BODY_MAX = 64 << 20
LABEL_KEY = r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?"
LABEL_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?"


class ApiError(Exception):
    def __init__(self, code, reason, message):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


def bad(message):
    return ApiError(400, "BadRequest", message)


def split_terms(sel):
    """Commas outside parentheses separate the requirements."""
    terms, depth, cur = [], 0, ""
    for ch in sel:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise bad(f"unable to parse requirement: unbalanced ')' in {sel!r}")
        if ch == "," and depth == 0:
            terms.append(cur)
            cur = ""
        else:
            cur += ch
    if depth:
        raise bad(f"unable to parse requirement: unbalanced '(' in {sel!r}")
    terms.append(cur)
    return [t.strip() for t in terms]


def parse_label_selector(sel):
    """A list of predicates over a labels dict."""
    preds = []
    for t in split_terms(sel):
        m = re.fullmatch(rf"({LABEL_KEY})\s+(in|notin)\s+\(([^()]*)\)", t)
        if m:
            key, op = m.group(1), m.group(2)
            vals = {v.strip() for v in m.group(3).split(",")}
            if not all(re.fullmatch(LABEL_VALUE, v) for v in vals):
                raise bad(f"invalid label value in {t!r}")
            preds.append((lambda k, vs: lambda lb: lb.get(k) in vs)(key, vals) if op == "in" else
                         (lambda k, vs: lambda lb: lb.get(k) not in vs)(key, vals))
            continue
        m = re.fullmatch(rf"({LABEL_KEY})\s*(==|=|!=)\s*({LABEL_VALUE})", t)
        if m:
            key, op, val = m.group(1), m.group(2), m.group(3)
            preds.append((lambda k, v: lambda lb: lb.get(k) == v)(key, val) if op != "!=" else
                         (lambda k, v: lambda lb: lb.get(k) != v)(key, val))
            continue
        m = re.fullmatch(rf"(!?)\s*({LABEL_KEY})", t)
        if m:
            key = m.group(2)
            preds.append((lambda k: lambda lb: k not in lb)(key) if m.group(1) else
                         (lambda k: lambda lb: k in lb)(key))
            continue
        raise bad(f"unable to parse requirement: {t!r}")
    return preds


def field_value(obj, path):
    cur = obj
    for p in path.split("."):
        cur = cur.get(p) if isinstance(cur, dict) else None
    return "" if cur is None else str(cur)


def parse_field_selector(sel, kind):
    allowed = POD_FIELDS if kind == "Pod" else ("metadata.name", "metadata.namespace")
    preds = []
    for t in split_terms(sel):
        m = re.fullmatch(r"([A-Za-z.]+)\s*(==|=|!=)\s*([^,=!]*)", t)
        if not m:
            raise bad(f"invalid field selector: {t!r}")
        f, op, v = m.group(1), m.group(2), m.group(3)
        if f not in allowed:
            raise bad(f'"{f}" is not a known field selector: only "{", ".join(allowed)}"')
        preds.append((lambda f_, v_: lambda o: field_value(o, f_) == v_)(f, v) if op != "!=" else
                     (lambda f_, v_: lambda o: field_value(o, f_) != v_)(f, v))
    return preds


class State:
    def __init__(self):
        self.lock = threading.RLock()
        self.objects = {}  # (apiVersion, kind) -> {(ns, name): obj}
        self.rv = 1
        self.requests = []
        self.faults = {}
        self.rotations = 0

    def put(self, obj):
        av, kind = obj.get("apiVersion"), obj.get("kind")
        if (av, kind) not in PLURAL:
            raise bad(f"unknown kind {av} {kind}")
        md = obj.setdefault("metadata", {})
        ns = md.get("namespace", "") if KINDS[PLURAL[(av, kind)]][2] else ""
        if KINDS[PLURAL[(av, kind)]][2] and not ns:
            ns = md["namespace"] = "default"
        md.setdefault("uid", str(uuid.uuid4()))
        self.rv += 1
        md["resourceVersion"] = str(self.rv)
        self.objects.setdefault((av, kind), {})[(ns, md["name"])] = obj


STATE = State()


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


def token(rv, key, query):
    raw = json.dumps({"rv": rv, "start": list(key), "q": query}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def list_objects(av, kind, ns, q):
    for k in q:
        if k not in QUERY_KEYS:
            raise bad(f"unknown query parameter {k!r}")
    label = q.get("labelSelector", [None])[0]
    field = q.get("fieldSelector", [None])[0]
    preds = (parse_label_selector(label) if label else []), (parse_field_selector(field, kind) if field else [])
    limit = q.get("limit", [None])[0]
    if limit is not None and not re.fullmatch(r"[0-9]+", limit):
        raise bad(f"invalid limit {limit!r}")
    limit = int(limit) if limit else 0
    cont = q.get("continue", [None])[0]
    bound = {"label": label, "field": field, "ns": ns}
    with STATE.lock:
        items = sorted(STATE.objects.get((av, kind), {}).items())
        rv = str(STATE.rv)
        start = None
        if cont is not None:
            if not limit:
                raise bad("continue requires limit")
            try:
                t = json.loads(base64.urlsafe_b64decode(cont.encode()))
            except ValueError:
                raise bad("continue key is not valid: not a token") from None
            if t.get("q") != bound:
                raise bad("continue key is not valid: the token belongs to another query")
            if STATE.faults.pop("expire_continue", False):
                raise ApiError(410, "Expired", "The provided continue parameter is too old to display a "
                                               "consistent list result. You can start a new list without "
                                               "the continue parameter.")
            start, rv = tuple(t["start"]), t["rv"]
        out, last = [], None
        for key, obj in items:
            if ns and key[0] != ns:
                continue
            if start is not None and key <= start:
                continue
            labels = obj.get("metadata", {}).get("labels", {}) or {}
            if not all(p(labels) for p in preds[0]) or not all(p(obj) for p in preds[1]):
                continue
            if limit and len(out) == limit:
                meta = {"resourceVersion": rv, "continue": token(rv, last, bound)}
                return {"kind": kind + "List", "apiVersion": av, "metadata": meta, "items": out}
            out.append(obj)
            last = key
    return {"kind": kind + "List", "apiVersion": av, "metadata": {"resourceVersion": rv}, "items": out}


def route(path):
    """(apiVersion, plural, namespace or "", name or None), or None."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        av, rest = "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis" and parts[1] == "apps" and parts[2] == "v1":
        av, rest = "apps/v1", parts[3:]
    else:
        return None
    ns = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    if not rest or rest[0] not in KINDS or KINDS[rest[0]][0] != av or len(rest) > 2:
        return None
    return av, rest[0], ns, rest[1] if len(rest) == 2 else None


def generate(spec):
    n = int(spec["count"])
    pad = "x" * int(spec.get("pad", 0))
    with STATE.lock:
        for i in range(n):
            name, node = spec["name"].format(i=i), spec.get("node", "").format(i=i)
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": name, "namespace": spec.get("namespace", "kube-system"),
                                "labels": dict(spec.get("labels", {})),
                                "annotations": {"padding": pad} if pad else {}},
                   "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.k8s.io/pause"}]},
                   "status": {"phase": "Running"}}
            STATE.put(pod)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code, obj=None, text=None):
        body = (json.dumps(obj) if obj is not None else text or "").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json" if obj is not None else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def body(self):
        n = int(self.headers.get("Content-Length", "0"))
        if n > BODY_MAX:
            raise bad("body too large")
        return json.loads(self.rfile.read(n) or b"null")

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        if u.path == "/_fake/requests":
            with STATE.lock:
                return self.reply(200, STATE.requests)
        with STATE.lock:
            STATE.requests.append({"method": "GET", "path": u.path, "query": u.query})
        if u.path in ("/readyz", "/livez"):
            down = STATE.faults.get("down")
            return self.reply(500 if down else 200, text="[-]etcd failed\n" if down else "ok")
        try:
            r = route(u.path)
            if not r:
                raise ApiError(404, "NotFound", f"the server could not find the requested resource ({u.path})")
            av, plural, ns, name = r
            _, kind, namespaced = KINDS[plural]
            q = urllib.parse.parse_qs(u.query, keep_blank_values=True)
            if name is None:
                return self.reply(200, list_objects(av, kind, ns if namespaced else "", q))
            if namespaced and not ns:
                raise ApiError(404, "NotFound", f"no namespace for {plural}")
            with STATE.lock:
                obj = STATE.objects.get((av, kind), {}).get((ns, name))
            if obj is None:
                raise ApiError(404, "NotFound", f'{plural} "{name}" not found')
            if kind == "Secret" and STATE.faults.get("rotate") == f"{ns}/{name}":
                with STATE.lock:
                    STATE.rotations += 1
                    obj = json.loads(json.dumps(obj))
                    obj.setdefault("data", {})["serial"] = base64.b64encode(str(STATE.rotations).encode()).decode()
            return self.reply(200, obj)
        except ApiError as e:
            return self.reply(e.code, status(e.code, e.reason, e.message))

    def do_POST(self):
        u = urllib.parse.urlsplit(self.path)
        try:
            if u.path == "/_fake/objects":
                with STATE.lock:
                    for o in self.body():
                        STATE.put(o)
            elif u.path == "/_fake/pods":
                generate(self.body())
            elif u.path == "/_fake/delete":
                d = self.body()
                with STATE.lock:
                    STATE.objects.get((d["apiVersion"], d["kind"]), {}).pop((d.get("namespace", ""), d["name"]),
                                                                           None)
            elif u.path == "/_fake/config":
                with STATE.lock:
                    STATE.faults.update(self.body())
            elif u.path == "/_fake/requests/clear":
                with STATE.lock:
                    STATE.requests.clear()
            else:
                with STATE.lock:
                    STATE.requests.append({"method": "POST", "path": u.path, "query": u.query})
                raise ApiError(405, "MethodNotAllowed", "this double is read-only")
            return self.reply(200, {})
        except ApiError as e:
            return self.reply(e.code, status(e.code, e.reason, e.message))

    def refuse(self):
        with STATE.lock:
            STATE.requests.append({"method": self.command, "path": self.path, "query": ""})
        self.reply(405, status(405, "MethodNotAllowed", "this double is read-only"))

    do_PUT = do_PATCH = do_DELETE = refuse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--listen", default="127.0.0.1")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    args = ap.parse_args()
    srv = ThreadingHTTPServer((args.listen, 0), Handler)
    srv.daemon_threads = True
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        # the handshake in the request's thread (its first read), not in accept(): a slow client holds no other
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)

    def stop(*_):
        threading.Thread(target=srv.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    parent = os.getppid()

    def orphaned():
        # a test that failed before it stopped the double: it goes with its parent, bounded by the poll
        for _ in range(4 * 3600 * 2):  # at most 4 hours
            if os.getppid() != parent:
                break
            time.sleep(0.5)
        stop()
    threading.Thread(target=orphaned, daemon=True).start()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, args.port_file)
    srv.serve_forever(poll_interval=0.2)


if __name__ == "__main__":
    main()
