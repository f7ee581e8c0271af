/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Which kubelet holds the node, the bootstrap or the managed one (spec.kubelet.selfHosted;
 * docs/kubelet-handoff.md), and on a master its Node's bootstrap taint. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_kubelet_handoff_master;
extern const PassStep pass_step_kubelet_handoff_worker;
