#!/usr/bin/python3
# Captures the kernel's own rtnetlink answers into tests/fuzz/netlink-route/ (the corpus of
# fuzz-netlink-route.c, which tests/unit/test-netlink-route.c also parses): route dumps of a main table
# that holds routes of several owners, types and tables, and the answers to RTM_NEWROUTE (ack, EEXIST,
# an unreachable gateway with and without the capped echo, IPv6). Runs as root in a network namespace of
# its own, deleted at the end. Usage: capture-netlink-route.py OUTDIR
import os
import socket
import struct
import subprocess
import sys

NS = "pk-nlcap"
SOL_NETLINK, NETLINK_CAP_ACK, NETLINK_EXT_ACK = 270, 10, 11
RTM_NEWROUTE, RTM_GETROUTE, NLMSG_DONE = 24, 26, 3
SETUP = [
    "link set lo up", "link add d0 type veth peer name d1", "link set d0 up", "link set d1 up",
    "addr add 10.0.0.1/24 dev d0", "addr add fd00::1/64 dev d0 nodad",
    "route add 10.1.2.0/24 via 10.0.0.2 proto 0xb5", "route add 10.9.0.0/24 via 10.0.0.9 proto static",
    "route add blackhole 10.66.0.0/16", "route add fd00:1::/64 via fd00::2 proto 0xb5",
    "route add 10.5.0.0/24 via 10.0.0.5 table 100", "route add default via 10.0.0.254 proto dhcp metric 100",
    "route add 10.6.0.0/24 nexthop via 10.0.0.6 nexthop via 10.0.0.7",
]


def sock(cap):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    s.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
    if cap:
        s.setsockopt(SOL_NETLINK, NETLINK_CAP_ACK, 1)
    s.bind((0, 0))
    return s


def has_done(d):
    off = 0
    while off + 16 <= len(d):
        length, kind = struct.unpack_from("=LH", d, off)
        if kind == NLMSG_DONE or length < 16:
            return True
        off += (length + 3) & ~3
    return False


def capture(out):
    def save(name, data):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)

    for fam, name in ((socket.AF_UNSPEC, "dump-both"), (socket.AF_INET, "dump-v4"), (socket.AF_INET6, "dump-v6")):
        s = sock(True)
        s.send(struct.pack("=LHHLL", 28, RTM_GETROUTE, 0x301, 1000, 0) + struct.pack("=8BI", fam, *[0] * 8))
        for i in range(20):
            d = s.recv(65536)
            save(f"{name}-{i}", d)
            if has_done(d):
                break
    for dst, gw, fam, cap, name, flags in (
            ("10.77.0.0", "192.0.2.1", socket.AF_INET, True, "error-unreachable-capped", 0x505),
            ("10.77.0.0", "192.0.2.1", socket.AF_INET, False, "error-unreachable-echo", 0x505),
            ("10.78.0.0", "10.0.0.2", socket.AF_INET, True, "ack", 0x505),
            ("10.78.0.0", "10.0.0.2", socket.AF_INET, True, "error-exists", 0x605),
            ("fd77::", "2001:db8::1", socket.AF_INET6, True, "error-unreachable-v6", 0x505)):
        size = 4 if fam == socket.AF_INET else 16
        attrs = (struct.pack("=HH", 4 + size, 1) + socket.inet_pton(fam, dst) +
                 struct.pack("=HH", 4 + size, 5) + socket.inet_pton(fam, gw))
        rtm = struct.pack("=8BI", fam, 24 if size == 4 else 64, 0, 0, 254, 0xb5, 0, 1, 0)
        s = sock(cap)
        s.send(struct.pack("=LHHLL", 16 + len(rtm) + len(attrs), RTM_NEWROUTE, flags, 2000, 0) + rtm + attrs)
        save(name, s.recv(65536))


def main():
    out = os.path.abspath(sys.argv[1])
    if len(sys.argv) > 2 and sys.argv[2] == "--inside":
        capture(out)
        return
    subprocess.run(["ip", "netns", "add", NS], check=True)
    try:
        for cmd in SETUP:
            subprocess.run(["ip", "-n", NS, *cmd.split()], check=True)
        subprocess.run(["ip", "netns", "exec", NS, sys.executable, os.path.abspath(__file__), out, "--inside"],
                       check=True, timeout=60)
    finally:
        subprocess.run(["ip", "netns", "del", NS], check=False)


if __name__ == "__main__":
    main()
