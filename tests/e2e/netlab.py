"""A test network of hosts on one machine: a bridge, one network namespace per host with a veth onto it,
addresses from 198.18.42.0/24 (RFC 2544's benchmarking range; not TEST-NET-1: this machine's own eth0 lives on
192.0.2.0/24), no default route, nothing forwarded to the machine's real interfaces. The bridge itself holds
198.18.42.1 so that any packet for the test range from the machine stays on the bridge, never on eth0. Each host gets /etc/netns/<ns>/resolv.conf (and hosts) so processes started with
`ip netns exec` resolve through the test DNS server. Everything is removed in close(), even after a failure."""

import ipaddress
import os
import shutil
import subprocess

BRIDGE_ADDR = "198.18.42.1"
PREFIX = 24


def sh(*argv, check=True):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({p.returncode}): {p.stderr.strip()}")
    return p


def remove_lab(tag):
    """A lab's network namespaces (their veths go with them), their /etc/netns files, and its bridge."""
    out = sh("ip", "netns", "list", check=False).stdout
    for line in out.splitlines():
        ns = line.split()[0] if line.strip() else ""
        if ns.startswith(f"{tag}-"):
            sh("ip", "netns", "del", ns, check=False)
            shutil.rmtree(f"/etc/netns/{ns}", ignore_errors=True)
    sh("ip", "link", "del", f"{tag}br0", check=False)


def interfaces_on(cidr):
    """The machine's interfaces holding an IPv4 address in the network of cidr."""
    out = sh("ip", "-o", "-4", "addr", "show", "to", str(ipaddress.ip_interface(cidr).network)).stdout
    return sorted({line.split()[1] for line in out.splitlines() if line.strip()})


class NetLab:
    def __init__(self, tag="pk", bridge_addr=BRIDGE_ADDR):
        # Short names: interface names are limited to 15 characters. Another /24 of 198.18.0.0/15 (bridge_addr)
        # lets a test run next to the 3-master simulation.
        self.tag = tag
        self.bridge_addr = bridge_addr
        self.bridge = f"{tag}br0"
        self.hosts = {}  # name -> address
        self.created_netns_dirs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def start(self, dns_server=None):
        self.dns_server = dns_server or self.bridge_addr
        self.close_stale()
        # Our test bridge only: frames between the hosts stay L2 and skip the machine's netfilter rules
        # (with br_netfilter loaded, bridged DNS queries were dropped there).
        sh("ip", "link", "add", self.bridge, "type", "bridge", "nf_call_iptables", "0", "nf_call_ip6tables", "0",
           "nf_call_arptables", "0")
        sh("ip", "addr", "add", f"{self.bridge_addr}/{PREFIX}", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")
        return self

    def ns(self, name):
        return f"{self.tag}-{name}"

    def add_host(self, name, addr):
        ns = self.ns(name)
        host_if, peer_if = f"{self.tag}v{name}", f"{self.tag}p{name}"
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", host_if, "type", "veth", "peer", "name", peer_if)
        sh("ip", "link", "set", peer_if, "netns", ns)
        sh("ip", "link", "set", host_if, "master", self.bridge)
        sh("ip", "link", "set", host_if, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", ns, "addr", "add", f"{addr}/{PREFIX}", "dev", peer_if)
        sh("ip", "-n", ns, "link", "set", peer_if, "up")
        d = f"/etc/netns/{ns}"
        os.makedirs(d, exist_ok=True)
        self.created_netns_dirs.append(d)
        with open(f"{d}/resolv.conf", "w") as f:
            # attempts/timeout small: a stopped DNS server must not stall etcd's dials for long.
            f.write(f"nameserver {self.dns_server}\noptions timeout:1 attempts:1\n")
        with open(f"{d}/hosts", "w") as f:
            f.write("127.0.0.1 localhost\n")
        self.hosts[name] = addr
        return ns

    def remove_host(self, name):
        ns = self.ns(name)
        sh("ip", "netns", "del", ns, check=False)
        sh("ip", "link", "del", f"{self.tag}v{name}", check=False)
        shutil.rmtree(f"/etc/netns/{ns}", ignore_errors=True)
        self.hosts.pop(name, None)

    def exec_argv(self, name, argv):
        return ["ip", "netns", "exec", self.ns(name), *argv]

    def close_stale(self):
        """Removes what an earlier, killed run left behind: of this tag, and of any lab of another tag whose bridge
        holds this lab's /24 (a killed run's netns outlives its processes; its bridge would keep the route to the
        range, so the machine's packets for a host of ours would reach the dead lab's host, which refuses them).
        Anything else on the /24 is not ours to remove: an error."""
        remove_lab(self.tag)
        for ifname in interfaces_on(f"{self.bridge_addr}/{PREFIX}"):
            if not ifname.endswith("br0"):
                raise RuntimeError(f"{self.bridge_addr}/{PREFIX} is already on {ifname}, which is not a test "
                                   "network's bridge: a test network cannot share it")
            remove_lab(ifname[:-len("br0")])

    def close(self):
        for name in list(self.hosts):
            self.remove_host(name)
        sh("ip", "link", "del", self.bridge, check=False)
        for d in self.created_netns_dirs:
            shutil.rmtree(d, ignore_errors=True)
