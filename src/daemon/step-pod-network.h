/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* kubenet (docs/workers.md, "Pod networking"): the node's CNI network on its podCIDR and a route to every
 * other Node's podCIDR. One step in two rows: a master reads the Nodes through its own apiserver with
 * protokube's identity, a worker through a master with its kubelet's. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_pod_network_master;
extern const PassStep pass_step_pod_network_worker;
