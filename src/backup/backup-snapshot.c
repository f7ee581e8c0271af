/* SPDX-License-Identifier: Apache-2.0 */
#include "backup/backup-snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "backup/snapshot-grpc.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/grpc.h"

#define BACKUP_FETCH_TIMEOUT (10ULL * 60ULL * USEC_PER_SEC)

typedef struct FetchSink {
        SnapshotGrpc decoder;
        char *error; /* the decoder's */
} FetchSink;

static int fetch_sink(const void *data, size_t len, void *userdata) {
        FetchSink *f = userdata;
        return snapshot_grpc_feed(&f->decoder, data, len, f->error ? NULL : &f->error);
}

int backup_snapshot_fetch(const BackupEtcdSource *src, int fd, uint64_t *ret_size,
                          char ret_sha256[static BACKUP_SHA256_HEX], char **ret_error) {
        _cleanup_free_ char *err = NULL;
        FetchSink sink = {};
        uint64_t written;
        snapshot_grpc_init(&sink.decoder, fd);
        /* an empty SnapshotRequest: no fields */
        GrpcCall call = { .endpoint = src->endpoint,
                          .method = "/etcdserverpb.Maintenance/Snapshot",
                          .timeout = src->timeout ?: BACKUP_FETCH_TIMEOUT,
                          .ca_file = src->ca_file,
                          .cert_file = src->cert_file,
                          .key_file = src->key_file,
                          .sink = fetch_sink,
                          .userdata = &sink };
        int r = grpc_call(&call, &err);
        if (r < 0 && sink.error)
                r = error_setf(ret_error, r, "%s%s: %s", src->endpoint, call.method, sink.error);
        else if (r < 0)
                r = error_setf(ret_error, r, "%s", strna(err));
        else
                r = snapshot_grpc_finish(&sink.decoder, &written, ret_error);
        free(sink.error);
        if (r < 0)
                return r;
        return backup_snapshot_check(fd, ret_size, ret_sha256, ret_error);
}

int backup_take(Store *s, const char *cluster, const char *timestamp, const char *node,
                const char *upload_id, const BackupEtcdSource *src, const char *tmp_dir, uint64_t *ret_size,
                char **ret_error) {
        /* unnamed: a crash leaves nothing behind */
        int fd = open(tmp_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0)
                return error_setf(ret_error, -errno, "cannot make a temporary file in %s: %m", tmp_dir);
        char sha[BACKUP_SHA256_HEX];
        int r = backup_snapshot_fetch(src, fd, ret_size, sha, ret_error);
        if (r >= 0)
                r = backup_upload(s, cluster, timestamp, node, upload_id, fd, ret_error);
        close(fd);
        return r;
}
