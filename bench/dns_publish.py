# SPDX-License-Identifier: Apache-2.0
"""Figure 3: publishing 1000 A records (one zone, one RRset) to BIND on loopback: `protokube dns sync --view`
against BIND's own `nsupdate -k` with the same TSIG key, each as one UPDATE, alternating in the same run, the
zone reset between runs (untimed). The view has 1000 masters with one internal IP each and no external IP,
so the desired set is exactly one A RRset `api.internal.<cluster>` of 1000 addresses (the external `api.`
name has no address and does not exist: nothing to delete). Both clients replace the RRset: "delete RRset" +
1000 "add RR" (RFC 2136 §2.5.2, §2.5.1); both end up on TCP (the message is ~17 KB). protokube also reads
what is served first (A and AAAA of its two names, signed), since that is its design: only what differs is
sent. Each timing is spawn -> exit of the client; every run is checked afterwards (1000 addresses served).
Then the no-change pass: `dns sync` again with the zone already right (reads only, sends nothing).

The floor: in each run BIND also gets the same UPDATE as nsupdate's (built with dnspython, signed with the
same key) from a client that connected beforehand, timed from its send to BIND's answer: BIND's own time to
apply it. No client that waits for the answer can take less, so that time over nsupdate's whole run is the
lowest ratio any client can reach on this machine."""
import json
import os
import socket
import subprocess
import time

import dns.query
import dns.rcode
import dns.tsig
import dns.tsigkeyring
import dns.update

import common

RUNS = common.env_int("BENCH_DNS_RUNS", 5)
CLUSTER = "bulk.k8s.test"
SUFFIX = f"internal.{CLUSTER}."
# BIND 9.18.28+ refuses an RRset of more than 100 records by default (max-records-per-type, the
# CVE-2024-1737 limit), answering SERVFAIL to an UPDATE that would build one: the one-RRset variant needs it
# lifted. It changes nothing for the spread variant, which stays within the default.
BIND_OPTIONS = "max-records-per-type 0;"
# This round's goals (issue 19). With one RRset BIND's own time to apply the UPDATE is most of both
# clients' time (bench/README.md): a floor under the ratio that no client can go below.
TARGETS = {"1 RRset": 0.5, "901 names": 1.0}
# protokube's own share above that floor: its time over BIND's alone applying nsupdate's UPDATE.
OWN_SHARE_TARGETS = {"1 RRset": 1.10}
# The 901-name zone must let the key transfer it, so that protokube reads it with one AXFR (docs/dns.md).
ZONE_OPTIONS = "allow-transfer { key protokube-key; };"


def variant_one_rrset():
    """1000 masters, one internal IP each: api.internal holds 1000 A records."""
    ips = [f"10.{100 + i // 250}.{i % 250}.{1 + i % 7}" for i in range(1000)]
    view = {"masters": [{"name": f"m{i:04d}", "internalIPs": [ip], "externalIPs": []} for i, ip in enumerate(ips)],
            "members": []}
    return "1 RRset", view, {f"api.{SUFFIX}": sorted(ips)}


def variant_spread():
    """100 masters (api.internal: 100 A) holding 900 etcd main members (etcd-xNNN: 1 A each): 1000 A records
    over 901 names, within BIND's default per-RRset limit."""
    ips = [f"10.200.{i // 250}.{1 + i % 250}" for i in range(100)]
    masters = [{"name": f"m{i:02d}", "internalIPs": [ip], "externalIPs": []} for i, ip in enumerate(ips)]
    members = [{"cluster": "main", "member": f"x{j:03d}", "node": f"m{j % 100:02d}"} for j in range(900)]
    want = {f"api.{SUFFIX}": sorted(ips)}
    for j in range(900):
        want[f"etcd-x{j:03d}.{SUFFIX}"] = [ips[j % 100]]
    return "901 names", {"masters": masters, "members": members}, want


def timed(argv, input_text=None):
    t0 = time.monotonic()
    p = subprocess.run(argv, input=input_text, capture_output=True, text=True, timeout=300)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {p.returncode}: {p.stdout[-2000:]}{p.stderr[-2000:]}")
    return dt, p.stdout


def update_message(want):
    """nsupdate's UPDATE for want, as dnspython builds it: per name "delete RRset" + "add RR" per address."""
    ring = dns.tsigkeyring.from_text({common.dnsservers.DEFAULT_KEY_NAME: common.dnsservers.DEFAULT_SECRET})
    u = dns.update.UpdateMessage(common.CLUSTER_ZONE, keyring=ring, keyalgorithm=dns.tsig.HMAC_SHA256)
    for name, addrs in want.items():
        u.delete(name, "A")
        for a in addrs:
            u.add(name, 60, "A", a)
    return u


def bind_alone(bind, update):
    """Seconds from the UPDATE's send (signed before, over a connection made before) to BIND's whole answer."""
    with socket.create_connection(("127.0.0.1", bind.port), timeout=60) as sock:
        _, sent = dns.query.send_tcp(sock, update)
        answer, received = dns.query.receive_tcp(sock, keyring=update.keyring, request_mac=update.mac)
    if answer.rcode() != dns.rcode.NOERROR:
        raise RuntimeError(f"BIND answered the UPDATE with {dns.rcode.to_text(answer.rcode())}")
    return received - sent


def served(bind):
    """{name: sorted addresses} of every A record in the zone, by one signed AXFR."""
    p = common.run(["dig", "-k", bind.key_file, "@127.0.0.1", "-p", str(bind.port), common.CLUSTER_ZONE, "AXFR",
                    "+noall", "+answer", "+time=10", "+tries=1"], check=False)
    out = {}
    for ln in p.stdout.splitlines():
        f = ln.split()
        if len(f) == 5 and f[3] == "A":
            out.setdefault(f[0].lower(), []).append(f[4])
    return {k: sorted(v) for k, v in out.items()}


def run_variant(wd, bind, label, view, want):
    spec = os.path.join(wd.path, "cluster.yaml")
    with open(spec, "w") as f:
        f.write(common.spec_text(CLUSTER, common.rfc2136_block(bind), clusters=("main",)))
    view_file = os.path.join(wd.path, f"view-{label.replace(' ', '-')}.json")
    with open(view_file, "w") as f:
        json.dump(view, f)
    pk_argv = [common.protokube_bin(), "-c", spec, "dns", "sync", "--view", view_file]
    ns_script = f"server 127.0.0.1 {bind.port}\nzone {common.CLUSTER_ZONE}\n"
    for name, addrs in want.items():
        ns_script += f"update delete {name} A\n" + "".join(f"update add {name} 60 A {a}\n" for a in addrs)
    ns_script += "send\n"
    ns_argv = ["nsupdate", "-k", bind.key_file]
    update = update_message(want)
    n_records = sum(len(v) for v in want.values())

    def ours(zone):
        return {k: v for k, v in zone.items() if k.endswith(SUFFIX)}

    def reset():
        bind.nsupdate([f"update delete {name} A" for name in want])
        if ours(served(bind)):
            raise RuntimeError("zone reset failed")

    def check(who):
        got = ours(served(bind))
        if got != want:
            raise RuntimeError(f"after {who}: {sum(len(v) for v in got.values())} addresses in {len(got)} "
                               f"names served, wanted {n_records} in {len(want)}")

    pk_t, ns_t, bind_t, ratios, floors, over, nochange = [], [], [], [], [], [], []
    for i in range(RUNS):
        got = {}
        for who in (("pk", "ns", "bind") if i % 2 == 0 else ("ns", "pk", "bind")):
            reset()
            if who == "pk":
                got["pk"], out = timed(pk_argv)
                if "replace" not in out:
                    raise RuntimeError(f"dns sync did not replace anything: {out[-500:]!r}")
            elif who == "ns":
                got["ns"], _ = timed(ns_argv, ns_script)
            else:
                got["bind"] = bind_alone(bind, update)
            check(who)
        pk_t.append(got["pk"])
        ns_t.append(got["ns"])
        bind_t.append(got["bind"])
        ratios.append(got["pk"] / got["ns"])
        floors.append(got["bind"] / got["ns"])
        over.append(got["pk"] / got["bind"])
    for _ in range(RUNS):  # the zone holds the records now (the last writer of the last pair wrote them)
        dt, out = timed(pk_argv)
        if "no changes" not in out:
            raise RuntimeError(f"a sync of a converged zone was not a no-op: {out[-500:]!r}")
        nochange.append(dt)
    reset()
    r = common.median(ratios)
    target = TARGETS[label]
    return [(f"3. {n_records} A ({label}): dns sync / nsupdate", f"{r:.2f}", f"<= {target}",
             "met" if r <= target else "MISSED"),
            ("   protokube dns sync --view", common.fmt_ms(common.median(pk_t)), "", ""),
            ("   nsupdate -k, same key, one batch", common.fmt_ms(common.median(ns_t)), "", ""),
            ("   BIND alone applying nsupdate's UPDATE (send -> answer)", common.fmt_ms(common.median(bind_t)),
             "", ""),
            ("   the floor for any client: BIND alone / nsupdate", f"{common.median(floors):.2f}", "", ""),
            share_row(over, OWN_SHARE_TARGETS.get(label)),
            ("   dns sync, no change (reads only)", common.fmt_ms(common.median(nochange)), "", "")]


def share_row(over, target):
    """protokube's own share above the floor: its time over BIND's alone for the same records, per pair."""
    r = common.median(over)
    return ("   protokube's own share: dns sync / BIND alone", common.spread(over, lambda v: f"{v:.2f}"),
            f"<= {target:.2f}" if target else "", ("met" if r <= target else "MISSED") if target else "")


def measure():
    rows = []
    with common.Workdir("dns") as wd:
        bind = common.Bind(wd.path, BIND_OPTIONS, ZONE_OPTIONS)
        try:
            for label, view, want in (variant_one_rrset(), variant_spread()):
                rows += run_variant(wd, bind, label, view, want)
        finally:
            bind.stop()
    return rows, (f"{RUNS} alternating pairs per variant (ratio: median of per-pair ratios), each followed by BIND "
                  f"alone, zone reset between "
                  f"runs; {RUNS} no-change passes; BIND with {BIND_OPTIONS} {ZONE_OPTIONS}; load average "
                  f"{os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    common.figure_main(measure)
