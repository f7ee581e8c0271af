/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The managed kubelet's DaemonSet rolled back when a template does not roll out within
 * spec.kubelet.rolloutDeadline (docs/kubelet-handoff.md). */

#include "daemon/pass-types.h"

extern const PassStep pass_step_kubelet_rollout;
