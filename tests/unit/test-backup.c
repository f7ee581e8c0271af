/* SPDX-License-Identifier: Apache-2.0 */
/* etcd backups in a directory store: the snapshot check on synthetic snapshots (the real etcd's are in
 * tests/integration/test_etcd_backups.py), upload in parts, the claim (one upload per claim), listing
 * (one entry per backup; a manifest that cannot be read is never an incomplete backup), download, deletion
 * and the retention plan; a store wrapped to fail reads, to interleave two uploads and to cap listings; the
 * same over S3 against the AWS double (server-side encryption, listing by delimiter, AccessDenied). */
#include "unit-test.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aws-double.h"
#include "backup/backup-snapshot.h"
#include "backup/backup.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "shared/crypto.h"
#include "store/store-internal.h"
#include "store/store.h"

#define DAY (86400ULL * USEC_PER_SEC)

typedef struct Fixture {
        char root[64];
        char work[64];
        Store *store;
} Fixture;

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        (void)st, (void)flag, (void)f;
        return remove(p);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(Fixture));
        char url[96];
        snprintf(f->root, sizeof(f->root), "/tmp/pk-backup-store-XXXXXX");
        snprintf(f->work, sizeof(f->work), "/tmp/pk-backup-work-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        assert_non_null(mkdtemp(f->work));
        snprintf(url, sizeof(url), "file://%s", f->root);
        assert_int_equal(store_open(url, &f->store, NULL), 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        store_free(f->store);
        nftw(f->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        nftw(f->work, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(f);
        return 0;
}

/* A file shaped like an etcd snapshot: pages starting with bbolt's meta page magic, then the SHA-256 of
 * the pages. Returns an fd open for reading and writing at offset 0. */
static int make_snapshot(const Fixture *f, const char *name, size_t pages, unsigned seed) {
        char path[128];
        snprintf(path, sizeof(path), "%s/%s", f->work, name);
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        size_t len = pages * 4096;
        uint8_t *db = malloc(len), digest[32];
        for (size_t i = 0; i < len; i++)
                db[i] = (uint8_t)(i * 31 + seed);
        const uint8_t magic[4] = { 0xED, 0xDA, 0x0C, 0xED };
        memcpy(db + 16, magic, 4);
        CryptoSha256 *h;
        assert_int_equal(crypto_sha256_new(&h), 0);
        assert_int_equal(crypto_sha256_update(h, db, len), 0);
        assert_int_equal(crypto_sha256_final(h, digest), 0);
        crypto_sha256_free(h);
        assert_int_equal(loop_write(fd, db, len), 0);
        assert_int_equal(loop_write(fd, digest, sizeof(digest)), 0);
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        free(db);
        return fd;
}

static void test_timestamps(void **state) {
        char ts[BACKUP_TIMESTAMP_LEN + 1];
        usec_t t;
        assert_int_equal(backup_timestamp_format(1795472100ULL * USEC_PER_SEC + 5, ts), 0);
        assert_string_equal(ts, "20261123T221500Z");
        assert_int_equal(backup_timestamp_parse(ts, &t), 0);
        assert_int_equal(t, 1795472100ULL * USEC_PER_SEC);
        assert_int_equal(backup_timestamp_parse("20261331T000000Z", &t), -EINVAL);
        assert_int_equal(backup_timestamp_parse("20261123T2215Z", &t), -EINVAL);
        assert_int_equal(backup_timestamp_parse("2026-11-23T22:15:00Z", &t), -EINVAL);
        assert_int_equal(backup_timestamp_parse("20261123t221500Z", &t), -EINVAL);
        assert_int_equal(backup_slot(1795472999ULL * USEC_PER_SEC, 900 * USEC_PER_SEC),
                         1795472100ULL * USEC_PER_SEC);
}

static void test_snapshot_check(void **state) {
        Fixture *f = *state;
        uint64_t size;
        char sha[BACKUP_SHA256_HEX], *err = NULL;
        int fd = make_snapshot(f, "good.db", 4, 1);
        assert_int_equal(backup_snapshot_check(fd, &size, sha, NULL), 0);
        assert_int_equal(size, 4 * 4096 + 32);
        assert_int_equal(strlen(sha), 64);

        /* one byte of the database changed: the trailer no longer matches */
        assert_int_equal(pwrite(fd, "x", 1, 5000), 1);
        assert_int_equal(backup_snapshot_check(fd, &size, sha, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "trailer does not match"));
        free(err), err = NULL;
        /* cut short: no trailer */
        assert_int_equal(ftruncate(fd, 4 * 4096 + 16), 0);
        assert_int_equal(backup_snapshot_check(fd, &size, sha, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "no SHA-256 trailer"));
        free(err), err = NULL;
        close(fd);

        fd = make_snapshot(f, "nomagic.db", 4, 2);
        assert_int_equal(pwrite(fd, "\0\0\0\0", 4, 16), 4);
        assert_int_equal(backup_snapshot_check(fd, &size, sha, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "bbolt"));
        free(err), err = NULL;
        assert_int_equal(ftruncate(fd, 100), 0);
        assert_int_equal(backup_snapshot_check(fd, &size, sha, &err), PK_EMALFORMED);
        free(err);
        close(fd);
}

#define ID_A "00000000000000aa"
#define ID_B "00000000000000bb"

/* fd's whole content through a BackupSnapshotSum in pieces of step bytes: the verdict, as
 * backup_snapshot_check() gives it. */
static int sum_of(int fd, size_t step, uint64_t *ret_size, char ret_sha[static BACKUP_SHA256_HEX],
                  char **ret_error) {
        BackupSnapshotSum sum;
        struct stat st;
        assert_int_equal(fstat(fd, &st), 0);
        uint8_t *data = malloc((size_t)st.st_size + 1);
        assert_int_equal(pread(fd, data, (size_t)st.st_size, 0), st.st_size);
        assert_int_equal(backup_snapshot_sum_init(&sum), 0);
        for (size_t off = 0; off < (size_t)st.st_size; off += step)
                assert_int_equal(backup_snapshot_sum_update(&sum, data + off, MIN(step, st.st_size - off)),
                                 0);
        int r = backup_snapshot_sum_finish(&sum, ret_size, ret_sha, ret_error);
        backup_snapshot_sum_done(&sum);
        free(data);
        return r;
}

/* The check as a snapshot streams past agrees with backup_snapshot_check() on fd (same result, size, sha256,
 * error text) at every split. */
static void sum_agrees(int fd, int expect) {
        const size_t steps[] = { 1, 7, 31, 32, 33, 4101, SIZE_MAX };
        uint64_t size = 0, check_size = 0;
        char sha[BACKUP_SHA256_HEX] = "", check_sha[BACKUP_SHA256_HEX] = "", *err = NULL, *check_err = NULL;
        assert_int_equal(backup_snapshot_check(fd, &check_size, check_sha, &check_err), expect);
        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                assert_int_equal(sum_of(fd, steps[i], &size, sha, &err), expect);
                assert_int_equal(size, check_size);
                assert_string_equal(sha, check_sha);
                if (expect < 0)
                        assert_string_equal(err, check_err);
                free(err), err = NULL;
        }
        free(check_err);
        if (expect < 0)
                return;
        /* and the whole file's SHA-256 is the one a single pass over it gives */
        CryptoSha256 *h;
        uint8_t *data = malloc(check_size), digest[32];
        char hex[BACKUP_SHA256_HEX];
        assert_int_equal(pread(fd, data, check_size, 0), (ssize_t)check_size);
        assert_int_equal(crypto_sha256_new(&h), 0);
        assert_int_equal(crypto_sha256_update(h, data, check_size), 0);
        assert_int_equal(crypto_sha256_final(h, digest), 0);
        crypto_sha256_free(h);
        free(data);
        crypto_hex(digest, sizeof(digest), hex);
        assert_string_equal(hex, check_sha);
}

static void test_snapshot_sum(void **state) {
        Fixture *f = *state;
        int fd = make_snapshot(f, "sum.db", 4, 5);
        sum_agrees(fd, 0);
        assert_int_equal(pwrite(fd, "x", 1, 5000), 1); /* the database changed */
        sum_agrees(fd, PK_EMALFORMED);
        close(fd);
        fd = make_snapshot(f, "trailer.db", 4, 6);
        assert_int_equal(pwrite(fd, "x", 1, 4 * 4096 + 31), 1); /* the trailer changed */
        sum_agrees(fd, PK_EMALFORMED);
        close(fd);
        fd = make_snapshot(f, "magic.db", 4, 7);
        assert_int_equal(pwrite(fd, "\xee", 1, 19), 1);
        sum_agrees(fd, PK_EMALFORMED);
        /* sizes: no trailer, a page more, shorter than two pages, than the magic's end, nothing */
        const off_t sizes[] = { 4 * 4096 + 16, 4 * 4096 + 32 + 512, 4096 + 32, 10, 0 };
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                assert_int_equal(ftruncate(fd, sizes[i]), 0);
                sum_agrees(fd, PK_EMALFORMED);
        }
        close(fd);
}

static mode_t object_mode(const Fixture *f, const char *key) {
        char path[256];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", f->root, key);
        assert_int_equal(lstat(path, &st), 0);
        return st.st_mode & 07777;
}

static void test_upload_list_download(void **state) {
        Fixture *f = *state;
        char *err = NULL, path[128];
        /* two parts and a bit: 8 MiB + 3 pages */
        int fd = make_snapshot(f, "big.db", BACKUP_PART_SIZE / 4096 + 3, 3);
        assert_int_equal(backup_upload(f->store, "main", "20261123T221500Z", "master-a", ID_A, fd, &err), 0);
        /* the same upload again (its process retrying) goes on; another upload of the same node is refused,
         * and so is another master, with the holder named */
        assert_int_equal(backup_upload(f->store, "main", "20261123T221500Z", "master-a", ID_A, fd, NULL), 0);
        assert_int_equal(backup_upload(f->store, "main", "20261123T221500Z", "master-a", ID_B, fd, &err),
                         -EEXIST);
        assert_non_null(strstr(err, "taken by master-a (another upload from this node)"));
        free(err), err = NULL;
        assert_int_equal(backup_upload(f->store, "main", "20261123T221500Z", "master-b", ID_B, fd, &err),
                         -EEXIST);
        assert_non_null(strstr(err, "taken by master-a"));
        assert_null(strstr(err, "this node"));
        free(err), err = NULL;
        assert_int_equal(backup_upload(f->store, "main", "20261123T221500Z", "master-a", "nope", fd, &err),
                         -EINVAL);
        free(err), err = NULL;
        /* every object of a backup is private: the snapshot holds the cluster's Secrets */
        assert_int_equal(object_mode(f, "backups/main/20261123T221500Z/claim"), 0600);
        assert_int_equal(object_mode(f, "backups/main/20261123T221500Z/part-00000"), 0600);
        assert_int_equal(object_mode(f, "backups/main/20261123T221500Z/part-00001"), 0600);
        assert_int_equal(object_mode(f, "backups/main/20261123T221500Z/manifest.json"), 0600);

        /* an incomplete backup: its taker died after the claim */
        char *k = "backups/main/20261123T223000Z/claim";
        assert_int_equal(store_put_if_absent(f->store, k, "master-c", 8, 0, NULL), 0);

        BackupEntry *e;
        const BackupEntry *newest;
        size_t n;
        assert_int_equal(backup_list(f->store, "main", &e, &n, NULL), 0);
        assert_int_equal(n, 2);
        assert_string_equal(e[0].timestamp, "20261123T221500Z");
        assert_int_equal(e[0].state, BACKUP_COMPLETE);
        assert_int_equal(e[0].size, BACKUP_PART_SIZE + 3 * 4096 + 32);
        assert_int_equal(e[0].parts, 2);
        assert_string_equal(e[0].node, "master-a");
        assert_int_equal(e[1].state, BACKUP_INCOMPLETE);
        /* the incomplete one is newer but not a backup */
        assert_int_equal(backup_newest(e, n, &newest, NULL), 0);
        assert_ptr_equal(newest, &e[0]);
        assert_int_equal(backup_newest(e + 1, 1, &newest, NULL), 0);
        assert_null(newest);
        backup_entries_free(e, n);

        snprintf(path, sizeof(path), "%s/restored.db", f->work);
        int out = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_int_equal(backup_download(f->store, "main", "20261123T221500Z", out, &err), 0);
        uint64_t a, b;
        char sa[BACKUP_SHA256_HEX], sb[BACKUP_SHA256_HEX];
        assert_int_equal(backup_snapshot_check(fd, &a, sa, NULL), 0);
        assert_int_equal(backup_snapshot_check(out, &b, sb, NULL), 0);
        assert_int_equal(a, b);
        assert_string_equal(sa, sb);
        close(out);
        assert_int_equal(backup_download(f->store, "main", "20261123T223000Z", out, NULL), -ENOENT);

        /* a part changed in the store: the download says so */
        assert_int_equal(store_put(f->store, "backups/main/20261123T221500Z/part-00001", "junk", 4, 0, NULL),
                         0);
        out = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_int_equal(backup_download(f->store, "main", "20261123T221500Z", out, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "do not match its manifest"));
        free(err), err = NULL;
        close(out);

        assert_int_equal(backup_delete(f->store, "main", "20261123T221500Z", NULL), 0);
        assert_int_equal(backup_list(f->store, "main", &e, &n, NULL), 0);
        assert_int_equal(n, 1);
        backup_entries_free(e, n);
        close(fd);
}

static void test_bad_snapshot_never_stored(void **state) {
        Fixture *f = *state;
        char *err = NULL, **keys = NULL;
        int fd = make_snapshot(f, "bad.db", 4, 4);
        assert_int_equal(pwrite(fd, "y", 1, 9000), 1);
        assert_int_equal(backup_upload(f->store, "main", "20261123T221500Z", "a", ID_A, fd, &err),
                         PK_EMALFORMED);
        free(err);
        assert_int_equal(store_list(f->store, "", &keys, NULL), 0);
        assert_null(keys[0]);
        free(keys);
        close(fd);
}

/* What backup_take() does with what etcd streams, src's content arriving in pieces of step bytes: the
 * claim, each whole part stored as soon as the file holds it, the checks at the end, then the rest. */
static int stream_upload(Store *s, int src, const char *ts, const char *id, size_t step, char **ret_error) {
        BackupUpload u;
        BackupSnapshotSum sum;
        struct stat st;
        uint64_t size;
        char sha[BACKUP_SHA256_HEX];
        int fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(fstat(src, &st), 0);
        uint8_t *data = malloc(step);
        assert_int_equal(backup_snapshot_sum_init(&sum), 0);
        int r = backup_upload_start(&u, s, "main", ts, "master-a", id, fd, ret_error);
        for (off_t off = 0; r >= 0 && off < st.st_size; off += (off_t)step) {
                size_t n = (size_t)MIN((off_t)step, st.st_size - off);
                assert_int_equal(pread(src, data, n, off), (ssize_t)n);
                assert_int_equal(loop_write(fd, data, n), 0);
                assert_int_equal(backup_snapshot_sum_update(&sum, data, n), 0);
                r = backup_upload_parts(&u, (uint64_t)(off + (off_t)n), ret_error);
        }
        if (r >= 0)
                r = backup_snapshot_sum_finish(&sum, &size, sha, ret_error);
        if (r >= 0)
                r = backup_upload_finish(&u, size, sha, ret_error);
        backup_snapshot_sum_done(&sum);
        backup_upload_done(&u);
        free(data);
        close(fd);
        return r;
}

static bool exists(Store *s, const char *key) {
        char *data = NULL;
        size_t len;
        int r = store_get(s, key, &data, &len, NULL);
        free(data);
        return r >= 0;
}

/* A streamed backup whose check fails at the end leaves what a crash leaves (claim, parts, no manifest):
 * listed as incomplete, never the newest. The same upload then takes its claim up again and completes; the
 * parts are the new snapshot's. */
static void test_stream_check_fails(void **state) {
        Fixture *f = *state;
        const char *ts = "20261123T221500Z";
        char *err = NULL, path[128];
        BackupEntry *e;
        const BackupEntry *newest = NULL;
        size_t n;
        int bad = make_snapshot(f, "bad.db", 2 * BACKUP_PART_SIZE / 4096 + 3, 8);
        assert_int_equal(pwrite(bad, "z", 1, 2 * BACKUP_PART_SIZE + 100), 1);
        assert_int_equal(stream_upload(f->store, bad, ts, ID_A, 65536 + 5, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "trailer does not match"));
        free(err), err = NULL;
        assert_true(exists(f->store, "backups/main/20261123T221500Z/claim"));
        assert_true(exists(f->store, "backups/main/20261123T221500Z/part-00000"));
        assert_true(exists(f->store, "backups/main/20261123T221500Z/part-00001"));
        assert_false(exists(f->store, "backups/main/20261123T221500Z/part-00002")); /* after the check */
        assert_false(exists(f->store, "backups/main/20261123T221500Z/manifest.json"));
        assert_int_equal(backup_list(f->store, "main", &e, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_int_equal(e[0].state, BACKUP_INCOMPLETE);
        assert_int_equal(backup_newest(e, n, &newest, NULL), 0);
        assert_null(newest);
        backup_entries_free(e, n);
        snprintf(path, sizeof(path), "%s/out.db", f->work);
        int out = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_int_equal(backup_download(f->store, "main", ts, out, NULL), -ENOENT);

        /* another upload finds the slot taken at its first part; this one's retry completes */
        int good = make_snapshot(f, "good.db", BACKUP_PART_SIZE / 4096 + 1, 9);
        assert_int_equal(stream_upload(f->store, good, ts, ID_B, 4096, &err), -EEXIST);
        free(err), err = NULL;
        assert_int_equal(stream_upload(f->store, good, ts, ID_A, 32768 + 1, &err), 0);
        assert_int_equal(backup_list(f->store, "main", &e, &n, NULL), 0);
        assert_int_equal(e[0].state, BACKUP_COMPLETE);
        assert_int_equal(e[0].parts, 2);
        backup_entries_free(e, n);
        assert_int_equal(backup_download(f->store, "main", ts, out, &err), 0);
        uint64_t a, b;
        char sa[BACKUP_SHA256_HEX], sb[BACKUP_SHA256_HEX];
        assert_int_equal(backup_snapshot_check(good, &a, sa, NULL), 0);
        assert_int_equal(backup_snapshot_check(out, &b, sb, NULL), 0);
        assert_string_equal(sa, sb);
        close(out);
        close(good);
        close(bad);
}

/* backup_take() when etcd cannot be reached: nothing is stored, not even a claim (the slot is claimed at
 * the first part), so another master may take the slot. */
static void test_take_unreachable(void **state) {
        Fixture *f = *state;
        BackupEtcdSource src = { .endpoint = "http://127.0.0.1:1", .timeout = 5 * USEC_PER_SEC };
        const char *ts = "20261123T221500Z";
        char *err = NULL;
        BackupEntry *e;
        size_t n;
        uint64_t size = 7;
        assert_true(backup_take(f->store, "main", ts, "master-a", ID_A, &src, f->work, &size, &err) < 0);
        assert_non_null(err);
        free(err), err = NULL;
        assert_int_equal(size, 7);
        assert_false(exists(f->store, "backups/main/20261123T221500Z/claim"));
        assert_false(exists(f->store, "backups/main/20261123T221500Z/manifest.json"));
        assert_int_equal(backup_list(f->store, "main", &e, &n, NULL), 0);
        assert_int_equal(n, 0);
        backup_entries_free(e, n);
}

static BackupEntry at(usec_t t, bool complete) {
        BackupEntry e = { .time = t, .state = complete ? BACKUP_COMPLETE : BACKUP_INCOMPLETE };
        return e;
}

static void test_retention(void **state) {
        BackupRetention r = { .keep_last = 3,
                              .keep_daily_days = 3,
                              .incomplete_grace = 3600 * USEC_PER_SEC };
        usec_t now = 100 * DAY + 12 * 3600 * USEC_PER_SEC; /* noon of day 100 */
        BackupEntry e[] = {
                at(95 * DAY + 10, true),            /* 0: older than the daily window: delete */
                at(98 * DAY + 10, true),            /* 1: day 98, an older one of the day: delete */
                at(98 * DAY + 20, true),            /* 2: day 98's newest: keep (daily) */
                at(99 * DAY + 10, true),            /* 3: day 99's newest: keep (daily) */
                at(100 * DAY + 10, false),          /* 4: incomplete, 12 h old: delete */
                at(100 * DAY + 1000, true),         /* 5: keep (last 3) */
                at(100 * DAY + 2000, true),         /* 6: keep (last 3) */
                at(now - 60 * USEC_PER_SEC, false), /* 7: incomplete, a minute old: in progress, keep */
                at(100 * DAY + 3000, true),         /* 8: keep (last 3) */
        };
        bool *del;
        assert_int_equal(backup_retention_plan(e, ELEMENTSOF(e), &r, now, &del, NULL), 0);
        bool want[] = { true, true, false, false, true, false, false, false, false };
        for (size_t i = 0; i < ELEMENTSOF(e); i++)
                assert_int_equal(del[i], want[i]);
        free(del);

        /* keep nothing by count or day: the newest complete backup still stays */
        BackupRetention none = {};
        assert_int_equal(backup_retention_plan(e, ELEMENTSOF(e), &none, now, &del, NULL), 0);
        assert_false(del[8]);
        assert_true(del[6]);
        free(del);

        /* nothing without a complete backup newer than it: incomplete ones past their grace stay when no
         * complete backup follows them, and so does everything when none is complete */
        BackupEntry g[] = {
                at(90 * DAY, false), /* 0: before a complete one: delete */
                at(91 * DAY, true),  /* 1: the newest complete one: keep */
                at(92 * DAY, false), /* 2: no complete one after it: keep */
                at(93 * DAY, false), /* 3: keep */
        };
        assert_int_equal(backup_retention_plan(g, ELEMENTSOF(g), &none, now, &del, NULL), 0);
        bool want_g[] = { true, false, false, false };
        for (size_t i = 0; i < ELEMENTSOF(g); i++)
                assert_int_equal(del[i], want_g[i]);
        free(del);
        g[1].state = BACKUP_INCOMPLETE;
        assert_int_equal(backup_retention_plan(g, ELEMENTSOF(g), &none, now, &del, NULL), 0);
        for (size_t i = 0; i < ELEMENTSOF(g); i++)
                assert_false(del[i]);
        free(del);

        /* a backup that cannot be read may be whole, and the newest: nothing is deleted, and it is named */
        char *err = NULL;
        e[3] = (BackupEntry){ .time = 99 * DAY + 10,
                              .state = BACKUP_UNREADABLE,
                              .error = -EIO,
                              .error_message = (char *)"get 'x': Input/output error",
                              .timestamp = "19700410T000010Z" };
        del = NULL;
        assert_int_equal(backup_retention_plan(e, ELEMENTSOF(e), &r, now, &del, &err), -EIO);
        assert_null(del);
        assert_non_null(strstr(err, "backup 19700410T000010Z cannot be read, so no backup is deleted"));
        assert_non_null(strstr(err, "Input/output error"));
        free(err);
}

/* A directory store behind a wrapper that fails the gets of keys matching a pattern with an error, calls a
 * hook before each put, and caps a listing at list_cap keys (the real providers' 100,000, scaled down). */
typedef struct Wrap {
        const char *fail_get; /* fnmatch pattern */
        int fail_error;
        int (*before_put)(const char *key);
        unsigned list_cap;
        unsigned full_lists; /* store_list calls whose prefix is a cluster's backups */
} Wrap;

static Wrap wrap;

static int wrap_get(Store *s, const char *key, char **ret_data, size_t *ret_len, char **ret_cause) {
        if (wrap.fail_get && fnmatch(wrap.fail_get, key, 0) == 0) {
                *ret_cause = strdup("injected failure");
                return wrap.fail_error;
        }
        return store_file_ops.get(s->data, key, ret_data, ret_len, ret_cause);
}

static int wrap_put(Store *s, const char *key, const void *data, size_t len, StoreFlags flags,
                    bool if_absent, char **ret_cause) {
        if (wrap.before_put) {
                int r = wrap.before_put(key);
                if (r < 0)
                        return r;
        }
        return store_file_ops.put(s->data, key, data, len, flags, if_absent, ret_cause);
}

static int wrap_list(Store *s, const char *prefix, bool versions, char ***ret_keys, char **ret_cause) {
        char **keys = NULL;
        if (fnmatch("backups/*/", prefix, FNM_PATHNAME) == 0)
                wrap.full_lists++;
        int r = store_file_ops.list(s->data, prefix, versions, &keys, ret_cause);
        if (r >= 0 && wrap.list_cap && strv_length(keys) > wrap.list_cap) {
                strv_free(keys);
                *ret_cause = strprintf("more than %u objects", wrap.list_cap);
                return -E2BIG;
        }
        if (r >= 0)
                *ret_keys = keys;
        return r;
}

static int wrap_list_dirs(Store *s, const char *prefix, char ***ret_names, char **ret_cause) {
        return store_file_ops.list_dirs(s->data, prefix, ret_names, ret_cause);
}

static int wrap_delete(Store *s, const char *key, char **ret_cause) {
        return store_file_ops.delete(s->data, key, ret_cause);
}

static const StoreOps wrap_ops = {
        .scheme = "wrap://",
        .get = wrap_get,
        .put = wrap_put,
        .list = wrap_list,
        .delete = wrap_delete,
        .list_dirs = wrap_list_dirs,
};

/* The fixture's store, wrapped (not to be freed: the fixture owns the store inside). */
static Store wrapped_of(Fixture *f) {
        wrap = (Wrap){};
        return (Store){ .ops = &wrap_ops, .url = (char *)"wrap://test", .data = f->store };
}

static void test_unreadable_is_not_incomplete(void **state) {
        Fixture *f = *state;
        Store w = wrapped_of(f);
        char *err = NULL, path[256];
        const BackupEntry *newest = NULL;
        BackupEntry *e;
        size_t n;
        bool *del = NULL;
        int fd = make_snapshot(f, "s.db", 4, 7);
        const char *stamps[] = { "20261120T000000Z", "20261121T000000Z", "20261122T000000Z",
                                 "20261123T000000Z" };
        for (size_t i = 0; i < ELEMENTSOF(stamps); i++)
                assert_int_equal(backup_upload(&w, "main", stamps[i], "master-a", ID_A, fd, NULL), 0);

        /* the newest one's manifest fails with EIO (an NFS store), the one before is a directory, the
         * first is not JSON: none of them is incomplete, each is named with its reason */
        wrap.fail_get = "backups/main/20261123T000000Z/manifest.json";
        wrap.fail_error = -EIO;
        snprintf(path, sizeof(path), "%s/backups/main/20261122T000000Z/manifest.json", f->root);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_int_equal(store_put(&w, "backups/main/20261120T000000Z/manifest.json", "{", 1, 0, NULL), 0);
        assert_int_equal(backup_list(&w, "main", &e, &n, NULL), 0);
        assert_int_equal(n, 4);
        assert_int_equal(e[0].state, BACKUP_UNREADABLE);
        assert_int_equal(e[0].error, PK_EMALFORMED);
        assert_non_null(strstr(e[0].error_message, "not a valid manifest"));
        assert_int_equal(e[1].state, BACKUP_COMPLETE);
        assert_int_equal(e[2].state, BACKUP_UNREADABLE);
        assert_non_null(strstr(e[2].error_message, "backups/main/20261122T000000Z/manifest.json"));
        assert_int_equal(e[3].state, BACKUP_UNREADABLE);
        assert_int_equal(e[3].error, -EIO);
        assert_non_null(strstr(e[3].error_message, "'backups/main/20261123T000000Z/manifest.json'"));
        assert_non_null(strstr(e[3].error_message, "injected failure"));

        /* the newest backup is not known: an error naming the newest unreadable one, never the older one */
        assert_int_equal(backup_newest(e, n, &newest, &err), -EIO);
        assert_non_null(strstr(err, "backup 20261123T000000Z cannot be read"));
        free(err), err = NULL;
        /* and retention deletes nothing, even past every grace and with nothing to keep */
        BackupRetention none = {};
        assert_true(backup_retention_plan(e, n, &none, 200 * 365 * DAY, &del, &err) < 0);
        assert_null(del);
        free(err), err = NULL;
        backup_entries_free(e, n);

        /* the same with S3's AccessDenied for the newest only: the older complete one is not taken for it */
        wrap.fail_error = PK_ECLOUD;
        assert_int_equal(backup_list(&w, "main", &e, &n, NULL), 0);
        assert_int_equal(backup_newest(e, n, &newest, &err), PK_ECLOUD);
        free(err), err = NULL;
        backup_entries_free(e, n);
        /* once it reads again, it is the newest */
        wrap.fail_get = NULL;
        assert_int_equal(backup_list(&w, "main", &e, &n, NULL), 0);
        assert_int_equal(backup_newest(e, n, &newest, NULL), 0);
        assert_string_equal(newest->timestamp, "20261123T000000Z");
        backup_entries_free(e, n);
        close(fd);
}

/* Two uploads of one node in one second (the daemon's of the slot, a manual one in the slot's first
 * second): the second one starts while the first is between its parts. */
static Fixture *interleave_fixture;
static Store *interleave_store;
static int interleave_fd;
static int interleave_result = 1;

static int start_second_upload(const char *key) {
        static bool started = false;
        if (!endswith(key, "/part-00001") || started)
                return 0;
        started = true; /* once: its own puts come through here too */
        interleave_result = backup_upload(interleave_store, "main", "20261123T221500Z", "master-a", ID_B,
                                          interleave_fd, NULL);
        return 0;
}

static void test_two_uploads_of_one_node(void **state) {
        Fixture *f = *state;
        Store w = wrapped_of(f);
        char *err = NULL, path[128];
        int a = make_snapshot(f, "a.db", BACKUP_PART_SIZE / 4096 + 3, 11);
        interleave_fixture = f;
        interleave_store = &w;
        interleave_fd = make_snapshot(f, "b.db", BACKUP_PART_SIZE / 4096 + 5, 12);
        wrap.before_put = start_second_upload;
        assert_int_equal(backup_upload(&w, "main", "20261123T221500Z", "master-a", ID_A, a, &err), 0);
        assert_int_equal(interleave_result, -EEXIST); /* refused: it never took up the other's claim */
        wrap.before_put = NULL;
        /* the backup is the first upload's, whole */
        snprintf(path, sizeof(path), "%s/out.db", f->work);
        int out = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_int_equal(backup_download(&w, "main", "20261123T221500Z", out, &err), 0);
        uint64_t sa, sb;
        char ha[BACKUP_SHA256_HEX], hb[BACKUP_SHA256_HEX];
        assert_int_equal(backup_snapshot_check(a, &sa, ha, NULL), 0);
        assert_int_equal(backup_snapshot_check(out, &sb, hb, NULL), 0);
        assert_string_equal(ha, hb);
        /* an older daemon's claim (the node alone) is not taken up by this node's new uploads either */
        assert_int_equal(
            store_put_if_absent(&w, "backups/main/20261123T223000Z/claim", "master-a", 8, 0, NULL), 0);
        assert_int_equal(backup_upload(&w, "main", "20261123T223000Z", "master-a", ID_A, a, &err), -EEXIST);
        assert_non_null(strstr(err, "taken by master-a (another upload from this node)"));
        free(err);
        close(out);
        close(a);
        close(interleave_fd);
}

/* A backup's manifest for parts parts, written directly (the parts are stand-ins of a few bytes). */
static void fake_backup(Store *s, const char *ts, unsigned parts) {
        char key[128], text[512];
        for (unsigned p = 0; p < parts; p++) {
                snprintf(key, sizeof(key), "backups/main/%s/part-%05u", ts, p);
                assert_int_equal(store_put(s, key, "x", 1, 0, NULL), 0);
        }
        snprintf(key, sizeof(key), "backups/main/%s/claim", ts);
        assert_int_equal(store_put(s, key, "master-a " ID_A, strlen("master-a " ID_A), 0, NULL), 0);
        snprintf(text, sizeof(text),
                 "{\"version\": 1, \"cluster\": \"main\", \"timestamp\": \"%s\", \"node\": \"master-a\", "
                 "\"size\": %llu, \"sha256\": \"%064d\", \"parts\": %u, \"partSize\": %u}",
                 ts, (unsigned long long)parts * BACKUP_PART_SIZE, 0, parts, BACKUP_PART_SIZE);
        snprintf(key, sizeof(key), "backups/main/%s/manifest.json", ts);
        assert_int_equal(store_put(s, key, text, strlen(text), 0, NULL), 0);
}

static void test_listing_does_not_grow_with_parts(void **state) {
        Fixture *f = *state;
        Store w = wrapped_of(f);
        const char *stamps[] = { "20261120T000000Z", "20261121T000000Z", "20261122T000000Z",
                                 "20261123T000000Z" };
        for (size_t i = 0; i < ELEMENTSOF(stamps); i++)
                fake_backup(&w, stamps[i], 30);
        /* 128 objects, 4 backups: a listing of every part would pass the cap; one entry each does not */
        wrap.list_cap = 64;
        BackupEntry *e;
        size_t n;
        bool *del;
        char *err = NULL;
        assert_int_equal(backup_list(&w, "main", &e, &n, &err), 0);
        assert_int_equal(n, 4);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(e[i].state, BACKUP_COMPLETE);
                assert_int_equal(e[i].parts, 30);
        }
        /* retention keeps working: each deletion lists one backup's objects only */
        BackupRetention keep_one = { .keep_last = 1 };
        assert_int_equal(backup_retention_plan(e, n, &keep_one, 200 * 365 * DAY, &del, NULL), 0);
        for (size_t i = 0; i < n; i++)
                if (del[i])
                        assert_int_equal(backup_delete(&w, "main", e[i].timestamp, NULL), 0);
        assert_true(del[0] && del[1] && del[2] && !del[3]);
        free(del);
        backup_entries_free(e, n);
        assert_int_equal(backup_list(&w, "main", &e, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_string_equal(e[0].timestamp, "20261123T000000Z");
        backup_entries_free(e, n);
        assert_int_equal(wrap.full_lists, 0);
        /* a deleted backup's directory, empty now, is no backup */
        char **names = NULL;
        assert_int_equal(store_list_dirs(f->store, "backups/main/", &names, NULL), 0);
        assert_int_equal(strv_length(names), 1);
        strv_free(names);
}

/* The same over S3 against the AWS double: every object of a backup asked to be encrypted, the listing
 * by delimiter (pages of common prefixes), AccessDenied on the manifests is no incomplete backup. */
static int setup_s3(void **state) {
        setup(state);
        return aws_double_start(state);
}

/* Also after a failed check: the double never outlives the test. */
static int teardown_s3(void **state) {
        aws_double_stop(state);
        return teardown(state);
}

static void test_s3(void **state) {
        Fixture *f = *state;
        Store *s = NULL;
        char *err = NULL;
        aws_double_post("/_double/config", "{\"buckets\": [\"pk-backups\"]}");
        assert_int_equal(store_open("s3://pk-backups/c1", &s, &err), 0);
        int fd = make_snapshot(f, "s3.db", BACKUP_PART_SIZE / 4096 + 2, 21);
        assert_int_equal(backup_upload(s, "main", "20261122T000000Z", "master-a", ID_A, fd, &err), 0);
        assert_int_equal(backup_upload(s, "main", "20261123T000000Z", "master-a", ID_A, fd, &err), 0);
        json_t *st = aws_double_get("state"),
               *objs = json_object_get(json_object_get(st, "s3"), "pk-backups");
        const char *key;
        json_t *o;
        size_t n_objs = 0;
        json_object_foreach(objs, key, o) {
                assert_string_equal(json_string_value(json_object_get(o, "sse")), "AES256");
                n_objs++;
        }
        assert_int_equal(n_objs, 2 * 4); /* claim, two parts, manifest */
        json_decref(st);

        BackupEntry *e;
        const BackupEntry *newest;
        size_t n;
        assert_int_equal(backup_list(s, "main", &e, &n, &err), 0);
        assert_int_equal(n, 2);
        assert_int_equal(e[1].state, BACKUP_COMPLETE);
        backup_entries_free(e, n);
        aws_double_post(
            "/_double/config",
            "{\"faults\": {\"s3_get_errors\": [{\"match\": \"c1/backups/main/20261123T000000Z/*\", "
            "\"status\": 403, \"code\": \"AccessDenied\"}]}}");
        assert_int_equal(backup_list(s, "main", &e, &n, &err), 0);
        assert_int_equal(e[0].state, BACKUP_COMPLETE);
        assert_int_equal(e[1].state, BACKUP_UNREADABLE);
        assert_non_null(strstr(e[1].error_message, "AccessDenied"));
        assert_true(backup_newest(e, n, &newest, &err) < 0);
        assert_non_null(strstr(err, "20261123T000000Z"));
        free(err), err = NULL;
        backup_entries_free(e, n);
        aws_double_post("/_double/config", "{\"faults\": {\"s3_get_errors\": []}}");

        /* more directories than one page, each with two objects: every one listed once */
        _cleanup_free_ char *seed = strdup("{\"objects\": [");
        for (unsigned i = 0; i < 1005; i++)
                for (unsigned k = 0; k < 2; k++)
                        assert_int_equal(strextend_printf(&seed,
                                                          "%s{\"bucket\": \"pk-backups\", \"key\": "
                                                          "\"c1/many/d%04u/o%u\", \"data\": \"x\"}",
                                                          i + k == 0 ? "" : ", ", i, k),
                                         0);
        assert_int_equal(strextend_printf(&seed, "]}"), 0);
        aws_double_post("/_double/config", seed);
        char **names = NULL;
        assert_int_equal(store_list_dirs(s, "many/", &names, &err), 0);
        assert_int_equal(strv_length(names), 1005);
        assert_string_equal(names[0], "d0000");
        assert_string_equal(names[1004], "d1004");
        strv_free(names);
        assert_int_equal(store_list_dirs(s, "many", &names, &err), -EINVAL);
        free(err);
        store_free(s);
        close(fd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_timestamps),
                cmocka_unit_test_setup_teardown(test_snapshot_check, setup, teardown),
                cmocka_unit_test_setup_teardown(test_snapshot_sum, setup, teardown),
                cmocka_unit_test_setup_teardown(test_upload_list_download, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_snapshot_never_stored, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stream_check_fails, setup, teardown),
                cmocka_unit_test_setup_teardown(test_take_unreachable, setup, teardown),
                cmocka_unit_test(test_retention),
                cmocka_unit_test_setup_teardown(test_unreadable_is_not_incomplete, setup, teardown),
                cmocka_unit_test_setup_teardown(test_two_uploads_of_one_node, setup, teardown),
                cmocka_unit_test_setup_teardown(test_listing_does_not_grow_with_parts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_s3, setup_s3, teardown_s3),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
