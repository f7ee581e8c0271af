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

/* The SHA-256 of the first len bytes of fd (into body) and of all size bytes (into whole), read once. */
static int hash_file(int fd, uint64_t len, uint64_t size, uint8_t body[static 32], uint8_t whole[static 32],
                     uint8_t trailer[static BACKUP_SNAPSHOT_HASH]) {
        _cleanup_(crypto_sha256_freep) CryptoSha256 *a = NULL, *b = NULL;
        _cleanup_free_ uint8_t *buf = malloc(BACKUP_READ_CHUNK);
        int r;
        if (!buf)
                return -ENOMEM;
        if ((r = crypto_sha256_new(&a)) < 0 || (r = crypto_sha256_new(&b)) < 0)
                return r;
        for (uint64_t off = 0; off < size;) {
                size_t want = size - off < BACKUP_READ_CHUNK ? (size_t)(size - off) : BACKUP_READ_CHUNK;
                ssize_t k = pread(fd, buf, want, (off_t)off);
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -EIO; /* shorter than fstat said: it changed under us */
                size_t in_body =
                    off >= len ? 0 : (size_t)(len - off < (uint64_t)k ? len - off : (uint64_t)k);
                if ((r = crypto_sha256_update(a, buf, in_body)) < 0 ||
                    (r = crypto_sha256_update(b, buf, k)) < 0)
                        return r;
                for (size_t i = in_body; i < (size_t)k; i++)
                        trailer[off + i - len] = buf[i];
                off += (uint64_t)k;
        }
        if ((r = crypto_sha256_final(a, body)) < 0 || (r = crypto_sha256_final(b, whole)) < 0)
                return r;
        return 0;
}

int backup_snapshot_check(int fd, uint64_t *ret_size, char ret_sha256[static BACKUP_SHA256_HEX],
                          char **ret_error) {
        struct stat st;
        uint8_t magic[4], body[32], whole[32], trailer[BACKUP_SNAPSHOT_HASH];
        if (fstat(fd, &st) < 0)
                return -errno;
        uint64_t size = (uint64_t)st.st_size;
        if (!S_ISREG(st.st_mode) || size < BACKUP_SNAPSHOT_MIN)
                return check_fail(ret_error, "shorter than two database pages and its hash");
        if ((size - BACKUP_SNAPSHOT_HASH) % BACKUP_PAGE != 0)
                return check_fail(ret_error, "no SHA-256 trailer (size minus 32 is not a multiple of 512)");
        if (pread(fd, magic, sizeof(magic), BBOLT_MAGIC_OFFSET) != (ssize_t)sizeof(magic))
                return -EIO;
        if (((uint32_t)magic[0] | (uint32_t)magic[1] << 8 | (uint32_t)magic[2] << 16 |
             (uint32_t)magic[3] << 24) != BBOLT_MAGIC)
                return check_fail(ret_error, "not a bbolt database (bad magic)");
        int r = hash_file(fd, size - BACKUP_SNAPSHOT_HASH, size, body, whole, trailer);
        if (r < 0)
                return error_setf(ret_error, r, "reading the snapshot: %s", pk_strerror(r));
        if (!crypto_memeq(body, trailer, BACKUP_SNAPSHOT_HASH))
                return check_fail(ret_error, "its SHA-256 trailer does not match its contents");
        *ret_size = size;
        crypto_hex(whole, sizeof(whole), ret_sha256);
        return 0;
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

static int upload_parts(Store *s, const char *cluster, const char *timestamp, int fd, uint64_t size,
                        unsigned *ret_parts, char **ret_error) {
        _cleanup_free_ uint8_t *buf = malloc(BACKUP_PART_SIZE);
        unsigned part = 0;
        if (!buf)
                return -ENOMEM;
        for (uint64_t off = 0; off < size; part++) {
                size_t want = size - off < BACKUP_PART_SIZE ? (size_t)(size - off) : BACKUP_PART_SIZE;
                ssize_t k = pread(fd, buf, want, (off_t)off);
                if (k != (ssize_t)want)
                        return k < 0 ? -errno : -EIO;
                char name[16];
                snprintf(name, sizeof(name), "part-%05u", part);
                _cleanup_free_ char *key = backup_key(cluster, timestamp, name);
                if (!key)
                        return -ENOMEM;
                int r = store_put(s, key, buf, want, STORE_PRIVATE, ret_error);
                if (r < 0)
                        return r;
                off += want;
        }
        *ret_parts = part;
        return 0;
}

int backup_upload(Store *s, const char *cluster, const char *timestamp, const char *node,
                  const char *upload_id, int fd, char **ret_error) {
        char sha[BACKUP_SHA256_HEX];
        uint64_t size;
        unsigned parts = 0;
        usec_t t;
        int r;

        if (backup_timestamp_parse(timestamp, &t) < 0 || isempty(node) || string_has_cc(node) ||
            strchr(node, ' ') || !upload_id_is_valid(upload_id))
                return error_setf(ret_error, -EINVAL,
                                  "backup: invalid timestamp '%s', node name or upload id",
                                  strna(timestamp));
        r = backup_snapshot_check(fd, &size, sha, ret_error);
        if (r < 0)
                return r;
        if (size / BACKUP_PART_SIZE >= BACKUP_PARTS_MAX)
                return error_setf(ret_error, PK_ETOOBIG,
                                  "backup: a snapshot of %" PRIu64 " bytes is too large", size);
        r = claim(s, cluster, timestamp, node, upload_id, ret_error);
        if (r < 0)
                return r;
        r = upload_parts(s, cluster, timestamp, fd, size, &parts, ret_error);
        if (r < 0)
                return r;
        _cleanup_(json_decrefp) json_t *m =
            json_pack("{s:i, s:s, s:s, s:s, s:I, s:s, s:i, s:i}", "version", 1, "cluster", cluster,
                      "timestamp", timestamp, "node", node, "size", (json_int_t)size, "sha256", sha, "parts",
                      (int)parts, "partSize", (int)BACKUP_PART_SIZE);
        _cleanup_free_ char *text = m ? json_dumps(m, JSON_SORT_KEYS | JSON_INDENT(2)) : NULL;
        _cleanup_free_ char *key = backup_key(cluster, timestamp, BACKUP_MANIFEST);
        if (!text || !key)
                return -ENOMEM;
        return store_put(s, key, text, strlen(text), STORE_PRIVATE, ret_error);
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
