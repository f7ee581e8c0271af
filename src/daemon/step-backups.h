/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* etcd backups (docs/etcd-backups.md): after the manifests, the slot's backup of each cluster whose member
 * this node holds and leads, the retention, and the newest backup of each into the report. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_backups;

/* Whether a cluster's backups must be listed again (seen: the last listing, NULL: none) in the slot starting
 * at slot, at now_mono: a new slot, or this slot's backup not seen yet and the listing older than
 * PASS_BACKUP_RELIST_USEC. A backup this node takes is listed at once (the caller's). */
bool pass_backup_list_due(const PassBackupSeen *seen, usec_t slot, usec_t now_mono);
