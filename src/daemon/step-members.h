/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A member whose volume lost its data (docs/etcd-members.md): observe each held member's data, marker and,
 * when needed, the other members; decide (etcdapi/member-plan.h); replace or promote in each wave. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_members;
