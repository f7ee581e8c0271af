/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Taking a snapshot of one etcd member through its gRPC API: Maintenance.Snapshot over HTTP/2
 * (shared/grpc.h), the stream decoded as it arrives (snapshot-grpc.h) into a file and checked as it
 * passes (docs/etcd-backups.md). */

#include <stdint.h>

#include "backup/backup.h"
#include "basic/time-util.h"

typedef struct BackupEtcdSource {
        const char *endpoint;  /* "https://10.0.0.1:4001" (TLS, ALPN h2) or "http://..." (h2c) */
        const char *ca_file;   /* etcd's server CA; NULL: the system's */
        const char *cert_file; /* client certificate and key; NULL: none */
        const char *key_file;
        usec_t timeout; /* the whole transfer; 0: 10 minutes */
} BackupEtcdSource;

/* Streams the member's snapshot into fd (a new, empty file), checked as it passes with the rules of
 * backup_snapshot_check() (backup_snapshot_sum_update()): the file is not read again. */
int backup_snapshot_fetch(const BackupEtcdSource *src, int fd, uint64_t *ret_size,
                          char ret_sha256[static BACKUP_SHA256_HEX], char **ret_error);

/* Takes a snapshot of src into an unnamed file in tmp_dir (nothing is left of it after a crash) and
 * stores it as the backup timestamp of node, upload upload_id: backup_upload() in steps (backup.h), the
 * slot claimed before the fetch and each whole part stored while the rest streams, the last part and the
 * manifest once the snapshot passed its checks. A failure leaves an incomplete backup (claim and parts, no
 * manifest), as a crash does. */
int backup_take(Store *s, const char *cluster, const char *timestamp, const char *node,
                const char *upload_id, const BackupEtcdSource *src, const char *tmp_dir, uint64_t *ret_size,
                char **ret_error);
