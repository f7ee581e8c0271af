/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* etcd backups in the state store (docs/etcd-backups.md). A backup is a directory of objects
 *   backups/<cluster>/<timestamp>/claim          "<node> <upload id>": who takes it (put-if-absent: one
 *                                                taker per slot, and one upload per taker)
 *   backups/<cluster>/<timestamp>/part-NNNNN     the snapshot in pieces of BACKUP_PART_SIZE bytes
 *   backups/<cluster>/<timestamp>/manifest.json  size, sha256, parts: written last, so a backup without it
 *                                                is incomplete (its taker died) and is never restored
 * because a store object holds at most STORE_OBJECT_MAX bytes and a snapshot may be gigabytes; the pieces
 * keep memory bounded on both ends and need nothing of the store but get, put and put-if-absent. Every
 * object of a backup is stored private (STORE_PRIVATE): a snapshot holds every Secret of the cluster.
 *
 * The timestamp is the start of the interval's slot in UTC ("20261123T221500Z"), so every master that
 * believes it should take the slot's backup names the same directory and exactly one claim wins, even
 * while etcd's leadership moves between masters.
 *
 * A snapshot is what etcd's Maintenance.Snapshot streams: the bbolt database followed by the SHA-256 of
 * everything before it (32 bytes). backup_snapshot_check() applies the same check etcd applies before a
 * restore (etcdutl: a file whose size modulo 512 is 32 carries the hash, and it must match). */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "shared/crypto.h"
#include "store/store.h"

#define BACKUP_PART_SIZE (8U * 1024U * 1024U)
/* 512 GiB: more than any etcd (its quota stops at 8 GiB), and few enough that a backup's own objects fit in
 * one store listing (100,000 keys) when it is deleted */
#define BACKUP_PARTS_MAX     65536U
#define BACKUP_UPLOAD_ID_LEN 16 /* hex digits of 64 random bits */
#define BACKUP_TIMESTAMP_LEN 16 /* "20261123T221500Z" */
#define BACKUP_SNAPSHOT_HASH 32 /* the SHA-256 trailer */
#define BACKUP_SHA256_HEX    65 /* with its NUL */
#define BACKUP_SNAPSHOT_HEAD 20 /* the first meta page up to the end of bbolt's magic */

typedef enum BackupState {
        BACKUP_INCOMPLETE, /* no manifest: its taker died, or is still uploading */
        BACKUP_COMPLETE,   /* its manifest was read and is valid */
        /* its manifest could not be read (anything but "absent": an I/O error, S3's AccessDenied or 5xx)
         * or is not valid: not known to be incomplete, so never deleted, and no backup older than it is
         * known to be the newest */
        BACKUP_UNREADABLE,
        _BACKUP_STATE_MAX,
        _BACKUP_STATE_INVALID = -EINVAL,
} BackupState;

typedef struct BackupEntry {
        char timestamp[BACKUP_TIMESTAMP_LEN + 1];
        usec_t time; /* the timestamp, in µs since the epoch */
        BackupState state;
        uint64_t size; /* bytes of the snapshot (complete ones) */
        unsigned parts;
        char sha256[BACKUP_SHA256_HEX]; /* of the whole snapshot file, trailer included */
        char *node;          /* the master that took it (complete ones; NULL when the manifest lacks it) */
        int error;           /* unreadable ones: why, as a code */
        char *error_message; /* and in words, naming the store and the manifest's key */
} BackupEntry;

void backup_entries_free(BackupEntry *e, size_t n);

/* "20261123T221500Z" for t (whole seconds, UTC), and back. -EINVAL for anything else. */
int backup_timestamp_format(usec_t t, char ret[static BACKUP_TIMESTAMP_LEN + 1]);
int backup_timestamp_parse(const char *s, usec_t *ret);
/* The start of the slot of length interval that holds t. */
usec_t backup_slot(usec_t t, usec_t interval);

/* Checks a snapshot file as etcd would before restoring it: at least one database page and the trailer,
 * (size - 32) a multiple of 512, the trailer the SHA-256 of the rest. Gives the size and the SHA-256 of the
 * whole file (hex). PK_EMALFORMED with a message saying which check failed. */
int backup_snapshot_check(int fd, uint64_t *ret_size, char ret_sha256[static BACKUP_SHA256_HEX],
                          char **ret_error);

/* The same check on a snapshot as it streams past, read by nobody again: the SHA-256 of all but the last 32
 * bytes (held back, since the end is known only at the end) and of the whole file, in one pass, and the
 * bytes that hold bbolt's magic. */
typedef struct BackupSnapshotSum {
        CryptoSha256 *sha; /* of what went before tail */
        uint64_t size;
        uint8_t head[BACKUP_SNAPSHOT_HEAD];
        uint8_t tail[BACKUP_SNAPSHOT_HASH];
        size_t tail_len;
} BackupSnapshotSum;

int backup_snapshot_sum_init(BackupSnapshotSum *s);
/* The next bytes of the snapshot; -ENOMEM or -EIO (libcrypto). */
int backup_snapshot_sum_update(BackupSnapshotSum *s, const void *data, size_t len);
/* backup_snapshot_check()'s verdict, with its errors, on what was fed. */
int backup_snapshot_sum_finish(BackupSnapshotSum *s, uint64_t *ret_size,
                               char ret_sha256[static BACKUP_SHA256_HEX], char **ret_error);
void backup_snapshot_sum_done(BackupSnapshotSum *s);

/* A new upload id: 64 random bits in hex. */
int backup_upload_id_new(char ret[static BACKUP_UPLOAD_ID_LEN + 1]);

/* Takes the backup timestamp as upload upload_id of node: the claim "<node> <upload_id>" (put-if-absent),
 * the parts, the manifest. A claim that exists is taken up again only when it is this very upload's (the
 * same process retrying after a failed attempt): any other, another master's or another process's on this
 * node (a manual backup in the slot's second, a second daemon), is -EEXIST with its holder named, so two
 * snapshots never mix under one name. The snapshot file is checked first: a bad one is never stored. */
int backup_upload(Store *s, const char *cluster, const char *timestamp, const char *node,
                  const char *upload_id, int fd, char **ret_error);

/* backup_upload() in steps, for a snapshot still being written to fd (appended, never rewritten), so that
 * the store's writes overlap its arrival: _start checks the arguments, _parts stores each whole part fd
 * holds up to available bytes, _finish the rest and the manifest once the snapshot (size bytes, sha256 of
 * the whole file) has passed backup_snapshot_sum_finish(). The slot is claimed (as backup_upload() does)
 * right before the first part is stored: a fetch that fails before a whole part arrived (etcd unreachable,
 * TLS refused) leaves nothing, and a slot that another upload holds is found after one part's fetch. After
 * the claim and until _finish the slot holds a claim and parts and no manifest: an incomplete backup, as
 * after a crash, which this upload's next attempt takes up again and retention removes. The caller frees
 * with backup_upload_done(). */
typedef struct BackupUpload {
        Store *store;
        const char *cluster, *timestamp, *node, *upload_id; /* borrowed */
        int fd;
        bool claimed;
        unsigned parts; /* stored so far */
        uint8_t *buf;   /* one part */
} BackupUpload;

int backup_upload_start(BackupUpload *u, Store *s, const char *cluster, const char *timestamp,
                        const char *node, const char *upload_id, int fd, char **ret_error);
int backup_upload_parts(BackupUpload *u, uint64_t available, char **ret_error);
int backup_upload_finish(BackupUpload *u, uint64_t size, const char sha256[static BACKUP_SHA256_HEX],
                         char **ret_error);
void backup_upload_done(BackupUpload *u);

/* Every backup of the cluster, oldest first: one store listing of the cluster's timestamps (one entry per
 * backup, however many parts each has), then each one's manifest. A backup whose manifest is absent is
 * incomplete; one whose manifest cannot be read or is not valid is unreadable, with the reason. Fails when
 * the store cannot be listed. */
int backup_list(Store *s, const char *cluster, BackupEntry **ret, size_t *ret_n, char **ret_error);

/* The newest complete backup of a listing (oldest first, as backup_list gives it) into *ret, NULL when none
 * is. When a backup newer than it is unreadable, the newest is not known: that backup's error, with a
 * message naming it. */
int backup_newest(const BackupEntry *e, size_t n, const BackupEntry **ret, char **ret_error);

/* Writes the backup's snapshot to fd (at its current offset) and checks it against its manifest and with
 * backup_snapshot_check(). -ENOENT when the backup does not exist or is incomplete. */
int backup_download(Store *s, const char *cluster, const char *timestamp, int fd, char **ret_error);

/* Removes a backup: its manifest first (from then on it is incomplete), then its parts and claim. */
int backup_delete(Store *s, const char *cluster, const char *timestamp, char **ret_error);

typedef struct BackupRetention {
        unsigned keep_last;       /* the newest N complete backups */
        unsigned keep_daily_days; /* and the newest complete backup of each of the last D UTC days */
        usec_t incomplete_grace;  /* an incomplete backup younger than this may still be in progress */
} BackupRetention;

/* Pure: which of the entries (oldest first, as backup_list gives them) to delete at time now. Nothing is
 * deleted that has no complete backup newer than it (the newest complete one and everything after it
 * stay), and nothing at all while any backup is unreadable: that backup's error, with a message naming
 * it. ret_delete gets n flags (caller frees). */
int backup_retention_plan(const BackupEntry *e, size_t n, const BackupRetention *r, usec_t now,
                          bool **ret_delete, char **ret_error);
