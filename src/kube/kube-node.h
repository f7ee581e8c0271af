/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the pods' network needs of the cluster's Nodes (docs/workers.md, "Pod networking"): each Node's
 * name, its pod CIDRs (spec.podCIDRs, else spec.podCIDR: the controller-manager allocates them) and its
 * internal addresses (status.addresses of type InternalIP). A Node is the API's: every value is checked
 * (a prefix that is no network, an address that is no literal is left out, with the Node's name in
 * *warnings), so nothing unchecked reaches a route or a file. Library code: never logs. */

#include <jansson.h>
#include <stddef.h>

#define KUBE_NODES_MAX          5000U /* Nodes of one cluster: Kubernetes' own tested limit */
#define KUBE_NODE_ADDRESSES_MAX 16U

typedef struct KubeNodeNetwork {
        char *name;
        char **pod_cidrs;    /* canonical prefixes as given, checked; may be empty (not allocated yet) */
        char **internal_ips; /* checked literals, in the Node's order */
} KubeNodeNetwork;

void kube_node_networks_free(KubeNodeNetwork *l, size_t n);

/* From a NodeList (kube_list()'s object). Nodes without a name are skipped; more than KUBE_NODES_MAX is
 * PK_ETOOBIG. *ret_warnings (caller frees; may be NULL): "Node w1: podCIDR 'x' is not a network prefix". */
int kube_node_networks(const json_t *list, KubeNodeNetwork **ret, size_t *ret_n, char ***ret_warnings);
