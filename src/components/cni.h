/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pods' network of a node in kubenet mode (spec.networking.provider: kubenet; docs/workers.md, "Pod
 * networking"): one CNI network of the standard plugins (Debian's containernetworking-plugins), a bridge
 * with the node's first pod address as the pods' gateway, host-local addresses from the node's podCIDR (the
 * controller-manager's --allocate-node-cidrs gives each Node one), and portmap for hostPort. Pods of other
 * nodes are reached through the routes protokube keeps (each node's podCIDR via its internal address). */

#include "spec/spec.h"

/* The file's name in spec.networking.cniConfDir: before the runtime's own examples in name order, so the
 * runtime takes it (containerd and CRI-O use the first network by name). */
#define CNI_KUBENET_CONF_NAME "10-protokube-kubenet.conflist"
#define CNI_KUBENET_NETWORK   "protokube-kubenet"

/* The conflist (JSON, keys sorted: the same input gives the same bytes) for the node whose Node has
 * pod_cidr. -EINVAL with *ret_error naming the value when pod_cidr is not a network prefix (it comes from
 * the API). Caller frees. */
int cni_kubenet_conflist(const ClusterSpec *spec, const char *pod_cidr, char **ret, char **ret_error);
