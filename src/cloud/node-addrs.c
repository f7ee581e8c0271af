/* SPDX-License-Identifier: Apache-2.0 */
#include "cloud/node-addrs.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/in-addr-util.h"
#include "basic/string-util.h"
#include "basic/strv.h"

/* Interfaces that container runtimes, CNI plugins and hypervisors create on a master: their addresses
 * are reachable from this machine only (docker0 is 172.17.0.1 on every Docker host). */
static const char *const container_prefixes[] = {
        "docker", "cni", "flannel", "cali", "veth", "vxlan", "virbr", "br-", "kube-", "tunl", "weave",
};

static bool ipv4_link_local(const char *address) {
        struct in_addr a;
        return inet_pton(AF_INET, address, &a) == 1 && (ntohl(a.s_addr) & 0xffff0000U) == 0xa9fe0000U;
}

const char *node_addr_skip_reason(const NodeInterfaceAddr *a) {
        if (!a->name || !a->address)
                return "no interface name or address";
        /* IPv4 only, as before: an IPv6 address is given with --internal-ip */
        if (a->family != AF_INET)
                return "not IPv4";
        if (!(a->flags & IFF_UP))
                return "interface down";
        if (a->flags & IFF_LOOPBACK)
                return "loopback";
        if (ipv4_link_local(a->address))
                return "link-local (169.254.0.0/16)";
        for (size_t i = 0; i < ELEMENTSOF(container_prefixes); i++)
                if (startswith(a->name, container_prefixes[i]))
                        return "container or overlay network interface (by name)";
        if (a->is_bridge)
                return "bridge";
        /* dummy, wireguard, tun, a veth by another name: no hardware below it. VLANs and bonds are
         * virtual too but sit on a parent, and they carry the machine's own address. */
        if (a->is_virtual && !a->has_lower)
                return "virtual interface without a parent";
        return NULL;
}

int node_addrs_filter(const NodeInterfaceAddr *l, size_t n, char ***ret) {
        _cleanup_strv_free_ char **out = calloc(1, sizeof(char *));
        size_t k = 0;

        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *c = NULL;
                if (node_addr_skip_reason(&l[i]))
                        continue;
                int r = in_addr_literal_parse(l[i].address, &c);
                if (r < 0)
                        return r;
                if (strv_contains(out, c))
                        continue;
                /* bounded: a record holds NODE_ADDRS_MAX; dropping some silently would publish a
                 * partial, arbitrary set in DNS */
                if (k >= NODE_ADDRS_MAX)
                        return PK_ETOOBIG;
                if (strv_push(&out, c) < 0)
                        return -ENOMEM;
                c = NULL;
                k++;
        }
        strv_sort(out);
        *ret = TAKE_PTR(out);
        return 0;
}

static bool sysfs_exists(const char *sysfs_net, const char *ifname, const char *what) {
        _cleanup_free_ char *p = strjoin(sysfs_net, "/", ifname, what);
        return p && access(p, F_OK) >= 0;
}

static bool sysfs_is_virtual(const char *sysfs_net, const char *ifname) {
        _cleanup_free_ char *p = strjoin(sysfs_net, "/", ifname), *real = NULL;
        if (!p || !(real = realpath(p, NULL)))
                return false;
        return strstr(real, "/devices/virtual/") != NULL;
}

static bool sysfs_has_lower(const char *sysfs_net, const char *ifname) {
        _cleanup_free_ char *p = strjoin(sysfs_net, "/", ifname);
        bool found = false;
        DIR *d = p ? opendir(p) : NULL;
        if (!d)
                return false;
        for (struct dirent *de; !found && (de = readdir(d));)
                found = startswith(de->d_name, "lower_") != NULL;
        closedir(d);
        return found;
}

static int describe(const char *sysfs_net, const struct ifaddrs *i, char *buf, NodeInterfaceAddr *ret) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)i->ifa_addr;
        *ret = (NodeInterfaceAddr){ .name = i->ifa_name, .flags = i->ifa_flags, .family = AF_UNSPEC };
        if (!i->ifa_addr || !i->ifa_name || i->ifa_addr->sa_family != AF_INET)
                return 0; /* skipped as "not IPv4" without looking further */
        if (!inet_ntop(AF_INET, &sin->sin_addr, buf, INET_ADDRSTRLEN))
                return -errno;
        ret->family = AF_INET;
        ret->address = buf;
        ret->is_bridge = sysfs_exists(sysfs_net, i->ifa_name, "/bridge");
        ret->is_virtual = sysfs_is_virtual(sysfs_net, i->ifa_name);
        ret->has_lower = ret->is_virtual && sysfs_has_lower(sysfs_net, i->ifa_name);
        return 0;
}

int node_addrs_detect(const char *sysfs_net, char ***ret) {
        struct ifaddrs *ifa = NULL;
        NodeInterfaceAddr *l = NULL;
        char(*bufs)[INET_ADDRSTRLEN] = NULL;
        size_t n = 0, cap = 0;
        int r = 0;

        if (getifaddrs(&ifa) < 0)
                return -errno;
        for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
                cap++;
        l = new0(NodeInterfaceAddr, cap ?: 1);
        bufs = calloc(cap ?: 1, INET_ADDRSTRLEN);
        if (!l || !bufs)
                r = -ENOMEM;
        for (struct ifaddrs *i = ifa; r >= 0 && i; i = i->ifa_next) {
                r = describe(sysfs_net ?: "/sys/class/net", i, bufs[n], &l[n]);
                n++;
        }
        if (r >= 0)
                r = node_addrs_filter(l, n, ret);
        free(bufs);
        free(l);
        freeifaddrs(ifa);
        return r;
}
