/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A worker's kube-proxy (docs/workers.md): the static pod from spec.kubeProxy with the node's kubelet
 * kubeconfig and name, in the node's manifest directory, once the kubelet has joined. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_node_proxy;
