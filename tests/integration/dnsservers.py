"""Real DNS servers for tests: BIND 9 and Knot DNS on a loopback address and high port, each with one
dynamic zone that accepts UPDATEs signed with a TSIG key (TESTING.md). Importable helpers, reusable by other
tests: start_bind()/start_knot() return a DnsTestServer; stop() ends it by PID. Nothing here skips: a
missing tool is an error.

    srv = start_bind(workdir, port=free_port())
    try:
        ... srv.query("api.k8s.test.", "A") ...
    finally:
        srv.stop()
"""
import base64
import os
import random
import shutil
import signal
import socket
import subprocess
import time

DEFAULT_ZONE = "k8s.test."
DEFAULT_KEY_NAME = "protokube-key"
DEFAULT_SECRET = base64.b64encode(b"protokube-test-secret-0123456789").decode()


def free_port(addr="127.0.0.1"):
    """A high port free for both UDP and TCP on addr (bounded number of tries)."""
    for _ in range(50):
        port = random.randint(20000, 59999)
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            u.bind((addr, port))
            t.bind((addr, port))
            return port
        except OSError:
            continue
        finally:
            u.close()
            t.close()
    raise RuntimeError("no free port found")


def write_key_file(path, name=DEFAULT_KEY_NAME, algorithm="hmac-sha256", secret=DEFAULT_SECRET, mode=0o600):
    """A key file in BIND syntax (what tsig-keygen writes)."""
    with open(path, "w") as f:
        f.write(f'key "{name}" {{\n\talgorithm {algorithm};\n\tsecret "{secret}";\n}};\n')
    os.chmod(path, mode)
    return path


def _require(tool):
    path = shutil.which(tool) or (tool if os.path.exists(tool) else None)
    if not path:
        raise RuntimeError(f"{tool} is not installed (scripts/install-deps.sh installs it)")
    return path


class DnsTestServer:
    def __init__(self, kind, proc, addr, port, zone, key_name, algorithm, secret, workdir, log_path, query_tool):
        self.kind = kind
        self.proc = proc
        self.pid = proc.pid
        self.addr = addr
        self.port = port
        self.zone = zone
        self.key_name = key_name
        self.algorithm = algorithm
        self.secret = secret
        self.workdir = workdir
        self.log_path = log_path
        self.query_tool = query_tool

    def _opts(self):
        # dig and kdig spell "no recursion, one try of 2 s" differently.
        if os.path.basename(self.query_tool) == "kdig":
            return ["+norecurse", "+time=2", "+retry=0"]
        return ["+norec", "+time=2", "+tries=1"]

    @property
    def server(self):
        return f"{self.addr}:{self.port}"

    def query(self, name, rtype="A", timeout=5):
        """Sorted record data for (name, rtype), asked with dig/kdig; [] for none. Raises on no answer."""
        p = subprocess.run([self.query_tool, f"@{self.addr}", "-p", str(self.port), name, rtype, "+short",
                            *self._opts()], capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"{self.query_tool} {name} {rtype} failed: {p.stdout}{p.stderr}")
        out = [l.strip() for l in p.stdout.splitlines() if l.strip() and not l.startswith(";")]
        return sorted(out)

    def ttl(self, name, rtype="A"):
        p = subprocess.run([self.query_tool, f"@{self.addr}", "-p", str(self.port), name, rtype, "+noall",
                            "+answer", *self._opts()], capture_output=True, text=True, timeout=5)
        ttls = [int(l.split()[1]) for l in p.stdout.splitlines() if l.strip() and not l.startswith(";")]
        return ttls[0] if ttls else None

    def serial(self):
        soa = self.query(self.zone, "SOA")
        return int(soa[0].split()[2]) if soa else None

    def nsupdate(self, commands):
        """Applies nsupdate commands (e.g. 'update add x.k8s.test. 60 A 192.0.2.1') with the key, as a
        reference client independent of protokube."""
        key = f"{self.algorithm}:{self.key_name}:{self.secret}"
        script = f"server {self.addr} {self.port}\nzone {self.zone}\n" + "\n".join(commands) + "\nsend\n"
        p = subprocess.run(["nsupdate", "-y", key], input=script, capture_output=True, text=True, timeout=20)
        if p.returncode != 0:
            raise RuntimeError(f"nsupdate failed: {p.stdout}{p.stderr}")

    def alive(self):
        return self.proc.poll() is None

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        """Ends the server by its PID: SIGTERM, then SIGKILL after 5 s."""
        if self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


def _zone_file(zone, extra):
    lines = ["$TTL 60",
             f"@ IN SOA ns1.{zone} hostmaster.{zone} (1 3600 600 86400 60)",
             f"  IN NS ns1.{zone}",
             "ns1 IN A 127.0.0.1"]
    return "\n".join(lines + list(extra)) + "\n"


def _wait_until_serving(srv, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not srv.alive():
            raise RuntimeError(f"{srv.kind} exited early:\n{srv.log()}")
        try:
            if srv.query(srv.zone, "SOA", timeout=3):
                return srv
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
        time.sleep(0.1)
    srv.stop()
    raise RuntimeError(f"{srv.kind} did not answer within {timeout}s:\n{srv.log()}")


def start_bind(workdir, port, addr="127.0.0.1", zone=DEFAULT_ZONE, key_name=DEFAULT_KEY_NAME,
               algorithm="hmac-sha256", secret=DEFAULT_SECRET, records=(), extra_zones=(), zone_options="",
               extra_conf=""):
    """named in the foreground as nobody, serving zone (a primary with update-policy for the key).
    records: extra zone-file lines (relative or absolute names), e.g. foreign records. extra_zones: more
    zones (e.g. a child of zone) served the same way, empty but for SOA and NS. zone_options: more
    statements for every zone, e.g. 'allow-transfer { key protokube-key; };'. extra_conf: more top-level
    statements (e.g. a statistics-channels on loopback)."""
    named = _require("/usr/sbin/named")
    d = os.path.join(workdir, f"bind-{port}")
    os.makedirs(d, exist_ok=True)
    zones = [(zone, records)] + [(z, ()) for z in extra_zones]
    for z, recs in zones:
        with open(os.path.join(d, f"{z.rstrip('.')}.db"), "w") as f:
            f.write(_zone_file(z, recs))
    write_key_file(os.path.join(d, "tsig.key"), key_name, algorithm, secret, mode=0o640)
    zone_conf = "".join(f"""zone "{z.rstrip('.')}" {{ type primary; file "{d}/{z.rstrip('.')}.db";
  update-policy {{ grant {key_name} zonesub ANY; }}; {zone_options} }};
""" for z, _ in zones)
    with open(os.path.join(d, "named.conf"), "w") as f:
        f.write(f"""options {{ directory "{d}"; pid-file "{d}/named.pid"; session-keyfile "{d}/session.key";
  managed-keys-directory "{d}"; listen-on port {port} {{ {addr}; }}; listen-on-v6 {{ none; }};
  recursion no; dnssec-validation no; notify no; }};
controls {{ }};
include "{d}/tsig.key";
{extra_conf}
{zone_conf}""")
    # As root, named runs as nobody (below); its directory must be writable for the zone journal.
    if os.geteuid() == 0:
        for root, dirs, files in os.walk(d):
            for n in dirs + files:
                shutil.chown(os.path.join(root, n), "nobody", "nogroup")
        shutil.chown(d, "nobody", "nogroup")
        os.chmod(workdir, 0o755)
    log_path = os.path.join(workdir, f"named-{port}.log")
    log = open(log_path, "w")
    argv = [named, "-g", "-c", os.path.join(d, "named.conf")]
    if os.geteuid() == 0:
        argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"] + argv
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()
    srv = DnsTestServer("named", proc, addr, port, zone, key_name, algorithm, secret, d, log_path,
                        _require("dig"))
    return _wait_until_serving(srv)


def start_knot(workdir, port, addr="127.0.0.1", zone=DEFAULT_ZONE, key_name=DEFAULT_KEY_NAME,
               algorithm="hmac-sha256", secret=DEFAULT_SECRET, records=(), extra_zones=()):
    """knotd in the foreground, serving zone with an ACL that allows UPDATE with the key."""
    knotd = _require("/usr/sbin/knotd")
    d = os.path.join(workdir, f"knot-{port}")
    os.makedirs(os.path.join(d, "run"), exist_ok=True)
    zones = [(zone, records)] + [(z, ()) for z in extra_zones]
    for z, recs in zones:
        with open(os.path.join(d, f"{z.rstrip('.')}.zone"), "w") as f:
            f.write(f"$ORIGIN {z}\n" + _zone_file(z, recs))
    zone_conf = "".join(f"  - domain: {z.rstrip('.')}\n    acl: update\n" for z, _ in zones)
    conf = os.path.join(d, "knot.conf")
    with open(conf, "w") as f:
        f.write(f"""server:
    rundir: "{d}/run"
    listen: {addr}@{port}
log:
  - target: stderr
    any: info
database:
    storage: "{d}"
key:
  - id: {key_name}
    algorithm: {algorithm}
    secret: {secret}
acl:
  - id: update
    key: {key_name}
    action: update
template:
  - id: default
    storage: "{d}"
    file: "%s.zone"
    zonefile-sync: -1
zone:
{zone_conf}""")
    os.chmod(conf, 0o600)
    check = subprocess.run(["knotc", "-c", conf, "conf-check"], capture_output=True, text=True, timeout=30)
    if check.returncode != 0:
        raise RuntimeError(f"knot.conf does not check: {check.stdout}{check.stderr}")
    log_path = os.path.join(workdir, f"knotd-{port}.log")
    log = open(log_path, "w")
    proc = subprocess.Popen([knotd, "-c", conf], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()
    srv = DnsTestServer("knotd", proc, addr, port, zone, key_name, algorithm, secret, d, log_path,
                        _require("kdig"))
    return _wait_until_serving(srv)


def start(kind, workdir, port, **kw):
    return {"bind": start_bind, "knot": start_knot}[kind](workdir, port, **kw)
