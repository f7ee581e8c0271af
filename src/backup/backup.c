/* SPDX-License-Identifier: Apache-2.0 */
#include "backup/backup.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "shared/crypto.h"

#define BACKUP_PAGE         512U
#define BACKUP_READ_CHUNK   (1024U * 1024U)
#define BACKUP_MANIFEST     "manifest.json"
#define BACKUP_CLAIM        "claim"
#define BACKUP_MANIFEST_MAX (64U * 1024U)
#define BBOLT_MAGIC         0xED0CDAEDU
#define BBOLT_MAGIC_OFFSET  16 /* after the page header: id u64, flags u16, count u16, overflow u32 */
#define BACKUP_SNAPSHOT_MIN (2U * 4096U + BACKUP_SNAPSHOT_HASH) /* bbolt's two meta pages at least */

void backup_entries_free(BackupEntry *e, size_t n) {
        for (size_t i = 0; e && i < n; i++) {
                free(e[i].node);
                free(e[i].error_message);
        }
        free(e);
}

int backup_timestamp_format(usec_t t, char ret[static BACKUP_TIMESTAMP_LEN + 1]) {
        time_t s = (time_t)(t / USEC_PER_SEC);
        struct tm tm;
        if (!gmtime_r(&s, &tm) ||
            strftime(ret, BACKUP_TIMESTAMP_LEN + 1, "%Y%m%dT%H%M%SZ", &tm) != BACKUP_TIMESTAMP_LEN)
                return -EINVAL;
        return 0;
}

int backup_timestamp_parse(const char *s, usec_t *ret) {
        static const char shape[] = "ddddddddTddddddZ";
        if (!s || strlen(s) != BACKUP_TIMESTAMP_LEN)
                return -EINVAL;
        for (size_t i = 0; i < BACKUP_TIMESTAMP_LEN; i++)
                if (shape[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != shape[i])
                        return -EINVAL;
        struct tm tm = {};
        if (!strptime(s, "%Y%m%dT%H%M%SZ", &tm))
                return -EINVAL;
        time_t t = timegm(&tm);
        char back[BACKUP_TIMESTAMP_LEN + 1];
        /* timegm normalises 20261331: a date that does not come back the same is not a date */
        if (t < 0 || backup_timestamp_format((usec_t)t * USEC_PER_SEC, back) < 0 || !streq(back, s))
                return -EINVAL;
        *ret = (usec_t)t * USEC_PER_SEC;
        return 0;
}

usec_t backup_slot(usec_t t, usec_t interval) {
        return interval ? t - t % interval : t;
}

static int check_fail(char **ret_error, const char *what) {
        return error_setf(ret_error, PK_EMALFORMED, "not a valid etcd snapshot: %s", what);
}

int backup_snapshot_sum_init(BackupSnapshotSum *s) {
        *s = (BackupSnapshotSum){};
        return crypto_sha256_new(&s->sha);
}

void backup_snapshot_sum_done(BackupSnapshotSum *s) {
        s->sha = crypto_sha256_free(s->sha);
}

int backup_snapshot_sum_update(BackupSnapshotSum *s, const void *data, size_t len) {
        const uint8_t *p = data;
        if (s->size < BACKUP_SNAPSHOT_HEAD)
                memcpy(s->head + s->size, p, MIN(len, BACKUP_SNAPSHOT_HEAD - (size_t)s->size));
        s->size += len;
        if (s->tail_len + len <= BACKUP_SNAPSHOT_HASH) {
                memcpy(s->tail + s->tail_len, p, len);
                s->tail_len += len;
                return 0;
        }
        /* all but the last 32 bytes of tail + data are hashed; those 32 become the new tail */
        size_t out = s->tail_len + len - BACKUP_SNAPSHOT_HASH, from_tail = MIN(out, s->tail_len);
        int r = crypto_sha256_update(s->sha, s->tail, from_tail);
        if (r < 0 || (r = crypto_sha256_update(s->sha, p, out - from_tail)) < 0)
                return r;
        memmove(s->tail, s->tail + from_tail, s->tail_len - from_tail);
        memcpy(s->tail + s->tail_len - from_tail, p + out - from_tail, len - (out - from_tail));
        s->tail_len = BACKUP_SNAPSHOT_HASH;
        return 0;
}

/* The shape etcd's restore wants, known before any hash: checked first, so that a file that is no
 * snapshot is said to be so in these words rather than as a mismatched trailer. */
static int check_shape(uint64_t size, const uint8_t head[static BACKUP_SNAPSHOT_HEAD], char **ret_error) {
        const uint8_t *m = head + BBOLT_MAGIC_OFFSET;
        if (size < BACKUP_SNAPSHOT_MIN)
                return check_fail(ret_error, "shorter than two database pages and its hash");
        if ((size - BACKUP_SNAPSHOT_HASH) % BACKUP_PAGE != 0)
                return check_fail(ret_error, "no SHA-256 trailer (size minus 32 is not a multiple of 512)");
        if (((uint32_t)m[0] | (uint32_t)m[1] << 8 | (uint32_t)m[2] << 16 | (uint32_t)m[3] << 24) !=
            BBOLT_MAGIC)
                return check_fail(ret_error, "not a bbolt database (bad magic)");
        return 0;
}

int backup_snapshot_sum_finish(BackupSnapshotSum *s, uint64_t *ret_size,
                               char ret_sha256[static BACKUP_SHA256_HEX], char **ret_error) {
        _cleanup_(crypto_sha256_freep) CryptoSha256 *body = NULL;
        uint8_t body_sha[32], whole[32];
        int r = check_shape(s->size, s->head, ret_error);
        if (r < 0)
                return r;
        /* the body's digest from a copy; the original goes on over the trailer for the whole file's */
        if ((r = crypto_sha256_dup(s->sha, &body)) < 0 || (r = crypto_sha256_final(body, body_sha)) < 0 ||
            (r = crypto_sha256_update(s->sha, s->tail, s->tail_len)) < 0 ||
            (r = crypto_sha256_final(s->sha, whole)) < 0)
                return error_setf(ret_error, r, "hashing the snapshot: %s", pk_strerror(r));
        if (!crypto_memeq(body_sha, s->tail, BACKUP_SNAPSHOT_HASH))
                return check_fail(ret_error, "its SHA-256 trailer does not match its contents");
        *ret_size = s->size;
        crypto_hex(whole, sizeof(whole), ret_sha256);
        return 0;
}

/* Feeds size bytes of fd to s. */
static int sum_file(BackupSnapshotSum *s, int fd, uint64_t size) {
        _cleanup_free_ uint8_t *buf = malloc(BACKUP_READ_CHUNK);
        int r;
        if (!buf)
                return -ENOMEM;
        for (uint64_t off = 0; off < size;) {
                size_t want = (size_t)MIN(size - off, (uint64_t)BACKUP_READ_CHUNK);
                ssize_t k = pread(fd, buf, want, (off_t)off);
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -EIO; /* shorter than fstat said: it changed under us */
                if ((r = backup_snapshot_sum_update(s, buf, (size_t)k)) < 0)
                        return r;
                off += (uint64_t)k;
        }
        return 0;
}

int backup_snapshot_check(int fd, uint64_t *ret_size, char ret_sha256[static BACKUP_SHA256_HEX],
                          char **ret_error) {
        _cleanup_(backup_snapshot_sum_done) BackupSnapshotSum sum = {};
        uint8_t head[BACKUP_SNAPSHOT_HEAD] = {};
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return check_fail(ret_error, "shorter than two database pages and its hash");
        /* a file of the wrong size or without the magic is not read through */
        if ((uint64_t)st.st_size >= BACKUP_SNAPSHOT_HEAD &&
            pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head))
                return -EIO;
        int r = check_shape((uint64_t)st.st_size, head, ret_error);
        if (r < 0)
                return r;
        if ((r = backup_snapshot_sum_init(&sum)) < 0 || (r = sum_file(&sum, fd, (uint64_t)st.st_size)) < 0)
                return error_setf(ret_error, r, "reading the snapshot: %s", pk_strerror(r));
        return backup_snapshot_sum_finish(&sum, ret_size, ret_sha256, ret_error);
}

static char *backup_key(const char *cluster, const char *timestamp, const char *name) {
        char *k = strprintf("backups/%s/%s/%s", cluster, timestamp, name);
        if (k && !store_key_valid(k)) {
                free(k);
                return NULL;
        }
        return k;
}

int backup_upload_id_new(char ret[static BACKUP_UPLOAD_ID_LEN + 1]) {
        uint64_t rnd;
        if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
                return -errno;
        snprintf(ret, BACKUP_UPLOAD_ID_LEN + 1, "%016" PRIx64, rnd);
        return 0;
}

static bool upload_id_is_valid(const char *id) {
        return id && strlen(id) == BACKUP_UPLOAD_ID_LEN &&
               strspn(id, "0123456789abcdef") == BACKUP_UPLOAD_ID_LEN;
}

/* The claim names the node and the upload: the node alone would let two uploads of one node (the daemon's
 * and a manual one in the slot's first second, or two daemons) each take the other's claim for its own and
 * write their parts under one manifest. */
static int claim(Store *s, const char *cluster, const char *timestamp, const char *node,
                 const char *upload_id, char **ret_error) {
        _cleanup_free_ char *key = backup_key(cluster, timestamp, BACKUP_CLAIM), *holder = NULL;
        _cleanup_free_ char *mine = strjoin(node, " ", upload_id), *err = NULL;
        size_t len;
        if (!key)
                return error_setf(ret_error, -EINVAL, "backup: invalid cluster '%s' or timestamp '%s'",
                                  cluster, timestamp);
        if (!mine)
                return -ENOMEM;
        int r = store_put_if_absent(s, key, mine, strlen(mine), STORE_PRIVATE, &err);
        if (r < 0 && r != -EEXIST)
                return error_setf(ret_error, r, "%s", strna(err));
        if (r >= 0)
                return 0;
        r = store_get(s, key, &holder, &len, NULL);
        if (r >= 0 && len == strlen(mine) && streq(holder, mine))
                return 0; /* this upload's own claim: its earlier attempt failed, this one goes on */
        if (r >= 0)
                holder[strcspn(holder, " ")] = 0; /* the node; an older claim is the node alone */
        bool named = r >= 0 && !isempty(holder) && !string_has_cc(holder);
        return error_setf(ret_error, -EEXIST, "backup %s/%s is taken by %s%s", cluster, timestamp,
                          named ? holder : "another master",
                          named && streq(holder, node) ? " (another upload from this node)" : "");
}

static int too_big(uint64_t size, char **ret_error) {
        if (size / BACKUP_PART_SIZE < BACKUP_PARTS_MAX)
                return 0;
        return error_setf(ret_error, PK_ETOOBIG, "backup: a snapshot of %" PRIu64 " bytes is too large",
                          size);
}

static bool upload_args_valid(const char *timestamp, const char *node, const char *upload_id) {
        usec_t t;
        return backup_timestamp_parse(timestamp, &t) >= 0 && !isempty(node) && !string_has_cc(node) &&
               !strchr(node, ' ') && upload_id_is_valid(upload_id);
}

static int args_fail(const char *timestamp, char **ret_error) {
        return error_setf(ret_error, -EINVAL, "backup: invalid timestamp '%s', node name or upload id",
                          strna(timestamp));
}

int backup_upload_start(BackupUpload *u, Store *s, const char *cluster, const char *timestamp,
                        const char *node, const char *upload_id, int fd, char **ret_error) {
        *u = (BackupUpload){ .store = s,
                             .cluster = cluster,
                             .timestamp = timestamp,
                             .node = node,
                             .upload_id = upload_id,
                             .fd = fd };
        if (!upload_args_valid(timestamp, node, upload_id))
                return args_fail(timestamp, ret_error);
        if (!(u->buf = malloc(BACKUP_PART_SIZE)))
                return -ENOMEM;
        return 0;
}

void backup_upload_done(BackupUpload *u) {
        free(u->buf);
        u->buf = NULL;
}

/* Part u->parts, len bytes, from fd (the page cache, when the snapshot was just written). */
static int upload_part(BackupUpload *u, size_t len, char **ret_error) {
        char name[16];
        if (!u->claimed) {
                int r = claim(u->store, u->cluster, u->timestamp, u->node, u->upload_id, ret_error);
                if (r < 0)
                        return r;
                u->claimed = true;
        }
        ssize_t k = pread(u->fd, u->buf, len, (off_t)u->parts * BACKUP_PART_SIZE);
        if (k != (ssize_t)len) {
                int r = k < 0 ? -errno : -EIO; /* -EIO: shorter than written, it changed under us */
                return error_setf(ret_error, r, "reading the snapshot: %s", pk_strerror(r));
        }
        snprintf(name, sizeof(name), "part-%05u", u->parts);
        _cleanup_free_ char *key = backup_key(u->cluster, u->timestamp, name);
        if (!key)
                return -ENOMEM;
        int r = store_put(u->store, key, u->buf, len, STORE_PRIVATE, ret_error);
        if (r < 0)
                return r;
        u->parts++;
        return 0;
}

int backup_upload_parts(BackupUpload *u, uint64_t available, char **ret_error) {
        int r = too_big(available, ret_error);
        while (r >= 0 && available / BACKUP_PART_SIZE > u->parts)
                r = upload_part(u, BACKUP_PART_SIZE, ret_error);
        return r;
}

int backup_upload_finish(BackupUpload *u, uint64_t size, const char sha256[static BACKUP_SHA256_HEX],
                         char **ret_error) {
        int r = backup_upload_parts(u, size, ret_error);
        if (r >= 0 && size % BACKUP_PART_SIZE > 0)
                r = upload_part(u, size % BACKUP_PART_SIZE, ret_error);
        if (r < 0)
                return r;
        _cleanup_(json_decrefp) json_t *m =
            json_pack("{s:i, s:s, s:s, s:s, s:I, s:s, s:i, s:i}", "version", 1, "cluster", u->cluster,
                      "timestamp", u->timestamp, "node", u->node, "size", (json_int_t)size, "sha256", sha256,
                      "parts", (int)u->parts, "partSize", (int)BACKUP_PART_SIZE);
        _cleanup_free_ char *text = m ? json_dumps(m, JSON_SORT_KEYS | JSON_INDENT(2)) : NULL;
        _cleanup_free_ char *key = backup_key(u->cluster, u->timestamp, BACKUP_MANIFEST);
        if (!text || !key)
                return -ENOMEM;
        /* the manifest is what makes a backup: nothing that failed a check gets here */
        return store_put(u->store, key, text, strlen(text), STORE_PRIVATE, ret_error);
}

int backup_upload(Store *s, const char *cluster, const char *timestamp, const char *node,
                  const char *upload_id, int fd, char **ret_error) {
        _cleanup_(backup_upload_done) BackupUpload u = {};
        char sha[BACKUP_SHA256_HEX];
        uint64_t size;
        if (!upload_args_valid(timestamp, node, upload_id))
                return args_fail(timestamp, ret_error);
        /* checked before anything is stored: a bad file never reaches the store */
        int r = backup_snapshot_check(fd, &size, sha, ret_error);
        if (r >= 0)
                r = too_big(size, ret_error);
        if (r >= 0)
                r = backup_upload_start(&u, s, cluster, timestamp, node, upload_id, fd, ret_error);
        if (r >= 0)
                r = backup_upload_finish(&u, size, sha, ret_error);
        return r;
}

/* The manifest of one backup into e; -ENOENT when absent, PK_EMALFORMED when not valid, the store's error
 * when it cannot be read. */
static int read_manifest(Store *s, const char *cluster, BackupEntry *e, char **ret_error) {
        _cleanup_free_ char *key = backup_key(cluster, e->timestamp, BACKUP_MANIFEST), *text = NULL;
        size_t len;
        if (!key)
                return -ENOMEM;
        int r = store_get(s, key, &text, &len, ret_error);
        if (r < 0)
                return r;
        json_error_t jerr;
        _cleanup_(json_decrefp) json_t *m = json_loadb(text, len, 0, &jerr);
        json_int_t size = -1;
        int parts = -1;
        const char *sha = NULL, *node = NULL, *ts = NULL;
        if (!m ||
            json_unpack(m, "{s:I, s:i, s:s, s:s, s?s}", "size", &size, "parts", &parts, "sha256", &sha,
                        "timestamp", &ts, "node", &node) < 0 ||
            size < 0 || parts < 0 || (unsigned)parts > BACKUP_PARTS_MAX || strlen(sha) != 64 ||
            !streq(ts, e->timestamp) ||
            (uint64_t)parts != ((uint64_t)size + BACKUP_PART_SIZE - 1) / BACKUP_PART_SIZE)
                return error_setf(ret_error, PK_EMALFORMED, "backup %s/%s: %s: not a valid manifest",
                                  cluster, e->timestamp, key);
        e->size = (uint64_t)size;
        e->parts = (unsigned)parts;
        memcpy(e->sha256, sha, BACKUP_SHA256_HEX);
        if (node && !(e->node = strdup(node)))
                return -ENOMEM;
        e->state = BACKUP_COMPLETE;
        return 0;
}

/* The timestamps under backups/<cluster>/, sorted (oldest first): one entry per backup from the store,
 * whatever it holds, so that the listing never grows with the parts. */
static int list_timestamps(Store *s, const char *cluster, char ***ret, char **ret_error) {
        _cleanup_free_ char *prefix = strprintf("backups/%s/", cluster);
        _cleanup_strv_free_ char **names = NULL, **out = NULL;
        if (!prefix)
                return -ENOMEM;
        int r = store_list_dirs(s, prefix, &names, ret_error);
        if (r < 0)
                return r;
        size_t n = 0;
        if (!(out = new0(char *, strv_length(names) + 1)))
                return -ENOMEM;
        STRV_FOREACH (name, names) {
                usec_t t;
                if (backup_timestamp_parse(*name, &t) < 0)
                        continue; /* not ours: left alone */
                if (!(out[n++] = strdup(*name)))
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

int backup_list(Store *s, const char *cluster, BackupEntry **ret, size_t *ret_n, char **ret_error) {
        _cleanup_strv_free_ char **stamps = NULL;
        int r = list_timestamps(s, cluster, &stamps, ret_error);
        if (r < 0)
                return r;
        size_t n = strv_length(stamps);
        BackupEntry *e = new0(BackupEntry, n);
        if (!e)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                memcpy(e[i].timestamp, stamps[i], BACKUP_TIMESTAMP_LEN + 1);
                (void)backup_timestamp_parse(stamps[i], &e[i].time);
                char *err = NULL;
                r = read_manifest(s, cluster, &e[i], &err);
                if (r == -ENOMEM) {
                        free(err);
                        backup_entries_free(e, n);
                        return r;
                }
                /* only "absent" means its taker never finished (the entry stays incomplete): anything else
                 * may be a whole backup that cannot be read just now, never to be taken for an incomplete
                 * one */
                if (r < 0 && r != -ENOENT) {
                        e[i].state = BACKUP_UNREADABLE;
                        e[i].error = r;
                        e[i].error_message = err ? TAKE_PTR(err) : strdup(pk_strerror(r));
                }
                free(err);
        }
        *ret = e;
        *ret_n = n;
        return 0;
}

int backup_newest(const BackupEntry *e, size_t n, const BackupEntry **ret, char **ret_error) {
        for (size_t i = n; i > 0; i--) {
                const BackupEntry *b = &e[i - 1];
                if (b->state == BACKUP_UNREADABLE)
                        return error_setf(ret_error, b->error,
                                          "backup %s cannot be read, so the newest complete backup is not "
                                          "known: %s",
                                          b->timestamp, strna(b->error_message));
                if (b->state == BACKUP_COMPLETE) {
                        *ret = b;
                        return 0;
                }
        }
        *ret = NULL;
        return 0;
}

int backup_download(Store *s, const char *cluster, const char *timestamp, int fd, char **ret_error) {
        BackupEntry e = {};
        _cleanup_(crypto_sha256_freep) CryptoSha256 *h = NULL;
        uint8_t digest[32];
        char hex[BACKUP_SHA256_HEX], check_hex[BACKUP_SHA256_HEX];
        uint64_t written = 0, check_size;
        int r;

        if (!timestamp || strlen(timestamp) != BACKUP_TIMESTAMP_LEN)
                return error_setf(ret_error, -EINVAL, "backup: invalid timestamp '%s'", strna(timestamp));
        memcpy(e.timestamp, timestamp, BACKUP_TIMESTAMP_LEN + 1);
        r = read_manifest(s, cluster, &e, ret_error);
        free(e.node);
        if (r < 0)
                return r;
        if ((r = crypto_sha256_new(&h)) < 0)
                return r;
        for (unsigned p = 0; p < e.parts; p++) {
                char name[16];
                snprintf(name, sizeof(name), "part-%05u", p);
                _cleanup_free_ char *key = backup_key(cluster, timestamp, name), *data = NULL;
                size_t len;
                if (!key)
                        return -ENOMEM;
                if ((r = store_get(s, key, &data, &len, ret_error)) < 0)
                        return r;
                if ((r = crypto_sha256_update(h, data, len)) < 0 || (r = loop_write(fd, data, len)) < 0)
                        return r;
                written += len;
        }
        if ((r = crypto_sha256_final(h, digest)) < 0)
                return r;
        crypto_hex(digest, sizeof(digest), hex);
        if (written != e.size || !streq(hex, e.sha256))
                return error_setf(ret_error, PK_EMALFORMED,
                                  "backup %s/%s: its parts do not match its manifest (%" PRIu64
                                  " bytes, sha256 %s; the manifest says %" PRIu64 ", %s)",
                                  cluster, timestamp, written, hex, e.size, e.sha256);
        return backup_snapshot_check(fd, &check_size, check_hex, ret_error);
}

int backup_delete(Store *s, const char *cluster, const char *timestamp, char **ret_error) {
        _cleanup_free_ char *manifest = backup_key(cluster, timestamp, BACKUP_MANIFEST);
        _cleanup_free_ char *prefix = strprintf("backups/%s/%s/", cluster, timestamp);
        _cleanup_strv_free_ char **keys = NULL;
        if (!manifest || !prefix)
                return -EINVAL;
        int r = store_delete(s, manifest, ret_error);
        if (r < 0)
                return r;
        if ((r = store_list(s, prefix, &keys, ret_error)) < 0)
                return r;
        /* the claim sorts before the parts: delete it last, so the slot stays taken until the end */
        for (size_t i = strv_length(keys); i > 0; i--)
                if ((r = store_delete(s, keys[i - 1], ret_error)) < 0)
                        return r;
        return 0;
}

int backup_retention_plan(const BackupEntry *e, size_t n, const BackupRetention *r, usec_t now,
                          bool **ret_delete, char **ret_error) {
        const usec_t day = 86400ULL * USEC_PER_SEC;
        size_t newest = n; /* the newest complete one: it and everything after it stay */
        for (size_t i = 0; i < n; i++) {
                if (e[i].state == BACKUP_UNREADABLE)
                        return error_setf(ret_error, e[i].error,
                                          "backup %s cannot be read, so no backup is deleted: %s",
                                          e[i].timestamp, strna(e[i].error_message));
                if (e[i].state == BACKUP_COMPLETE)
                        newest = i;
        }
        bool *del = new0(bool, n);
        if (!del)
                return -ENOMEM;
        unsigned kept_last = 0;
        usec_t last_day_kept = USEC_INFINITY;
        /* newest first: the first complete ones are the last N; the first of each day is that day's */
        for (size_t i = newest < n ? newest + 1 : 0; i > 0; i--) {
                const BackupEntry *b = &e[i - 1];
                if (b->state == BACKUP_INCOMPLETE) {
                        del[i - 1] = now > b->time && now - b->time > r->incomplete_grace;
                        continue;
                }
                usec_t d = b->time / day;
                bool daily = d != last_day_kept && now / day >= d && now / day - d < r->keep_daily_days;
                bool keep = kept_last < r->keep_last || kept_last == 0 || daily;
                if (keep)
                        last_day_kept = d; /* that day has its backup: older ones of it are not daily */
                kept_last++;
                del[i - 1] = !keep;
        }
        *ret_delete = del;
        return 0;
}
