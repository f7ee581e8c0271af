/* SPDX-License-Identifier: Apache-2.0 */
#include "backup/backup-snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "shared/crypto.h"
#include "shared/http.h"

#define BACKUP_FETCH_TIMEOUT (10ULL * 60ULL * USEC_PER_SEC)

struct BackupStream {
        int fd;
        Buf line;         /* the message being received */
        uint64_t written; /* bytes of database written */
        unsigned messages;
};

int backup_stream_new(int fd, BackupStream **ret) {
        BackupStream *s = new0(BackupStream, 1);
        if (!s)
                return -ENOMEM;
        s->fd = fd;
        buf_init(&s->line, BACKUP_STREAM_LINE_MAX);
        *ret = s;
        return 0;
}

BackupStream *backup_stream_free(BackupStream *s) {
        if (!s)
                return NULL;
        buf_free(&s->line);
        free(s);
        return NULL;
}

/* etcd's error, as the gateway writes it mid-stream ({"error":{"message":...}}) or as a whole answer
 * ({"error":"...","message":"...","code":N}). */
static int stream_error(const json_t *error, const json_t *root, char **ret_error) {
        const char *msg = json_string_value(json_object_get(root, "message"));
        if (!msg && json_is_object(error))
                msg = json_string_value(json_object_get(error, "message"));
        if (!msg)
                msg = json_string_value(error);
        return error_setf(ret_error, -EIO, "etcd refused the snapshot: %s", msg ?: "(no message)");
}

/* A message is {"result":{"header":{...},"remaining_bytes":"N","blob":"<base64>"}}, the blob nearly all of
 * it. jansson would copy and check the blob byte by byte (half the backup's CPU); so when the text holds
 * exactly one "blob":" and a closing quote after it, its characters are cut out: jansson checks the rest
 * with an empty blob in their place, and the blob is decoded from the text itself. That is the same message:
 * the base64 decoder accepts only the alphabet, none of which JSON escapes, so those characters mean the
 * same inside a JSON string as outside. *ret_blob_len 0: nothing cut, the whole text is parsed. */
static int cut_blob(const char *text, size_t len, char **ret_rest, size_t *ret_rest_len,
                    const char **ret_blob, size_t *ret_blob_len) {
        static const char key[] = "\"blob\":\"";
        const char *at = memmem(text, len, key, strlen(key));
        *ret_blob_len = 0;
        if (!at || memmem(at + 1, len - (size_t)(at + 1 - text), "\"blob\"", 6))
                return 0;
        const char *start = at + strlen(key), *end = memchr(start, '"', len - (size_t)(start - text));
        if (!end)
                return 0;
        size_t head = (size_t)(start - text), tail = len - (size_t)(end - text);
        char *rest = malloc(head + tail);
        if (!rest)
                return -ENOMEM;
        memcpy(rest, text, head);
        memcpy(rest + head, end, tail);
        *ret_rest = rest;
        *ret_rest_len = head + tail;
        *ret_blob = start;
        *ret_blob_len = (size_t)(end - start);
        return 0;
}

static int stream_message(BackupStream *s, const char *text, size_t len, char **ret_error) {
        _cleanup_free_ char *rest = NULL;
        const char *cut = NULL;
        size_t rest_len = 0, cut_len = 0;
        if (cut_blob(text, len, &rest, &rest_len, &cut, &cut_len) < 0)
                return -ENOMEM;
        json_error_t jerr;
        _cleanup_(json_decrefp) json_t *root =
            json_loadb(cut_len ? rest : text, cut_len ? rest_len : len, JSON_REJECT_DUPLICATES, &jerr);
        const json_t *error = json_object_get(root, "error");
        if (error)
                return stream_error(error, root, ret_error);
        const json_t *result = json_object_get(root, "result");
        const json_t *blob = json_object_get(result, "blob");
        if (!json_is_object(result) || (blob && !json_is_string(blob)) ||
            (cut_len && (!blob || json_string_length(blob) != 0)))
                return error_setf(ret_error, PK_EMALFORMED, "snapshot stream: message %u is not etcd's (%s)",
                                  s->messages + 1, root ? "no result.blob" : jerr.text);
        s->messages++;
        if (!blob)
                return 0; /* proto3 JSON leaves out an empty blob */
        _cleanup_free_ uint8_t *data = NULL;
        size_t n;
        int r = cut_len ? crypto_base64_decode(cut, cut_len, &data, &n)
                        : crypto_base64_decode(json_string_value(blob), json_string_length(blob), &data, &n);
        if (r < 0)
                return error_setf(ret_error, PK_EMALFORMED,
                                  "snapshot stream: message %u: blob is not base64", s->messages);
        r = loop_write(s->fd, data, n);
        if (r < 0)
                return error_setf(ret_error, r, "writing the snapshot: %s", pk_strerror(r));
        s->written += n;
        return 0;
}

int backup_stream_feed(BackupStream *s, const void *data, size_t len, char **ret_error) {
        const char *p = data, *end = p + len;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                size_t take = nl ? (size_t)(nl - p) : (size_t)(end - p);
                if (buf_add(&s->line, p, take) < 0)
                        return error_setf(ret_error, PK_ETOOBIG,
                                          "snapshot stream: a message exceeds %u bytes",
                                          BACKUP_STREAM_LINE_MAX);
                p += take;
                if (!nl)
                        break;
                p++; /* the newline */
                if (s->line.len > 0) {
                        int r = stream_message(s, (const char *)s->line.data, s->line.len, ret_error);
                        if (r < 0)
                                return r;
                }
                buf_reset(&s->line);
        }
        return 0;
}

int backup_stream_finish(BackupStream *s, uint64_t *ret_written, char **ret_error) {
        if (s->line.len > 0) {
                int r = stream_message(s, (const char *)s->line.data, s->line.len, ret_error);
                if (r < 0)
                        return r;
                buf_reset(&s->line);
        }
        if (s->messages == 0)
                return error_setf(ret_error, PK_EMALFORMED, "snapshot stream: empty");
        *ret_written = s->written;
        return 0;
}

typedef struct FetchSink {
        BackupStream *stream;
        char *error;
        Buf refusal; /* the body of a non-200 answer */
} FetchSink;

static int fetch_sink(long status, const void *data, size_t len, void *userdata) {
        FetchSink *f = userdata;
        if (status != 200)
                return buf_add(&f->refusal, data, len) < 0 ? PK_ETOOBIG : 0;
        return backup_stream_feed(f->stream, data, len, &f->error);
}

int backup_snapshot_fetch(const BackupEtcdSource *src, int fd, uint64_t *ret_size,
                          char ret_sha256[static BACKUP_SHA256_HEX], char **ret_error) {
        _cleanup_(backup_stream_freep) BackupStream *stream = NULL;
        _cleanup_free_ char *url = strprintf("%s/v3/maintenance/snapshot", src->endpoint), *err = NULL;
        FetchSink sink = {};
        HttpResponse resp = {};
        uint64_t written;
        int r;

        if (!url || backup_stream_new(fd, &stream) < 0)
                return -ENOMEM;
        sink.stream = stream;
        buf_init(&sink.refusal, 64U * 1024U);
        HttpRequest req = { .method = "POST",
                            .url = url,
                            .body = "{}",
                            .body_len = 2,
                            .timeout = src->timeout ?: BACKUP_FETCH_TIMEOUT,
                            .ca_file = src->ca_file,
                            .cert_file = src->cert_file,
                            .key_file = src->key_file,
                            .sink = fetch_sink,
                            .sink_userdata = &sink };
        r = http_request(&req, &resp, &err);
        if (r < 0) {
                r = error_setf(ret_error, r, "%s", sink.error ?: strna(err));
                goto finish;
        }
        if (resp.status != 200) {
                r = error_setf(ret_error, -EIO, "%s: etcd answered HTTP %ld: %.*s", url, resp.status,
                               (int)sink.refusal.len,
                               sink.refusal.len ? (const char *)sink.refusal.data : "");
                goto finish;
        }
        r = backup_stream_finish(stream, &written, ret_error);
        if (r < 0)
                goto finish;
        r = backup_snapshot_check(fd, ret_size, ret_sha256, ret_error);
finish:
        http_response_done(&resp);
        buf_free(&sink.refusal);
        free(sink.error);
        return r;
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
