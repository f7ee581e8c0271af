/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A master's kubelet (docs/components.md, "The kubelet"): its configuration file and flags in the node's
 * kubelet directory, from spec.kubelet and the node's facts. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_kubelet_config;
