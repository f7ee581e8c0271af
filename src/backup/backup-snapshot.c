/* SPDX-License-Identifier: Apache-2.0 */
#include "backup/backup-snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "backup/snapshot-grpc.h"
#include "basic/errors.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/grpc.h"

#define BACKUP_FETCH_TIMEOUT (10ULL * 60ULL * USEC_PER_SEC)

typedef struct FetchSink {
        SnapshotGrpc decoder;
        BackupSnapshotSum sum;
        BackupUpload *upload; /* NULL: fetched only */
        char *error;          /* the decoder's */
        bool upload_failed;
        char *upload_error;
} FetchSink;

static int sum_blob(const void *data, size_t len, void *userdata) {
        FetchSink *f = userdata;
        return backup_snapshot_sum_update(&f->sum, data, len);
}

static int fetch_sink(const void *data, size_t len, void *userdata) {
        FetchSink *f = userdata;
        int r = snapshot_grpc_feed(&f->decoder, data, len, f->error ? NULL : &f->error);
        if (r < 0 || !f->upload)
                return r;
        /* each whole part goes to the store as soon as the file holds it (still in the page cache), while
         * etcd goes on sending into the windows and the socket's buffer */
        r = backup_upload_parts(f->upload, f->decoder.written, &f->upload_error);
        f->upload_failed = r < 0;
        return r;
}

/* Streams the snapshot into fd, checked as it passes; with upload, its whole parts stored as they come. */
static int fetch(const BackupEtcdSource *src, int fd, BackupUpload *upload, uint64_t *ret_size,
                 char ret_sha256[static BACKUP_SHA256_HEX], char **ret_error) {
        _cleanup_free_ char *err = NULL;
        FetchSink sink = { .upload = upload };
        uint64_t written;
        int r = backup_snapshot_sum_init(&sink.sum);
        if (r < 0)
                return r;
        snapshot_grpc_init(&sink.decoder, fd);
        sink.decoder.on_blob = sum_blob;
        sink.decoder.userdata = &sink;
        /* an empty SnapshotRequest: no fields */
        GrpcCall call = { .endpoint = src->endpoint,
                          .method = "/etcdserverpb.Maintenance/Snapshot",
                          .timeout = src->timeout ?: BACKUP_FETCH_TIMEOUT,
                          .ca_file = src->ca_file,
                          .cert_file = src->cert_file,
                          .key_file = src->key_file,
                          .sink = fetch_sink,
                          .userdata = &sink };
        r = grpc_call(&call, &err);
        if (r < 0 && sink.upload_failed) /* the store's own words */
                r = error_setf(ret_error, r, "%s", sink.upload_error ?: pk_strerror(r));
        else if (r < 0 && sink.error)
                r = error_setf(ret_error, r, "%s%s: %s", src->endpoint, call.method, sink.error);
        else if (r < 0)
                r = error_setf(ret_error, r, "%s", strna(err));
        else
                r = snapshot_grpc_finish(&sink.decoder, &written, ret_error);
        /* backup_snapshot_check()'s rules, on what passed: the file is not read again */
        if (r >= 0)
                r = backup_snapshot_sum_finish(&sink.sum, ret_size, ret_sha256, ret_error);
        free(sink.error);
        free(sink.upload_error);
        backup_snapshot_sum_done(&sink.sum);
        return r;
}

int backup_snapshot_fetch(const BackupEtcdSource *src, int fd, uint64_t *ret_size,
                          char ret_sha256[static BACKUP_SHA256_HEX], char **ret_error) {
        return fetch(src, fd, NULL, ret_size, ret_sha256, ret_error);
}

int backup_take(Store *s, const char *cluster, const char *timestamp, const char *node,
                const char *upload_id, const BackupEtcdSource *src, const char *tmp_dir, uint64_t *ret_size,
                char **ret_error) {
        _cleanup_(backup_upload_done) BackupUpload u = {};
        char sha[BACKUP_SHA256_HEX];
        uint64_t size;
        /* unnamed: a crash leaves nothing behind */
        _cleanup_close_ int fd = open(tmp_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0)
                return error_setf(ret_error, -errno, "cannot make a temporary file in %s: %m", tmp_dir);
        /* the parts are stored while the snapshot streams, the slot claimed at the first of them
         * (backup.h): a snapshot that fails after that (the stream, a check) leaves the claim and the parts
         * so far, never a manifest: an incomplete backup, as after a crash, which this upload's next
         * attempt takes up again and retention removes. */
        int r = backup_upload_start(&u, s, cluster, timestamp, node, upload_id, fd, ret_error);
        if (r >= 0)
                r = fetch(src, fd, &u, &size, sha, ret_error);
        if (r >= 0)
                r = backup_upload_finish(&u, size, sha, ret_error);
        if (r >= 0)
                *ret_size = size;
        return r;
}
