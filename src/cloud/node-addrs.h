/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* This machine's addresses for the `local` provider when --internal-ip is not given (docs/volumes.md,
 * "Node identity"): the addresses of the machine's own interfaces, never those of container networking
 * (bridges, veth pairs, overlays) that would otherwise end up in the pool record and in DNS. */

#include <stdbool.h>
#include <stddef.h>

/* As many as a pool record holds (pool-meta.c): more is an error, never a truncation. */
#define NODE_ADDRS_MAX 16

typedef struct NodeInterfaceAddr {
        const char *name;    /* interface name */
        unsigned flags;      /* IFF_* */
        int family;          /* AF_INET, AF_INET6, ... */
        const char *address; /* the literal, as inet_ntop() wrote it */
        bool is_bridge;      /* /sys/class/net/<name>/bridge exists */
        bool is_virtual;     /* /sys/class/net/<name> resolves below /sys/devices/virtual/ */
        bool has_lower;      /* it has a parent: /sys/class/net/<name>/lower_* (VLAN, bond, macvlan) */
} NodeInterfaceAddr;

/* Why a is not one of this node's addresses ("loopback", "interface 'docker0' is container
 * networking", ...), or NULL if it is. Pure. */
const char *node_addr_skip_reason(const NodeInterfaceAddr *a);

/* The addresses of l that node_addr_skip_reason() keeps, canonical, unique and sorted. PK_ETOOBIG if
 * there are more than NODE_ADDRS_MAX, -EINVAL if a kept address is not an IP literal. Pure. */
int node_addrs_filter(const NodeInterfaceAddr *l, size_t n, char ***ret);

/* getifaddrs() plus sysfs (sysfs_net: "/sys/class/net" except in tests), then node_addrs_filter(). */
int node_addrs_detect(const char *sysfs_net, char ***ret);
