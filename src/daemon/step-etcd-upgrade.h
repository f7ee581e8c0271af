/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* An etcd cluster's version change (docs/etcd-versions.md): observe each held member's manifest and, while
 * its version may change, the cluster; decide (etcdapi/upgrade-plan.h); hold a member at the image it runs
 * until its turn, take the backup first, the lock, the member's manifest at the wanted version, and the
 * explicit downgrade through a restore of the pre-upgrade backup. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_etcd_upgrade;
