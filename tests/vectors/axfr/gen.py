#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the zone transfer vectors of tests/unit/test-dns-axfr.c with dnspython's TSIG code (an
implementation independent of ours, RFC 8945 §5.3.1): a response of three messages to an AXFR of k8s.test.
with ID 0x1234, signed with the key of tests/vectors/tsig against a request MAC of 32 zero bytes, the middle
message unsigned (so the last one's MAC covers it), time signed 1700000000. Output: stream.bin, the messages
each with its two-octet length as on TCP. Run: /usr/bin/python3 tests/vectors/axfr/gen.py DIR"""
import struct
import sys

import dns.message
import dns.name
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import dns.tsig
from dns.rdtypes.ANY.TSIG import TSIG

KEY = dns.tsig.Key("protokube-key.", b"secret-key-for-testing-32bytes!!", "hmac-sha256")
ZONE = "k8s.test."
ID = 0x1234
TIME = 1700000000
SOA = "ns.k8s.test. admin.k8s.test. 7 3600 600 86400 60"

# (owner, type, ttl, data): the zone in transfer order, SOA first and last.
RECORDS = [
    [(ZONE, "SOA", 60, SOA), (ZONE, "NS", 60, "ns.k8s.test."), ("ns.k8s.test.", "A", 60, "127.0.0.1"),
     ("API.internal.demo.k8s.test.", "A", 45, "10.0.0.1"), ("api.internal.demo.k8s.test.", "A", 45, "10.0.0.2"),
     ("api.internal.demo.k8s.test.", "AAAA", 45, "fd00::2"),
     ("api.internal.demo.k8s.test.", "TXT", 45, '"foreign type"')],
    [("etcd-a.internal.demo.k8s.test.", "A", 30, "10.0.0.1"), ("etcd-b.internal.demo.k8s.test.", "A", 30, "10.0.0.2"),
     ("etcd-b.internal.demo.k8s.test.", "A", 20, "10.0.0.9"),
     ("etcd-c.internal.demo.k8s.test.", "CNAME", 30, "etcd-a.internal.demo.k8s.test."),
     ("child.k8s.test.", "NS", 60, "ns.child.k8s.test."), ("ns.child.k8s.test.", "A", 60, "192.0.2.53"),
     ("etcd-d.child.k8s.test.", "A", 60, "192.0.2.4")],
    [("*.wild.k8s.test.", "A", 60, "192.0.2.7"), ("foreign.k8s.test.", "A", 60, "192.0.2.99"),
     (ZONE, "SOA", 60, SOA)],
]


def message(records, first):
    m = dns.message.Message(id=ID)
    m.flags = dns.flags.QR | dns.flags.AA
    if first:
        m.question.append(dns.rrset.RRset(dns.name.from_text(ZONE), dns.rdataclass.IN, dns.rdatatype.AXFR))
    for owner, rtype, ttl, data in records:
        m.answer.append(dns.rrset.from_text(owner, ttl, "IN", rtype, data))
    return m.to_wire(max_size=65535)


def add_tsig(wire, rdata):
    rr = (KEY.name.to_wire() + struct.pack("!HHIH", dns.rdatatype.TSIG, dns.rdataclass.ANY, 0, 0))
    body = rdata.to_wire()
    rr = rr[:-2] + struct.pack("!H", len(body)) + body
    arcount = struct.unpack("!H", wire[10:12])[0] + 1
    return wire[:10] + struct.pack("!H", arcount) + wire[12:] + rr


def main():
    import dns.flags  # noqa: F401
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    base = TSIG(dns.rdataclass.ANY, dns.rdatatype.TSIG, KEY.algorithm, TIME, 300, b"", ID, 0, b"")
    w1, w2, w3 = (message(r, i == 0) for i, r in enumerate(RECORDS))
    t1, ctx = dns.tsig.sign(w1, KEY, base, TIME, b"\0" * 32, None, True)
    ctx.update(w2)  # §5.3.1: the unsigned message is digested with the next signed one
    t3, _ = dns.tsig.sign(w3, KEY, base, TIME, None, ctx, True)
    msgs = [add_tsig(w1, t1), w2, add_tsig(w3, t3)]
    with open(f"{out}/stream.bin", "wb") as f:
        for m in msgs:
            f.write(struct.pack("!H", len(m)) + m)


if __name__ == "__main__":
    main()
