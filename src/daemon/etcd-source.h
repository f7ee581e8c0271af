/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* How protokube reaches this node's own etcd member (for a backup's snapshot, a restore's health, `etcd
 * backup`): one helper the steps and the CLI share. */

#include "backup/backup-snapshot.h"
#include "spec/spec.h"

/* Where this node's member of e answers at address (NULL: 127.0.0.1): its endpoint, newly allocated, and
 * the client pair to use. */
int etcd_member_source(const ClusterSpec *spec, const EtcdClusterSpec *e, const char *address,
                       char **ret_endpoint, BackupEtcdSource *ret);
