/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A worker's kubelet bootstrap (docs/workers.md): the cluster CA fetched and checked against the node's
 * pin, the kubelet's configuration from spec.kubelet, its bootstrap kubeconfig with the token, its flags
 * for the init system; written under the node's kubelet directory. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_kubelet_boot;
