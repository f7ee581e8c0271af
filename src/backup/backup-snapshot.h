/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Taking a snapshot of one etcd member through its v3 JSON gateway: `POST /v3/maintenance/snapshot` streams
 * the database as newline-separated JSON messages {"result":{"blob":"<base64>","remainingBytes":"N"}}, the
 * last blob being the SHA-256 trailer (docs/etcd-backups.md); an error mid-stream comes as {"error":...}.
 * The decoder keeps one message in memory (BACKUP_STREAM_LINE_MAX), so a snapshot of any size streams to a
 * file in bounded memory. */

#include <stddef.h>
#include <stdint.h>

#include "backup/backup.h"
#include "basic/macro.h"
#include "basic/time-util.h"

#define BACKUP_STREAM_LINE_MAX (4U * 1024U * 1024U) /* etcd sends 32 KiB blobs: 44 KB of base64 */

typedef struct BackupStream BackupStream;

/* A decoder writing the blobs to fd at its current offset. */
int backup_stream_new(int fd, BackupStream **ret);
BackupStream *backup_stream_free(BackupStream *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(BackupStream *, backup_stream_free)
/* Feeds bytes of the body as they arrive. PK_EMALFORMED for a message that is not one of the gateway's;
 * -EIO with etcd's message when etcd reports an error in the stream. */
int backup_stream_feed(BackupStream *s, const void *data, size_t len, char **ret_error);
/* The end of the body: a partial last message is decoded too. The bytes written in *ret_written. */
int backup_stream_finish(BackupStream *s, uint64_t *ret_written, char **ret_error);

typedef struct BackupEtcdSource {
        const char *endpoint;  /* "https://10.0.0.1:4001" */
        const char *ca_file;   /* etcd's server CA; NULL: the system's */
        const char *cert_file; /* client certificate and key; NULL: none */
        const char *key_file;
        usec_t timeout; /* the whole transfer; 0: 10 minutes */
} BackupEtcdSource;

/* Streams the member's snapshot into fd (a new, empty file) and checks it with backup_snapshot_check(). */
int backup_snapshot_fetch(const BackupEtcdSource *src, int fd, uint64_t *ret_size,
                          char ret_sha256[static BACKUP_SHA256_HEX], char **ret_error);

/* Takes a snapshot of src into an unnamed file in tmp_dir (nothing is left of it after a crash) and
 * stores it as the backup timestamp of node, upload upload_id (backup_upload(), backup.h). */
int backup_take(Store *s, const char *cluster, const char *timestamp, const char *node,
                const char *upload_id, const BackupEtcdSource *src, const char *tmp_dir, uint64_t *ret_size,
                char **ret_error);
