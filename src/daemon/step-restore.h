/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A whole cluster's restore from a backup (docs/etcd-restore.md): each held member's next steps. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_restore;
